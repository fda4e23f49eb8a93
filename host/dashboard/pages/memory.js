// /second-brain/memory: every memory item, filtered by tier (conscious: durable and
// active; subconscious) and type, or searched; inline edit, add and delete. The
// "Conversations" scope searches what was said instead (the transcript), each hit
// with its date, speaker and conversation, which can be deleted.

import { api, query } from '../api.js';
import { addMemoryForm, memoryList, TYPES } from '../memory-item.js';
import { saidCard } from '../said-item.js';
import { errorLine, field, h, plural, render, select, showError } from '../ui.js';

const page = document.getElementById('page');
const params = new URLSearchParams(location.search);
const SCOPES = ['conscious', 'subconscious', 'conversations'];
const state = {
  scope: SCOPES.includes(params.get('scope')) ? params.get('scope') : '',
  type: TYPES.includes(params.get('type')) ? params.get('type') : '',
  q: params.get('q') || '',
};

const memories = memoryList({
  label: 'Memories',
  failure: 'Could not load memories',
  describe({ shown, more }) {
    const what = state.q ? `matching “${state.q}”` : [
      state.scope || null, state.type ? `of type ${state.type}` : null,
    ].filter(Boolean).join(' ');
    return shown === 0
      ? `No memories${what ? ' ' + what : ''}.`
      : `${more ? `${shown}+ memories` : plural(shown, 'memory', 'memories')}${what ? ' ' + what : ''}.`;
  },
});

const scopeGroup = h('fieldset', { class: 'segmented' },
  h('legend', {}, 'Scope'),
  [['', 'All'], ['conscious', 'Conscious'], ['subconscious', 'Subconscious'], ['conversations', 'Conversations']].map(([value, text]) => {
    const id = `scope-${value || 'all'}`;
    const input = h('input', { type: 'radio', name: 'scope', id, value, checked: state.scope === value });
    input.addEventListener('change', () => {
      state.scope = value;
      state.q = '';
      searchBox.value = '';
      reload();
    });
    const icon = value === 'subconscious' ? [' ', h('span', { class: 'icon icon-sleep', 'aria-hidden': 'true' })] : null;
    return h('span', {}, input, h('label', { for: id }, text, icon));
  }));

const typeFilter = select('type', [['', 'All types'], ...TYPES.map((t) => [t, t])], state.type);
typeFilter.addEventListener('change', () => {
  state.type = typeFilter.value;
  state.q = '';
  searchBox.value = '';
  reload();
});

const searchBox = h('input', { type: 'search', name: 'q', value: state.q, maxlength: '500' });
const searchForm = h('form', { role: 'search', class: 'search' },
  field('Search memories', searchBox),
  h('button', { type: 'submit' }, 'Search'),
  h('button', { type: 'button', onclick: () => { searchBox.value = ''; state.q = ''; reload(); } }, 'Clear'));
searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  state.q = searchBox.value.trim();
  reload();
});

const addForm = addMemoryForm({ onAdded: () => reload() });

// The transcript hits of the "Conversations" scope.
const said = h('ul', { class: 'memories said', 'aria-label': 'What was said', hidden: true });
const saidSummary = h('p', { class: 'list-summary', role: 'status', hidden: true });
const typeField = field('Type', typeFilter);

render(page,
  h('details', { class: 'add' }, h('summary', {}, 'Add a memory'), addForm),
  h('div', { class: 'toolbar' }, scopeGroup, typeField, searchForm),
  memories.summary,
  memories.list,
  memories.more,
  saidSummary,
  said);

function remember() {
  const next = query({ scope: state.scope, type: state.type, q: state.q });
  history.replaceState(null, '', location.pathname + next);
}

async function searchConversations() {
  said.replaceChildren();
  if (!state.q) {
    saidSummary.textContent = 'Search what was said in your conversations.';
    return;
  }
  saidSummary.textContent = 'Loading…';
  try {
    const found = await api('GET', '/api/brain/memory/search' + query({ q: state.q, limit: 100, scope: 'conversations' }));
    const hits = found.items.map((item) => item.message);
    const onDeleted = (conversation) => {
      for (const card of [...said.children]) {
        if (card.dataset.conversation === conversation) card.remove();
      }
      saidSummary.textContent = describeSaid(said.children.length);
    };
    said.append(...hits.map((hit) => saidCard(hit, { onDeleted })));
    saidSummary.textContent = describeSaid(hits.length);
  } catch (error) {
    render(saidSummary, errorLine(error, 'Could not search the conversations'));
    showError(error, 'Could not search the conversations');
  }
}

function describeSaid(shown) {
  return shown === 0
    ? `Nothing said matches “${state.q}”.`
    : `${shown} ${shown === 1 ? 'message' : 'messages'} matching “${state.q}”.`;
}

function reload() {
  remember();
  const conversations = state.scope === 'conversations';
  for (const node of [memories.summary, memories.list, typeField]) node.hidden = conversations;
  memories.more.hidden = true;
  said.hidden = !conversations;
  saidSummary.hidden = !conversations;
  searchBox.placeholder = conversations ? 'Words that were said' : 'Words in a summary';
  if (conversations) {
    searchConversations();
    return;
  }
  if (state.q) {
    memories.show(async () => {
      const found = await api('GET', '/api/brain/memory/search' + query({ q: state.q, limit: 100 }));
      return found.items.map((hit) => hit.memory);
    });
  } else {
    memories.load({ scope: state.scope, type: state.type });
  }
}

reload();

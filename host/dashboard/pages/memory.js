// /second-brain/memory: every memory item, filtered by tier (conscious: durable and
// active; subconscious) and type, or searched; inline edit, add and delete. The
// "Conversations" scope searches what was said instead (the transcript), each hit
// with its date, speaker and conversation, which can be deleted. Above them, what the
// agent deleted and the person can still restore, when there is any.

import { api, query } from '../api.js';
import { addMemoryForm, memoryList, TYPES } from '../memory-item.js';
import { saidCard } from '../said-item.js';
import { badge, busy, changed, errorLine, field, h, plural, render, select, showError, timeAgo, toast } from '../ui.js';

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

// What the agent deleted: hidden from every read, restorable for a few days.
// (Classes of their own: the memory list's selectors must not find these.)
const dismissedList = h('ul', { class: 'cards', 'aria-label': 'Deleted by the agent' });
const dismissedSummary = h('p', { class: 'dismissed-summary', role: 'status' });
const dismissed = h('section', { class: 'dismissed', 'aria-labelledby': 'dismissed-heading', hidden: true },
  h('h2', { id: 'dismissed-heading' }, 'Deleted by the agent'),
  dismissedSummary,
  dismissedList);

function describeDismissed(shown, more) {
  const counted = more ? `${shown}+ memories` : plural(shown, 'memory', 'memories');
  return `${counted} the agent deleted: hidden from everything, and forgotten for good after the date shown unless you restore ${shown === 1 && !more ? 'it' : 'them'}.`;
}

function dismissedCard(item, onRestored) {
  const memory = item.memory;
  const restore = h('button', { type: 'button', class: 'restore' }, 'Restore',
    h('span', { class: 'visually-hidden' }, ` memory: ${memory.summary}`));
  restore.addEventListener('click', () => busy(restore, async () => {
    try {
      await api('POST', `/api/brain/memory/${encodeURIComponent(memory.id)}/restore`);
      card.remove();
      toast(`Restored: ${memory.summary}`);
      changed();
      onRestored();
    } catch (error) {
      showError(error, 'Could not restore the memory');
    }
  }));
  const card = h('li', { class: 'dismissed-memory card', dataset: { id: memory.id } },
    h('p', { class: 'summary' }, memory.summary),
    h('p', { class: 'meta' },
      badge(memory.type, 'type'),
      h('span', { class: 'scores' }, ' deleted by the agent ', timeAgo(item.dismissed_at),
        ' · restorable until ', h('time', { datetime: item.restorable_until }, item.restorable_until.slice(0, 10)))),
    h('div', { class: 'actions' }, restore));
  return card;
}

async function loadDismissed() {
  try {
    const data = await api('GET', '/api/brain/dismissed' + query({ limit: 100 }));
    const onRestored = () => {
      const left = dismissedList.children.length;
      dismissed.hidden = left === 0;
      dismissedSummary.textContent = describeDismissed(left, false);
      reload();
    };
    dismissedList.replaceChildren(...data.items.map((item) => dismissedCard(item, onRestored)));
    dismissedSummary.textContent = describeDismissed(data.items.length, Boolean(data.next_cursor));
    dismissed.hidden = data.items.length === 0;
  } catch (error) {
    // The fact store keeps nothing to restore: nothing to show.
    if (error.code === 'brain-disabled') return;
    dismissed.hidden = false;
    render(dismissedSummary, errorLine(error, 'Could not load what the agent deleted'));
    showError(error, 'Could not load what the agent deleted');
  }
}

render(page,
  dismissed,
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
loadDismissed();

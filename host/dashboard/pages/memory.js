// /second-brain/memory: every memory item, filtered by tier (conscious: durable and
// active; subconscious) and type, or searched; inline edit, add and delete.

import { api, query } from '../api.js';
import { addMemoryForm, memoryList, TYPES } from '../memory-item.js';
import { field, h, render, select } from '../ui.js';

const page = document.getElementById('page');
const params = new URLSearchParams(location.search);
const state = {
  scope: ['conscious', 'subconscious'].includes(params.get('scope')) ? params.get('scope') : '',
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
      : `${shown}${more ? '+' : ''} memories${what ? ' ' + what : ''}.`;
  },
});

const scopeGroup = h('fieldset', { class: 'segmented' },
  h('legend', {}, 'Scope'),
  [['', 'All'], ['conscious', 'Conscious'], ['subconscious', 'Subconscious']].map(([value, text]) => {
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

const searchBox = h('input', { type: 'search', name: 'q', value: state.q, maxlength: '500', placeholder: 'Words in a summary' });
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

render(page,
  h('details', { class: 'add' }, h('summary', {}, 'Add a memory'), addForm),
  h('div', { class: 'toolbar' }, scopeGroup, field('Type', typeFilter), searchForm),
  memories.summary,
  memories.list,
  memories.more);

function remember() {
  const next = query({ scope: state.scope, type: state.type, q: state.q });
  history.replaceState(null, '', location.pathname + next);
}

function reload() {
  remember();
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

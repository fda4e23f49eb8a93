// /second-brain/persons: everyone the Second Brain has met in conversations, most
// recently seen first, with how many live memories name them. Each name leads to the
// person's page.

import { api, query } from '../api.js';
import { busy, errorLine, h, render, showError, timeAgo } from '../ui.js';

const page = document.getElementById('page');

const summary = h('p', { class: 'list-summary', role: 'status' }, 'Loading…');
const body = h('tbody');
const table = h('table', { class: 'list persons', hidden: true },
  h('caption', { class: 'visually-hidden' }, 'Persons, most recently seen first'),
  h('thead', {}, h('tr', {},
    h('th', { scope: 'col' }, 'Name'),
    h('th', { scope: 'col' }, 'Last seen'),
    h('th', { scope: 'col' }, 'Memories'))),
  body);
const empty = h('div', { class: 'empty card', hidden: true },
  h('p', {}, 'No persons yet.'),
  h('p', { class: 'hint' },
    'Persons appear here when a conversation names them, for example “My sister Carol lives in Paris.”'));
const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Load more');
let cursor = null;
let shown = 0;

render(page, summary, table, empty, more);
more.addEventListener('click', () => busy(more, loadPage));

function row(person) {
  const href = `/second-brain/persons/${encodeURIComponent(person.id)}`;
  return h('tr', { dataset: { id: person.id } },
    h('td', { 'data-label': 'Name' },
      h('a', { href }, person.name),
      person.aliases.length ? h('span', { class: 'aliases' }, ` (also ${person.aliases.join(', ')})`) : null),
    h('td', { 'data-label': 'Last seen' }, timeAgo(person.last_seen)),
    h('td', { 'data-label': 'Memories', class: 'count' }, String(person.memory_count)));
}

function describe() {
  table.hidden = shown === 0;
  empty.hidden = shown !== 0;
  summary.textContent = shown === 0 ? '' : `${shown}${cursor ? '+' : ''} ${shown === 1 ? 'person' : 'persons'}.`;
}

async function loadPage() {
  try {
    // The first page without parameters; later pages by the cursor the server gave.
    const data = await api('GET', '/api/brain/persons' + query({ cursor }));
    body.append(...data.items.map(row));
    shown += data.items.length;
    cursor = data.next_cursor || null;
    more.hidden = !cursor;
    describe();
  } catch (error) {
    summary.replaceChildren(errorLine(error, 'Could not load persons'));
    showError(error, 'Could not load persons');
  }
}

loadPage();

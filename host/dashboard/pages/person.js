// /second-brain/persons/{id}: one person: the relationship facts about them, the
// other memories that name them (both editable in place, as on the memory page) and
// the persons they are linked with.

import { api } from '../api.js';
import { memoryCard } from '../memory-item.js';
import { errorLine, h, render, showError, timeAgo } from '../ui.js';

const page = document.getElementById('page');
const title = document.getElementById('page-title');
const id = decodeURIComponent(location.pathname.split('/').filter(Boolean).pop() || '');

function setTitle(text) {
  title.textContent = text;
  document.title = `${text} · Engram`;
}

const back = h('p', {}, h('a', { href: '/second-brain/persons' }, '← All persons'));

function section(key, heading, content) {
  const headingId = `person-${key}`;
  return h('section', { class: `person-section person-${key}`, 'aria-labelledby': headingId },
    h('h2', { id: headingId }, heading),
    content);
}

function memoryList(memories, label, emptyText, onChange) {
  if (memories.length === 0) return h('p', { class: 'hint' }, emptyText);
  const list = h('ul', { class: 'memories', 'aria-label': label });
  const onDeleted = () => {
    onChange();
    if (list.children.length === 0) list.replaceWith(h('p', { class: 'hint' }, emptyText));
  };
  list.append(...memories.map((memory) => memoryCard(memory, { onDeleted })));
  return list;
}

// Linked persons, one entry per person with every relation that links them.
function linkedList(links) {
  if (links.length === 0) return h('p', { class: 'hint' }, 'No linked persons.');
  const byPerson = new Map();
  for (const link of links) {
    if (!byPerson.has(link.id)) byPerson.set(link.id, { name: link.name || link.id, relations: new Set() });
    if (link.relation) byPerson.get(link.id).relations.add(link.relation);
  }
  return h('ul', { class: 'linked-persons' },
    [...byPerson.entries()].map(([other, { name, relations }]) => h('li', { dataset: { id: other } },
      h('a', { href: `/second-brain/persons/${encodeURIComponent(other)}` }, name),
      relations.size ? h('span', { class: 'relation' }, ` · ${[...relations].join(', ')}`) : null)));
}

function show(person) {
  setTitle(person.name);
  let count = person.memory_count;
  const meta = h('p', { class: 'person-meta' });
  const describe = () => {
    meta.replaceChildren(
      `${count} ${count === 1 ? 'memory' : 'memories'} · last seen `, timeAgo(person.last_seen),
      person.aliases.length ? ` · also called ${person.aliases.join(', ')}` : '');
  };
  const onChange = () => {
    count -= 1;
    describe();
  };
  describe();
  render(page,
    back,
    meta,
    section('facts', 'Facts',
      memoryList(person.facts, `Facts about ${person.name}`, 'No relationship facts.', onChange)),
    section('related', 'Related memories',
      memoryList(person.related_memories, `Memories that name ${person.name}`, 'No other memories name them.', onChange)),
    section('linked', 'Linked persons', linkedList(person.linked_persons)));
}

async function load() {
  render(page, back, h('p', { class: 'list-summary', role: 'status' }, 'Loading…'));
  try {
    show(await api('GET', `/api/brain/persons/${encodeURIComponent(id)}`));
  } catch (error) {
    if (error.status === 404) {
      setTitle('No such person');
      render(page,
        h('div', { class: 'not-found card', role: 'alert' },
          h('p', {}, `There is no person with the id “${id}”.`),
          h('p', { class: 'hint' }, `They may have been forgotten, or the link is wrong. (${error.message})`)),
        back);
    } else {
      render(page, back, errorLine(error, 'Could not load this person'));
      showError(error, 'Could not load this person');
    }
  }
}

load();

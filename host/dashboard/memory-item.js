// One memory item as a card, with its badges, inline editing of the five editable
// fields (summary, type, importance, confidence, scope) and deletion after a
// confirmation. The memory, goals and person pages all show memories this way.

import { api, query } from './api.js';
import { badge, busy, changed, confirmAction, errorLine, field, h, render, select, showError, timeAgo, toast } from './ui.js';

export const TYPES = ['identity', 'preference', 'habit', 'constraint', 'relationship',
  'reflection', 'goal', 'project', 'decision', 'episode'];
export const SCOPES = ['durable', 'active', 'subconscious'];
export const EVIDENCE = ['manual', 'direct', 'inferred', 'system'];

const SCOPE_NAMES = {
  durable: 'durable (conscious)',
  active: 'active (conscious)',
  subconscious: 'subconscious',
};

// A card for `memory`; `onDeleted(memory)` runs after a successful delete.
export function memoryCard(memory, { onDeleted } = {}) {
  const card = h('li', { class: 'memory card', dataset: { id: memory.id } });
  showMemory(card, memory, onDeleted);
  return card;
}

function showMemory(card, memory, onDeleted) {
  card.classList.remove('editing');
  const edit = h('button', { type: 'button', class: 'edit' }, 'Edit',
    h('span', { class: 'visually-hidden' }, ` memory: ${memory.summary}`));
  const remove = h('button', { type: 'button', class: 'delete danger' }, 'Delete',
    h('span', { class: 'visually-hidden' }, ` memory: ${memory.summary}`));
  edit.addEventListener('click', () => editMemory(card, memory, onDeleted));
  remove.addEventListener('click', () => deleteMemory(card, memory, remove, onDeleted));
  render(card,
    h('p', { class: 'summary' }, memory.summary),
    h('p', { class: 'meta' },
      badge(memory.type, 'type'),
      ' ',
      memory.scope === 'subconscious' ? sleepBadge() : badge(memory.scope, 'scope'),
      memory.stale ? [' ', badge('stale', 'stale', 'Stale: not seen or used for a long time')] : null,
      memory.negated ? [' ', badge('negated', 'negated')] : null,
      h('span', { class: 'scores' },
        ` importance ${memory.importance.toFixed(2)} · confidence ${memory.confidence.toFixed(2)} · updated `,
        timeAgo(memory.updated_at))),
    memory.detail ? h('p', { class: 'detail' }, memory.detail) : null,
    h('div', { class: 'actions' }, edit, remove));
}

// Subconscious memories are asleep: kept, but not injected until something recalls them.
function sleepBadge() {
  return h('span', { class: 'badge badge-sleep', title: 'Subconscious: kept, but not injected until it is recalled' },
    h('span', { class: 'icon icon-sleep', 'aria-hidden': 'true' }), ' asleep');
}

function number(name, value) {
  return h('input', { type: 'number', name, min: '0', max: '1', step: '0.05', value: value.toFixed(2), required: true });
}

function editMemory(card, memory, onDeleted) {
  card.classList.add('editing');
  const summary = h('textarea', { name: 'summary', rows: '2', maxlength: '1000', required: true, value: memory.summary });
  const type = select('type', TYPES.map((t) => [t, t]), memory.type);
  const importance = number('importance', memory.importance);
  const confidence = number('confidence', memory.confidence);
  const scope = select('scope', SCOPES.map((s) => [s, SCOPE_NAMES[s]]), memory.scope);
  const problem = h('p', { class: 'error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit' }, 'Save');
  const cancel = h('button', { type: 'button', onclick: () => showMemory(card, memory, onDeleted) }, 'Cancel');
  const form = h('form', { class: 'memory-edit', 'aria-label': 'Edit memory' },
    field('Summary', summary),
    h('div', { class: 'row' },
      field('Type', type), field('Importance', importance), field('Confidence', confidence), field('Scope', scope)),
    problem,
    h('div', { class: 'actions' }, save, cancel));
  form.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') showMemory(card, memory, onDeleted);
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const changes = {};
    if (summary.value.trim() !== memory.summary) changes.summary = summary.value.trim();
    if (type.value !== memory.type) changes.type = type.value;
    if (Number(importance.value) !== Number(memory.importance.toFixed(2))) changes.importance = Number(importance.value);
    if (Number(confidence.value) !== Number(memory.confidence.toFixed(2))) changes.confidence = Number(confidence.value);
    if (scope.value !== memory.scope) changes.scope = scope.value;
    if (Object.keys(changes).length === 0) {
      showMemory(card, memory, onDeleted);
      return;
    }
    busy(save, async () => {
      try {
        const updated = await api('PUT', `/api/brain/memory/${encodeURIComponent(memory.id)}`, changes);
        Object.assign(memory, updated);
        showMemory(card, memory, onDeleted);
        card.querySelector('button.edit').focus();
        toast('Memory saved');
        changed();
      } catch (error) {
        problem.textContent = error.message;
        problem.hidden = false;
        showError(error, 'Could not save the memory');
      }
    });
  });
  render(card, form);
  summary.focus();
}

async function deleteMemory(card, memory, button, onDeleted) {
  const sure = await confirmAction(`Delete the memory “${memory.summary}”? This cannot be undone.`);
  if (!sure) {
    button.focus();
    return;
  }
  await busy(button, async () => {
    try {
      await api('DELETE', `/api/brain/memory/${encodeURIComponent(memory.id)}`);
      card.remove();
      toast('Memory deleted');
      changed();
      if (onDeleted) onDeleted(memory);
    } catch (error) {
      showError(error, 'Could not delete the memory');
    }
  });
}

// A form that adds a memory. `fixedType` hides the type choice (goals, projects).
export function addMemoryForm({ fixedType, onAdded, legend = 'Add a memory' }) {
  const summary = h('textarea', { name: 'summary', rows: '2', maxlength: '1000', required: true });
  const type = fixedType ? null : select('type', TYPES.map((t) => [t, t]), 'preference');
  const evidence = select('evidence', EVIDENCE.map((e) => [e, e]), 'manual');
  const detail = h('textarea', { name: 'detail', rows: '2', maxlength: '4000' });
  const add = h('button', { type: 'submit' }, fixedType ? `Add ${fixedType}` : 'Add memory');
  const problem = h('p', { class: 'error', role: 'alert', hidden: true });
  const form = h('form', { class: 'add-memory card' },
    h('fieldset', {},
      h('legend', {}, legend),
      field('Summary', summary),
      h('div', { class: 'row' }, type ? field('Type', type) : null, field('Evidence', evidence)),
      field('Context (optional)', detail),
      problem,
      h('div', { class: 'actions' }, add)));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const body = { type: fixedType || type.value, summary: summary.value.trim(), evidence: evidence.value };
    if (detail.value.trim()) body.detail = detail.value.trim();
    busy(add, async () => {
      try {
        const created = await api('POST', '/api/brain/memory', body);
        form.reset();
        problem.hidden = true;
        toast(`Added: ${created.summary}`);
        changed();
        if (onAdded) onAdded(created);
      } catch (error) {
        problem.textContent = error.message;
        problem.hidden = false;
        showError(error, 'Could not add the memory');
      }
    });
  });
  return form;
}

const PAGE_SIZE = 50;

// A list of memory cards read a page at a time from GET /api/brain/memory, with its
// status line and "Load more" button. `describe({shown, more})` gives the status line
// (text or a node) after every change; `failure` names what failed to load.
export function memoryList({ label, moreText = 'Load more', describe, failure }) {
  const list = h('ul', { class: 'memories', 'aria-label': label });
  const summary = h('p', { class: 'list-summary', role: 'status' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, moreText);
  let params = {};
  let cursor = null;
  let shown = 0;

  const update = () => render(summary, describe({ shown, more: Boolean(cursor) }));
  const onDeleted = () => {
    shown -= 1;
    update();
  };
  const append = (memories) => {
    for (const memory of memories) list.append(memoryCard(memory, { onDeleted }));
    shown += memories.length;
  };
  const reset = () => {
    list.replaceChildren();
    cursor = null;
    shown = 0;
    more.hidden = true;
    summary.textContent = 'Loading…';
  };
  const failed = (error) => {
    render(summary, errorLine(error, failure));
    showError(error, failure);
  };

  async function nextPage() {
    try {
      const data = await api('GET', '/api/brain/memory' + query({ ...params, limit: PAGE_SIZE, cursor }));
      append(data.items);
      cursor = data.next_cursor;
      more.hidden = !cursor;
      update();
    } catch (error) {
      failed(error);
    }
  }
  more.addEventListener('click', () => busy(more, nextPage));

  return {
    list, summary, more,
    // The first page of the memories `filter` (scope, type) selects.
    async load(filter) {
      params = filter;
      reset();
      await nextPage();
    },
    // Shows what `fetchMemories()` resolves to, unpaged (search results).
    async show(fetchMemories) {
      reset();
      try {
        append(await fetchMemories());
        update();
      } catch (error) {
        failed(error);
      }
    },
  };
}

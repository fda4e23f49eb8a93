// The dashboard's few building blocks. Text always goes in as text (textContent),
// never as markup, so nothing a memory or a skill says can run in the page.

// h('button', {type: 'button', onclick: f}, 'Save'): an element with attributes,
// properties (on*, value, checked, ...) and children (strings, nodes, arrays, null).
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key in PROPERTIES) node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

const PROPERTIES = { value: true, checked: true, selected: true, disabled: true, hidden: true };

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces a container's content.
export function render(container, ...children) {
  container.replaceChildren();
  append(container, children);
}

let nextId = 0;
// A fresh id for pairing a <label for> with its control.
export function uid(prefix) {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

// A labelled control: returns [label, control].
export function field(labelText, control) {
  if (!control.id) control.id = uid('field');
  return h('div', { class: 'field' }, h('label', { for: control.id }, labelText), control);
}

export function select(name, options, selected) {
  return h('select', { name },
    options.map(([value, text]) => h('option', { value, selected: value === selected }, text)));
}

// "1 memory", "2 memories".
export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// Toasts on screen at once; older ones give way so they never pile over the page.
const MAX_TOASTS = 3;

// A message at the corner of the screen, read out by screen readers.
export function toast(message, kind = 'info') {
  const box = document.getElementById('toasts');
  // The same message again replaces the one on screen (its time starts over): a
  // failure repeated shows once instead of stacking.
  for (const shown of [...box.children]) {
    if (shown.classList.contains(`toast-${kind}`) && shown.firstElementChild.textContent === message) {
      shown.remove();
    }
  }
  while (box.children.length >= MAX_TOASTS) box.firstElementChild.remove();
  const note = h('div', { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('span', {}, message),
    h('button', { type: 'button', class: 'toast-close', 'aria-label': 'Dismiss', onclick: () => note.remove() }, '×'));
  box.append(note);
  setTimeout(() => note.remove(), kind === 'error' ? 12000 : 5000);
  return note;
}

// Shows an API failure to the user; never swallows it.
export function showError(error, context) {
  const text = context ? `${context}: ${error.message}` : error.message;
  toast(text, 'error');
}

// An inline error line inside a region (for failures loading the region itself).
export function errorLine(error, context) {
  return h('p', { class: 'error', role: 'alert' }, context ? `${context}: ${error.message}` : error.message);
}

// Asks before something that cannot be undone; resolves true only on confirm.
export function confirmAction(question, confirmText = 'Delete') {
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-question' },
      h('p', { id: 'confirm-question' }, question),
      h('form', { method: 'dialog', class: 'actions' },
        h('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
        h('button', { value: 'confirm', type: 'submit', class: 'danger' }, confirmText)));
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// Disables a button while `work` runs, so a double click cannot send twice.
export async function busy(button, work) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

// "3 min ago" for recent times, the date beyond a week; the full time on hover.
export function timeAgo(iso) {
  if (!iso) return h('span', {}, 'never');
  const then = new Date(iso);
  const seconds = Math.round((Date.now() - then.getTime()) / 1000);
  let text;
  if (seconds < 60) text = 'just now';
  else if (seconds < 3600) text = `${Math.floor(seconds / 60)} min ago`;
  else if (seconds < 86400) text = `${Math.floor(seconds / 3600)} h ago`;
  else if (seconds < 7 * 86400) text = `${Math.floor(seconds / 86400)} d ago`;
  else text = then.toISOString().slice(0, 10);
  return h('time', { datetime: iso, title: then.toISOString() }, text);
}

export function badge(text, kind, label) {
  return h('span', { class: `badge badge-${kind}`, title: label || text }, text);
}

// Tells the header (and anything else listening) that stored data changed.
export function changed() {
  document.dispatchEvent(new CustomEvent('engram:changed'));
}

// The header every page shares: which page is current, the brain's status (enabled,
// learning paused, counts) kept live from /api/events, and the pause/resume button.

import { api, events, logOut } from './api.js';
import { busy, changed, plural, showError } from './ui.js';

const statusLine = document.getElementById('brain-status');
const toggle = document.getElementById('learning-toggle');
let paused = null;

for (const link of document.querySelectorAll('.site-header nav a')) {
  const path = link.getAttribute('href');
  if (location.pathname === path || location.pathname.startsWith(path + '/')) {
    link.setAttribute('aria-current', 'page');
  }
}

async function refresh() {
  try {
    const status = await api('GET', '/api/brain/status');
    show(status);
  } catch (error) {
    statusLine.textContent = `Brain status unavailable: ${error.message}`;
    statusLine.classList.add('error');
  }
}

function show(status) {
  statusLine.classList.toggle('error', Boolean(status.error));
  if (!status.enabled) {
    statusLine.textContent = `Second Brain off${status.error ? `: ${status.error}` : ''}`;
    toggle.hidden = true;
    return;
  }
  const scopes = status.counts.by_scope;
  const conscious = scopes.durable + scopes.active;
  paused = Boolean(status.learning_paused);
  statusLine.textContent = `Brain on · learning ${paused ? 'paused' : 'on'} · `
    + `${plural(status.counts.total, 'memory', 'memories')} (${conscious} conscious, ${scopes.subconscious} subconscious)`;
  statusLine.dataset.learning = paused ? 'paused' : 'on';
  toggle.hidden = false;
  toggle.textContent = paused ? 'Resume learning' : 'Pause learning';
  toggle.setAttribute('aria-pressed', String(paused));
}

toggle.addEventListener('click', () => busy(toggle, async () => {
  try {
    await api('POST', paused ? '/api/brain/learning/resume' : '/api/brain/learning/pause');
    changed();
  } catch (error) {
    showError(error, paused ? 'Could not resume learning' : 'Could not pause learning');
  }
}));

// Refresh at most every 300 ms however many changes arrive together.
let pending = null;
function refreshSoon() {
  if (pending) return;
  pending = setTimeout(() => {
    pending = null;
    refresh();
  }, 300);
}

document.addEventListener('engram:changed', refreshSoon);

const BRAIN_EVENTS = ['memory.created', 'memory.updated', 'memory.deleted',
  'consolidation.completed', 'learning.paused', 'learning.resumed'];
const stream = events((name) => {
  if (BRAIN_EVENTS.includes(name)) refreshSoon();
});
window.addEventListener('pagehide', () => stream.close());

// The logout form is posted by script: the server wants the session's secret too.
const logoutForm = document.querySelector('form[action="/logout"]');
logoutForm?.addEventListener('submit', (event) => {
  event.preventDefault();
  logOut();
});

refresh();

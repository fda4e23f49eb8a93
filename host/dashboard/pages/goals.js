// /second-brain/goals: two tabs, Goals (memories of type goal) and Projects (type
// project). Each lists its memories as cards and has a form that adds one; what is
// added here is an ordinary memory, seen on every other page too. The selected tab is
// in the URL (?tab=projects), and the tabs follow the ARIA tabs pattern: arrow keys,
// Home and End move between them.

import { query } from '../api.js';
import { addMemoryForm, memoryList } from '../memory-item.js';
import { h, render } from '../ui.js';

const page = document.getElementById('page');

const TABS = [
  {
    key: 'goals', type: 'goal', title: 'Goals', one: 'goal', many: 'goals',
    empty: 'No goals yet. Add one above: it is stored as a memory of type goal.',
  },
  {
    key: 'projects', type: 'project', title: 'Projects', one: 'project', many: 'projects',
    empty: 'No projects yet. Add one above: it is stored as a memory of type project.',
  },
];

function requestedTab() {
  const wanted = new URLSearchParams(location.search).get('tab');
  return TABS.find((tab) => tab.key === wanted) || TABS[0];
}

// One tab: its button, its panel, and the list the panel loads (once, on first show).
function makeTab(tab) {
  const tabId = `tab-${tab.key}`;
  const panelId = `panel-${tab.key}`;
  const count = h('span', { class: 'tab-count', 'aria-hidden': 'true' });
  const button = h('button', {
    type: 'button', role: 'tab', id: tabId, 'aria-controls': panelId,
    'aria-selected': 'false', tabindex: '-1', dataset: { tab: tab.key },
  }, tab.title, count);
  const memories = memoryList({
    label: tab.title,
    moreText: `Load more ${tab.many}`,
    failure: `Could not load the ${tab.many}`,
    describe({ shown, more }) {
      count.textContent = shown ? ` (${shown}${more ? '+' : ''})` : '';
      return shown === 0
        ? h('span', { class: 'empty' }, tab.empty)
        : `${shown}${more ? '+' : ''} ${shown === 1 ? tab.one : tab.many}.`;
    },
  });
  const form = addMemoryForm({
    fixedType: tab.type,
    legend: `Add a ${tab.one}`,
    onAdded: () => reload(),
  });
  form.classList.add(`add-${tab.type}`);
  const panel = h('section', {
    role: 'tabpanel', id: panelId, 'aria-labelledby': tabId, tabindex: '0',
    class: 'tab-panel', hidden: true, dataset: { tab: tab.key },
  }, form, h('h2', { class: 'visually-hidden' }, tab.title), memories.summary, memories.list, memories.more);

  let loaded = false;
  function reload() {
    loaded = true;
    return memories.load({ type: tab.type });
  }

  return {
    ...tab,
    button,
    panel,
    show() {
      if (!loaded) reload();
    },
  };
}

const tabs = TABS.map(makeTab);

function selectTab(tab, { focus = false } = {}) {
  for (const other of tabs) {
    const selected = other === tab;
    other.button.setAttribute('aria-selected', String(selected));
    other.button.tabIndex = selected ? 0 : -1;
    other.panel.hidden = !selected;
  }
  if (focus) tab.button.focus();
  const next = tab === tabs[0] ? '' : query({ tab: tab.key });
  history.replaceState(null, '', location.pathname + next);
  tab.show();
}

const tablist = h('div', { role: 'tablist', 'aria-label': 'Goals and projects', class: 'tabs' },
  tabs.map((tab) => tab.button));

tablist.addEventListener('click', (event) => {
  const button = event.target.closest('[role="tab"]');
  const tab = button && tabs.find((t) => t.button === button);
  if (tab) selectTab(tab);
});

tablist.addEventListener('keydown', (event) => {
  const current = tabs.findIndex((t) => t.button === document.activeElement);
  if (current < 0) return;
  let next = null;
  if (event.key === 'ArrowRight' || event.key === 'ArrowDown') next = (current + 1) % tabs.length;
  else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') next = (current - 1 + tabs.length) % tabs.length;
  else if (event.key === 'Home') next = 0;
  else if (event.key === 'End') next = tabs.length - 1;
  if (next === null) return;
  event.preventDefault();
  selectTab(tabs[next], { focus: true });
});

render(page, tablist, tabs.map((tab) => tab.panel));

// Both lists load at once, so each tab shows its count; the URL picks the one shown.
const first = requestedTab();
selectTab(tabs.find((tab) => tab.key === first.key));
for (const tab of tabs) tab.show();

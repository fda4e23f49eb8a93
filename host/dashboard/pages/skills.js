// /skills: the installed skills, each with an active switch and a delete (trash)
// button; installs from a registry id (category/slug) or from the address of a raw
// SKILL.md, each reported by toasts (under way, then the status or the server's
// reason); a refresh button that runs the discovery scan; a link to the registry.

import { api } from '../api.js';
import { badge, busy, confirmAction, errorLine, field, h, render, showError, toast } from '../ui.js';

const page = document.getElementById('page');
const registry = document.body.dataset.registry || '';

const SOURCES = {
  seed: 'built-in',
  registry: 'registry',
  url: 'URL',
  file: 'file',
  manual: 'manual',
  chat: 'pasted in a chat',
};

const STATUS_WORDS = {
  installed: 'Installed',
  reinstalled: 'Reinstalled',
  updated: 'Updated',
};

const list = h('ul', { class: 'skills', 'aria-label': 'Installed skills' });
const summary = h('p', { class: 'list-summary', role: 'status' }, 'Loading…');
const notices = h('div', { class: 'skill-notices' });

// ---------------------------------------------------------------- install forms

// A form with one text control, a "force" checkbox and an Install button, that
// POSTs `body(value, force, confirmTools)` to `path` with a toast before and after.
// A skill that asks for tools is refused (`tools-unconfirmed`) until the person
// grants them in a dialog that names them; the install is then sent again with
// `confirm_tools`.
function installForm({ id, legend, label, input, hint, path, body, what }) {
  input.id = id;
  input.required = true;
  const hintId = `${id}-hint`;
  input.setAttribute('aria-describedby', hintId);
  const force = h('input', { type: 'checkbox', name: 'force', id: `${id}-force` });
  const submit = h('button', { type: 'submit' }, 'Install');
  const problem = h('p', { class: 'error', role: 'alert', hidden: true });
  const form = h('form', { class: 'install card', id: `${id}-form` },
    h('fieldset', {},
      h('legend', {}, legend),
      field(label, input),
      h('p', { class: 'hint', id: hintId }, hint),
      h('div', { class: 'check' }, force,
        h('label', { for: force.id }, 'Reinstall if this version is installed already (force)')),
      problem,
      h('div', { class: 'actions' }, submit)));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) {
      input.focus();
      return;
    }
    busy(submit, async () => {
      problem.hidden = true;
      const label = what(value);
      const pending = toast(`Installing ${label}…`, 'info');
      try {
        let result;
        try {
          result = await api('POST', path, body(value, force.checked, false));
        } catch (error) {
          if (error.code !== 'tools-unconfirmed') throw error;
          const granted = await confirmAction(
            `${error.message.split('; they are granted')[0]}. They are allowed whenever the skill is invoked. Grant them and install?`,
            'Grant and install');
          if (!granted) throw new Error('cancelled; nothing was installed');
          result = await api('POST', path, body(value, force.checked, true));
        }
        pending.remove();
        toast(installedText(result), 'ok');
        input.value = '';
        force.checked = false;
        await load({ highlight: result.slug });
      } catch (error) {
        pending.remove();
        let text = error.message;
        if (error.code === 'already-installed') {
          // The server's reason speaks of the API's "force": say where that is here.
          text = `${label} is installed already at this version; nothing was written. `
            + 'To install it again, tick “Reinstall if this version is installed already (force)”.';
        }
        problem.textContent = text;
        problem.hidden = false;
        // The server's reason usually names what was refused: say it once.
        toast(text.includes(value) ? `Could not install: ${text}` : `Could not install ${label}: ${text}`,
          'error');
      }
    });
  });
  return form;
}

// "Installed ai-ml/agent-audit-logging 1.0.0": the status as the first word.
function installedText(result) {
  const word = STATUS_WORDS[result.status] || `${result.status}:`;
  const version = result.version ? ` ${result.version}` : '';
  const warnings = result.warnings && result.warnings.length
    ? `, with ${result.warnings.length} warning${result.warnings.length === 1 ? '' : 's'}: `
      + result.warnings.map((w) => w.message).join('; ')
    : '';
  const tools = result.allowed_tools && result.allowed_tools.length
    ? `; it may use ${result.allowed_tools.join(', ')} whenever it is invoked`
    : '';
  return `${word} ${result.id}${version}${tools}${warnings}`;
}

const registryForm = installForm({
  id: 'install-registry-id',
  legend: 'Install from the registry',
  label: 'Registry id (category/slug)',
  input: h('input', {
    type: 'text', name: 'id', placeholder: 'development/clean-code', autocomplete: 'off',
    spellcheck: 'false', autocapitalize: 'none', maxlength: '200',
  }),
  hint: 'The id the registry shows for a skill, e.g. ai-ml/agent-audit-logging.',
  path: '/api/skills/install-from-registry',
  body: (id, force, confirmTools) => ({ id, force, confirm_tools: confirmTools }),
  what: (id) => id,
});

const urlForm = installForm({
  id: 'install-url',
  legend: 'Install from a URL',
  label: 'Address of a raw SKILL.md',
  input: h('input', {
    type: 'url', name: 'url', placeholder: 'https://example.org/my-skill/SKILL.md',
    autocomplete: 'off', spellcheck: 'false', maxlength: '2000',
  }),
  hint: 'Engram fetches the file, checks its frontmatter and saves it; nothing in it is run.',
  path: '/api/skills/install',
  body: (url, force, confirmTools) => ({ url, force, confirm_tools: confirmTools }),
  what: (url) => url,
});

// ---------------------------------------------------------------- toolbar

const rescan = h('button', {
  type: 'button', class: 'icon-button rescan', 'aria-label': 'Rescan skills directory',
  title: 'Rescan skills directory',
}, h('span', { class: 'icon icon-refresh', 'aria-hidden': 'true' }));

rescan.addEventListener('click', () => busy(rescan, async () => {
  try {
    const report = await api('POST', '/api/skills/scan');
    const { text, kind } = scanText(report);
    toast(text, kind);
    await load();
  } catch (error) {
    showError(error, 'The scan failed');
  }
}));

function scanText(report) {
  const parts = [];
  if (report.added.length) parts.push(`added ${report.added.join(', ')}`);
  if (report.refreshed.length) parts.push(`refreshed ${report.refreshed.join(', ')}`);
  if (report.dropped.length) parts.push(`dropped ${report.dropped.map((d) => d.slug).join(', ')} (directory gone)`);
  if (report.recovered.length) parts.push(`settled ${report.recovered.length} interrupted operation${report.recovered.length === 1 ? '' : 's'}`);
  if (report.index_reset) parts.push(`rebuilt the index (${report.index_reset})`);
  if (report.problems.length) {
    parts.push(`${report.problems.length} not valid: `
      + report.problems.map((p) => `${p.path} (${p.message})`).join('; '));
  }
  if (parts.length === 0) return { text: 'Scan done: nothing new in the skills directory.', kind: 'ok' };
  return { text: `Scan done: ${parts.join('; ')}.`, kind: report.problems.length ? 'info' : 'ok' };
}

const browse = registry
  ? h('a', { class: 'registry-browse', href: registry, target: '_blank', rel: 'noopener noreferrer' },
    'Browse the registry', h('span', { class: 'visually-hidden' }, ' (opens in a new tab)'), ' ↗')
  : h('span', { class: 'registry-browse hint' }, 'No skills registry is configured (skills.registry in config.yaml).');

// ---------------------------------------------------------------- the list

function skillCard(skill) {
  const card = h('li', { class: 'skill card', dataset: { slug: skill.slug } });
  showSkill(card, skill);
  return card;
}

function showSkill(card, skill) {
  const name = skill.name || skill.slug;
  card.classList.toggle('inactive', !skill.active);
  card.classList.toggle('broken', Boolean(skill.error));
  const switchId = `active-${skill.slug}`;
  const toggle = h('input', {
    type: 'checkbox', role: 'switch', id: switchId, class: 'switch', checked: skill.active,
  });
  toggle.addEventListener('change', () => setActive(card, skill, toggle));
  const remove = h('button', {
    type: 'button', class: 'icon-button delete danger', 'aria-label': `Delete ${name}`, title: `Delete ${name}`,
  }, h('span', { class: 'icon icon-trash', 'aria-hidden': 'true' }));
  remove.addEventListener('click', () => deleteSkill(card, skill, remove));
  const description = skill.description || skill.summary;
  const categories = skill.categories && skill.categories.length
    ? skill.categories : (skill.category ? [skill.category] : []);
  render(card,
    h('div', { class: 'skill-head' },
      h('h3', { class: 'skill-name' }, name),
      skill.version ? badge(`v${skill.version}`, 'version', `Version ${skill.version}`) : null,
      badge(SOURCES[skill.source.kind] || skill.source.kind, 'source', sourceTitle(skill.source)),
      skill.pinned ? badge('pinned', 'pinned', 'Left alone by engram skills update') : null,
      h('div', { class: 'skill-controls' },
        h('span', { class: 'switch-wrap' },
          toggle,
          h('label', { for: switchId },
            h('span', { class: 'visually-hidden' }, `${name} `),
            h('span', { class: 'switch-state' }, skill.active ? 'active' : 'inactive'))),
        remove)),
    description ? h('p', { class: 'skill-description' }, description) : null,
    h('p', { class: 'skill-meta' },
      h('span', { class: 'skill-id' }, skill.id),
      categories.length ? [' · ', categories.join(', ')] : null,
      skill.tags && skill.tags.length
        ? h('span', { class: 'tags' }, skill.tags.map((tag) => badge(tag, 'tag'))) : null),
    skill.warnings && skill.warnings.length
      ? h('ul', { class: 'skill-warnings', 'aria-label': `Warnings for ${name}` },
        skill.warnings.map((w) => h('li', { class: 'warning' }, `Warning: ${w.message} (${w.code})`)))
      : null,
    skill.error
      ? h('p', { class: 'error skill-error' }, `Cannot be used: ${skill.error.message} (${skill.error.code})`)
      : null);
}

function sourceTitle(source) {
  const where = source.url || source.registry;
  return `Source: ${source.kind}${where ? ` (${where})` : ''}`;
}

async function setActive(card, skill, toggle) {
  const wanted = toggle.checked;
  const name = skill.name || skill.slug;
  toggle.disabled = true;
  try {
    const updated = await api('POST',
      `/api/skills/${encodeURIComponent(skill.slug)}/${wanted ? 'activate' : 'deactivate'}`);
    Object.assign(skill, updated);
    showSkill(card, skill);
    card.querySelector('input.switch').focus();
    await refreshCounts();
  } catch (error) {
    toggle.checked = !wanted;
    toggle.disabled = false;
    showError(error, `Could not ${wanted ? 'activate' : 'deactivate'} ${name}`);
  }
}

async function deleteSkill(card, skill, button) {
  const name = skill.name || skill.slug;
  const sure = await confirmAction(`Delete the skill “${name}” (${skill.id})? Its directory is removed from disk.`);
  if (!sure) {
    button.focus();
    return;
  }
  await busy(button, async () => {
    try {
      await api('DELETE', `/api/skills/${encodeURIComponent(skill.slug)}`);
      const next = card.nextElementSibling || card.previousElementSibling;
      card.remove();
      toast(`Deleted ${name}`, 'ok');
      (next ? next.querySelector('input.switch') : rescan).focus();
      await refreshCounts();
    } catch (error) {
      showError(error, `Could not delete ${name}`);
    }
  });
}

function showNotices(data) {
  const parts = [];
  if (data.unindexed && data.unindexed.length) {
    parts.push(h('p', { class: 'notice' },
      `Not indexed yet: ${data.unindexed.join(', ')}. Rescan the skills directory to add `
      + (data.unindexed.length === 1 ? 'it.' : 'them.')));
  }
  if (data.problems && data.problems.length) {
    parts.push(h('div', { class: 'notice problems' },
      h('p', {}, 'Directories in the skills folder that are not valid skills:'),
      h('ul', {}, data.problems.map((p) => h('li', {}, `${p.path}: ${p.message} (${p.code})`)))));
  }
  render(notices, parts);
}

function describe(data) {
  const c = data.counts;
  summary.textContent = c.installed === 0
    ? 'No skills installed. Install one from the registry or a URL above.'
    : `${c.installed} skill${c.installed === 1 ? '' : 's'} installed · ${c.active} active · `
      + `${c.inactive} inactive${c.broken ? ` · ${c.broken} broken` : ''}`;
}

// After a change to one card: the counts and notices again, the cards left as they are.
async function refreshCounts() {
  try {
    const data = await api('GET', '/api/skills');
    describe(data);
    showNotices(data);
  } catch (error) {
    showError(error, 'Could not reload the skills');
  }
}

// Loads the list again; `highlight` marks a skill's card and scrolls to it.
async function load({ highlight } = {}) {
  summary.textContent = 'Loading…';
  try {
    const data = await api('GET', '/api/skills');
    render(list, data.items.map(skillCard));
    describe(data);
    showNotices(data);
    if (highlight) {
      const card = list.querySelector(`li.skill[data-slug="${CSS.escape(highlight)}"]`);
      if (card) {
        card.classList.add('highlight');
        card.scrollIntoView({ block: 'nearest' });
      }
    }
  } catch (error) {
    render(summary, errorLine(error, 'Could not load the skills'));
    showError(error, 'Could not load the skills');
  }
}

render(page,
  h('div', { class: 'toolbar skills-toolbar' }, browse, rescan),
  h('section', { class: 'install-forms', 'aria-labelledby': 'install-heading' },
    h('h2', { id: 'install-heading' }, 'Install a skill'),
    h('div', { class: 'install-grid' }, registryForm, urlForm)),
  h('section', { class: 'installed', 'aria-labelledby': 'installed-heading' },
    h('h2', { id: 'installed-heading' }, 'Installed skills'),
    summary,
    notices,
    list));

load();

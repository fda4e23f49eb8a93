// What was said: a transcript hit (a message of a conversation) as a card with its
// date, speaker and conversation, and the conversation's deletion after a
// confirmation. The memory page's "Conversations" scope lists them.

import { api } from './api.js';
import { busy, changed, confirmAction, h, showError, toast } from './ui.js';

// `2026-11-22 10:04`, in the browser's time zone.
function when(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// A card for one hit; `onDeleted(conversationId)` runs after its conversation is deleted.
export function saidCard(hit, { onDeleted } = {}) {
  const speaker = hit.name || hit.role;
  const remove = h('button', { type: 'button', class: 'delete danger' }, 'Delete conversation',
    h('span', { class: 'visually-hidden' }, ` ${hit.conversation_id}`));
  const card = h('li', { class: 'said card', dataset: { id: hit.id, conversation: hit.conversation_id } },
    h('p', { class: 'summary' }, hit.snippet),
    h('p', { class: 'meta' },
      h('time', { datetime: hit.at }, when(hit.at)),
      ` · ${speaker} · conversation `,
      h('code', { class: 'conversation' }, hit.conversation_id)),
    h('div', { class: 'actions' }, remove));
  remove.addEventListener('click', async () => {
    const sure = await confirmAction(
      `Delete the conversation “${hit.conversation_id}” and everything said in it? Memories learned from it stay.`);
    if (!sure) {
      remove.focus();
      return;
    }
    await busy(remove, async () => {
      try {
        const deleted = await api('DELETE', `/api/brain/conversations/${encodeURIComponent(hit.conversation_id)}`);
        toast(`Conversation deleted (${deleted.messages} messages)`);
        changed();
        if (onDeleted) onDeleted(hit.conversation_id);
      } catch (error) {
        showError(error, 'Could not delete the conversation');
      }
    });
  });
  return card;
}

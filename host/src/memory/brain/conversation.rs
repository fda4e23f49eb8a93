//! What the Second Brain does with conversations: record a message (checked, its
//! secrets redacted, a request to forget acted on before anything reads it), check,
//! read and delete a conversation, prune the transcript past its retention. The
//! transcript tier's rows and search are `transcript.rs`.

use engram_strategies::model::Role;

use super::Brain;
use super::error::StoreError;
use super::transcript::{
    CONVERSATION_COLUMNS, MESSAGE_COLUMNS, conversation_from_row, message_from_row,
};
use crate::ids::new_id;
use crate::memory::record::{ConversationRecord, MessageRecord};
use crate::memory::{MAX_MESSAGE_BYTES, MAX_NAME_CHARS};
use crate::sql::{Actor, AsTx};

/// Messages deleted per transaction while pruning, so that a large backlog never
/// holds the writer for long.
const PRUNE_BATCH: usize = 5_000;

fn invalid(field: &'static str, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Checks a message before anything is stored.
fn validate(conversation_id: &str, name: Option<&str>, content: &str) -> Result<(), StoreError> {
    if conversation_id.is_empty() || conversation_id.chars().count() > 128 {
        return Err(invalid("conversation_id", "must be 1 to 128 characters"));
    }
    if content.len() > MAX_MESSAGE_BYTES {
        return Err(invalid(
            "content",
            format!(
                "{} bytes, over the {MAX_MESSAGE_BYTES}-byte limit",
                content.len()
            ),
        ));
    }
    if let Some(name) = name {
        if name.trim().is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(invalid(
                "name",
                format!("must be 1 to {MAX_NAME_CHARS} characters"),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(invalid("name", "must not contain control characters"));
        }
    }
    Ok(())
}

impl Brain {
    /// Records one message; the conversation is created on its first message and
    /// reopened by a message after it ended. `name` is the speaker's, when known.
    /// Returns the message id, or `None` when learning is paused (nothing is stored
    /// then but the conversation's last activity).
    pub fn record_message(
        &self,
        user: &str,
        conversation_id: &str,
        role: Role,
        name: Option<&str>,
        content: &str,
    ) -> Result<Option<String>, StoreError> {
        self.record_message_at(user, conversation_id, role, name, content, self.now())
    }

    /// [`Brain::record_message`] for a message said at `at` (an import replaying a
    /// conversation): the message and a new conversation's start carry `at`; the
    /// conversation's last activity stays now, so the idle timer does not end it while
    /// it is being replayed.
    pub fn record_message_at(
        &self,
        user: &str,
        conversation_id: &str,
        role: Role,
        name: Option<&str>,
        content: &str,
        at: i64,
    ) -> Result<Option<String>, StoreError> {
        validate(conversation_id, name, content)?;
        let name = name.map(str::trim);
        let paused = self.learning_paused(user)?;
        let now = self.now();
        let mut purge = false;
        let kinds = self.redaction.kinds();
        // Acting for the person: another person's conversation is not theirs to see,
        // so its id is told apart by the insert that does nothing and the update
        // that finds no row of theirs.
        let recorded = self.store.write(Actor::User(user), |tx| {
            let created = tx.as_tx().execute(
                "INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (id) DO NOTHING",
                &[conversation_id.into(), user.into(), at.min(now).into(), now.into()],
            )?;
            if created == 0 {
                let theirs = tx.as_tx().execute(
                    "UPDATE conversations SET last_message_at = ?2, ended_at = NULL WHERE id = ?1 AND user_id = ?3",
                    &[conversation_id.into(), now.into(), user.into()],
                )?;
                if theirs == 0 {
                    return Err(StoreError::OtherUsers {
                        what: "conversation",
                        id: conversation_id.to_string(),
                    });
                }
            }
            if paused {
                return Ok(None);
            }
            // Secrets never reach the table, its index, extraction or a plugin.
            let content = super::redact::redacted(tx, user, content, kinds)?;
            let content = content.as_ref();
            let seq: i64 = tx.as_tx().query_one(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
                &[conversation_id.into()],
                |r| r.get(0),
            )?;
            let id = new_id("turn");
            tx.as_tx().execute(
                "INSERT INTO messages (id, conversation_id, user_id, seq, role, name, content, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                &[
                    id.as_str().into(),
                    conversation_id.into(),
                    user.into(),
                    seq.into(),
                    role.as_str().into(),
                    name.into(),
                    content.into(),
                    at.into(),
                ],
            )?;
            super::transcript::index_message(&tx.as_tx(), &id)?;
            // A request to forget is acted on before anything reads the message.
            if role == Role::User {
                let message = MessageRecord {
                    id: id.clone(),
                    conversation_id: conversation_id.to_string(),
                    user_id: user.to_string(),
                    seq,
                    role: role.as_str().to_string(),
                    name: name.map(str::to_string),
                    content: content.to_string(),
                    at,
                };
                if let Some(forgotten) = super::forget::on_message(tx, &message, now)? {
                    purge |= !forgotten.messages.is_empty();
                }
            }
            Ok(Some(id))
        })?;
        if purge {
            self.purge();
        }
        Ok(recorded)
    }

    /// Refuses `id` when it is another user's conversation, as [`Brain::record_message`]
    /// would; an unknown id is fine (the first message creates it). Reads only.
    pub fn check_conversation(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let owner: Option<String> = self.store.read(Actor::System, |c| {
            Ok(c.as_tx().query_opt(
                "SELECT user_id FROM conversations WHERE id = ?1",
                &[id.into()],
                |r| r.get(0),
            )?)
        })?;
        match owner {
            Some(owner) if owner != user => Err(StoreError::OtherUsers {
                what: "conversation",
                id: id.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Deletes a conversation of `user` with all its messages (and their index
    /// entries); memories learned from it stay. Returns how many messages went.
    pub fn delete_conversation(&self, user: &str, id: &str) -> Result<usize, StoreError> {
        self.store.write(Actor::User(user), |tx| {
            let messages = tx.as_tx().execute(
                "DELETE FROM messages WHERE conversation_id = ?1 AND user_id = ?2",
                &[id.into(), user.into()],
            )?;
            let found = tx.as_tx().execute(
                "DELETE FROM conversations WHERE id = ?1 AND user_id = ?2",
                &[id.into(), user.into()],
            )?;
            if found == 0 {
                return Err(StoreError::NoConversation(id.to_string()));
            }
            Ok(messages as usize)
        })
    }

    /// One conversation of `user` and its messages in order.
    pub fn conversation(
        &self,
        user: &str,
        id: &str,
    ) -> Result<(ConversationRecord, Vec<MessageRecord>), StoreError> {
        self.store.read(Actor::User(user), |c| {
            let c = c.as_tx();
            let conversation = c
                .query_opt(
                    &format!(
                        "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?1 AND user_id = ?2"
                    ),
                    &[id.into(), user.into()],
                    conversation_from_row,
                )?
                .ok_or_else(|| StoreError::NoConversation(id.to_string()))?;
            let messages = c.query(
                &format!(
                    "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ?1 AND user_id = ?2 ORDER BY seq"
                ),
                &[id.into(), user.into()],
                message_from_row,
            )?;
            Ok((conversation, messages))
        })
    }

    /// The maintenance pass's pruning: deletes every message older than `keep_ms`
    /// that extraction has read, in batches, then the ended conversations left empty.
    /// `keep_ms` 0 keeps nothing extraction is done with. Returns the messages deleted.
    pub fn prune_transcript(&self, keep_ms: i64) -> Result<usize, StoreError> {
        let before = self.now() - keep_ms.max(0);
        let mut deleted = 0;
        loop {
            let batch = self.store.write(Actor::System, |tx| {
                // Deleted in the index's rowid order (each user's block in turn): FTS5
                // writes out what it holds in memory whenever a rowid is lower than the
                // last one it was given in the transaction.
                let tx = tx.as_tx();
                let mut doomed: Vec<(i64, i64)> = tx.query(
                    "SELECT u.number, m.n FROM messages m
                     JOIN conversations c ON c.id = m.conversation_id
                     JOIN transcript_users u ON u.user_id = m.user_id
                     WHERE m.at <= ?1 AND m.seq <= c.extracted_seq LIMIT ?2",
                    &[before.into(), (PRUNE_BATCH as i64).into()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                doomed.sort_unstable();
                for (_, n) in &doomed {
                    tx.execute("DELETE FROM messages WHERE n = ?1", &[(*n).into()])?;
                }
                Ok(doomed.len())
            })?;
            deleted += batch;
            if batch < PRUNE_BATCH {
                break;
            }
        }
        self.store.write(Actor::System, |tx| {
            tx.as_tx().execute(
                "DELETE FROM conversations WHERE ended_at IS NOT NULL AND last_message_at <= ?1
                 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id)",
                &[before.into()],
            )?;
            Ok(())
        })?;
        Ok(deleted)
    }
}

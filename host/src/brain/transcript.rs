//! The transcript tier: every message recorded in a conversation, with its speaker's
//! name, role, time and id, kept for `memory.secondBrain.transcriptDays` (default 365)
//! after extraction has read it, and full-text indexed (`messages_fts`, porter
//! stemmed, over the text and the name) for retrieval and search.
//!
//! - Typed memories stay the only thing extraction, conflict rules and consolidation
//!   act on; the transcript is what was said, searchable as said.
//! - Paused learning records nothing new: the message is not stored (the conversation
//!   is still known, so that it can be ended).
//! - A message is pruned once it is older than the retention and extraction has read
//!   it; unread messages wait for their conversation to end.
//! - Every statement is scoped by `user_id`; a conversation id belongs to the user who
//!   used it first.

use engram_strategies::model::Role;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::Brain;
use super::record::{ConversationRecord, MessageRecord};
use super::store::StoreError;
use super::text_index::TextQuery;
use crate::ids::new_id;

/// Longest message recorded.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest speaker name.
pub const MAX_NAME_CHARS: usize = 100;
/// Default retention of the transcript (`memory.secondBrain.transcriptDays`).
pub const DEFAULT_TRANSCRIPT_DAYS: u32 = 365;
/// Messages deleted per transaction while pruning, so that a large backlog never
/// holds the writer for long.
const PRUNE_BATCH: usize = 5_000;
/// How many FTS hits the fast search path ranks per result it must return.
const SEARCH_OVERFETCH: usize = 4;

pub(super) const MESSAGE_COLUMNS: &str =
    "id, conversation_id, user_id, seq, role, name, content, at";

/// bm25 weights of `messages_fts`' columns: the text, the speaker's name.
const BM25_WEIGHTS: &str = "1.0, 1.0";

/// A full-text match in the transcript with its bm25 score (lower is better).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageMatch {
    pub message: MessageRecord,
    pub bm25: f64,
}

pub(super) fn message_from_row(row: &Row) -> rusqlite::Result<MessageRecord> {
    Ok(MessageRecord {
        id: row.get(0)?,
        conversation_id: row.get(1)?,
        user_id: row.get(2)?,
        seq: row.get(3)?,
        role: row.get(4)?,
        name: row.get(5)?,
        content: row.get(6)?,
        at: row.get(7)?,
    })
}

pub(super) fn conversation_from_row(row: &Row) -> rusqlite::Result<ConversationRecord> {
    Ok(ConversationRecord {
        id: row.get(0)?,
        user_id: row.get(1)?,
        started_at: row.get(2)?,
        last_message_at: row.get(3)?,
        ended_at: row.get(4)?,
        extracted_seq: row.get(5)?,
    })
}

pub(super) const CONVERSATION_COLUMNS: &str =
    "id, user_id, started_at, last_message_at, ended_at, extracted_seq";

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
        let recorded = self.store.write(|tx| {
            let owner: Option<String> = tx
                .query_row(
                    "SELECT user_id FROM conversations WHERE id = ?1",
                    [conversation_id],
                    |r| r.get(0),
                )
                .optional()?;
            match owner {
                Some(owner) if owner != user => {
                    return Err(StoreError::OtherUsers {
                        what: "conversation",
                        id: conversation_id.to_string(),
                    });
                }
                Some(_) => {
                    tx.execute(
                        "UPDATE conversations SET last_message_at = ?2, ended_at = NULL WHERE id = ?1",
                        params![conversation_id, now],
                    )?;
                }
                None => {
                    tx.execute(
                        "INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES (?1, ?2, ?3, ?4)",
                        params![conversation_id, user, at.min(now), now],
                    )?;
                }
            }
            if paused {
                return Ok(None);
            }
            // Secrets never reach the table, its index, extraction or a plugin.
            let content = super::redact::redacted(tx, user, content, kinds)?;
            let content = content.as_ref();
            let seq: i64 = tx.query_row(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
                [conversation_id],
                |r| r.get(0),
            )?;
            let id = new_id("turn");
            tx.execute(
                "INSERT INTO messages (id, conversation_id, user_id, seq, role, name, content, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![id, conversation_id, user, seq, role.as_str(), name, content, at],
            )?;
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
        let owner: Option<String> = self.store.read(|c| {
            Ok(c.query_row(
                "SELECT user_id FROM conversations WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?)
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
        self.store.write(|tx| {
            let messages = tx.execute(
                "DELETE FROM messages WHERE conversation_id = ?1 AND user_id = ?2",
                params![id, user],
            )?;
            let found = tx.execute(
                "DELETE FROM conversations WHERE id = ?1 AND user_id = ?2",
                params![id, user],
            )?;
            if found == 0 {
                return Err(StoreError::NoConversation(id.to_string()));
            }
            Ok(messages)
        })
    }

    /// One conversation of `user` and its messages in order.
    pub fn conversation(
        &self,
        user: &str,
        id: &str,
    ) -> Result<(ConversationRecord, Vec<MessageRecord>), StoreError> {
        self.store.read(|c| {
            let conversation = c
                .query_row(
                    &format!(
                        "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?1 AND user_id = ?2"
                    ),
                    params![id, user],
                    conversation_from_row,
                )
                .optional()?
                .ok_or_else(|| StoreError::NoConversation(id.to_string()))?;
            let mut stmt = c.prepare(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ?1 AND user_id = ?2 ORDER BY seq"
            ))?;
            let messages = stmt
                .query_map(params![id, user], message_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
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
            let batch = self.store.write(|tx| {
                Ok(tx.execute(
                    "DELETE FROM messages WHERE n IN (
                        SELECT m.n FROM messages m JOIN conversations c ON c.id = m.conversation_id
                        WHERE m.at <= ?1 AND m.seq <= c.extracted_seq LIMIT ?2)",
                    params![before, PRUNE_BATCH as i64],
                )?)
            })?;
            deleted += batch;
            if batch < PRUNE_BATCH {
                break;
            }
        }
        self.store.write(|tx| {
            tx.execute(
                "DELETE FROM conversations WHERE ended_at IS NOT NULL AND last_message_at <= ?1
                 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id)",
                [before],
            )?;
            Ok(())
        })?;
        Ok(deleted)
    }
}

/// Full-text matches in `user`'s transcript for a query, best first. Ranks on the
/// index alone first and keeps the user's rows; when other users' rows crowd that
/// window out, ranks over the join instead.
pub(super) fn search(
    conn: &Connection,
    user: &str,
    query: &TextQuery,
    limit: usize,
) -> Result<Vec<MessageMatch>, StoreError> {
    let fts_query = query.fts5();
    let fts_query = fts_query.as_str();
    let limit = limit.clamp(1, 500);
    let columns = MESSAGE_COLUMNS
        .split(", ")
        .map(|c| format!("m.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let map = |row: &Row| {
        Ok(MessageMatch {
            message: message_from_row(row)?,
            bm25: row.get(8)?,
        })
    };
    let window = limit * SEARCH_OVERFETCH;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {columns}, f.score FROM (
            SELECT rowid, bm25(messages_fts, {BM25_WEIGHTS}) AS score FROM messages_fts
            WHERE messages_fts MATCH ?1 ORDER BY score LIMIT ?4
        ) f JOIN messages m ON m.n = f.rowid WHERE m.user_id = ?2 ORDER BY f.score LIMIT ?3"
    ))?;
    let fast = stmt
        .query_map(params![fts_query, user, limit as i64, window as i64], map)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if fast.len() >= limit || match_count(conn, query, window)? <= window {
        return Ok(fast);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {columns}, bm25(messages_fts, {BM25_WEIGHTS}) AS score
         FROM messages_fts JOIN messages m ON m.n = messages_fts.rowid
         WHERE messages_fts MATCH ?1 AND m.user_id = ?2 ORDER BY score LIMIT ?3"
    ))?;
    let joined = stmt
        .query_map(params![fts_query, user, limit as i64], map)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(joined)
}

/// The user's latest `limit` messages of their own (role `user`), newest first.
pub(super) fn latest(
    conn: &Connection,
    user: &str,
    limit: usize,
) -> Result<Vec<MessageRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ?1 AND role = 'user' ORDER BY at DESC LIMIT ?2"
    ))?;
    let rows = stmt
        .query_map(params![user, limit as i64], message_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// How many messages (any user) match `query`, counting no further than `cap + 1`.
pub(super) fn match_count(
    conn: &Connection,
    query: &TextQuery,
    cap: usize,
) -> Result<usize, StoreError> {
    let count: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT ?2)",
        )?
        .query_row(params![query.fts5(), (cap + 1) as i64], |r| r.get(0))?;
    Ok(count as usize)
}

/// How many messages the transcript has held (rowids only grow): cheap, and close
/// enough to decide which words are common.
pub(super) fn size(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(n), 0) FROM messages")?
        .query_row([], |r| r.get(0))?)
}

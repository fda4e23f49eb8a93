//! The agent's deletes, undone by the person. A memory the agent deletes (REST with the
//! agent's token, MCP `memory_forget`) is dismissed, not destroyed: `dismissed_at`
//! hides it from everything a dismissed memory is hidden from (list, search,
//! retrieval, counts, persons, the graph), export leaves it out, retrieval and search
//! leave out the messages it was learned from and those that state its value
//! ([`hidden_messages`]), consolidation's
//! summaries are dropped until the next one rebuilds them, and a row of
//! `agent_dismissals` says it was the agent's and whether its messages are to be
//! kept. Nothing else changes, the transcript it came from included, so a restore
//! ([`Brain::restore`]) brings back exactly what was there. When the window ends
//! (`memory.agentDeletes.restoreDays`), maintenance forgets it as a delete does
//! (`forget.rs`): for good, with the transcript redaction (unless `keep_messages`), in
//! the forget log as the agent's. How many the agent may delete is the gate's
//! (`gate/deletes.rs`).

use std::collections::HashSet;

use crate::sql::{Actor, AsTx, Value};
use serde::Serialize;

use super::error::StoreError;
use super::forget::{Forgetter, Forgotten, distinctive_words, forget_in, sentences_with};
use super::store::q;
use super::{ACTOR_USER, Brain, settle};
use crate::memory::record::{MemoryRecord, MessageRecord};

/// Most dismissals one maintenance pass forgets (the rest wait for the next pass).
const PURGE_BATCH: i64 = 1_000;

/// A memory the agent deleted, as the person sees it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Dismissed {
    /// The memory as it was and will be again if restored (`dismissed_at` set).
    pub memory: MemoryRecord,
    /// When the agent deleted it.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub dismissed_at: i64,
    /// Until when it can be restored; after that it is forgotten for good.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub restorable_until: i64,
    /// Whether the agent asked to keep the messages it was learned from (else they are
    /// redacted when it is forgotten).
    pub keep_messages: bool,
}

/// A page of dismissed memories, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct DismissedPage {
    pub items: Vec<Dismissed>,
    pub next_cursor: Option<String>,
}

/// When the agent dismissed `user`'s memory `id` and whether it keeps its messages;
/// `None` unless it waits in `agent_dismissals`.
pub(super) fn awaiting(
    conn: &impl AsTx,
    user: &str,
    id: &str,
) -> Result<Option<(i64, bool)>, StoreError> {
    Ok(conn.as_tx().query_opt(
        "SELECT at, keep_messages FROM agent_dismissals WHERE user_id = ?1 AND memory_id = ?2",
        &[user.into(), id.into()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

/// The user's agent dismissals whose messages go when they are forgotten: asked at
/// every turn, so read through the user's index, never the whole table.
const WAITING: &str =
    "SELECT memory_id FROM agent_dismissals WHERE user_id = ?1 AND keep_messages = 0";

/// Which of `messages` (`user`'s) a memory the agent deleted would take with it when
/// forgotten: the messages it was learned from, and, unless its messages are to be
/// kept, those with a sentence that states its value (as `forget.rs` redacts them).
/// Retrieval and search leave them out while the memory waits for the person, since
/// they would say what it said.
pub(super) fn hidden_messages(
    conn: &impl AsTx,
    user: &str,
    messages: &[&MessageRecord],
) -> Result<HashSet<String>, StoreError> {
    if messages.is_empty() {
        return Ok(HashSet::new());
    }
    let conn = conn.as_tx();
    let marks = vec!["?"; messages.len()].join(", ");
    let mut values: Vec<Value> = vec![user.into()];
    values.extend(messages.iter().map(|m| Value::from(m.id.as_str())));
    let mut hidden: HashSet<String> = conn
        .query(
            &format!(
                "SELECT DISTINCT t.turn_id FROM memory_turns t JOIN agent_dismissals d ON d.memory_id = t.memory_id
                 WHERE t.user_id = ? AND t.turn_id IN ({marks})"
            ),
            &values,
            |r| r.get::<String>(0),
        )?
        .into_iter()
        .collect();
    // Asked at every turn: the user's few waiting dismissals first, then each memory
    // by its key (a query over `memories` filtered by them read every memory of the
    // user: retrieval p50 97 ms at 100k memories).
    let waiting = conn.query(WAITING, &[user.into()], |r| r.get::<String>(0))?;
    for id in &waiting {
        let memory = q::get(&conn, user, id)?;
        let words = distinctive_words(&memory);
        if words.is_empty() {
            continue;
        }
        for message in messages {
            if !sentences_with(&message.content, &words).is_empty() {
                hidden.insert(message.id.clone());
            }
        }
    }
    Ok(hidden)
}

impl Brain {
    /// The agent's delete of `user`'s memory `id`: dismissed and kept for the person
    /// (see the module docs). A memory dismissed already, by the agent or by pruning,
    /// is [`StoreError::NotFound`]: the agent has nothing left there to delete.
    pub fn dismiss_for_agent(
        &self,
        user: &str,
        id: &str,
        keep_messages: bool,
    ) -> Result<MemoryRecord, StoreError> {
        let now = self.now();
        self.store.write_grouped(user, |tx| {
            let old = q::get(tx, user, id)?;
            if old.dismissed_at.is_some() {
                return Err(StoreError::NotFound(id.to_string()));
            }
            let dismissed = MemoryRecord {
                dismissed_at: Some(now),
                ..old.clone()
            };
            // Only `dismissed_at` changes (not `updated_at`), so that a restore gives
            // back the very record.
            tx.as_tx().execute(
                "UPDATE memories SET dismissed_at = ?3 WHERE user_id = ?1 AND id = ?2",
                &[user.into(), id.into(), now.into()],
            )?;
            tx.as_tx().execute(
                "INSERT INTO agent_dismissals (memory_id, user_id, at, keep_messages) VALUES (?1, ?2, ?3, ?4)",
                &[id.into(), user.into(), now.into(), keep_messages.into()],
            )?;
            q::history(
                tx,
                user,
                id,
                "DISMISS",
                Some(&old),
                Some(&dismissed),
                Forgetter::Agent.as_str(),
                now,
            )?;
            // What consolidation summarised may say it: rebuilt from what is left.
            super::consolidate::forget_summaries(tx, user)?;
            Ok(dismissed)
        })
    }

    /// The person's undo of the agent's delete of `user`'s memory `id`: live again,
    /// as it was, settled against what was written meanwhile as any write is
    /// (`settle.rs`). [`StoreError::NotFound`] unless the agent's dismissal of it
    /// waits (never dismissed, dismissed by pruning, restored or forgotten already).
    pub fn restore(&self, user: &str, id: &str) -> Result<MemoryRecord, StoreError> {
        let now = self.now();
        let text = self.store.text();
        self.store.write_grouped(user, |tx| {
            if awaiting(tx, user, id)?.is_none() {
                return Err(StoreError::NotFound(id.to_string()));
            }
            let old = q::get(tx, user, id)?;
            let restored = MemoryRecord {
                dismissed_at: None,
                ..old.clone()
            };
            tx.as_tx().execute(
                "UPDATE memories SET dismissed_at = NULL WHERE user_id = ?1 AND id = ?2",
                &[user.into(), id.into()],
            )?;
            tx.as_tx().execute(
                "DELETE FROM agent_dismissals WHERE user_id = ?1 AND memory_id = ?2",
                &[user.into(), id.into()],
            )?;
            q::history(
                tx,
                user,
                id,
                "RESTORE",
                Some(&old),
                Some(&restored),
                ACTOR_USER,
                now,
            )?;
            if restored.is_live() {
                settle::settle(tx, text, &restored, now, ACTOR_USER)?;
            }
            q::get(tx, user, id)
        })
    }

    /// What the agent deleted of `user`'s memories and the person can still restore,
    /// newest first: at most `limit` after `cursor` (a previous page's
    /// `next_cursor`); each restorable for `restore_ms` after its dismissal.
    pub fn agent_dismissed(
        &self,
        user: &str,
        restore_ms: i64,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<DismissedPage, StoreError> {
        let (before_at, before_id) = match cursor {
            Some(cursor) => q::parse_cursor(cursor)?,
            None => (i64::MAX, "\u{10FFFF}".to_string()),
        };
        let limit = limit.clamp(1, 500);
        self.store.read(Actor::User(user), |c| {
            let rows: Vec<(String, i64, bool)> = c.as_tx().query(
                "SELECT memory_id, at, keep_messages FROM agent_dismissals
                 WHERE user_id = ?1 AND (at < ?2 OR (at = ?2 AND memory_id < ?3))
                 ORDER BY at DESC, memory_id DESC LIMIT ?4",
                &[
                    user.into(),
                    before_at.into(),
                    before_id.as_str().into(),
                    ((limit + 1) as i64).into(),
                ],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let mut items = rows
                .into_iter()
                .map(|(id, at, keep_messages)| {
                    Ok(Dismissed {
                        memory: q::get(c, user, &id)?,
                        dismissed_at: at,
                        restorable_until: at.saturating_add(restore_ms),
                        keep_messages,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let next_cursor = if items.len() > limit {
                items.truncate(limit);
                items
                    .last()
                    .map(|d| q::cursor_after(d.dismissed_at, &d.memory.id))
            } else {
                None
            };
            Ok(DismissedPage { items, next_cursor })
        })
    }

    /// Forgets for good, as a delete does (the transcript redacted unless the agent
    /// kept it, logged as the agent's), every memory of any user the agent dismissed
    /// `restore_ms` or longer ago; one result per memory, each in its own transaction
    /// (a failure stops no other).
    pub fn purge_agent_dismissals(&self, restore_ms: i64) -> Vec<Result<Forgotten, StoreError>> {
        let now = self.now();
        let due = self.store.read(Actor::System, |c| {
            Ok(c.as_tx().query(
                "SELECT user_id, memory_id FROM agent_dismissals WHERE at <= ?1 ORDER BY at LIMIT ?2",
                &[now.saturating_sub(restore_ms).into(), PURGE_BATCH.into()],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
            )?)
        });
        let due = match due {
            Ok(due) => due,
            Err(e) => return vec![Err(e)],
        };
        let mut results = Vec::with_capacity(due.len());
        for (user, id) in due {
            results.push(self.store.write(Actor::User(&user), |tx| {
                // Restored since it was read: nothing to forget.
                let Some((_, keep_messages)) = awaiting(tx, &user, &id)? else {
                    return Ok(Forgotten::default());
                };
                forget_in(tx, &user, &id, keep_messages, Forgetter::Agent, now)
            }));
        }
        if results
            .iter()
            .any(|r| r.as_ref().is_ok_and(|f| !f.messages.is_empty()))
        {
            self.purge();
        }
        results
    }
}

#[cfg(test)]
#[path = "dismissal_tests.rs"]
mod tests;

//! Forgetting that forgets. What the person asks to forget is gone everywhere: the
//! memories (deleted, with their person links and their history's text), and the
//! transcript text they came from (the message kept as `[forgotten]`, or the sentences
//! that said it replaced by it, their full-text entries gone). Nothing forgotten comes
//! back through retrieval, search, export, persons or the graph, and the database file
//! itself is purged of it: SQLite zeroes freed pages (`secure_delete`), the transcript's
//! full-text index is merged so that no old segment keeps a forgotten word, and the WAL
//! is checkpointed ([`Brain::purge`]).
//!
//! Two ways in:
//! - **Said**: a message that asks to forget (`engram_strategies::forget`: "forget
//!   that", "please delete what I said about X", "don't remember my address") is acted
//!   on as it is recorded, before anything reads it ([`on_message`]): the sentences
//!   before the request, or the previous message and the replies to it, or every
//!   message and memory about the subject. The request's own sentences go too (they
//!   name what is forgotten); the rest of its message stays.
//! - **Done**: deleting a memory ([`Brain::forget_memory`]) also redacts the messages it
//!   was learned from and the sentences that state its value, unless the person asks
//!   to keep the messages. The agent's deletes wait for their restore window first
//!   (`dismissal.rs`).
//!
//! The forget log says what was forgotten (ids and counts), when and by whom: never
//! the text. `memory.clear` and deleting a conversation stay as they are.

use std::collections::BTreeSet;
use std::ops::Range;

use engram_strategies::forget::{self, Target};
use serde::Serialize;

use super::Brain;
use super::error::StoreError;
use super::store::q;
use super::transcript::{MESSAGE_COLUMNS, message_from_row};
use crate::memory::record::MemoryRecord;
use crate::memory::record::MessageRecord;
use crate::sql::{Actor, AsTx, Tx};

/// What a forgotten message, or a forgotten part of one, is replaced by.
pub const FORGOTTEN: &str = "[forgotten]";
/// Messages read for a subject to forget: its full-text matches, and the latest ones
/// (a drug named in them need not share a word with "my medication").
const SUBJECT_WINDOW: usize = 500;

/// Who asked to forget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Forgetter {
    /// The person: the dashboard, the CLI, the operator token, a chat channel's `/memory`.
    Person,
    /// An agent with the agent's token (REST or MCP). Its deletes are dismissals the
    /// person can undo (`dismissal.rs`), forgotten for good when their window ends.
    Agent,
    /// A request in the conversation itself.
    Conversation,
}

impl Forgetter {
    pub fn as_str(self) -> &'static str {
        match self {
            Forgetter::Person => "person",
            Forgetter::Agent => "agent",
            Forgetter::Conversation => "conversation",
        }
    }
}

/// What one act of forgetting removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Forgotten {
    /// Memories deleted.
    pub memories: Vec<String>,
    /// Messages redacted, whole or in part.
    pub messages: Vec<String>,
}

impl Forgotten {
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty() && self.messages.is_empty()
    }
}

/// One entry of the forget log: what was forgotten, never the text.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ForgetEntry {
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
    pub by: String,
    /// `request` (asked in a conversation), `memory` (a memory deleted), `secret` (a
    /// stored secret redacted).
    pub reason: String,
    pub memories: Vec<String>,
    pub messages: Vec<String>,
}

/// Acts on a request to forget in the user message just stored (`message`, in the
/// same transaction): see the module docs. `None` when the message asks nothing.
pub(super) fn on_message(
    tx: &Tx,
    message: &MessageRecord,
    now: i64,
) -> Result<Option<Forgotten>, StoreError> {
    let Some(request) = forget::request(&message.content) else {
        return Ok(None);
    };
    let mut forgotten = Forgotten::default();
    let user = &message.user_id;
    match &request.target {
        Target::Previous if !request.before.is_empty() => {
            // "I'm $40k in debt. Scratch that": the sentences before, in this message.
        }
        Target::Previous => {
            for earlier in previous_exchange(tx, message)? {
                redact(tx, &earlier, None, &mut forgotten)?;
            }
        }
        Target::Topic(subject) => {
            for other in about_subject(tx, user, subject)? {
                if other.id != message.id {
                    redact(tx, &other, None, &mut forgotten)?;
                }
            }
            for memory in memories_about(tx, user, subject)? {
                delete_memory(tx, &memory, Forgetter::Conversation, now, &mut forgotten)?;
            }
        }
    }
    // The request's own sentences, and what it points at in the same message.
    let mut parts = request.sentences.clone();
    if request.target == Target::Previous {
        parts.extend(request.before.iter().cloned());
    }
    redact(tx, message, Some(&parts), &mut forgotten)?;
    // What was learned from the messages now redacted goes with them.
    for memory in learned_from(tx, user, &forgotten.messages)? {
        delete_memory(tx, &memory, Forgetter::Conversation, now, &mut forgotten)?;
    }
    log(
        tx,
        user,
        now,
        Forgetter::Conversation,
        "request",
        &forgotten,
    )?;
    Ok(Some(forgotten))
}

/// The user's message before `message` in its conversation, and the replies to it
/// up to `message`.
fn previous_exchange(tx: &Tx, message: &MessageRecord) -> Result<Vec<MessageRecord>, StoreError> {
    let previous: Option<i64> = tx
        .as_tx()
        .query_opt(
            "SELECT max(seq) FROM messages WHERE conversation_id = ?1 AND user_id = ?2 AND role = 'user' AND seq < ?3 AND content <> ?4",
            &[
                message.conversation_id.as_str().into(),
                message.user_id.as_str().into(),
                message.seq.into(),
                FORGOTTEN.into(),
            ],
            |r| r.get(0),
        )?
        .flatten();
    let Some(from) = previous else {
        return Ok(Vec::new());
    };
    Ok(tx.as_tx().query(
        &format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ?1 AND user_id = ?2 AND seq >= ?3 AND seq < ?4 ORDER BY seq"
        ),
        &[
            message.conversation_id.as_str().into(),
            message.user_id.as_str().into(),
            from.into(),
            message.seq.into(),
        ],
        message_from_row,
    )?)
}

/// The user's messages that speak of `subject`: among its full-text matches and the
/// latest messages.
fn about_subject(tx: &Tx, user: &str, subject: &str) -> Result<Vec<MessageRecord>, StoreError> {
    let mut candidates: Vec<MessageRecord> = Vec::new();
    let words = super::meaning::query_words(subject).join(" ");
    if let Some(query) = super::text_index::TextQuery::any(&words) {
        candidates.extend(
            super::transcript::search(tx, user, &query, SUBJECT_WINDOW)?
                .into_iter()
                .map(|m| m.message),
        );
    }
    candidates.extend(tx.as_tx().query(
        &format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ?1 ORDER BY at DESC LIMIT ?2"
        ),
        &[user.into(), (SUBJECT_WINDOW as i64).into()],
        message_from_row,
    )?);
    let mut seen = BTreeSet::new();
    candidates.retain(|m| {
        seen.insert(m.id.clone()) && m.content != FORGOTTEN && forget::mentions(&m.content, subject)
    });
    Ok(candidates)
}

/// Every memory of the user about `subject`, live or not: by its words, and by the
/// attribute the subject names.
fn memories_about(tx: &Tx, user: &str, subject: &str) -> Result<Vec<MemoryRecord>, StoreError> {
    // Every memory of the user is read: a subject named by its attribute ("my
    // medication") shares no word with the memories that state it, and a request to
    // forget is rare.
    let all = tx.as_tx().query(
        &format!(
            "SELECT {} FROM memories WHERE user_id = ?1",
            super::row::COLUMNS
        ),
        &[user.into()],
        super::row::record_from_row,
    )?;
    let asked = engram_strategies::about::asked(subject).attributes;
    Ok(all
        .into_iter()
        .filter(|m| {
            forget::mentions(&m.summary, subject)
                || m.attribute.as_ref().is_some_and(|a| asked.contains(a))
        })
        .collect())
}

/// Memories of `user` learned from any of `messages`.
pub(super) fn learned_from(
    tx: &Tx,
    user: &str,
    messages: &[String],
) -> Result<Vec<MemoryRecord>, StoreError> {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for message in messages {
        let ids = tx.as_tx().query(
            "SELECT memory_id FROM memory_turns WHERE turn_id = ?1 AND user_id = ?2",
            &[message.as_str().into(), user.into()],
            |r| r.get::<String>(0),
        )?;
        for id in ids {
            if seen.insert(id.clone()) {
                found.push(q::get(tx, user, &id)?);
            }
        }
    }
    Ok(found)
}

/// Replaces `message`'s text, or the byte ranges `parts` of it, by [`FORGOTTEN`]
/// (a message with nothing else left becomes [`FORGOTTEN`] whole).
fn redact(
    tx: &Tx,
    message: &MessageRecord,
    parts: Option<&[Range<usize>]>,
    forgotten: &mut Forgotten,
) -> Result<(), StoreError> {
    let content = match parts {
        None => FORGOTTEN.to_string(),
        Some([]) => return Ok(()),
        Some(parts) => without(&message.content, parts),
    };
    if content == message.content {
        return Ok(());
    }
    tx.as_tx().execute(
        "UPDATE messages SET content = ?3 WHERE id = ?1 AND user_id = ?2",
        &[
            message.id.as_str().into(),
            message.user_id.as_str().into(),
            content.as_str().into(),
        ],
    )?;
    super::transcript::index_message(&tx.as_tx(), &message.id)?;
    if !forgotten.messages.contains(&message.id) {
        forgotten.messages.push(message.id.clone());
    }
    Ok(())
}

/// `content` with each of `parts` replaced by [`FORGOTTEN`], or [`FORGOTTEN`] when
/// nothing else of it is left.
pub(super) fn without(content: &str, parts: &[Range<usize>]) -> String {
    let mut parts: Vec<Range<usize>> = parts
        .iter()
        .filter(|r| r.start < r.end && r.end <= content.len())
        .cloned()
        .collect();
    parts.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(content.len());
    let mut at = 0;
    for part in parts {
        if part.start < at {
            at = at.max(part.end);
            continue;
        }
        out.push_str(&content[at..part.start]);
        if !out.trim_end().ends_with(FORGOTTEN) {
            out.push_str(FORGOTTEN);
        }
        at = part.end;
    }
    out.push_str(&content[at..]);
    let left = out.replace(FORGOTTEN, "");
    if left.chars().all(|c| !c.is_alphanumeric()) {
        FORGOTTEN.to_string()
    } else {
        out
    }
}

/// Deletes a memory for good (`q::delete`), and the persons left with no memory.
fn delete_memory(
    tx: &Tx,
    memory: &MemoryRecord,
    by: Forgetter,
    now: i64,
    forgotten: &mut Forgotten,
) -> Result<(), StoreError> {
    if forgotten.memories.contains(&memory.id) {
        return Ok(());
    }
    let persons: Vec<String> = tx.as_tx().query(
        "SELECT person_id FROM memory_persons WHERE memory_id = ?1",
        &[memory.id.as_str().into()],
        |r| r.get(0),
    )?;
    q::delete(tx, &memory.user_id, &memory.id, by.as_str(), now)?;
    for person in persons {
        tx.as_tx().execute(
            "DELETE FROM persons WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM memory_persons WHERE person_id = ?1)",
            &[person.as_str().into()],
        )?;
    }
    forgotten.memories.push(memory.id.clone());
    Ok(())
}

/// Writes a forget log entry (ids and counts, never text), and drops the summaries
/// consolidation built from what is now forgotten (the next one rebuilds them).
fn log(
    tx: &Tx,
    user: &str,
    now: i64,
    by: Forgetter,
    reason: &str,
    forgotten: &Forgotten,
) -> Result<(), StoreError> {
    if forgotten.is_empty() {
        return Ok(());
    }
    let memories = serde_json::to_string(&forgotten.memories).unwrap_or_else(|_| "[]".into());
    let messages = serde_json::to_string(&forgotten.messages).unwrap_or_else(|_| "[]".into());
    tx.as_tx().execute(
        "INSERT INTO forget_log (user_id, at, actor, reason, memories, messages) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &[
            user.into(),
            now.into(),
            by.as_str().into(),
            reason.into(),
            memories.as_str().into(),
            messages.as_str().into(),
        ],
    )?;
    super::consolidate::forget_summaries(tx, user)?;
    Ok(())
}

/// Words of a memory that name its value distinctively: its value's capitalised words
/// and numbers ("Lindqvist", "4471"), or the summary's when its value has none.
pub(super) fn distinctive_words(memory: &MemoryRecord) -> Vec<String> {
    let about = engram_strategies::about::of_summary(&memory.summary);
    let pick = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| {
                w.chars().count() >= 2
                    && !matches!(
                        w.to_lowercase().as_str(),
                        "user" | "dr" | "mr" | "mrs" | "ms" | "the"
                    )
                    && (w.chars().next().is_some_and(char::is_uppercase)
                        || w.chars().any(|c| c.is_ascii_digit()))
            })
            .map(str::to_owned)
            .collect()
    };
    let from_value = pick(&about.value);
    if from_value.is_empty() {
        pick(memory.summary.split_once(' ').map_or("", |(_, rest)| rest))
    } else {
        from_value
    }
}

/// The byte ranges of the sentences of `content` that hold any of `words` (as whole
/// words, any case).
pub(super) fn sentences_with(content: &str, words: &[String]) -> Vec<Range<usize>> {
    let lower_words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    sentence_ranges(content)
        .into_iter()
        .filter(|range| {
            content[range.clone()]
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| lower_words.contains(&w.to_lowercase()))
        })
        .collect()
}

/// Sentence ranges as the forget requests read them.
fn sentence_ranges(content: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let bytes = content.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let ends = *b == b'\n'
            || (matches!(b, b'.' | b'!' | b'?')
                && (i + 1 == bytes.len() || bytes[i + 1].is_ascii_whitespace()));
        if ends {
            ranges.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < content.len() {
        ranges.push(start..content.len());
    }
    ranges
}

/// Deletes `user`'s memory `id` and, unless `keep_messages`, redacts the transcript it
/// came from (see [`Brain::forget_memory`]), in the write transaction `tx`; logged as
/// `by`'s.
pub(super) fn forget_in(
    tx: &Tx,
    user: &str,
    id: &str,
    keep_messages: bool,
    by: Forgetter,
    now: i64,
) -> Result<Forgotten, StoreError> {
    let memory = q::get(tx, user, id)?;
    let mut forgotten = Forgotten::default();
    if !keep_messages {
        for source in &memory.source_turns {
            let message = tx.as_tx().query_opt(
                &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?1 AND user_id = ?2"),
                &[source.as_str().into(), user.into()],
                message_from_row,
            )?;
            if let Some(message) = message {
                redact(tx, &message, None, &mut forgotten)?;
            }
        }
        let words = distinctive_words(&memory);
        if !words.is_empty()
            && let Some(query) = super::text_index::TextQuery::any(&words.join(" "))
        {
            for found in super::transcript::search(tx, user, &query, SUBJECT_WINDOW)? {
                let parts = sentences_with(&found.message.content, &words);
                redact(tx, &found.message, Some(&parts), &mut forgotten)?;
            }
        }
    }
    delete_memory(tx, &memory, by, now, &mut forgotten)?;
    log(tx, user, now, by, "memory", &forgotten)?;
    Ok(forgotten)
}

impl Brain {
    /// Deletes a memory and, unless `keep_messages`, redacts the transcript it came
    /// from: the messages it was learned from, and the sentences of the user's
    /// messages that state its value.
    pub fn forget_memory(
        &self,
        user: &str,
        id: &str,
        keep_messages: bool,
        by: Forgetter,
    ) -> Result<Forgotten, StoreError> {
        let now = self.now();
        let forgotten = self.store.write(Actor::User(user), |tx| {
            forget_in(tx, user, id, keep_messages, by, now)
        })?;
        if !forgotten.messages.is_empty() {
            self.purge();
        }
        Ok(forgotten)
    }

    /// The user's forget log, newest first.
    pub fn forget_log(&self, user: &str, limit: usize) -> Result<Vec<ForgetEntry>, StoreError> {
        self.store.read(Actor::User(user), |c| {
            let ids = |text: String| serde_json::from_str(&text).unwrap_or_default();
            Ok(c.as_tx().query(
                "SELECT at, actor, reason, memories, messages FROM forget_log WHERE user_id = ?1 ORDER BY id DESC LIMIT ?2",
                &[user.into(), (limit as i64).into()],
                |r| {
                    Ok(ForgetEntry {
                        at: r.get(0)?,
                        by: r.get(1)?,
                        reason: r.get(2)?,
                        memories: ids(r.get(3)?),
                        messages: ids(r.get(4)?),
                    })
                },
            )?)
        })
    }

    /// Makes forgotten text unrecoverable from the file: merges the transcript's
    /// full-text index (an old segment still holds a redacted message's words until
    /// it is merged away; freed pages are zeroed, `secure_delete`) and checkpoints the
    /// WAL. Logged, not returned, on failure: the redaction itself is committed, and
    /// the next maintenance pass tries again.
    pub fn purge(&self) {
        self.store.request_purge();
        if let Err(e) = self.store.purge_if_requested() {
            tracing::warn!("purging forgotten text from the database file: {e}");
        }
    }
}

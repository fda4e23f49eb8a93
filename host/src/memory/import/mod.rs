//! Memory from elsewhere: other tools' exports read into one [`Batch`] of
//! conversations and memories, then applied through the memory service, so that every
//! rule of the store holds for them as for any write (secrets redacted, restatements
//! and new values settled, `brain/settle.rs`).
//!
//! - [`chatgpt`] and [`claude`]: a data export's `conversations.json`. Each
//!   conversation is replayed: its messages recorded with their original times, its
//!   title kept as the conversation's first (system) message, then the conversation
//!   ended as of its last message, so extraction runs and what it learns is dated when
//!   it was said (an old chat does not replace what the user said since).
//! - [`mem0`]: mem0's memories (`get_all()`'s JSON) become typed memories.
//! - [`markdown`]: a folder of notes (basic-memory or Obsidian): each observation
//!   (`- [category] text`) is a memory, else each note is one; the note's path is
//!   kept in the memory's detail.
//!
//! Parsing reads the whole input before anything is written: malformed input is an
//! [`ImportError`] naming the entry (and line) at fault. Applying is idempotent: each
//! conversation and memory has a key from its source (its id, or the note's path and
//! text), and [`ledger`] remembers the keys imported, so a second import of the same
//! file adds nothing.

pub mod chatgpt;
pub mod claude;
pub mod ledger;
pub mod markdown;
pub mod mem0;

use engram_strategies::model::{MemoryType, Role};
use serde::{Deserialize, Serialize};

use super::{Memory, MemoryError};
use crate::described::Described;
use crate::memory::{NewMemory, Outcome};
use crate::runtime::strategies::Strategies;
pub use ledger::Ledger;

/// The formats read here (the Engram JSONL export has its own route).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Chatgpt,
    Claude,
    Mem0,
    Markdown,
}

impl Batch {
    pub fn new(source: Source) -> Batch {
        Batch {
            source,
            conversations: Vec::new(),
            memories: Vec::new(),
        }
    }
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Chatgpt => "chatgpt",
            Source::Claude => "claude",
            Source::Mem0 => "mem0",
            Source::Markdown => "markdown",
        }
    }

    pub fn parse(name: &str) -> Option<Source> {
        [
            Source::Chatgpt,
            Source::Claude,
            Source::Mem0,
            Source::Markdown,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// Most conversations, and most memories, one batch carries (the CLI sends a large
/// export in several).
pub const MAX_BATCH_CONVERSATIONS: usize = 200;
pub const MAX_BATCH_MEMORIES: usize = 5_000;
/// Most messages of one conversation.
pub const MAX_MESSAGES: usize = 5_000;
/// Longest key and title kept.
pub const MAX_KEY_CHARS: usize = 200;
pub const MAX_TITLE_CHARS: usize = 500;

/// What an import brings: conversations to replay and memories to add.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// Where it comes from: keys are the source's, so the same key from two sources is
    /// two things.
    pub source: Source,
    #[serde(default)]
    #[schema(max_items = 200)]
    pub conversations: Vec<ImportedConversation>,
    #[serde(default)]
    #[schema(max_items = 5000)]
    pub memories: Vec<ImportedMemory>,
}

/// A conversation as its source kept it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportedConversation {
    /// The source's id for it (no control characters): a second import of the same
    /// key is skipped.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]+$"
    )]
    pub key: String,
    /// Its title, kept as the conversation's first message (role `system`).
    #[serde(default)]
    #[schema(max_length = 500)]
    pub title: Option<String>,
    #[schema(max_items = 5000)]
    pub messages: Vec<ImportedMessage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportedMessage {
    /// `user` or `assistant`.
    #[schema(pattern = "^(user|assistant)$")]
    pub role: String,
    /// Up to 64 KiB (UTF-8); longer messages are cut by the readers.
    #[schema(min_length = 1)]
    pub content: String,
    /// When it was said.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
}

/// A memory as its source kept it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportedMemory {
    /// The source's id for it (mem0's id, a note's path and text; no control
    /// characters): a second import of the same key is skipped.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]+$"
    )]
    pub key: String,
    pub memory: NewMemory,
}

/// What an import did, in counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ImportReport {
    /// Conversations replayed now.
    pub conversations: usize,
    /// Their messages recorded (titles included).
    pub messages: usize,
    /// Memories extraction learned from them.
    pub learned: usize,
    /// Memories added (`added` or `outvoted`: stored).
    pub memories: usize,
    /// Memories that restated a live one, which was reinforced instead.
    pub reinforced: usize,
    /// Conversations and memories a previous import brought already.
    pub skipped: usize,
    /// Memories the store refused, each by its key: nothing but a secret
    /// (`secret-refused`, as `POST /api/brain/memory` refuses it). The rest of the
    /// batch is imported; a secret inside a longer memory or message is redacted.
    pub refused: Vec<RefusedMemory>,
}

/// One memory of a batch the store would not take; nothing was written for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RefusedMemory {
    /// The source's key for it (mem0's id, a note's path and hash): never its text,
    /// which is the secret.
    pub key: String,
    /// The problem code `POST /api/brain/memory` answers with.
    pub code: String,
    pub reason: String,
}

impl ImportReport {
    pub fn add(&mut self, other: &ImportReport) {
        self.conversations += other.conversations;
        self.messages += other.messages;
        self.learned += other.learned;
        self.memories += other.memories;
        self.reinforced += other.reinforced;
        self.skipped += other.skipped;
        self.refused.extend(other.refused.iter().cloned());
    }
}

/// Input that cannot be imported: the entry at fault and why. Nothing was written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{entry}: {reason}")]
pub struct ImportError {
    /// Which entry: `conversation 3 ("Trip to Lisbon")`, `notes/tea.md line 4`, ...
    pub entry: String,
    pub reason: String,
}

impl ImportError {
    pub fn new(entry: impl Into<String>, reason: impl Into<String>) -> ImportError {
        ImportError {
            entry: entry.into(),
            reason: reason.into(),
        }
    }
}

/// Why applying a batch failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Invalid(#[from] ImportError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("the import ledger: {0}")]
    Ledger(#[from] ledger::LedgerError),
    #[error("learning is paused for this user: resume it, then import (nothing was written)")]
    LearningPaused,
}

/// Input that cannot be imported is 422 `invalid-import`, paused learning 409
/// `learning-paused`; the memory service's errors as it describes them; the ledger's
/// failures are the host's own.
impl crate::described::Described for ApplyError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        use http::StatusCode;
        match self {
            ApplyError::Invalid(e) => Description::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-import",
                format!("{e}; nothing was imported"),
            ),
            ApplyError::LearningPaused => {
                Description::new(StatusCode::CONFLICT, "learning-paused", self.to_string())
            }
            ApplyError::Memory(e) => e.describe(),
            ApplyError::Ledger(ledger::LedgerError::Sql(e)) => {
                crate::sql::describe(e, "import ledger")
            }
            ApplyError::Ledger(_) => Description::internal("import ledger"),
        }
    }
}

impl From<crate::memory::StoreError> for ApplyError {
    fn from(e: crate::memory::StoreError) -> ApplyError {
        ApplyError::Memory(MemoryError::Brain(e))
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The conversation id a replayed conversation gets: its source and key, in the
/// 128 characters a conversation id may have. Conversation ids are one space for all
/// users, so another user's import of the same export gets ids of its own.
pub fn conversation_id(source: Source, key: &str, user: &str) -> String {
    let id = if user == crate::memory::DEFAULT_USER {
        format!("import-{}-{key}", source.as_str())
    } else {
        use sha2::Digest;
        let of_user = hex::encode(&sha2::Sha256::digest(user.as_bytes())[..4]);
        format!("import-{}-{of_user}-{key}", source.as_str())
    };
    id.chars().take(128).collect()
}

/// Checks a batch whole before anything is written: the entry at fault, if any.
pub fn validate(batch: &Batch, user: &str, now: i64) -> Result<(), ImportError> {
    if batch.conversations.len() > MAX_BATCH_CONVERSATIONS {
        return Err(ImportError::new(
            "conversations",
            format!("more than {MAX_BATCH_CONVERSATIONS} in one batch"),
        ));
    }
    if batch.memories.len() > MAX_BATCH_MEMORIES {
        return Err(ImportError::new(
            "memories",
            format!("more than {MAX_BATCH_MEMORIES} in one batch"),
        ));
    }
    let key_ok = |key: &str| {
        !key.is_empty()
            && key.chars().count() <= MAX_KEY_CHARS
            && !key.chars().any(char::is_control)
    };
    for (i, conversation) in batch.conversations.iter().enumerate() {
        let entry = format!("conversations[{i}]");
        if !key_ok(&conversation.key) {
            return Err(ImportError::new(
                entry,
                format!("key must be 1 to {MAX_KEY_CHARS} characters without control characters"),
            ));
        }
        if conversation
            .title
            .as_ref()
            .is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS)
        {
            return Err(ImportError::new(
                entry,
                format!("title over {MAX_TITLE_CHARS} characters"),
            ));
        }
        if conversation.messages.len() > MAX_MESSAGES {
            return Err(ImportError::new(
                entry,
                format!("more than {MAX_MESSAGES} messages"),
            ));
        }
        for (j, message) in conversation.messages.iter().enumerate() {
            let entry = format!("conversations[{i}].messages[{j}]");
            if !matches!(message.role.as_str(), "user" | "assistant") {
                return Err(ImportError::new(
                    entry,
                    format!("role `{}`: expected user or assistant", message.role),
                ));
            }
            if message.content.len() > crate::memory::MAX_MESSAGE_BYTES {
                return Err(ImportError::new(
                    entry,
                    format!(
                        "{} bytes, over the {}-byte limit",
                        message.content.len(),
                        crate::memory::MAX_MESSAGE_BYTES
                    ),
                ));
            }
        }
    }
    for (i, imported) in batch.memories.iter().enumerate() {
        let entry = format!("memories[{i}]");
        if !key_ok(&imported.key) {
            return Err(ImportError::new(
                entry,
                format!("key must be 1 to {MAX_KEY_CHARS} characters without control characters"),
            ));
        }
        let record = imported.memory.clone().into_record(user, now);
        crate::memory::brain::store::validate_record(&record)
            .map_err(|e| ImportError::new(entry, e.to_string()))?;
    }
    Ok(())
}

/// One import at a time: two running together could both find a key new.
static IMPORTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Applies a batch for `user`, checked whole first: conversations replayed and learned
/// from, memories added, each once (the keys in `ledger`).
pub fn apply(
    memory: &Memory,
    strategies: &Strategies,
    ledger: &Ledger,
    user: &str,
    batch: &Batch,
    now: i64,
) -> Result<ImportReport, ApplyError> {
    validate(batch, user, now)?;
    let _one_at_a_time = IMPORTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let source = batch.source;
    let mut report = ImportReport::default();
    if !batch.conversations.is_empty() {
        let brain = memory.brain()?;
        if brain.learning_paused(user)? {
            return Err(ApplyError::LearningPaused);
        }
        for conversation in &batch.conversations {
            let key = format!("{}:{}", source.as_str(), conversation.key);
            if ledger.has(user, &key)? {
                report.skipped += 1;
                continue;
            }
            if conversation.messages.is_empty() {
                continue;
            }
            let id = conversation_id(source, &conversation.key, user);
            if brain.conversation(user, &id).is_ok() {
                // Replayed before the ledger was written (a crash in between).
                ledger.put(user, &key, &id)?;
                report.skipped += 1;
                continue;
            }
            let first_at = conversation.messages.first().map_or(now, |m| m.at);
            let last_at = conversation.messages.last().map_or(now, |m| m.at);
            if let Some(title) = conversation
                .title
                .as_deref()
                .filter(|t| !t.trim().is_empty())
            {
                brain.record_message_at(
                    user,
                    &id,
                    Role::System,
                    None,
                    &format!("Conversation title: {}", title.trim()),
                    first_at,
                )?;
                report.messages += 1;
            }
            for message in &conversation.messages {
                let role = Role::parse(&message.role).unwrap_or(Role::User);
                brain.record_message_at(user, &id, role, None, &message.content, message.at)?;
                report.messages += 1;
            }
            let ingested =
                brain.end_conversation_at(user, &id, strategies, last_at.max(first_at))?;
            report.learned += ingested
                .applied
                .iter()
                .filter(|a| !matches!(a, crate::memory::Applied::Rejected { .. }))
                .count();
            ledger.put(user, &key, &id)?;
            report.conversations += 1;
        }
    }
    for imported in &batch.memories {
        let key = format!("{}:{}", source.as_str(), imported.key);
        if ledger.has(user, &key)? {
            report.skipped += 1;
            continue;
        }
        match memory.add(user, imported.memory.clone()) {
            Ok(stored) => {
                match stored.outcome {
                    Outcome::Reinforced => report.reinforced += 1,
                    _ => report.memories += 1,
                }
                ledger.put(user, &key, &stored.record.id)?;
            }
            Err(e) if e.describe().code == "secret-refused" => report.refused.push(RefusedMemory {
                key: imported.key.clone(),
                code: e.describe().code.to_string(),
                reason: e.to_string(),
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(report)
}

/// A memory's type read from its words, for sources that keep none (mem0, notes).
pub fn type_of(text: &str) -> MemoryType {
    let lower = format!(" {} ", text.to_lowercase());
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&[
        " allergic",
        " can't ",
        " cannot ",
        " must not ",
        " never eats",
        " vegetarian",
        " vegan",
        " avoid",
        " intoleran",
    ]) {
        MemoryType::Constraint
    } else if has(&[
        " wife",
        " husband",
        " mother",
        " father",
        " mom ",
        " dad ",
        " sister",
        " brother",
        " friend",
        " partner",
        " son ",
        " daughter",
        " colleague",
        " boss",
    ]) {
        MemoryType::Relationship
    } else if has(&[
        " wants to ",
        " plans to ",
        " goal",
        " hopes to ",
        " aims to ",
    ]) {
        MemoryType::Goal
    } else if has(&[" working on ", " project", " building "]) {
        MemoryType::Project
    } else if has(&[" decided ", " decision", " chose "]) {
        MemoryType::Decision
    } else if has(&[
        " every day",
        " every morning",
        " usually ",
        " daily",
        " often ",
        " each week",
        " routine",
    ]) {
        MemoryType::Habit
    } else if has(&[
        " likes ",
        " loves ",
        " prefers ",
        " favorite",
        " favourite",
        " enjoys ",
        " hates ",
        " dislikes ",
        " like ",
        " love ",
        " prefer ",
    ]) {
        MemoryType::Preference
    } else if has(&[
        " name is",
        " lives in",
        " works as",
        " works at",
        " born",
        " is a ",
        " am a ",
        " years old",
        " from ",
    ]) {
        MemoryType::Identity
    } else {
        MemoryType::Reflection
    }
}

/// A memory's summary as the store reads it best: about the user. Sources that write
/// memories without a subject ("Likes green tea", "Name is John") get one.
pub fn with_subject(text: &str) -> String {
    let text = text.trim();
    let first = text.split_whitespace().next().unwrap_or_default();
    let rest = &text[first.len()..];
    let lower_first = first.to_lowercase();
    let verbs = [
        "is", "has", "was", "likes", "loves", "prefers", "enjoys", "hates", "dislikes", "works",
        "lives", "wants", "plans", "lost", "owns", "drives", "uses", "speaks", "studies",
        "studied", "moved", "does", "doesn't", "can", "cannot", "can't", "had", "goes", "went",
        "visited", "attends", "keeps", "needs", "started", "stopped", "avoids", "believes",
        "thinks", "feels", "plays", "reads", "watches", "writes", "runs", "cooks", "eats",
        "drinks", "follows", "recently", "usually", "often", "never", "always", "also",
    ];
    let nouns = [
        "name",
        "favorite",
        "favourite",
        "birthday",
        "email",
        "phone",
        "address",
        "job",
        "wife",
        "husband",
        "partner",
        "mother",
        "father",
        "son",
        "daughter",
        "dog",
        "cat",
        "hometown",
        "employer",
        "age",
    ];
    if verbs.contains(&lower_first.as_str()) {
        format!("User {lower_first}{rest}")
    } else if nouns.contains(&lower_first.as_str()) {
        format!("User's {lower_first}{rest}")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests;

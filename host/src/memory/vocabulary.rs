//! The words every caller of memory and both stores share: what a new memory or an
//! edit says, what storing did, search hits and their tiers, listing filters and pages,
//! counts, history entries, the memory block retrieval returns, and the limits on what
//! is recorded. The Second Brain and the fact store both speak them, which is why they
//! live here rather than in either store; they are also the wire types of `/api` and
//! MCP (one shape for both ends).

use engram_strategies::model::{Evidence, MemoryType, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{self, MemoryRecord, MessageRecord, wire, wire_opt};

/// The user a call acts for when it names none (every row has a user: ARCHITECTURE.md,
/// "Invariants", Brain).
pub const DEFAULT_USER: &str = "default";

/// A memory added by hand (the CLI, the dashboard or the API): the body of
/// `POST /api/brain/memory`.
///
/// The daemon reads it and the CLI's client sends it: one shape for both ends.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemory {
    #[serde(rename = "type", with = "wire")]
    #[schema(schema_with = record::schema::memory_type)]
    pub memory_type: MemoryType,
    /// 1 to 1000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 1000,
        pattern = r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub summary: String,
    /// Up to 4000 characters of context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4000)]
    pub detail: Option<String>,
    /// Defaults to `manual`.
    #[serde(default, with = "wire_opt", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = record::schema::evidence_or_null)]
    pub evidence: Option<Evidence>,
    /// Defaults to the type's scope (identity, preference, habit, constraint,
    /// relationship, reflection: durable; goal, project, decision, episode: active).
    #[serde(default, with = "wire_opt", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = record::schema::scope_or_null)]
    pub scope: Option<Scope>,
    /// 0.0 to 1.0, default 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub confidence: Option<f32>,
    /// 0.0 to 1.0, default by type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f32>,
    /// Whose fact it is, when not the user's: a person's name or relation ("Ben",
    /// "mother"). Read from the summary when absent ("User's husband Ben is a pilot").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub holder: Option<String>,
    /// What the fact states: `phone`, `email`, `address`, `residence`, `employer`,
    /// `occupation`, `vehicle`, `diet`, `favorite <noun>`, ... (a single-valued one
    /// replaces the holder's live value). Read from the summary when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub attribute: Option<String>,
}

impl NewMemory {
    /// A memory of `memory_type` saying `summary`, every other field left to the
    /// daemon's defaults.
    pub fn new(memory_type: MemoryType, summary: impl Into<String>) -> NewMemory {
        NewMemory {
            memory_type,
            summary: summary.into(),
            detail: None,
            evidence: None,
            scope: None,
            confidence: None,
            importance: None,
            holder: None,
            attribute: None,
        }
    }

    /// The record a manual memory becomes, whichever store keeps it.
    pub fn into_record(self, user: &str, now: i64) -> MemoryRecord {
        let evidence = self.evidence.unwrap_or(Evidence::Manual);
        let named = |value: Option<String>| {
            value
                .map(|v| v.trim().to_lowercase())
                .filter(|v| !v.is_empty() && v != "user")
        };
        let (holder, attribute) = (named(self.holder), named(self.attribute));
        let record = MemoryRecord {
            detail: self.detail.filter(|d| !d.trim().is_empty()),
            scope: self.scope.unwrap_or(self.memory_type.default_scope()),
            importance: self
                .importance
                .unwrap_or(self.memory_type.default_importance()),
            validated: evidence == Evidence::Manual,
            // A fact the user wrote down themselves is as certain as it gets.
            ..MemoryRecord::fresh(
                user,
                self.memory_type,
                &self.summary,
                evidence,
                self.confidence.unwrap_or(1.0),
                now,
            )
        };
        // What the writer named wins over what the summary reads as.
        MemoryRecord {
            holder: holder.or(record.holder),
            attribute: attribute.or(record.attribute),
            ..record
        }
    }
}

/// What storing a memory did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A new memory.
    Added,
    /// It restated a live memory, which was reinforced instead (and is the one
    /// returned).
    Reinforced,
    /// A live memory outranks it (higher confidence): it was stored superseded.
    Outvoted,
}

/// A stored memory and what storing it did to the others: the answer of
/// `POST /api/brain/memory`, MCP `memory_add` and `save_memory`, the memory's fields
/// with `outcome` and `superseded` beside them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stored {
    #[serde(flatten)]
    pub record: MemoryRecord,
    pub outcome: Outcome,
    /// Live memories it replaced (now superseded by it).
    pub superseded: Vec<String>,
}

/// The record's schema with `outcome` and `superseded` added: written out because the
/// record refuses unknown fields, so a derived `allOf` would admit no answer.
impl utoipa::PartialSchema for Stored {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
        let record = <MemoryRecord as utoipa::PartialSchema>::schema();
        let RefOr::T(Schema::Object(mut object)) = record else {
            return record;
        };
        object
            .properties
            .insert("outcome".to_string(), Outcome::schema());
        object.properties.insert(
            "superseded".to_string(),
            ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(SchemaType::Type(Type::String)))
                .description(Some("Ids of the live memories this one replaced."))
                .into(),
        );
        object.required.push("outcome".to_string());
        object.required.push("superseded".to_string());
        object.description = Some(
            "A stored memory (its fields) and what storing it did: `outcome` added, reinforced (it restated a live memory, which is returned) or outvoted (a live memory with higher confidence keeps the attribute; this one is stored superseded), and the ids it superseded.".to_string(),
        );
        RefOr::T(Schema::Object(object))
    }
}

impl utoipa::ToSchema for Stored {}

/// The fields of a memory that may change; `None` keeps a field. (The body of
/// `PUT /api/brain/memory/{id}` is `api::memory::EditMemory`: a person edits every field
/// but `validated`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryEdit {
    pub summary: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub importance: Option<f32>,
    pub confidence: Option<f32>,
    pub scope: Option<Scope>,
    pub validated: Option<bool>,
}

/// A search result and the tier it was found in.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub record: MemoryRecord,
    /// `conscious` (durable or active) or `subconscious`.
    pub conscious: bool,
}

/// Which tier a search result was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Durable or active: available to retrieval.
    Conscious,
    /// Out of active recall; recalled when strongly relevant.
    Subconscious,
    /// A message of a conversation, as it was said.
    Transcript,
}

/// What a search looks through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchScope {
    /// Typed memories, both tiers.
    #[default]
    Memories,
    /// The transcript of the conversations.
    Conversations,
    /// Both, ranked together as retrieval ranks them.
    All,
}

/// A transcript hit: the message's provenance and the part of it that matches.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct MessageHit {
    pub id: String,
    pub conversation_id: String,
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// The speaker's name, when the message has one.
    pub name: Option<String>,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
    /// The best sentence of the message with a little context, at most 200 characters.
    pub snippet: String,
}

/// A search result as the API and the `search_memory` tool show it: `memory` for the
/// conscious and subconscious tiers, `message` for the transcript.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct SearchHit {
    pub tier: Tier,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageHit>,
}

impl From<SearchResult> for SearchHit {
    fn from(result: SearchResult) -> SearchHit {
        SearchHit {
            tier: if result.conscious {
                Tier::Conscious
            } else {
                Tier::Subconscious
            },
            memory: Some(result.record),
            message: None,
        }
    }
}

/// One entry of a memory's history.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    /// ADD, UPDATE, REINFORCE, SUPERSEDE, DISMISS, DELETE, PROMOTE, DEMOTE or RESTORE
    /// (the person's undo of the agent's DISMISS).
    pub event: String,
    /// The memory before the change (dropped once the memory is deleted).
    #[schema(value_type = Option<MemoryRecord>)]
    pub old_value: Option<Value>,
    /// The memory after the change (dropped once the memory is deleted).
    #[schema(value_type = Option<MemoryRecord>)]
    pub new_value: Option<Value>,
    pub actor: String,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
}

/// How many live memories a user has, by type and by scope; every type and scope is
/// present, with 0 when it has none, so that the shape never changes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Counts {
    pub total: usize,
    pub by_type: std::collections::BTreeMap<String, usize>,
    pub by_scope: std::collections::BTreeMap<String, usize>,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            total: 0,
            by_type: MemoryType::ALL
                .iter()
                .map(|t| (t.as_str().to_string(), 0))
                .collect(),
            by_scope: Scope::ALL
                .iter()
                .map(|s| (s.as_str().to_string(), 0))
                .collect(),
        }
    }
}

impl Counts {
    pub fn add(&mut self, memory_type: &str, scope: &str, n: usize) {
        self.total += n;
        *self.by_type.entry(memory_type.to_string()).or_default() += n;
        *self.by_scope.entry(scope.to_string()).or_default() += n;
    }
}

/// Which memories a listing shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// `Some(true)`: conscious (durable + active); `Some(false)`: subconscious.
    pub conscious: Option<bool>,
    pub memory_type: Option<MemoryType>,
    pub limit: usize,
    /// From a previous page's `next_cursor`.
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<MemoryRecord>,
    pub next_cursor: Option<String>,
}

/// Where an injected line comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Memory {
        record: MemoryRecord,
        /// Recalled from the subconscious tier by this retrieval.
        recalled: bool,
    },
    Message(MessageRecord),
}

/// One line chosen for injection.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub source: Source,
    /// The rendered line (see the module docs for its formats).
    pub line: String,
    pub score: f64,
}

impl Injected {
    /// The memory's or the message's id.
    pub fn id(&self) -> &str {
        match &self.source {
            Source::Memory { record, .. } => &record.id,
            Source::Message(message) => &message.id,
        }
    }

    /// The memory, when the line is one.
    pub fn memory(&self) -> Option<&MemoryRecord> {
        match &self.source {
            Source::Memory { record, .. } => Some(record),
            Source::Message(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Retrieval {
    pub lines: Vec<Injected>,
    /// The lines joined by newlines: what the agent receives.
    pub block: String,
}

/// Longest message recorded.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest speaker name.
pub const MAX_NAME_CHARS: usize = 100;
/// Default retention of the transcript (`memory.secondBrain.transcriptDays`).
pub const DEFAULT_TRANSCRIPT_DAYS: u32 = 365;

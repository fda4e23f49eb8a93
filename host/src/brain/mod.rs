//! The Second Brain: typed memories of the user in SQLite, with their history, persons
//! and lifecycle. This module is the service the API and CLI call; `store` holds the
//! SQL, `record` the stored shapes, `clock` the injected time.

mod bm25;
pub mod consolidate;
pub mod dismissal;
mod focus;
pub mod forget;
pub mod ingest;
pub mod lifecycle;
pub mod maintenance;
mod meaning;
pub mod persons;
pub mod record;
pub mod redact;
pub mod retrieve;
mod schema;
pub use schema::VERSION as SCHEMA_VERSION;
pub mod settle;
pub mod snippet;
pub mod store;
mod text_index;
mod tokenizer;
pub mod transcript;
mod word_counts;
mod writer;

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use engram_strategies::model::{Evidence, MemoryType, Scope};
use serde::{Deserialize, Serialize};

use crate::events::{Event, EventBus, EventKind};
use crate::runtime::{MemoryQuery, MemorySource};
use crate::time::Clock;
use record::{MemoryRecord, wire, wire_opt};
use store::{Counts, HistoryEntry, ListFilter, Page, Store, StoreError, q};

/// The user a call acts for when it names none (every row has a user: ARCHITECTURE.md,
/// "Invariants", Brain).
pub const DEFAULT_USER: &str = "default";

/// Who made a change, for the history.
pub const ACTOR_USER: &str = "user";
/// Changes made by Engram itself: retrieval, pruning, consolidation.
pub const ACTOR_SYSTEM: &str = "system";

/// Meta key of the learning switch.
const LEARNING_PAUSED: &str = "learning_paused";

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

/// Stores `record` by the rules of `settle.rs`, inside a write.
pub(crate) fn store_settled(
    conn: &rusqlite::Connection,
    text: &text_index::TextIndex,
    mut record: MemoryRecord,
    now: i64,
    actor: &str,
) -> Result<Stored, StoreError> {
    settle::resolve_attribute(conn, &mut record)?;
    if let Some(existing) = settle::restated(conn, text, &record)? {
        let reinforced = lifecycle::reinforce(&existing, now);
        q::update(conn, &existing, &reinforced, "REINFORCE", actor)?;
        return Ok(Stored {
            record: reinforced,
            outcome: Outcome::Reinforced,
            superseded: Vec::new(),
        });
    }
    q::insert(conn, &record, actor)?;
    let settled = settle::settle(conn, text, &record, now, actor)?;
    let record = q::get(conn, &record.user_id, &record.id)?;
    Ok(Stored {
        outcome: if settled.outvoted_by.is_some() {
            Outcome::Outvoted
        } else {
            Outcome::Added
        },
        record,
        superseded: settled.superseded,
    })
}

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

pub struct Brain {
    store: Store,
    clock: Arc<dyn Clock>,
    /// Which secrets every write redacts (`redact.rs`).
    redaction: redact::Redaction,
}

impl Brain {
    pub fn open(path: &Path, clock: Arc<dyn Clock>, events: EventBus) -> Result<Brain, StoreError> {
        Ok(Brain {
            store: Store::open(path, events)?,
            clock,
            redaction: redact::Redaction::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Stores a memory written by hand, by the rules of `settle.rs`: one that restates a
    /// live memory reinforces it instead; one that replaces live memories supersedes
    /// them.
    pub fn add(&self, user: &str, new: NewMemory) -> Result<Stored, StoreError> {
        let now = self.now();
        let (new, found) = new.redacted(self.redaction.kinds())?;
        let record = new.into_record(user, now);
        let text = self.store.text();
        self.store.write_grouped(|conn| {
            redact::count_found(conn, user, &found)?;
            store_settled(conn, text, record, now, ACTOR_USER)
        })
    }

    /// Any memory of the user, superseded ones included (their history matters), as
    /// last committed: from the in-memory index, without a read of the table.
    pub fn get(&self, user: &str, id: &str) -> Result<MemoryRecord, StoreError> {
        self.store
            .text_built()?
            .get(user, id)
            .ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    /// Builds what the first search or read by id would otherwise build (the in-memory
    /// index of the memories), so that no request waits for it.
    pub fn warm(&self) -> Result<(), StoreError> {
        self.store.text_built().map(|_| ())
    }

    pub fn edit(&self, user: &str, id: &str, edit: MemoryEdit) -> Result<MemoryRecord, StoreError> {
        let now = self.now();
        let kinds = self.redaction.kinds();
        let (summary, found) = match edit.summary {
            Some(summary) => {
                let (checked, found) =
                    NewMemory::new(MemoryType::Preference, summary).redacted(kinds)?;
                (Some(checked.summary), found)
            }
            None => (None, Vec::new()),
        };
        self.store.write_grouped(|tx| {
            redact::count_found(tx, user, &found)?;
            // What the agent deleted is edited only once the person has restored it.
            if dismissal::awaiting(tx, user, id)?.is_some() {
                return Err(StoreError::NotFound(id.to_string()));
            }
            let old = q::get(tx, user, id)?;
            let mut new = old.clone();
            if let Some(summary) = summary {
                new.negated = engram_strategies::text::is_negated(&summary);
                new.summary = summary.trim().to_string();
                new = new.with_about_read();
            }
            if let Some(t) = edit.memory_type {
                new.memory_type = t;
            }
            if let Some(v) = edit.importance {
                new.importance = v;
            }
            if let Some(v) = edit.confidence {
                new.confidence = v;
                new.confidence_at = now;
            }
            if let Some(scope) = edit.scope {
                if scope == Scope::Subconscious && old.scope != Scope::Subconscious {
                    new.prior_scope = Some(old.scope);
                }
                if scope != Scope::Subconscious {
                    new.prior_scope = None;
                    new.stale = false;
                }
                new.scope = scope;
            }
            if let Some(v) = edit.validated {
                new.validated = v;
            }
            new.updated_at = now;
            settle::resolve_attribute(tx, &mut new)?;
            q::update(tx, &old, &new, "UPDATE", ACTOR_USER)?;
            if new.is_live() {
                settle::settle(tx, self.store.text(), &new, now, ACTOR_USER)?;
            }
            q::get(tx, user, id)
        })
    }

    /// Explicit dismissal: the memory, its search entry and its links are gone for good.
    pub fn delete(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let now = self.now();
        self.store
            .write_grouped(|conn| q::delete(conn, user, id, ACTOR_USER, now))
    }

    /// Deletes every memory of the user, as `delete` does one, and every conversation
    /// with its transcript. Returns how many memories.
    pub fn clear(&self, user: &str) -> Result<usize, StoreError> {
        let now = self.now();
        self.store.write(|tx| {
            let ids: Vec<String> = tx
                .prepare("SELECT id FROM memories WHERE user_id = ?1")?
                .query_map([user], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for id in &ids {
                q::delete(tx, user, id, ACTOR_USER, now)?;
            }
            tx.execute("DELETE FROM persons WHERE user_id = ?1", [user])?;
            tx.execute("DELETE FROM messages WHERE user_id = ?1", [user])?;
            tx.execute("DELETE FROM conversations WHERE user_id = ?1", [user])?;
            Ok(ids.len())
        })
    }

    pub fn counts(&self, user: &str) -> Result<Counts, StoreError> {
        self.store.read(|c| q::counts(c, user))
    }

    pub fn list(&self, user: &str, filter: &ListFilter) -> Result<Page, StoreError> {
        self.store.read(|c| q::list(c, user, filter))
    }

    /// Full-text search over both tiers, best match first, each result saying its tier
    /// (the query is read as retrieval reads a message: stop words do not count).
    pub fn search(
        &self,
        user: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<SearchResult>, StoreError> {
        let terms = retrieve::query_words(text).join(" ");
        let text = self.store.text_built()?;
        let tuning = retrieve::Tuning::default();
        let hits = self
            .store
            .read(|c| retrieve::text_matches(c, text, user, &terms, limit, limit, &tuning))?;
        Ok(hits
            .into_iter()
            .map(|hit| SearchResult {
                conscious: hit.record.scope.is_conscious(),
                record: hit.record,
            })
            .collect())
    }

    /// Search in `scope`, best first: memories as [`Brain::search`] finds them, the
    /// transcript and both tiers together ranked as retrieval ranks them (without its
    /// budget, and leaving every memory where it is).
    pub fn search_hits(
        &self,
        user: &str,
        text: &str,
        limit: usize,
        scope: SearchScope,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if scope == SearchScope::Memories {
            return Ok(self
                .search(user, text, limit)?
                .into_iter()
                .map(SearchHit::from)
                .collect());
        }
        let query = retrieve::Query::new(text);
        let counts = self.store.word_counts();
        let text = self.store.text_built()?;
        let tuning = retrieve::Tuning::default();
        let (memories, said) = self.store.read(|c| {
            let memories = if scope == SearchScope::All {
                retrieve::text_matches(c, text, user, &query.terms, limit, limit, &tuning)?
            } else {
                Vec::new()
            };
            let mut said =
                retrieve::said_matches(c, counts, user, &query.terms, limit, limit, &tuning)?;
            let ids: Vec<&str> = said.iter().map(|m| m.message.id.as_str()).collect();
            let hidden = dismissal::hidden_messages(c, user, &ids)?;
            said.retain(|m| !hidden.contains(&m.message.id));
            Ok((memories, said))
        })?;
        let ranked = retrieve::rank_all(memories, said, &query, &tuning, self.now());
        Ok(ranked
            .into_iter()
            .take(limit)
            .map(|r| match r {
                retrieve::Source::Memory { record, .. } => SearchHit {
                    tier: if record.scope.is_conscious() {
                        Tier::Conscious
                    } else {
                        Tier::Subconscious
                    },
                    memory: Some(record),
                    message: None,
                },
                retrieve::Source::Message(message) => SearchHit {
                    tier: Tier::Transcript,
                    memory: None,
                    message: Some(MessageHit {
                        snippet: snippet::snippet(
                            &message.content,
                            &query.stems,
                            retrieve::MAX_SNIPPET,
                        ),
                        id: message.id,
                        conversation_id: message.conversation_id,
                        role: message.role,
                        name: message.name,
                        at: message.at,
                    }),
                },
            })
            .collect())
    }

    pub fn history(&self, user: &str, id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        self.store.read(|c| q::history_of(c, user, id))
    }

    pub fn learning_paused(&self, user: &str) -> Result<bool, StoreError> {
        Ok(self
            .store
            .read(|c| q::meta(c, user, LEARNING_PAUSED))?
            .as_deref()
            == Some("true"))
    }

    pub fn set_learning_paused(&self, user: &str, paused: bool) -> Result<(), StoreError> {
        self.store.write(|tx| {
            q::set_meta(
                tx,
                user,
                LEARNING_PAUSED,
                if paused { "true" } else { "false" },
            )
        })?;
        self.store.events().publish(Event {
            kind: if paused {
                EventKind::LearningPaused
            } else {
                EventKind::LearningResumed
            },
            user: user.to_string(),
            data: serde_json::json!({ "paused": paused }),
        });
        Ok(())
    }

    pub fn export(&self, user: &str, out: &mut dyn Write) -> Result<usize, StoreError> {
        self.store.read(|c| q::export(c, user, out))
    }

    /// Imports an export, all or nothing; returns the number of records. Each live
    /// memory imported is settled against the others as any write is (`settle.rs`).
    pub fn import(&self, user: &str, input: &mut dyn BufRead) -> Result<usize, StoreError> {
        let now = self.now();
        let text = self.store.text();
        self.store.write(|tx| {
            let (count, memories) =
                q::import(tx, user, input, ACTOR_USER, now, self.redaction.kinds())?;
            for id in memories {
                let record = q::get(tx, user, &id)?;
                if record.is_live() {
                    settle::settle(tx, text, &record, now, ACTOR_USER)?;
                }
            }
            Ok(count)
        })
    }

    fn model_of(&self, record: &MemoryRecord) -> engram_strategies::model::Memory {
        let persons = self
            .store
            .read(|c| q::persons_of(c, &record.user_id, &record.id))
            .unwrap_or_default();
        record.to_model(persons)
    }
}

/// What plugins read through `engram:plugin/memories`: live memories of the calling
/// user only. A storage error reads as "nothing found" to the plugin and is logged.
impl MemorySource for Brain {
    fn search(
        &self,
        user_id: &str,
        text: &str,
        limit: u32,
    ) -> Vec<engram_strategies::model::Memory> {
        match Brain::search(self, user_id, text, limit as usize) {
            Ok(found) => found.iter().map(|r| self.model_of(&r.record)).collect(),
            Err(e) => {
                tracing::error!("memories.search for a plugin failed: {e}");
                Vec::new()
            }
        }
    }

    fn get(&self, user_id: &str, id: &str) -> Option<engram_strategies::model::Memory> {
        Brain::get(self, user_id, id)
            .ok()
            .filter(MemoryRecord::is_live)
            .map(|r| self.model_of(&r))
    }

    fn list(&self, user_id: &str, query: &MemoryQuery) -> Vec<engram_strategies::model::Memory> {
        let filter = ListFilter {
            conscious: query.scope.map(Scope::is_conscious),
            memory_type: query.memory_type,
            limit: query.limit as usize,
            cursor: None,
        };
        match self.list(user_id, &filter) {
            Ok(page) => page
                .items
                .iter()
                .filter(|r| query.scope.is_none_or(|s| r.scope == s))
                .map(|r| self.model_of(r))
                .collect(),
            Err(e) => {
                tracing::error!("memories.list for a plugin failed: {e}");
                Vec::new()
            }
        }
    }
}

/// The integration tests' generator, for the unit tests here.
#[cfg(test)]
use crate::test_rng;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod truth_tests;

//! The Second Brain: typed memories of the user in SQLite, with their history, persons
//! and lifecycle. Private to `memory/`, whose facade (`memory::Memory`, and [`Brain`]
//! through `Memory::brain`) every caller uses; `store` holds the SQL, `error` what
//! fails, `memory::record` and `memory::vocabulary` the shapes callers share.

mod bm25;
pub mod consolidate;
mod conversation;
pub mod dismissal;
pub mod error;
mod focus;
pub mod forget;
pub mod ingest;
pub mod lifecycle;
pub mod maintenance;
mod meaning;
pub mod persons;
pub mod redact;
pub mod rescan;
pub mod retrieve;
mod row;
mod schema;
mod schema_pg;
pub use schema::{SCHEMA, VERSION as SCHEMA_VERSION};
pub use schema_pg::PG_SCHEMA;
pub mod settle;
pub mod snippet;
pub mod store;
mod text_index;
mod tokenizer;
pub mod transcript;
pub mod vectors;
mod word_counts;
mod writer;

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use engram_strategies::model::{MemoryType, Scope};

use crate::events::{Event, EventBus, EventKind};
use crate::memory::record::MemoryRecord;
use crate::memory::{
    Counts, HistoryEntry, ListFilter, MemoryEdit, MessageHit, NewMemory, Outcome, Page, SearchHit,
    SearchResult, SearchScope, Stored, Tier,
};
use crate::runtime::{MemoryQuery, MemorySource};
use crate::sql::{Actor, AsTx, Tx};
use crate::time::Clock;
use error::StoreError;
use store::{Store, q};

/// Who made a change, for the history.
pub const ACTOR_USER: &str = "user";
/// Changes made by Engram itself: retrieval, pruning, consolidation.
pub const ACTOR_SYSTEM: &str = "system";

/// Meta key of the learning switch.
const LEARNING_PAUSED: &str = "learning_paused";

/// Stores `record` by the rules of `settle.rs`, inside a write.
pub(crate) fn store_settled(
    conn: &Tx,
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

pub struct Brain {
    store: Store,
    clock: Arc<dyn Clock>,
    /// Which secrets every write redacts (`redact.rs`).
    redaction: redact::Redaction,
    /// The installed sentence encoder, once set (`vectors.rs`).
    model: vectors::Slot,
}

impl Brain {
    pub fn open(path: &Path, clock: Arc<dyn Clock>, events: EventBus) -> Result<Brain, StoreError> {
        Ok(Brain {
            store: Store::open(path, events)?,
            clock,
            redaction: redact::Redaction::default(),
            model: vectors::Slot::default(),
        })
    }

    /// The Second Brain on the PostgreSQL server at `url`, shared with every daemon
    /// on it (`store.rs`).
    pub fn postgres(
        url: &str,
        clock: Arc<dyn Clock>,
        events: EventBus,
    ) -> Result<Brain, StoreError> {
        Ok(Brain {
            store: Store::postgres(url, events)?,
            clock,
            redaction: redact::Redaction::default(),
            model: vectors::Slot::default(),
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
        self.store.write_grouped(user, |conn| {
            redact::count_found(conn, user, &found)?;
            store_settled(conn, text, record.clone(), now, ACTOR_USER)
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
        self.store.write_grouped(user, |tx| {
            redact::count_found(tx, user, &found)?;
            // What the agent deleted is edited only once the person has restored it.
            if dismissal::awaiting(tx, user, id)?.is_some() {
                return Err(StoreError::NotFound(id.to_string()));
            }
            let old = q::get(tx, user, id)?;
            let mut new = old.clone();
            if let Some(summary) = &summary {
                new.negated = engram_strategies::text::is_negated(summary);
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
            .write_grouped(user, |conn| q::delete(conn, user, id, ACTOR_USER, now))
    }

    /// Deletes every memory of the user, as `delete` does one, and every conversation
    /// with its transcript. Returns how many memories.
    pub fn clear(&self, user: &str) -> Result<usize, StoreError> {
        let now = self.now();
        self.store.write(Actor::User(user), |tx| {
            let tx = tx.as_tx();
            let ids: Vec<String> = tx.query(
                "SELECT id FROM memories WHERE user_id = ?1",
                &[user.into()],
                |row| row.get(0),
            )?;
            for id in &ids {
                q::delete(&tx, user, id, ACTOR_USER, now)?;
            }
            for table in ["persons", "messages", "conversations"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE user_id = ?1"),
                    &[user.into()],
                )?;
            }
            Ok(ids.len())
        })
    }

    pub fn counts(&self, user: &str) -> Result<Counts, StoreError> {
        self.store.read(Actor::User(user), |c| q::counts(c, user))
    }

    pub fn list(&self, user: &str, filter: &ListFilter) -> Result<Page, StoreError> {
        self.store
            .read(Actor::User(user), |c| q::list(c, user, filter))
    }

    /// Full-text search over both tiers, best match first, each result saying its tier
    /// (the query is read as retrieval reads a message: stop words do not count).
    pub fn search(
        &self,
        user: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<SearchResult>, StoreError> {
        let terms = meaning::query_words(text).join(" ");
        let text = self.store.text_built()?;
        let tuning = retrieve::Tuning::default();
        let hits = self.store.read(Actor::User(user), |c| {
            retrieve::text_matches(c, text, user, &terms, limit, limit, &tuning)
        })?;
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
        let model = self.model();
        let query = retrieve::Query::encoded(text, model.as_deref(), None);
        let counts = self.store.word_counts();
        let text = self.store.text_built()?;
        let tuning = retrieve::Tuning::default();
        let candidates = self.store.read(Actor::User(user), |c| {
            let memories = if scope == SearchScope::All {
                retrieve::text_matches(c, text, user, &query.terms, limit, limit, &tuning)?
            } else {
                Vec::new()
            };
            let mut said =
                retrieve::said_matches(c, counts, user, &query.terms, limit, limit, &tuning)?;
            let messages: Vec<_> = said.iter().map(|m| &m.message).collect();
            let hidden = dismissal::hidden_messages(c, user, &messages)?;
            said.retain(|m| !hidden.contains(&m.message.id));
            retrieve::Candidates::with_vectors(memories, said, c, user, &query, model.as_deref())
        })?;
        let ranked = retrieve::rank_all(candidates, &query, &tuning, self.now());
        Ok(ranked
            .into_iter()
            .take(limit)
            .map(|r| match r {
                crate::memory::Source::Memory { record, .. } => SearchHit {
                    tier: if record.scope.is_conscious() {
                        Tier::Conscious
                    } else {
                        Tier::Subconscious
                    },
                    memory: Some(record),
                    message: None,
                },
                crate::memory::Source::Message(message) => SearchHit {
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
        self.store
            .read(Actor::User(user), |c| q::history_of(c, user, id))
    }

    pub fn learning_paused(&self, user: &str) -> Result<bool, StoreError> {
        Ok(self
            .store
            .read(Actor::User(user), |c| q::meta(c, user, LEARNING_PAUSED))?
            .as_deref()
            == Some("true"))
    }

    pub fn set_learning_paused(&self, user: &str, paused: bool) -> Result<(), StoreError> {
        self.store.write(Actor::User(user), |tx| {
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
        self.store
            .read(Actor::User(user), |c| q::export(c, user, out))
    }

    /// Imports an export, all or nothing; returns the number of records. Each live
    /// memory imported is settled against the others as any write is (`settle.rs`).
    pub fn import(&self, user: &str, input: &mut dyn BufRead) -> Result<usize, StoreError> {
        let now = self.now();
        let text = self.store.text();
        // For the host: the import first checks who owns each conversation id it names.
        self.store.write(Actor::System, |tx| {
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
            .read(Actor::User(&record.user_id), |c| {
                q::persons_of(c, &record.user_id, &record.id)
            })
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

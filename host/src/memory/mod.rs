//! Memory, one interface over both stores: the Second Brain (SQLite, [`Brain`], `memory/brain/`) or,
//! when it is off or cannot be opened, the JSONL fact store ([`facts`]). Which one
//! serves is decided once at startup ([`open`]); every caller (the REST API, the host
//! tools, the turn service, the daemon's loops, plugins' `memories` interface) goes
//! through [`Memory`] and never chooses again.
//!
//! What both stores do (add, get, delete, list, search) is a method here; what only
//! the Second Brain does (edits, history, persons, the graph, consolidation, learning,
//! export and import) is reached through [`Memory::brain`], which is
//! [`MemoryError::BrainDisabled`] with the fact store in use. Retrieval before a
//! message and recording a conversation are no-ops with the fact store: it keeps no
//! conversations and ranks nothing for injection.

mod brain;
pub mod facts;
pub mod import;
pub mod open;
pub mod record;
mod vocabulary;

use std::sync::Arc;

use engram_strategies::model::Role;

use crate::background::BackgroundError;
use crate::config::MemoryConfig;
use crate::described::{Described, Description};
use crate::runtime::strategies::Strategies;
use crate::runtime::{MemoryQuery, MemorySource};
use facts::{FactsError, FactsStore};
use record::MemoryRecord;

/// What only the Second Brain does, reached through [`Memory::brain`]: the service and
/// the answers of its calls. Its modules stay private to `memory/`.
pub use brain::consolidate::Consolidated;
pub use brain::dismissal::Dismissed;
pub use brain::error::{SecretRefused, StoreError};
pub use brain::forget::{ForgetEntry, Forgetter, Forgotten};
pub use brain::ingest::{Applied, Ingested};
pub use brain::maintenance::Report as MaintenanceReport;
pub use brain::persons::{Graph, PersonDetail, PersonSummary};
pub use brain::redact::Redaction;
pub use brain::rescan::RedactionReport;
pub use brain::transcript::terms::index_copied as index_copied_transcript;
pub use brain::{Brain, PG_SCHEMA as BRAIN_PG_SCHEMA, SCHEMA as BRAIN_SCHEMA, SCHEMA_VERSION};
pub use open::{ENV_VAR, brain_db_path, facts_path, open_memory};
pub use vocabulary::{
    Counts, DEFAULT_TRANSCRIPT_DAYS, DEFAULT_USER, HistoryEntry, Injected, ListFilter,
    MAX_MESSAGE_BYTES, MAX_NAME_CHARS, MemoryEdit, MessageHit, NewMemory, Outcome, Page, Retrieval,
    SearchHit, SearchResult, SearchScope, Source, Stored, Tier,
};

/// The Second Brain's internals a benchmark drives directly (`host/benches`): not an
/// interface for the daemon's own callers.
#[doc(hidden)]
pub mod bench {
    pub use super::brain::ingest::MAX_FACTS_PER_CONVERSATION;
    pub use super::brain::maintenance::PASS_EVERY_MS as MAINTENANCE_EVERY_MS;
    pub use super::brain::retrieve::{
        ENCODED_MEANING_FLOOR, Fusion, MEANING_FLOOR, MEANING_WINDOW, Tuning,
    };
    pub use super::brain::store::{KEEP_CHANGES_MS, q};
    pub use super::brain::transcript::either::Transcript;
}

/// Why a memory operation failed. Nothing was stored by a failed operation.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The operation needs the Second Brain, and the fact store serves memory.
    #[error(
        "this needs the Second Brain, which is not in use ({reason}); memory is served by the fact store"
    )]
    BrainDisabled { reason: String },
    #[error(transparent)]
    Brain(#[from] StoreError),
    #[error(transparent)]
    Facts(#[from] FactsError),
    /// A search lane failed the search (it panicked).
    #[error("search lane: {0}")]
    Lane(#[from] BackgroundError),
}

/// 409 `brain-disabled` for what needs the Second Brain; each store's errors as it
/// describes them.
impl Described for MemoryError {
    fn describe(&self) -> Description {
        match self {
            MemoryError::BrainDisabled { .. } => Description::new(
                http::StatusCode::CONFLICT,
                "brain-disabled",
                self.to_string(),
            ),
            MemoryError::Brain(e) => e.describe(),
            MemoryError::Facts(e) => e.describe(),
            MemoryError::Lane(_) => Description::internal("search lane"),
        }
    }
}

/// Runs `f`, a call that searches (and whatever goes with it, the serialising of
/// its answer), on a search lane, for an async caller that does not want a thread
/// waiting: the searches inside it run in place there.
pub async fn search_lane<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, MemoryError> {
    Ok(crate::background::heavy(f).await?)
}

/// The longest user id accepted.
pub const MAX_USER_LEN: usize = 128;

/// The user a caller acts for: [`DEFAULT_USER`] unless
/// `user` names another, which must be 1 to [`MAX_USER_LEN`] characters without
/// control characters. The error says why a name is refused.
pub fn user_or_default(user: Option<&str>) -> Result<String, String> {
    match user {
        None => Ok(DEFAULT_USER.to_string()),
        Some(u) if u.is_empty() || u.chars().count() > MAX_USER_LEN => {
            Err(format!("must be 1 to {MAX_USER_LEN} characters"))
        }
        Some(u) if u.chars().any(char::is_control) => {
            Err("must not contain control characters".to_string())
        }
        Some(u) => Ok(u.to_string()),
    }
}

/// The memory service in use.
pub struct Memory {
    /// Shared with the searches it sends to the search lanes.
    backend: Arc<Backend>,
}

enum Backend {
    /// Boxed: a store is large beside the fact store.
    Brain(Box<Brain>),
    /// The Second Brain is off or could not be opened; `reason` says which and why.
    Facts { store: FactsStore, reason: String },
}

impl Memory {
    pub(crate) fn from_brain(brain: Brain) -> Memory {
        Memory {
            backend: Arc::new(Backend::Brain(Box::new(brain))),
        }
    }

    pub(crate) fn from_facts(store: FactsStore, reason: String) -> Memory {
        Memory {
            backend: Arc::new(Backend::Facts { store, reason }),
        }
    }

    /// One pass of the Second Brain's background work (`brain/maintenance.rs`) with the
    /// timings of `memory` in config.yaml; `None` with the fact store, which has none.
    pub fn maintain(
        &self,
        strategies: &Strategies,
        config: &MemoryConfig,
    ) -> Option<MaintenanceReport> {
        let settings = brain::maintenance::Settings::from_config(config);
        let brain = self.brain().ok()?;
        Some(brain::maintenance::run(brain, strategies, &settings))
    }

    /// Consolidates `user`'s memories now, with the lifecycle and interval of `memory` in
    /// config.yaml.
    pub fn consolidate(
        &self,
        user: &str,
        strategies: &Strategies,
        config: &MemoryConfig,
    ) -> Result<Consolidated, MemoryError> {
        let settings = brain::maintenance::Settings::from_config(config);
        Ok(self.brain()?.consolidate(
            user,
            strategies,
            &settings.lifecycle,
            settings.consolidation_interval_ms,
        )?)
    }

    /// The Second Brain, for what only it does.
    pub fn brain(&self) -> Result<&Brain, MemoryError> {
        match &*self.backend {
            Backend::Brain(brain) => Ok(brain),
            Backend::Facts { reason, .. } => Err(MemoryError::BrainDisabled {
                reason: reason.clone(),
            }),
        }
    }

    /// Which secrets writes redact (`memory.redact`; all kinds unless configured).
    pub fn set_redaction(&self, kinds: engram_strategies::secrets::KindSet) {
        match &*self.backend {
            Backend::Brain(brain) => brain.redaction().set(kinds),
            Backend::Facts { store, .. } => store.redaction().set(kinds),
        }
    }

    /// Why the Second Brain is not in use, for the status report; `None` when it is.
    pub fn disabled_reason(&self) -> Option<&str> {
        match &*self.backend {
            Backend::Brain(_) => None,
            Backend::Facts { reason, .. } => Some(reason),
        }
    }

    /// Stores a memory; with the Second Brain, by its rules for what a memory restates
    /// or replaces (`brain/settle.rs`).
    pub fn add(&self, user: &str, new: NewMemory) -> Result<Stored, MemoryError> {
        Ok(match &*self.backend {
            Backend::Brain(brain) => brain.add(user, new)?,
            Backend::Facts { store, .. } => Stored {
                record: store.add(user, new)?,
                outcome: Outcome::Added,
                superseded: Vec::new(),
            },
        })
    }

    /// Whether [`Memory::get`] is a lookup in memory (the Second Brain's index), cheap
    /// enough to run on an async worker, rather than a scan of the fact store's file.
    pub fn get_is_point_read(&self) -> bool {
        matches!(*self.backend, Backend::Brain(_))
    }

    pub fn get(&self, user: &str, id: &str) -> Result<MemoryRecord, MemoryError> {
        Ok(match &*self.backend {
            Backend::Brain(brain) => brain.get(user, id)?,
            Backend::Facts { store, .. } => store.get(user, id)?,
        })
    }

    /// Deletes for good (the Second Brain keeps the event in the history, and redacts
    /// the transcript text the memory came from unless `keep_messages`: see
    /// `brain/forget.rs`).
    pub fn delete(
        &self,
        user: &str,
        id: &str,
        keep_messages: bool,
        by: Forgetter,
    ) -> Result<Forgotten, MemoryError> {
        Ok(match &*self.backend {
            Backend::Brain(brain) => brain.forget_memory(user, id, keep_messages, by)?,
            Backend::Facts { store, .. } => {
                store.delete(user, id)?;
                Forgotten {
                    memories: vec![id.to_string()],
                    messages: Vec::new(),
                }
            }
        })
    }

    /// The agent's delete (REST with the agent's token, MCP `memory_forget`), once the
    /// gate has allowed it: the Second Brain dismisses the memory and keeps it for the
    /// person to restore (`brain/dismissal.rs`); the fact store keeps no history, so
    /// there it is deleted at once. Returns the memory, with `dismissed_at` when it was
    /// dismissed.
    pub fn dismiss(
        &self,
        user: &str,
        id: &str,
        keep_messages: bool,
    ) -> Result<MemoryRecord, MemoryError> {
        Ok(match &*self.backend {
            Backend::Brain(brain) => brain.dismiss_for_agent(user, id, keep_messages)?,
            Backend::Facts { store, .. } => {
                let record = store.get(user, id)?;
                store.delete(user, id)?;
                record
            }
        })
    }

    /// Live memories, most recently changed first. The fact store has no tiers and no
    /// cursors: a scope filter or a cursor needs the Second Brain.
    pub fn list(&self, user: &str, filter: &ListFilter) -> Result<Page, MemoryError> {
        match &*self.backend {
            Backend::Brain(brain) => Ok(brain.list(user, filter)?),
            Backend::Facts { store, reason } => {
                if filter.conscious.is_some() || filter.cursor.is_some() {
                    return Err(MemoryError::BrainDisabled {
                        reason: reason.clone(),
                    });
                }
                Ok(Page {
                    items: store.list(user, filter.memory_type, filter.limit)?,
                    next_cursor: None,
                })
            }
        }
    }

    /// Memories matching `text`, best first. On a search lane (see
    /// [`Memory::search_hits`]).
    pub fn search(
        &self,
        user: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<SearchResult>, MemoryError> {
        self.on_search_lane(user, text, move |backend, user, text| {
            Ok(match backend {
                Backend::Brain(brain) => brain.search(user, text, limit)?,
                Backend::Facts { store, .. } => store.search(user, text, limit)?,
            })
        })
    }

    /// Search as the API and `search_memory` show it: memories, the transcript, or
    /// both ranked together. The fact store keeps no transcript: `all` is its
    /// memories, and `conversations` needs the Second Brain.
    ///
    /// A search's cost grows with the data, so it runs on a search lane
    /// (`background::heavy_blocking`), one per two cores, queued behind the searches
    /// before it, whichever front door asked (REST, MCP, a host tool, a chat command);
    /// the calling thread waits. An async caller that does not want a thread waiting
    /// moves its whole call onto a lane with [`search_lane`], where this runs in
    /// place.
    pub fn search_hits(
        &self,
        user: &str,
        text: &str,
        limit: usize,
        scope: SearchScope,
    ) -> Result<Vec<SearchHit>, MemoryError> {
        self.on_search_lane(user, text, move |backend, user, text| {
            match (backend, scope) {
                (Backend::Brain(brain), _) => Ok(brain.search_hits(user, text, limit, scope)?),
                (Backend::Facts { reason, .. }, SearchScope::Conversations) => {
                    Err(MemoryError::BrainDisabled {
                        reason: reason.clone(),
                    })
                }
                (Backend::Facts { store, .. }, _) => Ok(store
                    .search(user, text, limit)?
                    .into_iter()
                    .map(SearchHit::from)
                    .collect()),
            }
        })
    }

    /// Runs `search` for `user` and `text` on a search lane and waits for it.
    fn on_search_lane<T: Send + 'static>(
        &self,
        user: &str,
        text: &str,
        search: impl FnOnce(&Backend, &str, &str) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        let (backend, user, text) = (self.backend.clone(), user.to_string(), text.to_string());
        crate::background::heavy_blocking(move || search(&backend, &user, &text))?
    }

    /// How many live memories the user has, by type and by scope.
    pub fn counts(&self, user: &str) -> Result<Counts, MemoryError> {
        Ok(match &*self.backend {
            Backend::Brain(brain) => brain.counts(user)?,
            Backend::Facts { store, .. } => store.counts(user)?,
        })
    }

    /// The memories to put before `message`; none with the fact store.
    pub fn retrieve(&self, user: &str, message: &str) -> Result<Retrieval, MemoryError> {
        self.retrieve_embedded(user, message, None)
    }

    /// [`Memory::retrieve`] with the installed encoder's vector of `message`, when the
    /// caller has it: a turn embeds its message once, to route it.
    pub fn retrieve_embedded(
        &self,
        user: &str,
        message: &str,
        vector: Option<&[f32]>,
    ) -> Result<Retrieval, MemoryError> {
        match &*self.backend {
            Backend::Brain(brain) => Ok(brain.retrieve_embedded(user, message, vector)?),
            Backend::Facts { .. } => Ok(Retrieval::default()),
        }
    }

    /// Refuses `conversation` when it is another user's
    /// ([`StoreError::OtherUsers`]), as recording a message in it would; an unknown one
    /// is fine (its first message creates it), and so is any with the fact store.
    pub fn check_conversation(&self, user: &str, conversation: &str) -> Result<(), MemoryError> {
        match &*self.backend {
            Backend::Brain(brain) => Ok(brain.check_conversation(user, conversation)?),
            Backend::Facts { .. } => Ok(()),
        }
    }

    /// Records a message of a conversation (`name`: its speaker's, when known) so the
    /// Second Brain can learn from it and keep it in the transcript; the message's id,
    /// or `None` when nothing was recorded (learning paused, or the fact store, which
    /// keeps no conversations).
    pub fn record_message(
        &self,
        user: &str,
        conversation: &str,
        role: Role,
        name: Option<&str>,
        text: &str,
    ) -> Result<Option<String>, MemoryError> {
        match &*self.backend {
            Backend::Brain(brain) => {
                Ok(brain.record_message(user, conversation, role, name, text)?)
            }
            Backend::Facts { .. } => Ok(None),
        }
    }
}

/// Plugins read the Second Brain; with the fact store in use no strategy runs, so they
/// read nothing.
impl MemorySource for Memory {
    fn search(
        &self,
        user_id: &str,
        text: &str,
        limit: u32,
    ) -> Vec<engram_strategies::model::Memory> {
        self.brain()
            .map(|b| MemorySource::search(b, user_id, text, limit))
            .unwrap_or_default()
    }

    fn get(&self, user_id: &str, id: &str) -> Option<engram_strategies::model::Memory> {
        self.brain()
            .ok()
            .and_then(|b| MemorySource::get(b, user_id, id))
    }

    fn list(&self, user_id: &str, query: &MemoryQuery) -> Vec<engram_strategies::model::Memory> {
        self.brain()
            .map(|b| MemorySource::list(b, user_id, query))
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.backend {
            Backend::Brain(brain) => f.debug_tuple("Brain").field(&brain.store().path()).finish(),
            Backend::Facts { store, reason } => f
                .debug_struct("Facts")
                .field("path", &store.path())
                .field("reason", reason)
                .finish(),
        }
    }
}

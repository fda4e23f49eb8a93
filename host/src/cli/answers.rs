//! The daemon's answers as `engram memory` (and `engram memory export`) read them: the
//! fields the CLI shows are named, the rest kept as sent, so that `--json` prints what
//! the daemon answered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A memory as the daemon returns it. The fields the CLI shows are named; the rest
/// (timestamps, evidence, durability, ...) are kept in `extra`, so that serialising it
/// again gives back what the daemon sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    #[serde(rename = "type")]
    pub memory_type: String,
    pub summary: String,
    pub scope: String,
    pub confidence: f64,
    pub importance: f64,
    #[serde(default)]
    pub stale: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPage {
    pub items: Vec<Memory>,
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// `conscious` (durable or active) or `subconscious`.
    pub tier: String,
    pub memory: Memory,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchPage {
    pub items: Vec<SearchHit>,
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /api/brain/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub enabled: bool,
    /// `sqlite` (the Second Brain) or `facts` (the fallback store).
    pub backend: String,
    /// Why the Second Brain is not in use, when it is not.
    pub error: Option<String>,
    /// `None` with the fact store, which never learns.
    pub learning_paused: Option<bool>,
    pub counts: Counts,
    pub profile_summary: Option<String>,
    pub active_summary: Option<String>,
    pub last_consolidation_at: Option<String>,
    pub next_consolidation_at: Option<String>,
    pub strategies: Vec<Strategy>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub total: usize,
    pub by_type: BTreeMap<String, usize>,
    pub by_scope: BTreeMap<String, usize>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Strategy {
    pub role: String,
    pub plugin: String,
    pub version: Option<String>,
    pub hash: Option<String>,
    pub error: Option<String>,
    /// The configured plugin's last failed call (the built-in one answered instead).
    #[serde(default)]
    pub last_failure: Option<StrategyFailure>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyFailure {
    pub code: String,
    pub reason: String,
    pub at: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `pause` and `resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learning {
    pub learning_paused: bool,
}

/// `clear`: how many memories were deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cleared {
    pub deleted: usize,
}

/// `delete`: the id of the deleted memory (the daemon answers 204 without a body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deleted {
    pub deleted: String,
}

/// One memory the agent deleted (`dismissed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dismissed {
    pub memory: Memory,
    pub dismissed_at: String,
    pub restorable_until: String,
    pub keep_messages: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DismissedPage {
    pub items: Vec<Dismissed>,
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

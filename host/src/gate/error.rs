//! What can go wrong in the gate outside a decision. A decision itself never fails:
//! whatever goes wrong while deciding becomes a deny with its reason code.

use std::path::PathBuf;

use super::policy::ReasonCode;
use super::schema::SchemaError;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("no turn `{0}`")]
    UnknownTurn(String),
    #[error("turn `{0}` has already ended")]
    TurnEnded(String),
    #[error("turn `{0}` has expired")]
    TurnExpired(String),
    /// An approval names a tool the gate does not know.
    #[error("`{0}` is not a tool the gate knows")]
    UnknownTool(String),
    /// An approval for a tool the gate denies in the turn: an approval lifts ask,
    /// never a deny. `code` is the deny's reason code.
    #[error("`{tool}` cannot be approved: {reason}; an approval only lifts ask, never a deny")]
    NotApprovable {
        tool: String,
        code: ReasonCode,
        reason: String,
    },
    /// The agent asked for what only the person may do (an approval). The refusal is
    /// in the audit log.
    #[error(transparent)]
    PersonRequired(#[from] crate::credentials::PersonRequired),
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{open} turns are open, the most the gate keeps at once; end some or let them expire")]
    TooManyTurns { open: usize },
    /// One caller holds as many open turns as it may (the others still open theirs).
    #[error(
        "`{caller}` holds {cap} open turns, the most one caller may (tools.maxOpenTurnsPerCaller); end some or let them expire"
    )]
    CallerAtCap { caller: String, cap: usize },
    /// The agent has deleted as many of the user's memories in the last hour as it
    /// may (`memory.agentDeletes.perHour`). The refusal is in the audit log.
    #[error(
        "the agent may delete at most {per_hour} memories of a user per hour (memory.agentDeletes.perHour); the person's deletes are not limited, and they can restore what the agent deleted; retry in {retry_after_secs} s"
    )]
    AgentDeleteLimit {
        per_hour: u32,
        retry_after_secs: u64,
    },
    #[error("cannot open the audit log at {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("audit log: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl GateError {
    /// A stable code for the REST layer's problem documents.
    pub fn code(&self) -> &'static str {
        match self {
            GateError::UnknownTurn(_) => "unknown-turn",
            GateError::TurnEnded(_) => "turn-ended",
            GateError::TurnExpired(_) => "turn-expired",
            GateError::UnknownTool(_) => "unknown-tool",
            GateError::NotApprovable { code, .. } => code.as_str(),
            GateError::PersonRequired(_) => crate::credentials::PersonRequired::CODE,
            GateError::Invalid { .. } => "invalid",
            GateError::TooManyTurns { .. } | GateError::CallerAtCap { .. } => "too-many-turns",
            GateError::AgentDeleteLimit { .. } => "agent-delete-limit",
            GateError::Open { .. } | GateError::Schema(_) | GateError::Sqlite(_) => "audit-log",
        }
    }
}

//! What can go wrong in the gate outside a decision. A decision itself never fails:
//! whatever goes wrong while deciding becomes a deny with its reason code.

use std::path::PathBuf;

use http::StatusCode;

use super::policy::ReasonCode;
use super::schema::SchemaError;
use crate::described::{Described, Description};

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
    Sql(#[from] crate::sql::SqlError),
}

/// An unknown turn is 404, an ended or expired one 409; an approval the gate refuses
/// 409 with the deny's code, of a tool it does not know 422; the agent asking for the
/// person's act 403; too many open turns 503 (429 for one caller at its cap); the
/// agent's deletes past its limit 429 (REST adds `Retry-After`); the audit log's
/// failures are the host's own.
impl Described for GateError {
    fn describe(&self) -> Description {
        let detail = self.to_string();
        match self {
            GateError::UnknownTurn(id) => Description::new(
                StatusCode::NOT_FOUND,
                "unknown-turn",
                format!("no turn `{}`", crate::term_text::shown(id)),
            ),
            GateError::TurnEnded(_) => Description::new(StatusCode::CONFLICT, "turn-ended", detail),
            GateError::TurnExpired(_) => {
                Description::new(StatusCode::CONFLICT, "turn-expired", detail)
            }
            GateError::UnknownTool(_) => {
                Description::new(StatusCode::UNPROCESSABLE_ENTITY, "unknown-tool", detail)
                    .on("tool")
            }
            GateError::NotApprovable { code, .. } => {
                Description::new(StatusCode::CONFLICT, code.as_str(), detail)
            }
            GateError::PersonRequired(e) => e.describe(),
            GateError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            GateError::TooManyTurns { .. } => {
                Description::new(StatusCode::SERVICE_UNAVAILABLE, "too-many-turns", detail)
            }
            GateError::CallerAtCap { .. } => {
                Description::new(StatusCode::TOO_MANY_REQUESTS, "too-many-turns", detail)
            }
            GateError::AgentDeleteLimit { .. } => {
                Description::new(StatusCode::TOO_MANY_REQUESTS, "agent-delete-limit", detail)
            }
            GateError::Sql(e) => crate::sql::describe(e, "tool gate"),
            GateError::Open { .. } | GateError::Schema(_) => Description::internal("tool gate"),
        }
    }
}

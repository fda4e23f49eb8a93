//! What can go wrong in a turn operation, for every channel: each variant says how it
//! reaches a caller ([`Described`]: REST's problem documents, MCP's tool errors, the
//! scheduler's `schedule.failed` code), and plugins' `tools.invoke` gets it as the WIT
//! `tool-error`.

use http::StatusCode;

use crate::described::{Described, Description};
use crate::gate::{Decision, GateError, ReasonCode, Verdict};
use crate::memory::MemoryError;
use crate::runtime::PluginError;
use crate::skills::LibraryError;
use crate::term_text::shown;
use crate::tools::ToolError;

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// A value given to the service is not acceptable (`field` names it).
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The skill to invoke is not installed.
    #[error("no installed skill named `{0}`")]
    SkillMissing(String),
    /// The skill to invoke is installed but not active.
    #[error("the skill `{0}` is inactive; activate it first")]
    SkillInactive(String),
    /// The skills library failed otherwise (an unreadable index, I/O).
    #[error(transparent)]
    Skills(LibraryError),
    /// The turn is unknown, ended or expired; too many are open; an approval the gate
    /// refuses; the audit log failed.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The gate did not allow a tool call: a deny, or an ask (which only the user's
    /// approval lifts). The decision is in the audit log.
    #[error("{}: {}", refusal_code(.decision), .decision.reason)]
    Refused {
        turn_id: Option<String>,
        tool: String,
        decision: Decision,
    },
    /// A tool the gate knows, but that the agent runs itself: nothing was decided.
    #[error("`{0}` is not a host tool: the agent runs it itself once `authorize` allows it; host tools are {names}", names = crate::tools::names())]
    NotAHostTool(String),
    /// The host tool ran and failed, or refused its arguments.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A script was asked for in a turn that invokes no skill.
    #[error("no skill is invoked in this turn, so there is no script to run")]
    NoSkillInvoked,
    #[error("the skill `{skill}` has no script `{name}` (scripts/{name}.wasm)")]
    UnknownScript { skill: String, name: String },
    /// The script cannot be loaded: not a `skill-tool` component, a bad `<name>.toml`,
    /// a symlink.
    #[error("the script `{name}` of `{skill}` cannot be loaded: {reason}")]
    ScriptInvalid {
        skill: String,
        name: String,
        reason: String,
    },
    /// The script ran and answered an error: its own message.
    #[error("{0}")]
    ScriptFailed(String),
    /// The script was stopped: a trap, its time or memory limit, a malformed result.
    #[error("the script `{name}` of `{skill}` was stopped: {reason}")]
    ScriptStopped {
        skill: String,
        name: String,
        reason: String,
    },
    /// The runtime failed to run a script for a reason of its own (the host's).
    #[error("skill script: {0}")]
    Script(PluginError),
    /// Retrieving memories or recording a message failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// `approval-required` for an ask, else the decision's reason code.
fn refusal_code(decision: &Decision) -> &'static str {
    match decision.verdict {
        Verdict::Ask => "approval-required",
        _ => decision.code.as_str(),
    }
}

/// The service's own refusals with their statuses; the errors inside as they
/// describe themselves.
impl Described for TurnError {
    fn describe(&self) -> Description {
        let detail = self.to_string();
        let refused = |status, code| Description::new(status, code, detail.clone());
        match self {
            TurnError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            TurnError::SkillMissing(_) => Description::not_found(detail),
            TurnError::SkillInactive(_) => refused(StatusCode::CONFLICT, "inactive"),
            TurnError::Skills(e) => e.describe(),
            TurnError::Gate(e) => e.describe(),
            TurnError::Refused {
                turn_id,
                tool,
                decision,
            } => refusal(decision, turn_id.as_deref().unwrap_or_default(), tool),
            TurnError::NotAHostTool(_) => {
                refused(StatusCode::UNPROCESSABLE_ENTITY, "not-a-host-tool")
            }
            TurnError::Tool(e) => e.describe(),
            TurnError::NoSkillInvoked => refused(StatusCode::CONFLICT, "no-skill-invoked"),
            TurnError::UnknownScript { .. } => refused(StatusCode::NOT_FOUND, "unknown-script"),
            TurnError::ScriptInvalid { .. } => {
                refused(StatusCode::UNPROCESSABLE_ENTITY, "script-invalid")
            }
            TurnError::ScriptFailed(_) => {
                refused(StatusCode::UNPROCESSABLE_ENTITY, "script-failed")
            }
            TurnError::ScriptStopped { .. } => {
                refused(StatusCode::UNPROCESSABLE_ENTITY, "script-trapped")
            }
            TurnError::Script(_) => Description::internal("skill script"),
            TurnError::Memory(e) => e.describe(),
        }
    }
}

/// A decision that does not allow a call: 403 with its reason code, except the turn's
/// own state (404 `unknown-turn`, 409 `turn-ended` / `turn-expired`). An ask says how
/// to get past it: the person's approval.
fn refusal(decision: &Decision, turn_id: &str, tool: &str) -> Description {
    let (status, code) = match (decision.verdict, decision.code) {
        (_, ReasonCode::UnknownTurn) => (StatusCode::NOT_FOUND, "unknown-turn"),
        (_, ReasonCode::TurnEnded) => (StatusCode::CONFLICT, "turn-ended"),
        (_, ReasonCode::TurnExpired) => (StatusCode::CONFLICT, "turn-expired"),
        (Verdict::Ask, _) => {
            return Description::new(
                StatusCode::FORBIDDEN,
                "approval-required",
                format!(
                    "{} (code `{}`): show the user this call; they approve it in this turn (the dashboard, a chat channel, or POST /api/turns/{}/approvals {{\"tool\": \"{}\", \"args\": <this call's arguments>}} with the operator token), then call again",
                    decision.reason,
                    decision.code.as_str(),
                    shown(turn_id),
                    shown(tool)
                ),
            );
        }
        (_, code) => (StatusCode::FORBIDDEN, code.as_str()),
    };
    Description::new(status, code, decision.reason.clone())
}

/// A missing or inactive skill is the caller's to fix (and the scheduler's to
/// report); the rest of the library's failures stay as they are.
impl From<LibraryError> for TurnError {
    fn from(e: LibraryError) -> TurnError {
        match e {
            LibraryError::NotFound(slug) => TurnError::SkillMissing(slug),
            LibraryError::Inactive(slug) => TurnError::SkillInactive(slug),
            other => TurnError::Skills(other),
        }
    }
}

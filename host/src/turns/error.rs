//! What can go wrong in a turn operation, for every channel: the REST layer maps each
//! variant to a problem document, the scheduler to a `schedule.failed` code, plugins'
//! `tools.invoke` to the WIT `tool-error`.

use crate::gate::{Decision, GateError, Verdict};
use crate::memory::MemoryError;
use crate::runtime::PluginError;
use crate::skills::LibraryError;
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

impl TurnError {
    /// A stable code: the REST layer's problem code for the service's own refusals,
    /// and the scheduler's `schedule.failed` code. Nested errors keep their own codes
    /// (the REST layer maps them further).
    pub fn code(&self) -> &'static str {
        match self {
            TurnError::Invalid { .. } => "invalid-field",
            TurnError::SkillMissing(_) => "not-found",
            TurnError::SkillInactive(_) => "inactive",
            TurnError::Skills(e) => e.code(),
            TurnError::Gate(e) => e.code(),
            TurnError::Refused { decision, .. } => refusal_code(decision),
            TurnError::NotAHostTool(_) => "not-a-host-tool",
            TurnError::Tool(_) => "tool-failed",
            TurnError::NoSkillInvoked => "no-skill-invoked",
            TurnError::UnknownScript { .. } => "unknown-script",
            TurnError::ScriptInvalid { .. } => "script-invalid",
            TurnError::ScriptFailed(_) => "script-failed",
            TurnError::ScriptStopped { .. } => "script-trapped",
            TurnError::Script(_) | TurnError::Memory(_) => "internal",
        }
    }

    /// Whether the error is the host's own failure (I/O, SQL, the runtime), whose
    /// details belong in the log and never in an answer.
    pub fn is_internal(&self) -> bool {
        match self {
            TurnError::Skills(e) => matches!(e, LibraryError::Io { .. }),
            TurnError::Gate(e) => matches!(
                e,
                GateError::Open { .. } | GateError::Schema(_) | GateError::Sqlite(_)
            ),
            TurnError::Tool(e) => e.is_internal(),
            TurnError::Script(_) => true,
            TurnError::Memory(e) => e.is_internal(),
            _ => false,
        }
    }
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

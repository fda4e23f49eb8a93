//! A tool call that did not succeed, as MCP clients see it: a tool result with
//! `isError: true` whose text starts with the problem `code` (the same codes as the
//! REST API's problem documents) and whose structured content is `{code, detail,
//! field?}`. The session goes on; nothing of the host's internals (paths, SQL) is in
//! it, only in the log.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::memory::MemoryError;
use crate::skills::LibraryError;
use crate::tools::ToolError;
use crate::turns::TurnError;

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: &'static str,
    pub detail: String,
    /// The argument at fault, when one is.
    pub field: Option<String>,
}

impl Failure {
    pub fn new(code: &'static str, detail: impl Into<String>) -> Failure {
        Failure {
            code,
            detail: detail.into(),
            field: None,
        }
    }

    /// An argument that is not acceptable (`invalid-field`).
    pub fn invalid(field: &str, reason: impl std::fmt::Display) -> Failure {
        Failure {
            code: "invalid-field",
            detail: format!("{field}: {reason}"),
            field: Some(field.to_string()),
        }
    }

    /// An argument the tool does not take (`unknown-field`).
    pub fn unknown_field(field: &str) -> Failure {
        Failure {
            code: "unknown-field",
            detail: format!("{field}: unknown field"),
            field: Some(field.to_string()),
        }
    }

    /// The host's own failure: logged in full, answered generically.
    pub fn internal(context: &str, error: &dyn std::fmt::Display) -> Failure {
        tracing::error!("mcp {context}: {error}");
        Failure::new(
            "internal",
            "an internal error occurred; the daemon log has the details",
        )
    }

    /// A refusal by a host tool's argument reader (`crate::tools::search_args`, ...)
    /// for an MCP tool that takes the host tool's arguments: the host tool's
    /// `args.<field>` is the call's own `<field>` here.
    pub fn from_host_args(e: ToolError) -> Failure {
        let own = |field: &str| field.strip_prefix("args.").unwrap_or(field).to_string();
        match e {
            ToolError::UnknownArg { field } => Failure::unknown_field(&own(&field)),
            ToolError::InvalidArg { field, reason } => Failure::invalid(&own(&field), reason),
            other => other.into(),
        }
    }

    pub fn into_result(self) -> CallToolResult {
        let mut structured = json!({ "code": self.code, "detail": self.detail });
        if let Some(field) = &self.field {
            structured["field"] = json!(field);
        }
        let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: {}",
            self.code, self.detail
        ))]);
        result.structured_content = Some(structured);
        result
    }
}

impl From<TurnError> for Failure {
    fn from(e: TurnError) -> Failure {
        if e.is_internal() {
            return Failure::internal("turn service", &e);
        }
        match e {
            TurnError::Invalid { field, reason } => Failure::invalid(field, reason),
            TurnError::Tool(e) => e.into(),
            TurnError::Memory(e) => e.into(),
            e => Failure::new(e.code(), e.to_string()),
        }
    }
}

/// The agent named a user it may not act for: the REST API's 403 code.
impl From<crate::credentials::UserNotAllowed> for Failure {
    fn from(e: crate::credentials::UserNotAllowed) -> Failure {
        Failure::new(crate::credentials::UserNotAllowed::CODE, e.to_string())
    }
}

impl From<MemoryError> for Failure {
    fn from(e: MemoryError) -> Failure {
        if e.is_internal() {
            return Failure::internal("memory", &e);
        }
        Failure {
            code: e.code(),
            field: e.field().map(str::to_string),
            detail: e.to_string(),
        }
    }
}

impl From<ToolError> for Failure {
    fn from(e: ToolError) -> Failure {
        if e.is_internal() {
            return Failure::internal("skill file", &e);
        }
        Failure {
            code: e.code(),
            field: e.field().map(str::to_string),
            detail: e.to_string(),
        }
    }
}

impl From<LibraryError> for Failure {
    fn from(e: LibraryError) -> Failure {
        match e {
            LibraryError::Io { .. } => Failure::internal("skills library", &e),
            LibraryError::NotFound(slug) => {
                Failure::new("not-found", format!("no installed skill named `{slug}`"))
            }
            // These name paths of the data directory: say what is wrong without them.
            LibraryError::OutsideRoot { .. } => Failure::new(
                e.code(),
                "the skill's files lead outside the skills directory (a symlink?)",
            ),
            LibraryError::PathTaken { .. } => Failure::new(
                e.code(),
                "something that is not a skill directory is in the way in the skills directory",
            ),
            LibraryError::IndexCorrupt { ref reason, .. } => Failure::new(
                e.code(),
                format!(
                    "the skills index is not readable ({reason}); a discovery scan rebuilds it"
                ),
            ),
            LibraryError::Invalid(crate::skills::SkillError::MissingFile { .. }) => {
                Failure::new(e.code(), "the skill's SKILL.md is missing")
            }
            e => Failure::new(e.code(), e.to_string()),
        }
    }
}

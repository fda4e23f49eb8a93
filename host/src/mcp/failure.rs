//! A tool call that did not succeed, as MCP clients see it: a tool result with
//! `isError: true` whose text starts with the problem `code` and whose structured
//! content is `{code, detail, status, field?}`: the REST API's problem for the same
//! error, as the error describes itself (`crate::described`). The session goes on;
//! nothing of the host's internals (paths, SQL) is in it, only in the log.

use http::StatusCode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::described::{Described, Description};
use crate::tools::ToolError;

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: &'static str,
    pub detail: String,
    /// The argument at fault, when one is.
    pub field: Option<String>,
    /// The status REST answers the same failure with.
    pub status: StatusCode,
}

impl Failure {
    /// An argument that is not acceptable (`invalid-field`).
    pub fn invalid(field: &str, reason: impl std::fmt::Display) -> Failure {
        Description::invalid_field(field, reason).into()
    }

    /// An argument the tool does not take (`unknown-field`).
    pub fn unknown_field(field: &str) -> Failure {
        Description::unknown_field(field).into()
    }

    /// The server's own failure (a task that panicked, a result that cannot be
    /// serialised): logged in full, answered generically.
    pub fn internal(context: &'static str, error: &dyn std::fmt::Display) -> Failure {
        tracing::error!("mcp {context}: {error}");
        Description::internal(context).into()
    }

    /// A refusal by a host tool's argument reader (`crate::tools::search_args`, ...)
    /// for an MCP tool that takes the host tool's arguments: the host tool's
    /// `args.<field>` is the call's own `<field>` here.
    pub fn from_host_args(e: ToolError) -> Failure {
        let mut failure = Failure::from(e);
        if let Some(field) = &failure.field
            && let Some(own) = field.strip_prefix("args.")
        {
            failure.detail = failure.detail.replacen(field.as_str(), own, 1);
            failure.field = Some(own.to_string());
        }
        failure
    }

    pub fn into_result(self) -> CallToolResult {
        let mut structured = json!({
            "code": self.code,
            "detail": self.detail,
            "status": self.status.as_u16(),
        });
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

/// A service's error as it describes itself, the host's own failures logged first.
impl<E: Described> From<E> for Failure {
    fn from(e: E) -> Failure {
        e.to_wire().into()
    }
}

impl From<Description> for Failure {
    fn from(d: Description) -> Failure {
        Failure {
            code: d.code,
            detail: d.detail,
            field: d.field,
            status: d.status,
        }
    }
}

//! How a service's error reaches a caller, said once beside each error type
//! ([`Described`]) and adapted by every surface: REST's problem documents
//! (`api::error::ApiError`) and MCP's tool errors (`mcp::Failure`) carry the same
//! status, code, field and detail, so no surface maps an error by hand and no two
//! disagree (`mcp/wire_tests.rs` walks every variant through both).
//!
//! The host's own failures (I/O, SQL, a panic) are [`Description::internal`]: the
//! caller gets a generic detail, the log gets the error in full, under the context the
//! description names.

use std::fmt::Display;

use http::StatusCode;

/// What a caller is told of an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// The HTTP status REST answers with; MCP reports it too.
    pub status: StatusCode,
    /// Stable machine-readable code: `invalid-field`, `not-found`, ...
    pub code: &'static str,
    /// The input field at fault, when one is.
    pub field: Option<String>,
    /// What the caller reads: never a path of the data directory, SQL or a backtrace.
    pub detail: String,
    /// For the host's own failures: where it failed (`Second Brain`, `skills library`,
    /// ...), logged with the error in full; the detail is then generic.
    pub logged_as: Option<&'static str>,
}

/// The detail of every internal failure.
pub const INTERNAL_DETAIL: &str = "an internal error occurred; the daemon log has the details";

/// The code of a request that found its database server unreachable.
pub const UNAVAILABLE_CODE: &str = "database-unavailable";
/// The detail of such a request.
pub const UNAVAILABLE_DETAIL: &str =
    "the database cannot be reached right now: nothing of this request was stored; retry shortly";
/// What `Retry-After` says to a request that found the database unreachable: a
/// restarted server takes seconds, and every daemon reconnects by itself.
pub const RETRY_UNAVAILABLE_SECS: u64 = 1;

/// The detail of a write that found the disk full.
pub const DISK_FULL_DETAIL: &str = "the disk holding the data directory is full: nothing of this request was stored, and what was stored before is intact; free some space and retry";

impl Description {
    /// A refusal the caller can read as it is.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Description {
        Description {
            status,
            code,
            field: None,
            detail: detail.into(),
            logged_as: None,
        }
    }

    /// 422 `invalid-field`: a value that is not acceptable, named in the detail too.
    pub fn invalid_field(field: impl Into<String>, reason: impl Display) -> Description {
        let field = field.into();
        Description {
            detail: format!("{field}: {reason}"),
            field: Some(field),
            ..Description::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-field", "")
        }
    }

    /// 400 `unknown-field`: an input the operation does not take.
    pub fn unknown_field(field: impl Into<String>) -> Description {
        let field = field.into();
        Description {
            detail: format!("{field}: unknown field"),
            field: Some(field),
            ..Description::new(StatusCode::BAD_REQUEST, "unknown-field", "")
        }
    }

    /// 404 `not-found`.
    pub fn not_found(detail: impl Into<String>) -> Description {
        Description::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    /// 500 `internal`: the host's own failure in `context`.
    pub fn internal(context: &'static str) -> Description {
        Description {
            logged_as: Some(context),
            ..Description::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                INTERNAL_DETAIL,
            )
        }
    }

    /// 507 `insufficient-storage`: a write in `context` found the disk full. Nothing of
    /// the request is stored (its transaction rolled back) and everything committed
    /// before is intact; reads go on working.
    pub fn disk_full(context: &'static str) -> Description {
        Description {
            logged_as: Some(context),
            ..Description::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient-storage",
                DISK_FULL_DETAIL,
            )
        }
    }

    /// 503 `database-unavailable`: the database server of `context` cannot be reached
    /// (down, restarting, or the connection was cut). Nothing of the request was
    /// committed; REST adds `Retry-After` ([`RETRY_UNAVAILABLE_SECS`]).
    pub fn unavailable(context: &'static str) -> Description {
        Description {
            logged_as: Some(context),
            ..Description::new(
                StatusCode::SERVICE_UNAVAILABLE,
                UNAVAILABLE_CODE,
                UNAVAILABLE_DETAIL,
            )
        }
    }

    /// The same, naming `field` as the one at fault.
    pub fn on(self, field: impl Into<String>) -> Description {
        Description {
            field: Some(field.into()),
            ..self
        }
    }

    /// Whether it is the host's own failure, whose details are only in the log.
    pub fn is_internal(&self) -> bool {
        self.logged_as.is_some()
    }
}

/// An error that says how it reaches a caller. Implemented in the error's own module.
pub trait Described: Display {
    fn describe(&self) -> Description;

    /// The description, the host's own failure logged in full first: what every
    /// surface sends.
    fn to_wire(&self) -> Description {
        let described = self.describe();
        if let Some(context) = described.logged_as {
            tracing::error!("{context}: {self}");
        }
        described
    }
}

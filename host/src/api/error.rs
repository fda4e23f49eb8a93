//! Every error the REST surface returns: an RFC 9457 problem document
//! (`application/problem+json`) with a stable `code` that clients can branch on.
//! Internal failures are logged in full and answered with a generic 500: a response
//! never carries a path, an SQL message or a backtrace.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::brain::store::StoreError;
use crate::memory::MemoryError;
use crate::memory::facts::FactsError;
use crate::skills::{LibraryError, RegistryError};

pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// A problem document (RFC 9457).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:engram:problem:<code>`.
    #[serde(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable machine-readable code: `invalid-json`, `unknown-field`, `invalid-field`,
    /// `unauthorized`, `not-found`, `brain-disabled`, `payload-too-large`, ...
    pub code: String,
    /// The input field that failed validation, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            detail: detail.into(),
            field: None,
        }
    }

    /// 400: the request cannot be read at all (malformed JSON, unknown fields).
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, detail)
    }

    /// 422: the request was read but a field's value is not acceptable.
    pub fn invalid_field(field: impl Into<String>, detail: impl Into<String>) -> ApiError {
        let field = field.into();
        let detail = detail.into();
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "invalid-field",
            detail: format!("{field}: {detail}"),
            field: Some(field),
        }
    }

    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid `Authorization: Bearer <token>` header is required (the agent's token is in {data_dir}/auth-token, the operator's in {data_dir}/operator-token), or a dashboard session with its secret",
        )
    }

    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            format!("the request body is over the {limit}-byte limit"),
        )
    }

    /// 507: a write failed because the disk holding the data directory is full. Nothing
    /// of the request is stored (its transaction rolled back) and everything committed
    /// before is intact; reads go on working.
    pub fn insufficient_storage(context: &str, error: &dyn std::fmt::Display) -> ApiError {
        tracing::error!("{context}: the disk is full: {error}");
        ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient-storage",
            "the disk holding the data directory is full: nothing of this request was stored, and what was stored before is intact; free some space and retry",
        )
    }

    /// 500 for a failure whose details belong in the log, not in the response.
    pub fn internal(context: &str, error: &dyn std::fmt::Display) -> ApiError {
        tracing::error!("{context}: {error}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "an internal error occurred; the daemon log has the details",
        )
    }

    pub fn problem(&self) -> Problem {
        Problem {
            problem_type: format!("urn:engram:problem:{}", self.code),
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            code: self.code.to_string(),
            field: self.field.clone(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(PROBLEM_CONTENT_TYPE),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `error` (a 429 or 503) with `Retry-After: secs`.
pub fn retry_later(error: ApiError, secs: u64) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// The agent asked for one of the person's acts: 403 `person-required`.
impl From<crate::credentials::PersonRequired> for ApiError {
    fn from(e: crate::credentials::PersonRequired) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            crate::credentials::PersonRequired::CODE,
            e.to_string(),
        )
    }
}

/// The agent named a user it may not act for: 403 `user-not-allowed`.
impl From<crate::credentials::UserNotAllowed> for ApiError {
    fn from(e: crate::credentials::UserNotAllowed) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            crate::credentials::UserNotAllowed::CODE,
            e.to_string(),
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::NotFound(id) => ApiError::not_found(format!("no memory or record `{id}`")),
            StoreError::NoConversation(id) => {
                ApiError::not_found(format!("no conversation `{id}`"))
            }
            StoreError::OtherUsers { .. } => ApiError::new(
                StatusCode::CONFLICT,
                "owned-by-another-user",
                format!(
                    "{}: choose another id",
                    crate::gate::policy::shown(&e.to_string())
                ),
            ),
            StoreError::Invalid { field, reason } => ApiError::invalid_field(field, reason),
            StoreError::SecretRefused(e) => ApiError {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                code: "secret-refused",
                detail: e.to_string(),
                field: Some("summary".to_string()),
            },
            StoreError::Import { line, reason } => ApiError {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                code: "invalid-import",
                detail: format!("import line {line}: {reason}; nothing was imported"),
                field: None,
            },
            StoreError::Dangling(reason) => ApiError::new(
                StatusCode::CONFLICT,
                "unknown-reference",
                format!("{reason}; nothing was imported"),
            ),
            StoreError::Sqlite(e) if is_disk_full(&e) => {
                ApiError::insufficient_storage("Second Brain", &e)
            }
            other => ApiError::internal("Second Brain", &other),
        }
    }
}

/// Memory: 409 `brain-disabled` for what needs the Second Brain; the stores' own
/// errors as below.
impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> ApiError {
        match e {
            MemoryError::BrainDisabled { .. } => {
                ApiError::new(StatusCode::CONFLICT, "brain-disabled", e.to_string())
            }
            MemoryError::Brain(e) => e.into(),
            MemoryError::Facts(e) => e.into(),
        }
    }
}

/// SQLite reports a write that ran out of space as SQLITE_FULL, whatever file it was
/// writing (database, WAL, journal).
fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

impl From<FactsError> for ApiError {
    fn from(e: FactsError) -> ApiError {
        match e {
            FactsError::NotFound(id) => ApiError::not_found(format!("no memory `{id}`")),
            FactsError::Invalid { field, reason } => ApiError::invalid_field(field, reason),
            FactsError::SecretRefused(e) => StoreError::SecretRefused(e).into(),
            FactsError::Io { ref source, .. }
                if source.kind() == std::io::ErrorKind::StorageFull =>
            {
                ApiError::insufficient_storage("fact store", &e)
            }
            other => ApiError::internal("fact store", &other),
        }
    }
}

/// Skills: an unknown skill is 404; a refused name or SKILL.md is 422 with the rule it
/// broke as the code; a state that prevents the change is 409. Messages never carry
/// the data directory's paths.
/// Registry and URL installs: refusals of the request are 422, a missing skill 404,
/// and whatever the far side did wrong (unreachable, tampered, unusable) 502.
impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> ApiError {
        let e = match e {
            RegistryError::Library(inner) => return ApiError::from(inner),
            other => other,
        };
        let code = e.code();
        let status = match &e {
            RegistryError::NotInRegistry { .. } => StatusCode::NOT_FOUND,
            RegistryError::Ambiguous { .. } | RegistryError::NotASkill { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            RegistryError::Fetch(fetch)
                if !fetch.is_unreachable() && fetch.code() != "http-status" =>
            {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            RegistryError::Internal(_) => return ApiError::internal("skills registry", &e),
            _ => StatusCode::BAD_GATEWAY,
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<LibraryError> for ApiError {
    fn from(e: LibraryError) -> ApiError {
        let code = e.code();
        let status = match &e {
            LibraryError::NotFound(slug) => {
                return ApiError::not_found(format!("no installed skill named `{slug}`"));
            }
            LibraryError::InvalidId { .. } => {
                return ApiError {
                    field: Some("name".into()),
                    ..ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, e.to_string())
                };
            }
            LibraryError::Invalid(_)
            | LibraryError::PackagePath { .. }
            | LibraryError::PackageTooLarge { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            LibraryError::Inactive(_)
            | LibraryError::SlugTaken { .. }
            | LibraryError::ToolsUnconfirmed { .. }
            | LibraryError::SkillChanged { .. } => StatusCode::CONFLICT,
            LibraryError::IndexCorrupt { reason, .. } => {
                return ApiError::new(
                    StatusCode::CONFLICT,
                    code,
                    format!(
                        "the skills index is not readable ({reason}); POST /api/skills/scan rebuilds it"
                    ),
                );
            }
            LibraryError::PathTaken { .. } => {
                return ApiError::new(
                    StatusCode::CONFLICT,
                    code,
                    "something that is not a skill directory is in the way in the skills directory",
                );
            }
            LibraryError::OutsideRoot { .. } => {
                return ApiError::new(
                    StatusCode::CONFLICT,
                    code,
                    "the skill's files lead outside the skills directory (a symlink?)",
                );
            }
            LibraryError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                return ApiError::insufficient_storage("skills library", &e);
            }
            LibraryError::Io { .. } => return ApiError::internal("skills library", &e),
        };
        // A missing SKILL.md names its directory: keep only the last part.
        let detail = match &e {
            LibraryError::Invalid(crate::skills::SkillError::MissingFile { dir }) => {
                let name = std::path::Path::new(dir)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("no SKILL.md in {name}")
            }
            _ => e.to_string(),
        };
        ApiError::new(status, code, detail)
    }
}

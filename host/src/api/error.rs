//! Every error the REST surface returns: an RFC 9457 problem document
//! (`application/problem+json`) with a stable `code` that clients can branch on.
//! Every service error arrives as it describes itself (`crate::described`), as MCP's
//! tool errors do. Internal failures are logged in full and answered with a generic
//! 500: a response never carries a path, an SQL message or a backtrace.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::described::{Described, Description};

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
        Description::new(status, code, detail).into()
    }

    /// 400: the request cannot be read at all (malformed JSON, unknown fields).
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, detail)
    }

    /// 422: the request was read but a field's value is not acceptable.
    pub fn invalid_field(field: impl Into<String>, detail: impl Into<String>) -> ApiError {
        Description::invalid_field(field, detail.into()).into()
    }

    pub fn not_found(detail: impl Into<String>) -> ApiError {
        Description::not_found(detail).into()
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

    /// 500 for a failure of the surface itself (a task that panicked, a response that
    /// cannot be serialised): logged in full, answered generically.
    pub fn internal(context: &'static str, error: &dyn std::fmt::Display) -> ApiError {
        tracing::error!("{context}: {error}");
        Description::internal(context).into()
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
        if self.code == crate::described::UNAVAILABLE_CODE {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(crate::described::RETRY_UNAVAILABLE_SECS),
            );
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

/// A service's error as it describes itself ([`Described`]), the host's own failures
/// logged first.
impl<E: Described> From<E> for ApiError {
    fn from(e: E) -> ApiError {
        e.to_wire().into()
    }
}

impl From<Description> for ApiError {
    fn from(d: Description) -> ApiError {
        ApiError {
            status: d.status,
            code: d.code,
            detail: d.detail,
            field: d.field,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_database_is_503_with_retry_after_and_no_detail_of_the_server() {
        let error = crate::sql::SqlError::Unavailable("server at 10.0.0.5 closed".into());
        let response = ApiError::from(crate::sql::describe(&error, "schedules")).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from(crate::described::RETRY_UNAVAILABLE_SECS))
        );
        let internal = ApiError::from(Description::internal("schedules")).into_response();
        assert!(internal.headers().get(header::RETRY_AFTER).is_none());
    }
}

//! Request extractors whose failures are problem documents with the right status:
//! malformed JSON and unknown fields are 400, a value of the wrong type or outside
//! its enum is 422 naming the field, a body over the limit is 413.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

use std::sync::Arc;

use super::error::ApiError;
use crate::app::App;
use crate::credentials::{AgentUsers, Principal};
use crate::strict_json::ShapeError;

/// Largest JSON body accepted (the import endpoint has its own, larger limit).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON body deserialised into `T` (which should deny unknown fields).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// The body as bytes, or 413 when it is over the router's body limit.
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(MAX_BODY_BYTES)
        } else {
            ApiError::bad_request("invalid-body", rejection.body_text())
        }
    })
}

/// Reads JSON in two steps so that syntax errors (400) and shape errors (400 for an
/// unknown field, 422 for a bad value) are told apart, with the failing field's path.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request("invalid-json", format!("malformed JSON: {e}")))?;
    // Every body is an object: serde would also read a struct from an array.
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "invalid-json",
            "the body must be a JSON object",
        ));
    }
    serde_path_to_error::deserialize(value).map_err(shape_error)
}

/// A query string deserialised into `T` (which should deny unknown parameters).
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(ApiQuery)
            .map_err(shape_error)
    }
}

fn shape_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> ApiError {
    match crate::strict_json::classify(e) {
        ShapeError::UnknownField(field) => ApiError {
            field: Some(field.clone()),
            ..ApiError::bad_request("unknown-field", format!("unknown field `{field}`"))
        },
        ShapeError::Invalid { field, message } => ApiError::invalid_field(field, message),
    }
}

/// The optional `user` query parameter every Second Brain call takes.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UserQuery {
    /// The user whose memories to use (default `default`).
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

/// Who calls (the [`Principal`] the auth middleware found) and whom they may act
/// for: every handler that takes `user` names it through [`Acting::user`].
pub struct Acting {
    pub principal: Principal,
    agent_users: AgentUsers,
}

impl Acting {
    /// The user a request acts for: `default` unless `user` names another, which must
    /// be 1 to 128 printable characters (`crate::memory::user_or_default`, else 422)
    /// and one the caller may act for (else 403 `user-not-allowed`).
    pub fn user(&self, user: Option<&str>) -> Result<String, ApiError> {
        let user = crate::memory::user_or_default(user)
            .map_err(|reason| ApiError::invalid_field("user", reason))?;
        self.principal.may_act_for(&user, &self.agent_users)?;
        Ok(user)
    }
}

impl FromRequestParts<Arc<App>> for Acting {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(ApiError::unauthorized)?;
        Ok(Acting {
            principal,
            agent_users: AgentUsers::from_config(
                &app.config.current(),
                crate::memory::DEFAULT_USER,
            ),
        })
    }
}

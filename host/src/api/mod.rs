//! The REST surface under `/api` (README, "The REST API"). Every route is registered
//! once, in [`routes`], together with its OpenAPI description, so the router and `GET
//! /api/openapi.json` cannot disagree. Every `/api` route needs the bearer token;
//! bodies are capped at 1 MiB (the import at 64 MiB); every failure is a problem
//! document. Handlers are thin: they parse, call a service off the async workers, and
//! shape the answer.

pub mod auth;
pub mod backup;
pub mod brain;
pub mod contract;
pub mod error;
pub mod events;
pub mod extract;
pub mod memory;
pub mod schedules;
pub mod skills;
pub mod turns;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use serde::Serialize;
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::app::App;
use auth::Auth;
use error::ApiError;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Engram",
        description = "Local memory-and-skills host for AI agents. Every route needs a credential (security schemes `bearer`: the agent's token in {data_dir}/auth-token or the operator's in {data_dir}/operator-token; or the dashboard's `session` cookie with its `sessionSecret` header). Errors are RFC 9457 problem documents (`application/problem+json`) with a stable `code`; each operation lists its statuses and codes."
    ),
    components(schemas(error::Problem))
)]
struct ApiDoc;

/// Every `/api` route with its description. Routes sharing a path share a `routes!`.
fn routes() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(openapi_json))
        .routes(routes!(events::events))
        .routes(routes!(brain::status))
        .routes(routes!(
            memory::list_memories,
            memory::add_memory,
            memory::clear_memories
        ))
        .routes(routes!(memory::search_memories))
        .routes(routes!(
            memory::get_memory,
            memory::edit_memory,
            memory::delete_memory
        ))
        .routes(routes!(memory::memory_history))
        .routes(routes!(memory::restore_memory))
        .routes(routes!(memory::dismissed))
        .routes(routes!(memory::forgotten))
        .routes(routes!(memory::redact))
        .routes(routes!(memory::export))
        .routes(routes!(memory::import).layer(DefaultBodyLimit::max(memory::MAX_IMPORT_BYTES)))
        .routes(
            routes!(memory::import_batch).layer(DefaultBodyLimit::max(memory::MAX_IMPORT_BYTES)),
        )
        .routes(routes!(backup::backup))
        .routes(routes!(brain::list_persons))
        .routes(routes!(brain::get_person))
        .routes(routes!(brain::person_memories))
        .routes(routes!(brain::graph))
        .routes(routes!(brain::add_message))
        .routes(routes!(brain::end_conversation))
        .routes(routes!(brain::delete_conversation))
        .routes(routes!(brain::consolidate))
        .routes(routes!(brain::pause_learning))
        .routes(routes!(brain::resume_learning))
        .routes(routes!(skills::list_skills))
        .routes(routes!(skills::scan_skills))
        .routes(routes!(skills::install_from_url))
        .routes(routes!(skills::install_from_registry))
        .routes(routes!(skills::get_skill, skills::remove_skill))
        .routes(routes!(skills::activate_skill))
        .routes(routes!(skills::deactivate_skill))
        .routes(routes!(skills::confirm_tools))
        .routes(routes!(turns::open_turn))
        .routes(routes!(turns::get_turn))
        .routes(routes!(turns::end_turn))
        .routes(routes!(turns::authorize))
        .routes(routes!(turns::approve))
        .routes(routes!(turns::run_tool))
        .routes(routes!(turns::run_script))
        .routes(routes!(turns::audit))
        .routes(routes!(
            schedules::list_schedules,
            schedules::create_schedule
        ))
        .routes(routes!(schedules::get_schedule, schedules::delete_schedule))
}

/// The OpenAPI document of every `/api` route, as `GET /api/openapi.json` serves it.
pub fn openapi() -> serde_json::Value {
    let mut doc = routes().into_openapi();
    contract::complete(&mut doc);
    contract::to_json(&doc)
}

/// The `/api` router: authenticated, size-limited, with problem-document fallbacks.
pub fn router(app: Arc<App>, auth: Auth, shutdown: events::Shutdown) -> Router {
    let (router, mut doc) = routes().split_for_parts();
    contract::complete(&mut doc);
    let doc = contract::to_json(&doc);
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(Extension(Arc::new(doc)))
        .layer(Extension(shutdown))
        .layer(axum::middleware::from_fn_with_state(
            auth,
            auth::require_auth,
        ))
        .with_state(app)
}

#[utoipa::path(get, path = "/api/openapi.json", tag = "meta",
    summary = "This document",
    responses((status = 200, content_type = "application/json", body = Object)))]
async fn openapi_json(
    Extension(doc): Extension<Arc<serde_json::Value>>,
) -> Json<serde_json::Value> {
    Json((*doc).clone())
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; GET /api/openapi.json lists them")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not take that method; GET /api/openapi.json lists them",
    )
}

/// A JSON response body, serialised straight into a `Vec` that starts at 4 KiB. axum's
/// `Json` writes through a `BytesMut` adapter that starts at 128 bytes and grows as it
/// goes: under the mixed REST load, serialising a search's page (about 10 KiB for ten
/// memories) took 8.3% of the daemon's CPU that way and 4.9% this way.
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(4096);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(e) => ApiError::internal("serialising a response", &e).into_response(),
        }
    }
}

/// Runs a service call off the async workers ([`crate::background::run`]): SQLite and
/// plugins must not stall the workers that serve other requests.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    crate::background::run(f)
        .await
        .map_err(|e| ApiError::internal("request task", &e))?
}

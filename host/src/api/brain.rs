//! `/api/brain/...` beyond memory items: status, persons, the graph, the conversation
//! feed that extraction learns from, consolidation and the learning switch.

use std::sync::Arc;

use super::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use engram_strategies::model::Role;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem};
use super::extract::{Acting, ApiJson, ApiQuery, UserQuery};
use super::memory::MemoryPage;
use crate::app::App;
use crate::embed::active::EncoderStatus;
use crate::memory::Consolidated;
use crate::memory::Counts;
use crate::memory::Ingested;
use crate::memory::{Graph, PersonDetail, PersonSummary};
use crate::runtime::World;
use crate::runtime::strategies::StrategyFailure;

#[derive(Debug, Serialize, ToSchema)]
pub struct BrainStatus {
    /// Whether the Second Brain (SQLite) serves memory.
    pub enabled: bool,
    /// `sqlite` (the Second Brain) or `facts` (the JSONL fallback store).
    pub backend: &'static str,
    /// Why the Second Brain is not in use, when it is not.
    pub error: Option<String>,
    /// `null` with the fact store, which never learns.
    pub learning_paused: Option<bool>,
    /// Live memories of the user.
    pub counts: Counts,
    pub profile_summary: Option<String>,
    pub active_summary: Option<String>,
    #[schema(format = DateTime)]
    pub last_consolidation_at: Option<String>,
    #[schema(format = DateTime)]
    pub next_consolidation_at: Option<String>,
    pub strategies: Vec<StrategyStatus>,
    /// Secrets redacted from what this user's writes brought, by kind (`memory.redact`).
    pub redacted: std::collections::BTreeMap<String, usize>,
    /// The sentence encoder in use.
    pub encoder: EncoderStatus,
}

/// The plugin configured for one strategy.
#[derive(Debug, Serialize, ToSchema)]
pub struct StrategyStatus {
    /// `extractor`, `resolver` or `consolidator`.
    pub role: String,
    /// `builtin:<name>` for the embedded defaults.
    pub plugin: String,
    /// `null` when the plugin cannot be loaded (the built-in one is used instead).
    pub version: Option<String>,
    /// First 12 hex digits of the component's sha256.
    pub hash: Option<String>,
    /// Why the configured plugin cannot be loaded, if so.
    pub error: Option<String>,
    /// The last time the configured plugin failed a call (trap, timeout, invalid
    /// result, ...) and the built-in strategy answered instead, with the reason;
    /// `null` when it has not failed since the daemon started.
    pub last_failure: Option<StrategyFailure>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PersonPage {
    pub items: Vec<PersonSummary>,
    pub next_cursor: Option<String>,
}

/// Body of `POST /api/brain/conversations/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user`, `assistant` or `system`.
    #[schema(schema_with = crate::memory::record::schema::role)]
    pub role: String,
    /// Up to 64 KiB (UTF-8).
    pub content: String,
    /// The speaker's name (1 to 100 characters, not only whitespace, no control characters), as a group
    /// chat's channel gives it: stored and searched with the text.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MessageRecorded {
    pub conversation_id: String,
    /// `null` when learning is paused: the message was not recorded.
    pub turn_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationDeleted {
    pub conversation_id: String,
    /// Messages deleted with it.
    pub messages: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Learning {
    pub learning_paused: bool,
}

#[utoipa::path(get, path = "/api/brain/status", tag = "brain",
    summary = "Brain status",
    params(UserQuery),
    responses((status = 200, body = BrainStatus)))]
pub async fn status(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<BrainStatus>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        let strategies = strategies(&app);
        if let Some(reason) = app.memory.disabled_reason() {
            return Ok(Json(BrainStatus {
                enabled: false,
                backend: "facts",
                error: Some(reason.to_owned()),
                learning_paused: None,
                counts: app.memory.counts(&user)?,
                profile_summary: None,
                active_summary: None,
                last_consolidation_at: None,
                next_consolidation_at: None,
                strategies,
                redacted: Default::default(),
                encoder: app.encoder.status(),
            }));
        }
        let brain = app.memory.brain()?;
        let summaries = brain.summaries(&user)?;
        let time = |t: Option<i64>| t.map(crate::time::rfc3339::format);
        Ok(Json(BrainStatus {
            enabled: true,
            backend: "sqlite",
            error: None,
            learning_paused: Some(brain.learning_paused(&user)?),
            counts: brain.counts(&user)?,
            profile_summary: summaries.profile_summary,
            active_summary: summaries.active_summary,
            last_consolidation_at: time(summaries.last_consolidation_at),
            next_consolidation_at: time(summaries.next_consolidation_at),
            strategies,
            redacted: brain.redaction_counts(&user)?,
            encoder: app.encoder.status(),
        }))
    })
    .await
}

fn strategies(app: &App) -> Vec<StrategyStatus> {
    [World::Extractor, World::Resolver, World::Consolidator]
        .into_iter()
        .map(|world| {
            let name = app.strategies.selected(world);
            let (version, hash, error) = match app.strategies.plugin(&name, world) {
                Ok(plugin) => (
                    Some(plugin.manifest.version.clone()),
                    Some(plugin.short_hash().to_string()),
                    None,
                ),
                Err(e) => (None, None, Some(e.to_string())),
            };
            StrategyStatus {
                role: world.to_string(),
                plugin: name,
                version,
                hash,
                error,
                last_failure: app.strategies.last_failure(world),
            }
        })
        .collect()
}

/// Query of `GET /api/brain/persons`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PersonsQuery {
    /// 1 to 500, default 50.
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[param(schema_with = super::contract::time_cursor)]
    pub cursor: Option<String>,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[utoipa::path(get, path = "/api/brain/persons", tag = "brain",
    summary = "List persons",
    description = "Most recently seen first, paged by cursor.",
    params(PersonsQuery),
    responses(
        (status = 200, body = PersonPage),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_persons(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<PersonsQuery>,
) -> Result<Json<PersonPage>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let limit = super::memory::page_limit(query.limit)?;
    blocking(move || {
        let page = app
            .memory
            .brain()?
            .persons_page(&user, limit, query.cursor.as_deref())?;
        Ok(Json(PersonPage {
            items: page.items,
            next_cursor: page.next_cursor,
        }))
    })
    .await
}

#[utoipa::path(get, path = "/api/brain/persons/{id}", tag = "brain",
    summary = "One person with facts and links",
    params(("id" = String, Path, description = "Person id (`per_...`)", pattern = r"^per_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = PersonDetail),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_person(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<PersonDetail>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || Ok(Json(app.memory.brain()?.person(&user, &id)?))).await
}

#[utoipa::path(get, path = "/api/brain/persons/{id}/memories", tag = "brain",
    summary = "Memories associated with a person",
    params(("id" = String, Path, description = "Person id", pattern = r"^per_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = MemoryPage),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn person_memories(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<MemoryPage>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        Ok(Json(MemoryPage {
            items: app.memory.brain()?.person_memories(&user, &id)?,
            next_cursor: None,
        }))
    })
    .await
}

#[utoipa::path(get, path = "/api/brain/graph", tag = "brain",
    summary = "Graph of memories, persons, goals and their relationships",
    params(UserQuery),
    responses(
        (status = 200, body = Graph),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn graph(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Graph>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || Ok(Json(app.memory.brain()?.graph(&user)?))).await
}

#[utoipa::path(post, path = "/api/brain/conversations/{id}/messages", tag = "brain",
    summary = "Record a message of a conversation",
    description = "The conversation is created by its first message. It is learned from when it ends (explicitly, or after the idle time), and its messages stay searchable in the transcript tier for `transcriptDays`. While learning is paused nothing is recorded (`turn_id` is null).",
    params(("id" = String, Path, description = "Conversation id chosen by the agent (1 to 128 characters)", min_length = 1, max_length = 128, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"), UserQuery),
    request_body = NewMessage,
    responses(
        (status = 201, body = MessageRecorded, links(
            ("EndConversation" = (operation_id = "end_conversation", parameters(("id" = "$response.body#/conversation_id")))),
            ("DeleteConversation" = (operation_id = "delete_conversation", parameters(("id" = "$response.body#/conversation_id"))))
        )),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add_message(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<NewMessage>,
) -> Result<(StatusCode, Json<MessageRecorded>), ApiError> {
    let user = acting.user(query.user.as_deref())?;
    if id.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            "id",
            "a conversation id must not contain control characters",
        ));
    }
    let role = Role::parse(&body.role).ok_or_else(|| {
        ApiError::invalid_field(
            "role",
            format!(
                "unknown role `{}`; expected one of: user, assistant, system",
                body.role
            ),
        )
    })?;
    blocking(move || {
        let turn_id = app.memory.brain()?.record_message(
            &user,
            &id,
            role,
            body.name.as_deref(),
            &body.content,
        )?;
        Ok((
            StatusCode::CREATED,
            Json(MessageRecorded {
                conversation_id: id,
                turn_id,
            }),
        ))
    })
    .await
}

#[utoipa::path(post, path = "/api/brain/conversations/{id}/end", tag = "brain",
    summary = "End a conversation and learn from it",
    description = "Runs the configured extractor and resolver (unless learning is paused) and reports each decision.",
    params(("id" = String, Path, description = "Conversation id", min_length = 1, max_length = 128, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"), UserQuery),
    responses(
        (status = 200, body = Ingested),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn end_conversation(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Ingested>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        Ok(Json(app.memory.brain()?.end_conversation(
            &user,
            &id,
            &app.strategies,
        )?))
    })
    .await
}

#[utoipa::path(delete, path = "/api/brain/conversations/{id}", tag = "brain",
    summary = "Delete a conversation and its transcript",
    description = "Removes the conversation and every message of it from the transcript tier and its search index. Memories learned from it stay.",
    params(("id" = String, Path, description = "Conversation id", min_length = 1, max_length = 128, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"), UserQuery),
    responses(
        (status = 200, body = ConversationDeleted),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_conversation(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ConversationDeleted>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        let messages = app.memory.brain()?.delete_conversation(&user, &id)?;
        Ok(Json(ConversationDeleted {
            conversation_id: id,
            messages,
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/brain/consolidate", tag = "brain",
    summary = "Consolidate now",
    description = "Prunes, then builds the profile and active summaries and reflections with the configured consolidator.",
    params(UserQuery),
    responses(
        (status = 200, body = Consolidated),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn consolidate(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Consolidated>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        Ok(Json(app.memory.consolidate(
            &user,
            &app.strategies,
            &app.config.current().memory,
        )?))
    })
    .await
}

async fn set_learning(
    app: Arc<App>,
    user: String,
    paused: bool,
) -> Result<Json<Learning>, ApiError> {
    blocking(move || {
        app.memory.brain()?.set_learning_paused(&user, paused)?;
        Ok(Json(Learning {
            learning_paused: paused,
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/brain/learning/pause", tag = "brain",
    summary = "Pause learning (conversations are no longer extracted)",
    params(UserQuery),
    responses(
        (status = 200, body = Learning),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn pause_learning(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Learning>, ApiError> {
    set_learning(app, acting.user(query.user.as_deref())?, true).await
}

#[utoipa::path(post, path = "/api/brain/learning/resume", tag = "brain",
    summary = "Resume learning",
    params(UserQuery),
    responses(
        (status = 200, body = Learning),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn resume_learning(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Learning>, ApiError> {
    set_learning(app, acting.user(query.user.as_deref())?, false).await
}

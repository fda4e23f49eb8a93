//! `/api/brain/memory...`: memory items (list, search, get, add, edit, delete, clear,
//! history), what the agent deleted (`/api/brain/dismissed`, restore), and their JSONL
//! export and import. With the Second Brain off, the fact store serves list, search,
//! get, add and delete; the rest answer 409 brain-disabled.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Json;
use engram_strategies::model::{MemoryType, Scope};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem, retry_later};
use super::extract::{Acting, ApiJson, ApiQuery, UserQuery};
use crate::app::App;
use crate::credentials::PersonAct;
use crate::gate::{Caller, GateError};
use crate::memory::Dismissed;
use crate::memory::RedactionReport;
use crate::memory::record::{ExportLine, MemoryRecord, schema, wire_opt};
use crate::memory::{ForgetEntry, Forgetter};
use crate::memory::{HistoryEntry, ListFilter};
use crate::memory::{MemoryEdit, NewMemory, Outcome, SearchHit, SearchScope, Stored};
use crate::turns::TurnError;

/// Page size when `limit` is not given, and the largest accepted.
pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 500;
/// Largest JSONL body `POST /api/brain/import` accepts: an export of 10k memories is
/// about 10 MB, so the general 1 MiB limit would make exports impossible to re-import.
pub const MAX_IMPORT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryPage {
    pub items: Vec<MemoryRecord>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchPage {
    /// Best match first, both tiers merged.
    pub items: Vec<SearchHit>,
    /// Always `null`: search returns one page of at most `limit` results.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryPage {
    /// Oldest change first.
    pub items: Vec<HistoryEntry>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Cleared {
    pub deleted: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Imported {
    pub imported: usize,
}

/// `scope` filter of the memory list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TierFilter {
    Conscious,
    Subconscious,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// `conscious` (durable + active) or `subconscious`; needs the Second Brain.
    #[param(inline)]
    pub scope: Option<TierFilter>,
    /// Only memories of this type (`goal`, `project`, ...).
    #[serde(default, rename = "type", with = "wire_opt")]
    #[param(rename = "type", schema_with = schema::memory_type)]
    pub memory_type: Option<MemoryType>,
    /// 1 to 500, default 50.
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[param(schema_with = super::contract::time_cursor)]
    pub cursor: Option<String>,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// The search text: 1 to 1000 characters, not only whitespace.
    #[param(
        min_length = 1,
        max_length = 1000,
        pattern = r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub q: String,
    /// 1 to 500, default 50.
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `memories` (default: both tiers of typed memories), `conversations` (the
    /// transcript: hits have `tier: transcript` and a `message`) or `all` (both,
    /// ranked together as retrieval ranks them).
    #[param(inline)]
    pub scope: Option<SearchScope>,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ClearQuery {
    /// Must be `true`: clearing deletes every memory of the user for good.
    #[serde(default)]
    pub confirm: bool,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

/// Body of `PUT /api/brain/memory/{id}`: only these fields may change; absent ones
/// are kept. The daemon reads it and the CLI's client sends it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditMemory {
    /// 1 to 1000 characters, not only whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 1000,
        pattern = r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub summary: Option<String>,
    #[serde(
        default,
        rename = "type",
        with = "wire_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(schema_with = schema::memory_type_or_null)]
    pub memory_type: Option<MemoryType>,
    /// 0.0 to 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: Option<f32>,
    /// 0.0 to 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub confidence: Option<f32>,
    #[serde(default, with = "wire_opt", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schema::scope_or_null)]
    pub scope: Option<Scope>,
}

/// A list's `limit`: 1 to 500, default 50 (README, "The REST API").
pub fn page_limit(limit: Option<usize>) -> Result<usize, ApiError> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::invalid_field(
            "limit",
            format!("{n} is outside 1..={MAX_LIMIT}"),
        )),
    }
}

#[utoipa::path(get, path = "/api/brain/memory", tag = "memory",
    summary = "List memory items",
    description = "Live memories, most recently updated first, paged by cursor.",
    params(ListQuery),
    responses(
        (status = 200, body = MemoryPage),
        (status = 409, description = "`scope` or `cursor` with the Second Brain off", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_memories(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<MemoryPage>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let limit = page_limit(query.limit)?;
    blocking(move || {
        let page = app.memory.list(
            &user,
            &ListFilter {
                conscious: query.scope.map(|s| s == TierFilter::Conscious),
                memory_type: query.memory_type,
                limit,
                cursor: query.cursor,
            },
        )?;
        Ok(Json(MemoryPage {
            items: page.items,
            next_cursor: page.next_cursor,
        }))
    })
    .await
}

#[utoipa::path(get, path = "/api/brain/memory/search", tag = "memory",
    summary = "Full-text search of memory items and the transcript",
    description = "Conscious and subconscious matches merged, best first; each result says its tier. `scope=conversations` searches the transcript instead (`tier: transcript`, with the message's provenance and snippet), `scope=all` both, ranked together.",
    params(SearchQuery),
    responses(
        (status = 200, body = SearchPage),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn search_memories(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Response, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let limit = page_limit(query.limit)?;
    if query.q.trim().is_empty() {
        return Err(ApiError::invalid_field("q", "must not be empty"));
    }
    if query.q.chars().count() > 1000 {
        return Err(ApiError::invalid_field("q", "longer than 1000 characters"));
    }
    // On the memory service's search lane, queued with every other search, without a
    // thread waiting for it; the answer is serialised there too, not on the async
    // workers.
    crate::memory::search_lane(move || {
        let items =
            app.memory
                .search_hits(&user, &query.q, limit, query.scope.unwrap_or_default())?;
        Ok(Json(SearchPage {
            items,
            next_cursor: None,
        })
        .into_response())
    })
    .await?
}

#[utoipa::path(get, path = "/api/brain/memory/{id}", tag = "memory",
    summary = "One memory item",
    description = "Superseded memories stay readable (with `superseded_by`). A dismissed one (the agent's delete waiting for the person, or a consolidation's dismissal) is 404 to the agent's token, as it is hidden from every other read; the person reads it with `dismissed_at`.",
    params(("id" = String, Path, description = "Memory id (`mem_...`)", pattern = r"^mem_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = MemoryRecord),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_memory(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<MemoryRecord>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let by_agent = !acting.principal.is_person();
    if app.memory.get_is_point_read() {
        // A lookup in the memory index takes microseconds, less than the hand-off to
        // the blocking pool and back (two thread wake-ups, which under load cost more
        // than the read: a GET by id went from 0.8 to 0.5 ms at p50 under the mixed load).
        return Ok(Json(visible(app.memory.get(&user, &id)?, by_agent)?));
    }
    blocking(move || Ok(Json(visible(app.memory.get(&user, &id)?, by_agent)?))).await
}

/// A dismissed memory (the agent's delete, waiting for the person; a consolidation's
/// dismissal) is hidden from the agent's token as from every other read of it: to the
/// agent that deleted it, it is gone (404). The person still reads it, with
/// `dismissed_at`, to decide whether to restore it.
fn visible(record: MemoryRecord, by_agent: bool) -> Result<MemoryRecord, ApiError> {
    if by_agent && record.dismissed_at.is_some() {
        return Err(ApiError::not_found(format!("no memory `{}`", record.id)));
    }
    Ok(record)
}

#[utoipa::path(post, path = "/api/brain/memory", tag = "memory",
    summary = "Add a memory manually",
    description = "Stored by the rules of what is true now: a memory that restates a live one reinforces it instead (200, `outcome: reinforced`); a new value of a single-valued attribute of the same holder (phone, employer, city, favourite X, ...) supersedes the live one (listed in `superseded`); a negation supersedes what it negates.",
    params(UserQuery),
    request_body = NewMemory,
    responses(
        (status = 200, description = "It restated a live memory, which was reinforced instead (`outcome: reinforced`)", body = Stored),
        (status = 201, description = "Stored (`outcome: added`, or `outvoted` when a live memory with higher confidence keeps the attribute); `superseded` lists the memories it replaced", body = Stored, links(
            ("GetMemory" = (operation_id = "get_memory", parameters(("id" = "$response.body#/id")))),
            ("EditMemory" = (operation_id = "edit_memory", parameters(("id" = "$response.body#/id")))),
            ("DeleteMemory" = (operation_id = "delete_memory", parameters(("id" = "$response.body#/id")))),
            ("MemoryHistory" = (operation_id = "memory_history", parameters(("id" = "$response.body#/id"))))
        )),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: nothing was stored", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add_memory(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(new): ApiJson<NewMemory>,
) -> Result<(StatusCode, Json<Stored>), ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        let stored = app.memory.add(&user, new)?;
        let status = match stored.outcome {
            Outcome::Reinforced => StatusCode::OK,
            Outcome::Added | Outcome::Outvoted => StatusCode::CREATED,
        };
        Ok((status, Json(stored)))
    })
    .await
}

#[utoipa::path(put, path = "/api/brain/memory/{id}", tag = "memory",
    summary = "Edit a memory item",
    description = "Changes summary, type, importance, confidence and scope; other fields are refused.",
    params(("id" = String, Path, description = "Memory id", pattern = r"^mem_[0-9a-z]{26}$"), UserQuery),
    request_body = EditMemory,
    responses(
        (status = 200, body = MemoryRecord),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: nothing was stored", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn edit_memory(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<EditMemory>,
) -> Result<Json<MemoryRecord>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let edit = MemoryEdit::from(body);
    blocking(move || Ok(Json(app.memory.brain()?.edit(&user, &id, edit)?))).await
}

/// A person edits every field but `validated` (REST and MCP `memory_update` alike).
impl From<EditMemory> for MemoryEdit {
    fn from(body: EditMemory) -> MemoryEdit {
        MemoryEdit {
            summary: body.summary,
            memory_type: body.memory_type,
            importance: body.importance,
            confidence: body.confidence,
            scope: body.scope,
            validated: None,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// `true` keeps the transcript text the memory was learned from (by default it is
    /// redacted with the memory).
    #[serde(default)]
    pub keep_messages: bool,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[utoipa::path(delete, path = "/api/brain/memory/{id}", tag = "memory",
    summary = "Delete a memory item",
    description = "The person's delete (a dashboard session, the operator token) removes the memory, its search entry and its person links for good (its history keeps only the event), and redacts the transcript text it was learned from and the sentences that state its value, unless `keep_messages=true`; the forget log (`GET /api/brain/forgotten`) records it, without the text. The agent's delete (its token) dismisses the memory instead: hidden from every read at once, and restorable by the person (`GET /api/brain/dismissed`, `POST /api/brain/memory/{id}/restore`) for `memory.agentDeletes.restoreDays` (default 7), after which it is forgotten for good as above. The agent may delete at most `memory.agentDeletes.perHour` (default 20) of a user's memories in any hour: past it, 429 `agent-delete-limit` with `Retry-After`. Each of the agent's deletes and each refusal is in the audit log (`GET /api/audit`, tool `(memory delete)`). With the fact store, every delete is final.",
    params(("id" = String, Path, description = "Memory id", pattern = r"^mem_[0-9a-z]{26}$"), DeleteQuery),
    responses(
        (status = 204, description = "Deleted (the person), or dismissed and restorable (the agent)"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`agent-delete-limit`: the agent deleted `memory.agentDeletes.perHour` of this user's memories in the last hour; `Retry-After` says in how many seconds it may delete again", body = Problem, content_type = "application/problem+json", headers(("Retry-After" = u64, description = "Seconds until the agent may delete again"))),
        (status = 507, description = "The disk is full: nothing was stored", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_memory(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> Result<StatusCode, Response> {
    let user = acting
        .user(query.user.as_deref())
        .map_err(IntoResponse::into_response)?;
    let keep_messages = query.keep_messages;
    let by_agent = !acting.principal.is_person();
    let deleted = blocking(move || {
        if by_agent {
            let caller = Caller::Agent { user: &user };
            return Ok(app
                .turns
                .forget_for_agent(caller, &id, keep_messages)
                .map(|_| ()));
        }
        app.memory
            .delete(&user, &id, keep_messages, Forgetter::Person)?;
        Ok(Ok(()))
    })
    .await
    .map_err(IntoResponse::into_response)?;
    deleted.map(|()| StatusCode::NO_CONTENT).map_err(|e| {
        let retry_after = match &e {
            TurnError::Gate(GateError::AgentDeleteLimit {
                retry_after_secs, ..
            }) => Some(*retry_after_secs),
            _ => None,
        };
        let error = ApiError::from(e);
        match retry_after {
            Some(secs) => retry_later(error, secs),
            None => error.into_response(),
        }
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DismissedList {
    /// Newest first.
    pub items: Vec<Dismissed>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DismissedQuery {
    /// 1 to 500, default 50.
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[param(schema_with = super::contract::time_cursor)]
    pub cursor: Option<String>,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[utoipa::path(get, path = "/api/brain/dismissed", tag = "memory",
    summary = "The memories the agent deleted, which the person can restore",
    description = "What the agent's deletes dismissed and the person can still restore, newest first: each memory as it was, when the agent deleted it, until when it can be restored (`memory.agentDeletes.restoreDays` after) and whether its messages are to be kept when it is forgotten. The person's only (a dashboard session, the operator token): the agent's token is 403 `person-required`, as these memories are hidden from it.",
    params(DismissedQuery),
    responses(
        (status = 200, body = DismissedList),
        (status = 403, description = "`person-required`: the agent's token cannot see what it deleted", body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn dismissed(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<DismissedQuery>,
) -> Result<Json<DismissedList>, ApiError> {
    acting.principal.require(PersonAct::SeeDismissed)?;
    let user = acting.user(query.user.as_deref())?;
    let limit = page_limit(query.limit)?;
    blocking(move || {
        let restore_ms = app.config.current().memory.agent_deletes.restore_ms();
        let page = app.memory.brain()?.agent_dismissed(
            &user,
            restore_ms,
            limit,
            query.cursor.as_deref(),
        )?;
        Ok(Json(DismissedList {
            items: page.items,
            next_cursor: page.next_cursor,
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/brain/memory/{id}/restore", tag = "memory",
    summary = "Restore a memory the agent deleted",
    description = "Undoes the agent's delete: the memory is live again as it was (settled against what was written since, as any write is), and the messages it was learned from are kept. Only a memory listed by `GET /api/brain/dismissed`: any other is 404. The person's only (a dashboard session, the operator token): the agent's token is 403 `person-required`.",
    params(("id" = String, Path, description = "Memory id", pattern = r"^mem_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, description = "The memory, restored", body = MemoryRecord),
        (status = 403, description = "`person-required`: only the person restores", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not-found`: no memory of the user the agent deleted has this id (never deleted by the agent, restored already, or forgotten for good)", body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: nothing was stored", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn restore_memory(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<MemoryRecord>, ApiError> {
    acting.principal.require(PersonAct::Restore)?;
    let user = acting.user(query.user.as_deref())?;
    blocking(move || Ok(Json(app.memory.brain()?.restore(&user, &id)?))).await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ForgetPage {
    /// Newest first.
    pub items: Vec<ForgetEntry>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ForgottenQuery {
    /// 1 to 500, default 50.
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[utoipa::path(get, path = "/api/brain/forgotten", tag = "memory",
    summary = "What was forgotten, when and by whom",
    description = "The forget log: each deletion of a memory, each request to forget made in a conversation, each redaction pass; the ids of the memories deleted and of the messages redacted, never their text.",
    params(ForgottenQuery),
    responses(
        (status = 200, body = ForgetPage),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn forgotten(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<ForgottenQuery>,
) -> Result<Json<ForgetPage>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let limit = page_limit(query.limit)?;
    blocking(move || {
        Ok(Json(ForgetPage {
            items: app.memory.brain()?.forget_log(&user, limit)?,
            next_cursor: None,
        }))
    })
    .await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RedactQuery {
    /// `true` reports what would be redacted and changes nothing.
    #[serde(default)]
    pub dry_run: bool,
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

#[utoipa::path(post, path = "/api/brain/redact", tag = "memory",
    summary = "Redact the secrets already stored",
    description = "Applies the secret detector (`memory.redact`) to everything the user has stored: messages, memories (a memory that is nothing but a secret is deleted) and the history's copies. `dry_run=true` only reports. The report names ids and kinds, never the secrets.",
    params(RedactQuery),
    responses(
        (status = 200, body = RedactionReport),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: nothing was changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn redact(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<RedactQuery>,
) -> Result<Json<RedactionReport>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        Ok(Json(
            app.memory.brain()?.redact_stored(&user, query.dry_run)?,
        ))
    })
    .await
}

#[utoipa::path(delete, path = "/api/brain/memory", tag = "memory",
    summary = "Clear all memories of the user",
    description = "Deletes every memory and person of the user; needs `confirm=true`, and the person's authority (a dashboard session or the operator token): the agent's token is 403 `person-required`.",
    params(ClearQuery),
    responses(
        (status = 200, body = Cleared),
        (status = 400, description = "`confirm=true` missing", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`person-required`: the agent's token cannot clear everything", body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn clear_memories(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<ClearQuery>,
) -> Result<Json<Cleared>, ApiError> {
    acting.principal.require(PersonAct::ClearAll)?;
    let user = acting.user(query.user.as_deref())?;
    if !query.confirm {
        return Err(ApiError::bad_request(
            "confirmation-required",
            "clearing deletes every memory of the user for good; repeat with `confirm=true`",
        ));
    }
    blocking(move || {
        Ok(Json(Cleared {
            deleted: app.memory.brain()?.clear(&user)?,
        }))
    })
    .await
}

#[utoipa::path(get, path = "/api/brain/memory/{id}/history", tag = "memory",
    summary = "Every change to a memory item",
    params(("id" = String, Path, description = "Memory id", pattern = r"^mem_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = HistoryPage),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn memory_history(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<HistoryPage>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let by_agent = !acting.principal.is_person();
    blocking(move || {
        if by_agent && let Ok(record) = app.memory.get(&user, &id) {
            visible(record, by_agent)?;
        }
        let items = app.memory.brain()?.history(&user, &id)?;
        if items.is_empty() {
            return Err(ApiError::not_found(format!("no memory `{id}`")));
        }
        Ok(Json(HistoryPage {
            items,
            next_cursor: None,
        }))
    })
    .await
}

pub const JSONL: &str = "application/x-ndjson";

#[utoipa::path(get, path = "/api/brain/export", tag = "memory",
    summary = "Export the user's memories, persons and links as JSONL",
    description = "One JSON object per line, tagged by `kind` (memory, person, person_link); ids and timestamps included, so an import restores them exactly.",
    params(UserQuery),
    responses(
        (status = 200, content_type = "application/x-ndjson", body = Vec<ExportLine>, description = "JSON lines: one record per line (given as an array, as the import's body is)"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let body = blocking(move || {
        let mut out = Vec::new();
        app.memory.brain()?.export(&user, &mut out)?;
        Ok(out)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, JSONL)], body))
}

#[utoipa::path(post, path = "/api/brain/import", tag = "memory",
    summary = "Import a JSONL export",
    description = "All or nothing: a bad line rejects the whole import and changes nothing. Accepts up to 64 MiB. The person's only (a dashboard session, the operator token): a record replaces the memory with its id, so the agent's token is 403 `person-required` (its writes go through `POST /api/brain/memory` and `POST /api/brain/import/batch`, which add).",
    params(UserQuery),
    request_body(
        content = Option<Vec<ExportLine>>,
        content_type = "application/x-ndjson",
        description = "JSON lines: one export record per line, in the order of the array (the document gives the lines as an array because OpenAPI 3.1 has no schema for a stream of JSON values). An empty body imports nothing.",
    ),
    responses(
        (status = 200, body = Imported),
        (status = 403, description = "`person-required`: the agent's token cannot replace memories by id", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`brain-disabled`; `unknown-reference`: a record names another (`superseded_by`, a link's memory or person, a message's conversation) that neither the import nor the store has; `owned-by-another-user`", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: nothing was stored", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Imported>, ApiError> {
    acting.principal.require(PersonAct::Import)?;
    let user = acting.user(query.user.as_deref())?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(MAX_IMPORT_BYTES)
        } else {
            ApiError::bad_request("invalid-body", rejection.body_text())
        }
    })?;
    blocking(move || {
        let imported = app.memory.brain()?.import(&user, &mut &body[..])?;
        Ok(Json(Imported { imported }))
    })
    .await
}

#[utoipa::path(post, path = "/api/brain/import/batch", tag = "memory",
    summary = "Import conversations and memories from another tool",
    description = "What `engram memory import --format chatgpt|claude|mem0|markdown` sends once it has read the other tool's export: conversations are replayed (their messages recorded with their original times, the title as a first system message) and learned from as of their last message; memories are added as `POST /api/brain/memory` adds them. Each key is imported once per user: a second import of the same batch adds nothing (`skipped`). The batch is checked whole first: a bad entry is 422 `invalid-import` naming it, and nothing is written. Messages over 64 KiB are refused. Accepts up to 64 MiB.",
    params(UserQuery),
    request_body = crate::memory::import::Batch,
    responses(
        (status = 200, body = crate::memory::import::ImportReport),
        (status = 409, description = "`brain-disabled` (conversations need the Second Brain); `learning-paused`", body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import_batch(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(batch): ApiJson<crate::memory::import::Batch>,
) -> Result<Json<crate::memory::import::ImportReport>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || {
        let now = crate::time::Clock::now_ms(&crate::time::SystemClock);
        let ledger = match app.storage.database_url() {
            None => crate::memory::import::Ledger::open(&app.data.imports_file()),
            Some(url) => crate::memory::import::Ledger::postgres(url),
        }
        .map_err(crate::memory::import::ApplyError::from)?;
        let report = crate::memory::import::apply(
            &app.memory,
            &app.strategies,
            &ledger,
            &user,
            &batch,
            now,
        )?;
        Ok(Json(report))
    })
    .await
}

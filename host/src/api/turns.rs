//! `/api/turns...` and `/api/audit`: one message of a conversation and the agent's
//! work on it (DESIGN sections 5 and 6, skills spec section 4).
//!
//! `POST /api/turns` routes the message to a skill (explicit `/slug ...` first, then
//! the router over the active skills), opens a turn in the gate with the invoked
//! skill's `allowed-tools` as its grant, and answers with everything the agent needs
//! for the message: the memory block, the skills catalog, the invoked skill's body and
//! files, and what each of its tools is granted. Every tool call of the turn is then
//! checked against the gate: `authorize` for the agent's own tools (it runs them
//! itself), `tools/{name}` for the host's tools (checked, then run by
//! [`crate::tools`], as a script's `tools.invoke` is). `approvals` is the operator's
//! yes to a tool the gate asks about, for the turn only. `end` closes the turn and
//! revokes its grants and approvals; a turn not ended expires
//! (`tools.turnTtlMinutes`).
//! `scripts/{name}` runs a script of the invoked skill (and of no other): invoking the
//! skill is the permission, so the run itself is no gate decision, but each of the
//! script's `tools.invoke` calls is one, under the turn's grants.
//!
//! Answers of `tools/{name}` when the gate does not allow the call: 403 with the
//! gate's reason code (`operator-deny`, `not-in-allowed-tools`, `unknown-tool`, ...),
//! 403 `approval-required` when the answer is ask (the agent asks its user, and
//! `POST /api/turns/{id}/approvals {tool}` approves it for the turn), 404
//! `unknown-turn`, 409 `turn-ended` or `turn-expired`. `authorize` always answers 200
//! with the decision. Every decision of both, and every approval, is written to the
//! audit log (`GET /api/audit`).

use std::path::Path as FsPath;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use engram_strategies::model::Role;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem};
use super::extract::{ApiJson, ApiQuery, user_id};
use crate::app::App;
use crate::brain::ingest::MAX_MESSAGE_BYTES;
use crate::brain::retrieve::Retrieval;
use crate::gate::{
    AuditEntry, AuditPage, AuditQuery, Decision, GateError, NewTurn, ReasonCode, SkillGrant, Turn,
    TurnState, Verdict, policy,
};
use crate::net::FetchError;
use crate::routing::Reason;
use crate::skills::{CatalogEntry, InvokedSkill};
use crate::tools::{HostTool, ToolError};

/// Skills listed in a turn's catalog at most (the router's candidates first).
pub const MAX_CATALOG: usize = 50;
const MAX_TOOL_NAME: usize = 128;

// ---- request and answer shapes ----------------------------------------------------

/// `POST /api/turns`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenTurn {
    /// The user's message (at most 64 KiB). `/slug rest` invokes the skill `slug`.
    pub message: String,
    /// When given, the message is recorded in this conversation of the Second Brain,
    /// and the reply given at `end` too.
    pub conversation_id: Option<String>,
    /// Default `default`.
    pub user: Option<String>,
    /// Where the message came from (`telegram`, `cli`, ...), for the audit log.
    pub channel: Option<String>,
}

/// `POST /api/turns` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnOpened {
    pub turn_id: String,
    pub user: String,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: i64,
    /// The memories to put before the message, one per line (empty when nothing
    /// relevant is known, and always with the fact store).
    pub memory_block: String,
    pub memories: Vec<TurnMemory>,
    /// Active skills (slug and one-line summary), the router's candidates first, at
    /// most 50.
    pub catalog: Vec<CatalogItem>,
    /// Active skills in all.
    pub catalog_total: usize,
    /// The skill this message invokes, if any.
    pub invoked: Option<InvokedView>,
    /// The invoked skill's `allowed-tools`, each with what the gate answers for it in
    /// this turn now (empty without a skill).
    pub grants: Vec<GrantView>,
    /// The id of the recorded message, when a conversation was given and the Second
    /// Brain is in use.
    pub message_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TurnMemory {
    pub id: String,
    pub line: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogItem {
    pub slug: String,
    pub summary: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvokedView {
    pub slug: String,
    /// The skill's id (`category/slug` or `slug`).
    pub id: String,
    pub name: String,
    /// The SKILL.md instructions, as written.
    pub body: String,
    /// The skill's directory, relative to the skills directory.
    pub dir: String,
    /// Files under `scripts/`, relative to `dir` (read them with `read_skill_file`).
    pub scripts: Vec<String>,
    /// Files under `references/`, relative to `dir`.
    pub references: Vec<String>,
    /// `explicit` (`/slug`), `intent` or `score`.
    pub reason: String,
    /// The router's confidence (`null` for an explicit invocation).
    pub confidence: Option<f32>,
    /// The message without the `/slug` of an explicit invocation.
    pub message: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GrantView {
    pub tool: String,
    pub decision: Verdict,
    pub code: ReasonCode,
}

/// `GET /api/turns/{id}` and the answer of `end`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnView {
    pub turn: Turn,
    pub state: TurnState,
    /// The turn's decisions, newest first (at most 500).
    pub decisions: Vec<AuditEntry>,
    /// `end` only: the id of the recorded reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
}

/// `POST /api/turns/{id}/end`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndTurn {
    /// The agent's reply, recorded (role assistant) in the turn's conversation.
    pub reply: Option<String>,
}

/// `POST /api/turns/{id}/authorize`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Authorize {
    pub tool: String,
    /// The call's arguments; only a bounded summary is kept in the audit log.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub args: Value,
}

/// `POST /api/turns/{id}/approvals`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    /// The tool the user agreed to, as the gate names it (`fetch_url`, `send_message`,
    /// ...).
    pub tool: String,
}

/// `POST /api/turns/{id}/approvals` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalGranted {
    pub turn_id: String,
    pub tool: String,
    /// The recorded approval (decision `allow`, code `approved`).
    pub decision: Decision,
    /// When the tool was first approved in this turn.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub approved_at: i64,
    /// The approval ends with the turn: when it is ended, or at this time.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: i64,
}

/// `POST /api/turns/{id}/tools/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// `save_memory {type, summary, detail?}`, `search_memory {q, limit?}`,
    /// `fetch_url {url}`, `read_skill_file {path}`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub args: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolResult {
    pub tool: String,
    pub decision: Decision,
    /// What the tool returned (its shape depends on the tool).
    #[schema(value_type = Object)]
    pub result: Value,
}

/// `POST /api/turns/{id}/scripts/{name}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The script's arguments, any JSON (absent or `null`: `{}`; at most 256 KiB as
    /// JSON), given to it as JSON text; `word-stats` takes `{file, top?}`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub args: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptResult {
    /// The invoked skill's slug.
    pub skill: String,
    pub script: String,
    /// What the script returned: parsed when it is JSON, else the text as a string.
    #[schema(value_type = Object)]
    pub output: Value,
    /// How long the run took (loading included).
    pub ms: u64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    /// 1 to 500 (default 50).
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Only this turn's decisions.
    pub turn: Option<String>,
    /// Only this user's decisions.
    pub user: Option<String>,
}

// ---- errors -------------------------------------------------------------------------

impl From<GateError> for ApiError {
    fn from(e: GateError) -> ApiError {
        match e {
            GateError::UnknownTurn(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown-turn",
                format!("no turn `{}`", policy::shown(&id)),
            ),
            GateError::TurnEnded(_) => {
                ApiError::new(StatusCode::CONFLICT, "turn-ended", e.to_string())
            }
            GateError::TurnExpired(_) => {
                ApiError::new(StatusCode::CONFLICT, "turn-expired", e.to_string())
            }
            GateError::UnknownTool(_) => ApiError {
                field: Some("tool".into()),
                ..ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "unknown-tool",
                    e.to_string(),
                )
            },
            GateError::NotApprovable { code, .. } => {
                ApiError::new(StatusCode::CONFLICT, code.as_str(), e.to_string())
            }
            GateError::Invalid { field, reason } => ApiError::invalid_field(field, reason),
            GateError::TooManyTurns { .. } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-turns",
                e.to_string(),
            ),
            other => ApiError::internal("tool gate", &other),
        }
    }
}

/// A host tool's failure: a bad argument is 422 naming `args.<field>` (400 for an
/// unknown one), a refused address or URL 422 and an unreachable or failing server
/// 502, both with the fetcher's code; the host's own failures are a 500.
impl From<ToolError> for ApiError {
    fn from(e: ToolError) -> ApiError {
        let detail = e.to_string();
        match e {
            ToolError::UnknownArg { field } => ApiError {
                field: Some(field),
                ..ApiError::bad_request("unknown-field", detail)
            },
            ToolError::InvalidArg { field, reason } => ApiError::invalid_field(field, reason),
            ToolError::NotAHostTool(name) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "not-a-host-tool",
                format!(
                    "`{name}` is not a host tool: the agent runs it itself after POST /api/turns/{{id}}/authorize; host tools are {}",
                    HostTool::names()
                ),
            ),
            ToolError::NoSkillInvoked => {
                ApiError::new(StatusCode::CONFLICT, "no-skill-invoked", detail)
            }
            ToolError::NoSuchFile(_) => ApiError::not_found(detail),
            ToolError::OutsideSkillDir(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "outside-skill-dir", detail)
            }
            ToolError::Fetch(fetch) => {
                let status = match &fetch {
                    FetchError::BadUrl { .. }
                    | FetchError::Scheme { .. }
                    | FetchError::PrivateAddress { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                    _ => StatusCode::BAD_GATEWAY,
                };
                ApiError::new(status, fetch.code(), detail)
            }
            ToolError::Store(e) => e.into(),
            ToolError::Facts(e) => e.into(),
            ToolError::Library(e) => e.into(),
            ToolError::NoRuntime(_) | ToolError::NoTimeLeft(_) | ToolError::Io { .. } => {
                ApiError::internal("host tool", &detail)
            }
        }
    }
}

/// A decision that does not allow the call, as the tools route answers it. An ask
/// says how to get past it: the user's approval, through the approvals route.
fn refusal(decision: &Decision, turn_id: &str, tool: &str) -> ApiError {
    let (status, code) = match (decision.verdict, decision.code) {
        (_, ReasonCode::UnknownTurn) => (StatusCode::NOT_FOUND, "unknown-turn"),
        (_, ReasonCode::TurnEnded) => (StatusCode::CONFLICT, "turn-ended"),
        (_, ReasonCode::TurnExpired) => (StatusCode::CONFLICT, "turn-expired"),
        (Verdict::Ask, _) => {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "approval-required",
                format!(
                    "{}: ask the user; once they agree, POST /api/turns/{}/approvals {{\"tool\": \"{}\"}} approves it for this turn, then call again",
                    decision.reason,
                    policy::shown(turn_id),
                    policy::shown(tool)
                ),
            );
        }
        (_, code) => (StatusCode::FORBIDDEN, code.as_str()),
    };
    ApiError::new(status, code, decision.reason.clone())
}

fn check_text(field: &str, text: &str, max_bytes: usize) -> Result<(), ApiError> {
    if text.len() > max_bytes {
        return Err(ApiError::invalid_field(
            field,
            format!("{} bytes, over the {max_bytes}-byte limit", text.len()),
        ));
    }
    Ok(())
}

// ---- handlers -----------------------------------------------------------------------

#[utoipa::path(post, path = "/api/turns", tag = "turns",
    summary = "Open a turn for a message",
    description = "Routes the message to a skill (`/slug ...` or by the router), opens a turn whose grant is the invoked skill's `allowed-tools`, and returns the memory block, the skills catalog, the invoked skill and its grants. With `conversation_id`, the message is recorded in that conversation.",
    request_body = OpenTurn,
    responses(
        (status = 201, body = TurnOpened),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 503, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn open_turn(
    State(app): State<Arc<App>>,
    ApiJson(body): ApiJson<OpenTurn>,
) -> Result<(StatusCode, Json<TurnOpened>), ApiError> {
    let user = user_id(body.user.as_deref())?;
    if body.message.trim().is_empty() {
        return Err(ApiError::invalid_field("message", "must not be empty"));
    }
    check_text("message", &body.message, MAX_MESSAGE_BYTES)?;
    blocking(move || open_turn_blocking(&app, user, body, None))
        .await
        .map(|opened| (StatusCode::CREATED, Json(opened)))
}

/// Opens a turn for a scheduled run (skills spec section 4, "Scheduled"): the same
/// path as `POST /api/turns`, with the schedule's skill invoked (explicitly, whatever
/// the router would say), its input as the message and channel `schedule`. A skill
/// that is not installed or not active is an error (`not-found`, `inactive`).
pub fn open_scheduled_turn(
    app: &App,
    user: &str,
    skill: &str,
    input: &str,
) -> Result<TurnOpened, ApiError> {
    let body = OpenTurn {
        message: input.to_string(),
        conversation_id: None,
        user: Some(user.to_string()),
        channel: Some("schedule".to_string()),
    };
    open_turn_blocking(app, user.to_string(), body, Some(skill))
}

/// `skill`: invoke this skill instead of routing the message.
fn open_turn_blocking(
    app: &App,
    user: String,
    body: OpenTurn,
    skill: Option<&str>,
) -> Result<TurnOpened, ApiError> {
    // A skills directory that cannot be read must not stop the conversation: the
    // message is then handled without skills.
    let entries: Vec<CatalogEntry> = match app.skills.catalog() {
        Ok((entries, _problems)) => entries.into_iter().filter(|e| e.active).collect(),
        Err(e) => {
            tracing::warn!("turn without skills: the catalog cannot be read: {e}");
            Vec::new()
        }
    };
    let router = app.router.for_catalog(&entries);
    let routing = match skill {
        Some(slug) => crate::routing::Routing {
            invoked: Some(crate::routing::Invocation {
                slug: slug.to_string(),
                reason: Reason::Explicit,
                confidence: f32::INFINITY,
                message: body.message.clone(),
            }),
            candidates: Vec::new(),
        },
        None => router.route(&body.message),
    };
    let invoked = match &routing.invoked {
        Some(invocation) => Some((invocation.clone(), app.skills.invoke(&invocation.slug)?)),
        None => None,
    };

    let retrieval = match app.memory.brain() {
        Some(brain) => brain.retrieve(&user, &body.message)?,
        None => Retrieval::default(),
    };

    let grant = invoked
        .as_ref()
        .map(|(_, skill)| SkillGrant::from_invoked(skill));
    let turn = app.gate.open_turn(NewTurn {
        user: user.clone(),
        conversation_id: body.conversation_id.clone(),
        channel: body.channel.clone(),
        skill: grant.clone(),
    })?;

    let message_id = match (&body.conversation_id, app.memory.brain()) {
        (Some(conversation), Some(brain)) => {
            match brain.record_message(&user, conversation, Role::User, &body.message) {
                Ok(id) => Some(id),
                Err(e) => {
                    let _ = app.gate.end_turn(&turn.id);
                    return Err(e.into());
                }
            }
        }
        _ => None,
    };

    let policy = app.gate.policy();
    let grants = grant
        .as_ref()
        .map(|grant| {
            grant
                .allowed_tools
                .iter()
                .map(|tool| {
                    // A new turn has no approvals yet.
                    let decision = policy::decide(&policy, Some(grant), false, tool);
                    GrantView {
                        tool: tool.clone(),
                        decision: decision.verdict,
                        code: decision.code,
                    }
                })
                .collect()
        })
        .unwrap_or_default();

    // The router's candidates first, then the rest by slug.
    let mut order: Vec<&CatalogEntry> = Vec::with_capacity(entries.len());
    for candidate in &routing.candidates {
        if let Some(entry) = entries.iter().find(|e| e.slug == candidate.slug) {
            order.push(entry);
        }
    }
    let mut rest: Vec<&CatalogEntry> = entries
        .iter()
        .filter(|e| !routing.candidates.iter().any(|c| c.slug == e.slug))
        .collect();
    rest.sort_by(|a, b| a.slug.cmp(&b.slug));
    order.extend(rest);
    let catalog = order
        .into_iter()
        .take(MAX_CATALOG)
        .map(|e| CatalogItem {
            slug: e.slug.clone(),
            summary: e.summary.clone(),
        })
        .collect();

    Ok(TurnOpened {
        turn_id: turn.id,
        user,
        expires_at: turn.expires_at,
        memory_block: retrieval.block,
        memories: retrieval
            .memories
            .into_iter()
            .map(|m| TurnMemory {
                id: m.record.id,
                line: m.line,
            })
            .collect(),
        catalog,
        catalog_total: entries.len(),
        invoked: invoked.map(|(invocation, skill)| invoked_view(app, invocation, skill)),
        grants,
        message_id,
    })
}

fn invoked_view(
    app: &App,
    invocation: crate::routing::Invocation,
    skill: InvokedSkill,
) -> InvokedView {
    let slug = skill.id.slug().to_string();
    let dir = skill
        .dir
        .strip_prefix(app.skills.root())
        .unwrap_or(FsPath::new(&slug))
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let under = |prefix: &str| {
        skill
            .resources
            .iter()
            .filter(|r| r.starts_with(prefix))
            .cloned()
            .collect::<Vec<_>>()
    };
    InvokedView {
        slug,
        id: skill.id.to_string(),
        name: skill.name.clone(),
        body: skill.body.clone(),
        scripts: under("scripts/"),
        references: under("references/"),
        dir,
        reason: match invocation.reason {
            Reason::Explicit => "explicit",
            Reason::Intent => "intent",
            Reason::Score => "score",
        }
        .to_string(),
        confidence: invocation
            .confidence
            .is_finite()
            .then_some(invocation.confidence),
        message: invocation.message,
    }
}

fn turn_view(app: &App, id: &str, reply_id: Option<String>) -> Result<TurnView, ApiError> {
    let (turn, state) = app
        .gate
        .turn(id)
        .ok_or_else(|| GateError::UnknownTurn(id.to_string()))?;
    let decisions = app
        .gate
        .audit()
        .list(&AuditQuery {
            limit: crate::gate::audit::MAX_PAGE,
            turn_id: Some(turn.id.clone()),
            ..AuditQuery::default()
        })?
        .items;
    Ok(TurnView {
        turn,
        state,
        decisions,
        reply_id,
    })
}

#[utoipa::path(get, path = "/api/turns/{id}", tag = "turns",
    summary = "A turn, its state and its decisions",
    params(("id" = String, Path, description = "Turn id (`turn_...`)")),
    responses(
        (status = 200, body = TurnView),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_turn(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<TurnView>, ApiError> {
    blocking(move || turn_view(&app, &id, None).map(Json)).await
}

#[utoipa::path(post, path = "/api/turns/{id}/end", tag = "turns",
    summary = "End a turn",
    description = "Revokes the turn's grants and records `reply` (role assistant) in the turn's conversation. Ending a turn twice is 409 `turn-ended`.",
    params(("id" = String, Path, description = "Turn id")),
    request_body = EndTurn,
    responses(
        (status = 200, body = TurnView),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn end_turn(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<EndTurn>,
) -> Result<Json<TurnView>, ApiError> {
    if let Some(reply) = &body.reply {
        check_text("reply", reply, MAX_MESSAGE_BYTES)?;
    }
    blocking(move || {
        let turn = app.gate.end_turn(&id)?;
        let reply_id = match (&turn.conversation_id, &body.reply, app.memory.brain()) {
            (Some(conversation), Some(reply), Some(brain)) if !reply.trim().is_empty() => {
                Some(brain.record_message(&turn.user, conversation, Role::Assistant, reply)?)
            }
            _ => None,
        };
        turn_view(&app, &id, reply_id).map(Json)
    })
    .await
}

#[utoipa::path(post, path = "/api/turns/{id}/authorize", tag = "turns",
    summary = "May the agent call this tool now?",
    description = "The gate's decision for `tool` in this turn: allow, ask (ask the user first; their yes is given with POST /api/turns/{id}/approvals, after which the tool is allowed for the rest of the turn) or deny, with a stable reason code. Always 200 (an unknown, ended or expired turn is a deny with its code); always written to the audit log.",
    params(("id" = String, Path, description = "Turn id")),
    request_body = Authorize,
    responses(
        (status = 200, body = Decision),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn authorize(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Authorize>,
) -> Result<Json<Decision>, ApiError> {
    check_tool_name(&body.tool, "tool")?;
    blocking(move || {
        Ok(Json(app.gate.decide(
            &id,
            &body.tool,
            &body.args.to_string(),
        )))
    })
    .await
}

fn check_tool_name(name: &str, field: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.chars().count() > MAX_TOOL_NAME {
        return Err(ApiError::invalid_field(
            field,
            format!("must be 1 to {MAX_TOOL_NAME} characters"),
        ));
    }
    Ok(())
}

#[utoipa::path(post, path = "/api/turns/{id}/tools/{name}", tag = "turns",
    summary = "Run a host tool in a turn",
    description = "Checks the call with the gate (audited), then runs the host tool: `save_memory {type, summary, detail?}`, `search_memory {q, limit?}`, `fetch_url {url}` (http(s) only, 2 MiB, 10 s; private addresses refused unless `network.allowPrivate`), `read_skill_file {path}` (inside the invoked skill's directory). Arguments must be an object (`null`: none). A denied call is 403 with the gate's reason code; a call needing approval is 403 `approval-required` (ask the user, then POST /api/turns/{id}/approvals); an unknown turn 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`.",
    params(
        ("id" = String, Path, description = "Turn id"),
        ("name" = String, Path, description = "Host tool name"),
    ),
    request_body = ToolCall,
    responses(
        (status = 200, body = ToolResult),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 502, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn run_tool(
    State(app): State<Arc<App>>,
    Path((id, name)): Path<(String, String)>,
    ApiJson(body): ApiJson<ToolCall>,
) -> Result<Json<ToolResult>, ApiError> {
    check_tool_name(&name, "name")?;
    let (decision, turn) = {
        let app = app.clone();
        let (id, name, args) = (id.clone(), name.clone(), body.args.to_string());
        blocking(move || {
            let decision = app.gate.decide(&id, &name, &args);
            Ok((decision, app.gate.turn(&id).map(|(turn, _)| turn)))
        })
        .await?
    };
    if !decision.is_allowed() {
        return Err(refusal(&decision, &id, &name));
    }
    let turn = turn.ok_or_else(|| GateError::UnknownTurn(id.clone()))?;
    let tool =
        HostTool::parse(&name).ok_or_else(|| ToolError::NotAHostTool(policy::shown(&name)))?;
    // `fetch_url` waits on the network from the blocking pool too: `call` is the one
    // implementation scripts use as well, and it blocks.
    let result = blocking(move || Ok(app.tools.call(&turn, tool, body.args, None)?)).await?;
    Ok(Json(ToolResult {
        tool: name,
        decision,
        result,
    }))
}

#[utoipa::path(post, path = "/api/turns/{id}/approvals", tag = "turns",
    summary = "Approve a tool for the rest of a turn",
    description = "The operator's (the user's) yes to a tool the gate answers ask for: from now until the turn ends or expires, calls of `tool` in this turn (the agent's, and its scripts' `tools.invoke`) are allowed, with code `approved`; the next turn asks again. The approval is written to the audit log (caller `operator`, decision `allow`, code `approved`) and listed in the turn's `approvals` (GET /api/turns/{id}). Approving again is harmless. A tool the gate denies in this turn cannot be approved: 409 with the deny's code (`operator-deny`, `not-in-allowed-tools`); a tool the gate does not know is 422 `unknown-tool`; an unknown turn 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`.",
    params(("id" = String, Path, description = "Turn id")),
    request_body = Approve,
    responses(
        (status = 201, body = ApprovalGranted),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn approve(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Approve>,
) -> Result<(StatusCode, Json<ApprovalGranted>), ApiError> {
    check_tool_name(&body.tool, "tool")?;
    blocking(move || {
        let approved = app.gate.approve(&id, &body.tool)?;
        Ok((
            StatusCode::CREATED,
            Json(ApprovalGranted {
                turn_id: approved.turn.id,
                tool: approved.approval.tool,
                decision: approved.decision,
                approved_at: approved.approval.approved_at,
                expires_at: approved.turn.expires_at,
            }),
        ))
    })
    .await
}

#[utoipa::path(post, path = "/api/turns/{id}/scripts/{name}", tag = "turns",
    summary = "Run a script of the invoked skill",
    description = "Runs `scripts/{name}.wasm` of the skill invoked in this turn (and of no other skill) with `args`, as the turn's user: the script sees only its skill's directory, read-only, under the runtime's memory and time limits. Running a script of the invoked skill needs no grant of its own while the turn is open; the script's own `tools.invoke` calls are checked by the gate against this turn's grants (and audited). Answers `{skill, script, output, ms}`, `output` parsed when the script returned JSON. A turn without a skill is 409 `no-skill-invoked`; an unknown turn 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`; a script the skill does not have 404 `unknown-script`; a name that is not a script name (lowercase letters, digits, single hyphens) 422 `invalid-field`. The script's own error is 422 `script-failed` with its message; a trap, timeout, memory overrun or malformed result 422 `script-trapped`; a script that cannot be loaded (not a `skill-tool` component, invalid `<name>.toml`) 422 `script-invalid`.",
    params(
        ("id" = String, Path, description = "Turn id"),
        ("name" = String, Path, description = "Script name: `scripts/<name>.wasm` of the invoked skill"),
    ),
    request_body = ScriptCall,
    responses(
        (status = 200, body = ScriptResult),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn run_script(
    State(app): State<Arc<App>>,
    Path((id, name)): Path<(String, String)>,
    ApiJson(body): ApiJson<ScriptCall>,
) -> Result<Json<ScriptResult>, ApiError> {
    crate::runtime::manifest::validate_name(&name)
        .map_err(|reason| ApiError::invalid_field("name", reason))?;
    let args = match body.args {
        Value::Null => "{}".to_string(),
        args => args.to_string(),
    };
    if args.len() > crate::runtime::MAX_SKILL_ARGS_BYTES {
        return Err(ApiError::invalid_field(
            "args",
            format!(
                "{} bytes as JSON, over the {}-byte limit",
                args.len(),
                crate::runtime::MAX_SKILL_ARGS_BYTES
            ),
        ));
    }
    // Off the async workers: a script may run up to its time limit.
    blocking(move || run_script_blocking(&app, &id, name, &args).map(Json)).await
}

fn run_script_blocking(
    app: &App,
    id: &str,
    name: String,
    args: &str,
) -> Result<ScriptResult, ApiError> {
    let (turn, state) = app
        .gate
        .turn(id)
        .ok_or_else(|| GateError::UnknownTurn(id.to_string()))?;
    match state {
        TurnState::Open => {}
        TurnState::Ended => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "turn-ended",
                format!("turn `{}` has ended", turn.id),
            ));
        }
        TurnState::Expired => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "turn-expired",
                format!("turn `{}` has expired", turn.id),
            ));
        }
    }
    let grant = turn.skill.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "no-skill-invoked",
            "no skill is invoked in this turn, so there is no script to run",
        )
    })?;
    let entry = app.skills.entry(&grant.skill)?;
    let dir = entry.skill_id()?.dir_in(app.skills.root());
    check_script_file(&dir, &grant.skill, &name)?;

    let started = std::time::Instant::now();
    let ran =
        app.strategies
            .runtime()
            .run_skill_script(&dir, &name, &turn.user, Some(&turn.id), args);
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let output = match ran {
        Ok(Ok(output)) => output,
        Ok(Err(message)) => {
            tracing::info!(turn = %turn.id, skill = %grant.skill, script = %name, ms, "skill script failed: {message}");
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "script-failed",
                message,
            ));
        }
        Err(e) => {
            tracing::warn!(turn = %turn.id, skill = %grant.skill, script = %name, ms, code = e.code(), "skill script stopped: {e}");
            return Err(script_error(&grant.skill, &name, e));
        }
    };
    tracing::info!(turn = %turn.id, skill = %grant.skill, script = %name, ms, "skill script ran");
    Ok(ScriptResult {
        skill: grant.skill.clone(),
        script: name,
        output: serde_json::from_str(&output).unwrap_or(Value::String(output)),
        ms,
    })
}

/// 404 `unknown-script` unless `scripts/<name>.wasm` is a plain file of the skill;
/// 422 `script-invalid` for a symlink (the runtime refuses those too).
fn check_script_file(dir: &FsPath, skill: &str, name: &str) -> Result<(), ApiError> {
    let unknown = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown-script",
            format!("the skill `{skill}` has no script `{name}` (scripts/{name}.wasm)"),
        )
    };
    let scripts = dir.join(crate::runtime::SCRIPTS_DIR);
    for path in [scripts.clone(), scripts.join(format!("{name}.wasm"))] {
        let meta = std::fs::symlink_metadata(&path).map_err(|_| unknown())?;
        if meta.file_type().is_symlink() {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "script-invalid",
                format!(
                    "the script `{name}` of `{skill}` (or its scripts/ directory) is a symlink; scripts must be plain files"
                ),
            ));
        }
    }
    if !scripts.join(format!("{name}.wasm")).is_file() {
        return Err(unknown());
    }
    Ok(())
}

/// A runtime failure of a script run, as a problem document: never a 500 for what
/// the script did, and never a path.
fn script_error(skill: &str, name: &str, e: crate::runtime::PluginError) -> ApiError {
    use crate::runtime::PluginError as E;
    let invalid = |reason: &str| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "script-invalid",
            format!("the script `{name}` of `{skill}` cannot be loaded: {reason}"),
        )
    };
    match &e {
        E::Timeout { .. } | E::MemoryLimit { .. } | E::Trap { .. } | E::InvalidResult { .. } => {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "script-trapped",
                format!("the script `{name}` of `{skill}` was stopped: {e}"),
            )
        }
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown-script",
            format!("the skill `{skill}` has no script `{name}` (scripts/{name}.wasm)"),
        ),
        E::InvalidManifest { reason, .. }
        | E::NotAComponent { reason, .. }
        | E::WorldMismatch { reason, .. } => invalid(reason),
        E::WrongWorld { .. } => invalid(&e.to_string()),
        _ => ApiError::internal("skill script", &e),
    }
}

#[utoipa::path(get, path = "/api/audit", tag = "turns",
    summary = "The gate's audit log",
    description = "Every decision of the gate, newest first, paged by `next_cursor`.",
    params(AuditParams),
    responses(
        (status = 200, body = AuditPage),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn audit(
    State(app): State<Arc<App>>,
    ApiQuery(params): ApiQuery<AuditParams>,
) -> Result<Json<AuditPage>, ApiError> {
    let max = crate::gate::audit::MAX_PAGE;
    let limit = match params.limit {
        None => 50,
        Some(n) if (1..=max).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::invalid_field(
                "limit",
                format!("must be 1 to {max}"),
            ));
        }
    };
    blocking(move || {
        Ok(Json(app.gate.audit().list(&AuditQuery {
            limit,
            cursor: params.cursor,
            turn_id: params.turn,
            user: params.user,
        })?))
    })
    .await
}

//! `/api/turns...` and `/api/audit`: one message of a conversation and the agent's
//! work on it (README, "Turns and the tool gate").
//!
//! `POST /api/turns` routes the message to a skill (explicit `/slug ...` first, then
//! the router over the active skills), opens a turn in the gate with the invoked
//! skill's `allowed-tools` as its grant, and answers with everything the agent needs
//! for the message: the memory block, the skills catalog, the invoked skill's body and
//! files, and what each of its tools is granted. Every tool call of the turn is then
//! checked against the gate: `authorize` for the agent's own tools (it runs them
//! itself), `tools/{name}` for the host's tools (decided, then run, on the turn
//! service's one path for host tools, as a script's `tools.invoke` is; a tool the
//! agent runs itself is 422 `not-a-host-tool` there, before any decision).
//! `approvals` is the person's yes to a tool the gate asks about, for the turn only:
//! the dashboard's, a chat channel's or the operator token's; the agent's token gets
//! 403 `person-required`, and the refusal is in the audit log.
//! `end` closes the turn and revokes its grants and approvals; a turn not ended
//! expires (`tools.turnTtlMinutes`).
//! `scripts/{name}` runs a script of the invoked skill (and of no other): invoking the
//! skill is the permission, so the run itself is no gate decision, but each of the
//! script's `tools.invoke` calls is one, under the turn's grants.
//!
//! Every route takes `user` (default `default`) as the other routes do, and a turn is
//! only ever seen, used or ended by its own user: another user's turn is 404
//! `unknown-turn`, as the audit log shows each user only their own decisions.
//!
//! The service behind every route is [`crate::turns`]; this module reads the
//! requests and calls it off the async workers; its errors reach the client as they
//! describe themselves (`crate::turns::TurnError`, `crate::described`).
//!
//! Answers of `tools/{name}` when the gate does not allow the call: 403 with the
//! gate's reason code (`operator-deny`, `not-in-allowed-tools`, `unknown-tool`, ...),
//! 403 `approval-required` when the answer is ask (the agent asks its user, and
//! `POST /api/turns/{id}/approvals {tool}` approves it for the turn), 404
//! `unknown-turn`, 409 `turn-ended` or `turn-expired`. `authorize` always answers 200
//! with the decision. Every decision of both, and every approval, is written to the
//! audit log (`GET /api/audit`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::Json;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem};
use super::extract::{Acting, ApiJson, ApiQuery, UserQuery};
use crate::app::App;
use crate::gate::{AuditPage, AuditQuery, Caller, Decision};
use crate::turns::input::{Channel, ConversationId, Speaker, Text, User};
use crate::turns::{
    ApprovalGranted, Invoke, Message, ScriptResult, ToolResult, TurnOpened, TurnView,
};

// ---- request shapes (the answers are the turn service's types) ----------------------

/// `POST /api/turns`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenTurn {
    /// The user's message (not only whitespace, at most 64 KiB as UTF-8). `/slug rest`
    /// invokes the skill `slug`.
    #[schema(
        min_length = 1,
        pattern = r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub message: String,
    /// When given, the message is recorded in this conversation of the Second Brain,
    /// and the reply given at `end` too: 1 to 128 characters, no control characters.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub conversation_id: Option<String>,
    /// Default `default`.
    #[schema(schema_with = super::contract::body_user)]
    pub user: Option<String>,
    /// Where the message came from (`telegram`, `cli`, ...), for the audit log: 1 to
    /// 64 characters, no control characters.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub channel: Option<String>,
    /// The sender's name (1 to 100 characters, not only whitespace, no control characters), when the channel
    /// knows it (a group chat has several people): recorded with the message and
    /// searched with its text.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub name: Option<String>,
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
    /// The tool, as the gate names it: 1 to 128 characters, no control characters.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub tool: String,
    /// The call's arguments, an object (absent or `null`: none); only a bounded
    /// summary is kept in the audit log.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub args: Value,
}

/// `POST /api/turns/{id}/approvals`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    /// The tool the user agreed to, as the gate names it (`fetch_url`, `send_message`,
    /// ...): 1 to 128 characters, no control characters.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub tool: String,
    /// The arguments of the call the user was shown and agreed to (an object): the
    /// approval covers that call only. Absent: the tool with any arguments for the rest
    /// of the turn, which never covers a new destination after outside content was
    /// read (code `new-destination`: approve the call itself).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub args: Option<Value>,
}

/// `POST /api/turns/{id}/tools/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// `save_memory {type, summary, detail?}`, `search_memory {q, limit?, scope?}`,
    /// `fetch_url {url}`, `read_skill_file {path}`. An object (absent or `null`:
    /// none).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub args: Value,
}

/// `POST /api/turns/{id}/scripts/{name}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The script's arguments, any JSON (absent or `null`: `{}`; at most 256 KiB as
    /// JSON), given to it as JSON text; `word-stats` takes `{file, top?}`.
    #[serde(default)]
    #[schema(value_type = Value)]
    pub args: Value,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    /// 1 to 500 (default 50).
    #[param(schema_with = super::contract::limit)]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[param(schema_with = super::contract::seq_cursor)]
    pub cursor: Option<String>,
    /// Only this turn's decisions.
    pub turn: Option<String>,
    /// Whose decisions (default `default`): each user sees only their own.
    #[param(schema_with = super::contract::user)]
    pub user: Option<String>,
}

// ---- handlers -----------------------------------------------------------------------

#[utoipa::path(post, path = "/api/turns", tag = "turns",
    summary = "Open a turn for a message",
    description = "Routes the message to a skill (`/slug ...` or by the router), opens a turn whose grant is the invoked skill's `allowed-tools`, and returns the memory block, the skills catalog, the invoked skill and its grants. With `conversation_id`, the message is recorded in that conversation.",
    request_body = OpenTurn,
    responses(
        (status = 201, body = TurnOpened, links(
            ("GetTurn" = (operation_id = "get_turn", parameters(("id" = "$response.body#/turn_id")))),
            ("EndTurn" = (operation_id = "end_turn", parameters(("id" = "$response.body#/turn_id")))),
            ("Authorize" = (operation_id = "authorize", parameters(("id" = "$response.body#/turn_id")))),
            ("Approve" = (operation_id = "approve", parameters(("id" = "$response.body#/turn_id")))),
            ("RunTool" = (operation_id = "run_tool", parameters(("id" = "$response.body#/turn_id")))),
            ("RunScript" = (operation_id = "run_script", parameters(("id" = "$response.body#/turn_id"))))
        )),
        (status = 403, description = "`user-not-allowed`: the agent's token names a user outside `agent.users` (config.yaml)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`owned-by-another-user`: the conversation id is another user's", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`too-many-turns`: this caller (the agent's token, an MCP client, the person's token, ...) holds `tools.maxOpenTurnsPerCaller` open turns; others are not affected", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`too-many-turns`: the gate holds the most turns it keeps", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn open_turn(
    State(app): State<Arc<App>>,
    acting: Acting,
    ApiJson(body): ApiJson<OpenTurn>,
) -> Result<(StatusCode, Json<TurnOpened>), ApiError> {
    let user = acting.user(body.user.as_deref())?;
    let message = Message {
        user: User::parse(user)?,
        text: Text::parse("message", body.message)?,
        conversation_id: body
            .conversation_id
            .map(ConversationId::parse)
            .transpose()?,
        channel: body.channel.map(Channel::parse).transpose()?,
        name: body.name.map(Speaker::parse).transpose()?,
        recall: true,
        opened_by: acting.principal.label(),
    };
    blocking(move || Ok(app.turns.open(message, Invoke::Routed)?))
        .await
        .map(|opened| (StatusCode::CREATED, Json(opened)))
}

#[utoipa::path(get, path = "/api/turns/{id}", tag = "turns",
    summary = "A turn, its state and its decisions",
    params(("id" = String, Path, description = "Turn id (`turn_...`)", pattern = r"^turn_[0-9a-z]{26}$"), UserQuery),
    responses(
        (status = 200, body = TurnView),
        (status = 404, description = "`unknown-turn`: no such turn for this user", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_turn(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<TurnView>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || Ok(Json(app.turns.view(&id, &user)?))).await
}

#[utoipa::path(post, path = "/api/turns/{id}/end", tag = "turns",
    summary = "End a turn",
    description = "Revokes the turn's grants and records `reply` (role assistant) in the turn's conversation. Ending a turn twice is 409 `turn-ended`.",
    params(("id" = String, Path, description = "Turn id", pattern = r"^turn_[0-9a-z]{26}$"), UserQuery),
    request_body = EndTurn,
    responses(
        (status = 200, body = TurnView),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn end_turn(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<EndTurn>,
) -> Result<Json<TurnView>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    blocking(move || Ok(Json(app.turns.end(&id, &user, body.reply.as_deref())?))).await
}

#[utoipa::path(post, path = "/api/turns/{id}/authorize", tag = "turns",
    summary = "May the agent call this tool now?",
    description = "The gate's decision for `tool` with `args` in this turn: allow, ask (show the user this call first; their yes is given with POST /api/turns/{id}/approvals with the same `args`, after which this call is allowed) or deny, with a stable reason code. Once the turn has read outside content (a fetch, a file, one of your tools' results), a call that sends to a destination not named in the message or the granted skill, nor approved in the turn, asks (`new-destination`), whatever grant is in force. Always 200 (an unknown, ended or expired turn is a deny with its code); always written to the audit log.",
    params(("id" = String, Path, description = "Turn id"), UserQuery),
    request_body = Authorize,
    responses(
        (status = 200, body = Decision),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn authorize(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<Authorize>,
) -> Result<Json<Decision>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    if !(body.args.is_object() || body.args.is_null()) {
        return Err(ApiError::invalid_field("args", "must be an object"));
    }
    blocking(move || {
        Ok(Json(app.turns.authorize(
            Caller::Agent { user: &user },
            &id,
            &body.tool,
            &body.args,
        )?))
    })
    .await
}

#[utoipa::path(post, path = "/api/turns/{id}/tools/{name}", tag = "turns",
    summary = "Run a host tool in a turn",
    description = "Checks the call with the gate (audited), then runs the host tool: `save_memory {type, summary, detail?}`, `search_memory {q, limit?, scope?}` (scope `all` by default: memories and what was said; `memories`, `conversations`), `fetch_url {url}` (http(s) only, 2 MiB, 10 s; private addresses refused unless `network.allowPrivate`), `read_skill_file {path}` (inside the invoked skill's directory). Arguments must be an object (`null`: none). A denied call is 403 with the gate's reason code; a call needing approval is 403 `approval-required` (ask the user, then POST /api/turns/{id}/approvals); an unknown turn 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`. A tool the agent runs itself (`cd`, `send_message`, ...) is 422 `not-a-host-tool`, and nothing is decided or audited for it.",
    params(
        ("id" = String, Path, description = "Turn id", pattern = r"^turn_[0-9a-z]{26}$"),
        ("name" = String, Path, description = "A host tool (the ones the host runs: `fetch_url`, `install_skill`, `read_skill_file`, `save_memory`, `search_memory`); a tool the agent runs itself is 422 `not-a-host-tool`", pattern = r"^(fetch_url|install_skill|read_skill_file|save_memory|search_memory)$"),
        UserQuery,
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
    acting: Acting,
    Path((id, name)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<ToolCall>,
) -> Result<Json<ToolResult>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    // `fetch_url` waits on the network from the blocking pool too: the service's one
    // path for host tools blocks, for scripts as for REST.
    blocking(move || {
        let caller = Caller::Agent { user: &user };
        let ran = app
            .turns
            .run_host_tool(caller, Some(&id), &name, body.args, None)?;
        Ok(Json(ran))
    })
    .await
}

#[utoipa::path(post, path = "/api/turns/{id}/approvals", tag = "turns",
    summary = "Approve a call (or a tool) in a turn",
    description = "The person's yes to a call the gate answers ask for: with `args`, that call (`tool` with exactly those arguments) is allowed from now until the turn ends or expires, with code `approved`, and the host it sends to becomes a destination the turn may send to; without `args`, every call of `tool` in this turn (the agent's, and its scripts' `tools.invoke`), except a send to a new destination after outside content was read, which only an approved call lifts. The next turn asks again. Only the person approves: a dashboard session, the operator token, or a chat channel's approval button. The agent's token is 403 `person-required`, and the refusal is written to the audit log (caller `agent`, decision `deny`, code `person-required`). The approval is written to the audit log (caller `dashboard`, `operator` or `channel:<name>`, decision `allow`, code `approved`) and listed in the turn's `approvals` (GET /api/turns/{id}). Approving again is harmless. A tool the gate denies in this turn cannot be approved: 409 with the deny's code (`operator-deny`, `not-in-allowed-tools`); a tool the gate does not know is 422 `unknown-tool`; an unknown turn (or another user's) 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`.",
    params(("id" = String, Path, description = "Turn id", pattern = r"^turn_[0-9a-z]{26}$"), UserQuery),
    request_body = Approve,
    responses(
        (status = 201, body = ApprovalGranted),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`person-required`: the agent's token cannot approve (`user-not-allowed` when it names a user outside `agent.users`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn approve(
    State(app): State<Arc<App>>,
    acting: Acting,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<Approve>,
) -> Result<(StatusCode, Json<ApprovalGranted>), ApiError> {
    let user = acting.user(query.user.as_deref())?;
    if body.args.as_ref().is_some_and(|args| !args.is_object()) {
        return Err(ApiError::invalid_field("args", "must be an object"));
    }
    let principal = acting.principal;
    blocking(move || {
        let granted = app
            .turns
            .approve(&id, &user, &body.tool, body.args.as_ref(), &principal)?;
        Ok((StatusCode::CREATED, Json(granted)))
    })
    .await
}

#[utoipa::path(post, path = "/api/turns/{id}/scripts/{name}", tag = "turns",
    summary = "Run a script of the invoked skill",
    description = "Runs `scripts/{name}.wasm` of the skill invoked in this turn (and of no other skill) with `args`, as the turn's user: the script sees only its skill's directory, read-only, under the runtime's memory and time limits. Running a script of the invoked skill needs no grant of its own while the turn is open; the script's own `tools.invoke` calls are checked by the gate against this turn's grants (and audited). Answers `{skill, script, output, ms}`, `output` parsed when the script returned JSON. A turn without a skill is 409 `no-skill-invoked`; an unknown turn 404 `unknown-turn`; an ended or expired one 409 `turn-ended` / `turn-expired`; a script the skill does not have 404 `unknown-script`; a name that is not a script name (lowercase letters, digits, single hyphens) 422 `invalid-field`. The script's own error is 422 `script-failed` with its message; a trap, timeout, memory overrun or malformed result 422 `script-trapped`; a script that cannot be loaded (not a `skill-tool` component, invalid `<name>.toml`) 422 `script-invalid`.",
    params(
        ("id" = String, Path, description = "Turn id", pattern = r"^turn_[0-9a-z]{26}$"),
        ("name" = String, Path, description = "Script name: `scripts/<name>.wasm` of the invoked skill", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$"),
        UserQuery,
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
    acting: Acting,
    Path((id, name)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<ScriptCall>,
) -> Result<Json<ScriptResult>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    // Off the async workers: a script may run up to its time limit.
    blocking(move || Ok(Json(app.turns.run_script(&id, &user, &name, body.args)?))).await
}

#[utoipa::path(get, path = "/api/audit", tag = "turns",
    summary = "The gate's audit log",
    description = "Every decision of the gate for `user` (default `default`), newest first, paged by `next_cursor`. No user sees another's decisions.",
    params(AuditParams),
    responses(
        (status = 200, body = AuditPage),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn audit(
    State(app): State<Arc<App>>,
    acting: Acting,
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
    let user = acting.user(params.user.as_deref())?;
    blocking(move || {
        Ok(Json(app.gate.audit().list(&AuditQuery {
            limit,
            cursor: params.cursor,
            turn_id: params.turn,
            user: Some(user),
        })?))
    })
    .await
}

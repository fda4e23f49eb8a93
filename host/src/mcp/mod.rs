//! The MCP server (Model Context Protocol, on the official Rust SDK `rmcp`): Engram's
//! memory, skills and gate for any MCP client. A front door like `api/`: it calls the
//! services (the turn service, memory, the skills library) and never another front
//! door.
//!
//! - `tools`: the tools, each specified once (description for a model, JSON Schema,
//!   annotations, the service call)
//! - `failure`: how a tool's failure reaches the client (a tool error with the
//!   problem code; the session goes on)
//! - `catalog`: skills as prompts and `skill://` resources, `memory://profile`
//! - `changes`: `list_changed` notifications from the event bus's `skill.*`
//! - `http`: streamable HTTP at `/mcp` on the daemon (bearer token, Host and Origin
//!   checked)
//! - `stdio`: the same server on stdin/stdout, over a data directory opened in-process
//!   (`engram mcp --embedded`; without it, `engram mcp` bridges stdio to the daemon's
//!   `/mcp`, see `cli/mcp_bridge.rs`)
//!
//! The session's user is `mcp.user` from config.yaml (read at each call), `default`
//! when unset; memory tools take a `user` argument where the REST API takes one.

mod catalog;
mod changes;
mod failure;
pub mod http;
pub mod stdio;
pub mod tools;
#[cfg(test)]
mod wire_tests;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;

use crate::app::App;
use crate::credentials::{AgentUsers, Principal};
pub use failure::Failure;

/// What a client is told about using the server (the `instructions` of `initialize`).
const INSTRUCTIONS: &str = "Engram keeps a memory of the user, their skills and a permission gate. \
At the start of every user message call `memory_context` with it: put its `memory_block` in your \
context, follow `invoked.body` when a skill is invoked, and keep its `turn_id`. Before running one \
of your own tools in that turn, ask `tool_authorize`. When you have answered, call `turn_end` with \
your reply. Save what the user tells you about themselves with `memory_add`.";

/// One MCP session's server over the daemon's services.
pub struct McpServer {
    app: Arc<App>,
}

impl McpServer {
    pub fn new(app: Arc<App>) -> McpServer {
        McpServer { app }
    }
}

/// The user a session acts for: `mcp.user`, else `default`.
fn session_user(app: &App) -> Result<String, Failure> {
    let config = app.config.current();
    crate::memory::user_or_default(config.mcp.user.as_deref())
        .map_err(|reason| Failure::invalid("mcp.user", format!("{reason} (config.yaml)")))
}

/// Who calls: over `/mcp`, the credential the auth middleware found (the agent's
/// token or the person's); over stdio (`engram mcp --embedded`), an MCP client,
/// which is an agent.
fn principal_of(context: &RequestContext<RoleServer>) -> Principal {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .unwrap_or(Principal::Agent)
}

/// Refuses a `user` the caller may not act for (`user-not-allowed`, as REST does).
fn check_user(app: &App, principal: &Principal, user: &str) -> Result<(), Failure> {
    let allowed = AgentUsers::from_config(&app.config.current(), crate::memory::DEFAULT_USER);
    Ok(principal.may_act_for(user, &allowed)?)
}

/// Runs `f` on the blocking pool (SQLite, files, plugins must not stall the async
/// workers); a panic there is the host's failure, not the session's end.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ErrorData> + Send + 'static,
) -> Result<T, ErrorData> {
    crate::background::run(f)
        .await
        .map_err(|e| catalog::error(Failure::internal("request task", &e)))?
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("engram", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            tools::TOOLS.iter().map(tools::McpTool::describe).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = tools::tool(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`; tools/list names them", request.name),
                Some(json!({ "code": "unknown-tool" })),
            ));
        };
        let app = self.app.clone();
        let principal = principal_of(&context);
        let ran = crate::background::run(move || {
            let user = session_user(&app)?;
            let (user, arguments) = tool.user(&user, request.arguments)?;
            check_user(&app, &principal, &user)?;
            tool.run(&app, &user, arguments)
        })
        .await;
        let result = match ran {
            Ok(Ok(value)) => CallToolResult::structured(value),
            Ok(Err(failure)) => failure.into_result(),
            Err(panicked) => Failure::internal(tool.name, &panicked).into_result(),
        };
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let app = self.app.clone();
        let prompts = blocking(move || catalog::prompts(&app)).await?;
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let app = self.app.clone();
        Ok(blocking(move || catalog::prompt(&app, &request.name))
            .await?
            .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let app = self.app.clone();
        let resources = blocking(move || catalog::resources(&app)).await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let app = self.app.clone();
        let principal = principal_of(&context);
        Ok(blocking(move || {
            let user = session_user(&app).map_err(catalog::error)?;
            check_user(&app, &principal, &user).map_err(catalog::error)?;
            catalog::read(&app, &user, &request.uri)
        })
        .await?
        .into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        changes::forward_to_session(&self.app.events, context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.intersection(&changes::offered()))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        changes::listen(&self.app.events, context).await;
        Ok(())
    }
}

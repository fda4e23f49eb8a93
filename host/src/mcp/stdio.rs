//! The MCP server on stdin/stdout, over services this process opened itself
//! (`engram mcp --embedded`): one session, which ends when the client closes stdin.
//! Logs go to stderr; stdout carries nothing but the protocol.

use std::sync::Arc;

use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::transport::async_rw::AsyncRwTransport;

use super::McpServer;
use crate::app::App;

/// Serves one session on stdin/stdout until the client closes it.
pub async fn serve(app: Arc<App>) -> anyhow::Result<()> {
    let transport = AsyncRwTransport::new_server(tokio::io::stdin(), tokio::io::stdout());
    let running = McpServer::new(app)
        .serve(transport)
        .await
        .context("the MCP session did not start")?;
    running.waiting().await.context("the MCP session failed")?;
    Ok(())
}

//! `engram mcp`: Engram as an MCP server on stdin/stdout, for clients that spawn a
//! command (Claude Code, Codex, ...). By default it relays to the running daemon's
//! `/mcp` (`mcp_bridge.rs`), found as `engram memory` finds it; with `--embedded` it
//! opens the data directory itself and serves from this process (for when no daemon
//! runs). When no daemon runs for the data directory (and no `--url` was given), it
//! serves embedded all the same and says so on stderr, so that an agent configured
//! with `engram mcp` keeps working before `engram serve` is started (or after a
//! reboot without the service). Exit codes: 0 when the client closed the session, 1
//! on failure, 3 when the daemon `--url` names could not be reached.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::client::{Acting, ClientError, Endpoint, URL_ENV};
use crate::app::App;
use crate::credentials::AGENT_TOKEN_ENV;
use crate::lock::DataDirLock;
use crate::paths::DataDir;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Open the data directory in this process instead of relaying to a running daemon
    #[arg(long, conflicts_with_all = ["url", "token"])]
    pub embedded: bool,
    /// Daemon URL [default: the `url` in {data_dir}/daemon.json, written by `engram serve`]
    #[arg(long, env = URL_ENV, value_name = "URL")]
    pub url: Option<String>,
    /// API token [default: {data_dir}/auth-token]
    #[arg(long, env = AGENT_TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
}

pub fn run(data: DataDir, args: McpArgs) -> anyhow::Result<ExitCode> {
    if args.embedded {
        embedded(data)?;
        return Ok(ExitCode::SUCCESS);
    }
    let url_given = args.url.as_deref().is_some_and(|u| !u.trim().is_empty());
    match Endpoint::discover(data.root(), args.url, args.token, Acting::Agent) {
        Ok(endpoint) => super::mcp_bridge::run(endpoint)?,
        Err(ClientError::NoDaemon { .. } | ClientError::StaleDaemonFile { .. }) if !url_given => {
            eprintln!(
                "engram mcp: no daemon runs for {}; serving embedded from this process, which holds the data directory until the client disconnects (`engram serve` or `engram service install` keeps one running)",
                data.root().display()
            );
            embedded(data)?;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// The services over the data directory, and the daemon's own loops (idle
/// conversations end and are learnt from, schedules fire) while the session lasts.
/// The data directory's lock is held throughout: with a daemon running this refuses
/// to start (naming it) and touches nothing, as a second `engram serve` does.
fn embedded(data: DataDir) -> anyhow::Result<()> {
    let lock = DataDirLock::acquire(data.root(), "mcp --embedded")?;
    let app = Arc::new(App::open(data)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let loops = crate::upkeep::spawn_loops(&app);
        let served = crate::mcp::stdio::serve(app.clone()).await;
        for task in loops {
            task.abort();
        }
        served
    })?;
    crate::upkeep::checkpoint(&app);
    drop(lock);
    Ok(())
}

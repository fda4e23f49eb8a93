//! `engram serve`: the HTTP daemon. It binds loopback by default, answers `/healthz`,
//! runs the timer loops (`crate::upkeep`) beside its requests, and shuts down
//! gracefully on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use crate::api::Json;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::api;
use crate::api::auth::{Auth, Sessions};
use crate::api::events::Shutdown;
use crate::app::App;
use crate::credentials::{AGENT_TOKEN_ENV, OPERATOR_TOKEN_ENV, Tokens};
use crate::embed::active::EncoderStatus;
use crate::lock::DataDirLock;
use crate::runtime::World;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Serialize)]
struct Health {
    status: &'static str,
    version: &'static str,
    strategies: Strategies,
    second_brain: SecondBrain,
    /// Where the databases are: `sqlite` (the data directory's files) or `postgres`
    /// (shared with the other daemons on it; the address is not shown here, which
    /// answers without a token).
    storage: &'static str,
    /// The sentence encoder in use (`static` or a model's name), and why a model is
    /// not, if so.
    encoder: EncoderStatus,
}

#[derive(Serialize)]
struct SecondBrain {
    enabled: bool,
    /// Why the fact store is in use instead, when it is.
    reason: Option<String>,
}

#[derive(Serialize)]
struct Strategies {
    extractor: String,
    resolver: String,
    consolidator: String,
}

async fn healthz(State(app): State<Arc<App>>) -> Json<Health> {
    let strategies = &app.strategies;
    Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        strategies: Strategies {
            extractor: strategies.selected(World::Extractor),
            resolver: strategies.selected(World::Resolver),
            consolidator: strategies.selected(World::Consolidator),
        },
        second_brain: SecondBrain {
            enabled: app.memory.brain().is_ok(),
            reason: app.memory.disabled_reason().map(str::to_owned),
        },
        storage: app.storage.kind(),
        encoder: app.encoder.status(),
    })
}

/// `/healthz` (open, for supervisors and scripts), the authenticated `/api` and
/// `/mcp`, and the dashboard, which logs in with the operator token. `bound` is where
/// the daemon listens (`/mcp` accepts requests addressed to it); `shutdown` ends
/// `/api`'s event streams and `mcp_stop` the MCP sessions when the daemon stops.
pub fn router(
    app: Arc<App>,
    tokens: Tokens,
    bound: SocketAddr,
    shutdown: Shutdown,
    mcp_stop: CancellationToken,
) -> Router {
    let auth = Auth {
        tokens,
        sessions: Sessions::new(app.gate.database()),
    };
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(app.clone())
        .merge(crate::dashboard::router(app.clone(), auth.clone()))
        .merge(crate::mcp::http::router(
            app.clone(),
            auth.clone(),
            bound,
            mcp_stop,
        ))
        .merge(crate::channels::terminal::daemon::router(
            app.clone(),
            auth.clone(),
            crate::channels::terminal::daemon::Sessions::default(),
        ))
        .merge(api::router(app, auth, shutdown))
}

/// What a running daemon leaves in its data directory so that the CLI can find it.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct DaemonInfo {
    pub url: String,
    pub pid: u32,
}

pub const DAEMON_FILE: &str = "daemon.json";

/// Serves until SIGINT/SIGTERM, holding `lock` (the data directory's) until it has
/// stopped. Prints `listening on http://ADDR` once bound, so that scripts and tests
/// using port 0 learn the real port, then what a person needs next ([`welcome`]);
/// `wrote_template` says this start wrote config.yaml's template.
pub async fn serve(
    app: App,
    mut lock: DataDirLock,
    listen: SocketAddr,
    wrote_template: bool,
) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        tracing::warn!(
            "listening on {listen}, which is reachable from other machines; bind 127.0.0.1 unless that is intended"
        );
    }
    // Before binding: the file limit decides how many clients fit.
    let limits = crate::connections::prepare(app.config.current().server.limits());
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let bound = listener.local_addr()?;
    let tokens = Tokens::load_or_create(
        app.data.root(),
        std::env::var(AGENT_TOKEN_ENV).ok(),
        std::env::var(OPERATOR_TOKEN_ENV).ok(),
    )?;
    let daemon_file = app.data.root().join(DAEMON_FILE);
    let info = DaemonInfo {
        url: format!("http://{bound}"),
        pid: std::process::id(),
    };
    if let Err(e) = std::fs::write(&daemon_file, serde_json::to_vec(&info)?) {
        tracing::warn!(
            "cannot write {}: {e}; the CLI will need --url",
            daemon_file.display()
        );
    }
    if let Err(e) = lock.set_url(&info.url) {
        tracing::warn!("{e}; a second start will not be told this daemon's URL");
    }
    let stop = shutdown_signal();
    let app = Arc::new(app);
    // Loaded (and its outcome logged) before the first request, off the async workers.
    let loading = app.clone();
    crate::background::run(move || loading.encoder.status()).await?;
    // The skills are embedded (the ones not cached yet) off the request path.
    let warming = app.clone();
    tokio::spawn(crate::background::run(move || warming.turns.warm_router()));
    {
        // Whoever started us may have stopped reading after the first line (tests,
        // scripts): a closed stdout is no reason to stop serving.
        use std::io::Write;
        let text = format!(
            "listening on http://{bound}\n{}",
            welcome(bound, app.data.root(), wrote_template)
        );
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }
    tracing::info!(data_dir = %app.data.root().display(), "engram listening on http://{bound}");
    let loops = crate::upkeep::spawn_loops(&app);
    let (stopping, shutdown) = tokio::sync::watch::channel(false);
    let telegram = tokio::spawn(crate::channels::telegram::run(
        app.clone(),
        shutdown.clone(),
    ));
    let mcp_stop = CancellationToken::new();
    let routes = router(
        app.clone(),
        tokens,
        bound,
        Shutdown(shutdown),
        mcp_stop.clone(),
    );
    crate::connections::serve(listener, routes, limits, async move {
        stop.await;
        let _ = stopping.send(true);
        mcp_stop.cancel();
    })
    .await;
    for task in loops {
        task.abort();
    }
    telegram.abort();
    // Ours to remove: no other daemon can have written it while we hold the lock.
    let _ = std::fs::remove_file(&daemon_file);
    crate::upkeep::checkpoint(&app);
    tracing::info!("engram stopped");
    drop(lock);
    Ok(())
}

/// What the start tells a person, after the `listening on` line: where the dashboard
/// is and which token signs in, how to add Engram to Claude Code and Codex, and on the
/// first start where the configuration template went.
pub fn welcome(bound: SocketAddr, data_dir: &std::path::Path, wrote_template: bool) -> String {
    let default_dir = crate::paths::DataDir::default_root().is_some_and(|d| d == data_dir);
    let (claude_env, codex_env) = if default_dir {
        (String::new(), String::new())
    } else {
        let dir = data_dir.display();
        (
            format!(" -e ENGRAM_DATA_DIR={dir}"),
            format!(" --env ENGRAM_DATA_DIR={dir}"),
        )
    };
    let mut text = format!(
        "dashboard: http://{bound}/ (sign in with the token in {token})\n\
         add Engram to Claude Code: claude mcp add --transport stdio engram{claude_env} -- engram mcp\n\
         add Engram to Codex:       codex mcp add engram{codex_env} -- engram mcp\n\
         data directory: {dir}\n",
        token = if std::env::var_os(crate::credentials::OPERATOR_TOKEN_ENV).is_some() {
            format!("${}", crate::credentials::OPERATOR_TOKEN_ENV)
        } else {
            data_dir
                .join(crate::credentials::OPERATOR_TOKEN_FILE)
                .display()
                .to_string()
        },
        dir = data_dir.display(),
    );
    if wrote_template {
        text.push_str(&format!(
            "first start: wrote {}, every setting with its default (engram config show prints what is in force)\n",
            data_dir.join("config.yaml").display()
        ));
    }
    text
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled: `serve` calls it before it prints that it listens,
/// so a signal sent as soon as a supervisor reads that line stops it cleanly instead
/// of killing it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        let received = |signal: std::io::Result<Signal>| async move {
            match signal {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        async move {
            tokio::select! {
                _ = received(interrupt) => {},
                _ = received(terminate) => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

//! `engram serve`: the HTTP daemon. It binds loopback by default, answers `/healthz`,
//! and shuts down gracefully on SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::app::App;
use crate::runtime::World;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Serialize)]
struct Health {
    status: &'static str,
    version: &'static str,
    strategies: Strategies,
    second_brain: SecondBrain,
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
            enabled: app.memory.brain().is_some(),
            reason: app.memory.disabled_reason().map(str::to_owned),
        },
    })
}

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(app)
}

/// Serves until SIGINT/SIGTERM. Prints `listening on http://ADDR` once bound, so that
/// scripts and tests using port 0 learn the real port.
pub async fn serve(app: App, listen: SocketAddr) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        tracing::warn!(
            "listening on {listen}, which is reachable from other machines; bind 127.0.0.1 unless that is intended"
        );
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let bound = listener.local_addr()?;
    println!("listening on http://{bound}");
    tracing::info!(data_dir = %app.data.root().display(), "engram listening on http://{bound}");
    let app = Arc::new(app);
    let maintenance = tokio::spawn(maintain(app.clone()));
    axum::serve(listener, router(app.clone()))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    maintenance.abort();
    if let Some(brain) = app.memory.brain()
        && let Err(e) = brain.store().checkpoint()
    {
        tracing::warn!("WAL checkpoint at shutdown failed: {e}");
    }
    tracing::info!("engram stopped");
    Ok(())
}

/// How often the Second Brain's maintenance runs (ending idle conversations is due
/// within this much of its 10 minutes; consolidation keeps its own schedule).
const MAINTENANCE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs the Second Brain's maintenance on a timer, off the async workers.
async fn maintain(app: Arc<App>) {
    if app.memory.brain().is_none() {
        return;
    }
    let mut ticker = tokio::time::interval(MAINTENANCE_EVERY);
    loop {
        ticker.tick().await;
        let app = app.clone();
        let pass = tokio::task::spawn_blocking(move || {
            let settings = crate::brain::maintenance::Settings::from_config(
                &app.config.current().memory.second_brain,
            );
            app.memory
                .brain()
                .map(|brain| crate::brain::maintenance::run(brain, &app.strategies, &settings))
        })
        .await;
        match pass {
            Ok(Some(report)) if report != Default::default() => {
                tracing::info!(?report, "Second Brain maintenance")
            }
            Ok(_) => {}
            Err(e) => tracing::error!("Second Brain maintenance panicked: {e}"),
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}

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
    axum::serve(listener, router(Arc::new(app)))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    tracing::info!("engram stopped");
    Ok(())
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

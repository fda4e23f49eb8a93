//! `/mcp` on the daemon: the streamable HTTP transport (rmcp's
//! `StreamableHttpService`), behind the same authentication as `/api` (the bearer
//! token; a request without it is 401 before any MCP handling), with the checks
//! against DNS rebinding: the `Host` must name this machine's loopback (or the address
//! the daemon is bound to), and a request that carries an `Origin` (a browser page)
//! must come from the daemon's own origin. Handshake-era clients get a session
//! (`Mcp-Session-Id`, kept in memory: a restart ends it); 2026-07-28 clients are served
//! statelessly. Bodies are capped as `/api`'s are.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::api::auth::{Auth, require_auth};
use crate::app::App;

/// Where the MCP endpoint is.
pub const PATH: &str = "/mcp";

/// The `/mcp` router for a daemon bound to `bound`. Cancelling `stop` ends every open
/// session and stream (the daemon's graceful shutdown waits for them otherwise).
pub fn router(app: Arc<App>, auth: Auth, bound: SocketAddr, stop: CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(bound))
        .with_allowed_origins(allowed_origins(bound))
        .enforce_origin_validation()
        .with_max_request_body_bytes(crate::api::extract::MAX_BODY_BYTES)
        .with_json_response(true)
        .with_cancellation_token(stop);
    let service = StreamableHttpService::new(
        move || Ok(McpServer::new(app.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn(session_end_as_no_content))
        .layer(axum::middleware::from_fn_with_state(auth, require_auth))
}

/// rmcp answers a session's `DELETE /mcp` with 202; clients (the official Python SDK
/// among them) take only 200 or 204 as "ended" and log a failure otherwise. The
/// session is closed either way: say so with 204.
async fn session_end_as_no_content(request: Request, next: Next) -> Response {
    let ends_session = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if ends_session && response.status() == StatusCode::ACCEPTED {
        let (mut parts, _) = response.into_parts();
        parts.status = StatusCode::NO_CONTENT;
        parts.headers.remove(axum::http::header::CONTENT_TYPE);
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    }
    response
}

/// The names a client on this machine reaches the daemon by: loopback, and the bound
/// address when it is not.
fn allowed_hosts(bound: SocketAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    let ip = bound.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        hosts.push(ip.to_string());
    }
    hosts
}

/// The daemon's own origins (its dashboard's), each with the bound port.
fn allowed_origins(bound: SocketAddr) -> Vec<String> {
    allowed_hosts(bound)
        .into_iter()
        .map(|host| match host.parse::<std::net::Ipv6Addr>() {
            Ok(v6) => format!("http://[{v6}]:{}", bound.port()),
            Err(_) => format!("http://{host}:{}", bound.port()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_the_daemons_own_with_its_port() {
        let bound: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        assert_eq!(
            allowed_origins(bound),
            [
                "http://localhost:7878",
                "http://127.0.0.1:7878",
                "http://[::1]:7878"
            ]
        );
        let exposed: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert!(allowed_hosts(exposed).contains(&"192.0.2.7".to_string()));
        let any: SocketAddr = "0.0.0.0:80".parse().unwrap();
        assert_eq!(allowed_hosts(any).len(), 3);
    }
}

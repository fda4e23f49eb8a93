//! Outbound HTTP (`wasi:http/outgoing-handler`), pinned like every other outbound
//! request of Engram:
//!
//! - the host must match an entry of the plugin's `allowed-hosts` (the operator's
//!   `plugins.<name>.allowedHosts` replaces the manifest's list); anything else fails at
//!   once with `HTTP-request-denied`;
//! - a name is resolved once through `net::resolve_checked`, the address rules every
//!   outbound path shares: a loopback, private or otherwise non-public address fails
//!   the request with `destination-IP-prohibited`, unless the name or that address is
//!   in `private-hosts`. An IP literal matched by an entry is explicit and may be
//!   private (`127.0.0.1:11434`, a local model server);
//! - the connection goes to the checked addresses (no second lookup), TLS verifies the
//!   name the plugin asked for, and redirects reach the plugin as they are;
//! - connect, first byte and body are all bounded by the call's deadline (the guest's
//!   epoch deadline does not run while the host waits on the network).

use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::PluginIdentity;
use crate::config::PluginConfig;
use crate::net::host_pattern::split_host_port;
use crate::net::{AddressError, Resolve, ip_literal, resolve_checked};

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type ResponseFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>;

/// What one call's requests may reach, fixed when the call starts.
pub(crate) struct HttpPolicy {
    plugin: Arc<PluginIdentity>,
    allowed_hosts: Vec<String>,
    private_hosts: Arc<Vec<String>>,
    resolver: Arc<dyn Resolve>,
    deadline: Instant,
}

impl HttpPolicy {
    /// The manifest's lists, or the operator's replacements from config.yaml.
    pub(crate) fn new(
        plugin: Arc<PluginIdentity>,
        settings: Option<&PluginConfig>,
        resolver: Arc<dyn Resolve>,
        deadline: Instant,
    ) -> HttpPolicy {
        let allowed_hosts = settings
            .and_then(|s| s.allowed_hosts.clone())
            .unwrap_or_else(|| plugin.permissions.allowed_hosts.clone());
        let private_hosts = settings
            .and_then(|s| s.private_hosts.clone())
            .unwrap_or_else(|| plugin.permissions.private_hosts.clone());
        HttpPolicy {
            plugin,
            allowed_hosts,
            private_hosts: Arc::new(private_hosts),
            resolver,
            deadline,
        }
    }

    /// Whether `host` (and `port`, defaulted from the scheme) matches an entry. An IP
    /// literal only matches the same address; a wildcard only matches names.
    fn permits(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        let literal = ip_literal(&host);
        self.allowed_hosts.iter().any(|pattern| {
            let (pattern_host, pattern_port) = split_host_port(pattern);
            let (pattern_host, pattern_port) = match ip_literal(pattern) {
                // A bare IPv6 address (`::1`) has colons but no port.
                Some(_) => (pattern.as_str(), None),
                None => (pattern_host, pattern_port),
            };
            let port_ok = match pattern_port {
                Some(p) => p.parse::<u16>() == Ok(port),
                None => true,
            };
            let pattern_host = pattern_host.to_ascii_lowercase();
            let host_ok = match (literal, ip_literal(&pattern_host)) {
                (Some(ip), Some(allowed)) => ip == allowed,
                (Some(_), None) | (None, Some(_)) => false,
                (None, None) => match pattern_host.strip_prefix("*.") {
                    Some(domain) => host.ends_with(&format!(".{domain}")),
                    None => host == pattern_host,
                },
            };
            host_ok && port_ok
        })
    }
}

/// Whether a non-public `ip` that `host` resolved to may be connected to: the host is
/// an allowed IP literal (explicit by nature), or the name or the address is listed in
/// `private-hosts`.
fn may_be_private(private_hosts: &[String], host: &str, ip: IpAddr) -> bool {
    ip_literal(host).is_some()
        || private_hosts.iter().any(|entry| match ip_literal(entry) {
            Some(allowed) => allowed == ip,
            None => entry.eq_ignore_ascii_case(host),
        })
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_done: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let use_tls = uri.scheme_str() != Some("http");
        let port = uri.port_u16().unwrap_or(if use_tls { 443 } else { 80 });
        let plugin = self.plugin.clone();
        if !self.permits(&host, port) {
            tracing::warn!(
                plugin = %plugin.name,
                hash = %plugin.short_hash,
                host = %host,
                port,
                "outbound HTTP denied: host not in the plugin's allowed-hosts"
            );
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let options = options.unwrap_or_default();
        let limits = Limits {
            connect: options.connect_timeout,
            first_byte: options.first_byte_timeout,
            between_bytes: options.between_bytes_timeout,
            deadline: self.deadline,
        };
        let connect_by = limits.within(limits.connect);
        let private_hosts = self.private_hosts.clone();
        let resolver = self.resolver.clone();
        Box::new(async move {
            let lookup = resolve_checked(&*resolver, &host, port, |ip| {
                may_be_private(&private_hosts, &host, ip)
            });
            let addrs = match tokio::time::timeout_at(connect_by.into(), lookup).await {
                Err(_) => return Err(HttpError::DnsTimeout),
                Ok(Ok(addrs)) => addrs,
                Ok(Err(AddressError::NonPublic { addr, .. })) => {
                    tracing::warn!(
                        plugin = %plugin.name,
                        hash = %plugin.short_hash,
                        host = %host,
                        %addr,
                        "outbound HTTP refused: the host resolves to a non-public address not in the plugin's private-hosts"
                    );
                    return Err(HttpError::DestinationIpProhibited);
                }
                Ok(Err(e @ AddressError::Resolve { .. })) => {
                    tracing::debug!(plugin = %plugin.name, "outbound HTTP: {e}");
                    return Err(HttpError::DnsError {
                        rcode: None,
                        info_code: None,
                    });
                }
            };
            send_pinned(request, &host, &addrs, use_tls, connect_by, limits).await
        })
    }
}

/// The bounds of one request: the guest's own (`request-options`), if it set them,
/// and the call's deadline, which nothing of the request outlives.
#[derive(Clone, Copy)]
struct Limits {
    /// For the lookup, the connection, TLS and the HTTP handshake together.
    connect: Option<Duration>,
    /// From the request to the response's head.
    first_byte: Option<Duration>,
    /// Between body frames.
    between_bytes: Option<Duration>,
    deadline: Instant,
}

impl Limits {
    /// `bound` from now, and never past the call's deadline.
    fn within(&self, bound: Option<Duration>) -> Instant {
        bound.map_or(self.deadline, |d| (Instant::now() + d).min(self.deadline))
    }
}

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// Connects to the first of `addrs` that answers, speaks TLS for `host` when asked, and
/// sends `request` over HTTP/1.1.
async fn send_pinned(
    mut request: http::Request<WasiBody>,
    host: &str,
    addrs: &[SocketAddr],
    use_tls: bool,
    connect_by: Instant,
    limits: Limits,
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError> {
    let connect_by = tokio::time::Instant::from(connect_by);
    let tcp = tokio::time::timeout_at(connect_by, connect_any(addrs))
        .await
        .map_err(|_| HttpError::ConnectionTimeout)??;
    let stream: Box<dyn Stream> = if use_tls {
        let name = match ip_literal(host) {
            Some(ip) => rustls::pki_types::ServerName::from(ip),
            None => rustls::pki_types::ServerName::try_from(host.to_string())?,
        };
        let handshake = tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp);
        let tls = tokio::time::timeout_at(connect_by, handshake)
            .await
            .map_err(|_| HttpError::ConnectionTimeout)?
            .map_err(HttpError::Tls)?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let (mut sender, connection) = tokio::time::timeout_at(
        connect_by,
        hyper::client::conn::http1::Builder::new()
            .handshake(wasmtime_wasi_http::io::TokioIo::new(stream)),
    )
    .await
    .map_err(|_| HttpError::ConnectionTimeout)??;
    // The request line carries only the path: scheme and authority are for proxies
    // (the Host header, set by wasi:http, names the host).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let first_byte_by = limits.within(limits.first_byte);
    let send = async {
        tokio::time::timeout_at(first_byte_by.into(), sender.send_request(request))
            .await
            .map_err(|_| HttpError::ConnectionReadTimeout)?
            .map_err(HttpError::from)
    };
    let mut send = pin!(send);
    let mut connection = Some(connection);
    // The connection's I/O has to be driven while the response is awaited.
    let response = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => {
            let Some(conn) = connection.as_mut() else {
                return Poll::Pending;
            };
            let finished = ready!(Pin::new(conn).poll(cx));
            connection = None;
            match finished {
                Ok(()) => send.as_mut().poll(cx),
                Err(e) => Poll::Ready(Err(HttpError::from(e))),
            }
        }
    })
    .await?;
    let io: IoFuture = Box::new(async move {
        match connection {
            Some(conn) => conn.await.map_err(HttpError::from),
            None => Ok(()),
        }
    });
    let response = response.map(|incoming| {
        BoundedBody {
            incoming,
            deadline: Box::pin(tokio::time::sleep_until(limits.deadline.into())),
            idle: limits
                .between_bytes
                .map(|d| (d, Box::pin(tokio::time::sleep(d)))),
        }
        .boxed_unsync()
    });
    Ok((response, io))
}

async fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream, HttpError> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            HttpError::ConnectionRefused
        }
        Some(e) => HttpError::Connect(e),
        None => HttpError::DestinationNotFound,
    })
}

/// The public web's roots, built once.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            Arc::new(
                rustls::ClientConfig::builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth(),
            )
        })
        .clone()
}

/// A response body that ends with `connection-read-timeout` at the call's deadline,
/// or when the guest's own idle bound passes without a frame.
struct BoundedBody {
    incoming: hyper::body::Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    idle: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl http_body::Body for BoundedBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, HttpError>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some((bound, timer)) = self.idle.as_mut() {
                    let next = tokio::time::Instant::now() + *bound;
                    timer.as_mut().reset(next);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(HttpError::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let idle_over = self
                    .idle
                    .as_mut()
                    .is_some_and(|(_, timer)| timer.as_mut().poll(cx).is_ready());
                if idle_over || self.deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manifest::Permissions;

    fn policy(allowed: &[&str], private: &[&str]) -> HttpPolicy {
        let plugin = Arc::new(PluginIdentity {
            name: "p".into(),
            short_hash: "0".repeat(12),
            permissions: Permissions {
                allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
                private_hosts: private.iter().map(|s| s.to_string()).collect(),
                ..Permissions::default()
            },
            settings_key: Some("p".into()),
        });
        HttpPolicy::new(
            plugin,
            None,
            Arc::new(crate::net::SystemResolver),
            Instant::now(),
        )
    }

    #[test]
    fn entries_match_hosts_ports_and_literals() {
        let p = policy(
            &[
                "api.example.com",
                "*.example.org:8443",
                "127.0.0.1:11434",
                "::1",
            ],
            &[],
        );
        assert!(p.permits("API.example.com", 443));
        assert!(p.permits("a.example.org", 8443));
        assert!(!p.permits("a.example.org", 443));
        assert!(!p.permits("example.org", 8443));
        assert!(p.permits("127.0.0.1", 11434));
        assert!(!p.permits("127.0.0.1", 80));
        assert!(p.permits("[::1]", 80));
        assert!(!p.permits("evil.com", 443));
        // A wildcard never covers an address.
        let p = policy(&["*.0.0.1"], &[]);
        assert!(!p.permits("127.0.0.1", 80));
    }

    #[test]
    fn private_addresses_need_an_explicit_entry() {
        let lan: IpAddr = "192.168.1.20".parse().unwrap();
        let hosts = vec!["llm.lan".to_string(), "10.0.0.9".to_string()];
        assert!(may_be_private(&hosts, "LLM.lan", lan));
        assert!(!may_be_private(&hosts, "other.lan", lan));
        assert!(may_be_private(
            &hosts,
            "other.lan",
            "10.0.0.9".parse().unwrap()
        ));
        assert!(may_be_private(
            &[],
            "127.0.0.1",
            "127.0.0.1".parse().unwrap()
        ));
    }
}

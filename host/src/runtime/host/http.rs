//! Outbound HTTP (`wasi:http/outgoing-handler`): every request is checked against the
//! manifest's `allowed-hosts` before any connection is made. A refused request fails
//! at once with `HTTP-request-denied`; allowed ones are bounded by the call's deadline.

use std::sync::Arc;
use std::time::Duration;

use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::PluginIdentity;
use crate::runtime::manifest::split_host_port;

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

pub(crate) struct AllowedHosts {
    plugin: Arc<PluginIdentity>,
    timeout: Duration,
}

impl AllowedHosts {
    pub(crate) fn new(plugin: Arc<PluginIdentity>, timeout: Duration) -> AllowedHosts {
        AllowedHosts { plugin, timeout }
    }

    /// Whether `host` (and `port`, defaulted from the scheme) matches an entry.
    fn permits(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        self.plugin.permissions.allowed_hosts.iter().any(|pattern| {
            let (pattern_host, pattern_port) = split_host_port(pattern);
            let port_ok = match pattern_port {
                Some(p) => p.parse::<u16>() == Ok(port),
                None => true,
            };
            let pattern_host = pattern_host.to_ascii_lowercase();
            let host_ok = match pattern_host.strip_prefix("*.") {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == pattern_host,
            };
            host_ok && port_ok
        })
    }
}

impl WasiHttpHooks for AllowedHosts {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_done: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let host = uri.host().unwrap_or_default().to_string();
        let default_port = if uri.scheme_str() == Some("http") {
            80
        } else {
            443
        };
        let port = uri.port_u16().unwrap_or(default_port);
        if !self.permits(&host, port) {
            tracing::warn!(
                plugin = %self.plugin.name,
                hash = %self.plugin.short_hash,
                host = %host,
                port,
                "outbound HTTP denied: host not in the plugin's allowed-hosts"
            );
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        // The guest's deadline does not run while the host waits on the network, so
        // every phase of the request gets the call's deadline as its own bound.
        let bound = |requested: Option<Duration>| {
            Some(requested.map_or(self.timeout, |d| d.min(self.timeout)))
        };
        let options = options.unwrap_or_default();
        let options = RequestOptions {
            connect_timeout: bound(options.connect_timeout),
            first_byte_timeout: bound(options.first_byte_timeout),
            between_bytes_timeout: bound(options.between_bytes_timeout),
        };
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) =
                wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

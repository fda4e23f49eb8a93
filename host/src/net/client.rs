//! The outbound HTTP client: one GET with every rule of the module applied (see
//! `net/mod.rs`).

use std::net::IpAddr;
use std::time::Duration;

use super::resolve::{AddressError, SystemResolver, resolve_checked};

use reqwest::Url;
use reqwest::redirect::Policy;
use tokio::time::Instant;

/// Redirects followed at most, per fetch.
pub const MAX_REDIRECTS: usize = 5;
/// The deadline for a fetch from a URL, redirects and body included.
pub const URL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a fetch may do.
#[derive(Debug, Clone)]
pub struct NetPolicy {
    /// `network.allowPrivate`: allow every address.
    pub allow_private: bool,
    /// The whole fetch (every hop and the body) must finish within this.
    pub timeout: Duration,
    /// Bodies larger than this are refused (the read stops past it).
    pub max_bytes: usize,
    /// `host:port` whose addresses are not checked: the registry the operator chose.
    pub trusted_origin: Option<String>,
}

impl NetPolicy {
    /// The policy for a URL someone gave us (an install, `fetch_url`): 10 s, at most
    /// `max_bytes`, no trusted origin.
    pub fn for_url(allow_private: bool, max_bytes: usize) -> NetPolicy {
        NetPolicy {
            allow_private,
            timeout: URL_TIMEOUT,
            max_bytes,
            trusted_origin: None,
        }
    }
}

/// A fetched body.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where the body came from, after redirects.
    pub url: Url,
    /// The final answer's HTTP status (always a success: other statuses are errors).
    pub status: u16,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// Why a fetch failed. Nothing was kept of a failed fetch.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url:?} is not a valid URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{url}: only http and https URLs are allowed")]
    Scheme { url: String },
    #[error(
        "{url}: {host} resolves to {addr}, a loopback, private or otherwise non-public address; refused (set network.allowPrivate: true in config.yaml to allow it)"
    )]
    PrivateAddress {
        url: String,
        host: String,
        addr: IpAddr,
    },
    #[error("{url}: cannot resolve {host}: {reason}")]
    Resolve {
        url: String,
        host: String,
        reason: String,
    },
    #[error("{url}: {reason}")]
    Network { url: String, reason: String },
    #[error("{url}: no complete answer within {}s", timeout.as_secs())]
    Timeout { url: String, timeout: Duration },
    #[error("{url}: the server answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: the answer is larger than the {limit}-byte limit")]
    TooLarge { url: String, limit: usize },
    #[error("{url}: more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects { url: String },
    #[error("{url}: {reason}")]
    BadRedirect { url: String, reason: String },
    #[error("{url}: cannot keep the answer: {reason}")]
    Sink { url: String, reason: String },
}

impl FetchError {
    /// A stable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            FetchError::BadUrl { .. } => "bad-url",
            FetchError::Scheme { .. } => "url-scheme",
            FetchError::PrivateAddress { .. } => "private-address",
            FetchError::Resolve { .. } => "unreachable",
            FetchError::Network { .. } => "unreachable",
            FetchError::Timeout { .. } => "timeout",
            FetchError::Status { .. } => "http-status",
            FetchError::TooLarge { .. } => "too-large",
            FetchError::TooManyRedirects { .. } => "too-many-redirects",
            FetchError::BadRedirect { .. } => "bad-redirect",
            FetchError::Sink { .. } => "write-failed",
        }
    }

    /// Whether the server could not be reached at all (as opposed to a refusal or a
    /// bad answer): the case where a cached copy may stand in.
    pub fn is_unreachable(&self) -> bool {
        match self {
            FetchError::Resolve { .. } | FetchError::Network { .. } => true,
            FetchError::Timeout { .. } => true,
            FetchError::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// A URL refused before anything was sent is 422; a server that cannot be reached or
/// answers badly is 502 (a registry install judges its fetches itself).
impl crate::described::Described for FetchError {
    fn describe(&self) -> crate::described::Description {
        let status = match self {
            // Writing what arrived failed here (a model download's file): ours, and its
            // reason may name a private path.
            FetchError::Sink { .. } => {
                return crate::described::Description::internal("a download");
            }
            FetchError::BadUrl { .. }
            | FetchError::Scheme { .. }
            | FetchError::PrivateAddress { .. } => http::StatusCode::UNPROCESSABLE_ENTITY,
            FetchError::Resolve { .. }
            | FetchError::Network { .. }
            | FetchError::Timeout { .. }
            | FetchError::Status { .. }
            | FetchError::TooLarge { .. }
            | FetchError::TooManyRedirects { .. }
            | FetchError::BadRedirect { .. } => http::StatusCode::BAD_GATEWAY,
        };
        crate::described::Description::new(status, self.code(), self.to_string())
    }
}

/// Parses `url` and checks that it is http(s).
pub fn parse_http_url(url: &str) -> Result<Url, FetchError> {
    let parsed = Url::parse(url.trim()).map_err(|e| FetchError::BadUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(FetchError::Scheme {
            url: url.to_string(),
        });
    }
    if parsed.host().is_none() {
        return Err(FetchError::BadUrl {
            url: url.to_string(),
            reason: "no host".into(),
        });
    }
    Ok(parsed)
}

/// `host:port` of a URL, as [`NetPolicy::trusted_origin`] compares it.
pub fn origin_of(url: &Url) -> Option<String> {
    Some(format!(
        "{}:{}",
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default()?
    ))
}

/// GETs `url` under `policy` (see the module documentation).
pub async fn get(url: &str, policy: &NetPolicy) -> Result<Fetched, FetchError> {
    let mut bytes = Vec::new();
    let answer = get_into(url, policy, &mut |chunk: Chunk<'_>| {
        if let Chunk::Data(data) = chunk {
            bytes.extend_from_slice(data);
        }
        Ok(())
    })
    .await?;
    Ok(Fetched {
        url: answer.url,
        status: answer.status,
        content_type: answer.content_type,
        bytes,
    })
}

/// What [`get_into`] hands its sink, in order: the declared length once, then the
/// body piece by piece.
pub enum Chunk<'a> {
    /// The answer's `Content-Length`, if it has one (already checked against the limit).
    Length(Option<u64>),
    Data(&'a [u8]),
}

/// Where [`get_into`] puts a body; an error stops the fetch.
pub type Sink<'a> = dyn FnMut(Chunk<'_>) -> std::io::Result<()> + Send + 'a;

/// An answer whose body went to a sink.
#[derive(Debug, Clone)]
pub struct Streamed {
    pub url: Url,
    pub status: u16,
    pub content_type: Option<String>,
}

/// GETs `url` under `policy` like [`get`], handing the body to `sink` as it arrives
/// instead of keeping it: for bodies too large to hold (a model's weights). What the
/// sink received of a failed fetch is to be thrown away.
pub async fn get_into(
    url: &str,
    policy: &NetPolicy,
    sink: &mut Sink<'_>,
) -> Result<Streamed, FetchError> {
    let start = parse_http_url(url)?;
    match tokio::time::timeout(policy.timeout, get_inner(start, policy, sink)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout {
            url: url.to_string(),
            timeout: policy.timeout,
        }),
    }
}

async fn get_inner(
    mut url: Url,
    policy: &NetPolicy,
    sink: &mut Sink<'_>,
) -> Result<Streamed, FetchError> {
    let deadline = Instant::now() + policy.timeout;
    let mut hops = 0;
    loop {
        let client = pinned_client(&url, policy, deadline).await?;
        let network = |e: reqwest::Error| FetchError::Network {
            url: url.to_string(),
            reason: describe(&e),
        };
        let mut response = client
            .get(url.clone())
            .header(reqwest::header::ACCEPT_ENCODING, "identity")
            .send()
            .await
            .map_err(network)?;
        let status = response.status();
        if status.is_redirection() {
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(FetchError::TooManyRedirects {
                    url: url.to_string(),
                });
            }
            let bad = |reason: String| FetchError::BadRedirect {
                url: url.to_string(),
                reason,
            };
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .ok_or_else(|| bad(format!("HTTP {} without a Location", status.as_u16())))?
                .to_str()
                .map_err(|_| bad("the Location is not text".into()))?;
            let next = url
                .join(location)
                .map_err(|e| bad(format!("invalid Location {location:?}: {e}")))?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(bad(format!(
                    "redirect to {next}: only http and https are allowed"
                )));
            }
            if url.scheme() == "https" && next.scheme() == "http" {
                return Err(bad(format!("redirect from https to plain http ({next})")));
            }
            url = next;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let too_large = || FetchError::TooLarge {
            url: url.to_string(),
            limit: policy.max_bytes,
        };
        if response
            .content_length()
            .is_some_and(|n| n > policy.max_bytes as u64)
        {
            return Err(too_large());
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let sink_failed = |e: std::io::Error| FetchError::Sink {
            url: url.to_string(),
            reason: e.to_string(),
        };
        sink(Chunk::Length(response.content_length())).map_err(sink_failed)?;
        let mut read = 0usize;
        while let Some(chunk) = response.chunk().await.map_err(network)? {
            read += chunk.len();
            if read > policy.max_bytes {
                return Err(too_large());
            }
            sink(Chunk::Data(&chunk)).map_err(sink_failed)?;
        }
        return Ok(Streamed {
            url,
            status: status.as_u16(),
            content_type,
        });
    }
}

/// A client that can only connect to the addresses checked for `url`'s host.
async fn pinned_client(
    url: &Url,
    policy: &NetPolicy,
    deadline: Instant,
) -> Result<reqwest::Client, FetchError> {
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let trusted = policy.trusted_origin.is_some() && policy.trusted_origin == origin_of(url);
    let addrs = resolve_checked(&SystemResolver, &host, port, |_| {
        policy.allow_private || trusted
    })
    .await
    .map_err(|e| match e {
        AddressError::NonPublic { host, addr } => FetchError::PrivateAddress {
            url: url.to_string(),
            host,
            addr,
        },
        AddressError::Resolve { host, reason } => FetchError::Resolve {
            url: url.to_string(),
            host,
            reason,
        },
    })?;
    let remaining = deadline.saturating_duration_since(Instant::now());
    reqwest::Client::builder()
        .redirect(Policy::none())
        .no_proxy()
        .connect_timeout(remaining)
        .timeout(remaining)
        .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")))
        .resolve_to_addrs(&host, &addrs)
        .build()
        .map_err(|e| FetchError::Network {
            url: url.to_string(),
            reason: describe(&e),
        })
}

/// The error with its causes (reqwest's own message is often just "error sending
/// request").
pub(super) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_http_urls() {
        assert!(parse_http_url("https://example.com/a/SKILL.md").is_ok());
        assert!(parse_http_url("http://127.0.0.1:8080/x").is_ok());
        for (bad, code) in [
            ("file:///etc/passwd", "url-scheme"),
            ("ftp://example.com/x", "url-scheme"),
            ("javascript:alert(1)", "url-scheme"),
            ("not a url", "bad-url"),
            ("", "bad-url"),
        ] {
            assert_eq!(parse_http_url(bad).unwrap_err().code(), code, "{bad}");
        }
        let url = parse_http_url("https://Example.COM/x").unwrap();
        assert_eq!(origin_of(&url).as_deref(), Some("example.com:443"));
    }

    use crate::net::test_server::{answer, serve};

    #[tokio::test]
    async fn refuses_private_addresses_and_rechecks_redirects() {
        let addr = serve(vec![answer("200 OK", "", b"hello")]).await;
        let url = format!("http://{addr}/x");
        let strict = NetPolicy::for_url(false, 1024 * 1024);
        let e = get(&url, &strict).await.unwrap_err();
        assert_eq!(e.code(), "private-address", "{e}");
        let open = NetPolicy::for_url(true, 1024 * 1024);
        assert_eq!(get(&url, &open).await.unwrap().bytes, b"hello");

        // The trusted origin may be private; its redirect to another host may not.
        let target = serve(vec![answer("200 OK", "", b"secret")]).await;
        let location = format!("Location: http://localhost:{}/s\r\n", target.port());
        let origin = serve(vec![answer("302 Found", &location, b"")]).await;
        let trusting = NetPolicy {
            trusted_origin: Some(format!("127.0.0.1:{}", origin.port())),
            ..NetPolicy::for_url(false, 1024 * 1024)
        };
        let e = get(&format!("http://{origin}/r"), &trusting)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "private-address", "{e}");
    }

    #[tokio::test]
    async fn bounds_redirects_schemes_and_size() {
        let to_file = serve(vec![answer(
            "301 Moved",
            "Location: file:///etc/passwd\r\n",
            b"",
        )])
        .await;
        let open = NetPolicy::for_url(true, 1024 * 1024);
        let e = get(&format!("http://{to_file}/"), &open).await.unwrap_err();
        assert_eq!(e.code(), "bad-redirect", "{e}");

        let looping = serve(vec![answer("302 Found", "Location: /again\r\n", b""); 8]).await;
        let e = get(&format!("http://{looping}/"), &open).await.unwrap_err();
        assert_eq!(e.code(), "too-many-redirects", "{e}");

        let big = vec![b'a'; 2000];
        let small = NetPolicy {
            max_bytes: 1000,
            ..NetPolicy::for_url(true, 1024 * 1024)
        };
        let declared = serve(vec![answer("200 OK", "", &big)]).await;
        let e = get(&format!("http://{declared}/"), &small)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "too-large");
        // No Content-Length: the read stops past the limit.
        let mut streamed = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
        streamed.extend_from_slice(&big);
        let undeclared = serve(vec![streamed]).await;
        let e = get(&format!("http://{undeclared}/"), &small)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "too-large");

        let missing = serve(vec![answer("404 Not Found", "", b"no")]).await;
        let e = get(&format!("http://{missing}/"), &open).await.unwrap_err();
        assert_eq!(e.code(), "http-status");
        assert!(!e.is_unreachable());
    }
}

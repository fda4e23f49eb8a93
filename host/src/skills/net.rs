//! Outbound HTTP for skills (registry requests, installs from a URL), treating every
//! answer as hostile:
//!
//! - `http` and `https` only; a redirect is followed by hand (at most
//!   [`MAX_REDIRECTS`]) and every hop is checked again as if it were the first, and a
//!   redirect from `https` to `http` is refused;
//! - the host is resolved once per hop, every address it resolves to is checked, and
//!   the connection goes to exactly those addresses (`resolve_to_addrs`), so a DNS
//!   answer that changes between the check and the connect (rebinding) cannot lead
//!   anywhere unchecked. Loopback, private, link-local, unique-local, CGNAT,
//!   unspecified, multicast and reserved addresses ([`is_non_public`]) are refused
//!   unless `network.allowPrivate` is set, or the hop is to the trusted origin (the
//!   registry the operator configured, which may well be on a private network);
//! - one deadline for the whole fetch, redirects included; no proxy from the
//!   environment (a proxy would resolve names we never checked);
//! - the body is read chunk by chunk and the read stops as soon as it passes the
//!   limit (a `Content-Length` over the limit is refused before reading).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

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
    /// The policy for installing from a URL: 1 MiB, 10 s, no trusted origin.
    pub fn for_url(allow_private: bool) -> NetPolicy {
        NetPolicy {
            allow_private,
            timeout: URL_TIMEOUT,
            max_bytes: super::MAX_SKILL_FILE_BYTES,
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
    let start = parse_http_url(url)?;
    match tokio::time::timeout(policy.timeout, get_inner(start, policy)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout {
            url: url.to_string(),
            timeout: policy.timeout,
        }),
    }
}

async fn get_inner(mut url: Url, policy: &NetPolicy) -> Result<Fetched, FetchError> {
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
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(network)? {
            if bytes.len() + chunk.len() > policy.max_bytes {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        return Ok(Fetched {
            url,
            status: status.as_u16(),
            content_type,
            bytes,
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
    let check = |addr: IpAddr| {
        if policy.allow_private || trusted || !is_non_public(addr) {
            Ok(())
        } else {
            Err(FetchError::PrivateAddress {
                url: url.to_string(),
                host: host.clone(),
                addr,
            })
        }
    };
    let remaining = deadline.saturating_duration_since(Instant::now());
    let mut builder = reqwest::Client::builder()
        .redirect(Policy::none())
        .no_proxy()
        .connect_timeout(remaining)
        .timeout(remaining)
        .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")));
    let literal = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(&host)
        .parse::<IpAddr>();
    match literal {
        Ok(ip) => check(ip)?,
        Err(_) => {
            let resolve_error = |reason: String| FetchError::Resolve {
                url: url.to_string(),
                host: host.clone(),
                reason,
            };
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|e| resolve_error(e.to_string()))?
                .collect();
            if addrs.is_empty() {
                return Err(resolve_error("no address".into()));
            }
            for addr in &addrs {
                check(addr.ip())?;
            }
            builder = builder.resolve_to_addrs(&host, &addrs);
        }
    }
    builder.build().map_err(|e| FetchError::Network {
        url: url.to_string(),
        reason: describe(&e),
    })
}

/// The error with its causes (reqwest's own message is often just "error sending
/// request").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Addresses a URL from outside must not reach: loopback, private (RFC 1918),
/// link-local, unique-local (fc00::/7), CGNAT (100.64.0.0/10), unspecified, broadcast,
/// multicast, documentation, benchmarking and reserved ranges, and IPv6 forms that
/// embed an IPv4 address (mapped, compatible, NAT64, 6to4) when that address is one of
/// these; Teredo (which hides its address) is refused outright.
pub fn is_non_public(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4_non_public(v4),
        IpAddr::V6(v6) => v6_non_public(v6),
    }
}

fn v4_non_public(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || a == 0                                   // "this network" 0.0.0.0/8
        || ip.is_loopback()                         // 127.0.0.0/8
        || ip.is_private()                          // 10/8, 172.16/12, 192.168/16
        || ip.is_link_local()                       // 169.254/16
        || (a == 100 && (64..128).contains(&b))     // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0)           // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)           // TEST-NET-1
        || (a == 198 && b == 51 && c == 100)        // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)         // TEST-NET-3
        || (a == 198 && (b == 18 || b == 19))       // benchmarking
        || (a == 192 && b == 88 && c == 99)         // 6to4 relay anycast
        || ip.is_multicast()                        // 224/4
        || a >= 240 // reserved 240/4 and broadcast
}

fn v6_non_public(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_non_public(v4);
    }
    // IPv4-compatible (deprecated) ::a.b.c.d, but not :: and ::1 themselves.
    if seg[..6] == [0; 6] && !(ip.is_unspecified() || ip.is_loopback()) {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    // NAT64 64:ff9b::/96 embeds the IPv4 address in the last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    // 6to4 2002::/16 embeds it in bits 16-48.
    if seg[0] == 0x2002 {
        let [a, b] = seg[1].to_be_bytes();
        let [c, d] = seg[2].to_be_bytes();
        return v4_non_public(Ipv4Addr::new(a, b, c, d));
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00     // unique-local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80     // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0     // site-local (deprecated) fec0::/10
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x2001 && seg[1] == 0) // Teredo 2001::/32
        || seg[0] == 0x0100 && seg[1..4] == [0, 0, 0] // discard-only 100::/64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_net_classifies_addresses() {
        for private in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.2.5",
            "198.18.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "2001::1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(is_non_public(ip), "{private} should be refused");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(!is_non_public(ip), "{public} should be allowed");
        }
    }

    #[test]
    fn skills_net_accepts_only_http_urls() {
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

    /// A one-shot loopback HTTP server answering each connection with the next of
    /// `responses`.
    async fn serve(responses: Vec<Vec<u8>>) -> SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for response in responses {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let _ = stream.write_all(&response).await;
                let _ = stream.shutdown().await;
            }
        });
        addr
    }

    fn answer(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    }

    #[tokio::test]
    async fn skills_net_refuses_private_addresses_and_rechecks_redirects() {
        let addr = serve(vec![answer("200 OK", "", b"hello")]).await;
        let url = format!("http://{addr}/x");
        let strict = NetPolicy::for_url(false);
        let e = get(&url, &strict).await.unwrap_err();
        assert_eq!(e.code(), "private-address", "{e}");
        let open = NetPolicy::for_url(true);
        assert_eq!(get(&url, &open).await.unwrap().bytes, b"hello");

        // The trusted origin may be private; its redirect to another host may not.
        let target = serve(vec![answer("200 OK", "", b"secret")]).await;
        let location = format!("Location: http://localhost:{}/s\r\n", target.port());
        let origin = serve(vec![answer("302 Found", &location, b"")]).await;
        let trusting = NetPolicy {
            trusted_origin: Some(format!("127.0.0.1:{}", origin.port())),
            ..NetPolicy::for_url(false)
        };
        let e = get(&format!("http://{origin}/r"), &trusting)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "private-address", "{e}");
    }

    #[tokio::test]
    async fn skills_net_bounds_redirects_schemes_and_size() {
        let to_file = serve(vec![answer(
            "301 Moved",
            "Location: file:///etc/passwd\r\n",
            b"",
        )])
        .await;
        let open = NetPolicy::for_url(true);
        let e = get(&format!("http://{to_file}/"), &open).await.unwrap_err();
        assert_eq!(e.code(), "bad-redirect", "{e}");

        let looping = serve(vec![answer("302 Found", "Location: /again\r\n", b""); 8]).await;
        let e = get(&format!("http://{looping}/"), &open).await.unwrap_err();
        assert_eq!(e.code(), "too-many-redirects", "{e}");

        let big = vec![b'a'; 2000];
        let small = NetPolicy {
            max_bytes: 1000,
            ..NetPolicy::for_url(true)
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

//! Name resolution with the address rules applied: a host is resolved once, every
//! address it resolves to is checked, and the caller connects to exactly the addresses
//! returned. Both outbound paths use it: the fetch client (`client.rs`) and plugins'
//! `wasi:http` (`runtime/host/http.rs`).

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

use super::address::is_non_public;

/// Resolves a host name. The daemon uses the system's resolver; tests give names the
/// answers they need without touching `/etc/hosts`.
pub trait Resolve: Send + Sync {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;
}

/// The operating system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Why a host's addresses may not be connected to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("{host} resolves to {addr}, a loopback, private or otherwise non-public address")]
    NonPublic { host: String, addr: IpAddr },
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
}

/// The IP address in `host` when it is a literal (`10.0.0.1`, `[::1]` or `::1`).
pub fn ip_literal(host: &str) -> Option<IpAddr> {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()
}

/// The addresses to connect to for `host:port`: the literal itself, or every address
/// the name resolves to. Each must be public or accepted by `may_be_private`;
/// one that is neither refuses the whole host (a name with one private answer among
/// public ones is a rebinding attempt as much as a name with only private ones).
pub async fn resolve_checked(
    resolver: &dyn Resolve,
    host: &str,
    port: u16,
    may_be_private: impl Fn(IpAddr) -> bool,
) -> Result<Vec<SocketAddr>, AddressError> {
    let addrs = match ip_literal(host) {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => {
            let failed = |reason: String| AddressError::Resolve {
                host: host.to_string(),
                reason,
            };
            let addrs = resolver
                .lookup(host, port)
                .await
                .map_err(|e| failed(e.to_string()))?;
            if addrs.is_empty() {
                return Err(failed("no address".into()));
            }
            addrs
        }
    };
    if let Some(bad) = addrs
        .iter()
        .find(|a| is_non_public(a.ip()) && !may_be_private(a.ip()))
    {
        return Err(AddressError::NonPublic {
            host: host.to_string(),
            addr: bad.ip(),
        });
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolver with fixed answers (there is no DNS server on the test machines).
    struct Fixed(Vec<IpAddr>);

    impl Resolve for Fixed {
        fn lookup<'a>(
            &'a self,
            _host: &'a str,
            port: u16,
        ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>> {
            let addrs = self.0.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
            Box::pin(async move { Ok(addrs) })
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[tokio::test]
    async fn checks_every_address_of_a_name() {
        let public = Fixed(vec![ip("93.184.216.34")]);
        let addrs = resolve_checked(&public, "example.com", 443, |_| false)
            .await
            .expect("public");
        assert_eq!(addrs, vec![SocketAddr::new(ip("93.184.216.34"), 443)]);

        let mixed = Fixed(vec![ip("93.184.216.34"), ip("10.0.0.7")]);
        let e = resolve_checked(&mixed, "example.com", 443, |_| false)
            .await
            .expect_err("one private answer refuses the host");
        assert_eq!(
            e,
            AddressError::NonPublic {
                host: "example.com".into(),
                addr: ip("10.0.0.7")
            }
        );
        let allowed = resolve_checked(&mixed, "example.com", 443, |a| a == ip("10.0.0.7"))
            .await
            .expect("that address is allowed");
        assert_eq!(allowed.len(), 2);

        let nothing = Fixed(Vec::new());
        assert!(matches!(
            resolve_checked(&nothing, "example.com", 80, |_| true).await,
            Err(AddressError::Resolve { .. })
        ));
    }

    #[tokio::test]
    async fn literals_are_checked_without_a_lookup() {
        let never = Fixed(vec![ip("1.1.1.1")]);
        let e = resolve_checked(&never, "[::1]", 80, |_| false)
            .await
            .expect_err("loopback");
        assert!(matches!(e, AddressError::NonPublic { .. }));
        let ok = resolve_checked(&never, "127.0.0.1", 8080, |a| a.is_loopback())
            .await
            .expect("allowed");
        assert_eq!(ok, vec![SocketAddr::new(ip("127.0.0.1"), 8080)]);
        assert_eq!(ip_literal("[fe80::1]"), Some(ip("fe80::1")));
        assert_eq!(ip_literal("example.com"), None);
    }
}

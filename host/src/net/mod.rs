//! Outbound HTTP: the one client Engram uses to reach another machine (registry
//! requests, installs from a URL, the `fetch_url` host tool), treating every answer as
//! hostile, and the address rules plugins' `wasi:http` shares (`resolve_checked`):
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
//!
//! The services the operator configured (the model endpoint, the Telegram Bot API) are
//! reached through an [`Endpoint`] instead: bound to that one origin, which may be
//! private (`endpoint.rs` says why that opens nothing else).

mod address;
mod client;
mod endpoint;
pub mod host_pattern;
mod resolve;
#[cfg(test)]
mod test_server;

pub use address::is_non_public;
pub use client::{
    Chunk, FetchError, Fetched, MAX_REDIRECTS, NetPolicy, Sink, Streamed, URL_TIMEOUT, get,
    get_into, origin_of, parse_http_url,
};
pub use endpoint::{Answer, Endpoint};
pub use resolve::{AddressError, Resolve, SystemResolver, ip_literal, resolve_checked};

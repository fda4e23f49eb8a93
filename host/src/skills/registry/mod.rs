//! Skills from elsewhere: the registry protocol (`mercury-skills-registry@1`) as a
//! client (`client`: feed, detail, verified installs) and as a server over a mirror
//! directory (`server`), installs that bypass a registry (`direct`: a URL of a raw
//! SKILL.md, a file or a directory), `update` over all of them, and the hostile-input
//! readers they share: `feed` (the feed and its search) and `archive` (tarballs).
//! Every request goes through `crate::net`.

pub mod archive;
pub mod build;
pub mod client;
pub mod direct;
pub mod error;
pub mod feed;
pub mod server;
pub mod update;

pub use client::{RegistryClient, RegistrySource, RegistryUrl, skill_page_url};
pub use error::RegistryError;

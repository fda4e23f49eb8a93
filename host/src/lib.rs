//! Engram: a local memory-and-skills host for AI agents. See ARCHITECTURE.md at the
//! repository root for the codemap.

pub mod agent;
pub mod api;
pub mod app;
pub mod background;
pub mod backup;
pub mod channels;
pub mod cli;
pub mod config;
pub mod connections;
pub mod credentials;
pub mod dashboard;
pub mod described;
pub mod embed;
pub mod events;
pub mod gate;
pub mod html;
pub mod ids;
pub mod installs;
pub mod lock;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod net;
pub mod paths;
pub mod pg;
pub mod routing;
pub mod runtime;
pub mod schedule;
pub mod server;
pub mod skills;
pub mod sql;
pub mod sqlite;
pub mod storage;
pub mod strict_json;
pub mod term_text;
pub mod time;
pub mod tools;
pub mod turns;
pub mod upkeep;

/// The integration tests' generator, for the unit tests too.
#[cfg(test)]
#[path = "../tests/support/rng.rs"]
mod test_rng;

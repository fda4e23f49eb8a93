//! Typed failures of plugin loading and plugin calls. Every failure of a plugin is one
//! of these values, never a panic of the host: callers decide whether to fall back.

use std::path::PathBuf;

use super::world::World;

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("invalid plugin manifest {path}: {reason}")]
    InvalidManifest { path: PathBuf, reason: String },

    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{name}: plugin.wasm is not a WebAssembly component: {reason}")]
    NotAComponent { name: String, reason: String },

    #[error(
        "{name}: the component does not implement the `{world}` world its manifest declares: {reason}"
    )]
    WorldMismatch {
        name: String,
        world: World,
        reason: String,
    },

    #[error("{name} is a `{actual}` plugin, not a `{expected}` one")]
    WrongWorld {
        name: String,
        expected: World,
        actual: World,
    },

    #[error("no plugin named `{0}` (installed plugins: `engram plugins list`)")]
    UnknownPlugin(String),

    #[error("{name} ({hash}): exceeded its deadline of {deadline_ms} ms and was stopped")]
    Timeout {
        name: String,
        hash: String,
        deadline_ms: u64,
    },

    #[error("{name} ({hash}): tried to grow its memory past its limit of {limit_mib} MiB")]
    MemoryLimit {
        name: String,
        hash: String,
        limit_mib: u64,
    },

    #[error("{name} ({hash}): trapped: {detail}")]
    Trap {
        name: String,
        hash: String,
        detail: String,
    },

    #[error("{name} ({hash}): returned an invalid result: {reason}")]
    InvalidResult {
        name: String,
        hash: String,
        reason: String,
    },

    #[error("plugin runtime: {0}")]
    Runtime(String),
}

impl PluginError {
    /// A short stable code for logs, the CLI's --json output and API problem documents.
    pub fn code(&self) -> &'static str {
        match self {
            PluginError::InvalidManifest { .. } => "invalid-manifest",
            PluginError::Io { .. } => "io",
            PluginError::NotAComponent { .. } => "not-a-component",
            PluginError::WorldMismatch { .. } => "world-mismatch",
            PluginError::WrongWorld { .. } => "wrong-world",
            PluginError::UnknownPlugin(_) => "unknown-plugin",
            PluginError::Timeout { .. } => "timeout",
            PluginError::MemoryLimit { .. } => "memory-limit",
            PluginError::Trap { .. } => "trap",
            PluginError::InvalidResult { .. } => "invalid-result",
            PluginError::Runtime(_) => "runtime",
        }
    }
}

//! The WebAssembly plugin runtime: one shared engine, validated plugin packages, a
//! compile cache, a fresh store per call under memory and time limits, and the host
//! side of `wit/`. Callers get typed errors ([`PluginError`]) and never a trapped
//! instance twice: every call instantiates anew from the plugin's `InstancePre`.

pub mod bindings;
mod cache;
mod convert;
mod engine;
pub mod error;
pub mod host;
pub mod manifest;
mod plugin;
pub mod registry;
pub mod strategies;
mod validate;

pub use cache::CacheOutcome;
pub use error::PluginError;
pub use host::{
    DenyAllGate, HostServices, KvStore, MemoryQuery, MemorySource, NoMemories, ToolCaller,
    ToolDenied, ToolGate,
};
pub use manifest::{Manifest, World};
pub use plugin::{Plugin, PluginSource, Runtime, RuntimeOptions};

/// The default strategies compiled from `plugins/` and embedded in this binary.
pub mod builtin {
    /// One embedded plugin package.
    pub struct Builtin {
        pub name: &'static str,
        pub manifest: &'static str,
        pub wasm: &'static [u8],
    }

    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

    /// Prefix that names an embedded plugin in configuration (`builtin:extract-rules`).
    pub const PREFIX: &str = "builtin:";

    pub fn find(name: &str) -> Option<&'static Builtin> {
        BUILTINS.iter().find(|b| b.name == name)
    }
}

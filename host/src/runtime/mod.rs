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
pub mod packages;
mod plugin;
mod script;
pub mod strategies;
mod validate;
pub mod world;

pub use cache::CacheOutcome;
pub use error::PluginError;
pub use host::{
    DenyAllGate, FixedSettings, HostServices, KV_PG_SCHEMA, KV_SCHEMA, KvStore, MemoryQuery,
    MemorySource, NoMemories, PluginSettings, ToolCaller, ToolDenied, ToolGate,
};
pub use manifest::{Manifest, ScriptManifest};
pub use plugin::{
    MAX_SKILL_ARGS_BYTES, MAX_SKILL_OUTPUT_BYTES, Plugin, PluginSource, Runtime, RuntimeOptions,
};
pub use script::{SCRIPTS_DIR, SKILL_MOUNT};
pub use world::World;

/// The default strategies compiled from `plugins/` and embedded in this binary.
pub mod builtin {
    /// One embedded plugin package.
    pub struct Builtin {
        pub name: &'static str,
        pub manifest: &'static str,
        pub wasm: &'static [u8],
    }

    /// One embedded skill script (`plugins/skill-scripts/<name>`), a `skill-tool`
    /// component a skill ships as `scripts/<name>.wasm`.
    pub struct SkillScript {
        pub name: &'static str,
        /// Its `scripts/<name>.toml`, when it needs one.
        pub manifest: Option<&'static str>,
        pub wasm: &'static [u8],
    }

    include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

    pub fn skill_script(name: &str) -> Option<&'static SkillScript> {
        SKILL_SCRIPTS.iter().find(|s| s.name == name)
    }

    /// Prefix that names an embedded plugin in configuration (`builtin:extract-rules`).
    pub const PREFIX: &str = "builtin:";

    pub fn find(name: &str) -> Option<&'static Builtin> {
        BUILTINS.iter().find(|b| b.name == name)
    }
}

//! The host side of the WIT contract: the per-call store state and one module per
//! host interface. Each module is the single place where its interface's capability
//! check happens (kv: the manifest's `kv` grant; tools: the manifest's `tools` list,
//! then the gate; memories: the calling user; config: the plugin's own entry; HTTP:
//! `allowed-hosts` and the address rules).

pub mod config;
pub mod http;
pub mod kv;
pub mod log;
pub mod memories;
pub mod stderr;
pub mod tools;

use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::manifest::Permissions;
use crate::config::PluginConfig;
use crate::net::{Resolve, SystemResolver};

pub use config::{FixedSettings, PluginSettings};
pub use kv::{KvStore, PG_SCHEMA as KV_PG_SCHEMA, SCHEMA as KV_SCHEMA};
pub use memories::{MemoryQuery, MemorySource, NoMemories};
pub use tools::{DenyAllGate, ToolCaller, ToolDenied, ToolGate};

/// The host services every call can reach, shared by all plugins.
#[derive(Clone)]
pub struct HostServices {
    pub memories: Arc<dyn MemorySource>,
    pub gate: Arc<dyn ToolGate>,
    pub kv: KvStore,
    /// Plugins' entries in config.yaml and the secrets they name.
    pub settings: Arc<dyn PluginSettings>,
    /// How plugins' HTTP requests resolve host names.
    pub resolver: Arc<dyn Resolve>,
}

impl HostServices {
    /// Services with no plugin settings and the system's resolver.
    pub fn new(
        memories: Arc<dyn MemorySource>,
        gate: Arc<dyn ToolGate>,
        kv: KvStore,
    ) -> HostServices {
        HostServices {
            memories,
            gate,
            kv,
            settings: Arc::new(FixedSettings::default()),
            resolver: Arc::new(SystemResolver),
        }
    }

    pub fn with_settings(self, settings: Arc<dyn PluginSettings>) -> HostServices {
        HostServices { settings, ..self }
    }

    pub fn with_resolver(self, resolver: Arc<dyn Resolve>) -> HostServices {
        HostServices { resolver, ..self }
    }
}

/// Who is calling: the plugin (for logs, kv and grants) and the user it acts for.
#[derive(Debug, Clone)]
pub struct PluginIdentity {
    pub name: String,
    /// sha256 of plugin.wasm, shortened to 12 hex digits for logs.
    pub short_hash: String,
    pub permissions: Permissions,
    /// The key of its entry in config.yaml (`plugins.<key>`): its manifest name.
    /// `None` for skill scripts, which have no entry.
    pub settings_key: Option<String>,
}

/// The state of one `Store`: created for one call and dropped after it, so nothing a
/// plugin does survives a call except through kv.
pub struct CallState {
    pub(crate) plugin: Arc<PluginIdentity>,
    pub(crate) user_id: String,
    /// The turn a skill-tool call belongs to, for the gate.
    pub(crate) turn_id: Option<String>,
    /// When the call's time is up (its timeout from the store's creation, as the
    /// epoch deadline counts it): host calls made for it are bounded by this.
    pub(crate) deadline: std::time::Instant,
    pub(crate) services: HostServices,
    pub(crate) limiter: MemoryLimiter,
    /// The plugin's entry in config.yaml, as it was when the call started.
    pub(crate) settings: Option<PluginConfig>,
    /// The end of what the guest wrote to stderr, for the error if it traps.
    pub(crate) stderr: stderr::StderrTail,
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_policy: http::HttpPolicy,
}

impl CallState {
    pub(crate) fn new(
        plugin: Arc<PluginIdentity>,
        user_id: &str,
        turn_id: Option<String>,
        services: HostServices,
        memory_limit_bytes: usize,
        timeout: std::time::Duration,
        mut wasi: WasiCtxBuilder,
    ) -> CallState {
        let stderr = stderr::StderrTail::default();
        wasi.stderr(stderr.clone());
        let deadline = std::time::Instant::now() + timeout;
        let settings = plugin
            .settings_key
            .as_deref()
            .and_then(|key| services.settings.entry(key));
        let http_policy = http::HttpPolicy::new(
            plugin.clone(),
            settings.as_ref(),
            services.resolver.clone(),
            deadline,
        );
        CallState {
            plugin,
            user_id: user_id.to_string(),
            turn_id,
            deadline,
            services,
            settings,
            stderr,
            limiter: MemoryLimiter {
                limit_bytes: memory_limit_bytes,
                exceeded: false,
            },
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_policy,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_policy,
        }
    }
}

/// Caps a call's linear memory. Growing past the cap fails the call with a trap that
/// the runtime reports as `PluginError::MemoryLimit` (the flag tells it apart from
/// other traps, since a guest's allocator may turn the failed grow into its own abort).
pub(crate) struct MemoryLimiter {
    pub(crate) limit_bytes: usize,
    pub(crate) exceeded: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit_bytes {
            self.exceeded = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a guest needing more than this is broken.
        Ok(desired <= 100_000)
    }
}

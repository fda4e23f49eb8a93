//! The host side of the WIT contract: the per-call store state and one module per
//! host interface. Each module is the single place where its interface's capability
//! check happens (kv: the manifest's `kv` grant; tools: the manifest's `tools` list,
//! then the gate; memories: the calling user; HTTP: `allowed-hosts`).

pub mod http;
pub mod kv;
pub mod log;
pub mod memories;
pub mod tools;

use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::manifest::Permissions;

pub use kv::KvStore;
pub use memories::{MemoryQuery, MemorySource, NoMemories};
pub use tools::{DenyAllGate, ToolCaller, ToolDenied, ToolGate};

/// The host services every call can reach, shared by all plugins.
#[derive(Clone)]
pub struct HostServices {
    pub memories: Arc<dyn MemorySource>,
    pub gate: Arc<dyn ToolGate>,
    pub kv: KvStore,
}

/// Who is calling: the plugin (for logs, kv and grants) and the user it acts for.
#[derive(Debug, Clone)]
pub struct PluginIdentity {
    pub name: String,
    /// sha256 of plugin.wasm, shortened to 12 hex digits for logs.
    pub short_hash: String,
    pub permissions: Permissions,
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
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_filter: http::AllowedHosts,
}

impl CallState {
    pub(crate) fn new(
        plugin: Arc<PluginIdentity>,
        user_id: &str,
        turn_id: Option<String>,
        services: HostServices,
        memory_limit_bytes: usize,
        timeout: std::time::Duration,
        wasi: WasiCtx,
    ) -> CallState {
        let http_filter = http::AllowedHosts::new(plugin.clone(), timeout);
        CallState {
            plugin,
            user_id: user_id.to_string(),
            turn_id,
            deadline: std::time::Instant::now() + timeout,
            services,
            limiter: MemoryLimiter {
                limit_bytes: memory_limit_bytes,
                exceeded: false,
            },
            wasi,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_filter,
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
            hooks: &mut self.http_filter,
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

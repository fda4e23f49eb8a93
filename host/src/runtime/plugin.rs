//! Loading plugin packages into `InstancePre`s and calling them, one fresh `Store` per
//! call.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use engram_strategies::model;
use sha2::{Digest, Sha256};
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Store, Trap};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::{
    config, consolidator, extractor, kv, log, memories, resolver, skill_tool, tools,
};
use super::builtin;
use super::cache::{CacheOutcome, CompileCache};
use super::convert;
use super::engine::SharedEngine;
use super::error::PluginError;
use super::host::{CallState, HostServices, PluginIdentity, ToolCaller};
use super::manifest::Manifest;
use super::validate;
use super::world::World;

/// Largest plugin.wasm accepted.
pub const MAX_WASM_BYTES: u64 = 64 * 1024 * 1024;
/// Largest output of a skill script.
pub const MAX_SKILL_OUTPUT_BYTES: usize = 1024 * 1024;
/// Largest arguments a skill script is given.
pub const MAX_SKILL_ARGS_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Memory limit for plugins whose manifest sets none.
    pub default_memory_mib: u64,
    /// Deadline for plugins whose manifest sets none.
    pub default_timeout: Duration,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            cache_dir: None,
            default_memory_mib: 64,
            default_timeout: Duration::from_secs(2),
        }
    }
}

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// Embedded in the binary; named `builtin:<name>`.
    Builtin,
    /// A package directory on disk.
    Directory(PathBuf),
}

/// A validated, compiled plugin, ready to be instantiated for each call.
pub struct Plugin {
    pub manifest: Manifest,
    /// sha256 of plugin.wasm, hex.
    pub sha256: String,
    pub wasm_bytes: usize,
    pub source: PluginSource,
    /// Whether loading hit the compile cache.
    pub cache: CacheOutcome,
    pub memory_limit_mib: u64,
    pub timeout: Duration,
    identity: Arc<PluginIdentity>,
    pre: WorldPre,
}

enum WorldPre {
    Extractor(extractor::ExtractorPre<CallState>),
    Resolver(resolver::ResolverPre<CallState>),
    Consolidator(consolidator::ConsolidatorPre<CallState>),
    SkillTool(skill_tool::SkillToolPre<CallState>),
}

impl Plugin {
    /// The name configuration uses: `builtin:<name>` for embedded plugins.
    pub fn qualified_name(&self) -> &str {
        &self.identity.name
    }

    pub fn world(&self) -> World {
        self.manifest.world
    }

    pub fn short_hash(&self) -> &str {
        &self.identity.short_hash
    }

    fn wrong_world(&self, expected: World) -> PluginError {
        PluginError::WrongWorld {
            name: self.qualified_name().to_string(),
            expected,
            actual: self.manifest.world,
        }
    }
}

pub struct Runtime {
    engine: SharedEngine,
    cache: CompileCache,
    memory_linker: Linker<CallState>,
    skill_linker: Linker<CallState>,
    services: HostServices,
    options: RuntimeOptions,
}

impl Runtime {
    pub fn new(options: RuntimeOptions, services: HostServices) -> Result<Runtime, PluginError> {
        let engine = SharedEngine::new()?;
        let memory_linker = linker(&engine, World::Extractor)?;
        let skill_linker = linker(&engine, World::SkillTool)?;
        Ok(Runtime {
            cache: CompileCache::new(options.cache_dir.clone()),
            engine,
            memory_linker,
            skill_linker,
            services,
            options,
        })
    }

    /// Drops an uninstalled plugin's key-value store.
    pub fn clear_kv(&self, plugin_name: &str) -> Result<(), PluginError> {
        self.services.kv.clear_plugin(plugin_name).map_err(|e| {
            PluginError::Runtime(format!("cannot clear the kv store of {plugin_name}: {e:?}"))
        })
    }

    pub fn uses_pooling_allocator(&self) -> bool {
        self.engine.pooled
    }

    pub fn epoch_ticker_running(&self) -> bool {
        self.engine.ticker_running()
    }

    /// Path of the cached artifact for a wasm hash, if the cache is on.
    pub fn cache_artifact_path(&self, wasm_sha256: &str) -> Option<PathBuf> {
        self.cache
            .artifact_path(wasm_sha256, &self.engine.fingerprint)
    }

    /// Loads an embedded plugin by its bare name (`extract-rules`).
    pub fn load_builtin(&self, name: &str) -> Result<Plugin, PluginError> {
        let found = builtin::find(name)
            .ok_or_else(|| PluginError::UnknownPlugin(format!("{}{name}", builtin::PREFIX)))?;
        let manifest =
            Manifest::parse(found.manifest).map_err(|reason| PluginError::InvalidManifest {
                path: PathBuf::from(format!("builtin:{name}/plugin.toml")),
                reason,
            })?;
        self.load(manifest, found.wasm, PluginSource::Builtin)
    }

    /// Loads a package directory (`plugin.toml` + `plugin.wasm`).
    pub fn load_dir(&self, dir: &Path) -> Result<Plugin, PluginError> {
        let manifest = Manifest::load(dir)?;
        let wasm_path = dir.join("plugin.wasm");
        let io_err = |source| PluginError::Io {
            path: wasm_path.clone(),
            source,
        };
        let size = std::fs::metadata(&wasm_path).map_err(io_err)?.len();
        if size > MAX_WASM_BYTES {
            return Err(PluginError::NotAComponent {
                name: manifest.name,
                reason: format!(
                    "plugin.wasm is {size} bytes, over the {MAX_WASM_BYTES}-byte limit"
                ),
            });
        }
        let wasm = std::fs::read(&wasm_path).map_err(io_err)?;
        self.load(manifest, &wasm, PluginSource::Directory(dir.to_path_buf()))
    }

    /// Compiles (or fetches from the cache) and links a component, and checks that it
    /// really implements the world its manifest declares.
    pub fn load(
        &self,
        manifest: Manifest,
        wasm: &[u8],
        source: PluginSource,
    ) -> Result<Plugin, PluginError> {
        let sha256 = hex::encode(Sha256::digest(wasm));
        let name = manifest.name.clone();
        let (component, cache) = self.cache.load(
            &self.engine.engine,
            &self.engine.fingerprint,
            &name,
            wasm,
            &sha256,
        )?;
        let world = manifest.world;
        let mismatch = |e: wasmtime::Error| PluginError::WorldMismatch {
            name: name.clone(),
            world,
            reason: format!("{e:#}"),
        };
        let linker = match world {
            World::SkillTool => &self.skill_linker,
            _ => &self.memory_linker,
        };
        let instance_pre = linker.instantiate_pre(&component).map_err(mismatch)?;
        let pre = match world {
            World::Extractor => {
                WorldPre::Extractor(extractor::ExtractorPre::new(instance_pre).map_err(mismatch)?)
            }
            World::Resolver => {
                WorldPre::Resolver(resolver::ResolverPre::new(instance_pre).map_err(mismatch)?)
            }
            World::Consolidator => WorldPre::Consolidator(
                consolidator::ConsolidatorPre::new(instance_pre).map_err(mismatch)?,
            ),
            World::SkillTool => {
                WorldPre::SkillTool(skill_tool::SkillToolPre::new(instance_pre).map_err(mismatch)?)
            }
        };
        let memory_limit_mib = manifest
            .limits
            .memory_mib
            .unwrap_or(self.options.default_memory_mib);
        let timeout = manifest
            .limits
            .timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.options.default_timeout);
        // A skill script (`<skill>/scripts/<name>.wasm`) is named after its skill and has
        // no entry in config.yaml; every other plugin is configured by its manifest name.
        let script_of = match &source {
            PluginSource::Directory(path) if world == World::SkillTool && path.is_file() => path
                .parent()
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned()),
            _ => None,
        };
        let identity = Arc::new(PluginIdentity {
            name: match (&source, &script_of) {
                (PluginSource::Builtin, _) => format!("{}{}", builtin::PREFIX, manifest.name),
                (_, Some(skill)) => format!("skill:{skill}/{}", manifest.name),
                (PluginSource::Directory(_), None) => manifest.name.clone(),
            },
            short_hash: sha256[..12].to_string(),
            permissions: manifest.permissions.clone(),
            settings_key: script_of.is_none().then(|| manifest.name.clone()),
        });
        Ok(Plugin {
            manifest,
            wasm_bytes: wasm.len(),
            sha256,
            source,
            cache,
            memory_limit_mib,
            timeout,
            identity,
            pre,
        })
    }

    pub fn extract(
        &self,
        plugin: &Plugin,
        conversation: &model::Conversation,
        now: i64,
    ) -> Result<Vec<model::Candidate>, PluginError> {
        let WorldPre::Extractor(pre) = &plugin.pre else {
            return Err(plugin.wrong_world(World::Extractor));
        };
        let mut store = self.store(plugin, &conversation.user_id, None, WasiCtxBuilder::new());
        let input = convert::conversation_to_wit(conversation);
        let output = pre
            .instantiate(&mut store)
            .and_then(|bindings| bindings.call_extract(&mut store, &input, now))
            .map_err(|e| classify(plugin, &store, e))?;
        // Checked before conversion: a flood of candidates is refused, not copied.
        validate::candidate_count(output.len()).map_err(|r| invalid(plugin, r))?;
        let candidates: Vec<model::Candidate> = output
            .into_iter()
            .map(convert::candidate_from_wit)
            .collect();
        validate::candidates(&candidates, conversation).map_err(|r| invalid(plugin, r))?;
        Ok(candidates)
    }

    pub fn resolve(
        &self,
        plugin: &Plugin,
        user_id: &str,
        candidate: &model::Candidate,
        related: &[model::Memory],
    ) -> Result<model::Resolution, PluginError> {
        let WorldPre::Resolver(pre) = &plugin.pre else {
            return Err(plugin.wrong_world(World::Resolver));
        };
        let mut store = self.store(plugin, user_id, None, WasiCtxBuilder::new());
        let input = convert::candidate_to_wit(candidate);
        let related_wit: Vec<_> = related.iter().map(convert::memory_to_wit).collect();
        let output = pre
            .instantiate(&mut store)
            .and_then(|bindings| bindings.call_resolve(&mut store, &input, &related_wit))
            .map_err(|e| classify(plugin, &store, e))?;
        let resolution = convert::resolution_from_wit(output);
        validate::resolution(&resolution, related).map_err(|r| invalid(plugin, r))?;
        Ok(resolution)
    }

    pub fn consolidate(
        &self,
        plugin: &Plugin,
        snapshot: &model::Snapshot,
        now: i64,
    ) -> Result<model::Consolidation, PluginError> {
        let WorldPre::Consolidator(pre) = &plugin.pre else {
            return Err(plugin.wrong_world(World::Consolidator));
        };
        let mut store = self.store(plugin, &snapshot.user_id, None, WasiCtxBuilder::new());
        let input = convert::snapshot_to_wit(snapshot);
        let output = pre
            .instantiate(&mut store)
            .and_then(|bindings| bindings.call_consolidate(&mut store, &input, now))
            .map_err(|e| classify(plugin, &store, e))?;
        validate::reflection_count(output.reflections.len()).map_err(|r| invalid(plugin, r))?;
        let consolidation = convert::consolidation_from_wit(output);
        validate::consolidation(&consolidation, &snapshot.memories)
            .map_err(|r| invalid(plugin, r))?;
        Ok(consolidation)
    }

    /// Runs a skill script with its skill's directory preopened read-only at `/skill`
    /// (and nothing else: no env, no args, no sockets). `caller` gives the user and
    /// the turn its `tools.invoke` calls are gated under (its `plugin` and `deadline`
    /// are ignored: the gate sees the script's own name, and its tool calls the run's
    /// own deadline). The outer error is the runtime's (trap,
    /// timeout, ...); the inner one is the script's own error message.
    pub fn run_skill_tool(
        &self,
        plugin: &Plugin,
        caller: &ToolCaller,
        skill_dir: &Path,
        args_json: &str,
    ) -> Result<Result<String, String>, PluginError> {
        let WorldPre::SkillTool(pre) = &plugin.pre else {
            return Err(plugin.wrong_world(World::SkillTool));
        };
        if args_json.len() > MAX_SKILL_ARGS_BYTES {
            return Err(PluginError::Runtime(format!(
                "arguments of {} bytes, over {MAX_SKILL_ARGS_BYTES}",
                args_json.len()
            )));
        }
        // The preopen follows a symlink, so the skill directory must be a real one.
        let is_dir = std::fs::symlink_metadata(skill_dir).is_ok_and(|m| m.is_dir());
        if !is_dir {
            return Err(PluginError::Runtime(format!(
                "{} is not a skill directory (missing or a symlink)",
                skill_dir.display()
            )));
        }
        let mut wasi = WasiCtxBuilder::new();
        wasi.preopened_dir(skill_dir, super::SKILL_MOUNT, FsPerms::ReadOnly)
            .map_err(|e| {
                PluginError::Runtime(format!("cannot open {}: {e}", skill_dir.display()))
            })?;
        let mut store = self.store(plugin, &caller.user_id, caller.turn_id.clone(), wasi);
        let output = pre
            .instantiate(&mut store)
            .and_then(|bindings| bindings.call_run(&mut store, args_json))
            .map_err(|e| classify(plugin, &store, e))?;
        let size = match &output {
            Ok(s) | Err(s) => s.len(),
        };
        if size > MAX_SKILL_OUTPUT_BYTES {
            return Err(invalid(
                plugin,
                format!("output of {size} bytes, over {MAX_SKILL_OUTPUT_BYTES}"),
            ));
        }
        Ok(output)
    }

    /// A store for one call; `wasi` is sealed here (see [`seal`]) whatever it grants.
    fn store(
        &self,
        plugin: &Plugin,
        user_id: &str,
        turn_id: Option<String>,
        mut wasi: WasiCtxBuilder,
    ) -> Store<CallState> {
        seal(&mut wasi);
        let state = CallState::new(
            plugin.identity.clone(),
            user_id,
            turn_id,
            self.services.clone(),
            (plugin.memory_limit_mib as usize) << 20,
            plugin.timeout,
            wasi,
        );
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(SharedEngine::deadline_ticks(plugin.timeout));
        store.epoch_deadline_trap();
        store
    }
}

/// Only the imports a world needs: the memory worlds get log, config, kv and memories;
/// the skill-tool world gets log and tools. Both get WASI with nothing granted (the
/// context decides) and wasi:http filtered by allowed-hosts.
fn linker(engine: &SharedEngine, world: World) -> Result<Linker<CallState>, PluginError> {
    let build = || -> wasmtime::Result<Linker<CallState>> {
        let mut linker = Linker::new(&engine.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        log::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        if world == World::SkillTool {
            tools::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        } else {
            config::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
            kv::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
            memories::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        }
        Ok(linker)
    };
    build().map_err(|e| PluginError::Runtime(format!("cannot build the {world} linker: {e:#}")))
}

/// No files (but what the caller preopened), no environment, no arguments, no
/// sockets, no name lookups; stdin and stdout closed or discarded (the builder's
/// defaults), stderr kept by the store.
fn seal(wasi: &mut WasiCtxBuilder) {
    wasi.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
}

fn invalid(plugin: &Plugin, reason: String) -> PluginError {
    PluginError::InvalidResult {
        name: plugin.qualified_name().to_string(),
        hash: plugin.short_hash().to_string(),
        reason,
    }
}

fn classify(plugin: &Plugin, store: &Store<CallState>, error: wasmtime::Error) -> PluginError {
    let name = plugin.qualified_name().to_string();
    let hash = plugin.short_hash().to_string();
    if store.data().limiter.exceeded {
        return PluginError::MemoryLimit {
            name,
            hash,
            limit_mib: plugin.memory_limit_mib,
        };
    }
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return PluginError::Timeout {
            name,
            hash,
            deadline_ms: plugin.timeout.as_millis() as u64,
        };
    }
    // What the guest said last (a Rust panic's message) is the reason; the trap itself
    // then only needs its root cause, not the wasm backtrace.
    let detail = match store.data().stderr.summary() {
        Some(said) => format!("{said} ({})", error.root_cause()),
        None => format!("{error:#}"),
    };
    PluginError::Trap { name, hash, detail }
}

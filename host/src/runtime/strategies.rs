//! The memory strategies in use: which plugin runs extraction, resolution and
//! consolidation (`memory.strategies.*` in config.yaml, read at each call so a switch
//! needs no restart), and the fallback to the built-in strategy when a custom one
//! fails. A failure is logged with the plugin's name and hash, reported in the
//! [`Outcome`], and kept as the strategy's [`StrategyFailure`] for the brain status, never
//! hidden.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use engram_strategies::model;

use super::builtin;
use super::error::PluginError;
use super::packages::PluginPackages;
use super::plugin::{Plugin, Runtime};
use super::world::World;
use crate::config::ConfigFile;

/// The built-in plugin each memory world falls back to.
pub fn default_builtin(world: World) -> Option<&'static str> {
    match world {
        World::Extractor => Some("extract-rules"),
        World::Resolver => Some("resolve-default"),
        World::Consolidator => Some("consolidate-default"),
        World::SkillTool => None,
    }
}

/// The last time a strategy's configured plugin failed and the built-in one answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct StrategyFailure {
    /// The plugin that failed.
    pub plugin: String,
    /// The error's stable code (`trap`, `timeout`, `invalid-result`, ...).
    pub code: String,
    /// The error, with the plugin's own reason when it gave one.
    pub reason: String,
    /// When it failed (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub at: String,
}

/// A strategy's answer, with who gave it.
#[derive(Debug)]
pub struct Outcome<T> {
    pub value: T,
    /// Qualified name of the plugin that produced `value`.
    pub plugin: String,
    /// The configured plugin's failure, when `value` came from the built-in fallback.
    pub fallback_from: Option<PluginError>,
}

pub struct Strategies {
    runtime: Arc<Runtime>,
    packages: PluginPackages,
    config: Arc<ConfigFile>,
    builtins: HashMap<&'static str, Arc<Plugin>>,
    /// Installed plugins, and built-ins other than the defaults once first used
    /// (stamped empty: they never change).
    loaded: Mutex<HashMap<String, (Stamp, Arc<Plugin>)>>,
    failures: Mutex<HashMap<World, StrategyFailure>>,
}

/// Identifies a version of an installed package on disk without hashing it.
type Stamp = Vec<(SystemTime, u64)>;

impl Strategies {
    /// Loads the three built-in strategies (they must load: they are part of the binary).
    pub fn new(
        runtime: Arc<Runtime>,
        packages: PluginPackages,
        config: Arc<ConfigFile>,
    ) -> Result<Strategies, PluginError> {
        let mut builtins = HashMap::new();
        for world in [World::Extractor, World::Resolver, World::Consolidator] {
            if let Some(name) = default_builtin(world) {
                builtins.insert(name, Arc::new(runtime.load_builtin(name)?));
            }
        }
        Ok(Strategies {
            runtime,
            packages,
            config,
            builtins,
            loaded: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        })
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The configured plugin name for a world (`builtin:<name>` when unset).
    pub fn selected(&self, world: World) -> String {
        let config = self.config.current();
        let chosen = match world {
            World::Extractor => config.memory.strategies.extractor.clone(),
            World::Resolver => config.memory.strategies.resolver.clone(),
            World::Consolidator => config.memory.strategies.consolidator.clone(),
            World::SkillTool => None,
        };
        chosen.unwrap_or_else(|| {
            format!(
                "{}{}",
                builtin::PREFIX,
                default_builtin(world).unwrap_or_default()
            )
        })
    }

    /// The plugin a qualified name refers to, checked to implement `world`.
    pub fn plugin(&self, name: &str, world: World) -> Result<Arc<Plugin>, PluginError> {
        let plugin = match name.strip_prefix(builtin::PREFIX) {
            Some(bare) => match self.builtins.get(bare) {
                Some(plugin) => plugin.clone(),
                None => self.cached(name, Stamp::new(), || self.runtime.load_builtin(bare))?,
            },
            None => {
                let dir = self.packages.package_dir(name)?;
                let stamp = stamp(&[dir.join("plugin.toml"), dir.join("plugin.wasm")]);
                self.cached(name, stamp, || self.runtime.load_dir(&dir))?
            }
        };
        if plugin.world() != world {
            return Err(PluginError::WrongWorld {
                name: name.to_string(),
                expected: world,
                actual: plugin.world(),
            });
        }
        Ok(plugin)
    }

    /// The loaded plugin named `name`, loaded again only when its stamp changed.
    fn cached(
        &self,
        name: &str,
        stamp: Stamp,
        load: impl FnOnce() -> Result<Plugin, PluginError>,
    ) -> Result<Arc<Plugin>, PluginError> {
        let mut cache = self
            .loaded
            .lock()
            .map_err(|_| PluginError::Runtime("plugin cache lock poisoned".into()))?;
        if let Some((seen, plugin)) = cache.get(name)
            && *seen == stamp
        {
            return Ok(plugin.clone());
        }
        let plugin = Arc::new(load()?);
        cache.insert(name.to_string(), (stamp, plugin.clone()));
        Ok(plugin)
    }

    /// The last failure of the plugin configured for `world`, if it has failed since
    /// the daemon started (a failure of a plugin no longer configured is not shown).
    pub fn last_failure(&self, world: World) -> Option<StrategyFailure> {
        let selected = self.selected(world);
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures
            .get(&world)
            .filter(|f| f.plugin == selected)
            .cloned()
    }

    fn record_failure(&self, world: World, plugin: &str, failure: &PluginError) {
        use crate::time::Clock;
        let at = crate::time::rfc3339::format(crate::time::SystemClock.now_ms());
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.insert(
            world,
            StrategyFailure {
                plugin: plugin.to_string(),
                code: failure.code().to_string(),
                reason: failure.to_string(),
                at,
            },
        );
    }

    /// Runs `call` with the configured plugin for `world`, falling back to the built-in
    /// strategy if that plugin cannot be loaded or fails.
    fn run<T>(
        &self,
        world: World,
        call: impl Fn(&Runtime, &Plugin) -> Result<T, PluginError>,
    ) -> Result<Outcome<T>, PluginError> {
        let name = self.selected(world);
        let attempt = self.plugin(&name, world).and_then(|plugin| {
            call(&self.runtime, &plugin).map(|value| Outcome {
                value,
                plugin: plugin.qualified_name().to_string(),
                fallback_from: None,
            })
        });
        let failure = match attempt {
            Ok(outcome) => return Ok(outcome),
            Err(failure) => failure,
        };
        let fallback_name = default_builtin(world).unwrap_or_default();
        let fallback = self.builtins.get(fallback_name).ok_or_else(|| {
            PluginError::UnknownPlugin(format!("{}{fallback_name}", builtin::PREFIX))
        })?;
        if name == fallback.qualified_name() {
            tracing::error!(plugin = %name, code = failure.code(), "built-in strategy failed: {failure}");
            return Err(failure);
        }
        tracing::warn!(
            plugin = %name,
            code = failure.code(),
            fallback = %fallback.qualified_name(),
            "strategy failed, falling back to the built-in one: {failure}"
        );
        self.record_failure(world, &name, &failure);
        let value = call(&self.runtime, fallback)?;
        Ok(Outcome {
            value,
            plugin: fallback.qualified_name().to_string(),
            fallback_from: Some(failure),
        })
    }

    pub fn extract(
        &self,
        conversation: &model::Conversation,
        now: i64,
    ) -> Result<Outcome<Vec<model::Candidate>>, PluginError> {
        self.run(World::Extractor, |rt, p| rt.extract(p, conversation, now))
    }

    pub fn resolve(
        &self,
        user_id: &str,
        candidate: &model::Candidate,
        related: &[model::Memory],
    ) -> Result<Outcome<model::Resolution>, PluginError> {
        self.run(World::Resolver, |rt, p| {
            rt.resolve(p, user_id, candidate, related)
        })
    }

    pub fn consolidate(
        &self,
        snapshot: &model::Snapshot,
        now: i64,
    ) -> Result<Outcome<model::Consolidation>, PluginError> {
        self.run(World::Consolidator, |rt, p| {
            rt.consolidate(p, snapshot, now)
        })
    }
}

fn stamp(files: &[PathBuf]) -> Stamp {
    files
        .iter()
        .map(|f| {
            std::fs::metadata(f)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
                .unwrap_or((SystemTime::UNIX_EPOCH, 0))
        })
        .collect()
}

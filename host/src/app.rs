//! Assembles Engram's services over one data directory. Both `engram serve` and the
//! CLI commands that work without a daemon (`engram plugins ...`) start here, so they
//! see the same configuration, plugins and caches.

use std::sync::Arc;

use anyhow::Context;

use crate::brain::clock::SystemClock;
use crate::brain::open::{ENV_VAR, MemoryBackend, open_memory};
use crate::config::ConfigFile;
use crate::events::EventBus;
use crate::paths::DataDir;
use crate::runtime::registry::PluginRegistry;
use crate::runtime::strategies::Strategies;
use crate::runtime::{DenyAllGate, HostServices, KvStore, Runtime, RuntimeOptions};

pub struct App {
    pub data: DataDir,
    pub config: Arc<ConfigFile>,
    pub strategies: Arc<Strategies>,
    /// The Second Brain, or the fact store when it is disabled or cannot be opened.
    pub memory: Arc<MemoryBackend>,
    /// Every service's change notifications, streamed by `GET /api/events`.
    pub events: EventBus,
}

impl App {
    pub fn open(data: DataDir) -> anyhow::Result<App> {
        data.create().with_context(|| {
            format!("cannot create the data directory {}", data.root().display())
        })?;
        let kv = KvStore::open(&data.plugin_kv_file())
            .with_context(|| format!("cannot open {}", data.plugin_kv_file().display()))?;
        let config = Arc::new(ConfigFile::new(data.config_file()));
        let events = EventBus::default();
        let memory = Arc::new(open_memory(
            data.root(),
            std::env::var(ENV_VAR).ok(),
            &config.current(),
            Arc::new(SystemClock),
            events.clone(),
        ));
        let services = HostServices {
            memories: memory.clone(),
            gate: Arc::new(DenyAllGate),
            kv,
        };
        let options = RuntimeOptions {
            cache_dir: Some(data.component_cache_dir()),
            ..RuntimeOptions::default()
        };
        let runtime = Arc::new(Runtime::new(options, services)?);
        let registry = PluginRegistry::new(data.plugins_dir());
        let strategies = Arc::new(Strategies::new(runtime, registry, config.clone())?);
        Ok(App {
            data,
            config,
            strategies,
            memory,
            events,
        })
    }

    pub fn registry(&self) -> PluginRegistry {
        PluginRegistry::new(self.data.plugins_dir())
    }
}

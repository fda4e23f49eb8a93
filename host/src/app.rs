//! Assembles Engram's services over one data directory. Both `engram serve` and the
//! CLI commands that work without a daemon (`engram plugins ...`) start here, so they
//! see the same configuration, plugins, skills and caches.

use std::sync::Arc;

use anyhow::Context;

use crate::config::ConfigFile;
use crate::embed::active::ActiveEncoder;
use crate::embed::models::Models;
use crate::events::EventBus;
use crate::gate::{AllowedToolsCheck, AuditLog, ConfigPolicy, Gate, PolicySource, Retention};
use crate::installs::{Installs, Kind, Shared};
use crate::memory::{ENV_VAR, Memory, open_memory};
use crate::paths::DataDir;
use crate::runtime::packages::PluginPackages;
use crate::runtime::strategies::Strategies;
use crate::runtime::{HostServices, KvStore, Runtime, RuntimeOptions};
use crate::schedule::Schedules;
use crate::skills::library::shared::{Following, follow};
use crate::skills::{Library, seed_new_builtins};
use crate::storage::Storage;
use crate::time::{Clock, SystemClock};
use crate::turns::{PluginTools, TurnService};

pub struct App {
    pub data: DataDir,
    /// Where the databases are: the data directory's SQLite files, or PostgreSQL.
    pub storage: Storage,
    pub config: Arc<ConfigFile>,
    pub strategies: Arc<Strategies>,
    /// The Second Brain, or the fact store when it is disabled or cannot be opened.
    pub memory: Arc<Memory>,
    /// Every service's change notifications, streamed by `GET /api/events`.
    pub events: EventBus,
    /// The installed skills under `{data_dir}/skills`; announces its changes on `events`.
    pub skills: Library,
    /// The tool-permission gate: turns, grants, the operator's policy (config.yaml
    /// `tools.*`, reread when the file changes) and the audit log.
    pub gate: Arc<Gate>,
    /// The turn service: opening turns (routing, memory, grants), approvals, host
    /// tools and scripts, for REST, the scheduler and plugins' `tools.invoke` alike.
    pub turns: Arc<TurnService>,
    /// Scheduled skill runs (`{data_dir}/schedule/schedules.db`); `engram serve`'s
    /// scheduler loop fires them.
    pub schedules: Arc<Schedules>,
    /// The sentence encoder: the installed model config.yaml's `embed.model` chooses,
    /// or the static table; loaded on first use (`engram serve` asks at start).
    pub encoder: Arc<ActiveEncoder>,
    /// On PostgreSQL, the plugins' side of the team's shared installs (the skills'
    /// is inside `skills`).
    shared_plugins: Option<Arc<Shared>>,
    /// On PostgreSQL, the thread that pulls other daemons' skill changes as they are
    /// published (held for its `Drop`, which stops it).
    _following: Option<Following>,
}

impl App {
    pub fn open(data: DataDir) -> anyhow::Result<App> {
        data.create().with_context(|| {
            format!("cannot create the data directory {}", data.root().display())
        })?;
        let tightened = data.tighten_modes();
        if !tightened.is_empty() {
            let shown: Vec<String> = tightened
                .iter()
                .take(5)
                .map(|p| p.display().to_string())
                .collect();
            tracing::warn!(
                "{} files or directories under {} could be read by other users; they are private now (0600/0700): {}{}",
                tightened.len(),
                data.root().display(),
                shown.join(", "),
                if tightened.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            );
        }
        let config = Arc::new(ConfigFile::new(data.config_file()));
        let storage = Storage::choose(
            std::env::var(crate::storage::ENV_VAR).ok().as_deref(),
            &config.current(),
        )?;
        tracing::info!("databases: {}", storage.describe());
        let kv = match storage.database_url() {
            None => KvStore::open(&data.plugin_kv_file())
                .with_context(|| format!("cannot open {}", data.plugin_kv_file().display()))?,
            Some(url) => KvStore::postgres(url)
                .context("cannot open the plugins' key-value store on PostgreSQL")?,
        };
        let events = EventBus::default();
        let memory = Arc::new(open_memory(
            data.root(),
            &storage,
            std::env::var(ENV_VAR).ok(),
            &config.current(),
            Arc::new(SystemClock),
            events.clone(),
        ));
        let policy: Arc<dyn PolicySource> = Arc::new(ConfigPolicy::new(config.clone()));
        let installs = match storage.database_url() {
            None => None,
            Some(url) => Some(
                Installs::postgres(url)
                    .context("cannot open the shared skills and plugins on PostgreSQL")?,
            ),
        };
        let mut skills = Library::open(data.skills_dir())
            .with_context(|| format!("cannot open {}", data.skills_dir().display()))?
            .with_events(events.clone())
            .with_tool_check(Arc::new(AllowedToolsCheck(policy.clone())));
        if let Some(installs) = &installs {
            skills = skills.with_shared(installs.shared(Kind::Skill));
        }
        let shared_plugins = installs.as_ref().map(|i| i.shared(Kind::Plugin));
        let gate = Arc::new(match storage.database_url() {
            None => Gate::open(&data, policy, Arc::new(SystemClock))
                .context("cannot open the tool gate's audit log")?,
            Some(url) => Gate::new(
                AuditLog::postgres(url, Retention::default(), SystemClock.now_ms())
                    .context("cannot open the tool gate's audit log on PostgreSQL")?,
                policy,
                Arc::new(SystemClock),
            ),
        });
        // The runtime needs its tool gate now, and the turn service behind it needs
        // the runtime: the handle is attached once the service exists (see
        // `PluginTools`).
        let plugin_tools = Arc::new(PluginTools::default());
        let services = HostServices::new(memory.clone(), plugin_tools.clone(), kv)
            .with_settings(config.clone());
        let options = RuntimeOptions {
            cache_dir: Some(data.component_cache_dir()),
            ..RuntimeOptions::default()
        };
        let runtime = Arc::new(Runtime::new(options, services)?);
        let packages = plugin_packages(&data, shared_plugins.as_ref());
        let strategies = Arc::new(Strategies::new(runtime.clone(), packages, config.clone())?);
        let encoder = Arc::new(ActiveEncoder::new(
            Models::new(data.models_dir()),
            config.current().embed.model.clone(),
        ));
        let turns = TurnService::new(
            gate.clone(),
            skills.clone(),
            memory.clone(),
            config.clone(),
            runtime,
            encoder.clone(),
            data.skill_vectors_dir(),
        );
        plugin_tools.attach(&turns);
        start_skills(&skills);
        let following = follow(&skills);
        let schedules = Arc::new(match storage.database_url() {
            None => Schedules::open(&data.schedules_file(), Arc::new(SystemClock))
                .context("cannot open the schedules database")?,
            Some(url) => {
                Schedules::postgres(url).context("cannot open the schedules on PostgreSQL")?
            }
        });
        Ok(App {
            encoder,
            storage,
            data,
            config,
            strategies,
            memory,
            events,
            skills,
            gate,
            turns,
            schedules,
            shared_plugins,
            _following: following,
        })
    }

    pub fn plugin_packages(&self) -> PluginPackages {
        plugin_packages(&self.data, self.shared_plugins.as_ref())
    }
}

fn plugin_packages(data: &DataDir, shared: Option<&Arc<Shared>>) -> PluginPackages {
    let packages = PluginPackages::new(data.plugins_dir());
    match shared {
        Some(shared) => packages.with_shared(shared.clone()),
        None => packages,
    }
}

/// Seeds the built-ins this data directory has not had yet (all of them on the first
/// start), then reconciles the index with the disk, and logs what both did. Neither
/// stops the start: a skills directory that cannot be read is reported by the API.
fn start_skills(skills: &Library) {
    match seed_new_builtins(skills) {
        Ok(Some(report)) => {
            if !report.written.is_empty() {
                tracing::info!(written = ?report.written, "seeded built-in skills");
            }
            for skip in &report.skipped {
                tracing::info!(
                    name = %skip.name,
                    reason = ?skip.reason,
                    path = %skip.path,
                    "built-in skill not seeded: something is already there"
                );
            }
        }
        Ok(None) => {}
        Err(e) => tracing::error!("seeding the built-in skills failed: {e}"),
    }
    match skills.scan() {
        Ok(report) => {
            if !report.added.is_empty() {
                tracing::info!(added = ?report.added, "skills found on disk, indexed as manual");
            }
            for dropped in &report.dropped {
                tracing::info!(slug = %dropped.slug, path = %dropped.path, "skill directory gone, dropped from the index");
            }
            if !report.refreshed.is_empty() {
                tracing::info!(refreshed = ?report.refreshed, "skills changed on disk, index refreshed");
            }
            for renamed in &report.renamed {
                tracing::info!(from = %renamed.from, to = %renamed.to, "skill directory renamed to its slug");
            }
            for recovered in &report.recovered {
                tracing::info!("skills: {recovered}");
            }
            for problem in &report.problems {
                tracing::warn!(path = %problem.path, code = problem.code, "not a usable skill: {}", problem.message);
            }
            if let Some(reason) = &report.index_reset {
                tracing::warn!("the skills index was unreadable and was rebuilt: {reason}");
            }
        }
        Err(e) => tracing::error!("the skills discovery scan failed: {e}"),
    }
}

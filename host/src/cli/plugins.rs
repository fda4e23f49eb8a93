//! `engram plugins list | inspect | install | remove`, and the plugin kit's `new |
//! build | test` (`cli/kit`). Every subcommand takes `--json` for a stable
//! machine-readable shape (documented in the README).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;
use serde::Serialize;

use super::kit;
use crate::app::App;
use crate::paths::DataDir;
use crate::runtime::packages::InstallStatus;
use crate::runtime::{CacheOutcome, Plugin, PluginError, PluginSource, World, builtin};

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// List the built-in and installed plugins, and which strategy each one serves
    List {
        #[arg(long)]
        json: bool,
    },
    /// Load a plugin (by name, `builtin:<name>`, or a package directory) and show it
    Inspect {
        /// Plugin name, `builtin:<name>`, or a directory with plugin.toml + plugin.wasm
        target: String,
        #[arg(long)]
        json: bool,
    },
    /// Validate and install a package directory (plugin.toml + plugin.wasm)
    Install {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed plugin and its key-value store
    Remove {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a new plugin crate: Cargo.toml, src/lib.rs, plugin.toml, README.md, wit/,
    /// examples/input.json
    New {
        /// The plugin's name (1-64 lowercase letters, digits and single hyphens)
        name: String,
        /// The world it implements: extractor, resolver, consolidator or skill-tool
        #[arg(long)]
        world: String,
        /// Where to write the crate (default: ./<name>)
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Build a plugin crate for wasm32-wasip2 into DIR/plugin.wasm, beside its plugin.toml
    Build {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Call a built plugin once through the real runtime and print its result or error
    Test {
        /// A built plugin crate or a package directory
        dir: PathBuf,
        /// The call's input as JSON: {"conversation", "now"} (extractor), {"candidate",
        /// "related"} (resolver), {"snapshot", "now"} (consolidator), {"args"} (skill-tool)
        #[arg(long, value_name = "FILE.json")]
        input: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// One plugin as `list` and `inspect` show it.
#[derive(Debug, Serialize)]
pub struct PluginInfo {
    pub name: String,
    pub version: Option<String>,
    pub world: Option<World>,
    pub description: Option<String>,
    /// `builtin` or `installed` (or `directory` for `inspect <dir>`)
    pub source: &'static str,
    pub path: Option<PathBuf>,
    pub sha256: Option<String>,
    pub wasm_bytes: Option<usize>,
    pub allowed_hosts: Vec<String>,
    pub kv: bool,
    pub tools: Vec<String>,
    pub memory_limit_mib: Option<u64>,
    pub timeout_ms: Option<u64>,
    /// Strategies (extractor, resolver, consolidator) configured to use this plugin.
    pub selected_for: Vec<World>,
    /// `hit` when the compiled component came from the cache, `compiled` otherwise.
    pub compile_cache: Option<&'static str>,
    pub error: Option<ErrorInfo>,
}

#[derive(Debug, Serialize)]
pub struct ErrorInfo {
    pub code: &'static str,
    pub message: String,
}

impl From<&PluginError> for ErrorInfo {
    fn from(e: &PluginError) -> ErrorInfo {
        ErrorInfo {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

fn info(app: &App, plugin: &Plugin, source: &'static str) -> PluginInfo {
    let name = plugin.qualified_name().to_string();
    PluginInfo {
        selected_for: selected_for(app, &name),
        name,
        version: Some(plugin.manifest.version.clone()),
        world: Some(plugin.manifest.world),
        description: Some(plugin.manifest.description.clone()),
        source,
        path: match &plugin.source {
            PluginSource::Builtin => None,
            PluginSource::Directory(dir) => Some(dir.clone()),
        },
        sha256: Some(plugin.sha256.clone()),
        wasm_bytes: Some(plugin.wasm_bytes),
        allowed_hosts: plugin.manifest.permissions.allowed_hosts.clone(),
        kv: plugin.manifest.permissions.kv,
        tools: plugin.manifest.permissions.tools.clone(),
        memory_limit_mib: Some(plugin.memory_limit_mib),
        timeout_ms: Some(plugin.timeout.as_millis() as u64),
        compile_cache: Some(match plugin.cache {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Compiled => "compiled",
        }),
        error: None,
    }
}

fn failed_info(app: &App, name: String, path: PathBuf, error: &PluginError) -> PluginInfo {
    PluginInfo {
        selected_for: selected_for(app, &name),
        name,
        version: None,
        world: None,
        description: None,
        source: "installed",
        path: Some(path),
        sha256: None,
        wasm_bytes: None,
        allowed_hosts: Vec::new(),
        kv: false,
        tools: Vec::new(),
        memory_limit_mib: None,
        timeout_ms: None,
        compile_cache: None,
        error: Some(error.into()),
    }
}

fn selected_for(app: &App, name: &str) -> Vec<World> {
    [World::Extractor, World::Resolver, World::Consolidator]
        .into_iter()
        .filter(|w| app.strategies.selected(*w) == name)
        .collect()
}

pub fn run(data: DataDir, command: PluginsCommand) -> anyhow::Result<ExitCode> {
    match command {
        // `new` only writes files: no data directory is opened for it.
        PluginsCommand::New {
            name,
            world,
            path,
            json,
        } => new(&name, &world, path.as_deref(), json),
        command => with_app(App::open(data)?, command),
    }
}

fn with_app(app: App, command: PluginsCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginsCommand::New { .. } => bail!("`plugins new` needs no data directory"),
        PluginsCommand::Build { dir, json } => {
            let built = kit::build(app.strategies.runtime(), &dir)?;
            if json {
                print_json(&built)?;
            } else {
                println!(
                    "{} {} ({}): {} ({} bytes, sha256 {})",
                    built.name,
                    built.version,
                    built.world,
                    built.wasm.display(),
                    built.wasm_bytes,
                    &built.sha256[..12]
                );
                println!(
                    "try it with `engram plugins test {} --input <FILE.json>`",
                    dir.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Test { dir, input, json } => {
            let call = kit::call(app.strategies.runtime(), &dir, &input)?;
            let failed = call.result.is_err();
            if json {
                let outcome = match &call.result {
                    Ok(result) => serde_json::json!({
                        "plugin": call.plugin, "world": call.world, "ok": true, "result": result,
                    }),
                    Err(e) => serde_json::json!({
                        "plugin": call.plugin, "world": call.world, "ok": false,
                        "error": ErrorInfo::from(e),
                    }),
                };
                print_json(&outcome)?;
            } else {
                match &call.result {
                    Ok(result) => print_json(result)?,
                    Err(e) => eprintln!("error: {e} [{}]", e.code()),
                }
            }
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        PluginsCommand::List { json } => {
            let mut plugins = Vec::new();
            for b in builtin::BUILTINS {
                match app.strategies.runtime().load_builtin(b.name) {
                    Ok(p) => plugins.push(info(&app, &p, "builtin")),
                    Err(e) => plugins.push(failed_info(
                        &app,
                        format!("{}{}", builtin::PREFIX, b.name),
                        PathBuf::new(),
                        &e,
                    )),
                }
            }
            let registry = app.plugin_packages();
            for name in registry.names() {
                let dir = registry.dir().join(&name);
                match app.strategies.runtime().load_dir(&dir) {
                    Ok(p) => plugins.push(info(&app, &p, "installed")),
                    Err(e) => plugins.push(failed_info(&app, name, dir, &e)),
                }
            }
            if json {
                print_json(&serde_json::json!({ "plugins": plugins }))?;
            } else {
                for p in &plugins {
                    println!("{}", one_line(p));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Inspect { target, json } => {
            let loaded = if looks_like_path(&target) {
                app.strategies
                    .runtime()
                    .load_dir(Path::new(&target))
                    .map(|p| info(&app, &p, "directory"))
            } else if let Some(bare) = target.strip_prefix(builtin::PREFIX) {
                app.strategies
                    .runtime()
                    .load_builtin(bare)
                    .map(|p| info(&app, &p, "builtin"))
            } else {
                app.plugin_packages()
                    .package_dir(&target)
                    .and_then(|dir| app.strategies.runtime().load_dir(&dir))
                    .map(|p| info(&app, &p, "installed"))
            };
            let plugin = loaded?;
            if json {
                print_json(&plugin)?;
            } else {
                print_details(&plugin);
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Install { dir, json } => {
            let (status, manifest) = app
                .plugin_packages()
                .install(app.strategies.runtime(), &dir)?;
            if json {
                print_json(&serde_json::json!({
                    "name": manifest.name,
                    "version": manifest.version,
                    "world": manifest.world,
                    "status": status,
                }))?;
            } else {
                let verb = match status {
                    InstallStatus::Installed => "installed",
                    InstallStatus::Updated => "updated",
                    InstallStatus::AlreadyInstalled => "already installed",
                };
                println!(
                    "{} {} ({}): {verb}",
                    manifest.name, manifest.version, manifest.world
                );
                println!(
                    "use it with `memory.strategies.{}: {}` in {}",
                    manifest.world,
                    manifest.name,
                    app.config.path().display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        PluginsCommand::Remove { name, json } => {
            app.plugin_packages().remove(&name)?;
            app.strategies.runtime().clear_kv(&name)?;
            let in_use = selected_for(&app, &name);
            if json {
                print_json(
                    &serde_json::json!({ "name": name, "status": "removed", "was_selected_for": in_use }),
                )?;
            } else {
                println!("{name}: removed");
                for world in in_use {
                    println!(
                        "note: memory.strategies.{world} still names {name}; the built-in strategy is used until you change it"
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn new(name: &str, world: &str, path: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let world = kit::parse_world(world).map_err(|e| anyhow::anyhow!("--world: {e}"))?;
    let dir = path.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    let created = kit::create(name, world, &dir)?;
    if json {
        print_json(&created)?;
    } else {
        println!(
            "created {} ({} plugin, engram:plugin@{}): {}",
            created.path.display(),
            created.world,
            created.wit,
            created.files.join(", ")
        );
        println!(
            "next: `engram plugins build {0}`, then `engram plugins test {0} --input {0}/examples/input.json`",
            created.path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn looks_like_path(target: &str) -> bool {
    target.contains('/') || target.starts_with('.') || Path::new(target).is_dir()
}

fn one_line(p: &PluginInfo) -> String {
    let mut line = format!(
        "{:<28} {:<8} {:<12} {:<9}",
        p.name,
        p.version.as_deref().unwrap_or("-"),
        p.world.map(|w| w.as_str()).unwrap_or("-"),
        p.source
    );
    if !p.selected_for.is_empty() {
        let worlds: Vec<&str> = p.selected_for.iter().map(|w| w.as_str()).collect();
        line.push_str(&format!(" in use: {}", worlds.join(", ")));
    }
    if let Some(e) = &p.error {
        line.push_str(&format!(" ERROR {}: {}", e.code, e.message));
    }
    line
}

fn print_details(p: &PluginInfo) {
    println!("name:         {}", p.name);
    println!("version:      {}", p.version.as_deref().unwrap_or("-"));
    println!(
        "world:        {}",
        p.world.map(|w| w.as_str()).unwrap_or("-")
    );
    println!("description:  {}", p.description.as_deref().unwrap_or(""));
    println!("source:       {}", p.source);
    if let Some(path) = &p.path {
        println!("path:         {}", path.display());
    }
    println!("sha256:       {}", p.sha256.as_deref().unwrap_or("-"));
    println!("size:         {} bytes", p.wasm_bytes.unwrap_or(0));
    println!("allowed-hosts: {}", list_or_none(&p.allowed_hosts));
    println!("kv:           {}", p.kv);
    println!("tools:        {}", list_or_none(&p.tools));
    println!("memory limit: {} MiB", p.memory_limit_mib.unwrap_or(0));
    println!("deadline:     {} ms", p.timeout_ms.unwrap_or(0));
    println!("compile:      {}", p.compile_cache.unwrap_or("-"));
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

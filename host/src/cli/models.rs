//! `engram models list | pull | add | remove`: the sentence-encoder models under
//! `{data_dir}/models/` (no daemon needed; a running daemon picks a change up at its
//! next start). Every subcommand takes `--json` for a stable machine-readable shape.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Subcommand;
use serde::Serialize;

use crate::config::ConfigFile;
use crate::embed::hub::{self, Progress};
use crate::embed::models::{InstallStatus, Models, STATIC};
use crate::paths::DataDir;

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// List the installed models, and the ones `pull` knows
    List {
        #[arg(long)]
        json: bool,
    },
    /// Download a known model from the Hugging Face hub (pinned revision, every file's
    /// sha256 checked) and install it
    Pull {
        /// all-minilm-l6-v2
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Check a local model directory (config.json, tokenizer.json, model.safetensors)
    /// and install a copy of it
    Add {
        dir: PathBuf,
        /// The name to install it under (default: the directory's name, in lowercase)
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed model
    Remove {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(data: DataDir, command: ModelsCommand) -> anyhow::Result<ExitCode> {
    data.create()
        .with_context(|| format!("cannot create the data directory {}", data.root().display()))?;
    let config_file = ConfigFile::new(data.config_file());
    let config = config_file.current();
    if let Some(error) = config_file.error() {
        eprintln!(
            "warning: {} is not applied: {error}",
            config_file.path().display()
        );
    }
    let models = Models::new(data.models_dir());
    let configured = config.embed.model.as_deref();
    match command {
        ModelsCommand::List { json } => {
            let installed = models.list();
            let known: Vec<&str> = hub::KNOWN.iter().map(|p| p.name).collect();
            if json {
                print_json(&serde_json::json!({
                    "models": installed,
                    "configured": configured,
                    "known": known,
                }))?;
            } else {
                if installed.is_empty() {
                    println!(
                        "no model installed: the static word-vector table serves (`engram models pull {}` installs one)",
                        known.join("|")
                    );
                }
                for m in &installed {
                    println!(
                        "{:<24} {:>5} dims {:>3} layers {:>8.1} MB  {}",
                        m.name,
                        m.dims.map_or("-".into(), |d| d.to_string()),
                        m.layers.map_or("-".into(), |l| l.to_string()),
                        m.bytes as f64 / 1e6,
                        m.path.display()
                    );
                }
                if let Some(name) = configured {
                    println!("embed.model: {name}");
                }
            }
        }
        ModelsCommand::Pull { name, json } => {
            let pinned = hub::known(&name)?;
            let endpoint = hub::endpoint();
            let allow_private = config.network.allow_private.unwrap_or(false);
            let mut bar = Bar::new(!json && std::io::stderr().is_terminal());
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let pulled = runtime.block_on(hub::pull(
                &models,
                pinned,
                &endpoint,
                allow_private,
                &mut bar,
            ));
            bar.finish();
            let status = pulled?;
            installed(&models, pinned.name, status, json, configured)?;
        }
        ModelsCommand::Add { dir, name, json } => {
            let name = match name {
                Some(name) => name,
                None => default_name(&dir)?,
            };
            let status = models.add(&dir, &name)?;
            installed(&models, &name, status, json, configured)?;
        }
        ModelsCommand::Remove { name, json } => {
            models.remove(&name)?;
            if json {
                print_json(&serde_json::json!({ "name": name, "status": "removed" }))?;
            } else {
                println!("{name}: removed");
                if configured == Some(name.as_str()) {
                    println!(
                        "note: embed.model still names {name}; the daemon uses the static table until you change it"
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn installed(
    models: &Models,
    name: &str,
    status: InstallStatus,
    json: bool,
    configured: Option<&str>,
) -> anyhow::Result<()> {
    let path = models.model_dir(name)?;
    if json {
        print_json(&serde_json::json!({ "name": name, "status": status, "path": path }))?;
        return Ok(());
    }
    let verb = match status {
        InstallStatus::Installed => "installed",
        InstallStatus::Replaced => "replaced",
    };
    println!("{name}: {verb} in {}", path.display());
    let others = models.names().into_iter().filter(|n| n != name).count();
    if configured.is_some_and(|c| c != name) || others > 0 {
        println!(
            "use it with `embed.model: {name}` in config.yaml{}",
            if configured == Some(STATIC) {
                " (it says static now)"
            } else {
                ""
            }
        );
    }
    println!("a running daemon uses it from its next start");
    Ok(())
}

/// The directory's own name, lowercased, when that is a valid model name.
fn default_name(dir: &Path) -> anyhow::Result<String> {
    let canonical = dir
        .canonicalize()
        .with_context(|| format!("{}", dir.display()))?;
    let name = canonical
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_lowercase)
        .unwrap_or_default();
    crate::embed::models::valid_name(&name)
        .with_context(|| format!("{}: pass --name", dir.display()))?;
    Ok(name)
}

/// The download's progress on stderr, one line redrawn, on a terminal only.
struct Bar {
    shown: bool,
    path: String,
    total: u64,
    done: u64,
    drawn: Instant,
}

impl Bar {
    fn new(shown: bool) -> Bar {
        Bar {
            shown,
            path: String::new(),
            total: 0,
            done: 0,
            drawn: Instant::now(),
        }
    }

    fn draw(&mut self) {
        const WIDTH: u64 = 30;
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r\x1b[2K{:<26} [{}{}] {:>6.1}/{:.1} MB",
            self.path,
            "#".repeat(filled as usize),
            " ".repeat((WIDTH - filled.min(WIDTH)) as usize),
            self.done as f64 / 1e6,
            self.total as f64 / 1e6
        );
        let _ = err.flush();
        self.drawn = Instant::now();
    }

    fn finish(&mut self) {
        if self.shown && !self.path.is_empty() {
            eprintln!();
        }
    }
}

impl Progress for Bar {
    fn file(&mut self, path: &str, bytes: u64) {
        if !self.shown {
            return;
        }
        if !self.path.is_empty() {
            eprintln!();
        }
        self.path = path.to_string();
        self.total = bytes;
        self.done = 0;
        self.draw();
    }

    fn advance(&mut self, bytes: u64) {
        if !self.shown {
            return;
        }
        self.done += bytes;
        if self.done == self.total || self.drawn.elapsed() > Duration::from_millis(100) {
            self.draw();
        }
    }
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

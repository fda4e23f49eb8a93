//! The `engram` command line. Exit codes: 0 success, 1 the operation failed, 2 the
//! command line was invalid (clap's own code), 3 the daemon could not be reached (the
//! commands that talk to a running daemon, `engram memory ...`: no `daemon.json` in the
//! data directory, or nothing answering at its URL). `engram skills ...` exits 1 when
//! any part failed (one id of several, one skill of an update, one doctor check);
//! `engram skills doctor` exits 4 when only the registry cannot be reached. `engram db
//! status` exits 4 when migrations are pending, 5 when a database is newer than this
//! release (see `db.rs`).

pub mod answers;
mod backup;
pub mod chat;
pub mod client;
mod config;
mod db;
mod kit;
mod mcp;
mod mcp_bridge;
pub mod memory;
mod models;
mod plugins;
mod registry;
mod service;
pub mod skills;
mod transfer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::app::App;
use crate::lock::DataDirLock;
use crate::logging::LogFormat;
use crate::paths::DataDir;
use crate::server;

/// `engram --version`: the release and the Second Brain's schema version, which says
/// whether a data directory written by another release opens (see CHANGELOG.md).
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (Second Brain schema {})",
        env!("CARGO_PKG_VERSION"),
        crate::memory::SCHEMA_VERSION
    )
});

#[derive(Debug, Parser)]
#[command(
    name = "engram",
    version = VERSION.as_str(),
    about = "Local memory-and-skills host for AI agents"
)]
pub struct Cli {
    /// Data directory (default: $XDG_DATA_HOME/engram or ~/.local/share/engram)
    #[arg(long, global = true, env = "ENGRAM_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Log lines on stderr as `text` (coloured on a terminal only) or `json` (one object
    /// per line, for journald and log collectors); ENGRAM_LOG filters them
    #[arg(
        long,
        global = true,
        env = "ENGRAM_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon
    Serve {
        /// Address to listen on; keep it on loopback unless you mean to expose Engram
        #[arg(long, default_value = server::DEFAULT_LISTEN)]
        listen: SocketAddr,
    },
    /// Manage WebAssembly strategy plugins
    #[command(subcommand)]
    Plugins(plugins::PluginsCommand),
    /// Manage the sentence-encoder models (no daemon needed)
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Inspect and manage the Second Brain of the running daemon
    Memory(memory::MemoryArgs),
    /// Browse the skills registry and manage installed skills (no daemon needed)
    Skills(skills::SkillsArgs),
    /// Host a skills registry
    #[command(subcommand)]
    Registry(registry::RegistryCommand),
    /// Serve Engram to an MCP client on stdin/stdout (through the running daemon, or
    /// --embedded)
    Mcp(mcp::McpArgs),
    /// Talk to Engram in this terminal, through the running daemon or, without one, in
    /// this process (needs llm.* in config.yaml for answers)
    Chat(chat::ChatArgs),
    /// Run `engram serve` as a service of your session (systemd user unit, launchd agent)
    #[command(subcommand)]
    Service(service::ServiceCommand),
    /// Show the configuration in force, or check a configuration file
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// The databases' schema versions, and their pending migrations applied (no daemon
    /// needed; `migrate` refuses while one runs)
    #[command(subcommand)]
    Db(db::DbCommand),
    /// A consistent copy of the data directory, taken by the running daemon
    Backup(backup::BackupArgs),
    /// Print a shell completion script (`engram completions bash > ~/.local/share/bash-completion/completions/engram`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

pub fn run(cli: Cli) -> ExitCode {
    match execute(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            let code = error
                .downcast_ref::<client::ClientError>()
                .map_or(1, client::ClientError::exit_code);
            ExitCode::from(code)
        }
    }
}

fn execute(cli: Cli) -> anyhow::Result<ExitCode> {
    let root = match cli.data_dir {
        Some(dir) => dir,
        None => DataDir::default_root().ok_or_else(|| {
            anyhow::anyhow!(
                "no data directory: set --data-dir, ENGRAM_DATA_DIR, XDG_DATA_HOME or HOME"
            )
        })?,
    };
    let data = DataDir::new(root);
    match cli.command {
        Command::Serve { listen } => {
            // Before anything in the directory is opened: a second daemon touches nothing.
            let lock = DataDirLock::acquire(data.root(), "serve")?;
            // A new data directory gets the commented template of every key.
            let wrote_template =
                crate::config::write_template(&data.config_file()).map_err(|e| {
                    anyhow::anyhow!("cannot write {}: {e}", data.config_file().display())
                })?;
            let app = App::open(data)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(server::serve(app, lock, listen, wrote_template))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Service(command) => service::run(data.root(), command),
        Command::Config(command) => config::run(&data, command),
        Command::Backup(args) => backup::run(data.root(), args),
        Command::Db(command) => db::run(data, command),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "engram", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins(command) => plugins::run(data, command),
        Command::Models(command) => models::run(data, command),
        Command::Memory(args) => memory::run(data.root(), args),
        Command::Skills(args) => skills::run(data, args),
        Command::Registry(command) => registry::run(command),
        Command::Chat(args) => chat::run(data, args),
        Command::Mcp(args) => mcp::run(data, args),
    }
}

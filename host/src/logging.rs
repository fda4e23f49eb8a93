//! The log: lines on stderr, as text for people or as JSON for journald and log
//! collectors (`--log-format json`, `ENGRAM_LOG_FORMAT=json`). Text is coloured only
//! when stderr is a terminal and `NO_COLOR` is unset, so files and pipes get plain
//! lines. What is logged is chosen the `RUST_LOG` way: `ENGRAM_LOG` (else `RUST_LOG`)
//! holds `tracing` directives such as `warn`, `engram=debug` or
//! `info,engram::memory::brain=trace`; the default is `info` (`warn` for `engram chat`, which
//! shares the terminal with the person: see [`default_filter`]).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The filter variables, the first set one winning.
pub const FILTER_ENV: [&str; 2] = ["ENGRAM_LOG", "RUST_LOG"];
/// What is logged when neither variable is set. rmcp (the MCP SDK) logs every
/// session's start and notifications at info: warnings and errors are what an
/// operator needs from it.
const DEFAULT_FILTER: &str = "info,rmcp=warn";
/// The same for commands whose terminal belongs to a person (`engram chat`).
const QUIET_FILTER: &str = "warn";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, fields.
    Json,
}

/// The filter used when neither variable is set: [`QUIET_FILTER`] for `engram chat`.
pub fn default_filter(quiet: bool) -> &'static str {
    if quiet { QUIET_FILTER } else { DEFAULT_FILTER }
}

/// Installs the process's subscriber, logging `default` unless a variable says
/// otherwise. A filter that does not parse is reported on
/// stderr and replaced by the default, rather than silently logging nothing.
pub fn init(format: LogFormat, default: &str) {
    let (filter, problem) = filter_from_env(default);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(colour_wanted()).init(),
        LogFormat::Json => builder.json().init(),
    }
    if let Some(problem) = problem {
        tracing::warn!("{problem}; logging at `{default}`");
    }
}

/// The filter from the first variable of [`FILTER_ENV`] that is set, and what was
/// wrong with it if it did not parse.
fn filter_from_env(default: &str) -> (EnvFilter, Option<String>) {
    let set = FILTER_ENV
        .iter()
        .find_map(|name| std::env::var(name).ok().map(|value| (*name, value)));
    match set {
        None => (EnvFilter::new(default), None),
        Some((name, value)) => match EnvFilter::try_new(&value) {
            Ok(filter) => (filter, None),
            Err(e) => (
                EnvFilter::new(default),
                Some(format!("{name}={value:?} is not a log filter ({e})")),
            ),
        },
    }
}

/// Colour only for a person at a terminal (https://no-color.org: any non-empty
/// `NO_COLOR` turns it off).
fn colour_wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

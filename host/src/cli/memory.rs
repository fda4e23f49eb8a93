//! `engram memory overview | recent | subconscious | search | add | edit | delete |
//! dismissed | restore | redact | pause | resume | clear`: the Second Brain of the
//! running daemon, through its REST API (README, "Using it"), with the chat's `/memory`
//! entries.
//!
//! The pieces are kept apart so that the interactive `/memory` menu can reuse them:
//! [`MemoryClient`] does the requests and returns typed answers; the `render_*`
//! functions turn an answer into concise human text; [`to_json`] prints it as the
//! daemon sent it (`--json`). The answer types keep every field the daemon sent (the
//! ones not named here in `extra`), so `--json` shows the daemon's own shapes:
//!
//! - `overview`: `GET /api/brain/status` (`BrainStatus`)
//! - `recent`, `subconscious`: `{ "items": [memory...], "next_cursor": ... }`
//! - `search`: `{ "items": [{ "tier": "conscious" | "subconscious", "memory": {...} }], ... }`
//! - `add`: the memory, with `outcome` (added, reinforced, outvoted) and `superseded`
//! - `edit`: the memory
//! - `delete`: `{ "deleted": "<id>" }` (`--keep-messages` keeps the transcript text it
//!   was learned from)
//! - `dismissed`: `GET /api/brain/dismissed` (`{ "items": [{ "memory", "dismissed_at",
//!   "restorable_until", "keep_messages" }], "next_cursor" }`): what the agent deleted
//! - `restore`: the memory, restored
//! - `redact`: `POST /api/brain/redact` (`RedactionReport`: ids and kinds found)
//! - `pause`, `resume`: `{ "learning_paused": bool }`
//! - `clear`: `{ "deleted": <count> }`

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Subcommand};
use engram_strategies::model::{Evidence, MemoryType, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answers::{
    Cleared, Deleted, DismissedPage, Learning, Memory, MemoryPage, Overview, SearchPage,
};
use super::client::{Acting, ClientError, DaemonClient, Endpoint, URL_ENV};
use crate::api::memory::EditMemory;
use crate::credentials::OPERATOR_TOKEN_ENV;
use crate::memory::record::WireName;
use crate::memory::{DEFAULT_USER, NewMemory};
use crate::term_text::{clean, cut};

/// How many memories `recent` and `subconscious` show unless `--limit` says otherwise.
pub const DEFAULT_SHOWN: u16 = 10;
/// Longest summary a listing shows before cutting it (`--json` has the full text).
const SUMMARY_WIDTH: usize = 100;

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Daemon URL [default: the `url` in {data_dir}/daemon.json, written by `engram serve`]
    #[arg(long, global = true, env = URL_ENV, value_name = "URL")]
    pub url: Option<String>,
    /// The operator token [default: {data_dir}/operator-token]
    #[arg(long, global = true, env = OPERATOR_TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Whose memories [default: the daemon's default user]
    #[arg(long, global = true, value_name = "USER")]
    pub user: Option<String>,
    /// Print the daemon's JSON answer instead of text
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Learning state, counts by type and scope, summaries, consolidation, strategies
    Overview,
    /// The most recently updated memories, conscious and subconscious
    Recent {
        /// How many (1 to 500)
        #[arg(long, short = 'n', default_value_t = DEFAULT_SHOWN, value_parser = limit_parser())]
        limit: u16,
    },
    /// Memories out of active recall (recalled only when strongly relevant)
    Subconscious {
        /// How many (1 to 500)
        #[arg(long, short = 'n', default_value_t = DEFAULT_SHOWN, value_parser = limit_parser())]
        limit: u16,
    },
    /// Full-text search of both tiers, best match first
    Search {
        /// Search text (several words are joined with spaces)
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// At most this many results (1 to 500) [default: the daemon's, 50]
        #[arg(long, short = 'n', value_parser = limit_parser())]
        limit: Option<u16>,
    },
    /// Add a memory: `engram memory add -t preference "Likes green tea"`
    Add(AddArgs),
    /// Change a memory's summary, type, importance, confidence or scope
    Edit(EditArgs),
    /// Delete a memory for good, and redact what it was learned from
    Delete {
        /// Memory id (`mem_...`)
        id: String,
        /// Keep the messages it was learned from (by default they are redacted too)
        #[arg(long)]
        keep_messages: bool,
    },
    /// The memories the agent deleted, which you can restore for a few days
    Dismissed {
        /// How many (1 to 500)
        #[arg(long, short = 'n', default_value_t = DEFAULT_SHOWN, value_parser = limit_parser())]
        limit: u16,
    },
    /// Restore a memory the agent deleted (see `dismissed`)
    Restore {
        /// Memory id (`mem_...`)
        id: String,
    },
    /// Redact the secrets already stored (passwords, keys, card numbers, ...)
    Redact {
        /// Report what would be redacted, change nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Pause learning: conversations are no longer learned from
    Pause,
    /// Resume learning
    Resume,
    /// Delete every memory of the user for good (asks first, unless -y)
    Clear {
        /// Do not ask for confirmation (needed when stdin is not a terminal)
        #[arg(short = 'y', long = "yes")]
        yes: bool,
    },
    /// Write the user's memory out: Engram JSONL (lossless) or Markdown notes
    Export {
        #[arg(long, value_enum, default_value_t = super::transfer::ExportFormat::Engram)]
        format: super::transfer::ExportFormat,
        /// The file (engram; default stdout) or folder (markdown) to write
        #[arg(long, short = 'o', value_name = "PATH")]
        output: Option<std::path::PathBuf>,
    },
    /// Bring memory in from Engram or another tool (each entry once: importing the
    /// same file again adds nothing)
    Import {
        /// The export: a file, a data export's folder, or a folder of notes (`-`: stdin)
        path: std::path::PathBuf,
        #[arg(long, value_enum, default_value_t = super::transfer::ImportFormat::Engram)]
        format: super::transfer::ImportFormat,
    },
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("text").required(true).args(["summary", "summary_flag"])))]
pub struct AddArgs {
    /// The memory, one sentence (or use --summary)
    #[arg(value_name = "SUMMARY")]
    pub summary: Option<String>,
    /// The memory, one sentence
    #[arg(long = "summary", value_name = "SUMMARY", conflicts_with = "summary")]
    pub summary_flag: Option<String>,
    /// Memory type
    #[arg(long = "type", short = 't', value_name = "TYPE", value_parser = wire_parser::<MemoryType>())]
    pub memory_type: MemoryType,
    /// How it is known [default: manual]
    #[arg(long, short = 'e', value_parser = wire_parser::<Evidence>())]
    pub evidence: Option<Evidence>,
    /// Up to 4000 characters of context
    #[arg(long)]
    pub detail: Option<String>,
    /// Scope [default: the type's: durable for identity, preference, habit, constraint, relationship, reflection; active otherwise]
    #[arg(long, short = 's', value_parser = wire_parser::<Scope>())]
    pub scope: Option<Scope>,
    /// 0.0 to 1.0 [default: 1.0]
    #[arg(long, short = 'c', value_parser = unit_interval)]
    pub confidence: Option<f32>,
    /// 0.0 to 1.0 [default: by type]
    #[arg(long, short = 'i', value_parser = unit_interval)]
    pub importance: Option<f32>,
    /// Whose fact it is when not yours: a person's name or relation [default: read from the summary]
    #[arg(long)]
    pub holder: Option<String>,
    /// What it states (phone, email, residence, employer, favorite <noun>, ...) [default: read from the summary]
    #[arg(long)]
    pub attribute: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("change")
        .required(true)
        .multiple(true)
        .args(["summary", "memory_type", "importance", "confidence", "scope"])
))]
pub struct EditArgs {
    /// Memory id (`mem_...`)
    pub id: String,
    /// New summary
    #[arg(long)]
    pub summary: Option<String>,
    /// New type
    #[arg(long = "type", short = 't', value_name = "TYPE", value_parser = wire_parser::<MemoryType>())]
    pub memory_type: Option<MemoryType>,
    /// New importance, 0.0 to 1.0
    #[arg(long, short = 'i', value_parser = unit_interval)]
    pub importance: Option<f32>,
    /// New confidence, 0.0 to 1.0
    #[arg(long, short = 'c', value_parser = unit_interval)]
    pub confidence: Option<f32>,
    /// New scope
    #[arg(long, short = 's', value_parser = wire_parser::<Scope>())]
    pub scope: Option<Scope>,
}

/// A clap parser for one of the model's enums, listing the accepted names in `--help`.
fn wire_parser<T: WireName + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::all().iter().map(|v| v.name()))
        .map(|name| T::from_name(&name).expect("clap accepted only known names"))
}

fn limit_parser() -> impl TypedValueParser<Value = u16> {
    clap::value_parser!(u16).range(1..=crate::api::memory::MAX_LIMIT as i64)
}

fn unit_interval(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(_) => Err(format!("{text} is outside 0.0..=1.0")),
        Err(e) => Err(format!("`{text}` is not a number: {e}")),
    }
}

// ---- requests ---------------------------------------------------------------------

// ---- the client -------------------------------------------------------------------

/// The memory operations of the `/memory` command, against one daemon and one user.
#[derive(Debug)]
pub struct MemoryClient {
    client: DaemonClient,
    user: Option<String>,
}

impl MemoryClient {
    pub fn new(client: DaemonClient, user: Option<String>) -> MemoryClient {
        MemoryClient { client, user }
    }

    /// The daemon of `data_dir` (or `url`), authenticated with `token` or the token file.
    pub fn connect(
        data_dir: &Path,
        url: Option<String>,
        token: Option<String>,
        user: Option<String>,
    ) -> Result<MemoryClient, ClientError> {
        let endpoint = Endpoint::discover(data_dir, url, token, Acting::Person)?;
        Ok(MemoryClient::new(DaemonClient::new(endpoint)?, user))
    }

    /// The user these operations act for, as the daemon names it.
    pub fn user(&self) -> &str {
        self.user.as_deref().unwrap_or(DEFAULT_USER)
    }

    fn query(&self, mut params: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
        if let Some(user) = &self.user {
            params.push(("user", user.clone()));
        }
        params
    }

    pub fn overview(&self) -> Result<Overview, ClientError> {
        self.client.get("/api/brain/status", &self.query(vec![]))
    }

    /// The newest `limit` memories, conscious and subconscious.
    pub fn recent(&self, limit: usize) -> Result<MemoryPage, ClientError> {
        self.client.get(
            "/api/brain/memory",
            &self.query(vec![("limit", limit.to_string())]),
        )
    }

    /// The newest `limit` subconscious memories.
    pub fn subconscious(&self, limit: usize) -> Result<MemoryPage, ClientError> {
        self.client.get(
            "/api/brain/memory",
            &self.query(vec![
                ("scope", "subconscious".to_string()),
                ("limit", limit.to_string()),
            ]),
        )
    }

    /// Both tiers, best match first; `limit` defaults to the daemon's page size.
    pub fn search(&self, q: &str, limit: Option<usize>) -> Result<SearchPage, ClientError> {
        let mut params = vec![("q", q.to_string())];
        if let Some(limit) = limit {
            params.push(("limit", limit.to_string()));
        }
        self.client
            .get("/api/brain/memory/search", &self.query(params))
    }

    pub fn add(&self, memory: &NewMemory) -> Result<Memory, ClientError> {
        self.client
            .post("/api/brain/memory", &self.query(vec![]), Some(memory))
    }

    pub fn edit(&self, id: &str, edit: &EditMemory) -> Result<Memory, ClientError> {
        self.client.put(
            &format!("/api/brain/memory/{}", path_segment(id)),
            &self.query(vec![]),
            edit,
        )
    }

    pub fn delete(&self, id: &str, keep_messages: bool) -> Result<Deleted, ClientError> {
        let mut params = vec![];
        if keep_messages {
            params.push(("keep_messages", "true".to_string()));
        }
        self.client.delete(
            &format!("/api/brain/memory/{}", path_segment(id)),
            &self.query(params),
        )?;
        Ok(Deleted {
            deleted: id.to_string(),
        })
    }

    /// The newest `limit` memories the agent deleted, which the person can restore.
    pub fn dismissed(&self, limit: usize) -> Result<DismissedPage, ClientError> {
        self.client.get(
            "/api/brain/dismissed",
            &self.query(vec![("limit", limit.to_string())]),
        )
    }

    pub fn restore(&self, id: &str) -> Result<Memory, ClientError> {
        self.client.post::<(), _>(
            &format!("/api/brain/memory/{}/restore", path_segment(id)),
            &self.query(vec![]),
            None,
        )
    }

    /// Applies the secret detector to what is stored; `dry_run` only reports.
    pub fn redact(&self, dry_run: bool) -> Result<Redacted, ClientError> {
        self.client.post::<(), _>(
            "/api/brain/redact",
            &self.query(vec![("dry_run", dry_run.to_string())]),
            None,
        )
    }

    pub fn pause(&self) -> Result<Learning, ClientError> {
        self.client
            .post::<(), _>("/api/brain/learning/pause", &self.query(vec![]), None)
    }

    pub fn resume(&self) -> Result<Learning, ClientError> {
        self.client
            .post::<(), _>("/api/brain/learning/resume", &self.query(vec![]), None)
    }

    /// Deletes every memory of the user, without asking: callers confirm first
    /// (see [`confirm_clear`]).
    pub fn clear(&self) -> Result<Cleared, ClientError> {
        let path = "/api/brain/memory";
        let body = self
            .client
            .delete(path, &self.query(vec![("confirm", "true".to_string())]))?;
        self.client.decode(path, &body)
    }
}

/// Percent-encodes one path segment (ids are `mem_<ULID>`, but the user types them).
fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

// ---- rendering --------------------------------------------------------------------

/// The answer as pretty JSON (`--json`).
pub fn to_json<T: Serialize>(answer: &T) -> String {
    serde_json::to_string_pretty(answer).expect("answers serialise")
}

/// One memory on one line: `mem_01J... [preference]   durable  Likes green tea`.
pub fn render_memory_line(memory: &Memory) -> String {
    let mut line = format!(
        "{}  {:<14} {:<12} {}",
        clean(&memory.id),
        format!("[{}]", clean(&memory.memory_type)),
        clean(&memory.scope),
        cut(&clean(&memory.summary), SUMMARY_WIDTH)
    );
    if memory.stale {
        line.push_str("  (stale)");
    }
    line
}

/// A listing (`recent`, `subconscious`), newest first; `empty` when there is nothing.
pub fn render_memories(page: &MemoryPage, empty: &str) -> String {
    if page.items.is_empty() {
        return format!("{empty}\n");
    }
    let mut out = String::new();
    for memory in &page.items {
        out.push_str(&render_memory_line(memory));
        out.push('\n');
    }
    if page.next_cursor.is_some() {
        out.push_str(&format!(
            "(the {} newest; --limit shows more)\n",
            page.items.len()
        ));
    }
    out
}

/// Search results, each with its tier: `conscious     mem_... [goal] active  Run a marathon`.
pub fn render_search(page: &SearchPage, query: &str) -> String {
    if page.items.is_empty() {
        return format!("no memory matches `{}`\n", clean(query));
    }
    let mut out = String::new();
    for hit in &page.items {
        out.push_str(&format!(
            "{:<13} {}\n",
            clean(&hit.tier),
            render_memory_line(&hit.memory)
        ));
    }
    out
}

fn counts_line(counts: &BTreeMap<String, usize>, order: &[&str]) -> String {
    // Known names in the model's order, then anything newer in name order.
    let mut parts: Vec<String> = order
        .iter()
        .filter_map(|name| counts.get(*name).map(|n| (*name, *n)))
        .chain(
            counts
                .iter()
                .filter(|(name, _)| !order.contains(&name.as_str()))
                .map(|(name, n)| (name.as_str(), *n)),
        )
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{} {n}", clean(name)))
        .collect();
    if parts.is_empty() {
        parts.push("none".to_string());
    }
    parts.join(", ")
}

/// The brain's status, one topic a line.
pub fn render_overview(overview: &Overview) -> String {
    let mut lines: Vec<(&str, String)> = Vec::new();
    if overview.enabled {
        lines.push(("Second Brain", format!("on ({})", clean(&overview.backend))));
    } else {
        let why = overview
            .error
            .as_deref()
            .map(|e| format!(": {}", clean(e)))
            .unwrap_or_default();
        lines.push((
            "Second Brain",
            format!("off, memory is served by the fact store{why}"),
        ));
    }
    lines.push((
        "Learning",
        match overview.learning_paused {
            Some(true) => "paused (`engram memory resume` to resume)".to_string(),
            Some(false) => "on".to_string(),
            None => "n/a (the fact store does not learn)".to_string(),
        },
    ));
    let types: Vec<&str> = MemoryType::ALL.iter().map(|t| t.as_str()).collect();
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    lines.push((
        "Memories",
        format!(
            "{}: {}",
            overview.counts.total,
            counts_line(&overview.counts.by_scope, &scopes)
        ),
    ));
    lines.push(("By type", counts_line(&overview.counts.by_type, &types)));
    let summary = |s: &Option<String>| match s.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => cut(&clean(text), 200),
        _ => "(none yet)".to_string(),
    };
    lines.push(("Profile", summary(&overview.profile_summary)));
    lines.push(("Active", summary(&overview.active_summary)));
    if overview.enabled {
        lines.push((
            "Consolidation",
            format!(
                "last {}, next {}",
                overview
                    .last_consolidation_at
                    .as_deref()
                    .map(clean)
                    .unwrap_or_else(|| "never".into()),
                overview
                    .next_consolidation_at
                    .as_deref()
                    .map(clean)
                    .unwrap_or_else(|| "not scheduled".into()),
            ),
        ));
    }
    for (i, strategy) in overview.strategies.iter().enumerate() {
        let mut text = format!("{:<13} {}", clean(&strategy.role), clean(&strategy.plugin));
        if let Some(version) = &strategy.version {
            text.push_str(&format!(" {}", clean(version)));
        }
        if let Some(hash) = &strategy.hash {
            text.push_str(&format!(" #{}", clean(hash)));
        }
        if let Some(error) = &strategy.error {
            text.push_str(&format!(
                " (cannot load: {}; the built-in one is used)",
                cut(&clean(error), 160)
            ));
        }
        if let Some(failure) = &strategy.last_failure {
            text.push_str(&format!(
                " (failed {}: {}; the built-in one answered)",
                clean(&failure.at),
                cut(&clean(&failure.reason), 160)
            ));
        }
        lines.push((if i == 0 { "Strategies" } else { "" }, text));
    }
    let mut out = String::new();
    for (label, value) in lines {
        out.push_str(&format!("{label:<14} {value}\n"));
    }
    out
}

pub fn render_learning(learning: &Learning) -> String {
    if learning.learning_paused {
        "learning paused: conversations are not learned from until `engram memory resume`\n"
            .to_string()
    } else {
        "learning resumed\n".to_string()
    }
}

/// `redact`: what the pass found (ids and kinds, never the secrets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redacted {
    pub dry_run: bool,
    pub messages: Vec<String>,
    pub memories: Vec<String>,
    pub deleted: Vec<String>,
    pub found: BTreeMap<String, usize>,
}

pub fn render_redacted(report: &Redacted) -> String {
    let kinds: Vec<String> = report
        .found
        .iter()
        .map(|(kind, n)| format!("{n} {}", clean(kind)))
        .collect();
    let found = if kinds.is_empty() {
        "no secrets".to_string()
    } else {
        kinds.join(", ")
    };
    let verb = if report.dry_run {
        "would redact"
    } else {
        "redacted"
    };
    let mut out = format!(
        "{verb} {found} in {} messages and {} memories",
        report.messages.len(),
        report.memories.len()
    );
    if !report.deleted.is_empty() {
        let deleted = if report.dry_run {
            "would delete"
        } else {
            "deleted"
        };
        out.push_str(&format!(
            " ({deleted} {} that held nothing but a secret)",
            report.deleted.len()
        ));
    }
    out.push('\n');
    if report.dry_run && !kinds.is_empty() {
        out.push_str("run `engram memory redact` without --dry-run to apply\n");
    }
    out
}

pub fn render_deleted(deleted: &Deleted) -> String {
    format!("deleted {}\n", clean(&deleted.deleted))
}

/// What the agent deleted, newest first: when, and until when it can be restored.
pub fn render_dismissed(page: &DismissedPage) -> String {
    if page.items.is_empty() {
        return "nothing the agent deleted is waiting to be restored\n".to_string();
    }
    let mut out = String::new();
    for item in &page.items {
        out.push_str(&format!(
            "{}\n    deleted by the agent {}, restorable until {}{}\n",
            render_memory_line(&item.memory),
            clean(&item.dismissed_at),
            clean(&item.restorable_until),
            if item.keep_messages {
                " (its messages kept)"
            } else {
                ""
            }
        ));
    }
    if page.next_cursor.is_some() {
        out.push_str(&format!(
            "(the {} newest; --limit shows more)\n",
            page.items.len()
        ));
    }
    out.push_str("restore one with `engram memory restore <id>`\n");
    out
}

pub fn render_cleared(cleared: &Cleared, user: &str) -> String {
    let noun = if cleared.deleted == 1 {
        "memory"
    } else {
        "memories"
    };
    format!(
        "cleared: {} {noun} of user `{}` deleted\n",
        cleared.deleted,
        clean(user)
    )
}

// ---- the command ------------------------------------------------------------------

/// Why `clear` did not run.
#[derive(Debug, thiserror::Error)]
pub enum ClearRefused {
    #[error(
        "refusing to clear without confirmation: stdin is not a terminal; pass -y (--yes) to delete every memory of user `{0}`"
    )]
    NotATerminal(String),
    #[error("cancelled; nothing was deleted")]
    Cancelled,
}

/// Asks on the terminal whether to clear `total` memories of `user`: only `y` or `yes`
/// confirms. Refuses outright when stdin is not a terminal.
pub fn confirm_clear(user: &str, total: usize) -> Result<(), ClearRefused> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(ClearRefused::NotATerminal(user.to_string()));
    }
    let noun = if total == 1 { "memory" } else { "memories" };
    eprint!(
        "Delete {total} {noun} of user `{}` for good? [y/N] ",
        clean(user)
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).is_err() {
        return Err(ClearRefused::Cancelled);
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(ClearRefused::Cancelled),
    }
}

/// Runs `engram memory ...`; with `--json`, a failure too is JSON on stdout,
/// `{"error": {"code", "message"}}` (the daemon's problem code when it answered one),
/// with the same exit code as in text.
pub fn run(data_dir: &Path, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    match run_command(data_dir, args) {
        Err(error) if json => {
            let client = error.downcast_ref::<ClientError>();
            let code = client
                .and_then(ClientError::problem_code)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    match client.map_or(1, ClientError::exit_code) {
                        3 => "no-daemon",
                        _ => "failed",
                    }
                    .to_string()
                });
            let text = to_json(&serde_json::json!({
                "error": {"code": code, "message": format!("{error:#}")}
            }));
            println!("{text}");
            Ok(ExitCode::from(client.map_or(1, ClientError::exit_code)))
        }
        other => other,
    }
}

fn run_command(data_dir: &Path, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let user = args.user.clone();
    // Refuse before touching the daemon: a script without -y must not depend on it.
    if let MemoryCommand::Clear { yes: false } = args.command
        && !std::io::stdin().is_terminal()
    {
        let user = user.as_deref().unwrap_or(DEFAULT_USER).to_string();
        return Err(ClearRefused::NotATerminal(user).into());
    }
    if let MemoryCommand::Export { .. } | MemoryCommand::Import { .. } = args.command {
        return transfer(data_dir, args);
    }
    let client = MemoryClient::connect(data_dir, args.url, args.token, user)?;
    let out = match args.command {
        MemoryCommand::Overview => {
            let overview = client.overview()?;
            output(json, &overview, render_overview)
        }
        MemoryCommand::Recent { limit } => {
            let page = client.recent(limit.into())?;
            output(json, &page, |p| render_memories(p, "no memories yet"))
        }
        MemoryCommand::Subconscious { limit } => {
            let page = client.subconscious(limit.into())?;
            output(json, &page, |p| {
                render_memories(p, "no subconscious memories")
            })
        }
        MemoryCommand::Search { query, limit } => {
            let query = query.join(" ");
            let page = client.search(&query, limit.map(usize::from))?;
            output(json, &page, |p| render_search(p, &query))
        }
        MemoryCommand::Add(add) => {
            let memory = client.add(&NewMemory {
                memory_type: add.memory_type,
                summary: add.summary.or(add.summary_flag).unwrap_or_default(),
                evidence: add.evidence,
                detail: add.detail,
                scope: add.scope,
                confidence: add.confidence,
                importance: add.importance,
                holder: add.holder,
                attribute: add.attribute,
            })?;
            output(json, &memory, |m| {
                let outcome = m.extra.get("outcome").and_then(Value::as_str);
                let verb = match outcome {
                    Some("reinforced") => "reinforced (already known)",
                    Some("outvoted") => "added, outranked by a memory more certain",
                    _ => "added",
                };
                let mut text = format!("{verb} {}\n", render_memory_line(m));
                let superseded = m.extra.get("superseded").and_then(Value::as_array);
                for id in superseded.into_iter().flatten().filter_map(Value::as_str) {
                    text.push_str(&format!("  replaces {}\n", clean(id)));
                }
                text
            })
        }
        MemoryCommand::Edit(edit) => {
            let changes = EditMemory {
                summary: edit.summary,
                memory_type: edit.memory_type,
                importance: edit.importance,
                confidence: edit.confidence,
                scope: edit.scope,
            };
            let memory = client.edit(&edit.id, &changes)?;
            output(json, &memory, |m| {
                format!("updated {}\n", render_memory_line(m))
            })
        }
        MemoryCommand::Delete { id, keep_messages } => {
            let deleted = client.delete(&id, keep_messages)?;
            output(json, &deleted, render_deleted)
        }
        MemoryCommand::Dismissed { limit } => {
            output(json, &client.dismissed(limit.into())?, render_dismissed)
        }
        MemoryCommand::Restore { id } => {
            let memory = client.restore(&id)?;
            output(json, &memory, |m| {
                format!("restored {}\n", render_memory_line(m))
            })
        }
        MemoryCommand::Redact { dry_run } => {
            output(json, &client.redact(dry_run)?, render_redacted)
        }
        MemoryCommand::Pause => output(json, &client.pause()?, render_learning),
        MemoryCommand::Resume => output(json, &client.resume()?, render_learning),
        MemoryCommand::Clear { yes } => {
            if !yes {
                let total = client.overview()?.counts.total;
                confirm_clear(client.user(), total)?;
            }
            let cleared = client.clear()?;
            output(json, &cleared, |c| render_cleared(c, client.user()))
        }
        MemoryCommand::Export { .. } | MemoryCommand::Import { .. } => {
            unreachable!("handled by transfer()")
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `export` and `import`, with a client whose requests may take long.
fn transfer(data_dir: &Path, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    use super::transfer;
    let endpoint = Endpoint::discover(data_dir, args.url, args.token, Acting::Person)?;
    let client = DaemonClient::with_timeout(endpoint, transfer::TRANSFER_TIMEOUT)?;
    let query: Vec<(&'static str, String)> =
        args.user.iter().map(|u| ("user", u.clone())).collect();
    let text = match args.command {
        MemoryCommand::Import { path, format } => {
            let outcome = transfer::import(&client, &query, format, &path)?;
            output(args.json, &outcome, transfer::render_import)
        }
        MemoryCommand::Export { format, output: to } => {
            let outcome = transfer::export(&client, &query, format, to.as_deref())?;
            match &outcome.path {
                // JSONL on stdout is the output itself: nothing else goes there.
                None => return Ok(ExitCode::SUCCESS),
                Some(path) => output(args.json, &outcome, |o| {
                    format!(
                        "exported {} ({}) to {}\n",
                        o.count,
                        o.format,
                        path.display()
                    )
                }),
            }
        }
        _ => unreachable!("only export and import"),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn output<T: Serialize>(json: bool, answer: &T, human: impl FnOnce(&T) -> String) -> String {
    if json {
        let mut text = to_json(answer);
        text.push('\n');
        text
    } else {
        human(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::answers::SearchHit;
    use clap::Parser;
    use serde_json::Map;

    fn memory(id: &str, memory_type: &str, scope: &str, summary: &str) -> Memory {
        Memory {
            id: id.into(),
            memory_type: memory_type.into(),
            summary: summary.into(),
            scope: scope.into(),
            confidence: 1.0,
            importance: 0.6,
            stale: false,
            extra: Map::new(),
        }
    }

    #[test]
    fn a_memory_survives_a_round_trip_through_the_typed_answer() {
        let sent = serde_json::json!({
            "id": "mem_01", "user_id": "default", "type": "preference",
            "summary": "Likes green tea", "detail": null, "scope": "durable",
            "prior_scope": null, "confidence": 1.0, "importance": 0.6, "durability": 0.8,
            "evidence": "manual", "negated": false, "validated": false, "reinforcements": 0,
            "stale": false, "dismissed_at": null, "superseded_by": null,
            "created_at": "2026-11-22T10:00:00Z", "updated_at": "2026-11-22T10:00:00Z",
            "last_seen_at": "2026-11-22T10:00:00Z", "last_used_at": null,
            "source_conversation": null, "source_turns": [],
            "confidence_at": "2026-11-22T10:00:00Z"
        });
        let typed: Memory = serde_json::from_value(sent.clone()).expect("memory");
        assert_eq!(typed.memory_type, "preference");
        assert_eq!(serde_json::to_value(&typed).expect("json"), sent);
    }

    #[test]
    fn memory_lines_are_one_line_each_and_safe_for_a_terminal() {
        let line = render_memory_line(&memory(
            "mem_01",
            "preference",
            "durable",
            "Likes tea\n\x1b[2Jand cake",
        ));
        assert_eq!(
            line,
            "mem_01  [preference]   durable      Likes tea  [2Jand cake"
        );
        let long = "x".repeat(300);
        let line = render_memory_line(&Memory {
            stale: true,
            ..memory("mem_02", "goal", "active", &long)
        });
        assert!(line.ends_with("…  (stale)"), "{line}");
        assert!(line.chars().count() < 160, "{line}");
    }

    #[test]
    fn listings_and_search_results_render_concisely() {
        let page = MemoryPage {
            items: vec![memory("mem_01", "goal", "active", "Run a marathon")],
            next_cursor: Some("c".into()),
            extra: Map::new(),
        };
        assert_eq!(
            render_memories(&page, "none"),
            "mem_01  [goal]         active       Run a marathon\n(the 1 newest; --limit shows more)\n"
        );
        let empty = MemoryPage {
            items: vec![],
            next_cursor: None,
            extra: Map::new(),
        };
        assert_eq!(
            render_memories(&empty, "no memories yet"),
            "no memories yet\n"
        );
        let found = SearchPage {
            items: vec![SearchHit {
                tier: "subconscious".into(),
                memory: memory("mem_03", "habit", "subconscious", "Reads at night"),
                extra: Map::new(),
            }],
            next_cursor: None,
            extra: Map::new(),
        };
        assert_eq!(
            render_search(&found, "night"),
            "subconscious  mem_03  [habit]        subconscious Reads at night\n"
        );
        let none = SearchPage {
            items: vec![],
            ..found
        };
        assert_eq!(render_search(&none, "x"), "no memory matches `x`\n");
    }

    #[test]
    fn the_overview_shows_learning_counts_summaries_and_strategies() {
        let status = serde_json::json!({
            "enabled": true, "backend": "sqlite", "error": null, "learning_paused": true,
            "counts": {"total": 3,
                "by_type": {"goal": 1, "preference": 2, "habit": 0},
                "by_scope": {"active": 1, "durable": 2, "subconscious": 0}},
            "profile_summary": "Likes tea.", "active_summary": null,
            "last_consolidation_at": null, "next_consolidation_at": "2026-11-23T03:00:00Z",
            "strategies": [
                {"role": "extractor", "plugin": "builtin:extract-rules", "version": "0.1.0",
                 "hash": "abcdef012345", "error": null, "last_failure": null},
                {"role": "resolver", "plugin": "mine", "version": null, "hash": null,
                 "error": "no plugin named `mine`", "last_failure": null},
                {"role": "consolidator", "plugin": "theirs", "version": "1.0.0",
                 "hash": "0123456789ab", "error": null,
                 "last_failure": {"plugin": "theirs", "code": "timeout",
                    "reason": "theirs (0123456789ab): exceeded its deadline of 2000 ms and was stopped",
                    "at": "2026-11-23T02:00:00Z"}}
            ]
        });
        let overview: Overview = serde_json::from_value(status.clone()).expect("status");
        assert_eq!(serde_json::to_value(&overview).expect("json"), status);
        let text = render_overview(&overview);
        let expected = [
            "Second Brain   on (sqlite)",
            "Learning       paused (`engram memory resume` to resume)",
            "Memories       3: durable 2, active 1",
            "By type        preference 2, goal 1",
            "Profile        Likes tea.",
            "Active         (none yet)",
            "Consolidation  last never, next 2026-11-23T03:00:00Z",
            "Strategies     extractor     builtin:extract-rules 0.1.0 #abcdef012345",
            "               resolver      mine (cannot load: no plugin named `mine`; the built-in one is used)",
            "               consolidator  theirs 1.0.0 #0123456789ab (failed 2026-11-23T02:00:00Z: theirs (0123456789ab): exceeded its deadline of 2000 ms and was stopped; the built-in one answered)",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn the_fact_store_overview_says_learning_does_not_apply() {
        let overview: Overview = serde_json::from_value(serde_json::json!({
            "enabled": false, "backend": "facts", "error": "SECOND_BRAIN_ENABLED=false",
            "learning_paused": null,
            "counts": {"total": 0, "by_type": {}, "by_scope": {}},
            "profile_summary": null, "active_summary": null,
            "last_consolidation_at": null, "next_consolidation_at": null, "strategies": []
        }))
        .expect("status");
        let text = render_overview(&overview);
        assert!(
            text.contains("off, memory is served by the fact store: SECOND_BRAIN_ENABLED=false"),
            "{text}"
        );
        assert!(text.contains("n/a"), "{text}");
        assert!(text.contains("Memories       0: none"), "{text}");
        assert!(!text.contains("Consolidation"), "{text}");
    }

    #[test]
    fn requests_serialise_only_what_was_given() {
        let mut new = NewMemory::new(MemoryType::Preference, "Likes tea");
        new.importance = Some(0.5);
        assert_eq!(
            serde_json::to_value(&new).expect("json"),
            serde_json::json!({"type": "preference", "summary": "Likes tea", "importance": 0.5})
        );
        let edit = EditMemory {
            scope: Some(Scope::Subconscious),
            ..EditMemory::default()
        };
        assert_eq!(
            serde_json::to_value(&edit).expect("json"),
            serde_json::json!({"scope": "subconscious"})
        );
    }

    #[test]
    fn what_the_agent_deleted_renders_with_its_window() {
        let sent = serde_json::json!({
            "items": [{
                "memory": serde_json::to_value(memory("mem_01", "identity", "durable", "Lives in Graz")).expect("json"),
                "dismissed_at": "2026-11-22T10:00:00Z",
                "restorable_until": "2026-11-29T10:00:00Z",
                "keep_messages": true
            }],
            "next_cursor": null
        });
        let page: DismissedPage = serde_json::from_value(sent.clone()).expect("page");
        assert_eq!(serde_json::to_value(&page).expect("json"), sent);
        assert_eq!(
            render_dismissed(&page),
            "mem_01  [identity]     durable      Lives in Graz\n    deleted by the agent 2026-11-22T10:00:00Z, restorable until 2026-11-29T10:00:00Z (its messages kept)\nrestore one with `engram memory restore <id>`\n"
        );
        let empty = DismissedPage {
            items: vec![],
            next_cursor: None,
            extra: Map::new(),
        };
        assert_eq!(
            render_dismissed(&empty),
            "nothing the agent deleted is waiting to be restored\n"
        );
        assert!(matches!(
            parse(&["restore", "mem_01", "--json"]).expect("restore").command,
            MemoryCommand::Restore { id } if id == "mem_01"
        ));
        assert!(parse(&["restore"]).is_err());
    }

    #[test]
    fn ids_are_encoded_as_one_path_segment() {
        assert_eq!(path_segment("mem_01ABC"), "mem_01ABC");
        assert_eq!(path_segment("../status"), "..%2Fstatus");
        assert_eq!(path_segment("a b?c"), "a%20b%3Fc");
    }

    #[derive(Debug, Parser)]
    struct Test {
        #[command(flatten)]
        args: MemoryArgs,
    }

    fn parse(args: &[&str]) -> Result<MemoryArgs, clap::Error> {
        Test::try_parse_from(std::iter::once("memory").chain(args.iter().copied())).map(|t| t.args)
    }

    #[test]
    fn the_command_line_is_checked_before_anything_is_sent() {
        let add = parse(&["add", "-t", "preference", "Likes tea", "--json"]).expect("add");
        assert!(add.json);
        match add.command {
            MemoryCommand::Add(a) => {
                assert_eq!(a.memory_type, MemoryType::Preference);
                assert_eq!(a.summary.as_deref(), Some("Likes tea"));
            }
            other => panic!("{other:?}"),
        }
        let flag = parse(&[
            "--user",
            "bob",
            "add",
            "--type",
            "goal",
            "--summary",
            "Ship it",
        ])
        .expect("add --summary");
        assert_eq!(flag.user.as_deref(), Some("bob"));
        // Unknown type, a missing summary, both summaries, an empty edit, a bad number.
        for bad in [
            &["add", "-t", "wish", "x"][..],
            &["add", "-t", "goal"],
            &["add", "-t", "goal", "x", "--summary", "y"],
            &["edit", "mem_1"],
            &["edit", "mem_1", "--importance", "2"],
            &["recent", "--limit", "0"],
            &["search"],
        ] {
            let error = parse(bad).expect_err(&format!("{bad:?} is invalid"));
            assert_eq!(error.exit_code(), 2, "{bad:?}: {error}");
        }
        let search = parse(&["search", "green", "tea", "-n", "5"]).expect("search");
        match search.command {
            MemoryCommand::Search { query, limit } => {
                assert_eq!(query.join(" "), "green tea");
                assert_eq!(limit, Some(5));
            }
            other => panic!("{other:?}"),
        }
    }
}

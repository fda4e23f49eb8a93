//! `engram skills categories | browse | search | view | install | update | remove |
//! list | info | doctor`. They work on the data directory directly (no daemon
//! needed), through the skills [`Library`], whose lock makes sharing the directory
//! with a running daemon safe, and the registry client (`skills/registry.rs`).
//!
//! Shared flags: `--json` (shapes documented in the README), `--registry <url>`
//! (else `ENGRAM_SKILLS_REGISTRY`, else `skills.registry` in config.yaml, else the
//! public registry), `-q` (no progress on stderr), `-y` (no confirmation). Notices (a
//! stale feed used offline) go to stderr whatever `-q` says, and into the JSON.
//! Exit code 1 when anything failed, including one id of several.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{Config, ConfigFile};
use crate::gate::{AllowedToolsCheck, FixedPolicy, Policy};
use crate::paths::DataDir;
use crate::skills::registry::client::{FeedOrigin, LoadedFeed, human_age};
use crate::skills::registry::direct;
use crate::skills::registry::feed::{FeedCategory, FeedSkill};
use crate::skills::registry::update::UpdateStatus;
use crate::skills::registry::{RegistryClient, RegistryError, RegistryUrl};
use crate::skills::{
    IndexEntry, InstallOutcome, Library, LibraryError, SkillId, SourceKind, ToolConsent,
};
use crate::term_text::{clean, clean_block, cut};

#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// Print machine-readable JSON (shapes in the README)
    #[arg(long, global = true)]
    json: bool,
    /// Registry base URL [default: $ENGRAM_SKILLS_REGISTRY, then skills.registry in
    /// config.yaml, then the public registry]
    #[arg(long, global = true, value_name = "URL")]
    registry: Option<String>,
    /// No progress output
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Do not ask for confirmation (needed when stdin is not a terminal)
    #[arg(short = 'y', long, global = true)]
    yes: bool,
    #[command(subcommand)]
    command: SkillsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List the registry's categories
    Categories,
    /// List a category's skills, a page at a time
    Browse {
        category: String,
        /// Page number, from 1
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        page: u32,
        /// Skills per page (1-100)
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
    },
    /// Search the registry: exact id first, then name, then tags and category, then description
    Search {
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// Results at most (1-100)
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
    },
    /// Show a registry skill (its details and body) before installing it
    View {
        /// `category/slug`, or a slug only one category has
        id: String,
        /// Print the SKILL.md exactly as the registry ships it
        #[arg(long, conflicts_with = "web")]
        raw: bool,
        /// Open the skill's registry page (prints its URL when no browser can be opened)
        #[arg(long)]
        web: bool,
    },
    /// Install registry skills, or one skill from a file, a directory or a URL
    Install {
        /// Registry ids; with --from, at most one id: where to install it
        #[arg(value_name = "ID")]
        ids: Vec<String>,
        /// Reinstall even when the same version is installed
        #[arg(long)]
        force: bool,
        /// A SKILL.md file, a skill directory, or an http(s) URL of a raw SKILL.md
        #[arg(long, value_name = "FILE|URL")]
        from: Option<String>,
    },
    /// Update every installed skill, or one
    Update { id: Option<String> },
    /// Remove an installed skill
    Remove { id: String },
    /// Grant an installed skill the tools its SKILL.md asks for (allowed without asking
    /// while it is invoked), for the file as it is now; asks first unless -y
    Grant { id: String },
    /// List the installed skills
    List,
    /// Registry statistics and reachability
    Info,
    /// Index the skill directories added, changed or removed by hand (what the
    /// dashboard's refresh does)
    Scan,
    /// Check the registry, the feed cache and the skills directory
    Doctor {
        /// Also write the built-in skills and the template that are missing (never
        /// overwrites)
        #[arg(long)]
        seed_skills: bool,
    },
}

/// Everything a command needs.
struct Ctx {
    data: DataDir,
    config: Config,
    json: bool,
    quiet: bool,
    yes: bool,
    registry_flag: Option<String>,
}

impl Ctx {
    fn library(&self) -> anyhow::Result<Library> {
        let root = self.data.skills_dir();
        // The policy the daemon would read from the same config.yaml, for what the
        // gate makes of a skill's allowed-tools.
        let policy = Arc::new(Policy::from_config(&self.config.tools));
        let library = Library::open(root.clone())
            .with_context(|| format!("cannot open {}", root.display()))?
            .with_tool_check(Arc::new(AllowedToolsCheck(Arc::new(FixedPolicy(policy)))));
        // On a team's PostgreSQL, what this command changes is every daemon's.
        let storage = crate::storage::Storage::choose(
            std::env::var(crate::storage::ENV_VAR).ok().as_deref(),
            &self.config,
        )?;
        Ok(match storage.database_url() {
            None => library,
            Some(url) => library.with_shared(
                crate::installs::Installs::postgres(url)
                    .context("cannot open the shared skills on PostgreSQL")?
                    .shared(crate::installs::Kind::Skill),
            ),
        })
    }

    /// Whether the person, asked at the terminal, accepts the tools `error` says a
    /// skill asks for (never without a terminal: -y is the way then).
    fn confirms_tools(&self, error: &RegistryError) -> bool {
        let RegistryError::Library(LibraryError::ToolsUnconfirmed {
            slug,
            tools,
            before,
        }) = error
        else {
            return false;
        };
        let stdin = std::io::stdin();
        if self.yes || !stdin.is_terminal() {
            return false;
        }
        let before = if before.is_empty() {
            String::new()
        } else {
            format!(
                " (the installed copy asks for {})",
                clean(&before.join(", "))
            )
        };
        eprint!(
            "`{}` asks for the tools {}{before}; they are allowed whenever it is invoked. Grant them? [y/N] ",
            clean(slug),
            clean(&tools.join(", "))
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
    }

    fn allow_private(&self) -> bool {
        self.config.network.allow_private.unwrap_or(false)
    }

    fn client(&self) -> Result<RegistryClient, RegistryError> {
        RegistryClient::from_config(&self.data, &self.config, self.registry_flag.as_deref())
    }

    fn progress(&self, message: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", message.as_ref());
        }
    }

    /// Prints the feed's notice (stale cache in use), if any.
    fn notice(&self, origin: &FeedOrigin) {
        if let Some(notice) = &origin.notice {
            eprintln!("notice: {notice}");
        }
    }

    fn output(&self, value: &Value, human: impl FnOnce() -> String) -> anyhow::Result<()> {
        let text = if self.json {
            let mut text = serde_json::to_string_pretty(value)?;
            text.push('\n');
            text
        } else {
            human()
        };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
        Ok(())
    }
}

pub fn run(data: DataDir, args: SkillsArgs) -> anyhow::Result<ExitCode> {
    data.create()
        .with_context(|| format!("cannot create the data directory {}", data.root().display()))?;
    let config_file = ConfigFile::new(data.config_file());
    let config = (*config_file.current()).clone();
    if let Some(error) = config_file.error() {
        eprintln!(
            "warning: {} is not applied: {error}",
            config_file.path().display()
        );
    }
    let ctx = Ctx {
        data,
        config,
        json: args.json,
        quiet: args.quiet,
        yes: args.yes,
        registry_flag: args.registry,
    };
    // Refuse before touching anything: a script without -y must not depend on state.
    let asks = match args.command {
        SkillsCommand::Remove { .. } => Some("remove"),
        SkillsCommand::Grant { .. } => Some("grant tools"),
        _ => None,
    };
    if let Some(act) = asks
        && !ctx.yes
        && !std::io::stdin().is_terminal()
    {
        bail!("refusing to {act} without confirmation: stdin is not a terminal; pass -y (--yes)");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(execute(&ctx, args.command))
}

async fn execute(ctx: &Ctx, command: SkillsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SkillsCommand::Categories => categories(ctx).await,
        SkillsCommand::Browse {
            category,
            page,
            limit,
        } => browse(ctx, &category, page as usize, limit as usize).await,
        SkillsCommand::Search { query, limit } => {
            search(ctx, &query.join(" "), limit as usize).await
        }
        SkillsCommand::View { id, raw, web } => view(ctx, &id, raw, web).await,
        SkillsCommand::Install { ids, force, from } => {
            install(ctx, &ids, force, from.as_deref()).await
        }
        SkillsCommand::Update { id } => update(ctx, id.as_deref()).await,
        SkillsCommand::Remove { id } => remove(ctx, &id),
        SkillsCommand::Grant { id } => grant(ctx, &id),
        SkillsCommand::List => list(ctx),
        SkillsCommand::Info => info(ctx).await,
        SkillsCommand::Scan => scan(ctx),
        SkillsCommand::Doctor { seed_skills } => doctor(ctx, seed_skills).await,
    }
}

// ---- shapes -----------------------------------------------------------------------

/// A registry skill as listings show it.
#[derive(Debug, Serialize)]
struct SkillSummary {
    id: String,
    slug: String,
    category: String,
    category_name: Option<String>,
    name: String,
    title: Option<String>,
    description: String,
    version: Option<String>,
    author: Option<String>,
    tags: Vec<String>,
    sha256: String,
    size: Option<u64>,
    updated_at: Option<String>,
    page_url: String,
    /// Whether a skill with this id is installed.
    installed: bool,
}

fn summary(skill: &FeedSkill, registry: &RegistryUrl, installed: &[IndexEntry]) -> SkillSummary {
    SkillSummary {
        id: skill.id.clone(),
        slug: skill.slug().to_string(),
        category: skill.category_slug().to_string(),
        category_name: skill.category.clone(),
        name: skill.name.clone(),
        title: skill.title.clone(),
        description: skill.description.clone(),
        version: skill.version.clone(),
        author: skill.author.clone(),
        tags: skill.tags.clone(),
        sha256: skill.sha.clone(),
        size: skill.size,
        updated_at: skill.updated_at.clone(),
        page_url: registry.skill_page_url(&skill.id),
        installed: installed.iter().any(|e| e.id == skill.id),
    }
}

fn registry_json(registry: &RegistryUrl) -> Value {
    json!({ "url": registry.as_str(), "source": registry.source() })
}

/// The index entries (empty when the index cannot be read: listings still work).
fn installed_entries(ctx: &Ctx) -> Vec<IndexEntry> {
    ctx.library()
        .ok()
        .and_then(|l| l.list().ok())
        .map(|i| i.skills.into_values().collect())
        .unwrap_or_default()
}

fn skill_line(s: &SkillSummary) -> String {
    format!(
        "{:<48} {:<8} {}\n",
        clean(&s.id),
        clean(s.version.as_deref().unwrap_or("-")),
        cut(&clean(s.title.as_deref().unwrap_or(&s.name)), 60)
    )
}

async fn load_feed(ctx: &Ctx, client: &RegistryClient) -> Result<LoadedFeed, RegistryError> {
    ctx.progress(format!("registry {}", client.registry().as_str()));
    let loaded = client.feed().await?;
    ctx.notice(&loaded.origin);
    for problem in &loaded.problems {
        ctx.progress(format!("warning: {problem}"));
    }
    Ok(loaded)
}

// ---- commands ---------------------------------------------------------------------

async fn categories(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let client = ctx.client()?;
    let loaded = load_feed(ctx, &client).await?;
    let categories: &[FeedCategory] = &loaded.feed.categories;
    let value = json!({
        "registry": registry_json(client.registry()),
        "feed": loaded.origin,
        "total_skills": loaded.feed.skills.len(),
        "categories": categories,
    });
    ctx.output(&value, || {
        let mut out = String::new();
        for c in categories {
            out.push_str(&format!(
                "{:<32} {:>4}  {}\n",
                clean(&c.slug),
                c.count,
                clean(&c.name)
            ));
        }
        out.push_str(&format!(
            "{} categories, {} skills\n",
            categories.len(),
            loaded.feed.skills.len()
        ));
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn browse(ctx: &Ctx, category: &str, page: usize, limit: usize) -> anyhow::Result<ExitCode> {
    let client = ctx.client()?;
    let loaded = load_feed(ctx, &client).await?;
    let Some(cat) = loaded.feed.categories.iter().find(|c| c.slug == category) else {
        bail!(
            "no category `{}` in the registry {} (see `engram skills categories`)",
            clean(category),
            client.registry().as_str()
        );
    };
    let installed = installed_entries(ctx);
    let all: Vec<&FeedSkill> = loaded.feed.in_category(&cat.slug).collect();
    let pages = all.len().div_ceil(limit).max(1);
    let items: Vec<SkillSummary> = all
        .iter()
        .skip((page - 1).saturating_mul(limit))
        .take(limit)
        .map(|s| summary(s, client.registry(), &installed))
        .collect();
    let value = json!({
        "registry": registry_json(client.registry()),
        "feed": loaded.origin,
        "category": cat,
        "page": page,
        "limit": limit,
        "pages": pages,
        "total": all.len(),
        "items": items,
    });
    ctx.output(&value, || {
        let mut out = String::new();
        for s in &items {
            out.push_str(&skill_line(s));
        }
        out.push_str(&format!(
            "{}: page {page} of {pages} ({} skills)\n",
            clean(&cat.name),
            all.len()
        ));
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn search(ctx: &Ctx, query: &str, limit: usize) -> anyhow::Result<ExitCode> {
    let client = ctx.client()?;
    let loaded = load_feed(ctx, &client).await?;
    let installed = installed_entries(ctx);
    let hits = loaded.feed.search(query);
    let items: Vec<Value> = hits
        .iter()
        .take(limit)
        .map(|h| {
            let mut item = serde_json::to_value(summary(h.skill, client.registry(), &installed))
                .expect("serialisable");
            item["score"] = json!(h.score);
            item
        })
        .collect();
    let value = json!({
        "registry": registry_json(client.registry()),
        "feed": loaded.origin,
        "query": query,
        "total": hits.len(),
        "items": items,
    });
    ctx.output(&value, || {
        if hits.is_empty() {
            return format!("no registry skill matches `{}`\n", clean(query));
        }
        let mut out = String::new();
        for h in hits.iter().take(limit) {
            let s = summary(h.skill, client.registry(), &installed);
            out.push_str(&skill_line(&s));
            out.push_str(&format!("    {}\n", s.page_url));
        }
        if hits.len() > limit {
            out.push_str(&format!(
                "({limit} of {} matches; --limit shows more)\n",
                hits.len()
            ));
        }
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn view(ctx: &Ctx, id: &str, raw: bool, web: bool) -> anyhow::Result<ExitCode> {
    let client = ctx.client()?;
    let mut loaded = load_feed(ctx, &client).await?;
    let skill = loaded.find(id, client.registry())?.clone();
    let page_url = client.skill_page_url(&skill.id);
    if web {
        let opened = !ctx.json && std::io::stdout().is_terminal() && open_in_browser(&page_url);
        let value = json!({ "id": skill.id, "page_url": page_url, "opened": opened });
        ctx.output(&value, || format!("{page_url}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let installed = installed_entries(ctx);
    if raw {
        let downloaded = client.download(&mut loaded, &skill.id).await?;
        let text = String::from_utf8_lossy(&downloaded.skill_md).into_owned();
        let value = json!({
            "registry": registry_json(client.registry()),
            "feed": loaded.origin,
            "skill": summary(&downloaded.skill, client.registry(), &installed),
            "skill_md": text,
        });
        ctx.output(&value, || {
            if std::io::stdout().is_terminal() {
                clean_block(&text)
            } else {
                text.clone()
            }
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let detail = client.detail(&skill).await?;
    let s = summary(&skill, client.registry(), &installed);
    let value = json!({
        "registry": registry_json(client.registry()),
        "feed": loaded.origin,
        "skill": s,
        "body": detail.body,
        "stats": detail.stats,
    });
    ctx.output(&value, || {
        let mut out = String::new();
        out.push_str(&format!(
            "{}\n",
            clean(s.title.as_deref().unwrap_or(&s.name))
        ));
        out.push_str(&format!("id:          {}\n", clean(&s.id)));
        out.push_str(&format!(
            "version:     {}\n",
            clean(s.version.as_deref().unwrap_or("-"))
        ));
        out.push_str(&format!(
            "category:    {}\n",
            clean(s.category_name.as_deref().unwrap_or(&s.category))
        ));
        out.push_str(&format!(
            "author:      {}\n",
            clean(s.author.as_deref().unwrap_or("-"))
        ));
        out.push_str(&format!("tags:        {}\n", clean(&s.tags.join(", "))));
        out.push_str(&format!("description: {}\n", clean(&s.description)));
        out.push_str(&format!("sha256:      {}\n", s.sha256));
        out.push_str(&format!(
            "installed:   {}\n",
            if s.installed { "yes" } else { "no" }
        ));
        out.push_str(&format!("page:        {}\n", s.page_url));
        out.push('\n');
        out.push_str(&clean_block(&detail.body));
        if !detail.body.ends_with('\n') {
            out.push('\n');
        }
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with `xdg-open` when there is one; whether it was started.
fn open_in_browser(url: &str) -> bool {
    let found = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| dir.join("xdg-open").is_file())
    });
    found
        && std::process::Command::new("xdg-open")
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok()
}

/// One install's result for output.
fn install_json(
    requested: &str,
    outcome: &InstallOutcome,
    source: SourceKind,
    registry: Option<&str>,
    page_url: Option<&str>,
) -> Value {
    let mut value = serde_json::to_value(outcome).expect("serialisable");
    value["requested"] = json!(requested);
    value["source"] = json!(source);
    value["registry"] = json!(registry);
    value["page_url"] = json!(page_url);
    value["error"] = Value::Null;
    value
}

fn failed_json(requested: &str, error: &RegistryError) -> Value {
    json!({ "requested": requested, "status": "failed", "error": error })
}

async fn install(
    ctx: &Ctx,
    ids: &[String],
    force: bool,
    from: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let library = ctx.library()?;
    let mut results: Vec<Value> = Vec::new();
    let mut lines = String::new();
    let mut failed = 0;
    let mut feed_origin: Option<FeedOrigin> = None;
    if let Some(from) = from {
        if ids.len() > 1 {
            bail!("with --from, give at most one id (where to install the skill)");
        }
        let id = ids.first().map(|i| SkillId::parse(i)).transpose()?;
        let lower = from.to_ascii_lowercase();
        let is_url = lower.starts_with("http://") || lower.starts_with("https://");
        if !is_url && from.contains("://") {
            bail!(
                "{from}: only http and https URLs, or a local file or directory, can be installed"
            );
        }
        let kind = if is_url {
            SourceKind::Url
        } else {
            SourceKind::File
        };
        let mut consent = ToolConsent::given(ctx.yes);
        let result = loop {
            let result = if is_url {
                ctx.progress(format!("fetching {from}"));
                direct::install_from_url(
                    &library,
                    from,
                    id.clone(),
                    force,
                    ctx.allow_private(),
                    consent,
                )
                .await
            } else {
                direct::install_from_file(&library, Path::new(from), id.clone(), force, consent)
            };
            match &result {
                Err(error) if consent == ToolConsent::NotConfirmed && ctx.confirms_tools(error) => {
                    consent = ToolConsent::Confirmed;
                }
                _ => break result,
            }
        };
        match result {
            Ok(outcome) => {
                lines.push_str(&outcome_line(&outcome, None));
                results.push(install_json(from, &outcome, kind, None, None));
            }
            Err(error) => {
                failed += 1;
                eprintln!("error: {from}: {error}");
                results.push(failed_json(from, &error));
            }
        }
    } else {
        if ids.is_empty() {
            bail!("give at least one registry id (category/slug), or --from <file|url>");
        }
        // Ids are checked before anything is fetched.
        let checked: Vec<Option<RegistryError>> = ids
            .iter()
            .map(|id| SkillId::parse(id).err().map(RegistryError::from))
            .collect();
        let client = ctx.client()?;
        let mut loaded = match checked.iter().any(Option::is_none) {
            true => Some(load_feed(ctx, &client).await?),
            false => None,
        };
        for (id, invalid) in ids.iter().zip(checked) {
            if let Some(error) = invalid {
                failed += 1;
                eprintln!("error: {error}");
                results.push(failed_json(id, &error));
                continue;
            }
            let Some(loaded) = loaded.as_mut() else {
                continue;
            };
            ctx.progress(format!("installing {}", clean(id)));
            let mut consent = ToolConsent::given(ctx.yes);
            let result = loop {
                let result = client
                    .install_with(loaded, &library, id, force, consent)
                    .await;
                match &result {
                    Err(error)
                        if consent == ToolConsent::NotConfirmed && ctx.confirms_tools(error) =>
                    {
                        consent = ToolConsent::Confirmed;
                    }
                    _ => break result,
                }
            };
            match result {
                Ok(done) => {
                    lines.push_str(&outcome_line(&done.outcome, Some(&done.page_url)));
                    results.push(install_json(
                        id,
                        &done.outcome,
                        SourceKind::Registry,
                        Some(&done.registry),
                        Some(&done.page_url),
                    ));
                }
                Err(error) => {
                    failed += 1;
                    eprintln!("error: {}: {error}", clean(id));
                    results.push(failed_json(id, &error));
                }
            }
        }
        feed_origin = loaded.map(|l| l.origin);
    }
    let value = json!({ "results": results, "feed": feed_origin, "failed": failed });
    ctx.output(&value, || lines)?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn outcome_line(outcome: &InstallOutcome, page_url: Option<&str>) -> String {
    // A skill without a version is named alone ("tea-notes: installed").
    let version = outcome
        .version
        .as_deref()
        .map(|v| format!(" {}", clean(v)))
        .unwrap_or_default();
    let mut line = format!(
        "{}{version}: {}",
        clean(&outcome.id),
        match outcome.status {
            crate::skills::InstallStatus::Installed => "installed",
            crate::skills::InstallStatus::Updated => "updated",
            crate::skills::InstallStatus::Reinstalled => "reinstalled",
            crate::skills::InstallStatus::AlreadyInstalled =>
                "already installed (--force reinstalls)",
        }
    );
    if let Some(url) = page_url {
        line.push_str(&format!("  {url}"));
    }
    line.push('\n');
    if !outcome.allowed_tools.is_empty() {
        line.push_str(&format!(
            "  tools granted whenever it is invoked: {}\n",
            clean(&outcome.allowed_tools.join(", "))
        ));
    }
    for w in &outcome.warnings {
        line.push_str(&format!(
            "  warning [{}]: {}\n",
            w.code(),
            clean(&w.message())
        ));
    }
    line
}

async fn update(ctx: &Ctx, id: Option<&str>) -> anyhow::Result<ExitCode> {
    let library = ctx.library()?;
    let client = ctx.client()?;
    ctx.progress(format!("registry {}", client.registry().as_str()));
    let (results, loaded) = client
        .update(&library, id, ToolConsent::given(ctx.yes))
        .await?;
    if let Some(loaded) = &loaded {
        ctx.notice(&loaded.origin);
    }
    let failed = results
        .iter()
        .filter(|r| r.status == UpdateStatus::Failed)
        .count();
    let value = json!({
        "registry": registry_json(client.registry()),
        "feed": loaded.as_ref().map(|l| &l.origin),
        "results": results,
        "failed": failed,
    });
    ctx.output(&value, || {
        let mut out = String::new();
        for r in &results {
            let what = match r.status {
                UpdateStatus::Updated => format!(
                    "updated {} -> {}",
                    clean(r.from_version.as_deref().unwrap_or("-")),
                    clean(r.to_version.as_deref().unwrap_or("-"))
                ),
                UpdateStatus::UpToDate => "up to date".to_string(),
                UpdateStatus::Skipped => {
                    format!("skipped ({})", clean(r.reason.as_deref().unwrap_or("")))
                }
                UpdateStatus::Failed => format!(
                    "FAILED: {}",
                    r.error
                        .as_ref()
                        .map(|e| clean(&e.to_string()))
                        .unwrap_or_default()
                ),
            };
            out.push_str(&format!("{:<48} {what}\n", clean(&r.id)));
        }
        if results.is_empty() {
            out.push_str("no skills installed\n");
        }
        out
    })?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The person at the terminal grants the skill the tools its SKILL.md asks for, having
/// been shown them (and the file's sha256, which the grant is bound to).
fn grant(ctx: &Ctx, id: &str) -> anyhow::Result<ExitCode> {
    let library = ctx.library()?;
    let slug = SkillId::parse(id)?.slug().to_string();
    let detail = library.installed_skill(&slug, false)?;
    let (Some(catalog), Some(file)) = (&detail.skill.catalog, &detail.skill.file_sha256) else {
        bail!("`{}` cannot be read, so nothing can be granted", clean(id));
    };
    let tools = &catalog.allowed_tools;
    if tools.is_empty() {
        bail!(
            "`{}` asks for no tools; there is nothing to grant",
            clean(id)
        );
    }
    if !ctx.yes {
        eprint!(
            "Grant {} the tools [{}] (its SKILL.md as it is now, sha256 {})? [y/N] ",
            clean(&detail.skill.entry.id),
            crate::term_text::neutralised(&tools.join(", ")),
            &file[..12.min(file.len())]
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            bail!("cancelled; nothing was granted");
        }
    }
    let entry = library.confirm_tools(&slug, file)?;
    let granted = entry.granted.map(|g| g.tools).unwrap_or_default();
    let value =
        json!({"status": "granted", "slug": slug, "id": entry.id, "granted_tools": granted});
    ctx.output(&value, || {
        format!(
            "{}: granted {}\n",
            clean(&entry.id),
            clean(&granted.join(", "))
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

fn remove(ctx: &Ctx, id: &str) -> anyhow::Result<ExitCode> {
    let library = ctx.library()?;
    let parsed = SkillId::parse(id)?;
    let slug = parsed.slug().to_string();
    let entry = library.entry(&slug)?;
    if id.contains('/') && entry.id != id {
        bail!(
            "`{id}` is not installed; `{slug}` is installed as {}",
            clean(&entry.id)
        );
    }
    if !ctx.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!(
                "refusing to remove without confirmation: stdin is not a terminal; pass -y (--yes)"
            );
        }
        eprint!(
            "Remove the skill {} ({})? [y/N] ",
            clean(&entry.id),
            library.root().join(&entry.path).display()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            bail!("cancelled; nothing was removed");
        }
    }
    let removed = library.remove(&slug)?;
    let path = library.root().join(&removed.path);
    let value = json!({
        "status": "removed",
        "slug": slug,
        "id": removed.id,
        "path": path,
        "source": removed.source,
    });
    ctx.output(&value, || format!("{}: removed\n", clean(&removed.id)))?;
    Ok(ExitCode::SUCCESS)
}

fn scan(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let report = ctx.library()?.scan()?;
    ctx.output(&serde_json::to_value(&report)?, || {
        let mut out = String::new();
        let mut line = |what: &str, items: Vec<String>| {
            if !items.is_empty() {
                out.push_str(&format!("{what}: {}\n", clean(&items.join(", "))));
            }
        };
        line("added", report.added.clone());
        line("refreshed", report.refreshed.clone());
        line(
            "dropped (directory gone)",
            report.dropped.iter().map(|d| d.slug.clone()).collect(),
        );
        line(
            "renamed",
            report
                .renamed
                .iter()
                .map(|r| format!("{} -> {}", r.from, r.to))
                .collect(),
        );
        line("recovered", report.recovered.clone());
        line(
            "not valid skills",
            report
                .problems
                .iter()
                .map(|p| format!("{} ({}: {})", p.path, p.code, p.message))
                .collect(),
        );
        if let Some(reason) = &report.index_reset {
            out.push_str(&format!("index rebuilt: {}\n", clean(reason)));
        }
        if out.is_empty() {
            out.push_str("the index matches the skills directory\n");
        }
        out
    })?;
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn list(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let library = ctx.library()?;
    let installed = library.installed()?;
    let items: Vec<Value> = installed
        .iter()
        .map(|s| {
            let e = &s.entry;
            let page_url = match (&e.source.kind, &e.source.registry) {
                (SourceKind::Registry, Some(registry)) => Some(format!(
                    "{}/skills/{}",
                    registry.trim_end_matches('/'),
                    e.id
                )),
                _ => None,
            };
            json!({
                "slug": s.slug,
                "id": e.id,
                "name": e.name,
                "version": e.version,
                "category": e.category,
                "description": s.catalog.as_ref().map(|c| c.summary.clone()),
                "source": e.source,
                "active": e.active,
                "pinned": e.pinned,
                "sha256": e.sha256,
                "installed_at": e.installed_at,
                "updated_at": e.updated_at,
                "path": library.root().join(&e.path),
                "page_url": page_url,
                "warnings": s.warnings,
                "error": s.error,
                "granted_tools": s.granted_tools,
            })
        })
        .collect();
    let value = json!({ "count": items.len(), "skills": items });
    ctx.output(&value, || {
        if installed.is_empty() {
            return "no skills installed\n".to_string();
        }
        let mut out = String::new();
        for s in &installed {
            let e = &s.entry;
            let mut line = format!(
                "{:<44} {:<8} {:<9} {:<8}",
                clean(&e.id),
                clean(e.version.as_deref().unwrap_or("-")),
                format!("{:?}", e.source.kind).to_lowercase(),
                if e.active { "active" } else { "inactive" }
            );
            if let Some(c) = &s.catalog {
                line.push_str(&format!(" {}", cut(&clean(&c.summary), 60)));
            }
            if let Some(err) = &s.error {
                line.push_str(&format!(" ERROR {}: {}", err.code, clean(&err.message)));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn info(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let client = ctx.client()?;
    let started = Instant::now();
    let loaded = client.refresh().await;
    let latency_ms = started.elapsed().as_millis() as u64;
    let loaded = loaded?;
    ctx.notice(&loaded.origin);
    let reachable = loaded.origin.notice.is_none();
    let installed = installed_entries(ctx);
    let from_here = installed
        .iter()
        .filter(|e| e.source.registry.as_deref() == Some(client.registry().as_str()))
        .count();
    let cache = client.cached().map(|(_, file)| file);
    let value = json!({
        "registry": registry_json(client.registry()),
        "reachable": reachable,
        "latency_ms": reachable.then_some(latency_ms),
        "feed": loaded.origin,
        "schema": loaded.feed.schema,
        "generated_at": loaded.feed.generated_at,
        "skills": loaded.feed.skills.len(),
        "categories": loaded.feed.categories.len(),
        "dropped_entries": loaded.problems,
        "installed": installed.len(),
        "installed_from_registry": from_here,
        "cache": cache,
        "cache_ttl_seconds": client.ttl().as_secs(),
    });
    ctx.output(&value, || {
        let mut out = String::new();
        out.push_str(&format!(
            "registry:   {} (from {})\n",
            client.registry().as_str(),
            serde_json::to_value(client.registry().source())
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        ));
        out.push_str(&format!(
            "reachable:  {}\n",
            if reachable {
                format!("yes ({latency_ms} ms)")
            } else {
                "no (using the cached feed)".to_string()
            }
        ));
        out.push_str(&format!(
            "feed:       {} skills in {} categories, generated {}\n",
            loaded.feed.skills.len(),
            loaded.feed.categories.len(),
            clean(loaded.feed.generated_at.as_deref().unwrap_or("-"))
        ));
        out.push_str(&format!(
            "cached:     {} ago\n",
            human_age(loaded.origin.age_seconds)
        ));
        out.push_str(&format!(
            "installed:  {} skills, {from_here} from this registry\n",
            installed.len()
        ));
        out
    })?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    /// `ok`, `warn` or `fail`.
    status: &'static str,
    message: String,
}

/// `doctor`'s exit code when the registry cannot be reached and every other check
/// passed (offline is no failure of this machine).
pub const EXIT_REGISTRY_OFFLINE: u8 = 4;

async fn doctor(ctx: &Ctx, seed_skills: bool) -> anyhow::Result<ExitCode> {
    let mut checks = Vec::new();
    let mut offline = false;
    let mut check = |name, status, message: String| {
        checks.push(Check {
            name,
            status,
            message,
        })
    };

    // Registry and cache.
    let (registry_json_value, cache_json) = match ctx.client() {
        Err(error) => {
            check("registry", "fail", error.to_string());
            (json!({ "error": error }), Value::Null)
        }
        Ok(client) => {
            let before = client.cached();
            let cache_json = match &before {
                Some((loaded, file)) => {
                    let o = &loaded.origin;
                    check(
                        "cache",
                        if o.stale { "warn" } else { "ok" },
                        format!(
                            "feed cached {} ago ({} skills){}",
                            human_age(o.age_seconds),
                            loaded.feed.skills.len(),
                            if o.stale { ", older than the TTL" } else { "" }
                        ),
                    );
                    json!({
                        "present": true,
                        "path": file.path,
                        "bytes": file.bytes,
                        "fetched_at": o.fetched_at,
                        "age_seconds": o.age_seconds,
                        "ttl_seconds": client.ttl().as_secs(),
                        "fresh": !o.stale,
                    })
                }
                None => {
                    check("cache", "warn", "no feed cached yet".to_string());
                    json!({
                        "present": false,
                        "path": client.cache_dir().join("feed.json"),
                        "ttl_seconds": client.ttl().as_secs(),
                    })
                }
            };
            let started = Instant::now();
            let pinged = client.ping().await;
            let latency_ms = started.elapsed().as_millis() as u64;
            let (reachable, error) = match pinged {
                Ok(skills) => {
                    check(
                        "registry",
                        "ok",
                        format!(
                            "{} answered in {latency_ms} ms: {skills} skills",
                            client.registry().as_str()
                        ),
                    );
                    (true, Value::Null)
                }
                Err(RegistryError::Fetch(e)) if e.is_unreachable() => {
                    // Nothing is wrong here: the installed skills, the daemon and
                    // the memory work without the registry.
                    offline = true;
                    check(
                        "registry",
                        "warn",
                        format!(
                            "{} cannot be reached ({e}); only installs, updates and searches from the registry need it: everything else works offline",
                            client.registry().as_str()
                        ),
                    );
                    (false, serde_json::to_value(RegistryError::Fetch(e))?)
                }
                Err(e) => {
                    check("registry", "fail", e.to_string());
                    let reached = matches!(&e, RegistryError::Feed { .. });
                    (reached, serde_json::to_value(&e)?)
                }
            };
            (
                json!({
                    "url": client.registry().as_str(),
                    "source": client.registry().source(),
                    "reachable": reachable,
                    "latency_ms": latency_ms,
                    "error": error,
                }),
                cache_json,
            )
        }
    };

    // The skills directory.
    let library = ctx.library()?;
    let mut seeded = Value::Null;
    if seed_skills {
        match crate::skills::library::seed::seed_builtins(&library) {
            Ok(report) => {
                check(
                    "seed",
                    "ok",
                    format!(
                        "wrote {}; left {} in place",
                        if report.written.is_empty() {
                            "nothing".to_string()
                        } else {
                            report.written.join(", ")
                        },
                        report.skipped.len()
                    ),
                );
                seeded = serde_json::to_value(&report)?;
            }
            Err(e) => check("seed", "fail", e.to_string()),
        }
    }
    let library_json = match (library.installed(), library.disk_check()) {
        (Ok(installed), Ok(disk)) => {
            let broken: Vec<_> = installed.iter().filter_map(|s| s.error.clone()).collect();
            if broken.is_empty() {
                check("index", "ok", format!("{} skills indexed", installed.len()));
            } else {
                check(
                    "index",
                    "fail",
                    format!(
                        "{} indexed skill(s) cannot be used: {}",
                        broken.len(),
                        broken
                            .iter()
                            .map(|p| format!("{} ({})", p.path, p.code))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            if !disk.problems.is_empty() {
                check(
                    "disk",
                    "fail",
                    format!(
                        "{} directory(ies) are not valid skills: {}",
                        disk.problems.len(),
                        disk.problems
                            .iter()
                            .map(|p| format!("{} ({})", clean(&p.path), p.code))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            } else if !disk.unindexed.is_empty() {
                check(
                    "disk",
                    "warn",
                    format!(
                        "not indexed yet (`engram skills scan`, or the daemon's next start, adds them): {}",
                        disk.unindexed.join(", ")
                    ),
                );
            } else {
                check("disk", "ok", "every skill directory is indexed".to_string());
            }
            json!({
                "root": library.root(),
                "installed": installed.len(),
                "broken": broken,
                "unindexed": disk.unindexed,
                "problems": disk.problems,
                "template": disk.template,
            })
        }
        (Err(e), _) | (_, Err(e)) => {
            check("index", "fail", e.to_string());
            json!({ "root": library.root(), "error": e })
        }
    };

    let ok = checks.iter().all(|c| c.status != "fail");
    let value = json!({
        "ok": ok,
        "offline": offline,
        "checks": checks,
        "registry": registry_json_value,
        "cache": cache_json,
        "library": library_json,
        "seeded": seeded,
    });
    ctx.output(&value, || {
        let mut out = String::new();
        for c in &checks {
            out.push_str(&format!(
                "{:<4} {:<9} {}\n",
                c.status,
                c.name,
                clean(&c.message)
            ));
        }
        out
    })?;
    Ok(match (ok, offline) {
        (false, _) => ExitCode::FAILURE,
        (true, true) => ExitCode::from(EXIT_REGISTRY_OFFLINE),
        (true, false) => ExitCode::SUCCESS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_without_a_version_names_the_skill_alone() {
        let outcome = |version: Option<&str>| InstallOutcome {
            status: crate::skills::InstallStatus::Installed,
            slug: "tea-notes".into(),
            id: "tea-notes".into(),
            name: "tea-notes".into(),
            version: version.map(str::to_string),
            sha256: String::new(),
            path: std::path::PathBuf::from("tea-notes"),
            warnings: Vec::new(),
            replaced: None,
            allowed_tools: Vec::new(),
            granted_tools: Vec::new(),
        };
        assert!(outcome_line(&outcome(None), None).starts_with("tea-notes: installed"));
        assert!(
            outcome_line(&outcome(Some("0.1.0")), None).starts_with("tea-notes 0.1.0: installed")
        );
    }
}

//! `{data_dir}/config.yaml`, re-read whenever the file changes so that settings such as
//! `memory.strategies.*` take effect on the next call without a restart. A file that
//! fails to parse keeps the last good configuration in force and the error is kept for
//! status reports and logged: a typo never silently resets settings to defaults.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Deserialize;

/// Largest config.yaml read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    #[serde(default)]
    pub memory: MemoryConfig,
    #[serde(default)]
    pub skills: SkillsConfig,
    #[serde(default)]
    pub network: NetworkConfig,
    #[serde(default)]
    pub channels: ChannelsConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    #[serde(default)]
    pub plugins: PluginsConfig,
    #[serde(default)]
    pub llm: LlmConfig,
    #[serde(default)]
    pub mcp: McpConfig,
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub agent: AgentConfig,
    #[serde(default)]
    pub embed: EmbedConfig,
    #[serde(default)]
    pub storage: StorageConfig,
}

/// `storage.*`: where the daemon's databases live (`storage.rs`). Read when the
/// daemon starts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageConfig {
    /// `postgres://...`: every database on that PostgreSQL server, shared with the
    /// other daemons on it. Unset: the SQLite files of the data directory.
    /// `ENGRAM_DATABASE_URL` wins over it.
    pub url: Option<String>,
}

/// `embed.*`: the sentence encoder. Read when the daemon starts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EmbedConfig {
    /// The installed model (`engram models list`) that embeds text, or `static` for
    /// the word-vector table compiled in. Unset: the one model installed, if exactly
    /// one is, else the table.
    pub model: Option<String>,
}

/// `agent.*`: whom the agent's credential may act for (its token on REST and `/mcp`,
/// an MCP client over stdio). See `credentials::AgentUsers`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentConfig {
    /// The users the agent may name (`user` on REST and MCP). Unset: the default user
    /// and `mcp.user` when that is set.
    pub users: Option<Vec<String>>,
}

/// `mcp.*`: the MCP server (`engram mcp`, `/mcp`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpConfig {
    /// Whose memories and turns an MCP session uses when a call names no `user`
    /// (default `default`).
    pub user: Option<String>,
}

/// `server.*`: what one client may hold of the daemon (see `connections.rs`). Read when
/// `engram serve` starts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    /// Connections open at once (default 512; at least 1). Past it, a new connection
    /// closes the one that has waited longest for a request.
    pub max_connections: Option<u32>,
    /// Seconds a client has to send a request's head (default 10; at least 1).
    pub header_read_timeout_secs: Option<u32>,
    /// Seconds a request body or a response may make no progress (default 60; at
    /// least 1).
    pub idle_timeout_secs: Option<u32>,
    /// Seconds a request body has to arrive whole once its head is read (default 30;
    /// at least 1).
    pub body_timeout_secs: Option<u32>,
}

impl ServerConfig {
    /// The limits these settings ask for, the defaults for what is not set.
    pub fn limits(&self) -> crate::connections::Limits {
        let defaults = crate::connections::Limits::default();
        let secs = |v: Option<u32>, default: std::time::Duration| {
            v.map_or(default, |s| {
                std::time::Duration::from_secs(u64::from(s.max(1)))
            })
        };
        crate::connections::Limits {
            max_connections: self
                .max_connections
                .map_or(defaults.max_connections, |n| n.max(1) as usize),
            header_read_timeout: secs(self.header_read_timeout_secs, defaults.header_read_timeout),
            idle_timeout: secs(self.idle_timeout_secs, defaults.idle_timeout),
            body_timeout: secs(self.body_timeout_secs, defaults.body_timeout),
        }
    }
}

/// `skills.*`: where the skills registry is and how long its feed is cached.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillsConfig {
    /// The registry's base URL (`--registry` and `ENGRAM_SKILLS_REGISTRY` take
    /// precedence; default: the public community registry).
    pub registry: Option<String>,
    /// How long a fetched registry feed is used before it is fetched again
    /// (default 60; 0 fetches every time, still falling back to the cache offline).
    pub cache_ttl_minutes: Option<u32>,
}

/// `network.*`: outbound requests made on the user's behalf (installs from a URL).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkConfig {
    /// Allow loopback, private, link-local, unique-local and CGNAT addresses (default
    /// false: a URL, or a redirect, that resolves to one is refused).
    pub allow_private: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryConfig {
    #[serde(default)]
    pub second_brain: SecondBrainConfig,
    #[serde(default)]
    pub strategies: StrategyConfig,
    /// The kinds of secret every write redacts (`api-key`, `password`,
    /// `one-time-code`, `national-id`, `card`, `iban`, `private-key`); all of them
    /// when absent, none for `[]`.
    pub redact: Option<Vec<String>>,
    #[serde(default)]
    pub agent_deletes: AgentDeletesConfig,
}

/// `memory.agentDeletes.*`: what the agent's deletes of memories may do (REST with
/// the agent's token, MCP `memory_forget`); the person's are never limited. Read at
/// each delete and each maintenance pass.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentDeletesConfig {
    /// Deletes the agent may make for one user in any hour (default 20; 0: none).
    pub per_hour: Option<u32>,
    /// Days the person can restore a memory the agent deleted before it is forgotten
    /// for good (default 7; 0: until the next maintenance pass).
    pub restore_days: Option<u32>,
}

impl AgentDeletesConfig {
    pub const DEFAULT_PER_HOUR: u32 = 20;
    pub const DEFAULT_RESTORE_DAYS: u32 = 7;

    pub fn per_hour(&self) -> u32 {
        self.per_hour.unwrap_or(Self::DEFAULT_PER_HOUR)
    }

    /// How long a memory the agent deleted stays restorable, in milliseconds.
    pub fn restore_ms(&self) -> i64 {
        i64::from(self.restore_days.unwrap_or(Self::DEFAULT_RESTORE_DAYS)) * crate::time::DAY_MS
    }
}

impl MemoryConfig {
    /// `redact` as a set of kinds; an unknown kind is an error naming it.
    pub fn redact_kinds(&self) -> Result<engram_strategies::secrets::KindSet, String> {
        use engram_strategies::secrets::{KindSet, SecretKind};
        let Some(names) = &self.redact else {
            return Ok(KindSet::all());
        };
        names
            .iter()
            .map(|name| {
                SecretKind::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = SecretKind::ALL.iter().map(|k| k.as_str()).collect();
                    format!(
                        "memory.redact: unknown kind `{name}`; expected some of: {}",
                        known.join(", ")
                    )
                })
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecondBrainConfig {
    pub enabled: Option<bool>,
    /// Minutes between consolidations (default 60).
    pub consolidation_interval_minutes: Option<u32>,
    /// Minutes without a message after which a conversation ends (default 10).
    pub idle_minutes: Option<u32>,
    /// Half-life of inferred memories' confidence, in days (default 90).
    pub inferred_half_life_days: Option<u32>,
    /// Days a message stays in the transcript tier once extraction has read it
    /// (default 365; 0 keeps nothing).
    pub transcript_days: Option<u32>,
}

/// Which plugin runs each strategy: `builtin:<name>` or an installed plugin's name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StrategyConfig {
    pub extractor: Option<String>,
    pub resolver: Option<String>,
    pub consolidator: Option<String>,
}

impl Config {
    pub fn parse(text: &str) -> Result<Config, String> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let config: Config = serde_norway::from_str(text).map_err(|e| e.to_string())?;
        config.plugins.validate()?;
        if let Some(url) = &config.storage.url {
            crate::pg::check_url(url).map_err(|e| format!("storage.url: {e}"))?;
        }
        config.memory.redact_kinds()?;
        Ok(config)
    }
}

/// The configuration file, reloaded when its modification time or size changes.
pub struct ConfigFile {
    path: PathBuf,
    state: Mutex<Loaded>,
}

struct Loaded {
    stamp: Option<(SystemTime, u64)>,
    config: Arc<Config>,
    error: Option<String>,
}

impl ConfigFile {
    pub fn new(path: PathBuf) -> ConfigFile {
        ConfigFile {
            path,
            state: Mutex::new(Loaded {
                stamp: None,
                config: Arc::new(Config::default()),
                error: None,
            }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The configuration in force now.
    pub fn current(&self) -> Arc<Config> {
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.stamp != stamp || (stamp.is_none() && state.error.is_some()) {
            state.stamp = stamp;
            match self.read() {
                Ok(config) => {
                    state.config = Arc::new(config);
                    state.error = None;
                }
                Err(error) => {
                    tracing::error!(path = %self.path.display(), "config not applied: {error}");
                    state.error = Some(error);
                }
            }
        }
        state.config.clone()
    }

    /// Why the file on disk is not in force, if it is not.
    pub fn error(&self) -> Option<String> {
        self.current();
        self.state.lock().ok().and_then(|s| s.error.clone())
    }

    fn read(&self) -> Result<Config, String> {
        load(&self.path)
    }
}

/// Reads and checks `path` as the daemon does (`engram config check` gives the same
/// errors): a missing file is the defaults.
pub fn load(path: &Path) -> Result<Config, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(e) => return Err(e.to_string()),
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{} bytes, over the {MAX_CONFIG_BYTES}-byte limit",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    Config::parse(&text)
}

/// The commented configuration the first `engram serve` writes: every key with its
/// default and why one would change it (`host/assets/config.yaml`).
pub const TEMPLATE: &str = include_str!("../assets/config.yaml");

/// Writes [`TEMPLATE`] to `path` unless a file is there (private to the user);
/// whether it wrote it.
pub fn write_template(path: &Path) -> std::io::Result<bool> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            std::io::Write::write_all(&mut file, TEMPLATE.as_bytes())?;
            file.sync_all()?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// [`TEMPLATE`] with its keys uncommented (its `## ` prose left out). With
/// `defaults_only`, the keys marked `(no default)` or `(example ...)` are left out
/// with everything under them: what remains is what is in force when nothing is set.
pub fn template_keys(defaults_only: bool) -> String {
    let mut out = String::new();
    let mut dropped_at: Option<usize> = None;
    for line in TEMPLATE.lines() {
        let Some(body) = line.strip_prefix("# ") else {
            continue;
        };
        let indent = body.len() - body.trim_start().len();
        if let Some(level) = dropped_at {
            if indent > level {
                continue;
            }
            dropped_at = None;
        }
        if defaults_only && (body.contains("(no default") || body.contains("(example")) {
            dropped_at = Some(indent);
            continue;
        }
        out.push_str(body);
        out.push('\n');
    }
    out
}

/// `channels.*`: the messaging channels Engram answers on.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelsConfig {
    #[serde(default)]
    pub bot: BotChannelConfig,
    /// Absent: no Telegram channel.
    pub telegram: Option<TelegramConfig>,
}

/// `channels.telegram.*`: the Telegram bot the daemon answers as (long polling). Who
/// may talk to it is `channels.bot`; the token is read from the environment variable
/// named here, never from this file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelegramConfig {
    /// The environment variable holding the bot token BotFather gave (default
    /// `TELEGRAM_BOT_TOKEN`).
    pub token_env: Option<String>,
    /// The Bot API's base URL (default `https://api.telegram.org`): a self-hosted Bot
    /// API server, or a stand-in for tests. Like `llm.baseUrl`, the operator's choice,
    /// so it may be on loopback.
    pub base_url: Option<String>,
    /// How long one `getUpdates` long poll waits for news, in seconds (1 to 50,
    /// default 30).
    pub poll_seconds: Option<u32>,
    /// Telegram user id -> the Engram user whose memory their chats use (default
    /// `telegram-<id>`: each person keeps their own). Map yourself to `default` to
    /// share the memory of `engram chat`.
    #[serde(default, deserialize_with = "user_map")]
    pub users: std::collections::BTreeMap<String, String>,
    /// Group chats (their ids, negative numbers) where a person's own memory may show:
    /// the memory block in answers, `/memory`, the `search_memory` tool. Anywhere else
    /// in a group, memory stays out of what the group reads (default: no group).
    #[serde(default)]
    pub memory_groups: Vec<i64>,
}

/// `llm.*`: the model `engram chat` and the Telegram channel talk to, any
/// OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, llama.cpp's server,
/// vLLM). Without `baseUrl` and `model`, chat says so and the slash commands still work.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LlmConfig {
    /// The API's base URL, up to and including its version (`/v1`): requests go to
    /// `{baseUrl}/chat/completions`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable holding the API key, sent as a bearer token (none:
    /// no key is sent, as local servers expect).
    pub api_key_env: Option<String>,
    /// Model calls answered with tool calls in one turn, at most (default 8); then the
    /// turn stops and says so.
    pub max_tool_rounds: Option<u32>,
    /// The longest one model call may take, streaming included, in seconds (default
    /// 120).
    pub timeout_seconds: Option<u32>,
    pub temperature: Option<f32>,
}

/// `channels.bot.*`: who may use the messaging-bot channel's commands. User ids are
/// the transport's own, compared exactly. Admins are approved users too; anyone else
/// is refused (see `channels/skills_command.rs`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BotChannelConfig {
    /// May also install and remove skills.
    #[serde(default, deserialize_with = "user_ids")]
    pub admins: Vec<String>,
    #[serde(default, deserialize_with = "user_ids")]
    pub approved_users: Vec<String>,
}

/// A list of user ids, each written as text or as a number (`[123456789]`).
fn user_ids<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(i64),
    }
    let ids = Vec::<Id>::deserialize(d)?;
    Ok(ids
        .into_iter()
        .map(|id| match id {
            Id::Text(text) => text,
            Id::Number(n) => n.to_string(),
        })
        .collect())
}

/// Telegram user ids (text or numbers) -> Engram user names.
fn user_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(i64),
    }
    let map = std::collections::BTreeMap::<Id, String>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(id, user)| {
            let id = match id {
                Id::Text(text) => text,
                Id::Number(n) => n.to_string(),
            };
            (id, user)
        })
        .collect())
}

/// `tools.*`: the tool-permission gate (see `gate/`). Only what the operator writes is
/// here; the defaults (each known tool's level, the turn lifetime) live with the gate,
/// so that an empty section means "the gate's defaults".
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolsConfig {
    /// Tool name -> allow | ask | deny, overriding the gate's default for that tool.
    /// Naming a tool the gate does not know makes it known, at the level given.
    #[serde(default)]
    pub policy: std::collections::BTreeMap<String, ToolLevel>,
    /// Minutes after which a turn that was not ended expires and its grants with it
    /// (default 10).
    pub turn_ttl_minutes: Option<u32>,
    /// Turns one caller (the agent's token, an MCP client, a chat channel, the
    /// scheduler, the person's token) may hold open at once (default 1000, at least
    /// 1): past it that caller's new turns are refused, and nobody else's.
    pub max_open_turns_per_caller: Option<u32>,
}

/// What the operator allows for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolLevel {
    /// Runs without asking.
    Allow,
    /// Needs the user's approval, unless the turn's invoked skill lists the tool.
    Ask,
    /// Never runs, whatever a skill lists.
    Deny,
}

/// `plugins.<name>.*`: what the operator gives one plugin, by its manifest name (a
/// built-in's too: `plugins.extract-llm` is `builtin:extract-llm`'s entry). Read at
/// each call, like every other key.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct PluginsConfig(pub std::collections::BTreeMap<String, PluginConfig>);

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    /// What the plugin reads through the WIT `config` interface: any map of JSON
    /// values. Keys ending in `Env` name environment variables (secrets).
    #[serde(default)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Replaces the manifest's `allowed-hosts` (same forms: `host`, `host:port`,
    /// `*.domain`, an IP address).
    pub allowed_hosts: Option<Vec<String>>,
    /// Replaces the manifest's `private-hosts`: names or addresses that may resolve to
    /// (or be) loopback or private addresses.
    pub private_hosts: Option<Vec<String>>,
}

impl PluginsConfig {
    pub fn get(&self, name: &str) -> Option<&PluginConfig> {
        self.0.get(name)
    }

    /// Host lists are checked like a manifest's, so a typo is an error in the log and
    /// the last good configuration stays in force.
    fn validate(&self) -> Result<(), String> {
        for (name, plugin) in &self.0 {
            crate::ids::validate_name(name).map_err(|e| format!("plugins: {e}"))?;
            crate::net::host_pattern::validate_hosts(
                plugin.allowed_hosts.as_deref().unwrap_or_default(),
                plugin.private_hosts.as_deref().unwrap_or_default(),
            )
            .map_err(|e| format!("plugins.{name}: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_written_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.yaml");
        assert!(write_template(&path).expect("first"));
        std::fs::write(&path, "mcp:\n  user: me\n").expect("edit");
        assert!(!write_template(&path).expect("second"));
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "mcp:\n  user: me\n"
        );
    }

    #[test]
    fn server_limits_default_and_read_from_the_file() {
        let defaults = crate::connections::Limits::default();
        assert_eq!(Config::default().server.limits(), defaults);
        let config = Config::parse(
            "server:\n  maxConnections: 16\n  headerReadTimeoutSecs: 0\n  idleTimeoutSecs: 90\n  bodyTimeoutSecs: 5\n",
        )
        .expect("parse");
        let limits = config.server.limits();
        assert_eq!(limits.max_connections, 16);
        assert_eq!(
            limits.header_read_timeout,
            std::time::Duration::from_secs(1)
        );
        assert_eq!(limits.idle_timeout, std::time::Duration::from_secs(90));
        assert_eq!(limits.body_timeout, std::time::Duration::from_secs(5));
        assert!(Config::parse("server:\n  maxConections: 16\n").is_err());
    }

    #[test]
    fn reads_camel_case_keys() {
        let config = Config::parse(
            "memory:\n  secondBrain:\n    enabled: false\n  strategies:\n    extractor: my-extractor\n",
        )
        .expect("parse");
        assert_eq!(config.memory.second_brain.enabled, Some(false));
        assert_eq!(
            config.memory.strategies.extractor.as_deref(),
            Some("my-extractor")
        );
        assert_eq!(config.memory.strategies.resolver, None);
    }

    #[test]
    fn agent_deletes_default_and_read_from_the_file() {
        let defaults = Config::default().memory.agent_deletes;
        assert_eq!(defaults.per_hour(), 20);
        assert_eq!(defaults.restore_ms(), 7 * crate::time::DAY_MS);
        let config =
            Config::parse("memory:\n  agentDeletes:\n    perHour: 3\n    restoreDays: 0\n")
                .expect("parse");
        assert_eq!(config.memory.agent_deletes.per_hour(), 3);
        assert_eq!(config.memory.agent_deletes.restore_ms(), 0);
        assert!(Config::parse("memory:\n  agentDeletes:\n    perHours: 3\n").is_err());
        assert!(Config::parse("memory:\n  agentDeletes:\n    perHour: -1\n").is_err());
    }

    #[test]
    fn reads_second_brain_timings() {
        let config = Config::parse(
            "memory:\n  secondBrain:\n    consolidationIntervalMinutes: 5\n    idleMinutes: 2\n    inferredHalfLifeDays: 30\n    transcriptDays: 0\n",
        )
        .expect("parse");
        let brain = config.memory.second_brain;
        assert_eq!(
            (
                brain.consolidation_interval_minutes,
                brain.idle_minutes,
                brain.inferred_half_life_days,
                brain.transcript_days
            ),
            (Some(5), Some(2), Some(30), Some(0))
        );
        assert!(Config::parse("memory:\n  secondBrain:\n    idleMinutes: -1\n").is_err());
    }

    #[test]
    fn reads_skills_and_network_settings() {
        let config = Config::parse(
            "skills:\n  registry: http://127.0.0.1:9/\n  cacheTtlMinutes: 5\nnetwork:\n  allowPrivate: true\n",
        )
        .expect("parse");
        assert_eq!(
            config.skills.registry.as_deref(),
            Some("http://127.0.0.1:9/")
        );
        assert_eq!(config.skills.cache_ttl_minutes, Some(5));
        assert_eq!(config.network.allow_private, Some(true));
        assert!(Config::parse("network:\n  allowPrivat: true\n").is_err());
    }

    #[test]
    fn a_misspelt_strategy_key_is_an_error() {
        let err = Config::parse("memory:\n  strategies:\n    extracter: x\n").expect_err("typo");
        assert!(err.contains("extracter"), "{err}");
    }

    #[test]
    fn reloads_on_change_and_keeps_last_good_config_on_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.yaml");
        let file = ConfigFile::new(path.clone());
        assert_eq!(*file.current(), Config::default());
        std::fs::write(&path, "memory:\n  strategies:\n    resolver: a\n").expect("write");
        assert_eq!(
            file.current().memory.strategies.resolver.as_deref(),
            Some("a")
        );
        std::fs::write(&path, "memory: [unclosed\n").expect("write");
        assert_eq!(
            file.current().memory.strategies.resolver.as_deref(),
            Some("a")
        );
        assert!(file.error().is_some());
        std::fs::write(&path, "memory:\n  strategies:\n    resolver: bb\n").expect("write");
        assert_eq!(
            file.current().memory.strategies.resolver.as_deref(),
            Some("bb")
        );
        assert!(file.error().is_none());
    }

    #[test]
    fn reads_the_tools_policy() {
        let config = Config::parse(
            "tools:\n  policy:\n    fetch_url: deny\n    run_command: allow\n    my_tool: ask\n  turnTtlMinutes: 3\n",
        )
        .expect("parse");
        let tools = config.tools;
        assert_eq!(tools.policy.get("fetch_url"), Some(&ToolLevel::Deny));
        assert_eq!(tools.policy.get("run_command"), Some(&ToolLevel::Allow));
        assert_eq!(tools.policy.get("my_tool"), Some(&ToolLevel::Ask));
        assert_eq!(tools.turn_ttl_minutes, Some(3));
        assert_eq!(Config::default().tools, ToolsConfig::default());
        // A level outside allow/ask/deny and a misspelt key are errors, not defaults.
        assert!(Config::parse("tools:\n  policy:\n    fetch_url: yes\n").is_err());
        assert!(Config::parse("tools:\n  turnTtl: 3\n").is_err());
    }

    #[test]
    fn reads_the_bot_channel_roles() {
        let config =
            Config::parse("channels:\n  bot:\n    admins: ['42']\n    approvedUsers: [7, '8']\n")
                .expect("parse");
        assert_eq!(config.channels.bot.admins, ["42"]);
        assert_eq!(config.channels.bot.approved_users, ["7", "8"]);
        assert_eq!(Config::default().channels.bot.admins.len(), 0);
        assert!(Config::parse("channels:\n  bot:\n    approvedUser: ['7']\n").is_err());
    }

    #[test]
    fn reads_plugin_entries_and_checks_their_hosts() {
        let config = Config::parse(
            "plugins:\n  extract-llm:\n    settings:\n      model: m\n      apiKeyEnv: KEY\n      nested: {a: [1, 2.5, true, null]}\n    allowedHosts: ['127.0.0.1:11434', 'llm.lan']\n    privateHosts: [llm.lan]\n",
        )
        .expect("parse");
        let entry = config.plugins.get("extract-llm").expect("entry");
        assert_eq!(entry.settings["model"], "m");
        assert_eq!(entry.settings["nested"]["a"][1], 2.5);
        assert_eq!(entry.allowed_hosts.as_deref().map(<[String]>::len), Some(2));
        assert!(config.plugins.get("other").is_none());
        for bad in [
            "plugins:\n  Bad_Name: {}\n",
            "plugins:\n  x:\n    allowedHosts: ['https://x.example/']\n",
            "plugins:\n  x:\n    privateHosts: ['*.lan']\n",
            "plugins:\n  x:\n    setings: {}\n",
            "plugins:\n  x:\n    settings: [1, 2]\n",
        ] {
            assert!(Config::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_the_llm_and_telegram_settings() {
        let config = Config::parse(
            "llm:\n  baseUrl: http://127.0.0.1:11434/v1\n  model: qwen3\n  apiKeyEnv: OPENAI_API_KEY\n  maxToolRounds: 3\n  timeoutSeconds: 20\nchannels:\n  telegram:\n    tokenEnv: TG\n    baseUrl: http://127.0.0.1:9\n    pollSeconds: 2\n    users: {42: default}\n",
        )
        .expect("parse");
        assert_eq!(
            config.llm.base_url.as_deref(),
            Some("http://127.0.0.1:11434/v1")
        );
        assert_eq!(config.llm.model.as_deref(), Some("qwen3"));
        assert_eq!(config.llm.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(
            (config.llm.max_tool_rounds, config.llm.timeout_seconds),
            (Some(3), Some(20))
        );
        let telegram = config.channels.telegram.expect("telegram");
        assert_eq!(telegram.token_env.as_deref(), Some("TG"));
        assert_eq!(telegram.poll_seconds, Some(2));
        assert_eq!(
            telegram.users.get("42").map(String::as_str),
            Some("default")
        );
        assert_eq!(Config::default().channels.telegram, None);
        assert!(Config::parse("llm:\n  baseURL: x\n").is_err());
        assert!(Config::parse("channels:\n  telegram:\n    token: secret\n").is_err());
    }
}

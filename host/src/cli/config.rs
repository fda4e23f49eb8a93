//! `engram config show | check [FILE]`: what is in force, and whether a file would be.
//!
//! `show` prints the configuration the daemon runs with: the template's defaults
//! (`host/assets/config.yaml`), what `{data_dir}/config.yaml` sets over them, and the
//! environment variables that take precedence, with secrets masked. `check` reads a
//! file exactly as the daemon does (`config::load`), so its error is the daemon's.
//! Exit codes: 0 valid, 1 invalid (the message names the key or line).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde_norway::{Mapping, Value};

use crate::config;
use crate::paths::DataDir;

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the configuration in force: defaults, the file, the environment (secrets
    /// masked)
    Show {
        /// Print it as JSON
        #[arg(long)]
        json: bool,
    },
    /// Validate a configuration file as the daemon would [default: {data_dir}/config.yaml]
    Check {
        /// The file to check
        file: Option<PathBuf>,
    },
}

/// Environment variables that override a key: (variable, key path).
const ENV_OVERRIDES: &[(&str, &[&str])] = &[
    (
        crate::skills::registry::client::REGISTRY_ENV,
        &["skills", "registry"],
    ),
    (
        crate::memory::ENV_VAR,
        &["memory", "secondBrain", "enabled"],
    ),
    (crate::storage::ENV_VAR, &["storage", "url"]),
];

/// Variables that hold secrets: shown as set or not, never their value.
const SECRET_ENV: &[&str] = &[
    crate::credentials::AGENT_TOKEN_ENV,
    crate::credentials::OPERATOR_TOKEN_ENV,
];

const MASK: &str = "********";

pub fn run(data: &DataDir, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { file } => Ok(check(&file.unwrap_or_else(|| data.config_file()))),
        ConfigCommand::Show { json } => show(data, json),
    }
}

fn check(path: &Path) -> ExitCode {
    if !path.exists() {
        eprintln!("{}: no such file", path.display());
        return ExitCode::from(1);
    }
    match config::load(path) {
        Ok(_) => {
            println!("{}: valid", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{}: {error}", path.display());
            ExitCode::from(1)
        }
    }
}

fn show(data: &DataDir, json: bool) -> anyhow::Result<ExitCode> {
    let path = data.config_file();
    let mut effective: Value = serde_norway::from_str(&config::template_keys(true))?;
    let mut problem = None;
    if path.exists() {
        match config::load(&path) {
            Ok(_) => {
                let text = std::fs::read_to_string(&path)?;
                let file: Value = serde_norway::from_str(&text)?;
                merge(&mut effective, file);
            }
            Err(error) => problem = Some(error),
        }
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let mut from_env = Vec::new();
    for (var, key) in ENV_OVERRIDES {
        if let Some(value) = env(var) {
            let value = match serde_norway::from_str::<Value>(&value) {
                Ok(Value::Bool(b)) => Value::Bool(b),
                _ => Value::String(value),
            };
            set(&mut effective, key, value);
            from_env.push(format!("{var} -> {}", key.join(".")));
        }
    }
    mask(&mut effective);
    if json {
        let mut out = serde_json::to_value(&effective)?;
        out["_source"] = serde_json::json!({
            "data_dir": data.root(),
            "file": path,
            "file_present": path.exists(),
            "file_error": problem,
            "environment": from_env,
            "secrets_set": SECRET_ENV.iter().filter(|v| env(v).is_some()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("# data directory: {}", data.root().display());
        let state = if path.exists() {
            ""
        } else {
            " (absent: defaults)"
        };
        println!("# file: {}{state}", path.display());
        if let Some(error) = &problem {
            println!(
                "# the file does not parse ({error}); the daemon keeps the configuration it last read (the defaults at start): shown without it"
            );
        }
        for line in &from_env {
            println!("# from the environment: {line}");
        }
        for var in SECRET_ENV {
            if env(var).is_some() {
                println!("# {var} is set (its value is not shown)");
            }
        }
        print!("{}", serde_norway::to_string(&effective)?);
    }
    Ok(if problem.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `over`'s keys replace `base`'s, mappings merged key by key.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(base), Value::Mapping(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

fn set(root: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = root;
    for key in parents {
        if !matches!(node, Value::Mapping(_)) {
            *node = Value::Mapping(Mapping::new());
        }
        let Value::Mapping(map) = node else { return };
        node = map
            .entry(Value::String((*key).to_string()))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
    }
    if let Value::Mapping(map) = node {
        map.insert(Value::String((*last).to_string()), value);
    } else {
        let mut map = Mapping::new();
        map.insert(Value::String((*last).to_string()), value);
        *node = Value::Mapping(map);
    }
}

/// Whether a key names a secret held in place (a key ending in `Env` names a variable,
/// which is no secret).
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    !key.ends_with("env")
        && [
            "token",
            "secret",
            "password",
            "apikey",
            "api_key",
            "passphrase",
        ]
        .iter()
        .any(|word| key.contains(word))
}

fn mask(value: &mut Value) {
    match value {
        Value::Mapping(map) => {
            for (key, value) in map.iter_mut() {
                if key.as_str().is_some_and(is_secret_key) && !matches!(value, Value::Null) {
                    *value = Value::String(MASK.into());
                } else if let (Some("url"), Value::String(url)) = (key.as_str(), &*value) {
                    // A database address may carry its password.
                    *value = Value::String(crate::storage::without_password(url, MASK));
                } else {
                    mask(value);
                }
            }
        }
        Value::Sequence(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, TEMPLATE, template_keys};

    /// Every key of the template is one the daemon reads: uncommented whole, it
    /// parses (a misspelt key in a section that refuses unknown keys would not), and
    /// the defaults it states are the code's.
    #[test]
    fn the_template_uncommented_is_a_valid_configuration() {
        let all = template_keys(false);
        let config = Config::parse(&all).unwrap_or_else(|e| panic!("{e}\n{all}"));
        assert!(config.channels.telegram.is_some());
        assert!(config.plugins.get("extract-llm").is_some());
        let defaults = template_keys(true);
        let config = Config::parse(&defaults).unwrap_or_else(|e| panic!("{e}\n{defaults}"));
        assert!(
            config.channels.telegram.is_none(),
            "examples are not defaults"
        );
        assert_eq!(config.llm.base_url, None);
        assert!(config.tools.policy.is_empty());
        assert_eq!(
            config.server.limits(),
            crate::connections::Limits::default()
        );
        assert_eq!(
            config.memory.second_brain.transcript_days,
            Some(crate::memory::DEFAULT_TRANSCRIPT_DAYS)
        );
        assert_eq!(
            config.skills.registry.as_deref(),
            Some(crate::skills::registry::client::DEFAULT_REGISTRY)
        );
        assert_eq!(
            config.memory.redact_kinds().expect("kinds"),
            engram_strategies::secrets::KindSet::all()
        );
        assert_eq!(
            config.tools.max_open_turns_per_caller,
            Some(crate::gate::policy::DEFAULT_MAX_OPEN_PER_CALLER as u32)
        );
        assert_eq!(config.agent.users, None, "computed unless set");
        // As written, nothing is set.
        assert_eq!(
            Config::parse(TEMPLATE).expect("template"),
            Config::default()
        );
    }

    /// Every key the daemon reads is in the template: uncommented whole, it leaves no
    /// optional setting unset (a key added to `config.rs` and not to the template is
    /// a `None` here, named by the debug output).
    #[test]
    fn the_template_has_every_key() {
        let all = template_keys(false);
        let config = Config::parse(&all).unwrap_or_else(|e| panic!("{e}\n{all}"));
        let shown = format!("{config:#?}");
        let unset: Vec<&str> = shown
            .lines()
            .filter(|line| line.trim_end().ends_with(": None,"))
            .collect();
        assert!(unset.is_empty(), "not in the template: {unset:#?}");
    }

    #[test]
    fn file_values_override_defaults_and_secrets_are_masked() {
        let mut effective: Value = serde_norway::from_str(&template_keys(true)).expect("yaml");
        let file: Value = serde_norway::from_str(
            "mcp:\n  user: alice\nplugins:\n  x:\n    settings: {apiKey: sk-live-123, apiKeyEnv: KEY}\n",
        )
        .expect("yaml");
        merge(&mut effective, file);
        mask(&mut effective);
        let text = serde_norway::to_string(&effective).expect("yaml");
        assert!(text.contains("user: alice"), "{text}");
        assert!(text.contains("idleMinutes: 10"), "{text}");
        assert!(!text.contains("sk-live-123"), "{text}");
        assert!(text.contains("apiKeyEnv: KEY"), "{text}");
    }
}

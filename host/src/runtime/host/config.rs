//! `config`: a plugin's own entry of `plugins.<name>` in config.yaml. The entry is
//! looked up once per call, by the calling plugin's manifest name, so a plugin can
//! only ever read its own settings, and only the environment variables those settings
//! name (keys ending in `Env`).

use std::collections::BTreeMap;

use super::CallState;
use crate::config::{ConfigFile, PluginConfig};
use crate::runtime::bindings::config::{Host, SecretError};

/// Longest secret handed to a plugin.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// Where plugins' entries and the secrets they name come from: the daemon's
/// config.yaml and environment, or fixed values in tests.
pub trait PluginSettings: Send + Sync {
    /// The operator's entry for the plugin with this manifest name.
    fn entry(&self, name: &str) -> Option<PluginConfig>;
    /// An environment variable of the daemon.
    fn var(&self, name: &str) -> Option<String>;
}

impl PluginSettings for ConfigFile {
    fn entry(&self, name: &str) -> Option<PluginConfig> {
        self.current().plugins.get(name).cloned()
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// Fixed entries and variables, for tests and benchmarks (no settings by default).
#[derive(Debug, Clone, Default)]
pub struct FixedSettings {
    pub plugins: BTreeMap<String, PluginConfig>,
    pub vars: BTreeMap<String, String>,
}

impl PluginSettings for FixedSettings {
    fn entry(&self, name: &str) -> Option<PluginConfig> {
        self.plugins.get(name).cloned()
    }

    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

impl Host for CallState {
    fn settings(&mut self) -> String {
        let settings = self
            .settings
            .as_ref()
            .map(|entry| entry.settings.clone())
            .unwrap_or_default();
        serde_json::Value::Object(settings).to_string()
    }

    fn secret(&mut self, key: String) -> Result<String, SecretError> {
        let not_configured = |why: &str| SecretError::NotConfigured(format!("`{key}` {why}"));
        if !key.ends_with("Env") {
            return Err(not_configured(
                "does not end in `Env`, so it does not name an environment variable",
            ));
        }
        let variable = match self.settings.as_ref().and_then(|e| e.settings.get(&key)) {
            Some(serde_json::Value::String(name)) if !name.is_empty() => name.clone(),
            Some(_) => return Err(not_configured("is not the name of a variable")),
            None => return Err(not_configured("is not in the plugin's settings")),
        };
        match self.services.settings.var(&variable) {
            Some(value) if !value.is_empty() && value.len() <= MAX_SECRET_BYTES => Ok(value),
            _ => Err(SecretError::Unset(format!(
                "the environment variable {variable} (named by `{key}`) is not set, empty, or over {MAX_SECRET_BYTES} bytes"
            ))),
        }
    }
}

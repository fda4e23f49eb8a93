//! The plugin's settings (`plugins.extract-llm.settings` in config.yaml), read
//! through the WIT `config` interface at each call. A misspelt key is an error, not
//! a silently ignored one.

use serde::Deserialize;

use crate::Failure;

/// Where the endpoint is when no `baseUrl` is set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// How long the whole request may take by default, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 20_000;
pub const DEFAULT_MAX_TOKENS: u32 = 1_000;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Raw {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    timeout_ms: Option<u64>,
    max_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub endpoint: Endpoint,
    pub model: String,
    /// Whether `apiKeyEnv` names a variable: the key itself comes from the host.
    pub has_api_key: bool,
    pub timeout_ms: u64,
    pub max_tokens: u32,
}

/// `{baseUrl}/chat/completions`, split the way `wasi:http` wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub https: bool,
    /// `host` or `host:port`.
    pub authority: String,
    /// The path of the chat-completions resource, from `/`.
    pub path: String,
}

impl Settings {
    /// Parses the settings JSON the host hands over.
    pub fn parse(json: &str) -> Result<Settings, Failure> {
        let raw: Raw = serde_json::from_str(json)
            .map_err(|e| Failure::Settings(format!("plugins.extract-llm.settings: {e}")))?;
        let model = raw.model.unwrap_or_else(|| DEFAULT_MODEL.to_string());
        if model.trim().is_empty() {
            return Err(Failure::Settings("`model` is empty".into()));
        }
        let timeout_ms = raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(100..=60_000).contains(&timeout_ms) {
            return Err(Failure::Settings(format!(
                "`timeoutMs` {timeout_ms} is outside 100..=60000"
            )));
        }
        let max_tokens = raw.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if !(64..=16_384).contains(&max_tokens) {
            return Err(Failure::Settings(format!(
                "`maxTokens` {max_tokens} is outside 64..=16384"
            )));
        }
        Ok(Settings {
            endpoint: Endpoint::parse(raw.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL))?,
            model,
            has_api_key: raw.api_key_env.is_some(),
            timeout_ms,
            max_tokens,
        })
    }
}

impl Endpoint {
    fn parse(base_url: &str) -> Result<Endpoint, Failure> {
        let bad = |why: &str| Failure::Settings(format!("`baseUrl` {base_url:?}: {why}"));
        let (https, rest) = if let Some(rest) = base_url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = base_url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(bad("must start with http:// or https://"));
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(bad("needs a host (and no user name)"));
        }
        if path.contains(['?', '#']) {
            return Err(bad("may not have a query or a fragment"));
        }
        Ok(Endpoint {
            https,
            authority: authority.to_string(),
            path: format!("{}/chat/completions", path.trim_end_matches('/')),
        })
    }
}

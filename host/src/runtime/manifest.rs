//! `plugin.toml`: what a plugin package says about itself, validated before anything
//! of the package is loaded. Unknown keys are refused so that a misspelt permission is
//! an error rather than a silently missing grant.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::PluginError;
use super::world::World;
use crate::ids::validate_name;
use crate::net::host_pattern::validate_hosts;

/// Largest memory limit a manifest may ask for.
pub const MAX_MEMORY_MIB: u64 = 1024;
/// Longest deadline a manifest may ask for.
pub const MAX_TIMEOUT_MS: u64 = 60_000;
/// Upper bound on the size of plugin.toml itself.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;

/// What a plugin may do beyond computing. Everything defaults to nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Permissions {
    /// Hosts outbound HTTP may reach: `example.com`, `example.com:8443`, `*.example.com`
    /// or an IP literal such as `127.0.0.1:8080`. Anything else is refused at once.
    /// A name may only lead to public addresses, unless it is in `private_hosts`; an
    /// IP literal is explicit and may be private (a local model server).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Names (`ollama.lan`) or addresses (`192.168.1.20`) of allowed hosts that may
    /// resolve to, or be, a loopback or private address. Grants no host by itself.
    #[serde(default)]
    pub private_hosts: Vec<String>,
    /// Whether the plugin gets its private key-value store.
    #[serde(default)]
    pub kv: bool,
    /// Tools the plugin may ask the gate for (the gate still decides).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// Per-plugin resource limits; the host's defaults apply where a field is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Limits {
    pub memory_mib: Option<u64>,
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub world: World,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub permissions: Permissions,
    #[serde(default)]
    pub limits: Limits,
}

impl Manifest {
    /// Reads and validates `<dir>/plugin.toml`.
    pub fn load(dir: &Path) -> Result<Manifest, PluginError> {
        let path = dir.join("plugin.toml");
        let io_err = |source| PluginError::Io {
            path: path.clone(),
            source,
        };
        let size = std::fs::metadata(&path).map_err(io_err)?.len();
        if size > MAX_MANIFEST_BYTES {
            return Err(PluginError::InvalidManifest {
                path,
                reason: format!("{size} bytes, over the {MAX_MANIFEST_BYTES}-byte limit"),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(io_err)?;
        Manifest::parse(&text).map_err(|reason| PluginError::InvalidManifest { path, reason })
    }

    /// Parses and validates manifest text; the error names the offending field.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
        manifest.validate()?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<(), String> {
        validate_name(&self.name).map_err(|e| format!("name: {e}"))?;
        validate_version(&self.version).map_err(|e| format!("version: {e}"))?;
        if self.description.chars().count() > 1024 {
            return Err("description: over 1024 characters".into());
        }
        validate_hosts(
            &self.permissions.allowed_hosts,
            &self.permissions.private_hosts,
        )
        .map_err(|e| format!("permissions.{e}"))?;
        for tool in &self.permissions.tools {
            if tool.is_empty()
                || tool.len() > 64
                || !tool
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            {
                return Err(format!(
                    "permissions.tools: `{tool}` is not a tool name (lowercase letters, digits, `_`, `-`)"
                ));
            }
        }
        if let Some(mib) = self.limits.memory_mib
            && !(1..=MAX_MEMORY_MIB).contains(&mib)
        {
            return Err(format!(
                "limits.memory-mib: {mib} is outside 1..={MAX_MEMORY_MIB}"
            ));
        }
        if let Some(ms) = self.limits.timeout_ms
            && !(10..=MAX_TIMEOUT_MS).contains(&ms)
        {
            return Err(format!(
                "limits.timeout-ms: {ms} is outside 10..={MAX_TIMEOUT_MS}"
            ));
        }
        Ok(())
    }
}

/// `scripts/<name>.toml` beside a skill script: optional, and only what a script can
/// use (no `kv`: the skill-tool world does not link it). The script's name comes from
/// its file name, its world is always `skill-tool`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ScriptManifest {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub permissions: ScriptPermissions,
    #[serde(default)]
    pub limits: Limits,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ScriptPermissions {
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub tools: Vec<String>,
}

impl ScriptManifest {
    /// The plugin manifest a script named `name` runs under, validated like any
    /// plugin.toml; `text` is its `<name>.toml`, if it has one (none grants nothing).
    pub fn to_manifest(name: &str, text: Option<&str>) -> Result<Manifest, String> {
        let script: ScriptManifest = match text {
            Some(text) => toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?,
            None => ScriptManifest::default(),
        };
        let manifest = Manifest {
            name: name.to_string(),
            version: "0.0.0".to_string(),
            world: World::SkillTool,
            description: script.description,
            permissions: Permissions {
                allowed_hosts: script.permissions.allowed_hosts,
                private_hosts: Vec::new(),
                kv: false,
                tools: script.permissions.tools,
            },
            limits: script.limits,
        };
        manifest.validate()?;
        Ok(manifest)
    }

    /// Reads `<path>` (bounded) if it exists.
    pub(crate) fn read(path: &Path) -> Result<Option<String>, PluginError> {
        let io_err = |source| PluginError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(e)),
        };
        if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
            return Err(PluginError::InvalidManifest {
                path: path.to_path_buf(),
                reason: format!("not a regular file of at most {MAX_MANIFEST_BYTES} bytes"),
            });
        }
        std::fs::read_to_string(path).map(Some).map_err(io_err)
    }
}

/// toml's message plus the line it points at, which names the key in question.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let Some(span) = error.span() else {
        return error.message().to_string();
    };
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[span.start..]
        .find('\n')
        .map_or(text.len(), |i| span.start + i);
    let line_number = text[..span.start].matches('\n').count() + 1;
    format!(
        "{} (line {line_number}: `{}`)",
        error.message(),
        text[line_start..line_end].trim()
    )
}

fn validate_version(version: &str) -> Result<(), String> {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.len() <= 9 && p.chars().all(|c| c.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(numeric) || version.len() > 64 {
        return Err(format!("`{version}` is not a semantic version like 1.2.3"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "my-extractor"
version = "1.2.0"
world = "extractor"
description = "test"
[permissions]
allowed-hosts = ["api.example.com", "*.example.org", "127.0.0.1:8080"]
private-hosts = ["127.0.0.1"]
kv = true
tools = ["search_memory"]
[limits]
memory-mib = 32
timeout-ms = 500
"#;

    #[test]
    fn parses_a_complete_manifest() {
        let m = Manifest::parse(GOOD).expect("valid");
        assert_eq!(m.world, World::Extractor);
        assert_eq!(m.permissions.allowed_hosts.len(), 3);
        assert!(m.permissions.kv);
        assert_eq!(m.limits.memory_mib, Some(32));
    }

    #[test]
    fn permissions_default_to_nothing() {
        let m = Manifest::parse("name = \"a\"\nversion = \"0.1.0\"\nworld = \"resolver\"\n")
            .expect("valid");
        assert_eq!(m.permissions, Permissions::default());
        assert_eq!(m.limits, Limits::default());
    }

    #[test]
    fn rejections_name_the_field() {
        let cases = [
            (GOOD.replace("my-extractor", "../evil"), "name:"),
            (GOOD.replace("my-extractor", "Bad--Name"), "name:"),
            (GOOD.replace("1.2.0", "latest"), "version:"),
            (GOOD.replace("\"extractor\"", "\"painter\""), "world"),
            (
                GOOD.replace("api.example.com", "https://api.example.com/x"),
                "allowed-hosts",
            ),
            (
                GOOD.replace("127.0.0.1:8080", "127.0.0.1:99999"),
                "allowed-hosts",
            ),
            (
                GOOD.replace("search_memory", "Search Memory"),
                "permissions.tools",
            ),
            (
                GOOD.replace("[\"127.0.0.1\"]", "[\"*.example.org\"]"),
                "permissions.private-hosts",
            ),
            (
                GOOD.replace("[\"127.0.0.1\"]", "[\"127.0.0.1:8080\"]"),
                "permissions.private-hosts",
            ),
            (
                GOOD.replace("memory-mib = 32", "memory-mib = 4096"),
                "limits.memory-mib",
            ),
            (
                GOOD.replace("timeout-ms = 500", "timeout-ms = 1"),
                "limits.timeout-ms",
            ),
            (
                GOOD.replace("kv = true", "kv = true\nnetwork = true"),
                "network",
            ),
        ];
        for (text, expected) in cases {
            let err = Manifest::parse(&text).expect_err(expected);
            assert!(
                err.contains(expected),
                "`{err}` should mention `{expected}`"
            );
        }
    }
}

//! `install_skill {url | skill_md, force?}`: a skill installed from a chat (README,
//! "Chat with Engram"). A
//! URL goes through the same install from a URL as `engram skills install --from` and
//! `POST /api/skills/install` (`crate::net`'s address rules, 1 MiB, 10 s); pasted
//! SKILL.md text goes through the same parser and validator as every install, leniently
//! (the body is never run; a name that is no slug gives one; text without a `name` has
//! nothing to be named after and is refused, `name-missing`). Either way a skill
//! that is already installed is not replaced unless `force` is given, and the answer
//! (or the validation error) is what the person sees in their chat.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{HostTools, ToolContext, ToolError, tool_args};
use crate::skills::registry::direct::fetch_url_package;
use crate::skills::{SkillPackage, Source, SourceKind};

const MAX_URL_BYTES: usize = 4096;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstallArgs {
    url: Option<String>,
    skill_md: Option<String>,
    #[serde(default)]
    force: bool,
}

/// Where the skill comes from.
pub(super) enum Origin {
    Url(String),
    Text(String),
}

/// The tool's arguments: exactly one of `url` and `skill_md`, and `force`.
pub(super) fn read_args(args: Value) -> Result<(Origin, bool), ToolError> {
    let args: InstallArgs = tool_args(args)?;
    let origin = match (args.url, args.skill_md) {
        (Some(url), None) => {
            if url.is_empty() || url.len() > MAX_URL_BYTES {
                return Err(ToolError::invalid(
                    "args.url",
                    format!("must be 1 to {MAX_URL_BYTES} bytes"),
                ));
            }
            Origin::Url(url)
        }
        (None, Some(text)) => Origin::Text(text),
        _ => {
            return Err(ToolError::invalid(
                "args",
                "give exactly one of `url` and `skill_md`",
            ));
        }
    };
    Ok((origin, args.force))
}

pub(super) fn install_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "description": "The http(s) URL of a raw SKILL.md file.",
            },
            "skill_md": {
                "type": "string",
                "minLength": 1,
                "description": format!(
                    "The full text of a SKILL.md (frontmatter between --- lines, then the body), at most {} bytes.",
                    crate::skills::MAX_SKILL_FILE_BYTES
                ),
            },
            "force": {
                "type": "boolean",
                "description": "Replace a skill of the same name that is already installed (default false).",
            },
        },
        "oneOf": [{"required": ["url"]}, {"required": ["skill_md"]}],
        "additionalProperties": false,
    })
}

pub(super) fn install(
    tools: &HostTools,
    _context: &ToolContext,
    args: Value,
    _left: Option<Duration>,
) -> Result<Value, ToolError> {
    let (origin, force) = read_args(args)?;
    let (package, source) = match origin {
        Origin::Url(url) => {
            let allow_private = tools
                .config
                .current()
                .network
                .allow_private
                .unwrap_or(false);
            // A blocking-pool thread of the runtime, as for `fetch_url`; the fetch has
            // its own 10 s limit.
            let runtime = tokio::runtime::Handle::try_current()
                .map_err(|_| ToolError::NoRuntime("install_skill"))?;
            runtime
                .block_on(fetch_url_package(&url, None, allow_private))
                .map_err(ToolError::Install)?
        }
        Origin::Text(text) => {
            let package = SkillPackage::new(None, text.into_bytes(), Vec::new())?;
            (package, Source::of(SourceKind::Chat))
        }
    };
    let slug = package.id().slug().to_string();
    if !force && let Ok(existing) = tools.skills.entry(&slug) {
        return Err(ToolError::SkillExists {
            slug,
            version: existing.version,
        });
    }
    // Asked for by the model: a skill that asks for tools needs the person, who
    // installs it with `engram skills install`, the dashboard or a channel admin.
    let outcome = tools.skills.install(
        &package,
        source,
        force,
        crate::skills::ToolConsent::NotConfirmed,
    )?;
    Ok(json!({
        "status": outcome.status,
        "id": outcome.id,
        "name": outcome.name,
        "version": outcome.version,
        "warnings": outcome.warnings,
        "replaced": outcome.replaced,
    }))
}

//! `engram plugins test DIR --input FILE.json`: one call of the package in DIR through
//! the real runtime (the data directory's settings, limits, the memories it may read),
//! with the world's input from FILE:
//!
//! - extractor: `{"conversation": Conversation, "now"?: ms}`
//! - resolver: `{"candidate": Candidate, "related": [Memory], "user_id"?: "..."}`
//! - consolidator: `{"snapshot": Snapshot, "now"?: ms}`
//! - skill-tool: `{"args": <any JSON>}` (run with an empty directory as its skill)
//!
//! The shapes are `engram_strategies::model` in JSON (snake_case names and variants);
//! the result is printed in the same shapes, or the runtime's error.

use std::path::Path;

use anyhow::{Context, bail};
use engram_strategies::model::{Candidate, Conversation, Memory, Snapshot};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::runtime::{Plugin, PluginError, Runtime, ToolCaller, World};
use crate::time::{Clock, SystemClock};

/// Largest input file read.
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtractInput {
    conversation: Conversation,
    now: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveInput {
    candidate: Candidate,
    related: Vec<Memory>,
    user_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsolidateInput {
    snapshot: Snapshot,
    now: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunInput {
    args: Value,
}

/// One call's outcome: the plugin, and its result or the runtime's error.
pub struct Call {
    pub plugin: String,
    pub world: World,
    pub result: Result<Value, PluginError>,
}

pub fn call(runtime: &Runtime, dir: &Path, input: &Path) -> anyhow::Result<Call> {
    if !dir.join("plugin.wasm").is_file() && dir.join("Cargo.toml").is_file() {
        bail!(
            "{} has no plugin.wasm yet: run `engram plugins build {}` first",
            dir.display(),
            dir.display()
        );
    }
    let plugin = runtime.load_dir(dir)?;
    let size = std::fs::metadata(input)
        .with_context(|| format!("cannot read {}", input.display()))?
        .len();
    if size > MAX_INPUT_BYTES {
        bail!("{} is over {MAX_INPUT_BYTES} bytes", input.display());
    }
    let text = std::fs::read_to_string(input)
        .with_context(|| format!("cannot read {}", input.display()))?;
    let result = match plugin.world() {
        World::Extractor => {
            let i: ExtractInput = parse(&text, input, World::Extractor)?;
            let now = i.now.unwrap_or_else(|| SystemClock.now_ms());
            runtime
                .extract(&plugin, &i.conversation, now)
                .map(|out| to_json(&out))
        }
        World::Resolver => {
            let i: ResolveInput = parse(&text, input, World::Resolver)?;
            let user = i.user_id.unwrap_or_else(|| "default".into());
            runtime
                .resolve(&plugin, &user, &i.candidate, &i.related)
                .map(|out| to_json(&out))
        }
        World::Consolidator => {
            let i: ConsolidateInput = parse(&text, input, World::Consolidator)?;
            let now = i.now.unwrap_or_else(|| SystemClock.now_ms());
            runtime
                .consolidate(&plugin, &i.snapshot, now)
                .map(|out| to_json(&out))
        }
        World::SkillTool => {
            let i: RunInput = parse(&text, input, World::SkillTool)?;
            run_script(runtime, &plugin, &i.args)?
        }
    };
    Ok(Call {
        plugin: plugin.qualified_name().to_string(),
        world: plugin.world(),
        result,
    })
}

/// `value` as JSON, its `f32` scores written as `f32` (0.9, not 0.8999999761581421,
/// which a conversion through `Value`'s `f64` would give).
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_string(value)
        .and_then(|text| serde_json::from_str(&text))
        .unwrap_or(Value::Null)
}

fn parse<T: DeserializeOwned>(text: &str, path: &Path, world: World) -> anyhow::Result<T> {
    serde_json::from_str(text).with_context(|| {
        format!(
            "{} is not the input of a {world} call (see `engram plugins test --help`)",
            path.display()
        )
    })
}

/// A skill script's run, with an empty directory as its skill: `{"ok": output}` or
/// `{"err": message}` (the script's own error is a result, not a failure of the call).
fn run_script(
    runtime: &Runtime,
    plugin: &Plugin,
    args: &Value,
) -> anyhow::Result<Result<Value, PluginError>> {
    let skill = tempfile::tempdir().context("cannot create a directory for the skill")?;
    let caller = ToolCaller {
        plugin: plugin.qualified_name().to_string(),
        user_id: "default".into(),
        turn_id: None,
        deadline: None,
    };
    Ok(runtime
        .run_skill_tool(plugin, &caller, skill.path(), &args.to_string())
        .map(|out| match out {
            Ok(output) => json!({ "ok": output }),
            Err(message) => json!({ "err": message }),
        }))
}

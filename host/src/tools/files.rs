//! `read_skill_file {path}`: a file of the turn's invoked skill, and nothing outside
//! its directory.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{HostTools, ToolContext, ToolError, tool_args};
use crate::skills::Library;

/// The most bytes returned of a file.
pub const READ_MAX_BYTES: u64 = 256 * 1024;
/// The longest path accepted.
const MAX_PATH_BYTES: usize = 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadArgs {
    path: String,
}

pub(super) fn args_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": format!("The file's path relative to the skill's directory, e.g. `references/guide.md` (at most {MAX_PATH_BYTES} bytes, no `..`)."),
            },
        },
        "required": ["path"],
        "additionalProperties": false,
    })
}

pub(super) fn run(
    tools: &HostTools,
    context: &ToolContext,
    args: Value,
    _left: Option<Duration>,
) -> Result<Value, ToolError> {
    let args: ReadArgs = tool_args(args)?;
    let skill = context.skill.ok_or(ToolError::NoSkillInvoked)?;
    read_skill_file(&tools.skills, skill, &args.path)
}

/// The file `path` (relative, inside the directory) of the installed skill `skill`:
/// `{path, text, truncated, bytes}`, at most [`READ_MAX_BYTES`] of it.
pub fn read_skill_file(skills: &Library, skill: &str, path: &str) -> Result<Value, ToolError> {
    let entry = skills.entry(skill)?;
    let dir = entry.skill_id()?.dir_in(skills.root());
    let (text, truncated, size) = read_inside(&dir, path)?;
    Ok(json!({
        "path": path,
        "text": text,
        "truncated": truncated,
        "bytes": size,
    }))
}

/// Reads `rel` inside `dir`: refuses absolute paths and `..`, and any path that,
/// symlinks resolved, leads outside `dir`. The canonical path is what is opened, so a
/// symlink swapped in between the check and the read would have to replace a
/// directory of the skill itself, which only the skills directory's owner can do.
fn read_inside(dir: &Path, rel: &str) -> Result<(String, bool, u64), ToolError> {
    let invalid = |reason: &str| ToolError::invalid("args.path", reason);
    if rel.is_empty() || rel.len() > MAX_PATH_BYTES || rel.chars().any(char::is_control) {
        return Err(invalid(&format!(
            "must be 1 to {MAX_PATH_BYTES} printable bytes"
        )));
    }
    let path = Path::new(rel);
    if path.is_absolute() {
        return Err(invalid("must be relative to the skill's directory"));
    }
    let mut joined = PathBuf::from(dir);
    for component in path.components() {
        match component {
            Component::Normal(part) => joined.push(part),
            Component::CurDir => {}
            _ => return Err(invalid("must stay inside the skill's directory (no `..`)")),
        }
    }
    let not_found = || ToolError::NoSuchFile(rel.to_string());
    let io = |context| move |source| ToolError::Io { context, source };
    let root = dir.canonicalize().map_err(io("skill directory"))?;
    let real = joined.canonicalize().map_err(|_| not_found())?;
    if !real.starts_with(&root) {
        return Err(ToolError::OutsideSkillDir(rel.to_string()));
    }
    let meta = std::fs::metadata(&real).map_err(|_| not_found())?;
    if !meta.is_file() {
        return Err(invalid("is not a file"));
    }
    let file = std::fs::File::open(&real).map_err(io("read_skill_file"))?;
    let mut bytes = Vec::new();
    file.take(READ_MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io("read_skill_file"))?;
    let truncated = meta.len() > READ_MAX_BYTES;
    Ok((
        String::from_utf8_lossy(&bytes).into_owned(),
        truncated,
        meta.len(),
    ))
}

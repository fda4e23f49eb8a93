//! Running a script of the turn's invoked skill (and of no other): invoking the skill
//! is the permission, so the run itself is no gate decision, but each of the script's
//! `tools.invoke` calls is one, under the turn's grants (through [`super::PluginTools`]).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{TurnError, TurnService};
use crate::gate::{GateError, TurnState};
use crate::runtime::{MAX_SKILL_ARGS_BYTES, PluginError, SCRIPTS_DIR};

/// What a script run answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptResult {
    /// The invoked skill's slug.
    pub skill: String,
    pub script: String,
    /// What the script returned: parsed when it is JSON, else the text as a string.
    #[schema(value_type = Object)]
    pub output: Value,
    /// How long the run took (loading included).
    pub ms: u64,
}

impl TurnService {
    /// Runs `scripts/<name>.wasm` of the skill invoked in `user`'s open turn
    /// `turn_id`, as that user, with `args` (any JSON; `null` is `{}`; at most 256 KiB as
    /// JSON) given to it as JSON text. Blocks up to the script's time limit.
    pub fn run_script(
        &self,
        turn_id: &str,
        user: &str,
        name: &str,
        args: Value,
    ) -> Result<ScriptResult, TurnError> {
        crate::ids::validate_name(name).map_err(|reason| TurnError::Invalid {
            field: "name",
            reason,
        })?;
        let args = match args {
            Value::Null => "{}".to_string(),
            args => args.to_string(),
        };
        if args.len() > MAX_SKILL_ARGS_BYTES {
            return Err(TurnError::Invalid {
                field: "args",
                reason: format!(
                    "{} bytes as JSON, over the {MAX_SKILL_ARGS_BYTES}-byte limit",
                    args.len()
                ),
            });
        }
        let (turn, state) = self
            .gate
            .turn(turn_id, user)?
            .ok_or_else(|| GateError::UnknownTurn(turn_id.to_string()))?;
        match state {
            TurnState::Open => {}
            TurnState::Ended => return Err(GateError::TurnEnded(turn.id).into()),
            TurnState::Expired => return Err(GateError::TurnExpired(turn.id).into()),
        }
        let skill = &turn.skill.as_ref().ok_or(TurnError::NoSkillInvoked)?.skill;
        let entry = self.skills.entry(skill)?;
        let dir = entry.skill_id()?.dir_in(self.skills.root());
        check_script_file(&dir, skill, name)?;

        let started = Instant::now();
        let ran = self
            .runtime
            .run_skill_script(&dir, name, &turn.user, Some(&turn.id), &args);
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let output = match ran {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => {
                tracing::info!(turn = %turn.id, %skill, script = %name, ms, "skill script failed: {message}");
                return Err(TurnError::ScriptFailed(message));
            }
            Err(e) => {
                tracing::warn!(turn = %turn.id, %skill, script = %name, ms, code = e.code(), "skill script stopped: {e}");
                return Err(script_error(skill, name, e));
            }
        };
        tracing::info!(turn = %turn.id, %skill, script = %name, ms, "skill script ran");
        Ok(ScriptResult {
            skill: skill.clone(),
            script: name.to_string(),
            output: serde_json::from_str(&output).unwrap_or(Value::String(output)),
            ms,
        })
    }
}

/// `UnknownScript` unless `scripts/<name>.wasm` is a plain file of the skill;
/// `ScriptInvalid` for a symlink (the runtime refuses those too).
fn check_script_file(dir: &Path, skill: &str, name: &str) -> Result<(), TurnError> {
    let unknown = || TurnError::UnknownScript {
        skill: skill.to_string(),
        name: name.to_string(),
    };
    let scripts = dir.join(SCRIPTS_DIR);
    let wasm = scripts.join(format!("{name}.wasm"));
    for path in [&scripts, &wasm] {
        let meta = std::fs::symlink_metadata(path).map_err(|_| unknown())?;
        if meta.file_type().is_symlink() {
            return Err(TurnError::ScriptInvalid {
                skill: skill.to_string(),
                name: name.to_string(),
                reason: "it or its scripts/ directory is a symlink; scripts must be plain files"
                    .into(),
            });
        }
    }
    if !wasm.is_file() {
        return Err(unknown());
    }
    Ok(())
}

/// A runtime failure of a script run: what the script did is never the host's
/// failure, and no variant carries a path.
fn script_error(skill: &str, name: &str, e: PluginError) -> TurnError {
    let (skill, name) = (skill.to_string(), name.to_string());
    let invalid = |reason: String| TurnError::ScriptInvalid {
        skill: skill.clone(),
        name: name.clone(),
        reason,
    };
    match &e {
        PluginError::Timeout { .. }
        | PluginError::MemoryLimit { .. }
        | PluginError::Trap { .. }
        | PluginError::InvalidResult { .. } => TurnError::ScriptStopped {
            reason: e.to_string(),
            skill,
            name,
        },
        PluginError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            TurnError::UnknownScript { skill, name }
        }
        PluginError::InvalidManifest { reason, .. }
        | PluginError::NotAComponent { reason, .. }
        | PluginError::WorldMismatch { reason, .. } => invalid(reason.clone()),
        PluginError::WrongWorld { .. } => invalid(e.to_string()),
        _ => TurnError::Script(e),
    }
}

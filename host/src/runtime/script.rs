//! Skill scripts: `<skill dir>/scripts/<name>.wasm`, a component of the `skill-tool`
//! world, with an optional `scripts/<name>.toml` ([`ScriptManifest`]: description,
//! `permissions.allowed-hosts`, `permissions.tools`, `limits`; no file grants nothing
//! and the runtime's default limits apply).
//!
//! A run gets the skill's directory preopened read-only at [`SKILL_MOUNT`] and nothing
//! else: no environment, no arguments, no sockets, HTTP only to the manifest's hosts,
//! `tools.invoke` only for the manifest's tools and then through the gate with the
//! call's turn id. Names follow the plugin-name rules (lowercase letters, digits,
//! single hyphens), so a script name can never lead out of `scripts/`.

use std::path::{Path, PathBuf};

use super::error::PluginError;
use super::host::ToolCaller;
use super::manifest::ScriptManifest;
use super::plugin::{MAX_WASM_BYTES, Plugin, PluginSource, Runtime};
use crate::ids::validate_name;

/// Where a script sees its skill's directory.
pub const SKILL_MOUNT: &str = "/skill";
/// The directory of a skill that holds its scripts.
pub const SCRIPTS_DIR: &str = "scripts";

impl Runtime {
    /// Loads `<skill_dir>/scripts/<name>.wasm` with its `<name>.toml`, if any. The
    /// script's qualified name (logs, the gate's caller) is `skill:<skill dir>/<name>`.
    pub fn load_skill_script(&self, skill_dir: &Path, name: &str) -> Result<Plugin, PluginError> {
        let scripts = skill_dir.join(SCRIPTS_DIR);
        let manifest_path = scripts.join(format!("{name}.toml"));
        validate_name(name).map_err(|reason| PluginError::InvalidManifest {
            path: manifest_path.clone(),
            reason: format!("script name: {reason}"),
        })?;
        let wasm_path = scripts.join(format!("{name}.wasm"));
        let io_err = |path: &PathBuf| {
            let path = path.clone();
            move |source| PluginError::Io { path, source }
        };
        // Neither scripts/ nor the script may be a symlink: it could lead anywhere.
        for path in [&scripts, &wasm_path] {
            let meta = std::fs::symlink_metadata(path).map_err(io_err(path))?;
            if meta.file_type().is_symlink() {
                return Err(PluginError::Runtime(format!(
                    "{} is a symlink; skill scripts must be plain files",
                    path.display()
                )));
            }
        }
        let size = std::fs::metadata(&wasm_path)
            .map_err(io_err(&wasm_path))?
            .len();
        if size > MAX_WASM_BYTES {
            return Err(PluginError::NotAComponent {
                name: name.to_string(),
                reason: format!("{size} bytes, over the {MAX_WASM_BYTES}-byte limit"),
            });
        }
        let text = ScriptManifest::read(&manifest_path)?;
        let manifest = ScriptManifest::to_manifest(name, text.as_deref()).map_err(|reason| {
            PluginError::InvalidManifest {
                path: manifest_path.clone(),
                reason,
            }
        })?;
        let wasm = std::fs::read(&wasm_path).map_err(io_err(&wasm_path))?;
        self.load(manifest, &wasm, PluginSource::Directory(wasm_path))
    }

    /// Loads and runs one skill script for `user_id`, its tool calls gated as part of
    /// `turn_id` (none: the gate has no turn to find grants in). The outer error is
    /// the runtime's (trap, timeout, memory, load failure), the inner one the script's.
    pub fn run_skill_script(
        &self,
        skill_dir: &Path,
        name: &str,
        user_id: &str,
        turn_id: Option<&str>,
        args_json: &str,
    ) -> Result<Result<String, String>, PluginError> {
        let plugin = self.load_skill_script(skill_dir, name)?;
        let caller = ToolCaller {
            plugin: plugin.qualified_name().to_string(),
            user_id: user_id.to_string(),
            turn_id: turn_id.map(str::to_string),
            // The store sets the run's own deadline.
            deadline: None,
        };
        self.run_skill_tool(&plugin, &caller, skill_dir, args_json)
    }
}

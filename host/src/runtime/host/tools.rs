//! `engram:plugin/tools`: a plugin's tool calls cross the same gate as an agent's.
//! The manifest's `tools` list is checked here first (deny by default); the gate then
//! applies the operator's policy and the turn's grants.

use std::time::Instant;

use super::CallState;
use crate::runtime::bindings::tools::{Host, ToolError};

/// Who asks the gate for a tool, and until when.
#[derive(Debug, Clone)]
pub struct ToolCaller {
    pub plugin: String,
    pub user_id: String,
    pub turn_id: Option<String>,
    /// When the calling plugin's time is up. The epoch deadline only stops guest
    /// code, not a host call it waits on, so a tool run for the plugin must not
    /// outlast this (`None`: the caller has no deadline).
    pub deadline: Option<Instant>,
}

/// Why the gate refused or failed a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDenied {
    Denied(String),
    UnknownTool(String),
    Failed(String),
}

/// The permission gate as the runtime sees it. The gate module implements it; until a
/// gate is attached, [`DenyAllGate`] refuses everything.
pub trait ToolGate: Send + Sync {
    fn invoke(
        &self,
        caller: &ToolCaller,
        tool: &str,
        args_json: &str,
    ) -> Result<String, ToolDenied>;
}

/// The gate used when none is configured: deny by default.
pub struct DenyAllGate;

impl ToolGate for DenyAllGate {
    fn invoke(&self, _caller: &ToolCaller, tool: &str, _args: &str) -> Result<String, ToolDenied> {
        Err(ToolDenied::Denied(format!(
            "no tool gate is configured, so `{tool}` is denied"
        )))
    }
}

/// Tool arguments larger than this are refused before they reach the gate.
const MAX_ARGS_BYTES: usize = 256 * 1024;

impl Host for CallState {
    fn invoke(&mut self, name: String, args_json: String) -> Result<String, ToolError> {
        if !self.plugin.permissions.tools.contains(&name) {
            tracing::warn!(plugin = %self.plugin.name, tool = %name, "tool call refused: not in the manifest's tools");
            return Err(ToolError::Denied(format!(
                "`{name}` is not listed in this plugin's permissions.tools"
            )));
        }
        if args_json.len() > MAX_ARGS_BYTES {
            return Err(ToolError::Denied(format!(
                "arguments of {} bytes exceed the {MAX_ARGS_BYTES}-byte limit",
                args_json.len()
            )));
        }
        let caller = ToolCaller {
            plugin: self.plugin.name.clone(),
            user_id: self.user_id.clone(),
            turn_id: self.turn_id.clone(),
            deadline: Some(self.deadline),
        };
        self.services
            .gate
            .invoke(&caller, &name, &args_json)
            .map_err(|e| match e {
                ToolDenied::Denied(reason) => ToolError::Denied(reason),
                ToolDenied::UnknownTool(name) => ToolError::UnknownTool(name),
                ToolDenied::Failed(reason) => ToolError::Failed(reason),
            })
    }
}

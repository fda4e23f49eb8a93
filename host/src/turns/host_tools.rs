//! The one path by which a host tool runs, whoever calls: the agent over REST, a
//! plugin or skill script through `tools.invoke`, and the channels to come.
//!
//! The order is the point. A name the gate knows as the agent's own tool (`cd`,
//! `send_message`, a tool only the operator's policy names) is refused first, as
//! `not-a-host-tool`, without a decision: nothing is audited as allowed that Engram
//! would not run. Every other name is decided by the gate and the decision audited
//! (an unknown name is the gate's `unknown-tool` deny); only an allowed call runs,
//! for the turn's user and in its invoked skill's directory.

use std::sync::{OnceLock, Weak};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{TurnError, TurnService, check_tool_name};
use crate::described::Described;
use crate::gate::{Caller, Decision, ReasonCode, policy};
use crate::runtime::{ToolCaller, ToolDenied, ToolGate};
use crate::tools::{self, ToolContext};

/// What a host tool call answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolResult {
    pub tool: String,
    pub decision: Decision,
    /// What the tool returned (its shape depends on the tool).
    #[schema(value_type = Object)]
    pub result: Value,
}

impl TurnService {
    /// Runs the host tool `tool` for `caller` in the turn `turn_id` (a plugin's call
    /// may belong to none, and is then denied) with `args`, a JSON object (`null`:
    /// none). `deadline`, when given, is when the caller's time is up: the tool does
    /// not start after it, and `fetch_url` is cut short at it. A call the gate does
    /// not allow is [`TurnError::Refused`] with the recorded decision.
    pub fn run_host_tool(
        &self,
        caller: Caller,
        turn_id: Option<&str>,
        tool: &str,
        args: Value,
        deadline: Option<Instant>,
    ) -> Result<ToolResult, TurnError> {
        check_tool_name("name", tool)?;
        let host_tool = tools::host_tool(tool);
        if host_tool.is_none() && self.gate.policy().knows(tool) {
            return Err(TurnError::NotAHostTool(policy::shown(tool)));
        }
        let (decision, skill) = self
            .gate
            .decide_in_turn(caller, turn_id, tool, &args.to_string());
        if !decision.is_allowed() {
            return Err(TurnError::Refused {
                turn_id: turn_id.map(str::to_string),
                tool: tool.to_string(),
                decision,
            });
        }
        // Allowed means known, and known but not the host's was refused above.
        let host_tool = host_tool.ok_or_else(|| TurnError::NotAHostTool(policy::shown(tool)))?;
        // Allowed means decided in the turn, acting for the caller's person: the
        // turn's person is theirs, and its skill came with the decision.
        let context = ToolContext {
            user: caller.user(),
            skill: skill.as_deref(),
        };
        let result = self.tools.call(&context, host_tool, args, deadline)?;
        Ok(ToolResult {
            tool: tool.to_string(),
            decision,
            result,
        })
    }
}

/// The runtime's [`ToolGate`]: a plugin's or script's `tools.invoke` goes through
/// [`TurnService::run_host_tool`] as the plugin, in the turn its call belongs to, with
/// its deadline.
///
/// Why a late-bound handle: the runtime takes its tool gate when it is built, and the
/// turn service is built with the runtime (it runs scripts), so the service cannot
/// exist yet when the runtime needs this. The daemon builds this empty, gives it to
/// the runtime, builds the service, then [`PluginTools::attach`]es it. The handle is
/// weak: the service owns the runtime, which owns this, and a strong handle back would
/// be a cycle that is never freed. Until attached (or once the service is gone) every
/// call is denied, as with no gate at all.
#[derive(Default)]
pub struct PluginTools {
    service: OnceLock<Weak<TurnService>>,
}

impl PluginTools {
    /// Sends `tools.invoke` to `service` from now on. Only the first attach counts.
    pub fn attach(&self, service: &std::sync::Arc<TurnService>) {
        let _ = self.service.set(std::sync::Arc::downgrade(service));
    }
}

/// `tools.invoke` answers: the gate's refusals as `denied` (with the reason code
/// first; an unknown name as `unknown-tool`), the tool's own errors as `failed` with
/// its message, except the host's own failures, which are logged and answered
/// generically.
impl ToolGate for PluginTools {
    fn invoke(
        &self,
        caller: &ToolCaller,
        tool: &str,
        args_json: &str,
    ) -> Result<String, ToolDenied> {
        let Some(service) = self.service.get().and_then(Weak::upgrade) else {
            return Err(ToolDenied::Denied(format!(
                "no turn service is attached, so `{}` is denied",
                policy::shown(tool)
            )));
        };
        let args = if args_json.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(args_json)
                .map_err(|e| ToolDenied::Failed(format!("the arguments are not JSON: {e}")))?
        };
        let as_plugin = Caller::Plugin {
            name: &caller.plugin,
            user: &caller.user_id,
        };
        let ran = service.run_host_tool(
            as_plugin,
            caller.turn_id.as_deref(),
            tool,
            args,
            caller.deadline,
        );
        match ran {
            Ok(ran) => Ok(ran.result.to_string()),
            Err(TurnError::Refused { decision, .. })
                if decision.code == ReasonCode::UnknownTool =>
            {
                Err(ToolDenied::UnknownTool(tool.to_string()))
            }
            Err(e @ TurnError::Refused { .. }) => Err(ToolDenied::Denied(e.to_string())),
            Err(e @ TurnError::NotAHostTool(_)) => {
                Err(ToolDenied::Denied(format!("{}: {e}", e.describe().code)))
            }
            Err(e) if e.describe().is_internal() => {
                tracing::error!(turn = ?caller.turn_id, plugin = %caller.plugin, tool = %policy::shown(tool), "host tool failed for a plugin: {e}");
                Err(ToolDenied::Failed(format!(
                    "`{}` failed inside the host; the daemon log has the details",
                    policy::shown(tool)
                )))
            }
            Err(e) => Err(ToolDenied::Failed(e.to_string())),
        }
    }
}

//! The turn service: one message of a conversation and the agent's work on it (README,
//! "Turns and the tool gate"), the same for every channel: the REST routes
//! (`api/turns.rs` only shapes requests and answers), the scheduler (a turn with a
//! skill forced), plugins' `tools.invoke`, and the channels to come (MCP, chat).
//!
//! - `input`: a turn's input as checked types, built by every front door
//! - `open`: route the message to a skill (or take the one forced), retrieve the
//!   memory block, open the turn in the gate with the skill's grant, record the
//!   message, preview the grants, order the catalog
//! - `host_tools`: [`TurnService::run_host_tool`], the one path by which a host tool
//!   runs (kind checked, then decided and audited, then run), and [`PluginTools`],
//!   the runtime's `ToolGate`, which sends `tools.invoke` down that path
//! - `script`: [`TurnService::run_script`], a script of the invoked skill
//! - `error`: [`TurnError`]
//!
//! Here too: end (revoking grants, recording the reply), the person's approvals,
//! `authorize` for the agent's own tools, the agent's deletes of memories (limited
//! and audited by the gate, undoable by the person), and the turn's view with its
//! decisions.
//! Every call blocks (SQLite, files, plugins): callers run it off the async workers.

mod error;
mod host_tools;
pub mod input;
mod open;
mod script;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use engram_strategies::model::Role;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

pub use error::TurnError;
pub use host_tools::{PluginTools, ToolResult};
pub use open::{
    CatalogItem, GrantView, Invoke, InvokedView, MAX_CATALOG, Message, TurnMemory, TurnOpened,
};
pub use script::ScriptResult;

use crate::config::ConfigFile;
use crate::credentials::Principal;
use crate::embed::active::ActiveEncoder;
use crate::gate::{AuditEntry, AuditQuery, Caller, Decision, Gate, GateError, Turn, TurnState};
use crate::memory::MAX_MESSAGE_BYTES;
use crate::memory::Retrieval;
use crate::memory::StoreError;
use crate::memory::{Memory, MemoryError};
use crate::routing::SkillRouter;
use crate::routing::skill_vectors::SkillVectors;
use crate::runtime::Runtime;
use crate::skills::{CatalogEntry, Library};
use crate::tools::HostTools;

/// The longest tool name accepted (the gate's own bound on names in a turn).
const MAX_TOOL_NAME: usize = 128;

/// `GET /api/turns/{id}` and the answer of `end`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnView {
    pub turn: Turn,
    pub state: TurnState,
    /// The turn's decisions, newest first (at most 500).
    pub decisions: Vec<AuditEntry>,
    /// `end` only: the id of the recorded reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<String>,
}

/// `POST /api/turns/{id}/approvals` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalGranted {
    pub turn_id: String,
    pub tool: String,
    /// A summary of the call approved; `null` when the approval covers the tool with
    /// any arguments.
    pub args_summary: Option<String>,
    /// The recorded approval (decision `allow`, code `approved`).
    pub decision: Decision,
    /// When the tool was first approved in this turn.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub approved_at: i64,
    /// The approval ends with the turn: when it is ended, or at this time.
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: i64,
}

/// What the agent's delete of a memory did ([`TurnService::forget_for_agent`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentDeleted {
    /// The memory's id.
    pub deleted: String,
    /// Until when the person can restore it, after which it is forgotten for good;
    /// `null` with the fact store, which deletes at once.
    #[serde(with = "crate::time::rfc3339::option")]
    pub restorable_until: Option<i64>,
}

/// The turn service over the daemon's gate, skills, memory, host tools and runtime.
pub struct TurnService {
    gate: Arc<Gate>,
    skills: Library,
    router: SkillRouter,
    /// The installed sentence encoder, if any: routing by meaning with it.
    encoder: Arc<ActiveEncoder>,
    /// The skills' vectors from it, cached under this directory; made on first use,
    /// `None` when the static table serves.
    skill_vector_cache: PathBuf,
    skill_vectors: OnceLock<Option<SkillVectors>>,
    memory: Arc<Memory>,
    tools: HostTools,
    /// Runs the invoked skill's scripts. Its `tools.invoke` comes back here through
    /// [`PluginTools`], which is why the service is built after the runtime.
    runtime: Arc<Runtime>,
    /// `memory.agentDeletes`, read at each of the agent's deletes.
    config: Arc<ConfigFile>,
}

impl TurnService {
    /// The service. `runtime` was built with a [`PluginTools`] as its tool gate;
    /// attach the service to it (`PluginTools::attach`) once this returns.
    pub fn new(
        gate: Arc<Gate>,
        skills: Library,
        memory: Arc<Memory>,
        config: Arc<ConfigFile>,
        runtime: Arc<Runtime>,
        encoder: Arc<ActiveEncoder>,
        skill_vector_cache: PathBuf,
    ) -> Arc<TurnService> {
        Arc::new(TurnService {
            tools: HostTools::new(memory.clone(), skills.clone(), config.clone()),
            config,
            gate,
            skills,
            router: SkillRouter::default(),
            encoder,
            skill_vector_cache,
            skill_vectors: OnceLock::new(),
            memory,
            runtime,
        })
    }

    /// The skills' vectors from the installed encoder, `None` with the static table.
    fn skill_vectors(&self) -> Option<&SkillVectors> {
        self.skill_vectors
            .get_or_init(|| {
                let encoder = self.encoder.encoder()?;
                let name = self.encoder.status().name;
                Some(SkillVectors::new(encoder, &name, &self.skill_vector_cache))
            })
            .as_ref()
    }

    /// Builds the router over the active skills now (with the encoder, embedding the
    /// skills not cached yet), so that the first turn does not wait for it.
    pub fn warm_router(&self) {
        if let Ok((entries, _)) = self.skills.catalog() {
            let active: Vec<CatalogEntry> = entries.into_iter().filter(|e| e.active).collect();
            self.router.for_catalog(&active, self.skill_vectors());
        }
    }

    /// `user`'s turn, where it stands now, and its decisions. Another user's turn is
    /// unknown ([`GateError::UnknownTurn`]), as are all the calls below for it.
    pub fn view(&self, id: &str, user: &str) -> Result<TurnView, TurnError> {
        self.view_with_reply(id, user, None)
    }

    fn view_with_reply(
        &self,
        id: &str,
        user: &str,
        reply_id: Option<String>,
    ) -> Result<TurnView, TurnError> {
        let (turn, state) = self.turn_of(id, user)?;
        let decisions = self
            .gate
            .audit()
            .list(&AuditQuery {
                limit: crate::gate::audit::MAX_PAGE,
                turn_id: Some(turn.id.clone()),
                user: Some(turn.user.clone()),
                ..AuditQuery::default()
            })?
            .items;
        Ok(TurnView {
            turn,
            state,
            decisions,
            reply_id,
        })
    }

    /// `user`'s turn `id` as the gate has it, or [`GateError::UnknownTurn`].
    fn turn_of(&self, id: &str, user: &str) -> Result<(Turn, TurnState), TurnError> {
        Ok(self
            .gate
            .turn(id, user)?
            .ok_or_else(|| GateError::UnknownTurn(id.to_string()))?)
    }

    /// Ends `user`'s turn, revoking its grants and approvals, and records `reply`
    /// (role assistant) in the turn's conversation, if it has one and the Second
    /// Brain is in use. Ending a turn twice is `GateError::TurnEnded`.
    pub fn end(&self, id: &str, user: &str, reply: Option<&str>) -> Result<TurnView, TurnError> {
        if let Some(reply) = reply {
            check_text("reply", reply)?;
        }
        self.turn_of(id, user)?;
        let turn = self.gate.end_turn(id, user)?;
        let reply_id = match (&turn.conversation_id, reply) {
            (Some(conversation), Some(reply)) if !reply.trim().is_empty() => {
                self.record(&turn.user, conversation, Role::Assistant, None, reply)?
            }
            _ => None,
        };
        self.view_with_reply(id, user, reply_id)
    }

    /// The gate's decision for the agent's own tool `tool` in the turn (it runs the
    /// tool itself if allowed), audited as `caller`'s (the agent over REST, an MCP
    /// client) and under the caller's user; never an error for the turn's state (an
    /// unknown, ended or expired turn, or another user's, is a deny with its code).
    pub fn authorize(
        &self,
        caller: Caller,
        id: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Decision, TurnError> {
        check_tool_name("tool", tool)?;
        Ok(self
            .gate
            .decide_as(caller, Some(id), tool, &args.to_string()))
    }

    /// The person's yes, in `user`'s open turn `id`, to the call of `tool` with `args`
    /// (what they were shown), or, without `args`, to the tool with any arguments for
    /// the rest of the turn: calls the gate would ask about are then allowed (code
    /// `approved`; a new destination after outside content only for an approved call).
    /// Only the person gives it (`by`: the dashboard, a channel's approval, the
    /// operator token); the agent's attempt is audited and refused
    /// ([`GateError::PersonRequired`]). Recorded in the audit log; approving again
    /// keeps the first approval.
    pub fn approve(
        &self,
        id: &str,
        user: &str,
        tool: &str,
        args: Option<&Value>,
        by: &Principal,
    ) -> Result<ApprovalGranted, TurnError> {
        check_tool_name("tool", tool)?;
        let approved = self.gate.approve(id, user, tool, args, by)?;
        Ok(ApprovalGranted {
            turn_id: approved.turn.id,
            tool: approved.approval.tool,
            args_summary: approved.approval.args_summary,
            decision: approved.decision,
            approved_at: approved.approval.approved_at,
            expires_at: approved.turn.expires_at,
        })
    }

    /// The agent's delete of the memory `id` of the user `caller` acts for (REST with
    /// the agent's token, MCP `memory_forget`; the person's deletes go to the memory
    /// service directly and are final at once). A memory the agent cannot see
    /// (unknown, another user's, dismissed already) is [`TurnError::Memory`] not-found
    /// and counts for nothing. Otherwise the gate decides, within
    /// `memory.agentDeletes.perHour`, and records the decision
    /// ([`GateError::AgentDeleteLimit`] past it); then the memory is dismissed, kept
    /// for the person to restore until `memory.agentDeletes.restoreDays` have passed
    /// (with the fact store, deleted).
    pub fn forget_for_agent(
        &self,
        caller: Caller,
        id: &str,
        keep_messages: bool,
    ) -> Result<AgentDeleted, TurnError> {
        let user = caller.user();
        let memory = self.memory.get(user, id)?;
        if memory.dismissed_at.is_some() {
            return Err(MemoryError::Brain(StoreError::NotFound(id.to_string())).into());
        }
        let settings = self.config.current().memory.agent_deletes.clone();
        self.gate
            .decide_agent_delete(caller, id, settings.per_hour())?;
        let dismissed = self.memory.dismiss(user, id, keep_messages)?;
        Ok(AgentDeleted {
            deleted: dismissed.id,
            restorable_until: dismissed
                .dismissed_at
                .map(|at| at.saturating_add(settings.restore_ms())),
        })
    }

    // ---- memory: the places the service reaches the memory store -------------------

    /// The memories to put before `message` (none with the fact store); `vector` is
    /// the encoder's vector of it, when routing embedded it.
    fn retrieve(
        &self,
        user: &str,
        message: &str,
        vector: Option<&[f32]>,
    ) -> Result<Retrieval, TurnError> {
        Ok(self.memory.retrieve_embedded(user, message, vector)?)
    }

    /// Refuses a conversation that is another user's, before a turn does anything.
    fn check_conversation(&self, user: &str, conversation: &str) -> Result<(), TurnError> {
        Ok(self.memory.check_conversation(user, conversation)?)
    }

    /// Records a message of the turn's conversation; `None` when nothing was recorded
    /// (learning paused, or the fact store, which keeps no conversations).
    fn record(
        &self,
        user: &str,
        conversation: &str,
        role: Role,
        name: Option<&str>,
        text: &str,
    ) -> Result<Option<String>, TurnError> {
        Ok(self
            .memory
            .record_message(user, conversation, role, name, text)?)
    }
}

/// A message or reply: at most [`MAX_MESSAGE_BYTES`].
fn check_text(field: &'static str, text: &str) -> Result<(), TurnError> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(TurnError::Invalid {
            field,
            reason: format!(
                "{} bytes, over the {MAX_MESSAGE_BYTES}-byte limit",
                text.len()
            ),
        });
    }
    Ok(())
}

fn check_tool_name(field: &'static str, name: &str) -> Result<(), TurnError> {
    if name.is_empty() || name.chars().count() > MAX_TOOL_NAME {
        return Err(TurnError::Invalid {
            field,
            reason: format!("must be 1 to {MAX_TOOL_NAME} characters"),
        });
    }
    if name.chars().any(char::is_control) {
        return Err(TurnError::Invalid {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! The tool-permission gate (README, "Turns and the tool gate"): every tool call an
//! agent or a plugin makes is decided here, against the operator's policy and the
//! grants of the turn it belongs to, and every decision is written to the audit log.
//!
//! - `catalog`: the tools the gate knows (the host tools read from `crate::tools`),
//!   their default levels; unknown `allowed-tools`
//! - `policy`: the operator's levels and the decision rules (a pure function)
//! - `rules`: `allowed-tools` entries as the ecosystem writes them (`Read`,
//!   `Bash(git log:*)`, `mcp__server__tool`), matched against one call
//! - `turns`: turns, their grants and the person's approvals, with expiry, in the
//!   gate's database beside the audit log
//! - `flow`: where a call's data goes, for the rule against leaks: in a turn that has
//!   read outside content, a send to a new destination asks, whatever the grant
//! - `audit` + `schema`: the audit log in `{data_dir}/gate/audit.db` (or PostgreSQL's
//!   `audit` schema), the gate's database
//! - `deletes`: how many memories the agent may delete per user and hour (the
//!   agent's delete is an act of its own the gate decides and records; the window is
//!   the audit log's rows)
//!
//! [`Gate`] ties them together and is shared between threads (REST handlers on the
//! blocking pool, plugin calls). It decides; running an allowed host tool is the turn
//! service's (`crate::turns`), for the agent and for `tools.invoke` from WASM alike.

pub mod audit;
pub mod catalog;
mod deletes;
mod error;
pub mod flow;
pub mod policy;
pub mod rules;
mod schema;
pub mod turns;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use audit::{AuditEntry, AuditLog, AuditPage, AuditQuery, Retention, summarize_args};
pub use catalog::{AGENT_TOOLS, ToolKind, ToolSpec, UnknownTool};
pub use error::GateError;
pub use policy::{Decision, Policy, ReasonCode, SkillGrant, Verdict};
pub use schema::{PG_SCHEMA as AUDIT_PG_SCHEMA, SCHEMA as AUDIT_SCHEMA, SchemaError};
pub use turns::{Approval, MAX_CHANNEL_CHARS, MAX_CONVERSATION_CHARS, NewTurn, Turn, TurnState};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::{Config, ConfigFile};
use crate::credentials::{PersonAct, Principal};
use crate::paths::DataDir;
use crate::sql::Actor;
use crate::time::Clock;

/// The audit log's `tool` of a forced skill's entry (see [`Gate::record_forced`]).
pub const FORCED_SKILL: &str = "(skill)";
/// The audit log's `tool` of the agent's deletes of memories (see
/// [`Gate::decide_agent_delete`]).
pub const AGENT_DELETE: &str = "(memory delete)";

/// Where the audit log lives.
pub fn audit_path(data_dir: &DataDir) -> PathBuf {
    data_dir.root().join("gate").join("audit.db")
}

/// Where the gate reads the operator's policy from, on every decision, so that an edit
/// of config.yaml applies to the next call without a restart.
pub trait PolicySource: Send + Sync {
    fn policy(&self) -> Arc<Policy>;
}

/// A policy that never changes (tests, benchmarks, a daemon without config).
pub struct FixedPolicy(pub Arc<Policy>);

impl PolicySource for FixedPolicy {
    fn policy(&self) -> Arc<Policy> {
        self.0.clone()
    }
}

/// The policy in `{data_dir}/config.yaml` (`tools.*`), rebuilt only when the file's
/// configuration changes. A config that fails to parse keeps the last good one in
/// force (see `config.rs`), so a typo never falls back to laxer defaults.
pub struct ConfigPolicy {
    file: Arc<ConfigFile>,
    cached: Mutex<Option<(Arc<Config>, Arc<Policy>)>>,
}

impl ConfigPolicy {
    pub fn new(file: Arc<ConfigFile>) -> ConfigPolicy {
        ConfigPolicy {
            file,
            cached: Mutex::new(None),
        }
    }
}

impl PolicySource for ConfigPolicy {
    fn policy(&self) -> Arc<Policy> {
        let config = self.file.current();
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, policy)) = cached.as_ref()
            && Arc::ptr_eq(seen, &config)
        {
            return policy.clone();
        }
        let policy = Arc::new(Policy::from_config(&config.tools));
        *cached = Some((config, policy.clone()));
        policy
    }
}

/// The gate's reading of a skill's `allowed-tools` for the skills library, which
/// reports at install and in listings the entries that grant nothing under the policy
/// in force (see [`catalog::unknown_tools`]).
pub struct AllowedToolsCheck(pub Arc<dyn PolicySource>);

impl std::fmt::Debug for AllowedToolsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AllowedToolsCheck")
    }
}

impl crate::skills::library::ToolCheck for AllowedToolsCheck {
    fn not_understood(&self, allowed_tools: &[String]) -> Vec<crate::skills::Warning> {
        let policy = self.0.policy();
        catalog::unknown_tools(allowed_tools, |name| policy.knows(name))
            .into_iter()
            .map(|unknown| crate::skills::Warning::ToolNotUnderstood {
                entry: unknown.name().to_string(),
                detail: unknown.to_string(),
            })
            .collect()
    }
}

/// What [`Gate::approve`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Approved {
    /// The turn, its approvals included.
    pub turn: Turn,
    /// The tool's approval in the turn (the first, if it was approved before).
    pub approval: Approval,
    /// The recorded decision: allow, code `approved`.
    pub decision: Decision,
}

/// Who asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller<'a> {
    /// The agent (REST, MCP, a channel's agent loop) acting for `user`: it can ask its
    /// user when the answer is ask, and may use that user's turns only.
    Agent { user: &'a str },
    /// An MCP client (`crate::mcp`) acting for `user`: an agent too, which asks its
    /// user itself; audited as `mcp`.
    Mcp { user: &'a str },
    /// A WASM plugin through `tools.invoke` (it has nobody to ask), acting for `user`:
    /// it may use that user's turns only.
    Plugin { name: &'a str, user: &'a str },
    /// A chat channel's agent loop (`terminal`, `telegram`) acting for `user`, the
    /// person in that chat: it may use their turns only, and it can ask them when the
    /// answer is ask.
    Channel { channel: &'a str, user: &'a str },
}

impl Caller<'_> {
    fn label(&self) -> String {
        match self {
            Caller::Agent { .. } => "agent".to_string(),
            Caller::Mcp { .. } => "mcp".to_string(),
            Caller::Plugin { name, .. } => format!("plugin:{name}"),
            Caller::Channel { channel, .. } => format!("channel:{channel}"),
        }
    }

    /// The user the caller acts for.
    pub fn user(&self) -> &str {
        match self {
            Caller::Agent { user }
            | Caller::Mcp { user }
            | Caller::Plugin { user, .. }
            | Caller::Channel { user, .. } => user,
        }
    }
}

/// The gate: policy, turns, audit log and clock.
pub struct Gate {
    policy: Arc<dyn PolicySource>,
    turns: turns::Turns,
    audit: AuditLog,
    clock: Arc<dyn Clock>,
}

impl Gate {
    /// The gate over `{data_dir}/gate/audit.db`.
    pub fn open(
        data_dir: &DataDir,
        policy: Arc<dyn PolicySource>,
        clock: Arc<dyn Clock>,
    ) -> Result<Gate, GateError> {
        let audit = AuditLog::open(&audit_path(data_dir), Retention::default(), clock.now_ms())?;
        Ok(Gate::new(audit, policy, clock))
    }

    /// The gate over `audit`, whose database keeps the turns as well.
    pub fn new(audit: AuditLog, policy: Arc<dyn PolicySource>, clock: Arc<dyn Clock>) -> Gate {
        Gate {
            policy,
            turns: turns::Turns::new(audit.database(), turns::MAX_TURNS),
            audit,
            clock,
        }
    }

    /// The same gate, bounded to `cap` turns at once.
    pub fn with_turn_cap(mut self, cap: usize) -> Gate {
        self.turns = self.turns.with_cap(cap);
        self
    }

    /// The policy in force now.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.policy()
    }

    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// The gate's database (the audit log and the turns), which keeps the dashboard's
    /// sessions as well (`api::auth::Sessions`): the daemon's record of who may act.
    pub fn database(&self) -> Arc<crate::sql::Database> {
        self.audit.database()
    }

    /// Opens a turn; it expires after the policy's turn lifetime unless ended first.
    pub fn open_turn(&self, new: NewTurn) -> Result<Turn, GateError> {
        let policy = self.policy.policy();
        self.turns.open(
            new,
            self.clock.now_ms(),
            policy.turn_ttl_ms(),
            policy.max_open_per_caller(),
        )
    }

    /// Ends `user`'s turn and revokes its grants.
    pub fn end_turn(&self, id: &str, user: &str) -> Result<Turn, GateError> {
        self.turns.end(id, user, self.clock.now_ms())
    }

    /// `user`'s turn `id` and where it stands now; `None` if unknown, long closed, or
    /// another user's.
    pub fn turn(&self, id: &str, user: &str) -> Result<Option<(Turn, TurnState)>, GateError> {
        let now = self.clock.now_ms();
        Ok(self.turns.get(id, user)?.map(|turn| {
            let state = turn.state(now);
            (turn, state)
        }))
    }

    /// The person approves, in `user`'s open turn `turn_id`, the call of `tool` with
    /// `args` (what they were shown), or with `args` absent the tool with any
    /// arguments for the rest of the turn: from now until the turn ends or expires,
    /// the gate answers allow where it would ask. An approved call also lets the turn
    /// send to its host from then on (`gate::flow`); an approval of the whole tool
    /// never covers a new destination. Only the person may ([`PersonAct::Approve`]):
    /// the agent's attempt is recorded as a deny (code `person-required`, caller
    /// `agent`) and refused. A tool the gate denies in the turn (operator deny, not in
    /// the invoked skill's `allowed-tools`) cannot be approved, nor one it does not
    /// know. The approval is written to the audit log (caller: how the person reached
    /// the daemon, code `approved`, the arguments' summary) before it takes effect:
    /// one that cannot be recorded is not given.
    pub fn approve(
        &self,
        turn_id: &str,
        user: &str,
        tool: &str,
        args: Option<&Value>,
        by: &Principal,
    ) -> Result<Approved, GateError> {
        let now = self.clock.now_ms();
        let call = args.map(|args| turns::ApprovedCall {
            key: args_key(args),
            summary: summarize_args(&args.to_string()),
            host: match flow::of(tool, args).sends {
                Some(flow::Destination::Host(host)) => Some(host),
                _ => None,
            },
        });
        let args_summary = call.as_ref().map_or("", |c| c.summary.as_str());
        if let Err(refused) = by.require(PersonAct::Approve) {
            let decision = Decision::deny(ReasonCode::PersonRequired, refused.to_string());
            self.audit.record(&audit::NewEntry {
                at: now,
                turn_id: Some(turn_id),
                user: Some(user),
                skill: None,
                caller: &by.label(),
                tool,
                decision: &decision,
                args_summary,
            })?;
            return Err(GateError::PersonRequired(refused));
        }
        let policy = self.policy.policy();
        let scope = match &call {
            Some(_) => "this call".to_string(),
            None => format!(
                "`{}` with any arguments for the rest of this turn (never a new destination after outside content)",
                policy::shown(tool)
            ),
        };
        let decision = Decision::new(
            Verdict::Allow,
            ReasonCode::Approved,
            format!("the person approved {scope}"),
        );
        // Checked, recorded and given in one transaction: an approval that cannot be
        // recorded is not given, and a turn that closes meanwhile waits for it.
        let (turn, approval) = self.audit.write(Actor::User(user), now, |tx| {
            let mut turn = turns::locked(tx, turn_id, user)?
                .ok_or_else(|| GateError::UnknownTurn(turn_id.to_string()))?;
            turn.require_open(now)?;
            let without = policy::decide(
                &policy,
                turn.skill.as_ref(),
                false,
                tool,
                args.unwrap_or(&Value::Null),
            );
            match (without.verdict, without.code) {
                (Verdict::Deny, ReasonCode::UnknownTool) => {
                    return Err(GateError::UnknownTool(policy::shown(tool)));
                }
                (Verdict::Deny, code) => {
                    return Err(GateError::NotApprovable {
                        tool: policy::shown(tool),
                        code,
                        reason: without.reason,
                    });
                }
                (Verdict::Allow | Verdict::Ask, _) => {}
            }
            audit::insert(
                tx,
                &audit::NewEntry {
                    at: now,
                    turn_id: Some(&turn.id),
                    user: Some(&turn.user),
                    skill: turn.skill.as_ref().map(|s| s.skill.as_str()),
                    caller: &by.label(),
                    tool,
                    decision: &decision,
                    args_summary,
                },
            )?;
            let approval = turn.approve(
                turns::ApprovalRequest {
                    tool: tool.to_string(),
                    call: call.clone(),
                },
                now,
            )?;
            turns::save(tx, &turn)?;
            Ok((turn, approval))
        })?;
        Ok(Approved {
            turn,
            approval,
            decision,
        })
    }

    /// Records that `by` forced the turn's skill (not the router's choice, nor the
    /// person's `/slug`): code `skill-forced`, with what it grants, which is only what
    /// the person granted it.
    pub fn record_forced(&self, turn: &Turn, by: &str) -> Result<(), GateError> {
        let Some(grant) = &turn.skill else {
            return Ok(());
        };
        let granted = if grant.granted_tools.is_empty() {
            "nothing".to_string()
        } else {
            grant.granted_tools.join(", ")
        };
        let decision = Decision::new(
            Verdict::Allow,
            ReasonCode::SkillForced,
            format!(
                "`{}` forced skill `{}` into this turn; it grants only what the person granted it: {granted}",
                policy::shown(by),
                policy::shown(&grant.skill)
            ),
        );
        self.audit.record(&audit::NewEntry {
            at: self.clock.now_ms(),
            turn_id: Some(&turn.id),
            user: Some(&turn.user),
            skill: Some(&grant.skill),
            caller: by,
            tool: FORCED_SKILL,
            decision: &decision,
            args_summary: "",
        })?;
        Ok(())
    }

    /// Decides whether `caller` (the agent over REST, an MCP client) may delete the
    /// memory `memory_id` of the user it acts for: yes while it has deleted fewer than
    /// `per_hour` of that user's in the last hour (code `agent-delete`, the delete
    /// counted), else no (code `agent-delete-limit`,
    /// [`GateError::AgentDeleteLimit`]). Either is written to the audit log (tool
    /// [`AGENT_DELETE`], the memory's id as its arguments) before it is returned: a
    /// delete that cannot be recorded is not allowed.
    pub fn decide_agent_delete(
        &self,
        caller: Caller,
        memory_id: &str,
        per_hour: u32,
    ) -> Result<Decision, GateError> {
        let now = self.clock.now_ms();
        let user = caller.user();
        let label = caller.label();
        let args_summary = summarize_args(&serde_json::json!({ "id": memory_id }).to_string());
        // Counted and recorded in one transaction: the record is the count.
        let (taken, decision) = self.audit.write(Actor::User(user), now, |tx| {
            let taken = deletes::take(tx, user, now, per_hour)?;
            let decision = match taken {
                Ok(()) => Decision::new(
                    Verdict::Allow,
                    ReasonCode::AgentDelete,
                    "the agent deleted a memory; the person can restore it (GET /api/brain/dismissed)",
                ),
                Err(_) => Decision::deny(
                    ReasonCode::AgentDeleteLimit,
                    format!(
                        "the agent has deleted {per_hour} memories of this user in the last hour, the most it may (memory.agentDeletes.perHour)"
                    ),
                ),
            };
            audit::insert(
                tx,
                &audit::NewEntry {
                    at: now,
                    turn_id: None,
                    user: Some(user),
                    skill: None,
                    caller: &label,
                    tool: AGENT_DELETE,
                    decision: &decision,
                    args_summary: &args_summary,
                },
            )?;
            Ok((taken, decision))
        })?;
        match taken {
            Ok(()) => Ok(decision),
            Err(full) => Err(GateError::AgentDeleteLimit {
                per_hour,
                // Whole seconds, rounded up: a client waiting that long is let in.
                retry_after_secs: (full.retry_after_ms.max(1) as u64).div_ceil(1000),
            }),
        }
    }

    /// Decides whether the agent, acting for `user`, may call `tool` in turn
    /// `turn_id`, and records the decision. `args` is the call's arguments (JSON):
    /// only a bounded summary of them is kept (see [`summarize_args`]).
    pub fn decide(&self, turn_id: &str, user: &str, tool: &str, args: &str) -> Decision {
        self.decide_as(Caller::Agent { user }, Some(turn_id), tool, args)
    }

    /// As [`Gate::decide`], for any caller, in the turn `turn_id` if the call belongs
    /// to one. The caller's user must be the turn's: another user's turn is, to the
    /// agent, no turn at all (`unknown-turn`), and to a plugin `user-mismatch`. A
    /// plugin has nobody to ask, so ask is a deny for it. The decision is recorded
    /// under the caller's user. Never fails: an error while deciding is a deny with
    /// its reason code.
    pub fn decide_as(
        &self,
        caller: Caller,
        turn_id: Option<&str>,
        tool: &str,
        args: &str,
    ) -> Decision {
        self.decide_in_turn(caller, turn_id, tool, args).0
    }

    /// [`Gate::decide_as`], with the skill of the turn it was decided in (`None` when
    /// the turn has none, or was not the caller's to decide in): what a host tool runs
    /// as, read in the decision's own transaction.
    pub fn decide_in_turn(
        &self,
        caller: Caller,
        turn_id: Option<&str>,
        tool: &str,
        args: &str,
    ) -> (Decision, Option<String>) {
        let user = caller.user();
        let now = self.clock.now_ms();
        let args_summary = summarize_args(args);
        let label = caller.label();
        let insert = |tx: &crate::sql::Tx<'_>, decision: &Decision, skill: Option<&str>| {
            let entry = audit::NewEntry {
                at: now,
                turn_id,
                user: Some(user),
                skill,
                caller: &label,
                tool,
                decision,
                args_summary: &args_summary,
            };
            audit::insert(tx, &entry)
        };
        // The turn is read, changed and the decision recorded in one transaction
        // acting for the caller's person: another person's turn is not there.
        let in_turn = match turn_id {
            None => Ok(None),
            Some(id) => self.audit.write(Actor::User(user), now, |tx| {
                let Some(mut turn) = turns::locked(tx, id, user)? else {
                    return Ok(None);
                };
                let decision = match turn.state(now) {
                    TurnState::Ended => Decision::deny(
                        ReasonCode::TurnEnded,
                        "the turn has ended and its grants are revoked",
                    ),
                    TurnState::Expired => Decision::deny(
                        ReasonCode::TurnExpired,
                        "the turn was not ended within its lifetime and has expired",
                    ),
                    TurnState::Open => {
                        let before = turn.outside_read.is_some();
                        let decision = without_asking(
                            &caller,
                            decide_in(&self.policy.policy(), &mut turn, tool, args),
                            tool,
                        );
                        if turn.outside_read.is_some() != before {
                            turns::save(tx, &turn)?;
                        }
                        decision
                    }
                };
                let skill = turn.skill.map(|s| s.skill);
                insert(tx, &decision, skill.as_deref())?;
                Ok(Some((decision, skill)))
            }),
        };
        let recorded = match in_turn {
            Ok(Some(decided)) => return decided,
            Err(e) => Err(e),
            Ok(None) => {
                let decision = match turn_id {
                    None => Decision::deny(
                        ReasonCode::NoTurn,
                        "the call belongs to no turn, so nothing is granted",
                    ),
                    // To a plugin or a channel, which name their person, a turn of
                    // someone else's is a mismatch; to the agent, no turn at all.
                    Some(id)
                        if matches!(caller, Caller::Plugin { .. } | Caller::Channel { .. })
                            && self.turns.exists(id).unwrap_or(false) =>
                    {
                        Decision::deny(ReasonCode::UserMismatch, "the turn belongs to another user")
                    }
                    Some(_) => Decision::deny(ReasonCode::UnknownTurn, "no such turn"),
                };
                self.audit
                    .write(Actor::User(user), now, |tx| insert(tx, &decision, None))
                    .map(|_| decision)
            }
        };
        let decision = recorded.unwrap_or_else(|e| {
            tracing::error!(tool = %policy::shown(tool), "gate decision not recorded, so denied: {e}");
            Decision::deny(
                ReasonCode::AuditUnavailable,
                "the decision could not be written to the audit log",
            )
        });
        (decision, None)
    }
}

/// A plugin has nobody to ask: for it, ask is a deny.
fn without_asking(caller: &Caller, decision: Decision, tool: &str) -> Decision {
    if decision.verdict == Verdict::Ask && matches!(caller, Caller::Plugin { .. }) {
        return Decision::deny(
            ReasonCode::ApprovalUnavailable,
            format!(
                "`{}` needs the user's approval, which a plugin cannot ask for",
                policy::shown(tool)
            ),
        );
    }
    decision
}

/// The decision for `tool` with `args` (JSON text) in the open `turn`, and what it
/// changes there: the policy's answer with the turn's grant and approvals, then the
/// rule against leaks (`flow`): after outside content, a send to a new destination
/// asks unless the person approved this very call. An allowed call that brings
/// outside content marks the turn.
fn decide_in(policy: &Policy, turn: &mut Turn, tool: &str, args: &str) -> Decision {
    let args: Value = if args.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(args).unwrap_or(Value::Null)
    };
    let key = args_key(&args);
    let call_approved = turn.approved_call(tool, &key);
    let approved = call_approved || turn.approved_tool(tool);
    let mut decision = policy::decide(policy, turn.skill.as_ref(), approved, tool, &args);
    if !decision.is_allowed() {
        return decision;
    }
    let flow = flow::of(tool, &args);
    if let (Some(read), Some(sends)) = (&turn.outside_read, &flow.sends) {
        let known =
            matches!(sends, flow::Destination::Host(host) if turn.destinations.contains(host));
        if !known && call_approved {
            decision = Decision::new(
                Verdict::Allow,
                ReasonCode::Approved,
                format!(
                    "the person approved this call of `{}`, which sends to a new destination",
                    policy::shown(tool)
                ),
            );
        } else if !known {
            let to = match sends {
                flow::Destination::Host(host) => format!("`{}`", policy::shown(host)),
                flow::Destination::Unnamed => {
                    "wherever its arguments lead (the gate cannot read a destination from them)"
                        .to_string()
                }
            };
            decision = Decision::new(
                Verdict::Ask,
                ReasonCode::NewDestination,
                format!(
                    "this turn holds private data and has read content from outside ({read}); `{}` would send {} to {to}, a destination not named in the message or the granted skill, nor approved in this turn: ask the person, showing them this call",
                    policy::shown(tool),
                    summarize_args(&args.to_string()),
                ),
            );
            return decision;
        }
    }
    if flow.reads_outside && turn.outside_read.is_none() {
        let call: String = format!(
            "{} {}",
            policy::shown(tool),
            summarize_args(&args.to_string())
        )
        .chars()
        .take(160)
        .collect();
        turn.outside_read = Some(call);
    }
    decision
}

/// The key an approval binds a call's arguments by: the sha256 of their canonical JSON
/// (objects' keys sorted; no arguments and `{}` alike).
fn args_key(args: &Value) -> [u8; 32] {
    let canonical = match args {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => canonical(other),
    };
    Sha256::digest(canonical.to_string().as_bytes()).into()
}

/// `value` with every object's keys in sorted order, whatever order the map type keeps
/// (serde_json keeps insertion order when a dependency turns `preserve_order` on).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;

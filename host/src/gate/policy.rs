//! The operator's policy and the one decision function. The gate's rules (README,
//! "Turns and the tool gate") live here and nowhere else, as a pure function of
//! (policy, the turn's skill grant, tool), so that every caller (REST, WASM
//! `tools.invoke`) gets the same answer and the rules are tested without a database or
//! a clock.

use std::collections::HashMap;

use serde::Serialize;

use serde_json::Value;

use super::{catalog, rules};
use crate::config::{ToolLevel, ToolsConfig};
use crate::time::MINUTE_MS;

/// How long a turn lives when the operator says nothing.
pub const DEFAULT_TURN_TTL_MS: i64 = 10 * MINUTE_MS;
/// The longest turn lifetime accepted from config (a day): a turn is one message and
/// the work on it, and its grants must not outlive that by much.
pub const MAX_TURN_TTL_MS: i64 = 24 * 60 * MINUTE_MS;

/// Tool levels (the catalog's defaults, overridden by `tools.policy`) and the turn
/// lifetime (`tools.turnTtlMinutes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    overrides: HashMap<String, ToolLevel>,
    turn_ttl_ms: i64,
    max_open_per_caller: usize,
}

/// Turns one caller may hold open when the operator says nothing: far more than an
/// agent works on at once, and a tenth of the gate's table, so that no caller can
/// fill it for the others.
pub const DEFAULT_MAX_OPEN_PER_CALLER: usize = 1_000;

impl Default for Policy {
    /// The catalog's defaults: read-only tools allow, writing, network, messaging and
    /// command tools ask, unknown tools deny; turns live 10 minutes.
    fn default() -> Policy {
        Policy {
            overrides: HashMap::new(),
            turn_ttl_ms: DEFAULT_TURN_TTL_MS,
            max_open_per_caller: DEFAULT_MAX_OPEN_PER_CALLER,
        }
    }
}

impl Policy {
    /// The policy `tools.*` describes. A TTL of 0 minutes would expire every turn at
    /// birth and more than a day would keep grants alive far past their message, so
    /// the value is held to 1 minute..1 day.
    pub fn from_config(config: &ToolsConfig) -> Policy {
        let turn_ttl_ms = config
            .turn_ttl_minutes
            .map_or(DEFAULT_TURN_TTL_MS, |m| i64::from(m) * MINUTE_MS)
            .clamp(MINUTE_MS, MAX_TURN_TTL_MS);
        Policy {
            overrides: config
                .policy
                .iter()
                .map(|(name, level)| (name.clone(), *level))
                .collect(),
            turn_ttl_ms,
            max_open_per_caller: config
                .max_open_turns_per_caller
                .map_or(DEFAULT_MAX_OPEN_PER_CALLER, |n| n.max(1) as usize),
        }
    }

    /// The same policy with `tool` at `level`.
    pub fn with_level(mut self, tool: &str, level: ToolLevel) -> Policy {
        self.overrides.insert(tool.to_string(), level);
        self
    }

    /// The same policy with another turn lifetime (not clamped: for tests and tools).
    pub fn with_turn_ttl_ms(mut self, ttl_ms: i64) -> Policy {
        self.turn_ttl_ms = ttl_ms;
        self
    }

    /// The same policy with another cap on a caller's open turns (at least 1).
    pub fn with_max_open_per_caller(mut self, cap: usize) -> Policy {
        self.max_open_per_caller = cap.max(1);
        self
    }

    /// The operator's level for `tool`, else the catalog's default; `None` for a tool
    /// the gate does not know.
    /// An MCP tool (`mcp__server__tool`) takes its server's level (`mcp__server`) when
    /// the operator names the server and not the tool.
    pub fn level(&self, tool: &str) -> Option<ToolLevel> {
        self.overrides
            .get(tool)
            .or_else(|| {
                rules::mcp_server(tool).and_then(|server| self.overrides.get(server.as_str()))
            })
            .copied()
            .or_else(|| catalog::default_level(tool))
    }

    /// Whether the gate knows `tool` (the catalog or the operator names it).
    pub fn knows(&self, tool: &str) -> bool {
        self.level(tool).is_some()
    }

    pub fn turn_ttl_ms(&self) -> i64 {
        self.turn_ttl_ms
    }

    /// How many turns one caller may hold open at once (`tools.maxOpenTurnsPerCaller`).
    pub fn max_open_per_caller(&self) -> usize {
        self.max_open_per_caller
    }
}

/// The invoked skill of a turn and the tools it may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct SkillGrant {
    /// The skill's slug.
    pub skill: String,
    /// Its `allowed-tools`, as written ([`rules`]): when there are any, the only
    /// tools the turn may call, besides Engram's memory tools unless it names one of
    /// them ([`SkillGrant::restricts`]). None: the skill restricts nothing.
    pub allowed_tools: Vec<String>,
    /// Those the person granted it, for its SKILL.md as it is now (raised from ask to
    /// allow while it is invoked). The rest ask, like any tool outside a skill: a
    /// skill the person never confirmed, or whose text changed since, grants nothing.
    pub granted_tools: Vec<String>,
}

/// Engram's own memory tools: a skill that lists tools keeps them unless it names one
/// of them (see [`SkillGrant::restricts`]).
pub const MEMORY_TOOLS: [&str; 2] = ["save_memory", "search_memory"];

impl SkillGrant {
    pub fn from_invoked(skill: &crate::skills::InvokedSkill) -> SkillGrant {
        SkillGrant {
            skill: skill.id.slug().to_string(),
            allowed_tools: skill.allowed_tools.clone(),
            granted_tools: skill.granted_tools.clone(),
        }
    }

    /// Whether the skill keeps the turn from calling `tool` with `args`. A skill
    /// without `allowed-tools` restricts nothing (most of the ecosystem's skills
    /// declare none, and an empty list is not a choice to forbid every tool). One
    /// with `allowed-tools` allows only what they cover, and Engram's memory tools,
    /// which a skill written for another agent cannot know to list: only a skill that
    /// names one of them has decided about memory, and then gets what it named.
    pub fn restricts(&self, tool: &str, args: &Value) -> bool {
        if self.allowed_tools.is_empty() || self.covers(&self.allowed_tools, tool, args) {
            return false;
        }
        let names_memory = self
            .allowed_tools
            .iter()
            .any(|entry| MEMORY_TOOLS.contains(&entry.trim()));
        names_memory || !MEMORY_TOOLS.contains(&tool)
    }

    /// Whether the skill's `allowed-tools` cover a call of `tool` with `args`.
    pub fn lists(&self, tool: &str, args: &Value) -> bool {
        self.covers(&self.allowed_tools, tool, args)
    }

    /// Whether the person granted the skill a call of `tool` with `args`: an entry
    /// both in its `allowed-tools` and in what they confirmed covers it.
    pub fn grants(&self, tool: &str, args: &Value) -> bool {
        let confirmed: Vec<String> = self
            .allowed_tools
            .iter()
            .filter(|entry| self.granted_tools.contains(entry))
            .cloned()
            .collect();
        self.covers(&confirmed, tool, args)
    }

    /// Whether one of `entries` covers the call; an entry the gate cannot read
    /// ([`rules::parse`]) covers nothing.
    fn covers(&self, entries: &[String], tool: &str, args: &Value) -> bool {
        entries
            .iter()
            .any(|entry| rules::parse(entry).is_ok_and(|rule| rule.covers(tool, args)))
    }
}

/// What the gate answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    /// The user must approve this call: the agent asks them, the approval is given
    /// for the turn (`Gate::approve`), and the call is made again.
    Ask,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }

    pub fn parse(text: &str) -> Option<Verdict> {
        [Verdict::Allow, Verdict::Ask, Verdict::Deny]
            .into_iter()
            .find(|v| v.as_str() == text)
    }
}

/// Why: a stable code that clients and the audit log match on. The text beside it is
/// for people and may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonCode {
    /// The operator's level for the tool (or its default) is allow.
    PolicyAllow,
    /// The level is ask and no invoked skill lists the tool.
    PolicyAsk,
    /// The level is ask and the turn's invoked skill lists the tool, which the person
    /// granted it: allowed for this turn only.
    SkillGrant,
    /// The level is ask and the turn's invoked skill lists the tool, but the person has
    /// not granted it the tool (a built-in or a skill found on disk they never
    /// confirmed, or one whose SKILL.md changed since they did): ask.
    SkillUnconfirmed,
    /// The turn has read content from outside and the call would send data to a
    /// destination the person has not named or approved in it: ask, whatever grant is
    /// in force (see `gate::flow`).
    NewDestination,
    /// Not a tool call: the caller forced a skill into the turn (an MCP client's
    /// `skill`, a schedule). Audited so that the person sees who did.
    SkillForced,
    /// Not a tool call: the agent deleted a memory, which the person can restore
    /// (`memory.agentDeletes`).
    AgentDelete,
    /// Not a tool call: the agent's delete of a memory was refused, past its
    /// `memory.agentDeletes.perHour` for the user.
    AgentDeleteLimit,
    /// The level is ask and the operator approved the tool for this turn: allowed for
    /// this turn only. Also the code of the approval itself in the audit log.
    Approved,
    /// The operator denies the tool; no skill can lift that.
    OperatorDeny,
    /// A skill is invoked in this turn and does not list the tool.
    NotInAllowedTools,
    /// Neither the catalog nor the operator's policy names the tool.
    UnknownTool,
    /// The turn was not ended within its lifetime; its grants are gone.
    TurnExpired,
    /// The turn was ended; its grants are revoked.
    TurnEnded,
    /// No such turn (never opened, or forgotten long after it closed).
    UnknownTurn,
    /// The call names a turn that belongs to another user.
    UserMismatch,
    /// A call that belongs to no turn (a plugin call outside any turn).
    NoTurn,
    /// The level is ask, but the caller (a WASM plugin) has no user to ask.
    ApprovalUnavailable,
    /// The agent tried what only the person may do (approve a tool): refused.
    PersonRequired,
    /// The decision could not be written to the audit log, so it is not given: an
    /// unaudited allow would break the log's promise.
    AuditUnavailable,
}

impl ReasonCode {
    pub const ALL: [ReasonCode; 20] = [
        ReasonCode::PolicyAllow,
        ReasonCode::PolicyAsk,
        ReasonCode::SkillGrant,
        ReasonCode::SkillUnconfirmed,
        ReasonCode::NewDestination,
        ReasonCode::SkillForced,
        ReasonCode::AgentDelete,
        ReasonCode::AgentDeleteLimit,
        ReasonCode::Approved,
        ReasonCode::OperatorDeny,
        ReasonCode::NotInAllowedTools,
        ReasonCode::UnknownTool,
        ReasonCode::TurnExpired,
        ReasonCode::TurnEnded,
        ReasonCode::UnknownTurn,
        ReasonCode::UserMismatch,
        ReasonCode::NoTurn,
        ReasonCode::ApprovalUnavailable,
        ReasonCode::PersonRequired,
        ReasonCode::AuditUnavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::PolicyAllow => "policy-allow",
            ReasonCode::PolicyAsk => "policy-ask",
            ReasonCode::SkillGrant => "skill-grant",
            ReasonCode::SkillUnconfirmed => "skill-unconfirmed",
            ReasonCode::NewDestination => "new-destination",
            ReasonCode::SkillForced => "skill-forced",
            ReasonCode::AgentDelete => "agent-delete",
            ReasonCode::AgentDeleteLimit => "agent-delete-limit",
            ReasonCode::Approved => "approved",
            ReasonCode::OperatorDeny => "operator-deny",
            ReasonCode::NotInAllowedTools => "not-in-allowed-tools",
            ReasonCode::UnknownTool => "unknown-tool",
            ReasonCode::TurnExpired => "turn-expired",
            ReasonCode::TurnEnded => "turn-ended",
            ReasonCode::UnknownTurn => "unknown-turn",
            ReasonCode::UserMismatch => "user-mismatch",
            ReasonCode::NoTurn => "no-turn",
            ReasonCode::ApprovalUnavailable => "approval-unavailable",
            ReasonCode::PersonRequired => "person-required",
            ReasonCode::AuditUnavailable => "audit-unavailable",
        }
    }

    pub fn parse(text: &str) -> Option<ReasonCode> {
        ReasonCode::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

/// One answer of the gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Decision {
    #[serde(rename = "decision")]
    pub verdict: Verdict,
    pub code: ReasonCode,
    pub reason: String,
}

impl Decision {
    pub fn new(verdict: Verdict, code: ReasonCode, reason: impl Into<String>) -> Decision {
        Decision {
            verdict,
            code,
            reason: reason.into(),
        }
    }

    pub fn deny(code: ReasonCode, reason: impl Into<String>) -> Decision {
        Decision::new(Verdict::Deny, code, reason)
    }

    pub fn is_allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

/// A tool name as reasons show it (the one rule, also for ids in errors below the
/// gate).
pub use crate::term_text::shown;

/// The decision for `tool` called with `args` in an open turn whose invoked skill (if
/// any) is `skill`, `approved` when the operator approved the tool for that turn.
///
/// 1. An operator deny always wins, whatever a skill lists or an approval says.
/// 2. A tool neither the catalog nor the operator names is denied.
/// 3. While a skill with `allowed-tools` is invoked, only what they cover may be
///    called, and Engram's memory tools unless the skill names one of them
///    ([`SkillGrant::restricts`]); the covered calls at ask that the person granted
///    the skill are raised to allow (for this turn: the grant lives in the turn), the
///    others ask. A skill without `allowed-tools` changes nothing: the policy decides.
/// 4. Otherwise the level applies as is, except that an approval raises ask to allow
///    (for this turn: the approval lives in the turn too).
///
/// What outside content read in the turn changes (`gate::flow`) is the gate's, on
/// top of this answer.
pub fn decide(
    policy: &Policy,
    skill: Option<&SkillGrant>,
    approved: bool,
    tool: &str,
    args: &Value,
) -> Decision {
    let name = shown(tool);
    let Some(level) = policy.level(tool) else {
        return Decision::deny(
            ReasonCode::UnknownTool,
            format!("`{name}` is not a tool the gate knows"),
        );
    };
    // The skill counts only where it lists the call: what it leaves to the policy
    // (memory tools, everything when it lists nothing) is decided as if no skill
    // were invoked.
    let listed = skill.filter(|grant| grant.lists(tool, args));
    match (level, skill, listed) {
        (ToolLevel::Deny, _, _) => Decision::deny(
            ReasonCode::OperatorDeny,
            format!("the operator's policy denies `{name}`"),
        ),
        (_, Some(grant), None) if grant.restricts(tool, args) => Decision::deny(
            ReasonCode::NotInAllowedTools,
            format!(
                "skill `{}` is invoked and its allowed-tools do not cover this call of `{name}`",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Allow, _, _) => Decision::new(
            Verdict::Allow,
            ReasonCode::PolicyAllow,
            format!("the operator's policy allows `{name}`"),
        ),
        (ToolLevel::Ask, _, Some(grant)) if grant.grants(tool, args) => Decision::new(
            Verdict::Allow,
            ReasonCode::SkillGrant,
            format!(
                "`{name}` is in the allowed-tools of skill `{}`, invoked in this turn, which the person granted it",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Ask, _, _) if approved => Decision::new(
            Verdict::Allow,
            ReasonCode::Approved,
            format!("the person approved `{name}` in this turn"),
        ),
        (ToolLevel::Ask, _, Some(grant)) => Decision::new(
            Verdict::Ask,
            ReasonCode::SkillUnconfirmed,
            format!(
                "`{name}` is in the allowed-tools of skill `{}`, but the person has not granted it (or its SKILL.md changed since they did): ask them",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Ask, _, None) => Decision::new(
            Verdict::Ask,
            ReasonCode::PolicyAsk,
            format!("the operator's policy asks the user before `{name}`"),
        ),
    }
}

/// What the gate answers for one of a skill's `allowed-tools` entries when a call it
/// covers is made (a turn's grant preview): an entry it cannot read is an unknown tool.
pub fn decide_entry(policy: &Policy, grant: &SkillGrant, entry: &str) -> Decision {
    match rules::parse(entry) {
        Ok(rule) => {
            let (tool, args) = rule.example();
            decide(policy, Some(grant), false, &tool, &args)
        }
        Err(_) => Decision::deny(
            ReasonCode::UnknownTool,
            format!("`{}` is not an entry the gate can read", shown(entry)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skill listing `tools`, all of them granted by the person.
    fn grant(skill: &str, tools: &[&str]) -> SkillGrant {
        SkillGrant {
            skill: skill.to_string(),
            allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
            granted_tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn code(policy: &Policy, skill: Option<&SkillGrant>, tool: &str) -> (Verdict, ReasonCode) {
        let d = decide(policy, skill, false, tool, &Value::Null);
        (d.verdict, d.code)
    }

    fn approved(policy: &Policy, skill: Option<&SkillGrant>, tool: &str) -> (Verdict, ReasonCode) {
        let d = decide(policy, skill, true, tool, &Value::Null);
        (d.verdict, d.code)
    }

    #[test]
    fn without_a_skill_the_policy_applies_as_is() {
        let policy = Policy::default();
        assert_eq!(
            code(&policy, None, "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        assert_eq!(
            code(&policy, None, "fetch_url"),
            (Verdict::Ask, ReasonCode::PolicyAsk)
        );
        assert_eq!(
            code(&policy, None, "Frobnicate"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
        // Claude Code's tools at Claude Code's tiers; an MCP server's tool asks.
        assert_eq!(
            code(&policy, None, "Read"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        assert_eq!(
            code(&policy, None, "Bash"),
            (Verdict::Ask, ReasonCode::PolicyAsk)
        );
        assert_eq!(
            code(&policy, None, "mcp__github__create_issue"),
            (Verdict::Ask, ReasonCode::PolicyAsk)
        );
        // A skill without allowed-tools neither restricts nor raises anything.
        let none = grant("plain", &[]);
        for tool in [
            "search_memory",
            "save_memory",
            "fetch_url",
            "Read",
            "Frobnicate",
        ] {
            assert_eq!(
                code(&policy, Some(&none), tool),
                code(&policy, None, tool),
                "{tool}"
            );
        }
        let policy = policy.with_level("fetch_url", ToolLevel::Deny);
        assert_eq!(
            code(&policy, None, "fetch_url"),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
    }

    #[test]
    fn a_skill_raises_only_its_own_tools_from_ask_to_allow() {
        let policy = Policy::default();
        let web = grant("web-search", &["fetch_url"]);
        assert_eq!(
            code(&policy, Some(&web), "fetch_url"),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
        // Not listed: denied, even a tool the policy allows or asks for...
        assert_eq!(
            code(&policy, Some(&web), "read_skill_file"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            code(&policy, Some(&web), "run_command"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        // ...except Engram's memory tools, at the policy's level (never raised), for a
        // skill that names neither.
        assert_eq!(
            code(&policy, Some(&web), "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        assert_eq!(
            code(&policy, Some(&web), "save_memory"),
            (Verdict::Ask, ReasonCode::PolicyAsk)
        );
        // Listed and already allowed: stays allowed on the policy's word; naming one
        // memory tool leaves the other out on purpose.
        let both = grant("x", &["fetch_url", "search_memory"]);
        assert_eq!(
            code(&policy, Some(&both), "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        assert_eq!(
            code(&policy, Some(&both), "save_memory"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        // An operator deny of a memory tool holds in a skill's turn too.
        let denied = policy.with_level("search_memory", ToolLevel::Deny);
        assert_eq!(
            code(&denied, Some(&web), "search_memory"),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
    }

    #[test]
    fn a_tool_the_person_never_granted_the_skill_asks() {
        let policy = Policy::default();
        let unconfirmed = SkillGrant {
            granted_tools: Vec::new(),
            ..grant("screenshot", &["run_command", "search_memory"])
        };
        assert_eq!(
            code(&policy, Some(&unconfirmed), "run_command"),
            (Verdict::Ask, ReasonCode::SkillUnconfirmed)
        );
        // Allowed by the policy anyway, and approvable like any ask.
        assert_eq!(
            code(&policy, Some(&unconfirmed), "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        assert_eq!(
            approved(&policy, Some(&unconfirmed), "run_command"),
            (Verdict::Allow, ReasonCode::Approved)
        );
        // Still only what it lists.
        assert_eq!(
            code(&policy, Some(&unconfirmed), "send_message"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
    }

    #[test]
    fn an_operator_deny_beats_a_skill_grant() {
        let policy = Policy::default().with_level("fetch_url", ToolLevel::Deny);
        let web = grant("web-search", &["fetch_url"]);
        let d = decide(&policy, Some(&web), false, "fetch_url", &Value::Null);
        assert_eq!(
            (d.verdict, d.code),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
        assert!(d.reason.contains("fetch_url"), "{}", d.reason);
    }

    #[test]
    fn an_approval_lifts_ask_and_nothing_else() {
        let policy = Policy::default().with_level("send_message", ToolLevel::Deny);
        assert_eq!(
            approved(&policy, None, "fetch_url"),
            (Verdict::Allow, ReasonCode::Approved)
        );
        // Already allowed: the policy's word stands.
        assert_eq!(
            approved(&policy, None, "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        // Never over an operator deny, an unknown tool or a skill's allowed-tools.
        assert_eq!(
            approved(&policy, None, "send_message"),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
        assert_eq!(
            approved(&policy, None, "Frobnicate"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
        let web = grant("web-search", &["fetch_url", "search_memory"]);
        assert_eq!(
            approved(&policy, Some(&web), "save_memory"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            approved(&policy, Some(&web), "fetch_url"),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
    }

    #[test]
    fn unknown_and_scoped_tools_grant_nothing() {
        let policy = Policy::default();
        let skill = grant("s", &["Frobnicate", "run_command(git *)", "Read(./src/**)"]);
        assert_eq!(
            code(&policy, Some(&skill), "Frobnicate"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
        // A scope the gate cannot check grants nothing, not the whole tool.
        assert_eq!(
            code(&policy, Some(&skill), "Read"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            code(&policy, Some(&skill), "run_command"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            code(&policy, Some(&skill), "run_command(git *)"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
        // The operator can make a tool known.
        let policy = policy.with_level("Frobnicate", ToolLevel::Ask);
        assert_eq!(
            code(&policy, Some(&skill), "Frobnicate"),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
    }

    fn call(
        policy: &Policy,
        skill: &SkillGrant,
        tool: &str,
        args: serde_json::Value,
    ) -> (Verdict, ReasonCode) {
        let d = decide(policy, Some(skill), false, tool, &args);
        (d.verdict, d.code)
    }

    #[test]
    fn claude_code_rules_grant_the_calls_they_cover_and_only_those() {
        use serde_json::json;
        let policy = Policy::default();
        let git = grant("git-log", &["Bash(git log:*)", "mcp__github", "Read"]);
        let bash = |command: &str| json!({ "command": command });
        assert_eq!(
            call(&policy, &git, "Bash", bash("git log -3")),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
        for refused in ["rm -rf /", "git log; rm -rf /", "git push"] {
            assert_eq!(
                call(&policy, &git, "Bash", bash(refused)),
                (Verdict::Deny, ReasonCode::NotInAllowedTools),
                "{refused}"
            );
        }
        assert_eq!(
            call(&policy, &git, "mcp__github__create_issue", json!({})),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
        assert_eq!(
            call(&policy, &git, "mcp__slack__post", json!({})),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            call(&policy, &git, "Read", json!({"file_path": "x"})),
            (Verdict::Allow, ReasonCode::PolicyAllow)
        );
        // Not confirmed: the covered call asks, the others stay refused.
        let unconfirmed = SkillGrant {
            granted_tools: Vec::new(),
            ..git.clone()
        };
        assert_eq!(
            call(&policy, &unconfirmed, "Bash", bash("git log -3")),
            (Verdict::Ask, ReasonCode::SkillUnconfirmed)
        );
        assert_eq!(
            call(&policy, &unconfirmed, "Bash", bash("rm -rf /")),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        // The operator's deny of Bash, or of the whole MCP server, wins.
        let denied = Policy::default()
            .with_level("Bash", ToolLevel::Deny)
            .with_level("mcp__github", ToolLevel::Deny);
        assert_eq!(
            call(&denied, &git, "Bash", bash("git log -3")),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
        assert_eq!(
            call(&denied, &git, "mcp__github__create_issue", json!({})),
            (Verdict::Deny, ReasonCode::OperatorDeny)
        );
        // The grant preview of each entry.
        let preview = |entry: &str| {
            let d = decide_entry(&policy, &git, entry);
            (d.verdict, d.code)
        };
        assert_eq!(
            preview("Bash(git log:*)"),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
        assert_eq!(
            preview("mcp__github"),
            (Verdict::Allow, ReasonCode::SkillGrant)
        );
        assert_eq!(
            preview("Frobnicate((("),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
    }

    #[test]
    fn config_overrides_defaults_and_bounds_the_ttl() {
        let config = crate::config::Config::parse(
            "tools:\n  policy:\n    search_memory: deny\n    my_tool: allow\n  turnTtlMinutes: 0\n",
        )
        .expect("parse");
        let policy = Policy::from_config(&config.tools);
        assert_eq!(policy.level("search_memory"), Some(ToolLevel::Deny));
        assert_eq!(policy.level("my_tool"), Some(ToolLevel::Allow));
        assert_eq!(policy.level("fetch_url"), Some(ToolLevel::Ask));
        assert_eq!(policy.level("nope"), None);
        assert_eq!(policy.turn_ttl_ms(), MINUTE_MS);
        assert_eq!(
            Policy::from_config(&ToolsConfig::default()).turn_ttl_ms(),
            DEFAULT_TURN_TTL_MS
        );
    }

    #[test]
    fn codes_round_trip_and_match_their_serde_names() {
        for code in ReasonCode::ALL {
            assert_eq!(ReasonCode::parse(code.as_str()), Some(code));
            assert_eq!(
                serde_json::to_value(code).expect("json"),
                serde_json::json!(code.as_str())
            );
        }
        for v in [Verdict::Allow, Verdict::Ask, Verdict::Deny] {
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
        }
        let long = "x".repeat(300) + "\u{7}";
        assert_eq!(shown(&long).chars().count(), 65);
        assert!(!shown("a\nb").contains('\n'));
    }
}

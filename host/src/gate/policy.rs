//! The operator's policy and the one decision function. The gate's rules (README,
//! "Turns and the tool gate") live here and nowhere else, as a pure function of
//! (policy, the turn's skill grant, tool), so that every caller (REST, WASM
//! `tools.invoke`) gets the same answer and the rules are tested without a database or
//! a clock.

use std::collections::HashMap;

use serde::Serialize;

use super::catalog;
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

    /// The operator's level for `tool`, else the catalog's default; `None` for a tool
    /// the gate does not know.
    pub fn level(&self, tool: &str) -> Option<ToolLevel> {
        self.overrides
            .get(tool)
            .copied()
            .or_else(|| catalog::lookup(tool).map(|spec| spec.default_level))
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SkillGrant {
    /// The skill's slug.
    pub skill: String,
    /// Its `allowed-tools`, as written: the only tools the turn may call.
    pub allowed_tools: Vec<String>,
    /// Those the person granted it, for its SKILL.md as it is now (raised from ask to
    /// allow while it is invoked). The rest ask, like any tool outside a skill: a
    /// skill the person never confirmed, or whose text changed since, grants nothing.
    pub granted_tools: Vec<String>,
}

impl SkillGrant {
    pub fn from_invoked(skill: &crate::skills::InvokedSkill) -> SkillGrant {
        SkillGrant {
            skill: skill.id.slug().to_string(),
            allowed_tools: skill.allowed_tools.clone(),
            granted_tools: skill.granted_tools.clone(),
        }
    }

    /// Whether the skill lists `tool`. Exact match: an argument-scoped entry such as
    /// `run_command(git *)` lists nothing, because the gate cannot enforce the scope
    /// (it is reported at install, see [`catalog::unknown_tools`]).
    pub fn lists(&self, tool: &str) -> bool {
        !tool.contains('(') && self.allowed_tools.iter().any(|t| t == tool)
    }

    /// Whether the person granted the skill `tool`.
    pub fn grants(&self, tool: &str) -> bool {
        self.lists(tool) && self.granted_tools.iter().any(|t| t == tool)
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

/// The decision for `tool` in an open turn whose invoked skill (if any) is `skill`,
/// `approved` when the operator approved the tool for that turn.
///
/// 1. An operator deny always wins, whatever a skill lists or an approval says.
/// 2. A tool neither the catalog nor the operator names is denied.
/// 3. While a skill is invoked, only its `allowed-tools` may be called; those at ask
///    that the person granted the skill are raised to allow (for this turn: the grant
///    lives in the turn), the others ask.
/// 4. Otherwise the level applies as is, except that an approval raises ask to allow
///    (for this turn: the approval lives in the turn too).
///
/// What outside content read in the turn changes (`gate::flow`) is the gate's, on
/// top of this answer.
pub fn decide(policy: &Policy, skill: Option<&SkillGrant>, approved: bool, tool: &str) -> Decision {
    let name = shown(tool);
    let Some(level) = policy.level(tool) else {
        return Decision::deny(
            ReasonCode::UnknownTool,
            format!("`{name}` is not a tool the gate knows"),
        );
    };
    match (level, skill) {
        (ToolLevel::Deny, _) => Decision::deny(
            ReasonCode::OperatorDeny,
            format!("the operator's policy denies `{name}`"),
        ),
        (_, Some(grant)) if !grant.lists(tool) => Decision::deny(
            ReasonCode::NotInAllowedTools,
            format!(
                "skill `{}` is invoked and `{name}` is not in its allowed-tools",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Allow, _) => Decision::new(
            Verdict::Allow,
            ReasonCode::PolicyAllow,
            format!("the operator's policy allows `{name}`"),
        ),
        (ToolLevel::Ask, Some(grant)) if grant.grants(tool) => Decision::new(
            Verdict::Allow,
            ReasonCode::SkillGrant,
            format!(
                "`{name}` is in the allowed-tools of skill `{}`, invoked in this turn, which the person granted it",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Ask, _) if approved => Decision::new(
            Verdict::Allow,
            ReasonCode::Approved,
            format!("the person approved `{name}` in this turn"),
        ),
        (ToolLevel::Ask, Some(grant)) => Decision::new(
            Verdict::Ask,
            ReasonCode::SkillUnconfirmed,
            format!(
                "`{name}` is in the allowed-tools of skill `{}`, but the person has not granted it (or its SKILL.md changed since they did): ask them",
                shown(&grant.skill)
            ),
        ),
        (ToolLevel::Ask, None) => Decision::new(
            Verdict::Ask,
            ReasonCode::PolicyAsk,
            format!("the operator's policy asks the user before `{name}`"),
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
        let d = decide(policy, skill, false, tool);
        (d.verdict, d.code)
    }

    fn approved(policy: &Policy, skill: Option<&SkillGrant>, tool: &str) -> (Verdict, ReasonCode) {
        let d = decide(policy, skill, true, tool);
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
            code(&policy, None, "Read"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
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
        // Not listed: denied, even a tool the policy allows or asks for.
        assert_eq!(
            code(&policy, Some(&web), "search_memory"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        assert_eq!(
            code(&policy, Some(&web), "save_memory"),
            (Verdict::Deny, ReasonCode::NotInAllowedTools)
        );
        // Listed and already allowed: stays allowed on the policy's word.
        let both = grant("x", &["fetch_url", "search_memory"]);
        assert_eq!(
            code(&policy, Some(&both), "search_memory"),
            (Verdict::Allow, ReasonCode::PolicyAllow)
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
        let d = decide(&policy, Some(&web), false, "fetch_url");
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
            approved(&policy, None, "Read"),
            (Verdict::Deny, ReasonCode::UnknownTool)
        );
        let web = grant("web-search", &["fetch_url"]);
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
        let skill = grant("s", &["Read", "run_command(git *)"]);
        assert_eq!(
            code(&policy, Some(&skill), "Read"),
            (Verdict::Deny, ReasonCode::UnknownTool)
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
        let policy = policy.with_level("Read", ToolLevel::Ask);
        assert_eq!(
            code(&policy, Some(&skill), "Read"),
            (Verdict::Allow, ReasonCode::SkillGrant)
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

//! Turns and their grants, in memory. A turn lives minutes (one message and the
//! agent's work on it) and its grants must die with the process anyway, so nothing
//! here is persisted: a restart revokes every grant, which is the safe direction. What
//! must survive is the record of what was decided, and that is the audit log's job.
//!
//! All turns sit in one map behind one mutex. Each operation holds it for a lookup or
//! an insert, never across I/O, so many turns proceed at once; a turn's grants are
//! reached only through its own id, so two turns never see each other's. The map is
//! bounded: closed turns (ended or expired) are kept a while so that a late call gets
//! an accurate reason, swept when the map fills, and past the cap of open turns a new
//! turn is refused rather than an open one evicted.
//!
//! The person's approvals (a call, or a tool as a whole, raised from ask to allow) live
//! in the turn as well, so they end with it exactly as grants do; so does what the
//! rule against leaks needs (`gate::flow`): the destinations the turn may send to, and
//! whether it has read content from outside.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use super::error::GateError;
use super::policy::SkillGrant;
use crate::time::MINUTE_MS;

/// The most turns kept at once (open and recently closed).
pub const MAX_TURNS: usize = 10_000;
/// How long a closed turn is remembered, so that a late call says `turn-ended` or
/// `turn-expired` rather than `unknown-turn`.
pub const CLOSED_RETENTION_MS: i64 = 60 * MINUTE_MS;
/// Opens between two sweeps of long-closed turns.
const SWEEP_EVERY: u64 = 256;

const MAX_USER_CHARS: usize = 128;
/// The longest conversation id a turn keeps (also a turn's input limit, `turns::input`).
pub const MAX_CONVERSATION_CHARS: usize = 128;
/// The longest channel (and `opened_by`) a turn keeps.
pub const MAX_CHANNEL_CHARS: usize = 64;
const MAX_SKILL_CHARS: usize = 128;
const MAX_ALLOWED_TOOLS: usize = 128;
const MAX_TOOL_CHARS: usize = 128;
/// Approvals one turn keeps, at most: a person does not answer more questions than
/// this about one message.
pub const MAX_APPROVALS: usize = 64;
/// Destinations one turn keeps, at most (its message's, its skill's, approved ones).
const MAX_DESTINATIONS: usize = 192;

/// Where a turn stands at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    Open,
    /// `end` was called: grants revoked.
    Ended,
    /// Not ended within its lifetime: grants gone, every decision denied.
    Expired,
}

/// What the person approved in one turn: one call (a tool with the arguments they
/// were shown), or a tool with any arguments when the approval said so.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Approval {
    pub tool: String,
    /// A summary of the arguments approved; `null` when the approval covers the tool
    /// with any arguments for the rest of the turn (it never covers a new destination
    /// after outside content was read: only an approved call does).
    pub args_summary: Option<String>,
    /// The sha256 of the approved arguments' canonical JSON.
    #[serde(skip)]
    pub args_key: Option<[u8; 32]>,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub approved_at: i64,
}

/// An approval asked for: the tool and, for one call, its arguments (their key and
/// summary) and the host they send to, which the turn may send to from then on.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub tool: String,
    pub call: Option<ApprovedCall>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovedCall {
    pub key: [u8; 32],
    pub summary: String,
    pub host: Option<String>,
}

/// One turn: who, where, the invoked skill and its grant, the operator's approvals,
/// and its lifetime.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Turn {
    /// `turn_<ulid>`.
    pub id: String,
    pub user: String,
    pub conversation_id: Option<String>,
    pub channel: Option<String>,
    /// Who opened it, as the audit log names callers: each may hold only so many
    /// turns open at once.
    pub opened_by: String,
    /// The skill invoked in this turn, whose `allowed-tools` are the only tools that
    /// may be called in it.
    pub skill: Option<SkillGrant>,
    /// What the person approved in this turn (ask raised to allow until it closes),
    /// first approval first.
    pub approvals: Vec<Approval>,
    /// The hosts this turn may send to once it has read outside content: those the
    /// person's message names, those in the text of the skill they granted, those of
    /// calls they approved in it.
    pub destinations: Vec<String>,
    /// The first call that brought content from outside into the turn (`fetch_url
    /// {"url":...}`): from then on a send to a new destination asks the person.
    pub outside_read: Option<String>,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub opened_at: i64,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: i64,
    #[serde(with = "crate::time::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<i64>,
}

impl Turn {
    pub fn state(&self, now_ms: i64) -> TurnState {
        if self.ended_at.is_some() {
            TurnState::Ended
        } else if now_ms >= self.expires_at {
            TurnState::Expired
        } else {
            TurnState::Open
        }
    }

    /// Whether the person approved this very call: `tool` with the arguments whose
    /// key is `args_key`.
    pub fn approved_call(&self, tool: &str, args_key: &[u8; 32]) -> bool {
        self.approvals
            .iter()
            .any(|a| a.tool == tool && a.args_key.as_ref() == Some(args_key))
    }

    /// Whether the person approved `tool` with any arguments.
    pub fn approved_tool(&self, tool: &str) -> bool {
        self.approvals
            .iter()
            .any(|a| a.tool == tool && a.args_key.is_none())
    }

    /// When the turn stopped granting anything (it may still be open at `now_ms`).
    fn closed_at(&self) -> i64 {
        self.ended_at.unwrap_or(self.expires_at)
    }
}

/// What opening a turn needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewTurn {
    pub user: String,
    pub conversation_id: Option<String>,
    pub channel: Option<String>,
    /// Who opens it (see [`Turn::opened_by`]).
    pub opened_by: String,
    pub skill: Option<SkillGrant>,
    /// The hosts the turn may send to from the start (see [`Turn::destinations`]).
    pub destinations: Vec<String>,
}

impl NewTurn {
    /// Refuses what is too long or has control characters: these values come from
    /// requests and end up in reasons and the audit log.
    fn check(&self) -> Result<(), GateError> {
        check_text("user", &self.user, MAX_USER_CHARS)?;
        if !self.opened_by.is_empty() {
            check_text("opened_by", &self.opened_by, MAX_CHANNEL_CHARS)?;
        }
        if let Some(id) = &self.conversation_id {
            check_text("conversation_id", id, MAX_CONVERSATION_CHARS)?;
        }
        if let Some(channel) = &self.channel {
            check_text("channel", channel, MAX_CHANNEL_CHARS)?;
        }
        if let Some(grant) = &self.skill {
            check_text("skill", &grant.skill, MAX_SKILL_CHARS)?;
            if grant.allowed_tools.len() > MAX_ALLOWED_TOOLS {
                return Err(GateError::Invalid {
                    field: "allowed_tools",
                    reason: format!(
                        "{} entries, more than {MAX_ALLOWED_TOOLS}",
                        grant.allowed_tools.len()
                    ),
                });
            }
            for tool in &grant.allowed_tools {
                check_text("allowed_tools", tool, MAX_TOOL_CHARS)?;
            }
        }
        Ok(())
    }
}

fn check_text(field: &'static str, text: &str, max_chars: usize) -> Result<(), GateError> {
    let invalid = |reason: String| Err(GateError::Invalid { field, reason });
    if text.is_empty() {
        return invalid("is empty".into());
    }
    if text.chars().count() > max_chars {
        return invalid(format!("longer than {max_chars} characters"));
    }
    if text.chars().any(char::is_control) {
        return invalid("contains control characters".into());
    }
    Ok(())
}

/// The turns the gate knows.
pub struct Turns {
    state: Mutex<Map>,
    cap: usize,
}

struct Map {
    turns: HashMap<String, Turn>,
    opened: u64,
}

impl Default for Turns {
    fn default() -> Turns {
        Turns::with_cap(MAX_TURNS)
    }
}

impl Turns {
    pub fn with_cap(cap: usize) -> Turns {
        Turns {
            state: Mutex::new(Map {
                turns: HashMap::new(),
                opened: 0,
            }),
            cap: cap.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map> {
        // Every change is one insert or one field set: a panic cannot leave it torn.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a turn at `now_ms` that expires `ttl_ms` later, unless its opener holds
    /// `per_caller` open turns already.
    pub fn open(
        &self,
        new: NewTurn,
        now_ms: i64,
        ttl_ms: i64,
        per_caller: usize,
    ) -> Result<Turn, GateError> {
        new.check()?;
        let turn = Turn {
            id: crate::ids::new_id("turn"),
            user: new.user,
            conversation_id: new.conversation_id,
            channel: new.channel,
            opened_by: new.opened_by,
            skill: new.skill,
            approvals: Vec::new(),
            destinations: new
                .destinations
                .into_iter()
                .take(MAX_DESTINATIONS)
                .collect(),
            outside_read: None,
            opened_at: now_ms,
            expires_at: now_ms.saturating_add(ttl_ms.max(0)),
            ended_at: None,
        };
        let mut map = self.lock();
        let held = map
            .turns
            .values()
            .filter(|t| t.opened_by == turn.opened_by && t.state(now_ms) == TurnState::Open)
            .count();
        if held >= per_caller {
            return Err(GateError::CallerAtCap {
                caller: turn.opened_by,
                cap: per_caller,
            });
        }
        map.opened += 1;
        if map.opened.is_multiple_of(SWEEP_EVERY) {
            sweep(&mut map.turns, now_ms, CLOSED_RETENTION_MS);
        }
        if map.turns.len() >= self.cap {
            // Full: forget every closed turn, however recent, before refusing.
            sweep(&mut map.turns, now_ms, 0);
            if map.turns.len() >= self.cap {
                return Err(GateError::TooManyTurns {
                    open: map.turns.len(),
                });
            }
        }
        map.turns.insert(turn.id.clone(), turn.clone());
        Ok(turn)
    }

    /// Ends the turn, revoking its grants. Ending an expired turn records when it was
    /// ended; ending it twice is an error, so that a retried `end` is noticed.
    pub fn end(&self, id: &str, now_ms: i64) -> Result<Turn, GateError> {
        let mut map = self.lock();
        let turn = map
            .turns
            .get_mut(id)
            .ok_or_else(|| GateError::UnknownTurn(id.to_string()))?;
        if turn.ended_at.is_some() {
            return Err(GateError::TurnEnded(id.to_string()));
        }
        turn.ended_at = Some(now_ms);
        Ok(turn.clone())
    }

    /// Records the person's approval `asked` in the open turn `id` (once: a repeated
    /// approval keeps the first) and answers the turn and the approval. The caller has
    /// checked that the tool can be approved; this checks that the turn is still open
    /// and has room for it.
    pub fn approve(
        &self,
        id: &str,
        asked: ApprovalRequest,
        now_ms: i64,
    ) -> Result<(Turn, Approval), GateError> {
        let mut map = self.lock();
        let turn = map
            .turns
            .get_mut(id)
            .ok_or_else(|| GateError::UnknownTurn(id.to_string()))?;
        match turn.state(now_ms) {
            TurnState::Open => {}
            TurnState::Ended => return Err(GateError::TurnEnded(id.to_string())),
            TurnState::Expired => return Err(GateError::TurnExpired(id.to_string())),
        }
        let key = asked.call.as_ref().map(|call| call.key);
        let approval = match turn
            .approvals
            .iter()
            .find(|a| a.tool == asked.tool && a.args_key == key)
        {
            Some(first) => first.clone(),
            None => {
                if turn.approvals.len() >= MAX_APPROVALS {
                    return Err(GateError::Invalid {
                        field: "approvals",
                        reason: format!(
                            "the turn has {MAX_APPROVALS} approvals, the most it keeps; open another turn"
                        ),
                    });
                }
                let approval = Approval {
                    tool: asked.tool,
                    args_summary: asked.call.as_ref().map(|call| call.summary.clone()),
                    args_key: key,
                    approved_at: now_ms,
                };
                turn.approvals.push(approval.clone());
                if let Some(host) = asked.call.and_then(|call| call.host)
                    && !turn.destinations.contains(&host)
                    && turn.destinations.len() < MAX_DESTINATIONS
                {
                    turn.destinations.push(host);
                }
                approval
            }
        };
        Ok((turn.clone(), approval))
    }

    /// A copy of the turn (its state is [`Turn::state`] at the time of asking).
    pub fn get(&self, id: &str) -> Option<Turn> {
        self.lock().turns.get(id).cloned()
    }

    /// Runs `f` on the turn under the lock, without copying it: decisions use this,
    /// and record in the turn what the decision changed. `f` must not block.
    pub fn with<R>(&self, id: &str, f: impl FnOnce(Option<&mut Turn>) -> R) -> R {
        f(self.lock().turns.get_mut(id))
    }

    /// Forgets turns closed for longer than [`CLOSED_RETENTION_MS`]; returns how many.
    pub fn sweep(&self, now_ms: i64) -> usize {
        sweep(&mut self.lock().turns, now_ms, CLOSED_RETENTION_MS)
    }

    /// Turns remembered (open and recently closed).
    pub fn len(&self) -> usize {
        self.lock().turns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn sweep(turns: &mut HashMap<String, Turn>, now_ms: i64, retention_ms: i64) -> usize {
    let before = turns.len();
    turns.retain(|_, t| {
        t.state(now_ms) == TurnState::Open || t.closed_at().saturating_add(retention_ms) > now_ms
    });
    before - turns.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(user: &str) -> NewTurn {
        NewTurn {
            user: user.to_string(),
            ..NewTurn::default()
        }
    }

    #[test]
    fn a_turn_is_open_until_ended_or_expired() {
        let turns = Turns::default();
        let t = turns
            .open(new("u"), 1_000, 600_000, usize::MAX)
            .expect("open");
        assert!(t.id.starts_with("turn_"), "{}", t.id);
        assert_eq!(t.expires_at, 601_000);
        assert_eq!(t.state(600_999), TurnState::Open);
        assert_eq!(t.state(601_000), TurnState::Expired);
        let ended = turns.end(&t.id, 2_000).expect("end");
        assert_eq!(ended.state(2_000), TurnState::Ended);
        assert!(matches!(
            turns.end(&t.id, 3_000),
            Err(GateError::TurnEnded(_))
        ));
        assert!(matches!(
            turns.end("turn_nope", 3_000),
            Err(GateError::UnknownTurn(_))
        ));
        assert_eq!(turns.get(&t.id).and_then(|t| t.ended_at), Some(2_000));
    }

    fn tool(name: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: name.to_string(),
            call: None,
        }
    }

    fn call(name: &str, key: u8, host: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool: name.to_string(),
            call: Some(ApprovedCall {
                key: [key; 32],
                summary: format!("call {key}"),
                host: host.map(str::to_string),
            }),
        }
    }

    #[test]
    fn approvals_live_in_the_open_turn_only() {
        let turns = Turns::default();
        let t = turns.open(new("u"), 0, 1_000, usize::MAX).expect("open");
        let (approved, _) = turns
            .approve(&t.id, tool("fetch_url"), 10)
            .expect("approve");
        assert!(approved.approved_tool("fetch_url") && !approved.approved_tool("save_memory"));
        // Twice: one approval, the first.
        let first = Approval {
            tool: "fetch_url".into(),
            args_summary: None,
            args_key: None,
            approved_at: 10,
        };
        let (again, approval) = turns.approve(&t.id, tool("fetch_url"), 20).expect("again");
        assert_eq!(approval, first);
        assert_eq!(again.approvals, [first]);
        // Another turn does not see it.
        let other = turns.open(new("u"), 0, 1_000, usize::MAX).expect("open");
        assert!(turns.get(&other.id).is_some_and(|o| o.approvals.is_empty()));
        assert!(matches!(
            turns.approve(&t.id, tool("save_memory"), 1_000),
            Err(GateError::TurnExpired(_))
        ));
        turns.end(&other.id, 30).expect("end");
        assert!(matches!(
            turns.approve(&other.id, tool("fetch_url"), 40),
            Err(GateError::TurnEnded(_))
        ));
        assert!(matches!(
            turns.approve("turn_nope", tool("fetch_url"), 40),
            Err(GateError::UnknownTurn(_))
        ));
    }

    #[test]
    fn an_approved_call_covers_its_arguments_and_adds_its_host() {
        let turns = Turns::default();
        let t = turns.open(new("u"), 0, 1_000, usize::MAX).expect("open");
        let (turn, _) = turns
            .approve(&t.id, call("fetch_url", 1, Some("a.example")), 10)
            .expect("approve");
        assert!(turn.approved_call("fetch_url", &[1; 32]));
        assert!(!turn.approved_call("fetch_url", &[2; 32]));
        assert!(!turn.approved_tool("fetch_url"));
        assert_eq!(turn.destinations, ["a.example"]);
        for n in 2..=MAX_APPROVALS as u8 {
            turns
                .approve(&t.id, call("fetch_url", n, None), 10)
                .expect("room");
        }
        assert!(matches!(
            turns.approve(&t.id, call("fetch_url", 200, None), 10),
            Err(GateError::Invalid { .. })
        ));
    }

    #[test]
    fn refuses_bad_input() {
        let turns = Turns::default();
        for bad in [
            new(""),
            new("a\nb"),
            new(&"u".repeat(200)),
            NewTurn {
                channel: Some("x".repeat(65)),
                ..new("u")
            },
            NewTurn {
                skill: Some(SkillGrant {
                    skill: "s".into(),
                    allowed_tools: vec!["t".into(); 129],
                    granted_tools: Vec::new(),
                }),
                ..new("u")
            },
        ] {
            assert!(
                matches!(
                    turns.open(bad, 0, 1, usize::MAX),
                    Err(GateError::Invalid { .. })
                ),
                "accepted"
            );
        }
        assert!(turns.is_empty());
    }

    #[test]
    fn one_caller_holds_only_so_many_open_turns_and_the_others_still_open_theirs() {
        let turns = Turns::default();
        let by = |caller: &str| NewTurn {
            opened_by: caller.to_string(),
            ..new("u")
        };
        let first = turns.open(by("agent"), 0, 1_000, 2).expect("first");
        turns.open(by("agent"), 0, 1_000, 2).expect("second");
        assert!(matches!(
            turns.open(by("agent"), 0, 1_000, 2),
            Err(GateError::CallerAtCap { cap: 2, .. })
        ));
        turns
            .open(by("channel:telegram"), 0, 1_000, 2)
            .expect("another caller");
        // An ended (or expired) turn no longer counts.
        turns.end(&first.id, 10).expect("end");
        turns.open(by("agent"), 10, 1_000, 2).expect("room again");
        assert!(
            turns.open(by("agent"), 2_000, 1_000, 2).is_ok(),
            "expired ones free it"
        );
    }

    #[test]
    fn bounded_closed_turns_are_swept_and_open_ones_are_never_evicted() {
        let turns = Turns::with_cap(3);
        let a = turns.open(new("u"), 0, 10, usize::MAX).expect("a");
        let _b = turns.open(new("u"), 0, 1_000, usize::MAX).expect("b");
        let _c = turns.open(new("u"), 0, 1_000, usize::MAX).expect("c");
        // Full of open turns: refused, nothing evicted.
        assert!(matches!(
            turns.open(new("u"), 5, 1_000, usize::MAX),
            Err(GateError::TooManyTurns { open: 3 })
        ));
        assert!(turns.get(&a.id).is_some());
        // `a` has expired: it makes room.
        let d = turns.open(new("u"), 20, 1_000, usize::MAX).expect("d");
        assert!(turns.get(&a.id).is_none());
        assert!(turns.get(&d.id).is_some());
        assert_eq!(turns.len(), 3);
        // Closed turns are remembered for the retention time, then swept.
        turns.end(&d.id, 30).expect("end");
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS - 1), 0);
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS), 1);
    }
}

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
//! The operator's approvals (tools raised from ask to allow) live in the turn as well,
//! so they end with it exactly as grants do.

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
const MAX_CONVERSATION_CHARS: usize = 128;
const MAX_CHANNEL_CHARS: usize = 64;
const MAX_SKILL_CHARS: usize = 128;
const MAX_ALLOWED_TOOLS: usize = 128;
const MAX_TOOL_CHARS: usize = 128;

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

/// A tool the operator approved for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Approval {
    pub tool: String,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub approved_at: i64,
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
    /// The skill invoked in this turn, whose `allowed-tools` are the only tools that
    /// may be called in it.
    pub skill: Option<SkillGrant>,
    /// Tools the operator approved for this turn (ask raised to allow until it
    /// closes), first approval first.
    pub approvals: Vec<Approval>,
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

    /// Whether the operator approved `tool` for this turn.
    pub fn approved(&self, tool: &str) -> bool {
        self.approvals.iter().any(|a| a.tool == tool)
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
    pub skill: Option<SkillGrant>,
}

impl NewTurn {
    /// Refuses what is too long or has control characters: these values come from
    /// requests and end up in reasons and the audit log.
    fn check(&self) -> Result<(), GateError> {
        check_text("user", &self.user, MAX_USER_CHARS)?;
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

    /// Opens a turn at `now_ms` that expires `ttl_ms` later.
    pub fn open(&self, new: NewTurn, now_ms: i64, ttl_ms: i64) -> Result<Turn, GateError> {
        new.check()?;
        let turn = Turn {
            id: crate::ids::new_id("turn"),
            user: new.user,
            conversation_id: new.conversation_id,
            channel: new.channel,
            skill: new.skill,
            approvals: Vec::new(),
            opened_at: now_ms,
            expires_at: now_ms.saturating_add(ttl_ms.max(0)),
            ended_at: None,
        };
        let mut map = self.lock();
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

    /// Records the operator's approval of `tool` in the open turn `id` (once: a
    /// repeated approval keeps the first) and answers the turn and the approval. The
    /// caller has checked that the tool can be approved; this checks only that the
    /// turn is still open.
    pub fn approve(
        &self,
        id: &str,
        tool: &str,
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
        let approval = match turn.approvals.iter().find(|a| a.tool == tool) {
            Some(first) => first.clone(),
            None => {
                let approval = Approval {
                    tool: tool.to_string(),
                    approved_at: now_ms,
                };
                turn.approvals.push(approval.clone());
                approval
            }
        };
        Ok((turn.clone(), approval))
    }

    /// A copy of the turn (its state is [`Turn::state`] at the time of asking).
    pub fn get(&self, id: &str) -> Option<Turn> {
        self.lock().turns.get(id).cloned()
    }

    /// Runs `f` on the turn under the lock, without copying it: decisions use this.
    /// `f` must not block.
    pub fn with<R>(&self, id: &str, f: impl FnOnce(Option<&Turn>) -> R) -> R {
        f(self.lock().turns.get(id))
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
        let t = turns.open(new("u"), 1_000, 600_000).expect("open");
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

    #[test]
    fn approvals_live_in_the_open_turn_only() {
        let turns = Turns::default();
        let t = turns.open(new("u"), 0, 1_000).expect("open");
        let (approved, _) = turns.approve(&t.id, "fetch_url", 10).expect("approve");
        assert!(approved.approved("fetch_url") && !approved.approved("save_memory"));
        // Twice: one approval, the first.
        let first = Approval {
            tool: "fetch_url".into(),
            approved_at: 10,
        };
        let (again, approval) = turns.approve(&t.id, "fetch_url", 20).expect("again");
        assert_eq!(approval, first);
        assert_eq!(again.approvals, [first]);
        // Another turn does not see it.
        let other = turns.open(new("u"), 0, 1_000).expect("open");
        assert!(turns.get(&other.id).is_some_and(|o| o.approvals.is_empty()));
        assert!(matches!(
            turns.approve(&t.id, "save_memory", 1_000),
            Err(GateError::TurnExpired(_))
        ));
        turns.end(&other.id, 30).expect("end");
        assert!(matches!(
            turns.approve(&other.id, "fetch_url", 40),
            Err(GateError::TurnEnded(_))
        ));
        assert!(matches!(
            turns.approve("turn_nope", "fetch_url", 40),
            Err(GateError::UnknownTurn(_))
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
                }),
                ..new("u")
            },
        ] {
            assert!(
                matches!(turns.open(bad, 0, 1), Err(GateError::Invalid { .. })),
                "accepted"
            );
        }
        assert!(turns.is_empty());
    }

    #[test]
    fn bounded_closed_turns_are_swept_and_open_ones_are_never_evicted() {
        let turns = Turns::with_cap(3);
        let a = turns.open(new("u"), 0, 10).expect("a");
        let _b = turns.open(new("u"), 0, 1_000).expect("b");
        let _c = turns.open(new("u"), 0, 1_000).expect("c");
        // Full of open turns: refused, nothing evicted.
        assert!(matches!(
            turns.open(new("u"), 5, 1_000),
            Err(GateError::TooManyTurns { open: 3 })
        ));
        assert!(turns.get(&a.id).is_some());
        // `a` has expired: it makes room.
        let d = turns.open(new("u"), 20, 1_000).expect("d");
        assert!(turns.get(&a.id).is_none());
        assert!(turns.get(&d.id).is_some());
        assert_eq!(turns.len(), 3);
        // Closed turns are remembered for the retention time, then swept.
        turns.end(&d.id, 30).expect("end");
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS - 1), 0);
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS), 1);
    }
}

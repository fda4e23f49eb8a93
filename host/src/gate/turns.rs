//! Turns and their grants, in the gate's database (`turns`, beside the audit log's
//! `decisions`): on PostgreSQL every daemon of a team sees the same turns (issue 32),
//! and on either backend a turn outlives a restart of the daemon for the rest of its
//! lifetime (10 minutes by default), as it would outlive a restart of any one daemon
//! of several. The grants never outlive the turn: ending or expiry revokes them, and
//! the audit log keeps the record of what was decided.
//!
//! A decision reads its turn and records what it changed (the approvals, the rule
//! against leaks' destinations and outside read, `gate::flow`) in the transaction that
//! writes its audit row: [`locked`] holds the row until it commits, so two daemons
//! deciding in one turn at once take turns, and a decision that cannot be recorded
//! changes nothing. Every read and write acts for the turn's person (row-level
//! security on PostgreSQL); only opening, which counts a caller's turns across people,
//! and the sweep act for the host.
//!
//! The table is bounded: closed turns (ended or expired) are kept a while so that a
//! late call gets an accurate reason, swept when the table fills, and past the cap of
//! open turns a new turn is refused rather than an open one evicted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::error::GateError;
use super::policy::SkillGrant;
use crate::sql::{Actor, Backend, Database, Row, SqlError, Tx};
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

    /// Records the person's approval `asked` in this turn (once: a repeated approval
    /// keeps the first) and answers it. The caller has checked that the turn is open
    /// and that the tool can be approved; this checks that the turn has room for it.
    pub(super) fn approve(
        &mut self,
        asked: ApprovalRequest,
        now_ms: i64,
    ) -> Result<Approval, GateError> {
        let key = asked.call.as_ref().map(|call| call.key);
        if let Some(first) = self
            .approvals
            .iter()
            .find(|a| a.tool == asked.tool && a.args_key == key)
        {
            return Ok(first.clone());
        }
        if self.approvals.len() >= MAX_APPROVALS {
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
        self.approvals.push(approval.clone());
        if let Some(host) = asked.call.and_then(|call| call.host)
            && !self.destinations.contains(&host)
            && self.destinations.len() < MAX_DESTINATIONS
        {
            self.destinations.push(host);
        }
        Ok(approval)
    }

    /// The error for acting in this turn unless it is open at `now_ms`.
    pub(super) fn require_open(&self, now_ms: i64) -> Result<(), GateError> {
        match self.state(now_ms) {
            TurnState::Open => Ok(()),
            TurnState::Ended => Err(GateError::TurnEnded(self.id.clone())),
            TurnState::Expired => Err(GateError::TurnExpired(self.id.clone())),
        }
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

/// The turns the gate knows, in its database.
pub struct Turns {
    db: Arc<Database>,
    cap: usize,
    /// Turns this daemon opened, for the sweep's rhythm.
    opened: AtomicU64,
}

impl Turns {
    /// The turns in `db` (the gate's database, migrated), at most `cap` kept at once.
    pub fn new(db: Arc<Database>, cap: usize) -> Turns {
        Turns {
            db,
            cap: cap.max(1),
            opened: AtomicU64::new(0),
        }
    }

    /// The same turns, at most `cap` kept at once.
    pub fn with_cap(self, cap: usize) -> Turns {
        Turns {
            cap: cap.max(1),
            ..self
        }
    }

    /// Opens a turn at `now_ms` that expires `ttl_ms` later, unless its opener holds
    /// `per_caller` open turns already. It acts for the host: a caller's turns (the
    /// agent's token serves many people) and the table's are counted across people.
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
        let sweep_now =
            (self.opened.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(SWEEP_EVERY);
        self.db.write(Actor::System, |tx| {
            // Two daemons opening for one caller at once count one after the other.
            tx.lock_key("engram.turn-opener", &turn.opened_by)?;
            let held: i64 = tx.query_one(
                "SELECT count(*) FROM turns WHERE opened_by = ?1 AND closes_at > ?2 AND ended_at IS NULL",
                &[(&turn.opened_by).into(), now_ms.into()],
                |row| row.get(0),
            )?;
            if held as usize >= per_caller {
                return Err(GateError::CallerAtCap {
                    caller: turn.opened_by.clone(),
                    cap: per_caller,
                });
            }
            if sweep_now {
                sweep(tx, now_ms, CLOSED_RETENTION_MS)?;
            }
            if count(tx)? >= self.cap {
                // Full: forget every closed turn, however recent, before refusing.
                sweep(tx, now_ms, 0)?;
                let kept = count(tx)?;
                if kept >= self.cap {
                    return Err(GateError::TooManyTurns { open: kept });
                }
            }
            tx.execute(
                "INSERT INTO turns (id, user_id, opened_by, opened_at, expires_at, ended_at, closes_at, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?5, ?6)",
                &[
                    (&turn.id).into(),
                    (&turn.user).into(),
                    (&turn.opened_by).into(),
                    turn.opened_at.into(),
                    turn.expires_at.into(),
                    (&body_of(&turn)?).into(),
                ],
            )?;
            Ok(())
        })?;
        Ok(turn)
    }

    /// Ends `user`'s turn, revoking its grants. Ending an expired turn records when
    /// it was ended; ending it twice is an error, so that a retried `end` is noticed.
    pub fn end(&self, id: &str, user: &str, now_ms: i64) -> Result<Turn, GateError> {
        self.db.write(Actor::User(user), |tx| {
            let mut turn =
                locked(tx, id, user)?.ok_or_else(|| GateError::UnknownTurn(id.to_string()))?;
            if turn.ended_at.is_some() {
                return Err(GateError::TurnEnded(id.to_string()));
            }
            turn.ended_at = Some(now_ms);
            save(tx, &turn)?;
            Ok(turn)
        })
    }

    /// `user`'s turn `id` as it stands (its state is [`Turn::state`] at the time of
    /// asking); `None` if unknown, long closed, or another person's.
    pub fn get(&self, id: &str, user: &str) -> Result<Option<Turn>, GateError> {
        Ok(self.db.read(Actor::User(user), |tx| {
            tx.query_opt(&select(tx, false), &[id.into(), user.into()], turn_from_row)
        })?)
    }

    /// Whether a turn `id` exists for anyone: what tells a plugin or a channel that
    /// the turn it named is another person's.
    pub fn exists(&self, id: &str) -> Result<bool, GateError> {
        Ok(self.db.read(Actor::System, |tx| {
            tx.query_opt(
                "SELECT 1 FROM turns WHERE id = ?1",
                &[id.into()],
                |_| Ok(()),
            )
            .map(|found| found.is_some())
        })?)
    }

    /// Forgets turns closed for longer than [`CLOSED_RETENTION_MS`]; returns how many.
    pub fn sweep(&self, now_ms: i64) -> Result<usize, GateError> {
        self.db
            .write(Actor::System, |tx| sweep(tx, now_ms, CLOSED_RETENTION_MS))
    }

    /// Turns kept (open and recently closed), everyone's.
    pub fn count(&self) -> Result<usize, GateError> {
        self.db.read(Actor::System, count)
    }
}

/// Within a write transaction acting for `user`: their turn `id`, locked until the
/// transaction ends (SQLite's write transaction holds the whole file already).
pub(super) fn locked(tx: &Tx<'_>, id: &str, user: &str) -> Result<Option<Turn>, SqlError> {
    tx.query_opt(&select(tx, true), &[id.into(), user.into()], turn_from_row)
}

/// Writes back what a decision, an approval or the end changed in `turn`.
pub(super) fn save(tx: &Tx<'_>, turn: &Turn) -> Result<(), GateError> {
    tx.execute(
        "UPDATE turns SET ended_at = ?2, closes_at = ?3, body = ?4 WHERE id = ?1",
        &[
            (&turn.id).into(),
            turn.ended_at.into(),
            turn.closed_at().into(),
            (&body_of(turn)?).into(),
        ],
    )?;
    Ok(())
}

fn select(tx: &Tx<'_>, for_update: bool) -> String {
    let lock = if for_update && tx.backend() == Backend::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    format!(
        "SELECT id, user_id, opened_by, opened_at, expires_at, ended_at, body FROM turns WHERE id = ?1 AND user_id = ?2{lock}"
    )
}

fn count(tx: &Tx<'_>) -> Result<usize, GateError> {
    let n: i64 = tx.query_one("SELECT count(*) FROM turns", &[], |row| row.get(0))?;
    Ok(n as usize)
}

fn sweep(tx: &Tx<'_>, now_ms: i64, retention_ms: i64) -> Result<usize, GateError> {
    // An open turn closes after now, so it is never older than the retention.
    let deleted = tx.execute(
        "DELETE FROM turns WHERE closes_at <= ?1",
        &[now_ms.saturating_sub(retention_ms).into()],
    )?;
    Ok(deleted as usize)
}

/// What a turn holds beyond its columns, as the `body` column keeps it (JSON).
#[derive(Serialize, Deserialize)]
struct Body {
    conversation_id: Option<String>,
    channel: Option<String>,
    skill: Option<SkillGrant>,
    approvals: Vec<StoredApproval>,
    destinations: Vec<String>,
    outside_read: Option<String>,
}

/// An approval as stored: with the key of the arguments it covers, which the wire
/// form of [`Approval`] leaves out.
#[derive(Serialize, Deserialize)]
struct StoredApproval {
    tool: String,
    args_summary: Option<String>,
    /// Hex of the sha256 of the approved arguments' canonical JSON.
    args_key: Option<String>,
    approved_at: i64,
}

fn body_of(turn: &Turn) -> Result<String, GateError> {
    let body = Body {
        conversation_id: turn.conversation_id.clone(),
        channel: turn.channel.clone(),
        skill: turn.skill.clone(),
        approvals: turn
            .approvals
            .iter()
            .map(|a| StoredApproval {
                tool: a.tool.clone(),
                args_summary: a.args_summary.clone(),
                args_key: a.args_key.map(hex::encode),
                approved_at: a.approved_at,
            })
            .collect(),
        destinations: turn.destinations.clone(),
        outside_read: turn.outside_read.clone(),
    };
    serde_json::to_string(&body).map_err(|e| GateError::Invalid {
        field: "turn",
        reason: format!("cannot be stored: {e}"),
    })
}

fn turn_from_row(row: &Row<'_>) -> Result<Turn, SqlError> {
    let text: String = row.get(6)?;
    let convert = |reason: String| SqlError::Convert { column: 6, reason };
    let body: Body = serde_json::from_str(&text).map_err(|e| {
        convert(format!(
            "a turn's body that is not what the gate wrote: {e}"
        ))
    })?;
    let approvals = body
        .approvals
        .into_iter()
        .map(|a| {
            let args_key = match a.args_key {
                None => None,
                Some(hex) => Some(
                    hex::decode(&hex)
                        .ok()
                        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                        .ok_or_else(|| {
                            convert("an approval's key that is not 32 bytes of hex".into())
                        })?,
                ),
            };
            Ok(Approval {
                tool: a.tool,
                args_summary: a.args_summary,
                args_key,
                approved_at: a.approved_at,
            })
        })
        .collect::<Result<Vec<_>, SqlError>>()?;
    Ok(Turn {
        id: row.get(0)?,
        user: row.get(1)?,
        opened_by: row.get(2)?,
        opened_at: row.get(3)?,
        expires_at: row.get(4)?,
        ended_at: row.get(5)?,
        conversation_id: body.conversation_id,
        channel: body.channel,
        skill: body.skill,
        approvals,
        destinations: body.destinations,
        outside_read: body.outside_read,
    })
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

    /// Turns in a fresh gate database in memory.
    fn turns() -> Turns {
        let mut conn = rusqlite::Connection::open_in_memory().expect("sqlite");
        super::super::schema::migrate(&mut conn).expect("migrate");
        Turns::new(Arc::new(Database::sqlite(conn)), MAX_TURNS)
    }

    fn stored(turns: &Turns, turn: &Turn) -> Turn {
        turns
            .get(&turn.id, &turn.user)
            .expect("read")
            .expect("kept")
    }

    #[test]
    fn a_turn_is_open_until_ended_or_expired() {
        let turns = turns();
        let t = turns
            .open(new("u"), 1_000, 600_000, usize::MAX)
            .expect("open");
        assert!(t.id.starts_with("turn_"), "{}", t.id);
        assert_eq!(t.expires_at, 601_000);
        assert_eq!(t.state(600_999), TurnState::Open);
        assert_eq!(t.state(601_000), TurnState::Expired);
        assert_eq!(stored(&turns, &t), t);
        assert!(matches!(
            turns.end(&t.id, "someone else", 2_000),
            Err(GateError::UnknownTurn(_))
        ));
        let ended = turns.end(&t.id, "u", 2_000).expect("end");
        assert_eq!(ended.state(2_000), TurnState::Ended);
        assert!(matches!(
            turns.end(&t.id, "u", 3_000),
            Err(GateError::TurnEnded(_))
        ));
        assert!(matches!(
            turns.end("turn_nope", "u", 3_000),
            Err(GateError::UnknownTurn(_))
        ));
        assert_eq!(stored(&turns, &t).ended_at, Some(2_000));
        assert!(turns.get(&t.id, "v").expect("read").is_none());
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
    fn a_turn_is_stored_whole_approvals_and_flow_included() {
        let turns = turns();
        let mut t = turns
            .open(
                NewTurn {
                    conversation_id: Some("c".into()),
                    channel: Some("telegram".into()),
                    opened_by: "agent".into(),
                    skill: Some(SkillGrant {
                        skill: "web".into(),
                        allowed_tools: vec!["fetch_url".into()],
                        granted_tools: vec!["fetch_url".into()],
                    }),
                    destinations: vec!["a.example".into()],
                    ..new("u")
                },
                0,
                1_000,
                usize::MAX,
            )
            .expect("open");
        t.approve(tool("save_memory"), 5).expect("approve");
        t.approve(call("fetch_url", 7, Some("b.example")), 6)
            .expect("approve");
        t.outside_read = Some("fetch_url {}".into());
        turns
            .db
            .write(Actor::User("u"), |tx| save(tx, &t))
            .expect("save");
        let back = stored(&turns, &t);
        assert_eq!(back, t);
        assert!(back.approved_call("fetch_url", &[7; 32]));
        assert!(back.approved_tool("save_memory"));
        assert_eq!(back.destinations, ["a.example", "b.example"]);
    }

    #[test]
    fn an_approval_is_kept_once_and_an_approved_call_adds_its_host() {
        let turns = turns();
        let mut t = turns.open(new("u"), 0, 1_000, usize::MAX).expect("open");
        let first = t.approve(tool("fetch_url"), 10).expect("approve");
        assert!(t.approved_tool("fetch_url") && !t.approved_tool("save_memory"));
        // Twice: one approval, the first.
        assert_eq!(t.approve(tool("fetch_url"), 20).expect("again"), first);
        assert_eq!(t.approvals, [first]);
        t.approve(call("fetch_url", 1, Some("a.example")), 10)
            .expect("approve");
        assert!(t.approved_call("fetch_url", &[1; 32]));
        assert!(!t.approved_call("fetch_url", &[2; 32]));
        assert_eq!(t.destinations, ["a.example"]);
        for n in 2..MAX_APPROVALS as u8 {
            t.approve(call("fetch_url", n, None), 10).expect("room");
        }
        assert!(matches!(
            t.approve(call("fetch_url", 200, None), 10),
            Err(GateError::Invalid { .. })
        ));
        assert!(t.require_open(999).is_ok());
        assert!(matches!(
            t.require_open(1_000),
            Err(GateError::TurnExpired(_))
        ));
        t.ended_at = Some(500);
        assert!(matches!(t.require_open(600), Err(GateError::TurnEnded(_))));
    }

    #[test]
    fn refuses_bad_input() {
        let turns = turns();
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
        assert_eq!(turns.count().expect("count"), 0);
    }

    #[test]
    fn a_stored_body_the_gate_did_not_write_is_an_error_not_a_grant() {
        let turns = turns();
        let t = turns.open(new("u"), 0, 1_000, usize::MAX).expect("open");
        turns
            .db
            .write(Actor::System, |tx| {
                tx.execute("UPDATE turns SET body = '{\"skill\": 1}'", &[])
            })
            .expect("edit");
        assert!(turns.get(&t.id, "u").is_err());
    }

    #[test]
    fn one_caller_holds_only_so_many_open_turns_and_the_others_still_open_theirs() {
        let turns = turns();
        let by = |caller: &str, user: &str| NewTurn {
            opened_by: caller.to_string(),
            ..new(user)
        };
        // The cap counts the caller's turns whoever they are for.
        let first = turns.open(by("agent", "u"), 0, 1_000, 2).expect("first");
        turns.open(by("agent", "v"), 0, 1_000, 2).expect("second");
        assert!(matches!(
            turns.open(by("agent", "w"), 0, 1_000, 2),
            Err(GateError::CallerAtCap { cap: 2, .. })
        ));
        turns
            .open(by("channel:telegram", "u"), 0, 1_000, 2)
            .expect("another caller");
        // An ended (or expired) turn no longer counts.
        turns.end(&first.id, "u", 10).expect("end");
        turns
            .open(by("agent", "u"), 10, 1_000, 2)
            .expect("room again");
        assert!(
            turns.open(by("agent", "u"), 2_000, 1_000, 2).is_ok(),
            "expired ones free it"
        );
    }

    #[test]
    fn bounded_closed_turns_are_swept_and_open_ones_are_never_evicted() {
        let turns = turns().with_cap(3);
        let a = turns.open(new("u"), 0, 10, usize::MAX).expect("a");
        let _b = turns.open(new("u"), 0, 1_000, usize::MAX).expect("b");
        let _c = turns.open(new("u"), 0, 1_000, usize::MAX).expect("c");
        // Full of open turns: refused, nothing evicted.
        assert!(matches!(
            turns.open(new("u"), 5, 1_000, usize::MAX),
            Err(GateError::TooManyTurns { open: 3 })
        ));
        assert!(turns.get(&a.id, "u").expect("read").is_some());
        // `a` has expired: it makes room.
        let d = turns.open(new("u"), 20, 1_000, usize::MAX).expect("d");
        assert!(turns.get(&a.id, "u").expect("read").is_none());
        assert!(turns.get(&d.id, "u").expect("read").is_some());
        assert_eq!(turns.count().expect("count"), 3);
        // Closed turns are remembered for the retention time, then swept.
        turns.end(&d.id, "u", 30).expect("end");
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS - 1).expect("sweep"), 0);
        assert_eq!(turns.sweep(30 + CLOSED_RETENTION_MS).expect("sweep"), 1);
    }
}

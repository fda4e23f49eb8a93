//! How many memories the agent may delete: at most `memory.agentDeletes.perHour` for
//! one user in any hour (a sliding window), so that an agent deleting every memory one
//! by one is stopped after a few, each of which the person can restore
//! (`brain/dismissal.rs`). The person's deletes never come here.
//!
//! The window is the audit log itself: the agent's allowed deletes of the last hour
//! are its rows with code `agent-delete`, counted in the transaction that records the
//! next one. So every daemon on one database counts the same deletes, and a restart
//! forgets none. (The log keeps the newest 100,000 decisions: an hour with more than
//! that, every one of them a tool call, would count fewer deletes than were made.)

use super::AGENT_DELETE;
use super::policy::ReasonCode;
use crate::sql::{SqlError, Tx};
use crate::time::HOUR_MS;

/// The agent has used up its deletes for the user for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// Milliseconds until the oldest delete of the window leaves it (an hour with a
    /// limit of 0).
    pub retry_after_ms: i64,
}

/// Whether the agent may delete one more of `user`'s memories at `now`: yes if fewer
/// than `per_hour` allowed deletes were recorded for them in the hour before, else
/// when one will be possible. `tx` acts for `user` and records the answer after this;
/// on PostgreSQL it first takes the person's delete lock, so that two daemons cannot
/// both grant the last one.
pub(super) fn take(
    tx: &Tx<'_>,
    user: &str,
    now: i64,
    per_hour: u32,
) -> Result<Result<(), Full>, SqlError> {
    tx.lock_key("engram.agent-delete", user)?;
    let (count, oldest): (i64, Option<i64>) = tx.query_one(
        "SELECT count(*), min(at) FROM decisions
         WHERE user_id = ?1 AND tool = ?2 AND reason_code = ?3 AND at > ?4",
        &[
            user.into(),
            AGENT_DELETE.into(),
            ReasonCode::AgentDelete.as_str().into(),
            (now - HOUR_MS).into(),
        ],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if count >= i64::from(per_hour) {
        return Ok(Err(Full {
            retry_after_ms: oldest.map_or(HOUR_MS, |oldest| oldest + HOUR_MS - now),
        }));
    }
    Ok(Ok(()))
}

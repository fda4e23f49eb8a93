//! One pass of the scheduler: every due schedule is run once, its outcome recorded,
//! then announced on the event bus (after the commit, as every event is).
//!
//! Opening the turn is the caller's: the daemon passes a function that goes through
//! `POST /api/turns`'s code path (`api::turns::open_scheduled_turn`), so this module
//! stays a service that never calls the API layer, and tests pass a fake.

use serde_json::json;

use super::{Outcome, Schedule, ScheduleError, Schedules};
use crate::events::{Event, EventBus, EventKind};

/// Schedules run in one pass at most (the rest wait for the next pass).
pub const MAX_PER_PASS: usize = 100;

/// Why a run could not open its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Stable: `skill-missing`, `skill-inactive`, or the turn's problem code.
    pub code: String,
    pub reason: String,
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pass {
    pub fired: usize,
    pub failed: usize,
}

/// Runs every schedule due now. `open` opens the turn of one run and answers its id.
pub fn run_due(
    schedules: &Schedules,
    events: &EventBus,
    open: impl Fn(&Schedule) -> Result<String, Failure>,
) -> Result<Pass, ScheduleError> {
    let now = schedules.now_ms();
    let mut pass = Pass::default();
    for schedule in schedules.due(now, MAX_PER_PASS)? {
        let result = open(&schedule);
        let outcome = match &result {
            Ok(turn_id) => Outcome::Fired {
                turn_id: turn_id.clone(),
            },
            Err(failure) => Outcome::Failed {
                reason: failure.reason.clone(),
            },
        };
        // A store that cannot record the run must not stop the other schedules.
        if let Err(e) = schedules.record(&schedule, &outcome, now) {
            tracing::error!(schedule = %schedule.id, "cannot record a scheduled run: {e}");
        }
        let (kind, data) = match result {
            Ok(turn_id) => {
                pass.fired += 1;
                (
                    EventKind::ScheduleFired,
                    json!({"schedule_id": schedule.id, "skill": schedule.skill, "turn_id": turn_id}),
                )
            }
            Err(failure) => {
                pass.failed += 1;
                tracing::warn!(schedule = %schedule.id, skill = %schedule.skill, code = %failure.code, "scheduled run failed: {}", failure.reason);
                (
                    EventKind::ScheduleFailed,
                    json!({"schedule_id": schedule.id, "skill": schedule.skill, "code": failure.code, "reason": failure.reason}),
                )
            }
        };
        events.publish(Event {
            kind,
            user: schedule.user.clone(),
            data,
        });
    }
    Ok(pass)
}

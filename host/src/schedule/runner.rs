//! One pass of the scheduler: every due schedule is claimed (so that of the daemons
//! sharing the store only one runs it), run once, its outcome recorded, then announced
//! on the event bus (after the commit, as every event is).
//!
//! A run opens its turn through the turn service, as `POST /api/turns` does, with the
//! schedule's skill forced ([`open_run`]); [`run_due`] takes that as a function so
//! that tests can pass a fake.

use serde_json::json;

use super::{Outcome, Schedule, ScheduleError, Schedules};
use crate::described::Described;
use crate::events::{Event, EventBus, EventKind};
use crate::turns::input::{Channel, Text, User};
use crate::turns::{Invoke, Message, TurnError, TurnService};

/// The channel a scheduled run's turn is opened on.
pub const CHANNEL: &str = "schedule";

/// Schedules run in one pass at most (the rest wait for the next pass).
pub const MAX_PER_PASS: usize = 100;

/// Why a run could not open its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Stable: `skill-missing`, `skill-inactive`, or the turn's problem code.
    pub code: String,
    pub reason: String,
}

impl From<TurnError> for Failure {
    /// A skill gone or deactivated since the schedule was made is the schedule's
    /// failure (`skill-missing`, `skill-inactive`); anything else keeps the turn's code.
    /// The host's own failures are logged here and reported without their details.
    fn from(e: TurnError) -> Failure {
        let described = e.to_wire();
        let code = match &e {
            TurnError::SkillMissing(_) => "skill-missing",
            TurnError::SkillInactive(_) => "skill-inactive",
            _ => described.code,
        };
        let reason = if described.is_internal() {
            described.detail
        } else {
            e.to_string()
        };
        Failure {
            code: code.to_string(),
            reason,
        }
    }
}

/// Opens the turn of one run: the schedule's input as the message of its user, the
/// schedule's skill invoked explicitly, channel [`CHANNEL`]. Answers the turn's id.
pub fn open_run(turns: &TurnService, schedule: &Schedule) -> Result<String, Failure> {
    let message = Message {
        user: User::parse(schedule.user.as_str())?,
        text: Text::parse("input", schedule.input.as_str())?,
        conversation_id: None,
        channel: Some(Channel::parse(CHANNEL)?),
        name: None,
        recall: true,
        opened_by: CHANNEL.to_string(),
    };
    let opened = turns.open(message, Invoke::Skill(&schedule.skill))?;
    Ok(opened.turn_id)
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pass {
    pub fired: usize,
    pub failed: usize,
}

/// Runs every schedule due now that no other daemon sharing the store ran first.
/// `open` opens the turn of one run and answers its id. A claim that fails ends the
/// pass: nothing of that run happened, and the next pass tries again.
pub fn run_due(
    schedules: &Schedules,
    events: &EventBus,
    open: impl Fn(&Schedule) -> Result<String, Failure>,
) -> Result<Pass, ScheduleError> {
    let now = schedules.now_ms()?;
    let mut pass = Pass::default();
    for due in schedules.due(now, MAX_PER_PASS)? {
        let Some(claim) = schedules.claim(&due, now)? else {
            continue;
        };
        let schedule = &claim.schedule;
        let result = open(schedule);
        let outcome = match &result {
            Ok(turn_id) => Outcome::Fired {
                turn_id: turn_id.clone(),
            },
            Err(failure) => Outcome::Failed {
                reason: failure.reason.clone(),
            },
        };
        // A store that cannot record the run must not stop the other schedules.
        if let Err(e) = schedules.record(&claim, &outcome) {
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

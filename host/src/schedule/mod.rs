//! Scheduled skill invocations (README, "Schedules"). A schedule names a skill, an
//! input, and an interval or a 5-field cron expression evaluated in UTC ([`cron`]); the
//! daemon's scheduler loop ([`runner`]) opens a turn with the skill invoked whenever
//! one is due, through the same code path as `POST /api/turns`.
//!
//! Schedules live in `{data_dir}/schedule/schedules.db` (SQLite, WAL, versioned
//! schema): firing updates a row every time, which a transaction does atomically and
//! which a rewritten JSON file would do only by rewriting everything. Time is the
//! injected [`Clock`](crate::time::Clock), so due computation is tested by
//! moving a clock.

pub mod cron;
pub mod due;
pub mod runner;
pub mod schema;
pub mod store;

pub use store::{
    NewCadence, NewSchedule, Outcome, Schedule, ScheduleError, SchedulePage, Schedules,
};

#[cfg(test)]
mod tests;

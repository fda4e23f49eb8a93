//! When a schedule runs: pure arithmetic on milliseconds, no clock of its own.

use super::cron::Cron;

/// The shortest interval, in seconds.
pub const MIN_EVERY_SECS: u64 = 60;
/// The longest interval, in seconds (a leap year).
pub const MAX_EVERY_SECS: u64 = 366 * 86_400;

/// `every` if it is an accepted interval (seconds), else why not.
pub fn check_every(every: u64) -> Result<u64, String> {
    if !(MIN_EVERY_SECS..=MAX_EVERY_SECS).contains(&every) {
        return Err(format!(
            "must be {MIN_EVERY_SECS} to {MAX_EVERY_SECS} seconds, not {every}"
        ));
    }
    Ok(every)
}

/// How often a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cadence {
    /// Every so many seconds, on the grid of the first run.
    Every(u64),
    /// At the minutes a cron expression matches, in UTC.
    Cron(Cron),
}

impl Cadence {
    /// The first run of a new schedule created at `now`: for an interval, `start_at`
    /// or at once (see [`first_run`]); for a cron expression, the first minute it
    /// matches at or after that time. `None` only when a cron expression has no time
    /// left before year 9999.
    pub fn first_run(&self, start_at: Option<i64>, now: i64) -> Option<i64> {
        let earliest = first_run(start_at, now);
        match self {
            Cadence::Every(_) => Some(earliest),
            Cadence::Cron(cron) => cron.next_after(earliest.saturating_sub(1)),
        }
    }

    /// The next run after a run at `now` of a schedule that was due at
    /// `next_run_at`. Missed runs are skipped in both cases: the interval's next slot
    /// (see [`advance`]), or the expression's first match after `now`.
    pub fn next_run(&self, next_run_at: i64, now: i64) -> Option<i64> {
        match self {
            Cadence::Every(every) => Some(advance(next_run_at, *every, now)),
            Cadence::Cron(cron) => cron.next_after(now.max(next_run_at)),
        }
    }
}

/// Whether a schedule whose next run is `next_run_at` is due at `now`.
pub fn is_due(next_run_at: i64, now: i64) -> bool {
    next_run_at <= now
}

/// The next run after a run at `now`: the first slot of the schedule's grid
/// (`next_run_at + k * every`) strictly after `now`. Slots missed while the daemon was
/// down or busy are skipped, never caught up in a burst.
pub fn advance(next_run_at: i64, every_secs: u64, now: i64) -> i64 {
    let every_ms = (every_secs as i64).saturating_mul(1000).max(1);
    if next_run_at > now {
        return next_run_at;
    }
    let missed = (now - next_run_at) / every_ms + 1;
    next_run_at.saturating_add(missed.saturating_mul(every_ms))
}

/// The first run of a new schedule created at `now`: `start_at`, or at once when it
/// is absent or already past.
pub fn first_run(start_at: Option<i64>, now: i64) -> i64 {
    start_at.map_or(now, |at| at.max(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_interval_bounds() {
        assert!(check_every(59).is_err());
        assert!(check_every(0).is_err());
        assert_eq!(check_every(60), Ok(60));
        assert_eq!(check_every(MAX_EVERY_SECS), Ok(MAX_EVERY_SECS));
        assert!(check_every(MAX_EVERY_SECS + 1).is_err());
    }

    #[test]
    fn schedule_advance_keeps_the_grid_and_skips_missed_slots() {
        // On time: the next slot.
        assert_eq!(advance(0, 60, 0), 60_000);
        // A little late: still the next slot of the grid, not now + every.
        assert_eq!(advance(0, 60, 5_000), 60_000);
        // Exactly on the next slot: that one counts as run.
        assert_eq!(advance(0, 60, 60_000), 120_000);
        // Down for ten minutes: one run, then the next future slot.
        assert_eq!(advance(0, 60, 600_500), 660_000);
        // Not due yet: unchanged.
        assert_eq!(advance(90_000, 60, 10_000), 90_000);
        assert!(is_due(10, 10) && is_due(9, 10) && !is_due(11, 10));
    }

    #[test]
    fn schedule_first_run_is_now_or_start_at() {
        assert_eq!(first_run(None, 1_000), 1_000);
        assert_eq!(first_run(Some(500), 1_000), 1_000);
        assert_eq!(first_run(Some(5_000), 1_000), 5_000);
    }

    #[test]
    fn schedule_cron_cadence_runs_on_matching_minutes_only() {
        const MIN: i64 = 60_000;
        let cron = Cadence::Cron(Cron::parse("*/15 * * * *").expect("parse"));
        // Created on a matching minute: that minute; between two: the next one.
        assert_eq!(cron.first_run(None, 0), Some(0));
        assert_eq!(cron.first_run(None, 1), Some(15 * MIN));
        // start_at moves the first run to the first match at or after it.
        assert_eq!(cron.first_run(Some(16 * MIN), 0), Some(30 * MIN));
        assert_eq!(cron.first_run(Some(30 * MIN), 0), Some(30 * MIN));
        // After a run (on time or late), the first match after now: missed ones
        // are skipped.
        assert_eq!(cron.next_run(15 * MIN, 15 * MIN + 500), Some(30 * MIN));
        assert_eq!(cron.next_run(15 * MIN, 61 * MIN), Some(75 * MIN));
        let every = Cadence::Every(60);
        assert_eq!(every.first_run(Some(5_000), 1_000), Some(5_000));
        assert_eq!(every.next_run(0, 5_000), Some(60_000));
    }
}

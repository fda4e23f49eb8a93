//! When a schedule runs: pure arithmetic on milliseconds, no clock of its own.

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
}

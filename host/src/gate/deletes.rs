//! How many memories the agent may delete: at most `memory.agentDeletes.perHour` for
//! one user in any hour (a sliding window), so that an agent deleting every memory one
//! by one is stopped after a few, each of which the person can restore
//! (`brain/dismissal.rs`). The person's deletes never come here.
//!
//! The window is kept in memory: a restart empties it, as it ends the agent's turns,
//! and only the person can restart the daemon.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::time::HOUR_MS;

/// The agent's recent deletes, per user.
#[derive(Debug, Default)]
pub struct DeleteWindow {
    /// Per user, the times of the deletes of the last hour, oldest first.
    recent: Mutex<HashMap<String, VecDeque<i64>>>,
}

/// The agent has used up its deletes for the user for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// Milliseconds until the oldest delete of the window leaves it (an hour with a
    /// limit of 0).
    pub retry_after_ms: i64,
}

impl DeleteWindow {
    /// Counts a delete for `user` at `now` if fewer than `per_hour` were counted in
    /// the hour before; else says when one will be possible.
    pub fn take(&self, user: &str, now: i64, per_hour: u32) -> Result<(), Full> {
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        // Users whose window emptied are dropped, so the map holds only the last hour.
        recent.retain(|_, times| {
            while times.front().is_some_and(|at| *at <= now - HOUR_MS) {
                times.pop_front();
            }
            !times.is_empty()
        });
        let times = recent.get(user);
        if times.map_or(0, VecDeque::len) >= per_hour as usize {
            let oldest = times.and_then(|t| t.front());
            return Err(Full {
                retry_after_ms: oldest.map_or(HOUR_MS, |oldest| oldest + HOUR_MS - now),
            });
        }
        recent.entry(user.to_string()).or_default().push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MINUTE_MS;

    #[test]
    fn at_most_per_hour_in_any_hour_per_user() {
        let window = DeleteWindow::default();
        let start = 1_000_000;
        for i in 0..3 {
            window
                .take("u", start + i * MINUTE_MS, 3)
                .expect("within the limit");
        }
        // The fourth within the hour waits for the first to leave the window.
        assert_eq!(
            window.take("u", start + 10 * MINUTE_MS, 3),
            Err(Full {
                retry_after_ms: 50 * MINUTE_MS
            })
        );
        // Another user has a window of their own.
        window
            .take("v", start + 10 * MINUTE_MS, 3)
            .expect("another user");
        // A refusal counts nothing: once the first delete is an hour old, one more.
        assert!(window.take("u", start + HOUR_MS - 1, 3).is_err());
        window
            .take("u", start + HOUR_MS, 3)
            .expect("the first left the window");
        assert_eq!(
            window.take("u", start + HOUR_MS, 3),
            Err(Full {
                retry_after_ms: MINUTE_MS
            })
        );
        // Two hours later every window is empty again.
        for _ in 0..3 {
            window
                .take("u", start + 3 * HOUR_MS, 3)
                .expect("a new hour");
        }
    }

    #[test]
    fn a_limit_of_zero_allows_nothing() {
        let window = DeleteWindow::default();
        assert_eq!(
            window.take("u", 5, 0),
            Err(Full {
                retry_after_ms: HOUR_MS
            })
        );
        assert!(window.recent.lock().expect("lock").is_empty());
    }
}

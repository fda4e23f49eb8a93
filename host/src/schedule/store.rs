//! The schedules store: `{data_dir}/schedule/schedules.db`, one connection behind a
//! mutex (schedules are few and every statement is short).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use utoipa::ToSchema;

use super::cron::Cron;
use super::due::{self, Cadence};
use super::schema::{self, SchemaError};
use crate::time::Clock;

/// A page of schedules at most.
pub const MAX_PAGE: usize = 500;
pub const DEFAULT_PAGE: usize = 50;

/// One schedule.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Schedule {
    /// `sch_<ulid>`.
    pub id: String,
    /// The skill's slug.
    pub skill: String,
    /// The message of each run's turn.
    pub input: String,
    /// Seconds between runs (at least 60); `null` for a cron schedule.
    pub every: Option<u64>,
    /// The 5-field cron expression the runs follow, in UTC; `null` for an interval
    /// schedule.
    pub cron: Option<String>,
    /// The user each run's turn is opened for.
    pub user: String,
    pub enabled: bool,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub next_run_at: i64,
    #[serde(with = "crate::time::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_run_at: Option<i64>,
    /// The turn the last successful run opened.
    pub last_turn_id: Option<String>,
    /// Why the last run failed (`null` when it succeeded).
    pub last_error: Option<String>,
}

impl Schedule {
    /// How the schedule runs, from its stored form. An expression that no longer
    /// parses can only come from an edited database; the error says why.
    pub fn cadence(&self) -> Result<Cadence, String> {
        match (&self.cron, self.every) {
            (Some(text), _) => Cron::parse(text)
                .map(Cadence::Cron)
                .map_err(|e| format!("the stored cron expression `{text}` {e}")),
            (None, Some(every)) => Ok(Cadence::Every(every)),
            (None, None) => {
                Err("the schedule has neither an interval nor a cron expression".into())
            }
        }
    }
}

/// How a new schedule runs, as requested.
#[derive(Debug, Clone, PartialEq)]
pub enum NewCadence {
    /// Seconds between runs.
    Every(u64),
    /// A 5-field cron expression (UTC).
    Cron(String),
}

/// What creating a schedule needs (already validated by the caller, except the
/// cadence, which the store checks too).
#[derive(Debug, Clone, PartialEq)]
pub struct NewSchedule {
    pub skill: String,
    pub input: String,
    pub cadence: NewCadence,
    pub user: String,
    /// The first run; `None` (or a past time) is at once.
    pub start_at: Option<i64>,
}

/// A page of schedules, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SchedulePage {
    pub items: Vec<Schedule>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// How a run went.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Fired { turn_id: String },
    Failed { reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("cannot open {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

impl crate::described::Described for ScheduleError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        match self {
            ScheduleError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            ScheduleError::Open { .. } | ScheduleError::Schema(_) | ScheduleError::Sqlite(_) => {
                Description::internal("schedules")
            }
        }
    }
}

pub struct Schedules {
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
}

const COLUMNS: &str = "id, skill, input, every_secs, cron, user_id, enabled, created_at, next_run_at, last_run_at, last_turn_id, last_error";

fn row_to_schedule(row: &Row<'_>) -> rusqlite::Result<Schedule> {
    Ok(Schedule {
        id: row.get(0)?,
        skill: row.get(1)?,
        input: row.get(2)?,
        every: row.get::<_, Option<i64>>(3)?.map(|s| s.max(0) as u64),
        cron: row.get(4)?,
        user: row.get(5)?,
        enabled: row.get(6)?,
        created_at: row.get(7)?,
        next_run_at: row.get(8)?,
        last_run_at: row.get(9)?,
        last_turn_id: row.get(10)?,
        last_error: row.get(11)?,
    })
}

impl Schedules {
    /// Opens (creating it and its directory) the database at `path`.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Schedules, ScheduleError> {
        let open_err = |reason: String| ScheduleError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let mut conn = crate::sqlite::open_wal(path, "NORMAL").map_err(open_err)?;
        schema::migrate(&mut conn)?;
        Ok(Schedules {
            conn: Mutex::new(conn),
            clock,
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // Each write is one statement: a panic cannot leave a change half-applied.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn create(&self, new: NewSchedule) -> Result<Schedule, ScheduleError> {
        let (cadence, every, cron) = match new.cadence {
            NewCadence::Every(every) => {
                let every = due::check_every(every).map_err(|reason| ScheduleError::Invalid {
                    field: "every",
                    reason,
                })?;
                (Cadence::Every(every), Some(every), None)
            }
            NewCadence::Cron(text) => {
                let cron = Cron::parse(&text).map_err(|e| ScheduleError::Invalid {
                    field: "cron",
                    reason: e.to_string(),
                })?;
                (Cadence::Cron(cron), None, Some(text))
            }
        };
        let now = self.now_ms();
        // A parsed expression fires within any 400 years, so only a `start_at` close
        // to the calendar's end leaves no first run.
        let next_run_at =
            cadence
                .first_run(new.start_at, now)
                .ok_or_else(|| ScheduleError::Invalid {
                    field: "start_at",
                    reason: "the cron expression has no time at or after it before year 9999"
                        .into(),
                })?;
        let schedule = Schedule {
            id: crate::ids::new_id("sch"),
            skill: new.skill,
            input: new.input,
            every,
            cron,
            user: new.user,
            enabled: true,
            created_at: now,
            next_run_at,
            last_run_at: None,
            last_turn_id: None,
            last_error: None,
        };
        self.conn().execute(
            "INSERT INTO schedules (id, skill, input, every_secs, cron, user_id, enabled, created_at, next_run_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8)",
            params![
                schedule.id,
                schedule.skill,
                schedule.input,
                schedule.every.map(|e| e as i64),
                schedule.cron,
                schedule.user,
                schedule.created_at,
                schedule.next_run_at
            ],
        )?;
        Ok(schedule)
    }

    /// `user`'s schedule `id` (another user's is none).
    pub fn get(&self, id: &str, user: &str) -> Result<Option<Schedule>, ScheduleError> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1 AND user_id = ?2"),
                [id, user],
                row_to_schedule,
            )
            .optional()?)
    }

    /// `user`'s schedules by id (oldest first), after `cursor`.
    pub fn list(
        &self,
        user: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SchedulePage, ScheduleError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let conn = self.conn();
        let mut statement = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM schedules
             WHERE id > ?1 AND user_id = ?2
             ORDER BY id LIMIT ?3"
        ))?;
        let mut items = statement
            .query_map(
                params![cursor.unwrap_or(""), user, limit as i64 + 1],
                row_to_schedule,
            )?
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|s| s.id.clone())
        } else {
            None
        };
        Ok(SchedulePage { items, next_cursor })
    }

    /// Whether `user` had such a schedule (another user's is left alone).
    pub fn delete(&self, id: &str, user: &str) -> Result<bool, ScheduleError> {
        Ok(self.conn().execute(
            "DELETE FROM schedules WHERE id = ?1 AND user_id = ?2",
            [id, user],
        )? > 0)
    }

    /// The enabled schedules due at `now`, the most overdue first, at most `limit`.
    pub fn due(&self, now: i64, limit: usize) -> Result<Vec<Schedule>, ScheduleError> {
        let conn = self.conn();
        let mut statement = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE enabled = 1 AND next_run_at <= ?1
             ORDER BY next_run_at, id LIMIT ?2"
        ))?;
        let items = statement
            .query_map(params![now, limit as i64], row_to_schedule)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(items)
    }

    /// Records a run of `schedule` at `now` and moves its next run on; the updated
    /// schedule, or `None` when it was deleted meanwhile. A schedule with no next run
    /// (a cron expression past the calendar's end, or one an edited database broke)
    /// is disabled, with the reason as its `last_error`, rather than retried forever.
    pub fn record(
        &self,
        schedule: &Schedule,
        outcome: &Outcome,
        now: i64,
    ) -> Result<Option<Schedule>, ScheduleError> {
        let next = schedule.cadence().and_then(|cadence| {
            cadence
                .next_run(schedule.next_run_at, now)
                .ok_or_else(|| "the cron expression has no time left before year 9999".into())
        });
        let (turn_id, mut error) = match outcome {
            Outcome::Fired { turn_id } => (Some(turn_id.as_str()), None),
            Outcome::Failed { reason } => (None, Some(reason.clone())),
        };
        let (next, enabled) = match next {
            Ok(next) => (next, true),
            Err(reason) => {
                tracing::error!(schedule = %schedule.id, "schedule disabled: {reason}");
                error = Some(match error {
                    Some(failed) => format!("{failed}; disabled: {reason}"),
                    None => format!("disabled: {reason}"),
                });
                (schedule.next_run_at, false)
            }
        };
        let conn = self.conn();
        let changed = conn.execute(
            "UPDATE schedules SET next_run_at = ?2, last_run_at = ?3,
                 last_turn_id = COALESCE(?4, last_turn_id), last_error = ?5, enabled = ?6
             WHERE id = ?1",
            params![schedule.id, next, now, turn_id, error, enabled],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        Ok(conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1"),
                [&schedule.id],
                row_to_schedule,
            )
            .optional()?)
    }

    pub fn checkpoint(&self) -> Result<(), ScheduleError> {
        Ok(self
            .conn()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?)
    }
}

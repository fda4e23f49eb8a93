//! The schedules store: `{data_dir}/schedule/schedules.db` through one connection
//! (schedules are few and every statement is short), or PostgreSQL's `schedules`
//! schema, which several daemons share (issue 32).
//!
//! A due run is run once however many daemons see it: each claims it first
//! ([`Schedules::claim`]), a compare-and-set that moves the schedule's next run on only
//! if it is still the one that daemon read, and runs it only if that changed the row.
//! What decides "due" is one clock for all of them: the injected [`Clock`] on SQLite
//! (one daemon per file), the database server's on PostgreSQL.
//!
//! A person's calls (create, get, list, delete) act for that person, and so do the
//! claim and the record of a run of their schedule; finding what is due, across
//! everyone, acts for the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use super::cron::Cron;
use super::due::{self, Cadence};
use super::schema::{self, SchemaError};
use crate::sql::{Actor, Database, PgStore, Row, SqlError};
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
    #[error("schedules: {0}")]
    Sql(#[from] SqlError),
}

impl crate::described::Described for ScheduleError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        match self {
            ScheduleError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            ScheduleError::Sql(e) => crate::sql::describe(e, "schedules"),
            ScheduleError::Open { .. } | ScheduleError::Schema(_) => {
                Description::internal("schedules")
            }
        }
    }
}

pub struct Schedules {
    db: Database,
    time: Time,
}

/// Where a store reads the time that decides what is due.
enum Time {
    /// The injected clock: SQLite, one daemon per file.
    Clock(Arc<dyn Clock>),
    /// The database server's: every daemon sharing it reads the same clock.
    Server,
}

/// A run this daemon claimed: the schedule as it was read when due, whose next run
/// has already been moved on in the store, so that no other daemon runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub schedule: Schedule,
    /// When the run was claimed (its `last_run_at`).
    pub at: i64,
    /// Why the schedule was disabled by this claim: it has no next run.
    disabled: Option<String>,
}

const COLUMNS: &str = "id, skill, input, every_secs, cron, user_id, enabled, created_at, next_run_at, last_run_at, last_turn_id, last_error";

fn row_to_schedule(row: &Row<'_>) -> Result<Schedule, SqlError> {
    Ok(Schedule {
        id: row.get(0)?,
        skill: row.get(1)?,
        input: row.get(2)?,
        every: row.get::<Option<i64>>(3)?.map(|s| s.max(0) as u64),
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
    /// Opens (creating it and its directory) the database at `path`; `clock` decides
    /// what is due.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Schedules, ScheduleError> {
        let open_err = |reason: String| ScheduleError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let mut conn = crate::sqlite::open_wal(path, "NORMAL").map_err(open_err)?;
        schema::migrate(&mut conn)?;
        Ok(Schedules {
            db: Database::sqlite(conn),
            time: Time::Clock(clock),
        })
    }

    /// The schedules in PostgreSQL's `schedules` schema at `url`, migrated to this
    /// release's version. The server's clock decides what is due, and stamps every
    /// time the store writes: the daemons sharing the database may disagree on the
    /// time, the server does not.
    pub fn postgres(url: &str) -> Result<Schedules, ScheduleError> {
        let store = PgStore::open(url, &schema::PG_SCHEMA)?;
        Ok(Schedules {
            db: Database::postgres(store, 2)?,
            time: Time::Server,
        })
    }

    /// Now, in milliseconds since the epoch, by the clock that decides what is due.
    pub fn now_ms(&self) -> Result<i64, ScheduleError> {
        match &self.time {
            Time::Clock(clock) => Ok(clock.now_ms()),
            // PostgreSQL's own clock: no SQL both backends read gives SQLite the
            // injected clock's time, so this is the one statement for one backend.
            Time::Server => Ok(self.db.read(Actor::System, |tx| {
                tx.query_one(
                    "SELECT CAST(floor(extract(epoch FROM now()) * 1000) AS BIGINT)",
                    &[],
                    |row| row.get::<i64>(0),
                )
            })?),
        }
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
        let now = self.now_ms()?;
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
        self.db.write(Actor::User(&schedule.user), |tx| {
            tx.execute(
                "INSERT INTO schedules (id, skill, input, every_secs, cron, user_id, enabled, created_at, next_run_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8)",
                &[
                    (&schedule.id).into(),
                    (&schedule.skill).into(),
                    (&schedule.input).into(),
                    schedule.every.map(|e| e as i64).into(),
                    schedule.cron.as_ref().into(),
                    (&schedule.user).into(),
                    schedule.created_at.into(),
                    schedule.next_run_at.into(),
                ],
            )
        })?;
        Ok(schedule)
    }

    /// `user`'s schedule `id` (another user's is none).
    pub fn get(&self, id: &str, user: &str) -> Result<Option<Schedule>, ScheduleError> {
        Ok(self.db.read(Actor::User(user), |tx| {
            tx.query_opt(
                &format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1 AND user_id = ?2"),
                &[id.into(), user.into()],
                row_to_schedule,
            )
        })?)
    }

    /// `user`'s schedules by id (oldest first), after `cursor`.
    pub fn list(
        &self,
        user: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SchedulePage, ScheduleError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let mut items = self.db.read(Actor::User(user), |tx| {
            tx.query(
                &format!(
                    "SELECT {COLUMNS} FROM schedules
                     WHERE id > ?1 AND user_id = ?2
                     ORDER BY id LIMIT ?3"
                ),
                &[
                    cursor.unwrap_or("").into(),
                    user.into(),
                    (limit as i64 + 1).into(),
                ],
                row_to_schedule,
            )
        })?;
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
        let deleted = self.db.write(Actor::User(user), |tx| {
            tx.execute(
                "DELETE FROM schedules WHERE id = ?1 AND user_id = ?2",
                &[id.into(), user.into()],
            )
        })?;
        Ok(deleted > 0)
    }

    /// The enabled schedules due at `now`, everyone's, the most overdue first, at most
    /// `limit`. Another daemon may run any of them first: run one only once
    /// [`Schedules::claim`] gave it.
    pub fn due(&self, now: i64, limit: usize) -> Result<Vec<Schedule>, ScheduleError> {
        Ok(self.db.read(Actor::System, |tx| {
            tx.query(
                &format!(
                    "SELECT {COLUMNS} FROM schedules WHERE enabled = 1 AND next_run_at <= ?1
                     ORDER BY next_run_at, id LIMIT ?2"
                ),
                &[now.into(), (limit as i64).into()],
                row_to_schedule,
            )
        })?)
    }

    /// Claims the run of `schedule` (as [`Schedules::due`] read it) at `now`: moves its
    /// next run on, if nobody did since it was read. `None`: another daemon claimed
    /// it, or it was deleted or disabled meanwhile; do not run it. A schedule with no
    /// next run (a cron expression past the calendar's end, or one an edited database
    /// broke) is disabled, with the reason as its `last_error`, rather than retried
    /// forever.
    pub fn claim(&self, schedule: &Schedule, now: i64) -> Result<Option<Claim>, ScheduleError> {
        let next = schedule.cadence().and_then(|cadence| {
            cadence
                .next_run(schedule.next_run_at, now)
                .ok_or_else(|| "the cron expression has no time left before year 9999".into())
        });
        let (next, disabled) = match next {
            Ok(next) => (next, None),
            Err(reason) => (schedule.next_run_at, Some(reason)),
        };
        let disabled_error = disabled
            .as_ref()
            .map(|reason| format!("disabled: {reason}"));
        // The compare-and-set: of the daemons that read the same `next_run_at`, the
        // first to commit changes the row, and the others' WHERE no longer matches it
        // (PostgreSQL re-reads a row another transaction changed before updating it).
        let changed = self.db.write(Actor::User(&schedule.user), |tx| {
            tx.execute(
                "UPDATE schedules SET next_run_at = ?3, last_run_at = ?4, enabled = ?5,
                     last_error = COALESCE(?6, last_error)
                 WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1",
                &[
                    (&schedule.id).into(),
                    schedule.next_run_at.into(),
                    next.into(),
                    now.into(),
                    disabled.is_none().into(),
                    disabled_error.as_ref().into(),
                ],
            )
        })?;
        if changed == 0 {
            return Ok(None);
        }
        if let Some(reason) = &disabled {
            tracing::error!(schedule = %schedule.id, "schedule disabled: {reason}");
        }
        Ok(Some(Claim {
            schedule: schedule.clone(),
            at: now,
            disabled,
        }))
    }

    /// Records how a claimed run went; the updated schedule, or `None` when it was
    /// deleted meanwhile.
    pub fn record(
        &self,
        claim: &Claim,
        outcome: &Outcome,
    ) -> Result<Option<Schedule>, ScheduleError> {
        let (turn_id, failed) = match outcome {
            Outcome::Fired { turn_id } => (Some(turn_id.as_str()), None),
            Outcome::Failed { reason } => (None, Some(reason.as_str())),
        };
        let error = match (failed, &claim.disabled) {
            (Some(failed), Some(reason)) => Some(format!("{failed}; disabled: {reason}")),
            (Some(failed), None) => Some(failed.to_string()),
            (None, Some(reason)) => Some(format!("disabled: {reason}")),
            (None, None) => None,
        };
        let schedule = &claim.schedule;
        Ok(self.db.write(Actor::User(&schedule.user), |tx| {
            tx.query_opt(
                &format!(
                    "UPDATE schedules SET last_turn_id = COALESCE(?2, last_turn_id), last_error = ?3
                     WHERE id = ?1
                     RETURNING {COLUMNS}"
                ),
                &[(&schedule.id).into(), turn_id.into(), error.as_ref().into()],
                row_to_schedule,
            )
        })?)
    }

    pub fn checkpoint(&self) -> Result<(), ScheduleError> {
        Ok(self.db.checkpoint()?)
    }
}

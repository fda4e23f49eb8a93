//! The audit log: one row for every decision the gate gives, in SQLite at
//! `{data_dir}/gate/audit.db` (WAL; one writer, read-only connections for reads, as
//! the Second Brain's store does) or in PostgreSQL's `audit` schema (issue 32). Turns
//! are swept an hour after they close (`gate::turns`, in the same database); this is
//! what remains of them.
//!
//! Writes commit at `synchronous = NORMAL`: in WAL mode that never corrupts the file
//! and survives a process crash, and a power cut may lose the last decisions. An fsync
//! on every tool call would cost more than the decision it records (see
//! `benches/gate.rs`). Arguments are never stored whole: a short summary, with values
//! of secret-looking keys masked, is enough to tell calls apart.
//!
//! A decision about a person is written and read acting for that person (on
//! PostgreSQL, row-level security shows each person only their own rows); one about
//! no one, the operator's listing and the pruning act for the host.
//!
//! The log is bounded: rows older than [`Retention::max_age_ms`] or beyond the newest
//! [`Retention::max_rows`] are pruned at open and every [`PRUNE_EVERY`] writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde_json::Value;

use super::error::GateError;
use super::policy::{Decision, ReasonCode, Verdict};
use super::schema;
use crate::sql::{Actor, Cell, Database, FromColumn, PgStore, Row, SqlError, Tx};
use crate::time::DAY_MS;

/// Characters of an arguments summary, ellipsis and size note excluded.
pub const ARGS_SUMMARY_CHARS: usize = 200;
/// Arguments larger than this are not parsed for the summary: only their size is kept.
pub const ARGS_PARSE_BYTES: usize = 16 * 1024;
/// Longest tool name, turn id, user, skill or caller stored (longer ones are cut).
const MAX_FIELD_CHARS: usize = 128;
/// Longest reason stored.
const MAX_REASON_CHARS: usize = 512;
/// Writes between two prunings.
pub const PRUNE_EVERY: u64 = 1024;
/// Read connections kept open between reads.
const MAX_IDLE_READERS: usize = 4;
/// Largest page.
pub const MAX_PAGE: usize = 500;

/// How much of the log is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub max_rows: i64,
    pub max_age_ms: i64,
}

impl Default for Retention {
    /// 100,000 decisions or 90 days, whichever is less.
    fn default() -> Retention {
        Retention {
            max_rows: 100_000,
            max_age_ms: 90 * DAY_MS,
        }
    }
}

/// What is recorded for one decision.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry<'a> {
    pub at: i64,
    pub turn_id: Option<&'a str>,
    pub user: Option<&'a str>,
    pub skill: Option<&'a str>,
    /// `agent` (REST), `plugin:<name>` (WASM `tools.invoke`) or `operator` (an
    /// approval).
    pub caller: &'a str,
    pub tool: &'a str,
    pub decision: &'a Decision,
    /// Already bounded by [`summarize_args`].
    pub args_summary: &'a str,
}

/// One recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AuditEntry {
    /// Increases with every row written; the newest row has the highest.
    pub seq: i64,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
    pub turn_id: Option<String>,
    pub user: Option<String>,
    pub skill: Option<String>,
    pub caller: String,
    pub tool: String,
    pub decision: Verdict,
    pub code: ReasonCode,
    pub reason: String,
    pub args_summary: String,
}

/// Which rows a listing shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    /// 1 to [`MAX_PAGE`] (0 means the default of 50).
    pub limit: usize,
    /// From a previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// Only this turn's decisions.
    pub turn_id: Option<String>,
    /// Only this user's decisions, read acting for them; `None`: everyone's (the
    /// operator's view).
    pub user: Option<String>,
}

/// A page, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AuditPage {
    pub items: Vec<AuditEntry>,
    pub next_cursor: Option<String>,
}

pub struct AuditLog {
    /// The gate's database: the turns (`gate::turns`) live in it too.
    db: Arc<Database>,
    /// The SQLite file; `None` on PostgreSQL.
    path: Option<PathBuf>,
    retention: Retention,
    writes: AtomicU64,
}

impl AuditLog {
    /// Opens (creating if needed) the log at `path`, migrates it and prunes it as of
    /// `now_ms`.
    pub fn open(path: &Path, retention: Retention, now_ms: i64) -> Result<AuditLog, GateError> {
        let open_err = |reason: String| GateError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let mut conn = crate::sqlite::open_wal(path, "NORMAL").map_err(open_err)?;
        schema::migrate(&mut conn)?;
        AuditLog::start(
            Database::sqlite_file(conn, path, MAX_IDLE_READERS),
            Some(path.to_path_buf()),
            retention,
            now_ms,
        )
    }

    /// The log in PostgreSQL's `audit` schema at `url`, migrated to this release's
    /// version and pruned as of `now_ms`.
    pub fn postgres(url: &str, retention: Retention, now_ms: i64) -> Result<AuditLog, GateError> {
        let store = PgStore::open(url, &schema::PG_SCHEMA)?;
        AuditLog::start(
            Database::postgres(store, MAX_IDLE_READERS)?,
            None,
            retention,
            now_ms,
        )
    }

    fn start(
        db: Database,
        path: Option<PathBuf>,
        retention: Retention,
        now_ms: i64,
    ) -> Result<AuditLog, GateError> {
        let log = AuditLog {
            db: Arc::new(db),
            path,
            retention,
            writes: AtomicU64::new(0),
        };
        log.prune(now_ms)?;
        Ok(log)
    }

    /// The SQLite file; `None` on PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The gate's database, which the turns share.
    pub(super) fn database(&self) -> Arc<Database> {
        self.db.clone()
    }

    /// Writes one row, acting for the decision's person (the host's own when it names
    /// none); returns its `seq`.
    pub fn record(&self, entry: &NewEntry) -> Result<i64, GateError> {
        let actor = entry.user.map_or(Actor::System, Actor::User);
        self.write(actor, entry.at, |tx| insert(tx, entry))
    }

    /// Runs `f` in a write transaction of the gate's database acting for `actor`,
    /// `f` writing rows with [`insert`] (and changing its turn) as one commit; then
    /// prunes the log every [`PRUNE_EVERY`] writes, as of `now_ms`.
    pub(super) fn write<R: Send>(
        &self,
        actor: Actor<'_>,
        now_ms: i64,
        f: impl FnOnce(&Tx<'_>) -> Result<R, GateError> + Send,
    ) -> Result<R, GateError> {
        let out = self.db.write(actor, f)?;
        // The row is written whatever pruning does; a failed pruning is retried after
        // the next batch.
        if (self.writes.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(PRUNE_EVERY)
            && let Err(e) = self.prune(now_ms)
        {
            tracing::warn!("cannot prune the gate audit log: {e}");
        }
        Ok(out)
    }

    /// Deletes rows older than the age limit or beyond the row limit, everyone's;
    /// returns how many.
    pub fn prune(&self, now_ms: i64) -> Result<usize, GateError> {
        let oldest_kept = now_ms.saturating_sub(self.retention.max_age_ms);
        let deleted = self.db.write(Actor::System, |tx| {
            tx.execute(
                "DELETE FROM decisions
                 WHERE at < ?1 OR seq <= (SELECT coalesce(max(seq), 0) FROM decisions) - ?2",
                &[oldest_kept.into(), self.retention.max_rows.max(1).into()],
            )
        })?;
        Ok(deleted as usize)
    }

    /// Decisions, newest first, paged by `seq`.
    pub fn list(&self, query: &AuditQuery) -> Result<AuditPage, GateError> {
        let limit = if query.limit == 0 {
            50
        } else {
            query.limit.min(MAX_PAGE)
        };
        let before = match &query.cursor {
            Some(cursor) => parse_cursor(cursor)?,
            None => i64::MAX,
        };
        let actor = query.user.as_deref().map_or(Actor::System, Actor::User);
        // Each optional filter compares its column first: PostgreSQL takes a
        // parameter's type from its first use, and `?2 IS NULL` alone gives it none.
        let mut items = self.db.read(actor, |tx| {
            tx.query(
                "SELECT seq, at, turn_id, user_id, skill, caller, tool, decision, reason_code, reason, args_summary
                 FROM decisions
                 WHERE seq < ?1 AND (turn_id = ?2 OR ?2 IS NULL) AND (user_id = ?3 OR ?3 IS NULL)
                 ORDER BY seq DESC LIMIT ?4",
                &[
                    before.into(),
                    query.turn_id.as_ref().into(),
                    query.user.as_ref().into(),
                    (limit as i64 + 1).into(),
                ],
                entry_from_row,
            )
        })?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|e| e.seq.to_string())
        } else {
            None
        };
        Ok(AuditPage { items, next_cursor })
    }

    /// Rows in the log, everyone's.
    pub fn count(&self) -> Result<i64, GateError> {
        Ok(self.db.read(Actor::System, |tx| {
            tx.query_one("SELECT count(*) FROM decisions", &[], |r| r.get(0))
        })?)
    }

    /// Flushes the WAL into the main file (at shutdown).
    pub fn checkpoint(&self) -> Result<(), GateError> {
        Ok(self.db.checkpoint()?)
    }
}

/// Writes `entry`'s row in `tx` (which acts for its person, or for the host when it
/// names none); returns its `seq`.
pub(super) fn insert(tx: &Tx<'_>, entry: &NewEntry) -> Result<i64, GateError> {
    let user = entry.user.map(|u| cut(u, MAX_FIELD_CHARS));
    let turn_id = entry.turn_id.map(|t| cut(t, MAX_FIELD_CHARS));
    let skill = entry.skill.map(|s| cut(s, MAX_FIELD_CHARS));
    let caller = cut(entry.caller, MAX_FIELD_CHARS);
    let tool = cut(entry.tool, MAX_FIELD_CHARS);
    let reason = cut(&entry.decision.reason, MAX_REASON_CHARS);
    let args_summary = cut(entry.args_summary, ARGS_SUMMARY_CHARS + 32);
    Ok(tx.query_one(
        "INSERT INTO decisions (at, turn_id, user_id, skill, caller, tool, decision, reason_code, reason, args_summary)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         RETURNING seq",
        &[
            entry.at.into(),
            turn_id.as_ref().into(),
            user.as_ref().into(),
            skill.as_ref().into(),
            (&caller).into(),
            (&tool).into(),
            entry.decision.verdict.as_str().into(),
            entry.decision.code.as_str().into(),
            (&reason).into(),
            (&args_summary).into(),
        ],
        |row| row.get::<i64>(0),
    )?)
}

fn parse_cursor(cursor: &str) -> Result<i64, GateError> {
    // Exactly the OpenAPI document's pattern, `^[0-9]{1,18}$`.
    let digits =
        !cursor.is_empty() && cursor.len() <= 18 && cursor.bytes().all(|b| b.is_ascii_digit());
    match cursor.parse::<i64>() {
        Ok(seq) if digits => Ok(seq),
        _ => Err(GateError::Invalid {
            field: "cursor",
            reason: format!("`{}` is not a cursor from a previous page", cut(cursor, 64)),
        }),
    }
}

fn entry_from_row(row: &Row<'_>) -> Result<AuditEntry, SqlError> {
    Ok(AuditEntry {
        seq: row.get(0)?,
        at: row.get(1)?,
        turn_id: row.get(2)?,
        user: row.get(3)?,
        skill: row.get(4)?,
        caller: row.get(5)?,
        tool: row.get(6)?,
        decision: row.get(7)?,
        code: row.get(8)?,
        reason: row.get(9)?,
        args_summary: row.get(10)?,
    })
}

/// A stored verdict; anything else (an edited database) is a column of the wrong kind.
impl FromColumn for Verdict {
    const WANTED: &'static str = "a verdict (allow, ask or deny)";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Text(text) => Verdict::parse(text),
            _ => None,
        }
    }
}

/// A stored reason code, as [`ReasonCode::as_str`] wrote it.
impl FromColumn for ReasonCode {
    const WANTED: &'static str = "a reason code";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Text(text) => ReasonCode::parse(text),
            _ => None,
        }
    }
}

/// At most `max` characters of `text`, control characters replaced, `…` if cut.
fn cut(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// Keys whose values are masked in a summary.
const SECRET_KEYS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "authorization",
    "cookie",
    "credential",
    "private_key",
];

/// A bounded, single-line summary of a tool call's arguments for the audit log.
///
/// JSON up to [`ARGS_PARSE_BYTES`] is re-serialised compactly with the values of
/// secret-looking keys (`token`, `password`, `authorization`...) masked, then cut to
/// [`ARGS_SUMMARY_CHARS`]; larger or non-JSON input keeps only its size, because the
/// gate cannot tell where a secret sits in it.
pub fn summarize_args(args: &str) -> String {
    let trimmed = args.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    if trimmed.len() > ARGS_PARSE_BYTES {
        return format!("({} bytes, not summarised)", args.len());
    }
    let Ok(mut value) = serde_json::from_str::<Value>(trimmed) else {
        return format!("({} bytes, not JSON)", args.len());
    };
    mask_secrets(&mut value);
    let text = value.to_string();
    if text.chars().count() <= ARGS_SUMMARY_CHARS {
        text
    } else {
        format!("{} ({} bytes)", cut(&text, ARGS_SUMMARY_CHARS), args.len())
    }
}

fn mask_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let key = key.to_ascii_lowercase().replace('-', "_");
                if SECRET_KEYS.iter().any(|s| key.contains(s)) {
                    *v = Value::String("***".into());
                } else {
                    mask_secrets(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(i: usize) -> Decision {
        if i.is_multiple_of(2) {
            Decision::new(Verdict::Allow, ReasonCode::PolicyAllow, "ok")
        } else {
            Decision::deny(ReasonCode::UnknownTool, "no")
        }
    }

    fn write(log: &AuditLog, i: usize, turn: &str, at: i64) -> i64 {
        let d = decision(i);
        let tool = format!("tool_{i}");
        log.record(&NewEntry {
            at,
            turn_id: Some(turn),
            user: Some("u"),
            skill: None,
            caller: "agent",
            tool: &tool,
            decision: &d,
            args_summary: "{}",
        })
        .expect("record")
    }

    #[test]
    fn audit_pages_newest_first_and_filters_by_turn() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::open(&dir.path().join("a.db"), Retention::default(), 0).expect("open");
        for i in 0..7 {
            write(&log, i, if i % 3 == 0 { "turn_a" } else { "turn_b" }, 1_000);
        }
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = log
                .list(&AuditQuery {
                    limit: 3,
                    cursor: cursor.clone(),
                    ..AuditQuery::default()
                })
                .expect("list");
            assert!(page.items.len() <= 3);
            seen.extend(page.items.iter().map(|e| e.tool.clone()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let expected: Vec<String> = (0..7).rev().map(|i| format!("tool_{i}")).collect();
        assert_eq!(seen, expected);
        let a = log
            .list(&AuditQuery {
                turn_id: Some("turn_a".into()),
                ..AuditQuery::default()
            })
            .expect("list");
        let tools: Vec<&str> = a.items.iter().map(|e| e.tool.as_str()).collect();
        assert_eq!(tools, ["tool_6", "tool_3", "tool_0"]);
        assert_eq!(a.items[0].decision, Verdict::Allow);
        assert_eq!(a.items[1].code, ReasonCode::UnknownTool);
        assert!(matches!(
            log.list(&AuditQuery {
                cursor: Some("x".into()),
                ..AuditQuery::default()
            }),
            Err(GateError::Invalid {
                field: "cursor",
                ..
            })
        ));
    }

    #[test]
    fn audit_prunes_by_age_and_by_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.db");
        let retention = Retention {
            max_rows: 5,
            max_age_ms: 1_000,
        };
        let log = AuditLog::open(&path, retention, 0).expect("open");
        for i in 0..8 {
            write(&log, i, "t", i as i64 * 100);
        }
        // Rows beyond the newest 5 go; then those older than 1 s at t = 1,450.
        assert_eq!(log.prune(700).expect("prune"), 3);
        assert_eq!(log.count().expect("count"), 5);
        assert_eq!(log.prune(1_450).expect("prune"), 2);
        let page = log.list(&AuditQuery::default()).expect("list");
        let tools: Vec<&str> = page.items.iter().map(|e| e.tool.as_str()).collect();
        assert_eq!(tools, ["tool_7", "tool_6", "tool_5"]);
    }

    #[test]
    fn audit_survives_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gate").join("audit.db");
        {
            let log = AuditLog::open(&path, Retention::default(), 0).expect("open");
            write(&log, 0, "turn_x", 10);
            write(&log, 1, "turn_x", 20);
        }
        let log = AuditLog::open(&path, Retention::default(), 30).expect("reopen");
        let seq = write(&log, 2, "turn_x", 30);
        assert_eq!(seq, 3);
        let page = log.list(&AuditQuery::default()).expect("list");
        assert_eq!(page.items.len(), 3);
        assert_eq!(page.items[2].tool, "tool_0");
        assert_eq!(page.items[2].at, 10);
    }

    #[test]
    fn args_summaries_are_bounded_and_mask_secrets() {
        assert_eq!(summarize_args(""), "");
        assert_eq!(
            summarize_args(
                r#"{"url": "https://x", "headers": {"Authorization": "Bearer s3cret"}, "api-key": "k"}"#
            ),
            r#"{"api-key":"***","headers":{"Authorization":"***"},"url":"https://x"}"#
        );
        let long = serde_json::json!({ "text": "y".repeat(10_000) }).to_string();
        let s = summarize_args(&long);
        assert!(s.chars().count() <= ARGS_SUMMARY_CHARS + 20, "{s}");
        assert!(s.ends_with("(10011 bytes)"), "{s}");
        let huge = "z".repeat(ARGS_PARSE_BYTES + 1);
        assert_eq!(summarize_args(&huge), "(16385 bytes, not summarised)");
        assert_eq!(summarize_args("password=hunter2"), "(16 bytes, not JSON)");
    }
}

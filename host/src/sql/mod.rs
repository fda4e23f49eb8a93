//! One way to speak SQL to either backend (issue 32): a store writes its statements
//! once, in the SQL both SQLite and PostgreSQL read, with SQLite's `?N` placeholders,
//! and runs them through a [`Tx`], whichever backend the daemon was given. What only
//! one backend can do (SQLite's FTS5 and update hook, PostgreSQL's NOTIFY) is asked
//! for by [`Tx::backend`], in the one place that needs it.
//!
//! Every statement runs in a transaction that says whom it acts for ([`Actor`]): on
//! PostgreSQL that transaction takes the role row-level security keys on (`pg/`), so
//! a query that forgets its `user_id` filter still sees one person's rows; SQLite, a
//! file of one machine's owner, has no roles and ignores it.
//!
//! What the SQL both read means here: `INTEGER` values are BIGINT on PostgreSQL,
//! booleans are 0/1 integers on both, upserts are `ON CONFLICT ... DO ...`, generated
//! ids come back with `RETURNING`, and SQLite-only functions (`ifnull`, scalar
//! `max(a, b)`, `json_each`, `rowid`) stay out of shared statements.

mod conn;
mod database;
mod postgres;
mod value;

use std::str::FromStr;

pub use conn::{AsTx, Conn, Row, Transaction, Tx};
pub use database::{Database, Open, Readers, begin};
pub use value::{Cell, FromColumn, Value};

use crate::pg::{PgError, PgSchema};

/// Longest a statement may run on PostgreSQL before the server cancels it: a store's
/// statements take milliseconds, so this only ends one that went wrong.
const STATEMENT_TIMEOUT_MS: u32 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Whom a transaction acts for.
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    /// One person: on PostgreSQL, only that person's rows are visible or writable.
    User(&'a str),
    /// The host itself, across people (maintenance, the operator's export) or on
    /// tables that hold no one's rows (the plugins' key-value store).
    System,
}

/// What a transaction will do: a write takes SQLite's write lock at once, so that it
/// never fails half-way for want of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", server_message(.0))]
    Postgres(::postgres::Error),
    /// The server cannot be reached, or dropped the connection: nothing of the
    /// transaction was committed, and the same request may be retried.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// PostgreSQL ended the transaction for a concurrent one's sake (a deadlock, or a
    /// serialization failure): nothing of it was committed, and running it again is
    /// the remedy.
    #[error("a concurrent transaction conflicted with this one: {0}")]
    Conflict(String),
    #[error(transparent)]
    Open(#[from] PgError),
    #[error("column {column} holds {found} where {wanted} was expected")]
    Type {
        column: usize,
        wanted: &'static str,
        found: &'static str,
    },
    #[error("the row has no column {0}")]
    NoColumn(usize),
    #[error("a column of PostgreSQL type {0}, which the stores do not use")]
    UnsupportedType(String),
    #[error("the query returned no row")]
    NoRow,
    /// A column whose value the store cannot read as the type it stands for (an enum's
    /// name it does not know, say).
    #[error("column {column}: {reason}")]
    Convert { column: usize, reason: String },
}

impl From<::postgres::Error> for SqlError {
    fn from(error: ::postgres::Error) -> Self {
        use ::postgres::error::SqlState;
        if postgres::is_unavailable(&error) {
            SqlError::Unavailable(server_message(&error))
        } else if error.code().is_some_and(|c| {
            *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
        }) {
            SqlError::Conflict(server_message(&error))
        } else {
            SqlError::Postgres(error)
        }
    }
}

impl SqlError {
    pub fn is_unavailable(&self) -> bool {
        matches!(self, SqlError::Unavailable(_))
            || matches!(self, SqlError::Open(PgError::Connect { .. }))
    }

    /// See [`SqlError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, SqlError::Conflict(_))
    }

    pub fn is_disk_full(&self) -> bool {
        match self {
            SqlError::Sqlite(e) => crate::sqlite::is_disk_full(e),
            // 53100: disk_full.
            SqlError::Postgres(e) => e.code().is_some_and(|c| c.code() == "53100"),
            _ => false,
        }
    }
}

/// How a store's database failure reaches a caller, the same for every store: a full
/// disk is 507, an unreachable server 503 (retry), and so is a conflict with concurrent
/// writes that retrying did not get past; the rest the host's own failure.
pub fn describe(error: &SqlError, context: &'static str) -> crate::described::Description {
    use crate::described::Description;
    if error.is_disk_full() {
        Description::disk_full(context)
    } else if error.is_unavailable() || error.is_conflict() {
        Description::unavailable(context)
    } else {
        Description::internal(context)
    }
}

/// The server's own message (and its hint) rather than the client's "db error".
fn server_message(error: &::postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => match db.hint() {
            Some(hint) => format!("{} ({hint})", db.message()),
            None => db.message().to_string(),
        },
        None => error.to_string(),
    }
}

/// Where a PostgreSQL store lives: the server and the store's schema, migrated once
/// when opened; each [`Conn`] it opens works in that schema.
#[derive(Clone)]
pub struct PgStore {
    url: String,
    namespace: &'static str,
}

impl PgStore {
    /// Connects once to migrate the store to this release's version (under the
    /// migration lock, so daemons starting together migrate it once).
    pub fn open(url: &str, schema: &'static PgSchema) -> Result<PgStore, SqlError> {
        outside_async(|| crate::pg::connect(url)?.migrate(schema))?;
        Ok(PgStore {
            url: url.to_string(),
            namespace: schema.namespace,
        })
    }

    pub fn connect(&self) -> Result<Conn, SqlError> {
        outside_async(|| self.open_connection())
    }

    /// A connection of its own that receives what is sent to `channel`
    /// (`pg_notify`): a committed transaction's notifications reach every daemon's.
    /// `channel` is a static name, never input.
    pub fn listen(&self, channel: &'static str) -> Result<Listener, SqlError> {
        let mut client = self.client()?;
        client.batch_execute(&format!("LISTEN {channel}"))?;
        Ok(Listener { client })
    }

    fn client(&self) -> Result<::postgres::Client, SqlError> {
        let mut config = ::postgres::Config::from_str(&self.url)
            .map_err(|e| SqlError::Open(PgError::Url(format!("not a PostgreSQL address: {e}"))))?;
        config.application_name("engram");
        Ok(crate::pg::connect_with(config)?)
    }

    fn open_connection(&self) -> Result<Conn, SqlError> {
        let mut client = self.client()?;
        // The namespace is a store's static name, never input.
        client.batch_execute(&format!(
            "SET search_path TO {}; SET statement_timeout = {STATEMENT_TIMEOUT_MS}",
            self.namespace
        ))?;
        Ok(Conn::postgres(client))
    }
}

/// Notifications on a channel of a PostgreSQL store ([`PgStore::listen`]).
pub struct Listener {
    client: ::postgres::Client,
}

impl Listener {
    /// The payloads that arrive within `wait` (at once, those already there). Not
    /// from an async worker: it blocks.
    pub fn next_within(&mut self, wait: std::time::Duration) -> Result<Vec<String>, SqlError> {
        use ::postgres::fallible_iterator::FallibleIterator;
        let mut payloads = Vec::new();
        {
            let mut notifications = self.client.notifications();
            let first = notifications.timeout_iter(wait).next()?;
            if let Some(first) = first {
                payloads.push(first.payload().to_string());
                // And those that came with it, without waiting for more.
                let mut pending = notifications.iter();
                while payloads.len() < 1_000
                    && let Some(more) = pending.next()?
                {
                    payloads.push(more.payload().to_string());
                }
            }
        }
        if self.client.is_closed() {
            return Err(SqlError::Unavailable(
                "the listening connection was closed".into(),
            ));
        }
        Ok(payloads)
    }
}

/// Runs `f`, which may use the PostgreSQL client, with the async worker it is called
/// on (if any) handed back to the runtime, as [`outside_async`] does for a `Send`
/// closure: for callers whose closures borrow what cannot cross threads (the Second
/// Brain's transactions). On a single-threaded runtime it runs in place, where the
/// client refuses to block: the daemon's runtime is multi-threaded, and its handlers
/// reach the Second Brain through `spawn_blocking` anyway.
pub(crate) fn off_async_worker<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Runs `f`, which may use the PostgreSQL client, from wherever the caller is. That
/// client blocks on a runtime of its own, which tokio refuses on one of its async
/// workers: there `f` runs with the worker handed back to the runtime
/// (`block_in_place`), or, on a single-threaded runtime, on a thread of its own.
pub(crate) fn outside_async<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Err(_) => f(),
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        Ok(_) => std::thread::scope(|scope| {
            scope
                .spawn(f)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Conn {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB)",
        )
        .expect("table");
        Conn::sqlite(conn)
    }

    #[test]
    fn a_transaction_commits_or_rolls_back_as_a_whole() {
        let mut conn = memory();
        let tx = conn
            .transaction(Actor::System, Access::Write)
            .expect("begin");
        tx.execute("INSERT INTO t (name) VALUES (?1)", &["kept".into()])
            .expect("insert");
        tx.commit().expect("commit");
        let tx = conn
            .transaction(Actor::System, Access::Write)
            .expect("begin");
        tx.execute("INSERT INTO t (name) VALUES (?1)", &["dropped".into()])
            .expect("insert");
        drop(tx);
        let tx = conn
            .transaction(Actor::System, Access::Read)
            .expect("begin");
        let names = tx
            .query("SELECT name FROM t ORDER BY id", &[], |r| {
                r.get::<String>(0)
            })
            .expect("select");
        assert_eq!(names, ["kept"]);
    }

    #[test]
    fn values_go_in_and_come_out_as_they_were() {
        let mut conn = memory();
        let tx = conn
            .transaction(Actor::System, Access::Write)
            .expect("begin");
        let id = tx
            .query_one(
                "INSERT INTO t (name, score, data) VALUES (?1, ?2, ?3) RETURNING id",
                &[None::<&str>.into(), 0.5.into(), (&b"\x00\xff"[..]).into()],
                |r| r.get::<i64>(0),
            )
            .expect("insert");
        let (name, score, data) = tx
            .query_one(
                "SELECT name, score, data FROM t WHERE id = ?1",
                &[id.into()],
                |r| {
                    Ok((
                        r.get::<Option<String>>(0)?,
                        r.get::<f64>(1)?,
                        r.get::<Vec<u8>>(2)?,
                    ))
                },
            )
            .expect("select");
        assert_eq!((name, score, data), (None, 0.5, vec![0, 255]));
        assert!(matches!(
            tx.query_one("SELECT name FROM t WHERE id = -1", &[], |r| r
                .get::<String>(0)),
            Err(SqlError::NoRow)
        ));
    }
}

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

mod database;
mod postgres;
mod value;

use std::cell::RefCell;
use std::str::FromStr;

pub use database::Database;
pub use value::{Cell, FromColumn, Value};

use crate::pg::{PgError, PgSchema, SYSTEM_ROLE, USER_ROLE, USER_SETTING};

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
    #[error("{}", describe(.0))]
    Postgres(::postgres::Error),
    /// The server cannot be reached, or dropped the connection: nothing of the
    /// transaction was committed, and the same request may be retried.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
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
}

impl From<::postgres::Error> for SqlError {
    fn from(error: ::postgres::Error) -> Self {
        if postgres::is_unavailable(&error) {
            SqlError::Unavailable(describe(&error))
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

    pub fn is_disk_full(&self) -> bool {
        match self {
            SqlError::Sqlite(e) => crate::sqlite::is_disk_full(e),
            // 53100: disk_full.
            SqlError::Postgres(e) => e.code().is_some_and(|c| c.code() == "53100"),
            _ => false,
        }
    }
}

/// The server's own message (and its hint) rather than the client's "db error".
fn describe(error: &::postgres::Error) -> String {
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

    fn open_connection(&self) -> Result<Conn, SqlError> {
        let mut config = ::postgres::Config::from_str(&self.url)
            .map_err(|e| SqlError::Open(PgError::Url(format!("not a PostgreSQL address: {e}"))))?;
        config.application_name("engram");
        let mut client = crate::pg::connect_with(config)?;
        // The namespace is a store's static name, never input.
        client.batch_execute(&format!(
            "SET search_path TO {}; SET statement_timeout = {STATEMENT_TIMEOUT_MS}",
            self.namespace
        ))?;
        Ok(Conn {
            inner: Inner::Postgres {
                client: PgClient(Some(Box::new(client))),
                statements: postgres::Statements::default(),
                broken: false,
            },
        })
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

/// One connection to either backend.
pub struct Conn {
    inner: Inner,
}

enum Inner {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: PgClient,
        statements: postgres::Statements,
        /// Set when a statement found the server gone: the client may not know yet.
        broken: bool,
    },
}

impl Conn {
    pub fn sqlite(conn: rusqlite::Connection) -> Conn {
        Conn {
            inner: Inner::Sqlite(conn),
        }
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Sqlite(_) => Backend::Sqlite,
            Inner::Postgres { .. } => Backend::Postgres,
        }
    }

    /// A PostgreSQL connection the server closed (restarted, or the connection was
    /// cut): of no further use, a new one must be opened.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            Inner::Sqlite(_) => false,
            Inner::Postgres { client, broken, .. } => {
                *broken || client.0.as_ref().is_none_or(|c| c.is_closed())
            }
        }
    }

    pub fn transaction(&mut self, actor: Actor<'_>, access: Access) -> Result<Tx<'_>, SqlError> {
        let inner = match &mut self.inner {
            Inner::Sqlite(conn) => {
                let behavior = match access {
                    Access::Read => rusqlite::TransactionBehavior::Deferred,
                    Access::Write => rusqlite::TransactionBehavior::Immediate,
                };
                TxInner::Sqlite(conn.transaction_with_behavior(behavior)?)
            }
            Inner::Postgres {
                client,
                statements,
                broken,
            } => {
                let client = client
                    .0
                    .as_mut()
                    .ok_or_else(|| SqlError::Unavailable("the connection was closed".into()))?;
                let mut tx = noting(broken, client.transaction())?;
                let acting = match actor {
                    Actor::User(user) => tx
                        .batch_execute(&format!("SET LOCAL ROLE {USER_ROLE}"))
                        .and_then(|()| {
                            tx.execute("SELECT set_config($1, $2, true)", &[&USER_SETTING, &user])
                        })
                        .map(drop),
                    Actor::System => tx.batch_execute(&format!("SET LOCAL ROLE {SYSTEM_ROLE}")),
                };
                noting(broken, acting)?;
                TxInner::Postgres(RefCell::new(PgTx {
                    tx,
                    statements,
                    broken,
                }))
            }
        };
        Ok(Tx { inner })
    }
}

/// The PostgreSQL client of a [`Conn`]. Boxed, as it is large beside a SQLite handle;
/// an `Option` only so that dropping it, which also blocks on the client's runtime,
/// can be moved out of an async worker.
struct PgClient(Option<Box<::postgres::Client>>);

impl Drop for PgClient {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            outside_async(move || drop(client));
        }
    }
}

/// A transaction on either backend; dropped without [`Tx::commit`], it rolls back.
pub struct Tx<'c> {
    inner: TxInner<'c>,
}

enum TxInner<'c> {
    Sqlite(rusqlite::Transaction<'c>),
    /// In a cell, so that a statement can run while the rows of another are read, as
    /// SQLite allows: the cell is held only for each round trip to the server.
    Postgres(RefCell<PgTx<'c>>),
}

struct PgTx<'c> {
    tx: ::postgres::Transaction<'c>,
    statements: &'c mut postgres::Statements,
    broken: &'c mut bool,
}

impl PgTx<'_> {
    fn execute(&mut self, sql: &str, args: &[Value<'_>]) -> Result<u64, SqlError> {
        let statement = noting(self.broken, self.statements.get(&mut self.tx, sql))?;
        noting(self.broken, self.tx.execute(&statement, &pg_params(args)))
    }

    fn query(&mut self, sql: &str, args: &[Value<'_>]) -> Result<Vec<::postgres::Row>, SqlError> {
        let statement = noting(self.broken, self.statements.get(&mut self.tx, sql))?;
        noting(self.broken, self.tx.query(&statement, &pg_params(args)))
    }
}

/// `result`'s error as a [`SqlError`], marking the connection broken when it says
/// the server is gone.
fn noting<T>(broken: &mut bool, result: Result<T, ::postgres::Error>) -> Result<T, SqlError> {
    result.map_err(|e| {
        let error = SqlError::from(e);
        *broken |= error.is_unavailable();
        error
    })
}

/// One row of a result, read by column index.
pub struct Row<'r> {
    inner: RowInner<'r>,
}

enum RowInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r ::postgres::Row),
}

impl Row<'_> {
    pub fn get<T: FromColumn>(&self, column: usize) -> Result<T, SqlError> {
        let cell = match &self.inner {
            RowInner::Sqlite(row) => sqlite_cell(row, column)?,
            RowInner::Postgres(row) => postgres::cell(row, column)?,
        };
        value::convert(column, cell)
    }
}

fn sqlite_cell<'r>(row: &'r rusqlite::Row<'_>, column: usize) -> Result<Cell<'r>, SqlError> {
    use rusqlite::types::ValueRef;
    Ok(match row.get_ref(column)? {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(v) => Cell::Integer(v),
        ValueRef::Real(v) => Cell::Real(v),
        ValueRef::Text(v) => Cell::Text(
            std::str::from_utf8(v).map_err(|e| SqlError::Sqlite(rusqlite::Error::Utf8Error(e)))?,
        ),
        ValueRef::Blob(v) => Cell::Blob(v),
    })
}

fn pg_params<'a>(args: &'a [Value<'_>]) -> Vec<&'a (dyn ::postgres::types::ToSql + Sync)> {
    args.iter()
        .map(|v| v as &(dyn ::postgres::types::ToSql + Sync))
        .collect()
}

impl Tx<'_> {
    pub fn backend(&self) -> Backend {
        match self.inner {
            TxInner::Sqlite(_) => Backend::Sqlite,
            TxInner::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs one statement; the rows it changed.
    pub fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<u64, SqlError> {
        match &self.inner {
            TxInner::Sqlite(tx) => {
                let changed = tx
                    .prepare_cached(sql)?
                    .execute(rusqlite::params_from_iter(args.iter()))?;
                Ok(changed as u64)
            }
            TxInner::Postgres(pg) => pg.borrow_mut().execute(sql, args),
        }
    }

    /// Every row of a query, each read by `read`.
    pub fn query<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        mut read: impl FnMut(&Row<'_>) -> Result<T, SqlError>,
    ) -> Result<Vec<T>, SqlError> {
        let mut out = Vec::new();
        match &self.inner {
            TxInner::Sqlite(tx) => {
                let mut statement = tx.prepare_cached(sql)?;
                let mut rows = statement.query(rusqlite::params_from_iter(args.iter()))?;
                while let Some(row) = rows.next()? {
                    out.push(read(&Row {
                        inner: RowInner::Sqlite(row),
                    })?);
                }
            }
            TxInner::Postgres(pg) => {
                let rows = pg.borrow_mut().query(sql, args)?;
                for row in &rows {
                    out.push(read(&Row {
                        inner: RowInner::Postgres(row),
                    })?);
                }
            }
        }
        Ok(out)
    }

    /// The first row of a query, if any.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T, SqlError>,
    ) -> Result<Option<T>, SqlError> {
        let mut read = Some(read);
        let mut first = None;
        // Reads the first row only; a second is not converted.
        self.query(sql, args, |row| {
            if let Some(read) = read.take() {
                first = Some(read(row)?);
            }
            Ok(())
        })?;
        Ok(first)
    }

    /// The first row of a query that always returns one (an aggregate, `RETURNING`).
    pub fn query_one<T>(
        &self,
        sql: &str,
        args: &[Value<'_>],
        read: impl FnOnce(&Row<'_>) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        self.query_opt(sql, args, read)?.ok_or(SqlError::NoRow)
    }

    pub fn commit(self) -> Result<(), SqlError> {
        match self.inner {
            TxInner::Sqlite(tx) => Ok(tx.commit()?),
            TxInner::Postgres(pg) => {
                let PgTx { tx, broken, .. } = pg.into_inner();
                noting(broken, tx.commit())
            }
        }
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

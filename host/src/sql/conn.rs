//! A connection to either backend, its transactions, and the statements run in them.
//!
//! [`Conn::transaction`] is the usual way in: a [`Transaction`] that rolls back when
//! dropped uncommitted. A caller that keeps a transaction open across calls (the
//! Second Brain's group commit) drives it itself with [`Conn::begin`],
//! [`Conn::commit`] and [`Conn::rollback`], and runs its statements through
//! [`Conn::tx`]. Savepoints are plain SQL on both backends (`tx.batch("SAVEPOINT a")`).

use std::cell::RefCell;
use std::ops::Deref;

use super::postgres::{self as pg_glue, Statements};
use super::value::{self, Cell, FromColumn, Value};
use super::{Access, Actor, Backend, SqlError, outside_async};
use crate::pg::{SYSTEM_ROLE, USER_ROLE, USER_SETTING};

/// One connection to either backend.
pub struct Conn {
    inner: Inner,
}

enum Inner {
    Sqlite(rusqlite::Connection),
    /// In a cell, so that statements run through a shared [`Tx`] (one may run while
    /// the rows of another are read, as SQLite allows): the cell is held only for each
    /// round trip to the server.
    Postgres(RefCell<PgConn>),
}

struct PgConn {
    client: PgClient,
    statements: Statements,
    /// Set when a statement found the server gone: the client may not know yet.
    broken: bool,
    /// Whether a transaction is open (SQLite's connection knows this itself).
    open: bool,
    /// Whether the open transaction may write.
    writing: bool,
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

impl PgConn {
    fn client(&mut self) -> Result<&mut ::postgres::Client, SqlError> {
        self.client.0.as_deref_mut().ok_or_else(closed)
    }

    /// `result`'s error as a [`SqlError`], marking the connection broken when it says
    /// the server is gone.
    fn noting<T>(&mut self, result: Result<T, ::postgres::Error>) -> Result<T, SqlError> {
        result.map_err(|e| {
            let error = SqlError::from(e);
            self.broken |= error.is_unavailable();
            error
        })
    }

    fn batch(&mut self, sql: &str) -> Result<(), SqlError> {
        let done = self.client()?.batch_execute(sql);
        self.noting(done)
    }

    fn execute(&mut self, sql: &str, args: &[Value<'_>]) -> Result<u64, SqlError> {
        let prepared = match self.client.0.as_deref_mut() {
            Some(client) => self.statements.get(client, sql),
            None => return Err(closed()),
        };
        let statement = self.noting(prepared)?;
        let done = self.client()?.execute(&statement, &pg_glue::params(args));
        self.noting(done)
    }

    fn query(&mut self, sql: &str, args: &[Value<'_>]) -> Result<Vec<::postgres::Row>, SqlError> {
        let prepared = match self.client.0.as_deref_mut() {
            Some(client) => self.statements.get(client, sql),
            None => return Err(closed()),
        };
        let statement = self.noting(prepared)?;
        let rows = self.client()?.query(&statement, &pg_glue::params(args));
        self.noting(rows)
    }
}

fn closed() -> SqlError {
    SqlError::Unavailable("the connection was closed".into())
}

/// `SELECT set_config(...)` taking the role row-level security keys on, and naming
/// the person for [`Actor::User`]; local to the transaction.
fn acting_as(actor: Actor<'_>) -> String {
    match actor {
        Actor::User(user) => format!(
            "SELECT set_config('role', '{USER_ROLE}', true), set_config('{USER_SETTING}', {}, true)",
            quote_literal(user)
        ),
        Actor::System => format!(
            "SELECT set_config('role', '{SYSTEM_ROLE}', true), set_config('{USER_SETTING}', '', true)"
        ),
    }
}

/// The statement that takes [`Tx::lock_key`]'s lock (PostgreSQL).
fn lock_sql(space: &str, key: &str) -> String {
    format!(
        "SELECT pg_advisory_xact_lock(hashtextextended({} || ':' || {}, 0))",
        quote_literal(space),
        quote_literal(key)
    )
}

/// `text` as an SQL string literal. With `standard_conforming_strings` (on since
/// PostgreSQL 9.1, and not something a client can be talked out of here) a backslash
/// is an ordinary character, so doubling the quotes is the whole of the quoting; a NUL,
/// which no PostgreSQL text may hold, is dropped.
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\0', "").replace('\'', "''"))
}

impl Conn {
    pub fn sqlite(conn: rusqlite::Connection) -> Conn {
        Conn {
            inner: Inner::Sqlite(conn),
        }
    }

    pub(super) fn postgres(client: ::postgres::Client) -> Conn {
        Conn {
            inner: Inner::Postgres(RefCell::new(PgConn {
                client: PgClient(Some(Box::new(client))),
                statements: Statements::default(),
                broken: false,
                open: false,
                writing: false,
            })),
        }
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Sqlite(_) => Backend::Sqlite,
            Inner::Postgres(_) => Backend::Postgres,
        }
    }

    /// A PostgreSQL connection the server closed (restarted, or the connection was
    /// cut): of no further use, a new one must be opened.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            Inner::Sqlite(_) => false,
            Inner::Postgres(pg) => {
                let pg = pg.borrow();
                pg.broken || pg.client.0.as_ref().is_none_or(|c| c.is_closed())
            }
        }
    }

    pub fn in_transaction(&self) -> bool {
        match &self.inner {
            Inner::Sqlite(conn) => !conn.is_autocommit(),
            Inner::Postgres(pg) => pg.borrow().open,
        }
    }

    /// The SQLite connection, for what only SQLite has (its update hook, FTS5,
    /// backups); `None` on PostgreSQL.
    pub fn as_sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.inner {
            Inner::Sqlite(conn) => Some(conn),
            Inner::Postgres(_) => None,
        }
    }

    /// Opens a transaction acting for `actor` (see [`Conn::transaction`]).
    pub fn begin(&mut self, actor: Actor<'_>, access: Access) -> Result<(), SqlError> {
        match &mut self.inner {
            Inner::Sqlite(conn) => {
                let begin = match access {
                    Access::Read => "BEGIN",
                    Access::Write => "BEGIN IMMEDIATE",
                };
                conn.prepare_cached(begin)?.execute([])?;
            }
            Inner::Postgres(pg) => {
                let pg = pg.get_mut();
                if let Err(e) = pg.batch(&format!("BEGIN; {}", acting_as(actor))) {
                    // The BEGIN may have run and the role not been taken: nothing is
                    // left open for the next caller.
                    let _ = pg.batch("ROLLBACK");
                    return Err(e);
                }
                pg.open = true;
                pg.writing = access == Access::Write;
            }
        }
        Ok(())
    }

    /// From here to the end of the open transaction, acts for `actor` instead (a
    /// group commit carries several people's writes, each in a savepoint of its own).
    pub fn act_for(&mut self, actor: Actor<'_>) -> Result<(), SqlError> {
        match &mut self.inner {
            Inner::Sqlite(_) => Ok(()),
            Inner::Postgres(pg) => pg.get_mut().batch(&acting_as(actor)),
        }
    }

    /// Opens savepoint `name` in the open transaction and, inside it, acts for
    /// `actor` and takes the lock `lock` ([`Tx::lock_key`]), after releasing savepoint
    /// `release` (one a previous write left open): one round trip on PostgreSQL, where a
    /// group commit's every write starts so. `name` and `release` are the caller's own
    /// identifiers, never input. An error may have come before or after the savepoint
    /// was opened: roll back to it, and if that fails too, the transaction is lost.
    pub fn enter_savepoint(
        &mut self,
        release: Option<&str>,
        name: &str,
        actor: Actor<'_>,
        lock: Option<(&str, &str)>,
    ) -> Result<(), SqlError> {
        let mut sql = String::new();
        if let Some(release) = release {
            sql.push_str(&format!("RELEASE {release}; "));
        }
        sql.push_str(&format!("SAVEPOINT {name}"));
        if self.backend() == Backend::Postgres {
            sql.push_str("; ");
            sql.push_str(&acting_as(actor));
            if let Some((space, key)) = lock {
                sql.push_str("; ");
                sql.push_str(&lock_sql(space, key));
            }
        }
        self.tx().batch(&sql)
    }

    pub fn commit(&mut self) -> Result<(), SqlError> {
        self.end("COMMIT")
    }

    pub fn rollback(&mut self) -> Result<(), SqlError> {
        self.end("ROLLBACK")
    }

    fn end(&mut self, how: &str) -> Result<(), SqlError> {
        self.tx().end(how)
    }

    /// Runs statements on this connection, in the transaction that is open.
    pub fn tx(&self) -> Tx<'_> {
        Tx {
            inner: match &self.inner {
                Inner::Sqlite(conn) => TxInner::Sqlite(conn),
                Inner::Postgres(pg) => TxInner::Postgres(pg),
            },
        }
    }

    /// A transaction acting for `actor`: on PostgreSQL it takes the role row-level
    /// security keys on, so that it sees and writes that person's rows only
    /// ([`Actor::System`]: every row). A write takes SQLite's write lock at once.
    pub fn transaction(
        &mut self,
        actor: Actor<'_>,
        access: Access,
    ) -> Result<Transaction<'_>, SqlError> {
        self.begin(actor, access)?;
        Ok(Transaction::begun(self))
    }
}

/// An open transaction; dropped without [`Transaction::commit`], it rolls back.
pub struct Transaction<'c> {
    tx: Tx<'c>,
    finished: bool,
}

impl<'c> Deref for Transaction<'c> {
    type Target = Tx<'c>;
    fn deref(&self) -> &Tx<'c> {
        &self.tx
    }
}

impl<'c> Transaction<'c> {
    /// The transaction [`Conn::begin`] opened on `conn`.
    pub(super) fn begun(conn: &'c Conn) -> Transaction<'c> {
        Transaction {
            tx: conn.tx(),
            finished: false,
        }
    }

    pub fn commit(mut self) -> Result<(), SqlError> {
        self.finished = true;
        self.tx.end("COMMIT")
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished
            && let Err(e) = self.tx.end("ROLLBACK")
        {
            tracing::warn!("rolling back a transaction: {e}");
        }
    }
}

/// Statements on a connection (in its open transaction, if any). A handle: copies
/// run on the same connection.
#[derive(Clone, Copy)]
pub struct Tx<'c> {
    inner: TxInner<'c>,
}

#[derive(Clone, Copy)]
enum TxInner<'c> {
    Sqlite(&'c rusqlite::Connection),
    Postgres(&'c RefCell<PgConn>),
}

/// What a statement runs on: a [`Tx`], or a SQLite connection held by a caller that
/// has not moved onto the seam yet (the Second Brain's modules move one at a time).
pub trait AsTx {
    fn as_tx(&self) -> Tx<'_>;
}

impl AsTx for Tx<'_> {
    fn as_tx(&self) -> Tx<'_> {
        *self
    }
}

impl AsTx for rusqlite::Connection {
    fn as_tx(&self) -> Tx<'_> {
        Tx::sqlite(self)
    }
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
            RowInner::Postgres(row) => pg_glue::cell(row, column)?,
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

impl<'c> Tx<'c> {
    /// Statements on a SQLite connection the caller holds.
    pub fn sqlite(conn: &'c rusqlite::Connection) -> Tx<'c> {
        Tx {
            inner: TxInner::Sqlite(conn),
        }
    }

    pub fn backend(&self) -> Backend {
        match self.inner {
            TxInner::Sqlite(_) => Backend::Sqlite,
            TxInner::Postgres(_) => Backend::Postgres,
        }
    }

    /// Whether this is a write transaction on PostgreSQL (a SQLite caller tells its
    /// connections apart itself: only the writer's may write).
    pub fn is_postgres_write(&self) -> bool {
        match self.inner {
            TxInner::Sqlite(_) => false,
            TxInner::Postgres(pg) => {
                let pg = pg.borrow();
                pg.open && pg.writing
            }
        }
    }

    /// The SQLite connection, for what only SQLite has; `None` on PostgreSQL.
    pub fn as_sqlite(&self) -> Option<&'c rusqlite::Connection> {
        match self.inner {
            TxInner::Sqlite(conn) => Some(conn),
            TxInner::Postgres(_) => None,
        }
    }

    /// Takes the lock named `space` and `key` for the rest of the transaction, waiting
    /// for another daemon's transaction that holds it to end: what several daemons on
    /// one PostgreSQL server take turns on (a count checked, then added to). Nothing on
    /// SQLite, where a write transaction already excludes every other.
    pub fn lock_key(&self, space: &str, key: &str) -> Result<(), SqlError> {
        match self.backend() {
            Backend::Sqlite => Ok(()),
            Backend::Postgres => self.batch(&lock_sql(space, key)),
        }
    }

    /// Runs statements that take no parameters and return nothing (`SAVEPOINT a`,
    /// `RELEASE a`, `ROLLBACK TO a`).
    pub fn batch(&self, sql: &str) -> Result<(), SqlError> {
        match &self.inner {
            TxInner::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            TxInner::Postgres(pg) => pg.borrow_mut().batch(sql),
        }
    }

    /// Runs one statement; the rows it changed.
    pub fn execute(&self, sql: &str, args: &[Value<'_>]) -> Result<u64, SqlError> {
        match &self.inner {
            TxInner::Sqlite(conn) => {
                let changed = conn
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
            TxInner::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
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

    fn end(&self, how: &str) -> Result<(), SqlError> {
        match &self.inner {
            TxInner::Sqlite(conn) => {
                conn.prepare_cached(how)?.execute([])?;
                Ok(())
            }
            TxInner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                // Whatever the answer, the server ends the transaction (a failed
                // COMMIT rolls back).
                pg.open = false;
                pg.batch(how)
            }
        }
    }
}

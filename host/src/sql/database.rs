//! A store's database on either backend: one write connection, whose transactions
//! are serialised (SQLite takes one writer at a time anyway), and reads on connections
//! of their own, in parallel with it. A PostgreSQL connection the server dropped is
//! opened again at the next call, so a restarted server is used again without the
//! daemon's help; the call that met the broken connection fails as unavailable and
//! leaves nothing half-written (its transaction never committed).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use super::{
    Access, Actor, Backend, Conn, PgStore, SqlError, Transaction, Tx, off_async_worker,
    outside_async,
};

/// Opens a connection of a store's (again, after the server dropped one).
pub type Open = Box<dyn Fn() -> Result<Conn, SqlError> + Send + Sync>;

pub struct Database {
    backend: Backend,
    writer: Mutex<Option<Conn>>,
    /// Opens the write connection again after the server dropped it (PostgreSQL
    /// only: a SQLite connection does not break).
    reopen: Option<Open>,
    /// `None`: reads go through the write connection (a store whose calls are few and
    /// short, or an in-memory SQLite database, which no other connection can open).
    readers: Option<Readers>,
}

/// Connections for reads, each in a read transaction of its own, in parallel with
/// each other and with the store's writer: at most `max_idle` kept open between reads,
/// more opened during a burst.
pub struct Readers {
    backend: Backend,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    open: Open,
}

impl Database {
    /// A SQLite database read and written through one connection.
    pub fn sqlite(conn: rusqlite::Connection) -> Database {
        Database {
            backend: Backend::Sqlite,
            writer: Mutex::new(Some(Conn::sqlite(conn))),
            reopen: None,
            readers: None,
        }
    }

    /// A SQLite file written through `writer` and read, in parallel with it, on
    /// read-only connections of its own, at most `max_idle` kept between reads.
    pub fn sqlite_file(writer: rusqlite::Connection, path: &Path, max_idle: usize) -> Database {
        Database {
            backend: Backend::Sqlite,
            writer: Mutex::new(Some(Conn::sqlite(writer))),
            reopen: None,
            readers: Some(Readers::sqlite_file(path, max_idle, |_| Ok(()))),
        }
    }

    /// A store on PostgreSQL: connections opened as needed, at most `max_idle` kept
    /// for reads between calls.
    pub fn postgres(store: PgStore, max_idle: usize) -> Result<Database, SqlError> {
        let writer = store.connect()?;
        let reader = store.clone();
        Ok(Database {
            backend: Backend::Postgres,
            writer: Mutex::new(Some(writer)),
            reopen: Some(Box::new(move || store.connect())),
            readers: Some(Readers::postgres(reader, max_idle)),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Runs `f` in a write transaction acting for `actor`, committed when `f` returns
    /// `Ok`, rolled back otherwise. Callable from anywhere, an async worker included.
    pub fn write<R: Send, E: From<SqlError> + Send>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E> + Send,
    ) -> Result<R, E> {
        match self.backend {
            Backend::Sqlite => self.on_writer(actor, Access::Write, f),
            Backend::Postgres => outside_async(|| self.on_writer(actor, Access::Write, f)),
        }
    }

    /// Runs `f` on the write connection: writes, and the reads of a store without
    /// readers of its own (which then take no write lock).
    fn on_writer<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        access: Access,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut writer = self.writer();
        let conn = match writer.as_mut().filter(|c| !c.is_closed()) {
            Some(conn) => conn,
            None => {
                let reopen = self.reopen.as_ref().ok_or_else(|| {
                    SqlError::Unavailable("the store's connection is closed".into())
                })?;
                writer.insert(reopen()?)
            }
        };
        let out = run(conn, self.reopen.as_ref(), actor, access, f);
        if conn.is_closed() {
            *writer = None;
        }
        out
    }

    /// Runs `f` in a read transaction acting for `actor`: it sees every write
    /// committed before the call, and one snapshot throughout.
    pub fn read<R: Send, E: From<SqlError> + Send>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E> + Send,
    ) -> Result<R, E> {
        match self.backend {
            Backend::Sqlite => self.read_here(actor, f),
            Backend::Postgres => outside_async(|| self.read_here(actor, f)),
        }
    }

    fn read_here<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        match &self.readers {
            Some(readers) => readers.read_here(actor, f),
            None => self.on_writer(actor, Access::Read, f),
        }
    }

    /// Moves SQLite's WAL into the main file and truncates it (at a clean stop);
    /// nothing on PostgreSQL, which checkpoints by itself. It runs on the write
    /// connection outside any transaction, as SQLite checkpoints only there.
    pub fn checkpoint(&self) -> Result<(), SqlError> {
        match self.writer().as_ref().and_then(Conn::as_sqlite) {
            Some(conn) => Ok(conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?),
            None => Ok(()),
        }
    }

    fn writer(&self) -> MutexGuard<'_, Option<Conn>> {
        // A panic inside `f` drops its transaction (rolled back) before the guard:
        // the connection is left with no transaction open.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Readers {
    /// Read-only connections to the SQLite file at `path`, `setup` run on each as it
    /// opens (the SQL functions its reads call).
    pub fn sqlite_file(
        path: &Path,
        max_idle: usize,
        setup: fn(&rusqlite::Connection) -> rusqlite::Result<()>,
    ) -> Readers {
        let path = path.to_path_buf();
        Readers {
            backend: Backend::Sqlite,
            idle: Mutex::new(Vec::new()),
            max_idle,
            open: Box::new(move || Ok(Conn::sqlite(crate::sqlite::open_reader(&path, setup)?))),
        }
    }

    /// Connections to a PostgreSQL store.
    pub fn postgres(store: PgStore, max_idle: usize) -> Readers {
        Readers {
            backend: Backend::Postgres,
            idle: Mutex::new(Vec::new()),
            max_idle,
            open: Box::new(move || store.connect()),
        }
    }

    /// Runs `f` in a read transaction acting for `actor`: it sees every write
    /// committed before the call, and on SQLite one snapshot throughout (PostgreSQL's
    /// read committed takes one per statement).
    pub fn read<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        match self.backend {
            Backend::Sqlite => self.read_here(actor, f),
            Backend::Postgres => off_async_worker(|| self.read_here(actor, f)),
        }
    }

    fn read_here<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let idle = self.idle().pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => (self.open)()?,
        };
        let out = run(&mut conn, Some(&self.open), actor, Access::Read, f);
        let mut idle = self.idle();
        if !conn.is_closed() && idle.len() < self.max_idle {
            idle.push(conn);
        }
        out
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs `f` in a transaction on `conn`. A connection the server dropped while it sat
/// idle (a restart) fails at `BEGIN`, before anything of `f` ran: it is replaced by a
/// new one from `reopen` and the transaction begun there, so only the calls that were
/// in flight when the server went fail.
fn run<R, E: From<SqlError>>(
    conn: &mut Conn,
    reopen: Option<&Open>,
    actor: Actor<'_>,
    access: Access,
    f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
) -> Result<R, E> {
    begin(conn, reopen, actor, access)?;
    let tx = Transaction::begun(conn);
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Begins a transaction on `conn`, on a new connection from `reopen` when the server
/// dropped this one while it sat idle (see [`run`]).
pub fn begin(
    conn: &mut Conn,
    reopen: Option<&Open>,
    actor: Actor<'_>,
    access: Access,
) -> Result<(), SqlError> {
    match conn.begin(actor, access) {
        Err(e) if e.is_unavailable() => match reopen {
            Some(open) => {
                *conn = open()?;
                conn.begin(actor, access)
            }
            None => Err(e),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_run_on_their_own_connections_and_see_each_committed_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.sqlite3");
        let writer = crate::sqlite::open_wal(&path, "FULL").expect("open");
        writer
            .execute_batch("CREATE TABLE t (x TEXT NOT NULL)")
            .expect("schema");
        let db = Database::sqlite_file(writer, &path, 2);
        let count = || {
            db.read(Actor::System, |tx| {
                tx.query_one("SELECT COUNT(*) FROM t", &[], |r| r.get::<i64>(0))
            })
            .expect("read")
        };
        assert_eq!(count(), 0);
        db.write(Actor::System, |tx| {
            tx.execute("INSERT INTO t VALUES (?1)", &["a".into()])?;
            // A read while the write is open sees what was committed before it.
            assert_eq!(count(), 0);
            Ok::<_, SqlError>(())
        })
        .expect("write");
        assert_eq!(count(), 1);
        let refused = db.read(Actor::System, |tx| {
            tx.execute("INSERT INTO t VALUES ('b')", &[])
        });
        assert!(refused.is_err(), "a reader's connection is read-only");
    }
}

//! A store's database on either backend: one write connection, whose transactions
//! are serialised (SQLite takes one writer at a time anyway), and reads on connections
//! of their own, in parallel with it. A PostgreSQL connection the server dropped is
//! opened again at the next call, so a restarted server is used again without the
//! daemon's help; the call that met the broken connection fails as unavailable and
//! leaves nothing half-written (its transaction never committed).

use std::sync::{Mutex, MutexGuard};

use super::{Access, Actor, Backend, Conn, PgStore, SqlError, Tx, outside_async};

type Open = Box<dyn Fn() -> Result<Conn, SqlError> + Send + Sync>;

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

struct Readers {
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

    /// A store on PostgreSQL: connections opened as needed, at most `max_idle` kept
    /// for reads between calls.
    pub fn postgres(store: PgStore, max_idle: usize) -> Result<Database, SqlError> {
        let writer = store.connect()?;
        let reader = store.clone();
        Ok(Database {
            backend: Backend::Postgres,
            writer: Mutex::new(Some(writer)),
            reopen: Some(Box::new(move || store.connect())),
            readers: Some(Readers {
                idle: Mutex::new(Vec::new()),
                max_idle,
                open: Box::new(move || reader.connect()),
            }),
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
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, E> + Send,
    ) -> Result<R, E> {
        match self.backend {
            Backend::Sqlite => self.write_here(actor, f),
            Backend::Postgres => outside_async(|| self.write_here(actor, f)),
        }
    }

    fn write_here<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, E>,
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
        let out = run(conn, actor, Access::Write, f);
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
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, E> + Send,
    ) -> Result<R, E> {
        match self.backend {
            Backend::Sqlite => self.read_here(actor, f),
            Backend::Postgres => outside_async(|| self.read_here(actor, f)),
        }
    }

    fn read_here<R, E: From<SqlError>>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let Some(readers) = &self.readers else {
            return self.write_here(actor, f);
        };
        let idle = readers.idle().pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => (readers.open)()?,
        };
        let out = run(&mut conn, actor, Access::Read, f);
        let mut idle = readers.idle();
        if !conn.is_closed() && idle.len() < readers.max_idle {
            idle.push(conn);
        }
        out
    }

    fn writer(&self) -> MutexGuard<'_, Option<Conn>> {
        // A panic inside `f` drops its transaction (rolled back) before the guard:
        // the connection is left with no transaction open.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Readers {
    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn run<R, E: From<SqlError>>(
    conn: &mut Conn,
    actor: Actor<'_>,
    access: Access,
    f: impl FnOnce(&mut Tx<'_>) -> Result<R, E>,
) -> Result<R, E> {
    let mut tx = conn.transaction(actor, access)?;
    let out = f(&mut tx)?;
    tx.commit()?;
    Ok(out)
}

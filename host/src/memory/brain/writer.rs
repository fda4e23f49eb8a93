//! The Second Brain's one write connection, and group commit.
//!
//! Two ways in, both serialised on the connection:
//! - [`Writer::transaction`]: one IMMEDIATE transaction for one caller (ingestion,
//!   consolidation, import, clear: whatever needs a `Transaction` of its own);
//! - [`Writer::grouped`]: a small write (a manual add, edit or delete) joins the
//!   transaction that is open, in a savepoint of its own. The last writer of a group
//!   commits for all of them, so N concurrent writes share one commit and one fsync. A
//!   writer leaves the transaction open only while another thread is queued for the
//!   connection (that one commits, or joins and hands on), and a group is capped at
//!   [`MAX_GROUP`], so a write waits at most for the writers queued beside it.
//!
//! What holds: a grouped caller returns `Ok` only after the commit holding its change
//! is durable; a statement that fails rolls back its own savepoint and fails only its
//! caller; a commit that fails fails every member of the group (none of their changes
//! is in the database). Every commit announces the history rows it added, and the
//! search index (`text_index.rs`) catches up with the rows it changed before any member
//! is answered.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::error::StoreError;
use super::text_index::TextIndex;
use crate::events::{Event, EventBus, EventKind};
use crate::sql::{Access, Actor, Backend, Conn, Open, SqlError, Tx, off_async_worker};

/// The lock a grouped write acting for a person holds to its commit (PostgreSQL), keyed
/// by the person: two daemons settle one person's facts one after the other, each
/// seeing the other's.
const PERSON_LOCK: &str = "engram.person";

/// The most writes one commit carries: past this a group commits even with writers
/// queued, so that a steady stream of writes cannot keep one transaction open.
pub const MAX_GROUP: usize = 64;

pub struct Writer {
    /// Boxed: a connection is large, and the store sits in an enum beside small ones.
    state: Mutex<Box<State>>,
    /// Threads blocked on `state`. A grouped writer that sees one leaves the
    /// transaction open for it: every path in through `state` commits an open group
    /// or joins it, so a queued thread always carries the group on.
    queued: AtomicUsize,
    /// Receives `memory.*` events for the history rows each commit added.
    events: EventBus,
    /// Re-reads the rows each transaction changed once it has ended.
    text: Arc<TextIndex>,
    backend: Backend,
    /// Opens the connection again after the server dropped it (PostgreSQL).
    reopen: Option<Open>,
    /// Told of every commit: wakes the vector worker (`vectors.rs`). A permit is kept
    /// while nobody waits, so commits in between wake it once. Boxed, as `state`.
    committed: Box<tokio::sync::Notify>,
    /// Commits made, so that the tests can tell grouped writes shared one.
    #[cfg(test)]
    commits: AtomicUsize,
}

struct State {
    conn: Conn,
    open: Option<Group>,
}

/// The transaction grouped writers are adding to.
struct Group {
    members: usize,
    /// The savepoint the last member left open: released as the next one enters its
    /// own, or by the commit, in the same round trip.
    unreleased: Option<String>,
    /// The last history row before the group began, when anyone listens: the rows
    /// after it are what the commit announces.
    mark: Option<i64>,
    /// Set when a failed statement took the whole transaction with it (SQLite rolls a
    /// transaction back itself on SQLITE_FULL, SQLITE_IOERR, ...): the group can only
    /// fail.
    lost: Option<SharedError>,
    done: Arc<Done>,
}

/// How a group's commit ended, for the members waiting on it.
#[derive(Default)]
struct Done {
    outcome: Mutex<Option<Result<(), SharedError>>>,
    finished: Condvar,
}

impl Done {
    fn finish(&self, outcome: Result<(), SharedError>) {
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
        self.finished.notify_all();
    }

    fn wait(&self) -> Result<(), SharedError> {
        let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(outcome) = outcome.as_ref() {
                return outcome.clone();
            }
            outcome = self
                .finished
                .wait(outcome)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// A commit's error, given to every member of the group: SQLite's code (so that a
/// full disk stays recognisable), or whether the server was unreachable, and the
/// message.
#[derive(Debug, Clone)]
enum SharedError {
    Sqlite {
        code: rusqlite::ffi::Error,
        message: Option<String>,
    },
    Unavailable(String),
    Conflict(String),
    Other(String),
}

impl SharedError {
    fn of(error: &SqlError) -> SharedError {
        match error {
            SqlError::Sqlite(e) => SharedError::of_sqlite(e),
            e if e.is_unavailable() => SharedError::Unavailable(e.to_string()),
            SqlError::Conflict(message) => SharedError::Conflict(message.clone()),
            other => SharedError::Other(other.to_string()),
        }
    }

    fn of_sqlite(error: &rusqlite::Error) -> SharedError {
        match error {
            rusqlite::Error::SqliteFailure(code, message) => SharedError::Sqlite {
                code: *code,
                message: message.clone(),
            },
            other => SharedError::Other(other.to_string()),
        }
    }

    fn of_store(error: &StoreError) -> SharedError {
        match error {
            StoreError::Sql(e) => SharedError::of(e),
            StoreError::Sqlite(e) => SharedError::of_sqlite(e),
            other => SharedError::Other(other.to_string()),
        }
    }

    fn into_error(self) -> StoreError {
        match self {
            SharedError::Sqlite { code, message } => {
                StoreError::Sqlite(rusqlite::Error::SqliteFailure(code, message))
            }
            SharedError::Unavailable(message) => StoreError::Sql(SqlError::Unavailable(message)),
            SharedError::Conflict(message) => StoreError::Sql(SqlError::Conflict(message)),
            SharedError::Other(message) => StoreError::GroupFailed(message),
        }
    }
}

impl Writer {
    pub fn new(conn: Conn, reopen: Option<Open>, events: EventBus, text: Arc<TextIndex>) -> Writer {
        if let Some(sqlite) = conn.as_sqlite() {
            text.watch(sqlite);
        }
        Writer {
            backend: conn.backend(),
            state: Mutex::new(Box::new(State { conn, open: None })),
            queued: AtomicUsize::new(0),
            events,
            text,
            reopen,
            committed: Box::default(),
            #[cfg(test)]
            commits: AtomicUsize::new(0),
        }
    }

    pub fn events(&self) -> &EventBus {
        &self.events
    }

    pub fn committed(&self) -> &tokio::sync::Notify {
        &self.committed
    }

    fn lock(&self) -> MutexGuard<'_, Box<State>> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        // A panic while holding the lock leaves no half-applied change: transactions
        // roll back on drop, and a grouped writer's panic is caught and its savepoint
        // rolled back. The connection is safe to keep using.
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.queued.fetch_sub(1, Ordering::SeqCst);
        state
    }

    /// Runs `f` with the connection to itself, once any open group is committed.
    pub fn exclusive<R>(&self, f: impl FnOnce(&mut Conn) -> R) -> R {
        self.off_async(|| self.exclusive_here(f))
    }

    /// Runs `f`, which uses the connection, off the async worker it is called on when
    /// the connection is PostgreSQL's (whose client blocks on a runtime of its own).
    fn off_async<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.backend {
            Backend::Sqlite => f(),
            Backend::Postgres => off_async_worker(f),
        }
    }

    fn exclusive_here<R>(&self, f: impl FnOnce(&mut Conn) -> R) -> R {
        let mut state = self.lock();
        self.commit_group(&mut state);
        let out = f(&mut state.conn);
        self.index_committed(&state.conn);
        out
    }

    /// Runs `f` in one write transaction of its own acting for `actor`, committed
    /// only if it succeeds.
    pub fn transaction<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.exclusive(|conn| self.transaction_on(conn, actor, f))
    }

    /// As [`Writer::transaction`], on a connection [`Writer::exclusive`] handed out.
    pub fn transaction_on<R>(
        &self,
        conn: &mut Conn,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        // The mark is read as the host: under row-level security a person sees only
        // their own history rows, and the mark is the last of everyone's.
        crate::sql::begin(conn, self.reopen.as_ref(), Actor::System, Access::Write)?;
        let out = catch_unwind(AssertUnwindSafe(|| {
            let mark = self.mark(&conn.tx())?;
            conn.act_for(actor)?;
            Ok((mark, f(&conn.tx())?))
        }));
        let (mark, out) = match out {
            Ok(Ok(out)) => out,
            failed => {
                // Nothing of a failed or panicking write stays, and the connection is
                // left with no transaction open for the next one.
                if conn.in_transaction()
                    && let Err(rollback) = conn.rollback()
                {
                    tracing::warn!("rolling back a failed write: {rollback}");
                }
                match failed {
                    Ok(Err(e)) => return Err(e),
                    Err(panic) => resume_unwind(panic),
                    Ok(Ok(_)) => unreachable!("matched above"),
                }
            }
        };
        conn.commit()?;
        self.committed.notify_one();
        #[cfg(test)]
        self.commits.fetch_add(1, Ordering::SeqCst);
        if let Some(mark) = mark {
            self.announce_since(conn, mark);
        }
        Ok(out)
    }

    /// Runs `f` in a savepoint of the group transaction (opening one if none is open),
    /// acting for `actor` and, for a person, holding their write lock ([`PERSON_LOCK`])
    /// to the commit; returns once the commit holding its change is durable. On
    /// PostgreSQL entering the savepoint (with the last member's release, the role and
    /// the lock) is one round trip: every statement of a group runs under the locks
    /// its members took, so the fewer round trips the shorter the line behind them.
    pub fn grouped<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.off_async(|| self.grouped_here(actor, f))
    }

    fn grouped_here<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut state = self.lock();
        if state.open.is_none() {
            let state = &mut **state;
            crate::sql::begin(
                &mut state.conn,
                self.reopen.as_ref(),
                Actor::System,
                Access::Write,
            )?;
            let mark = match self.mark(&state.conn.tx()) {
                Ok(mark) => mark,
                Err(e) => {
                    let _ = state.conn.rollback();
                    return Err(e);
                }
            };
            state.open = Some(Group {
                members: 0,
                unreleased: None,
                mark,
                lost: None,
                done: Arc::default(),
            });
        }
        let group = state.open.as_mut().expect("a group is open");
        let (name, release) = (format!("member{}", group.members), group.unreleased.take());
        let lock = match actor {
            Actor::User(user) => Some((PERSON_LOCK, user)),
            Actor::System => None,
        };
        let (out, clean) = match state
            .conn
            .enter_savepoint(release.as_deref(), &name, actor, lock)
        {
            Ok(()) => run_in_savepoint(&state.conn.tx(), &name, f),
            Err(e) => (Ok(Err(e.into())), roll_back_to(&state.conn.tx(), &name)),
        };
        let gone = !state.conn.in_transaction();
        let queued = self.queued.load(Ordering::SeqCst);
        // The server went away under the group (PostgreSQL): every member fails as
        // unavailable, which a client may retry, not as the host's own failure.
        let server_gone = state.conn.is_closed();
        let group = state.open.as_mut().expect("a group is open");
        group.members += 1;
        group.unreleased = clean.then_some(name);
        if group.lost.is_none() && (gone || !clean || server_gone) {
            // The statement failed and took the transaction with it, or this writer's
            // changes could not be undone: the whole group fails.
            group.lost = Some(match &out {
                _ if server_gone => {
                    SharedError::Unavailable("the connection to the database was lost".into())
                }
                Ok(Err(e)) if gone => SharedError::of_store(e),
                _ => transaction_gone(),
            });
        }
        let done = group.done.clone();
        let hand_on = group.lost.is_none() && group.members < MAX_GROUP && queued > 0;
        if !hand_on {
            self.commit_group(&mut state);
        }
        drop(state);
        let out = match out {
            Ok(out) => out?,
            Err(panic) => resume_unwind(panic),
        };
        done.wait().map_err(SharedError::into_error)?;
        Ok(out)
    }

    /// Commits the open group, if any, and tells its members how that went.
    fn commit_group(&self, state: &mut State) {
        let Some(group) = state.open.take() else {
            return;
        };
        let outcome = match group.lost {
            Some(lost) => Err(lost),
            None => state.conn.commit().map_err(|e| SharedError::of(&e)),
        };
        if outcome.is_err() && state.conn.in_transaction() {
            // SQLite may or may not have rolled back already; either way none of the
            // group's changes is committed.
            if let Err(e) = state.conn.rollback() {
                tracing::error!("rolling back a failed group commit: {e}");
            }
        }
        self.index_committed(&state.conn);
        if outcome.is_ok() {
            self.committed.notify_one();
            #[cfg(test)]
            self.commits.fetch_add(1, Ordering::SeqCst);
            if let Some(mark) = group.mark {
                self.announce_since(&mut state.conn, mark);
            }
        }
        group.done.finish(outcome);
    }

    /// Brings the search index up to date with what the transaction changed.
    fn index_committed(&self, conn: &Conn) {
        if let Some(sqlite) = conn.as_sqlite() {
            self.text.committed(sqlite);
        }
    }

    /// The last history row, when anyone listens for the rows a commit adds (on
    /// SQLite: on PostgreSQL every daemon hears of them from the server, `store.rs`).
    fn mark(&self, tx: &Tx) -> Result<Option<i64>, StoreError> {
        if !self.events.has_subscribers() || self.backend == Backend::Postgres {
            return Ok(None);
        }
        Ok(Some(tx.query_one(
            "SELECT coalesce(max(id), 0) FROM history",
            &[],
            |r| r.get(0),
        )?))
    }

    /// Publishes the history rows after `mark`. The change is committed already, so a
    /// failure here only costs subscribers a notification; it is logged, not returned.
    fn announce_since(&self, conn: &mut Conn, mark: i64) {
        let rows = conn
            .transaction(Actor::System, Access::Read)
            .and_then(|tx| {
                tx.query(
                    "SELECT user_id, memory_id, event FROM history WHERE id > ?1 ORDER BY id",
                    &[mark.into()],
                    |r| {
                        Ok((
                            r.get::<String>(0)?,
                            r.get::<String>(1)?,
                            r.get::<String>(2)?,
                        ))
                    },
                )
            });
        match rows {
            Ok(rows) => {
                for (user, id, change) in rows {
                    self.events.publish(memory_event(user, &id, &change));
                }
            }
            Err(e) => tracing::warn!("cannot announce committed memory changes: {e}"),
        }
    }
}

/// The event announcing a history row: `change` is its event (`ADD`, `UPDATE`, ...).
pub(super) fn memory_event(user: String, id: &str, change: &str) -> Event {
    let kind = match change {
        "ADD" | "RESTORE" => EventKind::MemoryCreated,
        "DELETE" | "DISMISS" => EventKind::MemoryDeleted,
        _ => EventKind::MemoryUpdated,
    };
    Event {
        kind,
        user,
        data: serde_json::json!({ "id": id, "change": change }),
    }
}

/// The error members get when the transaction vanished under them.
fn transaction_gone() -> SharedError {
    SharedError::Sqlite {
        code: rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        message: Some("the group transaction was rolled back".into()),
    }
}

/// Runs `f` in savepoint `name`, which the caller opened (and releases later); on an
/// error or a panic the savepoint is rolled back, so that nothing of this writer's
/// stays in the group. A panic is returned as `Err` for the caller to resume once the
/// group is taken care of. The flag is false when the savepoint could not be rolled
/// back.
fn run_in_savepoint<R>(
    tx: &Tx,
    name: &str,
    f: impl FnOnce(&Tx) -> Result<R, StoreError>,
) -> (std::thread::Result<Result<R, StoreError>>, bool) {
    match catch_unwind(AssertUnwindSafe(|| f(tx))) {
        Ok(Ok(value)) => (Ok(Ok(value)), true),
        failed => (failed, roll_back_to(tx, name)),
    }
}

/// Undoes savepoint `name` (kept open); false when it cannot be, the transaction
/// being lost (or the savepoint never opened).
fn roll_back_to(tx: &Tx, name: &str) -> bool {
    tx.batch(&format!("ROLLBACK TO {name}")).is_ok()
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;

    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        writer: Arc<Writer>,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.db");
        let conn = crate::sqlite::open_wal(&path, "FULL").expect("open");
        conn.execute_batch("CREATE TABLE t (x TEXT NOT NULL)")
            .expect("schema");
        Fixture {
            writer: Arc::new(Writer::new(
                Conn::sqlite(conn),
                None,
                EventBus::default(),
                Arc::new(TextIndex::new().expect("index")),
            )),
            path,
            _dir: dir,
        }
    }

    impl Fixture {
        /// What a fresh connection sees: the committed rows.
        fn committed(&self) -> Vec<String> {
            let conn = rusqlite::Connection::open(&self.path).expect("reader");
            let mut stmt = conn.prepare("SELECT x FROM t ORDER BY x").expect("select");
            stmt.query_map([], |r| r.get(0))
                .expect("rows")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        }

        fn commits(&self) -> usize {
            self.writer.commits.load(Ordering::SeqCst)
        }

        /// Starts a grouped write of `x` that, once its insert ran, holds the
        /// connection until another thread is queued for it, so that the next write
        /// joins its group. Returns once the insert ran.
        fn first_of_a_group(&self, x: &'static str) -> thread::JoinHandle<Result<(), StoreError>> {
            let writer = self.writer.clone();
            let (inserted, ran) = mpsc::channel();
            let handle = thread::spawn(move || {
                let queued = &writer.queued;
                writer.grouped(Actor::System, |c| {
                    c.execute("INSERT INTO t VALUES (?1)", &[x.into()])?;
                    inserted.send(()).expect("send");
                    while queued.load(Ordering::SeqCst) == 0 {
                        thread::yield_now();
                    }
                    Ok(())
                })
            });
            ran.recv().expect("the first write ran");
            handle
        }
    }

    fn insert(c: &Tx, x: &str) -> Result<(), StoreError> {
        c.execute("INSERT INTO t VALUES (?1)", &[x.into()])?;
        Ok(())
    }

    #[test]
    fn concurrent_writes_share_one_commit_and_return_once_it_is_durable() {
        let f = fixture();
        let first = f.first_of_a_group("a");
        // The first write has run but is not committed: it waits for its group.
        assert_eq!(f.committed(), Vec::<String>::new());
        f.writer
            .grouped(Actor::System, |c| insert(c, "b"))
            .expect("second");
        first.join().expect("thread").expect("first");
        assert_eq!(f.committed(), ["a", "b"]);
        assert_eq!(f.commits(), 1, "one commit for both");
        // Alone, a write commits at once.
        f.writer
            .grouped(Actor::System, |c| insert(c, "c"))
            .expect("alone");
        assert_eq!(f.committed(), ["a", "b", "c"]);
        assert_eq!(f.commits(), 2);
    }

    #[test]
    fn a_failed_write_fails_alone_and_leaves_nothing_behind() {
        let f = fixture();
        let first = f.first_of_a_group("a");
        let failed = f.writer.grouped(Actor::System, |c| {
            insert(c, "half of a change")?;
            Err::<(), _>(StoreError::Invalid {
                field: "summary",
                reason: "refused after a first statement".into(),
            })
        });
        assert!(
            matches!(failed, Err(StoreError::Invalid { .. })),
            "{failed:?}"
        );
        first.join().expect("thread").expect("first");
        assert_eq!(f.committed(), ["a"]);
    }

    #[test]
    fn a_panicking_write_fails_alone_and_the_panic_reaches_its_caller() {
        let f = fixture();
        let first = f.first_of_a_group("a");
        let writer = f.writer.clone();
        let panicked = thread::spawn(move || {
            writer.grouped(Actor::System, |c| -> Result<(), StoreError> {
                insert(c, "half of a change")?;
                panic!("a bug in the middle of a write");
            })
        })
        .join();
        assert!(panicked.is_err(), "the panic reached the caller");
        first.join().expect("thread").expect("first");
        assert_eq!(f.committed(), ["a"]);
        f.writer
            .grouped(Actor::System, |c| insert(c, "b"))
            .expect("still writes");
        assert_eq!(f.committed(), ["a", "b"]);
    }

    #[test]
    fn when_the_transaction_is_lost_every_member_fails_and_nothing_is_committed() {
        let f = fixture();
        let first = f.first_of_a_group("a");
        // What SQLite does itself on SQLITE_FULL or an I/O error: the transaction is
        // rolled back under the group.
        let second = f.writer.grouped(Actor::System, |c| {
            insert(c, "b")?;
            c.batch("ROLLBACK")?;
            Ok(())
        });
        assert!(second.is_err(), "{second:?}");
        let first = first.join().expect("thread");
        assert!(
            first.is_err(),
            "the first member's change is gone: {first:?}"
        );
        assert_eq!(f.committed(), Vec::<String>::new());
        assert_eq!(f.commits(), 0);
        f.writer
            .grouped(Actor::System, |c| insert(c, "c"))
            .expect("writes again");
        assert_eq!(f.committed(), ["c"]);
    }

    #[test]
    fn a_transaction_of_its_own_commits_the_open_group_first() {
        let f = fixture();
        let first = f.first_of_a_group("a");
        f.writer
            .transaction(Actor::System, |tx| {
                // The group was committed before this transaction began.
                let seen: i64 = tx.query_one("SELECT count(*) FROM t", &[], |r| r.get(0))?;
                assert_eq!(seen, 1);
                insert(tx, "b")
            })
            .expect("transaction");
        first.join().expect("thread").expect("first");
        assert_eq!(f.committed(), ["a", "b"]);
        assert_eq!(f.commits(), 2);
    }

    #[test]
    fn many_threads_lose_no_write() {
        let f = fixture();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let writer = f.writer.clone();
                thread::spawn(move || {
                    for i in 0..25 {
                        writer
                            .grouped(Actor::System, |c| insert(c, &format!("{t:02}-{i:02}")))
                            .expect("write");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        assert_eq!(f.committed().len(), 200);
        assert!(f.commits() <= 200);
    }
}

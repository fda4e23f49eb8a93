//! What every SQLite database of Engram shares (the Second Brain, the gate's audit log,
//! the schedules): opening a file in WAL mode with a busy timeout, and schema
//! migrations versioned with `PRAGMA user_version`, where each migration runs once in
//! its own transaction and a database newer than this binary is refused rather than
//! misread.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags};

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "{what} has schema version {found}, newer than this engram supports ({supported}); upgrade engram"
    )]
    TooNew {
        what: &'static str,
        found: i64,
        supported: i64,
    },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Whether a statement failed because the disk is full: SQLite reports a write that
/// ran out of space as SQLITE_FULL, whatever file it was writing (database, WAL,
/// journal).
pub fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Opens (creating it and its directory) the database at `path` in WAL mode, with
/// `synchronous` (`FULL` where a committed change must survive a power cut, `NORMAL`
/// where a crash-safe log is enough). The error is a reason for the caller's own
/// "cannot open" error.
pub fn open_wal(path: &Path, synchronous: &str) -> Result<Connection, String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    create_private(path).map_err(|e| e.to_string())?;
    let conn = Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("journal mode is {mode}, WAL is required"));
    }
    conn.pragma_update(None, "synchronous", synchronous)
        .map_err(|e| e.to_string())?;
    statement_settings(&conn).map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Creates the database file `path`, empty and readable by its owner only (0600),
/// unless it exists. SQLite gives the WAL and shared-memory files it creates later the
/// database file's mode, so the memories, decisions and schedules stay private whatever
/// the process's umask.
pub fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

/// Turns on the query planner stability guarantee. Without it SQLite plans a statement
/// for the values bound to some parameters (`LIMIT ?`, `LIKE ?`), and binding new
/// values makes every cached statement re-prepare itself on its next step (a tenth of
/// the daemon's CPU under the mixed REST load went there).
///
/// Also keeps more prepared statements per connection than rusqlite's default 16, so
/// that a service's hot statements all stay prepared.
fn statement_settings(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;

/// Read-only connections to one WAL database, kept for reuse. WAL lets readers run
/// beside the writer and each other, so reads through the pool run in parallel.
///
/// Readers do not map the database (`mmap_size` stays 0): in WAL mode SQLite unmaps a
/// connection's whole mapping at its first read after any commit
/// (`pagerBeginReadTransaction`), so under a steady stream of writes every read paid
/// for munmap, mmap and a page fault per page again, which cost more than reading
/// those pages with `pread` (under the mixed REST load a GET by id took 0.47 ms at p50
/// mapped, 0.27 ms not).
pub struct ReaderPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    max_idle: usize,
    /// Run on each connection as it opens (the functions its reads call).
    setup: fn(&Connection) -> rusqlite::Result<()>,
}

impl ReaderPool {
    /// Keeps at most `max_idle` connections open between reads; more may be open
    /// during a burst.
    pub fn new(path: &Path, max_idle: usize) -> ReaderPool {
        ReaderPool {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            max_idle,
            setup: |_| Ok(()),
        }
    }

    /// Runs `setup` on each connection as it opens: for what reads need registered on
    /// their connection (SQL functions).
    pub fn with_setup(self, setup: fn(&Connection) -> rusqlite::Result<()>) -> ReaderPool {
        ReaderPool { setup, ..self }
    }

    /// Runs `f` on a read-only connection, in one read transaction: it sees every
    /// write committed before the call and nothing committed while it runs, and its
    /// statements share one snapshot (and one check of the WAL).
    pub fn read<R, E: From<rusqlite::Error>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, E>,
    ) -> Result<R, E> {
        let idle = self.idle().pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.open()?,
        };
        conn.prepare_cached("BEGIN")?.execute([])?;
        let out = f(&conn);
        // A read changes nothing: ending it only lets go of the snapshot. A connection
        // still in a transaction afterwards is not reused.
        let ended = conn
            .prepare_cached("COMMIT")
            .and_then(|mut end| end.execute([]));
        let mut idle = self.idle();
        if ended.is_ok() && conn.is_autocommit() && idle.len() < self.max_idle {
            idle.push(conn);
        }
        out
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        open_reader(&self.path, self.setup)
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Connection>> {
        // The vector is only pushed to and popped from: a panic cannot leave it torn.
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A read-only connection to the database at `path`, with `setup` run on it (the
/// functions its reads call).
pub fn open_reader(
    path: &Path,
    setup: fn(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    statement_settings(&conn)?;
    setup(&conn)?;
    Ok(conn)
}

/// One step of a database's schema. Its number, the version it produces, is its place
/// in its schema's list (index + 1): the numbering `engram db status` shows, which
/// another backend of the same database is to share.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// One line for the operator (`engram db status`).
    pub description: &'static str,
    pub sql: &'static str,
}

/// The schema of one kind of database: its migrations in order, and what a connection
/// needs registered before they run (SQL functions their triggers call).
#[derive(Debug)]
pub struct Schema {
    /// How errors name the database: `the audit log`.
    pub what: &'static str,
    pub migrations: &'static [Migration],
    pub prepare: fn(&Connection) -> rusqlite::Result<()>,
}

impl Schema {
    /// A schema whose connections need nothing registered.
    pub const fn new(what: &'static str, migrations: &'static [Migration]) -> Schema {
        Schema {
            what,
            migrations,
            prepare: nothing_to_prepare,
        }
    }

    /// The version this binary writes (and the newest it opens).
    pub const fn latest(&self) -> i64 {
        self.migrations.len() as i64
    }

    /// Prepares `conn` and brings its schema up to [`Schema::latest`]: what opening the
    /// database does, and what `engram db migrate` does.
    pub fn migrate(&self, conn: &mut Connection) -> Result<(), SchemaError> {
        (self.prepare)(conn)?;
        migrate(conn, self.migrations, self.what)
    }

    /// The migrations a database at `version` has still to run, with their numbers.
    pub fn pending(&self, version: i64) -> impl Iterator<Item = (i64, &'static Migration)> {
        let migrations: &'static [Migration] = self.migrations;
        migrations
            .iter()
            .enumerate()
            .map(|(index, migration)| (index as i64 + 1, migration))
            .filter(move |(number, _)| *number > version)
    }
}

fn nothing_to_prepare(_: &Connection) -> rusqlite::Result<()> {
    Ok(())
}

/// The schema version of a database: `PRAGMA user_version`, 0 for an empty one.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Reads the schema version of the database at `path` without changing anything there
/// (read-only; `None` when there is no such file).
pub fn read_schema_version(path: &Path) -> rusqlite::Result<Option<i64>> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    schema_version(&conn).map(Some)
}

/// Brings the schema of `what` up to `migrations.len()`; index + 1 of each migration
/// is the version it produces. Each migration runs in a transaction of its own that
/// also sets the version, so a failure (or a crash) leaves the database at the last
/// version that completed, with nothing of the failed one applied.
pub fn migrate(
    conn: &mut Connection,
    migrations: &[Migration],
    what: &'static str,
) -> Result<(), SchemaError> {
    let supported = migrations.len() as i64;
    let found = schema_version(conn)?;
    if found > supported {
        return Err(SchemaError::TooNew {
            what,
            found,
            supported,
        });
    }
    for (index, migration) in migrations.iter().enumerate().skip(found.max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(migration.sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

/// For each schema's own test (versioning itself is tested below): `migrations`
/// apply to an empty database and leave it at their version.
#[cfg(test)]
pub fn assert_migrations_apply_to_an_empty_database(migrations: &[Migration], what: &'static str) {
    let mut conn = Connection::open_in_memory().expect("open");
    migrate(&mut conn, migrations, what).expect("migrate");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, migrations.len() as i64, "{what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIGRATIONS: &[Migration] = &[
        Migration {
            description: "a",
            sql: "CREATE TABLE a (x INTEGER);",
        },
        Migration {
            description: "a.y",
            sql: "ALTER TABLE a ADD COLUMN y TEXT;",
        },
    ];

    #[test]
    fn a_failing_migration_leaves_the_version_and_the_schema_unchanged() {
        const FAILING: &[Migration] = &[
            MIGRATIONS[0],
            Migration {
                description: "b, then a statement that fails",
                sql: "CREATE TABLE b (x INTEGER); INSERT INTO no_such_table VALUES (1);",
            },
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.db");
        let mut conn = open_wal(&path, "FULL").expect("open");
        let error = migrate(&mut conn, FAILING, "test").expect_err("the second fails");
        assert!(error.to_string().contains("no_such_table"), "{error}");
        drop(conn);
        assert_eq!(read_schema_version(&path).expect("read"), Some(1));
        let conn = open_wal(&path, "FULL").expect("reopen");
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .expect("tables");
        assert_eq!(tables, ["a"], "nothing of the failed migration stays");
    }

    #[test]
    fn pending_names_the_migrations_after_a_version() {
        let schema = Schema::new("test", MIGRATIONS);
        assert_eq!(schema.latest(), 2);
        let pending: Vec<(i64, &str)> =
            schema.pending(1).map(|(n, m)| (n, m.description)).collect();
        assert_eq!(pending, [(2, "a.y")]);
        assert_eq!(schema.pending(0).count(), 2);
        assert_eq!(schema.pending(2).count(), 0);
        assert_eq!(
            read_schema_version(Path::new("/nonexistent/x.db")).expect("absent"),
            None
        );
    }

    #[test]
    fn migrates_once_and_refuses_a_newer_database() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn, &MIGRATIONS[..1], "test").expect("first");
        migrate(&mut conn, MIGRATIONS, "test").expect("second only");
        migrate(&mut conn, MIGRATIONS, "test").expect("idempotent");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(version, 2);
        assert!(matches!(
            migrate(&mut conn, &MIGRATIONS[..1], "test"),
            Err(SchemaError::TooNew {
                found: 2,
                supported: 1,
                ..
            })
        ));
    }

    #[test]
    fn opens_in_wal_mode_creating_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/x.db");
        let conn = open_wal(&path, "FULL").expect("open");
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
                .expect("write");
            for file in ["x.db", "x.db-wal", "x.db-shm"] {
                let mode = std::fs::metadata(path.with_file_name(file))
                    .expect(file)
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o777, 0o600, "{file}");
            }
        }
    }
}

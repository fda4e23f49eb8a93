//! The schedules database's SQLite schema, versioned with `PRAGMA user_version` as the
//! audit log's is: each migration runs once, in its own transaction, and a database
//! newer than this binary is refused rather than misread.

use rusqlite::Connection;

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[&str] = &[
    // 1: one row per schedule. Times are milliseconds since the epoch (UTC).
    r#"
    CREATE TABLE schedules (
        id           TEXT PRIMARY KEY,
        skill        TEXT NOT NULL,
        input        TEXT NOT NULL,
        every_secs   INTEGER NOT NULL CHECK (every_secs >= 60),
        user_id      TEXT NOT NULL,
        enabled      INTEGER NOT NULL DEFAULT 1,
        created_at   INTEGER NOT NULL,
        next_run_at  INTEGER NOT NULL,
        last_run_at  INTEGER,
        last_turn_id TEXT,
        last_error   TEXT
    );
    CREATE INDEX schedules_by_next_run ON schedules (enabled, next_run_at);
    "#,
];

pub use crate::sqlite::SchemaError;

/// Brings the schema up to date.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    crate::sqlite::migrate(conn, MIGRATIONS, "the schedules database")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Versioning is tested in `crate::sqlite`; this checks that these migrations
    /// apply to an empty database.
    #[test]
    fn migrations_apply_to_an_empty_database() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
    }
}

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

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the schedules database has schema version {found}, newer than this engram supports ({supported}); upgrade engram"
    )]
    TooNew { found: i64, supported: i64 },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema up to [`VERSION`].
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > VERSION {
        return Err(SchemaError::TooNew {
            found,
            supported: VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_schema_migrates_once_and_refuses_a_newer_database() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        migrate(&mut conn).expect("idempotent");
        conn.pragma_update(None, "user_version", VERSION + 1)
            .expect("bump");
        assert!(matches!(
            migrate(&mut conn),
            Err(SchemaError::TooNew { .. })
        ));
    }
}

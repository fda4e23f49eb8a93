//! The audit log's SQLite schema, versioned with `PRAGMA user_version` as the Second
//! Brain's is: each migration runs once, in its own transaction, and a database newer
//! than this binary is refused rather than misread.

use rusqlite::Connection;

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[&str] = &[
    // 1: one row per gate decision. `seq` orders rows as they were written (the clock
    // may be moved or step back; insertion order cannot), and pages and pruning key on
    // it; `at` is for the age limit and for people.
    r#"
    CREATE TABLE decisions (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        at           INTEGER NOT NULL,
        turn_id      TEXT,
        user_id      TEXT,
        skill        TEXT,
        caller       TEXT NOT NULL,
        tool         TEXT NOT NULL,
        decision     TEXT NOT NULL CHECK (decision IN ('allow','ask','deny')),
        reason_code  TEXT NOT NULL,
        reason       TEXT NOT NULL,
        args_summary TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX decisions_by_at ON decisions (at);
    CREATE INDEX decisions_by_turn ON decisions (turn_id, seq);
    "#,
];

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the audit log has schema version {found}, newer than this engram supports ({supported}); upgrade engram"
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
    fn gate_schema_migrates_once_and_refuses_a_newer_database() {
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

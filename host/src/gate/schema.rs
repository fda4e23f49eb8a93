//! The audit log's SQLite schema, versioned with `PRAGMA user_version` as the Second
//! Brain's is: each migration runs once, in its own transaction, and a database newer
//! than this binary is refused rather than misread.

use rusqlite::Connection;

use crate::sqlite::{Migration, Schema};

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[Migration] = &[
    // 1: one row per gate decision. `seq` orders rows as they were written (the clock
    // may be moved or step back; insertion order cannot), and pages and pruning key on
    // it; `at` is for the age limit and for people.
    Migration {
        description: "one row per gate decision",
        sql: r#"
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
    },
];

pub use crate::sqlite::SchemaError;

/// The audit log's schema (`engram db status` lists it).
pub static SCHEMA: Schema = Schema::new("the audit log", MIGRATIONS);

/// Brings the schema up to date.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    SCHEMA.migrate(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_to_an_empty_database() {
        crate::sqlite::assert_migrations_apply_to_an_empty_database(MIGRATIONS, "the audit log");
    }
}

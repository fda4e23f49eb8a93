//! The schedules database's SQLite schema, versioned with `PRAGMA user_version` as the
//! audit log's is: each migration runs once, in its own transaction, and a database
//! newer than this binary is refused rather than misread.

use rusqlite::Connection;

use crate::pg::PgSchema;
use crate::sqlite::{Migration, Schema};

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[Migration] = &[
    // 1: one row per schedule. Times are milliseconds since the epoch (UTC).
    Migration {
        description: "one row per schedule, run at an interval",
        sql: r#"
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
    },
    // 2: a schedule runs every `every_secs` or at the times of a `cron` expression,
    // exactly one of them. SQLite cannot relax a NOT NULL in place, so the table is
    // rebuilt (rows copied as they are: every existing schedule is an interval one).
    Migration {
        description: "schedules run at an interval or by a cron expression",
        sql: r#"
    CREATE TABLE schedules_v2 (
        id           TEXT PRIMARY KEY,
        skill        TEXT NOT NULL,
        input        TEXT NOT NULL,
        every_secs   INTEGER CHECK (every_secs >= 60),
        cron         TEXT,
        user_id      TEXT NOT NULL,
        enabled      INTEGER NOT NULL DEFAULT 1,
        created_at   INTEGER NOT NULL,
        next_run_at  INTEGER NOT NULL,
        last_run_at  INTEGER,
        last_turn_id TEXT,
        last_error   TEXT,
        CHECK ((every_secs IS NULL) <> (cron IS NULL))
    );
    INSERT INTO schedules_v2 (id, skill, input, every_secs, user_id, enabled, created_at,
                              next_run_at, last_run_at, last_turn_id, last_error)
        SELECT id, skill, input, every_secs, user_id, enabled, created_at,
               next_run_at, last_run_at, last_turn_id, last_error
        FROM schedules;
    DROP TABLE schedules;
    ALTER TABLE schedules_v2 RENAME TO schedules;
    CREATE INDEX schedules_by_next_run ON schedules (enabled, next_run_at);
    "#,
    },
];

pub use crate::sqlite::SchemaError;

/// The schedules database's schema (`engram db status` lists it).
pub static SCHEMA: Schema = Schema::new("the schedules database", MIGRATIONS);

/// The schedules on PostgreSQL, at version 2.
pub static PG_SCHEMA: PgSchema = PgSchema {
    what: "the schedules database",
    namespace: "schedules",
    created_at: 2,
    create: r#"
    CREATE TABLE schedules (
        id           TEXT PRIMARY KEY,
        skill        TEXT NOT NULL,
        input        TEXT NOT NULL,
        every_secs   BIGINT CHECK (every_secs >= 60),
        cron         TEXT,
        user_id      TEXT NOT NULL,
        enabled      BIGINT NOT NULL DEFAULT 1,
        created_at   BIGINT NOT NULL,
        next_run_at  BIGINT NOT NULL,
        last_run_at  BIGINT,
        last_turn_id TEXT,
        last_error   TEXT,
        CHECK ((every_secs IS NULL) <> (cron IS NULL))
    );
    CREATE INDEX schedules_by_next_run ON schedules (enabled, next_run_at);
    "#,
    later: &[],
    user_tables: &["schedules"],
};

/// Brings the schema up to date.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    SCHEMA.migrate(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_to_an_empty_database() {
        crate::sqlite::assert_migrations_apply_to_an_empty_database(
            MIGRATIONS,
            "the schedules database",
        );
    }

    #[test]
    fn a_version_1_database_keeps_its_schedules() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::sqlite::migrate(&mut conn, &MIGRATIONS[..1], "v1").expect("v1");
        conn.execute(
            "INSERT INTO schedules (id, skill, input, every_secs, user_id, enabled, created_at, next_run_at, last_turn_id)
             VALUES ('sch_1', 'web-search', 'news', 3600, 'alice', 1, 10, 20, 'turn_1')",
            [],
        )
        .expect("insert");
        migrate(&mut conn).expect("migrate");
        let row: (String, Option<i64>, Option<String>, String, i64, Option<String>) = conn
            .query_row(
                "SELECT skill, every_secs, cron, user_id, next_run_at, last_turn_id FROM schedules WHERE id = 'sch_1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .expect("kept");
        assert_eq!(
            row,
            (
                "web-search".into(),
                Some(3600),
                None,
                "alice".into(),
                20,
                Some("turn_1".into())
            )
        );
        // Exactly one of the two cadences.
        for (every, cron) in [(None, None), (Some(60), Some("* * * * *"))] {
            let result = conn.execute(
                "INSERT INTO schedules (id, skill, input, every_secs, cron, user_id, created_at, next_run_at)
                 VALUES ('sch_x', 's', 'i', ?1, ?2, 'u', 0, 0)",
                rusqlite::params![every, cron],
            );
            assert!(result.is_err(), "{every:?} {cron:?}");
        }
    }
}

//! What was imported, by key: `{data_dir}/memory/imports.db` (SQLite, WAL), one row
//! per conversation or memory an import brought, so that importing the same file again
//! adds nothing. It names what the key became (a conversation id, a memory id); the
//! memory itself stays the store's, and forgetting it does not bring it back at the
//! next import.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use crate::pg::PgSchema;
use crate::sqlite::{Migration, Schema};
use crate::time::Clock;

/// The ledger's schema (`engram db status` lists it).
pub static SCHEMA: Schema = Schema::new(
    "the import ledger",
    &[Migration {
        description: "one row per imported conversation or memory",
        sql: r#"
    CREATE TABLE imported (
        user_id     TEXT NOT NULL,
        key         TEXT NOT NULL,
        became      TEXT NOT NULL,
        imported_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, key)
    ) WITHOUT ROWID;
"#,
    }],
);

/// The ledger on PostgreSQL, at version 1.
pub static PG_SCHEMA: PgSchema = PgSchema {
    what: "the import ledger",
    namespace: "imports",
    created_at: 1,
    create: r#"
    CREATE TABLE imported (
        user_id     TEXT NOT NULL,
        key         TEXT NOT NULL,
        became      TEXT NOT NULL,
        imported_at BIGINT NOT NULL,
        PRIMARY KEY (user_id, key)
    );
"#,
    later: &[],
    user_tables: &["imported"],
};

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{0}")]
    Open(String),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
    #[error(transparent)]
    Schema(#[from] crate::sqlite::SchemaError),
}

/// The ledger; imports run one at a time through its connection.
pub struct Ledger {
    conn: Mutex<Connection>,
}

impl Ledger {
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let mut conn = crate::sqlite::open_wal(path, "FULL").map_err(LedgerError::Open)?;
        SCHEMA.migrate(&mut conn)?;
        Ok(Ledger {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        match self.conn.lock() {
            Ok(conn) => conn,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether `key` was imported for `user`.
    pub fn has(&self, user: &str, key: &str) -> Result<bool, LedgerError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT 1 FROM imported WHERE user_id = ?1 AND key = ?2",
                params![user, key],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Records that `key` was imported for `user` as `became`.
    pub fn put(&self, user: &str, key: &str, became: &str) -> Result<(), LedgerError> {
        self.conn().execute(
            "INSERT OR REPLACE INTO imported (user_id, key, became, imported_at) VALUES (?1, ?2, ?3, ?4)",
            params![user, key, became, crate::time::SystemClock.now_ms()],
        )?;
        Ok(())
    }
}

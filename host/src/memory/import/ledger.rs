//! What was imported, by key: `{data_dir}/memory/imports.db` (SQLite, WAL) or
//! PostgreSQL's `imports` schema, one row per conversation or memory an import brought
//! for a person (read and written acting for that person), so that importing the same
//! file again adds nothing. It names what the key became (a conversation id, a memory
//! id); the memory itself stays the store's, and forgetting it does not bring it back
//! at the next import.

use std::path::Path;

use crate::pg::PgSchema;
use crate::sql::{Actor, Database, PgStore, SqlError};
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
    Sql(#[from] SqlError),
    #[error(transparent)]
    Schema(#[from] crate::sqlite::SchemaError),
}

/// The ledger; imports run one at a time through its connection.
pub struct Ledger {
    db: Database,
}

impl Ledger {
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let mut conn = crate::sqlite::open_wal(path, "FULL").map_err(LedgerError::Open)?;
        SCHEMA.migrate(&mut conn)?;
        Ok(Ledger {
            db: Database::sqlite(conn),
        })
    }

    /// The ledger in PostgreSQL's `imports` schema at `url`, migrated to this
    /// release's version.
    pub fn postgres(url: &str) -> Result<Ledger, LedgerError> {
        let store = PgStore::open(url, &PG_SCHEMA)?;
        Ok(Ledger {
            db: Database::postgres(store, 1)?,
        })
    }

    /// Whether `key` was imported for `user`.
    pub fn has(&self, user: &str, key: &str) -> Result<bool, LedgerError> {
        let found = self.db.read(Actor::User(user), |tx| {
            tx.query_opt(
                "SELECT 1 FROM imported WHERE user_id = ?1 AND key = ?2",
                &[user.into(), key.into()],
                |_| Ok(()),
            )
        })?;
        Ok(found.is_some())
    }

    /// Records that `key` was imported for `user` as `became`.
    pub fn put(&self, user: &str, key: &str, became: &str) -> Result<(), LedgerError> {
        let now = crate::time::SystemClock.now_ms();
        self.db.write(Actor::User(user), |tx| {
            tx.execute(
                "INSERT INTO imported (user_id, key, became, imported_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (user_id, key) DO UPDATE
                 SET became = excluded.became, imported_at = excluded.imported_at",
                &[user.into(), key.into(), became.into(), now.into()],
            )
        })?;
        Ok(())
    }
}

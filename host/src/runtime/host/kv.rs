//! `engram:plugin/kv`: a small store private to each plugin, persisted in SQLite at
//! `{data_dir}/plugins/kv.sqlite3`. Rows are keyed by plugin name, so no plugin can
//! read another's keys; a plugin without `kv = true` in its manifest gets `denied`.

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;

use super::CallState;
use crate::pg::PgSchema;
use crate::runtime::bindings::kv::{Host, KvError};
use crate::sql::{Actor, Database, PgStore, SqlError};
use crate::sqlite::{Migration, Schema, SchemaError};

pub const MAX_KEY_BYTES: usize = 256;
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
pub const MAX_STORE_BYTES: i64 = 1024 * 1024;

/// The store's schema (`engram db status` lists it). Version 1 is the table stores
/// made before the store was versioned (at version 0) already have: `IF NOT EXISTS`.
pub static SCHEMA: Schema = Schema::new(
    "the plugins' key-value store",
    &[Migration {
        description: "one value per plugin and key",
        sql: "CREATE TABLE IF NOT EXISTS kv (
            plugin TEXT NOT NULL,
            key TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (plugin, key)
        ) WITHOUT ROWID;",
    }],
);

/// The store on PostgreSQL, at version 1. Its rows are keyed by plugin, not by person:
/// the host gives each plugin its own keys, so there is no row-level security here.
pub static PG_SCHEMA: PgSchema = PgSchema {
    what: "the plugins' key-value store",
    namespace: "plugins_kv",
    created_at: 1,
    create: "CREATE TABLE kv (
            plugin TEXT NOT NULL,
            key TEXT NOT NULL,
            value BYTEA NOT NULL,
            PRIMARY KEY (plugin, key)
        );",
    later: &[],
    user_tables: &[],
};

/// The persisted store shared by all plugins (one connection; calls are short). A
/// plugin's keys belong to no person: every call acts for the host.
#[derive(Clone)]
pub struct KvStore {
    db: Arc<Database>,
}

impl KvStore {
    pub fn open(path: &Path) -> Result<KvStore, SchemaError> {
        crate::sqlite::create_private(path).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("{}: {e}", path.display())),
            )
        })?;
        KvStore::init(Connection::open(path)?)
    }

    /// A store that lives only as long as the process (tests, one-off CLI calls).
    pub fn in_memory() -> Result<KvStore, SchemaError> {
        KvStore::init(Connection::open_in_memory()?)
    }

    /// The store on PostgreSQL, migrated to this release's version.
    pub fn postgres(url: &str) -> Result<KvStore, SqlError> {
        let store = PgStore::open(url, &PG_SCHEMA)?;
        Ok(KvStore {
            db: Arc::new(Database::postgres(store, 2)?),
        })
    }

    fn init(mut conn: Connection) -> Result<KvStore, SchemaError> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        SCHEMA.migrate(&mut conn)?;
        Ok(KvStore {
            db: Arc::new(Database::sqlite(conn)),
        })
    }

    pub fn get(&self, plugin: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.db.read(Actor::System, |tx| {
            Ok(tx.query_opt(
                "SELECT value FROM kv WHERE plugin = ?1 AND key = ?2",
                &[plugin.into(), key.into()],
                |row| row.get(0),
            )?)
        })
    }

    pub fn set(&self, plugin: &str, key: &str, value: &[u8]) -> Result<(), KvError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(KvError::TooLarge(format!(
                "key of {} bytes, over {MAX_KEY_BYTES}",
                key.len()
            )));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(KvError::TooLarge(format!(
                "value of {} bytes, over {MAX_VALUE_BYTES}",
                value.len()
            )));
        }
        self.db.write(Actor::System, |tx| {
            // `octet_length` counts bytes on both backends (`length` counts a text's
            // characters).
            let used: i64 = tx.query_one(
                "SELECT COALESCE(SUM(octet_length(key) + octet_length(value)), 0) FROM kv
                 WHERE plugin = ?1 AND key <> ?2",
                &[plugin.into(), key.into()],
                |row| row.get(0),
            )?;
            let total = used + (key.len() + value.len()) as i64;
            if total > MAX_STORE_BYTES {
                return Err(KvError::TooLarge(format!(
                    "the plugin's store would hold {total} bytes, over {MAX_STORE_BYTES}"
                )));
            }
            tx.execute(
                "INSERT INTO kv (plugin, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value",
                &[plugin.into(), key.into(), value.into()],
            )?;
            Ok(())
        })
    }

    pub fn delete(&self, plugin: &str, key: &str) -> Result<(), KvError> {
        self.db.write(Actor::System, |tx| {
            tx.execute(
                "DELETE FROM kv WHERE plugin = ?1 AND key = ?2",
                &[plugin.into(), key.into()],
            )?;
            Ok(())
        })
    }

    pub fn list_keys(&self, plugin: &str, prefix: &str) -> Result<Vec<String>, KvError> {
        self.db.read(Actor::System, |tx| {
            Ok(tx.query(
                "SELECT key FROM kv WHERE plugin = ?1 AND substr(key, 1, length(?2)) = ?2 ORDER BY key",
                &[plugin.into(), prefix.into()],
                |row| row.get(0),
            )?)
        })
    }

    /// Drops every key of a plugin (when it is removed).
    pub fn clear_plugin(&self, plugin: &str) -> Result<(), KvError> {
        self.db.write(Actor::System, |tx| {
            tx.execute("DELETE FROM kv WHERE plugin = ?1", &[plugin.into()])?;
            Ok(())
        })
    }
}

impl From<SqlError> for KvError {
    fn from(e: SqlError) -> Self {
        KvError::Storage(e.to_string())
    }
}

impl CallState {
    fn kv_plugin(&self) -> Result<&str, KvError> {
        if self.plugin.permissions.kv {
            Ok(&self.plugin.name)
        } else {
            Err(KvError::Denied)
        }
    }
}

impl Host for CallState {
    fn get(&mut self, key: String) -> Result<Option<Vec<u8>>, KvError> {
        let plugin = self.kv_plugin()?;
        self.services.kv.get(plugin, &key)
    }

    fn set(&mut self, key: String, value: Vec<u8>) -> Result<(), KvError> {
        let plugin = self.kv_plugin()?;
        self.services.kv.set(plugin, &key, &value)
    }

    fn delete(&mut self, key: String) -> Result<(), KvError> {
        let plugin = self.kv_plugin()?;
        self.services.kv.delete(plugin, &key)
    }

    fn list_keys(&mut self, prefix: String) -> Result<Vec<String>, KvError> {
        let plugin = self.kv_plugin()?;
        self.services.kv.list_keys(plugin, &prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_private_to_each_plugin_and_persist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kv.sqlite3");
        {
            let kv = KvStore::open(&path).expect("open");
            kv.set("a", "k", b"one").expect("set");
            kv.set("b", "k", b"two").expect("set");
        }
        let kv = KvStore::open(&path).expect("reopen");
        assert_eq!(kv.get("a", "k").expect("get"), Some(b"one".to_vec()));
        assert_eq!(kv.get("b", "k").expect("get"), Some(b"two".to_vec()));
        assert_eq!(kv.list_keys("a", "").expect("list"), vec!["k".to_string()]);
        kv.delete("a", "k").expect("delete");
        assert_eq!(kv.get("a", "k").expect("get"), None);
        assert_eq!(kv.get("b", "k").expect("get"), Some(b"two".to_vec()));
    }

    #[test]
    fn sizes_are_bounded() {
        let kv = KvStore::in_memory().expect("open");
        let long_key = "k".repeat(MAX_KEY_BYTES + 1);
        assert!(matches!(
            kv.set("a", &long_key, b"x"),
            Err(KvError::TooLarge(_))
        ));
        let big = vec![0u8; MAX_VALUE_BYTES + 1];
        assert!(matches!(kv.set("a", "k", &big), Err(KvError::TooLarge(_))));
        let value = vec![0u8; MAX_VALUE_BYTES];
        for i in 0..15 {
            kv.set("a", &format!("k{i}"), &value)
                .expect("within the store cap");
        }
        assert!(matches!(
            kv.set("a", "k-last", &value),
            Err(KvError::TooLarge(_))
        ));
        // Overwriting an existing key does not count its old value twice.
        kv.set("a", "k0", &value).expect("overwrite");
    }

    #[test]
    fn list_keys_matches_prefix_literally() {
        let kv = KvStore::in_memory().expect("open");
        kv.set("a", "x%y", b"1").expect("set");
        kv.set("a", "xzy", b"1").expect("set");
        assert_eq!(
            kv.list_keys("a", "x%").expect("list"),
            vec!["x%y".to_string()]
        );
    }
}

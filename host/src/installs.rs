//! What is installed (skills, plugins) kept in the team's PostgreSQL database, so that
//! every daemon on it serves the same (issue 32).
//!
//! The database holds each installed item whole: its metadata (a skill's index entry)
//! and its files, under a revision that counts the kind's changes in commit order. Each
//! daemon keeps serving from its own data directory, which is a copy: skill scripts
//! and plugins are read from files, and a directory keeps working while the database
//! is away. [`Shared::sync`] brings the two in step, under the directory's own
//! exclusive lock:
//!
//! - **pull**: every row past the revision this daemon last saw is applied to the
//!   directory, unless the directory changed that item since (a change not shared yet,
//!   which the share then publishes: the later change wins);
//! - **share**: every item whose directory copy differs from what the database last
//!   said is published, in one transaction that first checks that no other daemon
//!   published meanwhile (else it pulls again and retries).
//!
//! A daemon that starts on a database that has never seen an item publishes it (an
//! install moving onto PostgreSQL); one that starts with an old copy of an item the
//! database holds takes the database's. Every committed publication notifies
//! [`CHANNEL`], so daemons pull at once rather than at their next read.
//!
//! On SQLite there is one daemon per data directory, and the directory is the record:
//! nothing here is used.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::pg::PgSchema;
use crate::sql::{Actor, Database, Listener, PgStore, SqlError, Tx};

/// The store on PostgreSQL. `installs` holds one row per item ever installed: a removed
/// one stays as a row without files (`removed` = 1), so that a daemon that was away
/// removes it too. `revisions` holds each kind's last revision; publishing locks its
/// row, which orders every daemon's publications of a kind.
pub static PG_SCHEMA: PgSchema = PgSchema {
    what: "the installed skills and plugins",
    namespace: "installs",
    created_at: 1,
    create: r#"
    CREATE TABLE installs (
        kind      TEXT NOT NULL,
        name      TEXT NOT NULL,
        revision  BIGINT NOT NULL,
        removed   INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1)),
        digest    TEXT NOT NULL,
        meta      TEXT NOT NULL,
        files     BYTEA NOT NULL,
        PRIMARY KEY (kind, name)
    );
    CREATE INDEX installs_by_revision ON installs (kind, revision);
    CREATE TABLE revisions (
        kind      TEXT PRIMARY KEY,
        revision  BIGINT NOT NULL
    );
    "#,
    later: &[],
    user_tables: &[],
};

/// The channel a publication notifies, with the kind as payload.
pub const CHANNEL: &str = "engram_installs";

/// Limits on a row read back: the database is shared, and what it holds is checked
/// as input (the directory's own checks run again when an item is applied).
const MAX_FILES: usize = 1024;
const MAX_PATH_BYTES: usize = 1024;
const MAX_ITEM_BYTES: usize = 128 * 1024 * 1024;

/// What is installed, by kind; each kind is synced on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Skill,
    Plugin,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Skill => "skill",
            Kind::Plugin => "plugin",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Sql(#[from] SqlError),
    /// The data directory refused a change (its message names it).
    #[error("{0}")]
    Local(String),
}

/// One installed item: its metadata (JSON, the directory's own shape) and its files
/// (relative `/`-separated paths, sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub meta: String,
    pub files: Vec<(String, Vec<u8>)>,
}

impl Item {
    /// The sha256 of the item as it is stored: what tells two copies apart.
    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.encode_with_meta()))
    }

    fn encode_with_meta(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, self.meta.as_bytes());
        out.extend_from_slice(&self.encode_files());
        out
    }

    /// The files as one blob: for each, its path and its bytes, each length-prefixed.
    fn encode_files(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.files.len() as u64).to_be_bytes());
        for (path, bytes) in &self.files {
            put(&mut out, path.as_bytes());
            put(&mut out, bytes);
        }
        out
    }

    fn decode(meta: String, blob: &[u8]) -> Result<Item, String> {
        let mut rest = blob;
        let count = take_u64(&mut rest)?;
        if count > MAX_FILES as u64 {
            return Err(format!("{count} files; at most {MAX_FILES} are read"));
        }
        let mut files = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let path = take(&mut rest, MAX_PATH_BYTES)?;
            let path = String::from_utf8(path.to_vec()).map_err(|_| "a path is not UTF-8")?;
            let bytes = take(&mut rest, MAX_ITEM_BYTES)?;
            files.push((path, bytes.to_vec()));
        }
        if !rest.is_empty() {
            return Err("bytes after the last file".into());
        }
        Ok(Item { meta, files })
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn take_u64(rest: &mut &[u8]) -> Result<u64, String> {
    let (head, tail) = rest
        .split_first_chunk::<8>()
        .ok_or("the files end before a length")?;
    *rest = tail;
    Ok(u64::from_be_bytes(*head))
}

fn take<'a>(rest: &mut &'a [u8], limit: usize) -> Result<&'a [u8], String> {
    let len = take_u64(rest)?;
    if len > limit as u64 || len > rest.len() as u64 {
        return Err(format!(
            "a length of {len} bytes that the files do not hold"
        ));
    }
    let (head, tail) = rest.split_at(len as usize);
    *rest = tail;
    Ok(head)
}

/// A data directory's side of the sync. The caller of [`Shared::sync`] holds the
/// directory's exclusive lock for the whole of it.
pub trait Local {
    /// Every item installed here, by name, with its [`Item::digest`]; `None` for one
    /// that is there but cannot be read now (it is neither published nor taken for
    /// removed).
    fn digests(&self) -> Result<BTreeMap<String, Option<String>>, String>;
    /// One item's entry of [`Local::digests`]: `None` when it is not installed here.
    fn digest(&self, name: &str) -> Result<Option<Option<String>>, String>;
    fn read(&self, name: &str) -> Result<Item, String>;
    /// Installs `item` under `name` here, replacing what is there.
    fn apply(&self, name: &str, item: Item) -> Result<(), String>;
    fn remove(&self, name: &str) -> Result<(), String>;
}

/// What this daemon knows the database holds of an item.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    Present(String),
    Removed,
    /// A row this directory could not take (logged), and what the directory had
    /// instead: that is neither pending nor published over, until a later row for it
    /// arrives or the item changes here.
    Unapplied {
        here: Option<String>,
    },
}

#[derive(Debug, Default)]
struct Seen {
    revision: i64,
    items: HashMap<String, Known>,
    /// A share failed (the database away): the next sync shares again.
    unshared: bool,
    /// A share has run since this process started: what the directory held before
    /// (a data directory moving in, a file edited while the daemon was down) is
    /// published by the first one.
    shared_once: bool,
}

impl Seen {
    fn owes_share(&self) -> bool {
        self.unshared || !self.shared_once
    }
}

/// The store: one per daemon, shared by the kinds.
#[derive(Clone)]
pub struct Installs {
    db: Arc<Database>,
    store: PgStore,
}

impl Installs {
    /// The store on PostgreSQL, migrated to this release's version.
    pub fn postgres(url: &str) -> Result<Installs, SqlError> {
        let store = PgStore::open(url, &PG_SCHEMA)?;
        Ok(Installs {
            db: Arc::new(Database::postgres(store.clone(), 1)?),
            store,
        })
    }

    /// The sync state of one kind, for one data directory.
    pub fn shared(&self, kind: Kind) -> Arc<Shared> {
        Arc::new(Shared {
            installs: self.clone(),
            kind,
            seen: Mutex::default(),
            looked: Mutex::default(),
        })
    }

    /// A connection that hears every publication ([`CHANNEL`]).
    pub fn listen(&self) -> Result<Listener, SqlError> {
        self.store.listen(CHANNEL)
    }
}

/// One kind's sync between the database and one data directory.
pub struct Shared {
    installs: Installs,
    kind: Kind,
    seen: Mutex<Seen>,
    /// The last look at the kind's revision, and when it began: every read asks, so
    /// concurrent reads share one query (see [`Shared::revision`]).
    looked: Mutex<Option<(Instant, i64)>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("kind", &self.kind).finish()
    }
}

/// A row past the revision last seen.
struct Row {
    name: String,
    revision: i64,
    removed: bool,
    digest: String,
    meta: String,
    files: Vec<u8>,
}

impl Shared {
    /// Whether the database has had an item of this name, present or removed, as of
    /// the last pull.
    pub fn knows(&self, name: &str) -> bool {
        self.lock_seen().items.contains_key(name)
    }

    pub fn installs(&self) -> &Installs {
        &self.installs
    }

    /// Pulls, and shares only what this directory owes ([`Seen::owes_share`]): what a
    /// read or the follower runs, where nothing changed here under the lock. The
    /// caller holds `local`'s exclusive lock.
    pub fn catch_up(&self, local: &dyn Local) -> Result<(), SyncError> {
        if self.lock_seen().owes_share() {
            self.sync(local)
        } else {
            self.pull(local)
        }
    }

    /// Whether the database holds a change this directory has not pulled, or this
    /// directory owes it a share: one query.
    pub fn behind(&self) -> Result<bool, SqlError> {
        let (seen, owed) = {
            let seen = self.lock_seen();
            (seen.revision, seen.owes_share())
        };
        Ok(owed || self.revision()? != seen)
    }

    /// The kind's revision as of a query begun after this call was: it reflects every
    /// publication acknowledged before the call (read-your-writes). Calls waiting
    /// while one query runs share the next one, so a busy daemon holds one connection
    /// for it, not one per request.
    fn revision(&self) -> Result<i64, SqlError> {
        let asked = Instant::now();
        let mut looked = self.looked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((began, revision)) = *looked
            && began >= asked
        {
            return Ok(revision);
        }
        let began = Instant::now();
        let kind = self.kind.as_str();
        let revision = self.installs.db.read(Actor::System, |tx| {
            Ok::<_, SqlError>(
                tx.query_opt(
                    "SELECT revision FROM revisions WHERE kind = ?1",
                    &[kind.into()],
                    |row| row.get::<i64>(0),
                )?
                .unwrap_or(0),
            )
        })?;
        *looked = Some((began, revision));
        Ok(revision)
    }

    fn lock_seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pulls what the database holds past the revision last seen into `local`, then
    /// publishes what `local` changed (see the module documentation). The caller holds
    /// `local`'s exclusive lock. A failed share is remembered and retried by the next
    /// sync; the error is returned.
    pub fn sync(&self, local: &dyn Local) -> Result<(), SyncError> {
        // Another daemon publishing between our pull and our share makes the share
        // pull again; a few rounds settle any real contention.
        for _ in 0..8 {
            self.pull(local)?;
            match self.share(local) {
                Ok(true) => return Ok(()),
                Ok(false) => continue,
                Err(e) => {
                    self.lock_seen().unshared = true;
                    return Err(e);
                }
            }
        }
        self.lock_seen().unshared = true;
        Err(SyncError::Sql(SqlError::Unavailable(
            "other daemons kept publishing installs; this one will share its changes at its next sync".into(),
        )))
    }

    /// Applies to `local` what the database holds past the revision last seen, and
    /// publishes nothing (before a change: the change then starts from the newest).
    pub fn pull(&self, local: &dyn Local) -> Result<(), SyncError> {
        let mut seen = self.lock_seen();
        let rows = self.rows_after(seen.revision)?;
        // Each named item's state here, read once: `None` when it is not installed.
        let mut here: HashMap<String, Option<Option<String>>> = HashMap::new();
        for row in rows {
            let state = match here.get(&row.name) {
                Some(state) => state.clone(),
                None => local.digest(&row.name).map_err(SyncError::Local)?,
            };
            let installed = state.is_some();
            let mine = state.clone().flatten();
            // Changed here since the database last said: this directory's change is
            // the later one, and the share publishes it.
            let pending = match seen.items.get(&row.name) {
                Some(Known::Present(digest)) => mine.as_ref() != Some(digest),
                Some(Known::Removed) => installed,
                Some(Known::Unapplied { here }) => mine != *here,
                None => false,
            };
            let (known, now) = if pending {
                (known_of(&row), state)
            } else if row.removed {
                if !installed {
                    (Known::Removed, None)
                } else {
                    match local.remove(&row.name) {
                        Ok(()) => (Known::Removed, None),
                        Err(e) => {
                            tracing::warn!(kind = self.kind.as_str(), name = %row.name, "cannot remove what another daemon removed: {e}");
                            (Known::Unapplied { here: mine }, state)
                        }
                    }
                }
            } else if mine.as_deref() == Some(row.digest.as_str()) {
                (known_of(&row), state)
            } else {
                match self.apply(local, &row) {
                    Ok(()) => (known_of(&row), Some(Some(row.digest.clone()))),
                    Err(e) => {
                        tracing::warn!(kind = self.kind.as_str(), name = %row.name, "cannot install what another daemon installed: {e}");
                        (Known::Unapplied { here: mine }, state)
                    }
                }
            };
            here.insert(row.name.clone(), now);
            seen.items.insert(row.name.clone(), known);
            seen.revision = row.revision;
        }
        Ok(())
    }

    fn apply(&self, local: &dyn Local, row: &Row) -> Result<(), String> {
        let item = Item::decode(row.meta.clone(), &row.files)?;
        if item.digest() != row.digest {
            return Err("its files do not match its digest".into());
        }
        local.apply(&row.name, item)
    }

    /// Publishes what differs; `Ok(false)` when another daemon published first (pull
    /// again, then retry).
    fn share(&self, local: &dyn Local) -> Result<bool, SyncError> {
        let mut seen = self.lock_seen();
        let here = local.digests().map_err(SyncError::Local)?;
        let mut changes: Vec<(String, Option<Item>)> = Vec::new();
        for (name, digest) in &here {
            let Some(digest) = digest else { continue };
            let differs = match seen.items.get(name) {
                Some(Known::Present(known)) => known != digest,
                Some(Known::Unapplied { here }) => here.as_ref() != Some(digest),
                Some(Known::Removed) | None => true,
            };
            if differs {
                changes.push((
                    name.clone(),
                    Some(local.read(name).map_err(SyncError::Local)?),
                ));
            }
        }
        for (name, known) in &seen.items {
            if matches!(known, Known::Present(_)) && !here.contains_key(name) {
                changes.push((name.clone(), None));
            }
        }
        if changes.is_empty() {
            seen.unshared = false;
            seen.shared_once = true;
            return Ok(true);
        }
        let kind = self.kind.as_str();
        let expected = seen.revision;
        let published = self.installs.db.write(Actor::System, |tx| {
            let current = lock_revision(tx, kind)?;
            if current != expected {
                return Ok::<_, SqlError>(None);
            }
            let mut revision = current;
            let mut known = Vec::new();
            for (name, item) in &changes {
                revision += 1;
                let (digest, meta, files) = match item {
                    Some(item) => (item.digest(), item.meta.clone(), item.encode_files()),
                    None => (String::new(), String::new(), Vec::new()),
                };
                tx.execute(
                    "INSERT INTO installs (kind, name, revision, removed, digest, meta, files)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (kind, name) DO UPDATE SET revision = excluded.revision,
                       removed = excluded.removed, digest = excluded.digest,
                       meta = excluded.meta, files = excluded.files",
                    &[
                        kind.into(),
                        name.into(),
                        revision.into(),
                        i64::from(item.is_none()).into(),
                        (&digest).into(),
                        (&meta).into(),
                        (&files).into(),
                    ],
                )?;
                known.push((
                    name.clone(),
                    match item {
                        Some(_) => Known::Present(digest),
                        None => Known::Removed,
                    },
                ));
            }
            tx.execute(
                "UPDATE revisions SET revision = ?2 WHERE kind = ?1",
                &[kind.into(), revision.into()],
            )?;
            tx.query_one(
                "SELECT pg_notify(?1, ?2)",
                &[CHANNEL.into(), kind.into()],
                |_| Ok(()),
            )?;
            Ok(Some((revision, known)))
        })?;
        let Some((revision, known)) = published else {
            return Ok(false);
        };
        seen.items.extend(known);
        seen.revision = revision;
        seen.unshared = false;
        seen.shared_once = true;
        Ok(true)
    }

    fn rows_after(&self, revision: i64) -> Result<Vec<Row>, SqlError> {
        let kind = self.kind.as_str();
        self.installs.db.read(Actor::System, |tx| {
            tx.query(
                "SELECT name, revision, removed, digest, meta, files FROM installs
                 WHERE kind = ?1 AND revision > ?2 ORDER BY revision",
                &[kind.into(), revision.into()],
                |row| {
                    Ok(Row {
                        name: row.get(0)?,
                        revision: row.get(1)?,
                        removed: row.get::<i64>(2)? != 0,
                        digest: row.get(3)?,
                        meta: row.get(4)?,
                        files: row.get(5)?,
                    })
                },
            )
        })
    }
}

fn known_of(row: &Row) -> Known {
    if row.removed {
        Known::Removed
    } else {
        Known::Present(row.digest.clone())
    }
}

/// The kind's revision, its row locked until the transaction ends (created at 0).
fn lock_revision(tx: &Tx<'_>, kind: &str) -> Result<i64, SqlError> {
    tx.execute(
        "INSERT INTO revisions (kind, revision) VALUES (?1, 0) ON CONFLICT (kind) DO NOTHING",
        &[kind.into()],
    )?;
    tx.query_one(
        "SELECT revision FROM revisions WHERE kind = ?1 FOR UPDATE",
        &[kind.into()],
        |row| row.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_items_files_read_back_as_written_and_bad_blobs_are_refused() {
        let item = Item {
            meta: "{\"a\":1}".into(),
            files: vec![
                ("SKILL.md".into(), b"---\nname: x\n---\n".to_vec()),
                ("scripts/run.wasm".into(), vec![0, 1, 2, 255]),
            ],
        };
        let blob = item.encode_files();
        assert_eq!(Item::decode(item.meta.clone(), &blob).unwrap(), item);
        assert_eq!(
            Item::decode(item.meta.clone(), &blob).unwrap().digest(),
            item.digest()
        );
        // The metadata is part of what the digest tells apart.
        let other = Item {
            meta: "{\"a\":2}".into(),
            ..item.clone()
        };
        assert_ne!(other.digest(), item.digest());
        assert!(Item::decode(String::new(), &blob[..blob.len() - 1]).is_err());
        let mut trailing = blob.clone();
        trailing.push(0);
        assert!(Item::decode(String::new(), &trailing).is_err());
        let mut huge = Vec::new();
        huge.extend_from_slice(&1u64.to_be_bytes());
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(Item::decode(String::new(), &huge).is_err());
    }
}

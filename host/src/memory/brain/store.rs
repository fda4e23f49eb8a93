//! The SQLite store under the Second Brain: one database file, WAL, foreign keys on,
//! every statement scoped by `user_id`. Writes run in IMMEDIATE transactions, or in
//! savepoints of a group transaction (`writer.rs`), and record a history row for every
//! change; a failed statement rolls its whole change back.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram_strategies::model::{PersonRef, Scope};
use rusqlite::Connection;

use super::error::StoreError;
use super::row::{COLUMNS, placeholders, record_from_row, turns_json, values};
use super::schema;
use super::text_index::{CHANGES_FLOOR, TextIndex, TextMatch, TextQuery};
use super::transcript::{
    CONVERSATION_COLUMNS, MESSAGE_COLUMNS, conversation_from_row, message_from_row,
};
use super::word_counts::WordCounts;
use super::writer::Writer;
use crate::events::EventBus;
use crate::memory::record::{ExportLine, MemoryRecord, PersonLink, PersonRecord};
use crate::memory::{Counts, HistoryEntry, ListFilter, MAX_MESSAGE_BYTES, Page};
use crate::sql::{
    Access, Actor, AsTx, Backend, Conn, PgStore, Readers, SqlError, Tx, off_async_worker,
};

/// Read connections kept open between reads; more may be open during a burst. A
/// connection opened for a burst and closed after it loses its prepared statements, so
/// this covers the REST layer's usual concurrency (a client per connection, 32 in the
/// load benchmark). An idle reader holds its statements and a page cache of at most
/// SQLite's default 2 MB, which a commit by the writer empties at its next read.
const MAX_IDLE_READERS: usize = 32;

/// How long the memory index's change log keeps a change on PostgreSQL: a daemon
/// that looked at it within this long never builds its index again.
pub const KEEP_CHANGES_MS: i64 = 60 * 60 * 1000;

/// Meta key (user `""`): when a daemon last claimed the maintenance pass (server
/// milliseconds).
const MAINTENANCE_CLAIM: &str = "maintenance_claimed_at";

/// Meta key (user `""`): the next floor of the change log, and when it was taken.
const CHANGES_CANDIDATE: &str = "memory_changes_candidate";

/// How many times in all a grouped write is run when PostgreSQL ends it for a
/// concurrent one's sake (see [`Store::write_grouped`]).
const CONFLICT_ATTEMPTS: u32 = 4;

/// Longest line accepted by `import`.
const MAX_IMPORT_LINE_BYTES: usize = 1024 * 1024;

pub struct Store {
    /// The one write connection (SQLite takes one write transaction at a time anyway);
    /// it announces `memory.*` events for the history rows each commit adds.
    writer: Writer,
    /// Reads (search, get, list) run here, in parallel with each other and the writer.
    readers: Readers,
    /// Memory search's ranking, kept in step by the writer (see `text_index.rs`).
    text: Arc<TextIndex>,
    /// Which words are common in each user's transcript, shared by every read (see
    /// `word_counts.rs`).
    word_counts: WordCounts,
    /// The SQLite file; `None` on PostgreSQL.
    path: Option<PathBuf>,
    /// Set when forgotten text may still be in the file (`forget.rs`).
    purge_requested: std::sync::atomic::AtomicBool,
    /// PostgreSQL: the thread relaying every daemon's memory changes to `events`
    /// (held for its `Drop`, which stops it).
    _relay: Option<Relay>,
}

/// The channel the history's trigger announces committed memory changes on
/// (`schema_pg.rs`, version 11).
const MEMORY_CHANNEL: &str = "engram_memory";

/// Stops the relay thread when the store goes (within a second: it waits that long
/// for notifications at a time).
struct Relay(Arc<std::sync::atomic::AtomicBool>);

impl Drop for Relay {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Relay {
    /// Publishes on `events` every memory change any daemon commits on `store`, as
    /// the server announces it; listens again after a dropped connection (changes
    /// announced meanwhile are not heard: events are notifications, the store is the
    /// record).
    fn start(store: PgStore, events: EventBus) -> Relay {
        use std::sync::atomic::Ordering;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("memory-events".into())
            .spawn(move || {
                let wait = std::time::Duration::from_secs(1);
                while !stopped.load(Ordering::SeqCst) {
                    let mut listener = match store.listen(MEMORY_CHANNEL) {
                        Ok(listener) => listener,
                        Err(e) => {
                            tracing::warn!("cannot listen for memory changes: {e}");
                            std::thread::sleep(wait);
                            continue;
                        }
                    };
                    while !stopped.load(Ordering::SeqCst) {
                        match listener.next_within(wait) {
                            Ok(payloads) => {
                                for payload in payloads {
                                    relay_one(&events, &payload);
                                }
                            }
                            Err(e) => {
                                tracing::warn!("listening for memory changes: {e}");
                                break;
                            }
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the memory events relay: {e}");
        }
        Relay(stop)
    }
}

/// One announced change (`{"user", "id", "change"}`) as an event.
fn relay_one(events: &EventBus, payload: &str) {
    #[derive(serde::Deserialize)]
    struct Announced {
        user: String,
        id: String,
        change: String,
    }
    match serde_json::from_str::<Announced>(payload) {
        Ok(a) => events.publish(super::writer::memory_event(a.user, &a.id, &a.change)),
        Err(e) => tracing::warn!("an announced memory change that is not one: {e}"),
    }
}

/// The SQLite connection under a transaction, for the tests that use SQLite's own
/// calls.
#[cfg(test)]
pub(super) fn sqlite_tx<'t>(tx: &'t Tx) -> Result<&'t Connection, StoreError> {
    tx.as_sqlite().ok_or(StoreError::SqliteOnly)
}

fn sqlite_conn(conn: &Conn) -> Result<&Connection, StoreError> {
    conn.as_sqlite().ok_or(StoreError::SqliteOnly)
}

/// SQL of the memory ids waiting in `agent_dismissals`, for `id NOT IN (...)`.
pub(super) const AWAITING_IDS: &str = "SELECT memory_id FROM agent_dismissals";

/// SQL true for a person (`p`) with memories, every one of them waiting in
/// `agent_dismissals`: what the agent deleted names them, so they are hidden with it.
pub(super) const ONLY_DISMISSED_PERSON: &str =
    "(EXISTS (SELECT 1 FROM memory_persons l WHERE l.person_id = p.id)
     AND NOT EXISTS (SELECT 1 FROM memory_persons l WHERE l.person_id = p.id
                     AND l.memory_id NOT IN (SELECT memory_id FROM agent_dismissals)))";

/// Live: neither superseded nor dismissed.
const LIVE: &str = "superseded_by IS NULL AND dismissed_at IS NULL";

/// Checks what the schema's CHECK constraints would refuse, with a message that names
/// the field, before SQLite sees it.
pub fn validate_record(r: &MemoryRecord) -> Result<(), StoreError> {
    let invalid = |field, reason: String| Err(StoreError::Invalid { field, reason });
    if r.summary.trim().is_empty() {
        return invalid("summary", "must not be empty".into());
    }
    if r.summary.chars().count() > 1_000 {
        return invalid("summary", "longer than 1000 characters".into());
    }
    if r.detail.as_ref().is_some_and(|d| d.chars().count() > 4_000) {
        return invalid("detail", "longer than 4000 characters".into());
    }
    for (field, value) in [
        ("confidence", r.confidence),
        ("importance", r.importance),
        ("durability", r.durability),
    ] {
        if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
            return invalid(field, format!("{value} is outside 0.0..=1.0"));
        }
    }
    if r.prior_scope == Some(Scope::Subconscious) {
        return invalid("prior_scope", "must be durable or active".into());
    }
    for (field, value, most) in [("holder", &r.holder, 100), ("attribute", &r.attribute, 64)] {
        if let Some(value) = value
            && (value.trim().is_empty()
                || value.chars().count() > most
                || value.chars().any(char::is_control))
        {
            return invalid(
                field,
                format!("must be 1 to {most} characters without control characters"),
            );
        }
    }
    Ok(())
}

/// Meta key (user `""`) set once every memory written before schema version 4 has had
/// its holder and attribute read.
const ABOUT_READ: &str = "about_read";

/// Reads the holder and attribute of memories stored before they existed, once.
fn read_about_once(conn: &mut Conn) -> Result<(), StoreError> {
    let tx = conn.transaction(Actor::System, Access::Write)?;
    if q::meta(&*tx, "", ABOUT_READ)?.is_some() {
        return Ok(());
    }
    let rows = tx.query(
        "SELECT id, summary FROM memories WHERE holder IS NULL AND attribute IS NULL",
        &[],
        |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
    )?;
    for (id, summary) in rows {
        let about = engram_strategies::about::of_summary(&summary);
        let holder = about.holder_key();
        if holder.is_some() || about.attribute.is_some() {
            tx.execute(
                "UPDATE memories SET holder = ?2, attribute = ?3 WHERE id = ?1",
                &[
                    id.as_str().into(),
                    holder.as_deref().into(),
                    about.attribute.as_deref().into(),
                ],
            )?;
        }
    }
    q::set_meta(&*tx, "", ABOUT_READ, "1")?;
    tx.commit()?;
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it; committed
    /// changes to memories are announced on `events`.
    pub fn open(path: &Path, events: EventBus) -> Result<Store, StoreError> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        // FULL: a committed write survives a power cut, not only a process crash.
        let mut conn = crate::sqlite::open_wal(path, "FULL").map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // Deleted and redacted text is overwritten where it lay, not left in free pages.
        conn.pragma_update(None, "secure_delete", true)?;
        schema::migrate(&mut conn)?;
        // The transcript's search calls engram_hits (`bm25.rs`), in write transactions
        // too (forgetting finds the messages to redact with it).
        super::bm25::register(&conn)?;
        let mut conn = Conn::sqlite(conn);
        read_about_once(&mut conn)?;
        let text = Arc::new(TextIndex::new()?);
        Ok(Store {
            writer: Writer::new(conn, None, events, text.clone()),
            readers: Readers::sqlite_file(path, MAX_IDLE_READERS, super::bm25::register),
            text,
            word_counts: WordCounts::default(),
            path: Some(path.to_path_buf()),
            purge_requested: std::sync::atomic::AtomicBool::new(false),
            _relay: None,
        })
    }

    /// Opens the Second Brain on the PostgreSQL server at `url` (its `brain` schema,
    /// migrated to this release's version), shared with every other daemon on it.
    pub fn postgres(url: &str, events: EventBus) -> Result<Store, StoreError> {
        let store = PgStore::open(url, &super::PG_SCHEMA)?;
        let mut conn = store.connect()?;
        off_async_worker(|| read_about_once(&mut conn))?;
        let reopen = store.clone();
        let text = Arc::new(TextIndex::new()?);
        let relay = Relay::start(store.clone(), events.clone());
        let brain = Store {
            writer: Writer::new(
                conn,
                Some(Box::new(move || reopen.connect())),
                events,
                text.clone(),
            ),
            readers: Readers::postgres(store, MAX_IDLE_READERS),
            text,
            word_counts: WordCounts::default(),
            path: None,
            purge_requested: std::sync::atomic::AtomicBool::new(false),
            _relay: Some(relay),
        };
        // Messages that came without their postings (`engram db copy`, a store of
        // version 9) are indexed before anything searches the transcript.
        while brain.write(Actor::System, super::transcript::index_unindexed)? > 0 {}
        Ok(brain)
    }

    /// The SQLite file; `None` on PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Asks for a purge of forgotten text (`forget.rs`) at the next chance.
    pub fn request_purge(&self) {
        self.purge_requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Merges the transcript's full-text index into one segment (old segments keep the
    /// words of redacted messages until they are merged away) and checkpoints the WAL,
    /// if a purge was asked for. The request stays when the checkpoint could not
    /// reach the end of the WAL (a reader held it), for the next maintenance pass.
    pub fn purge_if_requested(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        if !self.purge_requested.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let complete = self.writer.exclusive(|conn| -> Result<bool, StoreError> {
            let Some(conn) = conn.as_sqlite() else {
                // PostgreSQL keeps no index segments; the old versions of redacted
                // rows are gone once vacuumed (not in a transaction: none is open).
                conn.tx()
                    .batch("VACUUM messages, memories, history, message_terms")?;
                return Ok(true);
            };
            conn.execute_batch("INSERT INTO messages_fts (messages_fts) VALUES ('optimize');")?;
            let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            Ok(busy == 0)
        });
        match complete {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.request_purge();
                Ok(())
            }
            Err(e) => {
                self.request_purge();
                Err(e)
            }
        }
    }

    pub fn events(&self) -> &EventBus {
        self.writer.events()
    }

    /// Told of every commit (`vectors.rs`'s worker waits on it).
    pub fn committed(&self) -> &tokio::sync::Notify {
        self.writer.committed()
    }

    /// Runs `f` in one IMMEDIATE transaction, committed only if it succeeds. Every
    /// change to a memory writes a history row, so the rows this transaction added are
    /// exactly what to announce once it is committed, whichever code path made them.
    /// (On PostgreSQL, a transaction the server ended for a concurrent one's sake
    /// fails as a conflict, 503 with `Retry-After` on REST: these writes are few, and
    /// their closures keep what they did in the caller's state, so they are not run
    /// again here as [`Store::write_grouped`]'s are.)
    ///
    /// It acts for `actor`: one person's writes for them (row-level security on
    /// PostgreSQL), the host's sweeps across people and the writes that first check
    /// who owns an id (a conversation, an import) for the host.
    pub fn write<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.caught_up_for_write()?;
        self.writer.transaction(actor, f)
    }

    /// Runs `attempt` again while it fails with a conflict (PostgreSQL only: SQLite
    /// has one writer), a little later each time.
    fn retrying_conflicts<R>(
        &self,
        attempt: impl Fn() -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut tries = 1;
        loop {
            match attempt() {
                Err(StoreError::Sql(e)) if e.is_conflict() && tries < CONFLICT_ATTEMPTS => {
                    tracing::debug!("write conflicted with another daemon's, run again: {e}");
                    // Apart, so that the two writers do not meet again at once.
                    let spread = std::process::id() as u64 % 7 + 1;
                    std::thread::sleep(std::time::Duration::from_millis(spread * tries as u64));
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// PostgreSQL: a write settles its memories against the others through the index
    /// (`settle.rs`), which first catches up with what the other daemons committed
    /// (on SQLite the index follows the one writer, and builds itself inside it).
    fn caught_up_for_write(&self) -> Result<(), StoreError> {
        if self.path.is_none() {
            self.text_built()?;
        }
        Ok(())
    }

    /// A small write that may share its commit with concurrent ones (group commit, see
    /// `writer.rs`): `f` runs in a savepoint of its own and this returns once the
    /// commit holding its change is durable. A failure of `f` undoes only its own
    /// changes. For the writes that arrive many at a time: manual add, edit, delete.
    ///
    /// On PostgreSQL a group that the server ended for a concurrent one's sake
    /// (another daemon's group took the same rows in the other order) is run again, each
    /// member by itself, up to [`CONFLICT_ATTEMPTS`] times in all: so `f` may run more
    /// than once, each time from the start.
    ///
    /// The write is `user`'s, and acts for them (row-level security on PostgreSQL):
    /// on PostgreSQL it first takes that person's write lock
    /// (an advisory lock held to the commit), so that two daemons settle one person's
    /// facts one after the other, each seeing the other's (`settle.rs` reads the rivals
    /// of a fact from the table); on SQLite the one writer orders them already.
    pub fn write_grouped<R>(
        &self,
        user: &str,
        f: impl Fn(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.retrying_conflicts(|| {
            self.caught_up_for_write()?;
            self.writer.grouped(Actor::User(user), &f)
        })
    }

    /// As [`Store::write`], for bookkeeping whose loss in a power cut costs nothing
    /// (`last_used_at` after a retrieval): the commit skips the WAL fsync. WAL mode at
    /// synchronous=NORMAL never corrupts the database and survives a process crash; a
    /// power cut may forget the last such commits. Saves an fsync on every message.
    pub fn write_relaxed<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.writer.exclusive(|conn| {
            let Some(sqlite) = conn.as_sqlite() else {
                // The commit returns before its WAL record is flushed; a crash of the
                // server may forget it, and never corrupts anything.
                return self.writer.transaction_on(conn, actor, |tx| {
                    tx.batch("SET LOCAL synchronous_commit TO OFF")?;
                    f(tx)
                });
            };
            sqlite.pragma_update(None, "synchronous", "NORMAL")?;
            let out = self.writer.transaction_on(conn, actor, f);
            // FULL again before anyone else writes; if even that fails, later writes
            // would silently lose their durability, so the error wins.
            sqlite_conn(conn)?.pragma_update(None, "synchronous", "FULL")?;
            out
        })
    }

    /// Runs `f` in a read transaction of its own acting for `actor` (see
    /// [`Readers::read`]): one person's reads act for them, so that on PostgreSQL a
    /// query that forgets its `user_id` filter still sees only their rows; the host's
    /// sweeps across people act for the host.
    pub fn read<R>(
        &self,
        actor: Actor<'_>,
        f: impl FnOnce(&Tx) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.readers.read(actor, f)
    }

    /// Which words are common in each user's transcript.
    pub fn word_counts(&self) -> &WordCounts {
        &self.word_counts
    }

    /// Memory search's ranking, built first if this is its first use since opening
    /// (under the writer, so that no commit slips between its read of the table and
    /// the index taking over). Not from inside a write: use [`Store::text`] there.
    ///
    /// On PostgreSQL it first catches up with what every daemon committed since it
    /// last looked (`text_index/sync.rs`): a round trip, and what makes a search
    /// through this daemon see a write acknowledged by another.
    pub fn text_built(&self) -> Result<&TextIndex, StoreError> {
        if self.path.is_none() {
            self.text
                .catch_up(|look| self.read(Actor::System, |tx| look(tx)))?;
        } else if !self.text.is_built() {
            self.writer
                .exclusive(|conn| self.text.build(&Tx::sqlite(sqlite_conn(conn)?)))?;
        }
        Ok(&self.text)
    }

    /// Memory search's ranking as it is, for a search inside a write transaction
    /// (which builds it on the transaction's connection if need be).
    pub fn text(&self) -> &TextIndex {
        &self.text
    }

    /// Whether this daemon runs the maintenance pass now: always on SQLite (one daemon
    /// per file); on PostgreSQL, for the first daemon to ask once `every_ms` has passed
    /// since the last pass any daemon claimed, by the server's clock, so that the
    /// daemons on one database run one pass per interval between them.
    pub fn claim_maintenance(&self, every_ms: i64) -> Result<bool, StoreError> {
        if self.path.is_some() {
            return Ok(true);
        }
        self.write(Actor::System, |tx| {
            let claimed = tx.query_opt(
                &format!(
                    "INSERT INTO meta (user_id, key, value)
                     VALUES ('', '{MAINTENANCE_CLAIM}',
                             ((extract(epoch from clock_timestamp()) * 1000)::bigint)::text)
                     ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value
                     WHERE meta.value::bigint <= excluded.value::bigint - ?1
                     RETURNING 1"
                ),
                &[every_ms.into()],
                |r| r.get::<i64>(0),
            )?;
            Ok(claimed.is_some())
        })
    }

    /// PostgreSQL: drops from the memory index's change log what every daemon that
    /// looked in the last [`KEEP_CHANGES_MS`] has read (`text_index/sync.rs`). A
    /// daemon that last looked before that builds its index again. Nothing on SQLite.
    pub fn prune_changes(&self, now: i64) -> Result<(), StoreError> {
        if self.path.is_some() {
            return Ok(());
        }
        self.write(Actor::System, |tx| {
            // The candidate floor: the oldest transaction running at a pass that many
            // milliseconds ago, as `xact:at`.
            let candidate = q::meta(tx, "", CHANGES_CANDIDATE)?.and_then(|value| {
                let (xact, at) = value.split_once(':')?;
                Some((xact.parse::<i64>().ok()?, at.parse::<i64>().ok()?))
            });
            if let Some((_, at)) = candidate
                && now.saturating_sub(at) < KEEP_CHANGES_MS
            {
                return Ok(());
            }
            if let Some((floor, _)) = candidate {
                tx.execute(
                    "DELETE FROM memory_changes WHERE xact < ?1",
                    &[floor.into()],
                )?;
                q::set_meta(tx, "", CHANGES_FLOOR, &floor.to_string())?;
            }
            let oldest: i64 = tx.query_one(
                "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
                &[],
                |r| r.get(0),
            )?;
            q::set_meta(tx, "", CHANGES_CANDIDATE, &format!("{oldest}:{now}"))
        })
    }

    /// Flushes the WAL into the main file (at shutdown); nothing on PostgreSQL.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.writer.exclusive(|conn| match conn.as_sqlite() {
            Some(conn) => Ok(conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?),
            None => Ok(()),
        })
    }
}

/// For the tests that read or write the SQLite file with SQLite's own calls.
#[cfg(test)]
impl Store {
    pub fn read_sqlite<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.read(Actor::System, |tx| f(sqlite_tx(tx)?))
    }

    pub fn write_sqlite<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.write(Actor::System, |tx| f(sqlite_tx(tx)?))
    }
}

/// Statements usable inside a transaction (`Store::write`) or a read (`Store::read`).
pub mod q {
    use super::*;

    pub fn get(conn: &impl AsTx, user: &str, id: &str) -> Result<MemoryRecord, StoreError> {
        conn.as_tx()
            .query_opt(
                &format!("SELECT {COLUMNS} FROM memories WHERE user_id = ?1 AND id = ?2"),
                &[user.into(), id.into()],
                record_from_row,
            )?
            .ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    pub fn insert(tx: &impl AsTx, r: &MemoryRecord, actor: &str) -> Result<(), StoreError> {
        validate_record(r)?;
        insert_without_history(tx, r)?;
        history(
            tx,
            &r.user_id,
            &r.id,
            "ADD",
            None,
            Some(r),
            actor,
            r.created_at,
        )
    }

    /// Writes every field of `r` over the stored row, recording `event`.
    pub fn update(
        tx: &impl AsTx,
        old: &MemoryRecord,
        r: &MemoryRecord,
        event: &str,
        actor: &str,
    ) -> Result<(), StoreError> {
        validate_record(r)?;
        // Columns 1 and 2 are id and user_id: the row is matched on them and they
        // are written back unchanged.
        let turns = turns_json(r);
        let changed = tx.as_tx().execute(
            &format!(
                "UPDATE memories SET ({COLUMNS}) = ({}) WHERE id = ?1 AND user_id = ?2",
                placeholders()
            ),
            &values(r, &turns),
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound(r.id.clone()));
        }
        history(
            tx,
            &r.user_id,
            &r.id,
            event,
            Some(old),
            Some(r),
            actor,
            r.updated_at,
        )
    }

    /// Records that retrieval used a memory (`last_used_at`, stale mark cleared).
    pub fn touch(tx: &impl AsTx, r: &MemoryRecord) -> Result<(), StoreError> {
        tx.as_tx().execute(
            "UPDATE memories SET last_used_at = ?3, stale = 0 WHERE user_id = ?1 AND id = ?2",
            &[
                r.user_id.as_str().into(),
                r.id.as_str().into(),
                r.last_used_at.into(),
            ],
        )?;
        Ok(())
    }

    /// Removes a memory for good: its row, its FTS entry (trigger), its person links
    /// (cascade); its history keeps the events but loses their text.
    pub fn delete(
        tx: &impl AsTx,
        user: &str,
        id: &str,
        actor: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let statements = tx.as_tx();
        let removed = statements.execute(
            "DELETE FROM memories WHERE user_id = ?1 AND id = ?2",
            &[user.into(), id.into()],
        )?;
        if removed == 0 {
            return Err(StoreError::NotFound(id.to_string()));
        }
        statements.execute(
            "UPDATE history SET old_value = NULL, new_value = NULL WHERE user_id = ?1 AND memory_id = ?2",
            &[user.into(), id.into()],
        )?;
        history(tx, user, id, "DELETE", None, None, actor, now)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn history(
        tx: &impl AsTx,
        user: &str,
        id: &str,
        event: &str,
        old: Option<&MemoryRecord>,
        new: Option<&MemoryRecord>,
        actor: &str,
        at: i64,
    ) -> Result<(), StoreError> {
        let json = |r: Option<&MemoryRecord>| r.and_then(|r| serde_json::to_string(r).ok());
        let (old, new) = (json(old), json(new));
        tx.as_tx().execute(
            "INSERT INTO history (user_id, memory_id, event, old_value, new_value, actor, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                user.into(),
                id.into(),
                event.into(),
                old.as_deref().into(),
                new.as_deref().into(),
                actor.into(),
                at.into(),
            ],
        )?;
        Ok(())
    }

    pub fn history_of(
        conn: &impl AsTx,
        user: &str,
        id: &str,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        let parse = |text: Option<String>| text.and_then(|t| serde_json::from_str(&t).ok());
        Ok(conn.as_tx().query(
            "SELECT event, old_value, new_value, actor, at FROM history WHERE user_id = ?1 AND memory_id = ?2 ORDER BY id",
            &[user.into(), id.into()],
            |row| {
                Ok(HistoryEntry {
                    event: row.get(0)?,
                    old_value: parse(row.get(1)?),
                    new_value: parse(row.get(2)?),
                    actor: row.get(3)?,
                    at: row.get(4)?,
                })
            },
        )?)
    }

    /// Live memories, most recently updated first, paged by `(updated_at, id)`.
    pub fn list(conn: &impl AsTx, user: &str, filter: &ListFilter) -> Result<Page, StoreError> {
        let mut sql = format!("SELECT {COLUMNS} FROM memories WHERE user_id = ?1 AND {LIVE}");
        match filter.conscious {
            Some(true) => sql.push_str(" AND scope IN ('durable','active')"),
            Some(false) => sql.push_str(" AND scope = 'subconscious'"),
            None => {}
        }
        if filter.memory_type.is_some() {
            sql.push_str(" AND memory_type = ?2");
        } else {
            // Every parameter is named in the statement, so that PostgreSQL, which
            // reads a parameter's type from where it is used, knows each one's.
            sql.push_str(" AND ?2 = ?2");
        }
        let (cursor_at, cursor_id) = match &filter.cursor {
            Some(cursor) => parse_cursor(cursor)?,
            None => (i64::MAX, String::new()),
        };
        sql.push_str(" AND (updated_at < ?3 OR (updated_at = ?3 AND id < ?4))");
        sql.push_str(" ORDER BY updated_at DESC, id DESC LIMIT ?5");
        let limit = filter.limit.clamp(1, 500);
        let cursor_id = if filter.cursor.is_some() {
            cursor_id
        } else {
            "\u{10FFFF}".to_string()
        };
        let mut items = conn.as_tx().query(
            &sql,
            &[
                user.into(),
                filter
                    .memory_type
                    .map(|t| t.as_str())
                    .unwrap_or_default()
                    .into(),
                cursor_at.into(),
                cursor_id.as_str().into(),
                ((limit + 1) as i64).into(),
            ],
            record_from_row,
        )?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|r| cursor_after(r.updated_at, &r.id))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    /// Live memories of the user by type and by scope.
    pub fn counts(conn: &impl AsTx, user: &str) -> Result<Counts, StoreError> {
        let mut counts = Counts::default();
        let rows = conn.as_tx().query(
            &format!(
                "SELECT memory_type, scope, count(*) FROM memories WHERE user_id = ?1 AND {LIVE} GROUP BY memory_type, scope"
            ),
            &[user.into()],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
        )?;
        for (memory_type, scope, n) in rows {
            counts.add(&memory_type, &scope, n as usize);
        }
        Ok(counts)
    }

    /// A page's `next_cursor`: the sort time and id of its last row. Memories and
    /// persons page the same way (newest first, then by id).
    pub fn cursor_after(at: i64, id: &str) -> String {
        format!("{at}.{id}")
    }

    pub fn parse_cursor(cursor: &str) -> Result<(i64, String), StoreError> {
        let invalid = || StoreError::Invalid {
            field: "cursor",
            reason: format!("`{cursor}` is not a cursor from a previous page"),
        };
        // Exactly the form `cursor_after` writes (the OpenAPI document's pattern):
        // `^[0-9]{1,18}\.[a-z0-9_]{1,64}$`.
        let (at, id) = cursor.split_once('.').ok_or_else(invalid)?;
        if at.is_empty() || at.len() > 18 || !at.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let at = at.parse::<i64>().map_err(|_| invalid())?;
        let id_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
        if id.is_empty() || id.len() > 64 || !id.bytes().all(id_char) {
            return Err(invalid());
        }
        Ok((at, id.to_string()))
    }

    /// Live full-text matches of any word of `text`, best first (both tiers; the
    /// caller filters). On a write transaction's connection it sees that
    /// transaction's changes.
    pub fn search(
        conn: &Tx,
        text_index: &TextIndex,
        user: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<TextMatch>, StoreError> {
        match TextQuery::any(text) {
            Some(query) => text_index.search(conn, user, &query, limit),
            None => Ok(Vec::new()),
        }
    }

    pub fn persons_of(
        conn: &impl AsTx,
        user: &str,
        memory_id: &str,
    ) -> Result<Vec<PersonRef>, StoreError> {
        Ok(conn.as_tx().query(
            "SELECT p.name, l.relation FROM memory_persons l JOIN persons p ON p.id = l.person_id
             WHERE l.user_id = ?1 AND l.memory_id = ?2 ORDER BY p.name",
            &[user.into(), memory_id.into()],
            |row| {
                Ok(PersonRef {
                    name: row.get(0)?,
                    relation: row.get(1)?,
                })
            },
        )?)
    }

    pub fn meta(conn: &impl AsTx, user: &str, key: &str) -> Result<Option<String>, StoreError> {
        Ok(conn.as_tx().query_opt(
            "SELECT value FROM meta WHERE user_id = ?1 AND key = ?2",
            &[user.into(), key.into()],
            |row| row.get(0),
        )?)
    }

    pub fn set_meta(tx: &impl AsTx, user: &str, key: &str, value: &str) -> Result<(), StoreError> {
        tx.as_tx().execute(
            "INSERT INTO meta (user_id, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value",
            &[user.into(), key.into(), value.into()],
        )?;
        Ok(())
    }

    /// Every memory, person, link, conversation and message of a user, one JSON object
    /// per line (see [`one_line`]).
    pub fn export(conn: &impl AsTx, user: &str, out: &mut dyn Write) -> Result<usize, StoreError> {
        let tx = conn.as_tx();
        let mut lines = 0;
        let mut write = |line: ExportLine| -> Result<(), StoreError> {
            let text = serde_json::to_string(&line).map_err(|e| StoreError::Invalid {
                field: "export",
                reason: e.to_string(),
            })?;
            let text = one_line(text);
            writeln!(out, "{text}").map_err(|e| StoreError::Invalid {
                field: "export",
                reason: e.to_string(),
            })?;
            lines += 1;
            Ok(())
        };
        // What the agent deleted stays out until the person restores it
        // (`dismissal.rs`), with the persons only it names and its links.
        let memories = tx.query(
            &format!(
                "SELECT {COLUMNS} FROM memories WHERE user_id = ?1 AND id NOT IN ({AWAITING_IDS}) ORDER BY created_at, id"
            ),
            &[user.into()],
            record_from_row,
        )?;
        for record in memories {
            write(ExportLine::Memory(record))?;
        }
        let persons = tx.query(
            &format!(
                "SELECT p.id, p.user_id, p.name, p.aliases, p.created_at, p.last_seen FROM persons p
                 WHERE p.user_id = ?1 AND NOT {ONLY_DISMISSED_PERSON} ORDER BY p.id"
            ),
            &[user.into()],
            |row| {
                let aliases: String = row.get(3)?;
                Ok(PersonRecord {
                    id: row.get(0)?,
                    user_id: row.get(1)?,
                    name: row.get(2)?,
                    aliases: serde_json::from_str(&aliases).unwrap_or_default(),
                    created_at: row.get(4)?,
                    last_seen: row.get(5)?,
                })
            },
        )?;
        for person in persons {
            write(ExportLine::Person(person))?;
        }
        let links = tx.query(
            &format!(
                "SELECT memory_id, person_id, user_id, relation FROM memory_persons
                 WHERE user_id = ?1 AND memory_id NOT IN ({AWAITING_IDS}) ORDER BY memory_id, person_id"
            ),
            &[user.into()],
            |row| {
                Ok(PersonLink {
                    memory_id: row.get(0)?,
                    person_id: row.get(1)?,
                    user_id: row.get(2)?,
                    relation: row.get(3)?,
                })
            },
        )?;
        for link in links {
            write(ExportLine::PersonLink(link))?;
        }
        let conversations = tx.query(
            &format!(
                "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE user_id = ?1 ORDER BY started_at, id"
            ),
            &[user.into()],
            conversation_from_row,
        )?;
        for conversation in conversations {
            write(ExportLine::Conversation(conversation))?;
        }
        let messages = tx.query(
            &format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ?1 ORDER BY conversation_id, seq"
            ),
            &[user.into()],
            message_from_row,
        )?;
        for message in messages {
            write(ExportLine::Message(message))?;
        }
        Ok(lines)
    }

    /// Imports an export into `user`, all or nothing: records keep their ids and
    /// timestamps; an existing record with the same id is replaced. A line that does
    /// not parse, a record of another user's id space, or a person link naming
    /// another user's memory or person fails the whole import. Returns the lines
    /// imported and the ids of the memories among them.
    pub fn import(
        tx: &Tx,
        user: &str,
        input: &mut dyn BufRead,
        actor: &str,
        now: i64,
        kinds: engram_strategies::secrets::KindSet,
    ) -> Result<(usize, Vec<String>), StoreError> {
        let mut memories = Vec::new();
        // Records may name others further down the file (superseded_by, links).
        tx.batch(match tx.backend() {
            Backend::Sqlite => "PRAGMA defer_foreign_keys = ON",
            Backend::Postgres => "SET CONSTRAINTS ALL DEFERRED",
        })?;
        let mut count = 0;
        let mut line_number = 0;
        let mut buffer = String::new();
        loop {
            buffer.clear();
            line_number += 1;
            let read = std::io::Read::take(&mut *input, MAX_IMPORT_LINE_BYTES as u64 + 1)
                .read_line(&mut buffer)
                .map_err(|e| StoreError::Import {
                    line: line_number,
                    reason: e.to_string(),
                })?;
            if read == 0 {
                break;
            }
            if buffer.len() > MAX_IMPORT_LINE_BYTES {
                return Err(StoreError::Import {
                    line: line_number,
                    reason: format!("longer than {MAX_IMPORT_LINE_BYTES} bytes"),
                });
            }
            let text = buffer.trim();
            if text.is_empty() {
                continue;
            }
            let fail = |reason: String| StoreError::Import {
                line: line_number,
                reason,
            };
            let line: ExportLine = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
            let owner_of = |table: &str, id: &str| -> Result<Option<String>, StoreError> {
                Ok(tx.query_opt(
                    &format!("SELECT user_id FROM {table} WHERE id = ?1"),
                    &[id.into()],
                    |r| r.get(0),
                )?)
            };
            match line {
                ExportLine::Memory(mut record) => {
                    record.user_id = user.to_string();
                    if let Some(owner) = owner_of("memories", &record.id)? {
                        if owner != user {
                            return Err(StoreError::OtherUsers {
                                what: "memory",
                                id: record.id.clone(),
                            });
                        }
                        tx.execute(
                            "DELETE FROM memories WHERE id = ?1",
                            &[record.id.as_str().into()],
                        )?;
                    }
                    let summary = engram_strategies::secrets::redact(&record.summary, kinds);
                    let detail = record
                        .detail
                        .as_deref()
                        .map(|d| engram_strategies::secrets::redact(d, kinds));
                    crate::memory::brain::redact::count_found(tx, user, &summary.found)?;
                    if let Some(detail) = &detail {
                        crate::memory::brain::redact::count_found(tx, user, &detail.found)?;
                    }
                    let summary = summary.text.into_owned();
                    record.detail = detail.map(|d| d.text.into_owned());
                    if summary != record.summary {
                        record.summary = summary;
                        record = record.with_about_read();
                    }
                    if record.holder.is_none() && record.attribute.is_none() {
                        record = record.with_about_read();
                    }
                    validate_record(&record).map_err(|e| fail(e.to_string()))?;
                    insert_without_history(tx, &record)?;
                    history(tx, user, &record.id, "ADD", None, Some(&record), actor, now)?;
                    memories.push(record.id.clone());
                }
                ExportLine::Person(mut person) => {
                    person.user_id = user.to_string();
                    let aliases =
                        serde_json::to_string(&person.aliases).unwrap_or_else(|_| "[]".into());
                    if owner_of("persons", &person.id)?.is_some_and(|owner| owner != user) {
                        return Err(StoreError::OtherUsers {
                            what: "person",
                            id: person.id.clone(),
                        });
                    }
                    tx.execute(
                        "INSERT INTO persons (id, user_id, name, aliases, created_at, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT (id) DO UPDATE SET name = excluded.name, aliases = excluded.aliases,
                            created_at = excluded.created_at, last_seen = excluded.last_seen",
                        &[
                            person.id.as_str().into(),
                            person.user_id.as_str().into(),
                            person.name.as_str().into(),
                            aliases.as_str().into(),
                            person.created_at.into(),
                            person.last_seen.into(),
                        ],
                    )
                    .map_err(|e| fail(e.to_string()))?;
                }
                ExportLine::Conversation(mut conversation) => {
                    conversation.user_id = user.to_string();
                    if owner_of("conversations", &conversation.id)?
                        .is_some_and(|owner| owner != user)
                    {
                        return Err(StoreError::OtherUsers {
                            what: "conversation",
                            id: conversation.id.clone(),
                        });
                    }
                    tx.execute(
                        "INSERT INTO conversations (id, user_id, started_at, last_message_at, ended_at, extracted_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT (id) DO UPDATE SET started_at = excluded.started_at, last_message_at = excluded.last_message_at,
                            ended_at = excluded.ended_at, extracted_seq = excluded.extracted_seq",
                        &[
                            conversation.id.as_str().into(),
                            conversation.user_id.as_str().into(),
                            conversation.started_at.into(),
                            conversation.last_message_at.into(),
                            conversation.ended_at.into(),
                            conversation.extracted_seq.into(),
                        ],
                    )
                    .map_err(|e| fail(e.to_string()))?;
                }
                ExportLine::Message(mut message) => {
                    message.user_id = user.to_string();
                    if owner_of("messages", &message.id)?.is_some_and(|owner| owner != user) {
                        return Err(StoreError::OtherUsers {
                            what: "message",
                            id: message.id.clone(),
                        });
                    }
                    if owner_of("conversations", &message.conversation_id)?
                        .is_some_and(|owner| owner != user)
                    {
                        return Err(StoreError::OtherUsers {
                            what: "conversation",
                            id: message.conversation_id.clone(),
                        });
                    }
                    if message.content.len() > MAX_MESSAGE_BYTES {
                        return Err(fail(format!(
                            "message `{}` is over the {MAX_MESSAGE_BYTES}-byte limit",
                            message.id
                        )));
                    }
                    let content = engram_strategies::secrets::redact(&message.content, kinds);
                    crate::memory::brain::redact::count_found(tx, user, &content.found)?;
                    message.content = content.text.into_owned();
                    tx.execute(
                        "INSERT INTO messages (id, conversation_id, user_id, seq, role, name, content, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                         ON CONFLICT (id) DO UPDATE SET conversation_id = excluded.conversation_id, seq = excluded.seq,
                            role = excluded.role, name = excluded.name, content = excluded.content, at = excluded.at",
                        &[
                            message.id.as_str().into(),
                            message.conversation_id.as_str().into(),
                            message.user_id.as_str().into(),
                            message.seq.into(),
                            message.role.as_str().into(),
                            message.name.as_deref().into(),
                            message.content.as_str().into(),
                            message.at.into(),
                        ],
                    )
                    .map_err(|e| fail(format!("message `{}`: {e}", message.id)))?;
                    super::super::transcript::index_message(tx, &message.id)?;
                }
                ExportLine::PersonLink(link) => {
                    // A link joins two of this user's records. Ids not seen yet must
                    // come later in the file (as this user's, or that line fails).
                    for (table, id) in [("memories", &link.memory_id), ("persons", &link.person_id)]
                    {
                        if owner_of(table, id)?.is_some_and(|owner| owner != user) {
                            return Err(StoreError::OtherUsers {
                                what: if table == "memories" {
                                    "memory"
                                } else {
                                    "person"
                                },
                                id: id.clone(),
                            });
                        }
                    }
                    tx.execute(
                        "INSERT INTO memory_persons (memory_id, person_id, user_id, relation) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (memory_id, person_id) DO UPDATE SET user_id = excluded.user_id,
                            relation = excluded.relation",
                        &[
                            link.memory_id.as_str().into(),
                            link.person_id.as_str().into(),
                            user.into(),
                            link.relation.as_deref().into(),
                        ],
                    )
                    .map_err(|e| fail(format!("link {} -> {}: {e}", link.memory_id, link.person_id)))?;
                }
            }
            count += 1;
        }
        // Records may name others further down, so references are checked once all
        // are in: a name neither the import nor the store has fails the whole import.
        let dangling = match tx.backend() {
            Backend::Sqlite => tx
                .query_opt(
                    "SELECT \"table\", parent FROM pragma_foreign_key_check LIMIT 1",
                    &[],
                    |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
                )?
                .map(|(table, parent)| format!("a record of `{table}` names one of `{parent}`")),
            // The deferred checks run now; the server names the reference.
            Backend::Postgres => match tx.batch("SET CONSTRAINTS ALL IMMEDIATE") {
                Ok(()) => None,
                Err(SqlError::Postgres(e))
                    if e.code() == Some(&::postgres::error::SqlState::FOREIGN_KEY_VIOLATION) =>
                {
                    Some(format!(
                        "a record names another ({})",
                        e.as_db_error()
                            .map_or_else(|| e.to_string(), |d| d.message().to_string())
                    ))
                }
                Err(e) => return Err(e.into()),
            },
        };
        if let Some(dangling) = dangling {
            return Err(StoreError::Dangling(format!(
                "{dangling} that neither the import nor the store has"
            )));
        }
        Ok((count, memories))
    }

    fn insert_without_history(tx: &impl AsTx, r: &MemoryRecord) -> Result<(), StoreError> {
        let turns = turns_json(r);
        tx.as_tx().execute(
            &format!(
                "INSERT INTO memories ({COLUMNS}) VALUES ({})",
                placeholders()
            ),
            &values(r, &turns),
        )?;
        Ok(())
    }
}

/// A JSON text with the characters some readers take for a line break (NEL, the line
/// and paragraph separators: Python's `splitlines`, among others) written as escapes.
/// serde_json escapes the ASCII controls only; these can only be inside strings, where
/// an escape means the same character, so every reader sees one record per line.
fn one_line(json: String) -> String {
    if !json.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        return json;
    }
    json.replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

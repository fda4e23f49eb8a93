//! Keeping the index in step with the table.
//!
//! On SQLite the one writer's connection reports every row change of `memories` (its
//! update hook), the changed rows are re-read and applied once the transaction has
//! ended, and a search inside a write transaction ranks the rows it changed
//! ([`Overlay`]) in place of their indexed versions.
//!
//! On PostgreSQL other daemons write too, unheard: a trigger logs the rows each
//! transaction changed (`memory_changes`, schema version 11), and before each read
//! the index re-reads the rows logged by every transaction that was not over when it
//! last looked ([`TextIndex::catch_up`]): a commit acknowledged by any daemon is in
//! the next search of every daemon. A search inside a write transaction ranks the rows
//! that transaction logged, as on SQLite.

use std::collections::HashSet;
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;

use rusqlite::Connection;

use super::{Inner, Row, TextIndex};
use crate::memory::brain::error::StoreError;
use crate::memory::brain::row::{COLUMNS, number_column, record_from_row, record_from_row_at};
use crate::sql::Tx;

/// Meta key (user `""`): the log holds every change by a transaction with an id at or
/// above this; an index that last looked before it builds itself again.
pub const CHANGES_FLOOR: &str = "memory_changes_floor";

/// What a search ranks beyond the index: rows changed in the open transaction.
pub(super) struct Overlay {
    pub(super) rowids: HashSet<i64>,
    pub(super) rows: Vec<(i64, Row)>,
}

impl Overlay {
    pub(super) fn none() -> Overlay {
        Overlay {
            rowids: HashSet::new(),
            rows: Vec::new(),
        }
    }
}

/// `COLUMNS` of the table aliased `m`.
fn columns_of_m() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("m.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The memory whose columns start at `first`, `None` where the row joined none (a
/// deleted one).
fn record_if_any(
    row: &crate::sql::Row,
    first: usize,
) -> Result<Option<crate::memory::record::MemoryRecord>, crate::sql::SqlError> {
    match row.get::<Option<String>>(first)? {
        Some(_) => Ok(Some(record_from_row_at(row, first)?)),
        None => Ok(None),
    }
}

/// The oldest transaction still running as the statement starts: every one before it
/// is over, its changes visible to the statement.
const OLDEST_RUNNING: &str = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

impl TextIndex {
    /// Makes `conn`, the one write connection, report its changes to `memories`.
    pub fn watch(&self, conn: &Connection) {
        // SAFETY: only the handle's address is kept, to recognise the connection.
        self.writer
            .store(unsafe { conn.handle() } as usize, Ordering::SeqCst);
        let changed = self.changed.clone();
        conn.update_hook(Some(
            move |_: rusqlite::hooks::Action, db: &str, table: &str, rowid: i64| {
                if db == "main" && table == "memories" {
                    changed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(rowid);
                }
            },
        ));
    }

    pub fn is_built(&self) -> bool {
        self.read().is_some()
    }

    /// Builds the index from `tx`'s view of the table, unless it is built already.
    /// On SQLite, run on the writer's connection with the writer held, so that no
    /// commit slips between the read and the index taking over (rows changed in a
    /// transaction open on it are re-read when it ends, as always). On PostgreSQL, in
    /// a read transaction acting for the system: changes by transactions still running
    /// as it starts are re-read at the next [`TextIndex::catch_up`].
    pub fn build(&self, tx: &Tx) -> Result<(), StoreError> {
        self.build_held(tx, &mut self.follow())
    }

    /// [`TextIndex::build`] by a caller holding `follow`.
    fn build_held(
        &self,
        tx: &Tx,
        follow: &mut MutexGuard<'_, Option<i64>>,
    ) -> Result<(), StoreError> {
        if self.is_built() {
            return Ok(());
        }
        let watermark = match tx.as_sqlite() {
            Some(_) => None,
            None => Some(tx.query_one(&format!("SELECT {OLDEST_RUNNING}"), &[], |r| r.get(0))?),
        };
        let mut inner = Inner::default();
        // The row's number after the record's columns, which `record_from_row` reads
        // from 0.
        let number_at = COLUMNS.split(',').count();
        let mut tokenizer = self.tokenizer();
        let mut failed = None;
        tx.query(
            &format!("SELECT {COLUMNS}, {} FROM memories", number_column(tx)),
            &[],
            |r| {
                // Each row is indexed as it is read: the table is not held in memory
                // twice.
                match Row::new(&mut tokenizer, record_from_row(r)?) {
                    Ok(row) => inner.insert(r.get(number_at)?, &row),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
                Ok(())
            },
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        *self.write() = Some(inner);
        **follow = watermark;
        Ok(())
    }

    /// PostgreSQL only (on SQLite the writer keeps the index in step): applies the rows
    /// changed by every transaction that was still running when the index last looked
    /// (or built), in a read transaction acting for the system; builds the index if it
    /// is not built, or again if the log was pruned past where it last looked. Not from
    /// inside a write transaction, whose own changes are not committed (a search there
    /// ranks them through its overlay).
    ///
    /// Callers arriving together share one look: a look that began after a caller
    /// arrived has read every commit acknowledged before it, so once one has ended the
    /// caller needs none of its own (under load, one round trip serves every search
    /// that was waiting for it). `read` runs the look in a read transaction acting for
    /// the system, and is called only when this caller looks itself: one that shares
    /// another's look takes no connection.
    pub fn catch_up(
        &self,
        read: impl FnOnce(&mut dyn FnMut(&Tx) -> Result<(), StoreError>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let arrived = self.looks.begun.load(Ordering::SeqCst);
        let mut follow = self.follow();
        if self.looks.ended.load(Ordering::SeqCst) > arrived {
            return Ok(());
        }
        read(&mut |tx| self.look(tx, &mut follow))
    }

    /// One look at the change log (see [`TextIndex::catch_up`]), with `follow` held.
    fn look(&self, tx: &Tx, follow: &mut MutexGuard<'_, Option<i64>>) -> Result<(), StoreError> {
        let look = self.looks.begun.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(since) = **follow else {
            self.build_held(tx, follow)?;
            self.looks.ended.fetch_max(look, Ordering::SeqCst);
            return Ok(());
        };
        // One statement, one snapshot: the floor, the oldest transaction running, and
        // the rows changed since `since` as they are now (a deleted one as NULLs).
        let number_at = 3;
        let rows = tx.query(
            &format!(
                "SELECT f.floor, f.oldest, c.n, {} FROM (
                     SELECT (SELECT value FROM meta WHERE user_id = '' AND key = '{CHANGES_FLOOR}') AS floor,
                            {OLDEST_RUNNING} AS oldest) f
                 LEFT JOIN (SELECT DISTINCT n FROM memory_changes WHERE xact >= ?1) c ON true
                 LEFT JOIN memories m ON m.n = c.n",
                columns_of_m()
            ),
            &[since.into()],
            |r| {
                let floor: Option<String> = r.get(0)?;
                let oldest: i64 = r.get(1)?;
                let number: Option<i64> = r.get(2)?;
                Ok((floor, oldest, number, record_if_any(r, number_at)?))
            },
        )?;
        let Some((floor, oldest, _, _)) = rows.first() else {
            return Ok(());
        };
        let floor = floor.as_deref().and_then(|f| f.parse::<i64>().ok());
        if floor.is_some_and(|floor| floor > since) {
            // The log no longer holds every change since the index looked.
            *self.write() = None;
            **follow = None;
            self.build_held(tx, follow)?;
            self.looks.ended.fetch_max(look, Ordering::SeqCst);
            return Ok(());
        }
        let oldest = *oldest;
        let mut read = Vec::with_capacity(rows.len());
        {
            let mut tokenizer = self.tokenizer();
            for (_, _, number, record) in rows {
                let Some(number) = number else { continue };
                let row = match record {
                    Some(record) => Some(Row::new(&mut tokenizer, record)?),
                    None => None,
                };
                read.push((number, row));
            }
        }
        let mut state = self.write();
        if let Some(inner) = state.as_mut() {
            for (number, row) in read {
                match row {
                    Some(row) => inner.insert(number, &row),
                    None => inner.remove(number),
                }
            }
        }
        **follow = Some(oldest);
        self.looks.ended.fetch_max(look, Ordering::SeqCst);
        Ok(())
    }

    /// The rows the open PostgreSQL write transaction on `tx` changed, as it sees
    /// them now: the overlay of a search inside it.
    pub(super) fn changed_here(&self, tx: &Tx, user: &str) -> Result<Overlay, StoreError> {
        let number_at = 1;
        let rows = tx.query(
            &format!(
                "SELECT c.n, {} FROM memory_changes c LEFT JOIN memories m ON m.n = c.n
                 WHERE c.xact = pg_current_xact_id_if_assigned()::text::bigint",
                columns_of_m()
            ),
            &[],
            |r| Ok((r.get::<i64>(0)?, record_if_any(r, number_at)?)),
        )?;
        let mut overlay = Overlay::none();
        let mut tokenizer = self.tokenizer();
        for (number, record) in rows {
            overlay.rowids.insert(number);
            // Only the user's rows count (other users' changes only leave their
            // indexed versions out, which this search never reads).
            if let Some(record) = record.filter(|r| r.user_id == user) {
                overlay
                    .rows
                    .push((number, Row::new(&mut tokenizer, record)?));
            }
        }
        Ok(overlay)
    }

    /// Brings the index up to date with the rows the writer changed, once its
    /// transaction has ended (committed or rolled back: either way `conn` now reads
    /// what is committed). A row that cannot be read stays queued for the next time.
    pub fn committed(&self, conn: &Connection) {
        if !conn.is_autocommit() {
            return;
        }
        let mut rowids = std::mem::take(&mut *self.changed());
        if rowids.is_empty() || !self.is_built() {
            return;
        }
        rowids.sort_unstable();
        rowids.dedup();
        let mut read = Vec::with_capacity(rowids.len());
        let mut failed = Vec::new();
        for rowid in rowids {
            match self.read_row(conn, rowid) {
                Ok(row) => read.push((rowid, row)),
                Err(e) => {
                    tracing::error!("the search index cannot re-read memory row {rowid}: {e}");
                    failed.push(rowid);
                }
            }
        }
        self.changed().extend(failed);
        let mut state = self.write();
        if let Some(inner) = state.as_mut() {
            for (rowid, row) in read {
                match row {
                    Some(row) => inner.insert(rowid, &row),
                    None => inner.remove(rowid),
                }
            }
        }
    }

    pub(super) fn read_row(
        &self,
        conn: &Connection,
        rowid: i64,
    ) -> Result<Option<Row>, StoreError> {
        let Some(record) = Tx::sqlite(conn).query_opt(
            &format!("SELECT {COLUMNS} FROM memories WHERE rowid = ?1"),
            &[rowid.into()],
            record_from_row,
        )?
        else {
            return Ok(None);
        };
        Ok(Some(Row::new(&mut self.tokenizer(), record)?))
    }
}

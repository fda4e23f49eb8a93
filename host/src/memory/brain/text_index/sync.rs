//! Keeping the index in step with SQLite: the writer's connection reports every row
//! change of `memories` (its update hook), the changed rows are re-read and applied
//! once the transaction has ended, and a search inside a write transaction ranks the
//! rows it changed ([`Overlay`]) in place of their indexed versions.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use rusqlite::Connection;

use super::{Inner, Row, TextIndex};
use crate::memory::brain::error::StoreError;
use crate::memory::brain::row::{COLUMNS, record_from_row};
use crate::sql::Tx;

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

    /// Builds the index from `conn`'s view of the table, unless it is built already.
    /// Run on the writer's connection with the writer held, so that no commit slips
    /// between the read and the index taking over (rows changed in a transaction open
    /// on it are re-read when it ends, as always).
    pub fn build(&self, conn: &Connection) -> Result<(), StoreError> {
        if self.is_built() {
            return Ok(());
        }
        let mut inner = Inner::default();
        // The rowid after the record's columns, which `record_from_row` reads from 0.
        let rowid_at = COLUMNS.split(',').count();
        let mut tokenizer = self.tokenizer();
        let mut failed = None;
        Tx::sqlite(conn).query(
            &format!("SELECT {COLUMNS}, rowid FROM memories"),
            &[],
            |r| {
                // Each row is indexed as it is read: the table is not held in memory
                // twice.
                match Row::new(&mut tokenizer, record_from_row(r)?) {
                    Ok(row) => inner.insert(r.get(rowid_at)?, &row),
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
        Ok(())
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

//! The transcript's search on whichever backend a transaction is on: FTS5 on SQLite
//! (`transcript.rs`), the postings of `terms.rs` on PostgreSQL. The way in for the test
//! comparing the two (`tests/tests/transcript_postgres.rs`) and for the bench
//! measuring them (`host/benches/transcript.rs`), with a query as text, as a search
//! is asked for; the Second Brain calls the two itself.

use rusqlite::Connection;

use super::terms::{self, Indexed};
use crate::memory::brain::bm25;
use crate::memory::brain::error::{IndexError, StoreError};
use crate::memory::brain::text_index::TextQuery;
use crate::memory::brain::tokenizer::Tokenizer;
use crate::sql::Tx;

/// The transcript's search over a transaction of either backend.
pub struct Transcript {
    tokenizer: Tokenizer,
}

impl Transcript {
    pub fn new() -> Result<Transcript, StoreError> {
        let tokenizer = Tokenizer::new().map_err(|e| StoreError::Index(IndexError::from(e)))?;
        Ok(Transcript { tokenizer })
    }

    /// Registers on a SQLite connection of the caller's what the FTS5 search calls
    /// (`engram_hits`) and what the schema's triggers call when a message is written
    /// (`engram_tokens`), as the Second Brain does on its own connections.
    pub fn prepare_sqlite(conn: &Connection) -> Result<(), StoreError> {
        bm25::register(conn)?;
        crate::memory::brain::tokenizer::register_token_count(conn)?;
        Ok(())
    }

    /// Indexes message `n`, written in this transaction (PostgreSQL: on SQLite the
    /// schema's triggers index it).
    pub fn index(
        &mut self,
        tx: &Tx<'_>,
        n: i64,
        user: &str,
        content: &str,
        name: Option<&str>,
    ) -> Result<(), StoreError> {
        let message = Indexed {
            n,
            user,
            content,
            name,
        };
        terms::index(tx, &mut self.tokenizer, &message)
    }

    /// [`terms::index_unindexed`].
    pub fn index_unindexed(&mut self, tx: &Tx<'_>, batch: usize) -> Result<usize, StoreError> {
        terms::index_unindexed(tx, &mut self.tokenizer, batch)
    }

    /// `user`'s messages matching any word of `text` (every word, when `all`), best
    /// first, at most `limit`: each message's id and bm25. Empty for text without a
    /// word.
    pub fn search(
        &mut self,
        tx: &Tx<'_>,
        user: &str,
        text: &str,
        all: bool,
        limit: usize,
    ) -> Result<Vec<(String, f64)>, StoreError> {
        let Some(query) = query(text, all) else {
            return Ok(Vec::new());
        };
        let found = match tx.as_sqlite() {
            Some(_) => super::search(tx, user, &query, limit)?,
            None => terms::search(tx, &mut self.tokenizer, user, &query, limit)?,
        };
        Ok(found.into_iter().map(|m| (m.message.id, m.bm25)).collect())
    }

    /// How many of `user`'s messages match, counting no further than `cap + 1`.
    pub fn match_count(
        &mut self,
        tx: &Tx<'_>,
        user: &str,
        text: &str,
        all: bool,
        cap: usize,
    ) -> Result<usize, StoreError> {
        let Some(query) = query(text, all) else {
            return Ok(0);
        };
        match tx.as_sqlite() {
            Some(_) => super::match_count(tx, user, &query, cap),
            None => terms::match_count(tx, &mut self.tokenizer, user, &query, cap),
        }
    }

    /// How many messages `user` has.
    pub fn size(&self, tx: &Tx<'_>, user: &str) -> Result<i64, StoreError> {
        match tx.as_sqlite() {
            Some(_) => super::size(tx, user),
            None => terms::size(tx, user),
        }
    }
}

fn query(text: &str, all: bool) -> Option<TextQuery> {
    if all {
        TextQuery::all(text)
    } else {
        TextQuery::any(text)
    }
}

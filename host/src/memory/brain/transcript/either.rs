//! The transcript's search on whichever backend a transaction is on (FTS5 on SQLite,
//! the postings of `terms.rs` on PostgreSQL: `transcript.rs` chooses), with a query as
//! text, as a search is asked for: the way in for the test comparing the two
//! (`tests/tests/transcript_postgres.rs`) and for the bench measuring them
//! (`tests/benches/transcript.rs`).

use rusqlite::Connection;

use super::terms::{self, Indexed};
use crate::memory::brain::bm25;
use crate::memory::brain::error::StoreError;
use crate::memory::brain::text_index::TextQuery;
use crate::sql::Tx;

/// The transcript's search over a transaction of either backend.
pub struct Transcript(());

impl Transcript {
    pub fn new() -> Result<Transcript, StoreError> {
        Ok(Transcript(()))
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
        terms::with_tokenizer(|t| terms::index(tx, t, &message))
    }

    /// [`terms::index_unindexed`].
    pub fn index_unindexed(&mut self, tx: &Tx<'_>, batch: usize) -> Result<usize, StoreError> {
        terms::with_tokenizer(|t| terms::index_unindexed(tx, t, batch))
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
        let found = super::search(tx, user, &query, limit)?;
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
        super::match_count(tx, user, &query, cap)
    }

    /// How many messages `user` has.
    pub fn size(&self, tx: &Tx<'_>, user: &str) -> Result<i64, StoreError> {
        super::size(tx, user)
    }
}

fn query(text: &str, all: bool) -> Option<TextQuery> {
    if all {
        TextQuery::all(text)
    } else {
        TextQuery::any(text)
    }
}

//! bm25 ranking over the index, as FTS5 computes it for the searching user's rows
//! alone (`bm25.rs`): the query's phrases, the rows where they occur, the best rows
//! first; and whether a query matches more than a number of rows.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rusqlite::Connection;
use rustc_hash::FxHashMap;

use super::sync::Overlay;
use super::{Inner, Share, TermId, TextIndex, TextMatch, TextQuery, index_error};
use crate::memory::brain::bm25;
use crate::memory::brain::error::StoreError;
use crate::memory::record::MemoryRecord;
use crate::sql::Tx;

const WEIGHTS: [f64; 2] = [1.0, 0.5];

/// A query word as FTS5 reads it: a phrase of the word's tokens.
pub(super) struct Phrase {
    pub(super) tokens: Vec<Box<[u8]>>,
    /// The tokens' ids, when every one of them is in the index.
    pub(super) ids: Option<Vec<TermId>>,
}

/// Where a phrase occurs: rows of the index, or rows re-read for a transaction.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum At {
    Slot(u32),
    Pending(usize),
}

/// The occurrences of a phrase in one row's columns: start positions where all its
/// tokens follow each other, per column.
fn occurrences<T: PartialEq>(columns: [&[T]; 2], phrase: &[T]) -> [u32; 2] {
    columns.map(|column| {
        if phrase.is_empty() || column.len() < phrase.len() {
            return 0;
        }
        column
            .windows(phrase.len())
            .filter(|w| *w == phrase)
            .count() as u32
    })
}

/// bm25's weighted frequency of a phrase in a row: FTS5 adds each instance's column
/// weight (exact in binary: 1.0 and 0.5).
fn frequency(tf: [u32; 2]) -> f64 {
    f64::from(tf[0]) * WEIGHTS[0] + f64::from(tf[1]) * WEIGHTS[1]
}

impl TextIndex {
    /// Whether more than `cap` of `user`'s rows (live or not) match `query`: what
    /// deciding which words are common for them, and how broad a query may be, reads.
    /// For any of the words it is mostly a lookup of each word's row count.
    pub fn more_than(&self, user: &str, query: &TextQuery, cap: usize) -> Result<bool, StoreError> {
        let phrases = self.phrases(query)?;
        let state = self.read();
        let Some((inner, (_, share))) = state.as_ref().and_then(|i| Some((i, i.share(user)?)))
        else {
            return Ok(false);
        };
        let overlay = Overlay::none();
        let mut per_phrase = Vec::with_capacity(phrases.len());
        for phrase in &phrases {
            per_phrase.push(match phrase.ids.as_deref() {
                Some([one]) => share.hits(*one),
                _ => matches(inner, Some(share), &overlay, phrase).len(),
            });
        }
        let most = per_phrase.iter().copied().max().unwrap_or(0);
        if !query.all {
            // The union holds at least the commonest word's rows and at most all of
            // every word's.
            if most > cap || per_phrase.iter().sum::<usize>() <= cap {
                return Ok(most > cap);
            }
        } else if per_phrase.iter().copied().min().unwrap_or(0) <= cap {
            // Every word: at most the rarest word's rows.
            return Ok(false);
        }
        let mut seen: FxHashMap<At, u32> = FxHashMap::default();
        for (i, phrase) in phrases.iter().enumerate() {
            for (at, _) in matches(inner, Some(share), &overlay, phrase) {
                *seen.entry(at).or_default() |= 1 << i;
            }
        }
        let every = every_bit(phrases.len());
        Ok(seen
            .values()
            .filter(|&&mask| !query.all || mask == every)
            .count()
            > cap)
    }

    /// How many rows of `user` the table holds, live or not (bm25's N for them, and
    /// what deciding which words are common for them reads).
    pub fn size(&self, user: &str) -> i64 {
        self.read()
            .as_ref()
            .and_then(|inner| inner.share(user))
            .map_or(0, |(_, share)| share.rows as i64)
    }

    /// `user`'s live memories matching `query`, best first, at most `limit`, with
    /// their bm25 (negative; lower is better). The records are the index's, as last
    /// committed; `tx` matters only when it is a write transaction (the writer's
    /// connection on SQLite), whose own changes are then read from it.
    pub fn search(
        &self,
        tx: &Tx,
        user: &str,
        query: &TextQuery,
        limit: usize,
    ) -> Result<Vec<TextMatch>, StoreError> {
        let overlay = match tx.as_sqlite() {
            Some(conn) => self.changed_on_writer(conn, user)?,
            None if tx.is_postgres_write() => {
                if !self.is_built() {
                    return Err(not_built());
                }
                self.changed_here(tx, user)?
            }
            None => Overlay::none(),
        };
        let phrases = self.phrases(query)?;
        let state = self.read();
        let Some(inner) = state.as_ref() else {
            return Err(not_built());
        };
        let ranked = rank(
            inner,
            &overlay,
            &phrases,
            query.all,
            user,
            limit.clamp(1, 500),
        );
        drop(state);
        Ok(ranked
            .into_iter()
            .map(|(bm25, record)| TextMatch {
                record: MemoryRecord::clone(&record),
                bm25,
            })
            .collect())
    }

    /// The rows the writer's open transaction changed, when `conn` is the writer's
    /// and one is open (building the index first on it if need be).
    fn changed_on_writer(&self, conn: &Connection, user: &str) -> Result<Overlay, StoreError> {
        // SAFETY: only the handle's address is read, to tell the writer's connection
        // (which may be inside a transaction of its own) from a reader's.
        let in_writer = self.writer.load(Ordering::SeqCst) == unsafe { conn.handle() } as usize;
        if in_writer && !self.is_built() {
            self.build(&Tx::sqlite(conn))?;
        }
        if !in_writer || conn.is_autocommit() {
            return Ok(Overlay::none());
        }
        let mut rowids: Vec<i64> = self.changed().clone();
        rowids.sort_unstable();
        rowids.dedup();
        // Only the user's rows count (other users' changes only leave their indexed
        // versions out, which this search never reads).
        let mut rows = Vec::new();
        for &rowid in &rowids {
            if let Some(row) = self.read_row(conn, rowid)?
                && row.record.user_id == user
            {
                rows.push((rowid, row));
            }
        }
        Ok(Overlay {
            rowids: rowids.into_iter().collect(),
            rows,
        })
    }

    pub(super) fn phrases(&self, query: &TextQuery) -> Result<Vec<Phrase>, StoreError> {
        let mut tokenizer = self.tokenizer();
        let mut phrases = Vec::with_capacity(query.words.len());
        for word in &query.words {
            let mut tokens = Vec::new();
            tokenizer
                .tokens(word, true, &mut |t| tokens.push(Box::<[u8]>::from(t)))
                .map_err(index_error)?;
            phrases.push(Phrase { tokens, ids: None });
        }
        drop(tokenizer);
        if let Some(inner) = self.read().as_ref() {
            for phrase in &mut phrases {
                phrase.ids = phrase
                    .tokens
                    .iter()
                    .map(|t| inner.terms.get(t).copied())
                    .collect();
            }
        }
        Ok(phrases)
    }
}

fn not_built() -> StoreError {
    StoreError::Invalid {
        field: "search",
        reason: "the search index is not built".into(),
    }
}

fn every_bit(phrases: usize) -> u32 {
    if phrases >= 32 {
        u32::MAX
    } else {
        (1u32 << phrases) - 1
    }
}

/// Every row of `share` (live or not) and of the overlay (the same user's rows, as the
/// transaction has them) where `phrase` occurs, with its occurrences.
fn matches(
    inner: &Inner,
    share: Option<&Share>,
    overlay: &Overlay,
    phrase: &Phrase,
) -> Vec<(At, [u32; 2])> {
    let mut out = Vec::new();
    let replaced = |slot: u32| {
        !overlay.rowids.is_empty() && overlay.rowids.contains(&inner.scored[slot as usize].rowid)
    };
    if let (Some(ids), Some(share)) = (&phrase.ids, share) {
        match ids.as_slice() {
            [] => {}
            [one] => {
                for p in inner.postings(share, *one) {
                    if !replaced(p.slot) {
                        out.push((At::Slot(p.slot), p.tf));
                    }
                }
            }
            [first, ..] => {
                for p in inner.postings(share, *first) {
                    if replaced(p.slot) {
                        continue;
                    }
                    let doc = inner.doc(p.slot);
                    let tf = occurrences([&doc.columns[0], &doc.columns[1]], ids);
                    if tf != [0, 0] {
                        out.push((At::Slot(p.slot), tf));
                    }
                }
            }
        }
    }
    for (i, (_, row)) in overlay.rows.iter().enumerate() {
        let tf = occurrences([&row.columns[0][..], &row.columns[1][..]], &phrase.tokens);
        if tf != [0, 0] {
            out.push((At::Pending(i), tf));
        }
    }
    out
}

/// Per-thread scratch of [`rank`]: a score and a mask of the phrases found, per slot,
/// and the slots touched, so that ranking costs the matches, not the table's size (and
/// no hash map is grown per search).
#[derive(Default)]
struct Scratch {
    scores: Vec<(f64, u32)>,
    touched: Vec<u32>,
}

impl Scratch {
    fn clear(&mut self) {
        for slot in self.touched.drain(..) {
            self.scores[slot as usize] = (0.0, 0);
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// The best `limit` of `user`'s live rows matching the phrases, best first: their bm25
/// (negative; lower is better) and their records. The overlay holds only `user`'s rows.
fn rank(
    inner: &Inner,
    overlay: &Overlay,
    phrases: &[Phrase],
    all: bool,
    user: &str,
    limit: usize,
) -> Vec<(f64, Arc<MemoryRecord>)> {
    let (user_id, share) = inner.share(user).unzip();
    // N and the tokens of the user's rows as the transaction sees them.
    let (mut rows, mut tokens) = share.map_or((0, 0), |s| (s.rows, s.tokens));
    for rowid in &overlay.rowids {
        if let Some(&slot) = inner.slots.get(rowid) {
            let doc = inner.doc(slot);
            if Some(doc.user) == user_id {
                rows -= 1;
                tokens -= doc.size() as u64;
            }
        }
    }
    for (_, row) in &overlay.rows {
        rows += 1;
        tokens += row.size() as u64;
    }
    if rows == 0 {
        return Vec::new();
    }
    let avgdl = bm25::average(tokens, rows);
    let every = every_bit(phrases.len());
    let mut pending = vec![(0.0, 0u32); overlay.rows.len()];
    let mut ranked: Vec<(f64, i64, At)> = SCRATCH.with_borrow_mut(|scratch| {
        // Left dirty only by a panic in an earlier search on this thread.
        scratch.clear();
        if scratch.scores.len() < inner.docs.len() {
            scratch.scores.resize(inner.docs.len(), (0.0, 0));
        }
        let add = |scratch: &mut Scratch, slot: u32, idf: f64, tf: [u32; 2], bit: u32| {
            let row = inner.scored[slot as usize];
            if Some(row.owner) != user_id {
                return;
            }
            let entry = &mut scratch.scores[slot as usize];
            if entry.1 == 0 {
                scratch.touched.push(slot);
            }
            entry.0 += bm25::term(idf, frequency(tf), row.size as usize, avgdl);
            entry.1 |= bit;
        };
        let no_overlay = overlay.rowids.is_empty() && overlay.rows.is_empty();
        for (i, phrase) in phrases.iter().enumerate() {
            // The common case, one token and no transaction of its own: its postings
            // are its matches.
            if let (Some([one]), true, Some(share)) = (phrase.ids.as_deref(), no_overlay, share) {
                let idf = bm25::idf(rows, share.hits(*one) as u64);
                for p in inner.postings(share, *one) {
                    add(scratch, p.slot, idf, p.tf, 1 << i);
                }
                continue;
            }
            let found = matches(inner, share, overlay, phrase);
            let idf = bm25::idf(rows, found.len() as u64);
            for (at, tf) in found {
                let entry = match at {
                    At::Slot(slot) => {
                        add(scratch, slot, idf, tf, 1 << i);
                        continue;
                    }
                    At::Pending(p) => {
                        let row = &overlay.rows[p].1;
                        if !row.live() {
                            continue;
                        }
                        let entry = &mut pending[p];
                        entry.0 += bm25::term(idf, frequency(tf), row.size(), avgdl);
                        entry
                    }
                };
                entry.1 |= 1 << i;
            }
        }
        let found = scratch
            .touched
            .iter()
            .map(|&slot| {
                let (score, mask) = scratch.scores[slot as usize];
                (
                    score,
                    mask,
                    inner.scored[slot as usize].rowid,
                    At::Slot(slot),
                )
            })
            .chain(
                pending
                    .iter()
                    .enumerate()
                    .map(|(p, &(score, mask))| (score, mask, overlay.rows[p].0, At::Pending(p))),
            )
            .filter(|&(_, mask, _, _)| mask != 0 && (!all || mask == every))
            .map(|(score, _, rowid, at)| (-score, rowid, at))
            .collect();
        scratch.clear();
        found
    });
    // Ties in rowid order, as SQLite's sort left them; only the best `limit` are sorted.
    let order = |a: &(f64, i64, At), b: &(f64, i64, At)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
    ranked
        .into_iter()
        .map(|(score, _, at)| {
            let record = match at {
                At::Slot(slot) => &inner.doc(slot).record,
                At::Pending(p) => &overlay.rows[p].1.record,
            };
            (score, record.clone())
        })
        .collect()
}

//! Memory search's ranking: an in-memory inverted index of the memories' text that
//! scores exactly as FTS5's `bm25(memories_fts, 1.0, 0.5)` would over a table holding
//! only the searching user's memories (`bm25.rs`: k1 = 1.2, b = 0.75; a phrase's
//! frequency in a row is the weighted count of its instances, 1.0 in the summary and
//! 0.5 in the detail; the row's size and the average size are over both columns; the
//! IDF `ln((N - n + 0.5) / (n + 0.5))`, at least 1e-6). N, n and the average size count
//! that user's rows, live or not, as FTS5 would: one user's ranking, and which words
//! are common for them ([`TextIndex::more_than`]), depend on that user's memories
//! alone, however many other users share the store. So each user's rows have postings
//! of their own ([`Share`]). Same tokens (FTS5's own tokenizer, `tokenizer.rs`), same
//! arithmetic in the same order, ties in rowid order as SQLite's sort leaves them: the
//! same memories in the same order with the same scores, at a few microseconds per
//! thousand matches instead of FTS5's ~1.8 µs per matching row (bm25 there reads each
//! row's size from `%_docsize`).
//!
//! It is kept in step with committed data: the writer's connection reports every row
//! change of `memories` (SQLite's update hook, so triggers, foreign-key actions and
//! every code path are covered), and after each commit or rollback the writer re-reads
//! those rows and applies them ([`TextIndex::committed`]) before any write is
//! acknowledged. A search inside a write transaction (ingestion's conflict sweep) sees
//! that transaction's own changes: the rows changed since the last commit are re-read
//! on the transaction's connection and ranked in place of their indexed versions.
//! It also holds each row's record as last committed, so that a search, and a read by
//! id ([`TextIndex::get`]), answer without reading the table: a reader's page cache is
//! dropped at its first read after any commit (WAL mode), so under steady writes every
//! such read went back to the file, page by page.
//!
//! Nothing is durable: the index is built from the table on first use after opening
//! (the daemon builds it as it starts, `Brain::warm`). On PostgreSQL, where other
//! daemons write the same table, it follows a log of the rows each transaction
//! changed instead of the writer (`sync.rs`). (It replaced the FTS5 table
//! `memories_fts`, which schema version 3 drops.)
//!
//! Here: the index's state (each user's postings, each row's record and tokens) and
//! how a row enters or leaves it; `sync.rs` keeps it in step with SQLite, `cache.rs`
//! answers reads by id, `rank.rs` ranks.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rustc_hash::FxHashMap;

use super::error::{IndexError, StoreError};
use super::tokenizer::{Tokenizer, TokenizerError};
use crate::memory::record::MemoryRecord;

/// Weights of the two columns, summary and detail, as search passed them to bm25().
type TermId = u32;

/// A search: each word is a quoted FTS5 term (`"word"`), any of them or all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextQuery {
    /// Lowercased, at most 32.
    pub words: Vec<String>,
    pub all: bool,
}

impl TextQuery {
    /// Rows holding any word of `text` (split at every character that is not
    /// alphanumeric); `None` when it has no word.
    pub fn any(text: &str) -> Option<TextQuery> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(32)
            .map(str::to_lowercase)
            .collect();
        (!words.is_empty()).then_some(TextQuery { words, all: false })
    }

    /// Rows holding `word` (lowercased already, one word of [`TextQuery::any`]).
    pub fn word(word: &str) -> TextQuery {
        TextQuery {
            words: vec![word.to_string()],
            all: false,
        }
    }

    /// Rows holding every word of `text`.
    pub fn all(text: &str) -> Option<TextQuery> {
        TextQuery::any(text).map(|q| TextQuery { all: true, ..q })
    }

    /// The FTS5 query: each word quoted (so that no text is a syntax error), joined by
    /// OR or AND.
    pub fn fts5(&self) -> String {
        let join = if self.all { " AND " } else { " OR " };
        self.words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(join)
    }
}

/// A full-text match with its bm25 score (lower is better, as SQLite reports it).
#[derive(Debug, Clone, PartialEq)]
pub struct TextMatch {
    pub record: MemoryRecord,
    pub bm25: f64,
}

/// A term's occurrences in one row: the row in its slot's `uses`-th use.
struct Posting {
    slot: u32,
    uses: u32,
    /// In the summary, in the detail.
    tf: [u32; 2],
}

/// An indexed row: the record as committed (what a search returns, without reading
/// the table again), its user's number and its tokens in order, per column (phrases
/// need the order).
struct Doc {
    record: Arc<MemoryRecord>,
    user: u32,
    columns: [Box<[TermId]>; 2],
}

impl Doc {
    fn size(&self) -> usize {
        self.columns[0].len() + self.columns[1].len()
    }
}

/// What scoring needs of an indexed row.
#[derive(Clone, Copy)]
struct Scored {
    /// Ties are ranked by rowid.
    rowid: i64,
    /// Tokens in both columns.
    size: u32,
    /// The user's number when the row is live, [`Scored::HIDDEN`] otherwise (or when
    /// the slot is free).
    owner: u32,
    /// How many rows the slot has held and lost: a posting of an earlier one is stale.
    uses: u32,
}

impl Scored {
    const HIDDEN: u32 = u32::MAX;
}

/// A row as the table holds it, tokenized.
struct Row {
    record: Arc<MemoryRecord>,
    columns: [Vec<Box<[u8]>>; 2],
}

impl Row {
    fn new(tokenizer: &mut Tokenizer, record: MemoryRecord) -> Result<Row, StoreError> {
        let columns = [
            tokens(tokenizer, Some(&record.summary))?,
            tokens(tokenizer, record.detail.as_deref())?,
        ];
        Ok(Row {
            record: Arc::new(record),
            columns,
        })
    }

    fn size(&self) -> usize {
        self.columns[0].len() + self.columns[1].len()
    }

    /// Neither superseded nor dismissed: what search finds.
    fn live(&self) -> bool {
        self.record.superseded_by.is_none() && self.record.dismissed_at.is_none()
    }
}

/// A term's postings. Removing a row only counts its postings out of `live`: they
/// stay in the list, known to be stale by their slot's use count, until the stale
/// ones outnumber the live ones and the list is compacted. So removing (or editing) a
/// row costs its own terms, not a walk through each term's list, thousands of rows
/// long for a common word.
#[derive(Default)]
struct Postings {
    list: Vec<Posting>,
    live: u32,
}

/// One user's rows: where each term occurs in them, and what bm25 counts over them.
#[derive(Default)]
struct Share {
    /// By term; a posting list's order means nothing.
    postings: FxHashMap<TermId, Postings>,
    /// The user's rows, live or not, and their tokens (both columns).
    rows: u64,
    tokens: u64,
}

impl Share {
    /// How many of the user's rows hold `term`.
    fn hits(&self, term: TermId) -> usize {
        self.postings.get(&term).map_or(0, |p| p.live as usize)
    }
}

#[derive(Default)]
struct Inner {
    /// Term ids, shared by every user.
    terms: HashMap<Box<[u8]>, TermId>,
    /// By slot; freed slots are reused.
    docs: Vec<Option<Doc>>,
    /// By slot, what scoring reads of each row, packed so that a search's walk over
    /// thousands of postings stays in cache.
    scored: Vec<Scored>,
    free: Vec<u32>,
    slots: BTreeMap<i64, u32>,
    /// By memory id: what a read by id looks up.
    ids: HashMap<Box<str>, u32>,
    /// User ids and their numbers (kept for the index's life, as their shares are).
    users: HashMap<Box<str>, u32>,
    /// By user number.
    shares: Vec<Share>,
}

impl Inner {
    fn term(&mut self, token: &[u8]) -> TermId {
        if let Some(&id) = self.terms.get(token) {
            return id;
        }
        let id = self.terms.len() as TermId;
        self.terms.insert(token.into(), id);
        id
    }

    /// Whether `posting` is of the row in its slot now, not of one removed from it.
    fn current(&self, posting: &Posting) -> bool {
        self.scored[posting.slot as usize].uses == posting.uses
    }

    /// The rows of `share` where `term` occurs.
    fn postings<'a>(&'a self, share: &'a Share, term: TermId) -> impl Iterator<Item = &'a Posting> {
        share
            .postings
            .get(&term)
            .into_iter()
            .flat_map(|p| p.list.iter())
            .filter(|p| self.current(p))
    }

    /// `user`'s rows, when the index has any (or had: a share outlives its rows).
    fn share(&self, user: &str) -> Option<(u32, &Share)> {
        let number = *self.users.get(user)?;
        Some((number, &self.shares[number as usize]))
    }

    fn remove(&mut self, rowid: i64) {
        let Some(slot) = self.slots.remove(&rowid) else {
            return;
        };
        let Some(doc) = self.docs[slot as usize].take() else {
            return;
        };
        self.ids.remove(doc.record.id.as_str());
        let scored = &mut self.scored[slot as usize];
        scored.owner = Scored::HIDDEN;
        scored.uses = scored.uses.wrapping_add(1);
        let share = &mut self.shares[doc.user as usize];
        share.rows -= 1;
        share.tokens -= doc.size() as u64;
        let mut terms: Vec<TermId> = doc.columns.iter().flat_map(|c| c.iter().copied()).collect();
        terms.sort_unstable();
        terms.dedup();
        for term in terms {
            let Some(postings) = share.postings.get_mut(&term) else {
                continue;
            };
            postings.live -= 1;
            if postings.live == 0 {
                share.postings.remove(&term);
            } else if postings.list.len() > 2 * postings.live as usize + 16 {
                let scored = &self.scored;
                postings
                    .list
                    .retain(|p| scored[p.slot as usize].uses == p.uses);
            }
        }
        self.free.push(slot);
    }

    fn insert(&mut self, rowid: i64, row: &Row) {
        self.remove(rowid);
        let users = self.users.len() as u32;
        let user = *self
            .users
            .entry(row.record.user_id.as_str().into())
            .or_insert(users);
        if user as usize == self.shares.len() {
            self.shares.push(Share::default());
        }
        let columns = [0, 1].map(|c| {
            row.columns[c]
                .iter()
                .map(|t| self.term(t))
                .collect::<Box<[TermId]>>()
        });
        let mut counts: Vec<(TermId, [u32; 2])> = Vec::new();
        for (c, column) in columns.iter().enumerate() {
            for &term in column.iter() {
                let mut tf = [0, 0];
                tf[c] = 1;
                counts.push((term, tf));
            }
        }
        counts.sort_unstable_by_key(|(term, _)| *term);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(None);
                self.scored.push(Scored {
                    rowid: 0,
                    size: 0,
                    owner: Scored::HIDDEN,
                    uses: 0,
                });
                (self.docs.len() - 1) as u32
            }
        };
        let mut i = 0;
        while i < counts.len() {
            let term = counts[i].0;
            let mut tf = [0, 0];
            while i < counts.len() && counts[i].0 == term {
                tf[0] += counts[i].1[0];
                tf[1] += counts[i].1[1];
                i += 1;
            }
            let uses = self.scored[slot as usize].uses;
            let postings = self.shares[user as usize].postings.entry(term).or_default();
            postings.list.push(Posting { slot, uses, tf });
            postings.live += 1;
        }
        let share = &mut self.shares[user as usize];
        share.rows += 1;
        share.tokens += row.size() as u64;
        self.scored[slot as usize] = Scored {
            rowid,
            size: row.size() as u32,
            owner: if row.live() { user } else { Scored::HIDDEN },
            ..self.scored[slot as usize]
        };
        self.docs[slot as usize] = Some(Doc {
            record: row.record.clone(),
            user,
            columns,
        });
        self.slots.insert(rowid, slot);
        self.ids.insert(row.record.id.as_str().into(), slot);
    }

    /// About how many bytes of heap the index holds: its vectors and maps at their
    /// capacity, each map entry with hashbrown's control byte, each B-tree entry with
    /// its share of a node (what the benchmark reports).
    fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let terms = self.terms.capacity() * (size_of::<(Box<[u8]>, TermId)>() + 1)
            + self.terms.keys().map(|t| t.len()).sum::<usize>();
        let postings = self.shares.capacity() * size_of::<Share>()
            + self
                .shares
                .iter()
                .map(|share| {
                    share.postings.capacity() * (size_of::<(TermId, Postings)>() + 1)
                        + share
                            .postings
                            .values()
                            .map(|p| p.list.capacity() * size_of::<Posting>())
                            .sum::<usize>()
                })
                .sum::<usize>();
        let docs = self.docs.capacity() * size_of::<Option<Doc>>()
            + self
                .docs
                .iter()
                .flatten()
                .map(|d| d.size() * size_of::<TermId>() + cache::record_bytes(&d.record))
                .sum::<usize>()
            + self.free.capacity() * size_of::<u32>()
            + self.scored.capacity() * size_of::<Scored>();
        // A B-tree node holds up to 11 entries; count each entry at about 1.5 times
        // its size.
        let slots = self.slots.len() * size_of::<(i64, u32)>() * 3 / 2;
        let ids = self.ids.capacity() * (size_of::<(Box<str>, u32)>() + 1)
            + self.ids.keys().map(|id| id.len()).sum::<usize>();
        let users = self.users.capacity() * (size_of::<(Box<str>, u32)>() + 1)
            + self.users.keys().map(|u| u.len()).sum::<usize>();
        terms + postings + docs + slots + ids + users
    }

    fn doc(&self, slot: u32) -> &Doc {
        self.docs[slot as usize]
            .as_ref()
            .expect("a posting names a live slot")
    }
}

pub struct TextIndex {
    state: RwLock<Option<Inner>>,
    tokenizer: Mutex<Tokenizer>,
    /// Rowids of `memories` the writer changed since the index last caught up.
    changed: Arc<Mutex<Vec<i64>>>,
    /// The writer's connection (its handle's address): the one a search may find in a
    /// write transaction.
    writer: AtomicUsize,
    /// PostgreSQL: the oldest transaction that was running when the index last looked
    /// at the table (`sync.rs`); `None` until it is built. Held while it looks, so that
    /// two threads catching up apply their rows in order.
    follow: Mutex<Option<i64>>,
    /// PostgreSQL: the looks at the log begun and ended, for callers to share one.
    looks: Looks,
}

/// Numbers of the index's looks at the change log (`sync.rs`): how many have begun,
/// and the last that ended (each is numbered as it begins, under `follow`).
#[derive(Default)]
struct Looks {
    begun: std::sync::atomic::AtomicU64,
    ended: std::sync::atomic::AtomicU64,
}

impl TextIndex {
    /// About how many bytes of memory the index takes (0 before it is built).
    pub fn heap_bytes(&self) -> usize {
        self.read().as_ref().map_or(0, Inner::heap_bytes)
    }

    pub fn new() -> Result<TextIndex, IndexError> {
        Ok(TextIndex {
            state: RwLock::new(None),
            tokenizer: Mutex::new(Tokenizer::new()?),
            changed: Arc::default(),
            writer: AtomicUsize::new(0),
            follow: Mutex::new(None),
            looks: Looks::default(),
        })
    }

    fn tokenizer(&self) -> MutexGuard<'_, Tokenizer> {
        // A tokenizer keeps no state between calls that a panic could tear.
        self.tokenizer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn follow(&self) -> MutexGuard<'_, Option<i64>> {
        // A panic while catching up leaves the mark where it was: the rows after it
        // are read again.
        self.follow.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changed(&self) -> MutexGuard<'_, Vec<i64>> {
        self.changed.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<Inner>> {
        // The index is changed whole row by row under the write lock; a panic there
        // (a bug) could leave a row half-applied, which the next change of it mends.
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Option<Inner>> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

fn index_error(e: TokenizerError) -> StoreError {
    StoreError::Index(IndexError::Tokenizer(e))
}

fn tokens(tokenizer: &mut Tokenizer, text: Option<&str>) -> Result<Vec<Box<[u8]>>, StoreError> {
    let mut out = Vec::new();
    if let Some(text) = text {
        tokenizer
            .tokens(text, false, &mut |t| out.push(t.into()))
            .map_err(index_error)?;
    }
    Ok(out)
}

mod cache;
mod rank;
mod sync;

pub use sync::CHANGES_FLOOR;

#[cfg(test)]
mod read_your_writes;
#[cfg(test)]
mod tests;

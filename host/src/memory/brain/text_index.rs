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
//! (the daemon builds it as it starts, `Brain::warm`). (It replaced the FTS5 table
//! `memories_fts`, which schema version 3 drops.)

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rusqlite::{Connection, OptionalExtension};
use rustc_hash::FxHashMap;

use super::bm25;
use super::error::{IndexError, StoreError};
use super::row::{COLUMNS, record_from_row};
use super::tokenizer::{Tokenizer, TokenizerError};
use crate::memory::record::MemoryRecord;

/// Weights of the two columns, summary and detail, as search passed them to bm25().
const WEIGHTS: [f64; 2] = [1.0, 0.5];

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
                .map(|d| d.size() * size_of::<TermId>() + record_bytes(&d.record))
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

/// A query word as FTS5 reads it: a phrase of the word's tokens.
struct Phrase {
    tokens: Vec<Box<[u8]>>,
    /// The tokens' ids, when every one of them is in the index.
    ids: Option<Vec<TermId>>,
}

/// Where a phrase occurs: rows of the index, or rows re-read for a transaction.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum At {
    Slot(u32),
    Pending(usize),
}

/// What a search ranks beyond the index: rows changed in the open transaction.
struct Overlay {
    rowids: HashSet<i64>,
    rows: Vec<(i64, Row)>,
}

pub struct TextIndex {
    state: RwLock<Option<Inner>>,
    tokenizer: Mutex<Tokenizer>,
    /// Rowids of `memories` the writer changed since the index last caught up.
    changed: Arc<Mutex<Vec<i64>>>,
    /// The writer's connection (its handle's address): the one a search may find in a
    /// write transaction.
    writer: AtomicUsize,
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
    pub fn new() -> Result<TextIndex, IndexError> {
        Ok(TextIndex {
            state: RwLock::new(None),
            tokenizer: Mutex::new(Tokenizer::new()?),
            changed: Arc::default(),
            writer: AtomicUsize::new(0),
        })
    }

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
        let mut stmt = conn.prepare(&format!("SELECT {COLUMNS}, rowid FROM memories"))?;
        let rowid_at = COLUMNS.split(',').count();
        let mut rows = stmt.query([])?;
        let mut tokenizer = self.tokenizer();
        while let Some(r) = rows.next()? {
            let row = Row::new(&mut tokenizer, record_from_row(r)?)?;
            inner.insert(r.get(rowid_at)?, &row);
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

    /// `user`'s memory `id` as last committed, superseded and dismissed ones included;
    /// `None` when there is no such memory of `user` (or the index is not built).
    pub fn get(&self, user: &str, id: &str) -> Option<MemoryRecord> {
        let state = self.read();
        let inner = state.as_ref()?;
        let doc = inner.doc(*inner.ids.get(id)?);
        (doc.record.user_id == user).then(|| MemoryRecord::clone(&doc.record))
    }

    /// About how many bytes of memory the index takes (0 before it is built).
    pub fn heap_bytes(&self) -> usize {
        self.read().as_ref().map_or(0, Inner::heap_bytes)
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
    /// committed; `conn` matters only when it is the writer's inside a transaction, whose
    /// own changes are then read from it.
    pub fn search(
        &self,
        conn: &Connection,
        user: &str,
        query: &TextQuery,
        limit: usize,
    ) -> Result<Vec<TextMatch>, StoreError> {
        // SAFETY: only the handle's address is read, to tell the writer's connection
        // (which may be inside a transaction of its own) from a reader's.
        let in_writer = self.writer.load(Ordering::SeqCst) == unsafe { conn.handle() } as usize;
        if in_writer && !self.is_built() {
            self.build(conn)?;
        }
        let overlay = if in_writer && !conn.is_autocommit() {
            let mut rowids: Vec<i64> = self.changed().clone();
            rowids.sort_unstable();
            rowids.dedup();
            // Only the user's rows count (other users' changes only leave their
            // indexed versions out, which this search never reads).
            let mut rows = Vec::new();
            for &rowid in &rowids {
                if let Some(row) = self.read_row(conn, rowid)?
                    && row.record.user_id == user
                {
                    rows.push((rowid, row));
                }
            }
            Overlay {
                rowids: rowids.into_iter().collect(),
                rows,
            }
        } else {
            Overlay::none()
        };
        let phrases = self.phrases(query)?;
        let state = self.read();
        let Some(inner) = state.as_ref() else {
            return Err(StoreError::Invalid {
                field: "search",
                reason: "the search index is not built".into(),
            });
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

    fn phrases(&self, query: &TextQuery) -> Result<Vec<Phrase>, StoreError> {
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

    fn read_row(&self, conn: &Connection, rowid: i64) -> Result<Option<Row>, StoreError> {
        let mut stmt =
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM memories WHERE rowid = ?1"))?;
        let Some(record) = stmt.query_row([rowid], record_from_row).optional()? else {
            return Ok(None);
        };
        Ok(Some(Row::new(&mut self.tokenizer(), record)?))
    }

    fn tokenizer(&self) -> MutexGuard<'_, Tokenizer> {
        // A tokenizer keeps no state between calls that a panic could tear.
        self.tokenizer.lock().unwrap_or_else(|p| p.into_inner())
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

impl Overlay {
    fn none() -> Overlay {
        Overlay {
            rowids: HashSet::new(),
            rows: Vec::new(),
        }
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

/// About the heap a record holds: the struct and its strings.
fn record_bytes(record: &MemoryRecord) -> usize {
    std::mem::size_of::<MemoryRecord>()
        + record.id.capacity()
        + record.user_id.capacity()
        + record.summary.capacity()
        + record.detail.as_ref().map_or(0, String::capacity)
        + record.superseded_by.as_ref().map_or(0, String::capacity)
        + record
            .source_conversation
            .as_ref()
            .map_or(0, String::capacity)
        + record
            .source_turns
            .iter()
            .map(|t| std::mem::size_of::<String>() + t.capacity())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use engram_strategies::model::MemoryType;
    use rusqlite::params;

    use super::*;
    use crate::memory::brain::test_rng::Rng;
    use crate::memory::brain::{MemoryEdit, NewMemory};

    /// Words with shared stems, diacritics, digits, and words that FTS5 reads as a
    /// phrase of several tokens (a visarga splits `sun\u{903}set`).
    const WORDS: &[&str] = &[
        "tea",
        "teas",
        "green",
        "garden",
        "gardening",
        "sister",
        "anna",
        "hiking",
        "hike",
        "running",
        "runs",
        "run",
        "café",
        "cafe",
        "naïve",
        "42",
        "weekend",
        "sushi",
        "ramen",
        "नमस्ते",
        "book",
        "booked",
        "lisbon",
        "flight",
        "the",
        "and",
        "likes",
        "dog",
        "sun\u{903}set",
        "sun",
        "set",
    ];
    const USERS: &[&str] = &["default", "u2", "u3"];

    /// `1..=most` words of [`WORDS`], at random.
    fn words(rng: &mut Rng, most: usize) -> String {
        let n = 1 + rng.below(most);
        (0..n)
            .map(|_| WORDS[rng.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn memory(summary: String, detail: Option<String>) -> NewMemory {
        NewMemory {
            detail,
            ..NewMemory::new(MemoryType::Preference, summary)
        }
    }

    /// The FTS5 table search used to rank with (`memories_fts` until schema version
    /// 3), as a temporary table of `conn` holding what `conn` sees of `user`'s memories
    /// alone, live or not: what the user's ranking must equal, whoever else shares the
    /// store.
    fn fts5_reference(conn: &Connection, user: &str) {
        conn.execute_batch(
            "DROP TABLE IF EXISTS temp.memories_fts;
             CREATE VIRTUAL TABLE temp.memories_fts USING fts5(
                 summary, detail, tokenize = 'porter unicode61 remove_diacritics 2'
             );",
        )
        .expect("the FTS5 reference");
        conn.execute(
            "INSERT INTO temp.memories_fts (rowid, summary, detail)
                 SELECT rowid, summary, detail FROM main.memories WHERE user_id = ?1",
            [user],
        )
        .expect("the FTS5 reference's rows");
    }

    /// What `bm25(memories_fts, 1.0, 0.5)` ranks over a table of `user`'s memories
    /// alone: every live match, best first, ties in rowid order.
    fn fts5_ranking(conn: &Connection, user: &str, query: &TextQuery) -> Vec<(String, f64)> {
        fts5_reference(conn, user);
        let mut stmt = conn
            .prepare(
                "SELECT m.id, bm25(memories_fts, 1.0, 0.5) AS score
                 FROM temp.memories_fts JOIN main.memories m ON m.rowid = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND m.user_id = ?2 AND m.superseded_by IS NULL AND m.dismissed_at IS NULL
                 ORDER BY score LIMIT 500",
            )
            .expect("reference");
        stmt.query_map(params![query.fts5(), user], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    /// How many of `user`'s memories, live or not, match `query`.
    fn fts5_count(conn: &Connection, user: &str, query: &TextQuery) -> usize {
        fts5_reference(conn, user);
        conn.query_row(
            "SELECT count(*) FROM temp.memories_fts WHERE memories_fts MATCH ?1",
            [query.fts5()],
            |r| r.get::<_, i64>(0),
        )
        .expect("count") as usize
    }

    fn assert_same(
        conn: &Connection,
        text: &TextIndex,
        user: &str,
        query: &TextQuery,
        case: &str,
    ) -> usize {
        let expected = fts5_ranking(conn, user, query);
        let found = text.search(conn, user, query, 500).expect("search");
        // The records returned are the rows as `conn` reads them, not older copies.
        let mut table = conn
            .prepare(&format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"))
            .expect("prepare");
        for m in &found {
            let row = table
                .query_row([&m.record.id], record_from_row)
                .expect("the row");
            assert_eq!(m.record, row, "{case}: {query:?}: a record unlike its row");
        }
        let got: Vec<(String, f64)> = found.into_iter().map(|m| (m.record.id, m.bm25)).collect();
        let ids = |v: &[(String, f64)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&expected), "{case}: {query:?} for {user}");
        // The best few alone are the same as the head of the whole ranking.
        let few: Vec<String> = text
            .search(conn, user, query, 3)
            .expect("search")
            .into_iter()
            .map(|m| m.record.id)
            .collect();
        assert_eq!(
            few,
            ids(&expected)[..expected.len().min(3)],
            "{case}: {query:?}, best 3"
        );
        for ((_, a), (_, b)) in got.iter().zip(&expected) {
            assert!(
                (a - b).abs() <= 1e-9 * b.abs(),
                "{case}: {query:?}: {a} against FTS5's {b}"
            );
        }
        expected.len()
    }

    fn random_query(rng: &mut Rng) -> TextQuery {
        let text = words(rng, 4);
        if rng.below(4) == 0 {
            TextQuery::all(&text)
        } else {
            TextQuery::any(&text)
        }
        .expect("words")
    }

    /// Edits leave stale postings behind (a removal only counts them out); they never
    /// count, and a term's list is compacted before they outnumber the live ones.
    #[test]
    fn stale_postings_never_count_and_lists_stay_compact() {
        let fixture = crate::memory::brain::tests::fixture();
        let brain = &fixture.brain;
        // Built first, so that the edits below go through it.
        brain.warm().expect("index");
        for i in 0..20 {
            let summary = format!("tea garden kept {}", WORDS[i % WORDS.len()]);
            brain.add("default", memory(summary, None)).expect("add");
        }
        let edited = brain
            .add("default", memory("tea garden".into(), None))
            .expect("add")
            .record
            .id;
        for round in 0..300 {
            let summary = if round % 2 == 0 {
                "tea sushi"
            } else {
                "tea garden ramen"
            };
            let edit = MemoryEdit {
                summary: Some(summary.into()),
                ..Default::default()
            };
            brain.edit("default", &edited, edit).expect("edit");
        }
        let gone = brain
            .add("default", memory("tea".into(), None))
            .expect("add")
            .record
            .id;
        brain.delete("default", &gone).expect("delete");
        let store = brain.store();
        let text = store.text_built().expect("index");
        {
            let state = text.read();
            let inner = state.as_ref().expect("built");
            let (_, share) = inner.share("default").expect("the user's rows");
            for word in ["tea", "garden"] {
                let term = inner.terms[word.as_bytes()];
                let postings = &share.postings[&term];
                assert_eq!(
                    postings.live as usize,
                    inner.postings(share, term).count(),
                    "{word}: live count"
                );
                assert!(
                    postings.list.len() <= 2 * postings.live as usize + 16,
                    "{word}: {} postings for {} live rows",
                    postings.list.len(),
                    postings.live
                );
            }
        }
        let c = &Connection::open(store.path()).expect("a connection of the test's");
        for words in ["tea", "garden", "sushi", "tea garden", "ramen kept"] {
            let query = TextQuery::any(words).expect("words");
            let compared = assert_same(c, text, "default", &query, "after 300 edits");
            assert!(compared > 0, "{words} matches something");
            assert_eq!(
                text.more_than("default", &query, 21).expect("count"),
                fts5_count(c, "default", &query) > 21
            );
        }
    }

    /// On generated memories of several users sharing one vocabulary, edited,
    /// superseded, dismissed and deleted through every write path, the index ranks
    /// each user's memories exactly as FTS5's bm25 does over a table of that user's
    /// memories alone: the same ids in the same order with the same scores, the same
    /// match counts and row counts; and a search inside a write transaction sees that
    /// transaction's changes.
    #[test]
    fn ranks_as_fts5_bm25_through_every_kind_of_change() {
        let index = TextIndex::new().expect("index");
        let phrases = index
            .phrases(&TextQuery::word("sun\u{903}set"))
            .expect("phrases");
        assert_eq!(phrases[0].tokens.len(), 2, "a phrase is exercised");
        for seed in [1_u64, 7, 2024] {
            let fixture = crate::memory::brain::tests::fixture();
            let brain = &fixture.brain;
            let store = brain.store();
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut ids: Vec<(String, String)> = Vec::new();
            let mut deleted: Vec<(String, String)> = Vec::new();
            let mut compared = 0;
            for step in 0..300 {
                let roll = rng.below(10);
                if roll < 5 || ids.len() < 5 {
                    let user = USERS[rng.below(USERS.len())];
                    let detail = (rng.below(2) == 0).then(|| words(&mut rng, 12));
                    let added = brain
                        .add(user, memory(words(&mut rng, 8), detail))
                        .expect("add")
                        .record;
                    ids.push((user.to_string(), added.id));
                } else {
                    let (user, id) = ids[rng.below(ids.len())].clone();
                    match roll {
                        5 => {
                            let edit = MemoryEdit {
                                summary: Some(words(&mut rng, 8)),
                                ..Default::default()
                            };
                            brain.edit(&user, &id, edit).expect("edit");
                        }
                        6 => {
                            brain.delete(&user, &id).expect("delete");
                            ids.retain(|(_, other)| *other != id);
                            deleted.push((user.clone(), id.clone()));
                        }
                        7 => {
                            // Dismissed, or back: written in SQL, as no API does it.
                            store
                                .write(|tx| {
                                    tx.execute(
                                        "UPDATE memories SET dismissed_at = CASE WHEN dismissed_at IS NULL THEN 5 END WHERE id = ?1",
                                        [&id],
                                    )?;
                                    Ok(())
                                })
                                .expect("dismiss");
                        }
                        8 => {
                            let (_, winner) = ids[rng.below(ids.len())].clone();
                            store
                                .write(|tx| {
                                    tx.execute(
                                        "UPDATE memories SET superseded_by = ?2 WHERE id = ?1 AND id != ?2",
                                        [&id, &winner],
                                    )?;
                                    Ok(())
                                })
                                .expect("supersede");
                        }
                        _ => {
                            // A transaction that changes rows and is rolled back.
                            let failed: Result<(), StoreError> = store.write(|tx| {
                                tx.execute(
                                    "UPDATE memories SET detail = 'tea tea tea garden' WHERE id = ?1",
                                    [&id],
                                )?;
                                Err(StoreError::Invalid {
                                    field: "test",
                                    reason: "rolled back".into(),
                                })
                            });
                            assert!(failed.is_err());
                        }
                    }
                }
                if step % 10 == 9 {
                    let text = store.text_built().expect("index");
                    let c = &Connection::open(store.path()).expect("a connection of the test's");
                    (|| -> Result<(), StoreError> {
                        for _ in 0..20 {
                            let query = random_query(&mut rng);
                            let user = USERS[rng.below(USERS.len())];
                            let case = format!("seed {seed}, step {step}");
                            compared += assert_same(c, text, user, &query, &case);
                            let cap = rng.below(40);
                            assert_eq!(
                                text.more_than(user, &query, cap)?,
                                fts5_count(c, user, &query) > cap,
                                "{case}: more than {cap} of {query:?} for {user}"
                            );
                        }
                        for user in USERS.iter().chain(&["nobody"]) {
                            let size: i64 = c.query_row(
                                "SELECT count(*) FROM memories WHERE user_id = ?1",
                                [user],
                                |r| r.get(0),
                            )?;
                            assert_eq!(text.size(user), size, "{user}'s rows");
                        }
                        // A read by id gives every row as the table holds it, to its
                        // own user only.
                        let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM memories"))?;
                        for row in stmt.query_map([], record_from_row)? {
                            let row = row?;
                            assert_eq!(text.get(&row.user_id, &row.id).as_ref(), Some(&row));
                            assert_eq!(text.get("nobody", &row.id), None);
                        }
                        for (user, id) in &deleted {
                            assert_eq!(text.get(user, id), None, "seed {seed}: deleted {id}");
                        }
                        Ok(())
                    })()
                    .expect("compare");
                }
                if step % 50 == 49 {
                    // Inside a write transaction: its own changes count.
                    let (_, id) = ids[rng.below(ids.len())].clone();
                    let summary = words(&mut rng, 8);
                    store
                        .write(|tx| {
                            tx.execute(
                                "UPDATE memories SET summary = ?2 WHERE id = ?1",
                                [&id, &summary],
                            )?;
                            tx.execute(
                                "DELETE FROM memories WHERE id = (SELECT id FROM memories WHERE id != ?1 LIMIT 1)",
                                [&id],
                            )?;
                            for _ in 0..10 {
                                let query = random_query(&mut rng);
                                let user = USERS[rng.below(USERS.len())];
                                assert_same(tx, store.text(), user, &query, "in a transaction");
                            }
                            Err::<(), _>(StoreError::Invalid {
                                field: "test",
                                reason: "rolled back".into(),
                            })
                        })
                        .expect_err("rolled back");
                }
            }
            assert!(
                compared > 1_000,
                "seed {seed}: only {compared} matches compared"
            );
        }
    }
}

#[cfg(test)]
mod read_your_writes {
    use engram_strategies::model::MemoryType;

    use crate::memory::brain::{Brain, MemoryEdit, NewMemory};

    fn found(brain: &Brain, word: &str) -> Vec<String> {
        brain
            .search("default", word, 10)
            .expect("search")
            .into_iter()
            .map(|hit| hit.record.id)
            .collect()
    }

    /// Writers in several threads add, edit and delete through group commit; each
    /// searches right after its write is acknowledged and must see it, whichever
    /// commit carried it.
    #[test]
    fn a_search_after_an_acknowledged_write_sees_it() {
        let fixture = crate::memory::brain::tests::fixture();
        let brain = &fixture.brain;
        // Built before the writes, so that every change reaches it by the writer.
        assert!(found(brain, "nothing").is_empty());
        std::thread::scope(|s| {
            for t in 0..4 {
                let brain = &brain;
                s.spawn(move || {
                    for i in 0..25 {
                        let word = format!("zq{t}x{i}");
                        let added = brain
                            .add(
                                "default",
                                NewMemory {
                                    memory_type: MemoryType::Preference,
                                    summary: format!("likes {word}"),
                                    detail: None,
                                    evidence: None,
                                    scope: None,
                                    confidence: None,
                                    importance: None,
                                    holder: None,
                                    attribute: None,
                                },
                            )
                            .expect("add")
                            .record;
                        assert_eq!(found(brain, &word), [added.id.as_str()], "after the add");
                        let edited = format!("{word}edited");
                        brain
                            .edit(
                                "default",
                                &added.id,
                                MemoryEdit {
                                    summary: Some(format!("likes {edited}")),
                                    ..Default::default()
                                },
                            )
                            .expect("edit");
                        assert_eq!(found(brain, &edited), [added.id.as_str()], "after the edit");
                        assert!(found(brain, &word).is_empty(), "the old text is gone");
                        brain.delete("default", &added.id).expect("delete");
                        assert!(found(brain, &edited).is_empty(), "after the delete");
                    }
                });
            }
        });
    }
}

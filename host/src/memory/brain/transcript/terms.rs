//! The transcript's full-text index on PostgreSQL (issue 32), which has no FTS5: the
//! same search as `transcript.rs` runs through FTS5 on SQLite, with the same answers.
//!
//! - Postings (`schema_pg.rs`, version 10): per message, one row per distinct term
//!   with its instances in the text and the speaker's name, and the message's size.
//!   Terms and sizes are FTS5's own (`tokenizer.rs`, `porter unicode61
//!   remove_diacritics 2`), so a message holds the terms and the size FTS5 gives it.
//!   [`index`] writes them, and counts the message into its user's N and tokens
//!   (`transcript_users`), in the transaction that writes the message: the caller
//!   calls it after every `INSERT INTO messages`, and after every `UPDATE` of a
//!   message's text, name or user (a trigger took the message out of the index). A
//!   deleted message leaves the index and its counters by the schema alone, whatever
//!   statement deleted it (a cascade from `conversations` too).
//! - Queries ([`TextQuery`]): each word is a phrase of the tokens FTS5 reads in it
//!   (usually one; none for a word FTS5 reads as no token, which matches nothing and
//!   makes an AND match nothing, as in FTS5), any of them or all of them; no prefixes,
//!   no NEAR. A one-token phrase's rows are its postings; a longer phrase's rows are
//!   found from its first token's postings and confirmed by tokenizing the text, as
//!   FTS5 counts a phrase's instances (consecutive tokens in one column).
//! - Scores: `bm25.rs` over the user's messages alone, as `transcript::search` does
//!   from FTS5's hits: the same N, average size, each phrase's n (the user's messages
//!   holding it) and frequency (its instances, both columns weighing 1.0), summed in
//!   the query's order, ties in the order the messages were recorded: the same
//!   numbers.
//!
//! Terms are bytes (a token cut at FTS5's 32 KiB limit may end inside a character);
//! one longer than [`LONGEST_KEY`] is kept as its digest, as B-tree keys are bounded.
//! Lists go to the server as one text each (hex terms, decimal numbers, joined by
//! commas; the seam binds no arrays), so a message is indexed, and a search reads its
//! postings, in a round trip each.

use std::borrow::Cow;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::{MESSAGE_COLUMNS, MessageMatch, message_from_row_at};
use crate::memory::brain::bm25;
use crate::memory::brain::error::{IndexError, StoreError};
use crate::memory::brain::text_index::TextQuery;
use crate::memory::brain::tokenizer::{Tokenizer, TokenizerError};
use crate::memory::record::MessageRecord;
use crate::sql::{Actor, Tx};

/// Terms longer than this many bytes are keyed by their digest: a B-tree key holds at
/// most about 2.7 KB on PostgreSQL, and a message's text may hold a longer token.
const LONGEST_KEY: usize = 512;
/// What starts a digest key: no UTF-8 text, so no token, starts with this byte.
const DIGEST_MARK: u8 = 0xff;

/// A message as the index reads it.
#[derive(Debug, Clone, Copy)]
pub struct Indexed<'a> {
    /// The message's row (`messages.n`).
    pub n: i64,
    pub user: &'a str,
    pub content: &'a str,
    pub name: Option<&'a str>,
}

/// A message's postings: each distinct term's key and instances, and its size.
struct Postings {
    terms: FxHashMap<Vec<u8>, u32>,
    size: usize,
}

impl Postings {
    fn of(tokenizer: &mut Tokenizer, message: &Indexed<'_>) -> Result<Postings, StoreError> {
        let mut postings = Postings {
            terms: FxHashMap::default(),
            size: 0,
        };
        for column in [Some(message.content), message.name].into_iter().flatten() {
            tokenizer
                .tokens(column, false, &mut |token| {
                    *postings.terms.entry(key(token).into_owned()).or_default() += 1;
                    postings.size += 1;
                })
                .map_err(tokenizer_error)?;
        }
        Ok(postings)
    }
}

/// A term's key in `message_terms`.
fn key(token: &[u8]) -> Cow<'_, [u8]> {
    if token.len() <= LONGEST_KEY {
        return Cow::Borrowed(token);
    }
    let mut key = vec![DIGEST_MARK];
    key.extend_from_slice(&Sha256::digest(token));
    Cow::Owned(key)
}

/// `items` as one comma-separated text.
fn joined<T>(items: impl IntoIterator<Item = T>, mut write: impl FnMut(&mut String, T)) -> String {
    let mut out = String::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(&mut out, item);
    }
    out
}

fn hex_into(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
}

fn tokenizer_error(error: TokenizerError) -> StoreError {
    StoreError::Index(IndexError::Tokenizer(error))
}

/// A message's size and postings, its user's counters left as they are.
const WRITE_POSTINGS: &str = "WITH size AS (
        INSERT INTO message_sizes (n, user_id, tokens) VALUES (?1, ?2, ?3) RETURNING n
    )
    INSERT INTO message_terms (user_id, term, n, hits, size)
    SELECT ?2, decode(t.term, 'hex'), (SELECT n FROM size), t.hits::bigint, ?3
    FROM unnest(string_to_array(?4, ','), string_to_array(?5, ',')) AS t(term, hits)";

fn write(tx: &Tx<'_>, message: &Indexed<'_>, postings: &Postings) -> Result<(), StoreError> {
    let terms = joined(&postings.terms, |out, (term, _)| hex_into(out, term));
    let hits = joined(&postings.terms, |out, (_, hits)| {
        let _ = write!(out, "{hits}");
    });
    tx.execute(
        WRITE_POSTINGS,
        &[
            message.n.into(),
            message.user.into(),
            (postings.size as i64).into(),
            terms.as_str().into(),
            hits.as_str().into(),
        ],
    )?;
    Ok(())
}

thread_local! {
    /// FTS5's tokenizer, for the Second Brain's transcript calls on this thread. One
    /// per thread: it is an in-memory SQLite connection, opened once.
    static TOKENIZER: std::cell::RefCell<Option<Tokenizer>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's tokenizer, opened at the first call.
pub fn with_tokenizer<R>(
    f: impl FnOnce(&mut Tokenizer) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    TOKENIZER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let tokenizer = match &mut *slot {
            Some(tokenizer) => tokenizer,
            empty => empty.insert(Tokenizer::new().map_err(tokenizer_error)?),
        };
        f(tokenizer)
    })
}

/// Indexes a message just written (or rewritten) in this transaction: its postings,
/// and its user's N and tokens.
pub fn index(
    tx: &Tx<'_>,
    tokenizer: &mut Tokenizer,
    message: &Indexed<'_>,
) -> Result<(), StoreError> {
    let postings = Postings::of(tokenizer, message)?;
    tx.execute(
        "INSERT INTO transcript_users (user_id, messages, tokens) VALUES (?1, 1, ?2)
         ON CONFLICT (user_id) DO UPDATE SET messages = transcript_users.messages + 1,
             tokens = transcript_users.tokens + excluded.tokens",
        &[message.user.into(), (postings.size as i64).into()],
    )?;
    write(tx, message, &postings)
}

/// A message without postings, as read to index it.
struct Unindexed {
    n: i64,
    user: String,
    content: String,
    name: Option<String>,
}

impl Unindexed {
    fn indexed(&self) -> Indexed<'_> {
        Indexed {
            n: self.n,
            user: &self.user,
            content: &self.content,
            name: self.name.as_deref(),
        }
    }
}

/// Messages without postings; `which` narrows them, with `arg` as `?1` (`AND m.id =
/// ?1`, or `ORDER BY n LIMIT ?1`).
fn unindexed(
    tx: &Tx<'_>,
    which: &str,
    arg: crate::sql::Value<'_>,
) -> Result<Vec<Unindexed>, StoreError> {
    Ok(tx.query(
        &format!(
            "SELECT n, user_id, content, name FROM messages m
             WHERE NOT EXISTS (SELECT 1 FROM message_sizes s WHERE s.n = m.n) {which}"
        ),
        &[arg],
        |r| {
            Ok(Unindexed {
                n: r.get(0)?,
                user: r.get(1)?,
                content: r.get(2)?,
                name: r.get(3)?,
            })
        },
    )?)
}

/// Indexes message `id` ([`index`]) if it has no postings: just written, or
/// rewritten (its text redacted: a trigger took it out of the index).
pub fn index_message(tx: &Tx<'_>, tokenizer: &mut Tokenizer, id: &str) -> Result<(), StoreError> {
    for message in unindexed(tx, "AND m.id = ?1", id.into())? {
        index(tx, tokenizer, &message.indexed())?;
    }
    Ok(())
}

/// Writes the postings of up to `batch` messages that have none, oldest first, and
/// says how many it wrote. Their users' counters are left as they are: messages
/// without postings came with them, from `engram db copy` (which copies the SQLite
/// file's counters and not its index) or from a store of version 9.
pub fn index_unindexed(
    tx: &Tx<'_>,
    tokenizer: &mut Tokenizer,
    batch: usize,
) -> Result<usize, StoreError> {
    let unindexed = unindexed(tx, "ORDER BY n LIMIT ?1", (batch as i64).into())?;
    for message in &unindexed {
        let message = message.indexed();
        let postings = Postings::of(tokenizer, &message)?;
        write(tx, &message, &postings)?;
    }
    Ok(unindexed.len())
}

/// Writes the postings of every message on the PostgreSQL store at `url` that has
/// none ([`index_unindexed`], a batch per transaction, as the host itself): after
/// `engram db copy`, which copies messages but not SQLite's index. How many it wrote.
pub fn index_copied(url: &str) -> Result<usize, StoreError> {
    const BATCH: usize = 500;
    let store = crate::sql::PgStore::open(url, &crate::memory::brain::PG_SCHEMA)?;
    let db = crate::sql::Database::postgres(store, 1)?;
    let mut tokenizer = Tokenizer::new().map_err(tokenizer_error)?;
    let mut written = 0;
    loop {
        let batch = db.write(Actor::System, |tx| {
            index_unindexed(tx, &mut tokenizer, BATCH)
        })?;
        written += batch;
        if batch < BATCH {
            return Ok(written);
        }
    }
}

/// What bm25 counts over a user's messages: N and their tokens.
struct Share {
    messages: u64,
    tokens: u64,
}

/// `user`'s counters; `None` when they have no message.
fn share(tx: &Tx<'_>, user: &str) -> Result<Option<Share>, StoreError> {
    let share = tx.query_opt(
        "SELECT messages, tokens FROM transcript_users WHERE user_id = ?1",
        &[user.into()],
        |r| {
            Ok(Share {
                messages: r.get::<i64>(0)?.max(0) as u64,
                tokens: r.get::<i64>(1)?.max(0) as u64,
            })
        },
    )?;
    Ok(share.filter(|s| s.messages > 0))
}

/// Every message of a user holding any phrase of a query.
struct Found {
    /// Each message's row and size.
    messages: Vec<(i64, usize)>,
    /// Its instances of each phrase: one per phrase, in order, message after message.
    instances: Vec<u32>,
    phrases: usize,
}

impl Found {
    /// The instances of message `n` (of size `size`), made room for at its first sight.
    fn at(&mut self, seen: &mut FxHashMap<i64, usize>, n: i64, size: usize) -> &mut [u32] {
        let next = self.messages.len();
        let i = *seen.entry(n).or_insert(next);
        if i == next {
            self.messages.push((n, size));
            self.instances.extend(std::iter::repeat_n(0, self.phrases));
        }
        &mut self.instances[i * self.phrases..(i + 1) * self.phrases]
    }

    /// Each found message with its instances.
    fn each(&self) -> impl Iterator<Item = (&(i64, usize), &[u32])> {
        self.messages
            .iter()
            .zip(self.instances.chunks_exact(self.phrases.max(1)))
    }

    /// Whether a message with these instances matches the query.
    fn matches(instances: &[u32], all: bool) -> bool {
        if all {
            instances.iter().all(|&i| i > 0)
        } else {
            instances.iter().any(|&i| i > 0)
        }
    }
}

/// The tokens FTS5 reads in each word of a query: each word's phrase.
fn phrases(tokenizer: &mut Tokenizer, query: &TextQuery) -> Result<Vec<Vec<Vec<u8>>>, StoreError> {
    query
        .words
        .iter()
        .map(|word| {
            let mut tokens = Vec::new();
            tokenizer
                .tokens(word, true, &mut |t| tokens.push(t.to_vec()))
                .map_err(tokenizer_error)?;
            Ok(tokens)
        })
        .collect()
}

/// Start positions in `column` where `phrase` occurs, as FTS5 counts instances.
fn occurrences(column: &[Vec<u8>], phrase: &[Vec<u8>]) -> u32 {
    if column.len() < phrase.len() {
        return 0;
    }
    column
        .windows(phrase.len())
        .filter(|w| *w == phrase)
        .count() as u32
}

/// Every message of `user` holding a phrase of `query`, with its instances of each.
fn find(
    tx: &Tx<'_>,
    tokenizer: &mut Tokenizer,
    user: &str,
    query: &TextQuery,
) -> Result<Found, StoreError> {
    let phrases = phrases(tokenizer, query)?;
    let mut found = Found {
        messages: Vec::new(),
        instances: Vec::new(),
        phrases: phrases.len(),
    };
    let mut seen = FxHashMap::default();
    // One-token phrases, all in one read: each phrase by its term's key.
    let mut single: FxHashMap<Vec<u8>, Vec<usize>> = FxHashMap::default();
    for (i, phrase) in phrases.iter().enumerate() {
        if let [token] = phrase.as_slice() {
            single.entry(key(token).into_owned()).or_default().push(i);
        }
    }
    if !single.is_empty() {
        let keys = joined(single.keys(), |out, term| hex_into(out, term));
        let postings = tx.query(
            "SELECT term, n, hits, size FROM message_terms
             WHERE user_id = ?1
               AND term = ANY(ARRAY(SELECT decode(t, 'hex') FROM unnest(string_to_array(?2, ',')) AS t))",
            &[user.into(), keys.as_str().into()],
            |r| {
                Ok((
                    r.get::<Vec<u8>>(0)?,
                    r.get::<i64>(1)?,
                    r.get::<i64>(2)?,
                    r.get::<i64>(3)?,
                ))
            },
        )?;
        for (term, n, hits, size) in postings {
            let Some(those) = single.get(&term) else {
                continue;
            };
            let instances = found.at(&mut seen, n, size.max(0) as usize);
            for &i in those {
                instances[i] = u32::try_from(hits).unwrap_or(u32::MAX);
            }
        }
    }
    // Longer phrases: the messages holding the first token, their text read again.
    for (i, phrase) in phrases.iter().enumerate() {
        if phrase.len() < 2 {
            continue;
        }
        let candidates = tx.query(
            "SELECT t.n, t.size, m.content, m.name FROM message_terms t
             JOIN messages m ON m.n = t.n
             WHERE t.user_id = ?1 AND t.term = ?2",
            &[user.into(), key(&phrase[0]).as_ref().into()],
            |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<i64>(1)?,
                    r.get::<String>(2)?,
                    r.get::<Option<String>>(3)?,
                ))
            },
        )?;
        for (n, size, content, name) in candidates {
            let mut count = 0;
            for column in [Some(content.as_str()), name.as_deref()]
                .into_iter()
                .flatten()
            {
                let mut tokens = Vec::new();
                tokenizer
                    .tokens(column, false, &mut |t| tokens.push(t.to_vec()))
                    .map_err(tokenizer_error)?;
                count += occurrences(&tokens, phrase);
            }
            if count > 0 {
                found.at(&mut seen, n, size.max(0) as usize)[i] = count;
            }
        }
    }
    Ok(found)
}

/// Full-text matches in `user`'s transcript for a query, best first (ties in the order
/// the messages were recorded), scored by bm25 over the user's messages alone: what
/// `transcript::search` answers from FTS5 on SQLite.
pub fn search(
    tx: &Tx<'_>,
    tokenizer: &mut Tokenizer,
    user: &str,
    query: &TextQuery,
    limit: usize,
) -> Result<Vec<MessageMatch>, StoreError> {
    let Some(share) = share(tx, user)?.filter(|_| !query.words.is_empty()) else {
        return Ok(Vec::new());
    };
    let found = find(tx, tokenizer, user, query)?;
    // Each phrase's n: the user's messages holding it, whatever else they hold.
    let idfs: Vec<f64> = (0..found.phrases)
        .map(|i| {
            let holding = found.each().filter(|(_, inst)| inst[i] > 0).count();
            bm25::idf(share.messages, holding as u64)
        })
        .collect();
    let avgdl = bm25::average(share.tokens, share.messages);
    let ranked = bm25::rank(
        found
            .each()
            .filter(|(_, instances)| Found::matches(instances, query.all))
            .map(|(&(n, size), instances)| (n, size, instances)),
        &idfs,
        avgdl,
        limit,
    );
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let rows = joined(&ranked, |out, (_, n)| {
        let _ = write!(out, "{n}");
    });
    let mut records: FxHashMap<i64, MessageRecord> = tx
        .query(
            &format!(
                "SELECT n, {MESSAGE_COLUMNS} FROM messages
                 WHERE user_id = ?1 AND n = ANY (string_to_array(?2, ',')::bigint[])"
            ),
            &[user.into(), rows.as_str().into()],
            |r| Ok((r.get::<i64>(0)?, message_from_row_at(r, 1)?)),
        )?
        .into_iter()
        .collect();
    Ok(ranked
        .into_iter()
        .filter_map(|(bm25, n)| {
            let message = records.remove(&n)?;
            Some(MessageMatch { message, bm25 })
        })
        .collect())
}

/// How many of `user`'s messages match `query`, counting no further than `cap + 1`:
/// what `transcript::match_count` answers on SQLite.
pub fn match_count(
    tx: &Tx<'_>,
    tokenizer: &mut Tokenizer,
    user: &str,
    query: &TextQuery,
    cap: usize,
) -> Result<usize, StoreError> {
    let found = find(tx, tokenizer, user, query)?;
    let matching = found
        .each()
        .filter(|(_, instances)| Found::matches(instances, query.all))
        .count();
    Ok(matching.min(cap.saturating_add(1)))
}

/// How many messages `user` has (bm25's N for them, and what deciding which words are
/// common for them reads): what `transcript::size` answers on SQLite.
pub fn size(tx: &Tx<'_>, user: &str) -> Result<i64, StoreError> {
    Ok(share(tx, user)?.map_or(0, |s| s.messages as i64))
}

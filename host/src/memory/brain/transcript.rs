//! The transcript tier: every message recorded in a conversation, with its speaker's
//! name, role, time and id, kept for `memory.secondBrain.transcriptDays` (default 365)
//! after extraction has read it, and full-text indexed (`messages_fts`, porter
//! stemmed, over the text and the name) for retrieval and search.
//!
//! - Typed memories stay the only thing extraction, conflict rules and consolidation
//!   act on; the transcript is what was said, searchable as said.
//! - Paused learning records nothing new: the message is not stored (the conversation
//!   is still known, so that it can be ended).
//! - A message is pruned once it is older than the retention and extraction has read
//!   it; unread messages wait for their conversation to end.
//! - Every statement is scoped by `user_id`; a conversation id belongs to the user who
//!   used it first.
//! - A user's search depends on that user's messages alone: it scores with bm25 over
//!   their messages only (`bm25.rs`: every column weighs 1.0, N, the average size and
//!   each word's n counted over the user's messages, so the scores are those of FTS5's
//!   `bm25(messages_fts, 1.0, 1.0)` over a table holding only them), and which words
//!   are common, and how many messages a query matches, count only theirs. To read
//!   only a user's rows, FTS5 is given a rowid range: each user's messages take a block of the index's rowids (`(number << 40) + n`, the number from
//!   `transcript_users`), so a search costs what it would in a store of its own. N and
//!   the total tokens are counters in `transcript_users`, kept by the triggers that
//!   keep the index (`schema.rs`), in the transaction of the change itself, whatever
//!   statement changed `messages` (a cascade from `conversations` included): counting
//!   them at search time would read every row of the user, and counting them in the
//!   writer's code would have to follow every path that deletes a message.

pub mod either;
pub mod terms;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};

use super::bm25;
use super::error::StoreError;
use super::text_index::TextQuery;
use crate::memory::record::{ConversationRecord, MessageRecord};
use crate::sql::{self, AsTx, SqlError, Tx};

pub(super) const MESSAGE_COLUMNS: &str =
    "id, conversation_id, user_id, seq, role, name, content, at";

/// A full-text match in the transcript with its bm25 score (lower is better).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageMatch {
    pub message: MessageRecord,
    pub bm25: f64,
}

pub(super) fn message_from_row(row: &sql::Row) -> Result<MessageRecord, SqlError> {
    message_from_row_at(row, 0)
}

/// A message read from [`MESSAGE_COLUMNS`] starting at column `first` (after others a
/// query selects first).
pub(super) fn message_from_row_at(row: &sql::Row, first: usize) -> Result<MessageRecord, SqlError> {
    Ok(MessageRecord {
        id: row.get(first)?,
        conversation_id: row.get(first + 1)?,
        user_id: row.get(first + 2)?,
        seq: row.get(first + 3)?,
        role: row.get(first + 4)?,
        name: row.get(first + 5)?,
        content: row.get(first + 6)?,
        at: row.get(first + 7)?,
    })
}

pub(super) fn conversation_from_row(row: &sql::Row) -> Result<ConversationRecord, SqlError> {
    Ok(ConversationRecord {
        id: row.get(0)?,
        user_id: row.get(1)?,
        started_at: row.get(2)?,
        last_message_at: row.get(3)?,
        ended_at: row.get(4)?,
        extracted_seq: row.get(5)?,
    })
}

pub(super) const CONVERSATION_COLUMNS: &str =
    "id, user_id, started_at, last_message_at, ended_at, extracted_seq";

/// Rowids of the index each user's messages take: message `n` of the user numbered `k`
/// in `transcript_users` is row `(k << 40) + n` (`schema.rs`).
const BLOCK_BITS: u32 = 40;

/// A user's part of the transcript index: their block of its rowids, and what bm25
/// counts over their messages.
struct Share {
    /// The block's first rowid: message `n` is row `first + n`.
    first: i64,
    messages: u64,
    /// In the text and the speaker's name, as FTS5 counts them.
    tokens: u64,
}

impl Share {
    fn last(&self) -> i64 {
        self.first + ((1 << BLOCK_BITS) - 1)
    }
}

/// `user`'s part of the index; `None` when they have no message.
fn share(conn: &Connection, user: &str) -> Result<Option<Share>, StoreError> {
    let share = conn
        .prepare_cached("SELECT number, messages, tokens FROM transcript_users WHERE user_id = ?1")?
        .query_row([user], |r| {
            Ok(Share {
                first: r.get::<_, i64>(0)? << BLOCK_BITS,
                messages: r.get::<_, i64>(1)?.max(0) as u64,
                tokens: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })
        .optional()?;
    Ok(share.filter(|s| s.messages > 0))
}

/// How many of the share's messages match the FTS5 query `fts`, counting no further
/// than `most` when given.
fn count(
    conn: &Connection,
    share: &Share,
    fts: &str,
    most: Option<usize>,
) -> Result<u64, StoreError> {
    let most = most.map_or(-1, |m| m as i64);
    let count: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT rowid FROM messages_fts
             WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 LIMIT ?4)",
        )?
        .query_row(params![fts, share.first, share.last(), most], |r| r.get(0))?;
    Ok(count as u64)
}

/// Full-text matches in `user`'s transcript for a query, best first (ties in the
/// order the messages were recorded), scored by bm25 over the user's messages alone
/// (`bm25.rs`): as FTS5's `bm25(messages_fts, 1.0, 1.0)` would over a table holding
/// only them. FTS5 reads only the user's block of the index, once: each match's size
/// and instances of each word (`engram_hits`); the scores are computed here.
pub(super) fn search(
    tx: &Tx,
    user: &str,
    query: &TextQuery,
    limit: usize,
) -> Result<Vec<MessageMatch>, StoreError> {
    let Some(conn) = tx.as_sqlite() else {
        return terms::with_tokenizer(|t| terms::search(tx, t, user, query, limit));
    };
    let words = query.words.len();
    let Some(share) = share(conn, user)?.filter(|_| words > 0) else {
        return Ok(Vec::new());
    };
    let Scan { matches, instances } = scan(conn, &share, query)?;
    // Each word's n, as FTS5 counts a phrase's rows over its table: among the matches
    // of any of the words, the ones holding it; when every word must match, counted
    // apart.
    let mut idfs = Vec::with_capacity(words);
    for (i, word) in query.words.iter().enumerate() {
        let hits = if query.all {
            count(conn, &share, &TextQuery::word(word).fts5(), None)?
        } else {
            instances.chunks_exact(words).filter(|m| m[i] > 0).count() as u64
        };
        idfs.push(bm25::idf(share.messages, hits));
    }
    let avgdl = bm25::average(share.tokens, share.messages);
    let ranked = bm25::rank(
        matches
            .iter()
            .zip(instances.chunks_exact(words))
            .map(|(&(rowid, size), instances)| (rowid, size, instances)),
        &idfs,
        avgdl,
        limit,
    );
    let message_sql =
        format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE n = ?1 AND user_id = ?2");
    let mut found = Vec::with_capacity(ranked.len());
    for (bm25, rowid) in ranked {
        if let Some(message) = Tx::sqlite(conn).query_opt(
            &message_sql,
            &[(rowid - share.first).into(), user.into()],
            message_from_row,
        )? {
            found.push(MessageMatch { message, bm25 });
        }
    }
    Ok(found)
}

/// Every match of a query among a share's messages.
struct Scan {
    /// Each match's index rowid and size.
    matches: Vec<(i64, usize)>,
    /// Its instances of each word of the query: one per word, in order, match after
    /// match.
    instances: Vec<u32>,
}

fn scan(conn: &Connection, share: &Share, query: &TextQuery) -> Result<Scan, StoreError> {
    let words = query.words.len();
    let mut matches = Vec::new();
    let mut instances = Vec::new();
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, engram_hits(messages_fts) FROM messages_fts
         WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
    )?;
    let mut rows = stmt.query(params![query.fts5(), share.first, share.last()])?;
    while let Some(row) = rows.next()? {
        let hits = match row.get_ref(1)? {
            ValueRef::Blob(blob) => bm25::Hits::read(blob, words),
            _ => None,
        }
        .ok_or_else(|| StoreError::Invalid {
            field: "search",
            reason: format!("engram_hits gave no count for each of the {words} words"),
        })?;
        matches.push((row.get(0)?, hits.size()));
        instances.extend(hits.instances());
    }
    Ok(Scan { matches, instances })
}

/// The user's latest `limit` messages of their own (role `user`), newest first.
pub(super) fn latest(
    conn: &impl AsTx,
    user: &str,
    limit: usize,
) -> Result<Vec<MessageRecord>, StoreError> {
    Ok(conn.as_tx().query(
        &format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ?1 AND role = 'user' ORDER BY at DESC LIMIT ?2"
        ),
        &[user.into(), (limit as i64).into()],
        message_from_row,
    )?)
}

/// How many of `user`'s messages match `query`, counting no further than `cap + 1`.
pub(super) fn match_count(
    tx: &Tx,
    user: &str,
    query: &TextQuery,
    cap: usize,
) -> Result<usize, StoreError> {
    let Some(conn) = tx.as_sqlite() else {
        return terms::with_tokenizer(|t| terms::match_count(tx, t, user, query, cap));
    };
    let Some(share) = share(conn, user)? else {
        return Ok(0);
    };
    Ok(count(conn, &share, &query.fts5(), Some(cap + 1))? as usize)
}

/// How many messages `user` has (bm25's N for them, and what deciding which words are
/// common for them reads).
pub(super) fn size(tx: &Tx, user: &str) -> Result<i64, StoreError> {
    match tx.as_sqlite() {
        Some(conn) => Ok(share(conn, user)?.map_or(0, |s| s.messages as i64)),
        None => terms::size(tx, user),
    }
}

/// Indexes message `id`, just written, or rewritten (its text redacted), in this
/// transaction: on PostgreSQL its postings are the host's to write
/// (`transcript/terms.rs`); on SQLite FTS5's triggers have done it.
pub(super) fn index_message(tx: &Tx, id: &str) -> Result<(), StoreError> {
    if tx.as_sqlite().is_some() {
        return Ok(());
    }
    terms::with_tokenizer(|t| terms::index_message(tx, t, id))
}

/// PostgreSQL: writes the postings of a batch of messages that came without them
/// (`engram db copy`, a store of version 9) and says how many; 0 on SQLite.
pub(super) fn index_unindexed(tx: &Tx) -> Result<usize, StoreError> {
    const BATCH: usize = 500;
    if tx.as_sqlite().is_some() {
        return Ok(0);
    }
    terms::with_tokenizer(|t| terms::index_unindexed(tx, t, BATCH))
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, params};

    use engram_strategies::model::Role;

    use super::*;
    use crate::memory::brain::test_rng::Rng;

    /// Words with shared stems, diacritics, digits, a word FTS5 reads as a phrase of
    /// two tokens (a visarga splits `sun\u{903}set`) and one it reads as none.
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
        "café",
        "cafe",
        "naïve",
        "42",
        "weekend",
        "sushi",
        "lisbon",
        "booked",
        "the",
        "sun\u{903}set",
        "sun",
        "set",
        "\u{903}",
    ];
    const USERS: &[&str] = &["default", "u2", "u3"];

    fn words(rng: &mut Rng, most: usize) -> String {
        (0..1 + rng.below(most))
            .map(|_| WORDS[rng.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// An FTS5 table of `user`'s messages alone, as `conn` sees them, and its
    /// instances: what their ranking and counts must equal, whoever else shares the
    /// store.
    fn reference(conn: &Connection, user: &str) {
        conn.execute_batch(
            "DROP TABLE IF EXISTS temp.user_instances;
             DROP TABLE IF EXISTS temp.user_fts;
             CREATE VIRTUAL TABLE temp.user_fts USING fts5(
                 content, name, tokenize = 'porter unicode61 remove_diacritics 2'
             );
             CREATE VIRTUAL TABLE temp.user_instances USING fts5vocab(temp, user_fts, 'instance');",
        )
        .expect("the FTS5 reference");
        conn.execute(
            "INSERT INTO temp.user_fts (rowid, content, name)
             SELECT n, content, name FROM main.messages WHERE user_id = ?1",
            [user],
        )
        .expect("the reference's rows");
    }

    /// `bm25(user_fts, 1.0, 1.0)` over the reference: every match, best first, ties in
    /// the order the messages were recorded.
    fn ranking(conn: &Connection, query: &TextQuery) -> Vec<(String, f64)> {
        conn.prepare(
            "SELECT m.id, bm25(user_fts, 1.0, 1.0) AS score
             FROM temp.user_fts JOIN main.messages m ON m.n = user_fts.rowid
             WHERE user_fts MATCH ?1 ORDER BY score, user_fts.rowid LIMIT 500",
        )
        .expect("reference")
        .query_map([query.fts5()], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
    }

    fn one(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).expect(sql)
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

    /// Messages of several users in one vocabulary, recorded, edited, moved between
    /// users, deleted by conversation, by user and by pruning: each user's search ranks
    /// exactly as FTS5's bm25 does over a table of that user's messages alone (the same
    /// ids in the same order with the same scores), with the same match counts and
    /// size, and the user's counters hold what that table holds.
    #[test]
    fn each_users_search_ranks_as_fts5_over_their_messages_alone() {
        for seed in [3_u64, 27, 2024] {
            let fixture = crate::memory::brain::tests::fixture();
            let brain = &fixture.brain;
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut compared = 0;
            for step in 0..400 {
                let user = USERS[rng.below(USERS.len())];
                let conversation = format!("{user}-{}", rng.below(6));
                match rng.below(40) {
                    0 => {
                        let _ = brain.delete_conversation(user, &conversation);
                    }
                    1 => {
                        brain
                            .store()
                            .write_sqlite(|tx| {
                                tx.execute("UPDATE conversations SET extracted_seq = 1000000", [])?;
                                Ok(())
                            })
                            .expect("read by extraction");
                        fixture.clock.advance(1_000);
                        brain
                            .prune_transcript(rng.below(3) as i64 * 60_000)
                            .expect("prune");
                    }
                    2 => {
                        brain.clear(user).expect("clear");
                    }
                    3 | 4 => {
                        // Edited or moved to another user: written in SQL, as no API
                        // does it.
                        let other = USERS[rng.below(USERS.len())];
                        let text = words(&mut rng, 10);
                        brain
                            .store()
                            .write_sqlite(|tx| {
                                tx.execute(
                                    "UPDATE messages SET content = ?1, user_id = ?2
                                     WHERE n = (SELECT n FROM messages WHERE user_id = ?3 LIMIT 1)",
                                    params![text, other, user],
                                )?;
                                Ok(())
                            })
                            .expect("edit a message");
                    }
                    _ => {
                        let name = [None, Some("Anna"), Some("Tea Garden")][rng.below(3)];
                        let role = [Role::User, Role::Assistant][rng.below(2)];
                        let text = words(&mut rng, 14);
                        brain
                            .record_message(user, &conversation, role, name, &text)
                            .expect("record")
                            .expect("learning is on");
                        fixture.clock.advance(1_000);
                    }
                }
                if step % 40 != 39 {
                    continue;
                }
                let store = brain.store();
                let c = &Connection::open(store.path().expect("a SQLite store"))
                    .expect("a connection of the test's");
                crate::memory::brain::bm25::register(c).expect("engram_hits");
                for user in USERS.iter().chain(&["nobody"]) {
                    reference(c, user);
                    let case = format!("seed {seed}, step {step}, {user}");
                    let rows = one(c, "SELECT count(*) FROM temp.user_fts");
                    assert_eq!(
                        size(&Tx::sqlite(c), user).expect("size"),
                        rows,
                        "{case}: size"
                    );
                    // Every token is an instance of its term.
                    let tokens = one(c, "SELECT count(*) FROM temp.user_instances");
                    let counted = c
                        .query_row(
                            "SELECT messages, tokens FROM transcript_users WHERE user_id = ?1",
                            [user],
                            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                        )
                        .optional()
                        .expect("counters")
                        .unwrap_or((0, 0));
                    assert_eq!(counted, (rows, tokens), "{case}: the user's counters");
                    for _ in 0..10 {
                        let query = random_query(&mut rng);
                        let expected = ranking(c, &query);
                        let found: Vec<(String, f64)> = search(&Tx::sqlite(c), user, &query, 500)
                            .expect("search")
                            .into_iter()
                            .map(|m| {
                                assert_eq!(&m.message.user_id, user, "{case}: another's message");
                                (m.message.id, m.bm25)
                            })
                            .collect();
                        let ids = |v: &[(String, f64)]| {
                            v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>()
                        };
                        // The same arithmetic in the same order: the same numbers.
                        assert_eq!(found, expected, "{case}: {query:?}");
                        let few: Vec<String> = search(&Tx::sqlite(c), user, &query, 3)
                            .expect("search")
                            .into_iter()
                            .map(|m| m.message.id)
                            .collect();
                        assert_eq!(few, ids(&expected)[..expected.len().min(3)], "{case}");
                        let cap = rng.below(30);
                        assert_eq!(
                            match_count(&Tx::sqlite(c), user, &query, cap).expect("count"),
                            expected.len().min(cap + 1),
                            "{case}: {query:?}, at most {}",
                            cap + 1
                        );
                        compared += expected.len();
                    }
                }
                c.execute(
                    "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
                    [],
                )
                .expect("the index matches its messages");
            }
            assert!(
                compared > 1_000,
                "seed {seed}: only {compared} matches compared"
            );
        }
    }
}

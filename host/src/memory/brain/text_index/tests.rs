use engram_strategies::model::MemoryType;
use rusqlite::{Connection, params};

use super::*;
use crate::memory::brain::row::{COLUMNS, record_from_row};
use crate::memory::brain::test_rng::Rng;
use crate::memory::brain::{MemoryEdit, NewMemory};
use crate::sql::Tx;

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
    let found = text
        .search(&Tx::sqlite(conn), user, query, 500)
        .expect("search");
    // The records returned are the rows as `conn` reads them, not older copies.
    for m in &found {
        let row = crate::sql::Tx::sqlite(conn)
            .query_one(
                &format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"),
                &[m.record.id.as_str().into()],
                record_from_row,
            )
            .expect("the row");
        assert_eq!(m.record, row, "{case}: {query:?}: a record unlike its row");
    }
    let got: Vec<(String, f64)> = found.into_iter().map(|m| (m.record.id, m.bm25)).collect();
    let ids = |v: &[(String, f64)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&got), ids(&expected), "{case}: {query:?} for {user}");
    // The best few alone are the same as the head of the whole ranking.
    let few: Vec<String> = text
        .search(&Tx::sqlite(conn), user, query, 3)
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
    let c = &Connection::open(store.path().expect("a SQLite store"))
        .expect("a connection of the test's");
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
                            .write_sqlite(|tx| {
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
                            .write_sqlite(|tx| {
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
                        let failed: Result<(), StoreError> = store.write_sqlite(|tx| {
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
                let c = &Connection::open(store.path().expect("a SQLite store"))
                    .expect("a connection of the test's");
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
                    let rows = crate::sql::Tx::sqlite(c)
                        .query(
                            &format!("SELECT {COLUMNS} FROM memories"),
                            &[],
                            record_from_row,
                        )
                        .map_err(StoreError::from)?;
                    for row in rows {
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
                    .write_sqlite(|tx| {
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

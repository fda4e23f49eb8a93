//! The transcript's full-text search on PostgreSQL (issue 32) against FTS5 on SQLite:
//! the same messages, recorded, rewritten and deleted by every path that changes them,
//! give the same matches in the same order with the same bm25 scores on both
//! backends; and one person's search never counts or returns another's messages.
//!
//! SQLite's side is the Second Brain itself (`Brain` on a file, its FTS5 index kept by
//! the schema's triggers); PostgreSQL's is the brain schema on a real server, written
//! with the statements the Second Brain runs, indexed by `terms.rs` (the brain does not
//! run on PostgreSQL yet: these are the calls it will make).

use std::collections::BTreeMap;
use std::sync::Arc;

use engram::events::EventBus;
use engram::memory::bench::Transcript;
use engram::memory::{BRAIN_PG_SCHEMA, Brain, StoreError};
use engram::sql::{Access, Actor, Conn, Database, PgStore, Tx};
use engram::time::ManualClock;
use engram_e2e::pg::Owner;
use engram_strategies::model::Role;

const START: i64 = 1_700_000_000_000;
const DAY: i64 = 86_400_000;
const USERS: &[&str] = &["alice", "bob", "carol"];

/// Words with shared stems, diacritics, a digit, a word FTS5 reads as a phrase of two
/// tokens (a visarga splits `sun\u{903}set`) and one it reads as none.
const WORDS: &[&str] = &[
    "tea",
    "teas",
    "green",
    "garden",
    "gardening",
    "running",
    "runs",
    "run",
    "runner",
    "café",
    "cafe",
    "naïve",
    "naive",
    "Élodie",
    "42",
    "weekend",
    "lisbon",
    "the",
    "anna",
    "sun\u{903}set",
    "sun",
    "set",
    "\u{903}",
];

/// Queries as people type them; each is asked for any word and for every word.
const QUERIES: &[&str] = &[
    "tea",
    "running",
    "runs",
    "run garden",
    "café",
    "cafe naive",
    "NAÏVE",
    "elodie",
    "anna tea",
    "42 weekend",
    "the",
    "tea tea",
    "sun\u{903}set",
    "sun set",
    "\u{903} tea",
    "gardening teas green lisbon",
    "nothing matches this",
];

/// A deterministic word stream (a linear congruential generator).
struct Words(u64);

impl Words {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn text(&mut self, most: usize) -> String {
        (0..1 + self.below(most))
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A message as both backends hold it.
struct Message {
    id: String,
    conversation: String,
    user: String,
    seq: i64,
    role: String,
    name: Option<String>,
    content: String,
    at: i64,
}

fn sqlite_messages(brain: &Brain) -> Vec<Message> {
    brain
        .store()
        .read(engram::sql::Actor::System, |c| {
            let c = c.as_sqlite().expect("the SQLite brain");
            let mut stmt = c.prepare(
                "SELECT id, conversation_id, user_id, seq, role, name, content, at
                 FROM messages ORDER BY n",
            )?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(Message {
                        id: r.get(0)?,
                        conversation: r.get(1)?,
                        user: r.get(2)?,
                        seq: r.get(3)?,
                        role: r.get(4)?,
                        name: r.get(5)?,
                        content: r.get(6)?,
                        at: r.get(7)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .expect("the SQLite messages")
}

/// Writes a message on PostgreSQL as the Second Brain does (its conversation on first
/// use), indexes it, and gives its row there.
fn pg_record(tx: &Tx<'_>, transcript: &mut Transcript, m: &Message) -> Result<i64, StoreError> {
    tx.execute(
        "INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (id) DO UPDATE SET last_message_at = ?3",
        &[(&m.conversation).into(), (&m.user).into(), m.at.into()],
    )?;
    let n = tx.query_one(
        "INSERT INTO messages (id, conversation_id, user_id, seq, role, name, content, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING n",
        &[
            (&m.id).into(),
            (&m.conversation).into(),
            (&m.user).into(),
            m.seq.into(),
            (&m.role).into(),
            m.name.as_deref().into(),
            (&m.content).into(),
            m.at.into(),
        ],
        |r| r.get::<i64>(0),
    )?;
    transcript.index(tx, n, &m.user, &m.content, m.name.as_deref())?;
    Ok(n)
}

/// The two stores side by side, and each SQLite message's row on PostgreSQL.
struct Both {
    _dir: tempfile::TempDir,
    clock: ManualClock,
    brain: Brain,
    pg: Database,
    transcript: Transcript,
    /// SQLite's message id -> PostgreSQL's row.
    rows: BTreeMap<String, i64>,
    url: String,
}

impl Both {
    fn new(owner: &Owner) -> Both {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = ManualClock::new(START);
        let brain = Brain::open(
            &dir.path().join("second-brain.db"),
            Arc::new(clock.clone()),
            EventBus::default(),
        )
        .expect("the SQLite brain");
        let store = PgStore::open(&owner.url(), &BRAIN_PG_SCHEMA).expect("the PostgreSQL brain");
        Both {
            _dir: dir,
            clock,
            brain,
            pg: Database::postgres(store, 2).expect("connect"),
            transcript: Transcript::new().expect("tokenizer"),
            rows: BTreeMap::new(),
            url: owner.url(),
        }
    }

    /// Records a message through the Second Brain on SQLite, and the same message
    /// (the same id, text and time) on PostgreSQL.
    fn record(&mut self, user: &str, conversation: &str, name: Option<&str>, text: &str) {
        let id = self
            .brain
            .record_message(user, conversation, Role::User, name, text)
            .expect("record")
            .expect("learning is on");
        self.clock.advance(1_000);
        let message = sqlite_messages(&self.brain)
            .into_iter()
            .find(|m| m.id == id)
            .expect("recorded");
        let transcript = &mut self.transcript;
        let n = self
            .pg
            .write(Actor::User(user), |tx| pg_record(tx, transcript, &message))
            .expect("recorded on PostgreSQL");
        self.rows.insert(id, n);
    }

    fn pg_write(&mut self, actor: Actor<'_>, sql: &str, args: &[engram::sql::Value<'_>]) {
        self.pg
            .write(actor, |tx| tx.execute(sql, args).map_err(StoreError::from))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Every query, for each user and nobody, answered alike on both backends; how
    /// many matches were compared.
    fn compare(&mut self, case: &str) -> usize {
        let path = self
            .brain
            .store()
            .path()
            .expect("a SQLite store")
            .to_path_buf();
        let conn = rusqlite::Connection::open(&path).expect("a connection of the test's");
        Transcript::prepare_sqlite(&conn).expect("engram_hits");
        let mut sqlite = Conn::sqlite(conn);
        let mut pg = self.pg_reader();
        let mut compared = 0;
        for user in USERS.iter().chain(&["nobody"]) {
            let lite = sqlite
                .transaction(Actor::User(user), Access::Read)
                .expect("read");
            let post = pg
                .transaction(Actor::User(user), Access::Read)
                .expect("read");
            let t = &mut self.transcript;
            assert_eq!(
                t.size(&post, user).expect("size"),
                t.size(&lite, user).expect("size"),
                "{case}: {user}'s size"
            );
            for text in QUERIES {
                for all in [false, true] {
                    let what = format!("{case}: {user}, {text:?}, all {all}");
                    let expected = t.search(&lite, user, text, all, 500).expect("FTS5");
                    let found = t.search(&post, user, text, all, 500).expect("PostgreSQL");
                    let ids =
                        |v: &[(String, f64)]| v.iter().map(|m| m.0.clone()).collect::<Vec<_>>();
                    assert_eq!(ids(&found), ids(&expected), "{what}: the order");
                    for ((_, a), (_, b)) in found.iter().zip(&expected) {
                        assert!((a - b).abs() <= 1e-9, "{what}: bm25 {a} against {b}");
                    }
                    let few = t.search(&post, user, text, all, 3).expect("PostgreSQL");
                    assert_eq!(ids(&few), ids(&expected[..expected.len().min(3)]), "{what}");
                    for cap in [0, 2, 10, 1000] {
                        assert_eq!(
                            t.match_count(&post, user, text, all, cap).expect("count"),
                            t.match_count(&lite, user, text, all, cap).expect("count"),
                            "{what}: count to {cap}"
                        );
                    }
                    compared += expected.len();
                }
            }
        }
        compared
    }

    fn pg_reader(&self) -> Conn {
        // A connection of the test's, to read as each person in turn.
        let store = PgStore::open(&self.url, &BRAIN_PG_SCHEMA).expect("open");
        store.connect().expect("connect")
    }
}

/// Messages of three users, with names, diacritics, stems and phrases, recorded on
/// both backends; then deleted by conversation (and on PostgreSQL by the cascade from
/// `conversations`), pruned, redacted in place and cleared by user, each path as the
/// Second Brain takes it: after each, every search, count and size is the same on both.
#[test]
fn bm25_scores_and_orders_are_the_same_on_sqlite_and_postgresql() {
    let Some(owner) = Owner::new("transcript_same_on_both") else {
        return;
    };
    let mut both = Both::new(&owner);
    let mut words = Words(2024);
    let names = [None, Some("Anna"), Some("Tea Garden"), Some("Élodie Café")];
    for i in 0..240 {
        let user = USERS[words.below(USERS.len())];
        let conversation = format!("{user}-{}", i % 5);
        let name = names[words.below(names.len())];
        let text = words.text(14);
        both.record(user, &conversation, name, &text);
    }
    let mut compared = both.compare("recorded");

    // A conversation deleted as the Second Brain deletes it; on PostgreSQL another by
    // its conversation row alone, its messages going by the foreign key's cascade.
    both.brain
        .delete_conversation("alice", "alice-1")
        .expect("delete");
    both.pg_write(
        Actor::User("alice"),
        "DELETE FROM messages WHERE conversation_id = ?1 AND user_id = ?2",
        &["alice-1".into(), "alice".into()],
    );
    both.pg_write(
        Actor::User("alice"),
        "DELETE FROM conversations WHERE id = ?1 AND user_id = ?2",
        &["alice-1".into(), "alice".into()],
    );
    both.brain
        .delete_conversation("bob", "bob-2")
        .expect("delete");
    both.pg_write(
        Actor::User("bob"),
        "DELETE FROM conversations WHERE id = ?1 AND user_id = ?2",
        &["bob-2".into(), "bob".into()],
    );
    compared += both.compare("conversations deleted");

    // Pruned: bob's conversation 0, read by extraction, loses its messages older than
    // a day; on PostgreSQL the same rows go by the prune's statement, as maintenance.
    both.clock.advance(2 * DAY);
    for i in 0..20 {
        let text = words.text(10);
        both.record("bob", "bob-0", None, &format!("{text} {i}"));
    }
    both.brain
        .store()
        .write(engram::sql::Actor::System, |tx| {
            tx.execute(
                "UPDATE conversations SET extracted_seq = 1000000 WHERE id = 'bob-0'",
                &[],
            )?;
            Ok(())
        })
        .expect("read by extraction");
    let before: Vec<String> = sqlite_messages(&both.brain)
        .into_iter()
        .map(|m| m.id)
        .collect();
    let pruned = both.brain.prune_transcript(DAY).expect("prune");
    let after: Vec<String> = sqlite_messages(&both.brain)
        .into_iter()
        .map(|m| m.id)
        .collect();
    let gone: Vec<&String> = before.iter().filter(|id| !after.contains(id)).collect();
    assert!(pruned > 0 && gone.len() == pruned, "{pruned} pruned");
    for id in gone {
        let n = both.rows[id];
        both.pg_write(
            Actor::System,
            "DELETE FROM messages WHERE n = ?1",
            &[n.into()],
        );
    }
    compared += both.compare("pruned");

    // Redacted in place (forgetting a memory rewrites the messages it came from): on
    // PostgreSQL the rewrite takes the message out of the index, which is written again.
    let redacted: Vec<Message> = sqlite_messages(&both.brain)
        .into_iter()
        .filter(|m| m.user == "carol")
        .take(5)
        .collect();
    for m in &redacted {
        let content = format!("[forgotten] {}", words.text(4));
        both.brain
            .store()
            .write(engram::sql::Actor::System, |tx| {
                tx.execute(
                    "UPDATE messages SET content = ?2 WHERE id = ?1",
                    &[m.id.as_str().into(), content.as_str().into()],
                )?;
                Ok(())
            })
            .expect("redact on SQLite");
        let n = both.rows[&m.id];
        let transcript = &mut both.transcript;
        both.pg
            .write(Actor::User("carol"), |tx| {
                tx.execute(
                    "UPDATE messages SET content = ?2 WHERE id = ?1 AND user_id = ?3",
                    &[(&m.id).into(), (&content).into(), "carol".into()],
                )?;
                transcript.index(tx, n, "carol", &content, m.name.as_deref())
            })
            .expect("redact on PostgreSQL");
    }
    compared += both.compare("redacted");

    // A user cleared (every message and conversation), then talking again.
    both.brain.clear("alice").expect("clear");
    both.pg_write(
        Actor::User("alice"),
        "DELETE FROM messages WHERE user_id = ?1",
        &["alice".into()],
    );
    both.pg_write(
        Actor::User("alice"),
        "DELETE FROM conversations WHERE user_id = ?1",
        &["alice".into()],
    );
    compared += both.compare("alice cleared");
    for i in 0..15 {
        let text = words.text(8);
        both.record(
            "alice",
            &format!("alice-new-{}", i % 2),
            Some("Anna"),
            &text,
        );
    }
    compared += both.compare("alice again");

    assert!(compared > 2_000, "only {compared} matches compared");
}

/// One person's search on PostgreSQL depends on their messages alone: another's
/// messages, however many and however alike, change neither what it returns nor its
/// scores, counts or size; and a transaction acting for one person reads none of
/// another's postings or counters, whatever it asks for.
#[test]
fn one_persons_search_never_counts_or_returns_anothers_messages() {
    let Some(owner) = Owner::new("transcript_isolation") else {
        return;
    };
    let mut both = Both::new(&owner);
    both.record("alice", "a", Some("Anna"), "green tea in the garden");
    both.record("alice", "a", None, "running to the café");
    let alone = |both: &mut Both| {
        let mut pg = both.pg_reader();
        let tx = pg
            .transaction(Actor::User("alice"), Access::Read)
            .expect("read");
        let t = &mut both.transcript;
        (
            t.search(&tx, "alice", "tea garden running anna", false, 10)
                .expect("search"),
            t.match_count(&tx, "alice", "tea", false, 100)
                .expect("count"),
            t.size(&tx, "alice").expect("size"),
        )
    };
    let before = alone(&mut both);
    assert_eq!(before.0.len(), 2, "{before:?}");
    for i in 0..40 {
        both.record(
            "bob",
            "b",
            Some("Anna"),
            &format!("tea garden tea {i} running"),
        );
    }
    let after = alone(&mut both);
    assert_eq!(after, before, "bob's messages changed alice's search");

    let mut pg = both.pg_reader();
    let t = &mut both.transcript;
    // Acting for alice, bob's rows are not there to be read.
    let tx = pg
        .transaction(Actor::User("alice"), Access::Read)
        .expect("read");
    assert!(
        t.search(&tx, "bob", "tea", false, 10)
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        t.match_count(&tx, "bob", "tea", false, 100).expect("count"),
        0
    );
    assert_eq!(t.size(&tx, "bob").expect("size"), 0);
    let (postings, users): (i64, i64) = tx
        .query_one(
            "SELECT (SELECT count(DISTINCT user_id) FROM message_terms),
                    (SELECT count(*) FROM transcript_users)",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("count");
    assert_eq!((postings, users), (1, 1), "alice's rows only");
    drop(tx);
    // Acting for bob: his own 40.
    let tx = pg
        .transaction(Actor::User("bob"), Access::Read)
        .expect("read");
    let found = t.search(&tx, "bob", "tea", false, 500).expect("search");
    assert_eq!(found.len(), 40);
    assert_eq!(t.size(&tx, "bob").expect("size"), 40);
}

//! The transcript's search latency, FTS5 on SQLite against the postings on PostgreSQL
//! (`memory/brain/transcript/terms.rs`), over the same messages: p50 and p95 of a
//! search (best 10) and of a match count, per backend, and their ratio.
//!
//! `cargo bench -p engram-e2e --bench transcript` (a throwaway cluster, `pg.rs`;
//! SKIPPED without PostgreSQL). `TRANSCRIPT_MESSAGES` sets the searching user's
//! messages (default 3000; two other users hold half as many each).

use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::events::EventBus;
use engram::memory::bench::Transcript;
use engram::memory::{BRAIN_PG_SCHEMA, Brain, StoreError};
use engram::sql::{Access, Actor, Conn, Database, PgStore, Tx};
use engram::time::ManualClock;
use engram_e2e::pg::Owner;

/// A vocabulary with a long tail: word `i` is drawn about `1 / (i + 1)` as often as the
/// first.
const VOCABULARY: usize = 4_000;
const ROUNDS: usize = 20;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A Zipf-like draw over the vocabulary.
    fn word(&mut self) -> String {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let i = ((VOCABULARY as f64 + 1.0).powf(u) - 1.0) as usize;
        format!("w{}x", i.min(VOCABULARY - 1))
    }

    fn text(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.word())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct Message {
    user: &'static str,
    conversation: String,
    seq: i64,
    content: String,
}

fn messages(per_user: usize) -> Vec<Message> {
    let mut rng = Rng(7);
    let mut out = Vec::new();
    for (user, count) in [
        ("alice", per_user),
        ("bob", per_user / 2),
        ("carol", per_user / 2),
    ] {
        for i in 0..count {
            let words = 4 + (rng.next() % 30) as usize;
            out.push(Message {
                user,
                conversation: format!("{user}-{}", i / 20),
                seq: (i % 20) as i64 + 1,
                content: rng.text(words),
            });
        }
    }
    out
}

const CONVERSATION: &str = "INSERT INTO conversations (id, user_id, started_at, last_message_at)
    VALUES (?1, ?2, 0, 0) ON CONFLICT (id) DO NOTHING";
const MESSAGE: &str = "INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at)
    VALUES (?1, ?2, ?3, ?4, 'user', ?5, ?4) RETURNING n";

fn fill(
    tx: &Tx<'_>,
    transcript: Option<&mut Transcript>,
    all: &[Message],
) -> Result<(), StoreError> {
    let mut transcript = transcript;
    for (i, m) in all.iter().enumerate() {
        tx.execute(CONVERSATION, &[(&m.conversation).into(), m.user.into()])?;
        let id = format!("turn-{i}");
        let n = tx.query_one(
            MESSAGE,
            &[
                id.as_str().into(),
                (&m.conversation).into(),
                m.user.into(),
                m.seq.into(),
                (&m.content).into(),
            ],
            |r| r.get::<i64>(0),
        )?;
        if let Some(t) = transcript.as_deref_mut() {
            t.index(tx, n, m.user, &m.content, None)?;
        }
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// p50 and p95 of `run` over the queries, ROUNDS times each.
fn measure(
    conn: &mut Conn,
    transcript: &mut Transcript,
    queries: &[String],
    mut run: impl FnMut(&mut Transcript, &Tx<'_>, &str) -> usize,
) -> (Duration, Duration, usize) {
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..ROUNDS {
        for q in queries {
            let tx = conn
                .transaction(Actor::User("alice"), Access::Read)
                .expect("read");
            let start = Instant::now();
            found += run(transcript, &tx, q);
            times.push(start.elapsed());
        }
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95), found)
}

fn main() {
    let per_user: usize = std::env::var("TRANSCRIPT_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let Some(owner) = Owner::new("transcript_bench") else {
        return;
    };
    let all = messages(per_user);
    let mut transcript = Transcript::new().expect("tokenizer");

    let dir = tempfile::tempdir().expect("tempdir");
    let brain = Brain::open(
        &dir.path().join("second-brain.db"),
        Arc::new(ManualClock::new(0)),
        EventBus::default(),
    )
    .expect("SQLite");
    let path = brain.store().path().expect("a SQLite store").to_path_buf();
    drop(brain);
    let file = rusqlite::Connection::open(&path).expect("open");
    Transcript::prepare_sqlite(&file).expect("engram_hits");
    let mut sqlite = Conn::sqlite(file);
    {
        let tx = sqlite
            .transaction(Actor::System, Access::Write)
            .expect("write");
        fill(&tx, None, &all).expect("fill SQLite");
        tx.commit().expect("commit");
    }

    let store = PgStore::open(&owner.url(), &BRAIN_PG_SCHEMA).expect("PostgreSQL");
    let started = Instant::now();
    Database::postgres(store.clone(), 1)
        .expect("connect")
        .write(Actor::System, |tx| fill(tx, Some(&mut transcript), &all))
        .expect("fill PostgreSQL");
    let indexing = started.elapsed();
    let mut pg = store.connect().expect("connect");
    pg.transaction(Actor::System, Access::Write)
        .and_then(|tx| {
            tx.batch("ANALYZE")?;
            tx.commit()
        })
        .expect("analyze");

    // Queries of one to three words, common and rare alike.
    let mut rng = Rng(99);
    let queries: Vec<String> = (0..25).map(|i| rng.text(1 + i % 3)).collect();
    println!(
        "transcript search: alice {per_user} messages (bob, carol {} each), {} queries x {ROUNDS}; PostgreSQL indexed {} messages in {:.2?}",
        per_user / 2,
        queries.len(),
        all.len(),
        indexing
    );
    let search = |t: &mut Transcript, tx: &Tx<'_>, q: &str| {
        t.search(tx, "alice", q, false, 10).expect("search").len()
    };
    let count = |t: &mut Transcript, tx: &Tx<'_>, q: &str| {
        t.match_count(tx, "alice", q, false, 50).expect("count")
    };
    for (what, run) in [
        (
            "search (best 10)",
            &search as &dyn Fn(&mut Transcript, &Tx<'_>, &str) -> usize,
        ),
        ("match count (cap 50)", &count),
    ] {
        let (l50, l95, lf) = measure(&mut sqlite, &mut transcript, &queries, |t, tx, q| {
            run(t, tx, q)
        });
        let (p50, p95, pf) = measure(&mut pg, &mut transcript, &queries, |t, tx, q| run(t, tx, q));
        assert_eq!(lf, pf, "{what}: both backends found as much");
        println!(
            "{what:<22} FTS5 p50 {l50:>9.2?} p95 {l95:>9.2?} | PostgreSQL p50 {p50:>9.2?} p95 {p95:>9.2?} | ratio p50 {:.2}x p95 {:.2}x",
            p50.as_secs_f64() / l50.as_secs_f64(),
            p95.as_secs_f64() / l95.as_secs_f64()
        );
    }
}

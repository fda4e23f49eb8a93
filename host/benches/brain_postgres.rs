//! Retrieval on PostgreSQL against SQLite (issue 32): `cargo bench -p engram-host
//! --bench brain_postgres` (`-- --quick` for a short run).
//!
//! One user's Second Brain with 100,000 memories (`ENGRAM_BENCH_MEMORIES`; quick:
//! 10,000) and 10,000 transcript messages (`ENGRAM_BENCH_MESSAGES`; quick: 2,000), the
//! same records on a SQLite file and on a throwaway PostgreSQL cluster (`tests/pg.rs`;
//! the run says so and stops where PostgreSQL is not installed). 50 of an agent's
//! questions, 5 rounds (quick: 2), through `Brain::retrieve` (both tiers, and its
//! `last_used_at` commit) on each: p50 and p95, and PostgreSQL's against SQLite's in the
//! same run. The target: p95 at most 20 ms on PostgreSQL at 100k memories.
//!
//! The cluster runs as the tests run it: fsync and synchronous commit off, so that the
//! figures measure Engram's round trips rather than this machine's disk.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../../tests/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::events::EventBus;
use engram::memory::Brain;
use engram::memory::bench::q;
use engram::memory::record::MemoryRecord;
use engram::time::{Clock, SystemClock};
use engram_strategies::model::Role;

use common::{
    Rng, Table, agent_question, ms, percentile, ratio, synthetic_record, synthetic_summary,
};

const USER: &str = "default";
/// The summary shapes of the memories (`common::synthetic_summary`).
const SHAPES: u64 = 12;
const QUESTIONS: usize = 50;
/// The p95 retrieval may take on PostgreSQL at 100k memories.
const TARGET_P95: Duration = Duration::from_millis(20);

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let memories = env_or(
        "ENGRAM_BENCH_MEMORIES",
        if quick { 10_000 } else { 100_000 },
    );
    let messages = env_or("ENGRAM_BENCH_MESSAGES", if quick { 2_000 } else { 10_000 });
    let rounds = if quick { 2 } else { 5 };
    let Some(owner) = pg::Owner::new("brain_postgres") else {
        eprintln!("skipped: PostgreSQL is not installed");
        return;
    };
    let mut rng = Rng(0x9057);
    let now = SystemClock.now_ms();
    let records: Vec<MemoryRecord> = (0..memories)
        .map(|_| synthetic_record(&mut rng, USER, now, SHAPES))
        .collect();
    let texts: Vec<String> = (0..messages)
        .map(|i| {
            if i % 3 == 0 {
                agent_question(&mut rng, i)
            } else {
                let (_, summary) = synthetic_summary(&mut rng, SHAPES);
                summary.replacen("User ", "I ", 1)
            }
        })
        .collect();
    let questions: Vec<String> = (0..QUESTIONS)
        .map(|i| agent_question(&mut rng, i))
        .collect();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let on_sqlite = Brain::open(
        &dir.path().join("brain.db"),
        Arc::new(SystemClock),
        EventBus::default(),
    )
    .expect("the Second Brain on SQLite");
    let on_postgres = Brain::postgres(&owner.url(), Arc::new(SystemClock), EventBus::default())
        .expect("the Second Brain on PostgreSQL");

    let mut table = Table::default();
    table.section(&format!(
        "retrieval: one user with {}k memories and {}k messages, {QUESTIONS} questions x {rounds} rounds; baseline: the same Second Brain on SQLite in the same run",
        memories / 1_000,
        messages / 1_000
    ));
    let mut timings = Vec::new();
    for (name, brain) in [("SQLite", &on_sqlite), ("PostgreSQL", &on_postgres)] {
        eprintln!("{name}: storing {memories} memories and {messages} messages...");
        let started = Instant::now();
        brain
            .store()
            .write(engram::sql::Actor::System, |tx| {
                for record in &records {
                    q::insert(tx, record, "import")?;
                }
                Ok(())
            })
            .expect("insert the memories");
        for (i, text) in texts.iter().enumerate() {
            let conversation = format!("conv_{}", i / 20);
            brain
                .record_message_at(USER, &conversation, Role::User, None, text, now - 1_000)
                .expect("record a message");
        }
        eprintln!("  stored in {:.1} s", started.elapsed().as_secs_f64());
        brain.warm().expect("build the memory index");
        eprintln!("{name}: timing retrieval...");
        let mut samples = Vec::with_capacity(QUESTIONS * rounds);
        for _ in 0..rounds {
            for question in &questions {
                let started = Instant::now();
                std::hint::black_box(brain.retrieve(USER, question).expect("retrieve"));
                samples.push(started.elapsed());
            }
        }
        samples.sort();
        timings.push((percentile(&samples, 0.50), percentile(&samples, 0.95)));
    }
    let ((sqlite_p50, sqlite_p95), (pg_p50, pg_p95)) = (timings[0], timings[1]);
    table.row(
        "Brain::retrieve p50 / p95, PostgreSQL",
        &format!("{} / {}", ms(pg_p50), ms(pg_p95)),
        &format!("{} / {} SQLite", ms(sqlite_p50), ms(sqlite_p95)),
        &format!(
            "p50 {}, p95 {}",
            ratio(pg_p50, sqlite_p50),
            ratio(pg_p95, sqlite_p95)
        ),
    );
    table.row(
        "  p95 on PostgreSQL against the target",
        &ms(pg_p95),
        &format!("target <= {}", ms(TARGET_P95)),
        if pg_p95 <= TARGET_P95 {
            "within target"
        } else {
            "OVER TARGET"
        },
    );
    println!();
    println!(
        "Retrieval on PostgreSQL ({} run)",
        if quick { "quick" } else { "full" }
    );
    table.print();
}

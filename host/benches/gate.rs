//! Tool-permission gate latency, p50/p95, each beside a baseline measured in the same
//! process (`cargo bench -p engram-host --bench gate`):
//!
//! 1. the decision alone: the rules on a turn held in memory under a lock (what the
//!    gate cost before turns moved into its database), no audit row;
//! 2. `Gate::decide` on SQLite: the turn read (and changed) and the audit row written
//!    in one transaction (WAL, `synchronous = NORMAL`), against 1.;
//! 3. `Gate::decide` from 4 threads at once, each in its own turn, against 2.;
//! 4. the same audit row written with `synchronous = FULL` (an fsync per decision,
//!    what the audit log does not do), against 2.: the price of the choice;
//! 5. `Gate::decide` on PostgreSQL (a throwaway cluster, `tests/pg.rs`, fsync off as
//!    the tests run it; skipped where PostgreSQL is not installed), against 2.
//!
//! Nothing is asserted: the figures are printed.

// This bench uses only some of the helpers shared by the benches.
#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../../tests/pg.rs"]
mod pg;

use common::{percentile, time_n};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engram::gate::policy::{self, Policy, SkillGrant};
use engram::gate::turns::NewTurn;
use engram::gate::{AuditLog, FixedPolicy, Gate, Retention};
use engram::paths::DataDir;
use engram::time::SystemClock;

const N: usize = 5_000;
const THREADS: usize = 4;

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.2} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn row(name: &str, samples: &[Duration], baseline: Option<(&str, &[Duration])>) {
    let p50 = percentile(samples, 0.5);
    let p95 = percentile(samples, 0.95);
    let ratio = baseline
        .map(|(label, b)| {
            let b50 = percentile(b, 0.5).as_secs_f64().max(1e-12);
            format!("{:.1}x {label} (p50)", p50.as_secs_f64() / b50)
        })
        .unwrap_or_default();
    println!(
        "{name:<44} p50 {:>10}  p95 {:>10}  {ratio}",
        fmt(p50),
        fmt(p95)
    );
}

fn grant() -> Option<SkillGrant> {
    Some(SkillGrant {
        skill: "web-search".into(),
        allowed_tools: vec!["fetch_url".into()],
        granted_tools: vec!["fetch_url".into()],
    })
}

fn new_turn(user: &str) -> NewTurn {
    NewTurn {
        user: user.into(),
        conversation_id: Some("conv_bench".into()),
        channel: Some("bench".into()),
        opened_by: "agent".into(),
        skill: grant(),
        // The host the bench's calls fetch from, as if the message named it.
        destinations: vec!["example.org".into()],
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = r#"{"url":"https://example.org/search?q=engram","timeout":10}"#;

    let data_dir = DataDir::new(dir.path().join("data"));
    let gate = Arc::new(
        Gate::open(
            &data_dir,
            Arc::new(FixedPolicy(Arc::new(Policy::default()))),
            Arc::new(SystemClock),
        )
        .expect("gate"),
    );
    let turn = gate.open_turn(new_turn("u")).expect("turn");

    // 1. The decision alone.
    let policy = Policy::default();
    let held = Mutex::new(turn.clone());
    let alone = time_n(N * 4, || {
        let t = held.lock().expect("lock");
        let d = policy::decide(
            &policy,
            t.skill.as_ref(),
            t.approved_tool("fetch_url"),
            "fetch_url",
            &serde_json::Value::Null,
        );
        std::hint::black_box(d);
    });

    // 2. With the turn in the database and the audit row.
    let audited = time_n(N, || {
        std::hint::black_box(gate.decide(&turn.id, &turn.user, "fetch_url", args));
    });

    // 3. Concurrent turns.
    let mut concurrent: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let gate = gate.clone();
                scope.spawn(move || {
                    let turn = gate.open_turn(new_turn(&format!("u{i}"))).expect("turn");
                    time_n(N / THREADS, || {
                        std::hint::black_box(gate.decide(&turn.id, &turn.user, "fetch_url", args));
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    concurrent.sort();

    // 4. The same row at synchronous = FULL.
    let conn = rusqlite::Connection::open(dir.path().join("full.db")).expect("open");
    let _: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("sync");
    conn.execute_batch(
        "CREATE TABLE decisions (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER, turn_id TEXT, tool TEXT, decision TEXT, reason_code TEXT, reason TEXT, args_summary TEXT)",
    )
    .expect("table");
    let full = time_n(N / 5, || {
        conn.execute(
            "INSERT INTO decisions (at, turn_id, tool, decision, reason_code, reason, args_summary) VALUES (1, ?1, 'fetch_url', 'allow', 'skill-grant', 'granted', ?2)",
            rusqlite::params![turn.id, args],
        )
        .expect("insert");
    });

    // 5. On PostgreSQL.
    let on_postgres = pg::Owner::new("gate_bench").map(|owner| {
        let audit = AuditLog::postgres(&owner.url(), Retention::default(), 0).expect("audit");
        let gate = Gate::new(
            audit,
            Arc::new(FixedPolicy(Arc::new(Policy::default()))),
            Arc::new(SystemClock),
        );
        let turn = gate.open_turn(new_turn("u")).expect("turn");
        let samples = time_n(N, || {
            std::hint::black_box(gate.decide(&turn.id, &turn.user, "fetch_url", args));
        });
        (owner, samples)
    });

    println!();
    println!("Tool-permission gate ({N} decisions per row; audit log in a temp dir)");
    row("1. decision alone (lookup + rules)", &alone, None);
    row(
        "2. Gate::decide (+ audit row, NORMAL)",
        &audited,
        Some(("decision alone", &alone)),
    );
    row(
        &format!("3. Gate::decide, {THREADS} threads"),
        &concurrent,
        Some(("one thread", &audited)),
    );
    row(
        "4. audit row at synchronous=FULL",
        &full,
        Some(("Gate::decide", &audited)),
    );
    match &on_postgres {
        Some((_, samples)) => row(
            "5. Gate::decide on PostgreSQL",
            samples,
            Some(("on SQLite", &audited)),
        ),
        None => println!("5. skipped: PostgreSQL is not installed"),
    }
}

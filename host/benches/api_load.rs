//! REST API load benchmark: `cargo bench -p engram-host --bench api_load` (`-- --quick` for
//! a short run). It drives the real release daemon as a second process over loopback
//! and prints one table:
//!
//! 1. A temporary data directory gets 10,000 synthetic memories (varied types and
//!    summaries from the word lists of benches/common), written with the library
//!    before `engram serve --listen 127.0.0.1:0` starts on it.
//! 2. Mixed load: 32 keep-alive connections (one client each) for 30 s, each sending
//!    its next request as soon as the last one answered: 40% search (half keyword
//!    queries as typed in a search box, half agent questions), 40% GET by id, 10% POST
//!    add, 10% PUT edit. Requests/s, p50 and p99 latency overall and per operation.
//! 3. The ceiling: GET /healthz on the same connections for the same time; the ratio
//!    mixed / healthz is what to compare between machines. The load generator runs in
//!    this process, on the same cores as the daemon, in both phases.
//! 4. Errors (any non-2xx or transport error, 10 s timeout per request) must be zero:
//!    the run prints them loudly and exits non-zero otherwise.
//! 5. The daemon's peak RSS (VmHWM) after both phases, and its CPU time per phase.
//! 6. Startup: with the compile cache warmed by the run above, the daemon is started
//!    N=10 times; spawn -> first 200 on /healthz (median and max) against a 100 ms
//!    target. The port is learned from the `listening on` line (the socket is bound
//!    by then, so a poll cannot miss the start of serving), then /healthz is polled
//!    every ~1 ms.
//! 7. Every daemon is stopped with SIGTERM and must exit 0.
//! 8. PostgreSQL (issue 32), in the same run, on a throwaway cluster (`tests/pg.rs`;
//!    skipped, and said so, where PostgreSQL is not installed): the same memories in a
//!    database of their own, the same mixed load against one daemon on it, then
//!    against two daemons on it (each with a data directory of its own, the
//!    connections split between them). Throughput beside SQLite's one daemon and the
//!    one PostgreSQL daemon's. Set ENGRAM_LOAD_POSTGRES=0 to skip it.
//!
//! Overrides: ENGRAM_LOAD_SECS (per load phase, default 30), ENGRAM_LOAD_CONNECTIONS
//! (default 32), ENGRAM_LOAD_STARTS (default 10), ENGRAM_LOAD_MEMORIES (default 10000),
//! ENGRAM_LOAD_WRITE_PERCENT (default 20; 0 gives a read-only diagnostic run).
//! `--quick` makes the defaults 3 s and 3 starts.

// This bench uses only some of the helpers shared by the benches.
#[allow(dead_code)]
mod common;
// The e2e tests' throwaway PostgreSQL cluster, of which this uses a database.
#[allow(dead_code)]
#[path = "../../tests/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::memory::bench::q;
use engram::memory::brain_db_path;
use engram::memory::record::MemoryRecord;
use engram::memory::{Brain, DEFAULT_USER};
use engram::time::{Clock, SystemClock};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use common::daemon::{Daemon, cpu_seconds};
use common::{
    ACTIVITIES, ADJECTIVES, FOODS, NAMES, PLACES, RELATIONS, Rng, THINGS, Table, agent_question,
    ms, ratio, synthetic_detail, synthetic_record, synthetic_summary,
};

/// Every request's deadline, connect to last body byte.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The startup target: spawn -> first 200 on /healthz with a warm compile cache.
const STARTUP_TARGET: Duration = Duration::from_millis(100);
/// Results per search: what a search box or an agent asks for.
const SEARCH_LIMIT: &str = "10";
/// Search queries drawn from (half keywords, half agent questions).
const QUERIES: usize = 400;
/// The summary shapes of seeded and written memories (`common::synthetic_summary`):
/// all twelve, as in every earlier run, so that the same seed still gives the same data.
const SUMMARY_SHAPES: u64 = 12;

struct Settings {
    secs: u64,
    connections: usize,
    starts: usize,
    memories: usize,
    /// Percent of the mixed load that writes (half add, half edit); the rest reads.
    write_percent: u64,
    /// Whether to run the mixed load on PostgreSQL too.
    postgres: bool,
}

impl Settings {
    fn from_env(quick: bool) -> Settings {
        Settings {
            secs: env_or("ENGRAM_LOAD_SECS", if quick { 3 } else { 30 }),
            connections: env_or("ENGRAM_LOAD_CONNECTIONS", 32),
            starts: env_or("ENGRAM_LOAD_STARTS", if quick { 3 } else { 10 }),
            postgres: env_or("ENGRAM_LOAD_POSTGRES", 1) != 0,
            memories: env_or("ENGRAM_LOAD_MEMORIES", 10_000),
            write_percent: env_or("ENGRAM_LOAD_WRITE_PERCENT", 20),
        }
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .ok()
            .unwrap_or_else(|| panic!("{name}={value:?} is not a valid number")),
        Err(_) => default,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; only `--quick` matters here.
    let quick = std::env::args().any(|a| a == "--quick");
    let settings = Settings::from_env(quick);
    assert!(
        settings.secs > 0 && settings.connections > 0 && settings.starts > 0,
        "ENGRAM_LOAD_SECS, ENGRAM_LOAD_CONNECTIONS and ENGRAM_LOAD_STARTS must be positive"
    );
    assert!(
        settings.write_percent <= 100,
        "ENGRAM_LOAD_WRITE_PERCENT must be 0 to 100"
    );
    let started = Instant::now();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_engram"));
    let data = tempfile::tempdir().expect("temporary data directory");
    let mut rng = Rng(0x10AD);
    let token = format!("api-load-bench-{:016x}", rng.next());

    eprintln!(
        "seeding {} memories into {}...",
        settings.memories,
        data.path().display()
    );
    let seeding = Instant::now();
    let now = SystemClock.now_ms();
    let records: Vec<MemoryRecord> = (0..settings.memories)
        .map(|_| synthetic_record(&mut rng, DEFAULT_USER, now, SUMMARY_SHAPES))
        .collect();
    let ids = seed(data.path(), &records);
    eprintln!("  seeded in {:.1} s", seeding.elapsed().as_secs_f64());

    // The first start compiles the embedded strategies into {data_dir}/cache.
    let (daemon, cold) = Daemon::start(&bin, data.path(), &token);
    eprintln!(
        "daemon pid {} on {} (cold start {})",
        daemon.pid,
        daemon.addr,
        ms1(cold.first_200)
    );
    let base = format!("http://{}", daemon.addr);
    let searches = search_queries(&mut rng, QUERIES);
    let workload = Arc::new(Workload {
        bases: vec![base.clone()],
        token: token.clone(),
        write_percent: settings.write_percent,
        searches: searches.clone(),
        ids: ids.clone(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(sanity_check(&workload));

    let duration = Duration::from_secs(settings.secs);
    eprintln!(
        "ceiling: GET /healthz, {} connections, {} s...",
        settings.connections, settings.secs
    );
    // One phase of load, with the CPU time the daemon and this process spent on it.
    let measured = |mix: Mix| {
        let cpu_before = daemon.cpu();
        let client_before = cpu_seconds("self");
        let phase = runtime.block_on(run_phase(&workload, mix, settings.connections, duration));
        (
            phase,
            daemon.cpu() - cpu_before,
            cpu_seconds("self") - client_before,
        )
    };
    let (health, health_cpu, health_client_cpu) = measured(Mix::Healthz);
    let mix_name = format!(
        "{}% reads / {}% writes",
        100 - settings.write_percent,
        settings.write_percent
    );
    eprintln!(
        "mixed load: {mix_name}, {} connections, {} s...",
        settings.connections, settings.secs
    );
    let (mixed, mixed_cpu, mixed_client_cpu) = measured(Mix::Mixed);
    let memory = daemon.memory();
    let load_exit = daemon.stop();

    // The same load on PostgreSQL: one daemon, then two on the same database.
    let on_postgres = if settings.postgres {
        match pg::Owner::new("api_load") {
            Some(owner) => {
                let url = owner.url();
                eprintln!("seeding the same memories into PostgreSQL...");
                seed_postgres(&url, &records);
                let dirs = [
                    tempfile::tempdir().expect("a data directory"),
                    tempfile::tempdir().expect("a data directory"),
                ];
                let env = [("ENGRAM_DATABASE_URL", url.as_str())];
                let mut daemons = Vec::new();
                let mut phases = Vec::new();
                for dir in &dirs {
                    let (daemon, _) = Daemon::start_with(&bin, dir.path(), &token, &env);
                    daemons.push(daemon);
                    let workload = Arc::new(Workload {
                        bases: daemons
                            .iter()
                            .map(|d| format!("http://{}", d.addr))
                            .collect(),
                        token: token.clone(),
                        write_percent: settings.write_percent,
                        searches: searches.clone(),
                        ids: ids.clone(),
                    });
                    runtime.block_on(sanity_check(&workload));
                    eprintln!(
                        "mixed load on PostgreSQL, {} daemon(s), {} connections, {} s...",
                        daemons.len(),
                        settings.connections,
                        settings.secs
                    );
                    let cpu_before: f64 = daemons.iter().map(Daemon::cpu).sum();
                    let phase = runtime.block_on(run_phase(
                        &workload,
                        Mix::Mixed,
                        settings.connections,
                        duration,
                    ));
                    let cpu: f64 = daemons.iter().map(Daemon::cpu).sum::<f64>() - cpu_before;
                    let connections = connections_to(&owner.db);
                    let peak_mib = daemons
                        .iter()
                        .map(|d| d.memory().peak_kib as f64 / 1024.0)
                        .fold(0.0, f64::max);
                    phases.push(PostgresPhase {
                        phase,
                        cpu,
                        connections,
                        peak_mib,
                    });
                }
                let exits: Vec<ExitStatus> = daemons.into_iter().map(Daemon::stop).collect();
                Some((phases, exits))
            }
            None => {
                eprintln!("PostgreSQL is not installed: the PostgreSQL phases are skipped");
                None
            }
        }
    } else {
        None
    };

    eprintln!(
        "startup: {} starts with a warm compile cache...",
        settings.starts
    );
    let mut startups = Vec::new();
    let mut startup_exits = Vec::new();
    for _ in 0..settings.starts {
        let (daemon, timing) = Daemon::start(&bin, data.path(), &token);
        startups.push(timing);
        startup_exits.push(daemon.stop());
    }

    // -----------------------------------------------------------------------------
    let mut table = Table::default();
    let mixed_total = mixed.total();
    let health_total = health.total();
    table.section(&format!(
        "load: {} connections x {} s per phase, {} memories; baseline: GET /healthz (open, no database) in the same run",
        settings.connections, settings.secs, settings.memories
    ));
    table.row(
        &format!("throughput, mixed {mix_name}"),
        &format!("{:.0} req/s", mixed.per_second()),
        &format!("{:.0} req/s /healthz", health.per_second()),
        &format!(
            "{:.3}x of the ceiling",
            mixed.per_second() / health.per_second()
        ),
    );
    table.row(
        "latency p50 / p99, mixed",
        &format!("{} / {}", ms(mixed_total.p50), ms(mixed_total.p99)),
        &format!(
            "{} / {} /healthz",
            ms(health_total.p50),
            ms(health_total.p99)
        ),
        &format!(
            "p50 {}, p99 {}",
            ratio(mixed_total.p50, health_total.p50),
            ratio(mixed_total.p99, health_total.p99)
        ),
    );
    for op in Op::MIXED {
        let stats = mixed.stats(op);
        table.row(
            &format!("  {} ({}%)", op.label(), op.share(settings.write_percent)),
            &format!("{} / {}", ms(stats.p50), ms(stats.p99)),
            &format!("{} requests", stats.count),
            &format!("{:.0} req/s", stats.count as f64 / mixed.elapsed_secs()),
        );
    }
    table.row(
        "requests completed, mixed / healthz",
        &mixed_total.count.to_string(),
        &health_total.count.to_string(),
        "",
    );
    table.row(
        "errors (non-2xx or transport), mixed",
        &mixed.error_count.to_string(),
        &format!("{} /healthz", health.error_count),
        if mixed.error_count + health.error_count == 0 {
            "ok"
        } else {
            "FAILED"
        },
    );
    table.row(
        "daemon CPU time, mixed phase",
        &format!("{:.1} s", mixed_cpu),
        &format!("{:.1} s /healthz phase", health_cpu),
        &format!(
            "{:.2} / {:.2} cores busy",
            mixed_cpu / mixed.elapsed_secs(),
            health_cpu / health.elapsed_secs()
        ),
    );
    table.row(
        "load generator CPU time (this process, same machine)",
        &format!("{:.1} s", mixed_client_cpu),
        &format!("{:.1} s /healthz phase", health_client_cpu),
        &format!(
            "{:.2} / {:.2} cores busy ({} cores in all)",
            mixed_client_cpu / mixed.elapsed_secs(),
            health_client_cpu / health.elapsed_secs(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
    );
    let mut postgres_failed = false;
    if let Some((phases, exits)) = &on_postgres {
        let one = phases[0].phase.per_second();
        for (daemons, measured) in phases.iter().enumerate() {
            let PostgresPhase {
                phase,
                cpu,
                connections,
                peak_mib,
            } = measured;
            let daemons = daemons + 1;
            let total = phase.total();
            table.row(
                &format!("throughput, mixed, PostgreSQL, {daemons} daemon(s)"),
                &format!("{:.0} req/s", phase.per_second()),
                &format!(
                    "p50 {} / p99 {}, {:.2} cores busy (daemons)",
                    ms(total.p50),
                    ms(total.p99),
                    cpu / phase.elapsed_secs()
                ),
                &if daemons == 1 {
                    format!(
                        "{:.2}x of SQLite's one daemon (target >= 0.5x)",
                        phase.per_second() / mixed.per_second()
                    )
                } else {
                    format!(
                        "{:.2}x of one PostgreSQL daemon (target >= 1x)",
                        phase.per_second() / one
                    )
                },
            );
            for op in Op::MIXED {
                let stats = phase.stats(op);
                table.row(
                    &format!("  {}", op.label()),
                    &format!("{} / {}", ms(stats.p50), ms(stats.p99)),
                    &format!("{} requests", stats.count),
                    "",
                );
            }
            table.row(
                "  server connections open after the phase / a daemon's peak RSS",
                &connections.to_string(),
                &format!("{peak_mib:.1} MiB"),
                &format!("{} connections per daemon", connections / daemons as i64),
            );
            table.row(
                "  errors (non-2xx or transport)",
                &phase.error_count.to_string(),
                "",
                if phase.error_count == 0 {
                    "ok"
                } else {
                    "FAILED"
                },
            );
            postgres_failed |= phase.error_count > 0;
            if phase.error_count > 0 {
                for error in &phase.first_errors {
                    eprintln!("!!!!!!!! PostgreSQL, {daemons} daemon(s): {error}");
                }
            }
        }
        postgres_failed |= exits.iter().any(|e| !e.success());
        table.row(
            "  PostgreSQL daemons' exits after SIGTERM",
            &exits.iter().map(exit_text).collect::<Vec<_>>().join(", "),
            "",
            if exits.iter().all(ExitStatus::success) {
                "ok"
            } else {
                "FAILED"
            },
        );
    }
    table.row(
        "daemon peak RSS (VmHWM) / RSS at the end",
        &format!("{:.1} MiB", memory.peak_kib as f64 / 1024.0),
        &format!("{:.1} MiB", memory.rss_kib as f64 / 1024.0),
        "",
    );
    table.row(
        "daemon exit after SIGTERM",
        &exit_text(&load_exit),
        "",
        if load_exit.success() { "ok" } else { "FAILED" },
    );

    let mut first_200: Vec<Duration> = startups.iter().map(|t| t.first_200).collect();
    first_200.sort();
    let mut listening: Vec<Duration> = startups.iter().map(|t| t.listening).collect();
    listening.sort();
    let median = median_of(&first_200);
    let max = first_200[first_200.len() - 1];
    table.section(&format!(
        "startup: spawn -> first 200 on /healthz, {} starts, warm compile cache, {} memories",
        settings.starts, settings.memories
    ));
    table.row(
        "median / max",
        &format!("{} / {}", ms1(median), ms1(max)),
        &format!("target <= {}", ms1(STARTUP_TARGET)),
        if max <= STARTUP_TARGET {
            "within target"
        } else if median <= STARTUP_TARGET {
            "median within target, max OVER"
        } else {
            "OVER TARGET"
        },
    );
    table.row(
        "  of which spawn -> `listening on` line, median / max",
        &format!(
            "{} / {}",
            ms1(median_of(&listening)),
            ms1(listening[listening.len() - 1])
        ),
        "",
        "",
    );
    table.row(
        "  cold start (empty cache: compiles the strategies)",
        &ms1(cold.first_200),
        "",
        &format!(
            "{:.1}x the warm median",
            cold.first_200.as_secs_f64() / median.as_secs_f64()
        ),
    );
    let bad_exits: Vec<String> = startup_exits
        .iter()
        .filter(|s| !s.success())
        .map(exit_text)
        .collect();
    table.row(
        "  exits after SIGTERM",
        &format!(
            "{} of {} exit 0",
            startups.len() - bad_exits.len(),
            startups.len()
        ),
        "",
        if bad_exits.is_empty() { "ok" } else { "FAILED" },
    );

    println!();
    println!(
        "REST API load benchmark ({} run, {:.0} s, release daemon {})",
        if settings.secs >= 30 { "full" } else { "short" },
        started.elapsed().as_secs_f64(),
        bin.display()
    );
    table.print();

    let mut failed = postgres_failed;
    for (phase, result) in [("mixed", &mixed), ("healthz", &health)] {
        if result.error_count > 0 {
            failed = true;
            eprintln!();
            eprintln!(
                "!!!!!!!! {} ERRORS in the {phase} phase (must be 0); the first ones:",
                result.error_count
            );
            for error in &result.first_errors {
                eprintln!("!!!!!!!!   {error}");
            }
        }
    }
    if !load_exit.success() || !bad_exits.is_empty() {
        failed = true;
        eprintln!();
        eprintln!(
            "!!!!!!!! the daemon did not exit 0 after SIGTERM: load daemon {}, startup daemons {:?}",
            exit_text(&load_exit),
            bad_exits
        );
    }
    if failed {
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------
// The data

/// Writes `records` (the default user's) into the Second Brain's database of
/// `data_dir`, in one transaction; returns their ids.
fn seed(data_dir: &Path, records: &[MemoryRecord]) -> Vec<String> {
    let path = brain_db_path(data_dir);
    std::fs::create_dir_all(path.parent().expect("database directory"))
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    let brain = Brain::open(
        &path,
        Arc::new(SystemClock),
        engram::events::EventBus::default(),
    )
    .unwrap_or_else(|e| panic!("cannot open the Second Brain at {}: {e}", path.display()));
    insert(&brain, records);
    brain
        .store()
        .checkpoint()
        .expect("checkpoint the seeded database");
    records.iter().map(|r| r.id.clone()).collect()
}

/// What one PostgreSQL phase measured.
struct PostgresPhase {
    phase: PhaseResult,
    /// The daemons' CPU time.
    cpu: f64,
    /// Connections to the database open when the phase ended (every daemon's).
    connections: i64,
    /// The largest peak RSS among the daemons.
    peak_mib: f64,
}

/// The connections open to `db`, as the server counts them (this count's own aside).
fn connections_to(db: &pg::PgDatabase) -> i64 {
    let mut client = postgres::Client::connect(&db.conninfo(), postgres::NoTls)
        .expect("connect as the superuser");
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
             AND pid <> pg_backend_pid()",
            &[],
        )
        .expect("count the connections")
        .get(0)
}

/// Writes `records` into the Second Brain on the PostgreSQL database at `url`.
fn seed_postgres(url: &str, records: &[MemoryRecord]) {
    let brain = Brain::postgres(
        url,
        Arc::new(SystemClock),
        engram::events::EventBus::default(),
    )
    .unwrap_or_else(|e| panic!("cannot open the Second Brain on PostgreSQL: {e}"));
    insert(&brain, records);
}

fn insert(brain: &Brain, records: &[MemoryRecord]) {
    brain
        .store()
        .write(engram::sql::Actor::System, |tx| {
            for record in records {
                q::insert(tx, record, "import")?;
            }
            Ok(())
        })
        .expect("insert the synthetic memories");
}

/// What users type in a search box (a word or two) and what agents send (a whole
/// question), half each.
fn search_queries(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 10 {
            0 => rng.pick(FOODS).to_string(),
            1 => format!("{} {}", rng.pick(ACTIVITIES), rng.pick(PLACES)),
            2 => format!("{} {}", rng.pick(RELATIONS), rng.pick(NAMES)),
            3 => rng.pick(THINGS).to_string(),
            4 => format!("{} {}", rng.pick(ADJECTIVES), rng.pick(THINGS)),
            _ => agent_question(rng, i),
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// The daemon

fn exit_text(status: &ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit {code}"),
        None => format!("{status}"),
    }
}

// ---------------------------------------------------------------------------------
// The load

struct Workload {
    /// The daemons' addresses: worker `n` sends to `bases[n % bases.len()]`.
    bases: Vec<String>,
    token: String,
    write_percent: u64,
    ids: Vec<String>,
    searches: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mix {
    Mixed,
    Healthz,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Search,
    Get,
    Add,
    Edit,
    Healthz,
}

impl Op {
    const MIXED: [Op; 4] = [Op::Search, Op::Get, Op::Add, Op::Edit];
    const ALL: [Op; 5] = [Op::Search, Op::Get, Op::Add, Op::Edit, Op::Healthz];

    fn index(self) -> usize {
        self as usize
    }

    fn label(self) -> &'static str {
        match self {
            Op::Search => "GET /api/brain/memory/search?q=..&limit=10",
            Op::Get => "GET /api/brain/memory/{id}",
            Op::Add => "POST /api/brain/memory",
            Op::Edit => "PUT /api/brain/memory/{id}",
            Op::Healthz => "GET /healthz",
        }
    }

    /// The operation's share of the mixed load, in percent: reads split evenly
    /// between search and get, writes between add and edit.
    fn share(self, write_percent: u64) -> f64 {
        let writes = write_percent as f64;
        match self {
            Op::Search | Op::Get => (100.0 - writes) / 2.0,
            Op::Add | Op::Edit => writes / 2.0,
            Op::Healthz => 0.0,
        }
    }

    fn pick(mix: Mix, write_percent: u64, rng: &mut Rng) -> Op {
        if mix == Mix::Healthz {
            return Op::Healthz;
        }
        // Draws in 0..200 so that odd percentages split evenly too.
        let reads = 2 * (100 - write_percent);
        let draw = rng.below(200);
        if draw < reads / 2 {
            Op::Search
        } else if draw < reads {
            Op::Get
        } else if draw < reads + write_percent {
            Op::Add
        } else {
            Op::Edit
        }
    }
}

/// What one phase measured: latencies in microseconds per operation.
struct PhaseResult {
    samples: [Vec<u32>; 5],
    elapsed: Duration,
    error_count: usize,
    first_errors: Vec<String>,
}

struct Stats {
    count: usize,
    p50: Duration,
    p99: Duration,
}

impl PhaseResult {
    fn elapsed_secs(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }

    fn per_second(&self) -> f64 {
        self.total().count as f64 / self.elapsed_secs()
    }

    fn stats(&self, op: Op) -> Stats {
        stats(self.samples[op.index()].clone())
    }

    fn total(&self) -> Stats {
        stats(self.samples.iter().flatten().copied().collect())
    }
}

fn stats(mut micros: Vec<u32>) -> Stats {
    micros.sort_unstable();
    let at = |q: f64| -> Duration {
        if micros.is_empty() {
            return Duration::ZERO;
        }
        let i = ((micros.len() as f64 * q).ceil() as usize).clamp(1, micros.len()) - 1;
        Duration::from_micros(micros[i].into())
    };
    Stats {
        count: micros.len(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// Checks the daemon serves the seeded Second Brain before any timing.
async fn sanity_check(w: &Workload) {
    for base in &w.bases {
        sanity_check_one(w, base).await;
    }
}

async fn sanity_check_one(w: &Workload, base: &str) {
    let client = client();
    let health: Value = client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .expect("GET /healthz")
        .json()
        .await
        .expect("/healthz answers JSON");
    assert_eq!(
        health["second_brain"]["enabled"],
        Value::Bool(true),
        "the daemon does not serve the Second Brain: {health}"
    );
    let first = &w.ids[0];
    let record: Value = client
        .get(format!("{base}/api/brain/memory/{first}"))
        .bearer_auth(&w.token)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .unwrap_or_else(|e| panic!("GET of seeded memory {first} failed: {e}"))
        .json()
        .await
        .expect("a memory as JSON");
    assert_eq!(record["id"], Value::String(first.clone()));
}

/// One client per connection: HTTP/1.1 keep-alive, no proxy, a deadline per request.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .http1_only()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(1)
        .connect_timeout(Duration::from_secs(5))
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("HTTP client")
}

/// `connections` workers, each on its own keep-alive connection, sending requests
/// back to back for `duration`.
async fn run_phase(
    workload: &Arc<Workload>,
    mix: Mix,
    connections: usize,
    duration: Duration,
) -> PhaseResult {
    let barrier = Arc::new(Barrier::new(connections + 1));
    let mut workers = Vec::with_capacity(connections);
    for n in 0..connections {
        let workload = workload.clone();
        let barrier = barrier.clone();
        let seed = 0xBEEF ^ ((n as u64 + 1) << 20) ^ (mix as u64);
        let base = workload.bases[n % workload.bases.len()].clone();
        workers.push(tokio::spawn(worker(
            workload, base, mix, seed, barrier, duration,
        )));
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut result = PhaseResult {
        samples: Default::default(),
        elapsed: Duration::ZERO,
        error_count: 0,
        first_errors: Vec::new(),
    };
    for worker in workers {
        let done = worker.await.expect("a load worker panicked");
        for op in Op::ALL {
            result.samples[op.index()].extend_from_slice(&done.samples[op.index()]);
        }
        result.error_count += done.error_count;
        for error in done.first_errors {
            if result.first_errors.len() < 10 {
                result.first_errors.push(error);
            }
        }
    }
    result.elapsed = started.elapsed();
    result
}

async fn worker(
    w: Arc<Workload>,
    base: String,
    mix: Mix,
    seed: u64,
    barrier: Arc<Barrier>,
    duration: Duration,
) -> PhaseResult {
    let client = client();
    let mut rng = Rng(seed);
    // Open the connection before the clock starts.
    if let Err(e) = client.get(format!("{base}/healthz")).send().await {
        panic!("a load worker cannot reach {base}: {e}");
    }
    barrier.wait().await;
    let deadline = Instant::now() + duration;
    let mut result = PhaseResult {
        samples: Default::default(),
        elapsed: duration,
        error_count: 0,
        first_errors: Vec::new(),
    };
    while Instant::now() < deadline {
        let op = Op::pick(mix, w.write_percent, &mut rng);
        let request = build(&client, &w, &base, op, &mut rng);
        let started = Instant::now();
        let outcome = send(request).await;
        let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
        match outcome {
            Ok(()) => result.samples[op.index()].push(micros),
            Err(e) => {
                result.error_count += 1;
                if result.first_errors.len() < 10 {
                    result.first_errors.push(format!("{}: {e}", op.label()));
                }
            }
        }
    }
    result
}

fn build(
    client: &reqwest::Client,
    w: &Workload,
    base: &str,
    op: Op,
    rng: &mut Rng,
) -> reqwest::RequestBuilder {
    let memory_url = |id: &str| format!("{base}/api/brain/memory/{id}");
    let request = match op {
        Op::Healthz => return client.get(format!("{base}/healthz")),
        Op::Search => {
            let query = &w.searches[rng.below(w.searches.len() as u64) as usize];
            client
                .get(format!("{base}/api/brain/memory/search"))
                .query(&[("q", query.as_str()), ("limit", SEARCH_LIMIT)])
        }
        Op::Get => client.get(memory_url(pick_id(w, rng))),
        Op::Add => {
            let (memory_type, summary) = synthetic_summary(rng, SUMMARY_SHAPES);
            let mut body = json!({
                "type": memory_type.as_str(),
                "summary": summary,
            });
            if rng.below(3) == 0 {
                body["detail"] = json!(synthetic_detail(rng));
            }
            client.post(format!("{base}/api/brain/memory")).json(&body)
        }
        Op::Edit => {
            let (memory_type, summary) = synthetic_summary(rng, SUMMARY_SHAPES);
            let body = json!({
                "type": memory_type.as_str(),
                "summary": summary,
                "importance": rng.below(101) as f32 / 100.0,
            });
            client.put(memory_url(pick_id(w, rng))).json(&body)
        }
    };
    request.bearer_auth(&w.token)
}

fn pick_id<'a>(w: &'a Workload, rng: &mut Rng) -> &'a str {
    &w.ids[rng.below(w.ids.len() as u64) as usize]
}

/// Sends and reads the whole body; anything but a 2xx is an error.
async fn send(request: reqwest::RequestBuilder) -> Result<(), String> {
    let response = request.send().await.map_err(|e| error_chain(&e))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| error_chain(&e))?;
    if status.is_success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&body);
        Err(format!(
            "HTTP {status}: {}",
            text.chars().take(300).collect::<String>()
        ))
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

// ---------------------------------------------------------------------------------
// Output

/// The median of sorted durations (the mean of the middle two for an even count).
fn median_of(sorted: &[Duration]) -> Duration {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}

/// Milliseconds to a tenth: the startup figures (latencies use `common::ms`).
fn ms1(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

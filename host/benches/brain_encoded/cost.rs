//! c and d with the sentence encoder (issue 29, point 5): what the model costs.
//!
//! `latency-model`: one user with 100k memories and 1M transcript messages (quick: 10k
//! and 100k), the store of section c (same seed) with a vector of the model's version
//! for every row, and `Brain::retrieve` p50/p95 with the model (the message embedded
//! in it), with the vector a turn hands it (`retrieve_embedded`, the turn path), and
//! without the model on the same store; the database size per 100k rows with the
//! vectors against without, and the process's resident memory before the model is
//! loaded and after the timed rounds. The real model's vectors of 1.1M texts would
//! take hours on one core, so each row's vector is a seeded random unit vector of the
//! model's length: retrieval reads and scores it as it would the model's (the
//! candidates come from bm25; a vector only changes their order), so the cost is the
//! one measured, the ranking is not. The store is built once and kept under
//! `target/tmp/`; each run works on a copy (retrieval marks what it injects).
//!
//! `ingestion-model`: messages recorded through `record_message` (one durable
//! transaction each), then the vector worker (`Brain::embed_pending`) run until
//! nothing lacks a vector: the rate at which messages become searchable with their
//! vectors, against the same messages recorded without a model (searchable by bm25
//! once recorded). Run on one core: `RAYON_NUM_THREADS=1 taskset -c 0`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::embed::encoder::{BATCH, Encoder};
use engram_strategies::model::Role;
use rusqlite::params;

use super::Model;
use crate::common::daemon::cpu_seconds;
use crate::common::{Rng, Table, agent_question, cpu_time, ms, ratio};
use crate::{
    ACTOR, MESSAGES_PER_CONVERSATION, NOW, Percentiles, TestBrain, Vocabulary, Workload,
    bulk_messages, database_bytes, synthetic_memory, synthetic_message,
};

/// Bumped when the cached store's content changes, so an old cache is not reused.
const STORE_FORMAT: u32 = 2;

/// The process's resident memory now, in bytes (VmRSS).
fn resident_bytes() -> u64 {
    status_bytes("VmRSS:")
}

/// A size of /proc/self/status (`VmRSS:`, `VmHWM:` the peak), in bytes.
fn status_bytes(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Wall-clock and CPU percentiles of `f`, once per query per round after one untimed
/// round.
fn both_percentiles(
    queries: &[String],
    rounds: usize,
    mut f: impl FnMut(&str),
) -> (Percentiles, Percentiles) {
    for query in queries {
        f(query);
    }
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for query in queries {
            let (started, cpu_started) = (Instant::now(), cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID));
            f(query);
            wall.push(started.elapsed());
            cpu.push(cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID) - cpu_started);
        }
    }
    (of(wall), of(cpu))
}

fn of(mut samples: Vec<Duration>) -> Percentiles {
    samples.sort();
    Percentiles {
        p50: samples[samples.len() / 2],
        p95: samples[samples.len() * 95 / 100],
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The cached store (built on the first run) and its size before the vectors.
struct Cached {
    db: PathBuf,
    bytes_without_vectors: u64,
}

/// Section c's user (same seed, same draws) with a vector of `version` for every
/// memory and message, built once under target/tmp.
fn cached_store(memories: usize, messages: usize, version: &str, dims: usize) -> Cached {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "brain-latency-model-v{STORE_FORMAT}-{memories}-{messages}-{version}"
    ));
    let db = dir.join("second-brain.db");
    let sizes = dir.join("bytes-without-vectors");
    if let Some(bytes) = std::fs::read_to_string(&sizes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|_| db.exists())
    {
        eprintln!("latency-model: the store cached in {}", dir.display());
        return Cached {
            db,
            bytes_without_vectors: bytes,
        };
    }
    let subject = TestBrain::new(NOW);
    // Section c's draws in its order: the queries first, then memories, then messages.
    let mut rng = Rng(0x5EED);
    for i in 0..50 {
        agent_question(&mut rng, i);
    }
    eprintln!("latency-model: storing {memories} memories and {messages} messages...");
    let records: Vec<_> = (0..memories)
        .map(|i| synthetic_memory(&mut rng, ACTOR, i))
        .collect();
    for chunk in records.chunks(10_000) {
        subject.insert(chunk);
    }
    drop(records);
    let vocabulary = Vocabulary::new();
    let texts: Vec<String> = (0..messages)
        .map(|_| synthetic_message(&mut rng, &vocabulary))
        .collect();
    bulk_messages(&subject, ACTOR, &texts);
    drop(texts);
    subject.brain.store().checkpoint().expect("checkpoint");
    let without = database_bytes(subject.brain.store().path().expect("a SQLite store"));

    eprintln!("latency-model: writing a vector for every row...");
    let mut rng = Rng(0x7EC7);
    subject
        .brain
        .store()
        .write(engram::sql::Actor::System, |tx| {
            let tx = tx.as_sqlite().expect("the bench's store is a SQLite file");
            for (table, id_column, source) in [
                ("memory_vectors", "memory_id", "memories"),
                ("message_vectors", "message_id", "messages"),
            ] {
                let ids: Vec<String> = tx
                    .prepare(&format!("SELECT id FROM {source} WHERE user_id = ?1"))?
                    .query_map(params![ACTOR], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut insert = tx.prepare(&format!(
                    "INSERT INTO {table} (user_id, {id_column}, model, vector) VALUES (?1, ?2, ?3, ?4)"
                ))?;
                for id in ids {
                    insert.execute(params![ACTOR, id, version, random_unit(&mut rng, dims)])?;
                }
            }
            Ok(())
        })
        .expect("write the vectors");
    subject.brain.store().checkpoint().expect("checkpoint");
    std::fs::create_dir_all(&dir).expect("the cache directory");
    std::fs::copy(subject.brain.store().path().expect("a SQLite store"), &db)
        .expect("cache the store");
    std::fs::write(&sizes, without.to_string()).expect("cache the size");
    Cached {
        db,
        bytes_without_vectors: without,
    }
}

/// A seeded random unit vector as stored (f32 little-endian).
fn random_unit(rng: &mut Rng, dims: usize) -> Vec<u8> {
    let raw: Vec<f32> = (0..dims)
        .map(|_| (rng.below(1 << 24) as f32 / (1 << 23) as f32) - 1.0)
        .collect();
    let norm = raw
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    raw.iter().flat_map(|x| (x / norm).to_le_bytes()).collect()
}

/// A copy of `db` in a directory of its own.
fn copy_of(db: &Path) -> TestBrain {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::copy(db, dir.path().join("second-brain.db")).expect("copy the cached store");
    TestBrain::open(dir, NOW)
}

pub fn latency(model_dir: &Path, quick: bool, table: &mut Table) {
    let Workload {
        memories,
        messages,
        rounds,
        queries,
        ..
    } = Workload::new(quick);

    // What the model adds to the process: loaded, then run on a batch (its activations),
    // before the store is opened.
    let before_model = resident_bytes();
    let started = Instant::now();
    let encoder = Arc::new(Encoder::load(model_dir).expect("the model of ENGRAM_BENCH_MODEL"));
    let load = started.elapsed();
    encoder.embed_batch(&queries).expect("embed the queries");
    let with_model = resident_bytes();
    let peak_with_model = status_bytes("VmHWM:");
    let version = encoder.version();
    let cached = cached_store(memories, messages, &version, encoder.dims());

    let subject = copy_of(&cached.db);
    subject.brain.warm().expect("the memory index");
    eprintln!("latency-model: timing retrieval without the model...");
    let (without, without_cpu) = both_percentiles(&queries, rounds, |text| {
        std::hint::black_box(subject.brain.retrieve(ACTOR, text).expect("retrieve"));
    });
    drop(subject);

    let subject = copy_of(&cached.db);
    subject.brain.warm().expect("the memory index");
    subject.brain.set_encoder(encoder.clone());
    eprintln!("latency-model: timing retrieval with the model...");
    let (with, with_cpu) = both_percentiles(&queries, rounds, |text| {
        std::hint::black_box(subject.brain.retrieve(ACTOR, text).expect("retrieve"));
    });
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| encoder.embed(q).expect("embed"))
        .collect();
    let (embedded, embedded_cpu) = both_percentiles(&queries, rounds, |text| {
        let index = queries.iter().position(|q| q == text).unwrap_or(0);
        let retrieval = subject
            .brain
            .retrieve_embedded(ACTOR, text, Some(&vectors[index]))
            .expect("retrieve");
        std::hint::black_box(retrieval);
    });
    let (embed_only, embed_only_cpu) = both_percentiles(&queries, rounds, |text| {
        std::hint::black_box(encoder.embed(text).expect("embed"));
    });

    table.section(&format!(
        "c with the model: one user with {}k memories and {}k messages, every row with a vector ({} queries x {rounds} rounds)",
        memories / 1_000,
        messages / 1_000,
        queries.len()
    ));
    with.row(
        table,
        "retrieval p50 / p95 with the model (Brain::retrieve, the message embedded in it)",
        &without,
        "without",
    );
    embedded.row(
        table,
        "  with the turn's vector (retrieve_embedded: no embedding)",
        &without,
        "without",
    );
    table.row(
        "  the message's embedding alone p50 / p95",
        &format!("{} / {}", ms(embed_only.p50), ms(embed_only.p95)),
        "",
        "",
    );
    for (name, cpu) in [
        ("with the model", &with_cpu),
        ("with the turn's vector", &embedded_cpu),
    ] {
        table.row(
            &format!("  by CPU time (the process's): {name} p50 / p95"),
            &format!("{} / {}", ms(cpu.p50), ms(cpu.p95)),
            &format!("{} / {} without", ms(without_cpu.p50), ms(without_cpu.p95)),
            "",
        );
    }
    table.row(
        "  by CPU time (the process's): the embedding alone p50 / p95",
        &format!("{} / {}", ms(embed_only_cpu.p50), ms(embed_only_cpu.p95)),
        "",
        "",
    );
    let rows = (memories + messages) as f64;
    let after = database_bytes(&cached.db);
    let per_100k = |bytes: u64| bytes as f64 * 100_000.0 / rows / 1e6;
    table.row(
        "database size per 100k rows (memories + messages), with their vectors",
        &format!("{:.1} MB", per_100k(after)),
        &format!("{:.1} MB without", per_100k(cached.bytes_without_vectors)),
        &format!(
            "{:.2}x ({:.1} GB in all)",
            after as f64 / cached.bytes_without_vectors as f64,
            after as f64 / 1e9
        ),
    );
    table.row(
        "resident memory: the model loaded and run on a batch of the queries (process)",
        &format!("+{}", mib(with_model.saturating_sub(before_model))),
        &format!("{} before", mib(before_model)),
        &format!(
            "peak +{} (load {})",
            mib(peak_with_model.saturating_sub(before_model)),
            ms(load)
        ),
    );
}

pub fn ingestion(model: &Model, quick: bool, table: &mut Table) {
    let messages = if quick { 320 } else { 2_000 };
    let vocabulary = Vocabulary::new();
    let mut rng = Rng(0x1A6E);
    let texts: Vec<String> = (0..messages)
        .map(|_| synthetic_message(&mut rng, &vocabulary))
        .collect();

    eprintln!("ingestion-model: {messages} messages without the model...");
    let plain = TestBrain::new(NOW);
    let plain_record = record(&plain, &texts);

    eprintln!("ingestion-model: {messages} messages with the model...");
    let subject = TestBrain::new(NOW);
    subject.brain.set_encoder(model.encoder.clone());
    let cpu_started = cpu_seconds("self");
    let recorded = record(&subject, &texts);
    let cpu_recorded = cpu_seconds("self");
    let started = Instant::now();
    let mut embedded = 0;
    loop {
        let pass = subject.brain.embed_pending().expect("embed");
        embedded += pass.messages + pass.memories;
        if !pass.more {
            break;
        }
    }
    let embedding = started.elapsed();
    let embedding_cpu = cpu_seconds("self") - cpu_recorded;
    let total_cpu = cpu_seconds("self") - cpu_started;
    // The worker's batching against runs of a batch's worth of texts in the order they
    // were written (each padded to the longest of as many random lengths), same texts.
    let cpu = cpu_seconds("self");
    for chunk in texts.chunks(BATCH) {
        std::hint::black_box(model.encoder.embed_batch(chunk).expect("embed"));
    }
    let as_written_cpu = cpu_seconds("self") - cpu;
    assert_eq!(embedded, messages, "every message embedded once");
    let per_second = |d: Duration| messages as f64 / d.as_secs_f64();

    table.section(&format!(
        "d with the model: {messages} messages recorded, then embedded by the vector worker"
    ));
    table.row(
        "messages/s searchable with their vectors (record_message + embed_pending)",
        &format!("{:.0} msg/s", per_second(recorded + embedding)),
        &format!("{:.0} msg/s recorded, no model", per_second(plain_record)),
        &ratio(plain_record, recorded + embedding),
    );
    table.row(
        "  of which record_message (one durable transaction each)",
        &format!("{:.0} msg/s", per_second(recorded)),
        &format!("{:.0} msg/s no model", per_second(plain_record)),
        "",
    );
    table.row(
        &format!("  of which the worker's embedding (a pass's texts by length, {BATCH} a batch)"),
        &format!("{:.0} msg/s", per_second(embedding)),
        "",
        &format!(
            "{:.2} ms per message",
            embedding.as_secs_f64() * 1e3 / messages as f64
        ),
    );
    // The cores are shared: the process's CPU time is what the work cost, whatever else
    // ran meanwhile (one core when RAYON_NUM_THREADS=1); recording waits on fsync.
    table.row(
        "messages/s searchable with their vectors, by CPU time (the process's)",
        &format!("{:.0} msg/s", messages as f64 / total_cpu),
        "",
        &format!(
            "{:.2} ms of CPU per message",
            total_cpu * 1e3 / messages as f64
        ),
    );
    table.row(
        "  the worker's embedding by CPU time (the process's)",
        &format!("{:.0} msg/s", messages as f64 / embedding_cpu),
        "",
        &format!(
            "{:.2} ms per message",
            embedding_cpu * 1e3 / messages as f64
        ),
    );
    table.row(
        &format!("  the same texts embedded {BATCH} at a time as written, by CPU time"),
        &format!("{:.0} msg/s", messages as f64 / as_written_cpu),
        &format!("{:.0} msg/s the worker's", messages as f64 / embedding_cpu),
        &format!(
            "{:.2} ms per message",
            as_written_cpu * 1e3 / messages as f64
        ),
    );
}

/// Records `texts` in conversations of [`MESSAGES_PER_CONVERSATION`], user and
/// assistant in turn; the time spent in `record_message`.
fn record(subject: &TestBrain, texts: &[String]) -> Duration {
    let started = Instant::now();
    for (i, text) in texts.iter().enumerate() {
        let conversation = format!("conversation-{}", i / MESSAGES_PER_CONVERSATION);
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        subject
            .brain
            .record_message(ACTOR, &conversation, role, None, text)
            .expect("record a message");
    }
    started.elapsed()
}

/// Skills beside the memories in `turn-model`: the 1,000.
const SKILLS: usize = 1_000;

/// `turn-model`: `TurnService::open` (what `POST /api/turns` calls), routed, with the
/// daemon's wiring (`App::open`) over a data directory holding 1,000 skills and
/// `latency-model`'s store (100k memories, 1M messages, a vector each; quick: 10k and
/// 100k), with the model installed and, in the same run, without it. The skills are
/// synthetic (a name, a description and a paragraph drawn from the word lists): what
/// they cost to route does not depend on what they say.
pub fn turn(model_dir: &Path, quick: bool, table: &mut Table) {
    let Workload {
        memories,
        messages,
        rounds,
        queries,
        ..
    } = Workload::new(quick);
    let encoder = Encoder::load(model_dir).expect("the model of ENGRAM_BENCH_MODEL");
    let cached = cached_store(memories, messages, &encoder.version(), encoder.dims());
    drop(encoder);

    let mut timed = Vec::new();
    for model in [None, Some(model_dir)] {
        let (_dir, app) = daemon_app(&cached.db, model);
        assert_eq!(
            app.encoder.encoder().is_some(),
            model.is_some(),
            "the encoder the run is for: {:?}",
            app.encoder.status()
        );
        // The first turn builds the router (with the model, embeds the 1,000 skills).
        let started = Instant::now();
        open_turn(&app, "hello, can you help me plan my week?");
        let first = started.elapsed();
        eprintln!(
            "turn-model: timing turns ({})...",
            if model.is_some() { "model" } else { "static" }
        );
        let turns = open_percentiles(&app, &queries, rounds);
        timed.push((first, turns));
    }
    let [
        (first_without, (without, without_cpu)),
        (first_with, (with, with_cpu)),
    ] = <[_; 2]>::try_from(timed).unwrap_or_else(|_| unreachable!("two runs"));
    table.section(&format!(
        "turn open with the model: TurnService::open, routed, {SKILLS} skills, {}k memories and {}k messages with vectors ({} queries x {rounds} rounds)",
        memories / 1_000,
        messages / 1_000,
        queries.len()
    ));
    with.row(
        table,
        "turn open p50 / p95 with the model (message embedded once, routing, retrieval)",
        &without,
        "static table",
    );
    with_cpu.row(
        table,
        "  by CPU time (the process's) p50 / p95",
        &without_cpu,
        "static table",
    );
    table.row(
        "  the first turn (builds the router; with the model, embeds every skill)",
        &ms(first_with),
        &format!("{} static table", ms(first_without)),
        "",
    );
}

/// Times `TurnService::open` alone (ending the turn is not timed) once per query per
/// round, after one untimed round.
fn open_percentiles(
    app: &engram::app::App,
    queries: &[String],
    rounds: usize,
) -> (Percentiles, Percentiles) {
    for query in queries {
        open_turn(app, query);
    }
    let (wall, cpu): (Vec<Duration>, Vec<Duration>) = (0..rounds)
        .flat_map(|_| queries.iter())
        .map(|query| open_turn(app, query))
        .unzip();
    (of(wall), of(cpu))
}

/// Opens a routed turn for [`ACTOR`] with `text`, then ends it; how long opening took,
/// on the clock and in the process's CPU time.
fn open_turn(app: &engram::app::App, text: &str) -> (Duration, Duration) {
    use engram::turns::input::{Text, User};
    use engram::turns::{Invoke, Message};
    let message = Message {
        user: User::parse(ACTOR).expect("user"),
        text: Text::parse("message", text).expect("text"),
        conversation_id: None,
        channel: None,
        name: None,
        recall: true,
        opened_by: "agent".to_string(),
    };
    let (started, cpu_started) = (Instant::now(), cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID));
    let opened = app
        .turns
        .open(message, Invoke::Routed)
        .expect("open a turn");
    let took = (
        started.elapsed(),
        cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID) - cpu_started,
    );
    std::hint::black_box(&opened.memory_block);
    app.turns
        .end(&opened.turn_id, ACTOR, None)
        .expect("end the turn");
    took
}

/// The daemon's wiring over a new data directory: [`SKILLS`] skills scanned, a copy of
/// the store at `db` as the Second Brain, and the model in `model` installed.
fn daemon_app(db: &Path, model: Option<&Path>) -> (tempfile::TempDir, engram::app::App) {
    let dir = tempfile::tempdir().expect("temporary data directory");
    let data = engram::paths::DataDir::new(dir.path().to_path_buf());
    data.create().expect("the data directory");
    let mut rng = Rng(0x5C1115);
    for i in 0..SKILLS {
        let (adjective, thing) = (
            rng.pick(crate::common::ADJECTIVES),
            rng.pick(crate::common::THINGS),
        );
        let slug = format!("{adjective}-{thing}-{i}")
            .to_lowercase()
            .replace(' ', "-");
        let skill = data.skills_dir().join(&slug);
        std::fs::create_dir_all(&skill).expect("a skill directory");
        std::fs::write(
            skill.join("SKILL.md"),
            format!(
                "---\nname: {slug}\ndescription: Helps with a {adjective} {thing}: {} at {} with {}, {}.\n---\n\nUse this skill when the user works on their {adjective} {thing}. Ask about {} and {}, then suggest a plan for {}.\n",
                rng.pick(crate::common::ACTIVITIES),
                rng.pick(crate::common::PLACES),
                rng.pick(crate::common::RELATIONS),
                rng.pick(crate::common::TIMES),
                rng.pick(crate::common::FOODS),
                rng.pick(crate::common::ACTIVITIES),
                rng.pick(crate::common::TIMES),
            ),
        )
        .expect("a SKILL.md");
    }
    let brain = engram::memory::brain_db_path(data.root());
    std::fs::create_dir_all(brain.parent().expect("a parent")).expect("the brain's directory");
    std::fs::copy(db, &brain).expect("copy the cached store");
    if let Some(model) = model {
        engram::embed::models::Models::new(data.models_dir())
            .add(model, "all-minilm-l6-v2")
            .expect("install the model");
    }
    let app = engram::app::App::open(data).expect("the daemon's wiring");
    app.skills.scan().expect("scan the skills");
    (dir, app)
}

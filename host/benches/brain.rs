//! Second Brain benchmark: `cargo bench -p engram-host --bench brain` (`-- --quick` for a
//! short run; `-- locomo`, `-- latency` or `-- ingestion` for one section; `-- e2e`, or
//! `-- locomo e2e`, for b alone without the calibration grid: about a minute on 2
//! cores, where `-- locomo` takes about 17). One run measures, and prints as one table,
//! every figure next to its baseline:
//!
//! a. Facts only, on LoCoMo (`locomo/locomo-dev.json` under ENGRAM_BENCH_DATA, default
//!    `../shared/data`; question categories 1-4): each conversation's shipped
//!    `observation` facts stored as the memories of one user, `Brain::retrieve` (what
//!    `POST /api/turns` calls) for every question, evidence recall@5 of the injected
//!    lines; the baseline is a plain FTS5 bm25 top 5 over the same facts.
//! b. End to end: every session replayed in conversations of 4 turns through
//!    `record_message` (each turn a user message, at its session's date) and
//!    `end_conversation` with the real built-in WASM strategies, then `Brain::retrieve`
//!    for every question the day after its conversation's last session: recall@5 of
//!    the injected lines (memories count the turns they were learned from, snippets
//!    their message), overall and per conversation. Each conversation is the data of
//!    its own user, all five in one store (`--quick`: the first alone). Replayed
//!    twice, each into a new Second Brain: with each turn's speaker's name, and
//!    without names (whose words are whose is then only in the text). Each is
//!    reported against the tuned lexical search of the same variant (FTS5 bm25 top 5,
//!    porter, stop words dropped from the question; over name + turn with names, over
//!    the turn alone without), in points, against the same search over a table of
//!    each conversation alone (bm25's statistics of its user alone, as Engram's are;
//!    the shared table's span all five), and against plain FTS5 over the raw turns
//!    (FTS5's default tokenizer, every word of the question); then what the names are
//!    worth to each. The calibration's b pools the questions of both replays.
//! Calibration: the retrieval constants (`retrieve::Tuning`: fusion, weights, a
//!    snippet's importance, common-word rows, candidates) are chosen by
//!    leave-one-conversation-out cross-validation: for each conversation, the grid
//!    point best on the other 4 (by the mean of a and b) is scored on it. The table
//!    shows each fold beside the shipped defaults on it, min / mean / max across
//!    folds, the same procedure restricted to each family of settings (blend or
//!    reciprocal-rank fusion, ...), and the point chosen on all 5.
//! c. Latency of `Brain::retrieve` p50/p95 for one user with 100k memories and 1M
//!    transcript messages (quick: 10k and 100k), against a plain FTS5 top 5 over the
//!    same texts on disk; then the same user in a store shared with [`OTHER_USERS`]
//!    others, each with as many memories and messages in the same vocabulary; database
//!    size per 100k messages against the plain index's; the bulk build's throughput.
//! d. Ingestion: `record_message` one durable transaction each (messages/s), and whole
//!    conversations with extraction through the embedded strategies (conversations/s)
//!    and, in the same run, with builtin:extract-llm against a stand-in endpoint on
//!    loopback (the host's overhead of an LLM extractor).
//!
//! With `ENGRAM_BENCH_MODEL` (a model directory), a and b are measured again with the
//! sentence encoder (`brain_encoded/`): every memory and message embedded, its weight
//! chosen on the even questions, reported on the odd beside the static table; and c
//! and d (`brain_encoded/cost.rs`, `-- latency-model`, `-- ingestion-model`): retrieval
//! at 100k memories and 1M messages with a vector each, size and resident memory, and
//! messages/s embedded by the vector worker, each beside the same without the model;
//! `-- turn-model`: `TurnService::open` at 1,000 skills over c's store with the model.
//! `-- meaning-floor` (`brain_encoded/floor.rs`): the cosine a text found by meaning
//! alone must reach with the model, chosen on LoCoMo's even questions.
//! Run those on one core: `RAYON_NUM_THREADS=1 taskset -c 0 cargo bench ...`.
//!
//! recall@5 of a question = |evidence turns among the turns behind the injected lines|
//! / |evidence turns|, averaged over questions. Nothing is asserted: the figures are
//! for the note, and ratios are what to compare between machines.

mod brain_encoded;
mod common;
#[path = "../tests/support/http.rs"]
mod http;
#[path = "../tests/support/openai.rs"]
mod openai;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::config::ConfigFile;
use engram::memory::bench::{Fusion, MAX_FACTS_PER_CONVERSATION, Tuning, q};
use engram::memory::record::MemoryRecord;
use engram::memory::{Applied, Brain, ListFilter, Retrieval, Source};
use engram::runtime::packages::PluginPackages;
use engram::runtime::strategies::Strategies;
use engram::runtime::{DenyAllGate, HostServices, KvStore, NoMemories, Runtime, RuntimeOptions};
use engram::time::{DAY_MS, ManualClock};
use engram_strategies::model::{Evidence, MemoryType, Role, Scope};

use rusqlite::{Connection, params};
use serde_json::Value;

use openai::{OpenAi, Reply, echo_facts};

use common::lexical::{PLAIN_TOKENIZER, PORTER_TOKENIZER, content_query, or_query};
use common::{
    ACTIVITIES, ADJECTIVES, FOODS, NAMES, PLACES, RELATIONS, Rng, THINGS, TIMES, Table,
    agent_question, bench_data, ms, ratio, synthetic_summary,
};

/// The fixed time of the facts-only run: recency is the same for every memory, so
/// rankings depend on the text alone and runs are reproducible.
const NOW: i64 = 1_790_000_000_000;
const TOP_K: usize = 5;
/// LoCoMo sessions are replayed in conversations of this many turns.
const WINDOW: usize = 4;
const ACTOR: &str = "bench";

/// The calibration grid: how the signals are fused, the meaning's weight, the
/// coverage's, a snippet's importance, the rows at which a word counts as common, the
/// candidates per tier, the weight of importance/confidence/recency, and the bonuses
/// of a named person's messages and facts. Earlier runs settled the rows (200) and
/// the candidates (50): each doubled the grid without moving a fold's choice.
const FUSIONS: [Fusion; 2] = [Fusion::Blend, Fusion::Rrf { k: 60 }];
const MEANING_WEIGHTS: [f64; 4] = [0.0, 0.25, 0.5, 1.0];
const COVERAGE_WEIGHTS: [f64; 2] = [0.5, 1.0];
/// At most a preference's importance: memories win ties (retrieve.rs).
const TRANSCRIPT_IMPORTANCES: [f64; 2] = [0.4, 0.6];
const COMMON_ROWS: [usize; 1] = [200];
const CANDIDATES: [usize; 1] = [50];
const PRIOR_WEIGHTS: [f64; 3] = [0.05, 0.15, 0.4];
const SPEAKER_BONUSES: [f64; 2] = [0.1, 0.3];
const HOLDER_BONUSES: [f64; 2] = [0.0, 0.15];

fn main() {
    // `cargo bench` passes `--bench`; only `--quick` matters here.
    let quick = std::env::args().any(|a| a == "--quick");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |section: &str| only.is_empty() || only.iter().any(|o| o == section);
    let mut table = Table::default();
    let started = Instant::now();
    // a and b at the shipped defaults, without the calibration grid (minutes, not half
    // an hour).
    let e2e_only = only.iter().any(|o| o == "e2e");
    if wanted("locomo") || e2e_only {
        match bench_data("LoCoMo benchmarks", "locomo/locomo-dev.json")
            .and_then(|path| load_locomo(&path))
        {
            Some(samples) if e2e_only => {
                facts_quality(&samples, &[], &mut table);
                end_to_end(&samples, &[], quick, &mut table);
            }
            Some(samples) => {
                let points = grid_points();
                let facts = facts_quality(&samples, &points, &mut table);
                let said = end_to_end(&samples, &points, quick, &mut table);
                if let (Some(facts), Some(said)) = (facts, said) {
                    calibration(&samples, &points, &facts, &said, &mut table);
                }
            }
            None => table.section("a/b. LoCoMo: skipped (data file missing, see above)"),
        }
    }
    if wanted("meaning-floor")
        && let Some(samples) = bench_data("the meaning floor", "locomo/locomo-dev.json")
            .and_then(|path| load_locomo(&path))
        && let Some(model) = brain_encoded::Model::load()
    {
        brain_encoded::floor::calibrate(&samples, &model, &mut table);
    }
    if wanted("latency") {
        latency(quick, &mut table);
    }
    if wanted("ingestion") {
        ingestion_throughput(quick, &mut table);
    }
    // Each loads the model itself: the latency section measures the memory it adds.
    if wanted("latency-model")
        && let Some(dir) = common::bench_model("latency and size with the sentence encoder")
    {
        brain_encoded::cost::latency(&dir, quick, &mut table);
    }
    if wanted("turn-model")
        && let Some(dir) = common::bench_model("turn open with the sentence encoder")
    {
        brain_encoded::cost::turn(&dir, quick, &mut table);
    }
    if wanted("ingestion-model")
        && let Some(model) = brain_encoded::Model::load()
    {
        brain_encoded::cost::ingestion(&model, quick, &mut table);
    }
    println!();
    println!(
        "Second Brain benchmark ({} run, {:.0} s)",
        if quick { "quick" } else { "full" },
        started.elapsed().as_secs_f64()
    );
    table.print();
}

// ---------------------------------------------------------------------------------
// LoCoMo data

struct Sample {
    id: String,
    facts: Vec<Fact>,
    sessions: Vec<Session>,
    questions: Vec<Question>,
    /// Questions of categories 1-4 left out: no evidence turn to score against.
    without_evidence: usize,
}

struct Fact {
    text: String,
    turns: Vec<String>,
}

struct Session {
    /// When it took place (ms), from `session_<n>_date_time`.
    at: i64,
    turns: Vec<Turn>,
}

struct Turn {
    dia_id: String,
    speaker: String,
    text: String,
}

struct Question {
    text: String,
    evidence: BTreeSet<String>,
}

/// The samples, or `None` (with a message) when the file cannot be read.
fn load_locomo(path: &Path) -> Option<Vec<Sample>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "LoCoMo benchmarks skipped: cannot read {}: {e}",
                path.display()
            );
            return None;
        }
    };
    let root: Value = serde_json::from_str(&text).expect("locomo-dev.json is not valid JSON");
    let samples = root
        .as_array()
        .expect("locomo-dev.json is not a list of conversations")
        .iter()
        .enumerate()
        .map(|(index, value)| parse_sample(index, value))
        .collect();
    Some(samples)
}

fn parse_sample(index: usize, value: &Value) -> Sample {
    let id = value["sample_id"]
        .as_str()
        .map_or_else(|| format!("sample-{index}"), str::to_string);
    let facts = numbered_sessions(&value["observation"], "_observation")
        .into_iter()
        .filter_map(|(_, v)| v.as_object())
        .flat_map(|by_speaker| by_speaker.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(parse_fact)
        .collect();
    let conversation = &value["conversation"];
    let sessions = numbered_sessions(conversation, "")
        .into_iter()
        .filter_map(|(n, turns)| {
            let date = conversation[format!("session_{n}_date_time")].as_str()?;
            Some(Session {
                at: parse_session_date(date)?,
                turns: turns.as_array()?.iter().filter_map(parse_turn).collect(),
            })
        })
        .collect();
    let scored: Vec<&Value> = value["qa"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|qa| {
            qa["category"]
                .as_u64()
                .is_some_and(|c| (1..=4).contains(&c))
        })
        .collect();
    let questions: Vec<Question> = scored.iter().filter_map(|qa| parse_question(qa)).collect();
    Sample {
        id,
        facts,
        without_evidence: scored.len() - questions.len(),
        sessions,
        questions,
    }
}

/// The values of `session_<n><suffix>` keys with their number, in session order
/// (`session_2` before `session_10`); other keys such as `session_1_date_time` are
/// left out.
fn numbered_sessions<'a>(object: &'a Value, suffix: &str) -> Vec<(u32, &'a Value)> {
    let mut found: Vec<(u32, &Value)> = object
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let n = key.strip_prefix("session_")?.strip_suffix(suffix)?;
            Some((n.parse().ok()?, value))
        })
        .collect();
    found.sort_by_key(|(n, _)| *n);
    found
}

/// `"1:56 pm on 8 May, 2023"` -> ms since the epoch (UTC).
fn parse_session_date(text: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let (clock, date) = text.split_once(" on ")?;
    let (hm, half) = clock.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    let h = h % 12
        + if half.eq_ignore_ascii_case("pm") {
            12
        } else {
            0
        };
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let [day, month, year] = parts[..] else {
        return None;
    };
    let month = MONTHS
        .iter()
        .position(|name| name.eq_ignore_ascii_case(month))? as i64
        + 1;
    let days = days_from_civil(year.parse().ok()?, month, day.parse().ok()?);
    Some(days * DAY_MS + (h * 60 + m) * 60_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `[text, evidence]`.
fn parse_fact(value: &Value) -> Option<Fact> {
    let pair = value.as_array()?;
    let text = pair.first()?.as_str()?.trim();
    let turns = turn_ids(pair.get(1)?);
    (!text.is_empty()).then(|| Fact {
        text: text.to_string(),
        turns,
    })
}

fn parse_turn(value: &Value) -> Option<Turn> {
    let dia_id = normalize_turn_id(value["dia_id"].as_str()?)?;
    let mut text = value["text"].as_str()?.trim().to_string();
    // A shared photo is part of what the speaker said; the data set gives its caption.
    if let Some(caption) = value["blip_caption"].as_str() {
        text.push_str(&format!(" [shares a photo of {caption}]"));
    }
    Some(Turn {
        dia_id,
        speaker: value["speaker"].as_str().unwrap_or_default().to_string(),
        text,
    })
}

/// A question with at least one usable evidence turn. Only categories 1-4 are scored
/// (category 5 is adversarial: its answer is not in the conversation).
fn parse_question(value: &Value) -> Option<Question> {
    let text = value["question"].as_str()?.to_string();
    let evidence: BTreeSet<String> = turn_ids(&value["evidence"]).into_iter().collect();
    (!evidence.is_empty()).then_some(Question { text, evidence })
}

/// Turn ids as the data set writes them: one string or a list, with a few irregular
/// ones (`"D8:6; D9:17"`, `"D:11:26"`, `"D"`) that are split, repaired or dropped.
fn turn_ids(value: &Value) -> Vec<String> {
    let strings: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    strings
        .into_iter()
        .flat_map(|s| s.split([';', ',', ' ']))
        .filter_map(normalize_turn_id)
        .collect()
}

/// `D<session>:<turn>`, or `None` when the id has no session and turn number.
fn normalize_turn_id(raw: &str) -> Option<String> {
    let rest = raw.trim().strip_prefix('D')?.trim_start_matches(':');
    let (session, turn) = rest.split_once(':')?;
    let session: u32 = session.parse().ok()?;
    let turn: u32 = turn.parse().ok()?;
    Some(format!("D{session}:{turn}"))
}

// ---------------------------------------------------------------------------------
// The metric

fn recall(evidence: &BTreeSet<String>, found: &BTreeSet<String>) -> f64 {
    evidence.intersection(found).count() as f64 / evidence.len() as f64
}

/// A running mean of per-question recall.
#[derive(Default, Clone, Copy)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    fn add(&mut self, value: f64) {
        self.sum += value;
        self.n += 1;
    }

    fn merge(&mut self, other: Mean) {
        self.sum += other.sum;
        self.n += other.n;
    }

    fn value(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
}

// ---------------------------------------------------------------------------------
// The plain FTS5 baseline

/// A plain SQLite FTS5 table, one row per document, each carrying the turn ids it
/// stands for. Separate from the Second Brain's database: nothing of Engram in it.
struct PlainFts {
    conn: Connection,
}

impl PlainFts {
    fn in_memory(tokenizer: &str) -> PlainFts {
        PlainFts::create(
            Connection::open_in_memory().expect("in-memory SQLite"),
            tokenizer,
        )
    }

    fn on_disk(path: &Path) -> PlainFts {
        let conn = Connection::open(path).expect("open the baseline database");
        // The same journal as the Second Brain, so file sizes compare.
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL for the baseline");
        PlainFts::create(conn, PLAIN_TOKENIZER)
    }

    fn create(conn: Connection, tokenizer: &str) -> PlainFts {
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE docs USING fts5(body, user UNINDEXED, turns UNINDEXED, tokenize = '{tokenizer}')"
        ))
        .expect("create the FTS5 table");
        PlainFts { conn }
    }

    /// Inserts `(user, body, turn ids)` rows in one transaction.
    fn insert<'a>(&mut self, rows: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>) {
        let tx = self.conn.transaction().expect("begin");
        {
            let mut stmt = tx
                .prepare("INSERT INTO docs (body, user, turns) VALUES (?1, ?2, ?3)")
                .expect("prepare insert");
            for (user, body, turns) in rows {
                stmt.execute(params![body, user, turns.join(" ")])
                    .expect("insert a document");
            }
        }
        tx.commit().expect("commit");
    }

    /// The turn ids of the best `k` documents of `user` by bm25 for `query` (an FTS5
    /// query from `or_query`); nothing when the text has no word.
    fn top(&self, user: &str, query: Option<String>, k: usize) -> BTreeSet<String> {
        let Some(query) = query else {
            return BTreeSet::new();
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT turns FROM docs WHERE docs MATCH ?1 AND user = ?2 ORDER BY bm25(docs) LIMIT ?3",
            )
            .expect("prepare search");
        let rows = stmt
            .query_map(params![query, user, k as i64], |row| {
                row.get::<_, String>(0)
            })
            .expect("search");
        rows.map(|turns| turns.expect("read a row"))
            .flat_map(|turns| {
                turns
                    .split(' ')
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn checkpoint(&self) {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .expect("checkpoint the baseline");
    }
}

// ---------------------------------------------------------------------------------
// Engram under test

/// A Second Brain in its own temporary directory, on a clock the run moves.
struct TestBrain {
    brain: Brain,
    clock: ManualClock,
    dir: tempfile::TempDir,
}

impl TestBrain {
    fn new(at: i64) -> TestBrain {
        let dir = tempfile::tempdir().expect("temporary directory");
        TestBrain::open(dir, at)
    }

    fn open(dir: tempfile::TempDir, at: i64) -> TestBrain {
        let clock = ManualClock::new(at);
        let brain = Brain::open(
            &dir.path().join("second-brain.db"),
            Arc::new(clock.clone()),
            engram::events::EventBus::default(),
        )
        .expect("open the Second Brain");
        TestBrain { brain, clock, dir }
    }

    /// A copy of the database in a directory of its own, with a clock at `at`:
    /// retrieval marks what it injects as used, so each calibration run starts from
    /// the same state.
    fn copy(&self, at: i64) -> TestBrain {
        self.brain.store().checkpoint().expect("checkpoint");
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::copy(
            self.dir.path().join("second-brain.db"),
            dir.path().join("second-brain.db"),
        )
        .expect("copy the database");
        TestBrain::open(dir, at)
    }

    fn insert(&self, records: &[MemoryRecord]) {
        self.brain
            .store()
            .write(engram::sql::Actor::System, |tx| {
                for record in records {
                    q::insert(tx, record, ACTOR)?;
                }
                Ok(())
            })
            .expect("insert memories");
    }

    /// Every live memory of `user`, page by page.
    fn live(&self, user: &str) -> Vec<MemoryRecord> {
        let mut all = Vec::new();
        let mut filter = ListFilter {
            limit: 500,
            ..ListFilter::default()
        };
        loop {
            let page = self.brain.list(user, &filter).expect("list memories");
            all.extend(page.items);
            match page.next_cursor {
                Some(cursor) => filter.cursor = Some(cursor),
                None => return all,
            }
        }
    }
}

/// A memory stored at `at` and unchanged since, with its type's defaults.
fn memory(
    id: String,
    user: &str,
    memory_type: MemoryType,
    summary: &str,
    turns: &[String],
    at: i64,
) -> MemoryRecord {
    MemoryRecord {
        id,
        source_turns: turns.to_vec(),
        ..MemoryRecord::fresh(user, memory_type, summary, Evidence::Direct, 0.9, at)
    }
}

/// The built-in strategies, as the daemon builds them (see `strategies()` in
/// host/src/brain/tests.rs; plugins read their settings from the same config.yaml),
/// with a compile cache that survives between runs.
fn strategies(config_dir: &Path) -> Strategies {
    let config = Arc::new(ConfigFile::new(config_dir.join("config.yaml")));
    let services = HostServices::new(
        Arc::new(NoMemories),
        Arc::new(DenyAllGate),
        KvStore::in_memory().expect("in-memory kv"),
    )
    .with_settings(config.clone());
    let options = RuntimeOptions {
        cache_dir: Some(std::env::temp_dir().join("engram-bench-component-cache")),
        ..RuntimeOptions::default()
    };
    let runtime = Arc::new(Runtime::new(options, services).expect("runtime"));
    Strategies::new(
        runtime,
        PluginPackages::new(config_dir.join("plugins")),
        config,
    )
    .expect("built-in strategies")
}

/// The turns behind the injected lines, as host ids: a memory's source turns, a
/// snippet's message.
fn injected_turns(retrieval: &Retrieval) -> BTreeSet<String> {
    retrieval
        .lines
        .iter()
        .flat_map(|line| match &line.source {
            Source::Memory { record, .. } => record.source_turns.clone(),
            Source::Message(message) => vec![message.id.clone()],
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// Calibration by leave-one-conversation-out cross-validation

/// `scores[point][conversation]`: per grid point, per conversation, the recall of its
/// questions.
type Grid = Vec<Vec<Mean>>;

/// Every combination of the grid's values.
fn grid_points() -> Vec<Tuning> {
    let mut points = Vec::new();
    for fusion in FUSIONS {
        for meaning_weight in MEANING_WEIGHTS {
            for coverage_weight in COVERAGE_WEIGHTS {
                for transcript_importance in TRANSCRIPT_IMPORTANCES {
                    for common_rows in COMMON_ROWS {
                        for candidates in CANDIDATES {
                            for prior_weight in PRIOR_WEIGHTS {
                                for speaker_bonus in SPEAKER_BONUSES {
                                    for holder_bonus in HOLDER_BONUSES {
                                        points.push(Tuning {
                                            meaning_weight,
                                            encoded_meaning_weight: Tuning::default()
                                                .encoded_meaning_weight,
                                            coverage_weight,
                                            transcript_importance,
                                            fusion,
                                            common_rows,
                                            candidates,
                                            prior_weight,
                                            speaker_bonus,
                                            holder_bonus,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    points
}

/// What the calibration maximises: the mean of the facts-only and the end-to-end
/// recall over `conversations` (question-weighted within each), so that one set of
/// constants serves both.
fn objective(facts: &Grid, said: &Grid, point: usize, conversations: &[usize]) -> f64 {
    let pooled = |grid: &Grid| {
        let mut mean = Mean::default();
        for &c in conversations {
            mean.merge(grid[point][c]);
        }
        mean.value()
    };
    (pooled(facts) + pooled(said)) / 2.0
}

/// The point of `candidates` best on `conversations` (the earlier on a tie: the grid
/// lists the simpler settings first).
fn best_point(facts: &Grid, said: &Grid, candidates: &[usize], conversations: &[usize]) -> usize {
    let score = |p: usize| objective(facts, said, p, conversations);
    *candidates
        .iter()
        .max_by(|a, b| score(**a).total_cmp(&score(**b)).then(b.cmp(a)))
        .expect("a grid point")
}

/// One held-out fold: the point chosen on the other conversations and its recall on
/// the one left out.
struct Fold {
    chosen: usize,
    facts: f64,
    said: f64,
}

/// Leave-one-conversation-out over the points of `candidates`.
fn leave_one_out(facts: &Grid, said: &Grid, candidates: &[usize]) -> Vec<Fold> {
    let conversations = facts[0].len();
    (0..conversations)
        .map(|out| {
            let others: Vec<usize> = (0..conversations).filter(|c| *c != out).collect();
            let chosen = best_point(facts, said, candidates, &others);
            Fold {
                chosen,
                facts: facts[chosen][out].value(),
                said: said[chosen][out].value(),
            }
        })
        .collect()
}

/// `min / mean / max` of per-fold values.
fn spread(values: impl Iterator<Item = f64>) -> String {
    let values: Vec<f64> = values.collect();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    format!("{} / {} / {}", percent(min), percent(mean), percent(max))
}

fn describe(t: &Tuning) -> String {
    let fusion = match t.fusion {
        Fusion::Blend => "blend".to_string(),
        Fusion::Rrf { k } => format!("rrf{k}"),
    };
    format!(
        "{fusion} w{} c{} i{} n{} top{} p{} s{} h{}",
        t.meaning_weight,
        t.coverage_weight,
        t.transcript_importance,
        t.common_rows,
        t.candidates,
        t.prior_weight,
        t.speaker_bonus,
        t.holder_bonus
    )
}

/// Chooses the constants by leave-one-conversation-out over the joint objective and
/// reports the held-out folds (min / mean / max across folds) beside the shipped
/// defaults' recall on the same folds, then the same procedure restricted to each
/// family of settings (fusion, common-word rows), to show what each choice is worth.
fn calibration(
    samples: &[Sample],
    points: &[Tuning],
    facts: &Grid,
    said: &Grid,
    table: &mut Table,
) {
    let conversations = facts[0].len();
    table.section(&format!(
        "calibration: leave-one-conversation-out over {conversations} conversations, {} grid points; per fold the point best on the other {} (mean of a and b), scored on the one left out; min / mean / max across folds",
        points.len(),
        conversations.saturating_sub(1)
    ));
    let defaults = points
        .iter()
        .position(|t| *t == Tuning::default())
        .expect("the defaults are a grid point");
    let all: Vec<usize> = (0..points.len()).collect();
    let folds = leave_one_out(facts, said, &all);
    let ids: Vec<&str> = samples.iter().map(|s| s.id.as_str()).collect();
    for (fold, id) in folds.iter().zip(&ids) {
        let out = ids.iter().position(|i| i == id).expect("a conversation");
        table.row(
            &format!(
                "  fold {id}: a / b held out, chosen {}",
                describe(&points[fold.chosen])
            ),
            &format!("{} / {}", percent(fold.facts), percent(fold.said)),
            &format!(
                "{} / {} defaults",
                percent(facts[defaults][out].value()),
                percent(said[defaults][out].value())
            ),
            &format!(
                "{:+.1} / {:+.1} points",
                (fold.facts - facts[defaults][out].value()) * 100.0,
                (fold.said - said[defaults][out].value()) * 100.0
            ),
        );
    }
    let family_rows = |name: &str, candidates: &[usize], table: &mut Table| {
        let folds = leave_one_out(facts, said, candidates);
        table.row(
            &format!("{name}: a held out"),
            &spread(folds.iter().map(|f| f.facts)),
            "",
            "",
        );
        table.row(
            &format!("{name}: b held out"),
            &spread(folds.iter().map(|f| f.said)),
            "",
            "",
        );
    };
    family_rows("whole grid", &all, table);
    table.row(
        "the shipped defaults: a on each fold",
        &spread((0..conversations).map(|c| facts[defaults][c].value())),
        "",
        &describe(&points[defaults]),
    );
    table.row(
        "the shipped defaults: b on each fold",
        &spread((0..conversations).map(|c| said[defaults][c].value())),
        "",
        "",
    );
    let everything: Vec<usize> = (0..conversations).collect();
    let best = best_point(facts, said, &all, &everything);
    let pooled = |grid: &Grid, point: usize| {
        let mut mean = Mean::default();
        for score in &grid[point] {
            mean.merge(*score);
        }
        mean.value()
    };
    table.row(
        &format!("chosen on all {conversations} (what the procedure ships): a / b, in sample"),
        &format!(
            "{} / {}",
            percent(pooled(facts, best)),
            percent(pooled(said, best))
        ),
        &format!(
            "{} / {} defaults",
            percent(pooled(facts, defaults)),
            percent(pooled(said, defaults))
        ),
        &describe(&points[best]),
    );
    let family = |keep: &dyn Fn(&Tuning) -> bool| -> Vec<usize> {
        (0..points.len()).filter(|p| keep(&points[*p])).collect()
    };
    family_rows(
        "  blend only",
        &family(&|t| t.fusion == Fusion::Blend),
        table,
    );
    family_rows(
        "  reciprocal-rank fusion only",
        &family(&|t| t.fusion != Fusion::Blend),
        table,
    );
    for rows in COMMON_ROWS {
        family_rows(
            &format!("  common words at >= {rows} rows only"),
            &family(&|t| t.common_rows == rows),
            table,
        );
    }
    for candidates in CANDIDATES {
        family_rows(
            &format!("  {candidates} candidates per tier only"),
            &family(&|t| t.candidates == candidates),
            table,
        );
    }
    family_rows(
        "  no meaning (w = 0) only",
        &family(&|t| t.meaning_weight == 0.0),
        table,
    );
    for prior in PRIOR_WEIGHTS {
        family_rows(
            &format!("  importance, confidence, recency at {prior} only"),
            &family(&|t| t.prior_weight == prior),
            table,
        );
    }
    family_rows(
        "  no bonus for a named person's facts only",
        &family(&|t| t.holder_bonus == 0.0),
        table,
    );
}

/// Per grid point, per conversation, `score`.
fn grid_scores(
    samples: &[Sample],
    points: &[Tuning],
    score: impl Fn(&Tuning, &Sample) -> Mean,
) -> Grid {
    points
        .iter()
        .map(|tuning| samples.iter().map(|sample| score(tuning, sample)).collect())
        .collect()
}

// ---------------------------------------------------------------------------------
// a. Facts only: the observation facts as memories

fn facts_quality(samples: &[Sample], points: &[Tuning], table: &mut Table) -> Option<Grid> {
    eprintln!("a. storing the observation facts and retrieving for every question...");
    let subject = store_facts(samples);
    let indexes = FactIndexes::new(samples);
    let mut engram = Mean::default();
    let mut baseline = Mean::default();
    let mut porter_stop = Mean::default();
    let mut budget_cut = 0;
    for sample in samples {
        for question in &sample.questions {
            let retrieval = subject
                .brain
                .retrieve(&sample.id, &question.text)
                .expect("retrieve");
            engram.add(recall(&question.evidence, &injected_turns(&retrieval)));
            if retrieval.lines.len() < TOP_K
                && matches(&subject, &sample.id, &question.text) > retrieval.lines.len()
            {
                budget_cut += 1;
            }
            baseline.add(recall(
                &question.evidence,
                &indexes
                    .plain
                    .top(&sample.id, or_query(&question.text), TOP_K),
            ));
            porter_stop.add(recall(
                &question.evidence,
                &indexes
                    .porter
                    .top(&sample.id, content_query(&question.text), TOP_K),
            ));
        }
    }
    let facts: usize = samples.iter().map(|s| s.facts.len()).sum();
    let left_out: usize = samples.iter().map(|s| s.without_evidence).sum();
    table.section(&format!(
        "a. facts only: LoCoMo observation facts as memories, {} conversations, {facts} memories, {} questions of categories 1-4 ({left_out} without evidence left out)",
        samples.len(),
        engram.n
    ));
    let base = baseline.value();
    table.recall_row(
        "evidence recall@5, Brain::retrieve (top 5 within 900 chars)",
        engram.value(),
        "FTS5 bm25 top 5 over the facts",
        base,
    );
    table.recall_row(
        "  reference: FTS5 + porter + stop words dropped (no meaning, no budget)",
        porter_stop.value(),
        "",
        base,
    );
    table.row(
        "  questions given fewer than 5 lines while more matched (900-char budget)",
        &format!("{budget_cut} of {}", engram.n),
        "",
        "",
    );
    if let Some(model) = brain_encoded::Model::load() {
        eprintln!("a. embedding the facts with {}...", model.dir().display());
        let embedded = store_facts(samples);
        model.embed_all(&embedded);
        brain_encoded::compare(
            "a. with the model",
            samples,
            &embedded,
            &model,
            &|_| NOW,
            &|turns| turns.clone(),
            table,
        );
    }
    if points.is_empty() {
        return None;
    }
    eprintln!("a. scoring the calibration grid...");
    // Facts only has no snippet: a snippet's importance and its speaker's bonus
    // change nothing, so each setting of the other constants is scored once.
    let without_snippets = |t: &Tuning| Tuning {
        transcript_importance: 0.0,
        speaker_bonus: 0.0,
        ..*t
    };
    let mut grid: Grid = Vec::with_capacity(points.len());
    for (i, tuning) in points.iter().enumerate() {
        let twin = points[..i]
            .iter()
            .position(|t| without_snippets(t) == without_snippets(tuning));
        let scores = match twin {
            Some(j) => grid[j].clone(),
            None => samples
                .iter()
                .map(|sample| {
                    let mut mean = Mean::default();
                    for question in &sample.questions {
                        let retrieval = subject
                            .brain
                            .retrieve_tuned(&sample.id, &question.text, tuning)
                            .expect("retrieve");
                        mean.add(recall(&question.evidence, &injected_turns(&retrieval)));
                    }
                    mean
                })
                .collect(),
        };
        grid.push(scores);
    }
    Some(grid)
}

/// How many memories or messages of `user` the query matches (at most 6: enough to
/// tell whether a 5-line block could have been full).
fn matches(subject: &TestBrain, user: &str, text: &str) -> usize {
    subject
        .brain
        .search_hits(user, text, TOP_K + 1, engram::memory::SearchScope::All)
        .expect("search")
        .len()
}

/// Ids in insertion order instead of random ULIDs: retrieval breaks ties by id, so
/// random ids would make recall differ slightly from run to run.
fn fixed_id(prefix: &str, index: usize) -> String {
    format!("mem_{prefix}_{index:07}")
}

/// Each conversation's facts as the memories of one user, all of one type and stored at
/// the same time, so that only their text decides how they rank.
fn store_facts(samples: &[Sample]) -> TestBrain {
    let subject = TestBrain::new(NOW);
    for sample in samples {
        let records: Vec<MemoryRecord> = sample
            .facts
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let id = fixed_id(&sample.id, i);
                memory(id, &sample.id, MemoryType::Episode, &f.text, &f.turns, NOW)
            })
            .collect();
        subject.insert(&records);
    }
    subject
}

/// Plain FTS5 over the facts: with FTS5's default tokenizer (the baseline) and with the
/// Second Brain's porter tokenizer (the reference).
struct FactIndexes {
    plain: PlainFts,
    porter: PlainFts,
}

impl FactIndexes {
    fn new(samples: &[Sample]) -> FactIndexes {
        let mut plain = PlainFts::in_memory(PLAIN_TOKENIZER);
        let mut porter = PlainFts::in_memory(PORTER_TOKENIZER);
        for sample in samples {
            let rows = || {
                sample
                    .facts
                    .iter()
                    .map(|f| (sample.id.as_str(), f.text.as_str(), f.turns.as_slice()))
            };
            plain.insert(rows());
            porter.insert(rows());
        }
        FactIndexes { plain, porter }
    }
}

// ---------------------------------------------------------------------------------
// b. End to end: replayed sessions through the extraction pipeline

/// What the replay stored, and how to read its turn ids back as the data set's.
struct Replay {
    subject: TestBrain,
    /// Host turn id -> LoCoMo `dia_id`.
    dia_ids: HashMap<String, String>,
    /// When each conversation's questions are asked: the day after its last session
    /// (so that a conversation's figures do not depend on which others were replayed).
    asked_at: HashMap<String, i64>,
    conversations: usize,
    messages: usize,
    candidates: usize,
    /// Conversations whose candidates were cut to the per-conversation limit.
    at_limit: usize,
    stored: usize,
    seconds: f64,
    /// What each replayed window taught, scored against LoCoMo's annotated
    /// observations.
    extraction: ExtractionScore,
}

/// Extraction scored against LoCoMo's `observation` facts, each annotated with the
/// turns it came from: a learned memory is grounded when one of its source turns is
/// such a turn; a window none of whose turns is one is small talk, where nothing
/// should be learned.
#[derive(Default)]
struct ExtractionScore {
    learned: usize,
    grounded: usize,
    small_talk_windows: usize,
    /// Small-talk windows that taught anything, and the memories they taught.
    small_talk_taught: usize,
    small_talk_memories: usize,
}

impl ExtractionScore {
    /// One window: whether any of its turns carries an annotated fact, and the source
    /// turns of each memory its end taught (added, superseding or outvoted).
    fn add(&mut self, carries_fact: bool, taught: &[BTreeSet<String>], cited: &BTreeSet<String>) {
        self.learned += taught.len();
        self.grounded += taught
            .iter()
            .filter(|sources| !sources.is_disjoint(cited))
            .count();
        if !carries_fact {
            self.small_talk_windows += 1;
            self.small_talk_memories += taught.len();
            self.small_talk_taught += usize::from(!taught.is_empty());
        }
    }

    fn report(&self, table: &mut Table) {
        table.row(
            "  extraction precision: learned memories from an annotated fact's turns",
            &format!(
                "{} ({} of {})",
                percent(share(self.grounded, self.learned)),
                self.grounded,
                self.learned
            ),
            "",
            "LoCoMo `observation` facts and their source turns",
        );
        table.row(
            "  small talk: windows with no annotated fact that taught a memory",
            &format!(
                "{} ({} of {} windows; {} memories)",
                percent(share(self.small_talk_taught, self.small_talk_windows)),
                self.small_talk_taught,
                self.small_talk_windows,
                self.small_talk_memories
            ),
            "",
            "",
        );
    }
}

/// `part` of `whole` as a fraction (0 when `whole` is).
fn share(part: usize, whole: usize) -> f64 {
    part as f64 / whole.max(1) as f64
}

impl Replay {
    /// Host turn ids read back as the data set's `dia_id`s.
    fn dataset_turns<'a>(
        &self,
        host_turns: impl IntoIterator<Item = &'a String>,
    ) -> BTreeSet<String> {
        host_turns
            .into_iter()
            .filter_map(|t| self.dia_ids.get(t).cloned())
            .collect()
    }
}

/// Whether the replay gives each turn its speaker's name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Speakers {
    Named,
    Anonymous,
}

impl Speakers {
    fn describe(self) -> &'static str {
        match self {
            Speakers::Named => "with the speakers' names",
            Speakers::Anonymous => "without names",
        }
    }

    /// What the tuned lexical search indexes in this variant.
    fn indexed(self) -> &'static str {
        match self {
            Speakers::Named => "name + turn",
            Speakers::Anonymous => "turn",
        }
    }
}

/// b, with the speakers' names and without, each against its baselines; the calibration
/// grid scored on the replay with names (none when `points` is empty or the run is
/// quick).
fn end_to_end(all: &[Sample], points: &[Tuning], quick: bool, table: &mut Table) -> Option<Grid> {
    // The quick run replays one conversation: the replay is the slow part.
    let samples = if quick { &all[..1] } else { all };
    let config = tempfile::tempdir().expect("temporary directory");
    let strategies = strategies(config.path());
    let raw = turn_index(samples, PLAIN_TOKENIZER, Speakers::Anonymous);
    let mut grid: Option<Grid> = None;
    let mut variants = Vec::new();
    for speakers in [Speakers::Named, Speakers::Anonymous] {
        eprintln!(
            "b. replaying {} conversations through the extraction pipeline, {}...",
            samples.len(),
            speakers.describe()
        );
        let replay = replay(samples, &strategies, speakers);
        let tuned = turn_index(samples, PORTER_TOKENIZER, speakers);
        let scores = EndToEndScores::measure(samples, &replay, &raw, &tuned, speakers);
        table.section(&format!(
            "b. end to end, {}: {} conversations, {} turns replayed as {} conversations of <= {WINDOW} turns (session dates), {} questions",
            speakers.describe(),
            samples.len(),
            replay.messages,
            replay.conversations,
            scores.engram.n
        ));
        scores.report(&replay, speakers, table);
        if let Some(model) = brain_encoded::Model::load() {
            eprintln!("b. embedding the replay with {}...", model.dir().display());
            let embedded = replay.subject.copy(NOW);
            model.embed_all(&embedded);
            brain_encoded::compare(
                &format!("b. {} with the model", speakers.describe()),
                samples,
                &embedded,
                &model,
                &|sample| replay.asked_at[&sample.id],
                &|turns| replay.dataset_turns(turns),
                table,
            );
        }
        if !quick && !points.is_empty() {
            eprintln!("b. scoring the calibration grid...");
            let scores = grid_scores(samples, points, |tuning, sample| {
                // Retrieval marks what it injects as used: each point starts from the
                // replay.
                let subject = replay.subject.copy(replay.asked_at[&sample.id]);
                let mut mean = Mean::default();
                for question in &sample.questions {
                    let retrieval = subject
                        .brain
                        .retrieve_tuned(&sample.id, &question.text, tuning)
                        .expect("retrieve");
                    mean.add(recall(
                        &question.evidence,
                        &replay.dataset_turns(&injected_turns(&retrieval)),
                    ));
                }
                mean
            });
            // b pools both replays' questions: a choice that only helps when the
            // names are there is not a choice for the channels that have none.
            grid = Some(match grid.take() {
                None => scores,
                Some(mut pooled) => {
                    for (point, conversations) in pooled.iter_mut().zip(scores) {
                        for (mean, other) in point.iter_mut().zip(conversations) {
                            mean.merge(other);
                        }
                    }
                    pooled
                }
            });
        }
        variants.push(scores);
    }
    if let [named, anonymous] = &variants[..] {
        table.section("b. what the speakers' names are worth (with names vs without, same run)");
        for (measure, with, without) in [
            (
                "Engram, evidence recall@5",
                named.engram.value(),
                anonymous.engram.value(),
            ),
            (
                "tuned lexical (FTS5 porter, stop words dropped)",
                named.tuned.value(),
                anonymous.tuned.value(),
            ),
        ] {
            table.recall_row(measure, with, "without names", without);
        }
    }
    grid
}

/// FTS5 over every raw turn, with its own id: the text alone, or the speaker's name
/// and the text.
fn turn_index(samples: &[Sample], tokenizer: &str, speakers: Speakers) -> PlainFts {
    let mut index = PlainFts::in_memory(tokenizer);
    for sample in samples {
        let turns: Vec<(&Turn, String)> = sample
            .sessions
            .iter()
            .flat_map(|s| &s.turns)
            .map(|turn| {
                let body = match speakers {
                    Speakers::Named => format!("{} {}", turn.speaker, turn.text),
                    Speakers::Anonymous => turn.text.clone(),
                };
                (turn, body)
            })
            .collect();
        index.insert(turns.iter().map(|(turn, body)| {
            (
                sample.id.as_str(),
                body.as_str(),
                std::slice::from_ref(&turn.dia_id),
            )
        }));
    }
    index
}

#[derive(Default)]
struct EndToEndScores {
    engram: Mean,
    /// Plain FTS5 over the raw turns, every word of the question.
    raw_turns: Mean,
    /// The tuned lexical search of the same variant.
    tuned: Mean,
    /// The same, each conversation in a table of its own: bm25's statistics of its
    /// user alone, as Engram's are (the shared table's span all five users).
    tuned_alone: Mean,
    /// Recall if every live memory were returned: what extraction kept.
    learned: Mean,
    /// Each conversation's (user's) recall of the injected lines.
    per_conversation: Vec<(String, Mean)>,
    memory_lines: usize,
    snippet_lines: usize,
    chars: Mean,
}

impl EndToEndScores {
    /// Every question of `samples` asked of the replay (a copy of it: retrieval marks
    /// what it injects as used) and of both baselines.
    fn measure(
        samples: &[Sample],
        replay: &Replay,
        raw: &PlainFts,
        tuned: &PlainFts,
        speakers: Speakers,
    ) -> EndToEndScores {
        let subject = replay.subject.copy(NOW);
        let mut scores = EndToEndScores::default();
        for sample in samples {
            let alone = turn_index(std::slice::from_ref(sample), PORTER_TOKENIZER, speakers);
            subject.clock.set(replay.asked_at[&sample.id]);
            let mut own = Mean::default();
            let memories = subject.live(&sample.id);
            let learned: BTreeSet<String> = memories
                .iter()
                .flat_map(|m| replay.dataset_turns(&m.source_turns))
                .collect();
            for question in &sample.questions {
                let evidence = &question.evidence;
                let retrieval = subject
                    .brain
                    .retrieve(&sample.id, &question.text)
                    .expect("retrieve");
                let found = recall(evidence, &replay.dataset_turns(&injected_turns(&retrieval)));
                scores.engram.add(found);
                own.add(found);
                for line in &retrieval.lines {
                    match line.source {
                        Source::Memory { .. } => scores.memory_lines += 1,
                        Source::Message(_) => scores.snippet_lines += 1,
                    }
                }
                scores.chars.add(retrieval.block.chars().count() as f64);
                scores.raw_turns.add(recall(
                    evidence,
                    &raw.top(&sample.id, or_query(&question.text), TOP_K),
                ));
                scores.tuned.add(recall(
                    evidence,
                    &tuned.top(&sample.id, content_query(&question.text), TOP_K),
                ));
                scores.tuned_alone.add(recall(
                    evidence,
                    &alone.top(&sample.id, content_query(&question.text), TOP_K),
                ));
                scores.learned.add(recall(evidence, &learned));
            }
            scores.per_conversation.push((sample.id.clone(), own));
        }
        scores
    }

    fn report(&self, replay: &Replay, speakers: Speakers, table: &mut Table) {
        let tuned = self.tuned.value();
        table.recall_row(
            "evidence recall@5 of the injected lines, Brain::retrieve",
            self.engram.value(),
            &format!(
                "tuned lexical: FTS5 bm25 top 5 over {}, porter, stop words dropped",
                speakers.indexed()
            ),
            tuned,
        );
        table.row(
            "  per conversation, each its own user (the quick run: the first alone)",
            &self
                .per_conversation
                .iter()
                .map(|(id, mean)| format!("{id} {}", percent(mean.value())))
                .collect::<Vec<_>>()
                .join(", "),
            "",
            "",
        );
        table.recall_row(
            "  the same against the tuned lexical search over each user's turns alone",
            self.engram.value(),
            "tuned lexical, one FTS5 table per conversation (its user's bm25 statistics)",
            self.tuned_alone.value(),
        );
        table.recall_row(
            "  the same against plain FTS5",
            self.engram.value(),
            "FTS5 bm25 top 5 over the raw turns (unicode61, every word)",
            self.raw_turns.value(),
        );
        table.recall_row(
            "  extraction alone: recall over every live memory (no top 5)",
            self.learned.value(),
            "tuned lexical",
            tuned,
        );
        table.row(
            "  lines injected: memories / snippets; block length (mean)",
            &format!(
                "{} / {}; {:.0} chars",
                self.memory_lines,
                self.snippet_lines,
                self.chars.value()
            ),
            "",
            "",
        );
        table.row(
            "  memories extracted (candidates kept -> live memories)",
            &format!("{} -> {}", replay.candidates, replay.stored),
            "",
            &format!(
                "{} of {} conversations at the {MAX_FACTS_PER_CONVERSATION}-candidate limit",
                replay.at_limit, replay.conversations
            ),
        );
        replay.extraction.report(table);
        table.row(
            "  replay throughput (record + extract + resolve)",
            &format!("{:.1} conv/s", replay.conversations as f64 / replay.seconds),
            "",
            "",
        );
    }
}

fn replay(samples: &[Sample], strategies: &Strategies, speakers: Speakers) -> Replay {
    let first = samples
        .iter()
        .flat_map(|s| s.sessions.first())
        .map(|s| s.at)
        .min()
        .unwrap_or(NOW);
    let mut replay = Replay {
        subject: TestBrain::new(first),
        dia_ids: HashMap::new(),
        asked_at: HashMap::new(),
        conversations: 0,
        messages: 0,
        candidates: 0,
        at_limit: 0,
        stored: 0,
        seconds: 0.0,
        extraction: ExtractionScore::default(),
    };
    let started = Instant::now();
    for sample in samples {
        let cited: BTreeSet<String> = sample
            .facts
            .iter()
            .flat_map(|f| f.turns.iter().cloned())
            .collect();
        for (number, session) in sample.sessions.iter().enumerate() {
            replay.subject.clock.set(session.at);
            for (window, turns) in session.turns.chunks(WINDOW).enumerate() {
                let id = format!("{}-s{}-w{window}", sample.id, number + 1);
                let taught =
                    replay_window(&mut replay, &sample.id, &id, turns, strategies, speakers);
                let carries_fact = turns.iter().any(|t| cited.contains(&t.dia_id));
                replay.extraction.add(carries_fact, &taught, &cited);
            }
            let asked_at = replay.asked_at.entry(sample.id.clone()).or_insert(first);
            *asked_at = (*asked_at).max(session.at + DAY_MS);
        }
        replay.stored += replay.subject.live(&sample.id).len();
    }
    replay.seconds = started.elapsed().as_secs_f64();
    replay
}

/// One conversation: each turn a user message (with its speaker's name when the
/// variant has names), 30 s apart, then ended, which runs extraction and resolution.
/// Returns the source turns (`dia_id`s) of each memory its end taught.
fn replay_window(
    replay: &mut Replay,
    user: &str,
    conversation: &str,
    turns: &[Turn],
    strategies: &Strategies,
    speakers: Speakers,
) -> Vec<BTreeSet<String>> {
    let brain = &replay.subject.brain;
    for turn in turns {
        let name =
            Some(turn.speaker.as_str()).filter(|n| speakers == Speakers::Named && !n.is_empty());
        let host_id = brain
            .record_message(user, conversation, Role::User, name, &turn.text)
            .expect("record a message")
            .expect("learning is on");
        replay.dia_ids.insert(host_id, turn.dia_id.clone());
        replay.messages += 1;
        replay.subject.clock.advance(30_000);
    }
    let ingested = brain
        .end_conversation(user, conversation, strategies)
        .expect("end a conversation");
    replay.conversations += 1;
    replay.candidates += ingested.candidates;
    if ingested.candidates == MAX_FACTS_PER_CONVERSATION {
        replay.at_limit += 1;
    }
    let mut taught = Vec::new();
    for applied in &ingested.applied {
        let id = match applied {
            Applied::Added { id }
            | Applied::Superseded { id, .. }
            | Applied::Outvoted { id, .. } => id,
            Applied::Reinforced { .. } | Applied::Updated { .. } => continue,
            Applied::Rejected { reason } => {
                eprintln!("  {conversation}: a candidate was rejected: {reason}");
                continue;
            }
        };
        let record = brain.get(user, id).expect("a memory the replay taught");
        taught.push(replay.dataset_turns(&record.source_turns));
    }
    taught
}

// ---------------------------------------------------------------------------------
// c. Latency and size: 100k memories and 1M transcript messages for one user

/// The summary shapes of the synthetic memories (`common::synthetic_summary`): ten,
/// as in every earlier run, so that the same seed still gives the same store.
const SUMMARY_SHAPES: u64 = 10;
/// Messages per synthetic conversation.
const MESSAGES_PER_CONVERSATION: usize = 20;
/// The users beside [`ACTOR`] in the shared store of the latency section.
const OTHER_USERS: usize = 9;

/// A synthetic memory of `user` created some time in the last year; one in five has
/// sunk to the subconscious tier, as an older store's memories do.
fn synthetic_memory(rng: &mut Rng, user: &str, index: usize) -> MemoryRecord {
    let (memory_type, summary) = synthetic_summary(rng, SUMMARY_SHAPES);
    let at = NOW - rng.below(365 * DAY_MS as u64) as i64;
    let id = fixed_id(&format!("synthetic_{user}"), index);
    let mut record = memory(id, user, memory_type, &summary, &[], at);
    if rng.below(5) == 0 {
        record.prior_scope = Some(record.scope);
        record.scope = Scope::Subconscious;
    }
    record
}

/// Words of every frequency for the synthetic transcript: the whole words of the
/// MiniLM vocabulary, drawn with a Zipf-like (log-uniform rank) distribution, so that
/// a few words are everywhere and most are rare, as in real chat.
struct Vocabulary {
    words: Vec<&'static str>,
}

impl Vocabulary {
    fn new() -> Vocabulary {
        let vocab: &'static str = include_str!("../assets/minilm/vocab.txt");
        Vocabulary {
            words: vocab
                .lines()
                .filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_lowercase()))
                .collect(),
        }
    }

    fn draw(&self, rng: &mut Rng) -> &'static str {
        let n = self.words.len() as f64;
        let u = (rng.below(1 << 30) as f64 + 0.5) / f64::from(1u32 << 30);
        let rank = (n.powf(u) - 1.0) as usize;
        self.words[rank.min(self.words.len() - 1)]
    }
}

/// A chat message: one of six shapes mixing the word lists the queries draw from with
/// words of every frequency.
fn synthetic_message(rng: &mut Rng, vocabulary: &Vocabulary) -> String {
    let mut w = || vocabulary.draw(rng);
    let (a, b, c) = (w(), w(), w());
    match rng.below(6) {
        0 => format!(
            "I went {} at {} with {} {}, it was {a} and {b}.",
            rng.pick(ACTIVITIES),
            rng.pick(PLACES),
            rng.pick(NAMES),
            rng.pick(TIMES)
        ),
        1 => format!(
            "Did you see the {} {}? The {a} part was {b}, {c} really.",
            rng.pick(ADJECTIVES),
            rng.pick(THINGS)
        ),
        2 => format!(
            "My {} {} made {} {} and we talked about {a} and {b}.",
            rng.pick(RELATIONS),
            rng.pick(NAMES),
            rng.pick(FOODS),
            rng.pick(TIMES)
        ),
        3 => format!("Thanks! I'll look at the {a} {b} tomorrow."),
        4 => format!(
            "We should plan the {} around {a}, maybe near {}.",
            rng.pick(THINGS),
            rng.pick(PLACES)
        ),
        _ => format!("That sounds {a}. Have you thought about {b} or {c}?"),
    }
}

struct Percentiles {
    p50: Duration,
    p95: Duration,
}

impl Percentiles {
    /// A row of `table`: these percentiles beside `baseline`'s (`what` names it), and
    /// their ratios.
    fn row(&self, table: &mut Table, label: &str, baseline: &Percentiles, what: &str) {
        table.row(
            label,
            &format!("{} / {}", ms(self.p50), ms(self.p95)),
            &format!("{} / {} {what}", ms(baseline.p50), ms(baseline.p95)),
            &format!(
                "p50 {}, p95 {}",
                ratio(self.p50, baseline.p50),
                ratio(self.p95, baseline.p95)
            ),
        );
    }
}

/// Times `f` once per query per round, after one warm-up round.
fn percentiles(queries: &[String], rounds: usize, mut f: impl FnMut(&str)) -> Percentiles {
    for query in queries {
        f(query);
    }
    let mut samples = Vec::with_capacity(queries.len() * rounds);
    for _ in 0..rounds {
        for query in queries {
            let started = Instant::now();
            f(query);
            samples.push(started.elapsed());
        }
    }
    samples.sort();
    Percentiles {
        p50: samples[samples.len() / 2],
        p95: samples[samples.len() * 95 / 100],
    }
}

/// The store and the questions c and its runs with the model time: 100k memories and
/// 1M messages for one user (quick: 10k and 100k), 50 of an agent's questions, 10
/// rounds (quick: 2).
struct Workload {
    memories: usize,
    messages: usize,
    rounds: usize,
    queries: Vec<String>,
    /// The generator after the questions: the store is drawn from where it stands.
    rng: Rng,
}

impl Workload {
    fn new(quick: bool) -> Workload {
        let mut rng = Rng(0x5EED);
        Workload {
            memories: if quick { 10_000 } else { 100_000 },
            messages: if quick { 100_000 } else { 1_000_000 },
            rounds: if quick { 2 } else { 10 },
            queries: (0..50).map(|i| agent_question(&mut rng, i)).collect(),
            rng,
        }
    }
}

fn latency(quick: bool, table: &mut Table) {
    let Workload {
        memories,
        messages,
        rounds,
        queries,
        mut rng,
    } = Workload::new(quick);
    let subject = TestBrain::new(NOW);
    let dir = tempfile::tempdir().expect("temporary directory");
    let baseline_path = dir.path().join("plain-fts.db");
    let mut baseline = PlainFts::on_disk(&baseline_path);

    eprintln!("c. storing {memories} synthetic memories...");
    let records: Vec<MemoryRecord> = (0..memories)
        .map(|i| synthetic_memory(&mut rng, ACTOR, i))
        .collect();
    for chunk in records.chunks(10_000) {
        subject.insert(chunk);
    }
    baseline.insert(records.iter().map(|r| (ACTOR, r.summary.as_str(), &[][..])));
    drop(records);
    subject.brain.store().checkpoint().expect("checkpoint");
    baseline.checkpoint();
    let (engram_before, plain_before) = (
        database_bytes(subject.brain.store().path().expect("a SQLite store")),
        database_bytes(&baseline_path),
    );

    eprintln!("c. storing {messages} synthetic transcript messages...");
    let vocabulary = Vocabulary::new();
    let texts: Vec<String> = (0..messages)
        .map(|_| synthetic_message(&mut rng, &vocabulary))
        .collect();
    let started = Instant::now();
    bulk_messages(&subject, ACTOR, &texts);
    let bulk = started.elapsed();
    let started = Instant::now();
    baseline.insert(texts.iter().map(|t| (ACTOR, t.as_str(), &[][..])));
    let plain_bulk = started.elapsed();
    drop(texts);
    subject.brain.store().checkpoint().expect("checkpoint");
    baseline.checkpoint();

    table.section(&format!(
        "c. latency and size: one user with {}k memories and {}k transcript messages ({} queries x {rounds} rounds; the plain baseline 1 round)",
        memories / 1_000,
        messages / 1_000,
        queries.len()
    ));
    // Memory search ranks with an in-memory index of the memories' text, built at the
    // first search after opening: its cost, and the memory it holds.
    let started = Instant::now();
    subject
        .brain
        .search(ACTOR, "weekend", TOP_K)
        .expect("first search");
    let built = started.elapsed();
    table.row(
        "memory search index: first search (builds it) / heap it holds",
        &format!(
            "{} / {:.1} MiB",
            ms(built),
            subject.brain.store().text().heap_bytes() as f64 / (1024.0 * 1024.0)
        ),
        &format!("{}k memories", memories / 1_000),
        "",
    );
    eprintln!("c. timing retrieval...");
    let engram = percentiles(&queries, rounds, |text| {
        std::hint::black_box(subject.brain.retrieve(ACTOR, text).expect("retrieve"));
    });
    // The plain index scores every row holding any word of the message (a second or
    // more per query at this size): one round is enough for its percentiles.
    eprintln!("c. timing the plain FTS5 baseline...");
    let plain = percentiles(&queries, 1, |text| {
        std::hint::black_box(baseline.top(ACTOR, or_query(text), TOP_K));
    });
    // Closed before the Second Brain is timed again: the bundled SQLite is built with
    // SQLITE_ENABLE_MEMORY_MANAGEMENT, so every connection of the process shares one
    // page cache, and the baseline's last scans left the brain's readers none (every
    // read of theirs went to the file: the transcript's searches took 5x as long).
    drop(baseline);
    engram.row(
        table,
        "retrieval p50 / p95 (Brain::retrieve, both tiers, incl. its last_used_at commit)",
        &plain,
        "FTS5 top 5",
    );
    let said = percentiles(&queries, rounds, |text| {
        let found = subject.brain.search_hits(
            ACTOR,
            text,
            TOP_K,
            engram::memory::SearchScope::Conversations,
        );
        std::hint::black_box(found.expect("search"));
    });
    table.row(
        "  of which the transcript alone (search_hits, conversations, 5)",
        &format!("{} / {}", ms(said.p50), ms(said.p95)),
        "",
        "",
    );
    let per_100k = |bytes: u64| bytes as f64 * 100_000.0 / messages as f64 / 1e6;
    let engram_size = per_100k(
        database_bytes(subject.brain.store().path().expect("a SQLite store")) - engram_before,
    );
    let plain_size = per_100k(database_bytes(&baseline_path) - plain_before);
    table.row(
        "database size per 100k messages (.db + -wal, checkpointed)",
        &format!("{engram_size:.1} MB"),
        &format!("{plain_size:.1} MB FTS5 only"),
        &format!("{:.1}x", engram_size / plain_size),
    );
    table.row(
        "bulk build of the transcript (one transaction, FTS triggers)",
        &format!("{:.0} msg/s", messages as f64 / bulk.as_secs_f64()),
        &format!(
            "{:.0} msg/s FTS5 only",
            messages as f64 / plain_bulk.as_secs_f64()
        ),
        &ratio(plain_bulk, bulk),
    );

    // The same user beside others with as many rows each, in the same vocabulary,
    // written after theirs: the user's retrieval should not read the others' rows.
    eprintln!(
        "c. storing {OTHER_USERS} other users' {memories} memories and {messages} messages each..."
    );
    let shared = subject.copy(NOW);
    drop(subject);
    for other in 0..OTHER_USERS {
        let user = format!("other-{other}");
        let mut rng = Rng(0x07E5 + other as u64);
        let records: Vec<MemoryRecord> = (0..memories)
            .map(|i| synthetic_memory(&mut rng, &user, i))
            .collect();
        for chunk in records.chunks(10_000) {
            shared.insert(chunk);
        }
        drop(records);
        let texts: Vec<String> = (0..messages)
            .map(|_| synthetic_message(&mut rng, &vocabulary))
            .collect();
        bulk_messages(&shared, &user, &texts);
    }
    shared.brain.store().checkpoint().expect("checkpoint");
    shared.brain.warm().expect("the memory index");
    eprintln!("c. timing retrieval in the shared store...");
    let engram_shared = percentiles(&queries, rounds, |text| {
        std::hint::black_box(shared.brain.retrieve(ACTOR, text).expect("retrieve"));
    });
    let said_shared = percentiles(&queries, rounds, |text| {
        let found = shared.brain.search_hits(
            ACTOR,
            text,
            TOP_K,
            engram::memory::SearchScope::Conversations,
        );
        std::hint::black_box(found.expect("search"));
    });
    engram_shared.row(
        table,
        &format!(
            "retrieval p50 / p95, the same user in a store shared with {OTHER_USERS} others (as many rows each)"
        ),
        &engram,
        "alone",
    );
    table.row(
        "  of which the transcript alone (search_hits, conversations, 5)",
        &format!("{} / {}", ms(said_shared.p50), ms(said_shared.p95)),
        &format!("{} / {} alone", ms(said.p50), ms(said.p95)),
        "",
    );
}

/// `user`'s transcript written straight into the Second Brain's tables in one
/// transaction (its triggers keep the index), conversations of 20 messages spread over
/// the last year, already read by extraction. What `record_message` writes, without a
/// transaction per message.
fn bulk_messages(subject: &TestBrain, user: &str, texts: &[String]) {
    subject
        .brain
        .store()
        .write(engram::sql::Actor::System, |tx| {
            let tx = tx.as_sqlite().expect("the bench's store is a SQLite file");
            let mut conversation = tx.prepare(
                "INSERT INTO conversations (id, user_id, started_at, last_message_at, ended_at, extracted_seq) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            )?;
            let mut message = tx.prepare(
                "INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            let span = 365 * DAY_MS;
            for (c, chunk) in texts.chunks(MESSAGES_PER_CONVERSATION).enumerate() {
                let id = format!("synthetic-{user}-{c:07}");
                let start = NOW - span + (c * MESSAGES_PER_CONVERSATION) as i64 * span
                    / texts.len() as i64;
                let last = start + chunk.len() as i64 * 30_000;
                conversation.execute(params![id, user, start, last, chunk.len() as i64])?;
                for (i, text) in chunk.iter().enumerate() {
                    let role = if i % 2 == 0 { "user" } else { "assistant" };
                    message.execute(params![
                        format!("turn_synthetic_{user}_{c:07}_{i:02}"),
                        id,
                        user,
                        i as i64 + 1,
                        role,
                        text,
                        start + i as i64 * 30_000
                    ])?;
                }
            }
            Ok(())
        })
        .expect("bulk insert the transcript");
}

fn database_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    size(path) + size(Path::new(&wal))
}

// ---------------------------------------------------------------------------------
// d. Ingestion

/// Short conversations of 4 messages, three of them the user's, with the kinds of
/// facts the extractor reads.
fn synthetic_conversation(rng: &mut Rng) -> [(Role, String); 4] {
    [
        (
            Role::User,
            format!(
                "I went {} at {} with my {} {} {}.",
                rng.pick(ACTIVITIES),
                rng.pick(PLACES),
                rng.pick(RELATIONS),
                rng.pick(NAMES),
                rng.pick(TIMES)
            ),
        ),
        (
            Role::Assistant,
            "That sounds lovely! How did it go?".to_string(),
        ),
        (
            Role::User,
            format!(
                "Great. I really like {} but I don't like {}.",
                rng.pick(FOODS),
                rng.pick(FOODS)
            ),
        ),
        (
            Role::User,
            format!(
                "I'm working on a {} {} these days, any tips?",
                rng.pick(ADJECTIVES),
                rng.pick(THINGS)
            ),
        ),
    ]
}

fn ingestion_throughput(quick: bool, table: &mut Table) {
    let conversations = if quick { 50 } else { 200 };
    eprintln!("d. ingesting {conversations} synthetic conversations...");
    let mut rng = Rng(0xC0_FFEE);
    let scripts: Vec<_> = (0..conversations)
        .map(|_| synthetic_conversation(&mut rng))
        .collect();

    let config = tempfile::tempdir().expect("temporary directory");
    let rules = ingest(
        &strategies(config.path()),
        &scripts,
        "builtin:extract-rules",
    );
    table.section("d. ingestion");
    table.row(
        "record_message, one durable transaction each (transcript + index)",
        &format!("{:.0} msg/s", rules.messages_per_second),
        "",
        "",
    );
    table.row(
        &format!("{conversations} conversations x 4 messages with extraction, embedded strategies"),
        &format!("{:.1} conv/s", rules.per_second),
        "",
        &format!("{} live memories", rules.live),
    );

    // The same conversations through builtin:extract-llm, answered by the STAND-IN
    // endpoint on loopback (no model here): the figure is the host's own cost of an
    // LLM extractor (request, wasi:http, validation), not a model's latency.
    let stand_in = OpenAi::start(|_, request| Reply::Text(echo_facts(request)));
    let config = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        config.path().join("config.yaml"),
        format!(
            "memory:\n  strategies:\n    extractor: builtin:extract-llm\nplugins:\n  extract-llm:\n    settings: {{baseUrl: '{}', model: stand-in}}\n    allowedHosts: ['{}']\n",
            stand_in.base_url(),
            stand_in.host()
        ),
    )
    .expect("config");
    let llm = ingest(&strategies(config.path()), &scripts, "builtin:extract-llm");
    table.row(
        &format!(
            "same conversations, extract-llm vs a stand-in endpoint ({} requests)",
            stand_in.requests().len()
        ),
        &format!("{:.1} conv/s", llm.per_second),
        &format!("{:.1} conv/s", rules.per_second),
        &format!(
            "{} live memories; {:.2}x the rules' time",
            llm.live,
            rules.per_second / llm.per_second
        ),
    );
}

struct Ingested {
    per_second: f64,
    messages_per_second: f64,
    live: usize,
}

/// Records and ends every conversation in a new brain; every one must have been
/// extracted by `extractor` (a fallback would measure the wrong thing).
fn ingest(strategies: &Strategies, scripts: &[[(Role, String); 4]], extractor: &str) -> Ingested {
    let subject = TestBrain::new(NOW);
    let mut recording = Duration::ZERO;
    let started = Instant::now();
    for (i, script) in scripts.iter().enumerate() {
        let id = format!("conversation-{i}");
        for (role, text) in script {
            let t = Instant::now();
            subject
                .brain
                .record_message(ACTOR, &id, *role, None, text)
                .expect("record a message");
            recording += t.elapsed();
        }
        let ingested = subject
            .brain
            .end_conversation(ACTOR, &id, strategies)
            .expect("end a conversation");
        assert_eq!(ingested.extractor.as_deref(), Some(extractor));
    }
    let seconds = started.elapsed().as_secs_f64();
    Ingested {
        per_second: scripts.len() as f64 / seconds,
        messages_per_second: (scripts.len() * 4) as f64 / recording.as_secs_f64(),
        live: subject.live(ACTOR).len(),
    }
}

// ---------------------------------------------------------------------------------
// Output

fn percent(value: f64) -> String {
    format!("{:.1}%", value * 100.0)
}

/// Brain-specific rows of the shared table.
impl Table {
    /// A recall figure, the baseline's (named when `baseline_name` is not empty) and
    /// the difference in points.
    fn recall_row(&mut self, measure: &str, value: f64, baseline_name: &str, baseline: f64) {
        let baseline_cell = if baseline_name.is_empty() {
            String::new()
        } else {
            format!("{} {baseline_name}", percent(baseline))
        };
        self.row(
            measure,
            &percent(value),
            &baseline_cell,
            &format!("{:+.1} points", (value - baseline) * 100.0),
        );
    }
}

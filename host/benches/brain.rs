//! Second Brain benchmark: `cargo bench -p engram --bench brain` (`-- --quick` for a
//! short run). One run measures, and prints as one table:
//!
//! a. Retrieval quality on LoCoMo (`locomo/locomo-dev.json` under ENGRAM_BENCH_DATA,
//!    default `../shared/data`; question
//!    categories 1-4): each conversation's shipped `observation` facts stored as the
//!    memories of one user, `Brain::retrieve` for every question, evidence recall@5;
//!    the baseline is a plain FTS5 bm25 top 5 over the same facts. Diagnostic variants
//!    (porter stemming, stop words) isolate what each retrieval choice is worth.
//! b. End to end: every session replayed in windows of 4 turns through
//!    `record_message` + `end_conversation` with the real built-in WASM strategies, then
//!    recall@5 the same way; the baseline is FTS5 bm25 over the raw turns.
//! c. Retrieval latency p50/p95 at 1k, 10k and 100k synthetic memories (baseline: a
//!    plain FTS5 top 5 over the same summaries, on disk too), ingestion throughput with
//!    the embedded strategies and, in the same run, with builtin:extract-llm against a
//!    stand-in endpoint on loopback (the host's overhead of an LLM extractor), and the
//!    database size per 10k memories.
//!
//! recall@5 of a question = |evidence turns among the source turns of the returned
//! memories| / |evidence turns|, averaged over questions. Nothing is asserted: the
//! figures are for the note, and ratios are what to compare between machines.

mod common;
#[path = "../tests/support/stand_in.rs"]
mod stand_in;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::brain::Brain;
use engram::brain::ingest::{Applied, MAX_FACTS_PER_CONVERSATION};
use engram::brain::record::MemoryRecord;
use engram::brain::retrieve::{Retrieval, query_terms};
use engram::brain::store::{ListFilter, q};
use engram::config::ConfigFile;
use engram::runtime::packages::PluginPackages;
use engram::runtime::strategies::Strategies;
use engram::runtime::{DenyAllGate, HostServices, KvStore, NoMemories, Runtime, RuntimeOptions};
use engram::time::{DAY_MS, ManualClock};
use engram_strategies::model::{Evidence, MemoryType, Role, Scope};
use rusqlite::{Connection, params};
use serde_json::Value;

use stand_in::{Answer, StandIn};

use common::{
    ACTIVITIES, ADJECTIVES, FOODS, NAMES, PLACES, RELATIONS, Rng, THINGS, TIMES, Table,
    agent_question, bench_data, ms, ratio, synthetic_summary,
};

/// The fixed time of every run: recency is the same for every memory, so rankings
/// depend on the text alone and runs are reproducible.
const NOW: i64 = 1_790_000_000_000;
const TOP_K: usize = 5;
/// LoCoMo sessions are replayed in conversations of this many turns.
const WINDOW: usize = 4;
const ACTOR: &str = "bench";
/// FTS5's default tokenizer: what "plain FTS5" means in the baselines.
const PLAIN_TOKENIZER: &str = "unicode61";
/// The Second Brain's tokenizer (host/src/brain/schema.rs), for the variants.
const BRAIN_TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

fn main() {
    // `cargo bench` passes `--bench`; only `--quick` matters here.
    // `-- latency` (or any section name: locomo, latency, ingestion) runs only that.
    let quick = std::env::args().any(|a| a == "--quick");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |section: &str| only.is_empty() || only.iter().any(|o| o == section);
    let mut table = Table::default();
    let started = Instant::now();
    if wanted("locomo") {
        match bench_data("LoCoMo benchmarks", "locomo/locomo-dev.json")
            .and_then(|path| load_locomo(&path))
        {
            Some(samples) => {
                facts_quality(&samples, &mut table);
                end_to_end(&samples, quick, &mut table);
            }
            None => table.section("a/b. LoCoMo: skipped (data file missing, see above)"),
        }
    }
    if wanted("latency") {
        latency(quick, &mut table);
    }
    if wanted("ingestion") {
        ingestion_throughput(quick, &mut table);
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
    sessions: Vec<Vec<Turn>>,
    questions: Vec<Question>,
    /// Questions of categories 1-4 left out: no evidence turn to score against.
    without_evidence: usize,
}

struct Fact {
    text: String,
    turns: Vec<String>,
}

struct Turn {
    dia_id: String,
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
        .filter_map(Value::as_object)
        .flat_map(|by_speaker| by_speaker.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(parse_fact)
        .collect();
    let sessions = numbered_sessions(&value["conversation"], "")
        .into_iter()
        .filter_map(Value::as_array)
        .map(|turns| turns.iter().filter_map(parse_turn).collect())
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

/// The values of `session_<n><suffix>` keys in session order (`session_2` before
/// `session_10`); other keys such as `session_1_date_time` are left out.
fn numbered_sessions<'a>(object: &'a Value, suffix: &str) -> Vec<&'a Value> {
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
    found.into_iter().map(|(_, value)| value).collect()
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
    Some(Turn { dia_id, text })
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
#[derive(Default)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    fn add(&mut self, value: f64) {
        self.sum += value;
        self.n += 1;
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

/// Every word of `text`, quoted (so no word is FTS5 syntax) and OR-ed: the plainest
/// query that still ranks partial matches.
fn or_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

// ---------------------------------------------------------------------------------
// Engram under test

/// A Second Brain in its own temporary directory, on a clock that never moves.
struct TestBrain {
    brain: Brain,
    _dir: tempfile::TempDir,
}

impl TestBrain {
    fn new() -> TestBrain {
        let dir = tempfile::tempdir().expect("temporary directory");
        let brain = Brain::open(
            &dir.path().join("second-brain.db"),
            Arc::new(ManualClock::new(NOW)),
            engram::events::EventBus::default(),
        )
        .expect("open the Second Brain");
        TestBrain { brain, _dir: dir }
    }

    /// The source turns of the memories retrieved for `message`.
    fn retrieved_turns(&self, user: &str, message: &str) -> BTreeSet<String> {
        source_turns(&self.brain.retrieve(user, message).expect("retrieve"))
    }

    fn insert(&self, records: &[MemoryRecord]) {
        self.brain
            .store()
            .write(|tx| {
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

// ---------------------------------------------------------------------------------
// a. Retrieval quality over the observation facts

fn facts_quality(samples: &[Sample], table: &mut Table) {
    eprintln!("a. storing the observation facts and retrieving for every question...");
    let subject = store_facts(samples);
    let indexes = FactIndexes::new(samples);
    let mut scores = FactScores::default();
    for sample in samples {
        for question in &sample.questions {
            scores.add(&subject, &indexes, &sample.id, sample.facts.len(), question);
        }
    }
    let facts: usize = samples.iter().map(|s| s.facts.len()).sum();
    let left_out: usize = samples.iter().map(|s| s.without_evidence).sum();
    table.section(&format!(
        "a. LoCoMo observation facts as memories: {} conversations, {facts} memories, {} questions of categories 1-4 ({left_out} without evidence left out)",
        samples.len(),
        scores.engram.n
    ));
    scores.report(table);
}

/// Ids in insertion order instead of random ULIDs: retrieval breaks ties by id, so
/// random ids would make recall differ slightly from run to run.
fn fixed_id(prefix: &str, index: usize) -> String {
    format!("mem_{prefix}_{index:07}")
}

/// Each conversation's facts as the memories of one user, all of one type and stored at
/// the same time, so that only their text decides how they rank.
fn store_facts(samples: &[Sample]) -> TestBrain {
    let subject = TestBrain::new();
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
/// Second Brain's porter tokenizer (for the variants).
struct FactIndexes {
    plain: PlainFts,
    porter: PlainFts,
}

impl FactIndexes {
    fn new(samples: &[Sample]) -> FactIndexes {
        let mut plain = PlainFts::in_memory(PLAIN_TOKENIZER);
        let mut porter = PlainFts::in_memory(BRAIN_TOKENIZER);
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

/// The variants add one retrieval choice of the Second Brain at a time to the plain
/// baseline, to show what each is worth on this data.
const VARIANTS: [&str; 3] = [
    "variant: FTS5 + porter stemming",
    "variant: FTS5 + stop words dropped from the query",
    "variant: FTS5 + porter + stop words (Brain's ranking, no budget)",
];

#[derive(Default)]
struct FactScores {
    engram: Mean,
    baseline: Mean,
    variants: [Mean; 3],
    /// Questions for which the character budget dropped one of the top 5 candidates.
    budget_cut: usize,
    /// Share of the user's memories that a question's query matches: how much bm25
    /// has to score on real text (compare the synthetic latency data).
    matched: Mean,
}

impl FactScores {
    fn add(
        &mut self,
        subject: &TestBrain,
        indexes: &FactIndexes,
        user: &str,
        memories: usize,
        question: &Question,
    ) {
        let retrieval = subject
            .brain
            .retrieve(user, &question.text)
            .expect("retrieve");
        let evidence = &question.evidence;
        self.engram.add(recall(evidence, &source_turns(&retrieval)));
        if budget_cut_results(subject, user, &question.text, &retrieval) {
            self.budget_cut += 1;
        }
        self.matched
            .add(matching_memories(subject, user, &question.text) as f64 / memories as f64);
        let all_words = || or_query(&question.text);
        let content_words = || or_query(&query_terms(&question.text));
        let found = [
            indexes.plain.top(user, all_words(), TOP_K),
            indexes.porter.top(user, all_words(), TOP_K),
            indexes.plain.top(user, content_words(), TOP_K),
            indexes.porter.top(user, content_words(), TOP_K),
        ];
        let means = std::iter::once(&mut self.baseline).chain(self.variants.iter_mut());
        for (mean, found) in means.zip(&found) {
            mean.add(recall(evidence, found));
        }
    }

    fn report(&self, table: &mut Table) {
        let baseline = self.baseline.value();
        table.recall_row(
            "evidence recall@5, Brain::retrieve (top 5 within 900 chars)",
            self.engram.value(),
            "FTS5 bm25 top 5 over the facts",
            baseline,
        );
        for (name, mean) in VARIANTS.iter().zip(&self.variants) {
            table.recall_row(&format!("  {name}"), mean.value(), "", baseline);
        }
        table.row(
            "  questions whose results the 900-char budget cut",
            &format!("{} of {}", self.budget_cut, self.engram.n),
            "",
            "",
        );
        table.row(
            "  share of the user's memories a question matches (mean)",
            &percent(self.matched.value()),
            "",
            "",
        );
    }
}

/// Whether the character budget made `retrieval` hold fewer memories than the top 5
/// candidates it had (read-only: `Brain::search` marks nothing as used).
fn budget_cut_results(subject: &TestBrain, user: &str, text: &str, retrieval: &Retrieval) -> bool {
    let candidates = subject
        .brain
        .search(user, &query_terms(text), TOP_K)
        .expect("search")
        .into_iter()
        .filter(|hit| hit.conscious)
        .count();
    retrieval.memories.len() < candidates
}

/// How many memories of `user` the retrieval query matches (the search is capped at
/// 500, more than any LoCoMo conversation has facts).
fn matching_memories(subject: &TestBrain, user: &str, text: &str) -> usize {
    subject
        .brain
        .search(user, &query_terms(text), 500)
        .expect("search")
        .len()
}

fn source_turns(retrieval: &Retrieval) -> BTreeSet<String> {
    retrieval
        .memories
        .iter()
        .flat_map(|m| m.record.source_turns.iter().cloned())
        .collect()
}

// ---------------------------------------------------------------------------------
// b. End to end: replayed sessions through the extraction pipeline

/// What the replay stored, and how to read its turn ids back as the data set's.
struct Replay {
    subject: TestBrain,
    /// Host turn id -> LoCoMo `dia_id`.
    dia_ids: HashMap<String, String>,
    conversations: usize,
    candidates: usize,
    /// Conversations whose candidates were cut to the per-conversation limit.
    at_limit: usize,
    stored: usize,
    seconds: f64,
}

fn end_to_end(samples: &[Sample], quick: bool, table: &mut Table) {
    // The quick run replays one conversation: the replay is the slow part.
    let samples = if quick { &samples[..1] } else { samples };
    eprintln!(
        "b. replaying {} conversations through the extraction pipeline...",
        samples.len()
    );
    let config = tempfile::tempdir().expect("temporary directory");
    let strategies = strategies(config.path());
    let replay = replay(samples, &strategies);
    let raw = raw_turn_index(samples);
    let mut scores = EndToEndScores::default();
    for sample in samples {
        let memories = replay.subject.live(&sample.id);
        let extracted = extracted_index(&replay, &sample.id, &memories);
        let stored: BTreeSet<String> = memories
            .iter()
            .flat_map(|m| replay.dataset_turns(&m.source_turns))
            .collect();
        for question in &sample.questions {
            let evidence = &question.evidence;
            let retrieved = replay.subject.retrieved_turns(&sample.id, &question.text);
            let query = || or_query(&question.text);
            scores
                .engram
                .add(recall(evidence, &replay.dataset_turns(&retrieved)));
            scores
                .raw_turns
                .add(recall(evidence, &raw.top(&sample.id, query(), TOP_K)));
            scores
                .extracted
                .add(recall(evidence, &extracted.top(&sample.id, query(), TOP_K)));
            scores.ceiling.add(recall(evidence, &stored));
        }
    }
    let turns: usize = samples.iter().flat_map(|s| &s.sessions).map(Vec::len).sum();
    table.section(&format!(
        "b. end to end: {} conversations, {turns} turns replayed as {} conversations of <= {WINDOW} turns, {} questions",
        samples.len(),
        replay.conversations,
        scores.engram.n
    ));
    scores.report(&replay, table);
}

/// The baseline of the end-to-end run: every raw turn a document, with its own id.
fn raw_turn_index(samples: &[Sample]) -> PlainFts {
    let mut raw = PlainFts::in_memory(PLAIN_TOKENIZER);
    for sample in samples {
        raw.insert(sample.sessions.iter().flatten().map(|turn| {
            (
                sample.id.as_str(),
                turn.text.as_str(),
                std::slice::from_ref(&turn.dia_id),
            )
        }));
    }
    raw
}

/// Plain FTS5 over the memories the replay extracted: separates what extraction loses
/// from what retrieval loses.
fn extracted_index(replay: &Replay, user: &str, memories: &[MemoryRecord]) -> PlainFts {
    let mut index = PlainFts::in_memory(PLAIN_TOKENIZER);
    let turns: Vec<Vec<String>> = memories
        .iter()
        .map(|m| replay.dataset_turns(&m.source_turns).into_iter().collect())
        .collect();
    index.insert(
        memories
            .iter()
            .zip(&turns)
            .map(|(m, turns)| (user, m.summary.as_str(), turns.as_slice())),
    );
    index
}

#[derive(Default)]
struct EndToEndScores {
    engram: Mean,
    raw_turns: Mean,
    extracted: Mean,
    /// Recall if every live memory were returned: the most extraction left to find.
    ceiling: Mean,
}

impl EndToEndScores {
    fn report(&self, replay: &Replay, table: &mut Table) {
        let baseline = self.raw_turns.value();
        table.recall_row(
            "evidence recall@5, extracted memories + Brain::retrieve",
            self.engram.value(),
            "FTS5 bm25 top 5 over the raw turns",
            baseline,
        );
        table.recall_row(
            "  variant: FTS5 top 5 over the same extracted memories",
            self.extracted.value(),
            "",
            baseline,
        );
        table.recall_row(
            "  ceiling: recall over every live memory (no top 5)",
            self.ceiling.value(),
            "",
            baseline,
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
        table.row(
            "  replay throughput",
            &format!("{:.1} conv/s", replay.conversations as f64 / replay.seconds),
            "",
            "",
        );
    }
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

fn replay(samples: &[Sample], strategies: &Strategies) -> Replay {
    let mut replay = Replay {
        subject: TestBrain::new(),
        dia_ids: HashMap::new(),
        conversations: 0,
        candidates: 0,
        at_limit: 0,
        stored: 0,
        seconds: 0.0,
    };
    let started = Instant::now();
    for sample in samples {
        for (session, turns) in sample.sessions.iter().enumerate() {
            for (window, turns) in turns.chunks(WINDOW).enumerate() {
                let id = format!("{}-s{}-w{window}", sample.id, session + 1);
                replay_window(&mut replay, &sample.id, &id, turns, strategies);
            }
        }
        replay.stored += replay.subject.live(&sample.id).len();
    }
    replay.seconds = started.elapsed().as_secs_f64();
    replay
}

/// One conversation: both speakers' turns as the user's messages (the extractor reads
/// only the user's), then ended, which runs extraction and resolution.
fn replay_window(
    replay: &mut Replay,
    user: &str,
    conversation: &str,
    turns: &[Turn],
    strategies: &Strategies,
) {
    let brain = &replay.subject.brain;
    for turn in turns {
        let host_id = brain
            .record_message(user, conversation, Role::User, &turn.text)
            .expect("record a message");
        replay.dia_ids.insert(host_id, turn.dia_id.clone());
    }
    let ingested = brain
        .end_conversation(user, conversation, strategies)
        .expect("end a conversation");
    replay.conversations += 1;
    replay.candidates += ingested.candidates;
    if ingested.candidates == MAX_FACTS_PER_CONVERSATION {
        replay.at_limit += 1;
    }
    for applied in &ingested.applied {
        if let Applied::Rejected { reason } = applied {
            eprintln!("  {conversation}: a candidate was rejected: {reason}");
        }
    }
}

// ---------------------------------------------------------------------------------
// c. Latency, size and throughput on synthetic memories

/// The summary shapes the synthetic memories are drawn from (`common::synthetic_summary`):
/// ten, as in every earlier run, so that the same seed still gives the same store.
const SUMMARY_SHAPES: u64 = 10;

/// A synthetic memory created some time in the last year; one in five has sunk to the
/// subconscious tier, as an older store's memories do.
fn synthetic_memory(rng: &mut Rng, index: usize) -> MemoryRecord {
    let (memory_type, summary) = synthetic_summary(rng, SUMMARY_SHAPES);
    let at = NOW - rng.below(365 * DAY_MS as u64) as i64;
    let id = fixed_id("synthetic", index);
    let mut record = memory(id, ACTOR, memory_type, &summary, &[], at);
    if rng.below(5) == 0 {
        record.prior_scope = Some(record.scope);
        record.scope = Scope::Subconscious;
    }
    record
}

/// The messages retrieval runs for: what a user says to an agent.
fn synthetic_queries(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n).map(|i| agent_question(rng, i)).collect()
}

struct Percentiles {
    p50: Duration,
    p95: Duration,
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

fn latency(quick: bool, table: &mut Table) {
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let rounds = if quick { 2 } else { 10 };
    let mut rng = Rng(0x5EED);
    let queries = synthetic_queries(&mut rng, 50);
    let subject = TestBrain::new();
    let dir = tempfile::tempdir().expect("temporary directory");
    let baseline_path = dir.path().join("plain-fts.db");
    let mut baseline = PlainFts::on_disk(&baseline_path);
    table.section(&format!(
        "c. latency on synthetic memories ({} queries x {rounds} rounds; Engram: retrieve incl. its last_used_at commit)",
        queries.len()
    ));
    let mut stored = 0;
    for &size in sizes {
        eprintln!("c. growing the synthetic store to {size} memories...");
        let records: Vec<MemoryRecord> = (stored..size)
            .map(|i| synthetic_memory(&mut rng, i))
            .collect();
        subject.insert(&records);
        baseline.insert(records.iter().map(|r| (ACTOR, r.summary.as_str(), &[][..])));
        stored = size;
        latency_rows(&subject, &baseline, &queries, rounds, size, table);
        if size >= 10_000 {
            size_row(&subject, &baseline, &baseline_path, size, table);
        }
    }
}

fn latency_rows(
    subject: &TestBrain,
    baseline: &PlainFts,
    queries: &[String],
    rounds: usize,
    size: usize,
    table: &mut Table,
) {
    let engram = percentiles(queries, rounds, |text| {
        std::hint::black_box(subject.brain.retrieve(ACTOR, text).expect("retrieve"));
    });
    let search = percentiles(queries, rounds, |text| {
        let found = subject.brain.search(ACTOR, &query_terms(text), 50);
        std::hint::black_box(found.expect("search"));
    });
    let plain = percentiles(queries, rounds, |text| {
        std::hint::black_box(baseline.top(ACTOR, or_query(text), TOP_K));
    });
    let label = format!("{}k", size / 1_000);
    table.row(
        &format!("retrieval p50 / p95, {label} memories"),
        &format!("{} / {}", ms(engram.p50), ms(engram.p95)),
        &format!("{} / {} FTS5 top 5", ms(plain.p50), ms(plain.p95)),
        &format!(
            "p50 {}, p95 {}",
            ratio(engram.p50, plain.p50),
            ratio(engram.p95, plain.p95)
        ),
    );
    table.row(
        &format!("  of which candidate search (Brain::search, 50, no write), {label}"),
        &format!("{} / {}", ms(search.p50), ms(search.p95)),
        "",
        "",
    );
    let fts_only = percentiles(queries, rounds, |text| {
        std::hint::black_box(internals::fts_top(subject, text, 50));
    });
    table.row(
        &format!("  variant: bm25 top 50 on the Brain's FTS index alone (no join), {label}"),
        &format!("{} / {}", ms(fts_only.p50), ms(fts_only.p95)),
        "",
        "",
    );
    let matches: usize = queries
        .iter()
        .map(|text| internals::fts_matches(subject, text))
        .sum();
    table.row(
        &format!("  memories matching a query (mean), {label}"),
        &format!("{:.0}", matches as f64 / queries.len() as f64),
        "",
        "",
    );
}

/// Diagnostics that read the Second Brain's own tables (host/src/brain/schema.rs). Not
/// its API: only to explain where time and space go.
mod internals {
    use engram::brain::retrieve::query_terms;
    use engram::brain::store::q;

    use super::TestBrain;

    /// The rowids of the best `k` matches, ranked as `q::search` ranks them but
    /// without reading the memories they stand for.
    pub fn fts_top(subject: &TestBrain, text: &str, k: usize) -> Vec<i64> {
        let Some(query) = q::fts_query(&query_terms(text)) else {
            return Vec::new();
        };
        subject
            .brain
            .store()
            .read(|c| {
                let mut stmt = c.prepare_cached(
                    "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY bm25(memories_fts, 1.0, 0.5) LIMIT ?2",
                )?;
                let rows = stmt
                    .query_map(rusqlite::params![query, k as i64], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()?;
                Ok(rows)
            })
            .expect("FTS top k")
    }

    /// How many memories the retrieval query matches: what bm25 has to score.
    pub fn fts_matches(subject: &TestBrain, text: &str) -> usize {
        let Some(query) = q::fts_query(&query_terms(text)) else {
            return 0;
        };
        subject
            .brain
            .store()
            .read(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
                    [query],
                    |row| row.get::<_, i64>(0),
                )?)
            })
            .expect("count matches") as usize
    }

    /// Bytes of JSON the history keeps (every ADD stores the whole record).
    pub fn history_bytes(subject: &TestBrain) -> u64 {
        subject
            .brain
            .store()
            .read(|c| {
                Ok(c.query_row(
                    "SELECT total(length(old_value)) + total(length(new_value)) FROM history",
                    [],
                    |row| row.get::<_, f64>(0),
                )?)
            })
            .expect("history size") as u64
    }
}

/// Database size per 10k memories at `size` memories: the main file and its WAL after
/// a checkpoint, and how much of it is history.
fn size_row(
    subject: &TestBrain,
    baseline: &PlainFts,
    baseline_path: &Path,
    size: usize,
    table: &mut Table,
) {
    subject.brain.store().checkpoint().expect("checkpoint");
    baseline.checkpoint();
    let per_10k = |bytes: u64| bytes as f64 * 10_000.0 / size as f64 / 1e6;
    let engram = per_10k(database_bytes(subject.brain.store().path()));
    let plain = per_10k(database_bytes(baseline_path));
    table.row(
        &format!(
            "database size per 10k memories, at {}k (.db + -wal, checkpointed)",
            size / 1_000
        ),
        &format!("{engram:.2} MB"),
        &format!("{plain:.2} MB FTS5 only"),
        &format!("{:.1}x", engram / plain),
    );
    table.row(
        "  of which history JSON (one ADD row per memory)",
        &format!("{:.2} MB", per_10k(internals::history_bytes(subject))),
        "",
        "",
    );
}

fn database_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    size(path) + size(Path::new(&wal))
}

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
    eprintln!("c. ingesting {conversations} synthetic conversations...");
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
    table.row(
        &format!("ingestion, {conversations} conversations x 4 messages, embedded strategies"),
        &format!("{:.1} conv/s", rules.per_second),
        "",
        &format!("{} live memories", rules.live),
    );

    // The same conversations through builtin:extract-llm, answered by the STAND-IN
    // endpoint on loopback (no model here): the figure is the host's own cost of an
    // LLM extractor (request, wasi:http, validation), not a model's latency.
    let stand_in = StandIn::start(Answer::Echo);
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
            "ingestion, same conversations, extract-llm vs a stand-in endpoint ({} requests)",
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
    live: usize,
}

/// Records and ends every conversation in a new brain; every one must have been
/// extracted by `extractor` (a fallback would measure the wrong thing).
fn ingest(strategies: &Strategies, scripts: &[[(Role, String); 4]], extractor: &str) -> Ingested {
    let subject = TestBrain::new();
    let started = Instant::now();
    for (i, script) in scripts.iter().enumerate() {
        let id = format!("conversation-{i}");
        for (role, text) in script {
            subject
                .brain
                .record_message(ACTOR, &id, *role, text)
                .expect("record a message");
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

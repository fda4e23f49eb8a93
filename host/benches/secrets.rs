//! Secret detector benchmark: `cargo bench -p engram-host --bench secrets` (`-- --quick` for
//! a short run). One run measures, and prints:
//!
//! a. Every finding of `engram_strategies::secrets::find` (all kinds on), with the text
//!    around it, in the LoCoMo dev conversations (`locomo/locomo-dev.json` under
//!    ENGRAM_BENCH_DATA, default `../shared/data`: each turn with its photo's caption,
//!    as benches/brain.rs replays it; then every other string of the file: session
//!    summaries, observations, questions, answers) and in the registry mirror's
//!    SKILL.md texts (tests/fixtures/registry-mirror). Those texts hold no real
//!    secret: a finding there is a false positive unless the text gives a value as a
//!    secret (a test card number typed into a payment form, say).
//! b. Throughput of `secrets::find` over the same texts (MB/s, messages/s), against
//!    two passes over the same texts in the same run: `str::to_lowercase` (one pass
//!    that touches every byte: a floor) and `analyser::terms` (the words and stems the
//!    index and the extractor take from every message anyway). Best of alternating
//!    rounds, so that a busy machine slows both sides alike.
//! c. Ingestion: LoCoMo turns through `Brain::record_message`, one durable transaction
//!    each, with `secrets::redact` before each write and without, alternating runs on
//!    fresh databases. Issue 28 wants the ratio at 0.8x or above.
//!
//! Nothing is asserted: the registry mirror's findings are pinned by the strategies
//! crate's own test (secrets::tests::registry_mirror_findings_are_the_known_ones).

#[allow(dead_code)] // the daemon, the synthetic text and some formatters are for other benches
mod common;

use std::borrow::Cow;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::memory::Brain;
use engram::time::ManualClock;
use engram_strategies::analyser;
use engram_strategies::model::Role;
use engram_strategies::secrets::{self, KindSet};
use serde_json::Value;

use common::{Table, bench_data};

const NOW: i64 = 1_790_000_000_000;
const ACTOR: &str = "bench";
/// Bytes of text printed on each side of a finding.
const AROUND: usize = 60;

/// Texts of one source, each with where it comes from.
struct Corpus {
    name: String,
    /// What one text is, for the rates ("msg", "skill").
    unit: &'static str,
    texts: Vec<(String, String)>,
}

impl Corpus {
    fn bytes(&self) -> usize {
        self.texts.iter().map(|(_, text)| text.len()).sum()
    }
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let locomo = bench_data("LoCoMo dev conversations", "locomo/locomo-dev.json")
        .map(|path| load_locomo(&path));
    let mirror = load_registry_mirror();

    println!("a. findings (every one, with the text around it)");
    if let Some((turns, other)) = &locomo {
        print_findings(turns);
        print_findings(other);
    }
    print_findings(&mirror);
    println!();

    let mut table = Table::default();
    table.section("b. throughput of secrets::find (best of alternating rounds)");
    let rounds = if quick { 3 } else { 9 };
    if let Some((turns, _)) = &locomo {
        throughput(turns, rounds, &mut table);
    }
    throughput(&mirror, rounds, &mut table);
    if let Some((turns, _)) = &locomo {
        let messages = if quick { 300 } else { 1_000 };
        let rounds = if quick { 2 } else { 3 };
        ingestion(turns, messages, rounds, &mut table);
    }
    table.print();
}

/// The turns (with their photo captions) of every conversation, and every other
/// string of the file.
fn load_locomo(path: &Path) -> (Corpus, Corpus) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let root: Value = serde_json::from_str(&text).expect("locomo-dev.json is not valid JSON");
    let samples = root
        .as_array()
        .expect("locomo-dev.json is not a list of conversations");
    let mut turns = Vec::new();
    let mut other = Vec::new();
    for (index, sample) in samples.iter().enumerate() {
        let id = sample["sample_id"]
            .as_str()
            .map_or_else(|| format!("sample-{index}"), str::to_string);
        for (key, value) in sample.as_object().into_iter().flatten() {
            if key == "conversation" {
                for (session, value) in value.as_object().into_iter().flatten() {
                    match value.as_array() {
                        Some(session_turns) => {
                            for turn in session_turns {
                                turns.extend(turn_text(&id, turn));
                            }
                        }
                        None => strings(value, &format!("{id} {session}"), &mut other),
                    }
                }
            } else {
                strings(value, &format!("{id} {key}"), &mut other);
            }
        }
    }
    let count = turns.len();
    (
        Corpus {
            name: format!("LoCoMo dev turns ({count} messages)"),
            unit: "msg",
            texts: turns,
        },
        Corpus {
            name: format!("LoCoMo dev, other strings ({} texts)", other.len()),
            unit: "text",
            texts: other,
        },
    )
}

/// A turn's text with its photo's caption, as benches/brain.rs records it.
fn turn_text(sample: &str, turn: &Value) -> Option<(String, String)> {
    let mut text = turn["text"].as_str()?.trim().to_string();
    if let Some(caption) = turn["blip_caption"].as_str() {
        text.push_str(&format!(" [shares a photo of {caption}]"));
    }
    let dia_id = turn["dia_id"].as_str().unwrap_or("?");
    Some((format!("{sample} {dia_id}"), text))
}

/// Every string under `value`, each with its place.
fn strings(value: &Value, place: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) => out.push((place.to_string(), text.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, &format!("{place}[{i}]"), out);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                strings(item, &format!("{place}.{key}"), out);
            }
        }
        _ => {}
    }
}

/// The registry mirror's SKILL.md texts, in path order.
fn load_registry_mirror() -> Corpus {
    let categories =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/registry-mirror/categories");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&categories)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", categories.display()))
        .flat_map(|category| {
            let category = category.expect("a category").path();
            std::fs::read_dir(&category)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", category.display()))
                .map(|skill| skill.expect("a skill").path().join("SKILL.md"))
        })
        .collect();
    paths.sort();
    let texts: Vec<(String, String)> = paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let place = path
                .strip_prefix(&categories)
                .unwrap_or(path)
                .display()
                .to_string();
            (place, text)
        })
        .collect();
    Corpus {
        name: format!("registry mirror SKILL.md ({} skills)", texts.len()),
        unit: "skill",
        texts,
    }
}

fn print_findings(corpus: &Corpus) {
    let mut count = 0;
    println!("  {}:", corpus.name);
    for (place, text) in &corpus.texts {
        for finding in secrets::find(text, KindSet::all()) {
            count += 1;
            let before = text.floor_char_boundary(finding.start.saturating_sub(AROUND));
            let after = text.ceil_char_boundary((finding.end + AROUND).min(text.len()));
            println!(
                "    {place}: {} {:?}\n      in {:?}",
                finding.kind,
                &text[finding.start..finding.end],
                &text[before..after]
            );
        }
    }
    println!("    {count} findings in {} texts", corpus.texts.len());
}

/// The best time of each pass over the corpus, rounds alternating between them.
fn throughput(corpus: &Corpus, rounds: usize, table: &mut Table) {
    let texts: Vec<&str> = corpus.texts.iter().map(|(_, text)| text.as_str()).collect();
    let mut detector = Duration::MAX;
    let mut lowercase = Duration::MAX;
    let mut terms = Duration::MAX;
    for _ in 0..rounds {
        detector = detector.min(timed(|| {
            for text in &texts {
                black_box(secrets::find(black_box(text), KindSet::all()));
            }
        }));
        lowercase = lowercase.min(timed(|| {
            for text in &texts {
                black_box(black_box(text).to_lowercase());
            }
        }));
        terms = terms.min(timed(|| {
            for text in &texts {
                black_box(analyser::terms(black_box(text)));
            }
        }));
    }
    let megabytes = corpus.bytes() as f64 / 1e6;
    let rate = |time: Duration| {
        format!(
            "{:.1} MB/s, {:.0} {}/s",
            megabytes / time.as_secs_f64(),
            texts.len() as f64 / time.as_secs_f64(),
            corpus.unit
        )
    };
    let per_text = detector.as_secs_f64() * 1e6 / texts.len() as f64;
    let unit = corpus.unit;
    table.row(
        &format!("{}, {megabytes:.2} MB: find", corpus.name),
        &rate(detector),
        &format!("to_lowercase {}", rate(lowercase)),
        &format!(
            "{:.2}x the time ({per_text:.2} us a {unit})",
            detector.as_secs_f64() / lowercase.as_secs_f64()
        ),
    );
    table.row(
        &format!("{}: find vs analyser::terms", corpus.name),
        &rate(detector),
        &format!("terms {}", rate(terms)),
        &format!(
            "{:.2}x the time",
            detector.as_secs_f64() / terms.as_secs_f64()
        ),
    );
}

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

/// `messages` LoCoMo turns recorded one durable transaction each (4 to a
/// conversation), redacted first or not, in alternating runs on fresh databases.
fn ingestion(turns: &Corpus, messages: usize, rounds: usize, table: &mut Table) {
    let texts: Vec<&str> = turns
        .texts
        .iter()
        .take(messages)
        .map(|(_, text)| text.as_str())
        .collect();
    eprintln!(
        "c. recording {} messages x {rounds} rounds, with and without redaction...",
        texts.len()
    );
    let mut with = Duration::ZERO;
    let mut without = Duration::ZERO;
    let mut ratios = Vec::new();
    for round in 0..rounds {
        // Alternate which side runs first, so that neither always meets a warmer cache.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut times = [Duration::ZERO; 2];
        for redacting in order {
            times[usize::from(redacting)] = record_all(&texts, redacting);
        }
        without += times[0];
        with += times[1];
        ratios.push(times[0].as_secs_f64() / times[1].as_secs_f64());
    }
    let total = (texts.len() * rounds) as f64;
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(0.0, f64::max);
    table.section("c. ingestion: record_message, one durable transaction each");
    table.row(
        &format!(
            "{} LoCoMo turns x {rounds} rounds, redact then record",
            texts.len()
        ),
        &format!("{:.0} msg/s", total / with.as_secs_f64()),
        &format!("record only {:.0} msg/s", total / without.as_secs_f64()),
        &format!(
            "{:.3}x the throughput (rounds {low:.3}x to {high:.3}x)",
            without.as_secs_f64() / with.as_secs_f64()
        ),
    );
}

/// The time to record every text in a new Second Brain.
fn record_all(texts: &[&str], redacting: bool) -> Duration {
    let dir = tempfile::tempdir().expect("temporary directory");
    let brain = Brain::open(
        &dir.path().join("second-brain.db"),
        Arc::new(ManualClock::new(NOW)),
        engram::events::EventBus::default(),
    )
    .expect("open the Second Brain");
    let started = Instant::now();
    for (i, text) in texts.iter().enumerate() {
        let conversation = format!("conversation-{}", i / 4);
        let stored = if redacting {
            secrets::redact(text, KindSet::all()).text
        } else {
            Cow::Borrowed(*text)
        };
        brain
            .record_message(ACTOR, &conversation, Role::User, None, &stored)
            .expect("record a message");
    }
    started.elapsed()
}

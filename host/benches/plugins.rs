//! Plugin runtime benchmark: `cargo bench -p engram-host --bench plugins`.
//!
//! Each strategy is measured through the real runtime (a new store, instantiation, the
//! call and the drop: what the daemon does per call) and natively, as the baseline, in
//! the same process; loading a component from the compile cache is compared with
//! compiling it. Figures are medians over many samples; ratios are what to compare
//! between machines.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use engram::config::PluginConfig;
use engram::runtime::{FixedSettings, Runtime, RuntimeOptions};
use engram_strategies::model::{Candidate, Evidence, MemoryType};
use support::openai::{OpenAi, Reply, echo_facts};
use support::*;

struct Stats {
    median: Duration,
    p95: Duration,
}

/// Runs `f` until `budget` is spent (at least `min_samples` times), after a warm-up.
fn measure(budget: Duration, min_samples: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..3 {
        f();
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < min_samples || start.elapsed() < budget {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
        if samples.len() >= 200_000 {
            break;
        }
    }
    samples.sort();
    Stats {
        median: samples[samples.len() / 2],
        p95: samples[samples.len() * 95 / 100],
    }
}

fn us(d: Duration) -> String {
    format!("{:>10.2} µs", d.as_secs_f64() * 1e6)
}

fn row(name: &str, s: &Stats, baseline: Option<&Stats>) {
    let ratio = baseline
        .map(|b| format!("{:>9.1}x", s.median.as_secs_f64() / b.median.as_secs_f64()))
        .unwrap_or_default();
    println!(
        "{name:<48} median {} p95 {} {ratio}",
        us(s.median),
        us(s.p95)
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing useful.
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = if quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(3)
    };
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let runtime = runtime_with_cache(Some(cache_dir.path().to_path_buf()));

    println!("== strategies: runtime call (store + instantiate + call + drop) vs native baseline");
    let conversation = conversation();
    let extract = runtime.load_builtin("extract-rules").expect("load");
    let native = measure(budget, 100, || {
        black_box(engram_strategies::extract::extract(
            black_box(&conversation),
            NOW,
        ));
    });
    let wasm = measure(budget, 100, || {
        black_box(
            runtime
                .extract(&extract, &conversation, NOW)
                .expect("extract"),
        );
    });
    row("extract-rules native (baseline)", &native, None);
    row("extract-rules via runtime", &wasm, Some(&native));

    // builtin:extract-llm against the STAND-IN endpoint on loopback (no model here):
    // settings, the request through wasi:http, the answer's validation. Baseline: the
    // rule extractor through the runtime, measured just above.
    let stand_in = OpenAi::start(|_, request| Reply::Text(echo_facts(request)));
    let settings = FixedSettings {
        plugins: [(
            "extract-llm".to_string(),
            PluginConfig {
                settings: serde_json::json!({"baseUrl": stand_in.base_url(), "model": "stand-in"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                allowed_hosts: Some(vec![stand_in.host()]),
                private_hosts: None,
            },
        )]
        .into(),
        vars: Default::default(),
    };
    let llm_runtime = Runtime::new(
        RuntimeOptions {
            cache_dir: Some(cache_dir.path().to_path_buf()),
            ..RuntimeOptions::default()
        },
        services().with_settings(Arc::new(settings)),
    )
    .expect("runtime");
    let llm = llm_runtime.load_builtin("extract-llm").expect("load");
    let via_http = measure(budget, 100, || {
        black_box(
            llm_runtime
                .extract(&llm, &conversation, NOW)
                .expect("extract-llm"),
        );
    });
    row(
        "extract-llm via runtime + stand-in endpoint",
        &via_http,
        Some(&wasm),
    );
    println!(
        "  (ratio vs extract-rules via runtime; {} requests served)",
        stand_in.requests().len()
    );

    let resolve = runtime.load_builtin("resolve-default").expect("load");
    let related: Vec<_> = snapshot().memories.into_iter().take(5).collect();
    let candidate = Candidate {
        memory_type: MemoryType::Preference,
        summary: "User does not like green tea".into(),
        detail: None,
        confidence: 0.9,
        importance: 0.5,
        durability: 0.6,
        evidence: Evidence::Direct,
        negated: true,
        persons: vec![],
        source_turns: vec![],
    };
    let native = measure(budget, 100, || {
        black_box(engram_strategies::resolve::resolve(
            black_box(&candidate),
            &related,
        ));
    });
    let wasm = measure(budget, 100, || {
        black_box(
            runtime
                .resolve(&resolve, "default", &candidate, &related)
                .expect("resolve"),
        );
    });
    row("resolve-default native (baseline)", &native, None);
    row("resolve-default via runtime", &wasm, Some(&native));

    let consolidate = runtime.load_builtin("consolidate-default").expect("load");
    let snapshot = snapshot();
    let native = measure(budget, 100, || {
        black_box(engram_strategies::consolidate::consolidate(
            black_box(&snapshot),
            NOW,
        ));
    });
    let wasm = measure(budget, 100, || {
        black_box(
            runtime
                .consolidate(&consolidate, &snapshot, NOW)
                .expect("consolidate"),
        );
    });
    row("consolidate-default native (baseline)", &native, None);
    row("consolidate-default via runtime", &wasm, Some(&native));

    println!(
        "\n== trivial export (testing/noop): new store + instantiate + call + drop (target: median <= 30 µs)"
    );
    let noop = runtime.load_dir(&guest_package("noop")).expect("load");
    let mut empty = conversation.clone();
    empty.messages.clear();
    let trivial = measure(budget, 1000, || {
        black_box(runtime.extract(&noop, &empty, NOW).expect("noop"));
    });
    row("noop extract", &trivial, None);
    println!("pooling allocator: {}", runtime.uses_pooling_allocator());

    println!("\n== loading a component: compile cache hit vs fresh compile (target: >= 100x)");
    let uncached: Runtime = runtime_with_cache(None);
    let compile = measure(budget, 5, || {
        black_box(uncached.load_builtin("extract-rules").expect("compile"));
    });
    let cached = measure(budget, 20, || {
        black_box(runtime.load_builtin("extract-rules").expect("cached"));
    });
    row("extract-rules: compile (baseline)", &compile, None);
    row("extract-rules: load from cache", &cached, None);
    println!(
        "cache speed-up: {:.0}x",
        compile.median.as_secs_f64() / cached.median.as_secs_f64()
    );
}

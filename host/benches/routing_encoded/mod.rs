//! f. Routing with the sentence encoder (issue 29, point 2), when `ENGRAM_BENCH_MODEL`
//! names a model directory: each tool's skill is embedded once
//! ([`RoutableSkill::meaning_text`]), each message once, and the router's meaning part
//! is the encoder's cosine instead of the static table's.
//!
//! The meaning's weight is chosen on the even rows of `queries-dev.csv` (best top-1)
//! and reported on the odd rows, beside the static router and the lexical router on
//! the same rows. The invocation rule is then cross-validated as in section c, over
//! the routing with that weight.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use engram::embed::encoder::Encoder;
use engram::routing::skill_vectors::SkillVectors;
use engram::routing::{EncodedSkills, RoutableSkill, Router, RouterConfig, Routing};

use super::common::Table;
use super::{Data, percent, routing_everyday, routing_rule, skills};

/// The meaning's weights tried (section a's static router uses 6).
const WEIGHTS: [f32; 8] = [0.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 24.0];

/// Every message of the data embedded once, by text.
struct Embedded {
    vectors: SkillVectors,
    skills: EncodedSkills,
    messages: HashMap<String, Vec<f32>>,
}

impl Embedded {
    /// Embeds the skills and messages, with the daemon's cache of skill vectors kept
    /// under target/ so that a second run embeds nothing.
    fn load(dir: &Path, data: &Data, table: &mut Table) -> Embedded {
        let encoder = Arc::new(Encoder::load(dir).unwrap_or_else(|e| panic!("{e}")));
        let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-vectors");
        let vectors = SkillVectors::new(encoder.clone(), "bench", &cache);
        let routable = skills(&data.tools);
        let started = Instant::now();
        let skills = vectors.for_skills(&routable);
        let skills_time = started.elapsed();
        let mut texts: Vec<&str> = data.queries.iter().map(|(q, _)| q.as_str()).collect();
        texts.extend(data.awareness.iter().map(|(q, _, _)| q.as_str()));
        texts.sort_unstable();
        texts.dedup();
        eprintln!(
            "e. embedding {} messages (cached in {})...",
            texts.len(),
            cache.display()
        );
        let started = Instant::now();
        let embedded = vectors.for_texts(&texts);
        let messages_time = started.elapsed();
        table.row(
            "embedding: skills / messages (the encoder's batches; a cached run reads them)",
            &format!(
                "{} in {:.1} s / {} in {:.1} s",
                data.tools.len(),
                skills_time.as_secs_f64(),
                texts.len(),
                messages_time.as_secs_f64()
            ),
            "",
            "",
        );
        let messages = texts
            .into_iter()
            .zip(embedded)
            .filter_map(|(text, v)| Some((text.to_string(), v?.as_ref().clone())))
            .collect();
        Embedded {
            vectors,
            skills,
            messages,
        }
    }

    fn router(&self, data: &Data, config: RouterConfig) -> Router {
        Router::with_encoded(skills(&data.tools), config, &self.skills)
    }

    fn route(&self, router: &Router, message: &str) -> Routing {
        router.route_with(message, self.messages.get(message).map(Vec::as_slice))
    }
}

/// Top-1 and top-5 hits of `route` over the queries of one parity.
fn accuracy(data: &Data, odd: bool, route: impl Fn(&str) -> Routing) -> (f64, f64) {
    let (mut n, mut top1, mut top5) = (0usize, 0usize, 0usize);
    for (row, (query, tool)) in data.queries.iter().enumerate() {
        if (row % 2 == 1) != odd {
            continue;
        }
        let routing = route(query);
        n += 1;
        top1 += usize::from(routing.candidates.first().is_some_and(|c| c.slug == *tool));
        top5 += usize::from(routing.candidates.iter().any(|c| c.slug == *tool));
    }
    (top1 as f64 / n.max(1) as f64, top5 as f64 / n.max(1) as f64)
}

pub fn section(data: &Data, table: &mut Table) {
    let Some(dir) = super::common::bench_model("routing with the sentence encoder") else {
        table.section("f. routing with the sentence encoder: skipped (ENGRAM_BENCH_MODEL unset)");
        return;
    };
    table.section(&format!(
        "f. routing with the sentence encoder ({}), meaning weight chosen on the even rows, reported on the odd",
        dir.display()
    ));
    let embedded = Embedded::load(&dir, data, table);
    let ranked = |weight: f32| RouterConfig {
        semantic_weight: weight,
        min_confidence: 0.0,
        top_k: super::TOP_K,
        ..RouterConfig::default()
    };
    let mut best = (WEIGHTS[0], -1.0);
    for weight in WEIGHTS {
        let router = embedded.router(data, ranked(weight));
        let (top1, top5) = accuracy(data, false, |q| embedded.route(&router, q));
        eprintln!(
            "f. weight {weight}: even rows top-1 {}, top-5 {}",
            percent(top1),
            percent(top5)
        );
        if top1 > best.1 {
            best = (weight, top1);
        }
    }
    let weight = best.0;
    let encoded = embedded.router(data, ranked(weight));
    let (top1, top5) = accuracy(data, true, |q| embedded.route(&encoded, q));
    let static_router = Router::with_config(
        skills(&data.tools),
        ranked(engram::routing::SEMANTIC_WEIGHT),
    );
    let (static1, static5) = accuracy(data, true, |q| static_router.route(q));
    let lexical = Router::with_config(skills(&data.tools), ranked(0.0));
    let (lexical1, lexical5) = accuracy(data, true, |q| lexical.route(q));
    table.row(
        &format!("held-out top-1 / top-5, encoder (weight {weight}, chosen)"),
        &format!("{} / {}", percent(top1), percent(top5)),
        &format!(
            "static table {} / {}; lexical alone {} / {}",
            percent(static1),
            percent(static5),
            percent(lexical1),
            percent(lexical5)
        ),
        &format!(
            "{:+.1} points top-1 over the static table",
            (top1 - static1) * 100.0
        ),
    );
    // The daemon's router with a model: RouterConfig::encoded, its rule included.
    let daemon = embedded.router(data, RouterConfig::encoded());
    let (mut right, mut positives, mut fired, mut negatives) = (0, 0, 0, 0);
    for (row, (query, tool)) in data.queries.iter().enumerate() {
        if row % 2 == 1 {
            positives += 1;
            let invoked = embedded.route(&daemon, query).invoked;
            right += usize::from(invoked.is_some_and(|i| i.slug == *tool));
        }
    }
    for (row, (query, positive, _)) in data.awareness.iter().enumerate() {
        if row % 2 == 1 && !positive {
            negatives += 1;
            fired += usize::from(embedded.route(&daemon, query).invoked.is_some());
        }
    }
    let (low, high) = routing_rule::wilson(fired, negatives);
    table.row(
        "the daemon's router with a model (RouterConfig::encoded), odd rows: invoked-correct / false triggers",
        &format!(
            "{} / {} ({fired} of {negatives})",
            percent(right as f64 / positives.max(1) as f64),
            percent(fired as f64 / negatives.max(1) as f64)
        ),
        &format!("95% CI {}-{}", percent(low), percent(high)),
        "",
    );

    speed(&embedded, data, table);
    let Some(everyday) = Everyday::load(&embedded) else {
        return;
    };
    everyday.report(&embedded, data, table);

    eprintln!("f. cross-validating the invocation rule with the encoder...");
    let observed = embedded.router(
        data,
        RouterConfig {
            top_k: 2,
            ..ranked(weight)
        },
    );
    let (positives, awareness) = routing_rule::observe_with(data, |q| embedded.route(&observed, q));
    // The everyday messages' even rows only: their odd rows, over both catalogs, stay
    // held out of every choice.
    let everyday_negatives = routing_rule::observe_negatives(
        everyday.messages.iter().step_by(2).map(|m| m.text.as_str()),
        |m| everyday.route(&observed, m),
    );
    let max = routing_rule::ENCODED_MAX_CONFIDENCE;
    let families = [
        (
            "minimum, coverage, cosine and its lead",
            routing_rule::grid_encoded(),
        ),
        (
            "minimum, margin and coverage",
            routing_rule::grid(false, max),
        ),
        ("one threshold", routing_rule::grid(true, max)),
    ];
    for (negatives, held_to) in [
        ([&awareness[..], &[]], "awareness"),
        (
            [&awareness[..], &everyday_negatives[..]],
            "awareness and everyday (even rows)",
        ),
    ] {
        for (label, rules) in &families {
            let report = routing_rule::cross_validate(&positives, negatives, rules);
            rule_row(&format!("{label}, held to {held_to}"), &report, table);
        }
    }
}

/// One rule family's cross-validation: held-out invoked-correct and false triggers on
/// each negative set (the everyday messages' also when the rule was not held to them,
/// from the rule each fold chose).
fn rule_row(label: &str, report: &routing_rule::Report, table: &mut Table) {
    let (ic, ic_sd, ic_min, ic_max) = routing_rule::spread(&report.invoked_correct);
    let mut figures = format!("{} ± {}", percent(ic), percent(ic_sd));
    let mut folds = format!("{}-{}", percent(ic_min), percent(ic_max));
    let mut pooled = Vec::new();
    for (set, name) in ["awareness", "everyday"].into_iter().enumerate() {
        if report.pooled[set].1 == 0 {
            continue;
        }
        let (ft, ft_sd, ft_min, ft_max) = routing_rule::spread(&report.false_triggers[set]);
        let (low, high) = routing_rule::wilson(report.pooled[set].0, report.pooled[set].1);
        figures.push_str(&format!(" / {} ± {}", percent(ft), percent(ft_sd)));
        folds.push_str(&format!(" / {}-{}", percent(ft_min), percent(ft_max)));
        pooled.push(format!("{name} {}-{}", percent(low), percent(high)));
    }
    table.row(
        &format!(
            "encoder, {label}: held-out invoked-correct / false triggers (awareness[, everyday])"
        ),
        &figures,
        &format!("folds {folds}"),
        &format!(
            "pooled false triggers 95% CI {}; chosen on all: {}",
            pooled.join(", "),
            report.chosen.describe()
        ),
    );
}

/// A turn's routing with the model at [`super::LARGE`] skills: the message embedded
/// (not cached: a turn embeds each message anew) and routed, against the static
/// router on the same messages. CPU time of the calling thread; run with
/// `RAYON_NUM_THREADS=1` for one core's figures.
fn speed(embedded: &Embedded, data: &Data, table: &mut Table) {
    let tools = super::synthetic(&data.tools, super::LARGE);
    let routable = skills(&tools);
    let started = Instant::now();
    let encoded = embedded.vectors.for_skills(&routable);
    eprintln!(
        "f. {} skills embedded or read from the cache in {:.1} s",
        routable.len(),
        started.elapsed().as_secs_f64()
    );
    let router = Router::with_encoded(routable.clone(), RouterConfig::encoded(), &encoded);
    let static_router = Router::new(routable);
    let encoder = embedded.vectors.encoder();
    let messages: Vec<&str> = data
        .queries
        .iter()
        .take(300)
        .map(|(q, _)| q.as_str())
        .collect();
    let (mut with_model, mut with_table) = (Vec::new(), Vec::new());
    for (i, message) in messages.iter().enumerate() {
        let c = crate::common::cpu_time(libc::CLOCK_THREAD_CPUTIME_ID);
        let query = encoder.embed(message).expect("embed a message");
        std::hint::black_box(router.route_with(message, Some(&query)));
        let spent = crate::common::cpu_time(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(c);
        let c = crate::common::cpu_time(libc::CLOCK_THREAD_CPUTIME_ID);
        std::hint::black_box(static_router.route(message));
        let spent_static = crate::common::cpu_time(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(c);
        // The first messages warm the caches.
        if i >= 20 {
            with_model.push(spent);
            with_table.push(spent_static);
        }
    }
    for (label, p) in [("p50", 0.50), ("p95", 0.95)] {
        let (m, t) = (
            super::quantile(&mut with_model, p),
            super::quantile(&mut with_table, p),
        );
        table.row(
            &format!(
                "embed + route {label}, {} skills, CPU time of the thread",
                super::LARGE
            ),
            &super::micros(m),
            &format!("{} static table (route alone)", super::micros(t)),
            &super::common::ratio(m, t),
        );
    }
}

/// Section e's everyday messages, embedded.
struct Everyday {
    messages: Vec<routing_everyday::Message>,
    registry: Vec<RoutableSkill>,
    vectors: HashMap<String, Arc<Vec<f32>>>,
}

impl Everyday {
    fn load(embedded: &Embedded) -> Option<Everyday> {
        let (messages, registry) = routing_everyday::material()?;
        let texts: Vec<&str> = messages.iter().map(|m| m.text.as_str()).collect();
        let vectors = texts
            .iter()
            .zip(embedded.vectors.for_texts(&texts))
            .filter_map(|(text, v)| Some((text.to_string(), v?)))
            .collect();
        Some(Everyday {
            messages,
            registry,
            vectors,
        })
    }

    fn route(&self, router: &Router, message: &str) -> Routing {
        router.route_with(message, self.vectors.get(message).map(|v| v.as_slice()))
    }

    /// With the daemon's router with a model, over both catalogs.
    fn report(&self, embedded: &Embedded, data: &Data, table: &mut Table) {
        let metatool = embedded.router(data, RouterConfig::encoded());
        let registry_vectors = embedded.vectors.for_skills(&self.registry);
        let registry_router = Router::with_encoded(
            self.registry.clone(),
            RouterConfig::encoded(),
            &registry_vectors,
        );
        routing_everyday::both_catalogs(
            "f",
            [
                (data.tools.len(), &|m: &str| self.route(&metatool, m)),
                (self.registry.len(), &|m: &str| {
                    self.route(&registry_router, m)
                }),
            ],
            &self.messages,
            table,
        );
    }
}

//! Skills registry figures over `tests/fixtures/registry-mirror` (136 skills, 23
//! categories), each beside a baseline measured in the same process:
//!
//! 1. feed parse: `Feed::parse` (JSON, id and sha checks, hidden-character cleaning,
//!    category counts) vs. `serde_json::from_slice::<Value>` of the same bytes;
//! 2. search latency, p50/p95 over a fixed set of queries: `Feed::search` (tiered
//!    ranking) vs. a naive case-insensitive substring filter over id + description;
//! 3. installing the whole mirror from `registry serve`'s router on loopback
//!    (download, unpack, sha256 check, validate, staged install, index) vs.
//!    installing the same SKILL.md files read from disk (validate, staged install,
//!    index): total and per skill p50/p95, then a second pass (all already-installed);
//! 4. acceptance: how many SKILL.md files load (without or with warnings) and how many
//!    are refused, as discovery and `install --from <dir>` read them, over the mirror,
//!    the edge-case fixtures, the lenient-load fixtures and, when present, real-world
//!    skills copied from public collections (`skills-real-world/` under the bench data
//!    directory: not in the repository, as not all of their licences allow it); the
//!    registry's strict reading (a frontmatter required) beside it, in the same run.
//!
//! 5. PostgreSQL (issue 32), on a throwaway cluster (`tests/pg.rs`; skipped, and said
//!    so, where PostgreSQL is not installed): the installed mirror as a team's shared
//!    library. The first sync (publishing every skill), then the catalog read a turn
//!    makes (`Library::catalog`), whose every call first asks the database whether
//!    another daemon changed anything (one query), against the same directory read
//!    unshared; and the first read after another daemon deactivated a skill (the pull).
//!
//! Run with `cargo bench -p engram-host --bench skills`.

// This bench uses only some of the helpers shared by the benches.
#[allow(dead_code)]
mod common;
// The e2e tests' throwaway PostgreSQL cluster, of which this uses a database.
#[allow(dead_code)]
#[path = "../../tests/pg.rs"]
mod pg;

use common::{percentile, skill_dirs, time_n};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engram::skills::registry::feed::Feed;
use engram::skills::registry::{RegistryClient, RegistrySource, RegistryUrl};
use std::collections::BTreeMap;

use engram::skills::{
    InstallStatus, Leniency, Library, Origin, SkillId, SkillPackage, Source, SourceKind,
    ToolConsent, load_skill, load_skill_dir,
};

#[path = "../tests/support/mod.rs"]
mod support;

/// The registry mirror in the repository's fixtures.
fn mirror() -> PathBuf {
    support::fixtures().join("registry-mirror")
}

const QUERIES: &[&str] = &[
    "ai-ml/agent-audit-logging",
    "audit logging",
    "testing",
    "unit tests",
    "api design",
    "react",
    "docker kubernetes",
    "security",
    "pdf",
    "presentation slides",
    "marketing email",
    "contract review",
    "database",
    "python",
    "shell scripting",
    "restaurant menu",
    "resume",
    "budget",
    "prompt",
    "memory",
    "twitter",
    "video download",
    "mobile app",
    "design system",
    "career interview",
    "health sleep",
    "education course",
    "product roadmap",
    "microservices",
    "ci cd pipeline",
    "observability",
    "nonexistent zzz",
];

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn row(name: &str, samples: &[Duration], baseline: Option<&[Duration]>) {
    let p50 = percentile(samples, 0.5);
    let p95 = percentile(samples, 0.95);
    let ratio = baseline
        .map(|b| {
            let b50 = percentile(b, 0.5).as_secs_f64();
            format!("{:.1}x baseline", p50.as_secs_f64() / b50.max(1e-12))
        })
        .unwrap_or_default();
    println!(
        "{name:<58} p50 {:>10}  p95 {:>10}  {ratio}",
        fmt(p50),
        fmt(p95)
    );
}

fn main() {
    let feed_bytes = std::fs::read(mirror().join("api/feed.json")).expect("the mirror's feed");

    // 1. Feed parse.
    let parse = time_n(200, || {
        let (feed, problems) = Feed::parse(&feed_bytes).unwrap();
        assert_eq!(feed.skills.len(), 136);
        assert!(problems.is_empty());
    });
    let json = time_n(200, || {
        let v: serde_json::Value = serde_json::from_slice(&feed_bytes).unwrap();
        assert!(v.is_object());
    });
    println!(
        "feed: {} bytes, 136 skills, 23 categories",
        feed_bytes.len()
    );
    row("feed parse (Feed::parse)", &parse, Some(&json));
    row("  baseline: serde_json::Value", &json, None);

    // 2. Search.
    let (feed, _) = Feed::parse(&feed_bytes).unwrap();
    let mut search = Vec::new();
    let mut naive = Vec::new();
    for _ in 0..50 {
        for q in QUERIES {
            let t = Instant::now();
            let hits = feed.search(q);
            search.push(t.elapsed());
            std::hint::black_box(hits.len());
            let t = Instant::now();
            let lower = q.to_lowercase();
            let n = feed
                .skills
                .iter()
                .filter(|s| s.id.contains(&lower) || s.description.to_lowercase().contains(&lower))
                .count();
            naive.push(t.elapsed());
            std::hint::black_box(n);
        }
    }
    search.sort();
    naive.sort();
    println!("search: {} queries x 50 rounds", QUERIES.len());
    row(
        "search (Feed::search, tiered ranking)",
        &search,
        Some(&naive),
    );
    row(
        "  baseline: substring filter over id + description",
        &naive,
        None,
    );
    for q in ["audit logging", "testing", "pdf"] {
        let top: Vec<&str> = feed
            .search(q)
            .iter()
            .take(3)
            .map(|h| h.skill.id.as_str())
            .collect();
        println!("  top 3 for {q:?}: {top:?}");
    }

    // 3. Install the whole mirror.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let router = engram::skills::registry::server::router(&mirror()).unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, router).await });
    let work = tempfile::tempdir().unwrap();
    let registry = RegistryUrl::parse(&format!("http://{addr}"), RegistrySource::Flag).unwrap();
    let client = RegistryClient::new(
        registry,
        &work.path().join("cache"),
        Duration::from_secs(3600),
        true,
    );
    let library = Library::open(work.path().join("skills")).unwrap();
    let ids: Vec<String> = feed.skills.iter().map(|s| s.id.clone()).collect();

    let mut per_skill = Vec::new();
    let total = Instant::now();
    runtime.block_on(async {
        let mut loaded = client.feed().await.unwrap();
        for id in &ids {
            let t = Instant::now();
            let done = client
                .install_with(&mut loaded, &library, id, false, ToolConsent::Confirmed)
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            per_skill.push(t.elapsed());
            assert_eq!(done.outcome.status, InstallStatus::Installed, "{id}");
        }
    });
    let total_registry = total.elapsed();
    per_skill.sort();

    let mut again = Vec::new();
    runtime.block_on(async {
        let mut loaded = client.feed().await.unwrap();
        for id in &ids {
            let t = Instant::now();
            let done = client
                .install_with(&mut loaded, &library, id, false, ToolConsent::Confirmed)
                .await
                .unwrap();
            again.push(t.elapsed());
            assert_eq!(done.outcome.status, InstallStatus::AlreadyInstalled);
        }
    });
    again.sort();

    // Baseline: the same files from disk into a fresh library.
    let local = Library::open(work.path().join("local")).unwrap();
    let mut from_disk = Vec::new();
    let total = Instant::now();
    for id in &ids {
        let t = Instant::now();
        let bytes = std::fs::read(mirror().join("categories").join(id).join("SKILL.md")).unwrap();
        let package =
            SkillPackage::new(Some(SkillId::parse(id).unwrap()), bytes, Vec::new()).unwrap();
        local
            .install(
                &package,
                Source::of(SourceKind::File),
                false,
                ToolConsent::Confirmed,
            )
            .unwrap();
        from_disk.push(t.elapsed());
    }
    let total_disk = total.elapsed();
    from_disk.sort();

    println!(
        "install: {} skills from `registry serve` on loopback",
        ids.len()
    );
    println!(
        "{:<58} {:>10}  ({:.1}x baseline)",
        "whole mirror from the registry (sequential)",
        fmt(total_registry),
        total_registry.as_secs_f64() / total_disk.as_secs_f64()
    );
    println!(
        "{:<58} {:>10}",
        "  baseline: the same SKILL.md files from disk",
        fmt(total_disk)
    );
    row("per skill from the registry", &per_skill, Some(&from_disk));
    row("  baseline: per skill from disk", &from_disk, None);
    row(
        "per skill again (already-installed, nothing written)",
        &again,
        None,
    );

    // 5. The mirror as a team's shared library on PostgreSQL.
    shared_catalog(&library, &local, work.path());

    // 4. Acceptance.
    acceptance();
}

// ---------------------------------------------------------------------------------
// 4. Acceptance

/// Loaded without warnings, with warnings, refused; per warning and refusal code.
#[derive(Default)]
struct Tally {
    clean: usize,
    warned: usize,
    refused: usize,
    codes: BTreeMap<String, usize>,
    refusals: BTreeMap<String, usize>,
    /// Refused by the registry's strict reading (a frontmatter required).
    strict_refused: usize,
    /// The refused directories and why.
    refused_dirs: Vec<(PathBuf, String)>,
}

fn acceptance() {
    let fixtures = support::fixtures();
    let sets: Vec<(&str, Option<Vec<PathBuf>>)> = vec![
        (
            "registry mirror",
            Some(skill_dirs(&mirror().join("categories"))),
        ),
        (
            "edge-case fixtures",
            edge_cases(&fixtures.join("skills-edge-cases")),
        ),
        (
            "lenient-load fixtures",
            Some(skill_dirs(&fixtures.join("skills-lenient"))),
        ),
        (
            "real-world skills",
            common::bench_data("real-world SKILL.md files", "skills-real-world")
                .map(|d| skill_dirs(&d)),
        ),
    ];
    println!("acceptance: discovery / `install --from <dir>` (lenient) vs. the registry's reading");
    for (label, dirs) in sets {
        let Some(dirs) = dirs else { continue };
        let tally = tally(&dirs);
        let n = dirs.len();
        println!(
            "  {label:<24} {n:>4} files: {} accepted ({} without warnings, {} with), {} refused; \
             registry reading refuses {}",
            tally.clean + tally.warned,
            tally.clean,
            tally.warned,
            tally.refused,
            tally.strict_refused,
        );
        let list = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(c, k)| format!("{c} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !tally.codes.is_empty() {
            println!("    warnings: {}", list(&tally.codes));
        }
        if !tally.refusals.is_empty() {
            println!("    refused:  {}", list(&tally.refusals));
        }
        for (dir, code) in &tally.refused_dirs {
            println!("      {code:<22} {}", dir.display());
        }
    }
}

fn tally(dirs: &[PathBuf]) -> Tally {
    let mut t = Tally::default();
    for dir in dirs {
        match load_skill_dir(dir) {
            Ok(skill) if skill.warnings.is_empty() => t.clean += 1,
            Ok(skill) => {
                t.warned += 1;
                let mut codes: Vec<&str> = skill.warnings.iter().map(|w| w.code()).collect();
                codes.dedup();
                for code in codes {
                    *t.codes.entry(code.to_string()).or_default() += 1;
                }
            }
            Err(e) => {
                t.refused += 1;
                *t.refusals.entry(e.code().to_string()).or_default() += 1;
                t.refused_dirs.push((dir.clone(), e.code().to_string()));
            }
        }
        if !strictly_loads(dir) {
            t.strict_refused += 1;
        }
    }
    t
}

/// Whether the registry's reading (a frontmatter required) accepts the SKILL.md in
/// `dir` under the directory's name.
fn strictly_loads(dir: &Path) -> bool {
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some(bytes) = ["SKILL.md", "skill.md"]
        .iter()
        .find_map(|f| std::fs::read(dir.join(f)).ok())
    else {
        return false;
    };
    let origin = Origin {
        leniency: Leniency::FrontmatterRequired,
        ..Origin::dir(name)
    };
    load_skill(&bytes, origin).is_ok()
}

/// The skill directory of each edge case, as `cases.json` names it (some hold no
/// SKILL.md: that is the case); `None` when it cannot be read.
fn edge_cases(root: &Path) -> Option<Vec<PathBuf>> {
    let path = root.join("cases.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| eprintln!("skipped: edge cases: {}: {e}", path.display()))
        .ok()?;
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).ok()?;
    Some(
        cases
            .iter()
            .filter_map(|c| c["skill_dir"].as_str())
            .map(|dir| root.join(dir))
            .collect(),
    )
}

/// Section 5: `library` (the installed mirror) shared through a PostgreSQL database;
/// `local`, another directory holding the same skills, is never shared.
fn shared_catalog(library: &Library, local: &Library, work: &Path) {
    use engram::installs::{Installs, Kind};
    let Some(db) = pg::database("skills_bench_shared") else {
        println!("shared library: skipped (PostgreSQL is not installed)");
        return;
    };
    let installs = Installs::postgres(&db.url()).expect("the installs store");
    let shared = library.clone().with_shared(installs.shared(Kind::Skill));
    let t = Instant::now();
    shared.catch_up().expect("first sync");
    let first_sync = t.elapsed();
    let (entries, _) = shared.catalog().expect("catalog");
    println!(
        "shared library on PostgreSQL: {} skills; first sync (publishes them all) {}",
        entries.len(),
        fmt(first_sync)
    );
    let read_shared = time_n(500, || {
        shared.catalog().expect("catalog");
    });
    let read_local = time_n(500, || {
        library.catalog().expect("catalog");
    });
    row(
        "catalog read, shared (asks the database first)",
        &read_shared,
        Some(&read_local),
    );
    row("  baseline: the same directory unshared", &read_local, None);

    // Another daemon (its own directory on the same database) deactivates one skill at
    // a time; the first read here after each change pulls it.
    let other = Library::open(work.join("other-daemon"))
        .expect("other library")
        .with_shared(installs.shared(Kind::Skill));
    other.catch_up().expect("the other's first sync");
    let slugs: Vec<String> = entries.iter().take(20).map(|e| e.slug.clone()).collect();
    let mut after_change = Vec::new();
    for slug in &slugs {
        other.deactivate(slug).expect("deactivate");
        let t = Instant::now();
        let (entries, _) = shared.catalog().expect("catalog");
        after_change.push(t.elapsed());
        assert!(
            entries.iter().any(|e| e.slug == *slug && !e.active),
            "{slug} is still active here"
        );
    }
    after_change.sort();
    // Baseline: the first read after the same change made in this directory, unshared
    // (the catalog is read again either way).
    let mut after_local_change = Vec::new();
    for slug in &slugs {
        local.deactivate(slug).expect("deactivate");
        let t = Instant::now();
        local.catalog().expect("catalog");
        after_local_change.push(t.elapsed());
    }
    after_local_change.sort();
    row(
        "first read after another daemon's change (pulls it)",
        &after_change,
        Some(&after_local_change),
    );
    row(
        "  baseline: first read after the change made here, unshared",
        &after_local_change,
        None,
    );
}

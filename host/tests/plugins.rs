//! The plugin runtime end to end with real components built from plugins/: the
//! embedded strategies give the same answers as their native logic, and every kind of
//! misbehaving plugin fails with a typed error, within its deadline, without taking the
//! process or the next call down.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use engram::config::ConfigFile;
use engram::runtime::packages::{InstallStatus, PluginPackages};
use engram::runtime::strategies::Strategies;
use engram::runtime::{CacheOutcome, Manifest, Plugin, PluginError, Runtime, World};
use engram_strategies::model::{Candidate, Conversation, Evidence, MemoryType, Resolution};
use support::*;

fn good_call(runtime: &Runtime) {
    let plugin = runtime
        .load_builtin("extract-rules")
        .expect("builtin loads");
    let conversation = conversation();
    let out = runtime
        .extract(&plugin, &conversation, NOW)
        .expect("a good plugin still works");
    assert_eq!(out, engram_strategies::extract::extract(&conversation, NOW));
}

fn probe_conversation(url: &str) -> Conversation {
    let mut c = conversation();
    c.messages.truncate(1);
    c.messages[0].content = url.to_string();
    c
}

#[test]
fn embedded_extractor_matches_native_logic() {
    let runtime = runtime();
    let plugin = runtime.load_builtin("extract-rules").expect("load");
    assert_eq!(plugin.world(), World::Extractor);
    let conversation = conversation();
    let via_wasm = runtime
        .extract(&plugin, &conversation, NOW)
        .expect("extract");
    let native = engram_strategies::extract::extract(&conversation, NOW);
    assert_eq!(via_wasm, native);
    assert!(!via_wasm.is_empty() && via_wasm.len() <= 3, "{via_wasm:#?}");
}

#[test]
fn embedded_resolver_matches_native_logic() {
    let runtime = runtime();
    let plugin = runtime.load_builtin("resolve-default").expect("load");
    let related = vec![
        memory(
            "mem_a",
            MemoryType::Preference,
            "User likes coffee",
            0.8,
            10,
        ),
        memory(
            "mem_b",
            MemoryType::Habit,
            "User goes running every morning",
            0.8,
            10,
        ),
    ];
    let candidates = [
        ("User does not like coffee", true, 0.9),
        ("User does not like coffee", true, 0.5),
        ("User goes running every morning", false, 0.9),
        ("User is learning Rust", false, 0.9),
    ];
    let mut answers = Vec::new();
    for (summary, negated, confidence) in candidates {
        let candidate = Candidate {
            memory_type: MemoryType::Preference,
            summary: summary.into(),
            detail: None,
            confidence,
            importance: 0.5,
            durability: 0.5,
            evidence: Evidence::Direct,
            negated,
            persons: vec![],
            source_turns: vec![],
        };
        let via_wasm = runtime
            .resolve(&plugin, "default", &candidate, &related)
            .expect("resolve");
        assert_eq!(
            via_wasm,
            engram_strategies::resolve::resolve(&candidate, &related)
        );
        answers.push(via_wasm);
    }
    assert_eq!(
        answers[0],
        Resolution::Supersede("mem_a".into()),
        "higher confidence wins"
    );
    assert_eq!(
        answers[1],
        Resolution::SupersededBy("mem_a".into()),
        "lower confidence loses"
    );
    assert_eq!(answers[2], Resolution::Reinforce("mem_b".into()));
    assert_eq!(answers[3], Resolution::Add);
}

#[test]
fn embedded_consolidator_matches_native_logic() {
    let runtime = runtime();
    let plugin = runtime.load_builtin("consolidate-default").expect("load");
    let snapshot = snapshot();
    let via_wasm = runtime
        .consolidate(&plugin, &snapshot, NOW)
        .expect("consolidate");
    assert_eq!(
        via_wasm,
        engram_strategies::consolidate::consolidate(&snapshot, NOW)
    );
    assert!(
        via_wasm.profile_summary.contains("Dana"),
        "{}",
        via_wasm.profile_summary
    );
    assert!(
        via_wasm.active_summary.contains("weather station"),
        "{}",
        via_wasm.active_summary
    );
    assert!(
        !via_wasm.reflections.is_empty(),
        "three morning habits make a pattern"
    );
}

#[test]
fn a_trapping_plugin_gives_a_typed_error_and_the_next_call_works() {
    let runtime = runtime();
    let plugin = runtime.load_dir(&guest_package("trap")).expect("load");
    let err = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect_err("traps");
    assert!(matches!(err, PluginError::Trap { .. }), "{err:?}");
    assert!(err.to_string().contains(plugin.short_hash()), "{err}");
    // A trapped instance is never reused: the same plugin traps afresh.
    let again = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect_err("traps again");
    assert!(matches!(again, PluginError::Trap { .. }));
    good_call(&runtime);
}

#[test]
fn an_endless_loop_is_stopped_at_its_deadline() {
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest =
        "name = \"spin\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n[limits]\ntimeout-ms = 200\n";
    package_with_manifest("spin", dir.path(), manifest);
    let plugin = runtime.load_dir(dir.path()).expect("load");
    let err = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect_err("times out");
    match err {
        PluginError::Timeout { deadline_ms, .. } => assert_eq!(deadline_ms, 200),
        other => panic!("expected a timeout, got {other:?}"),
    }
    good_call(&runtime);
}

#[test]
fn growing_memory_past_the_limit_is_a_memory_error() {
    let runtime = runtime();
    let plugin = runtime
        .load_dir(&guest_package("memory-hog"))
        .expect("load");
    assert_eq!(plugin.memory_limit_mib, 64);
    let err = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect_err("hits the limit");
    assert!(
        matches!(err, PluginError::MemoryLimit { limit_mib: 64, .. }),
        "{err:?}"
    );
    good_call(&runtime);
}

#[test]
fn an_oversized_result_is_refused() {
    let runtime = runtime();
    let plugin = runtime.load_dir(&guest_package("flood")).expect("load");
    let err = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect_err("refused");
    assert!(
        matches!(&err, PluginError::InvalidResult { reason, .. } if reason.contains("1000000 candidates")),
        "{err:?}"
    );
    good_call(&runtime);
}

/// A one-shot HTTP server on loopback that counts the connections it accepts.
fn http_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 2048];
            let _ = stream.read(&mut buf);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (format!("127.0.0.1:{port}"), hits)
}

#[test]
fn outbound_http_reaches_only_allowed_hosts() {
    let runtime = runtime();
    let (authority, hits) = http_server();
    let url = format!("http://{authority}/probe");

    let denied = runtime
        .load_dir(&guest_package("http-probe"))
        .expect("load");
    assert!(denied.manifest.permissions.allowed_hosts.is_empty());
    let out = runtime
        .extract(&denied, &probe_conversation(&url), NOW)
        .expect("the guest handles the error");
    assert!(
        out[0].summary.contains("HttpRequestDenied"),
        "{}",
        out[0].summary
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "no connection was made");

    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = format!(
        "name = \"http-probe\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n[permissions]\nallowed-hosts = [\"{authority}\"]\n"
    );
    package_with_manifest("http-probe", dir.path(), &manifest);
    let allowed = runtime.load_dir(dir.path()).expect("load");
    let out = runtime
        .extract(&allowed, &probe_conversation(&url), NOW)
        .expect("request made");
    assert_eq!(out[0].summary, "ok 200");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[test]
fn files_that_are_not_components_are_refused() {
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = "name = \"junk\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n";
    std::fs::write(dir.path().join("plugin.toml"), manifest).expect("write");
    for bytes in [
        b"this is not wasm at all".to_vec(),
        // A valid, empty core module: WebAssembly, but not a component.
        b"\0asm\x01\0\0\0".to_vec(),
        // The component header followed by garbage.
        b"\0asm\x0d\0\x01\0garbage".to_vec(),
    ] {
        std::fs::write(dir.path().join("plugin.wasm"), &bytes).expect("write");
        let err = runtime.load_dir(dir.path()).err().expect("refused");
        assert!(matches!(err, PluginError::NotAComponent { .. }), "{err:?}");
    }
    good_call(&runtime);
}

#[test]
fn a_manifest_that_lies_about_its_world_is_refused() {
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    // resolve-default's component, declared as an extractor.
    let manifest = "name = \"liar\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n";
    package_with_manifest("resolve-default", dir.path(), manifest);
    let err = runtime.load_dir(dir.path()).err().expect("refused");
    assert!(
        matches!(
            &err,
            PluginError::WorldMismatch {
                world: World::Extractor,
                ..
            }
        ),
        "{err:?}"
    );
    good_call(&runtime);
}

#[test]
fn a_plugin_of_the_wrong_world_is_refused_where_another_is_expected() {
    let runtime = runtime();
    let resolver: Plugin = runtime.load_builtin("resolve-default").expect("load");
    let err = runtime
        .extract(&resolver, &conversation(), NOW)
        .expect_err("wrong world");
    assert!(
        matches!(
            err,
            PluginError::WrongWorld {
                expected: World::Extractor,
                actual: World::Resolver,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn the_compile_cache_is_reused_by_a_new_runtime() {
    let cache = tempfile::tempdir().expect("tempdir");
    let first = runtime_with_cache(Some(cache.path().to_path_buf()));
    let plugin = first.load_builtin("consolidate-default").expect("load");
    assert_eq!(plugin.cache, CacheOutcome::Compiled);
    let artifact = first.cache_artifact_path(&plugin.sha256).expect("cache on");
    assert!(artifact.is_file());
    drop(first);
    let second = runtime_with_cache(Some(cache.path().to_path_buf()));
    let again = second.load_builtin("consolidate-default").expect("load");
    assert_eq!(again.cache, CacheOutcome::Hit);
    second
        .consolidate(&again, &snapshot(), NOW)
        .expect("a cached component runs");

    // A corrupt cache entry is recompiled, not trusted.
    std::fs::write(&artifact, b"corrupt").expect("corrupt");
    let third = runtime_with_cache(Some(cache.path().to_path_buf()));
    let recompiled = third.load_builtin("consolidate-default").expect("load");
    assert_eq!(recompiled.cache, CacheOutcome::Compiled);
}

#[test]
fn runtime_uses_epochs_and_pooling_where_possible() {
    let runtime = runtime();
    assert!(runtime.epoch_ticker_running());
    // The pooling allocator needs a large virtual address space; report which is used.
    eprintln!("pooling allocator: {}", runtime.uses_pooling_allocator());
}

struct Setup {
    _dir: tempfile::TempDir,
    config_path: std::path::PathBuf,
    packages_dir: std::path::PathBuf,
    strategies: Strategies,
}

fn strategies() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("config.yaml");
    let packages_dir = dir.path().join("plugins");
    let runtime = Arc::new(runtime());
    let config = Arc::new(ConfigFile::new(config_path.clone()));
    let strategies = Strategies::new(runtime, PluginPackages::new(packages_dir.clone()), config)
        .expect("strategies");
    Setup {
        _dir: dir,
        config_path,
        packages_dir,
        strategies,
    }
}

#[test]
fn a_failing_custom_strategy_falls_back_to_the_builtin_one() {
    let setup = strategies();
    let packages = PluginPackages::new(setup.packages_dir.clone());
    let (status, manifest) = packages
        .install(setup.strategies.runtime(), &guest_package("trap"))
        .expect("install");
    assert_eq!(status, InstallStatus::Installed);
    assert_eq!(manifest.name, "trap");
    std::fs::write(
        &setup.config_path,
        "memory:\n  strategies:\n    extractor: trap\n",
    )
    .expect("config");
    assert_eq!(setup.strategies.selected(World::Extractor), "trap");

    let outcome = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("falls back");
    assert_eq!(outcome.plugin, "builtin:extract-rules");
    assert_eq!(
        outcome.value,
        engram_strategies::extract::extract(&conversation(), NOW)
    );
    let failure = outcome.fallback_from.expect("the failure is reported");
    assert!(matches!(failure, PluginError::Trap { .. }));
    let installed = setup
        .strategies
        .plugin("trap", World::Extractor)
        .expect("loads");
    let message = failure.to_string();
    assert!(
        message.contains("trap") && message.contains(installed.short_hash()),
        "{message}"
    );
}

#[test]
fn strategies_switch_without_restart() {
    let setup = strategies();
    let packages = PluginPackages::new(setup.packages_dir.clone());
    packages
        .install(setup.strategies.runtime(), &guest_package("noop"))
        .expect("install");
    let first = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("builtin");
    assert_eq!(first.plugin, "builtin:extract-rules");
    assert!(!first.value.is_empty());

    std::fs::write(
        &setup.config_path,
        "memory:\n  strategies:\n    extractor: noop\n",
    )
    .expect("config");
    let switched = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("noop");
    assert_eq!(switched.plugin, "noop");
    assert!(switched.value.is_empty() && switched.fallback_from.is_none());

    // Naming a plugin of another world falls back, with the reason.
    std::fs::write(
        &setup.config_path,
        "memory:\n  strategies:\n    extractor: builtin:resolve-default\n",
    )
    .expect("config");
    let wrong = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("fallback");
    assert_eq!(wrong.plugin, "builtin:extract-rules");
    assert!(matches!(
        wrong.fallback_from,
        Some(PluginError::WrongWorld { .. })
    ));
}

#[test]
fn install_is_validated_and_idempotent() {
    let setup = strategies();
    let packages = PluginPackages::new(setup.packages_dir.clone());
    let runtime = setup.strategies.runtime();
    let (status, _) = packages
        .install(runtime, &guest_package("noop"))
        .expect("install");
    assert_eq!(status, InstallStatus::Installed);
    let (status, _) = packages
        .install(runtime, &guest_package("noop"))
        .expect("again");
    assert_eq!(status, InstallStatus::AlreadyInstalled);

    let dir = tempfile::tempdir().expect("tempdir");
    package_with_manifest(
        "noop",
        dir.path(),
        "name = \"noop\"\nversion = \"0.2.0\"\nworld = \"extractor\"\n",
    );
    let (status, manifest) = packages.install(runtime, dir.path()).expect("update");
    assert_eq!(status, InstallStatus::Updated);
    assert_eq!(manifest.version, "0.2.0");

    // A broken package changes nothing on disk.
    let broken = tempfile::tempdir().expect("tempdir");
    package_with_manifest(
        "resolve-default",
        broken.path(),
        "name = \"noop\"\nversion = \"0.3.0\"\nworld = \"extractor\"\n",
    );
    packages
        .install(runtime, broken.path())
        .expect_err("refused");
    let kept = Manifest::load(&setup.packages_dir.join("noop")).expect("still there");
    assert_eq!(kept.version, "0.2.0");
    assert_eq!(packages.names(), vec!["noop".to_string()]);

    packages.remove("noop").expect("remove");
    assert!(packages.names().is_empty());
    assert!(matches!(
        packages.remove("noop"),
        Err(PluginError::UnknownPlugin(_))
    ));
    assert!(matches!(
        packages.remove("../etc"),
        Err(PluginError::UnknownPlugin(_))
    ));
}

#[test]
fn a_component_built_against_wit_0_1_0_still_loads_and_answers() {
    // tests/fixtures/plugins/legacy-rules: the rule extractor as built before the
    // `config` interface (engram:plugin@0.1.1) existed; it imports the 0.1.0 names.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/plugins/legacy-rules");
    let wasm = std::fs::read(fixture.join("plugin.wasm")).expect("fixture");
    let imports = String::from_utf8_lossy(&wasm);
    assert!(imports.contains("engram:plugin/types@0.1.0") && !imports.contains("@0.1.1"));

    let setup = strategies();
    let packages = PluginPackages::new(setup.packages_dir.clone());
    let (status, _) = packages
        .install(setup.strategies.runtime(), &fixture)
        .expect("an old component installs");
    assert_eq!(status, InstallStatus::Installed);
    std::fs::write(
        &setup.config_path,
        "memory:\n  strategies:\n    extractor: legacy-rules\n",
    )
    .expect("config");
    let outcome = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("answers");
    assert_eq!(outcome.plugin, "legacy-rules");
    assert!(
        outcome.fallback_from.is_none(),
        "{:?}",
        outcome.fallback_from
    );
    assert!(!outcome.value.is_empty());
}

#[test]
fn a_builtins_name_cannot_be_installed() {
    let setup = strategies();
    let packages = PluginPackages::new(setup.packages_dir.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    package_with_manifest(
        "noop",
        dir.path(),
        "name = \"extract-llm\"\nversion = \"9.0.0\"\nworld = \"extractor\"\n",
    );
    let err = packages
        .install(setup.strategies.runtime(), dir.path())
        .expect_err("reserved");
    assert!(
        err.to_string().contains("name of a built-in plugin"),
        "{err}"
    );
    assert!(packages.names().is_empty());
}

//! Skill scripts (`<skill>/scripts/<name>.wasm`, world `skill-tool`) end to end with
//! real components: the example skill's `word-stats` script answers from its own
//! references; a script sees its skill's directory read-only at `/skill` and nothing
//! else (`..`, absolute paths and symlinks out fail inside the guest, not the host);
//! limits stop a looping or trapping script and the next call works; `tools.invoke`
//! reaches the gate with the call's turn id, and with the daemon's wiring (the turn
//! service behind the runtime's tool gate: the real gate, then the host tools) an
//! allowed call runs the tool and a denied one does not, `fetch_url` included,
//! bounded by the script's deadline.

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engram::config::{Config, ConfigFile};
use engram::embed::active::ActiveEncoder;
use engram::embed::models::Models;
use engram::events::EventBus;
use engram::gate::{AuditQuery, FixedPolicy, Gate, NewTurn, Policy, SkillGrant};
use engram::memory::{Memory, open_memory};
use engram::paths::DataDir;
use engram::time::SystemClock;
use engram::turns::{PluginTools, TurnService};

use engram::runtime::{
    DenyAllGate, HostServices, KvStore, NoMemories, PluginError, Runtime, RuntimeOptions,
    ToolCaller, ToolDenied, ToolGate, builtin,
};
use engram::skills::library::seed::example;
use engram::skills::{Library, Source, SourceKind, ToolConsent};
use support::guest_package;

/// Allows a call only inside the turn `turn_ok`, and records every call it sees.
#[derive(Default)]
struct TurnGate {
    calls: Mutex<Vec<(ToolCaller, String, String)>>,
}

impl ToolGate for TurnGate {
    fn invoke(&self, caller: &ToolCaller, tool: &str, args: &str) -> Result<String, ToolDenied> {
        self.calls
            .lock()
            .unwrap()
            .push((caller.clone(), tool.to_string(), args.to_string()));
        match caller.turn_id.as_deref() {
            Some("turn_ok") => Ok(format!("{{\"tool\":\"{tool}\",\"results\":[]}}")),
            Some(other) => Err(ToolDenied::Denied(format!("no open turn {other}"))),
            None => Err(ToolDenied::Denied("no turn".into())),
        }
    }
}

fn runtime_with(gate: Arc<dyn ToolGate>) -> Runtime {
    let cache = option_env!("CARGO_TARGET_TMPDIR")
        .map(|t| PathBuf::from(t).join("component-cache"))
        .unwrap_or_else(|| std::env::temp_dir().join("engram-test-component-cache"));
    let services = HostServices::new(
        Arc::new(NoMemories),
        gate,
        KvStore::in_memory().expect("in-memory kv"),
    );
    Runtime::new(
        RuntimeOptions {
            cache_dir: Some(cache),
            ..RuntimeOptions::default()
        },
        services,
    )
    .expect("runtime")
}

/// The example skill installed in a fresh library; returns (tempdir, skills root,
/// skill dir). A file `secret.txt` sits in the skills root, outside the skill.
fn example_skill() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let data = tempfile::tempdir().expect("tempdir");
    let root = data.path().join("skills");
    let library = Library::open(root.clone()).expect("library");
    library
        .install(
            &example::package().expect("package"),
            Source::of(SourceKind::Seed),
            false,
            ToolConsent::Confirmed,
        )
        .expect("install");
    std::fs::write(root.join("secret.txt"), "top secret").expect("write secret");
    let skill = root.join(example::SLUG);
    (data, root, skill)
}

/// Adds the test guest `skill-probe` to a skill as `scripts/probe.wasm`, with a
/// `probe.toml` when given.
fn add_probe(skill: &Path, manifest: Option<&str>) {
    let scripts = skill.join("scripts");
    std::fs::create_dir_all(&scripts).expect("mkdir scripts");
    std::fs::copy(
        guest_package("skill-probe").join("plugin.wasm"),
        scripts.join("probe.wasm"),
    )
    .expect("copy probe");
    if let Some(manifest) = manifest {
        std::fs::write(scripts.join("probe.toml"), manifest).expect("write probe.toml");
    }
}

fn run(runtime: &Runtime, skill: &Path, script: &str, args: &str) -> Result<String, String> {
    runtime
        .run_skill_script(skill, script, "user-1", None, args)
        .unwrap_or_else(|e| panic!("runtime error for `{args}`: {e}"))
}

#[test]
fn word_stats_reports_on_its_reference_file() {
    let runtime = runtime_with(Arc::new(DenyAllGate));
    let (_data, _root, skill) = example_skill();
    let out = run(
        &runtime,
        &skill,
        example::SCRIPT,
        r#"{"file": "writing-guide.md", "top": 3}"#,
    )
    .expect("the script succeeds");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let text = std::fs::read_to_string(skill.join("references/writing-guide.md")).unwrap();
    assert_eq!(json["file"], "writing-guide.md");
    assert_eq!(json["bytes"], text.len());
    assert_eq!(json["lines"], text.lines().count());
    assert_eq!(json["headings"], 4);
    assert_eq!(json["reading_minutes"], 1);
    assert!(json["words"].as_u64().unwrap() > 80, "{json}");
    let top: Vec<(&str, u64)> = json["top_words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["word"].as_str().unwrap(), w["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(top, [("sentence", 4), ("idea", 3), ("reader", 3)]);

    // The script's own errors come back as its error, not the runtime's.
    let err = run(&runtime, &skill, example::SCRIPT, "{}").expect_err("no file");
    assert!(err.contains("give `file`"), "{err}");
    let err = run(&runtime, &skill, example::SCRIPT, "not json").expect_err("bad args");
    assert!(err.contains("not JSON"), "{err}");
    let err =
        run(&runtime, &skill, example::SCRIPT, r#"{"file": "nope.md"}"#).expect_err("missing file");
    assert!(err.contains("cannot read `nope.md`"), "{err}");
    // Inside the skill but outside references/ is still its own directory.
    assert!(
        run(
            &runtime,
            &skill,
            example::SCRIPT,
            r#"{"file": "../SKILL.md"}"#
        )
        .is_ok()
    );
}

#[test]
fn a_script_cannot_read_outside_its_skill_directory() {
    let runtime = runtime_with(Arc::new(DenyAllGate));
    let (_data, root, skill) = example_skill();
    let secret = root.join("secret.txt");
    std::os::unix::fs::symlink(&secret, skill.join("references/link.md")).expect("symlink");
    std::os::unix::fs::symlink(&root, skill.join("references/up")).expect("dir symlink");
    let absolute = format!(r#"{{"file": "{}"}}"#, secret.display());
    for args in [
        r#"{"file": "../../secret.txt"}"#,
        r#"{"file": "../../../../../../etc/passwd"}"#,
        r#"{"file": "/etc/passwd"}"#,
        absolute.as_str(),
        r#"{"file": "link.md"}"#,
        r#"{"file": "up/secret.txt"}"#,
    ] {
        let err = run(&runtime, &skill, example::SCRIPT, args).expect_err(args);
        assert!(err.starts_with("cannot read"), "{args}: {err}");
    }

    // The probe sees /skill read-only and nothing else: no other preopen, no env, no args.
    add_probe(&skill, None);
    assert_eq!(
        run(&runtime, &skill, "probe", "read /skill/SKILL.md"),
        Ok(format!("ok {}", example::SKILL_MD.len()))
    );
    assert_eq!(
        run(&runtime, &skill, "probe", "list /skill"),
        Ok("ok SKILL.md,references,scripts".to_string())
    );
    for command in [
        "read /skill/../secret.txt",
        "read /skill/references/../../secret.txt",
        "read /etc/passwd",
        "read secret.txt",
        "list /",
        "list /skill/..",
        "read /skill/references/link.md",
    ] {
        assert!(
            run(&runtime, &skill, "probe", command).is_err(),
            "{command}"
        );
    }
    assert!(run(&runtime, &skill, "probe", "write /skill/new.txt").is_err());
    assert!(
        run(
            &runtime,
            &skill,
            "probe",
            "write /skill/references/writing-guide.md"
        )
        .is_err()
    );
    assert!(!skill.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(skill.join("references/writing-guide.md")).unwrap(),
        example::REFERENCES[0].1
    );
    assert_eq!(run(&runtime, &skill, "probe", "env"), Ok("ok 0 0".into()));
}

#[test]
fn limits_stop_a_looping_or_trapping_script_and_the_next_call_works() {
    let runtime = runtime_with(Arc::new(DenyAllGate));
    let (_data, _root, skill) = example_skill();
    add_probe(
        &skill,
        Some("[limits]\ntimeout-ms = 200\nmemory-mib = 16\n"),
    );
    let started = std::time::Instant::now();
    let err = runtime
        .run_skill_script(&skill, "probe", "user-1", None, "spin")
        .expect_err("times out");
    assert!(
        matches!(
            err,
            PluginError::Timeout {
                deadline_ms: 200,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(err.to_string().contains("skill:word-stats/probe"), "{err}");
    assert!(run(&runtime, &skill, "probe", "read /skill/SKILL.md").is_ok());

    let err = runtime
        .run_skill_script(&skill, "probe", "user-1", None, "trap")
        .expect_err("traps");
    assert!(matches!(err, PluginError::Trap { .. }), "{err:?}");
    assert!(run(&runtime, &skill, "probe", "read /skill/SKILL.md").is_ok());
    assert!(
        run(
            &runtime,
            &skill,
            example::SCRIPT,
            r#"{"file": "writing-guide.md"}"#
        )
        .is_ok()
    );

    // Oversized arguments are refused before the script runs.
    let big = "x".repeat(engram::runtime::MAX_SKILL_ARGS_BYTES + 1);
    assert!(matches!(
        runtime.run_skill_script(&skill, "probe", "user-1", None, &big),
        Err(PluginError::Runtime(_))
    ));
}

#[test]
fn tool_calls_go_through_the_gate_with_the_turn_id() {
    let (_data, _root, skill) = example_skill();
    add_probe(&skill, Some("[permissions]\ntools = [\"search_memory\"]\n"));
    let call = "tool search_memory {\"query\":\"coffee\"}";

    // No gate configured: denied.
    let denied = runtime_with(Arc::new(DenyAllGate));
    let err = run(&denied, &skill, "probe", call).expect_err("denied");
    assert!(err.starts_with("ToolError::Denied("), "{err}");

    let gate = Arc::new(TurnGate::default());
    let runtime = runtime_with(gate.clone());
    // Without a turn, and in a turn the gate does not know: denied by the gate.
    let err = run(&runtime, &skill, "probe", call).expect_err("no turn");
    assert!(err.contains("no turn"), "{err}");
    let err = runtime
        .run_skill_script(&skill, "probe", "user-1", Some("turn_gone"), call)
        .expect("runs")
        .expect_err("unknown turn");
    assert!(err.contains("turn_gone"), "{err}");
    // In the allowed turn: the gate's answer comes back.
    let out = runtime
        .run_skill_script(&skill, "probe", "user-1", Some("turn_ok"), call)
        .expect("runs")
        .expect("allowed");
    assert_eq!(out, "ok {\"tool\":\"search_memory\",\"results\":[]}");
    // A tool the script's manifest does not list never reaches the gate.
    let err = runtime
        .run_skill_script(
            &skill,
            "probe",
            "user-1",
            Some("turn_ok"),
            "tool fetch_url {}",
        )
        .expect("runs")
        .expect_err("not listed");
    assert!(err.contains("permissions.tools"), "{err}");

    let calls = gate.calls.lock().unwrap();
    let seen: Vec<(Option<&str>, &str, &str, &str)> = calls
        .iter()
        .map(|(caller, tool, args)| {
            (
                caller.turn_id.as_deref(),
                caller.plugin.as_str(),
                tool.as_str(),
                args.as_str(),
            )
        })
        .collect();
    let args = "{\"query\":\"coffee\"}";
    assert_eq!(
        seen,
        [
            (None, "skill:word-stats/probe", "search_memory", args),
            (
                Some("turn_gone"),
                "skill:word-stats/probe",
                "search_memory",
                args
            ),
            (
                Some("turn_ok"),
                "skill:word-stats/probe",
                "search_memory",
                args
            ),
        ]
    );
    assert!(calls.iter().all(|(c, _, _)| c.user_id == "user-1"));
}

#[test]
fn script_names_and_manifests_are_validated() {
    let runtime = runtime_with(Arc::new(DenyAllGate));
    let (_data, root, skill) = example_skill();
    for name in ["../word-stats", "Word", "a/b", "", "-x"] {
        let err = runtime.load_skill_script(&skill, name).err().expect(name);
        assert!(
            matches!(err, PluginError::InvalidManifest { .. }),
            "{name}: {err:?}"
        );
    }
    assert!(matches!(
        runtime.load_skill_script(&skill, "missing").err(),
        Some(PluginError::Io { .. })
    ));
    for manifest in [
        "[permissions]\nkv = true\n",
        "name = \"other\"\n",
        "[limits]\ntimeout-ms = 1\n",
        "[permissions]\ntools = [\"Bad Tool\"]\n",
        "[permissions]\nallowed-hosts = [\"http://x/\"]\n",
    ] {
        add_probe(&skill, Some(manifest));
        let err = runtime
            .load_skill_script(&skill, "probe")
            .err()
            .expect(manifest);
        assert!(
            matches!(err, PluginError::InvalidManifest { .. }),
            "{manifest}: {err:?}"
        );
    }
    add_probe(
        &skill,
        Some("description = \"probe\"\n[limits]\nmemory-mib = 8\n"),
    );
    let plugin = runtime.load_skill_script(&skill, "probe").expect("loads");
    assert_eq!(plugin.memory_limit_mib, 8);
    assert_eq!(plugin.qualified_name(), "skill:word-stats/probe");

    // A symlinked script, or a skill directory that is a symlink, is refused.
    std::os::unix::fs::symlink(
        skill.join("scripts/probe.wasm"),
        skill.join("scripts/linked.wasm"),
    )
    .unwrap();
    assert!(runtime.load_skill_script(&skill, "linked").is_err());
    let alias = root.join("alias");
    std::os::unix::fs::symlink(&skill, &alias).unwrap();
    let plugin = runtime.load_skill_script(&skill, "probe").unwrap();
    let caller = ToolCaller {
        plugin: String::new(),
        user_id: "user-1".into(),
        turn_id: None,
        deadline: None,
    };
    assert!(matches!(
        runtime.run_skill_tool(&plugin, &caller, &alias, "env"),
        Err(PluginError::Runtime(_))
    ));

    // A memory-world plugin is not a script, and a script is not a strategy.
    let extractor = runtime.load_dir(&guest_package("noop")).unwrap();
    assert!(matches!(
        runtime.run_skill_tool(&extractor, &caller, &skill, "{}"),
        Err(PluginError::WrongWorld { .. })
    ));
    assert!(
        Path::new(builtin::SKILL_SCRIPTS_DIR)
            .join("word-stats.wasm")
            .is_file()
    );
}

/// The daemon's wiring in miniature over `data`: the Second Brain, the skills
/// library, a real gate (audit log, default policy), and a runtime whose
/// `tools.invoke` goes through the turn service over them (as `App::open` wires it).
struct Wired {
    runtime: Arc<Runtime>,
    gate: Arc<Gate>,
    memory: Arc<Memory>,
    /// Held: the runtime's tool gate reaches the service through a weak handle.
    _turns: Arc<TurnService>,
}

fn wired(data: &Path, skills_root: &Path) -> Wired {
    let config = Arc::new(ConfigFile::new(data.join("config.yaml")));
    let memory = Arc::new(open_memory(
        data,
        &engram::storage::Storage::Files,
        None,
        &Config::default(),
        Arc::new(SystemClock),
        EventBus::default(),
    ));
    assert!(memory.brain().is_ok(), "the Second Brain opens");
    let library = Library::open(skills_root.to_path_buf()).expect("library");
    let gate = Arc::new(
        Gate::open(
            &DataDir::new(data.to_path_buf()),
            Arc::new(FixedPolicy(Arc::new(Policy::default()))),
            Arc::new(SystemClock),
        )
        .expect("gate"),
    );
    let plugin_tools = Arc::new(PluginTools::default());
    let runtime = Arc::new(runtime_with(plugin_tools.clone()));
    let dirs = DataDir::new(data.to_path_buf());
    // No model installed: the static table routes.
    let encoder = Arc::new(ActiveEncoder::new(Models::new(dirs.models_dir()), None));
    let turns = TurnService::new(
        gate.clone(),
        library,
        memory.clone(),
        config,
        runtime.clone(),
        encoder,
        dirs.skill_vectors_dir(),
    );
    plugin_tools.attach(&turns);
    Wired {
        runtime,
        gate,
        memory,
        _turns: turns,
    }
}

fn skill_turn(gate: &Gate, allowed_tools: &[&str]) -> String {
    gate.open_turn(NewTurn {
        user: "user-1".into(),
        skill: Some(SkillGrant {
            skill: example::SLUG.into(),
            allowed_tools: allowed_tools.iter().map(|t| t.to_string()).collect(),
            granted_tools: allowed_tools.iter().map(|t| t.to_string()).collect(),
        }),
        // The test servers' host, as if the message named it: after a script's first
        // fetch, a fetch to a host the turn does not know would ask (a plugin cannot).
        destinations: vec!["127.0.0.1".into()],
        ..NewTurn::default()
    })
    .expect("turn")
    .id
}

fn in_turn(w: &Wired, skill: &Path, turn: &str, command: &str) -> Result<String, String> {
    w.runtime
        .run_skill_script(skill, "probe", "user-1", Some(turn), command)
        .unwrap_or_else(|e| panic!("runtime error for `{command}`: {e}"))
}

fn remembered(memory: &Memory, q: &str) -> Vec<String> {
    memory
        .brain()
        .expect("brain")
        .search("user-1", q, 10)
        .expect("search")
        .into_iter()
        .map(|hit| hit.record.summary)
        .collect()
}

#[test]
fn an_allowed_tools_invoke_runs_the_host_tool_and_a_denied_one_does_not() {
    let (data, root, skill) = example_skill();
    add_probe(
        &skill,
        Some("[permissions]\ntools = [\"save_memory\", \"search_memory\"]\n"),
    );
    let w = wired(data.path(), &root);

    // The invoked skill lists both tools: save_memory (ask) is raised to allow and
    // really saves, as the turn's user; search_memory finds it.
    let turn = skill_turn(&w.gate, &["save_memory", "search_memory"]);
    let saved = in_turn(
        &w,
        &skill,
        &turn,
        r#"tool save_memory {"type":"preference","summary":"Likes green tea"}"#,
    )
    .expect("saved");
    let record: serde_json::Value =
        serde_json::from_str(saved.strip_prefix("ok ").expect("ok")).expect("JSON");
    assert_eq!(record["summary"], "Likes green tea", "{saved}");
    assert_eq!(record["evidence"], "direct", "{saved}");
    assert_eq!(remembered(&w.memory, "green tea"), ["Likes green tea"]);
    let found =
        in_turn(&w, &skill, &turn, r#"tool search_memory {"q":"green tea"}"#).expect("found");
    let found: serde_json::Value =
        serde_json::from_str(found.strip_prefix("ok ").expect("ok")).expect("JSON");
    assert_eq!(found["items"][0]["memory"]["summary"], "Likes green tea");
    // The tool's own refusal comes back to the script as the tool's error.
    let err =
        in_turn(&w, &skill, &turn, r#"tool search_memory {"q":""}"#).expect_err("empty query");
    assert!(err.contains("args.q"), "{err}");

    // A skill that does not list save_memory: the gate denies it and nothing is saved.
    let other = skill_turn(&w.gate, &["search_memory"]);
    let err = in_turn(
        &w,
        &skill,
        &other,
        r#"tool save_memory {"type":"preference","summary":"Dislikes coffee"}"#,
    )
    .expect_err("denied");
    assert!(err.contains("not-in-allowed-tools"), "{err}");
    assert!(remembered(&w.memory, "coffee").is_empty());
    // Nor once the turn has ended.
    w.gate.end_turn(&turn, "user-1").expect("end");
    let err = in_turn(
        &w,
        &skill,
        &turn,
        r#"tool save_memory {"type":"preference","summary":"Dislikes coffee"}"#,
    )
    .expect_err("ended");
    assert!(err.contains("turn-ended"), "{err}");
    assert!(remembered(&w.memory, "coffee").is_empty());

    // Every call was decided and audited as the script's.
    let page = w.gate.audit().list(&AuditQuery::default()).expect("audit");
    let codes: Vec<&str> = page.items.iter().map(|e| e.code.as_str()).collect();
    assert_eq!(
        codes,
        [
            "turn-ended",
            "not-in-allowed-tools",
            "policy-allow",
            "policy-allow",
            "skill-grant"
        ]
    );
    assert!(
        page.items
            .iter()
            .all(|e| e.caller == "plugin:skill:word-stats/probe")
    );
}

/// A one-connection HTTP server on loopback: answers `body` after `delay`, or never
/// when `delay` is `None`. Returns its address.
fn serve_once(body: &'static str, delay: Option<Duration>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        match delay {
            Some(delay) => {
                std::thread::sleep(delay);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            // Hold the connection open, silent, well past any deadline of the test.
            None => std::thread::sleep(Duration::from_secs(30)),
        }
    });
    format!("http://{addr}/page.txt")
}

#[test]
fn fetch_url_from_a_script_runs_on_the_async_runtime_within_the_scripts_deadline() {
    let (data, root, skill) = example_skill();
    std::fs::write(
        data.path().join("config.yaml"),
        "network:\n  allowPrivate: true\n",
    )
    .expect("config");
    add_probe(
        &skill,
        Some("[permissions]\ntools = [\"fetch_url\"]\n[limits]\ntimeout-ms = 500\n"),
    );
    let w = wired(data.path(), &root);
    let turn = skill_turn(&w.gate, &["fetch_url"]);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio");
    // As the daemon runs a script: on the runtime's blocking pool.
    let run = |command: String| {
        let (runtime, skill, turn) = (w.runtime.clone(), skill.clone(), turn.clone());
        let task = tokio.spawn_blocking(move || {
            runtime.run_skill_script(&skill, "probe", "user-1", Some(&turn), &command)
        });
        tokio.block_on(task).expect("joined")
    };

    let url = serve_once("hello from the test server", Some(Duration::ZERO));
    let out = run(format!(r#"tool fetch_url {{"url":"{url}"}}"#))
        .expect("runs")
        .expect("fetched");
    let result: serde_json::Value =
        serde_json::from_str(out.strip_prefix("ok ").expect("ok")).expect("JSON");
    assert_eq!(result["status"], 200, "{out}");
    assert_eq!(result["text"], "hello from the test server", "{out}");

    // A server that never answers: the fetch is cut at the script's 500 ms, not the
    // fetcher's 10 s, and the script is stopped (or gets the timeout as the error).
    let silent = serve_once("", None);
    let started = Instant::now();
    let outcome = run(format!(r#"tool fetch_url {{"url":"{silent}"}}"#));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}: {outcome:?}");
    match outcome {
        Err(PluginError::Timeout { .. }) => {}
        Ok(Err(message)) => assert!(
            message.contains("timed out") || message.contains("within"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }

    // Outside any async runtime there is nothing to wait on the network with: a clean
    // error, not a hang or a panic.
    let err = in_turn(
        &w,
        &skill,
        &turn,
        &format!(r#"tool fetch_url {{"url":"{url}"}}"#),
    )
    .expect_err("no runtime");
    assert!(err.contains("async runtime"), "{err}");
}

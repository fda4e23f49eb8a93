//! The README's "Writing a plugin", step by step, with the real binary: new, cargo
//! test, build, test, install, select, and the plugin used in an ingestion. Every
//! command run here is checked to be in the README, word for word, so the tutorial
//! cannot drift from what works. Then every world's template builds and answers.
//!
//! Cargo runs offline (there is no network here, and CI has fetched everything by the
//! time the tests run: the crate asks for the wit-bindgen of `plugins/`) and builds in
//! `<target>/engram-plugins`, the directory host/build.rs builds the embedded plugins
//! in: same dependencies, same profile, so a new crate compiles in seconds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use engram_e2e::{Daemon, engram, ok};
use serde_json::Value;

const README: &str = include_str!("../../README.md");

/// The README's tutorial section.
fn tutorial() -> &'static str {
    let start = README.find("## Writing a plugin").expect("the tutorial");
    let rest = &README[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    &rest[..end]
}

/// `line` must be in the tutorial, as written.
fn documented(line: &str) {
    assert!(
        tutorial().contains(line),
        "the README's tutorial no longer says `{line}`"
    );
}

/// Where host/build.rs builds the guests: `<target>/engram-plugins`.
fn guest_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    exe.ancestors()
        .nth(3)
        .expect("<target>/<profile>/deps/<test>")
        .join("engram-plugins")
}

/// The environment of a build the user starts: nothing of this `cargo test` leaks in
/// (its CARGO_* variables, flags or wrappers would change the guest build).
fn clean_cargo_env(command: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || matches!(
                key,
                "RUSTFLAGS" | "RUSTDOCFLAGS" | "RUSTC_WRAPPER" | "RUSTC_WORKSPACE_WRAPPER"
            );
        if leaks {
            command.env_remove(key);
        }
    }
    // The toolchain of this build (rust-toolchain.toml's, with wasm32-wasip2), even
    // though the crates live outside the repository, where rustup would pick its default.
    if let Some(cargo) = std::env::var_os("CARGO") {
        let rustc = Path::new(&cargo).with_file_name("rustc");
        if rustc.is_file() {
            command.env("RUSTC", rustc);
        }
    }
    command
        .env("CARGO_TARGET_DIR", guest_target_dir())
        .env("CARGO_NET_OFFLINE", "true")
}

/// `engram <args>` in `cwd` with the data directory `data`; documented in the README.
fn step(data: &Path, cwd: &Path, args: &[&str]) -> Output {
    documented(&format!("engram {}", args.join(" ")));
    let output = clean_cargo_env(engram(data).current_dir(cwd).args(args))
        .output()
        .expect("run engram");
    assert!(
        output.status.success(),
        "engram {}: {:?}\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json(args: &[&str], data: &Path, cwd: &Path) -> Value {
    let mut with_json: Vec<&str> = args.to_vec();
    with_json.push("--json");
    let output = clean_cargo_env(engram(data).current_dir(cwd).args(&with_json))
        .output()
        .expect("run engram");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn the_readme_tutorial_works_step_by_step() {
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path();
    let data = cwd.join("data");

    // 1. Write the crate.
    let out = step(
        &data,
        cwd,
        &["plugins", "new", "my-extractor", "--world", "extractor"],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("created my-extractor"));
    let crate_dir = cwd.join("my-extractor");
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "plugin.toml",
        "README.md",
        "wit/worlds.wit",
    ] {
        assert!(crate_dir.join(file).is_file(), "{file}");
    }

    // 2. Its unit test, natively.
    documented("cd my-extractor && cargo test --release && cd ..");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let tested = clean_cargo_env(
        Command::new(cargo)
            .current_dir(&crate_dir)
            .args(["test", "--release"]),
    )
    .output()
    .expect("cargo test");
    assert!(
        tested.status.success(),
        "{}",
        String::from_utf8_lossy(&tested.stderr)
    );
    assert!(String::from_utf8_lossy(&tested.stdout).contains("1 passed"));

    // 3. Build it.
    step(&data, cwd, &["plugins", "build", "my-extractor"]);
    assert!(crate_dir.join("plugin.wasm").is_file());

    // 4. One call through the real runtime.
    let out = step(
        &data,
        cwd,
        &[
            "plugins",
            "test",
            "my-extractor",
            "--input",
            "my-extractor/examples/input.json",
        ],
    );
    let candidates: Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(
        candidates[0]["summary"],
        "User asked to remember: I parked on level 3"
    );
    assert_eq!(candidates[0]["source_turns"], serde_json::json!(["t1"]));

    // 5. Install it.
    step(&data, cwd, &["plugins", "install", "my-extractor"]);

    // 6. Select it.
    let selection = "memory:\n  strategies:\n    extractor: my-extractor\n";
    documented(selection);
    std::fs::write(data.join("config.yaml"), selection).expect("config");

    // 7. See it used in an ingestion.
    let daemon = Daemon::start(&mut engram(&data));
    documented(r#"{"role":"user","content":"Remember that I parked on level 3."}"#);
    documented("/api/brain/conversations/c1/end");
    ok(
        daemon.call(
            "POST",
            "/api/brain/conversations/c1/messages",
            r#"{"role":"user","content":"Remember that I parked on level 3."}"#,
        ),
        201,
    );
    let ended = ok(
        daemon.call("POST", "/api/brain/conversations/c1/end", ""),
        200,
    );
    assert_eq!(ended["extractor"], "my-extractor");
    assert_eq!(ended["candidates"], 1);
    assert_eq!(ended["applied"][0]["decision"], "added");
    let found = ok(daemon.get("/api/brain/memory/search?q=parked"), 200);
    assert_eq!(
        found["items"][0]["memory"]["summary"],
        "User asked to remember: I parked on level 3"
    );
    let status = ok(daemon.get("/api/brain/status"), 200);
    assert_eq!(status["strategies"][0]["plugin"], "my-extractor");
    assert!(status["strategies"][0]["last_failure"].is_null());
}

#[test]
fn every_worlds_template_builds_and_answers() {
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path();
    let data = cwd.join("data");
    let expected = [
        ("resolver", "/reinforce", Value::from("mem_01")),
        (
            "consolidator",
            "/profile_summary",
            Value::from("User's name is Dana."),
        ),
        ("skill-tool", "/ok", Value::from(r#"{"words": 5}"#)),
    ];
    for (world, pointer, value) in expected {
        let name = format!("kit-{world}");
        let created = json(&["plugins", "new", &name, "--world", world], &data, cwd);
        assert_eq!(created["world"], world);
        let built = json(&["plugins", "build", &name], &data, cwd);
        assert_eq!(built["world"], world);
        assert_eq!(built["sha256"].as_str().map(str::len), Some(64));
        let input = format!("{name}/examples/input.json");
        let called = json(&["plugins", "test", &name, "--input", &input], &data, cwd);
        assert_eq!(called["ok"], true, "{world}: {called}");
        assert_eq!(
            called["result"].pointer(pointer),
            Some(&value),
            "{world}: {called}"
        );
    }

    // A crate that does not compile is a clear failure, and leaves no plugin.wasm.
    let broken = cwd.join("kit-resolver");
    std::fs::remove_file(broken.join("plugin.wasm")).expect("remove");
    std::fs::write(broken.join("src/lib.rs"), "this is not rust").expect("break");
    let failed =
        clean_cargo_env(
            engram(&data)
                .current_dir(cwd)
                .args(["plugins", "build", "kit-resolver"]),
        )
        .output()
        .expect("run");
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).contains("cargo build failed"));
    assert!(!broken.join("plugin.wasm").exists());

    // `test` before `build` says what to do.
    json(
        &["plugins", "new", "kit-unbuilt", "--world", "extractor"],
        &data,
        cwd,
    );
    let unbuilt = engram(&data)
        .current_dir(cwd)
        .args([
            "plugins",
            "test",
            "kit-unbuilt",
            "--input",
            "kit-unbuilt/examples/input.json",
        ])
        .output()
        .expect("run");
    assert_eq!(unbuilt.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unbuilt.stderr).contains("engram plugins build"));
}

#[test]
fn a_trapping_plugin_is_reported_by_plugins_test() {
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path();
    let data = cwd.join("data");
    json(
        &["plugins", "new", "kit-panics", "--world", "extractor"],
        &data,
        cwd,
    );
    let source = cwd.join("kit-panics/src/lib.rs");
    let text = std::fs::read_to_string(&source).expect("read");
    let panicking = text.replace(
        "        conversation\n            .messages",
        "        panic!(\"no facts today ({} messages)\", conversation.messages.len());\n        #[allow(unreachable_code)]\n        conversation\n            .messages",
    );
    assert_ne!(text, panicking, "the template changed: update this test");
    std::fs::write(&source, panicking).expect("write");
    json(&["plugins", "build", "kit-panics"], &data, cwd);
    let output = engram(&data)
        .current_dir(cwd)
        .args([
            "plugins",
            "test",
            "kit-panics",
            "--input",
            "kit-panics/examples/input.json",
            "--json",
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["ok"], false);
    assert_eq!(report["error"]["code"], "trap");
    let message = report["error"]["message"].as_str().expect("message");
    assert!(message.contains("no facts today (3 messages)"), "{message}");
}

//! End-to-end: the real `engram` binary, started as a user would start it, spoken to
//! over loopback HTTP and through its command line.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use engram_e2e::{Daemon, engram, engram_bin, output_within};
use serde_json::Value;

#[test]
fn serve_answers_healthz_and_stops_cleanly_on_sigterm() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(engram_bin());
    command.arg("--data-dir").arg(data.path());
    let daemon = Daemon::start(&mut command);
    assert!(
        daemon.addr.starts_with("127.0.0.1:"),
        "loopback by default: {}",
        daemon.addr
    );

    let response = daemon.get("/healthz");
    assert_eq!(response.status, 200);
    let health = response.json();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["strategies"]["extractor"], "builtin:extract-rules");
    assert_eq!(health["strategies"]["resolver"], "builtin:resolve-default");
    assert_eq!(
        health["strategies"]["consolidator"],
        "builtin:consolidate-default"
    );

    // Switching a strategy in config.yaml shows at once, without a restart.
    std::fs::write(
        data.path().join("config.yaml"),
        "memory:\n  strategies:\n    extractor: my-extractor\n",
    )
    .expect("config");
    let health = daemon.get("/healthz").json();
    assert_eq!(health["strategies"]["extractor"], "my-extractor");

    assert_eq!(daemon.get("/nope").status, 404);
    let status = daemon.stop();
    assert!(status.success(), "exit status {status:?}");
    assert!(data.path().join("plugins").is_dir());
    assert!(
        data.path().join("cache/components").is_dir(),
        "components compiled into the cache"
    );
}

#[test]
fn serve_with_the_second_brain_disabled_creates_no_database() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(engram_bin());
    command
        .arg("--data-dir")
        .arg(data.path())
        .env("SECOND_BRAIN_ENABLED", "false");
    let daemon = Daemon::start(&mut command);
    let response = daemon.get("/healthz");
    assert_eq!(response.status, 200);
    let health = response.json();
    assert_eq!(health["second_brain"]["enabled"], false);
    assert!(
        health["second_brain"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("SECOND_BRAIN_ENABLED")),
        "{health}"
    );
    assert!(daemon.stop().success());
    assert!(!data.path().join("memory/second-brain").exists());
}

#[test]
fn serve_uses_the_xdg_data_dir_by_default() {
    let xdg = tempfile::tempdir().expect("tempdir");
    let mut command = Command::new(engram_bin());
    command
        .env_remove("ENGRAM_DATA_DIR")
        .env("XDG_DATA_HOME", xdg.path());
    let daemon = Daemon::start(&mut command);
    assert_eq!(daemon.get("/healthz").status, 200);
    assert!(daemon.stop().success());
    assert!(xdg.path().join("engram/plugins").is_dir());
}

fn cli(data: &Path, args: &[&str]) -> Output {
    Command::new(engram_bin())
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env("ENGRAM_LOG", "error")
        .output()
        .expect("run engram")
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "status {:?}, stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("valid JSON on stdout")
}

#[test]
fn plugins_cli_lists_inspects_installs_and_removes() {
    let data = tempfile::tempdir().expect("tempdir");
    let listed = json(&cli(data.path(), &["plugins", "list", "--json"]));
    let names: Vec<&str> = listed["plugins"]
        .as_array()
        .expect("plugins array")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "builtin:consolidate-default",
            "builtin:extract-llm",
            "builtin:extract-rules",
            "builtin:resolve-default"
        ]
    );
    assert_eq!(listed["plugins"][1]["selected_for"], serde_json::json!([]));
    let extract = &listed["plugins"][2];
    assert_eq!(extract["world"], "extractor");
    assert_eq!(extract["selected_for"], serde_json::json!(["extractor"]));
    assert_eq!(extract["sha256"].as_str().map(str::len), Some(64));

    let inspected = json(&cli(
        data.path(),
        &["plugins", "inspect", "builtin:resolve-default", "--json"],
    ));
    assert_eq!(inspected["world"], "resolver");
    assert_eq!(inspected["memory_limit_mib"], 64);
    assert_eq!(inspected["timeout_ms"], 2000);

    let package = Path::new(engram::runtime::builtin::GUEST_PACKAGES_DIR).join("noop");
    let package = package.to_str().expect("utf-8 path");
    let installed = json(&cli(
        data.path(),
        &["plugins", "install", package, "--json"],
    ));
    assert_eq!(installed["status"], "installed");
    assert_eq!(installed["name"], "noop");
    let again = json(&cli(
        data.path(),
        &["plugins", "install", package, "--json"],
    ));
    assert_eq!(again["status"], "already-installed");

    let inspected = json(&cli(data.path(), &["plugins", "inspect", "noop", "--json"]));
    assert_eq!(inspected["source"], "installed");
    assert_eq!(
        inspected["compile_cache"], "hit",
        "installed once, compiled once"
    );

    let removed = json(&cli(data.path(), &["plugins", "remove", "noop", "--json"]));
    assert_eq!(removed["status"], "removed");

    let missing = cli(data.path(), &["plugins", "remove", "noop"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no plugin named `noop`"));

    let usage = cli(data.path(), &["plugins", "frobnicate"]);
    assert_eq!(usage.status.code(), Some(2));

    let not_a_package = cli(
        data.path(),
        &["plugins", "install", data.path().to_str().expect("utf-8")],
    );
    assert_eq!(not_a_package.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&not_a_package.stderr).contains("plugin.toml"));
}

/// `engram serve` on `data` (quiet logs), run to its end: for starts that must fail.
fn serve_to_the_end(data: &Path) -> Output {
    output_within(
        engram(data).args(["serve", "--listen", "127.0.0.1:0"]),
        Duration::from_secs(60),
    )
}

#[test]
fn a_second_serve_on_one_data_dir_exits_1_naming_the_first_and_touches_nothing() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let daemon_file = data.path().join(engram::server::DAEMON_FILE);
    let before = std::fs::read(&daemon_file).expect("daemon.json");
    let modified = std::fs::metadata(&daemon_file)
        .and_then(|m| m.modified())
        .expect("mtime");

    let second = serve_to_the_end(data.path());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("pid {}", daemon.pid())) && stderr.contains(&daemon.url()),
        "the running daemon's pid and URL: {stderr}"
    );
    assert!(second.stdout.is_empty(), "it never listened");
    // Nothing touched: the first daemon's daemon.json, and the daemon itself.
    assert_eq!(std::fs::read(&daemon_file).expect("daemon.json"), before);
    assert_eq!(
        std::fs::metadata(&daemon_file)
            .and_then(|m| m.modified())
            .expect("mtime"),
        modified
    );
    assert_eq!(daemon.get("/healthz").status, 200);
    let state = engram::lock::state(data.path()).expect("lock state");
    let engram::lock::LockState::Held(Some(holder)) = state else {
        panic!("not held: {state:?}");
    };
    assert_eq!(holder.pid, daemon.pid());
    assert_eq!(holder.url.as_deref(), Some(daemon.url().as_str()));

    // The commands that work on the data directory directly still do.
    let skills = cli(data.path(), &["skills", "list", "--json"]);
    assert!(
        skills.status.success(),
        "{}",
        String::from_utf8_lossy(&skills.stderr)
    );
    json(&cli(data.path(), &["plugins", "list", "--json"]));

    assert!(daemon.stop().success());
    assert!(!daemon_file.exists(), "removed at a clean stop");
    assert_eq!(
        engram::lock::state(data.path()).expect("lock state"),
        engram::lock::LockState::Free
    );
}

#[test]
fn a_daemon_killed_with_sigkill_does_not_keep_the_data_dir() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut first = Daemon::start(&mut engram(data.path()));
    let first_pid = first.pid();
    // SIGKILL: no shutdown, daemon.json and the lock file's record stay behind.
    first.child.kill().expect("kill -9");
    first.child.wait().expect("reap");
    assert!(data.path().join(engram::server::DAEMON_FILE).exists());
    assert!(data.path().join(engram::lock::LOCK_FILE).exists());

    let second = Daemon::start(&mut engram(data.path()));
    assert_ne!(second.pid(), first_pid);
    assert_eq!(second.get("/healthz").status, 200);
    let info: engram::server::DaemonInfo = serde_json::from_slice(
        &std::fs::read(data.path().join(engram::server::DAEMON_FILE)).expect("daemon.json"),
    )
    .expect("daemon.json");
    assert_eq!(info.pid, second.pid());
    assert!(second.stop().success());
}

/// Starts `engram serve` with `ENGRAM_LOG=info` and `args` (before `serve`), stops it,
/// and returns what it logged on stderr (a pipe, not a terminal).
fn log_of_a_run(args: &[&str], env: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().expect("tempdir");
    let mut command = engram(data.path());
    command
        .env("ENGRAM_LOG", "info")
        .env_remove("ENGRAM_LOG_FORMAT")
        .env_remove("NO_COLOR")
        .args(args)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("spawn");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("listening line");
    assert!(line.starts_with("listening on "), "{line:?}");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{:?}", out.status);
    String::from_utf8(out.stderr).expect("utf-8 log")
}

#[test]
fn logs_to_a_pipe_are_plain_text_or_json_lines_on_request() {
    let text = log_of_a_run(&[], &[]);
    assert!(text.contains("engram listening on http://"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "no colour codes in a pipe: {text:?}"
    );

    for (args, env) in [
        (&["--log-format", "json"][..], &[][..]),
        (&[][..], &[("ENGRAM_LOG_FORMAT", "json")][..]),
    ] {
        let json = log_of_a_run(args, env);
        let lines: Vec<Value> = json
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"))
            })
            .collect();
        let listening = lines
            .iter()
            .find(|l| {
                l["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("engram listening on http://"))
            })
            .unwrap_or_else(|| panic!("no listening line in {json}"));
        assert_eq!(listening["level"], "INFO");
        assert!(listening["timestamp"].is_string(), "{listening}");
        assert!(listening["fields"]["data_dir"].is_string(), "{listening}");
    }

    // RUST_LOG-style filters: `warn` hides the info lines; a bad one is named.
    let quiet = log_of_a_run(&[], &[("ENGRAM_LOG", "warn")]);
    assert!(!quiet.contains("engram listening on"), "{quiet}");
    let bad = log_of_a_run(&[], &[("ENGRAM_LOG", "engram=loud")]);
    assert!(
        bad.contains("ENGRAM_LOG=\"engram=loud\" is not a log filter"),
        "{bad}"
    );
}

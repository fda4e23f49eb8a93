//! End-to-end: what a new user meets, with the real binary. The first `engram serve`
//! on a new data directory (the commented configuration, what it prints), `engram
//! config show|check`, shell completions, `engram service` in a temporary home, and
//! `engram mcp` with no daemon running.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use engram_e2e::{engram, engram_bin, output_within};

fn template() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/assets/config.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Starts `engram serve` and reads its stdout until the line starting with `until`
/// (or the start's last line): the daemon and the lines read.
fn serve_reading(data: &Path, until: &str) -> (std::process::Child, Vec<String>) {
    let mut child = engram(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).expect("read stdout");
        assert!(n > 0, "stdout closed after {lines:?}");
        let line = line.trim_end().to_string();
        let done = line.starts_with(until);
        lines.push(line);
        if done {
            break;
        }
    }
    (child, lines)
}

fn stop(mut child: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

#[test]
fn the_first_start_writes_every_setting_and_says_what_to_do_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (daemon, lines) = serve_reading(&data, "first start:");
    let text = lines.join("\n");
    let addr = lines[0]
        .strip_prefix("listening on http://")
        .expect("the listening line comes first");
    assert!(
        text.contains(&format!(
            "dashboard: http://{addr}/ (sign in with the token in {})",
            data.join("operator-token").display()
        )),
        "{text}"
    );
    let dir_env = data.display();
    assert!(
        text.contains(&format!(
            "claude mcp add --transport stdio engram -e ENGRAM_DATA_DIR={dir_env} -- engram mcp"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "codex mcp add engram --env ENGRAM_DATA_DIR={dir_env} -- engram mcp"
        )),
        "{text}"
    );
    assert!(text.contains("wrote"), "{text}");
    let written = std::fs::read_to_string(data.join("config.yaml")).expect("config.yaml");
    assert_eq!(written, template());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("config.yaml"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    stop(daemon);

    // A later start leaves the file as the person edited it, and says no more of it.
    std::fs::write(data.join("config.yaml"), "mcp:\n  user: alice\n").expect("edit");
    let (daemon, lines) = serve_reading(&data, "data directory:");
    assert!(
        !lines.iter().any(|l| l.starts_with("first start")),
        "{lines:?}"
    );
    stop(daemon);
    assert_eq!(
        std::fs::read_to_string(data.join("config.yaml")).expect("config"),
        "mcp:\n  user: alice\n"
    );
}

#[test]
fn config_show_prints_what_is_in_force_and_check_gives_the_daemons_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    std::fs::write(
        data.join("config.yaml"),
        "mcp:\n  user: alice\nplugins:\n  my-extractor:\n    settings: {apiKey: sk-do-not-print-me, apiKeyEnv: MY_KEY}\n",
    )
    .expect("config");
    let shown = output_within(
        engram(data)
            .args(["config", "show"])
            .env("ENGRAM_SKILLS_REGISTRY", "http://127.0.0.1:9/team")
            .env("ENGRAM_OPERATOR_TOKEN", "operator-secret-0123456789"),
        Duration::from_secs(30),
    );
    assert!(shown.status.success());
    let text = String::from_utf8_lossy(&shown.stdout);
    for expected in [
        "user: alice",
        "idleMinutes: 10",
        "transcriptDays: 365",
        "maxConnections: 512",
        "registry: http://127.0.0.1:9/team",
        "apiKeyEnv: MY_KEY",
        "ENGRAM_OPERATOR_TOKEN is set",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    assert!(!text.contains("sk-do-not-print-me"), "{text}");
    assert!(!text.contains("operator-secret"), "{text}");

    let check = |file: &Path| {
        output_within(
            engram(data).args(["config", "check"]).arg(file),
            Duration::from_secs(30),
        )
    };
    let valid = check(&data.join("config.yaml"));
    assert!(valid.status.success());
    assert!(String::from_utf8_lossy(&valid.stdout).contains("valid"));
    let bad = data.join("bad.yaml");
    std::fs::write(&bad, "server:\n  maxConections: 3\n").expect("bad");
    let refused = check(&bad);
    assert_eq!(refused.status.code(), Some(1));
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("maxConections"), "{error}");
    // The template as written is valid.
    let uncommented = data.join("template.yaml");
    std::fs::write(&uncommented, template()).expect("template");
    assert!(check(&uncommented).status.success());
}

#[test]
fn completions_are_generated_for_each_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (shell, marker) in [
        ("bash", "_engram"),
        ("zsh", "#compdef engram"),
        ("fish", "complete -c engram"),
    ] {
        let out = output_within(
            engram(dir.path()).args(["completions", shell]),
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(marker), "{shell}: {marker}");
        assert!(
            text.contains("service"),
            "{shell}: the subcommands are there"
        );
    }
}

/// STAND-IN for systemctl (no systemd runs in the test machines' containers): it
/// records its arguments and answers `is-enabled`/`is-active` as systemd would for an
/// enabled, running unit. What is tested is the unit file and the calls made.
fn fake_systemctl(bin: &Path, log: &Path) {
    std::fs::create_dir_all(bin).expect("bin");
    let script = bin.join("systemctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\ncase \"$2\" in is-enabled) echo enabled;; is-active) echo active;; esac\n",
            log.display()
        ),
    )
    .expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn service_install_writes_a_user_unit_and_enables_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let data = dir.path().join("my data");
    let bin = dir.path().join("bin");
    let log = dir.path().join("systemctl.log");
    fake_systemctl(&bin, &log);
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let service = |args: &[&str]| {
        output_within(
            engram(&data)
                .arg("service")
                .args(args)
                .env("HOME", &home)
                .env_remove("XDG_CONFIG_HOME")
                .env("PATH", &path),
            Duration::from_secs(30),
        )
    };
    let installed = service(&["install"]);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let unit_path = home.join(".config/systemd/user/engram.service");
    let unit = std::fs::read_to_string(&unit_path).expect("the unit");
    let binary = engram_bin().canonicalize().expect("binary");
    assert!(
        unit.contains(&format!(
            "ExecStart=\"{}\" serve --data-dir \"{}\" --log-format json",
            binary.display(),
            data.display()
        )),
        "{unit}"
    );
    for line in [
        "Restart=on-failure",
        "StandardError=journal",
        "WantedBy=default.target",
    ] {
        assert!(unit.contains(line), "{line} missing:\n{unit}");
    }
    let calls = std::fs::read_to_string(&log).expect("systemctl calls");
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        ["--user daemon-reload", "--user enable --now engram.service"]
    );
    // systemd's own checker, where this machine has it.
    if let Ok(verified) = Command::new("systemd-analyze")
        .args(["verify"])
        .arg(&unit_path)
        .output()
    {
        // It exits 0 on unknown keys, naming them on stderr: any line about the
        // unit file is a finding.
        let errors = String::from_utf8_lossy(&verified.stderr);
        assert!(
            verified.status.success() && !errors.contains("engram.service"),
            "systemd-analyze verify: {errors}"
        );
    }
    let status = service(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("enabled: enabled") && text.contains("active: active"),
        "{text}"
    );
    let removed = service(&["uninstall"]);
    assert!(removed.status.success());
    assert!(!unit_path.exists());
    let calls = std::fs::read_to_string(&log).expect("systemctl calls");
    assert!(
        calls.contains("--user disable --now engram.service"),
        "{calls}"
    );
    let status = service(&["status"]);
    assert_eq!(status.status.code(), Some(1), "not installed");
}

#[test]
fn mcp_without_a_daemon_serves_embedded_and_says_so() {
    let data = tempfile::tempdir().expect("tempdir");
    // The default log level, as a user runs it.
    let mut child = engram(data.path())
        .env_remove("ENGRAM_LOG")
        .env_remove("RUST_LOG")
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}"#,
        )
        .expect("write");
    stdin.write_all(b"\n").expect("newline");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut answer = String::new();
    stdout.read_line(&mut answer).expect("answer");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .expect("notification");
    drop(stdin);
    let output = child.wait_with_output().expect("exit");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON-RPC answer");
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("serving embedded"), "{stderr}");
    // The SDK's info lines for each session and notification stay out of the log.
    assert!(!stderr.contains("rmcp"), "{stderr}");
    assert!(output.status.success(), "{stderr}");
    // It held the data directory's lock while it served.
    assert!(data.path().join("daemon.lock").exists());
}

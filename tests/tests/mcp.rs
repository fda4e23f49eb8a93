//! End-to-end: the MCP server driven by the official Python SDK (`mcp` on PyPI), a
//! client no one here wrote, over stdio (relayed to the daemon, and `--embedded`) and
//! streamable HTTP. The checks are in tests/mcp/test_mcp.py, which compares every
//! answer with the REST API's and connects the ways the README's snippets say.
//!
//! The SDK lives in the test suite's virtualenv, `target/test-venv` (`.ci/run` creates
//! it from tests/requirements.txt; see [`engram_e2e::test_python`]). Without it the
//! test is ignored, except under CI (`CI` set), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use engram_e2e::{Daemon, engram, engram_bin};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

#[test]
#[cfg_attr(
    not(test_venv),
    ignore = "needs target/test-venv (tests/requirements.txt; .ci/run makes it)"
)]
fn the_python_sdk_uses_every_tool_prompt_and_resource_over_stdio_and_http() {
    let python = engram_e2e::test_python("mcp");
    let data = tempfile::tempdir().expect("data dir");
    let embedded = tempfile::tempdir().expect("embedded data dir");
    // The suite acts for `alice` as well as the default user (`agent.users`).
    for dir in [data.path(), embedded.path()] {
        std::fs::write(dir.join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    }
    // As a person's daemon runs: its token generated into `auth-token`, where `engram
    // mcp` finds it (the README's stdio snippets pass no token).
    let daemon = Daemon::start_first_run(&mut engram(data.path()), data.path());
    let bin_dir = engram_bin().parent().expect("bin dir").to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut python = Command::new(python);
    // On PostgreSQL the embedded sessions the suite starts keep their databases in a
    // database of their own data directory's, as the daemon does in its own.
    python.env_remove("ENGRAM_DATABASE_URL");
    if engram_e2e::is_on_postgres() {
        let url = engram_e2e::pg::database_url_for(embedded.path()).expect("a database");
        python.env("ENGRAM_DATABASE_URL", url);
    }
    let output = python
        .arg(repo().join("tests/mcp/test_mcp.py"))
        .env("PATH", path)
        .env("ENGRAM_MCP_URL", daemon.url())
        .env("ENGRAM_MCP_TOKEN", &daemon.token)
        .env("ENGRAM_MCP_DATA", data.path())
        .env("ENGRAM_MCP_EMBEDDED_DATA", embedded.path())
        .env("ENGRAM_MCP_README", repo().join("README.md"))
        .env_remove("ENGRAM_TOKEN")
        .env_remove("ENGRAM_URL")
        .output()
        .expect("run the Python suite");
    let report = String::from_utf8_lossy(&output.stderr);
    eprintln!("{report}");
    assert!(output.status.success(), "the MCP suite failed: {report}");
    assert!(report.contains("\nOK"), "the suite ran no test: {report}");
}

#[test]
fn embedded_refuses_a_data_directory_a_daemon_holds_and_touches_nothing() {
    let data = tempfile::tempdir().expect("data dir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let daemon_file = data.path().join(engram::server::DAEMON_FILE);
    let before = std::fs::read(&daemon_file).expect("daemon.json");
    // stdin is closed at once: were the lock not checked, the session would start
    // (and end) on the daemon's databases.
    let output = engram(data.path())
        .args(["mcp", "--embedded"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run engram mcp --embedded");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("pid {}", daemon.pid())) && stderr.contains(&daemon.url()),
        "names the running daemon: {stderr}"
    );
    assert!(output.stdout.is_empty(), "no protocol was spoken");
    assert_eq!(std::fs::read(&daemon_file).expect("daemon.json"), before);
    assert_eq!(daemon.get("/healthz").status, 200);
}

/// The same suite with every database on PostgreSQL.
#[test]
#[cfg_attr(
    not(test_venv),
    ignore = "needs target/test-venv (tests/requirements.txt; .ci/run makes it)"
)]
fn the_python_sdk_uses_every_tool_prompt_and_resource_on_postgres() {
    engram_e2e::on_postgres(
        "the_python_sdk_uses_every_tool_prompt_and_resource_on_postgres",
        the_python_sdk_uses_every_tool_prompt_and_resource_over_stdio_and_http,
    );
}

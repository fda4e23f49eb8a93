//! End-to-end: the third security review (issue 30). Each test is one attack as the
//! review ran it against the real daemon (loopback, the model stand-in, pages and Bot
//! API written for the test), now refused. Each would fail on the code before the fix;
//! its name says the item (`item_NN_...`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use engram_e2e::{Daemon, McpSession, TOKEN, engram, ok, problem};
use serde_json::{Value, json};

fn start(data: &Path) -> Daemon {
    Daemon::start(&mut engram(data))
}

fn post(daemon: &Daemon, path: &str, body: Value, status: u16) -> Value {
    ok(daemon.call("POST", path, &body.to_string()), status)
}

/// Every regular file and directory under `dir` whose mode lets another user in.
#[cfg(unix)]
fn readable_by_others(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let meta = entry.path().symlink_metadata().expect("stat");
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                found.push((entry.path().display().to_string(), mode));
            }
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    found
}

/// Item 12: the databases (and their WAL files) were 0644 inside the 0700 data
/// directory. Now everything the daemon writes is private, and a file made readable
/// by others while it was stopped is tightened at the next start, with a warning.
#[cfg(unix)]
#[test]
fn item_12_data_files_are_private_and_checked_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    post(
        &daemon,
        "/api/brain/memory",
        json!({"type": "preference", "summary": "User likes green tea"}),
        201,
    );
    post(&daemon, "/api/turns", json!({"message": "hello"}), 201);
    post(
        &daemon,
        "/api/schedules",
        json!({"skill": "word-stats", "every": 3600, "input": "x", "start_at": "2999-01-01T00:00:00Z"}),
        201,
    );
    for db in [
        "memory/second-brain/second-brain.db-wal",
        "gate/audit.db-wal",
        "schedule/schedules.db-wal",
        "plugins/kv.sqlite3",
    ] {
        assert!(data.path().join(db).exists(), "{db}");
    }
    assert_eq!(readable_by_others(data.path()), []);
    drop(daemon);

    let audit = data.path().join("gate").join("audit.db");
    std::fs::set_permissions(&audit, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let log = data.path().join("daemon.log");
    let daemon = Daemon::start_logging_to(
        engram(data.path()).env("ENGRAM_OPERATOR_TOKEN", engram_e2e::OPERATOR_TOKEN),
        &log,
    );
    ok(daemon.get("/healthz"), 200);
    let mode = std::fs::metadata(&audit)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("could be read by other users") && logged.contains("audit.db"),
        "{logged}"
    );
}

/// A daemon started with `config` as its config.yaml.
fn start_with(data: &Path, config: &str) -> Daemon {
    std::fs::write(data.join("config.yaml"), config).expect("config");
    start(data)
}

/// The bound: `/healthz` (and every other door) answers within 3 s.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// Sends `head` (a request head, `\r\n\r\n` included) on a fresh connection, then
/// `body`, and answers the response's status line, or why there was none within
/// [`ANSWER_WITHIN`] (a connection refused or closed unanswered, a silent daemon).
fn status_within(addr: &str, head: &str, body: &[u8]) -> Result<String, String> {
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| format!("{e}"))?;
    let mut stream =
        TcpStream::connect_timeout(&addr, ANSWER_WITHIN).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(ANSWER_WITHIN))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) => return Err("closed without an answer".into()),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("no answer within {ANSWER_WITHIN:?}: {e}")),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// A stranger's connection: the head of `POST /login` announcing `length` bytes, and,
/// once the daemon has read the head and started on the body (its `100 Continue`), one
/// byte of it. Nothing more is sent.
fn slow_login(addr: &str, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "POST /login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\nExpect: 100-continue\r\n\r\n"
    )
    .expect("head");
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).expect("the daemon reads the body");
        assert_eq!(n, 1, "closed before reading the body: {seen:?}");
        seen.push(byte[0]);
    }
    assert!(
        seen.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    stream.write_all(b"t").expect("one byte");
    stream
}

/// Item 1 (high): 512 connections sending the head of `POST /login` with a large
/// `Content-Length` and then a byte now and then kept every slot busy, and every new
/// connection was refused (REST, `/mcp`, the dashboard, `/healthz`). Scaled down here
/// with `server.maxConnections: 16` and 48 such connections (the body deadline set
/// far off, so that only the cap's choice is tested): every door answers within 3 s,
/// and a login body larger than a login can be is refused before it is read.
#[test]
fn item_01_strangers_slow_bodies_cannot_fill_the_connection_table() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start_with(
        data.path(),
        "server:\n  maxConnections: 16\n  bodyTimeoutSecs: 600\n",
    );
    let addr = daemon.addr.clone();
    let attackers: Vec<TcpStream> = (0..48).map(|_| slow_login(&addr, 3000)).collect();
    let doors = [
        format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
        format!(
            "GET /api/brain/status HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        ),
        format!("GET /login HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
        format!(
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nAccept: application/json\r\n\r\n"
        ),
    ];
    for _ in 0..3 {
        for door in &doors {
            let status = status_within(&addr, door, b"")
                .unwrap_or_else(|e| panic!("{}: {e}", door.lines().next().unwrap_or_default()));
            assert!(status.starts_with("HTTP/1.1 "), "{status}");
        }
    }
    let health = status_within(&addr, &doors[0], b"").expect("healthz");
    assert!(health.contains(" 200 "), "{health}");
    let huge = status_within(
        &addr,
        &format!("POST /login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n"),
        b"",
    )
    .expect("an oversized login");
    assert!(huge.contains(" 413 "), "{huge}");
    drop(attackers);
}

/// Item 1: the body timeout restarted at each byte, so a body trickling in just
/// inside it held its connection for ever. Now a body has a total deadline
/// (`server.bodyTimeoutSecs`, 2 s here): a login body sent a byte every 200 ms is cut
/// off, answered, and its connection closed.
#[test]
fn item_01_a_request_body_has_a_total_deadline() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start_with(data.path(), "server:\n  bodyTimeoutSecs: 2\n");
    let stream = slow_login(&daemon.addr, 1000);
    let mut writer = stream.try_clone().expect("clone");
    let trickle = std::thread::spawn(move || {
        for _ in 0..998 {
            std::thread::sleep(Duration::from_millis(200));
            if writer.write_all(b"x").is_err() {
                return;
            }
        }
    });
    let mut reader = stream;
    let mut answer = Vec::new();
    let ended = reader.read_to_end(&mut answer);
    assert!(
        ended.is_ok() || !answer.is_empty(),
        "the daemon kept reading the trickle: {ended:?}"
    );
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("HTTP/1.1 4"), "{text}");
    drop(reader);
    trickle.join().expect("trickle");
    ok(daemon.get("/healthz"), 200);
}

/// Item 9: `mcp.user` read like the MCP session's scope, but every tool takes `user`,
/// so any MCP client (and the agent's token on REST) read every user's memory,
/// Telegram users' included. Now the agent's credential acts for `agent.users` only
/// (the default user alone when unset): naming another is 403 `user-not-allowed` on
/// REST and the same code on MCP; the person's token still reaches every user.
#[test]
fn item_09_the_agent_acts_only_for_the_users_it_is_bound_to() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    let person = daemon.person();
    let secret = json!({"type": "identity", "summary": "Telegram user 100 has a secret diagnosis"});
    ok(
        person.call(
            "POST",
            "/api/brain/memory?user=telegram-100",
            &secret.to_string(),
        ),
        201,
    );
    // A single-user install works without a step: the default user is the agent's.
    post(
        &daemon,
        "/api/brain/memory",
        json!({"type": "preference", "summary": "User likes green tea"}),
        201,
    );
    ok(daemon.get("/api/brain/memory"), 200);

    let rest = problem(
        daemon.get("/api/brain/memory?user=telegram-100"),
        403,
        "user-not-allowed",
    );
    problem(
        daemon.get("/api/brain/memory/search?q=diagnosis&user=telegram-100"),
        403,
        "user-not-allowed",
    );
    problem(
        daemon.call(
            "POST",
            "/api/turns",
            &json!({"message": "what is my diagnosis?", "user": "telegram-100"}).to_string(),
        ),
        403,
        "user-not-allowed",
    );
    let mcp = McpSession::open(&daemon.addr, TOKEN);
    for (tool, args) in [
        ("memory_recent", json!({"user": "telegram-100"})),
        (
            "memory_search",
            json!({"q": "diagnosis", "user": "telegram-100"}),
        ),
        (
            "memory_context",
            json!({"message": "what is my diagnosis?", "user": "telegram-100"}),
        ),
    ] {
        let refused = mcp.refused(tool, args, "user-not-allowed");
        assert_eq!(refused["detail"], rest["detail"], "{tool}");
    }
    let mine = mcp.call("memory_recent", json!({}));
    assert_eq!(mine["isError"], Value::Bool(false), "{mine}");
    assert!(!mine.to_string().contains("diagnosis"), "{mine}");
    // The person reaches every user.
    let theirs = ok(
        person.call("GET", "/api/brain/memory?user=telegram-100", ""),
        200,
    );
    assert!(theirs.to_string().contains("diagnosis"));
    let person_mcp = McpSession::open(&daemon.addr, engram_e2e::OPERATOR_TOKEN);
    let read = person_mcp.call("memory_recent", json!({"user": "telegram-100"}));
    assert!(read.to_string().contains("diagnosis"), "{read}");
}

/// Item 9: `agent.users` lists the users an agent works for.
#[test]
fn item_09_agent_users_names_whom_the_agent_may_act_for() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start_with(data.path(), "agent:\n  users: [default, alice]\n");
    post(
        &daemon,
        "/api/brain/memory?user=alice",
        json!({"type": "preference", "summary": "Alice likes rooibos"}),
        201,
    );
    ok(daemon.get("/api/brain/memory"), 200);
    problem(
        daemon.get("/api/brain/memory?user=bob"),
        403,
        "user-not-allowed",
    );
    let mcp = McpSession::open(&daemon.addr, TOKEN);
    let alice = mcp.call("memory_recent", json!({"user": "alice"}));
    assert!(alice.to_string().contains("rooibos"), "{alice}");
    mcp.refused("memory_recent", json!({"user": "bob"}), "user-not-allowed");
}

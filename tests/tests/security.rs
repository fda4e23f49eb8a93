//! End-to-end: the security review of issue 19, each finding as it was reproduced
//! against the running daemon, now refused. (The session cookie replayed from another
//! port and the login template are in `dashboard/session.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use engram_e2e::{Daemon, OPERATOR_TOKEN, TOKEN, engram, engram_bin, ok, problem};
use serde_json::{Value, json};

fn start(data: &Path) -> Daemon {
    Daemon::start(&mut engram(data))
}

fn post(daemon: &Daemon, path: &str, body: Value, status: u16) -> Value {
    ok(daemon.call("POST", path, &body.to_string()), status)
}

/// Finding 4: the token that opens a turn approved its own asks, audited as the
/// operator's. Now the agent's approval is 403 and audited as refused; the person's
/// (the operator token here) is the only one that grants.
#[test]
fn the_agent_cannot_approve_its_own_ask() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    let turn = post(
        &daemon,
        "/api/turns",
        json!({"message": "hello there"}),
        201,
    );
    let id = turn["turn_id"].as_str().expect("turn_id");
    let approvals = format!("/api/turns/{id}/approvals");
    let body = json!({"tool": "save_memory"}).to_string();

    problem(
        daemon.call("POST", &approvals, &body),
        403,
        "person-required",
    );
    let save = json!({"args": {"type": "preference", "summary": "x"}}).to_string();
    problem(
        daemon.call("POST", &format!("/api/turns/{id}/tools/save_memory"), &save),
        403,
        "approval-required",
    );
    let audit = ok(daemon.get(&format!("/api/audit?turn={id}")), 200);
    let items = audit["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{audit}");
    let refusal = &items[1];
    assert_eq!(refusal["caller"], "agent", "{audit}");
    assert_eq!(refusal["decision"], "deny");
    assert_eq!(refusal["code"], "person-required");
    assert!(items.iter().all(|d| d["caller"] != "operator"));

    ok(daemon.person().call("POST", &approvals, &body), 201);
    ok(
        daemon.call("POST", &format!("/api/turns/{id}/tools/save_memory"), &save),
        200,
    );
    let audit = ok(daemon.get(&format!("/api/audit?turn={id}")), 200);
    assert!(
        audit["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|d| d["caller"] == "operator" && d["code"] == "approved"),
        "{audit}"
    );
}

/// Finding 5: an import into bob with person links naming alice's memory and person
/// changed alice's person page and her export.
#[test]
fn an_import_cannot_reach_another_users_records() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = start(data.path());
    for content in [
        "My sister Maria lives in Lisbon and she is a doctor.",
        "I am learning the cello.",
    ] {
        post(
            &daemon,
            "/api/brain/conversations/c1/messages?user=alice",
            json!({"role": "user", "content": content}),
            201,
        );
    }
    post(
        &daemon,
        "/api/brain/conversations/c1/end?user=alice",
        json!({}),
        200,
    );
    let persons = ok(daemon.get("/api/brain/persons?user=alice"), 200);
    let maria = persons["items"][0]["id"]
        .as_str()
        .expect("a person")
        .to_string();
    let page = format!("/api/brain/persons/{maria}?user=alice");
    let before_page = ok(daemon.get(&page), 200);
    let before_export = daemon.get("/api/brain/export?user=alice").text();
    let memory = before_export
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("json"))
        .find(|line| line["kind"] == "person_link")
        .expect("alice has a person link")["memory_id"]
        .as_str()
        .expect("memory_id")
        .to_string();

    let hostile = json!({
        "kind": "person_link", "memory_id": memory, "person_id": maria,
        "user_id": "bob", "relation": "rival",
    })
    .to_string();
    let refused = problem(
        daemon.request(
            "POST",
            "/api/brain/import?user=bob",
            Some(engram_e2e::OPERATOR_TOKEN),
            Some("application/x-ndjson"),
            format!("{hostile}\n").as_bytes(),
        ),
        409,
        "owned-by-another-user",
    );
    assert!(
        refused["detail"]
            .as_str()
            .is_some_and(|d| d.contains("another user")),
        "{refused}"
    );
    assert_eq!(ok(daemon.get(&page), 200), before_page);
    assert_eq!(
        daemon.get("/api/brain/export?user=alice").text(),
        before_export
    );
    assert_eq!(daemon.get("/api/brain/export?user=bob").text(), "");
}

/// Finding 7: schedules (list, get, delete), the audit log and a turn's tool calls
/// were not scoped by `user`: `GET /api/schedules` with no user listed alice's
/// private schedule input.
#[test]
fn schedules_audit_and_turns_are_each_users_own() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = start(data.path());
    let schedule = post(
        &daemon,
        "/api/schedules",
        json!({"skill": "web-search", "every": 3600, "input": "alice's private query",
               "user": "alice", "start_at": "2999-01-01T00:00:00Z"}),
        201,
    );
    let sch = schedule["id"].as_str().expect("id");
    let listed = daemon.get("/api/schedules").text();
    assert!(!listed.contains("private query"), "{listed}");
    assert_eq!(
        ok(daemon.get("/api/schedules?user=bob"), 200)["items"],
        json!([])
    );
    problem(
        daemon.get(&format!("/api/schedules/{sch}")),
        404,
        "not-found",
    );
    problem(
        daemon.call("DELETE", &format!("/api/schedules/{sch}?user=bob"), ""),
        404,
        "not-found",
    );
    let alices = ok(daemon.get("/api/schedules?user=alice"), 200);
    assert_eq!(alices["items"][0]["input"], "alice's private query");
    ok(daemon.get(&format!("/api/schedules/{sch}?user=alice")), 200);

    // Alice's turn and its tool calls: invisible and unusable to everyone else.
    daemon.grant_tools("web-search");
    let turn = post(
        &daemon,
        "/api/turns",
        json!({"message": "/web-search secret plans", "user": "alice"}),
        201,
    );
    let id = turn["turn_id"].as_str().expect("turn_id");
    let authorize = json!({"tool": "fetch_url", "args": {"url": "https://example.org/secret"}});
    assert_eq!(
        post(
            &daemon,
            &format!("/api/turns/{id}/authorize?user=alice"),
            authorize,
            200,
        )["code"],
        "skill-grant"
    );
    for user in ["", "?user=bob"] {
        problem(
            daemon.get(&format!("/api/turns/{id}{user}")),
            404,
            "unknown-turn",
        );
        let decided = post(
            &daemon,
            &format!("/api/turns/{id}/authorize{user}"),
            json!({"tool": "fetch_url", "args": {"url": "https://example.org/mine"}}),
            200,
        );
        assert_eq!(decided["code"], "unknown-turn", "{decided}");
        problem(
            daemon.call("POST", &format!("/api/turns/{id}/end{user}"), "{}"),
            404,
            "unknown-turn",
        );
    }
    for user in ["", "?user=bob"] {
        let audit = daemon.get(&format!("/api/audit{user}")).text();
        assert!(!audit.contains("secret"), "{audit}");
        assert!(!audit.contains("web-search"), "{audit}");
    }
    let alices = ok(daemon.get("/api/audit?user=alice"), 200);
    let items = alices["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{alices}");
    assert!(
        items[0]["args_summary"]
            .as_str()
            .is_some_and(|a| a.contains("example.org"))
    );
    let view = ok(daemon.get(&format!("/api/turns/{id}?user=alice")), 200);
    assert_eq!(
        view["decisions"].as_array().map(Vec::len),
        Some(1),
        "{view}"
    );
}

/// Finding 8: the URL guard let the IPv4-translated and local-use NAT64 ranges
/// through.
#[test]
fn ipv4_translated_and_local_nat64_addresses_are_refused() {
    let data = tempfile::tempdir().expect("tempdir");
    for url in [
        "http://[::ffff:0:7f00:1]:9/SKILL.md",
        "http://[::ffff:0:a9fe:a9fe]/SKILL.md",
        "http://[64:ff9b:1::7f00:1]/SKILL.md",
    ] {
        let out = engram(data.path())
            .args(["skills", "install", "--json", "--from", url])
            .output()
            .expect("run engram skills");
        assert!(!out.status.success());
        let answer: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{url}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(
            answer["results"][0]["error"]["code"], "private-address",
            "{url}: {answer}"
        );
    }
}

/// `engram serve` as a shell with a soft limit of `files` open files starts it (the
/// hard limit stays as it is), its log (warnings and up) going to `log`.
fn start_with_file_limit(data: &Path, files: u32, log: &Path) -> Daemon {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -S -n {files} && exec \"$0\" \"$@\""))
        .arg(engram_bin())
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("ENGRAM_LOG", "warn")
        .env("ENGRAM_TOKEN", TOKEN)
        .env("ENGRAM_OPERATOR_TOKEN", OPERATOR_TOKEN)
        .env_remove("SECOND_BRAIN_ENABLED")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the listening line");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    Daemon {
        child,
        addr,
        token: TOKEN.to_string(),
    }
}

/// A connection that sends the start of a request head and then nothing.
fn slow_socket(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .expect("write");
    stream
}

/// Whether the daemon closes `stream` (end of file or a reset) before the read
/// timeout, reading and dropping whatever it answered first.
fn closed_by_daemon(mut stream: TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// Finding 3: about 1,100 connections that never finished their headers exhausted
/// the daemon's file descriptors, and /healthz stopped answering until they went
/// away. Here the daemon starts with a soft limit of 128 open files and 200 slow
/// sockets arrive (more than the cap of 16 and than the limit): the limit is raised
/// to the hard one, the cap closes the slowest, /healthz and the API keep answering,
/// and the log says the cap was reached.
#[test]
fn slow_clients_beyond_the_cap_do_not_stop_the_daemon() {
    const SLOW: usize = 200;
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        "server:\n  maxConnections: 16\n  headerReadTimeoutSecs: 600\n",
    )
    .expect("config");
    let log = data.path().join("daemon.log");
    let daemon = start_with_file_limit(data.path(), 128, &log);
    let slow: Vec<TcpStream> = (0..SLOW).map(|_| slow_socket(&daemon.addr)).collect();
    for _ in 0..5 {
        let health = ok(daemon.get("/healthz"), 200);
        assert_eq!(health["status"], "ok", "{health}");
    }
    ok(daemon.get("/api/brain/status"), 200);
    // The oldest slow sockets were closed to make room.
    assert!(
        slow.into_iter().take(10).all(closed_by_daemon),
        "the first slow sockets stay open"
    );
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("connection cap (server.maxConnections = 16) is reached"),
        "{logged}"
    );
}

/// The header-read timeout ends a connection whose request head never completes, and
/// the idle timeout one whose request body stops coming.
#[test]
fn a_stalled_head_or_body_ends_its_connection() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        "server:\n  headerReadTimeoutSecs: 1\n  idleTimeoutSecs: 1\n",
    )
    .expect("config");
    let daemon = start(data.path());
    assert!(closed_by_daemon(slow_socket(&daemon.addr)));

    let mut body = TcpStream::connect(&daemon.addr).expect("connect");
    write!(
        body,
        "POST /api/brain/memory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"type\":"
    )
    .expect("write");
    assert!(closed_by_daemon(body));
    // Nothing half-sent was stored, and the daemon serves on.
    assert_eq!(ok(daemon.get("/api/brain/memory"), 200)["items"], json!([]));
}

/// Finding 6: after a kill -9 the daemon's `daemon.json` stays, and `engram memory`
/// sent the person's token to whatever listened on that port next. Here a listener
/// takes the dead daemon's port and records what it is sent: the CLI refuses before
/// connecting (exit 3, naming the lock no daemon holds), and no token arrives.
#[test]
fn a_stale_daemon_json_after_kill_9_gets_no_token() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut daemon = Daemon::start_first_run(&mut engram(data.path()), data.path());
    let operator = std::fs::read_to_string(data.path().join("operator-token"))
        .expect("operator-token")
        .trim()
        .to_string();
    ok(daemon.get("/healthz"), 200);
    daemon.child.kill().expect("kill -9");
    daemon.child.wait().expect("reap");
    assert!(data.path().join("daemon.json").exists());

    // Another process takes the port and answers anything with a 500, recording it.
    let impostor = std::net::TcpListener::bind(&daemon.addr).expect("the freed port");
    let (heard, received) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for mut stream in impostor.incoming().flatten() {
            let mut head = vec![0u8; 8192];
            let n = stream.read(&mut head).unwrap_or(0);
            let _ = heard.send(String::from_utf8_lossy(&head[..n]).into_owned());
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let out = engram(data.path())
        .args(["memory", "overview"])
        .stdin(Stdio::null())
        .output()
        .expect("engram memory");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("daemon.lock"), "{stderr}");
    assert!(stderr.contains("token was not sent"), "{stderr}");
    let sent: Vec<String> = received.try_iter().collect();
    assert!(
        sent.iter().all(|request| !request.contains(&operator)),
        "the token reached the impostor: {sent:?}"
    );
    assert!(
        sent.is_empty(),
        "the CLI connected to the impostor: {sent:?}"
    );
}

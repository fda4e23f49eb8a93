//! Several daemons, one service (issue 32): daemons with data directories of their own
//! on one PostgreSQL database answer as one. What one acknowledges, the other finds at
//! once; one killed with SIGKILL under load loses no acknowledged write, the other keeps
//! answering, and the killed one, started again, serves everything written meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engram_e2e::pg::Owner;
use engram_e2e::{Client, Daemon, engram, next_event, ok, problem};
use serde_json::{Value, json};

fn daemon_on(url: &str, data: &std::path::Path) -> Daemon {
    Daemon::start(engram(data).env("ENGRAM_DATABASE_URL", url))
}

/// Two daemons' data directories of their own.
fn data_dirs() -> [tempfile::TempDir; 2] {
    [(), ()].map(|()| tempfile::tempdir().expect("a data directory"))
}

fn add(client: &Client, summary: &str) -> Result<String, String> {
    let body = json!({"type": "preference", "summary": summary}).to_string();
    let response = client
        .try_call("POST", "/api/brain/memory", &body)
        .map_err(|e| e.to_string())?;
    if response.status != 201 {
        return Err(format!("{}: {}", response.status, response.text()));
    }
    Ok(response.json()["id"].as_str().expect("id").to_string())
}

fn search(daemon: &Daemon, word: &str) -> Vec<String> {
    let found = ok(
        daemon.get(&format!("/api/brain/memory/search?q={word}")),
        200,
    );
    found["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|hit| hit["memory"]["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn each_daemon_serves_what_the_other_acknowledged_at_once() {
    let Some(owner) = Owner::new("each_daemon_serves_what_the_other_acknowledged") else {
        return;
    };
    let [one_dir, two_dir] = data_dirs();
    let one = daemon_on(&owner.url(), one_dir.path());
    let two = daemon_on(&owner.url(), two_dir.path());
    for (daemon, dir) in [(&one, &one_dir), (&two, &two_dir)] {
        assert_eq!(ok(daemon.get("/healthz"), 200)["storage"], "postgres");
        assert!(
            !engram::memory::brain_db_path(dir.path()).exists(),
            "no SQLite file of the Second Brain"
        );
    }
    // Each daemon's event stream carries the changes made through the other.
    let mut events = [
        one.open_stream("/api/events"),
        two.open_stream("/api/events"),
    ];
    for i in 0..20 {
        let (writer, reader) = if i % 2 == 0 {
            (&one, &two)
        } else {
            (&two, &one)
        };
        let word = format!("zqx{i}tea");
        let id = add(&writer.client(), &format!("likes {word}")).expect("add");
        assert_eq!(
            search(reader, &word),
            [id.as_str()],
            "found through the other"
        );
        for stream in &mut events {
            let created = next_event(stream, "memory.created");
            assert_eq!(created["data"]["id"], id.as_str(), "{created}");
        }
        let got = ok(reader.get(&format!("/api/brain/memory/{id}")), 200);
        assert_eq!(got["summary"], format!("likes {word}"));
        let edited = format!("zqy{i}tea");
        ok(
            writer.call(
                "PUT",
                &format!("/api/brain/memory/{id}"),
                &json!({"summary": format!("likes {edited}")}).to_string(),
            ),
            200,
        );
        assert_eq!(
            search(reader, &edited),
            [id.as_str()],
            "the edit, through the other"
        );
        assert!(
            search(reader, &word).is_empty(),
            "the old text, through the other"
        );
    }
    // Plugins' key-value stores, schedules and the audit log are shared too: a
    // schedule made through one is listed by the other.
    let made = ok(
        one.call(
            "POST",
            "/api/schedules",
            &json!({"skill": "web-search", "every": 3600, "input": "rust release notes"})
                .to_string(),
        ),
        201,
    );
    let listed = ok(two.get("/api/schedules"), 200);
    assert!(
        listed["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|s| s["id"] == made["id"]),
        "{listed}"
    );
}

#[test]
fn a_daemon_killed_under_load_loses_no_acknowledged_write() {
    let Some(owner) = Owner::new("a_daemon_killed_under_load") else {
        return;
    };
    let [one_dir, two_dir] = data_dirs();
    let mut one = daemon_on(&owner.url(), one_dir.path());
    let two = daemon_on(&owner.url(), two_dir.path());
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for (t, client) in [one.client(), one.client(), two.client()]
        .into_iter()
        .enumerate()
    {
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        writers.push(std::thread::spawn(move || {
            let mut failed_after_kill = 0;
            for i in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match add(&client, &format!("note {t} {i} about kz{t}w{i}")) {
                    Ok(id) => acknowledged.lock().expect("lock").push(id),
                    // The killed daemon's writers fail from then on; nothing they
                    // were not told was stored is counted.
                    Err(_) => {
                        failed_after_kill += 1;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
            failed_after_kill
        }));
    }
    // Reads through the survivor all along.
    let reader = {
        let (client, stop) = (two.client(), stop.clone());
        std::thread::spawn(move || {
            let mut answered = 0;
            while !stop.load(Ordering::SeqCst) {
                let response = client.call("GET", "/api/brain/memory?limit=5", "");
                assert_eq!(
                    response.status,
                    200,
                    "the survivor answers: {}",
                    response.text()
                );
                answered += 1;
            }
            answered
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    one.child.kill().expect("SIGKILL");
    one.child.wait().expect("reaped");
    let killed_at = acknowledged.lock().expect("lock").len();
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().expect("writer");
    }
    assert!(
        reader.join().expect("reader") > 0,
        "the survivor answered reads"
    );
    let acknowledged = acknowledged.lock().expect("lock").clone();
    assert!(killed_at > 0, "writes were acknowledged before the kill");
    assert!(
        acknowledged.len() > killed_at,
        "the survivor kept taking writes after the kill"
    );
    // Every acknowledged write is there, through the survivor and through the killed
    // daemon started again.
    let restarted = daemon_on(&owner.url(), one_dir.path());
    for daemon in [&two, &restarted] {
        let mut listed = std::collections::BTreeSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/api/brain/memory?limit=500&cursor={c}"),
                None => "/api/brain/memory?limit=500".to_string(),
            };
            let page: Value = ok(daemon.get(&path), 200);
            for item in page["items"].as_array().expect("items") {
                listed.insert(item["id"].as_str().expect("id").to_string());
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        let lost: Vec<&String> = acknowledged
            .iter()
            .filter(|id| !listed.contains(*id))
            .collect();
        assert!(
            lost.is_empty(),
            "{} acknowledged writes lost: {lost:?}",
            lost.len()
        );
    }
    // The restarted daemon's index has what was written while it was down.
    let last = acknowledged.last().expect("a write");
    let got = ok(restarted.get(&format!("/api/brain/memory/{last}")), 200);
    let word = got["summary"]
        .as_str()
        .expect("summary")
        .rsplit(' ')
        .next()
        .expect("word")
        .to_string();
    assert_eq!(search(&restarted, &word), [last.as_str()]);
}

/// One stateless MCP call (protocol 2026-07-28: no session) to `daemon`: the tool's
/// result, read from a JSON answer or from the event stream's `data:` line.
fn mcp_call(daemon: &Daemon, tool: &str, arguments: Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            },
        },
    })
    .to_string();
    let authorization = format!("Bearer {}", daemon.token);
    let response = daemon
        .client()
        .try_request_with(
            "POST",
            "/mcp",
            &[
                ("Authorization", authorization.as_str()),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", tool),
            ],
            body.as_bytes(),
        )
        .expect("POST /mcp");
    assert_eq!(response.status, 200, "{}", response.text());
    let text = response.text();
    let answer = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(answer.trim()).expect("a JSON-RPC answer");
    assert!(answer["error"].is_null(), "{answer}");
    answer["result"].clone()
}

/// MCP in its stateless mode through either daemon: a memory an agent saves through
/// one is what it finds through the other, with no session to pin.
#[test]
fn stateless_mcp_calls_may_go_to_any_daemon() {
    let Some(owner) = Owner::new("stateless_mcp_calls_may_go_to_any_daemon") else {
        return;
    };
    let [one_dir, two_dir] = data_dirs();
    let one = daemon_on(&owner.url(), one_dir.path());
    let two = daemon_on(&owner.url(), two_dir.path());
    let saved = mcp_call(
        &one,
        "memory_add",
        json!({"type": "preference", "summary": "likes qzvx tea"}),
    );
    assert_ne!(saved["isError"], true, "{saved}");
    let found = mcp_call(&two, "memory_search", json!({"q": "qzvx"}));
    assert_ne!(found["isError"], true, "{found}");
    assert!(found.to_string().contains("likes qzvx tea"), "{found}");
}

/// A turn opened through one daemon is decided, approved and ended through the other,
/// and a dashboard login through one is a session on both (issue 32, item 2).
#[test]
fn a_turn_and_a_dashboard_login_work_through_either_daemon() {
    let Some(owner) = Owner::new("turns_and_logins_through_either_daemon") else {
        return;
    };
    let [one_dir, two_dir] = data_dirs();
    let one = daemon_on(&owner.url(), one_dir.path());
    let two = daemon_on(&owner.url(), two_dir.path());

    let opened = ok(
        one.call(
            "POST",
            "/api/turns",
            r#"{"message":"remember that I like tea"}"#,
        ),
        201,
    );
    let turn = opened["turn_id"].as_str().expect("turn_id").to_string();
    let authorize = |daemon: &Daemon| {
        ok(
            daemon.call(
                "POST",
                &format!("/api/turns/{turn}/authorize"),
                r#"{"tool":"save_memory","args":{}}"#,
            ),
            200,
        )["decision"]
            .clone()
    };
    // save_memory asks by default; the person's approval through one daemon is in
    // force through the other.
    assert_eq!(authorize(&two), "ask");
    ok(
        one.person().call(
            "POST",
            &format!("/api/turns/{turn}/approvals"),
            r#"{"tool":"save_memory"}"#,
        ),
        201,
    );
    assert_eq!(authorize(&two), "allow");
    let view = ok(two.get(&format!("/api/turns/{turn}")), 200);
    assert_eq!(view["state"], "open", "{view}");
    ok(
        two.call("POST", &format!("/api/turns/{turn}/end"), "{}"),
        200,
    );
    assert_eq!(authorize(&one), "deny");
    assert_eq!(
        ok(one.get(&format!("/api/turns/{turn}")), 200)["state"],
        "ended"
    );

    // The dashboard: logged in through one, its session works through the other, and
    // a logout through the other ends it on both.
    let login = one
        .client()
        .try_request_with(
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            format!("token={}&next=/", engram_e2e::OPERATOR_TOKEN).as_bytes(),
        )
        .expect("login");
    assert_eq!(login.status, 200, "{}", login.text());
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_string();
    let page = login.text();
    let marker = r#"<meta name="engram-session" content=""#;
    let start = page.find(marker).expect("the session's secret") + marker.len();
    let secret = page[start..].split('"').next().expect("secret").to_string();
    let with_session = |daemon: &Daemon, method: &str, path: &str| {
        daemon
            .client()
            .try_request_with(
                method,
                path,
                &[("Cookie", &cookie), ("X-Engram-CSRF", &secret)],
                b"",
            )
            .expect("request")
    };
    assert_eq!(with_session(&two, "GET", "/api/brain/status").status, 200);
    assert_eq!(with_session(&two, "POST", "/logout").status, 204);
    assert_eq!(with_session(&one, "GET", "/api/brain/status").status, 401);
}

/// `engram <args> --json` on `data` with the team's database: the answer.
fn cli_json(data: &std::path::Path, url: &str, args: &[&str]) -> Value {
    let out = engram_e2e::output_within(
        engram(data)
            .env("ENGRAM_DATABASE_URL", url)
            .args(args)
            .arg("--json"),
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "engram {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    engram_e2e::stdout_json(&out)
}

/// A skill installed, deactivated or removed through one daemon is served so by the
/// other at once, and announced on its event stream; a plugin installed on one
/// machine is found on another; a daemon started later on its own empty data
/// directory serves them all (issue 32, item 2: "a skill or plugin installed through
/// one daemon is served by all").
#[test]
fn a_skill_or_plugin_installed_through_one_daemon_is_served_by_all() {
    let Some(owner) = Owner::new("skills_and_plugins_through_either_daemon") else {
        return;
    };
    let served = tempfile::tempdir().expect("served");
    let dir = served.path().join("categories/tools/frob");
    std::fs::create_dir_all(dir.join("references")).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: frob\ndescription: Frobnicates the repository.\n---\n\n# Frob\nRead references/notes.md first.\n",
    )
    .expect("SKILL.md");
    let server = engram_e2e::Listening::registry(served.path());
    let [one_dir, two_dir] = data_dirs();
    std::fs::write(
        one_dir.path().join("config.yaml"),
        "network:\n  allowPrivate: true\n",
    )
    .expect("config");
    let one = daemon_on(&owner.url(), one_dir.path());
    let two = daemon_on(&owner.url(), two_dir.path());
    let mut two_events = two.open_stream("/api/events");

    let installed = ok(
        one.call(
            "POST",
            "/api/skills/install",
            &json!({ "url": format!("{}/categories/tools/frob/SKILL.md", server.url()) })
                .to_string(),
        ),
        200,
    );
    assert_eq!(installed["status"], "installed", "{installed}");
    // Read-your-writes: the other daemon lists it as soon as the install answered.
    let there = ok(two.get("/api/skills/frob"), 200);
    assert_eq!(there["source"]["kind"], "url", "{there}");
    assert_eq!(there["sha256"], installed["sha256"], "{there}");
    assert!(
        two_dir.path().join("skills/frob/SKILL.md").is_file(),
        "the other daemon's copy is on its disk, for scripts and references"
    );
    let announced = next_event(&mut two_events, "skill.installed");
    assert_eq!(announced["data"]["slug"], "frob", "{announced}");

    // Deactivated through the other daemon: inactive through the first.
    ok(two.call("POST", "/api/skills/frob/deactivate", "{}"), 200);
    assert_eq!(ok(one.get("/api/skills/frob"), 200)["active"], false);
    // A built-in removed through the first is gone from the other.
    ok(one.call("DELETE", "/api/skills/web-search", ""), 200);
    problem(two.get("/api/skills/web-search"), 404, "not-found");
    let removed = next_event(&mut two_events, "skill.removed");
    assert_eq!(removed["data"]["slug"], "web-search", "{removed}");
    assert!(!two_dir.path().join("skills/web-search").exists());

    // A plugin installed with the CLI on one machine is listed on another.
    let package = std::path::Path::new(engram::runtime::builtin::GUEST_PACKAGES_DIR).join("noop");
    let plugin = cli_json(
        one_dir.path(),
        &owner.url(),
        &["plugins", "install", package.to_str().expect("utf-8")],
    );
    assert_eq!(plugin["status"], "installed", "{plugin}");
    let elsewhere = tempfile::tempdir().expect("another machine");
    let listed = cli_json(elsewhere.path(), &owner.url(), &["plugins", "list"]);
    assert!(
        listed["plugins"]
            .as_array()
            .expect("plugins")
            .iter()
            .any(|p| p["name"] == "noop"),
        "{listed}"
    );

    // A third daemon on an empty data directory serves the team's skills as they are.
    let three_dir = tempfile::tempdir().expect("a third data directory");
    let three = daemon_on(&owner.url(), three_dir.path());
    assert_eq!(ok(three.get("/api/skills/frob"), 200)["active"], false);
    problem(three.get("/api/skills/web-search"), 404, "not-found");
}

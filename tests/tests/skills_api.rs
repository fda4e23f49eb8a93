//! End-to-end: the skills REST API of the real `engram serve`: the built-ins a fresh
//! data directory is seeded with, activation, removal, the discovery scan, events,
//! authentication, and names that must never reach the disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engram_e2e::{Daemon, engram, listed, next_event, ok, problem};
use serde_json::{Value, json};

const BUILTINS: [&str; 4] = ["screenshot", "tweet-notifier", "web-search", "word-stats"];

/// A daemon whose agent works for `default`, `alice` and `bob` (`agent.users`): these
/// tests show each user's data kept apart, with the agent's token.
fn daemon() -> (tempfile::TempDir, Daemon) {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = Daemon::start(&mut engram(data.path()));
    (data, daemon)
}

fn skills_dir(data: &tempfile::TempDir) -> PathBuf {
    data.path().join("skills")
}

fn list(daemon: &Daemon) -> Value {
    ok(daemon.get("/api/skills"), 200)
}

fn slugs(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|s| s["slug"].as_str().expect("slug").to_string())
        .collect()
}

fn item<'a>(list: &'a Value, slug: &str) -> &'a Value {
    listed(list, "items", "slug", slug)
}

/// Every file under `dir` with its bytes (the lock file aside).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n != ".lock") {
                let rel = path.strip_prefix(dir).expect("inside").to_path_buf();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

fn write_skill(dir: &Path, description: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let name = dir
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\nversion: 0.1.0\n---\n# {name}\n"),
    )
    .expect("write");
}

#[test]
fn a_fresh_daemon_lists_the_four_builtins_active_and_the_template_apart() {
    let (data, daemon) = daemon();
    let listed = list(&daemon);
    assert_eq!(slugs(&listed), BUILTINS);
    assert_eq!(
        listed["counts"],
        json!({"installed": 4, "active": 4, "inactive": 0, "broken": 0})
    );
    assert_eq!(listed["template"], "_template");
    assert_eq!(listed["problems"], json!([]));
    assert_eq!(listed["unindexed"], json!([]));
    assert_eq!(listed["next_cursor"], Value::Null);
    for skill in listed["items"].as_array().expect("items") {
        assert_eq!(skill["active"], true, "{skill}");
        assert_eq!(skill["source"], json!({"kind": "seed"}), "{skill}");
        assert_eq!(skill["version"], "1.0.0");
        assert_eq!(skill["id"], skill["slug"]);
        assert_eq!(skill["path"], skill["slug"]);
        assert_eq!(skill["warnings"], json!([]), "{skill}");
        assert_eq!(skill["error"], Value::Null);
        assert!(skill["category"].is_string());
        assert!(skill["summary"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(!skill["intents"].as_array().expect("intents").is_empty());
    }
    assert_eq!(
        item(&listed, "web-search")["allowed_tools"],
        json!(["fetch_url"])
    );
    assert_eq!(
        item(&listed, "screenshot")["allowed_tools"],
        json!([
            "run_command",
            "create_file",
            "write_file",
            "send_file",
            "cd",
            "send_message"
        ])
    );
    assert_eq!(
        item(&listed, "word-stats")["allowed_tools"],
        json!(["read_skill_file"])
    );
    let root = skills_dir(&data);
    for name in [
        "_template",
        "web-search",
        "tweet-notifier",
        "screenshot",
        "word-stats",
    ] {
        assert!(root.join(name).join("SKILL.md").is_file(), "{name}");
    }
    // word-stats ships its reference and its script, listed with its detail.
    let word_stats = ok(daemon.get("/api/skills/word-stats"), 200);
    assert_eq!(
        word_stats["references"],
        json!(["references/writing-guide.md"])
    );
    assert_eq!(word_stats["scripts"], json!(["scripts/word-stats.wasm"]));
    assert!(root.join("word-stats/scripts/word-stats.wasm").is_file());

    // The detail: the listing's fields, resources, and the body only when asked for.
    let detail = ok(daemon.get("/api/skills/web-search"), 200);
    assert_eq!(detail["slug"], "web-search");
    assert_eq!(detail["summary"], item(&listed, "web-search")["summary"]);
    assert_eq!(detail["body"], Value::Null);
    assert_eq!(detail["scripts"], json!([]));
    assert_eq!(detail["references"], json!([]));
    let detail = ok(daemon.get("/api/skills/web-search?body=true"), 200);
    let body = detail["body"].as_str().expect("body");
    assert!(body.contains("## What it does") && body.contains("## Instructions"));
    let file = std::fs::read_to_string(root.join("web-search/SKILL.md")).expect("read");
    assert!(file.ends_with(body));
    problem(
        daemon.get("/api/skills/web-search?body=yes"),
        422,
        "invalid-field",
    );
    problem(
        daemon.get("/api/skills/web-search?bogus=1"),
        400,
        "unknown-field",
    );
    // The template is a file to copy, never a skill.
    problem(daemon.get("/api/skills/_template"), 422, "invalid-id");

    // A restart does not re-seed what the user changed or removed.
    let edited = file.replace("# Web search", "# My web search");
    std::fs::write(root.join("web-search/SKILL.md"), &edited).expect("write");
    ok(daemon.call("DELETE", "/api/skills/screenshot", ""), 200);
    assert!(daemon.stop().success());
    let daemon = Daemon::start(&mut engram(data.path()));
    let listed = list(&daemon);
    assert_eq!(
        slugs(&listed),
        ["tweet-notifier", "web-search", "word-stats"]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("web-search/SKILL.md")).expect("read"),
        edited
    );
    assert!(!root.join("screenshot").exists());
}

#[test]
fn skills_are_deactivated_activated_and_deleted_with_events() {
    let (data, daemon) = daemon();
    let mut stream = daemon.open_stream("/api/events");
    // Skills are shared by every user: another user's stream gets their events too.
    let mut alice = daemon.open_stream("/api/events?user=alice");

    let off = ok(
        daemon.call("POST", "/api/skills/web-search/deactivate", ""),
        200,
    );
    assert_eq!(off["active"], false);
    assert_eq!(off["slug"], "web-search");
    let event = next_event(&mut stream, "skill.deactivated");
    assert_eq!(event["user"], "*");
    assert_eq!(event["data"]["slug"], "web-search");
    assert_eq!(
        next_event(&mut alice, "skill.deactivated")["data"]["slug"],
        "web-search"
    );
    let listed = list(&daemon);
    assert_eq!(item(&listed, "web-search")["active"], false);
    assert_eq!(listed["counts"]["inactive"], 1);
    // Deactivating again changes nothing and still answers the state.
    let again = ok(
        daemon.call("POST", "/api/skills/web-search/deactivate", ""),
        200,
    );
    assert_eq!(again["active"], false);
    assert!(skills_dir(&data).join("web-search/SKILL.md").is_file());

    let on = ok(
        daemon.call("POST", "/api/skills/web-search/activate", ""),
        200,
    );
    assert_eq!(on["active"], true);
    assert_eq!(
        next_event(&mut stream, "skill.activated")["data"]["slug"],
        "web-search"
    );

    let removed = ok(daemon.call("DELETE", "/api/skills/tweet-notifier", ""), 200);
    assert_eq!(
        removed,
        json!({"slug": "tweet-notifier", "id": "tweet-notifier", "status": "removed"})
    );
    let event = next_event(&mut stream, "skill.removed");
    assert_eq!(event["data"]["slug"], "tweet-notifier");
    assert_eq!(event["data"]["source"], "seed");
    assert!(!skills_dir(&data).join("tweet-notifier").exists());
    assert_eq!(
        slugs(&list(&daemon)),
        ["screenshot", "web-search", "word-stats"]
    );

    // Gone is gone: every route answers 404 for it, and nothing changes on disk.
    let before = snapshot(&skills_dir(&data));
    for (method, path) in [
        ("GET", "/api/skills/tweet-notifier"),
        ("DELETE", "/api/skills/tweet-notifier"),
        ("POST", "/api/skills/tweet-notifier/activate"),
        ("POST", "/api/skills/tweet-notifier/deactivate"),
    ] {
        problem(daemon.call(method, path, ""), 404, "not-found");
    }
    assert_eq!(snapshot(&skills_dir(&data)), before);
}

#[test]
fn the_scan_picks_up_manual_skills_and_drops_vanished_ones() {
    let (data, daemon) = daemon();
    let root = skills_dir(&data);
    let mut stream = daemon.open_stream("/api/events");

    // Dropped in by hand: a skill, a copy of the template, and something broken.
    write_skill(&root.join("my-tool"), "Does my thing.");
    std::fs::create_dir_all(root.join("my-skill")).expect("mkdir");
    std::fs::copy(
        root.join("_template/SKILL.md"),
        root.join("my-skill/SKILL.md"),
    )
    .expect("copy");
    std::fs::create_dir_all(root.join("broken")).expect("mkdir");
    // (A file without frontmatter loads leniently; one never closed does not.)
    std::fs::write(root.join("broken/SKILL.md"), "---\nnever closed\n").expect("write");

    // Listed as waiting for a scan, not yet installed.
    let listed = list(&daemon);
    assert_eq!(slugs(&listed), BUILTINS);
    assert_eq!(listed["unindexed"], json!(["my-skill", "my-tool"]));
    assert_eq!(listed["problems"][0]["path"], "broken");
    assert_eq!(listed["problems"][0]["code"], "frontmatter-unclosed");
    problem(daemon.get("/api/skills/my-tool"), 404, "not-found");

    let scan = ok(daemon.call("POST", "/api/skills/scan", ""), 200);
    assert_eq!(scan["added"], json!(["my-skill", "my-tool"]));
    assert_eq!(scan["dropped"], json!([]));
    assert_eq!(scan["problems"][0]["code"], "frontmatter-unclosed");
    let data_dir = data.path().display().to_string();
    assert!(
        !scan.to_string().contains(&data_dir),
        "the data directory's path leaked: {scan}"
    );
    let event = next_event(&mut stream, "skill.installed");
    assert_eq!(event["data"]["slug"], "my-skill");
    assert_eq!(event["data"]["source"], "manual");

    let listed = list(&daemon);
    assert_eq!(
        slugs(&listed),
        [
            "my-skill",
            "my-tool",
            "screenshot",
            "tweet-notifier",
            "web-search",
            "word-stats"
        ]
    );
    let tool = item(&listed, "my-tool");
    assert_eq!(tool["source"]["kind"], "manual");
    assert_eq!(tool["active"], true);
    assert_eq!(tool["description"], "Does my thing.");
    assert_eq!(listed["unindexed"], json!([]));
    assert_eq!(item(&listed, "my-skill")["warnings"], json!([]));

    // Its resources are listed with its detail.
    std::fs::create_dir_all(root.join("my-tool/scripts")).expect("mkdir");
    std::fs::write(root.join("my-tool/scripts/run.sh"), "echo hi\n").expect("write");
    std::fs::create_dir_all(root.join("my-tool/references")).expect("mkdir");
    std::fs::write(root.join("my-tool/references/notes.md"), "notes\n").expect("write");
    let detail = ok(daemon.get("/api/skills/my-tool"), 200);
    assert_eq!(detail["scripts"], json!(["scripts/run.sh"]));
    assert_eq!(detail["references"], json!(["references/notes.md"]));

    // A second scan finds nothing new.
    let scan = ok(daemon.call("POST", "/api/skills/scan", ""), 200);
    assert_eq!(
        (scan["added"].clone(), scan["dropped"].clone()),
        (json!([]), json!([]))
    );

    // A vanished directory: listed as broken until the scan drops it.
    std::fs::remove_dir_all(root.join("my-tool")).expect("rm");
    let listed = list(&daemon);
    assert_eq!(
        item(&listed, "my-tool")["error"]["code"],
        "skill-md-missing"
    );
    assert_eq!(listed["counts"]["broken"], 1);
    let scan = ok(daemon.call("POST", "/api/skills/scan", ""), 200);
    assert_eq!(
        scan["dropped"],
        json!([{"slug": "my-tool", "path": "my-tool"}])
    );
    let event = next_event(&mut stream, "skill.removed");
    assert_eq!(event["data"]["slug"], "my-tool");
    assert_eq!(event["data"]["reason"], "vanished");
    assert!(!slugs(&list(&daemon)).contains(&"my-tool".to_string()));
    problem(daemon.get("/api/skills/my-tool"), 404, "not-found");

    // The template is never picked up.
    assert!(!slugs(&list(&daemon)).iter().any(|s| s.contains("template")));
}

#[test]
fn bad_names_are_problems_and_change_nothing_on_disk() {
    let (data, daemon) = daemon();
    let root = skills_dir(&data);
    // A file outside the skills directory that a traversal would reach.
    std::fs::create_dir_all(data.path().join("victim")).expect("mkdir");
    write_skill(&data.path().join("victim"), "outside");
    let before = snapshot(&root);
    let victim = snapshot(&data.path().join("victim"));
    let long = "a".repeat(65);
    let names = [
        "..",
        "%2e%2e",
        "..%2F..%2Fvictim",
        "%2E%2E%2Fvictim",
        "web-search%2F..",
        "a%2Fweb-search",
        "web-search%2Fscripts",
        "%5C..%5Cvictim",
        "%D0%BD%D0%B0%D0%B2%D1%8B%D0%BA",
        "web%E2%80%8Bsearch",
        "%E2%80%AEweb-search",
        "web-search%00",
        "web-search%0A",
        "Web-Search",
        "web_search",
        "-web-search",
        "%FF",
        "_template",
        ".index.json",
        ".lock",
        long.as_str(),
    ];
    for name in names {
        for (method, suffix) in [
            ("GET", ""),
            ("DELETE", ""),
            ("POST", "/activate"),
            ("POST", "/deactivate"),
        ] {
            let path = format!("/api/skills/{name}{suffix}");
            let response = daemon.call(method, &path, "");
            assert!(
                (400..500).contains(&response.status),
                "{method} {path} answered {}: {}",
                response.status,
                response.text()
            );
            assert_eq!(
                response.header("content-type"),
                Some("application/problem+json"),
                "{method} {path}: {}",
                response.text()
            );
            let doc = response.json();
            if response.status == 422 {
                assert_eq!(doc["code"], "invalid-id", "{method} {path}");
                assert_eq!(doc["field"], "name");
            }
        }
    }
    // Paths with more segments are no route at all.
    for path in [
        "/api/skills/../victim",
        "/api/skills/web-search/../../victim",
        "/api/skills/development/web-search",
    ] {
        let response = daemon.call("DELETE", path, "");
        assert!(
            [404, 405, 422].contains(&response.status),
            "DELETE {path}: {}",
            response.status
        );
    }
    assert_eq!(snapshot(&root), before);
    assert_eq!(snapshot(&data.path().join("victim")), victim);
    assert!(data.path().join("victim/SKILL.md").is_file());
    assert_eq!(slugs(&list(&daemon)), BUILTINS);
}

#[test]
fn every_skills_route_needs_the_token_and_changes_nothing_without_it() {
    let (data, daemon) = daemon();
    let before = snapshot(&skills_dir(&data));
    for (method, path) in [
        ("GET", "/api/skills"),
        ("POST", "/api/skills/scan"),
        ("GET", "/api/skills/web-search"),
        ("GET", "/api/skills/web-search?body=true"),
        ("DELETE", "/api/skills/web-search"),
        ("POST", "/api/skills/web-search/activate"),
        ("POST", "/api/skills/web-search/deactivate"),
        ("GET", "/api/skills/..%2Fvictim"),
    ] {
        for token in [None, Some("wrong-token-0123456789")] {
            let response = daemon.request(method, path, token, None, b"");
            let doc = problem(response.clone(), 401, "unauthorized");
            assert_eq!(response.header("www-authenticate"), Some("Bearer"));
            assert!(
                !response.text().contains("fetch_url") && doc.get("field").is_none(),
                "{method} {path}: {}",
                response.text()
            );
        }
    }
    assert_eq!(snapshot(&skills_dir(&data)), before);
    assert_eq!(item(&list(&daemon), "web-search")["active"], true);
}

#[test]
fn the_openapi_document_describes_the_skills_routes() {
    let (_data, daemon) = daemon();
    let doc = ok(daemon.get("/api/openapi.json"), 200);
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for name in [
        "SkillList",
        "SkillItem",
        "SkillDetail",
        "ScanResult",
        "SkillRemoved",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    assert_eq!(
        schemas["SkillSourceKind"]["enum"],
        json!(["seed", "registry", "url", "file", "manual", "chat"])
    );
    let detail = &doc["paths"]["/api/skills/{name}"]["get"];
    let params: Vec<&str> = detail["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(params, ["name", "body"]);
}

#[test]
fn installs_from_the_registry_and_from_a_url_over_rest() {
    let registry = engram_e2e::Listening::registry(&engram_e2e::fixtures().join("registry-mirror"));
    let data = tempfile::tempdir().expect("tempdir");
    let config = data.path().join("config.yaml");
    // The registry runs on loopback, which URL installs refuse unless allowed.
    std::fs::write(
        &config,
        format!(
            "skills:\n  registry: {}\nnetwork:\n  allowPrivate: true\n",
            registry.url()
        ),
    )
    .expect("config");
    let daemon = Daemon::start(&mut engram(data.path()));
    let mut events = daemon.open_stream("/api/events");

    let id = "ai-ml/agent-audit-logging";
    let body = json!({ "id": id }).to_string();
    let installed = ok(
        daemon.call("POST", "/api/skills/install-from-registry", &body),
        200,
    );
    assert_eq!(installed["status"], "installed");
    assert_eq!(installed["id"], id);
    assert_eq!(installed["slug"], "agent-audit-logging");
    assert_eq!(
        installed["page_url"],
        format!("{}/skills/{id}", registry.url())
    );
    assert_eq!(
        next_event(&mut events, "skill.installed")["data"]["slug"],
        "agent-audit-logging"
    );
    assert!(skills_dir(&data).join(id).join("SKILL.md").is_file());
    problem(
        daemon.call("POST", "/api/skills/install-from-registry", &body),
        409,
        "already-installed",
    );
    let forced = ok(
        daemon.call(
            "POST",
            "/api/skills/install-from-registry",
            &json!({ "id": id, "force": true }).to_string(),
        ),
        200,
    );
    assert_eq!(forced["status"], "reinstalled");
    problem(
        daemon.call(
            "POST",
            "/api/skills/install-from-registry",
            &json!({ "id": "ai-ml/no-such-skill" }).to_string(),
        ),
        404,
        "not-in-registry",
    );
    problem(
        daemon.call(
            "POST",
            "/api/skills/install-from-registry",
            &json!({ "id": id, "priority": 1 }).to_string(),
        ),
        400,
        "unknown-field",
    );

    // From the URL of a raw SKILL.md.
    let raw = format!(
        "{}/categories/development/clean-code/SKILL.md",
        registry.url()
    );
    let from_url = ok(
        daemon.call(
            "POST",
            "/api/skills/install",
            &json!({ "url": raw }).to_string(),
        ),
        200,
    );
    assert_eq!(from_url["status"], "installed");
    assert_eq!(from_url["slug"], "clean-code");
    let listed = ok(daemon.get("/api/skills/clean-code"), 200);
    assert_eq!(listed["source"]["kind"], "url");

    // Without network.allowPrivate the loopback address is refused, and nothing is
    // written. config.yaml is re-read on change.
    std::fs::write(
        &config,
        format!("skills:\n  registry: {}\n", registry.url()),
    )
    .expect("config");
    let before = snapshot(&skills_dir(&data));
    let raw = format!(
        "{}/categories/development/code-review/SKILL.md",
        registry.url()
    );
    problem(
        daemon.call(
            "POST",
            "/api/skills/install",
            &json!({ "url": raw }).to_string(),
        ),
        422,
        "private-address",
    );
    problem(
        daemon.call(
            "POST",
            "/api/skills/install",
            &json!({ "url": "file:///etc/passwd" }).to_string(),
        ),
        422,
        "url-scheme",
    );
    assert_eq!(
        before,
        snapshot(&skills_dir(&data)),
        "a refused install wrote something"
    );
}

/// Issue 29, point 3: an `allowed-tools` entry the gate cannot read (`Frobnicate(((`)
/// was accepted and confirmed with no word, then refused as `unknown-tool` at every
/// turn. A URL install still succeeds, and its `warnings` (which the dashboard shows)
/// name the entry; Claude Code's forms the gate reads (`Read`, `Bash(git log:*)`) are
/// no warning, and the entry is granted nothing it could use.
#[test]
fn an_allowed_tools_entry_the_gate_cannot_read_is_an_install_warning_over_rest() {
    let served = tempfile::tempdir().expect("served");
    let dir = served.path().join("categories/tools/frob");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: frob\ndescription: Frobnicates the repository.\nallowed-tools: [Frobnicate(((, Read, Bash(git log:*)]\n---\n\n# Frob\n",
    )
    .expect("SKILL.md");
    let server = engram_e2e::Listening::registry(served.path());
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        "network:\n  allowPrivate: true\n",
    )
    .expect("config");
    let daemon = Daemon::start(&mut engram(data.path()));
    let installed = ok(
        daemon.person().call(
            "POST",
            "/api/skills/install",
            &json!({
                "url": format!("{}/categories/tools/frob/SKILL.md", server.url()),
                "confirm_tools": true,
            })
            .to_string(),
        ),
        200,
    );
    assert_eq!(installed["status"], "installed", "{installed}");
    let warned: Vec<&Value> = installed["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["code"] == "tool-not-understood")
        .collect();
    assert_eq!(warned.len(), 1, "{installed}");
    let message = warned[0]["message"].as_str().expect("message");
    assert!(
        message.contains("`Frobnicate(((`") && message.contains("grants nothing"),
        "{message}"
    );
    // A turn of the skill shows the entry as the unknown tool it is.
    let turn = ok(
        daemon.call(
            "POST",
            "/api/turns",
            &json!({"message": "/frob go"}).to_string(),
        ),
        201,
    );
    let grants = turn["grants"].as_array().expect("grants");
    let frob = grants
        .iter()
        .find(|g| g["tool"] == "Frobnicate(((")
        .unwrap_or_else(|| panic!("{turn}"));
    assert_eq!(frob["code"], "unknown-tool", "{turn}");
    let git = grants
        .iter()
        .find(|g| g["tool"] == "Bash(git log:*)")
        .unwrap_or_else(|| panic!("{turn}"));
    assert_eq!(git["code"], "skill-grant", "{turn}");
}

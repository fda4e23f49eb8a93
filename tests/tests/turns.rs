//! End-to-end: turns and the tool gate over REST (`/api/turns...`, `/api/audit`) of
//! the real `engram serve`: routing a message to a skill, the skill's grants living
//! exactly as long as its turn, the operator's deny beating a grant, the host tools
//! (memory, fetch_url, read_skill_file) behind the check, the operator's approval of
//! an asked tool for one turn, and the audit log.

use std::path::Path;

use engram_e2e::{Daemon, McpSession, TOKEN, engram, ok, problem};
use serde_json::{Value, json};

fn start(data: &Path) -> Daemon {
    Daemon::start(&mut engram(data))
}

fn open_turn(daemon: &Daemon, body: Value) -> Value {
    ok(daemon.call("POST", "/api/turns", &body.to_string()), 201)
}

fn authorize(daemon: &Daemon, turn: &str, tool: &str) -> Value {
    ok(
        daemon.call(
            "POST",
            &format!("/api/turns/{turn}/authorize"),
            // A fetch of the built-in web-search's own search page: a destination its
            // text names, so a turn granted that skill may send there whatever it has
            // read (any other host would ask once the turn read outside content).
            &json!({"tool": tool, "args": {"url": "https://html.duckduckgo.com/html/?q=rust"}})
                .to_string(),
        ),
        200,
    )
}

fn tool(daemon: &Daemon, turn: &str, name: &str, args: Value) -> engram_e2e::Response {
    tool_as(daemon, "default", turn, name, args)
}

fn tool_as(
    daemon: &Daemon,
    user: &str,
    turn: &str,
    name: &str,
    args: Value,
) -> engram_e2e::Response {
    daemon.call(
        "POST",
        &format!("/api/turns/{turn}/tools/{name}?user={user}"),
        &json!({ "args": args }).to_string(),
    )
}

fn id(turn: &Value) -> String {
    turn["turn_id"].as_str().expect("turn_id").to_string()
}

#[test]
fn a_skill_turn_grants_its_tools_only_while_it_lasts() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    // A built-in grants its tools once the person has confirmed them (issue 30).
    daemon.grant_tools("web-search");

    let skill_turn = open_turn(
        &daemon,
        json!({"message": "/web-search find rust news", "conversation_id": "conv-1", "channel": "cli"}),
    );
    let t1 = id(&skill_turn);
    assert!(t1.starts_with("turn_"), "{skill_turn}");
    let invoked = &skill_turn["invoked"];
    assert_eq!(invoked["slug"], "web-search", "{skill_turn}");
    assert_eq!(invoked["reason"], "explicit");
    assert_eq!(invoked["message"], "find rust news");
    assert_eq!(invoked["dir"], "web-search");
    assert!(
        invoked["body"]
            .as_str()
            .is_some_and(|b| b.contains("# Web search"))
    );
    assert_eq!(
        skill_turn["grants"],
        json!([{"tool": "fetch_url", "decision": "allow", "code": "skill-grant"}])
    );
    let catalog = skill_turn["catalog"].as_array().expect("catalog");
    assert!(
        catalog
            .iter()
            .any(|s| s["slug"] == "web-search"
                && s["summary"].as_str().is_some_and(|t| !t.is_empty())),
        "{skill_turn}"
    );
    assert!(catalog.len() <= 50);
    assert!(skill_turn["memory_block"].is_string());
    assert!(skill_turn["expires_at"].is_string());

    // A second turn at the same time, without a skill: it sees none of t1's grants.
    let plain_turn = open_turn(&daemon, json!({"message": "hello there, how are you"}));
    let t2 = id(&plain_turn);
    assert!(plain_turn["invoked"].is_null(), "{plain_turn}");
    assert_eq!(plain_turn["grants"], json!([]));

    let allowed = authorize(&daemon, &t1, "fetch_url");
    assert_eq!(allowed["decision"], "allow", "{allowed}");
    assert_eq!(allowed["code"], "skill-grant");
    let asked = authorize(&daemon, &t2, "fetch_url");
    assert_eq!(asked["decision"], "ask", "{asked}");
    assert_eq!(asked["code"], "policy-ask");
    // t1 still holds its grant after t2 asked.
    assert_eq!(authorize(&daemon, &t1, "fetch_url")["decision"], "allow");

    // Outside the skill's allowed-tools: denied while the skill is invoked.
    let outside = authorize(&daemon, &t1, "run_command");
    assert_eq!(outside["decision"], "deny", "{outside}");
    assert_eq!(outside["code"], "not-in-allowed-tools");
    problem(
        tool(&daemon, &t1, "read_skill_file", json!({"path": "SKILL.md"})),
        403,
        "not-in-allowed-tools",
    );
    problem(
        tool(&daemon, &t1, "made_up_tool", json!({})),
        403,
        "unknown-tool",
    );
    // Ask is a 403 the agent recognises.
    problem(
        tool(
            &daemon,
            &t2,
            "fetch_url",
            json!({"url": "https://example.com/"}),
        ),
        403,
        "approval-required",
    );
    // A tool the agent runs itself is no host tool: refused before any decision, so
    // nothing is audited (t2's decisions are counted below), though `cd` is allowed.
    problem(tool(&daemon, &t2, "cd", json!({})), 422, "not-a-host-tool");

    // fetch_url is granted, but the fetcher still refuses non-http and loopback (here
    // in a turn whose message names the daemon's address: once a turn has read
    // outside content, a host it does not know asks first).
    let fetching = id(&open_turn(
        &daemon,
        json!({"message": format!("/web-search what does http://{}/healthz say?", daemon.addr)}),
    ));
    problem(
        tool(
            &daemon,
            &fetching,
            "fetch_url",
            json!({"url": "file:///etc/passwd"}),
        ),
        422,
        "url-scheme",
    );
    problem(
        tool(
            &daemon,
            &fetching,
            "fetch_url",
            json!({"url": format!("http://{}/healthz", daemon.addr)}),
        ),
        422,
        "private-address",
    );

    // The turn shows its decisions, newest first.
    let view = ok(daemon.get(&format!("/api/turns/{t1}")), 200);
    assert_eq!(view["state"], "open");
    assert_eq!(view["turn"]["skill"]["skill"], "web-search");
    let decisions = view["decisions"].as_array().expect("decisions");
    assert_eq!(decisions.len(), 5, "{view}");
    assert!(decisions.iter().all(|d| d["turn_id"] == t1.as_str()));
    assert_eq!(decisions[0]["tool"], "made_up_tool");
    assert_eq!(decisions.last().expect("first")["tool"], "fetch_url");
    let seqs: Vec<i64> = decisions
        .iter()
        .map(|d| d["seq"].as_i64().expect("seq"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");

    // End: grants revoked.
    let ended = ok(
        daemon.call(
            "POST",
            &format!("/api/turns/{t1}/end"),
            r#"{"reply":"Here is the news."}"#,
        ),
        200,
    );
    assert_eq!(ended["state"], "ended", "{ended}");
    let after = authorize(&daemon, &t1, "fetch_url");
    assert_eq!(after["decision"], "deny", "{after}");
    assert_eq!(after["code"], "turn-ended");
    problem(
        tool(
            &daemon,
            &t1,
            "fetch_url",
            json!({"url": "https://example.com/"}),
        ),
        409,
        "turn-ended",
    );
    problem(
        daemon.call("POST", &format!("/api/turns/{t1}/end"), "{}"),
        409,
        "turn-ended",
    );

    // The next turn without the skill does not inherit the grant.
    let t3 = id(&open_turn(
        &daemon,
        json!({"message": "thanks", "conversation_id": "conv-1"}),
    ));
    assert_eq!(authorize(&daemon, &t3, "fetch_url")["decision"], "ask");

    // Unknown turns.
    problem(daemon.get("/api/turns/turn_nope"), 404, "unknown-turn");
    problem(
        tool(&daemon, "turn_nope", "search_memory", json!({"q": "x"})),
        404,
        "unknown-turn",
    );
    assert_eq!(
        authorize(&daemon, "turn_nope", "fetch_url")["code"],
        "unknown-turn"
    );

    // Bad requests.
    problem(
        daemon.call("POST", "/api/turns", r#"{"message":"  "}"#),
        422,
        "invalid-field",
    );
    problem(
        daemon.call("POST", "/api/turns", r#"{"message":"hi","nope":1}"#),
        400,
        "unknown-field",
    );

    // The audit log: every decision above, newest first, paged.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/audit?limit=3&cursor={c}"),
            None => "/api/audit?limit=3".to_string(),
        };
        let page = ok(daemon.get(&path), 200);
        let items = page["items"].as_array().expect("items");
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|d| d["seq"].as_i64().expect("seq")));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    // t1: 7, and 2 after its end; t2: 2; t3: 1; unknown turns: 2.
    assert_eq!(seen.len(), 14, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "{seen:?}");
    let only_t2 = ok(daemon.get(&format!("/api/audit?turn={t2}")), 200);
    let items = only_t2["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{only_t2}");
    assert!(items.iter().all(|d| d["turn_id"] == t2.as_str()));
    assert_eq!(items[0]["tool"], "fetch_url");
    assert_eq!(items[0]["code"], "policy-ask");
    problem(daemon.get("/api/audit?cursor=nope"), 422, "invalid-field");
    problem(daemon.get("/api/audit?limit=0"), 422, "invalid-field");
}

#[test]
fn the_operators_deny_beats_the_skills_grant() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        "tools:\n  policy:\n    fetch_url: deny\n",
    )
    .expect("config");
    let daemon = start(data.path());
    let turn = open_turn(&daemon, json!({"message": "/web-search find rust news"}));
    assert_eq!(turn["invoked"]["slug"], "web-search", "{turn}");
    assert_eq!(
        turn["grants"],
        json!([{"tool": "fetch_url", "decision": "deny", "code": "operator-deny"}])
    );
    let t = id(&turn);
    let decision = authorize(&daemon, &t, "fetch_url");
    assert_eq!(decision["decision"], "deny");
    assert_eq!(decision["code"], "operator-deny");
    problem(
        tool(
            &daemon,
            &t,
            "fetch_url",
            json!({"url": "https://example.com/"}),
        ),
        403,
        "operator-deny",
    );
}

const TOOLBOX: &str = "---
name: toolbox
description: Saves and searches the user's memories and reads its own reference notes, for testing the host tools.
allowed-tools:
  - save_memory
  - search_memory
  - read_skill_file
---

# Toolbox

Save what the user says, search it, read references/notes.md.
";

#[test]
fn host_tools_run_behind_the_gate_and_stay_inside_the_skill() {
    let data = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "top secret").expect("secret");
    let skill = data.path().join("skills/toolbox");
    std::fs::create_dir_all(skill.join("references")).expect("mkdir");
    std::fs::create_dir_all(skill.join("scripts")).expect("mkdir");
    std::fs::write(skill.join("SKILL.md"), TOOLBOX).expect("SKILL.md");
    std::fs::write(
        skill.join("references/notes.md"),
        "The notes of the toolbox.",
    )
    .expect("notes");
    std::fs::write(skill.join("scripts/run.sh"), "echo hi\n").expect("script");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = start(data.path());
    // Found on disk: its tools ask until the person grants them.
    daemon.grant_tools("toolbox");

    let turn = open_turn(
        &daemon,
        json!({"message": "/toolbox remember that I like green tea"}),
    );
    assert_eq!(turn["invoked"]["slug"], "toolbox", "{turn}");
    assert_eq!(
        turn["invoked"]["references"],
        json!(["references/notes.md"])
    );
    assert_eq!(turn["invoked"]["scripts"], json!(["scripts/run.sh"]));
    assert!(
        turn["grants"]
            .as_array()
            .expect("grants")
            .iter()
            .all(|g| g["decision"] == "allow"),
        "{turn}"
    );
    let t = id(&turn);

    // save_memory, then search_memory, as the turn's user.
    let saved = ok(
        tool(
            &daemon,
            &t,
            "save_memory",
            json!({"type": "preference", "summary": "Likes green tea"}),
        ),
        200,
    );
    assert_eq!(saved["decision"]["decision"], "allow", "{saved}");
    assert_eq!(saved["result"]["summary"], "Likes green tea");
    assert_eq!(saved["result"]["evidence"], "direct", "{saved}");
    let found = ok(
        tool(&daemon, &t, "search_memory", json!({"q": "green tea"})),
        200,
    );
    let items = found["result"]["items"].as_array().expect("items");
    assert!(
        items
            .iter()
            .any(|i| i["memory"]["summary"] == "Likes green tea"),
        "{found}"
    );
    // Another user's search does not find it, and that user cannot use this turn.
    let bob = id(&open_turn(
        &daemon,
        json!({"message": "/toolbox search", "user": "bob"}),
    ));
    let none = ok(
        tool_as(
            &daemon,
            "bob",
            &bob,
            "search_memory",
            json!({"q": "green tea"}),
        ),
        200,
    );
    assert_eq!(none["result"]["items"], json!([]), "{none}");
    problem(
        tool_as(
            &daemon,
            "bob",
            &t,
            "search_memory",
            json!({"q": "green tea"}),
        ),
        404,
        "unknown-turn",
    );
    problem(
        tool(&daemon, &bob, "search_memory", json!({"q": "x"})),
        404,
        "unknown-turn",
    );
    problem(
        tool(
            &daemon,
            &t,
            "save_memory",
            json!({"type": "nonsense", "summary": "x"}),
        ),
        422,
        "invalid-field",
    );

    // read_skill_file: inside the skill only.
    let read = ok(
        tool(
            &daemon,
            &t,
            "read_skill_file",
            json!({"path": "references/notes.md"}),
        ),
        200,
    );
    assert_eq!(read["result"]["text"], "The notes of the toolbox.");
    for bad in [
        "../web-search/SKILL.md",
        "references/../../web-search/SKILL.md",
        "/etc/passwd",
    ] {
        problem(
            tool(&daemon, &t, "read_skill_file", json!({ "path": bad })),
            422,
            "invalid-field",
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            skill.join("references/escape"),
        )
        .expect("symlink");
        std::os::unix::fs::symlink(outside.path(), skill.join("references/outdir"))
            .expect("symlink");
        std::os::unix::fs::symlink("notes.md", skill.join("references/inner")).expect("symlink");
        for escaping in ["references/escape", "references/outdir/secret.txt"] {
            let refused = problem(
                tool(&daemon, &t, "read_skill_file", json!({ "path": escaping })),
                403,
                "outside-skill-dir",
            );
            assert!(!refused.to_string().contains("top secret"));
        }
        let inner = ok(
            tool(
                &daemon,
                &t,
                "read_skill_file",
                json!({"path": "references/inner"}),
            ),
            200,
        );
        assert_eq!(inner["result"]["text"], "The notes of the toolbox.");
    }
    problem(
        tool(
            &daemon,
            &t,
            "read_skill_file",
            json!({"path": "references/missing.md"}),
        ),
        404,
        "not-found",
    );

    // Without a skill: save_memory asks, search_memory (allow by default) runs, and
    // read_skill_file has no directory to read.
    let plain = open_turn(&daemon, json!({"message": "hello there, how are you"}));
    assert!(plain["invoked"].is_null(), "{plain}");
    let plain = id(&plain);
    problem(
        tool(
            &daemon,
            &plain,
            "save_memory",
            json!({"type": "preference", "summary": "x"}),
        ),
        403,
        "approval-required",
    );
    ok(
        tool(&daemon, &plain, "search_memory", json!({"q": "tea"})),
        200,
    );
    problem(
        tool(
            &daemon,
            &plain,
            "read_skill_file",
            json!({"path": "SKILL.md"}),
        ),
        409,
        "no-skill-invoked",
    );
}

/// The person's approval, with the operator token.
fn approve(daemon: &Daemon, turn: &str, tool: &str) -> engram_e2e::Response {
    daemon.person().call(
        "POST",
        &format!("/api/turns/{turn}/approvals"),
        &json!({ "tool": tool }).to_string(),
    )
}

#[test]
fn an_approval_allows_an_asked_tool_in_its_turn_only() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        "tools:\n  policy:\n    fetch_url: deny\n",
    )
    .expect("config");
    let daemon = start(data.path());
    // Turns that invoke no skill, so the policy applies as is (save_memory: ask).
    let plain_turn = || {
        let turn = open_turn(&daemon, json!({"message": "hello there, how are you"}));
        assert!(turn["invoked"].is_null(), "{turn}");
        id(&turn)
    };
    let t = plain_turn();
    let other = plain_turn();
    let save = json!({"type": "preference", "summary": "Likes green tea"});

    // Ask: 403 approval-required, and the problem says how approval is given.
    let asked = problem(
        tool(&daemon, &t, "save_memory", save.clone()),
        403,
        "approval-required",
    );
    let detail = asked["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!("POST /api/turns/{t}/approvals")),
        "{detail}"
    );
    assert_eq!(authorize(&daemon, &t, "save_memory")["decision"], "ask");

    // The agent cannot approve for itself: 403, audited as refused, nothing granted.
    let refused = problem(
        daemon.call(
            "POST",
            &format!("/api/turns/{t}/approvals"),
            &json!({"tool": "save_memory"}).to_string(),
        ),
        403,
        "person-required",
    );
    assert!(
        refused["detail"]
            .as_str()
            .is_some_and(|d| d.contains("operator token")),
        "{refused}"
    );
    assert_eq!(authorize(&daemon, &t, "save_memory")["decision"], "ask");

    // The user agreed: the person approves save_memory for this turn.
    let granted = ok(approve(&daemon, &t, "save_memory"), 201);
    assert_eq!(granted["turn_id"], t.as_str(), "{granted}");
    assert_eq!(granted["tool"], "save_memory");
    assert_eq!(granted["decision"]["decision"], "allow", "{granted}");
    assert_eq!(granted["decision"]["code"], "approved");
    assert!(granted["approved_at"].is_string() && granted["expires_at"].is_string());
    let allowed = authorize(&daemon, &t, "save_memory");
    assert_eq!(allowed["decision"], "allow", "{allowed}");
    assert_eq!(allowed["code"], "approved");
    let saved = ok(tool(&daemon, &t, "save_memory", save.clone()), 200);
    assert_eq!(saved["decision"]["code"], "approved", "{saved}");
    assert_eq!(saved["result"]["summary"], "Likes green tea");
    // Approving again changes nothing.
    let again = ok(approve(&daemon, &t, "save_memory"), 201);
    assert_eq!(again["approved_at"], granted["approved_at"]);

    // The turn shows its approval and the audit log the operator's decision.
    let view = ok(daemon.get(&format!("/api/turns/{t}")), 200);
    let approvals = view["turn"]["approvals"].as_array().expect("approvals");
    assert_eq!(approvals.len(), 1, "{view}");
    assert_eq!(approvals[0]["tool"], "save_memory");
    assert_eq!(approvals[0]["approved_at"], granted["approved_at"]);
    let by_operator: Vec<&Value> = view["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|d| d["caller"] == "operator")
        .collect();
    assert_eq!(by_operator.len(), 2, "{view}");
    let refusals: Vec<&Value> = view["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|d| d["code"] == "person-required")
        .collect();
    assert_eq!(refusals.len(), 1, "{view}");
    assert_eq!(refusals[0]["caller"], "agent");
    assert_eq!(refusals[0]["decision"], "deny");
    assert!(by_operator.iter().all(|d| {
        d["tool"] == "save_memory"
            && d["decision"] == "allow"
            && d["code"] == "approved"
            && d["user"] == "default"
            && d["reason"]
                .as_str()
                .is_some_and(|r| r.contains("person approved"))
    }));

    // Another turn open at the same time still asks.
    problem(
        tool(&daemon, &other, "save_memory", save.clone()),
        403,
        "approval-required",
    );

    // The turn ends and the approval with it; the next turn asks again.
    ok(
        daemon.call("POST", &format!("/api/turns/{t}/end"), "{}"),
        200,
    );
    problem(
        tool(&daemon, &t, "save_memory", save.clone()),
        409,
        "turn-ended",
    );
    problem(approve(&daemon, &t, "save_memory"), 409, "turn-ended");
    let next = plain_turn();
    problem(
        tool(&daemon, &next, "save_memory", save),
        403,
        "approval-required",
    );

    // What the gate denies cannot be approved: the operator's deny, a tool outside the
    // invoked skill's allowed-tools, a tool it does not know.
    let refused = problem(approve(&daemon, &next, "fetch_url"), 409, "operator-deny");
    assert!(
        refused["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot be approved")),
        "{refused}"
    );
    assert_eq!(
        authorize(&daemon, &next, "fetch_url")["code"],
        "operator-deny"
    );
    let web = id(&open_turn(&daemon, json!({"message": "/web-search rust"})));
    problem(
        approve(&daemon, &web, "run_command"),
        409,
        "not-in-allowed-tools",
    );
    let unknown = problem(approve(&daemon, &next, "made_up_tool"), 422, "unknown-tool");
    assert_eq!(unknown["field"], "tool");
    problem(
        approve(&daemon, "turn_nope", "save_memory"),
        404,
        "unknown-turn",
    );
    problem(approve(&daemon, &next, ""), 422, "invalid-field");
    problem(
        daemon.call(
            "POST",
            &format!("/api/turns/{next}/approvals"),
            r#"{"tool":"save_memory","for":"ever"}"#,
        ),
        400,
        "unknown-field",
    );
    // Nothing refused was recorded as an approval.
    let audit = ok(daemon.get(&format!("/api/audit?turn={next}")), 200);
    assert!(
        audit["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|d| d["caller"] != "operator"),
        "{audit}"
    );
}

#[test]
fn every_turn_route_needs_the_token() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    for (method, path) in [
        ("POST", "/api/turns"),
        ("GET", "/api/turns/turn_x"),
        ("POST", "/api/turns/turn_x/end"),
        ("POST", "/api/turns/turn_x/authorize"),
        ("POST", "/api/turns/turn_x/approvals"),
        ("POST", "/api/turns/turn_x/tools/fetch_url"),
        ("GET", "/api/audit"),
    ] {
        problem(
            daemon.request(method, path, None, None, b""),
            401,
            "unauthorized",
        );
    }
}

fn script(daemon: &Daemon, turn: &str, name: &str, args: Value) -> engram_e2e::Response {
    daemon.call(
        "POST",
        &format!("/api/turns/{turn}/scripts/{name}"),
        &json!({ "args": args }).to_string(),
    )
}

const CRAMPED: &str = "---
name: cramped
description: Counts words in its notes with a script given far too little memory, for testing how a stopped script is answered.
---

# Cramped

Run the word-stats script on references/notes.md.
";

#[test]
fn a_turn_runs_the_scripts_of_its_invoked_skill_only() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("secret.txt"), "top secret").expect("secret");
    // A skill whose script cannot get the memory it needs (1 MiB).
    let cramped = data.path().join("skills/cramped");
    std::fs::create_dir_all(cramped.join("scripts")).expect("mkdir");
    std::fs::create_dir_all(cramped.join("references")).expect("mkdir");
    std::fs::write(cramped.join("SKILL.md"), CRAMPED).expect("SKILL.md");
    std::fs::write(cramped.join("references/notes.md"), "a few words").expect("notes");
    let word_stats = engram::runtime::builtin::skill_script("word-stats").expect("embedded");
    std::fs::write(cramped.join("scripts/word-stats.wasm"), word_stats.wasm).expect("wasm");
    std::fs::write(
        cramped.join("scripts/word-stats.toml"),
        "[limits]\nmemory-mib = 1\n",
    )
    .expect("toml");
    let daemon = start(data.path());

    // The built-in word-stats, invoked explicitly, runs its own script on its guide.
    let turn = open_turn(&daemon, json!({"message": "/word-stats count the guide"}));
    let invoked = &turn["invoked"];
    assert_eq!(invoked["slug"], "word-stats", "{turn}");
    assert_eq!(invoked["reason"], "explicit");
    assert_eq!(invoked["scripts"], json!(["scripts/word-stats.wasm"]));
    assert_eq!(
        invoked["references"],
        json!(["references/writing-guide.md"])
    );
    let t = id(&turn);
    let ran = ok(
        script(
            &daemon,
            &t,
            "word-stats",
            json!({"file": "writing-guide.md", "top": 3}),
        ),
        200,
    );
    assert_eq!(ran["skill"], "word-stats", "{ran}");
    assert_eq!(ran["script"], "word-stats");
    assert!(ran["ms"].is_u64(), "{ran}");
    let output = &ran["output"];
    let guide = std::fs::read_to_string(
        data.path()
            .join("skills/word-stats/references/writing-guide.md"),
    )
    .expect("guide");
    assert_eq!(output["file"], "writing-guide.md", "{ran}");
    assert_eq!(output["bytes"], guide.len());
    assert_eq!(output["lines"], guide.lines().count());
    assert!(output["words"].as_u64().is_some_and(|w| w > 80), "{ran}");
    assert_eq!(
        output["top_words"],
        json!([
            {"word": "sentence", "count": 4},
            {"word": "idea", "count": 3},
            {"word": "reader", "count": 3}
        ])
    );

    // The script's own errors are 422 script-failed with its message; a path out of
    // the skill fails inside the sandbox and leaks nothing.
    let failed = problem(
        script(&daemon, &t, "word-stats", json!({})),
        422,
        "script-failed",
    );
    assert!(
        failed["detail"]
            .as_str()
            .is_some_and(|d| d.contains("give `file`")),
        "{failed}"
    );
    let data_dir = data.path().display().to_string();
    for escape in [
        "../../../secret.txt",
        "../../web-search/SKILL.md",
        "/etc/passwd",
    ] {
        let refused = problem(
            script(&daemon, &t, "word-stats", json!({ "file": escape })),
            422,
            "script-failed",
        );
        let text = refused.to_string();
        assert!(text.contains("cannot read"), "{text}");
        assert!(
            !text.contains("top secret") && !text.contains(&data_dir),
            "{text}"
        );
    }

    // Unknown and invalid script names.
    problem(
        script(&daemon, &t, "nope", json!({})),
        404,
        "unknown-script",
    );
    for bad in ["Word-Stats", "word_stats", "-x", "a%2Fb", "..%2Fword-stats"] {
        problem(script(&daemon, &t, bad, json!({})), 422, "invalid-field");
    }
    problem(
        daemon.call(
            "POST",
            &format!("/api/turns/{t}/scripts/word-stats"),
            r#"{"args":{},"nope":1}"#,
        ),
        400,
        "unknown-field",
    );

    // Only the invoked skill's scripts: a turn without a skill has none, and a turn of
    // another skill cannot reach word-stats' script.
    let plain = id(&open_turn(
        &daemon,
        json!({"message": "hello there, how are you"}),
    ));
    problem(
        script(
            &daemon,
            &plain,
            "word-stats",
            json!({"file": "writing-guide.md"}),
        ),
        409,
        "no-skill-invoked",
    );
    let other = id(&open_turn(&daemon, json!({"message": "/web-search rust"})));
    problem(
        script(
            &daemon,
            &other,
            "word-stats",
            json!({"file": "writing-guide.md"}),
        ),
        404,
        "unknown-script",
    );
    problem(
        script(&daemon, "turn_nope", "word-stats", json!({})),
        404,
        "unknown-turn",
    );

    // A script stopped by its limits is 422 script-trapped, and the daemon goes on.
    let cramped_turn = open_turn(&daemon, json!({"message": "/cramped count"}));
    assert_eq!(cramped_turn["invoked"]["slug"], "cramped", "{cramped_turn}");
    problem(
        script(
            &daemon,
            &id(&cramped_turn),
            "word-stats",
            json!({"file": "notes.md"}),
        ),
        422,
        "script-trapped",
    );
    ok(
        script(
            &daemon,
            &t,
            "word-stats",
            json!({"file": "writing-guide.md"}),
        ),
        200,
    );

    // An ended turn runs nothing.
    ok(
        daemon.call("POST", &format!("/api/turns/{t}/end"), "{}"),
        200,
    );
    problem(
        script(
            &daemon,
            &t,
            "word-stats",
            json!({"file": "writing-guide.md"}),
        ),
        409,
        "turn-ended",
    );

    // And the route needs the token.
    problem(
        daemon.request(
            "POST",
            &format!("/api/turns/{t}/scripts/word-stats"),
            None,
            None,
            br#"{"args":{}}"#,
        ),
        401,
        "unauthorized",
    );
}

/// A turn's input is checked before anything runs for it: a conversation id that is
/// too long or has a control character, another user's conversation, a blank message
/// are refused before retrieval, which would mark the memories it finds as used (and
/// might move one back to the conscious tier), so what is stored stays as it was.
#[test]
fn a_refused_turn_changes_nothing_stored() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = start(data.path());
    let added = ok(
        daemon.call(
            "POST",
            "/api/brain/memory?user=alice",
            &json!({"type": "preference", "summary": "Alice drinks green tea every morning"})
                .to_string(),
        ),
        201,
    );
    let memory_id = added["id"].as_str().expect("memory id").to_string();
    let memory = || {
        ok(
            daemon.get(&format!("/api/brain/memory/{memory_id}?user=alice")),
            200,
        )
    };
    let transcript = |user: &str| {
        ok(
            daemon.get(&format!(
                "/api/brain/memory/search?q=tea&scope=conversations&user={user}"
            )),
            200,
        )["items"]
            .clone()
    };
    let audit = || ok(daemon.get("/api/audit?user=alice"), 200)["items"].clone();
    let question = "which tea do I drink in the morning";
    // Bob's conversation, and a first turn of Alice's that finds her memory.
    open_turn(
        &daemon,
        json!({"message": "hello", "conversation_id": "bobs", "user": "bob"}),
    );
    let first = open_turn(&daemon, json!({"message": question, "user": "alice"}));
    assert!(
        first["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .any(|m| m["id"] == memory_id.as_str()),
        "retrieval finds the memory: {first}"
    );
    let before = memory();
    assert!(before["last_used_at"].is_string(), "{before}");
    let audit_before = audit();

    for (conversation_id, status, code) in [
        (json!("bobs"), 409, "owned-by-another-user"),
        (json!("x".repeat(129)), 422, "invalid-field"),
        (json!("line\nbreak"), 422, "invalid-field"),
    ] {
        let refused = daemon.call(
            "POST",
            "/api/turns",
            &json!({"message": question, "user": "alice", "conversation_id": conversation_id})
                .to_string(),
        );
        let doc = problem(refused, status, code);
        if status == 422 {
            assert_eq!(doc["field"], "conversation_id", "{doc}");
        }
        assert_eq!(
            memory(),
            before,
            "refused for {conversation_id}: nothing retrieved"
        );
    }
    let blank = daemon.call(
        "POST",
        "/api/turns",
        &json!({"message": " \n", "user": "alice"}).to_string(),
    );
    assert_eq!(problem(blank, 422, "invalid-field")["field"], "message");
    assert_eq!(memory(), before);
    // Alice's question was recorded nowhere, and nothing was decided for her.
    assert_eq!(transcript("bob"), json!([]));
    assert_eq!(transcript("alice"), json!([]));
    assert_eq!(audit(), audit_before);

    // The same question, accepted, does mark the memory used: the checks above could fail.
    open_turn(&daemon, json!({"message": question, "user": "alice"}));
    assert_ne!(memory()["last_used_at"], before["last_used_at"]);
}

/// Writes `skills/<slug>/SKILL.md`, for the daemon's start to find.
fn skill_on_disk(data: &Path, slug: &str, frontmatter: &str) {
    let dir = data.join("skills").join(slug);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {slug}\n{frontmatter}---\n\n# {slug}\n\nFor testing the gate.\n"),
    )
    .expect("SKILL.md");
}

fn decision(answer: &Value) -> (String, String) {
    (
        answer["decision"].as_str().unwrap_or_default().to_string(),
        answer["code"].as_str().unwrap_or_default().to_string(),
    )
}

fn pair(decision: &str, code: &str) -> (String, String) {
    (decision.to_string(), code.to_string())
}

/// Issue 29, point 3: most skills declare no `allowed-tools`. Invoking one used to
/// refuse every tool (`not-in-allowed-tools`), Engram's memory tools included; now the
/// turn is the policy's, as if no skill were invoked: it neither restricts nor grants.
#[test]
fn a_skill_without_allowed_tools_leaves_the_turn_to_the_policy() {
    let data = tempfile::tempdir().expect("tempdir");
    skill_on_disk(
        data.path(),
        "notes",
        "description: Keeps notes on what the user likes.\n",
    );
    std::fs::write(
        data.path().join("config.yaml"),
        "tools:\n  policy:\n    save_memory: allow\n",
    )
    .expect("config");
    let daemon = start(data.path());
    let turn = open_turn(
        &daemon,
        json!({"message": "/notes remember that I like green tea"}),
    );
    assert_eq!(turn["invoked"]["slug"], "notes", "{turn}");
    assert_eq!(turn["grants"], json!([]), "{turn}");
    let t = id(&turn);
    ok(
        tool(
            &daemon,
            &t,
            "save_memory",
            json!({"type": "preference", "summary": "User likes green tea"}),
        ),
        200,
    );
    let found = ok(
        tool(&daemon, &t, "search_memory", json!({"q": "green tea"})),
        200,
    );
    assert!(found.to_string().contains("green tea"), "{found}");
    // Nothing more than the policy gives: its asks still ask, a tool it does not know
    // is still unknown.
    for asked in ["fetch_url", "run_command", "Bash"] {
        assert_eq!(
            decision(&authorize(&daemon, &t, asked)),
            pair("ask", "policy-ask"),
            "{asked}"
        );
    }
    assert_eq!(
        decision(&authorize(&daemon, &t, "Frobnicate")),
        pair("deny", "unknown-tool")
    );
}

/// A skill that lists tools restricts the turn to them, and keeps Engram's memory tools
/// at the policy's level unless it names one of them (then it decided about memory).
#[test]
fn a_skill_with_allowed_tools_restricts_and_keeps_memory_unless_it_names_it() {
    let data = tempfile::tempdir().expect("tempdir");
    skill_on_disk(
        data.path(),
        "recall",
        "description: Looks things up in the user's memories.\nallowed-tools: [fetch_url, search_memory]\n",
    );
    let daemon = start(data.path());
    daemon.grant_tools("web-search");
    daemon.grant_tools("recall");
    // web-search lists fetch_url only.
    let web = id(&open_turn(&daemon, json!({"message": "/web-search rust"})));
    assert_eq!(
        decision(&authorize(&daemon, &web, "fetch_url")),
        pair("allow", "skill-grant")
    );
    for outside in ["run_command", "read_skill_file", "Bash"] {
        assert_eq!(
            decision(&authorize(&daemon, &web, outside)),
            pair("deny", "not-in-allowed-tools"),
            "{outside}"
        );
    }
    ok(
        tool(&daemon, &web, "search_memory", json!({"q": "tea"})),
        200,
    );
    // At the policy's level, not raised by the skill: save_memory asks.
    problem(
        tool(
            &daemon,
            &web,
            "save_memory",
            json!({"type": "preference", "summary": "x"}),
        ),
        403,
        "approval-required",
    );
    // recall names search_memory: save_memory is left out on purpose.
    let recall = id(&open_turn(&daemon, json!({"message": "/recall tea"})));
    ok(
        tool(&daemon, &recall, "search_memory", json!({"q": "tea"})),
        200,
    );
    problem(
        tool(
            &daemon,
            &recall,
            "save_memory",
            json!({"type": "preference", "summary": "x"}),
        ),
        403,
        "not-in-allowed-tools",
    );
}

/// An MCP client asks `tool_authorize` about its own `Bash`: a skill granted
/// `Bash(git log:*)` allows `git log -3` and nothing else (it used to be
/// `unknown-tool` whatever the command); before the person confirms, the covered
/// command asks.
#[test]
fn tool_authorize_understands_claude_code_rules_over_mcp() {
    let data = tempfile::tempdir().expect("tempdir");
    skill_on_disk(
        data.path(),
        "git-history",
        "description: Summarises the recent history of a git repository.\nallowed-tools: Bash(git log:*), Read\n",
    );
    let daemon = start(data.path());
    let mcp = McpSession::open(&daemon.addr, TOKEN);
    let open = |mcp: &McpSession| {
        mcp.call(
            "memory_context",
            json!({"message": "/git-history what changed lately?"}),
        )["structuredContent"]["turn_id"]
            .as_str()
            .expect("turn_id")
            .to_string()
    };
    let bash = |mcp: &McpSession, turn: &str, command: &str| {
        decision(
            &mcp.call(
                "tool_authorize",
                json!({"turn_id": turn, "tool": "Bash", "args": {"command": command}}),
            )["structuredContent"],
        )
    };
    let unconfirmed = open(&mcp);
    assert_eq!(
        bash(&mcp, &unconfirmed, "git log -3"),
        pair("ask", "skill-unconfirmed")
    );
    daemon.grant_tools("git-history");
    let turn = open(&mcp);
    assert_eq!(
        bash(&mcp, &turn, "git log -3"),
        pair("allow", "skill-grant")
    );
    for refused in ["rm -rf /", "git log; rm -rf /", "git push --force"] {
        assert_eq!(
            bash(&mcp, &turn, refused),
            pair("deny", "not-in-allowed-tools"),
            "{refused}"
        );
    }
    // REST answers the same for the same turn.
    assert_eq!(
        decision(&ok(
            daemon.call(
                "POST",
                &format!("/api/turns/{turn}/authorize"),
                &json!({"tool": "Bash", "args": {"command": "rm -rf /"}}).to_string(),
            ),
            200,
        )),
        pair("deny", "not-in-allowed-tools")
    );
}

engram_e2e::also_on_postgres!(
    a_skill_turn_grants_its_tools_only_while_it_lasts,
    the_operators_deny_beats_the_skills_grant,
    host_tools_run_behind_the_gate_and_stay_inside_the_skill,
    an_approval_allows_an_asked_tool_in_its_turn_only,
    every_turn_route_needs_the_token,
    a_turn_runs_the_scripts_of_its_invoked_skill_only,
    a_refused_turn_changes_nothing_stored,
    a_skill_without_allowed_tools_leaves_the_turn_to_the_policy,
    a_skill_with_allowed_tools_restricts_and_keeps_memory_unless_it_names_it,
    tool_authorize_understands_claude_code_rules_over_mcp,
);

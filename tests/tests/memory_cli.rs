//! End-to-end: `engram memory ...` against a real `engram serve`, found through the
//! `daemon.json` and `operator-token` it leaves in its data directory (or `--url`,
//! `ENGRAM_URL` and `--token`). Every assertion reads the daemon's real state back.

use std::path::Path;
use std::process::{Output, Stdio};

use engram_e2e::{Daemon, engram};
use serde_json::Value;

/// A daemon found the way a user's CLI finds it: its generated token and daemon.json.
fn start(data: &Path) -> Daemon {
    Daemon::start_first_run(&mut engram(data), data)
}

/// `engram --data-dir <data> memory <args>`, stdin not a terminal.
fn memory(data: &Path, args: &[&str]) -> Output {
    engram(data)
        .arg("memory")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run engram memory")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `memory <args> --json`, asserts success, and parses stdout.
fn json(data: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let output = memory(data, &args);
    assert!(
        output.status.success(),
        "memory {args:?}: status {:?}, stderr: {}",
        output.status,
        stderr(&output)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("memory {args:?}: {e}: {}", stdout(&output)))
}

/// Runs `memory <args>` and asserts success; the human output.
fn text(data: &Path, args: &[&str]) -> String {
    let output = memory(data, args);
    assert!(
        output.status.success(),
        "memory {args:?}: status {:?}, stderr: {}",
        output.status,
        stderr(&output)
    );
    stdout(&output)
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            let memory = if item.get("memory").is_some() {
                &item["memory"]
            } else {
                item
            };
            memory["id"].as_str().expect("id").to_string()
        })
        .collect()
}

#[test]
fn memory_commands_drive_the_running_daemon() {
    let data = tempfile::tempdir().expect("tempdir");
    let data = data.path();
    let _daemon = start(data);

    // overview on an empty brain
    let overview = json(data, &["overview"]);
    assert_eq!(overview["enabled"], true);
    assert_eq!(overview["backend"], "sqlite");
    assert_eq!(overview["learning_paused"], false);
    assert_eq!(overview["counts"]["total"], 0);
    assert_eq!(overview["strategies"].as_array().map(Vec::len), Some(3));
    let human = text(data, &["overview"]);
    assert!(human.contains("Second Brain   on (sqlite)"), "{human}");
    assert!(human.contains("builtin:extract-rules"), "{human}");
    assert_eq!(
        text(data, &["recent"]),
        "no memories yet\n",
        "an empty listing says so"
    );

    // add: positional summary, and --summary with every option
    let tea = json(data, &["add", "-t", "preference", "User likes green tea"]);
    let tea_id = tea["id"].as_str().expect("id").to_string();
    assert!(tea_id.starts_with("mem_"), "{tea}");
    assert_eq!(tea["type"], "preference");
    assert_eq!(tea["scope"], "durable", "the type's default scope");
    assert_eq!(tea["evidence"], "manual");
    let goal = json(
        data,
        &[
            "add",
            "--type",
            "goal",
            "--summary",
            "Run a marathon in spring",
            "--evidence",
            "direct",
            "--scope",
            "active",
            "--confidence",
            "0.8",
            "--importance",
            "0.9",
        ],
    );
    let goal_id = goal["id"].as_str().expect("id").to_string();
    assert_eq!(goal["evidence"], "direct");
    assert_eq!(goal["confidence"], 0.8);
    assert_eq!(goal["importance"], 0.9);
    let added = text(
        data,
        &["add", "-t", "habit", "Reads before sleeping", "-i", "0.5"],
    );
    assert!(added.starts_with("added mem_"), "{added}");
    assert!(added.contains("[habit]"), "{added}");
    let habit_id = added
        .split_whitespace()
        .nth(1)
        .expect("id in the added line")
        .to_string();

    // recent: newest first, limited, both tiers
    let recent = json(data, &["recent"]);
    assert_eq!(
        ids(&recent),
        [habit_id.as_str(), goal_id.as_str(), tea_id.as_str()]
    );
    let one = json(data, &["recent", "--limit", "1"]);
    assert_eq!(ids(&one), [habit_id.as_str()]);
    assert!(one["next_cursor"].is_string(), "{one}");
    let human = text(data, &["recent"]);
    assert!(
        human.lines().any(|l| l.starts_with(&tea_id)
            && l.contains("[preference]")
            && l.contains("durable")
            && l.ends_with("User likes green tea")),
        "{human}"
    );

    // search finds it, with its tier
    let found = json(data, &["search", "green", "tea"]);
    assert_eq!(ids(&found), [tea_id.as_str()]);
    assert_eq!(found["items"][0]["tier"], "conscious");

    // edit changes it; subconscious lists it; search says which tier
    let edited = json(
        data,
        &[
            "edit",
            &goal_id,
            "--scope",
            "subconscious",
            "--summary",
            "Run a marathon in autumn",
        ],
    );
    assert_eq!(edited["id"], goal_id.as_str());
    assert_eq!(edited["scope"], "subconscious");
    assert_eq!(edited["summary"], "Run a marathon in autumn");
    let sub = json(data, &["subconscious"]);
    assert_eq!(ids(&sub), [goal_id.as_str()]);
    let found = json(data, &["search", "marathon"]);
    assert_eq!(ids(&found), [goal_id.as_str()]);
    assert_eq!(found["items"][0]["tier"], "subconscious");
    assert_eq!(
        found["items"][0]["memory"]["summary"],
        "Run a marathon in autumn"
    );
    let human = text(data, &["search", "marathon"]);
    assert!(human.starts_with("subconscious  mem_"), "{human}");
    assert!(
        json(data, &["search", "spring"])["items"]
            .as_array()
            .expect("items")
            .is_empty(),
        "the old summary is gone from the index"
    );
    let edited = json(
        data,
        &["edit", &tea_id, "-t", "habit", "-i", "0.3", "-c", "0.7"],
    );
    assert_eq!(edited["type"], "habit");
    assert_eq!(edited["importance"], 0.3);
    assert_eq!(edited["confidence"], 0.7);
    let edited = text(data, &["edit", &tea_id, "--type", "preference"]);
    assert!(edited.starts_with(&format!("updated {tea_id}")), "{edited}");

    let nothing = memory(data, &["edit", &tea_id]);
    assert_eq!(nothing.status.code(), Some(2), "an edit needs a field");
    let missing = memory(data, &["edit", "mem_nope", "--summary", "x"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("no memory or record `mem_nope` (404 not-found)"),
        "{}",
        stderr(&missing)
    );
    let invalid = memory(data, &["add", "-t", "goal", "   "]);
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stderr(&invalid).contains("summary"), "{}", stderr(&invalid));
    let bad_type = memory(data, &["add", "-t", "wish", "x"]);
    assert_eq!(bad_type.status.code(), Some(2));
    assert!(stderr(&bad_type).contains("preference"), "lists the types");

    // the overview counts by type and scope
    let overview = json(data, &["overview"]);
    assert_eq!(overview["counts"]["total"], 3);
    assert_eq!(overview["counts"]["by_scope"]["durable"], 2);
    assert_eq!(overview["counts"]["by_scope"]["subconscious"], 1);
    assert_eq!(overview["counts"]["by_type"]["goal"], 1);
    assert_eq!(overview["counts"]["by_type"]["preference"], 1);

    // pause and resume show in the overview
    assert_eq!(
        json(data, &["pause"]),
        serde_json::json!({"learning_paused": true})
    );
    assert_eq!(json(data, &["overview"])["learning_paused"], true);
    assert!(text(data, &["overview"]).contains("Learning       paused"));
    assert!(text(data, &["resume"]).starts_with("learning resumed"));
    assert_eq!(json(data, &["overview"])["learning_paused"], false);
    assert!(text(data, &["pause"]).starts_with("learning paused"));
    assert_eq!(json(data, &["resume"])["learning_paused"], false);

    // delete removes it
    assert_eq!(
        json(data, &["delete", &tea_id]),
        serde_json::json!({"deleted": tea_id})
    );
    assert!(ids(&json(data, &["search", "tea"])).is_empty());
    assert!(!ids(&json(data, &["recent"])).contains(&tea_id));
    let again = memory(data, &["delete", &tea_id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("404 not-found"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        text(data, &["delete", &habit_id]),
        format!("deleted {habit_id}\n")
    );

    // --user keeps users apart
    let bob = json(
        data,
        &["add", "--user", "bob", "-t", "identity", "Bob is a pilot"],
    );
    assert_eq!(bob["user_id"], "bob");
    assert_eq!(ids(&json(data, &["recent"])), [goal_id.as_str()]);
    assert_eq!(
        ids(&json(data, &["--user", "bob", "recent"])),
        [bob["id"].as_str().expect("id")]
    );

    // clear without -y and without a terminal refuses and deletes nothing
    let refused = memory(data, &["clear"]);
    assert_eq!(refused.status.code(), Some(1));
    let message = stderr(&refused);
    assert!(message.contains("not a terminal"), "{message}");
    assert!(message.contains("-y"), "{message}");
    assert!(refused.stdout.is_empty());
    assert_eq!(ids(&json(data, &["recent"])), [goal_id.as_str()]);
    assert_eq!(json(data, &["overview"])["counts"]["total"], 1);

    // clear -y empties the user's memories, and only theirs
    assert_eq!(
        json(data, &["clear", "-y"]),
        serde_json::json!({"deleted": 1})
    );
    assert!(ids(&json(data, &["recent"])).is_empty());
    assert!(ids(&json(data, &["subconscious"])).is_empty());
    assert_eq!(json(data, &["overview"])["counts"]["total"], 0);
    assert_eq!(ids(&json(data, &["--user", "bob", "recent"])).len(), 1);
    assert_eq!(
        text(data, &["clear", "--yes", "--user", "bob"]),
        "cleared: 1 memory of user `bob` deleted\n"
    );
    assert_eq!(text(data, &["subconscious"]), "no subconscious memories\n");
}

/// What the agent deletes waits for the person: `dismissed` lists it (human and
/// `--json`, the daemon's own shape), `restore` brings it back.
#[test]
fn dismissed_lists_what_the_agent_deleted_and_restore_brings_it_back() {
    let data = tempfile::tempdir().expect("tempdir");
    let data = data.path();
    let daemon = start(data);
    assert_eq!(
        text(data, &["dismissed"]),
        "nothing the agent deleted is waiting to be restored\n"
    );
    let added = json(
        data,
        &[
            "add",
            "-t",
            "habit",
            "User feeds the neighbour's cat on Fridays",
        ],
    );
    let id = added["id"].as_str().expect("id").to_string();
    // The agent's token deletes it.
    let deleted = daemon.call("DELETE", &format!("/api/brain/memory/{id}"), "");
    assert_eq!(deleted.status, 204, "{}", deleted.text());
    assert!(ids(&json(data, &["recent"])).is_empty());

    let listed = json(data, &["dismissed"]);
    assert_eq!(ids(&listed), std::slice::from_ref(&id));
    let item = &listed["items"][0];
    assert_eq!(item["memory"]["dismissed_at"], item["dismissed_at"]);
    assert!(item["restorable_until"].as_str().is_some(), "{listed}");
    assert_eq!(item["keep_messages"], false);
    let human = text(data, &["dismissed"]);
    assert!(
        human.contains(&id) && human.contains("restorable until"),
        "{human}"
    );

    let restored = json(data, &["restore", &id]);
    assert_eq!(restored["id"], id.as_str());
    assert_eq!(restored["dismissed_at"], Value::Null);
    assert_eq!(ids(&json(data, &["recent"])), std::slice::from_ref(&id));
    // Restored once, there is nothing left to restore: the daemon's 404, exit 1.
    let again = memory(data, &["restore", &id]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(stderr(&again).contains("not-found"), "{}", stderr(&again));
}

#[test]
fn without_a_running_daemon_the_cli_names_the_data_dir() {
    let data = tempfile::tempdir().expect("tempdir");
    for args in [&["overview"][..], &["recent", "--json"], &["clear", "-y"]] {
        let output = memory(data.path(), args);
        assert_eq!(
            output.status.code(),
            Some(3),
            "{args:?}: {}",
            stderr(&output)
        );
        // With --json the failure is JSON on stdout; in text, a line on stderr.
        let message = if args.contains(&"--json") {
            assert!(output.stderr.is_empty(), "{}", stderr(&output));
            let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON");
            assert_eq!(answer["error"]["code"], "no-daemon");
            answer["error"]["message"]
                .as_str()
                .expect("message")
                .to_string()
        } else {
            assert!(output.stdout.is_empty());
            stderr(&output)
        };
        assert!(
            message.contains(&data.path().display().to_string()),
            "{message}"
        );
        assert!(message.contains("engram serve"), "{message}");
    }
}

#[test]
fn the_token_and_url_can_be_given_and_a_wrong_one_is_refused() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut daemon = start(data.path());
    let token = std::fs::read_to_string(data.path().join(engram::credentials::OPERATOR_TOKEN_FILE))
        .expect("the daemon wrote its token");
    let info: ::engram::server::DaemonInfo = serde_json::from_slice(
        &std::fs::read(data.path().join(::engram::server::DAEMON_FILE)).expect("daemon.json"),
    )
    .expect("daemon info");
    assert_eq!(info.url, daemon.url());

    // A wrong token, by flag or environment: exit 1 and the daemon's reason.
    let wrong = memory(
        data.path(),
        &["overview", "--token", "not-the-right-token-0123456789"],
    );
    assert_eq!(wrong.status.code(), Some(1));
    let message = stderr(&wrong);
    assert!(message.contains("401 unauthorized"), "{message}");
    assert!(message.contains("was refused"), "{message}");
    let wrong = engram(data.path())
        .args(["memory", "recent"])
        .env("ENGRAM_OPERATOR_TOKEN", "not-the-right-token-0123456789")
        .output()
        .expect("run");
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("401 unauthorized"),
        "{}",
        stderr(&wrong)
    );

    // Elsewhere, with the address and the token given: --url, ENGRAM_URL, --token.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let added = json(
        elsewhere.path(),
        &[
            "add",
            "--url",
            &daemon.url(),
            "--token",
            token.trim(),
            "-t",
            "goal",
            "Learn Rust",
        ],
    );
    let output = engram(elsewhere.path())
        .args(["memory", "recent", "--json"])
        .env("ENGRAM_URL", daemon.url())
        .env("ENGRAM_OPERATOR_TOKEN", token.trim())
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", stderr(&output));
    let page: Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(ids(&page), [added["id"].as_str().expect("id")]);
    let no_token = memory(elsewhere.path(), &["overview", "--url", &daemon.url()]);
    assert_eq!(no_token.status.code(), Some(1));
    assert!(
        stderr(&no_token).contains("operator-token"),
        "{}",
        stderr(&no_token)
    );

    // A daemon that died without cleaning up: its daemon.json is named, and not trusted.
    daemon.child.kill().expect("kill -9");
    daemon.child.wait().expect("reap");
    assert!(data.path().join(::engram::server::DAEMON_FILE).exists());
    let gone = memory(data.path(), &["overview"]);
    assert_eq!(gone.status.code(), Some(3), "{}", stderr(&gone));
    let message = stderr(&gone);
    assert!(
        message.contains(
            &data
                .path()
                .join(::engram::server::DAEMON_FILE)
                .display()
                .to_string()
        ),
        "{message}"
    );
    assert!(message.contains("token was not sent"), "{message}");
}

#[test]
fn with_the_second_brain_off_the_fact_store_answers_what_it_can() {
    let data = tempfile::tempdir().expect("tempdir");
    let _daemon = Daemon::start_first_run(
        engram(data.path()).env("SECOND_BRAIN_ENABLED", "false"),
        data.path(),
    );
    let overview = json(data.path(), &["overview"]);
    assert_eq!(overview["enabled"], false);
    assert_eq!(overview["backend"], "facts");
    assert_eq!(overview["learning_paused"], Value::Null);
    assert!(text(data.path(), &["overview"]).contains("off, memory is served by the fact store"));
    let added = json(data.path(), &["add", "-t", "preference", "Likes oolong"]);
    assert_eq!(
        ids(&json(data.path(), &["recent"])),
        [added["id"].as_str().expect("id")]
    );
    let paused = memory(data.path(), &["pause"]);
    assert_eq!(paused.status.code(), Some(1));
    assert!(
        stderr(&paused).contains("409 brain-disabled"),
        "{}",
        stderr(&paused)
    );
}

engram_e2e::also_on_postgres!(
    memory_commands_drive_the_running_daemon,
    dismissed_lists_what_the_agent_deleted_and_restore_brings_it_back,
    without_a_running_daemon_the_cli_names_the_data_dir,
    the_token_and_url_can_be_given_and_a_wrong_one_is_refused,
    with_the_second_brain_off_the_fact_store_answers_what_it_can,
);

//! End-to-end: memory in and out with `engram memory import|export` and `engram
//! backup` against a real daemon. Each importer on its fixture
//! (`tests/fixtures/import/`, written in the source's documented format): the counts it
//! reports, what the daemon then holds (the transcript with its original times and
//! titles, what extraction learned, typed memories, a note's path), nothing added by
//! a second import, and malformed input refused by entry with nothing written.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use engram_e2e::{Daemon, engram, fixtures, ok, problem};
use serde_json::Value;

fn import_fixture(name: &str) -> PathBuf {
    fixtures().join("import").join(name)
}

fn memory(data: &Path, args: &[&str]) -> Output {
    engram(data)
        .arg("memory")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run engram memory")
}

/// `engram memory import PATH --format F --json`, which must succeed.
fn import(data: &Path, path: &Path, format: &str) -> Value {
    let output = memory(
        data,
        &[
            "import",
            path.to_str().expect("path"),
            "--format",
            format,
            "--json",
        ],
    );
    assert!(
        output.status.success(),
        "import {format}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the report")
}

/// Everything stored for the user, as the lossless export says it.
fn export(daemon: &Daemon) -> String {
    daemon.get("/api/brain/export").text()
}

fn start(data: &Path) -> Daemon {
    // The fixtures' conversations are from 2024: kept however old they get.
    std::fs::write(
        data.join("config.yaml"),
        "memory:\n  secondBrain:\n    transcriptDays: 36500\n",
    )
    .expect("config");
    Daemon::start_first_run(&mut engram(data), data)
}

fn search(daemon: &Daemon, q: &str, scope: &str) -> Vec<Value> {
    let page = ok(
        daemon.get(&format!(
            "/api/brain/memory/search?q={}&scope={scope}&limit=50",
            q.replace(' ', "%20")
        )),
        200,
    );
    page["items"].as_array().expect("items").clone()
}

#[test]
fn chatgpt_and_claude_exports_are_replayed_once_with_their_times_and_titles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let daemon = start(data);

    let report = import(
        data,
        &import_fixture("chatgpt-conversations.json"),
        "chatgpt",
    );
    assert_eq!(report["conversations"], 2, "{report}");
    assert_eq!(
        report["messages"], 6,
        "two titles and four messages: {report}"
    );
    assert!(
        report["learned"].as_u64().expect("learned") >= 2,
        "{report}"
    );
    // The transcript keeps what was said, when it was said, under the title.
    let said = search(&daemon, "peanut-free weekend", "conversations");
    let message = &said[0]["message"];
    assert_eq!(
        message["conversation_id"],
        "import-chatgpt-6f1c2a7e-0000-4000-8000-000000000001"
    );
    assert_eq!(message["at"], "2024-11-07T17:20:30Z");
    let titles = search(&daemon, "Lisbon trip planning", "conversations");
    assert!(
        titles.iter().any(|h| h["message"]["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("Conversation title: Lisbon trip planning"))),
        "{titles:?}"
    );
    // What extraction learned is dated when it was said.
    let learned = search(&daemon, "Porto", "memories");
    let porto = learned
        .iter()
        .find(|h| {
            h["memory"]["summary"]
                .as_str()
                .is_some_and(|s| s.contains("Porto"))
        })
        .unwrap_or_else(|| panic!("nothing learned about Porto: {learned:?}"));
    assert!(
        porto["memory"]["created_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("2024-11-07")),
        "{porto}"
    );

    let before = export(&daemon);
    let again = import(
        data,
        &import_fixture("chatgpt-conversations.json"),
        "chatgpt",
    );
    assert_eq!(
        (again["conversations"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(export(&daemon), before, "a second import adds nothing");

    // Another user imports the same export into conversations of their own
    // (conversation ids are one space for all users), leaving the first user's as
    // they were.
    let path = import_fixture("chatgpt-conversations.json");
    let output = memory(
        data,
        &[
            "--user",
            "alice",
            "import",
            path.to_str().expect("path"),
            "--format",
            "chatgpt",
            "--json",
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: Value = serde_json::from_slice(&output.stdout).expect("the report");
    assert_eq!(theirs["conversations"], 2, "{theirs}");
    let output = memory(data, &["--user", "alice", "export"]);
    assert!(output.status.success());
    let alices = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(alices.contains("peanut-free weekend"), "{alices}");
    assert!(
        !alices.contains("\"import-chatgpt-6f1c2a7e"),
        "alice's ids are her own: {alices}"
    );
    assert_eq!(export(&daemon), before);

    let report = import(data, &import_fixture("claude-conversations.json"), "claude");
    assert_eq!(
        (
            report["conversations"].as_u64(),
            report["messages"].as_u64()
        ),
        (Some(1), Some(3))
    );
    let job = search(&daemon, "Acme Robotics", "conversations");
    assert_eq!(job[0]["message"]["at"], "2024-11-08T09:00:10Z");
    let before = export(&daemon);
    let again = import(data, &import_fixture("claude-conversations.json"), "claude");
    assert_eq!(again["skipped"], 1);
    assert_eq!(export(&daemon), before);

    // Malformed: the second conversation's branch names a node that is not there.
    let mut broken: Value = serde_json::from_slice(
        &std::fs::read(import_fixture("chatgpt-conversations.json")).expect("fixture"),
    )
    .expect("json");
    broken[0]["conversation_id"] = "a-new-one".into();
    broken[1]["current_node"] = "missing".into();
    let path = data.join("broken.json");
    std::fs::write(&path, serde_json::to_vec(&broken).expect("json")).expect("write");
    let refused = memory(
        data,
        &[
            "import",
            path.to_str().expect("path"),
            "--format",
            "chatgpt",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(
        error.contains("conversation 2 (\"Sourdough\")") && error.contains("nothing was imported"),
        "{error}"
    );
    assert_eq!(export(&daemon), before, "nothing written");
}

#[test]
fn mem0_and_notes_become_typed_memories_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let daemon = start(data);

    let report = import(data, &import_fixture("mem0-memories.json"), "mem0");
    assert_eq!(report["memories"], 4, "{report}");
    let list = ok(daemon.get("/api/brain/memory?limit=50"), 200);
    let items = list["items"].as_array().expect("items");
    let typed = |summary: &str| {
        items
            .iter()
            .find(|m| m["summary"] == summary)
            .map(|m| m["type"].as_str().expect("type").to_string())
            .unwrap_or_else(|| panic!("{summary} missing: {items:?}"))
    };
    assert_eq!(typed("User is allergic to shellfish"), "constraint");
    assert_eq!(typed("User likes green tea in the morning"), "preference");
    assert_eq!(typed("User wants to run a marathon next year"), "goal");
    let before = export(&daemon);
    let again = import(data, &import_fixture("mem0-memories.json"), "mem0");
    assert_eq!(
        (again["memories"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(export(&daemon), before);

    let notes = import_fixture("notes");
    let report = import(data, &notes, "markdown");
    assert_eq!(report["memories"], 4, "{report}");
    let found = search(&daemon, "pour-over coffee", "memories");
    let coffee = &found[0]["memory"];
    assert_eq!(coffee["type"], "preference");
    assert_eq!(coffee["detail"], "From coffee.md (Coffee)");
    let garden = search(&daemon, "raised beds", "memories");
    assert!(
        garden[0]["memory"]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("From projects/garden.md")),
        "{garden:?}"
    );
    let before = export(&daemon);
    let again = import(data, &notes, "markdown");
    assert_eq!(again["skipped"], 4);
    assert_eq!(export(&daemon), before);

    // A note whose frontmatter never closes is refused by file and line; the good
    // note beside it is not imported either.
    let bad = data.join("bad-notes");
    std::fs::create_dir_all(&bad).expect("dir");
    std::fs::write(bad.join("a-good.md"), "- [fact] Speaks Portuguese\n").expect("good");
    std::fs::write(bad.join("b-broken.md"), "---\ntitle: B\n\nno end\n").expect("broken");
    let refused = memory(
        data,
        &[
            "import",
            bad.to_str().expect("path"),
            "--format",
            "markdown",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("b-broken.md line 1"), "{error}");
    assert_eq!(export(&daemon), before, "nothing written");

    // Out again: as Markdown notes, one per type, each memory an observation.
    let out = data.join("exported");
    let exported = memory(
        data,
        &[
            "export",
            "--format",
            "markdown",
            "--output",
            out.to_str().expect("path"),
        ],
    );
    assert!(exported.status.success());
    let constraints = std::fs::read_to_string(out.join("constraint.md")).expect("constraint.md");
    assert!(
        constraints.contains("- [constraint] User is allergic to shellfish"),
        "{constraints}"
    );
}

#[test]
fn an_engram_export_imported_again_changes_nothing_and_a_backup_restores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    let daemon = start(&data);
    import(&data, &import_fixture("mem0-memories.json"), "mem0");

    let file = dir.path().join("export.jsonl");
    let exported = memory(&data, &["export", "--output", file.to_str().expect("path")]);
    assert!(exported.status.success());
    let first = std::fs::read_to_string(&file).expect("export");
    assert_eq!(first, export(&daemon));
    let report = import(&data, &file, "engram");
    assert_eq!(report["records"], 4);
    assert_eq!(
        export(&daemon),
        first,
        "importing the export again adds nothing"
    );

    // The agent may not take a backup: it holds the tokens and every memory.
    problem(daemon.get("/api/backup"), 403, "person-required");
    let backup = dir.path().join("backup.tar.gz");
    let taken = engram(&data)
        .args(["backup", "--output"])
        .arg(&backup)
        .output()
        .expect("backup");
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&backup)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    drop(daemon);

    // Restored into an empty directory, a daemon there holds the same memory.
    let restored = dir.path().join("restored");
    std::fs::create_dir_all(&restored).expect("restored");
    let unpacked = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&backup)
        .arg("-C")
        .arg(&restored)
        .status()
        .expect("tar");
    assert!(unpacked.success());
    assert!(!restored.join("daemon.lock").exists());
    assert!(!restored.join("daemon.json").exists());
    let again = Daemon::start_first_run(&mut engram(&restored), &restored);
    assert_eq!(export(&again), first);
}

#[test]
fn a_secret_in_an_import_is_refused_by_its_key_or_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let daemon = start(data);

    // As POST /api/brain/memory: a memory that is nothing but a secret is refused
    // (named by its key, never by its text), a secret inside a longer one redacted.
    let mem0 = data.join("mem0-with-secrets.json");
    std::fs::write(
        &mem0,
        r#"{"results": [
            {"id": "only-a-password", "memory": "User's password is Xylophone!77"},
            {"id": "wifi", "memory": "The garage wifi password is Xylophone!77 if the guests ask."},
            {"id": "tea", "memory": "Likes green tea"}
        ]}"#,
    )
    .expect("write");
    let report = import(data, &mem0, "mem0");
    assert_eq!(report["memories"], 2, "{report}");
    assert_eq!(
        report["refused"],
        serde_json::json!([{
            "key": "only-a-password",
            "code": "secret-refused",
            "reason": report["refused"][0]["reason"],
        }]),
        "{report}"
    );
    assert!(
        report["refused"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("nothing but a secret") && !r.contains("Xylophone")),
        "{report}"
    );
    // The text report names it too.
    let output = memory(
        data,
        &["import", mem0.to_str().expect("path"), "--format", "mem0"],
    );
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("1 refused") && text.contains("refused only-a-password: "),
        "{text}"
    );

    // A message of a replayed conversation is redacted before it is stored.
    let claude = data.join("claude-with-a-secret.json");
    std::fs::write(
        &claude,
        r#"[{"uuid": "c-secret", "name": "Bank", "chat_messages": [
            {"sender": "human", "created_at": "2024-11-08T09:00:10Z",
             "text": "My bank password is Marmalade#12, remind me to change it."}]}]"#,
    )
    .expect("write");
    let report = import(data, &claude, "claude");
    assert_eq!(report["conversations"], 1, "{report}");

    let stored = export(&daemon);
    assert!(stored.contains("[redacted: password]"), "{stored}");
    assert!(
        !stored.contains("Xylophone") && !stored.contains("Marmalade"),
        "{stored}"
    );
    assert!(stored.contains("User likes green tea"), "{stored}");
}

#[test]
fn claude_and_mem0_refuse_a_bad_entry_by_name_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let daemon = start(data);
    let before = export(&daemon);
    let cases = [
        (
            "claude",
            r#"[{"uuid": "a", "name": "Fine", "chat_messages": [
                {"sender": "human", "text": "I live in Porto.", "created_at": "2024-01-01T00:00:00Z"}]},
               {"uuid": "b", "name": "Odd", "chat_messages": [
                {"sender": "robot", "text": "hi", "created_at": "2024-01-01T00:00:00Z"}]}]"#,
            "conversation 2 (\"Odd\"), message 1",
        ),
        (
            "mem0",
            r#"{"results": [{"id": "a", "memory": "Likes tea"}, {"id": "b"}]}"#,
            "memory 2 (b)",
        ),
        ("mem0", "{\"results\": [\n{\"id\": \"a\",\n", "line 3"),
    ];
    for (format, text, entry) in cases {
        let path = data.join(format!("bad-{format}.json"));
        std::fs::write(&path, text).expect("write");
        let refused = memory(
            data,
            &["import", path.to_str().expect("path"), "--format", format],
        );
        assert_eq!(refused.status.code(), Some(1), "{format}");
        let error = String::from_utf8_lossy(&refused.stderr);
        assert!(
            error.contains(entry) && error.contains("nothing was imported"),
            "{format}: {error}"
        );
        assert_eq!(export(&daemon), before, "{format}: nothing written");
    }
}

#[test]
fn memory_json_prints_failures_as_json() {
    let data = tempfile::tempdir().expect("tempdir");
    let output = memory(data.path(), &["recent", "--json"]);
    assert_eq!(output.status.code(), Some(3));
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(answer["error"]["code"], "no-daemon");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("engram serve")),
        "{answer}"
    );
}

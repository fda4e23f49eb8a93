//! What the memory says is true now, forgetting and secrets, against the real daemon:
//! through REST (every write path settles what a memory replaces; a turn's block
//! answers the asked holder first), through a chat channel (the Telegram stand-in,
//! `standin::telegram`, and the model stand-in, `standin::openai`: neither service can
//! be reached here), and down to the database file itself, which must not keep what
//! was forgotten or redacted. MCP's side is in `tests/mcp/test_mcp.py`.

use std::path::Path;
use std::time::{Duration, Instant};

use engram_e2e::standin::openai::{OpenAi, Reply};
use engram_e2e::standin::telegram::{Telegram, texts_to};
use engram_e2e::{Daemon, engram, ok, problem};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// The users these tests act for with the agent's token (`agent.users`).
const USERS: &str = "agent:\n  users: [truth, forget, secrets]\n";

fn daemon(dir: &Path) -> Daemon {
    let config = dir.join("config.yaml");
    if !config.exists() {
        std::fs::write(config, USERS).unwrap();
    }
    Daemon::start(&mut engram(dir))
}

fn add(daemon: &Daemon, user: &str, memory_type: &str, summary: &str) -> (u16, Value) {
    let response = daemon.call(
        "POST",
        &format!("/api/brain/memory?user={user}"),
        &json!({"type": memory_type, "summary": summary}).to_string(),
    );
    let status = response.status;
    (status, response.json())
}

fn say(daemon: &Daemon, user: &str, conversation: &str, lines: &[(&str, &str)]) {
    for (role, content) in lines {
        ok(
            daemon.call(
                "POST",
                &format!("/api/brain/conversations/{conversation}/messages?user={user}"),
                &json!({"role": role, "content": content}).to_string(),
            ),
            201,
        );
    }
    ok(
        daemon.call(
            "POST",
            &format!("/api/brain/conversations/{conversation}/end?user={user}"),
            "",
        ),
        200,
    );
}

/// The memory block a turn injects for `message`.
fn block(daemon: &Daemon, user: &str, message: &str) -> String {
    let turn = ok(
        daemon.call(
            "POST",
            "/api/turns",
            &json!({"message": message, "user": user}).to_string(),
        ),
        201,
    );
    turn["memory_block"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every search hit and memory of `user` for `query`, as one text (read as the person,
/// who may read any user's memory).
fn searchable(daemon: &Daemon, user: &str, query: &str) -> String {
    let person = daemon.person();
    let q: String = query
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let hits = ok(
        person.call(
            "GET",
            &format!("/api/brain/memory/search?q={q}&scope=all&limit=20&user={user}"),
            "",
        ),
        200,
    );
    let listed = ok(
        person.call("GET", &format!("/api/brain/memory?user={user}"), ""),
        200,
    );
    let exported = person
        .call("GET", &format!("/api/brain/export?user={user}"), "")
        .text();
    format!("{hits}\n{listed}\n{exported}")
}

/// Waits until no file of the Second Brain's directory holds `word` (the daemon
/// purges forgotten text at once, and retries at its next maintenance pass when a
/// reader held the WAL).
fn gone_from_the_files(data: &Path, word: &str) {
    let dir = data.join("memory/second-brain");
    let deadline = Instant::now() + WAIT;
    loop {
        let holding: Vec<String> = std::fs::read_dir(&dir)
            .expect("the Second Brain's directory")
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let bytes = std::fs::read(&path).ok()?;
                bytes
                    .windows(word.len())
                    .any(|w| w == word.as_bytes())
                    .then(|| path.display().to_string())
            })
            .collect();
        if holding.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{word}` is still in {holding:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn every_write_path_keeps_one_current_value_and_answers_the_asked_holder() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let user = "truth";
    let (status, old) = add(&daemon, user, "identity", "User's phone number is 555-0140");
    assert_eq!((status, old["outcome"].as_str()), (201, Some("added")));
    let (status, new) = add(
        &daemon,
        user,
        "identity",
        "User's new phone number is 555-0161",
    );
    assert_eq!(status, 201);
    assert_eq!(new["superseded"], json!([old["id"]]));
    let (status, again) = add(
        &daemon,
        user,
        "identity",
        "User's new phone number is 555-0161",
    );
    assert_eq!(
        (status, again["outcome"].as_str()),
        (200, Some("reinforced"))
    );
    assert_eq!(again["id"], new["id"]);
    let kept = ok(
        daemon.get(&format!(
            "/api/brain/memory/{}?user={user}",
            old["id"].as_str().unwrap()
        )),
        200,
    );
    assert_eq!(kept["superseded_by"], new["id"]);

    // A conversation states the change; an edit too.
    say(
        &daemon,
        user,
        "c1",
        &[(
            "user",
            "I drive a Volvo, and my husband Omar drives a Vespa.",
        )],
    );
    say(
        &daemon,
        user,
        "c2",
        &[("user", "Sold the Volvo. I drive a Kia Niro now.")],
    );
    let got = block(&daemon, user, "What car do I drive?");
    assert!(got.contains("Kia"), "{got}");
    assert!(!got.contains("Volvo"), "{got}");
    let got = block(&daemon, user, "What does Omar drive?");
    assert!(
        got.find("Vespa") < got.find("Kia").or(Some(usize::MAX)),
        "{got}"
    );
    assert!(got.contains("Vespa"), "{got}");
    let got = block(&daemon, user, "Which number should the plumber call me on?");
    assert!(
        got.contains("555-0161") && !got.contains("555-0140"),
        "{got}"
    );
    assert!(
        got.contains("ago") || got.contains("today"),
        "lines say when: {got}"
    );
    daemon.stop();
}

#[test]
fn forgetting_by_request_or_by_delete_leaves_nothing_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let user = "forget";
    say(
        &daemon,
        user,
        "c1",
        &[
            ("user", "My therapist Dr. Quillfeather says I'm improving."),
            ("assistant", "That's good to hear."),
            ("user", "Please forget that, it's private."),
            ("user", "I'm also training for the Lisbon marathon."),
        ],
    );
    let everything = searchable(&daemon, user, "Quillfeather therapist");
    assert!(!everything.contains("Quillfeather"), "{everything}");
    assert!(!block(&daemon, user, "Who is my therapist?").contains("Quillfeather"));
    assert!(block(&daemon, user, "Which marathon am I training for?").contains("Lisbon"));
    gone_from_the_files(dir.path(), "Quillfeather");

    // Deleting a memory redacts the messages it came from, unless asked not to.
    say(
        &daemon,
        user,
        "c2",
        &[("user", "My brother Anselmo lives in Trieste.")],
    );
    let memories = ok(daemon.get(&format!("/api/brain/memory?user={user}")), 200);
    let anselmo = memories["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["summary"].as_str().unwrap().contains("Anselmo"))
        .expect("learned")
        .clone();
    let id = anselmo["id"].as_str().unwrap();
    // The person's delete (the agent's waits for the person: attacks.rs, item 7).
    let person = daemon.person();
    ok(
        person.call("DELETE", &format!("/api/brain/memory/{id}?user={user}"), ""),
        204,
    );
    let everything = searchable(&daemon, user, "Anselmo Trieste brother");
    assert!(!everything.contains("Anselmo"), "{everything}");
    let persons = ok(daemon.get(&format!("/api/brain/persons?user={user}")), 200);
    assert!(!persons.to_string().contains("Anselmo"), "{persons}");
    gone_from_the_files(dir.path(), "Anselmo");

    say(&daemon, user, "c3", &[("user", "I grew up in Tromso.")]);
    let memories = ok(daemon.get(&format!("/api/brain/memory?user={user}")), 200);
    let id = memories["items"][0]["id"].as_str().unwrap().to_string();
    ok(
        person.call(
            "DELETE",
            &format!("/api/brain/memory/{id}?user={user}&keep_messages=true"),
            "",
        ),
        204,
    );
    assert!(searchable(&daemon, user, "Tromso").contains("Tromso"));

    // The forget log says what, when and by whom, never the text.
    let log = ok(
        daemon.get(&format!("/api/brain/forgotten?user={user}")),
        200,
    );
    let entries = log["items"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{log}");
    assert_eq!(entries[2]["by"], "conversation");
    assert_eq!(entries[1]["reason"], "memory");
    assert!(!log.to_string().contains("Anselmo") && !log.to_string().contains("Quillfeather"));
    daemon.stop();
}

#[test]
fn secrets_never_reach_the_store_and_stored_ones_are_redacted_by_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(dir.path());
    let user = "secrets";
    let lines = [
        "The garage wifi password is Xylophone!77 if the guests ask.",
        "Use ghp_Zq81mXw0vR3tYu5Io7Pa9Sd2Fg4Hj6Kl8ZxCv for the deploy.",
        "My card is 4000 0566 5566 5556, exp 09/29.",
        "Wire it to DE89 3704 0044 0532 0130 00 please.",
        "My SSN is 078-05-1120 for the form.",
        "The login code they sent is 731902.",
    ];
    let turns: Vec<(&str, &str)> = lines.iter().map(|l| ("user", *l)).collect();
    say(&daemon, user, "c1", &turns);
    for secret in [
        "Xylophone",
        "Zq81mXw0vR3t",
        "4000 0566 5566 5556",
        "0532 0130",
        "078-05-1120",
        "731902",
    ] {
        let everything = searchable(&daemon, user, secret);
        assert!(!everything.contains(secret), "{secret}: {everything}");
        assert!(!block(&daemon, user, &format!("What was {secret}?")).contains(secret));
        gone_from_the_files(dir.path(), secret);
    }
    let status = ok(daemon.get(&format!("/api/brain/status?user={user}")), 200);
    for kind in [
        "password",
        "api-key",
        "card",
        "iban",
        "national-id",
        "one-time-code",
    ] {
        assert!(
            status["redacted"][kind].as_u64() >= Some(1),
            "{kind}: {status}"
        );
    }
    // A memory that is nothing but a secret is refused, naming why.
    let refused = problem(
        daemon.call(
            "POST",
            &format!("/api/brain/memory?user={user}"),
            &json!({"type": "identity", "summary": "User's password is Xylophone!77"}).to_string(),
        ),
        422,
        "secret-refused",
    );
    assert_eq!(refused["field"], "summary");
    // A memory with a secret in it keeps the rest.
    let (status, kept) = add(
        &daemon,
        user,
        "identity",
        "User pays rent to IBAN GB33 BUKB 2020 1555 5555 55 monthly",
    );
    assert_eq!(status, 201);
    assert!(
        kept["summary"]
            .as_str()
            .unwrap()
            .contains("[redacted: iban]"),
        "{kept}"
    );
    // `memory.redact: []` stores what comes as it is; the pass redacts it later.
    std::fs::write(
        dir.path().join("config.yaml"),
        format!("{USERS}memory:\n  redact: []\n"),
    )
    .unwrap();
    daemon.stop();
    let daemon = self::daemon(dir.path());
    say(&daemon, user, "c2", &[("user", "The alarm PIN is 8841.")]);
    assert!(searchable(&daemon, user, "alarm PIN").contains("8841"));
    std::fs::write(dir.path().join("config.yaml"), USERS).unwrap();
    daemon.stop();
    let daemon = self::daemon(dir.path());
    let report = ok(
        daemon.call(
            "POST",
            &format!("/api/brain/redact?user={user}&dry_run=true"),
            "",
        ),
        200,
    );
    assert_eq!(report["messages"].as_array().unwrap().len(), 1, "{report}");
    assert!(
        searchable(&daemon, user, "alarm PIN").contains("8841"),
        "a dry run changes nothing"
    );
    ok(
        daemon.call("POST", &format!("/api/brain/redact?user={user}"), ""),
        200,
    );
    assert!(!searchable(&daemon, user, "alarm PIN").contains("8841"));
    gone_from_the_files(dir.path(), "8841");
    daemon.stop();
}

#[test]
fn a_chat_channel_redacts_secrets_and_acts_on_requests_to_forget() {
    const TOKEN: &str = "4242:standin-token";
    const PERSON: i64 = 100;
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, queue) = OpenAi::queued();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "llm:\n  baseUrl: {}\n  model: standin-model\n  timeoutSeconds: 20\nchannels:\n  telegram:\n    tokenEnv: ENGRAM_TEST_TELEGRAM_TOKEN\n    baseUrl: {}\n    pollSeconds: 1\n  bot:\n    admins: [{PERSON}]\n",
            model.base_url(),
            telegram.base_url()
        ),
    )
    .unwrap();
    let daemon = Daemon::start(engram(dir.path()).env("ENGRAM_TEST_TELEGRAM_TOKEN", TOKEN));
    let user = format!("telegram-{PERSON}");
    let said = [
        "The storage unit combination is 4-22-91 and the wifi password is Marmalade#12.",
        "My ex Dorotea still has my bike.",
        "Please forget what I said about my ex.",
        "I'm learning to sail on the Solent this summer.",
    ];
    for (n, text) in said.iter().enumerate() {
        queue.push([Reply::Text(format!("Reply {n}."))]);
        telegram.message(PERSON, PERSON, "Ann", text);
        telegram.wait_for(WAIT, |calls| texts_to(calls, PERSON).len() > n);
    }
    let everything = searchable(&daemon, &user, "Marmalade wifi password Dorotea ex bike");
    assert!(!everything.contains("Marmalade"), "{everything}");
    assert!(
        everything.contains("[redacted: password]"),
        "the message is kept, its secret redacted: {everything}"
    );
    assert!(searchable(&daemon, &user, "sail Solent").contains("Solent"));
    assert!(!everything.contains("Dorotea"), "{everything}");
    let status = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/status?user={user}"), ""),
        200,
    );
    assert!(
        status["redacted"]["password"].as_u64() >= Some(1),
        "{status}"
    );
    gone_from_the_files(dir.path(), "Marmalade");
    gone_from_the_files(dir.path(), "Dorotea");
    daemon.stop();
}

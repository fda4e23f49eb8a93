//! The Telegram channel end to end: the real daemon (`engram serve`) long-polls a
//! STAND-IN Bot API server on loopback (`standin::telegram`: there is no network here,
//! so Telegram itself cannot be reached; the stand-in speaks its protocol, refuses what
//! Telegram refuses and records every call) and talks to a STAND-IN model endpoint
//! (`standin::openai`: no model can run here). The tests play the people: they queue
//! messages and button presses as updates and read what the bot sent.

use std::path::Path;
use std::time::Duration;

use engram_e2e::standin::openai::{OpenAi, Queue, Reply, last_user_text};
use engram_e2e::standin::telegram::{Call, MAX_TEXT, Telegram, texts_to};
use engram_e2e::{Daemon, Listening, engram, fixtures, ok};
use serde_json::{Value, json};

const TOKEN: &str = "4242:standin-token";
const TOKEN_ENV: &str = "ENGRAM_TEST_TELEGRAM_TOKEN";
const ADMIN: i64 = 100;
const MEMBER: i64 = 200;
const STRANGER: i64 = 300;
const WAIT: Duration = Duration::from_secs(60);

/// The exact configuration the README shows, pointed at the stand-ins.
fn config(telegram: &Telegram, model: &OpenAi) -> String {
    format!(
        "llm:\n  baseUrl: {}\n  model: standin-model\n  timeoutSeconds: 20\nchannels:\n  telegram:\n    tokenEnv: {TOKEN_ENV}\n    baseUrl: {}\n    pollSeconds: 1\n  bot:\n    admins: [{ADMIN}]\n    approvedUsers: [{MEMBER}]\n",
        model.base_url(),
        telegram.base_url()
    )
}

fn start(dir: &Path, config: &str) -> Daemon {
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    Daemon::start(engram(dir).env(TOKEN_ENV, TOKEN))
}

/// The `sendMessage` calls to `chat`.
fn sent(calls: &[Call], chat: i64) -> Vec<Call> {
    calls
        .iter()
        .filter(|c| c.method == "sendMessage" && c.params["chat_id"].as_i64() == Some(chat))
        .cloned()
        .collect()
}

/// Waits for the `n`th (from 1) message sent to `chat`.
fn nth_sent(telegram: &Telegram, chat: i64, n: usize) -> Call {
    let calls = telegram.wait_for(WAIT, |calls| sent(calls, chat).len() >= n);
    sent(&calls, chat)[n - 1].clone()
}

/// The labels and data of a message's buttons, row by row flattened.
fn buttons(call: &Call) -> Vec<(String, String)> {
    call.params["reply_markup"]["inline_keyboard"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .flat_map(|row| row.as_array().cloned().unwrap_or_default())
                .map(|b| {
                    (
                        b["text"].as_str().unwrap().to_string(),
                        b["callback_data"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn text(call: &Call) -> String {
    call.params["text"].as_str().unwrap_or_default().to_string()
}

/// The person adds a memory for `user` (a Telegram user's memory is not the agent's).
fn add_memory(daemon: &Daemon, user: &str, summary: &str, scope: &str) {
    ok(
        daemon.person().call(
            "POST",
            &format!("/api/brain/memory?user={user}"),
            &json!({"type": "preference", "summary": summary, "scope": scope}).to_string(),
        ),
        201,
    );
}

#[test]
fn memory_buttons_cover_the_spec_table_for_the_person_only() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, _queue) = OpenAi::queued();
    let daemon = start(dir.path(), &config(&telegram, &model));
    let user = format!("telegram-{ADMIN}");
    add_memory(&daemon, &user, "Likes green tea", "durable");
    add_memory(&daemon, &user, "Used to play chess", "subconscious");
    add_memory(&daemon, "telegram-200", "Likes coffee", "durable");

    // /memory: the six buttons of `memory_command`'s table, in its order; no Search.
    telegram.message(ADMIN, ADMIN, "Ann", "/memory");
    let menu = nth_sent(&telegram, ADMIN, 1);
    let labels: Vec<String> = buttons(&menu).into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        labels,
        [
            "Overview",
            "Recent",
            "Subconscious",
            "Pause",
            "Resume",
            "Clear",
            "Forget"
        ]
    );
    let data = |label: &str| {
        buttons(&menu)
            .into_iter()
            .find(|(l, _)| l == label)
            .unwrap()
            .1
    };
    let menu_id = menu.message_id.unwrap();
    let mut n = 1;
    let mut press = |label: &str| {
        telegram.press(ADMIN, ADMIN, menu_id, &data(label));
        n += 1;
        nth_sent(&telegram, ADMIN, n)
    };

    let overview = text(&press("Overview"));
    assert!(
        overview.starts_with("Second Brain: on, learning on.\n2 memories"),
        "{overview}"
    );
    let recent = text(&press("Recent"));
    assert!(recent.contains("Likes green tea"), "{recent}");
    assert!(
        !recent.contains("coffee"),
        "another person's memory: {recent}"
    );
    let sub = text(&press("Subconscious"));
    assert!(sub.contains("Used to play chess (subconscious)"), "{sub}");
    assert!(!sub.contains("green tea"), "{sub}");
    assert!(text(&press("Pause")).starts_with("Learning paused"));
    let status = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/status?user={user}"), ""),
        200,
    );
    assert_eq!(status["learning_paused"], true, "{status}");
    assert_eq!(text(&press("Resume")), "Learning resumed.");

    // Clear asks first; nothing is deleted until Yes.
    let ask = press("Clear");
    assert_eq!(
        text(&ask),
        "Delete all 2 memories for good? This cannot be undone."
    );
    let yes = buttons(&ask)
        .into_iter()
        .find(|(l, _)| l.starts_with("Yes"))
        .expect("a Yes button")
        .1;
    let listed = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/memory?user={user}"), ""),
        200,
    );
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    telegram.press(ADMIN, ADMIN, ask.message_id.unwrap(), &yes);
    let calls = telegram.wait_for(WAIT, |calls| {
        texts_to(calls, ADMIN)
            .iter()
            .any(|t| t.starts_with("Cleared"))
    });
    let edited = calls
        .iter()
        .find(|c| c.method == "editMessageText" && text(c).starts_with("Cleared"))
        .expect("the confirmation is replaced by the result");
    assert_eq!(text(edited), "Cleared: 2 memories deleted.");
    assert_eq!(edited.params["message_id"], json!(ask.message_id.unwrap()));
    let listed = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/memory?user={user}"), ""),
        200,
    );
    assert_eq!(listed["items"].as_array().unwrap().len(), 0);
    let other = ok(
        daemon
            .person()
            .call("GET", "/api/brain/memory?user=telegram-200", ""),
        200,
    );
    assert_eq!(other["items"].as_array().unwrap().len(), 1, "{other}");

    // Search is not a bot button: typed, it sends people to the agent.
    telegram.message(ADMIN, ADMIN, "Ann", "/memory search tea");
    let search = text(&nth_sent(&telegram, ADMIN, n + 1));
    assert!(
        search.starts_with("Search is not in the bot's /memory menu"),
        "{search}"
    );
    assert!(
        calls
            .iter()
            .filter(|c| c.method == "answerCallbackQuery")
            .count()
            >= 7,
        "every press is answered"
    );
    daemon.stop();
}

#[test]
fn memory_forget_picks_one_memory_and_redacts_what_it_was_learned_from() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, queue) = OpenAi::queued();
    let daemon = start(dir.path(), &config(&telegram, &model));
    let user = format!("telegram-{ADMIN}");
    queue.push([Reply::Text("Noted.".into())]);
    telegram.message(ADMIN, ADMIN, "Ann", "I drink oolong tea every morning.");
    nth_sent(&telegram, ADMIN, 1);
    telegram.message(ADMIN, ADMIN, "Ann", "/new");
    let learned = text(&nth_sent(&telegram, ADMIN, 2));
    assert!(learned.starts_with("New conversation."), "{learned}");
    add_memory(&daemon, &user, "Likes chess", "durable");

    // `/memory forget <words>`: a button per matching memory, nothing forgotten yet.
    telegram.message(ADMIN, ADMIN, "Ann", "/memory forget oolong");
    let offer = nth_sent(&telegram, ADMIN, 3);
    assert_eq!(text(&offer), "Which memory should I forget?");
    let picks = buttons(&offer);
    assert_eq!(picks.len(), 1, "{picks:?}");
    assert!(picks[0].0.contains("oolong"), "{picks:?}");
    let memory_id = picks[0]
        .1
        .strip_prefix("m:f:")
        .expect("m:f:<id>")
        .to_string();

    // The pick asks; "Yes" forgets it and redacts the message it came from.
    telegram.press(ADMIN, ADMIN, offer.message_id.unwrap(), &picks[0].1);
    let calls = telegram.wait_for(WAIT, |calls| {
        calls.iter().any(|c| text(c).starts_with("Forget \""))
    });
    let ask = calls
        .iter()
        .find(|c| text(c).starts_with("Forget \""))
        .unwrap()
        .clone();
    assert!(text(&ask).ends_with("The messages it was learned from are redacted too."));
    let answers: Vec<String> = buttons(&ask).into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        answers,
        [
            format!("m:fy:{memory_id}"),
            format!("m:fk:{memory_id}"),
            "m:clear-no".to_string()
        ]
    );
    let path = format!("/api/brain/memory/{memory_id}?user={user}");
    ok(daemon.person().call("GET", &path, ""), 200);
    telegram.press(ADMIN, ADMIN, offer.message_id.unwrap(), &answers[0]);
    let calls = telegram.wait_for(WAIT, |calls| {
        calls.iter().any(|c| text(c).starts_with("Forgotten"))
    });
    let done = calls
        .iter()
        .find(|c| text(c).starts_with("Forgotten"))
        .unwrap();
    assert!(text(done).contains("redacted"), "{}", text(done));
    assert_eq!(daemon.person().call("GET", &path, "").status, 404);
    let found = ok(
        daemon.person().call(
            "GET",
            &format!("/api/brain/memory/search?user={user}&q=oolong&scope=all"),
            "",
        ),
        200,
    );
    assert_eq!(found["items"], json!([]), "{found}");
    let left = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/memory?user={user}"), ""),
        200,
    );
    assert_eq!(left["items"].as_array().unwrap().len(), 1, "{left}");
    let log = ok(
        daemon
            .person()
            .call("GET", &format!("/api/brain/forgotten?user={user}"), ""),
        200,
    );
    assert_eq!(log["items"][0]["by"], "person", "{log}");
    daemon.stop();
}

#[test]
fn strangers_are_refused_and_skills_follow_the_roles() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, _queue) = OpenAi::queued();
    let daemon = start(dir.path(), &config(&telegram, &model));

    // A stranger: one fixed refusal, for messages and presses alike; nothing else.
    for message in ["hello", "/memory", "/skills", "/skills install x/y"] {
        telegram.message(STRANGER, STRANGER, "Eve", message);
    }
    telegram.press(STRANGER, STRANGER, 1, "m:clear-yes");
    let calls = telegram.wait_for(WAIT, |calls| {
        sent(calls, STRANGER).len() == 4 && calls.iter().any(|c| c.method == "answerCallbackQuery")
    });
    for call in sent(&calls, STRANGER) {
        assert_eq!(
            text(&call),
            "You are not on this bot's list of approved users; ask its admin to add you."
        );
        assert!(call.params["reply_markup"].is_null());
    }
    let refused_press = calls
        .iter()
        .find(|c| c.method == "answerCallbackQuery")
        .unwrap();
    assert!(
        refused_press.params["text"]
            .as_str()
            .unwrap()
            .starts_with("You are not on this bot's list")
    );
    assert!(model.requests().is_empty(), "a stranger reached the model");

    // /skills: the list for everyone; remove buttons for admins only.
    telegram.message(MEMBER, MEMBER, "Bob", "/skills");
    let member_list = nth_sent(&telegram, MEMBER, 1);
    assert!(
        text(&member_list).contains("installed"),
        "{}",
        text(&member_list)
    );
    assert!(buttons(&member_list).is_empty());
    telegram.message(ADMIN, ADMIN, "Ann", "/skills");
    let admin_list = nth_sent(&telegram, ADMIN, 1);
    assert_eq!(text(&admin_list), text(&member_list));
    let remove = buttons(&admin_list);
    assert!(!remove.is_empty(), "admins get remove buttons");
    assert!(
        remove
            .iter()
            .all(|(l, d)| l.starts_with("Remove ") && d.starts_with("s:r:"))
    );

    // Install and remove are for admins: refused for a member, typed or pressed.
    telegram.message(MEMBER, MEMBER, "Bob", "/skills install notes/tea");
    assert_eq!(
        text(&nth_sent(&telegram, MEMBER, 2)),
        "Only admins can install or remove skills."
    );
    let (_, data) = remove[0].clone();
    telegram.press(MEMBER, MEMBER, member_list.message_id.unwrap(), &data);
    assert_eq!(
        text(&nth_sent(&telegram, MEMBER, 3)),
        "Only admins can install or remove skills."
    );
    let id = data.strip_prefix("s:r:").unwrap().to_string();
    let skills = ok(daemon.get("/api/skills"), 200).to_string();
    assert!(skills.contains(&format!("\"{id}\"")), "still installed");

    // An admin's press removes it.
    telegram.press(ADMIN, ADMIN, admin_list.message_id.unwrap(), &data);
    let removed = text(&nth_sent(&telegram, ADMIN, 2));
    assert!(
        removed.contains(&id) && removed.to_lowercase().contains("removed"),
        "{removed}"
    );
    let skills = ok(daemon.get("/api/skills"), 200).to_string();
    assert!(!skills.contains(&format!("\"{id}\"")), "{skills}");
    daemon.stop();
}

#[test]
fn conversations_are_answered_in_order_split_and_approved_by_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, queue) = OpenAi::queued();
    let daemon = start(dir.path(), &config(&telegram, &model));

    // Three messages at once in one chat: answered one after the other, in order.
    let echo = |queue: &Queue| {
        queue.push_fn(|request: &Value| {
            Reply::Text(format!("You said: {}", last_user_text(request)))
        })
    };
    for _ in 0..3 {
        echo(&queue);
    }
    for n in 1..=3 {
        telegram.message(MEMBER, MEMBER, "Bob", &format!("message {n}"));
    }
    let calls = telegram.wait_for(WAIT, |calls| sent(calls, MEMBER).len() >= 3);
    let answers: Vec<String> = sent(&calls, MEMBER).iter().map(text).collect();
    assert_eq!(
        answers,
        [
            "You said: message 1",
            "You said: message 2",
            "You said: message 3"
        ]
    );
    let offered = model.requests()[0]["tools"].to_string();
    assert!(
        !offered.contains("install_skill"),
        "install_skill is for admins only: {offered}"
    );

    // A long answer: split under Telegram's limit, nothing lost.
    let long: String = (0..900).map(|n| format!("line {n}\n")).collect();
    queue.push([Reply::Text(long.clone())]);
    telegram.message(MEMBER, MEMBER, "Bob", "tell me a lot");
    let calls = telegram.wait_for(WAIT, |calls| sent(calls, MEMBER).len() >= 5);
    let pieces: Vec<String> = sent(&calls, MEMBER)[3..].iter().map(text).collect();
    assert!(pieces.len() >= 2, "{}", pieces.len());
    assert!(pieces.iter().all(|p| p.encode_utf16().count() <= MAX_TEXT));
    assert_eq!(pieces.join("\n"), long.trim());

    // An admin asks to install pasted SKILL.md text: the gate asks, only they answer.
    let group = -1001;
    let skill_md = "---\nname: tea-notes\ndescription: Keeps tasting notes about tea.\nversion: 0.1.0\n---\n# Tea notes\nWrite down each tea.\n";
    queue.push([
        Reply::Tools(vec![(
            "install_skill".into(),
            json!({"skill_md": skill_md}),
        )]),
        Reply::Text("Installed tea-notes.".into()),
    ]);
    telegram.message(group, ADMIN, "Ann", "Install this skill please");
    let question = nth_sent(&telegram, group, 1);
    assert!(
        text(&question).starts_with("Allow install_skill"),
        "{}",
        text(&question)
    );
    let allow = buttons(&question)
        .into_iter()
        .find(|(l, _)| l == "Allow")
        .unwrap()
        .1;
    // Another member of the group cannot answer for her.
    telegram.press(group, MEMBER, question.message_id.unwrap(), &allow);
    let calls = telegram.wait_for(WAIT, |calls| {
        calls.iter().any(|c| {
            c.method == "answerCallbackQuery"
                && c.params["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Only the person"))
        })
    });
    assert!(!calls.iter().any(|c| text(c).contains("→ allowed")));
    telegram.press(group, ADMIN, question.message_id.unwrap(), &allow);
    let answer = text(&nth_sent(&telegram, group, 2));
    assert!(
        answer.contains("install_skill: installed `tea-notes` 0.1.0"),
        "the validation result is shown: {answer}"
    );
    assert!(answer.ends_with("Installed tea-notes."), "{answer}");
    let calls = telegram.calls();
    assert!(
        calls
            .iter()
            .any(|c| c.method == "editMessageText" && text(c).ends_with("→ allowed")),
        "the question shows its answer"
    );
    let skill = ok(daemon.get("/api/skills"), 200).to_string();
    assert!(skill.contains("tea-notes"), "{skill}");

    // Refused: the model is told, nothing installed.
    let other = skill_md.replace("tea-notes", "coffee-notes");
    queue.push([
        Reply::Tools(vec![("install_skill".into(), json!({"skill_md": other}))]),
        Reply::Text("Understood, not installed.".into()),
    ]);
    telegram.message(group, ADMIN, "Ann", "and this one");
    let question = nth_sent(&telegram, group, 3);
    let refuse = buttons(&question)
        .into_iter()
        .find(|(l, _)| l == "Refuse")
        .unwrap()
        .1;
    telegram.press(group, ADMIN, question.message_id.unwrap(), &refuse);
    let answer = text(&nth_sent(&telegram, group, 4));
    assert!(
        answer.contains("install_skill: refused: the user said no"),
        "{answer}"
    );
    let last = model.requests().pop().unwrap().to_string();
    assert!(last.contains("refused-by-user"), "{last}");
    let skills = ok(daemon.get("/api/skills"), 200).to_string();
    assert!(!skills.contains("coffee-notes"), "{skills}");

    // The person's conversation goes on: earlier messages come with each request.
    let history = model.requests()[2]["messages"].to_string();
    assert!(
        history.contains("message 1") && history.contains("You said: message 2"),
        "{history}"
    );
    daemon.stop();
}

#[test]
fn without_a_model_commands_work_and_chat_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let config = format!(
        "channels:\n  telegram:\n    tokenEnv: {TOKEN_ENV}\n    baseUrl: {}\n    pollSeconds: 1\n  bot:\n    approvedUsers: [{MEMBER}]\n",
        telegram.base_url()
    );
    let daemon = start(dir.path(), &config);
    telegram.message(MEMBER, MEMBER, "Bob", "hello?");
    let answer = text(&nth_sent(&telegram, MEMBER, 1));
    assert!(answer.contains("llm.baseUrl and llm.model"), "{answer}");
    telegram.message(MEMBER, MEMBER, "Bob", "/memory overview");
    let overview = text(&nth_sent(&telegram, MEMBER, 2));
    assert!(overview.starts_with("Second Brain: on"), "{overview}");
    daemon.stop();
}

#[test]
fn skills_search_shows_the_top_five_with_their_pages_and_buttons_by_role() {
    let registry = Listening::registry(&fixtures().join("registry-mirror"));
    let registry_url = format!("http://{}", registry.addr);
    let dir = tempfile::tempdir().unwrap();
    let telegram = Telegram::start(TOKEN);
    let (model, _queue) = OpenAi::queued();
    let config = format!(
        "{}skills:\n  registry: {registry_url}\n",
        config(&telegram, &model)
    );
    let daemon = start(dir.path(), &config);

    telegram.message(MEMBER, MEMBER, "Bob", "/skills search audit logging");
    let found = nth_sent(&telegram, MEMBER, 1);
    let pages = text(&found)
        .matches(&format!("{registry_url}/skills/"))
        .count();
    assert!((1..=5).contains(&pages), "{}", text(&found));
    let member_buttons = buttons(&found);
    assert_eq!(member_buttons.len(), pages, "{member_buttons:?}");
    assert!(
        member_buttons
            .iter()
            .all(|(l, d)| l.starts_with("View ") && d.starts_with("s:v:"))
    );

    telegram.message(ADMIN, ADMIN, "Ann", "/skills search audit logging");
    let found = nth_sent(&telegram, ADMIN, 1);
    let install = buttons(&found)
        .into_iter()
        .find(|(l, _)| l.starts_with("Install "))
        .expect("admins get Install buttons");
    let id = install.1.strip_prefix("s:i:").unwrap().to_string();
    // A member's View press shows the details with the page.
    telegram.press(MEMBER, MEMBER, 1, &format!("s:v:{id}"));
    let view = text(&nth_sent(&telegram, MEMBER, 2));
    assert!(
        view.contains(&format!("{registry_url}/skills/{id}")),
        "{view}"
    );
    // The admin's Install press installs it.
    telegram.press(ADMIN, ADMIN, found.message_id.unwrap(), &install.1);
    let installed = text(&nth_sent(&telegram, ADMIN, 2));
    assert!(installed.contains("installed"), "{installed}");
    let slug = id.rsplit('/').next().unwrap();
    let skills = ok(daemon.get("/api/skills"), 200).to_string();
    assert!(skills.contains(slug), "{skills}");
    daemon.stop();
}

//! The agent loop against a STAND-IN model endpoint (`standin::openai`: a loopback
//! server speaking OpenAI's chat-completions protocol, scripted by each test, since no
//! model can run here), over the real services of a data directory (`App::open`: the
//! Second Brain, the skills with the built-ins, the gate and its audit log, the
//! strategies). The person is played by [`Person`], the channel side of a turn: it
//! collects what was streamed and answers the gate's questions as scripted.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engram::agent::{Agent, AgentError, Ask, Chat, ChatIo, Stopped, ToolEvent};
use engram::app::App;
use engram::gate::{TurnState, Verdict};
use engram::memory::NewMemory;
use engram::paths::DataDir;
use engram_e2e::standin::http::{Request, Response, Server};
use engram_e2e::standin::openai::{OpenAi, Queue, Reply};
use engram_strategies::model::MemoryType;
use serde_json::{Value, json};

/// The person in the chat.
#[derive(Default)]
struct Person {
    said: String,
    events: Vec<String>,
    asked: Vec<String>,
    answers: VecDeque<bool>,
}

impl Person {
    fn answering(answers: &[bool]) -> Person {
        Person {
            answers: answers.iter().copied().collect(),
            ..Person::default()
        }
    }
}

impl ChatIo for Person {
    fn text(&mut self, piece: &str) {
        self.said.push_str(piece);
    }

    fn tool(&mut self, event: &ToolEvent) {
        self.events.push(event.line());
    }

    async fn approve(&mut self, ask: &Ask) -> bool {
        self.asked.push(ask.summary());
        self.answers.pop_front().unwrap_or(false)
    }
}

/// A model scripted by a queue: each request takes the next reply.
struct Model {
    server: OpenAi,
    queue: Queue,
}

impl Model {
    fn start() -> Model {
        let (server, queue) = OpenAi::queued();
        Model { server, queue }
    }

    fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.queue.push(replies);
    }

    fn requests(&self) -> Vec<Value> {
        self.server.requests()
    }
}

fn tools(calls: &[(&str, Value)]) -> Reply {
    Reply::Tools(
        calls
            .iter()
            .map(|(name, args)| (name.to_string(), args.clone()))
            .collect(),
    )
}

/// The data directory with `config` as its config.yaml, opened as `engram chat` does.
fn open(dir: &Path, config: &str) -> (App, Agent) {
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let app = App::open(DataDir::new(dir.to_path_buf())).expect("open the data directory");
    let agent = Agent::new(
        app.turns.clone(),
        app.memory.clone(),
        app.strategies.clone(),
        app.config.clone(),
    );
    (app, agent)
}

fn llm(base_url: &str, extra: &str) -> String {
    format!("llm:\n  baseUrl: {base_url}\n  model: standin-model\n  timeoutSeconds: 5\n{extra}")
}

fn never() -> std::future::Pending<()> {
    std::future::pending()
}

/// The tool messages of a request, as (tool_call_id, content).
fn tool_messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn system(request: &Value) -> String {
    let first = &request["messages"][0];
    assert_eq!(first["role"], "system");
    first["content"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_carries_memory_and_skills_records_both_sides_and_is_learned_from() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::start();
    let (app, agent) = open(dir.path(), &llm(&model.server.base_url(), ""));
    app.memory
        .add(
            "default",
            NewMemory {
                memory_type: MemoryType::Preference,
                summary: "Likes green tea".into(),
                detail: None,
                evidence: None,
                scope: None,
                confidence: None,
                importance: None,
                holder: None,
                attribute: None,
            },
        )
        .unwrap();
    let mut chat = Chat::new("default", "terminal");

    // Memory in the system prompt, the answer streamed, both sides recorded.
    model.script([Reply::Text(
        "You like green tea, mostly in the morning.".into(),
    )]);
    let mut person = Person::default();
    let reply = agent
        .reply(&mut chat, "Which tea do I like best?", &mut person, never())
        .await
        .expect("an answer");
    assert_eq!(reply.text, "You like green tea, mostly in the morning.");
    assert_eq!(person.said, reply.text, "streamed as it came");
    assert_eq!(reply.invoked, None);
    assert!(
        reply.message_id.is_some() && reply.reply_id.is_some(),
        "{reply:?}"
    );
    let first = &model.requests()[0];
    assert_eq!(first["model"], "standin-model");
    assert_eq!(first["stream"], true);
    assert!(
        system(first).contains("- [preference, today] Likes green tea"),
        "{}",
        system(first)
    );
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "fetch_url",
            "install_skill",
            "read_skill_file",
            "save_memory",
            "search_memory"
        ]
    );
    let turn = app.turns.view(&reply.turn_id, "default").unwrap();
    assert_eq!(turn.state, TurnState::Ended);

    // A skill invoked: its body in context, the message without `/slug`, the earlier
    // exchange before it.
    model.script([Reply::Text("The guide has about 600 words.".into())]);
    let reply = agent
        .reply(
            &mut chat,
            "/word-stats how long is the writing guide",
            &mut Person::default(),
            never(),
        )
        .await
        .unwrap();
    assert_eq!(reply.invoked.as_deref(), Some("word-stats"));
    let second = &model.requests()[1];
    let prompt = system(second);
    assert!(
        prompt.contains("<skill name=\"word-stats\">\n# Word stats"),
        "{prompt}"
    );
    assert!(prompt.contains("scripts/word-stats.wasm"), "{prompt}");
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[1]["content"], "Which tea do I like best?");
    assert_eq!(messages[3]["content"], "how long is the writing guide");

    // Ending the conversation runs extraction on it.
    model.script([Reply::Text(
        "Nice, hiking is a great way to spend a weekend.".into(),
    )]);
    agent
        .reply(
            &mut chat,
            "I love hiking in the mountains.",
            &mut Person::default(),
            never(),
        )
        .await
        .unwrap();
    let conversation = chat.conversation_id().to_string();
    let ingested = agent
        .end_conversation(&mut chat)
        .await
        .unwrap()
        .expect("the Second Brain learns");
    assert_eq!(ingested.conversation_id, conversation);
    assert_eq!(ingested.skipped, None);
    assert!(ingested.extractor.is_some());
    assert!(!ingested.applied.is_empty(), "{ingested:?}");
    let found = app.memory.search("default", "hiking mountains", 5).unwrap();
    assert!(
        found
            .iter()
            .any(|hit| hit.record.summary.to_lowercase().contains("hiking")),
        "{found:?}"
    );
    assert_ne!(
        chat.conversation_id(),
        conversation,
        "a new conversation starts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_cross_the_gate_and_only_the_person_approves() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::start();
    let fetched = Arc::new(Mutex::new(0));
    let counter = fetched.clone();
    let target = Server::start(Arc::new(move |_: &Request| {
        *counter.lock().unwrap() += 1;
        Response::json(200, &json!({"secret": true}))
    }));
    let config = llm(
        &model.server.base_url(),
        "  maxToolRounds: 3\nnetwork:\n  allowPrivate: true\ntools:\n  policy:\n    read_skill_file: deny\n",
    );
    let (app, agent) = open(dir.path(), &config);
    // No skill is routed to here: each tool meets the operator's policy alone.
    for skill in ["screenshot", "tweet-notifier", "web-search", "word-stats"] {
        app.skills.deactivate(skill).unwrap();
    }
    let mut chat = Chat::new("default", "terminal");
    let save = json!({"type": "preference", "summary": "Prefers window seats on trains"});

    // An allowed tool runs; its result goes back to the model.
    model.script([
        tools(&[("search_memory", json!({"q": "window seats"}))]),
        Reply::Text("Nothing saved about that yet.".into()),
    ]);
    let mut person = Person::default();
    let reply = agent
        .reply(
            &mut chat,
            "Do you know where I sit on trains?",
            &mut person,
            never(),
        )
        .await
        .unwrap();
    assert_eq!(reply.invoked, None);
    assert_eq!(person.events, ["search_memory: done"]);
    assert!(person.asked.is_empty());
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_messages(&requests[1]),
        [("call_0".to_string(), "{\"items\":[]}".to_string())]
    );
    let assistant = &requests[1]["messages"].as_array().unwrap()[2];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "search_memory"
    );
    let view = app.turns.view(&reply.turn_id, "default").unwrap();
    let decision = &view.decisions[0];
    assert_eq!(
        (decision.caller.as_str(), decision.tool.as_str()),
        ("channel:terminal", "search_memory")
    );
    assert_eq!(decision.decision, Verdict::Allow);

    // An asked tool: the person says yes, it runs, the approval is theirs.
    model.script([
        tools(&[("save_memory", save.clone())]),
        Reply::Text("Saved.".into()),
    ]);
    let mut person = Person::answering(&[true]);
    let reply = agent
        .reply(
            &mut chat,
            "Remember that I prefer window seats on trains.",
            &mut person,
            never(),
        )
        .await
        .unwrap();
    assert_eq!(
        person.asked,
        [format!("save_memory {save}")],
        "asked once, with the arguments"
    );
    assert_eq!(person.events, ["save_memory: done"]);
    let saved = app.memory.search("default", "window seats", 5).unwrap();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let view = app.turns.view(&reply.turn_id, "default").unwrap();
    let callers: Vec<(&str, &str)> = view
        .decisions
        .iter()
        .map(|d| (d.caller.as_str(), d.code.as_str()))
        .collect();
    // Newest first: the run after the approval, the approval, the ask.
    assert_eq!(
        callers,
        [
            ("channel:terminal", "approved"),
            ("person:terminal", "approved"),
            ("channel:terminal", "policy-ask"),
        ]
    );

    // An asked tool the person refuses: it never runs, the model hears why.
    model.script([
        tools(&[(
            "fetch_url",
            json!({"url": format!("{}/private", target.url())}),
        )]),
        Reply::Text("All right, I will not fetch it.".into()),
    ]);
    let mut person = Person::answering(&[false]);
    let reply = agent
        .reply(
            &mut chat,
            "What is written at that address?",
            &mut person,
            never(),
        )
        .await
        .unwrap();
    assert_eq!(reply.invoked, None, "no skill grants fetch_url here");
    assert_eq!(person.asked.len(), 1);
    assert_eq!(person.events, ["fetch_url: refused: the user said no"]);
    assert_eq!(*fetched.lock().unwrap(), 0, "nothing was fetched");
    let last = model.requests().pop().unwrap();
    let (_, content) = tool_messages(&last).pop().unwrap();
    assert!(content.contains("refused-by-user"), "{content}");

    // A denied tool: no question, an error for the model.
    model.script([
        tools(&[("read_skill_file", json!({"path": "references/guide.md"}))]),
        Reply::Text("I cannot read that.".into()),
    ]);
    let mut person = Person::answering(&[true]);
    agent
        .reply(&mut chat, "Read me the guide file.", &mut person, never())
        .await
        .unwrap();
    assert!(person.asked.is_empty(), "a deny is not a question");
    assert_eq!(person.events.len(), 1);
    assert!(
        person.events[0].starts_with("read_skill_file: refused:"),
        "{:?}",
        person.events
    );
    let (_, content) = tool_messages(&model.requests().pop().unwrap())
        .pop()
        .unwrap();
    assert!(content.contains("operator-deny"), "{content}");

    // Not a host tool, and arguments that are not JSON: errors for the model.
    model.script([
        tools(&[("run_command", json!({"command": "ls"}))]),
        Reply::Text("I cannot run commands.".into()),
    ]);
    let mut person = Person::default();
    agent
        .reply(&mut chat, "List my files.", &mut person, never())
        .await
        .unwrap();
    assert_eq!(person.events.len(), 1);
    assert!(
        person.events[0].contains("not a host tool"),
        "{:?}",
        person.events
    );

    // A model that keeps calling tools is stopped at llm.maxToolRounds (3): four model
    // calls, three rounds run, and the turn is ended.
    let before = model.requests().len();
    model.script((0..10).map(|_| tools(&[("search_memory", json!({"q": "again"}))])));
    let mut person = Person::default();
    let reply = agent
        .reply(
            &mut chat,
            "Keep looking until you find it.",
            &mut person,
            never(),
        )
        .await
        .unwrap();
    assert_eq!(reply.stopped, Some(Stopped::ToolRounds(3)));
    assert_eq!(model.requests().len() - before, 4);
    assert_eq!(person.events.len(), 3);
    assert_eq!(
        app.turns.view(&reply.turn_id, "default").unwrap().state,
        TurnState::Ended
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_endpoint_garbage_and_silence_are_clear_errors_and_the_turn_ends() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::start();
    let (app, agent) = open(dir.path(), "");
    let mut chat = Chat::new("default", "terminal");

    // No model configured: nothing opened, the error says what to set.
    let e = agent
        .reply(&mut chat, "hello", &mut Person::default(), never())
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::NoModel(_)), "{e:?}");
    assert!(e.to_string().contains("llm.baseUrl and llm.model"), "{e}");

    // Nothing listening at llm.baseUrl.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (app2, agent) = (app, {
        std::fs::write(
            dir.path().join("config.yaml"),
            llm(&format!("http://127.0.0.1:{closed}/v1"), ""),
        )
        .unwrap();
        agent
    });
    let e = agent
        .reply(&mut chat, "hello again", &mut Person::default(), never())
        .await
        .unwrap_err();
    let AgentError::Model { turn_id, source } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(source.code(), "llm-unreachable", "{e}");
    assert!(e.to_string().contains("cannot be reached"), "{e}");
    assert_eq!(
        app2.turns.view(turn_id, "default").unwrap().state,
        TurnState::Ended
    );

    // Garbage of every kind, each named; a stall stopped by llm.timeoutSeconds (1).
    std::fs::write(
        dir.path().join("config.yaml"),
        llm(&model.server.base_url(), "").replace("timeoutSeconds: 5", "timeoutSeconds: 1"),
    )
    .unwrap();
    let raw = |status: u16, content_type: &str, body: &str| Reply::Raw {
        status,
        content_type: content_type.into(),
        body: body.into(),
        declared: true,
    };
    for (reply, code, needle) in [
        (
            raw(200, "text/event-stream", "data: {not json\n\n"),
            "llm-malformed",
            "not JSON",
        ),
        (
            raw(200, "text/html", "<html>Bad gateway</html>"),
            "llm-malformed",
            "<html>Bad gateway",
        ),
        (
            raw(200, "application/json", "{\"object\": \"list\"}"),
            "llm-malformed",
            "no `choices`",
        ),
        (
            raw(
                500,
                "application/json",
                "{\"error\": {\"message\": \"model exploded\"}}",
            ),
            "llm-http-status",
            "HTTP 500: model exploded",
        ),
        (
            Reply::Stall(Duration::from_secs(3)),
            "llm-timeout",
            "within 1s",
        ),
    ] {
        model.script([reply]);
        let e = agent
            .reply(&mut chat, "are you there?", &mut Person::default(), never())
            .await
            .unwrap_err();
        let AgentError::Model { turn_id, source } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(source.code(), code, "{e}");
        assert!(e.to_string().contains(needle), "{needle}: {e}");
        assert_eq!(
            app2.turns.view(turn_id, "default").unwrap().state,
            TurnState::Ended
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_installed_from_chat_by_url_or_pasted_text() {
    let dir = tempfile::tempdir().unwrap();
    let model = Model::start();
    let served = "---\nname: packing-list\ndescription: Builds a packing list for a trip.\nversion: 1.0.0\n---\n# Packing list\nAsk where and how long.\n";
    let site = Server::start(Arc::new(move |_: &Request| Response::Full {
        status: 200,
        content_type: "text/markdown".into(),
        body: served.as_bytes().to_vec(),
    }));
    let url = format!("{}/packing-list/SKILL.md", site.url());
    let (app, agent) = open(dir.path(), &llm(&model.server.base_url(), ""));
    let mut chat = Chat::new("default", "terminal");
    let pasted = "---\nname: tea-notes\ndescription: Keeps tasting notes about tea.\nversion: 0.1.0\n---\n# Tea notes\nWrite down each tea.\n";

    let install = |args: Value| tools(&[("install_skill", args)]);
    let run = async |agent: &Agent, chat: &mut Chat, args: Value, answers: &[bool]| {
        model.script([install(args), Reply::Text("Done.".into())]);
        let mut person = Person::answering(answers);
        agent
            .reply(chat, "Install this skill for me.", &mut person, never())
            .await
            .unwrap();
        let (_, content) = tool_messages(&model.requests().pop().unwrap())
            .pop()
            .unwrap();
        (person, content)
    };

    // Pasted text, approved: installed, and the person sees the result.
    let (person, content) = run(&agent, &mut chat, json!({"skill_md": pasted}), &[true]).await;
    assert_eq!(person.asked.len(), 1, "install_skill asks by default");
    assert_eq!(
        person.events,
        ["install_skill: installed `tea-notes` 0.1.0"]
    );
    assert!(content.contains("\"status\":\"installed\""), "{content}");
    let entry = app.skills.entry("tea-notes").unwrap();
    assert_eq!(entry.source.kind, engram::skills::SourceKind::Chat);

    // The same name again, without force: not replaced.
    let changed = pasted.replace("0.1.0", "0.2.0");
    let (person, content) = run(&agent, &mut chat, json!({"skill_md": changed}), &[true]).await;
    assert!(
        person.events[0].contains("already installed"),
        "{:?}",
        person.events
    );
    assert!(content.contains("force"), "{content}");
    assert_eq!(
        app.skills.entry("tea-notes").unwrap().version.as_deref(),
        Some("0.1.0")
    );

    // Invalid text: the validation's rule, nothing written.
    let invalid = "---\nname: Tea Notes!\ndescription: x\n---\nbody\n";
    let (person, _) = run(&agent, &mut chat, json!({"skill_md": invalid}), &[true]).await;
    assert!(
        person.events[0].starts_with("install_skill: failed:"),
        "{:?}",
        person.events
    );
    assert_eq!(
        app.skills.list().unwrap().skills.len(),
        5,
        "the 4 built-ins and tea-notes"
    );

    // A URL on loopback is refused by the address rules...
    let (person, content) = run(&agent, &mut chat, json!({"url": url}), &[true]).await;
    assert!(content.contains("private"), "{content}");
    assert!(person.events[0].contains("failed"), "{:?}", person.events);
    assert!(app.skills.entry("packing-list").is_err());
    // ... unless the operator allows private addresses.
    std::fs::write(
        dir.path().join("config.yaml"),
        llm(&model.server.base_url(), "network:\n  allowPrivate: true\n"),
    )
    .unwrap();
    let (person, _) = run(&agent, &mut chat, json!({"url": url}), &[true]).await;
    assert_eq!(
        person.events,
        ["install_skill: installed `packing-list` 1.0.0"]
    );
    let entry = app.skills.entry("packing-list").unwrap();
    assert_eq!(entry.source.url.as_deref(), Some(url.as_str()));

    // Refused by the person: nothing installed.
    let other = pasted.replace("tea-notes", "coffee-notes");
    let (person, _) = run(&agent, &mut chat, json!({"skill_md": other}), &[false]).await;
    assert_eq!(person.events, ["install_skill: refused: the user said no"]);
    assert!(app.skills.entry("coffee-notes").is_err());

    // Withheld from this person (a bot's non-admin): not offered, refused if called.
    chat.withhold(&["install_skill"]);
    let (person, content) = run(&agent, &mut chat, json!({"skill_md": other}), &[true]).await;
    assert!(person.asked.is_empty());
    assert!(content.contains("admins-only"), "{content}");
    assert!(app.skills.entry("coffee-notes").is_err());
    let offered = model.requests().pop().unwrap()["tools"].to_string();
    assert!(!offered.contains("install_skill"), "{offered}");
}

//! The turn service over real parts in a temp directory: the Second Brain, the skills
//! library with the built-ins seeded, the gate's audit log, and a runtime whose tool
//! gate is the service's [`PluginTools`]. What the REST suite (`tests/tests/turns.rs`)
//! cannot see from outside is checked here: what was audited, and the plugin path.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::config::{Config, ToolLevel};
use crate::credentials::Via;
use crate::described::Described;
use crate::embed::active::ActiveEncoder;
use crate::embed::models::Models;
use crate::events::EventBus;
use crate::gate::{Caller, FixedPolicy, Policy, ReasonCode, Verdict};
use crate::memory::open_memory;
use crate::paths::DataDir;
use crate::runtime::{
    HostServices, KvStore, NoMemories, RuntimeOptions, ToolCaller, ToolDenied, ToolGate,
};
use crate::time::SystemClock;

/// The agent acting for `u`, the user of most turns here.
const AGENT: Caller<'static> = Caller::Agent { user: "u" };

struct Fixture {
    _dir: tempfile::TempDir,
    plugin_tools: Arc<PluginTools>,
    turns: Arc<TurnService>,
    gate: Arc<Gate>,
    skills: Library,
}

/// The daemon's wiring (as `App::open` does it) under `policy`.
fn fixture(policy: Policy) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = DataDir::new(dir.path().to_path_buf());
    data.create().expect("data dir");
    let memory = Arc::new(open_memory(
        data.root(),
        &crate::storage::Storage::Files,
        None,
        &Config::default(),
        Arc::new(SystemClock),
        EventBus::default(),
    ));
    assert!(memory.brain().is_ok(), "the Second Brain opens");
    let skills = Library::open(data.skills_dir()).expect("library");
    crate::skills::seed_new_builtins(&skills).expect("seed");
    skills.scan().expect("scan");
    let gate = Arc::new(
        Gate::open(
            &data,
            Arc::new(FixedPolicy(Arc::new(policy))),
            Arc::new(SystemClock),
        )
        .expect("gate"),
    );
    let plugin_tools = Arc::new(PluginTools::default());
    let services = HostServices::new(
        Arc::new(NoMemories),
        plugin_tools.clone(),
        KvStore::in_memory().expect("kv"),
    );
    let runtime = Arc::new(Runtime::new(RuntimeOptions::default(), services).expect("runtime"));
    let config = Arc::new(ConfigFile::new(data.config_file()));
    // No model installed: the static table routes, as on a fresh install.
    let encoder = Arc::new(ActiveEncoder::new(Models::new(data.models_dir()), None));
    let turns = TurnService::new(
        gate.clone(),
        skills.clone(),
        memory,
        config,
        runtime,
        encoder,
        data.skill_vectors_dir(),
    );
    Fixture {
        _dir: dir,
        plugin_tools,
        turns,
        gate,
        skills,
    }
}

fn message(user: &str, text: &str) -> Message {
    Message {
        user: input::User::parse(user).expect("user"),
        text: input::Text::parse("message", text).expect("text"),
        conversation_id: None,
        channel: None,
        name: None,
        recall: true,
        opened_by: "agent".to_string(),
    }
}

/// Opens a turn that invokes no skill.
fn plain_turn(f: &Fixture, user: &str) -> String {
    let opened = f
        .turns
        .open(message(user, "hello there, how are you"), Invoke::Routed)
        .expect("open");
    assert!(opened.invoked.is_none(), "{opened:?}");
    opened.turn_id
}

/// The person grants the built-in `slug` the tools its SKILL.md asks for, as the
/// dashboard or `confirm-tools` does.
fn grant(f: &Fixture, slug: &str) {
    let file = f
        .skills
        .installed_skill(slug, false)
        .expect("installed")
        .skill
        .file_sha256
        .expect("readable");
    f.skills.confirm_tools(slug, &file).expect("confirm");
}

fn skill_turn(f: &Fixture, user: &str, skill: &str) -> String {
    f.turns
        .open(message(user, "go"), Invoke::Skill(skill))
        .expect("open")
        .turn_id
}

fn audited(f: &Fixture, user: &str, turn_id: &str) -> Vec<(String, ReasonCode)> {
    f.turns
        .view(turn_id, user)
        .expect("view")
        .decisions
        .into_iter()
        .map(|d| (d.tool, d.code))
        .collect()
}

fn refused(result: Result<ToolResult, TurnError>) -> (Verdict, ReasonCode) {
    match result {
        Err(TurnError::Refused { decision, .. }) => (decision.verdict, decision.code),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn open_with_a_forced_skill_invokes_it_whatever_the_router_says() {
    let f = fixture(Policy::default());
    let mut scheduled = message("alice", "hello there, how are you");
    scheduled.channel = Some(input::Channel::parse("schedule").expect("channel"));
    let opened = f
        .turns
        .open(scheduled, Invoke::Skill("tweet-notifier"))
        .expect("open");
    let invoked = opened.invoked.as_ref().expect("invoked");
    assert_eq!(invoked.slug, "tweet-notifier");
    assert_eq!(invoked.reason, "explicit");
    assert_eq!(invoked.confidence, None);
    assert_eq!(invoked.message, "hello there, how are you");
    let grants = |opened: &TurnOpened| -> Vec<(String, Verdict, ReasonCode)> {
        opened
            .grants
            .iter()
            .map(|g| (g.tool.clone(), g.decision, g.code))
            .collect()
    };
    let listed = [
        "schedule_task",
        "send_message",
        "save_memory",
        "search_memory",
        "fetch_url",
        "github_api",
    ];
    // A built-in the person never confirmed grants nothing: its tools ask (issue 30,
    // item 3), and forcing it is in the audit log under the one who forced it.
    let expect = |code: ReasonCode, verdict: Verdict| -> Vec<(String, Verdict, ReasonCode)> {
        listed
            .iter()
            .map(|tool| match *tool {
                "search_memory" => (tool.to_string(), Verdict::Allow, ReasonCode::PolicyAllow),
                _ => (tool.to_string(), verdict, code),
            })
            .collect()
    };
    assert_eq!(
        grants(&opened),
        expect(ReasonCode::SkillUnconfirmed, Verdict::Ask)
    );
    let forced = f
        .gate
        .audit()
        .list(&crate::gate::AuditQuery {
            turn_id: Some(opened.turn_id.clone()),
            ..Default::default()
        })
        .expect("audit")
        .items;
    assert_eq!(forced.len(), 1, "{forced:?}");
    assert_eq!(forced[0].code, ReasonCode::SkillForced);
    assert_eq!(forced[0].caller, "agent");
    assert!(forced[0].reason.contains("nothing"), "{:?}", forced[0]);
    // Once the person grants them, they are allowed while it is invoked.
    grant(&f, "tweet-notifier");
    let granted = f
        .turns
        .open(message("alice", "go"), Invoke::Skill("tweet-notifier"))
        .expect("open");
    assert_eq!(
        grants(&granted),
        expect(ReasonCode::SkillGrant, Verdict::Allow)
    );
    // No router ran, so no candidates: the catalog is by slug.
    let slugs: Vec<&str> = opened.catalog.iter().map(|c| c.slug.as_str()).collect();
    let mut sorted = slugs.clone();
    sorted.sort_unstable();
    assert_eq!(slugs, sorted);
    assert_eq!(opened.catalog_total, opened.catalog.len());
    let view = f.turns.view(&opened.turn_id, "alice").expect("view");
    // To another user, the turn does not exist.
    assert!(matches!(
        f.turns.view(&opened.turn_id, "bob"),
        Err(TurnError::Gate(GateError::UnknownTurn(_)))
    ));
    assert_eq!(view.turn.channel.as_deref(), Some("schedule"));
    assert_eq!(
        view.turn.skill.as_ref().map(|s| s.skill.as_str()),
        Some("tweet-notifier")
    );
    // The same message routed invokes nothing.
    plain_turn(&f, "alice");

    // A skill gone or inactive has its own variant (the scheduler's skill-missing and
    // skill-inactive).
    let missing = f
        .turns
        .open(message("alice", "go"), Invoke::Skill("gone"))
        .expect_err("missing");
    assert!(matches!(&missing, TurnError::SkillMissing(s) if s == "gone"));
    f.skills.deactivate("web-search").expect("deactivate");
    let inactive = f
        .turns
        .open(message("alice", "go"), Invoke::Skill("web-search"))
        .expect_err("inactive");
    assert!(matches!(&inactive, TurnError::SkillInactive(s) if s == "web-search"));
    // A blank message is no message a turn can be opened for.
    assert!(matches!(
        input::Text::parse("message", " \n"),
        Err(TurnError::Invalid {
            field: "message",
            ..
        })
    ));
}

#[test]
fn an_agent_run_tool_is_refused_before_the_gate_records_anything() {
    let f = fixture(Policy::default().with_level("my_tool", ToolLevel::Allow));
    // tweet-notifier lists send_message, granted: the gate would allow it in this turn.
    grant(&f, "tweet-notifier");
    let t = skill_turn(&f, "u", "tweet-notifier");
    let plain = plain_turn(&f, "u");
    for (turn, tool) in [(&t, "send_message"), (&plain, "cd"), (&plain, "my_tool")] {
        let run = f
            .turns
            .run_host_tool(AGENT, Some(turn), tool, json!({}), None);
        assert!(
            matches!(&run, Err(TurnError::NotAHostTool(name)) if name == tool),
            "{tool}: {run:?}"
        );
        assert_eq!(
            run.map(|_| ()).expect_err("refused").describe().code,
            "not-a-host-tool"
        );
    }
    // Only the forcing of the skill itself was recorded.
    assert_eq!(
        audited(&f, "u", &t),
        [(
            crate::gate::FORCED_SKILL.to_string(),
            ReasonCode::SkillForced
        )]
    );
    assert_eq!(audited(&f, "u", &plain), []);
    // The agent's own way to use it is authorize, which decides and audits.
    let decision = f
        .turns
        .authorize(AGENT, &t, "send_message", &json!({}))
        .expect("authorize");
    assert_eq!(decision.code, ReasonCode::SkillGrant);
    // A name the gate does not know is its deny, audited as such.
    assert_eq!(
        refused(
            f.turns
                .run_host_tool(AGENT, Some(&t), "made_up", json!({}), None)
        ),
        (Verdict::Deny, ReasonCode::UnknownTool)
    );
    assert_eq!(
        audited(&f, "u", &t),
        [
            ("made_up".to_string(), ReasonCode::UnknownTool),
            ("send_message".to_string(), ReasonCode::SkillGrant),
            (
                crate::gate::FORCED_SKILL.to_string(),
                ReasonCode::SkillForced
            ),
        ]
    );
    // An allowed host tool runs, for the turn's user.
    let ran = f
        .turns
        .run_host_tool(AGENT, Some(&t), "search_memory", json!({"q": "tea"}), None)
        .expect("runs");
    assert_eq!(ran.decision.code, ReasonCode::PolicyAllow);
    assert_eq!(ran.result, json!({"items": []}));
}

#[test]
fn ask_is_a_deny_for_a_plugin_and_an_approval_request_for_the_agent() {
    let f = fixture(Policy::default());
    let t = plain_turn(&f, "u");
    let save = json!({"type": "preference", "summary": "Likes green tea"});
    let plugin = Caller::Plugin {
        name: "skill:x/y",
        user: "u",
    };
    assert_eq!(
        refused(
            f.turns
                .run_host_tool(plugin, Some(&t), "save_memory", save.clone(), None)
        ),
        (Verdict::Deny, ReasonCode::ApprovalUnavailable)
    );
    let asked = f
        .turns
        .run_host_tool(AGENT, Some(&t), "save_memory", save.clone(), None)
        .expect_err("asks");
    assert_eq!(asked.describe().code, "approval-required");
    // The agent cannot approve for itself: refused, and nothing is granted.
    let refused_approval = f
        .turns
        .approve(&t, "u", "save_memory", None, &Principal::Agent)
        .expect_err("the agent cannot approve");
    assert_eq!(refused_approval.describe().code, "person-required");
    assert_eq!(
        f.turns
            .run_host_tool(AGENT, Some(&t), "save_memory", save.clone(), None)
            .expect_err("still asks")
            .describe()
            .code,
        "approval-required"
    );
    // Once the person approves, both may.
    f.turns
        .approve(
            &t,
            "u",
            "save_memory",
            None,
            &Principal::Person(Via::Dashboard),
        )
        .expect("approve");
    let saved = f
        .turns
        .run_host_tool(plugin, Some(&t), "save_memory", save, None)
        .expect("saved");
    assert_eq!(saved.decision.code, ReasonCode::Approved);
    assert_eq!(saved.result["evidence"], "direct");
}

#[test]
fn run_script_needs_an_open_turn_that_invokes_a_skill() {
    let f = fixture(Policy::default());
    let plain = plain_turn(&f, "u");
    assert!(matches!(
        f.turns.run_script(&plain, "u", "word-stats", Value::Null),
        Err(TurnError::NoSkillInvoked)
    ));
    let t = skill_turn(&f, "u", "web-search");
    assert!(matches!(
        f.turns.run_script(&t, "u", "word-stats", Value::Null),
        Err(TurnError::UnknownScript { .. })
    ));
    assert!(matches!(
        f.turns.run_script(&t, "u", "../x", Value::Null),
        Err(TurnError::Invalid { field: "name", .. })
    ));
    f.turns.end(&t, "u", None).expect("end");
    assert!(matches!(
        f.turns.run_script(&t, "u", "word-stats", Value::Null),
        Err(TurnError::Gate(GateError::TurnEnded(_)))
    ));
    assert!(matches!(
        f.turns
            .run_script("turn_nope", "u", "word-stats", Value::Null),
        Err(TurnError::Gate(GateError::UnknownTurn(_)))
    ));
    // Nothing of this was a gate decision.
    assert_eq!(audited(&f, "u", &plain), []);
}

#[test]
fn tools_invoke_from_a_plugin_takes_the_same_path() {
    let f = fixture(Policy::default().with_level("save_memory", ToolLevel::Deny));
    let caller = |turn_id: Option<&str>, user: &str| ToolCaller {
        plugin: "p".into(),
        user_id: user.into(),
        turn_id: turn_id.map(str::to_string),
        deadline: None,
    };
    let gate: &dyn ToolGate = &*f.plugin_tools;
    // Not attached yet: nothing to run tools with, so everything is denied.
    assert!(matches!(
        gate.invoke(&caller(None, "u"), "search_memory", "{}"),
        Err(ToolDenied::Denied(_))
    ));
    f.plugin_tools.attach(&f.turns);

    let t = skill_turn(&f, "u", "tweet-notifier");
    let plain = plain_turn(&f, "u");
    let denied = |r: Result<String, ToolDenied>, code: &str| match r {
        Err(ToolDenied::Denied(reason)) => assert!(reason.starts_with(code), "{reason}"),
        other => panic!("{other:?}"),
    };
    denied(
        gate.invoke(&caller(None, "u"), "search_memory", "{}"),
        "no-turn",
    );
    denied(
        gate.invoke(&caller(Some(&t), "mallory"), "search_memory", "{}"),
        "user-mismatch",
    );
    denied(
        gate.invoke(&caller(Some(&plain), "u"), "fetch_url", "{}"),
        "approval-unavailable",
    );
    denied(
        gate.invoke(&caller(Some(&t), "u"), "save_memory", "{}"),
        "operator-deny",
    );
    // Granted to the skill, but the agent's to run: refused, and not decided.
    denied(
        gate.invoke(&caller(Some(&t), "u"), "send_message", "{}"),
        "not-a-host-tool",
    );
    assert_eq!(
        gate.invoke(&caller(Some(&t), "u"), "Frobnicate", "{}"),
        Err(ToolDenied::UnknownTool("Frobnicate".into()))
    );
    assert_eq!(
        gate.invoke(&caller(Some(&t), "u"), "search_memory", r#"{"q":"tea"}"#),
        Ok(r#"{"items":[]}"#.to_string())
    );
    // The tool's own refusal is the tool's failure, with its message.
    match gate.invoke(&caller(Some(&t), "u"), "search_memory", r#"{"q":""}"#) {
        Err(ToolDenied::Failed(message)) => assert!(message.contains("args.q"), "{message}"),
        other => panic!("{other:?}"),
    }
    let page = f.gate.audit().list(&AuditQuery::default()).expect("list");
    let by_plugin: Vec<&str> = page
        .items
        .iter()
        .filter(|e| e.caller == "plugin:p")
        .map(|e| e.code.as_str())
        .collect();
    assert_eq!(
        by_plugin,
        [
            "policy-allow",
            "policy-allow",
            "unknown-tool",
            "operator-deny",
            "approval-unavailable",
            "user-mismatch",
            "no-turn",
        ]
    );

    // The runtime holds the handle, the daemon the service: no cycle keeps it alive.
    let weak = Arc::downgrade(&f.turns);
    drop(f.turns);
    assert!(weak.upgrade().is_none());
    assert!(matches!(
        f.plugin_tools
            .invoke(&caller(Some(&t), "u"), "search_memory", "{}"),
        Err(ToolDenied::Denied(_))
    ));
}

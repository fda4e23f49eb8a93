//! The audit log, the turns, the schedules and the import ledger on the storage seam
//! (issue 32): each store's scenario runs on a SQLite file and on a real PostgreSQL
//! server with the same answers; on PostgreSQL a person's transaction sees only that
//! person's rows even where a query forgets its filter; two daemons sharing one
//! database see the same turns, grants and approvals, and run a due schedule once.

use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

use engram::credentials::{Principal, Via};
use engram::events::EventBus;
use engram::gate::policy::{Policy, SkillGrant};
use engram::gate::turns::NewTurn;
use engram::gate::{
    AUDIT_PG_SCHEMA, AuditLog, AuditQuery, Caller, Decision, FixedPolicy, Gate, ReasonCode,
    Retention, TurnState, Verdict,
};
use engram::memory::import::ledger::{self, Ledger};
use engram::pg::PgSchema;
use engram::schedule::runner::run_due;
use engram::schedule::{NewCadence, NewSchedule, Schedule, Schedules};
use engram::sql::{Actor, Database, PgStore};
use engram::time::{MINUTE_MS, ManualClock};
use engram_e2e::pg::Owner;

const T0: i64 = 1_700_000_000_000;

/// What a query that forgot its `user_id` filter gets, acting for `actor` on the
/// store's own schema: `SELECT <column> FROM <table>`, sorted.
fn unfiltered(url: &str, schema: &'static PgSchema, actor: Actor<'_>, sql: &str) -> Vec<String> {
    let db = Database::postgres(PgStore::open(url, schema).expect("open"), 1).expect("connect");
    let mut seen = db
        .read(actor, |tx| {
            tx.query(sql, &[], |r| r.get::<Option<String>>(0))
        })
        .expect("read");
    seen.sort();
    seen.into_iter()
        .map(|v| v.unwrap_or_else(|| "(nobody)".into()))
        .collect()
}

// ---- the audit log ----

fn record(log: &AuditLog, at: i64, turn: &str, user: Option<&str>, tool: &str, allow: bool) -> i64 {
    let decision = if allow {
        Decision::new(Verdict::Allow, ReasonCode::PolicyAllow, "ok")
    } else {
        Decision::deny(ReasonCode::UnknownTool, "no such tool")
    };
    log.record(&engram::gate::audit::NewEntry {
        at,
        turn_id: Some(turn),
        user,
        skill: Some("web-search"),
        caller: "agent",
        tool,
        decision: &decision,
        args_summary: r#"{"q":"é"}"#,
    })
    .expect("record")
}

fn tools(log: &AuditLog, query: AuditQuery) -> Vec<String> {
    let page = log.list(&query).expect("list");
    page.items.into_iter().map(|e| e.tool).collect()
}

fn audit_scenario(log: &AuditLog) {
    // Eight decisions: alice's, bob's and one about nobody, in turn.
    let users = [Some("alice"), Some("bob"), None];
    let mut seqs = Vec::new();
    for i in 0..8 {
        let turn = if i % 2 == 0 { "turn_even" } else { "turn_odd" };
        seqs.push(record(
            log,
            i as i64 * 100,
            turn,
            users[i % 3],
            &format!("tool_{i}"),
            i % 2 == 0,
        ));
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(log.count().expect("count"), 8);

    // Everyone's, newest first, in pages of three.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = log
            .list(&AuditQuery {
                limit: 3,
                cursor: cursor.clone(),
                ..AuditQuery::default()
            })
            .expect("list");
        seen.extend(page.items.iter().map(|e| e.tool.clone()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let everyone: Vec<String> = (0..8).rev().map(|i| format!("tool_{i}")).collect();
    assert_eq!(seen, everyone);

    // One person's, and one turn of one person's.
    let alice = |turn: Option<&str>| {
        tools(
            log,
            AuditQuery {
                user: Some("alice".into()),
                turn_id: turn.map(str::to_string),
                ..AuditQuery::default()
            },
        )
    };
    assert_eq!(alice(None), ["tool_6", "tool_3", "tool_0"]);
    assert_eq!(alice(Some("turn_even")), ["tool_6", "tool_0"]);
    let page = log
        .list(&AuditQuery {
            user: Some("bob".into()),
            limit: 1,
            ..AuditQuery::default()
        })
        .expect("list");
    let entry = &page.items[0];
    assert_eq!(
        (
            entry.tool.as_str(),
            entry.user.as_deref(),
            entry.turn_id.as_deref()
        ),
        ("tool_7", Some("bob"), Some("turn_odd"))
    );
    assert_eq!(
        (entry.decision, entry.code),
        (Verdict::Deny, ReasonCode::UnknownTool)
    );
    assert_eq!(
        (
            entry.reason.as_str(),
            entry.skill.as_deref(),
            entry.args_summary.as_str(),
            entry.at
        ),
        ("no such tool", Some("web-search"), r#"{"q":"é"}"#, 700)
    );
    assert!(page.next_cursor.is_some());
    assert!(
        log.list(&AuditQuery {
            cursor: Some("not a cursor".into()),
            ..AuditQuery::default()
        })
        .is_err()
    );

    // The retention given at open: 5 rows, 1 s. Beyond the newest 5 first, then by age.
    assert_eq!(log.prune(700).expect("prune"), 3);
    assert_eq!(log.count().expect("count"), 5);
    assert_eq!(log.prune(1_450).expect("prune"), 2);
    assert_eq!(
        tools(log, AuditQuery::default()),
        ["tool_7", "tool_6", "tool_5"]
    );
    log.checkpoint().expect("checkpoint");
}

fn retention() -> Retention {
    Retention {
        max_rows: 5,
        max_age_ms: 1_000,
    }
}

#[test]
fn the_audit_log_answers_the_same_on_both_backends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gate").join("audit.db");
    audit_scenario(&AuditLog::open(&path, retention(), 0).expect("sqlite"));
    let reopened = AuditLog::open(&path, retention(), 0).expect("reopen");
    assert_eq!(reopened.count().expect("count"), 3, "persisted in the file");

    let Some(owner) = Owner::new("audit_on_both_backends") else {
        return;
    };
    audit_scenario(&AuditLog::postgres(&owner.url(), retention(), 0).expect("postgres"));
    let again = AuditLog::postgres(&owner.url(), retention(), 0).expect("again");
    assert_eq!(again.count().expect("count"), 3, "persisted on the server");
    // Opening prunes as of the time given: 10 s later, every row is too old.
    let later = AuditLog::postgres(&owner.url(), retention(), 10_000).expect("later");
    assert_eq!(later.count().expect("count"), 0);
}

#[test]
fn a_persons_audit_rows_are_theirs_alone_on_postgresql() {
    let Some(owner) = Owner::new("audit_rows_per_person") else {
        return;
    };
    let url = owner.url();
    let log = AuditLog::postgres(&url, Retention::default(), 0).expect("postgres");
    record(&log, 1, "turn_a", Some("alice"), "fetch_url", true);
    record(&log, 2, "turn_b", Some("bob"), "fetch_url", false);
    record(&log, 3, "turn_c", None, "search_memory", true);
    // A query that forgets its filter sees the person's rows only; the host's, all.
    let users = |actor| {
        unfiltered(
            &url,
            &AUDIT_PG_SCHEMA,
            actor,
            "SELECT user_id FROM decisions",
        )
    };
    assert_eq!(users(Actor::User("alice")), ["alice"]);
    assert_eq!(users(Actor::User("bob")), ["bob"]);
    assert_eq!(users(Actor::System), ["(nobody)", "alice", "bob"]);
    // The listing acts for the person it is filtered on: bob's turn is not in alice's.
    let alices = log
        .list(&AuditQuery {
            user: Some("alice".into()),
            turn_id: Some("turn_b".into()),
            ..AuditQuery::default()
        })
        .expect("list");
    assert!(alices.items.is_empty());
    // Acting for alice, a row for bob cannot be written either.
    let db = Database::postgres(PgStore::open(&url, &AUDIT_PG_SCHEMA).expect("open"), 1)
        .expect("connect");
    let write_for = |user: &str| {
        db.write(Actor::User("alice"), |tx| {
            tx.execute(
                "INSERT INTO decisions (at, user_id, caller, tool, decision, reason_code, reason)
                 VALUES (4, ?1, 'agent', 'x', 'allow', 'policy-allow', 'written')",
                &[user.into()],
            )
        })
    };
    assert!(write_for("bob").is_err(), "alice wrote bob's decision");
    assert_eq!(write_for("alice").expect("her own"), 1);
    assert_eq!(log.count().expect("count"), 4);
}

// ---- the turns ----

/// A daemon's gate on the database at `url`, on the shared clock.
fn gate_on(url: &str, clock: &ManualClock) -> Arc<Gate> {
    Arc::new(Gate::new(
        AuditLog::postgres(url, Retention::default(), T0).expect("audit"),
        Arc::new(FixedPolicy(Arc::new(Policy::default()))),
        Arc::new(clock.clone()),
    ))
}

fn fetch(url: &str) -> String {
    serde_json::json!({ "url": url }).to_string()
}

#[test]
fn two_daemons_see_one_turn_its_grants_approvals_and_end_on_postgresql() {
    let Some(owner) = Owner::new("turns_two_daemons") else {
        return;
    };
    let url = owner.url();
    let clock = ManualClock::new(T0);
    let (a, b) = (gate_on(&url, &clock), gate_on(&url, &clock));
    let turn = a
        .open_turn(NewTurn {
            user: "alice".into(),
            opened_by: "agent".into(),
            skill: Some(SkillGrant {
                skill: "web-search".into(),
                allowed_tools: vec!["fetch_url".into()],
                granted_tools: vec!["fetch_url".into()],
            }),
            destinations: vec!["a.example".into()],
            ..NewTurn::default()
        })
        .expect("open");
    let code = |gate: &Gate, tool: &str, args: &str| {
        let d = gate.decide(&turn.id, "alice", tool, args);
        (d.verdict, d.code)
    };

    // The grant opened through A is in force through B; what B's call read marks the
    // turn for A: a send to a new destination now asks, on either daemon.
    assert_eq!(
        code(&b, "fetch_url", &fetch("https://a.example/page")),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    let leak = fetch("https://b.example/?q=secret");
    assert_eq!(
        code(&a, "fetch_url", &leak),
        (Verdict::Ask, ReasonCode::NewDestination)
    );
    // The person approves that call through B; A allows it (its host is now one the
    // turn may send to, under the skill's grant), and no other new destination.
    let args: serde_json::Value = serde_json::from_str(&leak).expect("json");
    b.approve(
        &turn.id,
        "alice",
        "fetch_url",
        Some(&args),
        &Principal::Person(Via::Dashboard),
    )
    .expect("approve");
    assert_eq!(
        code(&a, "fetch_url", &leak),
        (Verdict::Allow, ReasonCode::SkillGrant)
    );
    assert_eq!(
        code(&a, "fetch_url", &fetch("https://c.example/")),
        (Verdict::Ask, ReasonCode::NewDestination)
    );
    // The agent cannot approve its own request on either daemon.
    assert!(
        a.approve(&turn.id, "alice", "fetch_url", None, &Principal::Agent)
            .is_err()
    );

    // Another person's turn is no turn for them, and a plugin acting for them is told
    // it is someone else's.
    assert!(b.turn(&turn.id, "bob").expect("read").is_none());
    assert_eq!(
        b.decide(&turn.id, "bob", "fetch_url", "{}").code,
        ReasonCode::UnknownTurn
    );
    let plugin = Caller::Plugin {
        name: "p",
        user: "bob",
    };
    assert_eq!(
        a.decide_as(plugin, Some(&turn.id), "fetch_url", "{}").code,
        ReasonCode::UserMismatch
    );
    let users = |actor| unfiltered(&url, &AUDIT_PG_SCHEMA, actor, "SELECT user_id FROM turns");
    assert!(users(Actor::User("bob")).is_empty());
    assert_eq!(users(Actor::User("alice")), ["alice"]);

    // Both daemons deciding in the turn at once: every decision recorded, none lost
    // to the other, the turn's row intact.
    let before = a.audit().count().expect("count");
    std::thread::scope(|scope| {
        for gate in [&a, &b] {
            scope.spawn(|| {
                for _ in 0..40 {
                    gate.decide(&turn.id, "alice", "fetch_url", &fetch("https://a.example/"));
                }
            });
        }
    });
    assert_eq!(b.audit().count().expect("count"), before + 80);
    let (kept, state) = a.turn(&turn.id, "alice").expect("read").expect("kept");
    assert_eq!(state, TurnState::Open);
    assert_eq!(kept.approvals.len(), 1);
    assert_eq!(kept.destinations, ["a.example", "b.example"]);

    // Ended through A: revoked for B, and ending it again through B is noticed.
    a.end_turn(&turn.id, "alice").expect("end");
    assert_eq!(
        code(&b, "fetch_url", &fetch("https://a.example/")),
        (Verdict::Deny, ReasonCode::TurnEnded)
    );
    assert!(b.end_turn(&turn.id, "alice").is_err());
    // A daemon started after all this sees the same turn.
    let c = gate_on(&url, &clock);
    let (_, state) = c.turn(&turn.id, "alice").expect("read").expect("kept");
    assert_eq!(state, TurnState::Ended);

    // A caller's cap counts its open turns on every daemon, even when they open at
    // once: of 12 asked through two daemons together with a cap of 5 (and one open
    // already), exactly 4 more are let in.
    let capped = Policy::default().with_max_open_per_caller(5);
    let d = Gate::new(
        AuditLog::postgres(&url, Retention::default(), T0).expect("audit"),
        Arc::new(FixedPolicy(Arc::new(capped.clone()))),
        Arc::new(clock.clone()),
    );
    let e = Gate::new(
        AuditLog::postgres(&url, Retention::default(), T0).expect("audit"),
        Arc::new(FixedPolicy(Arc::new(capped))),
        Arc::new(clock.clone()),
    );
    let by = |user: &str| NewTurn {
        user: user.into(),
        opened_by: "mcp".into(),
        ..NewTurn::default()
    };
    d.open_turn(by("alice")).expect("first");
    let opened = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for gate in [&d, &e] {
            let (opened, by) = (&opened, &by);
            scope.spawn(move || {
                for _ in 0..6 {
                    if gate.open_turn(by("alice")).is_ok() {
                        opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(opened.into_inner(), 4);
    assert_eq!(
        e.open_turn(by("bob")).expect_err("at the cap").to_string(),
        "`mcp` holds 5 open turns, the most one caller may (tools.maxOpenTurnsPerCaller); end some or let them expire"
    );

    // The agent's deletes per hour are counted across daemons, even at once: of 8
    // asked through two daemons together with a limit of 5, exactly 5 are allowed.
    let agent = Caller::Agent { user: "carol" };
    let allowed = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for gate in [&a, &b] {
            let allowed = &allowed;
            scope.spawn(move || {
                for i in 0..4 {
                    if gate
                        .decide_agent_delete(agent, &format!("mem_{i}"), 5)
                        .is_ok()
                    {
                        allowed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(allowed.into_inner(), 5);
}

// ---- the schedules ----

fn every(user: &str, secs: u64, start_at: Option<i64>) -> NewSchedule {
    NewSchedule {
        skill: "web-search".into(),
        input: "rust news".into(),
        cadence: NewCadence::Every(secs),
        user: user.into(),
        start_at,
    }
}

/// The same calls on either backend. The store's clock (a manual one on SQLite, the
/// server's on PostgreSQL) is read through the store.
fn schedules_scenario(store: &Schedules) {
    let now = store.now_ms().expect("now");
    let alices = store.create(every("alice", 60, None)).expect("create");
    assert!(alices.id.starts_with("sch_"));
    assert!(alices.next_run_at >= now, "due at once");
    let bobs = store
        .create(every("bob", 120, Some(now + 60 * MINUTE_MS)))
        .expect("create");
    let cron = store
        .create(NewSchedule {
            cadence: NewCadence::Cron("0 0 1 1 *".into()),
            ..every("alice", 60, None)
        })
        .expect("create");
    assert_eq!(
        (cron.every, cron.cron.as_deref()),
        (None, Some("0 0 1 1 *"))
    );
    assert!(
        store.create(every("alice", 59, None)).is_err(),
        "under a minute"
    );

    // Each person reads and deletes their own schedules only.
    assert_eq!(
        store.get(&alices.id, "alice").expect("get"),
        Some(alices.clone())
    );
    assert_eq!(store.get(&alices.id, "bob").expect("get"), None);
    assert!(!store.delete(&alices.id, "bob").expect("delete as bob"));
    let mut alice_ids = vec![alices.id.clone(), cron.id.clone()];
    alice_ids.sort();
    let first = store.list("alice", 1, None).expect("list");
    let rest = store
        .list("alice", 1, first.next_cursor.as_deref())
        .expect("list");
    let paged: Vec<String> = first
        .items
        .iter()
        .chain(&rest.items)
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(paged, alice_ids);
    assert_eq!(rest.next_cursor, None);
    assert_eq!(
        store.list("bob", 50, None).expect("list").items,
        std::slice::from_ref(&bobs)
    );

    // Alice's interval schedule is due; bob's and the yearly one are not.
    let now = store.now_ms().expect("now");
    let due: Vec<String> = store
        .due(now, 10)
        .expect("due")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(due, [alices.id.as_str()]);
    let events = EventBus::default();
    let mut opened = Vec::new();
    let opened_cell = Mutex::new(&mut opened);
    let pass = run_due(store, &events, |s: &Schedule| {
        opened_cell.lock().expect("lock").push(s.id.clone());
        Ok("turn_1".into())
    })
    .expect("run");
    assert_eq!(pass.fired, 1);
    assert_eq!(opened, [alices.id.as_str()]);
    let after = store.get(&alices.id, "alice").expect("get").expect("there");
    assert_eq!(after.next_run_at, alices.next_run_at + MINUTE_MS);
    assert_eq!(after.last_turn_id.as_deref(), Some("turn_1"));
    assert!(after.last_run_at.is_some_and(|at| at >= alices.next_run_at));
    // Run: not due again before its next slot.
    let pass = run_due(store, &events, |_| panic!("not due")).expect("run");
    assert_eq!(pass.fired + pass.failed, 0);

    assert!(store.delete(&alices.id, "alice").expect("delete"));
    assert_eq!(store.get(&alices.id, "alice").expect("get"), None);
    store.checkpoint().expect("checkpoint");
}

#[test]
fn the_schedules_answer_the_same_on_both_backends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schedule").join("schedules.db");
    let clock = ManualClock::new(T0);
    schedules_scenario(&Schedules::open(&path, Arc::new(clock.clone())).expect("sqlite"));
    let reopened = Schedules::open(&path, Arc::new(clock)).expect("reopen");
    assert_eq!(reopened.list("bob", 50, None).expect("list").items.len(), 1);

    let Some(owner) = Owner::new("schedules_on_both_backends") else {
        return;
    };
    schedules_scenario(&Schedules::postgres(&owner.url()).expect("postgres"));
    let again = Schedules::postgres(&owner.url()).expect("again");
    assert_eq!(again.list("bob", 50, None).expect("list").items.len(), 1);
}

#[test]
fn a_persons_schedules_are_theirs_alone_on_postgresql() {
    let Some(owner) = Owner::new("schedules_per_person") else {
        return;
    };
    let url = owner.url();
    let store = Schedules::postgres(&url).expect("postgres");
    store.create(every("alice", 60, None)).expect("create");
    store.create(every("bob", 60, None)).expect("create");
    let users = |actor| {
        unfiltered(
            &url,
            &engram::schedule::schema::PG_SCHEMA,
            actor,
            "SELECT user_id FROM schedules",
        )
    };
    assert_eq!(users(Actor::User("alice")), ["alice"]);
    assert_eq!(users(Actor::System), ["alice", "bob"]);
    // What is due is everyone's: the scheduler acts for the host there.
    let now = store.now_ms().expect("now");
    assert_eq!(store.due(now, 10).expect("due").len(), 2);
}

/// Two stores (two daemons, each opened by `open` on one database) read the same due runs, then claim them at the same
/// moment: each run is claimed once. Then two scheduler passes race over a fresh set:
/// each run's turn is opened once.
fn claim_race(open: impl Fn() -> Schedules) {
    let daemons = [open(), open()];
    const RUNS: usize = 20;
    for i in 0..RUNS {
        daemons[0]
            .create(every(if i % 2 == 0 { "alice" } else { "bob" }, 60, None))
            .expect("create");
    }
    let barrier = Barrier::new(2);
    let claimed: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = daemons
            .iter()
            .map(|store| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let now = store.now_ms().expect("now");
                    let due = store.due(now, 100).expect("due");
                    assert_eq!(due.len(), RUNS, "both read every run due");
                    barrier.wait();
                    due.iter()
                        .filter(|s| store.claim(s, now).expect("claim").is_some())
                        .count()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(claimed.iter().sum::<usize>(), RUNS, "claimed: {claimed:?}");

    // The runner itself: a second set of runs, due now, two passes at once.
    for s in daemons[0].due(i64::MAX, 100).expect("due") {
        daemons[0].delete(&s.id, &s.user).expect("delete");
    }
    for i in 0..RUNS {
        daemons[1]
            .create(every(if i % 2 == 0 { "alice" } else { "bob" }, 60, None))
            .expect("create");
    }
    let opened: Mutex<HashMap<String, usize>> = Mutex::new(HashMap::new());
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        for store in &daemons {
            let (opened, barrier) = (&opened, &barrier);
            scope.spawn(move || {
                barrier.wait();
                run_due(store, &EventBus::default(), |s: &Schedule| {
                    *opened
                        .lock()
                        .expect("lock")
                        .entry(s.id.clone())
                        .or_default() += 1;
                    Ok(format!("turn_{}", s.id))
                })
                .expect("pass")
            });
        }
    });
    let opened = opened.into_inner().expect("lock");
    assert_eq!(opened.len(), RUNS, "every due run was run");
    assert!(
        opened.values().all(|&n| n == 1),
        "a run opened twice: {opened:?}"
    );
}

#[test]
fn two_daemons_run_a_due_schedule_once_on_both_backends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schedules.db");
    let clock = ManualClock::new(T0);
    claim_race(|| Schedules::open(&path, Arc::new(clock.clone())).expect("sqlite"));

    let Some(owner) = Owner::new("schedules_claimed_once") else {
        return;
    };
    let url = owner.url();
    claim_race(|| Schedules::postgres(&url).expect("postgres"));
}

/// On PostgreSQL the server's clock decides what is due, whatever the daemon's says.
#[test]
fn the_servers_clock_decides_what_is_due_on_postgresql() {
    let Some(owner) = Owner::new("schedules_server_clock") else {
        return;
    };
    let store = Schedules::postgres(&owner.url()).expect("postgres");
    let before = store.now_ms().expect("now");
    let s = store.create(every("alice", 60, None)).expect("create");
    let after = store.now_ms().expect("now");
    assert!(
        before <= s.created_at && s.created_at <= after,
        "{before} {s:?} {after}"
    );
    assert_eq!(
        s.next_run_at, s.created_at,
        "due at once, by the server's clock"
    );
    let server_now: i64 = postgres::Client::connect(&owner.url(), postgres::NoTls)
        .expect("connect")
        .query_one(
            "SELECT CAST(floor(extract(epoch FROM now()) * 1000) AS BIGINT)",
            &[],
        )
        .expect("now")
        .get(0);
    assert!(server_now >= after);
}

// ---- the import ledger ----

fn ledger_scenario(ledger: &Ledger) {
    assert!(!ledger.has("alice", "chatgpt:c1").expect("has"));
    ledger.put("alice", "chatgpt:c1", "conv_1").expect("put");
    ledger.put("bob", "mem0:m1", "mem_1").expect("put");
    assert!(ledger.has("alice", "chatgpt:c1").expect("has"));
    assert!(
        !ledger.has("bob", "chatgpt:c1").expect("has"),
        "keys are per person"
    );
    assert!(!ledger.has("alice", "mem0:m1").expect("has"));
    // Recording a key again replaces what it became.
    ledger
        .put("alice", "chatgpt:c1", "conv_2")
        .expect("put again");
    assert!(ledger.has("alice", "chatgpt:c1").expect("has"));
}

#[test]
fn the_import_ledger_answers_the_same_on_both_backends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("imports.db");
    ledger_scenario(&Ledger::open(&path).expect("sqlite"));
    assert!(
        Ledger::open(&path)
            .expect("reopen")
            .has("bob", "mem0:m1")
            .expect("has")
    );

    let Some(owner) = Owner::new("ledger_on_both_backends") else {
        return;
    };
    let url = owner.url();
    ledger_scenario(&Ledger::postgres(&url).expect("postgres"));
    assert!(
        Ledger::postgres(&url)
            .expect("again")
            .has("bob", "mem0:m1")
            .expect("has")
    );
    // One row for alice's key, replaced, and it is hers alone.
    let became = |actor| {
        unfiltered(
            &url,
            &ledger::PG_SCHEMA,
            actor,
            "SELECT became FROM imported",
        )
    };
    assert_eq!(became(Actor::User("alice")), ["conv_2"]);
    assert_eq!(became(Actor::User("bob")), ["mem_1"]);
    assert_eq!(became(Actor::System), ["conv_2", "mem_1"]);
}

/// A skills directory on the team's database, announcing on `events`.
fn shared_library(url: &str, root: &std::path::Path, events: &EventBus) -> engram::skills::Library {
    let installs = engram::installs::Installs::postgres(url).expect("installs");
    engram::skills::Library::open(root.to_path_buf())
        .expect("library")
        .with_events(events.clone())
        .with_shared(installs.shared(engram::installs::Kind::Skill))
}

fn frob(version: &str) -> engram::skills::SkillPackage {
    engram::skills::SkillPackage::new(
        None,
        format!("---\nname: frob\ndescription: Frobnicates.\nversion: \"{version}\"\n---\n# Frob {version}\n")
            .into_bytes(),
        vec![("references/notes.md".into(), format!("notes {version}").into_bytes())],
    )
    .expect("package")
}

fn install(library: &engram::skills::Library, package: &engram::skills::SkillPackage) {
    library
        .install(
            package,
            engram::skills::Source::of(engram::skills::SourceKind::File),
            false,
            engram::skills::ToolConsent::Later,
        )
        .expect("install");
}

/// Two data directories on one database (issue 32, item 2): each change through one
/// is what the other serves at its next read, files included; a change made on top
/// of the other's starts from it (the later one wins, nothing is lost between); a
/// removal reaches a directory that was away; a row that does not check out is not
/// installed and does not stop the rest.
#[test]
fn two_skills_directories_on_one_database_serve_the_same_skills() {
    let Some(owner) = Owner::new("two_skills_directories") else {
        return;
    };
    let url = owner.url();
    let dirs = [(), ()].map(|()| tempfile::tempdir().expect("tempdir"));
    let events = EventBus::default();
    let mut heard = events.subscribe();
    let one = shared_library(&url, &dirs[0].path().join("skills"), &EventBus::default());
    let two = shared_library(&url, &dirs[1].path().join("skills"), &events);

    install(&one, &frob("1"));
    let entry = two.entry("frob").expect("installed through the other");
    assert_eq!(entry.version.as_deref(), Some("1"));
    assert_eq!(
        std::fs::read_to_string(dirs[1].path().join("skills/frob/references/notes.md"))
            .expect("its files too"),
        "notes 1"
    );
    let event = heard.try_recv().expect("announced where it was applied");
    assert_eq!(event.kind.as_str(), "skill.installed");

    // The other deactivates it; the first, without a read between, updates it: its
    // change starts from the deactivation, and both end with version 2, inactive.
    two.deactivate("frob").expect("deactivate");
    install(&one, &frob("2"));
    for library in [&one, &two] {
        let entry = library.entry("frob").expect("frob");
        assert_eq!(entry.version.as_deref(), Some("2"));
        assert!(!entry.active, "the deactivation was not lost");
    }
    assert_eq!(
        std::fs::read_to_string(dirs[1].path().join("skills/frob/references/notes.md"))
            .expect("notes"),
        "notes 2"
    );

    // Removed through one; installed again through the other afterwards: the later
    // install stands on both.
    one.remove("frob").expect("remove");
    assert!(two.entry("frob").is_err(), "removed through the other");
    assert!(!dirs[1].path().join("skills/frob").exists());
    install(&two, &frob("3"));
    assert_eq!(
        one.entry("frob").expect("back").version.as_deref(),
        Some("3")
    );

    // A directory that was away (a new one) takes the database's state as it is.
    let later = tempfile::tempdir().expect("tempdir");
    let three = shared_library(&url, &later.path().join("skills"), &EventBus::default());
    assert_eq!(
        three.entry("frob").expect("frob").version.as_deref(),
        Some("3")
    );

    // A row whose files do not match its digest (a corrupted database, another
    // writer): not installed, and what follows it still is.
    let db = Database::postgres(
        PgStore::open(&url, &engram::installs::PG_SCHEMA).expect("open"),
        1,
    )
    .expect("connect");
    db.write(Actor::System, |tx| {
        tx.execute(
            "UPDATE installs SET digest = 'not-the-digest', revision = revision + 100 WHERE name = 'frob'",
            &[],
        )?;
        tx.execute(
            "UPDATE revisions SET revision = revision + 100 WHERE kind = 'skill'",
            &[],
        )
    })
    .expect("tamper");
    let fresh = tempfile::tempdir().expect("tempdir");
    let four = shared_library(&url, &fresh.path().join("skills"), &EventBus::default());
    assert!(four.entry("frob").is_err(), "a row that does not check out");
    install(&one, &frob("4"));
    assert_eq!(
        four.entry("frob").expect("the next row").version.as_deref(),
        Some("4")
    );
}

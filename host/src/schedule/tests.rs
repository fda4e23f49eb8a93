//! The schedules store and the runner, on a manual clock.

use std::sync::Arc;

use super::runner::{Failure, run_due};
use super::*;
use crate::events::{EventBus, EventKind};
use crate::time::{Clock, MINUTE_MS, ManualClock};

const T0: i64 = 1_700_000_000_000;

fn open(dir: &std::path::Path, clock: &ManualClock) -> Schedules {
    Schedules::open(
        &dir.join("schedule").join("schedules.db"),
        Arc::new(clock.clone()),
    )
    .expect("open")
}

fn new(skill: &str, every: u64, start_at: Option<i64>) -> NewSchedule {
    NewSchedule {
        skill: skill.into(),
        input: "rust news".into(),
        cadence: NewCadence::Every(every),
        user: "default".into(),
        start_at,
    }
}

#[test]
fn schedule_is_due_at_creation_then_every_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = open(dir.path(), &clock);
    let s = store.create(new("web-search", 60, None)).expect("create");
    assert!(s.id.starts_with("sch_"), "{}", s.id);
    assert_eq!(s.next_run_at, T0);
    assert_eq!(store.due(T0, 10).expect("due"), vec![s.clone()]);

    let events = EventBus::default();
    let mut rx = events.subscribe();
    let pass = run_due(&store, &events, |_| Ok("turn_1".into())).expect("run");
    assert_eq!(pass.fired, 1);
    let event = rx.try_recv().expect("event");
    assert_eq!(event.kind, EventKind::ScheduleFired);
    assert_eq!(event.user, "default");
    assert_eq!(event.data["schedule_id"], s.id.as_str());
    assert_eq!(event.data["skill"], "web-search");
    assert_eq!(event.data["turn_id"], "turn_1");
    let after = store.get(&s.id, "default").expect("get").expect("there");
    assert_eq!(after.next_run_at, T0 + MINUTE_MS);
    assert_eq!(after.last_run_at, Some(T0));
    assert_eq!(after.last_turn_id.as_deref(), Some("turn_1"));

    // Nothing until the minute is up.
    clock.advance(MINUTE_MS - 1);
    let pass = run_due(&store, &events, |_| panic!("not due")).expect("run");
    assert_eq!(pass, Default::default());
    clock.advance(1);
    let pass = run_due(&store, &events, |_| Ok("turn_2".into())).expect("run");
    assert_eq!(pass.fired, 1);

    // Deleted: never again.
    // Another user's delete leaves it alone.
    assert!(!store.delete(&s.id, "alice").expect("delete as alice"));
    assert!(store.delete(&s.id, "default").expect("delete"));
    assert!(!store.delete(&s.id, "default").expect("delete twice"));
    clock.advance(10 * MINUTE_MS);
    let pass = run_due(&store, &events, |_| panic!("deleted")).expect("run");
    assert_eq!(pass, Default::default());
}

#[test]
fn schedule_start_at_defers_the_first_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = open(dir.path(), &clock);
    let s = store
        .create(new("web-search", 120, Some(T0 + 5 * MINUTE_MS)))
        .expect("create");
    assert!(store.due(T0, 10).expect("due").is_empty());
    clock.set(T0 + 5 * MINUTE_MS);
    assert_eq!(store.due(clock.now_ms(), 10).expect("due").len(), 1);
    // Refused intervals.
    for every in [0, 59] {
        assert!(matches!(
            store.create(new("web-search", every, None)),
            Err(ScheduleError::Invalid { field: "every", .. })
        ));
    }
    assert_eq!(
        store.list("default", 50, None).expect("list").items,
        vec![s]
    );
}

#[test]
fn schedule_failed_run_is_announced_and_the_schedule_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = open(dir.path(), &clock);
    let s = store.create(new("gone", 60, None)).expect("create");
    let events = EventBus::default();
    let mut rx = events.subscribe();
    let pass = run_due(&store, &events, |_| {
        Err(Failure {
            code: "skill-missing".into(),
            reason: "no installed skill named `gone`".into(),
        })
    })
    .expect("run");
    assert_eq!(pass.failed, 1);
    let event = rx.try_recv().expect("event");
    assert_eq!(event.kind, EventKind::ScheduleFailed);
    assert_eq!(event.data["code"], "skill-missing");
    assert_eq!(event.data["schedule_id"], s.id.as_str());
    let after = store.get(&s.id, "default").expect("get").expect("stays");
    assert!(after.enabled);
    assert_eq!(after.next_run_at, T0 + MINUTE_MS);
    assert!(
        after
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("gone"))
    );
    assert_eq!(after.last_turn_id, None);
    // Retried at the next slot, not on every pass.
    assert!(store.due(T0 + 1, 10).expect("due").is_empty());
}

#[test]
fn schedules_survive_a_reopen_and_page_by_cursor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let created: Vec<Schedule> = {
        let store = open(dir.path(), &clock);
        let mut created = Vec::new();
        for i in 0..5 {
            let mut n = new("web-search", 60 + i, None);
            n.user = if i % 2 == 0 { "default" } else { "alice" }.into();
            created.push(store.create(n).expect("create"));
        }
        let claim = store
            .claim(&created[0], T0)
            .expect("claim")
            .expect("claimed");
        store
            .record(
                &claim,
                &Outcome::Fired {
                    turn_id: "turn_x".into(),
                },
            )
            .expect("record");
        store.checkpoint().expect("checkpoint");
        created
    };
    let store = open(dir.path(), &clock);
    let first = store
        .get(&created[0].id, "default")
        .expect("get")
        .expect("kept");
    assert_eq!(first.last_turn_id.as_deref(), Some("turn_x"));
    assert_eq!(first.next_run_at, T0 + MINUTE_MS);
    assert_eq!(
        store.get(&created[1].id, "alice").expect("get"),
        Some(created[1].clone())
    );
    // One user never reads another's schedule.
    assert_eq!(store.get(&created[1].id, "default").expect("get"), None);

    let mut ids: Vec<String> = created
        .iter()
        .filter(|s| s.user == "default")
        .map(|s| s.id.clone())
        .collect();
    ids.sort();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list("default", 2, cursor.as_deref()).expect("list");
        seen.extend(page.items.iter().map(|s| s.id.clone()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    let alice = store.list("alice", 50, None).expect("list");
    assert_eq!(alice.items.len(), 2);
    assert!(alice.items.iter().all(|s| s.user == "alice"));
    assert!(store.get("sch_nope", "default").expect("get").is_none());
}

#[test]
fn cron_schedule_runs_at_its_matching_minutes_in_utc() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 2026-03-10T12:03:20Z, a Tuesday.
    let t0 = crate::time::rfc3339::parse("2026-03-10T12:03:20Z").expect("t0");
    let at = |text: &str| crate::time::rfc3339::parse(text).expect("time");
    let clock = ManualClock::new(t0);
    let store = open(dir.path(), &clock);
    let s = store
        .create(NewSchedule {
            cadence: NewCadence::Cron("*/5 9-17 * * MON-FRI".into()),
            ..new("web-search", 0, None)
        })
        .expect("create");
    assert_eq!(s.cron.as_deref(), Some("*/5 9-17 * * MON-FRI"));
    assert_eq!(s.every, None);
    assert_eq!(s.next_run_at, at("2026-03-10T12:05:00Z"));
    assert_eq!(store.get(&s.id, "default").expect("get"), Some(s.clone()));
    assert!(store.due(clock.now_ms(), 10).expect("due").is_empty());

    // Due at 12:05; a run a little late still moves on to 12:10.
    clock.set(at("2026-03-10T12:05:01Z"));
    let events = EventBus::default();
    let pass = run_due(&store, &events, |_| Ok("turn_1".into())).expect("run");
    assert_eq!(pass.fired, 1);
    let after = store.get(&s.id, "default").expect("get").expect("there");
    assert_eq!(after.next_run_at, at("2026-03-10T12:10:00Z"));
    assert_eq!(after.last_turn_id.as_deref(), Some("turn_1"));

    // Down over the evening: missed runs are skipped, the next is Wednesday 09:00.
    clock.set(at("2026-03-10T19:30:00Z"));
    run_due(&store, &events, |_| Ok("turn_2".into())).expect("run");
    let after = store.get(&s.id, "default").expect("get").expect("there");
    assert_eq!(after.next_run_at, at("2026-03-11T09:00:00Z"));
    // Run on Friday at the last slot of the day: Monday morning next.
    clock.set(at("2026-03-13T17:55:00Z"));
    run_due(&store, &events, |_| Ok("turn_3".into())).expect("run");
    let after = store.get(&s.id, "default").expect("get").expect("there");
    assert_eq!(after.next_run_at, at("2026-03-16T09:00:00Z"));

    // start_at: the first match at or after it.
    let later = store
        .create(NewSchedule {
            cadence: NewCadence::Cron("0 0 1 * *".into()),
            ..new("web-search", 0, Some(at("2026-05-01T00:00:00Z")))
        })
        .expect("create");
    assert_eq!(later.next_run_at, at("2026-05-01T00:00:00Z"));
}

#[test]
fn bad_cron_expressions_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = open(dir.path(), &clock);
    for (expr, words) in [
        ("0 0 31 2 *", "day-of-month"),
        ("61 * * * *", "minute"),
        ("* * * *", "5"),
    ] {
        match store.create(NewSchedule {
            cadence: NewCadence::Cron(expr.into()),
            ..new("web-search", 0, None)
        }) {
            Err(ScheduleError::Invalid {
                field: "cron",
                reason,
            }) => assert!(reason.contains(words), "{expr}: {reason}"),
            other => panic!("{expr}: {other:?}"),
        }
    }
    let far = crate::time::rfc3339::parse("9999-06-01T00:00:00Z").expect("time");
    assert!(matches!(
        store.create(NewSchedule {
            cadence: NewCadence::Cron("0 0 1 1 *".into()),
            ..new("web-search", 0, Some(far))
        }),
        Err(ScheduleError::Invalid {
            field: "start_at",
            ..
        })
    ));
    assert!(
        store
            .list("default", 50, None)
            .expect("list")
            .items
            .is_empty()
    );
}

#[test]
fn a_schedule_with_no_next_run_is_disabled_not_retried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let store = open(dir.path(), &clock);
    let s = store.create(new("web-search", 60, None)).expect("create");
    // An expression an edited database broke.
    let broken = Schedule {
        every: None,
        cron: Some("99 * * * *".into()),
        ..s.clone()
    };
    let claim = store.claim(&broken, T0).expect("claim").expect("claimed");
    let after = store
        .record(
            &claim,
            &Outcome::Fired {
                turn_id: "turn_1".into(),
            },
        )
        .expect("record")
        .expect("there");
    assert!(!after.enabled);
    let error = after.last_error.unwrap_or_default();
    assert!(
        error.contains("disabled") && error.contains("minute"),
        "{error}"
    );
    assert!(store.due(T0 + 10 * MINUTE_MS, 10).expect("due").is_empty());
}

#[test]
fn a_runs_turn_error_becomes_its_failure_code() {
    use crate::gate::GateError;
    use crate::turns::TurnError;
    let failure = Failure::from(TurnError::SkillMissing("gone".into()));
    assert_eq!(failure.code, "skill-missing");
    assert_eq!(failure.reason, "no installed skill named `gone`");
    let failure = Failure::from(TurnError::SkillInactive("web-search".into()));
    assert_eq!(failure.code, "skill-inactive");
    assert!(failure.reason.contains("web-search"), "{failure:?}");
    // Anything else keeps the code the error describes itself with (REST's and MCP's);
    // the host's own failures are `internal`, their details in the log.
    let full = Failure::from(TurnError::Gate(GateError::TooManyTurns { open: 10_000 }));
    assert_eq!(full.code, "too-many-turns");
    let internal = Failure::from(TurnError::Gate(GateError::Open {
        path: "/data/gate/audit.db".into(),
        reason: "disk full".into(),
    }));
    assert_eq!(internal.code, "internal");
    assert!(!internal.reason.contains("/data"), "{internal:?}");
}

#[test]
fn a_due_run_is_claimed_by_one_store_of_two_sharing_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let first = open(dir.path(), &clock);
    let second = open(dir.path(), &clock);
    let s = first.create(new("web-search", 60, None)).expect("create");
    // Both read it due before either claims it.
    let seen_by_first = first.due(T0, 10).expect("due");
    let seen_by_second = second.due(T0, 10).expect("due");
    assert_eq!(seen_by_first, seen_by_second);
    let won = first.claim(&seen_by_first[0], T0).expect("claim");
    let lost = second.claim(&seen_by_second[0], T0).expect("claim");
    assert!(won.is_some() && lost.is_none(), "{won:?} {lost:?}");
    let after = second.get(&s.id, "default").expect("get").expect("there");
    assert_eq!(after.next_run_at, T0 + MINUTE_MS);
    assert_eq!(after.last_run_at, Some(T0));
    // The next slot is claimed afresh, by whichever store reads it first.
    clock.advance(MINUTE_MS);
    let due = second.due(clock.now_ms(), 10).expect("due");
    assert!(
        second
            .claim(&due[0], clock.now_ms())
            .expect("claim")
            .is_some()
    );
    // Neither claims a schedule deleted after it was read.
    clock.advance(MINUTE_MS);
    let due = first.due(clock.now_ms(), 10).expect("due");
    assert!(second.delete(&s.id, "default").expect("delete"));
    assert_eq!(first.claim(&due[0], clock.now_ms()).expect("claim"), None);
}

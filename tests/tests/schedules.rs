//! End-to-end: scheduled skill runs (`/api/schedules...`) of the real `engram serve`:
//! a new schedule fires at once, its run is a turn with the skill invoked that
//! `GET /api/turns/{id}` knows, announced as `schedule.fired` on `GET /api/events`;
//! a run whose skill went inactive is `schedule.failed` and the schedule stays;
//! deleting stops it; a cron schedule shows its expression and the next matching
//! minute (UTC); bad input is a 422 problem; nothing without the token.

use std::time::{SystemTime, UNIX_EPOCH};

use engram_e2e::{Daemon, engram, next_event, ok, problem};
use serde_json::{Value, json};

fn create(daemon: &Daemon, body: Value) -> engram_e2e::Response {
    daemon.call("POST", "/api/schedules", &body.to_string())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

#[test]
fn a_schedule_fires_a_turn_with_its_skill_and_stops_when_deleted() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let mut events = daemon.open_stream("/api/events");

    let schedule = ok(
        create(
            &daemon,
            json!({"skill": "web-search", "every": 60, "input": "rust release notes"}),
        ),
        201,
    );
    let id = schedule["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("sch_"), "{schedule}");
    assert_eq!(schedule["skill"], "web-search");
    assert_eq!(schedule["every"], 60);
    assert_eq!(schedule["user"], "default");
    assert_eq!(schedule["enabled"], true);
    assert_eq!(
        schedule["next_run_at"], schedule["created_at"],
        "{schedule}"
    );
    assert!(schedule["last_run_at"].is_null());

    // The first run is due at creation: the scheduler fires it within seconds.
    let fired = next_event(&mut events, "schedule.fired");
    assert_eq!(fired["kind"], "schedule.fired");
    assert_eq!(fired["user"], "default");
    assert_eq!(fired["data"]["schedule_id"], id.as_str(), "{fired}");
    assert_eq!(fired["data"]["skill"], "web-search");
    let turn_id = fired["data"]["turn_id"]
        .as_str()
        .expect("turn_id")
        .to_string();
    assert!(turn_id.starts_with("turn_"), "{fired}");

    let turn = ok(daemon.get(&format!("/api/turns/{turn_id}")), 200);
    assert_eq!(turn["turn"]["skill"]["skill"], "web-search", "{turn}");
    assert_eq!(turn["turn"]["channel"], "schedule");
    assert_eq!(turn["turn"]["user"], "default");
    assert_eq!(turn["state"], "open");

    let after = ok(daemon.get(&format!("/api/schedules/{id}")), 200);
    assert_eq!(after["last_turn_id"], turn_id.as_str(), "{after}");
    assert!(after["last_run_at"].is_string());
    assert!(after["last_error"].is_null());
    assert!(after["next_run_at"].as_str() > after["last_run_at"].as_str());
    let list = ok(daemon.get("/api/schedules"), 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["items"][0]["id"], id.as_str());
    assert!(list["next_cursor"].is_null());

    // Deleted: gone, and never run again.
    ok(
        daemon.call("DELETE", &format!("/api/schedules/{id}"), ""),
        204,
    );
    problem(
        daemon.get(&format!("/api/schedules/{id}")),
        404,
        "not-found",
    );
    problem(
        daemon.call("DELETE", &format!("/api/schedules/{id}"), ""),
        404,
        "not-found",
    );
    let list = ok(daemon.get("/api/schedules"), 200);
    assert_eq!(list["items"], json!([]));
}

#[test]
fn a_run_whose_skill_went_inactive_fails_and_the_schedule_stays() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let mut events = daemon.open_stream("/api/events");
    let start_at = engram::time::rfc3339::format(now_ms() + 3_000);
    let schedule = ok(
        create(
            &daemon,
            json!({"skill": "web-search", "every": 3600, "input": "news", "start_at": start_at}),
        ),
        201,
    );
    let id = schedule["id"].as_str().expect("id").to_string();
    ok(
        daemon.call("POST", "/api/skills/web-search/deactivate", ""),
        200,
    );
    let failed = next_event(&mut events, "schedule.failed");
    assert_eq!(failed["data"]["schedule_id"], id.as_str(), "{failed}");
    assert_eq!(failed["data"]["code"], "skill-inactive", "{failed}");
    assert!(failed["data"]["reason"].is_string());
    let after = ok(daemon.get(&format!("/api/schedules/{id}")), 200);
    assert_eq!(after["enabled"], true);
    assert!(after["last_error"].is_string(), "{after}");
    assert!(after["last_turn_id"].is_null());
    // And an inactive skill cannot be scheduled.
    let doc = problem(
        create(
            &daemon,
            json!({"skill": "web-search", "every": 60, "input": "x"}),
        ),
        409,
        "inactive-skill",
    );
    assert_eq!(doc["field"], "skill");
}

#[test]
fn a_cron_schedule_shows_its_expression_and_its_next_matching_minute() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let expression = "*/5 * * * *";
    let schedule = ok(
        create(
            &daemon,
            json!({"skill": "web-search", "cron": expression, "input": "rust news"}),
        ),
        201,
    );
    let id = schedule["id"].as_str().expect("id").to_string();
    assert_eq!(schedule["cron"], expression, "{schedule}");
    assert!(schedule["every"].is_null(), "{schedule}");
    let parse =
        |v: &Value| engram::time::rfc3339::parse(v.as_str().expect("a time")).expect("RFC 3339");
    let created = parse(&schedule["created_at"]);
    let next = parse(&schedule["next_run_at"]);
    // The first minute on a multiple of five at or after creation, in UTC.
    let cron = engram::schedule::cron::Cron::parse(expression).expect("parse");
    assert_eq!(Some(next), cron.next_after(created - 1), "{schedule}");
    assert_eq!(next % 300_000, 0, "{schedule}");
    assert!(next >= created && next - created < 300_000, "{schedule}");

    let got = ok(daemon.get(&format!("/api/schedules/{id}")), 200);
    assert_eq!(got["cron"], expression);
    assert!(got["every"].is_null());
    // Not fired yet (unless the daemon crossed the five-minute mark meanwhile, when
    // the run moved it to the next one).
    let next_now = parse(&got["next_run_at"]);
    assert!(next_now == next || next_now == next + 300_000, "{got}");
    let list = ok(daemon.get("/api/schedules"), 200);
    assert_eq!(list["items"][0]["cron"], expression, "{list}");

    // Each bad expression names the field at fault; one that never fires is refused.
    for (bad, words) in [
        ("61 * * * *", "minute"),
        ("0 0 31 2 *", "never fires"),
        ("0 0 * * FUNDAY", "day-of-week"),
        ("0 12 * JANUARY *", "month"),
    ] {
        let doc = problem(
            create(
                &daemon,
                json!({"skill": "web-search", "cron": bad, "input": "x"}),
            ),
            422,
            "invalid-field",
        );
        assert_eq!(doc["field"], "cron", "{bad}: {doc}");
        let detail = doc["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(words), "{bad}: {detail}");
    }
    let list = ok(daemon.get("/api/schedules"), 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
}

#[test]
fn bad_schedules_are_422_problems_and_nothing_is_served_without_the_token() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    for (body, code, field) in [
        (
            json!({"skill": "web-search", "every": 59, "input": "x"}),
            "invalid-field",
            "every",
        ),
        (
            json!({"skill": "web-search", "input": "x"}),
            "invalid-field",
            "every",
        ),
        (
            json!({"skill": "web-search", "every": 60, "cron": "*/5 * * * *", "input": "x"}),
            "invalid-field",
            "cron",
        ),
        (
            json!({"skill": "web-search", "cron": "*/5 * * *", "input": "x"}),
            "invalid-field",
            "cron",
        ),
        (
            json!({"skill": "../etc", "every": 60, "input": "x"}),
            "invalid-field",
            "skill",
        ),
        (
            json!({"skill": "web-search", "every": 60, "input": "  "}),
            "invalid-field",
            "input",
        ),
        (
            json!({"skill": "web-search", "every": 60, "input": "x", "start_at": "tomorrow"}),
            "invalid-field",
            "start_at",
        ),
        (
            json!({"skill": "web-search", "every": 60, "input": "x", "user": ""}),
            "invalid-field",
            "user",
        ),
    ] {
        let doc = problem(create(&daemon, body.clone()), 422, code);
        assert_eq!(doc["field"], field, "{body}: {doc}");
    }
    // Whether the skill is installed depends on the state, not on the request: 404.
    let body = json!({"skill": "no-such-skill", "every": 60, "input": "x"});
    let doc = problem(create(&daemon, body), 404, "unknown-skill");
    assert_eq!(doc["field"], "skill");
    problem(
        create(
            &daemon,
            json!({"skill": "web-search", "every": 60, "input": "x", "colour": "red"}),
        ),
        400,
        "unknown-field",
    );
    problem(daemon.get("/api/schedules?limit=0"), 422, "invalid-field");
    assert_eq!(ok(daemon.get("/api/schedules"), 200)["items"], json!([]));

    for (method, path) in [
        ("GET", "/api/schedules"),
        ("POST", "/api/schedules"),
        ("GET", "/api/schedules/sch_x"),
        ("DELETE", "/api/schedules/sch_x"),
    ] {
        let body = json!({"skill": "web-search", "every": 60, "input": "x"}).to_string();
        let response = daemon.request(
            method,
            path,
            None,
            Some("application/json"),
            body.as_bytes(),
        );
        problem(response, 401, "unauthorized");
    }
    assert_eq!(ok(daemon.get("/api/schedules"), 200)["items"], json!([]));
}

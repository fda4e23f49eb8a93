//! PostgreSQL restarted under load (issue 32): the requests in flight fail with 503 and
//! `Retry-After`, nothing is half-written, and the daemon reconnects by itself. A test
//! binary of its own: it restarts the cluster that every test of its binary shares.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engram_e2e::pg::{self, Owner};
use engram_e2e::{Daemon, engram, ok};
use serde_json::json;

/// A response's status, its `Retry-After`, and when it came.
type Answer = (u16, Option<String>, Instant);

#[test]
fn a_restarted_server_fails_the_requests_in_flight_with_503_and_the_daemon_reconnects() {
    let Some(owner) = Owner::new("a_restarted_server") else {
        return;
    };
    let data = tempfile::tempdir().expect("data dir");
    let daemon = Daemon::start(engram(data.path()).env("ENGRAM_DATABASE_URL", owner.url()));
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for t in 0..4 {
        let client = daemon.client();
        let (acknowledged, answers, stop) = (acknowledged.clone(), answers.clone(), stop.clone());
        load.push(std::thread::spawn(move || {
            for i in 0.. {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let response = if i % 2 == 0 {
                    let body = json!({"type": "preference", "summary": format!("likes rq{t}x{i}")});
                    client.call("POST", "/api/brain/memory", &body.to_string())
                } else {
                    client.call("GET", "/api/brain/memory/search?q=likes", "")
                };
                if response.status == 201 {
                    let id = response.json()["id"].as_str().expect("id").to_string();
                    acknowledged.lock().expect("lock").push(id);
                }
                let retry = response.header("retry-after").map(str::to_string);
                answers
                    .lock()
                    .expect("lock")
                    .push((response.status, retry, Instant::now()));
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(800));
    let restarted_at = Instant::now();
    pg::restart_cluster().expect("restart the cluster");
    let back_at = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::SeqCst);
    for thread in load {
        thread.join().expect("load thread");
    }
    let answers = answers.lock().expect("lock").clone();
    let refused: Vec<_> = answers
        .iter()
        .filter(|(status, _, _)| *status != 200 && *status != 201)
        .collect();
    for (status, retry, _) in &refused {
        assert_eq!(*status, 503, "only 503 while the server is away");
        assert_eq!(retry.as_deref(), Some("1"), "503 says when to retry");
    }
    assert!(
        answers
            .iter()
            .any(|(status, _, at)| *status == 201 && *at > back_at),
        "writes are taken again after the restart, without restarting the daemon"
    );
    assert!(
        answers
            .iter()
            .any(|(status, _, at)| *status == 201 && *at < restarted_at),
        "writes were taken before the restart"
    );
    // Every acknowledged write is there, and every memory there has its history: a
    // write cut off by the restart left nothing half-written.
    let acknowledged = acknowledged.lock().expect("lock").clone();
    for id in &acknowledged {
        ok(daemon.get(&format!("/api/brain/memory/{id}")), 200);
    }
    let mut client =
        postgres::Client::connect(&owner.db.conninfo(), postgres::NoTls).expect("connect");
    let without_history: i64 = client
        .query_one(
            "SELECT count(*) FROM brain.memories m WHERE NOT EXISTS
                 (SELECT 1 FROM brain.history h WHERE h.memory_id = m.id AND h.event = 'ADD')",
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(without_history, 0, "a memory without its history row");
    let stored: i64 = client
        .query_one("SELECT count(*) FROM brain.memories", &[])
        .expect("count")
        .get(0);
    assert!(
        stored as usize >= acknowledged.len()
            && stored as usize <= acknowledged.len() + refused.len(),
        "{stored} stored, {} acknowledged, {} refused",
        acknowledged.len(),
        refused.len()
    );
    eprintln!(
        "{} answers, {} refused with 503 during the restart, {} writes acknowledged",
        answers.len(),
        refused.len(),
        acknowledged.len()
    );
}

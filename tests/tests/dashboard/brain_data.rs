//! What the dashboard tests put in the brain before a page shows it: memories added
//! and conversations fed through the REST API, and records written straight through
//! `POST /api/brain/import` (the export's JSONL lines) for pages that need more than a
//! conversation gives: memories linked to several persons, or thousands of nodes.

use engram_e2e::{Daemon, ok};
use serde_json::{Value, json};

/// Adds a memory as a client would; returns its id.
pub fn add(daemon: &Daemon, kind: &str, summary: &str) -> String {
    let body = json!({ "type": kind, "summary": summary }).to_string();
    let created = ok(daemon.call("POST", "/api/brain/memory", &body), 201);
    created["id"].as_str().expect("id").to_string()
}

/// Feeds one user message to `conversation`.
pub fn say(daemon: &Daemon, conversation: &str, content: &str) {
    let message = json!({ "role": "user", "content": content });
    ok(
        daemon.call(
            "POST",
            &format!("/api/brain/conversations/{conversation}/messages"),
            &message.to_string(),
        ),
        201,
    );
}

/// Ends `conversation`, so that the brain learns from it now.
pub fn end(daemon: &Daemon, conversation: &str) {
    ok(
        daemon.call(
            "POST",
            &format!("/api/brain/conversations/{conversation}/end"),
            "",
        ),
        200,
    );
}

const WHEN: &str = "2026-11-01T09:00:00Z";

/// A live memory line.
pub fn memory(id: &str, kind: &str, summary: &str) -> Value {
    json!({
        "kind": "memory", "id": id, "user_id": "default", "type": kind, "summary": summary,
        "detail": null, "scope": "durable", "prior_scope": null, "confidence": 0.9,
        "importance": 0.6, "durability": 0.7, "evidence": "manual", "negated": false,
        "validated": false, "reinforcements": 0, "stale": false, "dismissed_at": null,
        "superseded_by": null, "created_at": WHEN, "updated_at": WHEN, "last_seen_at": WHEN,
        "last_used_at": null, "source_conversation": null, "source_turns": [],
        "confidence_at": WHEN,
    })
}

pub fn person(id: &str, name: &str) -> Value {
    json!({
        "kind": "person", "id": id, "user_id": "default", "name": name, "aliases": [],
        "created_at": WHEN, "last_seen": WHEN,
    })
}

pub fn link(memory_id: &str, person_id: &str, relation: Option<&str>) -> Value {
    json!({
        "kind": "person_link", "memory_id": memory_id, "person_id": person_id,
        "user_id": "default", "relation": relation,
    })
}

/// Imports `lines` (all or nothing); returns how many records the daemon took.
pub fn import(daemon: &Daemon, lines: &[Value]) -> u64 {
    let body: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let imported = ok(
        daemon.person().call("POST", "/api/brain/import", &body),
        200,
    );
    imported["imported"].as_u64().expect("imported count")
}

//! `engram db status | migrate` on real SQLite files: a fresh data directory, an old
//! store written at an earlier version (with the migrations of this build, cut short,
//! as the schema tests do), a store migrated then clean, `migrate` refused while
//! `serve` holds the data directory, and a database newer than this build refused.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use engram::sqlite::Schema;
use engram_e2e::{Daemon, engram, listed, ok, output_within, stdout_json};
use rusqlite::Connection;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn db(data: &Path, args: &[&str]) -> Output {
    output_within(engram(data).arg("db").args(args), LIMIT)
}

/// `engram db <args> --json`: the exit code and the answer.
fn db_json(data: &Path, args: &[&str]) -> (i32, Value) {
    let out = db(data, &[args, &["--json"]].concat());
    (out.status.code().expect("exit code"), stdout_json(&out))
}

fn database<'a>(status: &'a Value, name: &str) -> &'a Value {
    listed(status, "databases", "name", name)
}

/// Writes the database of `schema` at `path` at `version`, as a release of that
/// version left it.
fn write_at_version(path: &Path, schema: &Schema, version: usize) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let mut conn = Connection::open(path).expect("open");
    (schema.prepare)(&conn).expect("prepare");
    engram::sqlite::migrate(&mut conn, &schema.migrations[..version], schema.what)
        .expect("migrate");
    conn
}

fn version_of(path: &Path) -> i64 {
    engram::sqlite::read_schema_version(path)
        .expect("read")
        .expect("exists")
}

fn brain_path(data: &Path) -> std::path::PathBuf {
    engram::memory::brain_db_path(data)
}

fn schedules_path(data: &Path) -> std::path::PathBuf {
    data.join("schedule").join("schedules.db")
}

#[test]
fn status_on_a_fresh_data_dir_has_nothing_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, status) = db_json(dir.path(), &["status"]);
    assert_eq!(code, 0, "{status}");
    let names: Vec<&str> = status["databases"]
        .as_array()
        .expect("databases")
        .iter()
        .map(|d| d["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "second-brain",
            "audit",
            "schedules",
            "imports",
            "plugins-kv"
        ]
    );
    for database in status["databases"].as_array().expect("databases") {
        assert_eq!(database["state"], "absent", "{database}");
        assert_eq!(database["version"], Value::Null);
        assert_eq!(database["pending"], serde_json::json!([]));
    }
    assert_eq!(
        database(&status, "second-brain")["latest"],
        engram::memory::SCHEMA_VERSION
    );
    assert_eq!(status["pending"], 0);
    assert!(
        !brain_path(dir.path()).exists(),
        "status created the Second Brain's file"
    );
}

#[test]
fn an_old_store_is_listed_as_pending_then_migrated_and_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let brain = &engram::memory::BRAIN_SCHEMA;
    let schedules = &engram::schedule::schema::SCHEMA;
    drop(write_at_version(&brain_path(data), brain, 7));
    let conn = write_at_version(&schedules_path(data), schedules, 1);
    conn.execute(
        "INSERT INTO schedules (id, skill, input, every_secs, user_id, created_at, next_run_at)
         VALUES ('s1', 'daily-note', 'hello', 3600, 'default', 0, 0)",
        [],
    )
    .expect("a schedule of version 1");
    drop(conn);
    // The plugins' key-value store as releases before its versioning left it: the
    // table, at version 0.
    let kv_path = data.join("plugins").join("kv.sqlite3");
    std::fs::create_dir_all(kv_path.parent().expect("parent")).expect("dir");
    Connection::open(&kv_path)
        .expect("kv")
        .execute_batch(
            "CREATE TABLE kv (plugin TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
                              PRIMARY KEY (plugin, key)) WITHOUT ROWID;
             INSERT INTO kv VALUES ('p', 'k', x'01');",
        )
        .expect("an unversioned kv store");

    let (code, status) = db_json(data, &["status"]);
    assert_eq!(code, 4, "pending migrations exit 4: {status}");
    let second_brain = database(&status, "second-brain");
    assert_eq!(second_brain["state"], "pending");
    assert_eq!(second_brain["version"], 7);
    let expected: Vec<Value> = brain.migrations[7..]
        .iter()
        .enumerate()
        .map(|(i, m)| serde_json::json!({"version": i + 8, "description": m.description}))
        .collect();
    assert_eq!(second_brain["pending"], Value::Array(expected));
    assert_eq!(database(&status, "schedules")["pending"][0]["version"], 2);
    assert_eq!(database(&status, "audit")["state"], "absent");
    assert_eq!(database(&status, "plugins-kv")["version"], 0);
    assert_eq!(database(&status, "plugins-kv")["pending"][0]["version"], 1);
    assert_eq!(status["pending"], 3);
    // Reading changed nothing.
    assert_eq!(version_of(&brain_path(data)), 7);

    let human = db(data, &["status"]);
    assert_eq!(human.status.code(), Some(4));
    let text = String::from_utf8_lossy(&human.stdout);
    let latest = format!("version 7 of {}", brain.migrations.len());
    assert!(text.contains(&latest), "{text}");
    assert!(text.contains(brain.migrations[8].description), "{text}");

    let (code, migrated) = db_json(data, &["migrate"]);
    assert_eq!(code, 0, "{migrated}");
    let runs = migrated["migrated"].as_array().expect("migrated");
    assert_eq!(runs.len(), 3, "{migrated}");
    assert_eq!(runs[0]["name"], "second-brain");
    assert_eq!(runs[0]["from"], 7);
    assert_eq!(runs[0]["to"], brain.latest());
    assert_eq!(runs[1]["name"], "schedules");
    assert_eq!(runs[1]["applied"][0]["version"], 2);

    let (code, status) = db_json(data, &["status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(database(&status, "second-brain")["state"], "current");
    assert_eq!(database(&status, "schedules")["state"], "current");
    assert_eq!(version_of(&schedules_path(data)), schedules.latest());
    let kept: i64 = Connection::open(&kv_path)
        .expect("kv")
        .query_row("SELECT count(*) FROM kv", [], |r| r.get(0))
        .expect("count");
    assert_eq!(kept, 1, "the kv store's row");
    let (code, again) = db_json(data, &["migrate"]);
    assert_eq!((code, &again["migrated"]), (0, &serde_json::json!([])));

    // The migrated store is the daemon's: it serves the schedule written at version 1.
    let daemon = Daemon::start(&mut engram(data));
    let listed = ok(daemon.get("/api/schedules"), 200);
    assert!(listed.to_string().contains("daily-note"), "{listed}");
}

#[test]
fn migrate_is_refused_while_serve_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(dir.path()));
    let out = db(dir.path(), &["migrate"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in use by `engram serve`"),
        "stderr: {stderr}"
    );
    // Reading the versions needs no lock: the daemon created every database current.
    let (code, status) = db_json(dir.path(), &["status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(database(&status, "second-brain")["state"], "current");
    drop(daemon);
}

#[test]
fn a_database_newer_than_this_build_is_refused_and_nothing_migrated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path();
    let audit = &engram::gate::AUDIT_SCHEMA;
    let audit_path = data.join("gate").join("audit.db");
    let conn = write_at_version(&audit_path, audit, audit.migrations.len());
    let newer = audit.latest() + 1;
    conn.pragma_update(None, "user_version", newer)
        .expect("as a newer release leaves it");
    drop(conn);
    drop(write_at_version(
        &brain_path(data),
        &engram::memory::BRAIN_SCHEMA,
        7,
    ));

    let (code, status) = db_json(data, &["status"]);
    assert_eq!(code, 5, "a newer database exits 5: {status}");
    assert_eq!(database(&status, "audit")["state"], "newer");
    assert_eq!(database(&status, "audit")["version"], newer);
    assert_eq!(status["newer"], 1);
    let human = String::from_utf8_lossy(&db(data, &["status"]).stdout).into_owned();
    assert!(human.contains("which this one cannot open"), "{human}");

    let out = db(data, &["migrate"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("newer than this engram supports") && stderr.contains("audit.db"),
        "stderr: {stderr}"
    );
    assert_eq!(version_of(&brain_path(data)), 7, "a database was migrated");
    assert_eq!(version_of(&audit_path), newer);
}

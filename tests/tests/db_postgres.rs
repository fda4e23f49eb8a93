//! `engram db status | migrate --url` on a real PostgreSQL (the harness's throwaway
//! cluster), and the proof that the database itself keeps each person's rows apart
//! (issue 32): every table holding a `user_id` is under forced row-level security, so
//! a query that forgets its user filter sees and changes one person's rows only.
//!
//! Each test migrates as a login role of its own that is not a superuser (a superuser
//! bypasses row-level security, and an operator's application role is not one).
//! Without PostgreSQL these print SKIPPED and pass; under CI they fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use engram::pg::PgSchema;
use engram::sqlite::Schema;
use engram_e2e::pg::{Owner, PgDatabase};
use engram_e2e::{Daemon, engram, listed, ok, output_within, stdout_json};
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);

/// Every store, on both backends (the order `engram db status` lists them in).
fn stores() -> [(&'static str, &'static Schema, &'static PgSchema); 5] {
    [
        (
            "second-brain",
            &engram::memory::BRAIN_SCHEMA,
            &engram::memory::BRAIN_PG_SCHEMA,
        ),
        (
            "audit",
            &engram::gate::AUDIT_SCHEMA,
            &engram::gate::AUDIT_PG_SCHEMA,
        ),
        (
            "schedules",
            &engram::schedule::schema::SCHEMA,
            &engram::schedule::schema::PG_SCHEMA,
        ),
        (
            "imports",
            &engram::memory::import::ledger::SCHEMA,
            &engram::memory::import::ledger::PG_SCHEMA,
        ),
        (
            "plugins-kv",
            &engram::runtime::KV_SCHEMA,
            &engram::runtime::KV_PG_SCHEMA,
        ),
    ]
}

/// The owner's own client: it owns the tables and, row-level security forced, sees
/// none of their rows as itself.
fn owner_client(owner: &Owner) -> Client {
    connect_as(&owner.db, &owner.role)
}

fn connect_as(db: &PgDatabase, role: &str) -> Client {
    let conninfo = format!(
        "host=127.0.0.1 port={} user={role} dbname={}",
        db.port, db.name
    );
    Client::connect(&conninfo, NoTls).unwrap_or_else(|e| panic!("connect as {role}: {e}"))
}

fn db(data: &Path, args: &[&str]) -> Output {
    output_within(engram(data).arg("db").args(args), LIMIT)
}

/// `engram db <args> --url <url> --json`: the exit code and the answer.
fn db_json(data: &Path, url: &str, args: &[&str]) -> (i32, Value) {
    let out = db(data, &[args, &["--url", url, "--json"]].concat());
    (out.status.code().expect("exit code"), stdout_json(&out))
}

#[test]
fn migrate_creates_every_store_at_the_sqlite_numbering_and_status_is_clean_after() {
    let Some(owner) = Owner::new("migrate_creates_every_store") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    let url = owner.url();

    let (code, status) = db_json(data.path(), &url, &["status"]);
    assert_eq!(code, 0, "nothing created is nothing pending: {status}");
    for (name, schema, pg_schema) in stores() {
        let entry = listed(&status, "databases", "name", name);
        assert_eq!(entry["state"], "absent", "{name}: {entry}");
        assert_eq!(entry["latest"], schema.latest(), "{name}");
        assert_eq!(entry["schema"], pg_schema.namespace, "{name}");
        assert!(entry.get("file").is_none(), "{name}: {entry}");
    }
    // The installed skills and plugins every daemon shares: a store of the team's
    // database only (on SQLite the data directory is their record).
    let installs = listed(&status, "databases", "name", "installs");
    assert_eq!(installs["state"], "absent", "{installs}");
    assert_eq!(installs["schema"], engram::installs::PG_SCHEMA.namespace);

    let (code, migrated) = db_json(data.path(), &url, &["migrate"]);
    assert_eq!(code, 0, "{migrated}");
    let created = migrated["migrated"].as_array().expect("migrated");
    assert_eq!(created.len(), 6, "{migrated}");
    for entry in created {
        assert!(entry["from"].is_null(), "created, not migrated: {entry}");
    }

    let (code, status) = db_json(data.path(), &url, &["status"]);
    assert_eq!(code, 0, "{status}");
    for (name, schema, _) in stores() {
        let entry = listed(&status, "databases", "name", name);
        assert_eq!(entry["state"], "current", "{name}: {entry}");
        assert_eq!(entry["version"], schema.latest(), "{name}");
    }
    let installs = listed(&status, "databases", "name", "installs");
    assert_eq!(installs["state"], "current", "{installs}");
    assert_eq!(installs["version"], engram::installs::PG_SCHEMA.latest());
    assert_eq!(status["pending"], 0);

    let (code, again) = db_json(data.path(), &url, &["migrate"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["migrated"], serde_json::json!([]), "nothing twice");

    // The address is shown without the password a URL may carry (the cluster trusts
    // loopback, so any password is let in).
    let with_password = format!(
        "postgres://{}:hunter2@127.0.0.1:{}/{}",
        owner.role, owner.db.port, owner.db.name
    );
    let out = db(data.path(), &["status", "--url", &with_password]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("schema brain"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

/// The same tables and columns, of matching types and nullability, as a SQLite store
/// at the same version (SQLite's full-text index tables and views aside: on
/// PostgreSQL the index is the backend's).
#[test]
fn each_store_has_the_tables_and_columns_of_its_sqlite_file() {
    let Some(owner) = Owner::new("each_store_has_the_tables_and_columns") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    let (code, migrated) = db_json(data.path(), &owner.url(), &["migrate"]);
    assert_eq!(code, 0, "{migrated}");
    let mut client = owner_client(&owner);
    for (name, schema, pg_schema) in stores() {
        let mut sqlite = rusqlite::Connection::open_in_memory().expect("sqlite");
        schema.migrate(&mut sqlite).expect("sqlite migrate");
        let on_sqlite = sqlite_columns(&sqlite);
        let on_server = server_columns(&mut client, pg_schema.namespace);
        assert_eq!(
            on_server.keys().collect::<Vec<_>>(),
            on_sqlite.keys().collect::<Vec<_>>(),
            "{name}: tables"
        );
        for (table, columns) in &on_sqlite {
            assert_eq!(&on_server[table], columns, "{name}: {table}");
        }
    }
}

/// Column -> (type family, nullable) per table.
type Columns = BTreeMap<String, BTreeMap<String, (&'static str, bool)>>;

fn sqlite_columns(conn: &rusqlite::Connection) -> Columns {
    let mut statement = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table'
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts%'",
        )
        .expect("tables");
    let tables: Vec<String> = statement
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("tables");
    let mut columns = Columns::new();
    for table in tables {
        let mut info = conn
            .prepare(&format!("PRAGMA table_info({table})"))
            .expect("table_info");
        let rows = info
            .query_map([], |r| {
                let name: String = r.get(1)?;
                let declared: String = r.get(2)?;
                let not_null: bool = r.get(3)?;
                let primary: i64 = r.get(5)?;
                Ok((name, declared, not_null || primary > 0))
            })
            .expect("columns");
        for row in rows {
            let (name, declared, required) = row.expect("column");
            let family = match declared.to_ascii_uppercase().as_str() {
                // SQLite gives both INTEGER affinity; the gate's later tables use one
                // text on both backends.
                "INTEGER" | "BIGINT" => "integer",
                "REAL" => "real",
                "BLOB" => "bytes",
                "TEXT" => "text",
                other => panic!("{table}.{name}: type {other}"),
            };
            columns
                .entry(table.clone())
                .or_default()
                .insert(name, (family, !required));
        }
    }
    columns
}

fn server_columns(client: &mut Client, namespace: &str) -> Columns {
    let rows = client
        .query(
            "SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_nullable::text
             FROM information_schema.columns c
             JOIN information_schema.tables t
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name
             WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'
               -- What the host derives from the copied rows (the transcript's postings)
               -- is PostgreSQL's own: SQLite keeps it in FTS5.
               AND coalesce(obj_description(
                   format('%I.%I', c.table_schema, c.table_name)::regclass, 'pg_class'), '')
                   NOT LIKE 'derived:%'
               -- And so is a column standing in for SQLite's rowid.
               AND coalesce(col_description(
                   format('%I.%I', c.table_schema, c.table_name)::regclass,
                   c.ordinal_position::int), '') NOT LIKE 'derived:%'",
            &[&namespace],
        )
        .expect("columns");
    let mut columns = Columns::new();
    for row in rows {
        let (table, name, data_type, nullable): (String, String, String, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let family = match data_type.as_str() {
            "bigint" => "integer",
            "double precision" => "real",
            "bytea" => "bytes",
            "text" => "text",
            other => panic!("{namespace}.{table}.{name}: type {other}"),
        };
        columns
            .entry(table)
            .or_default()
            .insert(name, (family, nullable == "YES"));
    }
    columns
}

/// One row for `user` in every table that holds a `user_id`, written as that person
/// (`n` tells the two people's unique numbers apart).
fn rows_for(user: &str, n: i64) -> String {
    format!(
        "INSERT INTO brain.memories (id, user_id, memory_type, summary, scope, confidence,
             importance, durability, evidence, created_at, updated_at, last_seen_at,
             confidence_at, source_turns)
         VALUES ('mem_{user}', '{user}', 'preference', 'likes green tea', 'active', 0.9,
             0.5, 0.5, 'direct', 1, 1, 1, 1, '[\"turn_{user}\"]');
         INSERT INTO brain.persons (id, user_id, name, created_at, last_seen)
         VALUES ('per_{user}', '{user}', 'Sam', 1, 1);
         INSERT INTO brain.memory_persons (memory_id, person_id, user_id)
         VALUES ('mem_{user}', 'per_{user}', '{user}');
         INSERT INTO brain.meta (user_id, key, value) VALUES ('{user}', 'k', 'v');
         INSERT INTO brain.conversations (id, user_id, started_at, last_message_at)
         VALUES ('conv_{user}', '{user}', 1, 1);
         INSERT INTO brain.messages (id, conversation_id, user_id, seq, role, content, at)
         VALUES ('msg_{user}', 'conv_{user}', '{user}', 1, 'user', 'I like green tea', 1);
         INSERT INTO brain.redactions (user_id, kind, count) VALUES ('{user}', 'api-key', 1);
         INSERT INTO brain.forget_log (user_id, at, actor, reason, memories, messages)
         VALUES ('{user}', 1, 'person', 'asked', '[]', '[]');
         INSERT INTO brain.transcript_users (user_id, number) VALUES ('{user}', {n});
         INSERT INTO brain.agent_dismissals (memory_id, user_id, at, keep_messages)
         VALUES ('mem_{user}', '{user}', 1, 0);
         INSERT INTO brain.history (user_id, memory_id, event, actor, at)
         VALUES ('{user}', 'mem_{user}', 'ADD', 'person', 1);
         INSERT INTO brain.memory_vectors (user_id, memory_id, model, vector)
         VALUES ('{user}', 'mem_{user}', 'm', '\\x00');
         INSERT INTO brain.message_vectors (user_id, message_id, model, vector)
         VALUES ('{user}', 'msg_{user}', 'm', '\\x00');
         INSERT INTO brain.message_sizes (n, user_id, tokens)
         SELECT n, user_id, 4 FROM brain.messages WHERE id = 'msg_{user}';
         INSERT INTO brain.message_terms (user_id, term, n, hits, size)
         SELECT user_id, '\\x746561', n, 1, 4 FROM brain.messages WHERE id = 'msg_{user}';
         INSERT INTO audit.decisions (at, user_id, caller, tool, decision, reason_code, reason)
         VALUES (1, '{user}', 'agent', 'save_memory', 'allow', 'policy', 'allowed');
         INSERT INTO audit.turns (id, user_id, opened_by, opened_at, expires_at, closes_at, body)
         VALUES ('turn_{user}', '{user}', 'agent', 1, 2, 2, '{{}}');
         INSERT INTO schedules.schedules (id, skill, input, every_secs, user_id, created_at,
             next_run_at)
         VALUES ('sch_{user}', 'daily', 'go', 60, '{user}', 1, 1);
         INSERT INTO imports.imported (user_id, key, became, imported_at)
         VALUES ('{user}', 'k', 'mem_{user}', 1);"
    )
}

/// A transaction as `role`, for `user` when given (`engram.user`), as the daemon's
/// transactions will act.
fn acting<'a>(client: &'a mut Client, role: &str, user: Option<&str>) -> postgres::Transaction<'a> {
    let mut tx = client.transaction().expect("begin");
    tx.batch_execute(&format!("SET LOCAL ROLE {role}"))
        .expect("set role");
    if let Some(user) = user {
        tx.execute(
            "SELECT set_config($1, $2, true)",
            &[&engram::pg::USER_SETTING, &user],
        )
        .expect("set the person");
    }
    tx
}

/// Runs `f` in a transaction acting for `user` (`None`: the role without a person).
fn as_person<R>(
    client: &mut Client,
    user: Option<&str>,
    f: impl FnOnce(&mut postgres::Transaction) -> R,
) -> R {
    let mut tx = acting(client, engram::pg::USER_ROLE, user);
    let out = f(&mut tx);
    tx.commit().expect("commit");
    out
}

/// Every table of the stores' schemas that holds a `user_id`, as `schema.table`.
fn user_tables(client: &mut Client) -> BTreeSet<String> {
    let namespaces: Vec<String> = stores()
        .iter()
        .map(|(_, _, s)| s.namespace.to_string())
        .collect();
    client
        .query(
            "SELECT table_schema::text || '.' || table_name::text FROM information_schema.columns
             WHERE column_name = 'user_id' AND table_schema = ANY($1)",
            &[&namespaces],
        )
        .expect("user tables")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn counts(
    tx: &mut postgres::Transaction,
    tables: &BTreeSet<String>,
) -> BTreeMap<String, (i64, i64)> {
    tables
        .iter()
        .map(|table| {
            let row = tx
                .query_one(
                    &format!(
                        "SELECT count(*) FILTER (WHERE user_id = 'alice'),
                                count(*) FILTER (WHERE user_id IS DISTINCT FROM 'alice')
                         FROM {table}"
                    ),
                    &[],
                )
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            (table.clone(), (row.get(0), row.get(1)))
        })
        .collect()
}

#[test]
fn a_query_that_forgets_its_user_filter_sees_and_changes_one_persons_rows_only() {
    let Some(owner) = Owner::new("row_level_security") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    let (code, migrated) = db_json(data.path(), &owner.url(), &["migrate"]);
    assert_eq!(code, 0, "{migrated}");
    let mut client = owner_client(&owner);

    // Every user table is protected, forced for the owner too, and this test writes a
    // row in each (a table added later without protection or a row here fails).
    let tables = user_tables(&mut client);
    let unprotected: Vec<String> = client
        .query(
            "SELECT n.nspname::text || '.' || c.relname::text FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname::text || '.' || c.relname::text = ANY($1)
               AND NOT (c.relrowsecurity AND c.relforcerowsecurity)",
            &[&tables.iter().cloned().collect::<Vec<_>>()],
        )
        .expect("catalog")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        unprotected.is_empty(),
        "without forced RLS: {unprotected:?}"
    );
    assert_eq!(tables.len(), 21, "{tables:?}");

    for (user, n) in [("alice", 1), ("bob", 2)] {
        as_person(&mut client, Some(user), |tx| {
            tx.batch_execute(&rows_for(user, n))
                .unwrap_or_else(|e| panic!("{user}'s rows: {e}"))
        });
    }

    // Alice's unfiltered reads: her rows in every table (the trigger-kept turns too),
    // nothing of Bob's.
    let seen = as_person(&mut client, Some("alice"), |tx| counts(tx, &tables));
    for (table, (hers, others)) in &seen {
        assert!(*hers >= 1, "{table}: alice sees none of her rows");
        assert_eq!(*others, 0, "{table}: alice sees another person's rows");
    }
    assert_eq!(seen["brain.memory_turns"], (1, 0), "kept by the trigger");

    // Her unfiltered writes touch her rows only; a row for Bob is refused. (Her rows
    // are counted again: an update of her memories logs them in `memory_changes`.)
    for table in &tables {
        let (hers, updated, deleted_of_bob) = as_person(&mut client, Some("alice"), |tx| {
            let hers: i64 = tx
                .query_one(
                    &format!("SELECT count(*) FROM {table} WHERE user_id = 'alice'"),
                    &[],
                )
                .unwrap_or_else(|e| panic!("{table}: {e}"))
                .get(0);
            let updated = tx
                .execute(&format!("UPDATE {table} SET user_id = user_id"), &[])
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            let deleted = tx
                .execute(&format!("DELETE FROM {table} WHERE user_id = 'bob'"), &[])
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            (hers, updated, deleted)
        });
        assert_eq!(updated as i64, hers, "{table}: updated beyond alice");
        assert_eq!(deleted_of_bob, 0, "{table}: alice deleted bob's rows");
    }
    let mut tx = acting(&mut client, engram::pg::USER_ROLE, Some("alice"));
    let error = tx
        .batch_execute(
            "INSERT INTO brain.meta (user_id, key, value) VALUES ('bob', 'planted', 'x')",
        )
        .expect_err("a row for another person is refused");
    assert_eq!(
        error.code(),
        Some(&SqlState::INSUFFICIENT_PRIVILEGE),
        "{error:?}"
    );
    drop(tx);
    let error = as_person(&mut client, Some("alice"), |tx| {
        tx.batch_execute("UPDATE brain.memories SET user_id = 'bob'")
    })
    .expect_err("handing a row to another person is refused");
    assert_eq!(
        error.code(),
        Some(&SqlState::INSUFFICIENT_PRIVILEGE),
        "{error:?}"
    );

    // Without a person, the user role sees nothing; the owner, forced, sees nothing.
    let nobody = as_person(&mut client, None, |tx| counts(tx, &tables));
    assert!(nobody.values().all(|c| *c == (0, 0)), "{nobody:?}");
    let mut tx = client.transaction().expect("begin");
    let owners = counts(&mut tx, &tables);
    assert!(owners.values().all(|c| *c == (0, 0)), "{owners:?}");
    drop(tx);

    // The system role, for maintenance and the operator's export, sees everyone.
    let mut tx = acting(&mut client, engram::pg::SYSTEM_ROLE, None);
    let everyone = counts(&mut tx, &tables);
    for (table, (hers, others)) in &everyone {
        assert!(*hers >= 1 && *others >= 1, "{table}: {hers} / {others}");
    }
}

#[test]
fn two_migrates_at_once_create_each_store_once() {
    let Some(owner) = Owner::new("two_migrates_at_once") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    let url = owner.url();
    let spawn = || {
        let mut command: Command = engram(data.path());
        command
            .args(["db", "migrate", "--json", "--url", &url])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command.spawn().expect("spawn")
    };
    let (first, second) = (spawn(), spawn());
    // Every step of every store applied by exactly one of the two (a store's later
    // steps may be the other's: each step takes the lock on its own).
    let mut steps: Vec<(String, i64)> = Vec::new();
    for child in [first, second] {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let answer = stdout_json(&out);
        for store in answer["migrated"].as_array().expect("migrated") {
            for step in store["applied"].as_array().expect("applied") {
                steps.push((
                    store["name"].as_str().expect("name").to_string(),
                    step["version"].as_i64().expect("version"),
                ));
            }
        }
    }
    steps.sort();
    let expected: Vec<(String, i64)> = stores()
        .iter()
        .map(|(name, _, pg)| (*name, *pg))
        .chain([("installs", &engram::installs::PG_SCHEMA)])
        .flat_map(|(name, pg)| {
            (pg.created_at..=pg.latest()).map(move |version| (name.to_string(), version))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(steps, expected, "each step applied by one of the two");
    let (code, status) = db_json(data.path(), &url, &["status"]);
    assert_eq!((code, &status["pending"]), (0, &Value::from(0)), "{status}");
}

#[test]
fn a_store_newer_than_this_release_is_refused_and_nothing_is_migrated() {
    let Some(owner) = Owner::new("a_store_newer_than_this_release") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    let url = owner.url();
    assert_eq!(db_json(data.path(), &url, &["migrate"]).0, 0);
    owner_client(&owner)
        .batch_execute(
            "UPDATE engram.schema_versions SET version = 99 WHERE store = 'audit';
             DELETE FROM engram.schema_versions WHERE store = 'imports';
             DROP SCHEMA imports CASCADE",
        )
        .expect("a newer audit store, the import ledger not created");

    let (code, status) = db_json(data.path(), &url, &["status"]);
    assert_eq!(code, 5, "{status}");
    assert_eq!(
        listed(&status, "databases", "name", "audit")["state"],
        "newer"
    );
    assert_eq!(
        listed(&status, "databases", "name", "imports")["state"],
        "absent"
    );

    let out = db(data.path(), &["migrate", "--url", &url]);
    assert_eq!(out.status.code(), Some(1));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("audit") && error.contains("99") && error.contains("upgrade engram"),
        "{error}"
    );
    let created: bool = owner_client(&owner)
        .query_one("SELECT to_regclass('imports.imported') IS NOT NULL", &[])
        .expect("catalog")
        .get(0);
    assert!(!created, "nothing is migrated while a store is too new");
}

/// Writes through the daemon's REST API what a lived-in install holds: two people's
/// conversations (learned memories, persons, the turns they came from), a changed fact
/// (a memory superseding another), a deleted one, a schedule.
fn lived_in(daemon: &Daemon) {
    for user in ["default", "alice"] {
        let conversation = format!("/api/brain/conversations/trip-{user}/messages?user={user}");
        for content in [
            "My sister Maria lives in Lisbon and she is a doctor.",
            "I am learning to play the cello. My goal is to join an orchestra next year.",
        ] {
            ok(
                daemon.call(
                    "POST",
                    &conversation,
                    &json!({"role": "user", "content": content}).to_string(),
                ),
                201,
            );
        }
        ok(
            daemon.call(
                "POST",
                &format!("/api/brain/conversations/trip-{user}/end?user={user}"),
                "",
            ),
            200,
        );
        let add = |summary: &str| {
            ok(
                daemon.call(
                    "POST",
                    &format!("/api/brain/memory?user={user}"),
                    &json!({"type": "identity", "summary": summary}).to_string(),
                ),
                201,
            )
        };
        add("User's phone number is 555-0140");
        let changed = add("User's new phone number is 555-0161");
        assert_eq!(
            changed["superseded"].as_array().map(Vec::len),
            Some(1),
            "{changed}"
        );
        let forgotten = add("User collects stamps");
        let id = forgotten["id"].as_str().expect("id");
        let deleted = daemon.call("DELETE", &format!("/api/brain/memory/{id}?user={user}"), "");
        assert_eq!(deleted.status, 204, "{}", deleted.text());
    }
    ok(
        daemon.call(
            "POST",
            "/api/schedules",
            &json!({"skill": "web-search", "every": 3600, "input": "rust release notes"})
                .to_string(),
        ),
        201,
    );
}

/// One number the system role reads.
fn stored(client: &mut Client, sql: &str) -> i64 {
    let mut tx = acting(client, engram::pg::SYSTEM_ROLE, None);
    tx.query_one(sql, &[]).expect(sql).get(0)
}

/// Each table's rows, in a canonical text form, per store: on SQLite from the files,
/// on the server as the system role.
fn sqlite_rows(path: &Path, table: &str, columns: &[String]) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let mut statement = conn
        .prepare(&format!("SELECT {} FROM {table}", columns.join(", ")))
        .expect("select");
    let mut rows: Vec<String> = statement
        .query_map([], |row| {
            let mut text = String::new();
            for i in 0..columns.len() {
                text.push_str(&match row.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    rusqlite::types::ValueRef::Real(f) => format!("{f:.6}"),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(b) => format!("{b:?}"),
                });
                text.push('|');
            }
            Ok(text)
        })
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    rows.sort();
    rows
}

fn server_rows(
    client: &mut Client,
    namespace: &str,
    table: &str,
    columns: &Columns,
) -> Vec<String> {
    let names: Vec<&String> = columns[table].keys().collect();
    let list = names
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut tx = acting(client, engram::pg::SYSTEM_ROLE, None);
    let mut rows: Vec<String> = tx
        .query(&format!("SELECT {list} FROM {namespace}.{table}"), &[])
        .expect("select")
        .iter()
        .map(|row| {
            let mut text = String::new();
            for (i, name) in names.iter().enumerate() {
                text.push_str(&match columns[table][*name].0 {
                    "integer" => row
                        .get::<_, Option<i64>>(i)
                        .map_or("NULL".into(), |n| n.to_string()),
                    "real" => row
                        .get::<_, Option<f64>>(i)
                        .map_or("NULL".into(), |f| format!("{f:.6}")),
                    "bytes" => row
                        .get::<_, Option<Vec<u8>>>(i)
                        .map_or("NULL".into(), |b| format!("{b:?}")),
                    _ => row
                        .get::<_, Option<String>>(i)
                        .unwrap_or_else(|| "NULL".into()),
                });
                text.push('|');
            }
            text
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn copy_moves_every_row_of_an_install_and_refuses_to_merge_into_a_filled_database() {
    let Some(owner) = Owner::new("copy_moves_every_row") else {
        return;
    };
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join("config.yaml"), engram_e2e::AGENT_FOR_THREE).expect("config");
    let daemon = Daemon::start(&mut engram(data.path()));
    lived_in(&daemon);
    let url = owner.url();
    // Not while a daemon holds the data directory: its writes would be half in.
    let out = db(data.path(), &["copy", "--to", &url]);
    assert_eq!(out.status.code(), Some(1), "refused while serving");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("in use by `engram serve`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    daemon.stop();

    let out = db(data.path(), &["copy", "--to", &url, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = stdout_json(&out);
    let copied = answer["copied"].as_array().expect("copied");
    assert!(copied.len() >= 3, "{answer}");

    // Every table of every store holds the same rows, value for value.
    let paths: BTreeMap<&str, std::path::PathBuf> = [
        ("brain", engram::memory::brain_db_path(data.path())),
        ("audit", data.path().join("gate").join("audit.db")),
        (
            "schedules",
            data.path().join("schedule").join("schedules.db"),
        ),
    ]
    .into_iter()
    .collect();
    let mut client = owner_client(&owner);
    let mut compared = 0;
    for (namespace, path) in &paths {
        assert!(path.is_file(), "{}", path.display());
        let columns = server_columns(&mut client, namespace);
        for table in columns.keys() {
            let names: Vec<String> = columns[table].keys().cloned().collect();
            let on_sqlite = sqlite_rows(path, table, &names);
            let on_server = server_rows(&mut client, namespace, table, &columns);
            assert_eq!(on_server, on_sqlite, "{namespace}.{table}");
            compared += on_sqlite.len();
        }
    }
    assert!(compared > 20, "{compared} rows compared");
    assert_eq!(
        stored(
            &mut client,
            "SELECT count(*) FROM brain.memories WHERE superseded_by IS NOT NULL"
        ),
        2,
        "the changed facts still point at what replaced them"
    );
    assert!(stored(&mut client, "SELECT count(*) FROM brain.memory_turns") >= 2);
    // Every copied message is in the transcript's index on the server, counted into
    // its user's totals as the SQLite file counted it.
    let messages = stored(&mut client, "SELECT count(*) FROM brain.messages");
    assert!(messages > 0, "the install had messages to copy");
    assert_eq!(
        stored(&mut client, "SELECT count(*) FROM brain.message_sizes"),
        messages,
        "each copied message indexed"
    );
    assert_eq!(
        stored(
            &mut client,
            "SELECT coalesce(sum(messages), 0)::BIGINT FROM brain.transcript_users"
        ),
        messages,
        "the users' counters"
    );
    // The next row numbered by the server comes after the copied ones.
    let highest = stored(&mut client, "SELECT max(id) FROM brain.history");
    let mut tx = acting(&mut client, engram::pg::SYSTEM_ROLE, None);
    let next: i64 = tx
        .query_one(
            "INSERT INTO brain.history (user_id, memory_id, event, actor, at)
             VALUES ('default', 'm', 'ADD', 'test', 1) RETURNING id",
            &[],
        )
        .expect("a new row")
        .get(0);
    assert!(next > highest, "{next} after {highest}");
    drop(tx);

    // A second copy would merge two installs: refused, nothing written.
    let before = stored(&mut client, "SELECT count(*) FROM brain.memories");
    let out = db(data.path(), &["copy", "--to", &url]);
    assert_eq!(out.status.code(), Some(1));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(error.contains("already holds rows"), "{error}");
    assert_eq!(
        stored(&mut client, "SELECT count(*) FROM brain.memories"),
        before
    );
}

//! End-to-end: the third security review (issue 30). Each test is one attack as the
//! review ran it against the real daemon (loopback, the model stand-in, pages and Bot
//! API written for the test), now refused. Each would fail on the code before the fix;
//! its name says the item (`item_NN_...`).

use std::path::Path;

use engram_e2e::{Daemon, engram, ok};
use serde_json::{Value, json};

fn start(data: &Path) -> Daemon {
    Daemon::start(&mut engram(data))
}

fn post(daemon: &Daemon, path: &str, body: Value, status: u16) -> Value {
    ok(daemon.call("POST", path, &body.to_string()), status)
}

/// Every regular file and directory under `dir` whose mode lets another user in.
#[cfg(unix)]
fn readable_by_others(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let meta = entry.path().symlink_metadata().expect("stat");
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                found.push((entry.path().display().to_string(), mode));
            }
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    found
}

/// Item 12: the databases (and their WAL files) were 0644 inside the 0700 data
/// directory. Now everything the daemon writes is private, and a file made readable
/// by others while it was stopped is tightened at the next start, with a warning.
#[cfg(unix)]
#[test]
fn item_12_data_files_are_private_and_checked_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = start(data.path());
    post(
        &daemon,
        "/api/brain/memory",
        json!({"type": "preference", "summary": "User likes green tea"}),
        201,
    );
    post(&daemon, "/api/turns", json!({"message": "hello"}), 201);
    post(
        &daemon,
        "/api/schedules",
        json!({"skill": "word-stats", "every": 3600, "input": "x", "start_at": "2999-01-01T00:00:00Z"}),
        201,
    );
    for db in [
        "memory/second-brain/second-brain.db-wal",
        "gate/audit.db-wal",
        "schedule/schedules.db-wal",
        "plugins/kv.sqlite3",
    ] {
        assert!(data.path().join(db).exists(), "{db}");
    }
    assert_eq!(readable_by_others(data.path()), []);
    drop(daemon);

    let audit = data.path().join("gate").join("audit.db");
    std::fs::set_permissions(&audit, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let log = data.path().join("daemon.log");
    let daemon = Daemon::start_logging_to(
        engram(data.path()).env("ENGRAM_OPERATOR_TOKEN", engram_e2e::OPERATOR_TOKEN),
        &log,
    );
    ok(daemon.get("/healthz"), 200);
    let mode = std::fs::metadata(&audit)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("could be read by other users") && logged.contains("audit.db"),
        "{logged}"
    );
}

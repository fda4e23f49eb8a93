//! End-to-end: the sentence encoder a daemon runs, and `engram models`. Without a
//! model the static table serves and `/healthz` and `GET /api/brain/status` say so; a
//! model added with the CLI serves from the next start; one that fails to load leaves
//! the static table and the reason. The model is a tiny BERT the test writes
//! (`host/tests/support/tiny_bert.rs`), the hub a loopback server.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use engram_e2e::{Daemon, engram, ok, output_within};
use serde_json::Value;

#[path = "../../host/tests/support/http.rs"]
mod http;
#[path = "../../host/tests/support/rng.rs"]
mod rng;
#[path = "../../host/tests/support/tiny_bert.rs"]
mod tiny_bert;

const LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

fn encoder_of(daemon: &Daemon) -> (Value, Value) {
    let health = ok(daemon.get("/healthz"), 200);
    let status = ok(daemon.get("/api/brain/status"), 200);
    (health["encoder"].clone(), status["encoder"].clone())
}

fn models(data: &Path, args: &[&str]) -> (bool, Value, String) {
    let output = output_within(engram(data).arg("models").args(args).arg("--json"), LIMIT);
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (
        output.status.success(),
        json,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn without_a_model_the_static_table_serves_and_says_so() {
    let data = tempfile::tempdir().expect("tempdir");
    let daemon = Daemon::start(&mut engram(data.path()));
    let want = serde_json::json!({"name": "static", "error": null});
    assert_eq!(encoder_of(&daemon), (want.clone(), want));
    let (done, list, _) = models(data.path(), &["list"]);
    assert!(done);
    assert_eq!(list["models"], serde_json::json!([]));
    assert_eq!(list["known"], serde_json::json!(["all-minilm-l6-v2"]));
}

#[test]
fn a_model_added_serves_from_the_next_start_and_a_broken_one_falls_back() {
    let source = tempfile::tempdir().expect("tempdir");
    let mut generator = rng::Rng(31);
    tiny_bert::write(source.path(), &mut || generator.next());
    let data = tempfile::tempdir().expect("tempdir");

    let (done, added, stderr) = models(
        data.path(),
        &["add", source.path().to_str().unwrap(), "--name", "tiny"],
    );
    assert!(done, "{stderr}");
    assert_eq!(added["status"], "installed");
    let (_, list, _) = models(data.path(), &["list"]);
    assert_eq!(list["models"][0]["name"], "tiny");
    assert_eq!(list["models"][0]["dims"], tiny_bert::HIDDEN);

    let log = data.path().join("serve.log");
    let daemon = Daemon::start_logging_to(engram(data.path()).env("ENGRAM_LOG", "info"), &log);
    let want = serde_json::json!({"name": "tiny", "error": null});
    assert_eq!(encoder_of(&daemon), (want.clone(), want));
    // Turns are routed by the model's meaning: each active skill embedded once, its
    // vector kept on disk for the next start.
    let turn = ok(
        daemon.call(
            "POST",
            "/api/turns",
            &serde_json::json!({"message": "will it rain tomorrow?"}).to_string(),
        ),
        201,
    );
    assert!(turn["catalog"].is_array(), "{turn}");
    let skills = ok(daemon.get("/api/skills"), 200);
    let active = skills["items"]
        .as_array()
        .expect("skills")
        .iter()
        .filter(|s| s["active"] == true)
        .count();
    assert!(active > 0, "{skills}");
    let cached = |data: &Path| -> Vec<usize> {
        let root = data.join("cache/skill-vectors");
        let mut counts: Vec<usize> = std::fs::read_dir(&root)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|model| std::fs::read_dir(model.path()).map_or(0, Iterator::count))
                    .collect()
            })
            .unwrap_or_default();
        counts.sort();
        counts
    };
    assert_eq!(cached(data.path()), vec![active]);
    daemon.stop();
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(logged.contains("sentence encoder: model tiny"), "{logged}");

    // The weights cut short: the daemon still starts, on the static table, and says why.
    let weights = data.path().join("models/tiny/model.safetensors");
    let bytes = std::fs::read(&weights).expect("weights");
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).expect("truncate");
    let daemon = Daemon::start(&mut engram(data.path()));
    let (health, status) = encoder_of(&daemon);
    assert_eq!(health, status);
    assert_eq!(health["name"], "static");
    let error = health["error"].as_str().expect("a reason");
    assert!(
        error.contains("tiny") && error.contains("model.safetensors"),
        "{error}"
    );
    daemon.stop();

    let (done, removed, _) = models(data.path(), &["remove", "tiny"]);
    assert!(done);
    assert_eq!(removed["status"], "removed");
    let (_, list, _) = models(data.path(), &["list"]);
    assert_eq!(list["models"], serde_json::json!([]));

    // A directory that is no model is refused, naming the file, and installs nothing.
    let (done, _, stderr) = models(
        data.path(),
        &["add", data.path().to_str().unwrap(), "--name", "nothing"],
    );
    assert!(!done);
    assert!(stderr.contains("config.json"), "{stderr}");
    let (_, list, _) = models(data.path(), &["list"]);
    assert_eq!(list["models"], serde_json::json!([]));
}

/// `pull` goes to HF_ENDPOINT at the pinned revision's paths, and files that are not
/// the pinned ones (here the tiny model's, served in place of all-MiniLM-L6-v2's) are
/// refused with nothing installed.
#[test]
fn pull_refuses_files_that_are_not_the_pinned_ones() {
    let source = tempfile::tempdir().expect("tempdir");
    let mut generator = rng::Rng(32);
    tiny_bert::write(source.path(), &mut || generator.next());
    let prefix =
        "/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/";
    let mut files = HashMap::new();
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        files.insert(
            format!("{prefix}{file}"),
            std::fs::read(source.path().join(file)).expect("file"),
        );
    }
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let hub = http::Server::start(Arc::new(move |request: &http::Request| {
        seen.lock().expect("lock").push(request.path.clone());
        match files.get(&request.path) {
            Some(body) => http::Response::Full {
                status: 200,
                content_type: "application/octet-stream".into(),
                body: body.clone(),
            },
            None => http::Response::Full {
                status: 404,
                content_type: "text/plain".into(),
                body: b"Entry not found".to_vec(),
            },
        }
    }));
    let data = tempfile::tempdir().expect("tempdir");
    let output = output_within(
        engram(data.path()).env("HF_ENDPOINT", hub.url()).args([
            "models",
            "pull",
            "all-minilm-l6-v2",
        ]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("config.json") && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    assert_eq!(
        *asked.lock().expect("lock"),
        [format!("{prefix}config.json")]
    );
    let (_, list, _) = models(data.path(), &["list"]);
    assert_eq!(list["models"], serde_json::json!([]));
    let leftovers: Vec<_> = std::fs::read_dir(data.path().join("models"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let (done, _, stderr) = models(data.path(), &["pull", "no-such-model"]);
    assert!(!done);
    assert!(stderr.contains("all-minilm-l6-v2"), "{stderr}");
}

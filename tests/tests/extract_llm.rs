//! `builtin:extract-llm` in the daemon, against the STAND-IN chat-completions endpoint
//! on loopback (no network or model here): selected in config.yaml, it extracts a
//! conversation's facts with the key its settings name; when the endpoint fails, the
//! rule extractor answers and the reason is in the log and in `GET /api/brain/status`.

use engram_e2e::standin::openai::{OpenAi, Reply, facts};
use engram_e2e::{Daemon, engram, ok};
use serde_json::json;

#[test]
fn extract_llm_learns_and_its_failures_are_reported() {
    let (stand_in, answer) = OpenAi::answering(Reply::Text(facts(&[(
        "constraint",
        "User is allergic to peanuts",
        "I am allergic to peanuts",
    )])));
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        data.path().join("config.yaml"),
        format!(
            "memory:\n  strategies:\n    extractor: builtin:extract-llm\nplugins:\n  extract-llm:\n    settings:\n      baseUrl: {}\n      model: stand-in\n      apiKeyEnv: E2E_LLM_KEY\n      timeoutMs: 2000\n    allowedHosts: ['{}']\n",
            stand_in.base_url(),
            stand_in.host()
        ),
    )
    .expect("config");
    let log = data.path().join("daemon.log");
    let daemon = Daemon::start_logging_to(
        engram(data.path()).env("E2E_LLM_KEY", "sk-e2e-secret"),
        &log,
    );

    let say = |conversation: &str, text: &str| {
        ok(
            daemon.call(
                "POST",
                &format!("/api/brain/conversations/{conversation}/messages"),
                &json!({"role": "user", "content": text}).to_string(),
            ),
            201,
        );
        ok(
            daemon.call(
                "POST",
                &format!("/api/brain/conversations/{conversation}/end"),
                "",
            ),
            200,
        )
    };
    let learned = say("c1", "By the way, I am allergic to peanuts.");
    assert_eq!(learned["extractor"], "builtin:extract-llm");
    assert_eq!(learned["applied"][0]["decision"], "added");
    let found = ok(daemon.get("/api/brain/memory/search?q=peanuts"), 200);
    assert_eq!(
        found["items"][0]["memory"]["summary"],
        "User is allergic to peanuts"
    );
    let requests = stand_in.raw_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-e2e-secret")
    );
    let status = ok(daemon.get("/api/brain/status"), 200);
    assert_eq!(status["strategies"][0]["plugin"], "builtin:extract-llm");
    assert!(status["strategies"][0]["last_failure"].is_null());

    answer.set(Reply::Raw {
        status: 500,
        content_type: "application/json".into(),
        body: br#"{"error": "overloaded"}"#.to_vec(),
        declared: true,
    });
    let fallback = say("c2", "My name is Dana and I work as a nurse.");
    assert_eq!(fallback["extractor"], "builtin:extract-rules");
    let status = ok(daemon.get("/api/brain/status"), 200);
    let failure = &status["strategies"][0]["last_failure"];
    assert_eq!(failure["plugin"], "builtin:extract-llm");
    assert_eq!(failure["code"], "trap");
    let reason = failure["reason"].as_str().expect("reason");
    assert!(
        reason.contains("the endpoint answered HTTP 500"),
        "{reason}"
    );
    assert!(failure["at"].as_str().is_some_and(|t| t.ends_with('Z')));

    drop(daemon);
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("falling back to the built-in one")
            && logged.contains("the endpoint answered HTTP 500"),
        "{logged}"
    );
    assert!(!logged.contains("sk-e2e-secret"), "the key is never logged");
}

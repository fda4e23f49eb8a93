//! `builtin:extract-llm` end to end through the real runtime, against a STAND-IN for
//! an OpenAI-compatible endpoint on loopback (no network or model here): a good
//! answer becomes validated candidates; every bad answer (too many facts, invalid JSON,
//! wrong types, 10 MB, a hanging server, HTTP 500, a refusal, an invented quote) fails
//! the call with its reason, the rule extractor answers instead, and the reason is
//! kept for the status. Settings and secrets reach only the plugin they belong to.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use engram::config::{ConfigFile, PluginConfig};
use engram::runtime::packages::PluginPackages;
use engram::runtime::strategies::Strategies;
use engram::runtime::{FixedSettings, PluginError, Runtime, World};
use engram_strategies::model::{Evidence, MemoryType};
use serde_json::{Value, json};
use support::openai::{OpenAi, Reply, completion, facts};
use support::*;

fn entry(settings: Value, allowed_hosts: &[String]) -> PluginConfig {
    PluginConfig {
        settings: settings.as_object().expect("an object").clone(),
        allowed_hosts: Some(allowed_hosts.to_vec()),
        private_hosts: None,
    }
}

fn fixed(plugins: &[(&str, PluginConfig)], vars: &[(&str, &str)]) -> Runtime {
    let settings = FixedSettings {
        plugins: plugins
            .iter()
            .map(|(name, entry)| (name.to_string(), entry.clone()))
            .collect(),
        vars: vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    };
    runtime_with_services(services().with_settings(Arc::new(settings)))
}

const GOOD: &str = r#"{"facts": [
    {"type": "identity", "summary": "User's name is Dana", "evidence": "direct",
     "confidence": 0.95, "negated": false, "persons": [], "quote": "My name is Dana"},
    {"type": "relationship", "summary": "User's sister is Anna", "evidence": "direct",
     "confidence": 0.9, "negated": false,
     "persons": [{"name": "Anna", "relation": "sister"}],
     "quote": "my sister anna is visiting next week"},
    {"type": "preference", "summary": "User does not like coffee", "evidence": "direct",
     "confidence": 0.8, "negated": true, "persons": [],
     "quote": "I don’t like coffee anymore"}
]}"#;

#[test]
fn a_good_answer_becomes_validated_candidates() {
    let (stand_in, answer) = OpenAi::answering(Reply::Text(GOOD.into()));
    let settings = json!({
        "baseUrl": stand_in.base_url(),
        "model": "stand-in-model",
        "apiKeyEnv": "LLM_TEST_KEY",
        "timeoutMs": 5000,
    });
    let runtime = fixed(
        &[("extract-llm", entry(settings, &[stand_in.host()]))],
        &[("LLM_TEST_KEY", "sk-test-123")],
    );
    let plugin = runtime.load_builtin("extract-llm").expect("embedded");
    assert_eq!(plugin.world(), World::Extractor);
    let out = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect("a good answer");

    assert_eq!(out.len(), 3);
    assert_eq!(out[0].memory_type, MemoryType::Identity);
    assert_eq!(out[0].summary, "User's name is Dana");
    assert_eq!(out[0].source_turns, ["t2"]);
    assert_eq!(out[0].evidence, Evidence::Direct);
    assert_eq!(out[0].importance, MemoryType::Identity.default_importance());
    assert_eq!(out[1].persons[0].name, "Anna");
    assert_eq!(out[1].persons[0].relation.as_deref(), Some("sister"));
    // Quotes match on letters and digits, whatever the case or the apostrophe.
    assert_eq!(out[1].source_turns, ["t5"]);
    assert_eq!(out[2].source_turns, ["t4"]);
    assert!(out[2].negated);

    let requests = stand_in.raw_requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    let body = request.json();
    assert_eq!(body["model"], "stand-in-model");
    assert_eq!(body["temperature"], 0);
    let format = &body["response_format"]["json_schema"];
    assert_eq!(format["name"], "engram_facts_v1");
    assert_eq!(format["strict"], true);
    assert_eq!(format["schema"]["properties"]["facts"]["maxItems"], 3);
    let transcript = body["messages"][1]["content"].as_str().expect("text");
    assert!(
        transcript.contains("[user]\nMy name is Dana"),
        "{transcript}"
    );
    assert!(transcript.contains("[assistant]\n"), "{transcript}");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .is_some_and(|p| p.contains("at most 3 facts"))
    );

    // No facts is an answer too.
    answer.set(Reply::Text(r#"{"facts": []}"#.into()));
    let none = runtime
        .extract(&plugin, &conversation(), NOW)
        .expect("none");
    assert!(none.is_empty());
}

struct Setup {
    _dir: tempfile::TempDir,
    config_path: std::path::PathBuf,
    strategies: Strategies,
}

/// Strategies as the daemon builds them: settings and the selection from config.yaml.
fn strategies(config_yaml: &str) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("config.yaml");
    std::fs::write(&config_path, config_yaml).expect("config");
    let config = Arc::new(ConfigFile::new(config_path.clone()));
    let runtime = Arc::new(runtime_with_services(
        services().with_settings(config.clone()),
    ));
    let strategies = Strategies::new(
        runtime,
        PluginPackages::new(dir.path().join("plugins")),
        config,
    )
    .expect("strategies");
    Setup {
        _dir: dir,
        config_path,
        strategies,
    }
}

fn llm_config(stand_in: &OpenAi, timeout_ms: u64) -> String {
    format!(
        "memory:\n  strategies:\n    extractor: builtin:extract-llm\nplugins:\n  extract-llm:\n    allowedHosts: ['{}']\n    settings:\n      baseUrl: {}\n      model: stand-in\n      timeoutMs: {timeout_ms}\n",
        stand_in.host(),
        stand_in.base_url()
    )
}

#[test]
fn every_bad_answer_fails_the_call_and_the_rules_answer_instead() {
    let (stand_in, answer) = OpenAi::answering(Reply::Text(GOOD.into()));
    let setup = strategies(&llm_config(&stand_in, 300));
    let good = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("good answer");
    assert_eq!(good.plugin, "builtin:extract-llm");
    assert_eq!(good.value.len(), 3);
    assert!(setup.strategies.last_failure(World::Extractor).is_none());

    let four = facts(&[
        ("identity", "User's name is Dana", "My name is Dana"),
        (
            "project",
            "User builds a weather station",
            "home weather station",
        ),
        (
            "habit",
            "User runs every morning",
            "go running every morning",
        ),
        (
            "decision",
            "User chose the BME280",
            "decided to use the BME280",
        ),
    ]);
    let wrong_types = r#"{"facts": [{"type": "identity", "summary": "User's name is Dana",
        "evidence": "direct", "confidence": "high", "negated": false, "persons": [],
        "quote": "My name is Dana"}]}"#;
    let invented = facts(&[("identity", "User is an astronaut", "I fly to the moon")]);
    let ten_mb = || {
        let mut body = completion("x").to_vec();
        body.resize(10 * 1024 * 1024, b' ');
        body
    };
    let cases: Vec<(&str, Reply, &str)> = vec![
        (
            "4 facts",
            Reply::Text(four),
            "invalid facts: 4 facts, more than the 3 the schema allows",
        ),
        (
            "invalid JSON",
            Reply::Text("Sure! Here are the facts: {facts: [".into()),
            "the message is not facts JSON of the schema",
        ),
        (
            "not a completion",
            Reply::Raw {
                status: 200,
                content_type: "text/html".into(),
                body: b"<html>busy</html>".to_vec(),
                declared: true,
            },
            "the answer is not a chat-completions response",
        ),
        (
            "wrong types",
            Reply::Text(wrong_types.into()),
            r#"invalid type: string "high", expected f64"#,
        ),
        (
            "an invented quote",
            Reply::Text(invented),
            "is not in any of the user's messages",
        ),
        (
            "a refusal",
            Reply::Refusal("I can't help with that.".into()),
            "the model refused: I can't help with that.",
        ),
        (
            "10 MB declared",
            Reply::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: ten_mb(),
                declared: true,
            },
            "the answer is over 1048576 bytes",
        ),
        (
            "10 MB streamed",
            Reply::Raw {
                status: 200,
                content_type: "application/json".into(),
                body: ten_mb(),
                declared: false,
            },
            "the answer is over 1048576 bytes",
        ),
        (
            "a hanging server",
            Reply::Stall(Duration::from_secs(60)),
            "no answer within 300 ms (timeoutMs)",
        ),
        (
            "HTTP 500",
            Reply::Raw {
                status: 500,
                content_type: "application/json".into(),
                body: br#"{"error": {"message": "overloaded"}}"#.to_vec(),
                declared: true,
            },
            "the endpoint answered HTTP 500",
        ),
    ];
    let rules = engram_strategies::extract::extract(&conversation(), NOW);
    for (case, reply, reason) in cases {
        answer.set(reply);
        let outcome = setup
            .strategies
            .extract(&conversation(), NOW)
            .unwrap_or_else(|e| panic!("{case}: the fallback answers: {e}"));
        assert_eq!(outcome.plugin, "builtin:extract-rules", "{case}");
        assert_eq!(outcome.value, rules, "{case}");
        let failure = outcome.fallback_from.expect("the failure is reported");
        assert!(
            matches!(&failure, PluginError::Trap { name, .. } if name == "builtin:extract-llm"),
            "{case}: {failure:?}"
        );
        let recorded = setup
            .strategies
            .last_failure(World::Extractor)
            .expect("kept for the status");
        assert_eq!(recorded.plugin, "builtin:extract-llm", "{case}");
        assert_eq!(recorded.code, "trap", "{case}");
        assert!(
            recorded.reason.contains("extract-llm (prompt v1): ")
                && recorded.reason.contains(reason),
            "{case}: {}",
            recorded.reason
        );
    }

    // The plugin works again once the endpoint does; the last failure stays visible
    // until the strategy changes.
    answer.set(Reply::Text(GOOD.into()));
    let again = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("good");
    assert_eq!(again.plugin, "builtin:extract-llm");
    std::fs::write(&setup.config_path, "memory:\n  strategies: {}\n").expect("config");
    assert!(setup.strategies.last_failure(World::Extractor).is_none());
}

#[test]
fn an_endpoint_outside_the_allowed_hosts_is_refused_before_any_connection() {
    let (stand_in, _) = OpenAi::answering(Reply::Text(GOOD.into()));
    // The manifest allows api.openai.com only; without the operator's allowedHosts
    // the stand-in is out of reach.
    let yaml = format!(
        "memory:\n  strategies:\n    extractor: builtin:extract-llm\nplugins:\n  extract-llm:\n    settings:\n      baseUrl: {}\n",
        stand_in.base_url()
    );
    let setup = strategies(&yaml);
    let outcome = setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("fallback");
    assert_eq!(outcome.plugin, "builtin:extract-rules");
    let reason = setup
        .strategies
        .last_failure(World::Extractor)
        .expect("failure")
        .reason;
    assert!(
        reason.contains("not in the plugin's allowed hosts"),
        "{reason}"
    );
    assert!(stand_in.requests().is_empty());

    // A typo in the settings is reported as such.
    std::fs::write(&setup.config_path, format!("{yaml}      modle: x\n")).expect("config");
    setup
        .strategies
        .extract(&conversation(), NOW)
        .expect("fallback");
    let reason = setup
        .strategies
        .last_failure(World::Extractor)
        .expect("failure")
        .reason;
    assert!(reason.contains("unknown field `modle`"), "{reason}");
}

fn probe_as(name: &str, dir: &Path) {
    package_with_manifest(
        "settings-probe",
        dir,
        &format!("name = \"{name}\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n"),
    );
}

/// Calls a settings-probe: (the settings it saw, the outcome of `secret(key)`).
fn probe(runtime: &Runtime, dir: &Path, key: &str) -> (Value, String) {
    let plugin = runtime.load_dir(dir).expect("load");
    let mut conversation = conversation();
    conversation.messages.truncate(1);
    conversation.messages[0].content = key.to_string();
    let out = runtime.extract(&plugin, &conversation, NOW).expect("call");
    let settings = serde_json::from_str(&out[0].summary).expect("settings JSON");
    (settings, out[0].detail.clone().expect("detail"))
}

#[test]
fn settings_and_secrets_are_private_to_each_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    probe_as("probe-a", &a);
    probe_as("probe-b", &b);
    probe_as("probe-c", &c);
    let runtime = fixed(
        &[
            (
                "probe-a",
                entry(
                    json!({"who": "a", "keyEnv": "A_KEY", "plainKey": "A_KEY"}),
                    &[],
                ),
            ),
            (
                "probe-b",
                entry(json!({"who": "b", "keyEnv": "MISSING_KEY"}), &[]),
            ),
        ],
        &[("A_KEY", "alpha"), ("B_KEY", "beta")],
    );

    let (settings, secret) = probe(&runtime, &a, "keyEnv");
    assert_eq!(
        settings,
        json!({"who": "a", "keyEnv": "A_KEY", "plainKey": "A_KEY"})
    );
    assert_eq!(secret, "ok alpha");
    // Only keys ending in `Env` name variables.
    let (_, secret) = probe(&runtime, &a, "plainKey");
    assert!(
        secret.starts_with("error SecretError::NotConfigured"),
        "{secret}"
    );

    let (settings, secret) = probe(&runtime, &b, "keyEnv");
    assert_eq!(settings, json!({"who": "b", "keyEnv": "MISSING_KEY"}));
    assert!(secret.starts_with("error SecretError::Unset"), "{secret}");
    // Another plugin's variable, or any variable of the host, is out of reach.
    for key in ["A_KEY", "B_KEY", "HOMEEnv", "PATH"] {
        let (_, secret) = probe(&runtime, &b, key);
        assert!(
            secret.starts_with("error SecretError::NotConfigured"),
            "{key}: {secret}"
        );
    }

    let (settings, secret) = probe(&runtime, &c, "keyEnv");
    assert_eq!(settings, json!({}));
    assert!(
        secret.starts_with("error SecretError::NotConfigured"),
        "{secret}"
    );
}

#[test]
fn settings_are_reread_with_the_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let package = dir.path().join("probe");
    probe_as("probe-a", &package);
    let config_path = dir.path().join("config.yaml");
    let config = Arc::new(ConfigFile::new(config_path.clone()));
    let runtime = runtime_with_services(services().with_settings(config));

    std::fs::write(
        &config_path,
        "plugins:\n  probe-a:\n    settings: {round: 1}\n",
    )
    .expect("config");
    assert_eq!(probe(&runtime, &package, "x").0, json!({"round": 1}));
    std::fs::write(
        &config_path,
        "plugins:\n  probe-a:\n    settings:\n      round: 2\n      list: [1, two]\n",
    )
    .expect("config");
    assert_eq!(
        probe(&runtime, &package, "x").0,
        json!({"round": 2, "list": [1, "two"]})
    );
    // A broken file keeps the last good settings in force.
    std::fs::write(&config_path, "plugins: [\n").expect("config");
    assert_eq!(
        probe(&runtime, &package, "x").0,
        json!({"round": 2, "list": [1, "two"]})
    );
}

//! Test guest `settings-probe`: returns one candidate whose summary is the settings
//! JSON the host gave it (`config.settings`) and whose detail is the outcome of
//! `config.secret(<first message's content>)`: `ok <value>` or `error <debug text>`.
//! It exists to test that a plugin sees its own settings and secrets and nothing else.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

use engram::plugin::config;
use engram::plugin::types::{Evidence, MemoryType};

struct SettingsProbe;

impl Guest for SettingsProbe {
    fn extract(conversation: Conversation, _now: i64) -> Vec<Candidate> {
        let key = conversation
            .messages
            .first()
            .map(|m| m.content.trim().to_string())
            .unwrap_or_default();
        let secret = match config::secret(&key) {
            Ok(value) => format!("ok {value}"),
            Err(error) => format!("error {error:?}"),
        };
        vec![Candidate {
            memory_type: MemoryType::Episode,
            summary: config::settings(),
            detail: Some(secret),
            confidence: 0.5,
            importance: 0.5,
            durability: 0.5,
            evidence: Evidence::Direct,
            negated: false,
            persons: Vec::new(),
            source_turns: Vec::new(),
        }]
    }
}

export!(SettingsProbe);

//! The shape of the routing calibration data in `tests/fixtures/routing` (its README):
//! a broken edit of the everyday messages that need no skill fails here rather than
//! silently changing what `cargo bench -p engram-host --bench routing` measures.

use std::collections::HashSet;

mod support;

/// The kinds the README lists.
const KINDS: [&str; 9] = [
    "small-talk",
    "thanks",
    "memory",
    "planning",
    "knowledge",
    "advice",
    "writing",
    "feelings",
    "opinion",
];

#[test]
fn needs_no_skill_messages_are_well_formed() {
    let path = support::fixtures().join("routing/needs-no-skill.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut seen = HashSet::new();
    let mut lines = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {n}: not JSON: {e}"));
        let object = value
            .as_object()
            .unwrap_or_else(|| panic!("line {n}: not a JSON object"));
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["kind", "text"], "line {n}: keys");
        let message = object["text"].as_str().unwrap_or_default();
        assert!(!message.trim().is_empty(), "line {n}: empty text");
        let kind = object["kind"].as_str().unwrap_or_default();
        assert!(KINDS.contains(&kind), "line {n}: unknown kind {kind:?}");
        assert!(
            seen.insert(message.trim().to_lowercase()),
            "line {n}: duplicate text {message:?}"
        );
        lines += 1;
    }
    assert!(lines >= 300, "{lines} messages, at least 300 expected");
}

//! The readers on the fixtures written in each source's documented format
//! (`tests/fixtures/import/`), and on malformed input, which is refused naming the
//! entry at fault.

use std::path::PathBuf;

use engram_strategies::model::MemoryType;

use super::markdown::Note;
use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/import")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn chatgpt_keeps_the_branch_last_seen_with_its_times_and_title() {
    let batch = chatgpt::parse(&fixture("chatgpt-conversations.json")).expect("parse");
    assert!(batch.memories.is_empty());
    assert_eq!(batch.conversations.len(), 2);
    let lisbon = &batch.conversations[0];
    assert_eq!(lisbon.key, "6f1c2a7e-0000-4000-8000-000000000001");
    assert_eq!(lisbon.title.as_deref(), Some("Lisbon trip planning"));
    let said: Vec<(&str, &str)> = lisbon
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    // The hidden system message, the regenerated answer and the tool output are out.
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0].0, "user");
    assert!(said[0].1.starts_with("I live in Porto"));
    assert!(said[1].1.starts_with("Here is a peanut-free weekend"));
    assert_eq!(lisbon.messages[0].at, 1_731_000_010_500);
    // An image part is left out, the text of the same message kept.
    let bread = &batch.conversations[1];
    assert_eq!(
        bread.messages[0].content,
        "My favourite bread is sourdough."
    );
}

#[test]
fn chatgpt_refuses_what_is_not_its_export() {
    let err = chatgpt::parse(b"{\"title\": 1}").expect_err("an object");
    assert!(err.reason.contains("JSON array"), "{err}");
    let err = chatgpt::parse(
        b"[{\"title\": \"A\", \"id\": \"x\", \"current_node\": \"n\", \"mapping\": {}}]",
    )
    .expect_err("dangling node");
    assert_eq!(err.entry, "conversation 1 (\"A\")");
    assert!(err.reason.contains("`n` is not in `mapping`"), "{err}");
    let cycle = br#"[{"id": "x", "current_node": "a", "mapping": {
        "a": {"parent": "b", "message": null}, "b": {"parent": "a", "message": null}}}]"#;
    let err = chatgpt::parse(cycle).expect_err("cycle");
    assert!(err.reason.contains("cycle"), "{err}");
    let err = chatgpt::parse(b"[\n{\"id\": \"x\",\n").expect_err("truncated");
    assert!(err.entry.starts_with("line "), "{err}");
}

#[test]
fn claude_reads_text_or_content_blocks_and_skips_empty_conversations() {
    let batch = claude::parse(&fixture("claude-conversations.json")).expect("parse");
    assert_eq!(batch.conversations.len(), 1);
    let job = &batch.conversations[0];
    assert_eq!(job.title.as_deref(), Some("New job"));
    assert_eq!(job.messages.len(), 2);
    assert_eq!(job.messages[1].role, "assistant");
    assert_eq!(
        job.messages[1].content,
        "Here is a short introduction for your new colleagues."
    );
    assert_eq!(
        job.messages[0].at,
        crate::time::rfc3339::parse("2024-11-08T09:00:10Z").expect("time")
    );
    let err = claude::parse(
        br#"[{"uuid": "u", "name": "X", "chat_messages": [{"sender": "robot", "text": "hi", "created_at": "2024-01-01T00:00:00Z"}]}]"#,
    )
    .expect_err("sender");
    assert_eq!(err.entry, "conversation 1 (\"X\"), message 1");
    let err = claude::parse(
        br#"[{"uuid": "u", "chat_messages": [{"sender": "human", "text": "hi", "created_at": "yesterday"}]}]"#,
    )
    .expect_err("time");
    assert!(err.reason.contains("RFC 3339"), "{err}");
}

#[test]
fn mem0_memories_become_typed_memories_about_the_user() {
    let batch = mem0::parse(&fixture("mem0-memories.json")).expect("parse");
    let got: Vec<(&str, MemoryType)> = batch
        .memories
        .iter()
        .map(|m| (m.memory.summary.as_str(), m.memory.memory_type))
        .collect();
    assert_eq!(
        got,
        [
            (
                "User likes green tea in the morning",
                MemoryType::Preference
            ),
            ("User's name is Alex Moreau", MemoryType::Identity),
            ("User is allergic to shellfish", MemoryType::Constraint),
            ("User wants to run a marathon next year", MemoryType::Goal),
        ]
    );
    assert_eq!(
        batch.memories[0].key,
        "5d1a0c1e-0000-4000-8000-0000000000a1"
    );
    let err = mem0::parse(br#"{"results": [{"id": "a", "memory": "x"}, {"id": "b"}]}"#)
        .expect_err("no text");
    assert_eq!(err.entry, "memory 2 (b)");
    assert!(mem0::parse(br#"{"items": []}"#).is_err());
    assert_eq!(mem0::parse(b"[]").expect("bare array").memories.len(), 0);
}

fn notes() -> Vec<Note> {
    ["coffee.md", "projects/garden.md", "empty.md"]
        .iter()
        .map(|path| Note {
            path: (*path).to_string(),
            text: String::from_utf8(fixture(&format!("notes/{path}"))).expect("utf-8"),
        })
        .collect()
}

#[test]
fn notes_give_their_observations_or_themselves_with_their_path() {
    let batch = markdown::parse(&notes()).expect("parse");
    let got: Vec<(&str, MemoryType)> = batch
        .memories
        .iter()
        .map(|m| (m.memory.summary.as_str(), m.memory.memory_type))
        .collect();
    assert_eq!(
        got,
        [
            (
                "Prefers pour-over coffee to espresso",
                MemoryType::Preference
            ),
            ("Grinds beans fresh every morning", MemoryType::Habit),
            (
                "Decided to stop drinking coffee after 2pm",
                MemoryType::Decision
            ),
            (
                "Garden project: Building raised beds in the back garden this spring, with tomatoes and basil.",
                MemoryType::Project
            ),
        ]
    );
    assert_eq!(
        batch.memories[0].memory.detail.as_deref(),
        Some("From coffee.md (Coffee)")
    );
    let garden = batch.memories[3].memory.detail.as_deref().expect("detail");
    assert!(garden.starts_with("From projects/garden.md"), "{garden}");
    assert!(garden.contains("add lime"), "{garden}");
    // Keys are stable: the same notes give the same keys.
    let again = markdown::parse(&notes()).expect("parse");
    assert_eq!(
        batch.memories.iter().map(|m| &m.key).collect::<Vec<_>>(),
        again.memories.iter().map(|m| &m.key).collect::<Vec<_>>()
    );
}

#[test]
fn a_note_with_a_broken_frontmatter_is_refused_by_path_and_line() {
    let unclosed = Note {
        path: "a.md".into(),
        text: "---\ntitle: A\n\n- [fact] x\n".into(),
    };
    let err = markdown::parse(&[unclosed]).expect_err("unclosed");
    assert_eq!(err.entry, "a.md line 1");
    let empty = Note {
        path: "b.md".into(),
        text: "# B\n\n- [fact]   #tag\n".into(),
    };
    let err = markdown::parse(&[empty]).expect_err("empty observation");
    assert_eq!(err.entry, "b.md line 3");
}

#[test]
fn a_batch_is_checked_whole_before_anything_is_written() {
    let mut batch = chatgpt::parse(&fixture("chatgpt-conversations.json")).expect("parse");
    assert!(validate(&batch, "default", 0).is_ok());
    batch.conversations[1].messages[0].role = "tool".into();
    let err = validate(&batch, "default", 0).expect_err("role");
    assert_eq!(err.entry, "conversations[1].messages[0]");
    let mut memories = mem0::parse(&fixture("mem0-memories.json")).expect("parse");
    memories.memories[2].memory.summary = " ".into();
    let err = validate(&memories, "default", 0).expect_err("blank summary");
    assert_eq!(err.entry, "memories[2]");
}

#[test]
fn summaries_without_a_subject_get_the_user() {
    assert_eq!(with_subject("Likes tea"), "User likes tea");
    assert_eq!(
        with_subject("Favourite colour is green"),
        "User's favourite colour is green"
    );
    assert_eq!(with_subject("User likes tea"), "User likes tea");
    assert_eq!(with_subject("Ben is a pilot"), "Ben is a pilot");
}

#[test]
fn each_user_replays_into_conversations_of_their_own() {
    let mine = conversation_id(Source::Chatgpt, "abc", "default");
    assert_eq!(mine, "import-chatgpt-abc");
    let theirs = conversation_id(Source::Chatgpt, "abc", "alice");
    assert_ne!(theirs, mine);
    assert!(theirs.starts_with("import-chatgpt-") && theirs.ends_with("-abc"));
    assert_eq!(
        conversation_id(Source::Claude, &"k".repeat(300), "default")
            .chars()
            .count(),
        128
    );
}

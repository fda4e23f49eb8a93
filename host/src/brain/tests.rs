//! The Second Brain's library API on real SQLite files.

use std::sync::Arc;

use engram_strategies::model::{Evidence, MemoryType, Scope};

use super::clock::{DAY_MS, ManualClock};
use super::store::{ListFilter, StoreError};
use super::*;

const START: i64 = 1_790_000_000_000;

struct Fixture {
    dir: tempfile::TempDir,
    clock: ManualClock,
    brain: Brain,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(START);
    let brain = Brain::open(
        &dir.path().join("memory/second-brain/second-brain.db"),
        Arc::new(clock.clone()),
    )
    .expect("open");
    Fixture { dir, clock, brain }
}

fn new(memory_type: MemoryType, summary: &str) -> NewMemory {
    NewMemory {
        memory_type,
        summary: summary.to_string(),
        detail: None,
        evidence: None,
        scope: None,
        confidence: None,
        importance: None,
    }
}

fn export(brain: &Brain, user: &str) -> String {
    let mut out = Vec::new();
    brain.export(user, &mut out).expect("export");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn manual_memories_take_the_default_scope_of_their_type() {
    let f = fixture();
    for t in MemoryType::ALL {
        let record = f
            .brain
            .add("default", new(*t, &format!("a {t} fact")))
            .expect("add");
        assert_eq!(record.scope, t.default_scope(), "{t}");
        assert_eq!(record.evidence, Evidence::Manual);
        assert!(record.id.starts_with("mem_"));
        assert_eq!(f.brain.get("default", &record.id).expect("get"), record);
    }
    assert!(
        f.dir
            .path()
            .join("memory/second-brain/second-brain.db")
            .is_file()
    );
}

#[test]
fn edits_change_only_the_editable_fields_and_bad_values_change_nothing() {
    let f = fixture();
    let added = f
        .brain
        .add("default", new(MemoryType::Preference, "User likes tea"))
        .expect("add");
    f.clock.advance(1_000);
    let edited = f
        .brain
        .edit(
            "default",
            &added.id,
            MemoryEdit {
                summary: Some("User likes green tea".into()),
                memory_type: Some(MemoryType::Habit),
                importance: Some(0.3),
                confidence: Some(0.7),
                scope: Some(Scope::Active),
                validated: Some(false),
            },
        )
        .expect("edit");
    assert_eq!(edited.summary, "User likes green tea");
    assert_eq!(edited.memory_type, MemoryType::Habit);
    assert_eq!((edited.importance, edited.confidence), (0.3, 0.7));
    assert_eq!(edited.scope, Scope::Active);
    assert!(!edited.validated);
    assert_eq!(edited.updated_at, START + 1_000);
    assert_eq!(edited.created_at, added.created_at);

    let before = export(&f.brain, "default");
    for (edit, field) in [
        (
            MemoryEdit {
                confidence: Some(1.5),
                ..Default::default()
            },
            "confidence",
        ),
        (
            MemoryEdit {
                importance: Some(f32::NAN),
                ..Default::default()
            },
            "importance",
        ),
        (
            MemoryEdit {
                summary: Some("   ".into()),
                ..Default::default()
            },
            "summary",
        ),
    ] {
        match f.brain.edit("default", &added.id, edit) {
            Err(StoreError::Invalid { field: named, .. }) => assert_eq!(named, field),
            other => panic!("expected an error naming {field}, got {other:?}"),
        }
    }
    assert!(matches!(
        f.brain
            .edit("default", "mem_missing", MemoryEdit::default()),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        export(&f.brain, "default"),
        before,
        "bad input changed nothing"
    );
    let history = f.brain.history("default", &added.id).expect("history");
    let events: Vec<&str> = history.iter().map(|h| h.event.as_str()).collect();
    assert_eq!(events, ["ADD", "UPDATE"]);
}

#[test]
fn delete_removes_the_row_its_search_entry_and_its_history_text() {
    let f = fixture();
    let kept = f
        .brain
        .add("default", new(MemoryType::Preference, "User likes jazz"))
        .expect("add");
    let gone = f
        .brain
        .add("default", new(MemoryType::Preference, "User likes opera"))
        .expect("add");
    assert_eq!(
        f.brain
            .search("default", "opera", 10)
            .expect("search")
            .len(),
        1
    );
    f.brain.delete("default", &gone.id).expect("delete");
    assert!(matches!(
        f.brain.get("default", &gone.id),
        Err(StoreError::NotFound(_))
    ));
    assert!(
        f.brain
            .search("default", "opera", 10)
            .expect("search")
            .is_empty()
    );
    let fts_rows: i64 = f
        .brain
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'opera'",
                [],
                |r| r.get(0),
            )?)
        })
        .expect("count");
    assert_eq!(fts_rows, 0);
    let history = f.brain.history("default", &gone.id).expect("history");
    assert_eq!(history.last().map(|h| h.event.as_str()), Some("DELETE"));
    assert!(
        history
            .iter()
            .all(|h| h.old_value.is_none() && h.new_value.is_none()),
        "no text kept"
    );
    assert!(matches!(
        f.brain.delete("default", &gone.id),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        f.brain.get("default", &kept.id).expect("kept").summary,
        "User likes jazz"
    );
}

#[test]
fn no_call_crosses_users() {
    let f = fixture();
    let anna = f
        .brain
        .add("anna", new(MemoryType::Preference, "User likes coffee"))
        .expect("add");
    assert!(matches!(
        f.brain.get("bob", &anna.id),
        Err(StoreError::NotFound(_))
    ));
    assert!(
        f.brain
            .search("bob", "coffee", 10)
            .expect("search")
            .is_empty()
    );
    assert!(
        f.brain
            .list(
                "bob",
                &ListFilter {
                    limit: 50,
                    ..Default::default()
                }
            )
            .expect("list")
            .items
            .is_empty()
    );
    assert!(matches!(
        f.brain.edit("bob", &anna.id, MemoryEdit::default()),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        f.brain.delete("bob", &anna.id),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(f.brain.clear("bob").expect("clear"), 0);
    assert!(f.brain.get("anna", &anna.id).is_ok());
    use crate::runtime::MemorySource;
    assert!(MemorySource::search(&f.brain, "bob", "coffee", 5).is_empty());
    assert_eq!(MemorySource::search(&f.brain, "anna", "coffee", 5).len(), 1);
}

#[test]
fn listing_pages_and_filters_by_tier_and_type() {
    let f = fixture();
    for i in 0..7 {
        f.clock.advance(1);
        f.brain
            .add(
                "default",
                new(MemoryType::Goal, &format!("User wants goal {i}")),
            )
            .expect("add");
    }
    let sleeping = f
        .brain
        .add("default", new(MemoryType::Habit, "User swims"))
        .expect("add");
    f.brain
        .edit(
            "default",
            &sleeping.id,
            MemoryEdit {
                scope: Some(Scope::Subconscious),
                ..Default::default()
            },
        )
        .expect("edit");

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = f
            .brain
            .list(
                "default",
                &ListFilter {
                    conscious: Some(true),
                    limit: 3,
                    cursor,
                    ..Default::default()
                },
            )
            .expect("list");
        seen.extend(page.items.into_iter().map(|r| r.summary));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let expected: Vec<String> = (0..7)
        .rev()
        .map(|i| format!("User wants goal {i}"))
        .collect();
    assert_eq!(seen, expected, "newest first, each once");

    let sub = f
        .brain
        .list(
            "default",
            &ListFilter {
                conscious: Some(false),
                limit: 50,
                ..Default::default()
            },
        )
        .expect("list");
    assert_eq!(sub.items.len(), 1);
    assert_eq!(sub.items[0].prior_scope, Some(Scope::Durable));
    let habits = f
        .brain
        .list(
            "default",
            &ListFilter {
                memory_type: Some(MemoryType::Habit),
                limit: 50,
                ..Default::default()
            },
        )
        .expect("list");
    assert_eq!(habits.items.len(), 1);
    assert!(matches!(
        f.brain.list(
            "default",
            &ListFilter {
                cursor: Some("garbage".into()),
                limit: 5,
                ..Default::default()
            }
        ),
        Err(StoreError::Invalid {
            field: "cursor",
            ..
        })
    ));
}

#[test]
fn search_merges_tiers_and_says_which_is_which() {
    let f = fixture();
    f.brain
        .add(
            "default",
            new(MemoryType::Preference, "User likes hiking in the Alps"),
        )
        .expect("add");
    let old = f
        .brain
        .add(
            "default",
            new(MemoryType::Habit, "User went hiking every Sunday"),
        )
        .expect("add");
    f.brain
        .edit(
            "default",
            &old.id,
            MemoryEdit {
                scope: Some(Scope::Subconscious),
                ..Default::default()
            },
        )
        .expect("edit");
    let results = f.brain.search("default", "hiking", 10).expect("search");
    assert_eq!(results.len(), 2);
    assert_eq!(results.iter().filter(|r| r.conscious).count(), 1);
    assert_eq!(results.iter().filter(|r| !r.conscious).count(), 1);
    // Query syntax cannot break the search.
    for hostile in ["\"", "hiking AND (", "NEAR(", "*", "", "-- ;"] {
        f.brain
            .search("default", hostile, 10)
            .expect("no syntax error");
    }
}

#[test]
fn export_and_import_round_trip_losslessly() {
    let f = fixture();
    let a = f
        .brain
        .add("default", new(MemoryType::Identity, "User's name is Dana"))
        .expect("add");
    f.clock.advance(DAY_MS);
    let b = f
        .brain
        .add(
            "default",
            new(MemoryType::Goal, "User wants to run a marathon"),
        )
        .expect("add");
    f.brain
        .edit(
            "default",
            &b.id,
            MemoryEdit {
                scope: Some(Scope::Subconscious),
                ..Default::default()
            },
        )
        .expect("edit");
    f.brain
        .store()
        .write(|tx| {
            tx.execute(
                "INSERT INTO persons (id, user_id, name, aliases, created_at, last_seen) VALUES ('per_1', 'default', 'Anna', '[\"Annie\"]', 5, 6)",
                [],
            )?;
            tx.execute(
                "INSERT INTO memory_persons (memory_id, person_id, user_id, relation) VALUES (?1, 'per_1', 'default', 'sister')",
                [&a.id],
            )?;
            Ok(())
        })
        .expect("person");
    let exported = export(&f.brain, "default");
    assert_eq!(exported.lines().count(), 4);

    let other = fixture();
    let count = other
        .brain
        .import("default", &mut exported.as_bytes())
        .expect("import");
    assert_eq!(count, 4);
    assert_eq!(
        export(&other.brain, "default"),
        exported,
        "round trip is lossless"
    );
    assert_eq!(
        other.brain.get("default", &b.id).expect("get"),
        f.brain.get("default", &b.id).expect("get")
    );
    // Importing the same file again replaces, it does not duplicate.
    other
        .brain
        .import("default", &mut exported.as_bytes())
        .expect("again");
    assert_eq!(export(&other.brain, "default"), exported);
}

#[test]
fn a_bad_import_line_names_itself_and_imports_nothing() {
    let f = fixture();
    let source = fixture();
    source
        .brain
        .add("default", new(MemoryType::Habit, "User runs"))
        .expect("add");
    let good = export(&source.brain, "default");
    let bad_score = good.replace("\"confidence\":1.0", "\"confidence\":7.0");
    for (text, line) in [
        (format!("{good}{{\"kind\":\"memory\",\"id\":1}}\n"), 2),
        (format!("{good}not json\n"), 2),
        (bad_score, 1),
        (good.replace("\"type\":\"habit\"", "\"type\":\"hobby\""), 1),
    ] {
        match f.brain.import("default", &mut text.as_bytes()) {
            Err(StoreError::Import { line: named, .. }) => assert_eq!(named, line, "{text}"),
            other => panic!("expected an import error, got {other:?}"),
        }
        assert_eq!(export(&f.brain, "default"), "", "nothing imported");
    }
}

#[test]
fn learning_can_be_paused_and_resumed_per_user() {
    let f = fixture();
    assert!(!f.brain.learning_paused("default").expect("read"));
    f.brain.set_learning_paused("default", true).expect("pause");
    assert!(f.brain.learning_paused("default").expect("read"));
    assert!(!f.brain.learning_paused("other").expect("read"));
    f.brain
        .set_learning_paused("default", false)
        .expect("resume");
    assert!(!f.brain.learning_paused("default").expect("read"));
}

#[test]
fn clear_removes_every_memory_of_the_user() {
    let f = fixture();
    for i in 0..5 {
        f.brain
            .add(
                "default",
                new(MemoryType::Episode, &format!("User did thing {i}")),
            )
            .expect("add");
    }
    f.brain
        .add("other", new(MemoryType::Episode, "User did thing"))
        .expect("add");
    assert_eq!(f.brain.clear("default").expect("clear"), 5);
    assert_eq!(export(&f.brain, "default"), "");
    assert_eq!(export(&f.brain, "other").lines().count(), 1);
    assert!(
        f.brain
            .search("default", "thing", 10)
            .expect("search")
            .is_empty()
    );
}

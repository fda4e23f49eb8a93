//! The Second Brain's library API on real SQLite files.

use std::sync::Arc;

use engram_strategies::model::{Evidence, MemoryType, Scope};

use super::error::StoreError;
use super::*;
use crate::memory::ListFilter;
use crate::sql::Tx;
use crate::time::{DAY_MS, ManualClock};

pub(super) const START: i64 = 1_790_000_000_000;

/// A Second Brain on a fresh file, its clock at [`START`] (the other test modules of
/// the brain open theirs here too).
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) clock: ManualClock,
    pub(super) brain: Brain,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(START);
    let brain = Brain::open(
        &dir.path().join("memory/second-brain/second-brain.db"),
        Arc::new(clock.clone()),
        crate::events::EventBus::default(),
    )
    .expect("open");
    Fixture { dir, clock, brain }
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
            .add("default", NewMemory::new(*t, format!("a {t} fact")))
            .expect("add")
            .record;
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
        .add(
            "default",
            NewMemory::new(MemoryType::Preference, "User likes tea"),
        )
        .expect("add")
        .record;
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
        .add(
            "default",
            NewMemory::new(MemoryType::Preference, "User likes jazz"),
        )
        .expect("add")
        .record;
    let gone = f
        .brain
        .add(
            "default",
            NewMemory::new(MemoryType::Preference, "User likes opera"),
        )
        .expect("add")
        .record;
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
        .add(
            "anna",
            NewMemory::new(MemoryType::Preference, "User likes coffee"),
        )
        .expect("add")
        .record;
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
                NewMemory::new(MemoryType::Goal, format!("User wants goal {i}")),
            )
            .expect("add");
    }
    let sleeping = f
        .brain
        .add("default", NewMemory::new(MemoryType::Habit, "User swims"))
        .expect("add")
        .record;
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
fn search_finds_a_users_matches_when_other_users_crowd_the_index() {
    let f = fixture();
    for i in 0..60 {
        f.brain
            .add(
                "crowd",
                NewMemory::new(
                    MemoryType::Preference,
                    format!("User likes tea and more tea {i}"),
                ),
            )
            .expect("add");
    }
    f.brain
        .add(
            "me",
            NewMemory::new(
                MemoryType::Preference,
                "User likes tea sometimes, with a long and winding description",
            ),
        )
        .expect("add");
    let mine = f.brain.search("me", "tea", 5).expect("search");
    assert_eq!(mine.len(), 1, "found past the other user's better matches");
    assert_eq!(f.brain.search("crowd", "tea", 5).expect("search").len(), 5);
    assert_eq!(
        f.brain.search("crowd", "tea", 500).expect("search").len(),
        60
    );
}

#[test]
fn search_merges_tiers_and_says_which_is_which() {
    let f = fixture();
    f.brain
        .add(
            "default",
            NewMemory::new(MemoryType::Preference, "User likes hiking in the Alps"),
        )
        .expect("add");
    let old = f
        .brain
        .add(
            "default",
            NewMemory::new(MemoryType::Habit, "User went hiking every Sunday"),
        )
        .expect("add")
        .record;
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
fn a_chosen_memory_whose_row_is_gone_is_left_out_not_an_error() {
    let f = fixture();
    for summary in ["User likes green tea", "User grows green beans"] {
        f.brain
            .add("default", NewMemory::new(MemoryType::Preference, summary))
            .expect("add");
    }
    let before = f.brain.retrieve("default", "green tea").expect("retrieve");
    assert!(before.block.contains("green tea"), "{}", before.block);
    // Another process deletes the row; this process's index still lists it.
    let other =
        rusqlite::Connection::open(f.dir.path().join("memory/second-brain/second-brain.db"))
            .expect("another connection");
    other
        .execute(
            "DELETE FROM memories WHERE summary = 'User likes green tea'",
            [],
        )
        .expect("delete behind the index's back");
    let after = f
        .brain
        .retrieve("default", "green tea")
        .expect("a gone row is no error");
    assert!(!after.block.contains("green tea"), "{}", after.block);
}

#[test]
fn an_export_line_never_holds_a_character_taken_for_a_line_break() {
    let f = fixture();
    let odd = "Line\u{2028}separator, next\u{85}line, paragraph\u{2029}end";
    f.brain
        .add("default", NewMemory::new(MemoryType::Identity, odd))
        .expect("add");
    let text = export(&f.brain, "default");
    assert!(
        !text.contains(['\u{85}', '\u{2028}', '\u{2029}']),
        "{text:?}"
    );
    let record: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(record["summary"], odd);
}

#[test]
fn export_and_import_round_trip_losslessly() {
    let f = fixture();
    let a = f
        .brain
        .add(
            "default",
            NewMemory::new(MemoryType::Identity, "User's name is Dana"),
        )
        .expect("add")
        .record;
    f.clock.advance(DAY_MS);
    let b = f
        .brain
        .add(
            "default",
            NewMemory::new(MemoryType::Goal, "User wants to run a marathon"),
        )
        .expect("add")
        .record;
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
        .write_sqlite(|tx| {
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
fn an_import_cannot_link_another_users_memory_or_person() {
    let f = fixture();
    let memory = f
        .brain
        .add(
            "alice",
            NewMemory::new(MemoryType::Relationship, "Anna is Alice's sister"),
        )
        .expect("add")
        .record;
    f.brain
        .store()
        .write_sqlite(|tx| {
            tx.execute(
                "INSERT INTO persons (id, user_id, name, aliases, created_at, last_seen) VALUES ('per_anna', 'alice', 'Anna', '[]', 5, 6)",
                [],
            )?;
            tx.execute(
                "INSERT INTO memory_persons (memory_id, person_id, user_id, relation) VALUES (?1, 'per_anna', 'alice', 'sister')",
                [&memory.id],
            )?;
            Ok(())
        })
        .expect("person");
    let before = export(&f.brain, "alice");
    // Bob's file links alice's memory and person, as his own or to his own records.
    let link = |memory_id: &str, person_id: &str| {
        format!(
            "{{\"kind\":\"person_link\",\"memory_id\":\"{memory_id}\",\"person_id\":\"{person_id}\",\"user_id\":\"bob\",\"relation\":\"enemy\"}}\n"
        )
    };
    let bobs_memory = f
        .brain
        .add(
            "bob",
            NewMemory::new(MemoryType::Relationship, "Bob knows someone"),
        )
        .expect("add")
        .record;
    for text in [
        link(&memory.id, "per_anna"),
        link(&bobs_memory.id, "per_anna"),
        link(&memory.id, "per_unknown"),
    ] {
        match f.brain.import("bob", &mut text.as_bytes()) {
            Err(StoreError::OtherUsers { .. }) => {}
            other => panic!("expected the other user's id refused, got {other:?}"),
        }
    }
    assert_eq!(export(&f.brain, "alice"), before, "alice's data unchanged");
    assert!(
        !export(&f.brain, "bob").contains("person_link"),
        "bob got no link"
    );
}

#[test]
fn a_bad_import_line_names_itself_and_imports_nothing() {
    let f = fixture();
    let source = fixture();
    source
        .brain
        .add("default", NewMemory::new(MemoryType::Habit, "User runs"))
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
                NewMemory::new(MemoryType::Episode, format!("User did thing {i}")),
            )
            .expect("add");
    }
    f.brain
        .add(
            "other",
            NewMemory::new(MemoryType::Episode, "User did thing"),
        )
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

mod retrieval {
    use super::*;
    use crate::memory::Source;
    use crate::memory::brain::retrieve::{BUDGET_CHARS, MAX_INJECTED, render_line};

    #[test]
    fn injects_at_most_five_lines_within_the_budget_and_marks_them_used() {
        let f = fixture();
        for i in 0..8 {
            f.brain
                .add(
                    "default",
                    NewMemory::new(
                        MemoryType::Preference,
                        format!("User likes tea variety number {i}"),
                    ),
                )
                .expect("add");
        }
        let long = "User likes tea ".repeat(60);
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, long.trim()),
            )
            .expect("add");
        f.clock.advance(1_000);
        let got = f
            .brain
            .retrieve("default", "Which tea should I buy?")
            .expect("retrieve");
        assert_eq!(got.lines.len(), MAX_INJECTED);
        assert!(got.block.chars().count() <= BUDGET_CHARS);
        assert!(
            got.lines
                .iter()
                .all(|m| m.memory().expect("a memory").summary.len() < 100),
            "the long one does not fit"
        );
        assert_eq!(got.block.lines().count(), MAX_INJECTED);
        for m in &got.lines {
            assert_eq!(
                m.line,
                render_line(m.memory().expect("a memory"), START + 1_000)
            );
            assert!(m.line.starts_with("- [preference, today] User likes tea"));
            let stored = f.brain.get("default", m.id()).expect("get");
            assert_eq!(stored.last_used_at, Some(START + 1_000));
        }
        assert!(
            f.brain
                .retrieve("default", "quantum chromodynamics")
                .expect("retrieve")
                .lines
                .is_empty()
        );
    }

    #[test]
    fn common_words_are_skipped_when_rarer_ones_match_and_used_when_alone() {
        let f = fixture();
        for i in 0..250 {
            f.brain
                .add(
                    "default",
                    NewMemory::new(MemoryType::Preference, format!("User likes tea blend {i}")),
                )
                .expect("add");
        }
        let matcha = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes matcha tea"),
            )
            .expect("add")
            .record;
        let common = f.brain.retrieve("default", "tea").expect("retrieve");
        assert_eq!(
            common.lines.len(),
            MAX_INJECTED,
            "a common word alone still retrieves"
        );
        let rare = f.brain.retrieve("default", "matcha tea").expect("retrieve");
        assert_eq!(rare.lines[0].id(), matcha.id);
    }

    #[test]
    fn ranks_by_relevance_then_importance_and_confidence() {
        let f = fixture();
        let weak = f
            .brain
            .add(
                "default",
                NewMemory {
                    confidence: Some(0.2),
                    importance: Some(0.1),
                    ..NewMemory::new(MemoryType::Preference, "User likes coffee at dawn")
                },
            )
            .expect("add")
            .record;
        let strong = f
            .brain
            .add(
                "default",
                NewMemory {
                    confidence: Some(1.0),
                    importance: Some(0.9),
                    ..NewMemory::new(MemoryType::Preference, "User likes coffee at noon")
                },
            )
            .expect("add")
            .record;
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Habit, "User walks the dog"),
            )
            .expect("add");
        let got = f.brain.retrieve("default", "coffee").expect("retrieve");
        let ids: Vec<&str> = got.lines.iter().map(|m| m.id()).collect();
        assert_eq!(ids, [strong.id.as_str(), weak.id.as_str()]);
    }

    #[test]
    fn superseded_and_dismissed_memories_are_never_returned() {
        let f = fixture();
        let loser = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes coffee"),
            )
            .expect("add")
            .record;
        let winner = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User does not like coffee"),
            )
            .expect("add")
            .record;
        let hidden = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes coffee beans"),
            )
            .expect("add")
            .record;
        f.brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "UPDATE memories SET superseded_by = ?1 WHERE id = ?2",
                    [&winner.id, &loser.id],
                )?;
                tx.execute(
                    "UPDATE memories SET dismissed_at = 1 WHERE id = ?1",
                    [&hidden.id],
                )?;
                Ok(())
            })
            .expect("write");
        let got = f.brain.retrieve("default", "coffee").expect("retrieve");
        let ids: Vec<&str> = got.lines.iter().map(|m| m.id()).collect();
        assert_eq!(ids, [winner.id.as_str()]);
        assert_eq!(
            f.brain
                .search("default", "coffee", 10)
                .expect("search")
                .len(),
            1
        );
    }

    #[test]
    fn a_strong_subconscious_match_is_recalled_into_its_prior_scope_when_conscious_results_are_weak()
     {
        let f = fixture();
        let durable = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Habit, "User plays the cello on Sundays"),
            )
            .expect("add")
            .record;
        let active = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Project, "User restores a vintage sailboat"),
            )
            .expect("add")
            .record;
        for id in [&durable.id, &active.id] {
            f.brain
                .edit(
                    "default",
                    id,
                    MemoryEdit {
                        scope: Some(Scope::Subconscious),
                        ..Default::default()
                    },
                )
                .expect("sleep");
        }
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes music"),
            )
            .expect("add");

        let got = f
            .brain
            .retrieve("default", "any cello concerts this weekend?")
            .expect("retrieve");
        assert_eq!(got.lines.len(), 1);
        assert!(matches!(
            got.lines[0].source,
            Source::Memory { recalled: true, .. }
        ));
        let back = f.brain.get("default", &durable.id).expect("get");
        assert_eq!((back.scope, back.prior_scope), (Scope::Durable, None));
        let events: Vec<String> = f
            .brain
            .history("default", &durable.id)
            .expect("history")
            .into_iter()
            .map(|h| h.event)
            .collect();
        assert_eq!(events.last().map(String::as_str), Some("PROMOTE"));

        f.brain.retrieve("default", "sailboat").expect("retrieve");
        assert_eq!(
            f.brain.get("default", &active.id).expect("get").scope,
            Scope::Active
        );
    }

    #[test]
    fn a_subconscious_match_stays_asleep_when_conscious_results_are_strong() {
        let f = fixture();
        let asleep = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes green tea"),
            )
            .expect("add")
            .record;
        f.brain
            .edit(
                "default",
                &asleep.id,
                MemoryEdit {
                    scope: Some(Scope::Subconscious),
                    ..Default::default()
                },
            )
            .expect("sleep");
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes green tea with honey"),
            )
            .expect("add");
        let got = f.brain.retrieve("default", "green tea").expect("retrieve");
        assert!(
            got.lines
                .iter()
                .all(|m| !matches!(m.source, Source::Memory { recalled: true, .. }))
        );
        assert_eq!(
            f.brain.get("default", &asleep.id).expect("get").scope,
            Scope::Subconscious
        );
    }
}

mod lifecycle {
    use super::*;
    use crate::memory::brain::lifecycle::{LifecycleConfig, reinforce};

    fn prune(f: &Fixture) -> crate::memory::brain::lifecycle::PruneReport {
        f.brain
            .prune("default", &LifecycleConfig::default())
            .expect("prune")
    }

    #[test]
    fn active_memories_go_stale_after_21_days_unreferenced() {
        let f = fixture();
        let goal = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Goal, "User wants to learn Rust"),
            )
            .expect("add")
            .record;
        f.clock.advance(20 * DAY_MS);
        assert_eq!(prune(&f).staled, 0);
        f.clock.advance(DAY_MS);
        assert_eq!(prune(&f).staled, 1);
        let stale = f.brain.get("default", &goal.id).expect("get");
        assert!(stale.stale && stale.scope == Scope::Active);
        // Being retrieved is a reference: the mark goes.
        f.brain.retrieve("default", "learn Rust").expect("retrieve");
        assert!(!f.brain.get("default", &goal.id).expect("get").stale);
    }

    #[test]
    fn active_memories_move_to_subconscious_after_30_days_unreferenced() {
        let f = fixture();
        let goal = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Goal, "User wants to learn Rust"),
            )
            .expect("add")
            .record;
        let durable = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Identity, "User is a nurse"),
            )
            .expect("add")
            .record;
        f.clock.advance(30 * DAY_MS);
        assert_eq!(prune(&f).demoted, 1);
        let moved = f.brain.get("default", &goal.id).expect("get");
        assert_eq!(
            (moved.scope, moved.prior_scope),
            (Scope::Subconscious, Some(Scope::Active))
        );
        assert_eq!(
            f.brain.get("default", &durable.id).expect("get").scope,
            Scope::Durable
        );
    }

    #[test]
    fn low_confidence_durable_memories_are_dismissed_after_120_days_then_purged() {
        let f = fixture();
        let weak = f
            .brain
            .add(
                "default",
                NewMemory {
                    confidence: Some(0.2),
                    ..NewMemory::new(MemoryType::Preference, "User likes jazz")
                },
            )
            .expect("add")
            .record;
        let sure = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes blues"),
            )
            .expect("add")
            .record;
        f.clock.advance(119 * DAY_MS);
        assert_eq!(prune(&f).dismissed, 0);
        f.clock.advance(DAY_MS);
        assert_eq!(prune(&f).dismissed, 1);
        assert!(
            f.brain
                .search("default", "jazz", 10)
                .expect("search")
                .is_empty(),
            "hidden everywhere"
        );
        assert!(
            f.brain
                .get("default", &weak.id)
                .expect("kept for history")
                .dismissed_at
                .is_some()
        );
        assert!(
            f.brain
                .get("default", &sure.id)
                .expect("get")
                .dismissed_at
                .is_none()
        );
        f.clock.advance(30 * DAY_MS);
        assert_eq!(prune(&f).purged, 1);
        assert!(matches!(
            f.brain.get("default", &weak.id),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn three_reinforcements_make_a_memory_durable() {
        let f = fixture();
        let episode = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Episode, "User ran a 10k"),
            )
            .expect("add")
            .record;
        let mut current = episode.clone();
        for n in 1..=3 {
            f.clock.advance(DAY_MS);
            let next = reinforce(&current, f.brain.now());
            f.brain
                .store()
                .write_sqlite(|tx| store::q::update(tx, &current, &next, "REINFORCE", ACTOR_SYSTEM))
                .expect("write");
            current = next;
            let expected = if n < 3 { Scope::Active } else { Scope::Durable };
            assert_eq!(
                f.brain.get("default", &episode.id).expect("get").scope,
                expected,
                "after {n}"
            );
        }
        assert_eq!(current.reinforcements, 3);
        assert_eq!(current.last_seen_at, START + 3 * DAY_MS);
    }

    #[test]
    fn only_conscious_inferred_memories_decay() {
        let f = fixture();
        let inferred = |summary: &str| NewMemory {
            evidence: Some(Evidence::Inferred),
            confidence: Some(0.8),
            ..NewMemory::new(MemoryType::Habit, summary)
        };
        let decaying = f
            .brain
            .add("default", inferred("User naps after lunch"))
            .expect("add")
            .record;
        let sleeping = f
            .brain
            .add("default", inferred("User jogs at night"))
            .expect("add")
            .record;
        f.brain
            .edit(
                "default",
                &sleeping.id,
                MemoryEdit {
                    scope: Some(Scope::Subconscious),
                    ..Default::default()
                },
            )
            .expect("sleep");
        let direct = f
            .brain
            .add(
                "default",
                NewMemory {
                    evidence: Some(Evidence::Direct),
                    confidence: Some(0.8),
                    ..NewMemory::new(MemoryType::Habit, "User cycles")
                },
            )
            .expect("add")
            .record;
        let manual = f
            .brain
            .add("default", NewMemory::new(MemoryType::Habit, "User swims"))
            .expect("add")
            .record;

        f.clock.advance(45 * DAY_MS);
        prune(&f);
        f.clock.advance(45 * DAY_MS);
        prune(&f);
        let after = f
            .brain
            .get("default", &decaying.id)
            .expect("get")
            .confidence;
        assert!(
            (after - 0.4).abs() < 1e-4,
            "one half-life halves it: {after}"
        );
        assert_eq!(
            f.brain
                .get("default", &sleeping.id)
                .expect("get")
                .confidence,
            0.8
        );
        assert_eq!(
            f.brain.get("default", &direct.id).expect("get").confidence,
            0.8
        );
        assert_eq!(
            f.brain.get("default", &manual.id).expect("get").confidence,
            1.0
        );
    }
}

pub(super) mod ingestion {
    use super::*;
    use std::sync::OnceLock;

    use engram_strategies::model::{Candidate, PersonRef, Resolution, Role};

    use crate::config::ConfigFile;
    use crate::memory::brain::ingest::{Applied, apply_one};
    use crate::runtime::packages::PluginPackages;
    use crate::runtime::strategies::Strategies;
    use crate::runtime::{DenyAllGate, HostServices, KvStore, NoMemories, Runtime, RuntimeOptions};
    use crate::time::MINUTE_MS;

    /// The real built-in strategies, compiled once per test binary.
    pub(in crate::memory::brain) fn strategies() -> &'static Strategies {
        static STRATEGIES: OnceLock<Strategies> = OnceLock::new();
        STRATEGIES.get_or_init(|| {
            let services = HostServices::new(
                Arc::new(NoMemories),
                Arc::new(DenyAllGate),
                KvStore::in_memory().expect("kv"),
            );
            let options = RuntimeOptions {
                cache_dir: Some(std::env::temp_dir().join("engram-unit-test-component-cache")),
                ..RuntimeOptions::default()
            };
            let runtime = Arc::new(Runtime::new(options, services).expect("runtime"));
            let dir = std::env::temp_dir()
                .join(format!("engram-unit-test-config-{}", std::process::id()));
            Strategies::new(
                runtime,
                PluginPackages::new(dir.join("plugins")),
                Arc::new(ConfigFile::new(dir.join("config.yaml"))),
            )
            .expect("strategies")
        })
    }

    fn say(
        f: &Fixture,
        conversation: &str,
        lines: &[(Role, &str)],
    ) -> crate::memory::brain::ingest::Ingested {
        for (role, text) in lines {
            f.brain
                .record_message("default", conversation, *role, None, text)
                .expect("record");
            f.clock.advance(1_000);
        }
        f.brain
            .end_conversation("default", conversation, strategies())
            .expect("end")
    }

    fn live(f: &Fixture) -> Vec<MemoryRecord> {
        f.brain
            .list(
                "default",
                &ListFilter {
                    limit: 500,
                    ..Default::default()
                },
            )
            .expect("list")
            .items
    }

    /// The invariant: no two live memories contradict each other.
    fn assert_no_live_contradiction(f: &Fixture) {
        let memories = live(f);
        for (i, a) in memories.iter().enumerate() {
            for b in &memories[i + 1..] {
                assert!(
                    !engram_strategies::text::opposes(&a.summary, a.negated, &b.summary, b.negated),
                    "both live: `{}` and `{}`",
                    a.summary,
                    b.summary
                );
            }
        }
    }

    #[test]
    fn a_conversation_becomes_memories_with_persons_and_sources() {
        let f = fixture();
        let ingested = say(
            &f,
            "c1",
            &[
                (Role::User, "Hi!"),
                (Role::Assistant, "Hello, I love helping."),
                (Role::User, "My sister Anna is moving to Lisbon."),
                (Role::User, "I'm allergic to peanuts."),
            ],
        );
        assert_eq!(ingested.extractor.as_deref(), Some("builtin:extract-rules"));
        assert!(
            ingested.candidates >= 2 && ingested.candidates <= 3,
            "{ingested:?}"
        );
        let memories = live(&f);
        let allergy = memories
            .iter()
            .find(|m| m.summary.contains("peanuts"))
            .expect("constraint stored");
        assert_eq!(allergy.memory_type, MemoryType::Constraint);
        assert_eq!(allergy.source_conversation.as_deref(), Some("c1"));
        assert_eq!(allergy.source_turns.len(), 1);
        assert!(
            !memories.iter().any(|m| m.summary.contains("helping")),
            "never the assistant's words"
        );
        let sister = memories
            .iter()
            .find(|m| m.memory_type == MemoryType::Relationship)
            .expect("relationship");
        let persons = f
            .brain
            .store()
            .read_sqlite(|c| q::persons_of(c, "default", &sister.id))
            .expect("persons");
        assert_eq!(
            persons,
            [PersonRef {
                name: "Anna".into(),
                relation: Some("sister".into())
            }]
        );
        let read: i64 = f
            .brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.seq <= c.extracted_seq",
                    [],
                    |r| r.get(0),
                )?)
            })
            .expect("count");
        assert_eq!(
            read, 4,
            "the transcript stays, marked as read by extraction"
        );
    }

    #[test]
    fn paused_learning_extracts_nothing() {
        let f = fixture();
        f.brain.set_learning_paused("default", true).expect("pause");
        let ingested = say(&f, "c1", &[(Role::User, "I'm allergic to peanuts.")]);
        assert_eq!(ingested.skipped.as_deref(), Some("learning is paused"));
        assert!(live(&f).is_empty());
    }

    #[test]
    fn equal_confidence_the_newer_fact_wins() {
        let f = fixture();
        say(&f, "c1", &[(Role::User, "I like coffee.")]);
        f.clock.advance(MINUTE_MS);
        let second = say(&f, "c2", &[(Role::User, "I don't like coffee.")]);
        assert!(
            matches!(second.applied[..], [Applied::Superseded { .. }]),
            "{second:?}"
        );
        let memories = live(&f);
        assert_eq!(memories.len(), 1);
        assert!(memories[0].negated, "{:?}", memories[0]);
        let got = f.brain.retrieve("default", "coffee").expect("retrieve");
        // The live memory first; what was said before stays in the transcript, dated.
        assert_eq!(got.lines[0].id(), memories[0].id, "{got:#?}");
        assert_eq!(got.lines.iter().filter(|l| l.memory().is_some()).count(), 1);
    }

    #[test]
    fn higher_confidence_wins_even_when_older() {
        let f = fixture();
        let sure = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes coffee"),
            )
            .expect("add")
            .record;
        assert_eq!(sure.confidence, 1.0);
        let ingested = say(&f, "c1", &[(Role::User, "I don't like coffee.")]);
        let Applied::Outvoted { id, by } = &ingested.applied[0] else {
            panic!("expected the new fact to lose: {ingested:?}");
        };
        assert_eq!(by, &sure.id);
        let loser = f.brain.get("default", id).expect("kept");
        assert_eq!(loser.superseded_by.as_deref(), Some(sure.id.as_str()));
        assert_eq!(live(&f).len(), 1);
    }

    pub(super) fn candidate(summary: &str, confidence: f32) -> Candidate {
        Candidate {
            memory_type: MemoryType::Preference,
            summary: summary.into(),
            detail: None,
            confidence,
            importance: 0.6,
            durability: 0.8,
            evidence: Evidence::Direct,
            negated: false,
            persons: vec![],
            source_turns: vec![],
        }
    }

    pub(super) fn apply(
        f: &Fixture,
        c: &Candidate,
        decision: Result<Resolution, String>,
    ) -> Applied {
        let now = f.brain.now();
        f.brain
            .store()
            .write(crate::sql::Actor::System, |tx| {
                Ok(apply_one(
                    tx,
                    f.brain.store().text(),
                    "default",
                    "c",
                    c,
                    &decision,
                    &[],
                    now,
                ))
            })
            .expect("write")
    }

    #[test]
    fn a_negated_pair_is_detected_without_a_plugin_hint() {
        let f = fixture();
        // The resolver says "add" both times and marks nothing as negated.
        apply(&f, &candidate("User likes jazz", 0.9), Ok(Resolution::Add));
        f.clock.advance(1);
        let second = apply(
            &f,
            &candidate("User no longer likes jazz", 0.9),
            Ok(Resolution::Add),
        );
        assert!(matches!(second, Applied::Added { .. }));
        let memories = live(&f);
        assert_eq!(memories.len(), 1);
        assert_eq!(memories[0].summary, "User no longer likes jazz");
        assert_no_live_contradiction(&f);
    }

    #[test]
    fn no_contradicting_pair_survives_any_sequence() {
        let f = fixture();
        let facts = ["likes coffee", "drinks tea", "likes jazz", "eats meat"];
        // A deterministic pseudo-random walk over statements and their negations.
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..60 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let fact = facts[(seed % 4) as usize];
            let summary = if (seed >> 8).is_multiple_of(2) {
                format!("User {fact}")
            } else {
                format!(
                    "User does not {}",
                    fact.replacen("likes", "like", 1)
                        .replacen("drinks", "drink", 1)
                        .replacen("eats", "eat", 1)
                )
            };
            let confidence = [0.5, 0.7, 0.9][((seed >> 16) % 3) as usize];
            apply(&f, &candidate(&summary, confidence), Ok(Resolution::Add));
            f.clock.advance(1);
            assert_no_live_contradiction(&f);
        }
        // Forced `add` keeps restatements side by side; only opposites are settled.
        assert!(live(&f).len() >= facts.len());
    }

    #[test]
    fn malformed_decisions_are_rejected_alone() {
        let f = fixture();
        let unknown = apply(
            &f,
            &candidate("User likes tea", 0.9),
            Ok(Resolution::Reinforce("mem_nope".into())),
        );
        assert!(matches!(unknown, Applied::Rejected { .. }), "{unknown:?}");
        let out_of_range = apply(&f, &candidate("User likes tea", 4.0), Ok(Resolution::Add));
        assert!(
            matches!(&out_of_range, Applied::Rejected { reason } if reason.contains("confidence")),
            "{out_of_range:?}"
        );
        let failed_plugin = apply(&f, &candidate("User likes tea", 0.9), Err("trap".into()));
        assert!(matches!(failed_plugin, Applied::Rejected { .. }));
        assert!(live(&f).is_empty(), "nothing half-applied");
        let fine = apply(&f, &candidate("User likes tea", 0.9), Ok(Resolution::Add));
        assert!(matches!(fine, Applied::Added { .. }));
        assert_eq!(live(&f).len(), 1);
    }

    #[test]
    fn saying_a_goal_again_reinforces_it_until_it_is_durable() {
        let f = fixture();
        say(&f, "c0", &[(Role::User, "I want to learn Rust.")]);
        let goal = live(&f).into_iter().next().expect("stored");
        assert_eq!(goal.scope, Scope::Active);
        for n in 1..=3 {
            f.clock.advance(DAY_MS);
            let ingested = say(
                &f,
                &format!("c{n}"),
                &[(Role::User, "I want to learn Rust.")],
            );
            assert_eq!(
                ingested.applied,
                [Applied::Reinforced {
                    id: goal.id.clone()
                }]
            );
        }
        let durable = f.brain.get("default", &goal.id).expect("get");
        assert_eq!((durable.reinforcements, durable.scope), (3, Scope::Durable));
        assert_eq!(live(&f).len(), 1);
    }

    #[test]
    fn idle_conversations_end_after_ten_minutes() {
        let f = fixture();
        f.brain
            .record_message("default", "idle", Role::User, None, "I'm vegetarian.")
            .expect("record");
        f.clock.advance(9 * MINUTE_MS);
        assert!(
            f.brain
                .idle_conversations(10 * MINUTE_MS)
                .expect("idle")
                .is_empty()
        );
        f.clock.advance(MINUTE_MS);
        let ended = f.brain.end_idle_conversations(10 * MINUTE_MS, strategies());
        assert_eq!(ended.len(), 1);
        assert!(live(&f).iter().any(|m| m.summary.contains("vegetarian")));
        assert!(
            f.brain
                .idle_conversations(10 * MINUTE_MS)
                .expect("idle")
                .is_empty()
        );
    }

    #[test]
    fn conversations_belong_to_one_user() {
        let f = fixture();
        f.brain
            .record_message("anna", "shared", Role::User, None, "hello")
            .expect("record");
        assert!(matches!(
            f.brain
                .record_message("bob", "shared", Role::User, None, "hi"),
            Err(StoreError::OtherUsers {
                what: "conversation",
                ..
            })
        ));
        assert!(matches!(
            f.brain.end_conversation("bob", "shared", strategies()),
            Err(StoreError::NoConversation(_))
        ));
        let huge = "x".repeat(crate::memory::MAX_MESSAGE_BYTES + 1);
        assert!(matches!(
            f.brain
                .record_message("anna", "shared", Role::User, None, &huge),
            Err(StoreError::Invalid {
                field: "content",
                ..
            })
        ));
    }
}

mod consolidation {
    use super::ingestion::strategies;
    use super::*;
    use crate::memory::brain::consolidate::DEFAULT_INTERVAL_MS;
    use crate::memory::brain::lifecycle::LifecycleConfig;

    fn reflections(f: &Fixture) -> Vec<MemoryRecord> {
        f.brain
            .list(
                "default",
                &ListFilter {
                    memory_type: Some(MemoryType::Reflection),
                    limit: 50,
                    ..Default::default()
                },
            )
            .expect("list")
            .items
    }

    #[test]
    fn builds_summaries_and_merges_reflections_instead_of_duplicating() {
        let f = fixture();
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Identity, "User's name is Dana"),
            )
            .expect("add");
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Goal, "User wants to run a marathon"),
            )
            .expect("add");
        for habit in [
            "User runs every morning",
            "User meditates every morning",
            "User reads the news every morning",
        ] {
            f.brain
                .add("default", NewMemory::new(MemoryType::Habit, habit))
                .expect("add");
        }
        assert_eq!(f.brain.users_due().expect("due"), ["default"]);
        let first = f
            .brain
            .consolidate(
                "default",
                strategies(),
                &LifecycleConfig::default(),
                DEFAULT_INTERVAL_MS,
            )
            .expect("consolidate");
        assert_eq!(first.plugin, "builtin:consolidate-default");
        assert!(
            first.profile_summary.contains("Dana"),
            "{}",
            first.profile_summary
        );
        assert!(
            first.active_summary.contains("marathon"),
            "{}",
            first.active_summary
        );
        assert_eq!(first.reflections_added.len(), 1, "{first:?}");
        let stored = reflections(&f);
        assert_eq!(stored.len(), 1);
        assert_eq!(
            (stored[0].evidence, stored[0].scope),
            (Evidence::System, Scope::Durable)
        );

        let summaries = f.brain.summaries("default").expect("summaries");
        assert_eq!(
            summaries.profile_summary.as_deref(),
            Some(first.profile_summary.as_str())
        );
        assert_eq!(summaries.last_consolidation_at, Some(START));
        assert_eq!(
            summaries.next_consolidation_at,
            Some(START + DEFAULT_INTERVAL_MS)
        );
        assert!(f.brain.users_due().expect("due").is_empty());

        f.clock.advance(DEFAULT_INTERVAL_MS);
        assert_eq!(f.brain.users_due().expect("due"), ["default"]);
        let second = f
            .brain
            .consolidate(
                "default",
                strategies(),
                &LifecycleConfig::default(),
                DEFAULT_INTERVAL_MS,
            )
            .expect("consolidate");
        assert!(second.reflections_added.is_empty(), "{second:?}");
        assert_eq!(second.reflections_merged, [stored[0].id.clone()]);
        assert_eq!(reflections(&f).len(), 1, "merged, not duplicated");
    }

    #[test]
    fn pruning_runs_with_consolidation() {
        let f = fixture();
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Project, "User builds a kayak"),
            )
            .expect("add");
        f.clock.advance(31 * DAY_MS);
        let run = f
            .brain
            .consolidate(
                "default",
                strategies(),
                &LifecycleConfig::default(),
                DEFAULT_INTERVAL_MS,
            )
            .expect("consolidate");
        assert_eq!(run.pruned.demoted, 1);
        assert!(
            !run.active_summary.contains("kayak"),
            "subconscious memories are not active state"
        );
    }
}

mod persons_and_graph {
    use super::ingestion::{apply, candidate};
    use super::*;
    use crate::memory::brain::persons::{EdgeKind, NodeKind};
    use engram_strategies::model::{PersonRef, Resolution};

    fn person(name: &str, relation: Option<&str>) -> PersonRef {
        PersonRef {
            name: name.into(),
            relation: relation.map(str::to_owned),
        }
    }

    #[test]
    fn persons_come_from_facts_and_link_through_them() {
        let f = fixture();
        let mut sister = candidate("User's sister is Anna", 0.9);
        sister.memory_type = MemoryType::Relationship;
        sister.persons = vec![person("Anna", Some("sister"))];
        apply(&f, &sister, Ok(Resolution::Add));
        f.clock.advance(1_000);
        let mut couple = candidate("Anna is married to Tom", 0.9);
        couple.memory_type = MemoryType::Relationship;
        couple.persons = vec![person("anna", None), person("Tom", Some("brother-in-law"))];
        apply(&f, &couple, Ok(Resolution::Add));
        f.brain
            .add(
                "default",
                NewMemory::new(MemoryType::Goal, "User wants to visit Anna in Lisbon"),
            )
            .expect("add");
        let mut trip = candidate("User booked flights to Lisbon to visit Anna", 0.9);
        trip.memory_type = MemoryType::Episode;
        trip.persons = vec![person("Anna", None)];
        apply(&f, &trip, Ok(Resolution::Add));

        let persons = f.brain.persons("default").expect("persons");
        let names: Vec<&str> = persons.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 2, "`anna` is Anna: {names:?}");
        let anna = persons.iter().find(|p| p.name == "Anna").expect("Anna");
        assert_eq!(anna.memory_count, 3);
        assert_eq!(anna.last_seen, START + 1_000);

        let detail = f.brain.person("default", &anna.id).expect("detail");
        assert_eq!(detail.facts.len(), 2);
        assert_eq!(detail.related_memories.len(), 1);
        assert_eq!(detail.linked_persons.len(), 1);
        assert_eq!(detail.linked_persons[0].name, "Tom");
        assert_eq!(
            f.brain
                .person_memories("default", &anna.id)
                .expect("memories")
                .len(),
            3
        );
        // Explicit dismissal removes the memory's person links with it.
        let trip_id = detail.related_memories[0].id.clone();
        f.brain.delete("default", &trip_id).expect("delete");
        let links: i64 = f
            .brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM memory_persons WHERE memory_id = ?1",
                    [&trip_id],
                    |r| r.get(0),
                )?)
            })
            .expect("count");
        assert_eq!(links, 0);
        assert_eq!(
            f.brain
                .person("default", &anna.id)
                .expect("detail")
                .person
                .memory_count,
            2
        );
        apply(&f, &trip, Ok(Resolution::Add));
        assert!(matches!(
            f.brain.person("other-user", &anna.id),
            Err(StoreError::NotFound(_))
        ));

        let graph = f.brain.graph("default").expect("graph");
        let count = |kind| graph.nodes.iter().filter(|n| n.kind == kind).count();
        assert_eq!(
            (
                count(NodeKind::Memory),
                count(NodeKind::Goal),
                count(NodeKind::Person)
            ),
            (3, 1, 2)
        );
        let edges = |kind| graph.edges.iter().filter(|e| e.kind == kind).count();
        assert_eq!(edges(EdgeKind::PersonMemory), 4);
        assert_eq!(edges(EdgeKind::PersonPerson), 1);
        assert!(
            edges(EdgeKind::MemoryGoal) >= 1,
            "the trip serves the goal: {:?}",
            graph.edges
        );
        assert_eq!(
            f.brain.graph("default").expect("graph"),
            graph,
            "stable ids and order"
        );
    }

    #[test]
    fn persons_page_by_cursor_newest_first_without_gaps_or_repeats() {
        let f = fixture();
        for name in ["Anna", "Bea", "Cleo", "Dora", "Eve"] {
            let mut fact = candidate(&format!("User's friend is {name}"), 0.9);
            fact.memory_type = MemoryType::Relationship;
            fact.persons = vec![person(name, Some("friend"))];
            apply(&f, &fact, Ok(Resolution::Add));
            f.clock.advance(1_000);
        }
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = f
                .brain
                .persons_page("default", 2, cursor.as_deref())
                .expect("page");
            assert!(page.items.len() <= 2);
            seen.extend(page.items.into_iter().map(|p| p.name));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ["Eve", "Dora", "Cleo", "Bea", "Anna"]);
        assert!(matches!(
            f.brain.persons_page("default", 2, Some("not-a-cursor")),
            Err(StoreError::Invalid {
                field: "cursor",
                ..
            })
        ));
    }

    #[test]
    fn the_graph_reads_past_one_list_page() {
        let f = fixture();
        for i in 0..520 {
            f.brain
                .add(
                    "default",
                    NewMemory::new(MemoryType::Habit, format!("Habit number {i}")),
                )
                .expect("add");
        }
        let graph = f.brain.graph("default").expect("graph");
        assert_eq!(graph.nodes.len(), 520);
    }
}

mod maintenance {
    use super::ingestion::strategies;
    use super::*;
    use crate::config::{MemoryConfig, SecondBrainConfig};
    use crate::memory::brain::maintenance::{Settings, run};
    use crate::time::MINUTE_MS;
    use engram_strategies::model::Role;

    #[test]
    fn a_pass_ends_idle_conversations_and_consolidates_due_users() {
        let f = fixture();
        let settings = Settings::from_config(&MemoryConfig {
            second_brain: SecondBrainConfig {
                idle_minutes: Some(2),
                consolidation_interval_minutes: Some(30),
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(settings.idle_ms, 2 * MINUTE_MS);
        f.brain
            .record_message("default", "c1", Role::User, None, "I'm vegetarian.")
            .expect("record");
        f.clock.advance(MINUTE_MS);
        assert_eq!(
            run(&f.brain, strategies(), &settings).conversations_ended,
            0
        );
        f.clock.advance(MINUTE_MS);
        let report = run(&f.brain, strategies(), &settings);
        assert_eq!(
            (
                report.conversations_ended,
                report.users_consolidated,
                report.failures
            ),
            (1, 1, 0)
        );
        let summaries = f.brain.summaries("default").expect("summaries");
        assert!(
            summaries
                .profile_summary
                .is_some_and(|p| p.contains("vegetarian"))
        );
        assert_eq!(
            summaries.next_consolidation_at,
            Some(START + 2 * MINUTE_MS + 30 * MINUTE_MS)
        );
        assert_eq!(
            run(&f.brain, strategies(), &settings),
            Default::default(),
            "nothing due"
        );
    }
}

mod transcript {
    use super::ingestion::strategies;
    use super::*;
    use crate::memory::Source;
    use crate::memory::brain::retrieve::{BUDGET_CHARS, MAX_INJECTED, MAX_SNIPPET};
    use crate::memory::brain::{SearchScope, Tier};
    use crate::time::MINUTE_MS;
    use engram_strategies::model::Role;

    fn say(f: &Fixture, user: &str, conversation: &str, name: Option<&str>, text: &str) -> String {
        let id = f
            .brain
            .record_message(user, conversation, Role::User, name, text)
            .expect("record")
            .expect("learning is on");
        f.clock.advance(1_000);
        id
    }

    fn hits(f: &Fixture, user: &str, q: &str) -> Vec<String> {
        f.brain
            .search_hits(user, q, 50, SearchScope::Conversations)
            .expect("search")
            .into_iter()
            .map(|h| {
                assert_eq!(h.tier, Tier::Transcript);
                h.message.expect("a message").id
            })
            .collect()
    }

    /// Rows of the transcript's full-text index that match `q`, read from the index
    /// itself (not through the messages table).
    fn index_rows(f: &Fixture, q: &str) -> i64 {
        f.brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
                    [q],
                    |r| r.get(0),
                )?)
            })
            .expect("count")
    }

    fn index_is_consistent(f: &Fixture) {
        f.brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
                    [],
                )?;
                Ok(())
            })
            .expect("the transcript index matches its table");
    }

    #[test]
    fn every_message_is_searchable_with_its_provenance_and_speaker() {
        let f = fixture();
        let id = say(
            &f,
            "default",
            "trip",
            Some("Anna"),
            "I booked the flights to Lisbon for May.",
        );
        say(
            &f,
            "default",
            "trip",
            Some("Ben"),
            "Great, I will find a hotel near the river.",
        );
        let found = f
            .brain
            .search_hits(
                "default",
                "what did Anna say about the flights",
                10,
                SearchScope::Conversations,
            )
            .expect("search");
        let hit = found[0].message.as_ref().expect("a message");
        assert_eq!(found[0].tier, Tier::Transcript);
        assert_eq!(hit.id, id);
        assert_eq!(hit.conversation_id, "trip");
        assert_eq!(hit.name.as_deref(), Some("Anna"));
        assert_eq!(hit.role, "user");
        assert_eq!(hit.at, START);
        assert_eq!(hit.snippet, "I booked the flights to Lisbon for May.");
        // The speaker's name is indexed with the text.
        assert_eq!(hits(&f, "default", "Ben").len(), 1);
        // Memories-only search (the default) does not look at the transcript.
        assert!(
            f.brain
                .search("default", "Lisbon", 10)
                .expect("search")
                .is_empty()
        );
        // Ending the conversation learns from it and keeps the transcript.
        f.brain
            .end_conversation("default", "trip", strategies())
            .expect("end");
        assert_eq!(hits(&f, "default", "Lisbon"), [id]);
    }

    #[test]
    fn paused_learning_records_nothing() {
        let f = fixture();
        f.brain.set_learning_paused("default", true).expect("pause");
        let recorded = f
            .brain
            .record_message("default", "c1", Role::User, Some("Anna"), "My PIN is 4321")
            .expect("record");
        assert_eq!(recorded, None);
        assert!(hits(&f, "default", "PIN").is_empty());
        assert_eq!(index_rows(&f, "PIN"), 0);
        // The conversation can still be ended; nothing is learned.
        let ended = f
            .brain
            .end_conversation("default", "c1", strategies())
            .expect("end");
        assert_eq!(ended.skipped.as_deref(), Some("learning is paused"));
        f.brain
            .set_learning_paused("default", false)
            .expect("resume");
        assert!(say(&f, "default", "c1", None, "Now I talk about tea").starts_with("turn_"));
        assert_eq!(hits(&f, "default", "tea").len(), 1);
    }

    #[test]
    fn messages_are_pruned_after_the_retention_once_extraction_read_them() {
        let f = fixture();
        let keep = 30 * DAY_MS;
        let old = say(
            &f,
            "default",
            "old",
            None,
            "We talked about the garden shed",
        );
        f.brain
            .end_conversation("default", "old", strategies())
            .expect("end");
        let unread = say(&f, "default", "open", None, "The garden needs water");
        f.clock.advance(keep);
        let fresh = say(&f, "default", "new", None, "The garden looks great today");
        f.brain
            .end_conversation("default", "new", strategies())
            .expect("end");

        assert_eq!(f.brain.prune_transcript(keep).expect("prune"), 1);
        let left = hits(&f, "default", "garden");
        assert!(!left.contains(&old), "past the retention: pruned");
        assert!(left.contains(&unread), "not read by extraction yet: kept");
        assert!(left.contains(&fresh), "within the retention: kept");
        // The ended conversation left empty is gone too; the others stay.
        assert!(matches!(
            f.brain.conversation("default", "old"),
            Err(StoreError::NoConversation(_))
        ));
        assert_eq!(
            f.brain.conversation("default", "new").expect("new").1.len(),
            1
        );
        index_is_consistent(&f);

        // Once read, the unread one goes at the next pass past its time; 0 keeps
        // nothing extraction is done with.
        f.brain
            .end_conversation("default", "open", strategies())
            .expect("end");
        assert_eq!(f.brain.prune_transcript(keep).expect("prune"), 1);
        assert_eq!(f.brain.prune_transcript(0).expect("prune"), 1);
        assert!(hits(&f, "default", "garden").is_empty());
        assert_eq!(index_rows(&f, "garden"), 0);
    }

    #[test]
    fn the_maintenance_pass_prunes_with_the_configured_retention() {
        use crate::config::{MemoryConfig, SecondBrainConfig};
        use crate::memory::brain::maintenance::{Settings, run};
        let f = fixture();
        let settings = Settings::from_config(&MemoryConfig {
            second_brain: SecondBrainConfig {
                transcript_days: Some(2),
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(settings.transcript_keep_ms, 2 * DAY_MS);
        assert_eq!(
            Settings::from_config(&MemoryConfig::default()).transcript_keep_ms,
            365 * DAY_MS
        );
        say(&f, "default", "c1", None, "I repaired the bike chain");
        f.clock.advance(11 * MINUTE_MS);
        let report = run(&f.brain, strategies(), &settings);
        assert_eq!((report.conversations_ended, report.messages_pruned), (1, 0));
        f.clock.advance(2 * DAY_MS);
        assert_eq!(run(&f.brain, strategies(), &settings).messages_pruned, 1);
        assert!(hits(&f, "default", "bike").is_empty());
    }

    #[test]
    fn deleting_a_conversation_removes_its_messages_and_index_rows_and_nothing_else() {
        let f = fixture();
        say(&f, "default", "doomed", None, "I'm allergic to walnuts.");
        say(
            &f,
            "default",
            "doomed",
            None,
            "The walnut cake was a mistake",
        );
        let kept = say(&f, "default", "other", None, "Walnut trees grow slowly");
        say(&f, "bob", "bobs", None, "Walnuts are my favourite snack");
        f.brain
            .end_conversation("default", "doomed", strategies())
            .expect("end");
        let learned = f.brain.search("default", "walnuts", 10).expect("search");
        assert_eq!(learned.len(), 1, "a memory was learned from it");
        let before = index_rows(&f, "walnut");
        assert_eq!(before, 4);

        // Another user cannot delete it, and an unknown id is reported.
        assert!(matches!(
            f.brain.delete_conversation("bob", "doomed"),
            Err(StoreError::NoConversation(_))
        ));
        assert!(matches!(
            f.brain.delete_conversation("default", "nope"),
            Err(StoreError::NoConversation(_))
        ));
        assert_eq!(
            f.brain
                .delete_conversation("default", "doomed")
                .expect("delete"),
            2
        );
        assert_eq!(index_rows(&f, "walnut"), before - 2);
        assert_eq!(hits(&f, "default", "walnut"), [kept]);
        assert_eq!(hits(&f, "bob", "walnut").len(), 1);
        assert_eq!(
            f.brain
                .search("default", "walnuts", 10)
                .expect("search")
                .len(),
            1,
            "memories learned from it stay"
        );
        index_is_consistent(&f);
    }

    #[test]
    fn users_never_see_each_others_transcript() {
        let f = fixture();
        say(&f, "anna", "a1", None, "My secret recipe uses saffron");
        say(&f, "bob", "b1", None, "I bought saffron at the market");
        assert_eq!(hits(&f, "anna", "saffron").len(), 1);
        assert_eq!(hits(&f, "bob", "saffron").len(), 1);
        let anna = f.brain.retrieve("anna", "saffron").expect("retrieve");
        assert_eq!(anna.lines.len(), 1);
        assert!(anna.block.contains("secret recipe"), "{}", anna.block);
        assert!(!export(&f.brain, "bob").contains("secret recipe"));
        assert!(matches!(
            f.brain.conversation("bob", "a1"),
            Err(StoreError::NoConversation(_))
        ));
        // Clearing one user's memories clears their transcript only.
        f.brain.clear("anna").expect("clear");
        assert!(hits(&f, "anna", "saffron").is_empty());
        assert_eq!(hits(&f, "bob", "saffron").len(), 1);
        index_is_consistent(&f);
    }

    #[test]
    fn export_and_import_carry_the_transcript() {
        let f = fixture();
        let id = say(
            &f,
            "default",
            "c1",
            Some("Anna"),
            "The boat trip is on Sunday",
        );
        f.brain
            .end_conversation("default", "c1", strategies())
            .expect("end");
        let exported = export(&f.brain, "default");
        assert!(exported.contains("\"kind\":\"conversation\""), "{exported}");
        assert!(exported.contains("\"kind\":\"message\""), "{exported}");

        let g = fixture();
        let count = g
            .brain
            .import("default", &mut exported.as_bytes())
            .expect("import");
        assert_eq!(count, exported.lines().count());
        assert_eq!(export(&g.brain, "default"), exported);
        assert_eq!(hits(&g, "default", "boat"), [id]);
        // Another user's conversation id is refused, and nothing is imported.
        let h = fixture();
        say(&h, "bob", "c1", None, "hello");
        assert!(matches!(
            h.brain.import("default", &mut exported.as_bytes()),
            Err(StoreError::OtherUsers { .. })
        ));
        assert!(hits(&h, "default", "boat").is_empty());
    }

    #[test]
    fn the_budget_holds_with_memories_and_snippets_and_memories_win_ties() {
        let f = fixture();
        let tea = f
            .brain
            .add(
                "default",
                NewMemory::new(MemoryType::Preference, "User likes green tea"),
            )
            .expect("add")
            .record;
        // Long messages about tea: each snippet is cut to fit.
        for i in 0..8 {
            say(
                &f,
                "default",
                "c1",
                Some("Anna"),
                &format!(
                    "{} Then we drank green tea number {i} in the garden. {}",
                    "We walked a long way through the hills and the old town first. ".repeat(3),
                    "Afterwards everyone went home tired but happy. ".repeat(3)
                ),
            );
        }
        let got = f.brain.retrieve("default", "green tea").expect("retrieve");
        assert_eq!(got.lines.len(), MAX_INJECTED);
        assert!(got.block.chars().count() <= BUDGET_CHARS, "{}", got.block);
        assert_eq!(got.lines[0].id(), tea.id, "the stated preference first");
        assert_eq!(
            got.lines[0].line,
            "- [preference, today] User likes green tea"
        );
        for line in &got.lines[1..] {
            let Source::Message(message) = &line.source else {
                panic!("a snippet: {line:?}");
            };
            let prefix = format!("- [said {}, today] Anna: ", crate::time::date(message.at));
            let text = line.line.strip_prefix(&prefix).expect(&line.line);
            assert!(text.chars().count() <= MAX_SNIPPET);
            assert!(text.contains("green tea"), "{text}");
        }
        assert_eq!(got.block.lines().count(), MAX_INJECTED);
        // The block uses the budget it has rather than leaving it empty.
        assert!(
            got.block.chars().count() > BUDGET_CHARS - 100,
            "{}",
            got.block
        );

        // A memory and a message saying the same: the message it was learned from is
        // not shown again.
        let g = fixture();
        say(&g, "default", "c2", None, "I'm allergic to peanuts.");
        g.brain
            .end_conversation("default", "c2", strategies())
            .expect("end");
        let got = g.brain.retrieve("default", "peanuts").expect("retrieve");
        assert_eq!(
            got.block,
            "- [constraint, today] User is allergic to peanuts"
        );
    }

    #[test]
    fn a_short_conversation_of_small_talk_stores_no_fact_but_is_remembered() {
        let f = fixture();
        for text in [
            "hi",
            "ok thanks",
            "Good morning!",
            "Can you help me with my code?",
        ] {
            say(&f, "default", "chat", None, text);
        }
        let ended = f
            .brain
            .end_conversation("default", "chat", strategies())
            .expect("end");
        assert_eq!(ended.candidates, 0, "{ended:?}");
        assert!(
            f.brain
                .list(
                    "default",
                    &ListFilter {
                        limit: 10,
                        ..Default::default()
                    }
                )
                .expect("list")
                .items
                .is_empty()
        );
        assert_eq!(hits(&f, "default", "code").len(), 1);
    }

    /// When every word of a message is too common to score (more rows than
    /// `retrieve::MAX_SCORED_ROWS` each would make bm25 score thousands), retrieval still
    /// finds the messages that hold all of them.
    #[test]
    fn a_message_of_only_common_words_finds_the_messages_holding_them_all() {
        let f = fixture();
        let rows = crate::memory::brain::retrieve::MAX_SCORED_ROWS + 100;
        f.brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "INSERT INTO conversations (id, user_id, started_at, last_message_at, ended_at, extracted_seq) VALUES ('bulk', 'default', ?1, ?1, ?1, ?2)",
                    rusqlite::params![START, 2 * rows as i64],
                )?;
                let mut insert = tx.prepare(
                    "INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at) VALUES (?1, 'bulk', 'default', ?2, 'user', ?3, ?4)",
                )?;
                for i in 0..2 * rows {
                    let text = if i % 2 == 0 {
                        format!("the garden needs water {i}")
                    } else {
                        format!("a party for the team {i}")
                    };
                    insert.execute(rusqlite::params![format!("bulk-{i}"), i as i64, text, START])?;
                }
                Ok(())
            })
            .expect("bulk messages");
        let both = say(
            &f,
            "default",
            "c1",
            None,
            "We held the garden party in June.",
        );
        let got = f
            .brain
            .retrieve("default", "garden party")
            .expect("retrieve");
        assert_eq!(
            got.lines.first().map(|l| l.id()),
            Some(both.as_str()),
            "{:?}",
            got.block
        );
    }
}

/// Issue 27: a user's ranking depends on that user's data alone.
mod per_user {
    use super::*;
    use crate::memory::Source;
    use crate::memory::brain::retrieve::{self, Tuning};
    use crate::memory::brain::test_rng::Rng;
    use crate::memory::brain::{SearchScope, Tier};
    use crate::memory::record::MemoryRecord;
    use rusqlite::params;

    const ME: &str = "me";
    /// Other users, each with many more rows than [`ME`], in the first [`SHARED`] of
    /// [`ME`]'s words: those are common in the store as a whole (a decision counting
    /// everyone's rows would leave them out of my first query), the others only mine.
    const CROWD: &[&str] = &["crowd-a", "crowd-b", "crowd-c"];
    const SHARED: usize = 10;
    const VOCABULARY: &[&str] = &[
        "tea", "green", "garden", "sister", "anna", "hiking", "weekend", "sushi", "lisbon",
        "flight", "booked", "running", "marathon", "piano", "lessons", "dog", "ramen",
    ];
    const QUERIES: &[&str] = &[
        "tea",
        "green tea in the garden",
        "Who did I go hiking with last weekend?",
        "sushi or ramen in Lisbon",
        "When is my flight booked?",
        "my sister Anna and her piano lessons",
        "running a marathon with the dog",
        "tea with the dog",
        "garden",
    ];

    fn words(rng: &mut Rng, most: usize, vocabulary: &[&str]) -> String {
        (0..1 + rng.below(most))
            .map(|_| vocabulary[rng.below(vocabulary.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Round `round` of `user`'s rows: memories and a conversation of messages, their
    /// text, ids and times fixed by the user and the round, so that two stores can
    /// hold the same ones (ties in the ranking fall to the same rows too).
    fn write_round(
        f: &Fixture,
        user: &str,
        round: usize,
        memories: usize,
        messages: usize,
        vocabulary: &[&str],
    ) {
        let seed = user.bytes().fold(round as u64 + 1, |h, b| {
            h.wrapping_mul(0x100_0000_01B3) ^ u64::from(b)
        });
        let mut rng = Rng(seed | 1);
        let conversation = format!("{user}-c{round}");
        f.brain
            .store()
            .write_sqlite(|tx| {
                for i in 0..memories {
                    let at = START - (rng.below(300) as i64) * DAY_MS;
                    let memory_type = [MemoryType::Preference, MemoryType::Habit, MemoryType::Episode]
                        [rng.below(3)];
                    let mut record = MemoryRecord {
                        id: format!("mem_{user}_{round}_{i:04}"),
                        detail: (rng.below(3) == 0).then(|| words(&mut rng, 10, vocabulary)),
                        ..MemoryRecord::fresh(
                            user,
                            memory_type,
                            &format!("User {}", words(&mut rng, 6, vocabulary)),
                            Evidence::Direct,
                            0.9,
                            at,
                        )
                    };
                    if rng.below(5) == 0 {
                        record.prior_scope = Some(record.scope);
                        record.scope = Scope::Subconscious;
                    }
                    q::insert(tx, &record, ACTOR_USER)?;
                }
                tx.execute(
                    "INSERT INTO conversations (id, user_id, started_at, last_message_at, ended_at, extracted_seq) VALUES (?1, ?2, ?3, ?3, ?3, ?4)",
                    params![conversation, user, START - DAY_MS, messages as i64],
                )?;
                for i in 0..messages {
                    let name = ["Anna", "Sam"][rng.below(2)];
                    tx.execute(
                        "INSERT INTO messages (id, conversation_id, user_id, seq, role, name, content, at) VALUES (?1, ?2, ?3, ?4, 'user', ?5, ?6, ?7)",
                        params![
                            format!("turn_{user}_{round}_{i:04}"),
                            conversation,
                            user,
                            i as i64 + 1,
                            (rng.below(2) == 0).then_some(name),
                            format!("I said {}.", words(&mut rng, 12, vocabulary)),
                            START - DAY_MS + i as i64 * 1_000
                        ],
                    )?;
                }
                Ok(())
            })
            .expect("write a round");
    }

    /// Every result of `user` for `text`, with its score, as each entry point ranks it.
    fn results(f: &Fixture, user: &str, text: &str) -> Vec<String> {
        let brain = &f.brain;
        let query = retrieve::Query::new(text);
        let index = brain.store().text_built().expect("index");
        let counts = brain.store().word_counts();
        let mut out = Vec::new();
        // The default floor of common words (200 rows) is above 1 in 50 of the rows
        // here, mine or everyone's; a low one lets the count of rows decide, as it does
        // in a large store.
        for common_rows in [Tuning::default().common_rows, 3] {
            let tuning = Tuning {
                common_rows,
                ..Tuning::default()
            };
            let (memories, said) = brain
                .store()
                .read_sqlite(|c| {
                    Ok((
                        retrieve::text_matches(
                            &Tx::sqlite(c),
                            index,
                            user,
                            &query.terms,
                            50,
                            5,
                            &tuning,
                        )?,
                        retrieve::said_matches(
                            &Tx::sqlite(c),
                            counts,
                            user,
                            &query.terms,
                            50,
                            5,
                            &tuning,
                        )?,
                    ))
                })
                .expect("full-text matches");
            out.extend(
                memories
                    .iter()
                    .map(|m| format!("memory {} {:e}", m.record.id, m.bm25))
                    .chain(
                        said.iter()
                            .map(|m| format!("message {} {:e}", m.message.id, m.bm25)),
                    )
                    .map(|r| format!("floor {common_rows}: {r}")),
            );
        }
        out.extend(
            brain
                .search(user, text, 20)
                .expect("search")
                .into_iter()
                .map(|r| format!("search {}", r.record.id)),
        );
        out.extend(
            brain
                .search_hits(user, text, 20, SearchScope::All)
                .expect("search hits")
                .into_iter()
                .map(|h| match (h.tier, h.memory, h.message) {
                    (Tier::Transcript, _, Some(m)) => format!("hit message {}", m.id),
                    (tier, Some(m), _) => format!("hit {tier:?} {}", m.id),
                    other => panic!("a hit without its record: {other:?}"),
                }),
        );
        let retrieval = brain.retrieve(user, text).expect("retrieve");
        out.extend(retrieval.lines.iter().map(|l| {
            let recalled = matches!(l.source, Source::Memory { recalled: true, .. });
            format!("retrieved {} {:e} {recalled} {}", l.id(), l.score, l.line)
        }));
        out
    }

    /// A user's search and retrieval give the same results (ids, order, scores)
    /// whether the store is theirs alone or shared with users who have many more rows
    /// in the same words, written before, between and after theirs: bm25's
    /// statistics and which words are common are the user's own, in both tiers.
    #[test]
    fn a_users_results_are_the_same_alone_and_in_a_crowded_store() {
        let alone = fixture();
        let shared = fixture();
        for round in 0..3 {
            for user in CROWD {
                write_round(&shared, user, round, 150, 400, &VOCABULARY[..SHARED]);
            }
            for f in [&alone, &shared] {
                write_round(f, ME, round, 30, 60, VOCABULARY);
            }
        }
        // The crowd makes every word common in the store as a whole, not for me.
        let size = shared
            .brain
            .store()
            .read(crate::sql::Actor::System, |c| {
                crate::memory::brain::transcript::size(c, ME)
            })
            .expect("size");
        assert_eq!(size, 180);
        let mut compared = 0;
        for text in QUERIES {
            let mine = results(&alone, ME, text);
            assert!(
                mine.iter().any(|r| r.contains(": message"))
                    && mine.iter().any(|r| r.contains(": memory")),
                "{text}: both tiers match: {mine:?}"
            );
            assert_eq!(results(&shared, ME, text), mine, "{text}");
            compared += mine.len();
        }
        assert!(compared > 200, "only {compared} results compared");
    }
}

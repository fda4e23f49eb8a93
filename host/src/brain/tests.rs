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

mod retrieval {
    use super::*;
    use crate::brain::retrieve::{BUDGET_CHARS, MAX_INJECTED, render_line};

    #[test]
    fn injects_at_most_five_lines_within_the_budget_and_marks_them_used() {
        let f = fixture();
        for i in 0..8 {
            f.brain
                .add(
                    "default",
                    new(
                        MemoryType::Preference,
                        &format!("User likes tea variety number {i}"),
                    ),
                )
                .expect("add");
        }
        let long = "User likes tea ".repeat(60);
        f.brain
            .add("default", new(MemoryType::Preference, long.trim()))
            .expect("add");
        f.clock.advance(1_000);
        let got = f
            .brain
            .retrieve("default", "Which tea should I buy?")
            .expect("retrieve");
        assert_eq!(got.memories.len(), MAX_INJECTED);
        assert!(got.block.chars().count() <= BUDGET_CHARS);
        assert!(
            got.memories.iter().all(|m| m.record.summary.len() < 100),
            "the long one does not fit"
        );
        assert_eq!(got.block.lines().count(), MAX_INJECTED);
        for m in &got.memories {
            assert_eq!(m.line, render_line(&m.record));
            assert!(m.line.starts_with("- [preference] User likes tea"));
            let stored = f.brain.get("default", &m.record.id).expect("get");
            assert_eq!(stored.last_used_at, Some(START + 1_000));
        }
        assert!(
            f.brain
                .retrieve("default", "quantum chromodynamics")
                .expect("retrieve")
                .memories
                .is_empty()
        );
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
                    ..new(MemoryType::Preference, "User likes coffee")
                },
            )
            .expect("add");
        let strong = f
            .brain
            .add(
                "default",
                NewMemory {
                    confidence: Some(1.0),
                    importance: Some(0.9),
                    ..new(MemoryType::Preference, "User likes coffee")
                },
            )
            .expect("add");
        f.brain
            .add("default", new(MemoryType::Habit, "User walks the dog"))
            .expect("add");
        let got = f.brain.retrieve("default", "coffee").expect("retrieve");
        let ids: Vec<&str> = got.memories.iter().map(|m| m.record.id.as_str()).collect();
        assert_eq!(ids, [strong.id.as_str(), weak.id.as_str()]);
    }

    #[test]
    fn superseded_and_dismissed_memories_are_never_returned() {
        let f = fixture();
        let loser = f
            .brain
            .add("default", new(MemoryType::Preference, "User likes coffee"))
            .expect("add");
        let winner = f
            .brain
            .add(
                "default",
                new(MemoryType::Preference, "User does not like coffee"),
            )
            .expect("add");
        let hidden = f
            .brain
            .add(
                "default",
                new(MemoryType::Preference, "User likes coffee beans"),
            )
            .expect("add");
        f.brain
            .store()
            .write(|tx| {
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
        let ids: Vec<&str> = got.memories.iter().map(|m| m.record.id.as_str()).collect();
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
                new(MemoryType::Habit, "User plays the cello on Sundays"),
            )
            .expect("add");
        let active = f
            .brain
            .add(
                "default",
                new(MemoryType::Project, "User restores a vintage sailboat"),
            )
            .expect("add");
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
            .add("default", new(MemoryType::Preference, "User likes music"))
            .expect("add");

        let got = f
            .brain
            .retrieve("default", "any cello concerts this weekend?")
            .expect("retrieve");
        assert_eq!(got.memories.len(), 1);
        assert!(got.memories[0].recalled);
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
                new(MemoryType::Preference, "User likes green tea"),
            )
            .expect("add");
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
                new(MemoryType::Preference, "User likes green tea with honey"),
            )
            .expect("add");
        let got = f.brain.retrieve("default", "green tea").expect("retrieve");
        assert!(got.memories.iter().all(|m| !m.recalled));
        assert_eq!(
            f.brain.get("default", &asleep.id).expect("get").scope,
            Scope::Subconscious
        );
    }
}

mod lifecycle {
    use super::*;
    use crate::brain::lifecycle::{LifecycleConfig, reinforce};

    fn prune(f: &Fixture) -> crate::brain::lifecycle::PruneReport {
        f.brain
            .prune("default", &LifecycleConfig::default())
            .expect("prune")
    }

    #[test]
    fn active_memories_go_stale_after_21_days_unreferenced() {
        let f = fixture();
        let goal = f
            .brain
            .add("default", new(MemoryType::Goal, "User wants to learn Rust"))
            .expect("add");
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
            .add("default", new(MemoryType::Goal, "User wants to learn Rust"))
            .expect("add");
        let durable = f
            .brain
            .add("default", new(MemoryType::Identity, "User is a nurse"))
            .expect("add");
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
                    ..new(MemoryType::Preference, "User likes jazz")
                },
            )
            .expect("add");
        let sure = f
            .brain
            .add("default", new(MemoryType::Preference, "User likes blues"))
            .expect("add");
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
            .add("default", new(MemoryType::Episode, "User ran a 10k"))
            .expect("add");
        let mut current = episode.clone();
        for n in 1..=3 {
            f.clock.advance(DAY_MS);
            let next = reinforce(&current, f.brain.now());
            f.brain
                .store()
                .write(|tx| store::q::update(tx, &current, &next, "REINFORCE", ACTOR_SYSTEM))
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
            ..new(MemoryType::Habit, summary)
        };
        let decaying = f
            .brain
            .add("default", inferred("User naps after lunch"))
            .expect("add");
        let sleeping = f
            .brain
            .add("default", inferred("User jogs at night"))
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
            .expect("sleep");
        let direct = f
            .brain
            .add(
                "default",
                NewMemory {
                    evidence: Some(Evidence::Direct),
                    confidence: Some(0.8),
                    ..new(MemoryType::Habit, "User cycles")
                },
            )
            .expect("add");
        let manual = f
            .brain
            .add("default", new(MemoryType::Habit, "User swims"))
            .expect("add");

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

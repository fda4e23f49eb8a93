//! What is true now, through the Second Brain's own interface: the store's rules on
//! every write path (`settle.rs`), retrieval by holder and attribute (`focus.rs`),
//! forgetting (`forget.rs`) and secrets (`redact.rs`). Sentences here are written for
//! these tests, not taken from a benchmark.

use engram_strategies::model::{MemoryType, Role};

use super::forget::{FORGOTTEN, Forgetter};
use super::tests::ingestion::strategies;
use super::tests::{Fixture, fixture};
use super::{MemoryEdit, NewMemory, Outcome, SearchScope};
use crate::memory::ListFilter;
use crate::time::DAY_MS;

fn add(f: &Fixture, user: &str, memory_type: MemoryType, summary: &str) -> super::Stored {
    f.brain
        .add(user, NewMemory::new(memory_type, summary))
        .expect("add")
}

fn live(f: &Fixture, user: &str) -> Vec<String> {
    f.brain
        .list(
            user,
            &ListFilter {
                limit: 500,
                ..ListFilter::default()
            },
        )
        .expect("list")
        .items
        .into_iter()
        .map(|m| m.summary)
        .collect()
}

/// Records a conversation of `user` (each line a user message unless it starts with
/// "A: ") and ends it, which learns from it.
fn converse(f: &Fixture, user: &str, conversation: &str, lines: &[&str]) {
    for line in lines {
        let (role, text) = match line.strip_prefix("A: ") {
            Some(text) => (Role::Assistant, text),
            None => (Role::User, *line),
        };
        f.brain
            .record_message(user, conversation, role, None, text)
            .expect("record");
        f.clock.advance(1_000);
    }
    f.brain
        .end_conversation(user, conversation, strategies())
        .expect("end");
    f.clock.advance(DAY_MS);
}

fn block(f: &Fixture, user: &str, message: &str) -> String {
    f.brain.retrieve(user, message).expect("retrieve").block
}

/// Whether `first` appears in `text` before `second` (or `second` not at all).
fn before(text: &str, first: &str, second: &str) -> bool {
    match (text.find(first), text.find(second)) {
        (Some(a), Some(b)) => a < b,
        (Some(_), None) => true,
        _ => false,
    }
}

mod settle {
    use super::*;

    #[test]
    fn the_same_fact_added_again_reinforces_it_instead_of_a_copy() {
        let f = fixture();
        let first = add(&f, "u", MemoryType::Preference, "User likes oolong tea");
        assert_eq!(first.outcome, Outcome::Added);
        let again = add(&f, "u", MemoryType::Preference, "User likes oolong tea");
        assert_eq!(again.outcome, Outcome::Reinforced);
        assert_eq!(again.record.id, first.record.id);
        assert_eq!(again.record.reinforcements, 1);
        assert_eq!(live(&f, "u"), ["User likes oolong tea"]);
    }

    #[test]
    fn a_new_value_of_a_single_valued_attribute_supersedes_the_live_one() {
        let f = fixture();
        let old = add(
            &f,
            "u",
            MemoryType::Identity,
            "User's email is ana@old.example",
        );
        f.clock.advance(1_000);
        let new = add(
            &f,
            "u",
            MemoryType::Identity,
            "User's email is ana@new.example",
        );
        assert_eq!(new.record.attribute.as_deref(), Some("email"));
        assert_eq!(new.superseded, std::slice::from_ref(&old.record.id));
        let old = f.brain.get("u", &old.record.id).expect("kept");
        assert_eq!(old.superseded_by.as_deref(), Some(new.record.id.as_str()));
        let history = f.brain.history("u", &old.id).expect("history");
        assert_eq!(history.last().map(|h| h.event.as_str()), Some("SUPERSEDE"));
        // A many-valued attribute keeps both.
        add(
            &f,
            "u",
            MemoryType::Constraint,
            "User is allergic to walnuts",
        );
        add(&f, "u", MemoryType::Constraint, "User is allergic to kiwi");
        assert_eq!(live(&f, "u").len(), 3);
    }

    #[test]
    fn higher_confidence_keeps_the_attribute_unless_the_new_statement_marks_a_change() {
        let f = fixture();
        let sure = f
            .brain
            .add(
                "u",
                NewMemory {
                    confidence: Some(1.0),
                    ..NewMemory::new(MemoryType::Identity, "User lives in Porto")
                },
            )
            .expect("add");
        let hedged = f
            .brain
            .add(
                "u",
                NewMemory {
                    confidence: Some(0.5),
                    ..NewMemory::new(MemoryType::Identity, "User lives in Braga")
                },
            )
            .expect("add");
        assert_eq!(hedged.outcome, Outcome::Outvoted);
        assert_eq!(
            hedged.record.superseded_by.as_deref(),
            Some(sure.record.id.as_str())
        );
        let moved = f
            .brain
            .add(
                "u",
                NewMemory {
                    confidence: Some(0.5),
                    ..NewMemory::new(MemoryType::Identity, "User moved to Lisbon")
                },
            )
            .expect("add");
        assert_eq!(moved.outcome, Outcome::Added, "a change wins");
        assert_eq!(live(&f, "u"), ["User moved to Lisbon"]);
    }

    #[test]
    fn a_negation_ends_what_it_negates_and_another_holders_fact_is_untouched() {
        let f = fixture();
        add(&f, "u", MemoryType::Identity, "User works at Initech");
        add(
            &f,
            "u",
            MemoryType::Identity,
            "User's brother Tom works at Globex",
        );
        let quit = add(
            &f,
            "u",
            MemoryType::Identity,
            "User no longer works at Initech",
        );
        assert_eq!(quit.superseded.len(), 1);
        let summaries = live(&f, "u");
        assert!(summaries.contains(&"User's brother Tom works at Globex".to_string()));
        assert!(!summaries.contains(&"User works at Initech".to_string()));
        // "sold the bike" ends the vehicle it names.
        add(
            &f,
            "u",
            MemoryType::Identity,
            "User's ride is a blue Brompton bike",
        );
        let sold = add(
            &f,
            "u",
            MemoryType::Episode,
            "User sold the Brompton last week",
        );
        assert_eq!(sold.superseded.len(), 1, "{:?}", live(&f, "u"));
    }

    #[test]
    fn a_bare_favourite_replaces_the_favourite_it_is_closest_to() {
        let f = fixture();
        add(
            &f,
            "u",
            MemoryType::Preference,
            "User's favorite color is teal",
        );
        let old = add(
            &f,
            "u",
            MemoryType::Preference,
            "User's favorite language is Go",
        );
        let new = add(
            &f,
            "u",
            MemoryType::Preference,
            "User's favorite is Zig now",
        );
        assert_eq!(new.record.attribute.as_deref(), Some("favorite language"));
        assert_eq!(new.superseded, [old.record.id]);
    }

    #[test]
    fn edits_and_imports_are_settled_like_adds() {
        let f = fixture();
        let city = add(&f, "u", MemoryType::Identity, "User lives in Turin");
        let other = add(&f, "u", MemoryType::Preference, "User likes risotto");
        let edited = f
            .brain
            .edit(
                "u",
                &other.record.id,
                MemoryEdit {
                    summary: Some("User lives in Milan now".into()),
                    ..MemoryEdit::default()
                },
            )
            .expect("edit");
        assert_eq!(edited.attribute.as_deref(), Some("residence"));
        let city = f.brain.get("u", &city.record.id).expect("kept");
        assert_eq!(city.superseded_by.as_deref(), Some(edited.id.as_str()));

        // An import of an older statement of the same attribute is outranked by the
        // live, newer one.
        let g = fixture();
        add(&g, "v", MemoryType::Identity, "User lives in Genoa");
        g.clock.advance(DAY_MS);
        add(&g, "v", MemoryType::Identity, "User lives in Bari now");
        let mut exported = Vec::new();
        g.brain.export("v", &mut exported).expect("export");
        let h = fixture();
        h.clock.advance(10 * DAY_MS);
        add(&h, "w", MemoryType::Identity, "User lives in Naples");
        h.brain
            .import("w", &mut exported.as_slice())
            .expect("import");
        assert_eq!(live(&h, "w"), ["User lives in Naples"]);
    }

    #[test]
    fn extraction_is_settled_whatever_the_resolver_says() {
        let f = fixture();
        converse(&f, "u", "c1", &["I work night shifts at the depot."]);
        converse(&f, "u", "c2", &["I'm on day shifts from this week."]);
        let summaries = live(&f, "u");
        assert!(
            summaries.iter().any(|s| s.contains("day shifts")),
            "{summaries:?}"
        );
        assert!(
            !summaries.iter().any(|s| s.contains("night shifts")),
            "{summaries:?}"
        );
    }

    #[test]
    fn each_speaker_of_a_group_chat_keeps_their_own_facts() {
        let f = fixture();
        for (name, text) in [("Ines", "I'm allergic to mold."), ("Femi", "Mine's dust.")] {
            f.brain
                .record_message("u", "g1", Role::User, Some(name), text)
                .expect("record");
        }
        f.brain
            .end_conversation("u", "g1", strategies())
            .expect("end");
        let summaries = live(&f, "u");
        assert!(
            summaries.contains(&"Ines is allergic to mold".to_string()),
            "{summaries:?}"
        );
        assert!(
            summaries.contains(&"Femi is allergic to dust".to_string()),
            "{summaries:?}"
        );
    }
}

mod focus {
    use super::*;

    #[test]
    fn a_question_about_a_person_is_answered_from_their_facts_first() {
        let f = fixture();
        converse(
            &f,
            "u",
            "c1",
            &["I'm a dentist, and my husband Karl is a carpenter."],
        );
        let got = block(&f, "u", "What does Karl do for work?");
        assert!(before(&got, "carpenter", "dentist"), "{got}");
        let got = block(&f, "u", "What's my job?");
        assert!(before(&got, "dentist", "carpenter"), "{got}");
    }

    #[test]
    fn the_current_value_comes_first_and_the_superseded_line_stays_out() {
        let f = fixture();
        converse(
            &f,
            "u",
            "c1",
            &["Text me at 415-555-0131 if the plans change."],
        );
        converse(&f, "u", "c2", &["Heads up: my number is 415-555-0177 now."]);
        let got = block(&f, "u", "What number should the school call?");
        assert!(got.contains("555-0177"), "{got}");
        assert!(!got.contains("555-0131"), "{got}");
    }

    #[test]
    fn the_asked_attribute_is_found_without_a_shared_word() {
        let f = fixture();
        add(
            &f,
            "u",
            MemoryType::Identity,
            "User's address is 9 Quay Road",
        );
        let got = block(&f, "u", "Where should the couriers deliver the parcel?");
        assert!(got.contains("9 Quay Road"), "{got}");
    }

    #[test]
    fn meaning_fills_in_only_when_words_find_nothing() {
        let f = fixture();
        add(
            &f,
            "u",
            MemoryType::Preference,
            "User likes espresso at noon",
        );
        add(&f, "u", MemoryType::Habit, "User walks the dog");
        let got = f.brain.retrieve("u", "espresso").expect("retrieve");
        assert_eq!(got.lines.len(), 1, "{}", got.block);
        // No word in common: the closest memories in meaning are offered.
        let got = f
            .brain
            .retrieve("u", "What's my puppy up to?")
            .expect("retrieve");
        assert!(got.block.contains("dog"), "{}", got.block);
    }

    #[test]
    fn every_line_says_when() {
        let f = fixture();
        converse(&f, "u", "c1", &["I grew up in Tromsø."]);
        f.clock.advance(20 * DAY_MS);
        let got = block(&f, "u", "Where did I grow up?");
        assert!(got.contains("3 weeks ago"), "{got}");
    }
}

mod forgetting {
    use super::*;

    fn messages(f: &Fixture, user: &str, conversation: &str) -> Vec<String> {
        f.brain
            .conversation(user, conversation)
            .expect("conversation")
            .1
            .into_iter()
            .map(|m| m.content)
            .collect()
    }

    #[test]
    fn forget_that_redacts_the_previous_exchange_and_nothing_is_learned_from_it() {
        let f = fixture();
        converse(
            &f,
            "u",
            "c1",
            &[
                "My cousin Bea owes me $2,500 since the summer.",
                "A: Would a reminder help?",
                "Please forget that, it's between us.",
                "I'm repainting the kitchen green this weekend.",
            ],
        );
        let said = messages(&f, "u", "c1");
        assert_eq!(said[0], FORGOTTEN);
        assert_eq!(said[1], FORGOTTEN, "the reply to it goes too");
        assert_eq!(said[2], FORGOTTEN, "the request names what it forgets");
        assert_eq!(said[3], "I'm repainting the kitchen green this weekend.");
        assert!(!live(&f, "u").iter().any(|s| s.contains("Bea")));
        let found = f
            .brain
            .search_hits("u", "2,500 Bea owes", 20, SearchScope::All)
            .expect("search");
        assert!(found.is_empty(), "{found:?}");
        let log = f.brain.forget_log("u", 10).expect("log");
        assert_eq!(log[0].by, "conversation");
        assert!(!serde_json::to_string(&log).expect("json").contains("Bea"));
    }

    #[test]
    fn a_subject_is_forgotten_across_conversations_and_the_rest_stays() {
        let f = fixture();
        converse(&f, "u", "c1", &["I'm on lisinopril for my blood pressure."]);
        converse(&f, "u", "c2", &["I'm learning the cello this year."]);
        converse(
            &f,
            "u",
            "c3",
            &["Oh, and please forget about my medication."],
        );
        assert_eq!(messages(&f, "u", "c1"), [FORGOTTEN]);
        assert_eq!(
            messages(&f, "u", "c2"),
            ["I'm learning the cello this year."]
        );
        let got = block(&f, "u", "What am I learning?");
        assert!(got.contains("cello"), "{got}");
        assert!(!block(&f, "u", "What pills do I take?").contains("lisinopril"));
    }

    #[test]
    fn deleting_a_memory_redacts_what_it_was_learned_from_unless_asked_to_keep_it() {
        let f = fixture();
        converse(
            &f,
            "u",
            "c1",
            &["My sister Ilse lives in Graz. We talk every Sunday."],
        );
        let memory = f
            .brain
            .list(
                "u",
                &ListFilter {
                    limit: 10,
                    ..ListFilter::default()
                },
            )
            .expect("list")
            .items
            .into_iter()
            .find(|m| m.summary.contains("Ilse"))
            .expect("learned");
        let forgotten = f
            .brain
            .forget_memory("u", &memory.id, false, Forgetter::Person)
            .expect("forget");
        assert_eq!(forgotten.memories, std::slice::from_ref(&memory.id));
        assert_eq!(messages(&f, "u", "c1"), [FORGOTTEN]);
        assert!(f.brain.persons("u").expect("persons").is_empty());

        let g = fixture();
        converse(&g, "u", "c1", &["I grew up in Tartu."]);
        let memory = g
            .brain
            .list(
                "u",
                &ListFilter {
                    limit: 10,
                    ..ListFilter::default()
                },
            )
            .expect("list")
            .items
            .remove(0);
        g.brain
            .forget_memory("u", &memory.id, true, Forgetter::Agent)
            .expect("forget");
        assert_eq!(messages(&g, "u", "c1"), ["I grew up in Tartu."]);
        assert_eq!(g.brain.forget_log("u", 10).expect("log")[0].by, "agent");
    }

    #[test]
    fn a_forgotten_word_is_gone_from_the_database_file() {
        let f = fixture();
        converse(
            &f,
            "u",
            "c1",
            &["The spare key is under the zanzibarish flowerpot."],
        );
        converse(
            &f,
            "u",
            "c2",
            &["Please delete what I said about the flowerpot."],
        );
        f.brain.store().checkpoint().expect("checkpoint");
        let dir = f
            .brain
            .store()
            .path()
            .expect("a SQLite store")
            .parent()
            .expect("dir")
            .to_path_buf();
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
            assert!(
                !bytes
                    .windows(14)
                    .any(|w| w == b"zanzibarish fl" || w.starts_with(b"zanzibarish")),
                "the word is still in the file"
            );
        }
    }
}

mod secrets {
    use super::*;
    use crate::memory::brain::error::StoreError;

    #[test]
    fn secrets_are_redacted_before_they_are_stored_and_counted() {
        let f = fixture();
        f.brain
            .record_message(
                "u",
                "c1",
                Role::User,
                None,
                "The router password is Gr@ssh0pper-19, and my card is 4111 1111 1111 1111.",
            )
            .expect("record");
        let (_, said) = f.brain.conversation("u", "c1").expect("conversation");
        assert_eq!(
            said[0].content,
            "The router password is [redacted: password], and my card is [redacted: card]."
        );
        let stored = add(
            &f,
            "u",
            MemoryType::Identity,
            "User's IBAN is GB82 WEST 1234 5698 7654 32 for rent",
        );
        assert!(
            stored.record.summary.contains("[redacted: iban]"),
            "{}",
            stored.record.summary
        );
        let counts = f.brain.redaction_counts("u").expect("counts");
        assert_eq!(counts.get("password"), Some(&1));
        assert_eq!(counts.get("card"), Some(&1));
        assert_eq!(counts.get("iban"), Some(&1));
    }

    #[test]
    fn a_memory_that_is_nothing_but_a_secret_is_refused_and_nothing_is_written() {
        let f = fixture();
        let refused = f.brain.add(
            "u",
            NewMemory::new(MemoryType::Identity, "User's password is Kestrel!2024"),
        );
        assert!(
            matches!(refused, Err(StoreError::SecretRefused(_))),
            "{refused:?}"
        );
        assert!(live(&f, "u").is_empty());
        assert!(f.brain.redaction_counts("u").expect("counts").is_empty());
    }

    #[test]
    fn what_was_stored_before_is_redacted_by_a_pass_that_can_report_first() {
        let f = fixture();
        f.brain
            .redaction()
            .set(engram_strategies::secrets::KindSet::none());
        f.brain
            .record_message(
                "u",
                "c1",
                Role::User,
                None,
                "My SSN is 219-09-9999, file it.",
            )
            .expect("record");
        add(&f, "u", MemoryType::Identity, "User's SSN is 219-09-9999");
        f.brain
            .redaction()
            .set(engram_strategies::secrets::KindSet::all());
        let report = f.brain.redact_stored("u", true).expect("dry run");
        assert_eq!(
            (
                report.messages.len(),
                report.memories.len(),
                report.deleted.len()
            ),
            (1, 1, 1)
        );
        assert!(live(&f, "u").len() == 1, "a dry run changes nothing");
        let report = f.brain.redact_stored("u", false).expect("redact");
        assert_eq!(report.found.get("national-id"), Some(&2));
        assert!(live(&f, "u").is_empty());
        let (_, said) = f.brain.conversation("u", "c1").expect("conversation");
        assert_eq!(
            said[0].content,
            "My SSN is [redacted: national-id], file it."
        );
    }
}

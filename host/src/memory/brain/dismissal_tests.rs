//! The agent's deletes on a real Second Brain file, with a test clock: hidden
//! everywhere, restored as they were, forgotten for good once their window ends.

use engram_strategies::model::{MemoryType, Role};

use crate::config::{AgentDeletesConfig, MemoryConfig};
use crate::memory::ListFilter;
use crate::memory::brain::error::StoreError;
use crate::memory::brain::forget::{FORGOTTEN, Forgetter};
use crate::memory::brain::maintenance::{Settings, run};
use crate::memory::brain::tests::ingestion::strategies;
use crate::memory::brain::tests::{Fixture, fixture};
use crate::memory::brain::{MemoryEdit, NewMemory, SearchScope};
use crate::time::DAY_MS;

const WEEK: i64 = 7 * DAY_MS;

/// Records `lines` as the user's messages of `conversation` and ends it, which learns
/// from them; the memory learned whose summary holds `about`.
fn learn(f: &Fixture, conversation: &str, lines: &[&str], about: &str) -> String {
    for line in lines {
        f.brain
            .record_message("u", conversation, Role::User, None, line)
            .expect("record");
        f.clock.advance(1_000);
    }
    f.brain
        .end_conversation("u", conversation, strategies())
        .expect("end");
    f.clock.advance(1_000);
    live(f)
        .into_iter()
        .find(|m| m.summary.contains(about))
        .unwrap_or_else(|| panic!("nothing learned about {about}"))
        .id
}

fn live(f: &Fixture) -> Vec<crate::memory::record::MemoryRecord> {
    f.brain
        .list(
            "u",
            &ListFilter {
                limit: 500,
                ..ListFilter::default()
            },
        )
        .expect("list")
        .items
}

fn messages(f: &Fixture, conversation: &str) -> Vec<String> {
    f.brain
        .conversation("u", conversation)
        .expect("conversation")
        .1
        .into_iter()
        .map(|m| m.content)
        .collect()
}

/// The export's memories, persons and links (its conversations carry the transcript
/// as it is, which waits for the window too).
fn export(f: &Fixture) -> String {
    let mut out = Vec::new();
    f.brain.export("u", &mut out).expect("export");
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .filter(|line| {
            !line.contains(r#""kind":"conversation""#) && !line.contains(r#""kind":"message""#)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything a reader of the user's memory can reach, as one text.
fn everything_served(f: &Fixture, words: &str) -> String {
    let brain = &f.brain;
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{}\n{:?}\n{:?}\n{:?}\n{}",
        live(f),
        brain.search("u", words, 50).expect("search"),
        brain
            .search_hits("u", words, 50, SearchScope::All)
            .expect("search all"),
        brain.retrieve("u", words).expect("retrieve").lines,
        brain.retrieve("u", words).expect("retrieve").block,
        brain.persons("u").expect("persons"),
        brain.graph("u").expect("graph"),
        brain.counts("u").expect("counts"),
        export(f),
    )
}

fn maintenance(restore_days: u32) -> Settings {
    Settings::from_config(&MemoryConfig {
        agent_deletes: AgentDeletesConfig {
            restore_days: Some(restore_days),
            ..AgentDeletesConfig::default()
        },
        ..MemoryConfig::default()
    })
}

#[test]
fn what_the_agent_deletes_is_hidden_everywhere_and_kept_for_the_person() {
    let f = fixture();
    let ilse = learn(
        &f,
        "c1",
        &["My sister Ilse lives in Graz. We talk every Sunday."],
        "Ilse",
    );
    let tea = f
        .brain
        .add(
            "u",
            NewMemory::new(MemoryType::Preference, "User likes oolong tea"),
        )
        .expect("add")
        .record;
    let before = everything_served(&f, "Ilse Graz sister");
    assert!(before.contains("Ilse"), "{before}");
    let counted = f.brain.counts("u").expect("counts").total;

    let dismissed = f
        .brain
        .dismiss_for_agent("u", &ilse, false)
        .expect("dismiss");
    assert_eq!(dismissed.dismissed_at, Some(f.brain.now()));

    let after = everything_served(&f, "Ilse Graz sister");
    assert!(!after.contains("Ilse"), "{after}");
    assert!(after.contains("oolong"), "the rest is untouched: {after}");
    assert_eq!(f.brain.counts("u").expect("counts").total, counted - 1);
    // Nothing else changed: the transcript is as it was, for a restore.
    assert_eq!(
        messages(&f, "c1"),
        ["My sister Ilse lives in Graz. We talk every Sunday."]
    );
    // The agent has nothing left there to delete or edit.
    assert!(matches!(
        f.brain.dismiss_for_agent("u", &ilse, false),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        f.brain.edit(
            "u",
            &ilse,
            MemoryEdit {
                summary: Some("User has no sister".into()),
                ..MemoryEdit::default()
            }
        ),
        Err(StoreError::NotFound(_))
    ));
    // The person sees it, with when and until when.
    let page = f
        .brain
        .agent_dismissed("u", WEEK, 50, None)
        .expect("dismissed");
    assert_eq!(page.items.len(), 1);
    let item = &page.items[0];
    assert_eq!(item.memory, dismissed);
    assert_eq!(item.dismissed_at, f.brain.now());
    assert_eq!(item.restorable_until, f.brain.now() + WEEK);
    assert!(!item.keep_messages);
    // Another user sees none of it.
    assert!(
        f.brain
            .agent_dismissed("v", WEEK, 50, None)
            .expect("dismissed")
            .items
            .is_empty()
    );
    assert!(matches!(
        f.brain.restore("v", &ilse),
        Err(StoreError::NotFound(_))
    ));
    assert!(f.brain.get("u", &tea.id).expect("tea").is_live());
}

#[test]
fn a_restore_brings_back_the_memory_and_its_messages_as_they_were() {
    let f = fixture();
    let ilse = learn(
        &f,
        "c1",
        &["My sister Ilse lives in Graz. We talk every Sunday."],
        "Ilse",
    );
    let served = everything_served(&f, "Ilse Graz sister");
    assert!(served.contains("Ilse"), "{served}");
    let original = f.brain.get("u", &ilse).expect("get");
    f.brain
        .dismiss_for_agent("u", &ilse, false)
        .expect("dismiss");
    f.clock.advance(3 * DAY_MS);
    // A maintenance pass inside the window forgets nothing.
    let report = run(&f.brain, strategies(), &maintenance(7));
    assert_eq!((report.dismissals_forgotten, report.failures), (0, 0));

    let restored = f.brain.restore("u", &ilse).expect("restore");
    assert_eq!(restored, original);
    assert!(live(&f).contains(&original));
    let again = everything_served(&f, "Ilse Graz sister");
    assert!(again.contains("Ilse"), "{again}");
    assert!(
        f.brain
            .retrieve("u", "Where does my sister live?")
            .expect("retrieve")
            .block
            .contains("Graz")
    );
    assert_eq!(
        messages(&f, "c1"),
        ["My sister Ilse lives in Graz. We talk every Sunday."]
    );
    let events: Vec<(String, String)> = f
        .brain
        .history("u", &ilse)
        .expect("history")
        .into_iter()
        .map(|h| (h.event, h.actor))
        .collect();
    assert_eq!(
        events[events.len() - 2..],
        [
            ("DISMISS".to_string(), "agent".to_string()),
            ("RESTORE".to_string(), "user".to_string())
        ]
    );
    assert!(
        f.brain
            .agent_dismissed("u", WEEK, 50, None)
            .expect("dismissed")
            .items
            .is_empty()
    );
    // Restored once: there is nothing left to restore, and nothing for the window.
    assert!(matches!(
        f.brain.restore("u", &ilse),
        Err(StoreError::NotFound(_))
    ));
    f.clock.advance(WEEK);
    run(&f.brain, strategies(), &maintenance(7));
    assert!(f.brain.get("u", &ilse).expect("kept").is_live());
    assert_eq!(
        messages(&f, "c1"),
        ["My sister Ilse lives in Graz. We talk every Sunday."]
    );
}

#[test]
fn past_the_window_maintenance_forgets_it_for_good_with_its_messages() {
    let f = fixture();
    let ilse = learn(
        &f,
        "c1",
        &["My sister Ilse lives in Graz. We talk every Sunday."],
        "Ilse",
    );
    let tromso = learn(&f, "c2", &["I grew up in Tromso."], "Tromso");
    f.brain
        .dismiss_for_agent("u", &ilse, false)
        .expect("dismiss");
    f.brain
        .dismiss_for_agent("u", &tromso, true)
        .expect("dismiss");
    let settings = maintenance(7);
    f.clock.advance(WEEK - 1);
    assert_eq!(
        run(&f.brain, strategies(), &settings).dismissals_forgotten,
        0
    );
    assert!(f.brain.get("u", &ilse).is_ok());

    f.clock.advance(1);
    let report = run(&f.brain, strategies(), &settings);
    assert_eq!((report.dismissals_forgotten, report.failures), (2, 0));
    for id in [&ilse, &tromso] {
        assert!(matches!(f.brain.get("u", id), Err(StoreError::NotFound(_))));
        assert!(matches!(
            f.brain.restore("u", id),
            Err(StoreError::NotFound(_))
        ));
    }
    // Redacted then, unless the agent kept the messages.
    assert_eq!(messages(&f, "c1"), [FORGOTTEN]);
    assert_eq!(messages(&f, "c2"), ["I grew up in Tromso."]);
    assert!(f.brain.persons("u").expect("persons").is_empty());
    let log = f.brain.forget_log("u", 10).expect("log");
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log.iter().all(|e| e.by == "agent" && e.reason == "memory"));
    assert!(
        log.iter()
            .any(|e| e.memories == [ilse.clone()] && !e.messages.is_empty())
    );
    assert!(
        f.brain
            .agent_dismissed("u", WEEK, 50, None)
            .expect("dismissed")
            .items
            .is_empty()
    );
    // Nothing is left for the next pass.
    assert_eq!(
        run(&f.brain, strategies(), &settings).dismissals_forgotten,
        0
    );
}

#[test]
fn the_persons_own_delete_of_a_dismissed_memory_is_final_at_once() {
    let f = fixture();
    let ilse = learn(
        &f,
        "c1",
        &["My sister Ilse lives in Graz. We talk every Sunday."],
        "Ilse",
    );
    f.brain
        .dismiss_for_agent("u", &ilse, true)
        .expect("dismiss");
    f.brain
        .forget_memory("u", &ilse, false, Forgetter::Person)
        .expect("forget");
    assert_eq!(messages(&f, "c1"), [FORGOTTEN]);
    assert!(
        f.brain
            .agent_dismissed("u", WEEK, 50, None)
            .expect("dismissed")
            .items
            .is_empty()
    );
    assert_eq!(f.brain.forget_log("u", 10).expect("log")[0].by, "person");
}

#[test]
fn the_list_is_newest_first_in_pages() {
    let f = fixture();
    let mut ids = Vec::new();
    for drink in ["tea", "coffee", "cocoa"] {
        let id = f
            .brain
            .add(
                "u",
                NewMemory::new(MemoryType::Preference, format!("User likes {drink}")),
            )
            .expect("add")
            .record
            .id;
        f.brain.dismiss_for_agent("u", &id, false).expect("dismiss");
        ids.push(id);
        f.clock.advance(60_000);
    }
    let first = f.brain.agent_dismissed("u", DAY_MS, 2, None).expect("page");
    let second = f
        .brain
        .agent_dismissed("u", DAY_MS, 2, first.next_cursor.as_deref())
        .expect("page");
    assert_eq!(second.next_cursor, None);
    let listed: Vec<&str> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|d| d.memory.id.as_str())
        .collect();
    assert_eq!(listed, [&ids[2], &ids[1], &ids[0]].map(String::as_str));
    assert!(matches!(
        f.brain
            .agent_dismissed("u", DAY_MS, 2, Some("not a cursor")),
        Err(StoreError::Invalid {
            field: "cursor",
            ..
        })
    ));
}

#[test]
fn a_restore_is_settled_against_what_was_written_meanwhile() {
    let f = fixture();
    let old = f
        .brain
        .add(
            "u",
            NewMemory::new(MemoryType::Identity, "User's phone number is 555-0101"),
        )
        .expect("add")
        .record;
    f.brain
        .dismiss_for_agent("u", &old.id, false)
        .expect("dismiss");
    f.clock.advance(1_000);
    let new = f
        .brain
        .add(
            "u",
            NewMemory::new(MemoryType::Identity, "User's phone number is 555-0202"),
        )
        .expect("add")
        .record;
    let restored = f.brain.restore("u", &old.id).expect("restore");
    // One live phone number: the newer one, as settling any write decides.
    assert_eq!(restored.superseded_by.as_deref(), Some(new.id.as_str()));
    let phones: Vec<String> = live(&f)
        .into_iter()
        .filter(|m| m.summary.contains("phone"))
        .map(|m| m.summary)
        .collect();
    assert_eq!(phones, ["User's phone number is 555-0202"]);
}

#[test]
fn pruning_leaves_the_agents_dismissals_to_their_window() {
    let f = fixture();
    let id = f
        .brain
        .add(
            "u",
            NewMemory::new(MemoryType::Preference, "User likes jazz"),
        )
        .expect("add")
        .record
        .id;
    f.brain.dismiss_for_agent("u", &id, false).expect("dismiss");
    // Pruning purges what it dismissed itself after 30 days; not what the person
    // may still restore (a window of 60 days here).
    f.clock.advance(45 * DAY_MS);
    let config = crate::memory::brain::lifecycle::LifecycleConfig::default();
    assert_eq!(f.brain.prune("u", &config).expect("prune").purged, 0);
    assert_eq!(
        run(&f.brain, strategies(), &maintenance(60)).dismissals_forgotten,
        0
    );
    assert!(f.brain.restore("u", &id).expect("restore").is_live());
}

/// A message that states the value of a memory the agent deleted, without being
/// where it was learned (the memory was added directly), is what the forget would
/// redact: hidden while the memory waits, served again once it is restored, and
/// left alone when the agent asked to keep the messages.
#[test]
fn a_message_that_states_the_value_is_hidden_with_the_memory() {
    let f = fixture();
    let counselor = f
        .brain
        .add(
            "u",
            NewMemory::new(
                MemoryType::Relationship,
                "User's counselor is Dr. Lindqvist",
            ),
        )
        .expect("add")
        .record;
    f.brain
        .record_message(
            "u",
            "c1",
            Role::User,
            None,
            "Session with Dr. Lindqvist went well today.",
        )
        .expect("record");
    f.clock.advance(1_000);
    let asked = "Who do I see for counseling? Lindqvist";
    assert!(everything_served(&f, asked).contains("Lindqvist"));

    f.brain
        .dismiss_for_agent("u", &counselor.id, false)
        .expect("dismiss");
    let hidden = everything_served(&f, asked);
    assert!(!hidden.contains("Lindqvist"), "{hidden}");
    // Hidden, not redacted: the restore has it all back.
    assert_eq!(
        messages(&f, "c1"),
        ["Session with Dr. Lindqvist went well today."]
    );
    f.brain.restore("u", &counselor.id).expect("restore");
    let restored = f
        .brain
        .search_hits("u", "Lindqvist", 50, SearchScope::All)
        .expect("search");
    assert_eq!(restored.len(), 2, "{restored:?}");

    // Kept messages are the agent's choice: only the memory is hidden.
    f.brain
        .dismiss_for_agent("u", &counselor.id, true)
        .expect("dismiss, keeping the messages");
    let kept = f
        .brain
        .search_hits("u", "Lindqvist", 50, SearchScope::All)
        .expect("search");
    assert_eq!(kept.len(), 1, "{kept:?}");
}

/// [`super::WAITING`] runs at every turn: its plan reads the user's index, not every
/// dismissal (a per-turn statement that read a whole table made a turn 10x slower).
#[test]
fn the_waiting_dismissals_are_read_through_the_users_index() {
    let mut conn = rusqlite::Connection::open_in_memory().expect("open");
    crate::memory::brain::schema::migrate(&mut conn).expect("migrate");
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", super::WAITING))
        .expect("plan");
    let plan: Vec<String> = stmt
        .query_map(["u"], |r| r.get::<_, String>(3))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    assert!(
        plan.iter()
            .all(|step| step.contains("agent_dismissals_by_user")),
        "{plan:#?}"
    );
}

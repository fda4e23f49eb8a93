//! The Second Brain on PostgreSQL (issue 32), against a real server the harness starts:
//! two `Brain`s on one database stand for two daemons (each its own connections and
//! its own in-memory memory index), and each finds what the other wrote as soon as
//! the write returns; the same calls give the same answers as on SQLite; an import may
//! name records further down its file, and one naming nothing is refused whole; a
//! daemon that looked at the change log before it was pruned builds its index again.

use std::sync::Arc;

use engram::events::EventBus;
use engram::memory::{Brain, MemoryEdit, NewMemory, SearchScope, StoreError, Tier};
use engram::time::ManualClock;
use engram_e2e::pg::Owner;
use engram_strategies::model::{MemoryType, Role};

const START: i64 = 1_790_000_000_000;

fn brain_on(url: &str, clock: &Arc<ManualClock>) -> Brain {
    Brain::postgres(url, clock.clone(), EventBus::default())
        .expect("the Second Brain on PostgreSQL")
}

fn note(summary: &str) -> NewMemory {
    NewMemory::new(MemoryType::Preference, summary)
}

fn found(brain: &Brain, user: &str, text: &str) -> Vec<String> {
    brain
        .search(user, text, 10)
        .expect("search")
        .into_iter()
        .map(|r| r.record.summary)
        .collect()
}

#[test]
fn each_daemon_finds_what_the_other_wrote_once_the_write_returns() {
    let Some(owner) = Owner::new("each_daemon_finds_what_the_other_wrote") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let one = brain_on(&owner.url(), &clock);
    let two = brain_on(&owner.url(), &clock);
    // Both indexes are built before any write, so only the log can tell them.
    one.warm().expect("warm");
    two.warm().expect("warm");

    let added = one
        .add("alice", note("likes oolong tea"))
        .expect("add")
        .record;
    assert_eq!(found(&two, "alice", "oolong"), ["likes oolong tea"]);
    assert_eq!(
        two.get("alice", &added.id).expect("get").summary,
        "likes oolong tea"
    );
    assert!(
        found(&two, "bob", "oolong").is_empty(),
        "another person's memory"
    );

    one.edit(
        "alice",
        &added.id,
        MemoryEdit {
            summary: Some("likes sencha tea".into()),
            ..Default::default()
        },
    )
    .expect("edit");
    assert_eq!(found(&two, "alice", "sencha"), ["likes sencha tea"]);
    assert!(
        found(&two, "alice", "oolong").is_empty(),
        "the old text is gone"
    );

    // And the other way round, while the first has its index built already.
    let theirs = two
        .add("alice", note("plays the cello"))
        .expect("add")
        .record;
    assert_eq!(found(&one, "alice", "cello"), ["plays the cello"]);

    one.delete("alice", &added.id).expect("delete");
    two.delete("alice", &theirs.id).expect("delete");
    assert!(
        found(&two, "alice", "sencha").is_empty(),
        "deleted through the other"
    );
    assert!(
        found(&one, "alice", "cello").is_empty(),
        "deleted through the other"
    );

    // The transcript: a message recorded through one is searched through the other.
    one.record_message(
        "alice",
        "conv_1",
        Role::User,
        None,
        "we flew to Lisbon in May",
    )
    .expect("record");
    let hits = two
        .search_hits("alice", "lisbon", 5, SearchScope::Conversations)
        .expect("search the transcript");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].tier, Tier::Transcript);
    assert!(
        two.search_hits("bob", "lisbon", 5, SearchScope::Conversations)
            .expect("search")
            .is_empty()
    );
}

/// The same calls on SQLite and on PostgreSQL give the same memories and messages in
/// the same order.
#[test]
fn the_same_calls_give_the_same_answers_on_both_backends() {
    let Some(owner) = Owner::new("the_same_calls_give_the_same_answers") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite_clock = Arc::new(ManualClock::new(START));
    let pg_clock = Arc::new(ManualClock::new(START));
    let on_sqlite = Brain::open(
        &dir.path().join("brain.db"),
        sqlite_clock.clone(),
        EventBus::default(),
    )
    .expect("sqlite");
    let on_pg = brain_on(&owner.url(), &pg_clock);
    let notes = [
        "likes green tea in the garden",
        "runs in the park on weekends",
        "drinks tea with Anna",
        "prefers the window seat",
        "is learning to garden with tea leaves",
        "her café is in Lisbon",
    ];
    let messages = [
        "I ran ten kilometres in the park",
        "Anna brought green tea from Lisbon",
        "the garden needs rain",
        "tea, tea and more tea",
    ];
    for (brain, clock) in [(&on_sqlite, &sqlite_clock), (&on_pg, &pg_clock)] {
        for (i, summary) in notes.iter().enumerate() {
            clock.set(START + i as i64 * 1_000);
            brain.add("alice", note(summary)).expect("add");
        }
        for content in messages {
            brain
                .record_message("alice", "conv_1", Role::User, None, content)
                .expect("record");
        }
        brain
            .add("bob", note("likes tea too"))
            .expect("another person");
    }
    for query in [
        "tea",
        "garden tea",
        "park",
        "lisbon",
        "anna",
        "window",
        "café",
    ] {
        assert_eq!(
            found(&on_pg, "alice", query),
            found(&on_sqlite, "alice", query),
            "memories for {query:?}"
        );
        let transcript = |brain: &Brain| -> Vec<String> {
            brain
                .search_hits("alice", query, 10, SearchScope::Conversations)
                .expect("search")
                .into_iter()
                .filter_map(|hit| hit.message.map(|m| m.snippet))
                .collect()
        };
        assert_eq!(
            transcript(&on_pg),
            transcript(&on_sqlite),
            "messages for {query:?}"
        );
    }
}

#[test]
fn an_import_may_name_what_comes_later_and_one_naming_nothing_is_refused_whole() {
    let Some(owner) = Owner::new("an_import_may_name_what_comes_later") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let brain = brain_on(&owner.url(), &clock);
    let record = brain.add("carol", note("likes jazz")).expect("add").record;
    // Dave's copy of it under an id of his own, with a person: the link comes first,
    // naming both before they exist.
    let mut memory = serde_json::to_value(&record).expect("json");
    memory["kind"] = "memory".into();
    memory["id"] = "mem_dave_jazz".into();
    let lines = [
        serde_json::json!({"kind": "person_link", "memory_id": "mem_dave_jazz",
            "person_id": "per_dave_sam", "user_id": "dave", "relation": null}),
        memory,
        serde_json::json!({"kind": "person", "id": "per_dave_sam", "user_id": "dave",
            "name": "Sam", "aliases": [], "created_at": "2026-01-01T00:00:00Z",
            "last_seen": "2026-01-01T00:00:00Z"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let imported = brain
        .import("dave", &mut text.as_bytes())
        .expect("an import naming later records");
    assert_eq!(imported, 3);
    assert_eq!(found(&brain, "dave", "jazz"), ["likes jazz"]);
    assert_eq!(
        brain.get("carol", &record.id).expect("carol's").summary,
        "likes jazz"
    );

    let before = found(&brain, "erin", "opera");
    let mut dangling = serde_json::to_value(&record).expect("json");
    dangling["kind"] = "memory".into();
    dangling["id"] = "mem_erin_opera".into();
    dangling["summary"] = "likes opera".into();
    dangling["superseded_by"] = "mem_nowhere".into();
    let dangling = format!("{dangling}\n");
    let error = brain
        .import("erin", &mut dangling.as_bytes())
        .expect_err("a reference to nothing");
    assert!(matches!(error, StoreError::Dangling(_)), "{error:?}");
    assert_eq!(
        found(&brain, "erin", "opera"),
        before,
        "nothing of it stored"
    );
}

#[test]
fn a_daemon_that_looked_before_the_log_was_pruned_builds_its_index_again() {
    let Some(owner) = Owner::new("a_daemon_that_looked_before_the_log_was_pruned") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let busy = brain_on(&owner.url(), &clock);
    let idle = brain_on(&owner.url(), &clock);
    idle.warm().expect("warm");
    busy.add("alice", note("likes oolong tea")).expect("add");
    // Two passes a retention apart: the second drops what the first saw.
    busy.store().prune_changes(START).expect("prune");
    busy.add("alice", note("plays the cello")).expect("add");
    let mut client =
        postgres::Client::connect(&owner.db.conninfo(), postgres::NoTls).expect("connect");
    let mut logged = || -> i64 {
        client
            .query_one("SELECT count(*) FROM brain.memory_changes", &[])
            .expect("count")
            .get(0)
    };
    // A pass sets its floor to the oldest transaction running in the cluster, which
    // another test's may hold back: passes a retention apart move it on.
    let before = logged();
    let mut now = START;
    for _ in 0..50 {
        now += engram::memory::bench::KEEP_CHANGES_MS;
        busy.store().prune_changes(now).expect("prune");
        if logged() < before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(logged() < before, "the log was pruned");
    assert_eq!(found(&idle, "alice", "oolong"), ["likes oolong tea"]);
    assert_eq!(found(&idle, "alice", "cello"), ["plays the cello"]);
}

/// The daemons on one database run one maintenance pass per interval between them, by
/// the server's clock.
#[test]
fn one_daemon_claims_each_maintenance_pass() {
    let Some(owner) = Owner::new("one_daemon_claims_each_maintenance_pass") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let one = brain_on(&owner.url(), &clock);
    let two = brain_on(&owner.url(), &clock);
    let every = engram::memory::bench::MAINTENANCE_EVERY_MS;
    assert!(
        one.store().claim_maintenance(every).expect("claim"),
        "the first asks"
    );
    assert!(
        !two.store().claim_maintenance(every).expect("claim"),
        "taken"
    );
    assert!(
        !one.store().claim_maintenance(every).expect("claim"),
        "taken, by itself too"
    );
    // Once the interval has passed (here: an interval of nothing), the next asker.
    assert!(two.store().claim_maintenance(0).expect("claim"));
}

/// Forgotten text is purged on PostgreSQL too: the pass vacuums the tables it was in
/// (outside any transaction, as the server requires), and fails nothing.
#[test]
fn a_purge_after_forgetting_vacuums_the_tables() {
    let Some(owner) = Owner::new("a_purge_after_forgetting_vacuums_the_tables") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let brain = brain_on(&owner.url(), &clock);
    let added = brain
        .add("alice", note("likes oolong tea"))
        .expect("add")
        .record;
    brain.delete("alice", &added.id).expect("delete");
    brain.store().request_purge();
    brain.store().purge_if_requested().expect("purge");
    let mut client =
        postgres::Client::connect(&owner.db.conninfo(), postgres::NoTls).expect("connect");
    let vacuumed: Option<i64> = client
        .query_one(
            "SELECT vacuum_count FROM pg_stat_user_tables
             WHERE schemaname = 'brain' AND relname = 'memories'",
            &[],
        )
        .expect("statistics")
        .get(0);
    assert!(vacuumed.is_some_and(|n| n >= 1), "{vacuumed:?}");
}

/// Two daemons told two values of one single-valued attribute at once: one person's
/// writes are taken one after the other (a write lock per person), so the later
/// replaces the earlier and one value stays live, as through one daemon.
#[test]
fn two_daemons_settle_one_persons_facts_one_after_the_other() {
    let Some(owner) = Owner::new("two_daemons_settle_one_persons_facts") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let one = brain_on(&owner.url(), &clock);
    let two = brain_on(&owner.url(), &clock);
    let mut client =
        postgres::Client::connect(&owner.db.conninfo(), postgres::NoTls).expect("connect");
    for round in 0..10 {
        let attribute = format!("favorite shade{round}");
        let both_ready = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for (brain, value) in [(&one, "green"), (&two, "blue")] {
                let (attribute, both_ready) = (&attribute, &both_ready);
                s.spawn(move || {
                    let mut new = note(&format!("Alice's {attribute} is {value}"));
                    new.attribute = Some(attribute.clone());
                    both_ready.wait();
                    brain.add("alice", new).expect("add");
                });
            }
        });
        let live: i64 = client
            .query_one(
                "SELECT count(*) FROM brain.memories WHERE user_id = 'alice'
                 AND attribute = $1 AND superseded_by IS NULL AND dismissed_at IS NULL",
                &[&attribute],
            )
            .expect("count")
            .get(0);
        assert_eq!(live, 1, "round {round}: both values live");
    }
}

/// The Second Brain's writes for one person act for that person on PostgreSQL (the
/// role row-level security keys on, with them as `engram.user`), not for the host: a
/// trigger the test adds notes the role and the person of every change.
#[test]
fn one_persons_writes_act_for_that_person_under_row_level_security() {
    let Some(owner) = Owner::new("writes_act_for_the_person") else {
        return;
    };
    let clock = Arc::new(ManualClock::new(START));
    let brain = brain_on(&owner.url(), &clock);
    let mut admin =
        postgres::Client::connect(&owner.db.conninfo(), postgres::NoTls).expect("superuser");
    admin
        .batch_execute(&format!(
            "CREATE TABLE public.acted (role TEXT, person TEXT, tbl TEXT);
             GRANT INSERT ON public.acted TO {user_role}, {system_role};
             CREATE FUNCTION public.note_actor() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO public.acted
                 VALUES (current_user, current_setting('{setting}', true), TG_TABLE_NAME);
                 RETURN NULL;
             END $$;
             CREATE TRIGGER note_actor AFTER INSERT OR UPDATE OR DELETE ON brain.memories
                 FOR EACH ROW EXECUTE FUNCTION public.note_actor();
             CREATE TRIGGER note_actor AFTER INSERT OR UPDATE OR DELETE ON brain.meta
                 FOR EACH ROW EXECUTE FUNCTION public.note_actor();
             CREATE TRIGGER note_actor AFTER INSERT OR UPDATE OR DELETE ON brain.conversations
                 FOR EACH ROW EXECUTE FUNCTION public.note_actor();
             CREATE TRIGGER note_actor AFTER INSERT OR UPDATE OR DELETE ON brain.messages
                 FOR EACH ROW EXECUTE FUNCTION public.note_actor();",
            user_role = engram::pg::USER_ROLE,
            system_role = engram::pg::SYSTEM_ROLE,
            setting = engram::pg::USER_SETTING,
        ))
        .expect("the trigger");

    let added = brain
        .add("alice", note("likes oolong tea"))
        .expect("add")
        .record;
    brain
        .edit(
            "alice",
            &added.id,
            MemoryEdit {
                summary: Some("likes sencha tea".into()),
                ..Default::default()
            },
        )
        .expect("edit");
    // A message: its conversation and its row, written acting for alice. Bob naming
    // her conversation is refused by the write itself (he cannot see it), and
    // nothing of his is written.
    brain
        .record_message("alice", "conv_alice", Role::User, None, "I like sencha")
        .expect("record");
    brain
        .record_message("alice", "conv_alice", Role::User, None, "and genmaicha")
        .expect("record again");
    let refused = brain
        .record_message("bob", "conv_alice", Role::User, None, "mine now")
        .expect_err("another person's conversation");
    assert!(
        matches!(refused, StoreError::OtherUsers { .. }),
        "{refused:?}"
    );
    brain.set_learning_paused("alice", true).expect("pause");
    clock.advance(60_000);
    let retrieved = brain
        .retrieve("alice", "what tea do I like")
        .expect("retrieve");
    assert!(retrieved.block.contains("sencha"), "{}", retrieved.block);
    brain.delete("alice", &added.id).expect("delete");

    let acted: Vec<(String, Option<String>, String)> = admin
        .query(
            "SELECT DISTINCT role, person, tbl FROM public.acted ORDER BY tbl",
            &[],
        )
        .expect("acted")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let alice = |table: &str| {
        (
            engram::pg::USER_ROLE.to_string(),
            Some("alice".to_string()),
            table.to_string(),
        )
    };
    assert_eq!(
        acted,
        [
            alice("conversations"),
            alice("memories"),
            alice("messages"),
            alice("meta")
        ]
    );
}

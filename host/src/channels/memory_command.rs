//! The chat channels' `/memory` command (README, "Chat with Engram"), independent of
//! any transport: a [`Choice`] from the channel's menu in, a [`MemoryReply`] out. The
//! transports only present the menu their way:
//!
//! | Action | Terminal (`engram chat`) | Messaging bot (Telegram) |
//! |---|---|---|
//! | Overview | arrow-key menu entry Overview | inline button Overview |
//! | Recent memories | menu entry Recent | inline button Recent |
//! | Subconscious | menu entry Subconscious | inline button Subconscious |
//! | Search | menu entry Search | unavailable: ask the agent to search |
//! | Pause learning | menu entry Pause | inline button Pause |
//! | Resume learning | menu entry Resume | inline button Resume |
//! | Clear all | menu entry Clear, with confirmation | inline button Clear, then Yes |
//! | Forget one memory | menu entry Forget: pick, then confirm | `/memory forget <words>`: a button per match, then Yes |
//!
//! Forgetting one memory redacts the messages it was learned from too, unless the
//! person keeps them (`--keep-messages` in the terminal, a button in the bot), as
//! `DELETE /api/brain/memory/{id}` does (`brain/forget.rs`).
//! Everything goes through the one memory interface ([`Memory`]); what only the Second
//! Brain does (the subconscious tier, pausing, clearing) goes through
//! [`Memory::brain`], and with the fact store in use says so. Every call blocks
//! (SQLite): transports run it off the async workers.

use std::fmt::Write as _;

use engram_strategies::model::{MemoryType, Scope};

use crate::described::Described;
use crate::memory::Forgetter;
use crate::memory::record::MemoryRecord;
use crate::memory::{Counts, ListFilter};
use crate::memory::{Memory, MemoryError};

/// Memories a listing shows.
pub const SHOWN: usize = 10;
/// The longest summary a listing shows.
const SUMMARY_CHARS: usize = 160;
/// The longest search query taken.
pub const MAX_QUERY_CHARS: usize = 200;

/// An entry of a channel's `/memory` menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Overview,
    Recent,
    Subconscious,
    Search,
    Pause,
    Resume,
    Clear,
    Forget,
}

/// The terminal's menu: every action of the table above.
pub const TERMINAL_MENU: [Choice; 8] = [
    Choice::Overview,
    Choice::Recent,
    Choice::Subconscious,
    Choice::Search,
    Choice::Pause,
    Choice::Resume,
    Choice::Clear,
    Choice::Forget,
];

/// The bot's buttons: the same, without Search (a person asks the agent instead).
pub const BOT_MENU: [Choice; 7] = [
    Choice::Overview,
    Choice::Recent,
    Choice::Subconscious,
    Choice::Pause,
    Choice::Resume,
    Choice::Clear,
    Choice::Forget,
];

/// What the bot says when asked to search from `/memory`.
pub const BOT_SEARCH: &str = "Search is not in the bot's /memory menu: ask me in a message instead, for example \"what do you remember about my trip?\"";

impl Choice {
    /// The label a menu shows.
    pub fn label(self) -> &'static str {
        match self {
            Choice::Overview => "Overview",
            Choice::Recent => "Recent",
            Choice::Subconscious => "Subconscious",
            Choice::Search => "Search",
            Choice::Pause => "Pause",
            Choice::Resume => "Resume",
            Choice::Clear => "Clear",
            Choice::Forget => "Forget",
        }
    }

    /// One line on what it does.
    pub fn hint(self) -> &'static str {
        match self {
            Choice::Overview => "learning state, counts and summaries",
            Choice::Recent => "the most recently changed memories",
            Choice::Subconscious => "memories out of active recall",
            Choice::Search => "full-text search of both tiers",
            Choice::Pause => "stop learning from conversations",
            Choice::Resume => "learn from conversations again",
            Choice::Clear => "delete every memory, after confirmation",
            Choice::Forget => "forget one memory and the messages it came from",
        }
    }

    /// A stable key (bot button data, `/memory <key>` typed out).
    pub fn key(self) -> &'static str {
        match self {
            Choice::Overview => "overview",
            Choice::Recent => "recent",
            Choice::Subconscious => "subconscious",
            Choice::Search => "search",
            Choice::Pause => "pause",
            Choice::Resume => "resume",
            Choice::Clear => "clear",
            Choice::Forget => "forget",
        }
    }

    /// The action it runs, when it needs nothing more from the person (Search needs
    /// its query first; Forget runs with the words to find the memory by, or none for
    /// the most recent).
    pub fn action(self) -> Option<Action> {
        Some(match self {
            Choice::Overview => Action::Overview,
            Choice::Recent => Action::Recent,
            Choice::Subconscious => Action::Subconscious,
            Choice::Search => return None,
            Choice::Pause => Action::Pause,
            Choice::Resume => Action::Resume,
            Choice::Clear => Action::Clear,
            Choice::Forget => Action::Forget(String::new()),
        })
    }

    pub fn parse(key: &str) -> Option<Choice> {
        TERMINAL_MENU
            .into_iter()
            .find(|c| c.key().eq_ignore_ascii_case(key.trim()))
    }
}

/// What a transport asks the handler to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Overview,
    Recent,
    Subconscious,
    Search(String),
    Pause,
    Resume,
    /// Asks how much would be deleted; the reply carries [`MemoryReply::confirm`].
    Clear,
    /// The person said yes: delete everything.
    ClearConfirmed,
    /// Which memory to forget: the ones matching these words (the most recent when
    /// empty), offered as [`MemoryReply::picks`].
    Forget(String),
    /// Forget this memory: asks first (the reply carries [`MemoryReply::confirm`]),
    /// and forgets once `confirmed`; its messages are redacted unless `keep_messages`.
    ForgetOne {
        id: String,
        keep_messages: bool,
        confirmed: bool,
    },
}

/// A memory offered to pick.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pick {
    pub id: String,
    /// Its line as a listing shows it.
    pub label: String,
}

/// The answer: plain text, complete on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryReply {
    pub text: String,
    /// The action needs the person's yes first (Clear): the transport asks, and runs
    /// [`Action::ClearConfirmed`] on yes (or, for [`Action::ForgetOne`], the same
    /// action confirmed).
    pub confirm: bool,
    /// Memories the person picks one of (Forget).
    pub picks: Vec<Pick>,
}

impl MemoryReply {
    pub fn text(text: String) -> MemoryReply {
        MemoryReply {
            text,
            confirm: false,
            picks: Vec::new(),
        }
    }
}

/// Runs `action` for `user`. Failures come back as text for the chat; the host's own
/// failures are logged and not shown.
pub fn run(memory: &Memory, user: &str, action: Action) -> MemoryReply {
    match answer(memory, user, action) {
        Ok(reply) => reply,
        Err(e @ MemoryError::BrainDisabled { .. }) => MemoryReply::text(e.to_string()),
        Err(e) if e.to_wire().is_internal() => {
            MemoryReply::text("Memory failed; the daemon's log has the details.".into())
        }
        Err(e) => MemoryReply::text(e.to_string()),
    }
}

fn answer(memory: &Memory, user: &str, action: Action) -> Result<MemoryReply, MemoryError> {
    let list = |conscious: Option<bool>| ListFilter {
        conscious,
        memory_type: None,
        limit: SHOWN,
        cursor: None,
    };
    Ok(match action {
        Action::Overview => MemoryReply::text(overview(memory, user)?),
        Action::Recent => {
            let page = memory.list(user, &list(None))?;
            MemoryReply::text(listing(&page.items, "Recent memories", "No memories yet."))
        }
        Action::Subconscious => {
            memory.brain()?;
            let page = memory.list(user, &list(Some(false)))?;
            MemoryReply::text(listing(
                &page.items,
                "Subconscious (out of active recall, recalled when strongly relevant)",
                "Nothing in the subconscious.",
            ))
        }
        Action::Search(query) => {
            let query = query.trim();
            if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
                return Ok(MemoryReply::text(format!(
                    "Give 1 to {MAX_QUERY_CHARS} characters to search for."
                )));
            }
            let found = memory.search(user, query, SHOWN)?;
            if found.is_empty() {
                MemoryReply::text(format!("No memory matches \"{}\".", one_line(query)))
            } else {
                // Each line names its scope, so the tier shows.
                let records: Vec<MemoryRecord> = found.into_iter().map(|hit| hit.record).collect();
                let title = format!("Memories matching \"{}\"", one_line(query));
                MemoryReply::text(listing(&records, &title, ""))
            }
        }
        Action::Pause => {
            memory.brain()?.set_learning_paused(user, true)?;
            MemoryReply::text(
                "Learning paused: conversations are not learned from until you resume.".into(),
            )
        }
        Action::Resume => {
            memory.brain()?.set_learning_paused(user, false)?;
            MemoryReply::text("Learning resumed.".into())
        }
        Action::Clear => {
            let total = memory.brain()?.counts(user)?.total;
            if total == 0 {
                MemoryReply::text("There are no memories to clear.".into())
            } else {
                MemoryReply {
                    text: format!(
                        "Delete all {total} {} for good? This cannot be undone.",
                        noun(total)
                    ),
                    confirm: true,
                    picks: Vec::new(),
                }
            }
        }
        Action::ClearConfirmed => {
            let deleted = memory.brain()?.clear(user)?;
            MemoryReply::text(format!("Cleared: {deleted} {} deleted.", noun(deleted)))
        }
        Action::Forget(words) => offer(memory, user, words.trim())?,
        Action::ForgetOne {
            id,
            keep_messages,
            confirmed: false,
        } => {
            let record = memory.get(user, &id)?;
            let messages = if keep_messages {
                "The messages it was learned from are kept."
            } else {
                "The messages it was learned from are redacted too."
            };
            MemoryReply {
                text: format!(
                    "Forget \"{}\"? {messages}",
                    cut(&one_line(&record.summary), SUMMARY_CHARS)
                ),
                confirm: true,
                picks: Vec::new(),
            }
        }
        Action::ForgetOne {
            id,
            keep_messages,
            confirmed: true,
        } => {
            let record = memory.get(user, &id)?;
            let forgotten = memory.delete(user, &id, keep_messages, Forgetter::Person)?;
            let mut text = format!(
                "Forgotten: \"{}\".",
                cut(&one_line(&record.summary), SUMMARY_CHARS)
            );
            match forgotten.messages.len() {
                0 => {}
                1 => text.push_str(" 1 message redacted."),
                n => text.push_str(&format!(" {n} messages redacted.")),
            }
            MemoryReply::text(text)
        }
    })
}

/// The memories the person may mean by `words` (the most recent when empty), to pick
/// one of.
fn offer(memory: &Memory, user: &str, words: &str) -> Result<MemoryReply, MemoryError> {
    if words.chars().count() > MAX_QUERY_CHARS {
        return Ok(MemoryReply::text(format!(
            "Give up to {MAX_QUERY_CHARS} characters to find the memory by."
        )));
    }
    let records: Vec<MemoryRecord> = if words.is_empty() {
        let filter = ListFilter {
            conscious: None,
            memory_type: None,
            limit: SHOWN,
            cursor: None,
        };
        memory.list(user, &filter)?.items
    } else {
        let found = memory.search(user, words, SHOWN)?;
        found.into_iter().map(|hit| hit.record).collect()
    };
    if records.is_empty() {
        return Ok(MemoryReply::text(if words.is_empty() {
            "No memories yet.".into()
        } else {
            format!("No memory matches \"{}\".", one_line(words))
        }));
    }
    Ok(MemoryReply {
        text: "Which memory should I forget?".into(),
        confirm: false,
        picks: records
            .iter()
            .map(|record| Pick {
                id: record.id.clone(),
                label: line(record),
            })
            .collect(),
    })
}

fn noun(n: usize) -> &'static str {
    if n == 1 { "memory" } else { "memories" }
}

fn overview(memory: &Memory, user: &str) -> Result<String, MemoryError> {
    let Ok(brain) = memory.brain() else {
        let counts = memory.counts(user)?;
        return Ok(format!(
            "Second Brain: off ({}). Memory is the basic fact store, which does not learn.\n{} {}.",
            memory.disabled_reason().unwrap_or("disabled"),
            counts.total,
            noun(counts.total)
        ));
    };
    let paused = brain.learning_paused(user)?;
    let counts = brain.counts(user)?;
    let summaries = brain.summaries(user)?;
    let mut text = format!(
        "Second Brain: on, learning {}.\n{} {}{}",
        if paused { "paused" } else { "on" },
        counts.total,
        noun(counts.total),
        counted(&counts, false)
    );
    let by_type = counted(&counts, true);
    if !by_type.is_empty() {
        let _ = write!(text, "\nBy type{by_type}");
    }
    let summary = |s: &Option<String>| match s.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => cut(&one_line(s), 300),
        _ => "(none yet)".to_string(),
    };
    let _ = write!(
        text,
        "\nProfile: {}\nActive: {}\nLast consolidation: {}",
        summary(&summaries.profile_summary),
        summary(&summaries.active_summary),
        summaries
            .last_consolidation_at
            .map(crate::time::rfc3339::format)
            .unwrap_or_else(|| "never".into())
    );
    Ok(text)
}

/// `: durable 3, active 2` (by scope) or `: preference 2, goal 1` (by type), in the
/// model's order, zeros left out; empty when all are zero.
fn counted(counts: &Counts, by_type: bool) -> String {
    let names: Vec<&str> = if by_type {
        MemoryType::ALL.iter().map(|t| t.as_str()).collect()
    } else {
        Scope::ALL.iter().map(|s| s.as_str()).collect()
    };
    let map = if by_type {
        &counts.by_type
    } else {
        &counts.by_scope
    };
    let parts: Vec<String> = names
        .iter()
        .filter_map(|name| {
            map.get(*name)
                .filter(|n| **n > 0)
                .map(|n| format!("{name} {n}"))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(", "))
    }
}

fn listing(items: &[MemoryRecord], title: &str, empty: &str) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    let mut text = format!("{title}:");
    for record in items {
        let _ = write!(text, "\n{}", line(record));
    }
    text
}

/// `- [preference] Likes green tea (durable)`.
fn line(record: &MemoryRecord) -> String {
    let mut line = format!(
        "- [{}] {} ({}",
        record.memory_type.as_str(),
        cut(&one_line(&record.summary), SUMMARY_CHARS),
        record.scope.as_str()
    );
    if record.stale {
        line.push_str(", stale");
    }
    line.push(')');
    line
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::Config;
    use crate::events::EventBus;
    use crate::memory::NewMemory;
    use crate::memory::open_memory;
    use crate::time::SystemClock;

    fn memory(enabled: bool) -> (tempfile::TempDir, Memory) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.memory.second_brain.enabled = Some(enabled);
        let memory = open_memory(
            dir.path(),
            &crate::storage::Storage::Files,
            None,
            &config,
            Arc::new(SystemClock),
            EventBus::default(),
        );
        (dir, memory)
    }

    fn add(memory: &Memory, user: &str, summary: &str, memory_type: MemoryType, scope: Scope) {
        memory
            .add(
                user,
                NewMemory {
                    memory_type,
                    summary: summary.into(),
                    detail: None,
                    evidence: None,
                    scope: Some(scope),
                    confidence: None,
                    importance: None,
                    holder: None,
                    attribute: None,
                },
            )
            .unwrap();
    }

    #[test]
    fn the_menus_follow_the_spec_table() {
        let labels = |menu: &[Choice]| menu.iter().map(|c| c.label()).collect::<Vec<_>>();
        assert_eq!(
            labels(&TERMINAL_MENU),
            [
                "Overview",
                "Recent",
                "Subconscious",
                "Search",
                "Pause",
                "Resume",
                "Clear",
                "Forget"
            ]
        );
        assert_eq!(
            labels(&BOT_MENU),
            [
                "Overview",
                "Recent",
                "Subconscious",
                "Pause",
                "Resume",
                "Clear",
                "Forget"
            ]
        );
        for choice in TERMINAL_MENU {
            assert_eq!(Choice::parse(choice.key()), Some(choice));
        }
        assert_eq!(Choice::parse(" CLEAR "), Some(Choice::Clear));
        assert_eq!(Choice::parse("forget"), Some(Choice::Forget));
        assert_eq!(Choice::parse("delete"), None);
    }

    #[test]
    fn every_action_answers_for_its_user_only() {
        let (_dir, memory) = memory(true);
        add(
            &memory,
            "ann",
            "Likes green tea",
            MemoryType::Preference,
            Scope::Durable,
        );
        add(
            &memory,
            "ann",
            "Runs a marathon in May",
            MemoryType::Goal,
            Scope::Active,
        );
        add(
            &memory,
            "ann",
            "Used to play chess",
            MemoryType::Habit,
            Scope::Subconscious,
        );
        add(
            &memory,
            "bob",
            "Likes coffee",
            MemoryType::Preference,
            Scope::Durable,
        );

        let overview = run(&memory, "ann", Action::Overview).text;
        assert!(
            overview.starts_with(
                "Second Brain: on, learning on.\n3 memories: durable 1, active 1, subconscious 1"
            ),
            "{overview}"
        );
        assert!(
            overview.contains("By type: preference 1, goal 1, habit 1"),
            "{overview}"
        );
        assert!(overview.contains("Profile: (none yet)"));

        let recent = run(&memory, "ann", Action::Recent).text;
        assert!(recent.starts_with("Recent memories:\n- ["), "{recent}");
        assert!(recent.contains("- [preference] Likes green tea (durable)"));
        assert!(
            !recent.contains("coffee"),
            "another user's memory: {recent}"
        );

        let sub = run(&memory, "ann", Action::Subconscious).text;
        assert!(
            sub.contains("- [habit] Used to play chess (subconscious)"),
            "{sub}"
        );
        assert!(!sub.contains("green tea"));

        let found = run(&memory, "ann", Action::Search("chess".into())).text;
        assert_eq!(
            found,
            "Memories matching \"chess\":\n- [habit] Used to play chess (subconscious)"
        );
        assert!(
            run(&memory, "ann", Action::Search("coffee".into()))
                .text
                .starts_with("No memory matches")
        );
        assert!(
            run(&memory, "ann", Action::Search("  ".into()))
                .text
                .starts_with("Give 1 to")
        );

        assert!(
            run(&memory, "ann", Action::Pause)
                .text
                .starts_with("Learning paused")
        );
        assert!(memory.brain().unwrap().learning_paused("ann").unwrap());
        assert!(
            run(&memory, "ann", Action::Overview)
                .text
                .contains("learning paused")
        );
        assert!(!memory.brain().unwrap().learning_paused("bob").unwrap());
        assert_eq!(
            run(&memory, "ann", Action::Resume).text,
            "Learning resumed."
        );
        assert!(!memory.brain().unwrap().learning_paused("ann").unwrap());

        let ask = run(&memory, "ann", Action::Clear);
        assert!(ask.confirm);
        assert_eq!(
            ask.text,
            "Delete all 3 memories for good? This cannot be undone."
        );
        assert_eq!(
            memory.counts("ann").unwrap().total,
            3,
            "asking deletes nothing"
        );
        let done = run(&memory, "ann", Action::ClearConfirmed);
        assert_eq!(done.text, "Cleared: 3 memories deleted.");
        assert_eq!(memory.counts("ann").unwrap().total, 0);
        assert_eq!(memory.counts("bob").unwrap().total, 1);
        let nothing = run(&memory, "ann", Action::Clear);
        assert!(!nothing.confirm);
        assert_eq!(nothing.text, "There are no memories to clear.");
    }

    #[test]
    fn forget_offers_the_matches_asks_then_forgets_the_one_picked() {
        let (_dir, memory) = memory(true);
        add(
            &memory,
            "ann",
            "Likes green tea",
            MemoryType::Preference,
            Scope::Durable,
        );
        add(
            &memory,
            "ann",
            "Plays chess on Sundays",
            MemoryType::Habit,
            Scope::Durable,
        );
        add(
            &memory,
            "bob",
            "Likes green tea",
            MemoryType::Preference,
            Scope::Durable,
        );

        let offered = run(&memory, "ann", Action::Forget("green tea".into()));
        assert_eq!(offered.text, "Which memory should I forget?");
        assert_eq!(offered.picks.len(), 1, "{offered:?}");
        assert!(offered.picks[0].label.contains("green tea"), "{offered:?}");
        let tea = offered.picks[0].id.clone();
        let recent = run(&memory, "ann", Action::Forget(String::new()));
        assert_eq!(
            recent.picks.len(),
            2,
            "no words: the most recent: {recent:?}"
        );
        assert!(
            run(&memory, "ann", Action::Forget("opera".into()))
                .text
                .starts_with("No memory matches")
        );

        let ask = run(
            &memory,
            "ann",
            Action::ForgetOne {
                id: tea.clone(),
                keep_messages: false,
                confirmed: false,
            },
        );
        assert!(ask.confirm, "{ask:?}");
        assert!(ask.text.contains("redacted too"), "{ask:?}");
        assert!(memory.get("ann", &tea).is_ok(), "asking forgets nothing");

        let bobs = memory
            .list(
                "bob",
                &ListFilter {
                    conscious: None,
                    memory_type: None,
                    limit: 5,
                    cursor: None,
                },
            )
            .unwrap()
            .items;
        let refused = run(
            &memory,
            "ann",
            Action::ForgetOne {
                id: bobs[0].id.clone(),
                keep_messages: false,
                confirmed: true,
            },
        );
        assert!(
            !refused.text.starts_with("Forgotten"),
            "another user's memory: {refused:?}"
        );
        assert_eq!(memory.counts("bob").unwrap().total, 1);

        let done = run(
            &memory,
            "ann",
            Action::ForgetOne {
                id: tea.clone(),
                keep_messages: false,
                confirmed: true,
            },
        );
        assert_eq!(done.text, "Forgotten: \"Likes green tea\".");
        assert!(memory.get("ann", &tea).is_err());
        assert_eq!(
            memory.counts("ann").unwrap().total,
            1,
            "the other memory stays"
        );
    }

    #[test]
    fn the_fact_store_says_what_it_cannot_do() {
        let (_dir, memory) = memory(false);
        add(
            &memory,
            "ann",
            "Likes green tea",
            MemoryType::Preference,
            Scope::Durable,
        );
        let overview = run(&memory, "ann", Action::Overview).text;
        assert!(
            overview.starts_with("Second Brain: off (disabled by memory.secondBrain.enabled"),
            "{overview}"
        );
        assert!(overview.ends_with("1 memory."), "{overview}");
        assert!(
            run(&memory, "ann", Action::Recent)
                .text
                .contains("Likes green tea")
        );
        for action in [
            Action::Subconscious,
            Action::Pause,
            Action::Resume,
            Action::Clear,
        ] {
            let text = run(&memory, "ann", action.clone()).text;
            assert!(
                text.contains("needs the Second Brain"),
                "{action:?}: {text}"
            );
        }
        assert_eq!(memory.counts("ann").unwrap().total, 1);
    }
}

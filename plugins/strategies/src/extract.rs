//! Rule-based extraction: reads a finished conversation and proposes 0 to 3 facts
//! about the user, most important first.
//!
//! Only the user's own messages are read, sentence by sentence and clause by clause.
//! Questions, small talk and anything addressed to the assistant yield nothing. A
//! clause becomes a fact when its subject is the user and one of the rules in
//! `extract/patterns.rs` reads it; each person named with a relation ("my sister
//! Anna") becomes a relationship fact. The same fact said twice is kept once; a fact later
//! contradicted in the same conversation is replaced by the later statement. An
//! activity told as two or more dated episodes is inferred to be a habit.
//!
//! # Summary convention
//!
//! A summary is one sentence in the third person with the subject "User" and no final
//! full stop. It keeps the user's own wording and tense, with the verb conjugated and
//! first-person pronouns turned into "they/them/their":
//!
//! | Said | Summary |
//! |---|---|
//! | I like coffee | User likes coffee |
//! | I don't like my job | User does not like their job |
//! | Every morning I go for a run | User goes for a run every morning |
//! | My name is Sam | User's name is Sam |
//! | my sister Anna | User's sister is Anna |
//! | Yesterday I went hiking | User went hiking yesterday |
//!
//! Relationship summaries are always `User's <relation> is <Name>`. An inferred habit
//! is `User regularly <verb> <object>`.

mod context;
mod grammar;
mod patterns;
mod people;
mod sentence;
mod time;

use std::collections::BTreeMap;

use crate::model::{Candidate, Conversation, Evidence, MemoryType, PersonRef, Role};
use crate::text;
use context::Context;
use patterns::{Activity, Certainty};
use sentence::Token;

/// The most candidates one conversation yields.
pub const MAX_CANDIDATES: usize = 3;

/// Longer summaries are dropped rather than cut: a fact that needs more than this is
/// not one fact, and a cut one may say something the user did not.
pub const MAX_SUMMARY_CHARS: usize = 200;

/// Confidence of a fact stated plainly in the first person.
pub const DIRECT_CONFIDENCE: f32 = 0.9;
/// A habit implied by the bare present simple ("I run").
pub const IMPLIED_CONFIDENCE: f32 = 0.75;
/// A fact stated with a hedge ("I think I", "maybe", "probably").
pub const HEDGED_CONFIDENCE: f32 = 0.6;
/// A fact the extractor deduced (a habit from repeated episodes).
pub const INFERRED_CONFIDENCE: f32 = 0.6;

/// Proposes 0 to [`MAX_CANDIDATES`] facts from the user's messages in
/// `conversation`, highest importance first (ties in order of mention). `now` dates
/// episodes whose message carries no timestamp. Deterministic.
pub fn extract(conversation: &Conversation, now: i64) -> Vec<Candidate> {
    let mut facts = Facts::default();
    let mut context = Context::default();
    for message in &conversation.messages {
        if message.role != Role::User {
            continue;
        }
        context.next_message();
        let said_at = if message.timestamp > 0 {
            message.timestamp
        } else {
            now
        };
        for sentence in sentence::split_sentences(&message.content) {
            if sentence.is_question {
                continue;
            }
            let clauses = sentence::split_clauses(sentence::tokenize(&sentence.text));
            for (index, clause) in clauses.iter().enumerate() {
                let (clause, hedged) = strip_preamble(clause);
                if clause.is_empty() || opens_question(clause) {
                    continue;
                }
                let completed = context.complete(clause, index == 0);
                let clause = completed.as_deref().unwrap_or(clause);
                let confidence = |certainty| match (hedged, certainty) {
                    (true, _) => HEDGED_CONFIDENCE,
                    (false, Certainty::Implied) => IMPLIED_CONFIDENCE,
                    (false, Certainty::Stated) => DIRECT_CONFIDENCE,
                };
                let (read, reading) = read_with_pause(clause);
                context.remember(read, reading.as_ref().map(|r| r.summary.as_str()));
                let reading = reading.filter(|r| !context::leans_on_context(&r.summary, read));
                let persons = people::find_persons(clause);
                // A person whose own fact this clause states is linked to it; a
                // separate "User's sister is Anna" would only take one of the three
                // places of the conversation's facts.
                let holder = reading
                    .as_ref()
                    .and_then(|r| crate::about::of_summary(&r.summary).holder_key());
                for person in persons.iter().filter(|p| p.relation.is_some()) {
                    if holder.as_deref() == Some(person.name.to_lowercase().as_str()) {
                        continue;
                    }
                    facts.add(
                        relationship(person, confidence(Certainty::Stated), &message.turn_id),
                        None,
                    );
                }
                if let Some(reading) = reading {
                    let detail = reading
                        .dated
                        .then(|| format!("Mentioned on {}.", iso_date(said_at)));
                    let candidate = candidate(
                        reading.memory_type,
                        reading.summary,
                        detail,
                        confidence(reading.certainty),
                        Evidence::Direct,
                        persons,
                        vec![message.turn_id.clone()],
                    );
                    facts.add(candidate, reading.activity);
                }
            }
        }
    }
    facts.infer_habits();
    facts.into_ranked()
}

/// Reads a clause, or its part after a pause that starts a first-person statement
/// ("For the first-aid form: I'm allergic to penicillin").
/// Returns the part read and what it says. A subordinate phrase before the subject
/// ("Since the knee surgery I take the bus") ends the summary: it often says when
/// the fact began.
fn read_with_pause(clause: &[Token]) -> (&[Token], Option<patterns::Reading>) {
    if let Some(reading) = patterns::read_clause(clause) {
        return (clause, Some(reading));
    }
    let after_pause = (1..clause.len()).find(|&i| {
        clause[i - 1].comma_after && matches!(clause[i].lower.as_str(), "i" | "my" | "our")
    });
    if let Some(at) = after_pause {
        return (&clause[at..], patterns::read_clause(&clause[at..]));
    }
    let subordinate = SUBORDINATORS.contains(&clause[0].lower.as_str());
    let subject = (1..clause.len().min(9)).find(|&i| clause[i].lower == "i");
    match subject {
        Some(at) if subordinate => {
            let reading = patterns::read_clause(&clause[at..]).map(|mut reading| {
                let phrase = grammar::render(&clause[..at]).to_lowercase();
                reading.summary = format!("{} {phrase}", reading.summary);
                reading
            });
            (&clause[at..], reading)
        }
        _ => (clause, None),
    }
}

/// Words that open a phrase before the subject: "Since the knee surgery I ...",
/// "After the move I ...".
const SUBORDINATORS: &[&str] = &[
    "since",
    "after",
    "ever",
    "now",
    "until",
    "once",
    "following",
];

/// Builds a candidate with its type's default importance and durability and its
/// negation read from the summary.
fn candidate(
    memory_type: MemoryType,
    summary: String,
    detail: Option<String>,
    confidence: f32,
    evidence: Evidence,
    persons: Vec<PersonRef>,
    source_turns: Vec<String>,
) -> Candidate {
    Candidate {
        memory_type,
        negated: text::is_negated(&summary),
        summary,
        detail,
        confidence,
        importance: memory_type.default_importance(),
        durability: memory_type.default_durability(),
        evidence,
        persons,
        source_turns,
    }
}

/// "User's sister is Anna", for a person named with their relation.
fn relationship(person: &PersonRef, confidence: f32, turn_id: &str) -> Candidate {
    let relation = person.relation.as_deref().unwrap_or_default();
    candidate(
        MemoryType::Relationship,
        format!("User's {relation} is {}", person.name),
        None,
        confidence,
        Evidence::Direct,
        vec![person.clone()],
        vec![turn_id.to_owned()],
    )
}

/// Greetings, fillers and discourse markers that may open a clause and say nothing:
/// "Hi, I'm Sam", "Well, I think I like jazz", "By the way, my sister is Anna".
const PREAMBLES: &[&[&str]] = &[
    &["hi"],
    &["hello"],
    &["hey"],
    &["hiya"],
    &["yo"],
    &["greetings"],
    &["there"],
    &["everyone"],
    &["well"],
    &["so"],
    &["oh"],
    &["ah"],
    &["ok"],
    &["okay"],
    &["alright"],
    &["yeah"],
    &["yes"],
    &["yep"],
    &["no"],
    &["nope"],
    &["sure"],
    &["anyway"],
    &["anyways"],
    &["also"],
    &["and"],
    &["but"],
    &["btw"],
    &["um"],
    &["uh"],
    &["hmm"],
    &["right"],
    &["actually"],
    &["honestly"],
    &["basically"],
    &["lol"],
    &["haha"],
    &["plus"],
    &["fyi"],
    &["thanks"],
    &["thank", "you"],
    &["by", "the", "way"],
    &["to", "be", "honest"],
    &["just", "so", "you", "know"],
    &["for", "the", "record"],
    &["for", "context"],
    &["fun", "fact"],
    &["please", "remember", "that"],
    &["remember", "that"],
    &["please", "note", "that"],
    &["note", "that"],
    &["keep", "in", "mind", "that"],
];

/// Hedges that may open a clause: stripped, and the fact's confidence lowered.
const HEDGE_OPENERS: &[&[&str]] = &[
    &["i", "think", "that"],
    &["i", "think"],
    &["i", "guess"],
    &["i", "believe"],
    &["i", "suppose"],
    &["i", "feel", "like"],
    &["maybe"],
    &["probably"],
    &["perhaps"],
];

/// Hedge words anywhere in a clause.
const HEDGE_WORDS: &[&str] = &[
    "maybe", "probably", "perhaps", "possibly", "might", "kinda", "sorta",
];

/// The clause without its opening greetings, fillers and hedges, and whether it is
/// hedged. A few words before a pause that a first-person statement follows are a
/// preamble too: "Heads up: my number ...", "Quick update, I ...".
fn strip_preamble(clause: &[Token]) -> (&[Token], bool) {
    let mut rest = clause;
    if let Some(at) = (1..clause.len().min(4)).find(|&i| {
        clause[i - 1].comma_after && matches!(clause[i].lower.as_str(), "i" | "my" | "our" | "we")
    }) {
        rest = &clause[at..];
    }
    let mut hedged = false;
    loop {
        let words: Vec<&str> = rest.iter().take(5).map(|t| t.lower.as_str()).collect();
        if let Some(hedge) = HEDGE_OPENERS.iter().find(|h| words.starts_with(h)) {
            hedged = true;
            rest = &rest[hedge.len()..];
        } else if let Some(filler) = PREAMBLES.iter().find(|p| words.starts_with(p)) {
            rest = &rest[filler.len()..];
        } else {
            break;
        }
    }
    let words: Vec<&str> = rest.iter().map(|t| t.lower.as_str()).collect();
    hedged |= words.iter().any(|w| HEDGE_WORDS.contains(w))
        || words
            .windows(2)
            .any(|pair| matches!(pair, ["kind" | "sort", "of"] | ["not", "sure"]));
    (rest, hedged)
}

const INTERROGATIVES: &[&str] = &[
    "what", "who", "whom", "whose", "where", "when", "why", "how", "which",
];
const QUESTION_AUXILIARIES: &[&str] = &[
    "is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "would", "will",
    "should", "shall", "may", "might", "have", "has",
];
const QUESTION_SUBJECTS: &[&str] = &[
    "you", "i", "we", "it", "they", "he", "she", "there", "this", "that",
];

/// A question without its question mark: an interrogative opening ("what do you
/// think") or an inverted auxiliary ("can you help", "do I need").
fn opens_question(clause: &[Token]) -> bool {
    match clause {
        [first, ..] if INTERROGATIVES.contains(&first.lower.as_str()) => true,
        [first, second, ..] => {
            QUESTION_AUXILIARIES.contains(&first.lower.as_str())
                && QUESTION_SUBJECTS.contains(&second.lower.as_str())
        }
        _ => false,
    }
}

/// The facts of one conversation, deduplicated by their core (see [`text::analyse`]).
#[derive(Default)]
struct Facts {
    entries: Vec<Entry>,
    /// Core words joined by spaces -> index in `entries`.
    by_core: BTreeMap<String, usize>,
}

struct Entry {
    candidate: Candidate,
    negative: bool,
    activity: Option<Activity>,
}

impl Facts {
    /// Adds a candidate: merged into the same fact said earlier (turns and persons
    /// joined, the higher confidence kept), or replacing an earlier statement it
    /// contradicts, since the later statement is the user's current view.
    fn add(&mut self, candidate: Candidate, activity: Option<Activity>) {
        if candidate.summary.chars().count() > MAX_SUMMARY_CHARS {
            return;
        }
        let fact = text::analyse(&candidate.summary, candidate.negated);
        if fact.core.is_empty() {
            return;
        }
        let key = fact.core.into_iter().collect::<Vec<_>>().join(" ");
        let entry = Entry {
            candidate,
            negative: fact.negative,
            activity,
        };
        match self.by_core.get(&key) {
            Some(&index) if self.entries[index].negative == entry.negative => {
                merge(&mut self.entries[index].candidate, entry.candidate);
            }
            Some(&index) => self.entries[index] = entry,
            None => {
                self.by_core.insert(key, self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Adds a habit for every activity told as two or more different episodes.
    fn infer_habits(&mut self) {
        let mut episodes_by_activity: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
        for entry in &self.entries {
            if let Some(activity) = &entry.activity {
                episodes_by_activity
                    .entry(activity.key.as_str())
                    .or_default()
                    .push(entry);
            }
        }
        let habits: Vec<Candidate> = episodes_by_activity
            .into_values()
            .filter(|episodes| episodes.len() >= 2)
            .filter_map(|episodes| {
                let (first, others) = episodes.split_first()?;
                let summary = first.activity.as_ref()?.habit_summary.clone();
                let mut habit = candidate(
                    MemoryType::Habit,
                    summary,
                    None,
                    INFERRED_CONFIDENCE,
                    Evidence::Inferred,
                    first.candidate.persons.clone(),
                    first.candidate.source_turns.clone(),
                );
                for other in others {
                    union(&mut habit.source_turns, &other.candidate.source_turns);
                    union(&mut habit.persons, &other.candidate.persons);
                }
                Some(habit)
            })
            .collect();
        for habit in habits {
            self.add(habit, None);
        }
    }

    /// The [`MAX_CANDIDATES`] most important facts, ties kept in order of mention.
    fn into_ranked(self) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = self
            .entries
            .into_iter()
            .map(|entry| entry.candidate)
            .collect();
        candidates.sort_by(|a, b| b.importance.total_cmp(&a.importance));
        candidates.truncate(MAX_CANDIDATES);
        candidates
    }
}

fn merge(kept: &mut Candidate, again: Candidate) {
    kept.confidence = kept.confidence.max(again.confidence);
    union(&mut kept.source_turns, &again.source_turns);
    union(&mut kept.persons, &again.persons);
}

/// Appends the items of `more` not yet in `items`, keeping order.
fn union<T: PartialEq + Clone>(items: &mut Vec<T>, more: &[T]) {
    for item in more {
        if !items.contains(item) {
            items.push(item.clone());
        }
    }
}

/// `ms` since the Unix epoch as a UTC calendar date, "2024-05-01" (Howard Hinnant's
/// civil-from-days algorithm).
fn iso_date(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    /// 2024-05-01T00:00:00Z.
    const MAY_FIRST: i64 = 1_714_521_600_000;

    fn message(turn: usize, role: Role, content: &str) -> Message {
        Message {
            turn_id: format!("t{turn}"),
            role,
            content: content.to_owned(),
            timestamp: MAY_FIRST + turn as i64 * 60_000,
        }
    }

    fn conversation(messages: Vec<Message>) -> Conversation {
        Conversation {
            id: "c1".to_owned(),
            user_id: "default".to_owned(),
            messages,
        }
    }

    /// Extracts from user messages numbered t1, t2, ...
    fn from_user(lines: &[&str]) -> Vec<Candidate> {
        let messages = lines
            .iter()
            .enumerate()
            .map(|(index, line)| message(index + 1, Role::User, line))
            .collect();
        extract(&conversation(messages), MAY_FIRST)
    }

    fn only(line: &str) -> Candidate {
        let mut candidates = from_user(&[line]);
        assert_eq!(candidates.len(), 1, "{line}: {candidates:#?}");
        candidates.remove(0)
    }

    fn person(name: &str, relation: &str) -> PersonRef {
        PersonRef {
            name: name.to_owned(),
            relation: Some(relation.to_owned()),
        }
    }

    #[test]
    fn reads_each_type_with_a_third_person_summary() {
        use MemoryType::*;
        let cases = [
            ("Hi, my name is Sam.", Identity, "User's name is Sam"),
            (
                "I'm a software engineer.",
                Identity,
                "User is a software engineer",
            ),
            (
                "I work as a nurse at St. Mary's.",
                Identity,
                "User works as a nurse at St. Mary's",
            ),
            ("I'm from Spain.", Identity, "User is from Spain"),
            ("I like coffee.", Preference, "User likes coffee"),
            (
                "I prefer tea over coffee.",
                Preference,
                "User prefers tea over coffee",
            ),
            (
                "I can't stand loud music.",
                Preference,
                "User cannot stand loud music",
            ),
            (
                "I'm a big fan of jazz.",
                Preference,
                "User is a big fan of jazz",
            ),
            (
                "My favourite food is sushi.",
                Preference,
                "User's favourite food is sushi",
            ),
            (
                "I want to learn Spanish.",
                Goal,
                "User wants to learn Spanish",
            ),
            (
                "My goal is to run a marathon.",
                Goal,
                "User's goal is to run a marathon",
            ),
            (
                "I'm trying to lose weight.",
                Goal,
                "User is trying to lose weight",
            ),
            ("I plan to visit Japan.", Goal, "User plans to visit Japan"),
            (
                "I hope to retire early.",
                Goal,
                "User hopes to retire early",
            ),
            ("I want to be a doctor.", Goal, "User wants to be a doctor"),
            (
                "I'm building a budgeting app.",
                Project,
                "User is building a budgeting app",
            ),
            (
                "I'm working on my thesis.",
                Project,
                "User is working on their thesis",
            ),
            (
                "My side project is a podcast.",
                Project,
                "User's side project is a podcast",
            ),
            (
                "Every morning I go for a run.",
                Habit,
                "User goes for a run every morning",
            ),
            (
                "I usually drink tea at night.",
                Habit,
                "User usually drinks tea at night",
            ),
            (
                "I go to the gym on Mondays.",
                Habit,
                "User goes to the gym on Mondays",
            ),
            (
                "I decided to learn the cello.",
                Decision,
                "User decided to learn the cello",
            ),
            (
                "I've chosen Postgres.",
                Decision,
                "User has chosen Postgres",
            ),
            (
                "I'm going with the blue car.",
                Decision,
                "User is going with the blue car",
            ),
            (
                "I'm allergic to peanuts.",
                Constraint,
                "User is allergic to peanuts",
            ),
            ("I can't eat gluten.", Constraint, "User cannot eat gluten"),
            ("I never eat pork.", Constraint, "User never eats pork"),
            ("I'm vegetarian.", Constraint, "User is vegetarian"),
            (
                "I must not drink alcohol.",
                Constraint,
                "User must not drink alcohol",
            ),
            (
                "My sister Anna lives in Rome.",
                Identity,
                "User's sister Anna lives in Rome",
            ),
            (
                "Anna is my manager.",
                Relationship,
                "User's manager is Anna",
            ),
            (
                "Yesterday I went hiking.",
                Episode,
                "User went hiking yesterday",
            ),
            (
                "Last week I went to Paris.",
                Episode,
                "User went to Paris last week",
            ),
            (
                "I just got back from Japan.",
                Episode,
                "User just got back from Japan",
            ),
        ];
        for (line, memory_type, summary) in cases {
            let candidate = only(line);
            assert_eq!(candidate.memory_type, memory_type, "{line}");
            assert_eq!(candidate.summary, summary, "{line}");
            assert_eq!(candidate.evidence, Evidence::Direct, "{line}");
            assert_eq!(candidate.source_turns, ["t1"], "{line}");
            assert_eq!(
                (candidate.importance, candidate.durability),
                (
                    memory_type.default_importance(),
                    memory_type.default_durability()
                ),
                "{line}"
            );
        }
    }

    #[test]
    fn relationships_carry_the_person_and_relation() {
        assert_eq!(
            only("My wife, Maria, is a doctor.").persons,
            [person("Maria", "wife")]
        );
        assert_eq!(
            only("Anna is my manager").persons,
            [person("Anna", "manager")]
        );
        let candidates = from_user(&["Yesterday I went hiking with my sister Anna."]);
        let types: Vec<MemoryType> = candidates.iter().map(|c| c.memory_type).collect();
        assert_eq!(types, [MemoryType::Relationship, MemoryType::Episode]);
        assert_eq!(candidates[0].summary, "User's sister is Anna");
        // The episode is linked to the person it was with.
        assert_eq!(candidates[1].persons, [person("Anna", "sister")]);
        assert_eq!(
            candidates[1].summary,
            "User went hiking with their sister Anna yesterday"
        );
        // A joint subject names the person even without a relation.
        let habit = only("Tom and I play tennis every Sunday.");
        assert_eq!(habit.summary, "User and Tom play tennis every Sunday");
        assert_eq!(
            habit.persons,
            [PersonRef {
                name: "Tom".to_owned(),
                relation: None
            }]
        );
    }

    #[test]
    fn marks_negated_statements() {
        for line in [
            "I don't like mushrooms.",
            "I no longer like coffee.",
            "I stopped drinking coffee.",
            "I never eat pork.",
            "I'm not a fan of horror movies.",
            "I don't eat meat.",
        ] {
            assert!(only(line).negated, "{line}");
        }
        for line in [
            "I like coffee.",
            "I hate running.",
            "I'm allergic to peanuts.",
        ] {
            assert!(!only(line).negated, "{line}");
        }
    }

    #[test]
    fn hedged_and_implied_facts_get_lower_confidence() {
        assert_eq!(only("I like jazz.").confidence, DIRECT_CONFIDENCE);
        let hedged = only("I think I like jazz.");
        assert_eq!(hedged.summary, "User likes jazz");
        assert_eq!(hedged.confidence, HEDGED_CONFIDENCE);
        assert_eq!(
            only("Maybe I want to learn piano.").confidence,
            HEDGED_CONFIDENCE
        );
        let implied = only("I drink coffee.");
        assert_eq!(implied.memory_type, MemoryType::Habit);
        assert_eq!(implied.confidence, IMPLIED_CONFIDENCE);
    }

    #[test]
    fn nothing_from_small_talk() {
        let small_talk = [
            "hi",
            "Hello!",
            "Thanks!",
            "thank you so much",
            "ok",
            "Good morning!",
            "I'm fine, thanks.",
            "I see.",
            "I agree with you.",
            "I understand.",
            "I got it.",
            "I like it a lot.",
            "I'm a bit tired.",
            "I'm sorry.",
            "I'm not sure.",
            "I guess so.",
            "I love your answer.",
            "I want to ask you something.",
            "I'd like to thank you.",
            "I meant the other one.",
            "I want to be clear about this.",
        ];
        for line in small_talk {
            assert!(from_user(&[line]).is_empty(), "{line}");
        }
    }

    #[test]
    fn nothing_that_stands_on_a_pronoun_the_conversation_explains() {
        for line in [
            "I put so much into this.",
            "I read it a while back and loved it.",
            "I rely on them for strength.",
            "I decided to include this at the beginning.",
            "I did that for years.",
        ] {
            assert!(
                from_user(&[line]).is_empty(),
                "{line}: {:#?}",
                from_user(&[line])
            );
        }
        // A demonstrative before its noun names the thing, "it" may open a clause of
        // its own, "this week" is a date, and the speaker's own "we" is theirs.
        for (line, summary) in [
            (
                "I got this amazing deal with an outdoor gear company.",
                "User got this amazing deal with an outdoor gear company",
            ),
            (
                "I started surfing five years ago and it's been great.",
                "User started surfing five years ago and it's been great",
            ),
            (
                "I went hiking in the Alps this week.",
                "User went hiking in the Alps this week",
            ),
            (
                "I had a quiet weekend after we went camping with my fam two weekends ago.",
                "User had a quiet weekend after they went camping with their fam two weekends ago",
            ),
        ] {
            assert_eq!(summaries(&[line]), [summary], "{line}");
        }
    }

    #[test]
    fn reads_plans_with_a_date_to_come() {
        for (line, summary) in [
            (
                "Next month I'm going to visit Rome.",
                "User is going to visit Rome next month",
            ),
            (
                "I'm flying to Tokyo next week.",
                "User is flying to Tokyo next week",
            ),
            (
                "I will start my new job tomorrow.",
                "User will start their new job tomorrow",
            ),
            (
                "I'm going to Lisbon in two weeks.",
                "User is going to Lisbon in two weeks",
            ),
        ] {
            let plan = only(line);
            assert_eq!(plan.memory_type, MemoryType::Goal, "{line}");
            assert_eq!(plan.summary, summary, "{line}");
            assert_eq!(
                plan.detail.as_deref(),
                Some("Mentioned on 2024-05-01."),
                "{line}"
            );
        }
        // A future form without a date to come, or about the conversation, is none.
        for line in [
            "I'm going to bed.",
            "I'm going to bed soon.",
            "I'll be there tomorrow.",
            "I'll think about it tomorrow.",
            "I'm going to ask you something tomorrow.",
            "I'll talk to you next week.",
            "I'll check it tomorrow.",
            "See you tomorrow!",
        ] {
            assert!(from_user(&[line]).is_empty(), "{line}");
        }
    }

    #[test]
    fn reads_dated_events() {
        let episode = only("In May I ran my first marathon.");
        assert_eq!(episode.memory_type, MemoryType::Episode);
        assert_eq!(episode.summary, "User ran their first marathon in May");
        let episode = only("I adopted a cat on March 3rd 2023.");
        assert_eq!(episode.summary, "User adopted a cat on March 3rd 2023");
        assert_eq!(episode.detail.as_deref(), Some("Mentioned on 2024-05-01."));
    }

    #[test]
    fn reads_events_of_people_close_to_the_user() {
        // Her move is a fact of hers (where she lives), linked to her with her
        // relation: no separate "User's sister is Anna" takes a place of the three.
        let moved = only("My sister Anna moved to Berlin last month.");
        assert_eq!(
            moved.summary,
            "User's sister Anna moved to Berlin last month"
        );
        assert_eq!(moved.memory_type, MemoryType::Identity);
        assert_eq!(moved.persons, [person("Anna", "sister")]);
        assert_eq!(moved.detail.as_deref(), Some("Mentioned on 2024-05-01."));
        let event = only("My sister Anna ran a marathon last month.");
        assert_eq!(event.memory_type, MemoryType::Episode);
        assert_eq!(event.persons, [person("Anna", "sister")]);
        let wedding = only("My brother is getting married next month.");
        assert_eq!(wedding.memory_type, MemoryType::Episode);
        assert_eq!(
            wedding.summary,
            "User's brother is getting married next month"
        );
        // Their states, what they said, and clauses whose pronouns are ambiguous are
        // left to the transcript.
        for line in [
            "My sister said hi.",
            "My sister was tired.",
            "My boss asked me to stay late yesterday.",
            "My friend thinks I should rest.",
            "My mom is great.",
        ] {
            assert!(
                from_user(&[line])
                    .iter()
                    .all(|c| c.memory_type != MemoryType::Episode),
                "{line}"
            );
        }
    }

    #[test]
    fn conversations_of_small_talk_store_nothing() {
        let conversations: [&[&str]; 4] = [
            &["hi", "ok thanks", "bye"],
            &[
                "Good morning! How are you?",
                "Thanks, that helps!",
                "See you tomorrow!",
            ],
            &[
                "Can you help me with my code?",
                "What does this error mean?",
                "ok thanks",
            ],
            &[
                "Hey there",
                "I'm fine, thanks.",
                "I'll talk to you next week.",
                "Good night!",
            ],
        ];
        for lines in conversations {
            assert!(from_user(lines).is_empty(), "{lines:?}");
        }
    }

    #[test]
    fn nothing_from_questions() {
        for line in [
            "How are you?",
            "Do you like coffee?",
            "I like coffee, do you?",
            "What's the weather like",
            "Can you help me with my code",
            "do I need a visa for Japan",
            "Why do I always hate Mondays",
            "So I'm allergic to peanuts?",
            "I never eat pork?!",
        ] {
            assert!(from_user(&[line]).is_empty(), "{line}");
        }
    }

    #[test]
    fn nothing_from_the_assistant_or_the_system() {
        let messages = vec![
            message(1, Role::Assistant, "I love hiking. My name is Claude."),
            message(2, Role::System, "I am a helpful assistant. I never lie."),
            message(3, Role::User, "Thanks, that helps."),
        ];
        assert!(extract(&conversation(messages), MAY_FIRST).is_empty());
    }

    #[test]
    fn reads_every_sentence_and_clause_of_a_message() {
        let candidates =
            from_user(&["I'm Sam. I love tea! Also, I'm allergic to nuts and I hate tea."]);
        let summaries: Vec<&str> = candidates.iter().map(|c| c.summary.as_str()).collect();
        // "I hate tea" contradicts "I love tea" and, said later, replaces it.
        assert_eq!(
            summaries,
            ["User is Sam", "User is allergic to nuts", "User hates tea"]
        );
    }

    #[test]
    fn keeps_at_most_three_most_important_first() {
        let candidates = from_user(&[
            "Yesterday I went to the zoo.",
            "I like chess.",
            "I'm building a robot.",
            "I'm allergic to cats.",
            "My brother Ben is a pilot.",
        ]);
        let types: Vec<MemoryType> = candidates.iter().map(|c| c.memory_type).collect();
        assert_eq!(
            types,
            [
                MemoryType::Constraint,
                MemoryType::Identity,
                MemoryType::Project
            ]
        );
        assert_eq!(candidates[0].source_turns, ["t4"]);
        assert_eq!(candidates[1].source_turns, ["t5"]);
        assert_eq!(candidates[2].source_turns, ["t3"]);
    }

    #[test]
    fn deduplicates_within_a_conversation() {
        let candidates = from_user(&["I love coffee.", "Nice.", "I really like coffee!"]);
        assert_eq!(candidates.len(), 1, "{candidates:#?}");
        assert_eq!(candidates[0].summary, "User loves coffee");
        assert_eq!(candidates[0].source_turns, ["t1", "t3"]);
    }

    #[test]
    fn a_later_contradiction_replaces_the_earlier_statement() {
        let candidates = from_user(&["I like coffee.", "Actually, I don't like coffee anymore."]);
        assert_eq!(candidates.len(), 1, "{candidates:#?}");
        assert_eq!(candidates[0].summary, "User does not like coffee anymore");
        assert!(candidates[0].negated);
        assert_eq!(candidates[0].source_turns, ["t2"]);
    }

    #[test]
    fn infers_a_habit_from_repeated_episodes() {
        let candidates = from_user(&[
            "I went to the gym yesterday.",
            "On Saturday I went to the gym again.",
        ]);
        let habit = candidates
            .iter()
            .find(|c| c.memory_type == MemoryType::Habit)
            .expect("an inferred habit");
        assert_eq!(habit.summary, "User regularly goes to the gym");
        assert_eq!(habit.evidence, Evidence::Inferred);
        assert_eq!(habit.confidence, INFERRED_CONFIDENCE);
        assert_eq!(habit.source_turns, ["t1", "t2"]);
        // One episode is not a pattern.
        let single = from_user(&["I went to the gym yesterday."]);
        assert!(single.iter().all(|c| c.memory_type == MemoryType::Episode));
    }

    #[test]
    fn episodes_are_dated_by_their_message() {
        let episode = only("Last week I went to Paris.");
        assert_eq!(episode.detail.as_deref(), Some("Mentioned on 2024-05-01."));
        let mut undated = message(1, Role::User, "Yesterday I went hiking.");
        undated.timestamp = 0;
        let candidates = extract(&conversation(vec![undated]), 951_782_400_000);
        assert_eq!(
            candidates[0].detail.as_deref(),
            Some("Mentioned on 2000-02-29.")
        );
    }

    #[test]
    fn overlong_facts_are_dropped() {
        let long = format!("I like {}.", "very long words ".repeat(20));
        assert!(from_user(&[&long]).is_empty());
    }

    #[test]
    fn is_deterministic() {
        let lines = [
            "Hi! I'm Sam, I live in Berlin. My sister Anna and my brother Ben visit often.",
            "Every morning I run; I usually swim on Fridays. I want to learn Go.",
        ];
        assert_eq!(from_user(&lines), from_user(&lines));
        assert_eq!(from_user(&lines).len(), MAX_CANDIDATES);
    }

    #[test]
    fn survives_arbitrary_text() {
        // Fragments that stress splitting, contractions, multi-byte characters and
        // the rule tables, combined by a fixed pseudo-random sequence.
        const FRAGMENTS: &[&str] = &[
            "I",
            "I'm",
            "my",
            "My sister",
            "Anna",
            "Dr.",
            "’",
            "don't",
            "can't",
            "never",
            "like",
            "went",
            "every",
            "morning",
            "ago",
            "a",
            "few",
            ",",
            ";",
            ".",
            "?",
            "!",
            "—",
            "\n",
            "é",
            "日本",
            "🙂",
            "and I",
            "'s",
            "2019",
            "yesterday",
            "am",
            "fan of",
            "",
            "  ",
            "to",
            "is",
            "my name is",
            "averyveryveryveryveryveryverylongwordthatgoesonandon",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for _ in 0..2_000 {
            let length = next(24);
            let line: Vec<&str> = (0..length)
                .map(|_| FRAGMENTS[next(FRAGMENTS.len())])
                .collect();
            let line = line.join(" ");
            for candidate in from_user(&[&line]) {
                assert!(
                    candidate.summary.starts_with("User"),
                    "{line:?}: {candidate:?}"
                );
                // Only words that could be verbs are conjugated.
                for nonsense in ["User mies", "User annas", "User agoes", "ises", "User ses"] {
                    assert!(
                        !candidate.summary.contains(nonsense),
                        "{line:?}: {candidate:?}"
                    );
                }
                assert!(candidate.summary.chars().count() <= MAX_SUMMARY_CHARS);
                assert_eq!(candidate.source_turns, ["t1"]);
            }
            assert_eq!(
                text::opposes(&line, false, "User likes coffee", true),
                text::opposes("User likes coffee", true, &line, false),
                "{line:?}"
            );
        }
    }

    fn summaries(lines: &[&str]) -> Vec<String> {
        from_user(lines).into_iter().map(|c| c.summary).collect()
    }

    #[test]
    fn keeps_values_numbers_names_and_dates() {
        assert_eq!(
            summaries(&["Text me at 415-555-2671 if anything changes."]),
            ["User's phone number is 415-555-2671"]
        );
        assert_eq!(
            summaries(&["I finally got a new email address. It's sam@example.org now."])[0],
            "User's email address is sam@example.org now"
        );
        assert_eq!(
            summaries(&["Go is my favourite language now."]),
            ["User's favorite language is Go now"]
        );
        assert_eq!(
            summaries(&["June 4 is our anniversary, can you believe it"]),
            ["User's anniversary is June 4"]
        );
        assert_eq!(
            summaries(&["My bike is a green Brompton, great for the metro."]),
            ["User's bike is a green Brompton"]
        );
    }

    #[test]
    fn facts_of_other_people_are_theirs() {
        let candidates =
            from_user(&["Our daughter Mia plays violin, and our son Leo does karate."]);
        let read: Vec<(&str, Vec<PersonRef>)> = candidates
            .iter()
            .map(|c| (c.summary.as_str(), c.persons.clone()))
            .collect();
        assert_eq!(
            read,
            [
                (
                    "User's daughter Mia plays violin",
                    vec![person("Mia", "daughter")]
                ),
                ("User's son Leo does karate", vec![person("Leo", "son")]),
            ]
        );
        assert_eq!(
            summaries(&["I'm a teacher, but my wife Ana works at Siemens."]),
            ["User is a teacher", "User's wife Ana works at Siemens"]
        );
        let raj = only("Raj on my team only codes in Go.");
        assert_eq!(raj.summary, "Raj on their team only codes in Go");
        assert_eq!(raj.persons, [person("Raj", "teammate")]);
        // A capitalised subject without a recognised attribute may be a place or a
        // product: nothing is read from it.
        assert!(from_user(&["Paris was lovely in the rain."]).is_empty());
    }

    #[test]
    fn clauses_that_leave_something_out_borrow_it() {
        // A reply in kind, then a relative's value in kind.
        assert_eq!(
            summaries(&[
                "I'm allergic to shellfish.",
                "Mine's peanuts, write that down."
            ]),
            [
                "User is allergic to shellfish",
                "User is allergic to peanuts"
            ]
        );
        assert_eq!(
            summaries(&["My birthday is in June, and my dad's is in March."]),
            [
                "User's birthday is in June",
                "User's dad's birthday is in March"
            ]
        );
        // An elided subject, and "there".
        assert_eq!(
            summaries(&["Moved to Denver last spring."]),
            ["User moved to Denver last spring"]
        );
        assert_eq!(
            summaries(&["The trams in Lisbon are the best. That's where I was born."]),
            ["User was born in Lisbon"]
        );
        assert_eq!(
            summaries(&["Fridays are for board games with my cousins."]),
            ["User spends Fridays on board games with their cousins"]
        );
    }

    #[test]
    fn pronouns_and_it_point_back_within_a_message() {
        let read = summaries(&["Lunch with my neighbor Ruth. She's a midwife, I'm a baker."]);
        assert!(
            read.contains(&"User's neighbor Ruth is a midwife".to_string()),
            "{read:?}"
        );
        assert!(read.contains(&"User is a baker".to_string()), "{read:?}");
        assert_eq!(
            summaries(&["My work email changed, it's ruth@clinic.example now."])[0],
            "User's work email is ruth@clinic.example now"
        );
    }

    #[test]
    fn favourites_schools_and_pay_are_read_however_they_are_put() {
        assert_eq!(
            summaries(&["After the festival, Dune has become my favourite film."]),
            ["User's favorite film is Dune"]
        );
        let school = only("My daughter Ines goes to Westfield Academy.");
        assert_eq!(
            school.summary,
            "User's daughter Ines goes to Westfield Academy"
        );
        assert_eq!(
            crate::about::of_summary(&school.summary)
                .attribute
                .as_deref(),
            Some("school")
        );
        let pay = only("I make about $95k a year at the mill.");
        assert_eq!(
            crate::about::of_summary(&pay.summary).attribute.as_deref(),
            Some("income")
        );
    }

    #[test]
    fn iso_date_converts_epoch_milliseconds() {
        assert_eq!(iso_date(0), "1970-01-01");
        assert_eq!(iso_date(MAY_FIRST), "2024-05-01");
        assert_eq!(iso_date(-86_400_000), "1969-12-31");
        assert_eq!(iso_date(951_782_400_000), "2000-02-29");
    }
}

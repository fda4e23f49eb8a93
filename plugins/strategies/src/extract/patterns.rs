//! The English rules that read one clause as a typed fact about the user, and the
//! third-person summary written for it.
//!
//! A clause is read when its subject is the user: "I ...", "My sister and I ...",
//! `My <attribute> is ...`, "Call me ...". Its predicate is matched against rule
//! tables in a fixed order (constraint, decision, goal, project, explicit habit,
//! preference, identity, plan, episode, implicit habit); the first rule that matches
//! gives the type. A plan is a future form with a date to come ("I'm flying to Tokyo
//! next week"): a goal. A clause whose subject is a person close to the user ("My
//! sister Anna moved to Berlin last month") is read for events only: an episode of
//! theirs, dated like the user's. The summary is the clause itself rewritten in the third person, so it
//! keeps the user's wording: "I usually go to the gym on Mondays" -> "User usually
//! goes to the gym on Mondays".

use super::grammar::{
    SOFT_ADVERBS, adverb_len, is_modal, is_past, past_to_base, render, third_person_verb,
    with_subject,
};
use super::people;
use super::sentence::Token;
use super::time::{self, TimeKind, TimePhrase};
use crate::about::catalog;
use crate::model::MemoryType;
use crate::text;

/// How firmly a clause states its fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Certainty {
    /// An explicit statement of the fact ("I usually run", "I like tea").
    Stated,
    /// A fact implied by the present simple without any frequency word ("I run"): most
    /// likely a habit, but less certain.
    Implied,
}

/// An activity told as an episode ("went to the gym"), kept so that the same activity
/// told as several episodes can be inferred to be a habit.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Activity {
    /// The verb's base form and the object's content words: equal keys, same activity.
    pub key: String,
    /// "User regularly goes to the gym": the habit the activity would be.
    pub habit_summary: String,
}

/// One clause read as a fact.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reading {
    pub memory_type: MemoryType,
    pub summary: String,
    pub certainty: Certainty,
    /// Set for episodes with a single, singular subject.
    pub activity: Option<Activity>,
    /// An event or a plan, whose "yesterday" or "next week" needs the date it was said.
    pub dated: bool,
}

/// Diets and conditions stated as "I'm <word>" or "I'm a <word>".
const DIETS: &[&str] = &[
    "vegetarian",
    "vegan",
    "pescatarian",
    "pescetarian",
    "celiac",
    "coeliac",
    "diabetic",
    "teetotal",
    "teetotaler",
    "sober",
    "kosher",
    "halal",
    "keto",
    "paleo",
];

/// Words after "I'm a" that do not name a role ("I'm a bit tired", "I'm a fan of").
const NOT_ROLES: &[&str] = &[
    "bit", "little", "lot", "tad", "fan", "few", "couple", "huge", "big", "great", "sucker",
    "total", "real", "kind", "sort",
];

/// States after "I'm" that describe the user without an object.
const STATES: &[&str] = &[
    "retired",
    "single",
    "married",
    "divorced",
    "widowed",
    "unemployed",
    "self-employed",
    "freelance",
    "freelancing",
    "pregnant",
    "left-handed",
    "right-handed",
    "introverted",
    "extroverted",
    "introvert",
    "extrovert",
    "bilingual",
    "trilingual",
    "colorblind",
];

/// Verbs that make "I want to <verb>" conversation, not a goal ("I want to ask").
const CONVERSATIONAL_VERBS: &[&str] = &[
    "ask",
    "know",
    "say",
    "tell",
    "thank",
    "mention",
    "check",
    "confirm",
    "clarify",
    "add",
    "share",
    "talk",
    "chat",
    "discuss",
    "point",
    "note",
    "remind",
    "apologize",
    "apologise",
];

/// Goal phrases that are conversation ("I want to be clear", "I'd like to make sure").
const CONVERSATIONAL_GOALS: &[&[&str]] = &[
    &["be", "clear"],
    &["be", "honest"],
    &["be", "sure"],
    &["make", "sure"],
];

/// Whether the words after "I want to" name something the user works toward.
fn is_goal(rest: &[&str]) -> bool {
    rest.first()
        .is_some_and(|verb| !CONVERSATIONAL_VERBS.contains(verb))
        && !CONVERSATIONAL_GOALS
            .iter()
            .any(|phrase| rest.starts_with(phrase))
}

/// Verbs whose present simple is conversation, a state or a feeling rather than a
/// habit ("I see", "I need help", "I miss my dog").
const NOT_HABIT_VERBS: &[&str] = &[
    "have",
    "do",
    "get",
    "want",
    "need",
    "see",
    "know",
    "agree",
    "understand",
    "mean",
    "feel",
    "wonder",
    "think",
    "guess",
    "suppose",
    "believe",
    "remember",
    "forget",
    "hope",
    "wish",
    "appreciate",
    "apologize",
    "apologise",
    "bet",
    "doubt",
    "assume",
    "expect",
    "imagine",
    "realize",
    "realise",
    "care",
    "mind",
    "miss",
    "promise",
    "try",
    "hear",
    "say",
    "tell",
    "ask",
    "thank",
    "recommend",
    "suggest",
    "notice",
    "admit",
    "am",
    "are",
    "is",
    "was",
    "were",
    "like",
    "love",
    "hate",
    "prefer",
    "enjoy",
    "mean",
    "swear",
    "insist",
    "repeat",
    "confirm",
    "see",
    "owe",
    "deserve",
    "totally",
    "please",
];

/// Past verbs that report conversation, not an event ("I said", "I meant").
const CONVERSATIONAL_PAST: &[&str] = &[
    "said",
    "asked",
    "told",
    "meant",
    "forgot",
    "thought",
    "wondered",
    "guessed",
    "mentioned",
    "noticed",
    "realized",
    "realised",
    "heard",
    "assumed",
    "understood",
    "misunderstood",
    "explained",
    "wanted",
    "needed",
    "tried",
    "liked",
    "loved",
    "hated",
    "enjoyed",
];

/// Verbs whose past tense is an event worth remembering even without a date ("I moved
/// to Berlin", "I met my wife at a concert").
const EVENT_VERBS: &[&str] = &[
    "go",
    "visit",
    "travel",
    "move",
    "meet",
    "attend",
    "graduate",
    "finish",
    "complete",
    "start",
    "launch",
    "win",
    "lose",
    "buy",
    "adopt",
    "run",
    "get",
    "celebrate",
    "return",
    "fly",
    "drive",
    "hike",
    "climb",
    "marry",
    "join",
    "leave",
    "sell",
    "publish",
    "found",
    "retire",
    "tour",
];

/// Adverbs that mark a past-tense clause as an event ("I just got back from Japan").
const EPISODE_ADVERBS: &[&str] = &["just", "recently", "finally", "lately"];

/// Clause objects that point at the conversation rather than at a fact.
const DEICTIC_WORDS: &[&str] = &["it", "that", "this", "those", "these", "them", "so"];
const ADDRESSEE_WORDS: &[&str] = &["you", "your", "yours", "yourself"];

/// Objects made only of these words say nothing ("I like it a lot").
const EMPTY_OBJECT_WORDS: &[&str] = &[
    "it", "that", "this", "those", "these", "them", "him", "her", "one", "so", "too", "either",
    "both", "all", "lol", "haha", "a", "the", "lot", "much", "very", "well", "there", "here",
    "back", "fine", "ok", "okay",
];

/// Auxiliaries after which an adverb may stand before the main verb ("I'm currently
/// working", "I don't really like", "I have finally decided").
const AUXILIARIES: &[&str] = &["am", "was", "have", "been", "do", "not", "will", "would"];

/// The predicate's tokens with the soft adverbs that stand before its verb taken out,
/// and whether one of them marked an episode.
fn matchable(predicate: &[Token]) -> (Vec<&Token>, bool) {
    let mut kept: Vec<&Token> = Vec::with_capacity(predicate.len());
    let mut episode_adverb = false;
    let mut index = 0;
    while index < predicate.len() {
        let before_verb = kept
            .last()
            .is_none_or(|last| AUXILIARIES.contains(&last.lower.as_str()));
        if before_verb {
            let words: Vec<&str> = predicate[index..(index + 2).min(predicate.len())]
                .iter()
                .map(|t| t.lower.as_str())
                .collect();
            let adverb_words = match adverb_len(&words) {
                2 => 2,
                _ if SOFT_ADVERBS.contains(&words[0]) => 1,
                _ => 0,
            };
            if adverb_words > 0 {
                episode_adverb |= EPISODE_ADVERBS.contains(&words[0]);
                index += adverb_words;
                continue;
            }
        }
        kept.push(&predicate[index]);
        index += 1;
    }
    (kept, episode_adverb)
}

/// Words that follow "I" without being its verb: determiners, pronouns, prepositions,
/// conjunctions, time words. Rules that take any verb ("I never <verb>", "I <verb>
/// every day") check against them.
const NOT_VERBS: &[&str] = &[
    "i", "me", "my", "mine", "you", "your", "he", "him", "his", "she", "her", "it", "its", "we",
    "us", "our", "they", "them", "their", "the", "a", "an", "this", "that", "these", "those", "to",
    "of", "in", "on", "at", "for", "with", "by", "from", "and", "or", "but", "so", "if", "is",
    "are", "not", "no", "every", "each", "all", "some", "any", "ago", "few", "fan", "too", "very",
    "yes", "ok", "okay",
];

/// Whether a word after "I" can be the verb of a clause these rules read: a
/// lower-case English word that is not a function word ("I Anna", "I my" are not
/// clauses).
fn could_be_verb(word: &str, capitalised: bool) -> bool {
    !capitalised
        && word.len() >= 2
        && word.chars().all(|c| c.is_ascii_lowercase())
        && !NOT_VERBS.contains(&word)
}

/// What a rule requires after its fixed words.
enum Object<'a> {
    /// Nothing ("I'm vegetarian").
    None,
    /// These words, which must say something ("I like <coffee>").
    Required(&'a [&'a str]),
}

fn object_says_something(object: &[&str]) -> bool {
    let deictic_phrase =
        object.len() <= 3 && object.first().is_some_and(|w| DEICTIC_WORDS.contains(w));
    !object.is_empty() && !deictic_phrase && !object.iter().all(|w| EMPTY_OBJECT_WORDS.contains(w))
}

/// The type of a first-person predicate (words after "I", soft adverbs removed), by
/// the fixed-phrase rules. Episodes and habits without fixed phrases are read by
/// [`read_event_or_habit`].
fn typed_rule<'a>(
    m: &'a [&'a str],
    capitalised: impl Fn(usize) -> bool,
) -> Option<(MemoryType, Object<'a>)> {
    use MemoryType::{Constraint, Decision, Goal, Habit, Identity, Preference, Project};
    use Object::Required;
    // "I'm a big fan of jazz", "I'm not a fan of jazz": no earlier rule reads these.
    if let Some(object) = m.strip_prefix(&["am"][..]).and_then(fan_of) {
        return Some((Preference, Required(object)));
    }
    let rule = match m {
        // Constraints: dietary and medical rules, things the user cannot or must not do.
        ["am", "allergic" | "intolerant", "to", rest @ ..] => (Constraint, Required(rest)),
        ["am", "lactose" | "gluten", "intolerant", ..] => (Constraint, Object::None),
        ["am", "a" | "an", diet, ..] | ["am", diet, ..] if DIETS.contains(diet) => {
            (Constraint, Object::None)
        }
        ["have", "a" | "an", _, "allergy" | "intolerance", ..] => (Constraint, Object::None),
        ["do", "not", "smoke" | "drink"] => (Constraint, Object::None),
        [
            "cannot",
            "eat" | "drink" | "have" | "tolerate" | "consume" | "digest" | "handle",
            rest @ ..,
        ]
        | [
            "can",
            "not",
            "eat" | "drink" | "have" | "tolerate" | "consume" | "digest",
            rest @ ..,
        ]
        | [
            "do",
            "not",
            "eat" | "drink" | "smoke" | "consume",
            rest @ ..,
        ]
        | ["must", "not" | "never" | "avoid", rest @ ..]
        | ["have" | "need", "to", "avoid", rest @ ..]
        | ["avoid", rest @ ..]
        | [
            "am",
            "not",
            "allowed" | "supposed" | "permitted",
            "to",
            rest @ ..,
        ] => (Constraint, Required(rest)),
        ["never", verb, ..] if could_be_verb(verb, capitalised(1)) && !is_past(verb) => {
            (Constraint, Required(&m[1..]))
        }
        ["follow", rest @ ..] if rest.contains(&"diet") => (Constraint, Required(rest)),

        // Decisions.
        [
            "decided" | "chose" | "picked" | "opted" | "settled" | "switched" | "committed",
            rest @ ..,
        ]
        | [
            "have",
            "decided" | "chosen" | "picked" | "opted" | "settled" | "switched" | "committed",
            rest @ ..,
        ]
        | ["am", "going" | "sticking", "with", rest @ ..]
        | ["will", "go" | "stick", "with", rest @ ..]
        | ["went", "with", rest @ ..]
        | ["am", "switching", "to", rest @ ..]
        | ["made", "the" | "a", "decision", rest @ ..]
        | ["have", "made", "the" | "a", "decision", rest @ ..] => (Decision, Required(rest)),

        // Goals.
        [
            "want" | "hope" | "plan" | "aim" | "intend" | "wish",
            "to",
            rest @ ..,
        ]
        | ["would", "like" | "love", "to", rest @ ..]
        | [
            "am",
            "hoping" | "planning" | "trying" | "aiming" | "working",
            "to",
            rest @ ..,
        ] if is_goal(rest) => (Goal, Required(rest)),
        ["am", "planning", "on", rest @ ..]
        | ["am", "saving", "for" | "up", rest @ ..]
        | [
            "am",
            "training" | "studying" | "preparing",
            "for",
            rest @ ..,
        ]
        | ["dream", "of" | "about", rest @ ..]
        | ["am", "learning", rest @ ..] => (Goal, Required(rest)),

        // Projects.
        [
            "am",
            "building" | "developing" | "writing" | "creating" | "designing" | "coding"
            | "launching" | "renovating" | "organizing" | "organising" | "producing",
            rest @ ..,
        ]
        | ["am", "working", "on", rest @ ..]
        | ["have", "been", "working", "on", rest @ ..]
        | [
            "have",
            "been",
            "building" | "developing" | "writing" | "creating",
            rest @ ..,
        ]
        | ["maintain", rest @ ..] => (Project, Required(rest)),
        ["am", "making", rest @ ..] if matches!(rest.first(), Some(&("a" | "an"))) => {
            (Project, Required(rest))
        }

        // Habits stated with a frequency adverb, or given up.
        [
            "usually" | "always" | "often" | "normally" | "typically" | "regularly" | "generally"
            | "sometimes" | "rarely" | "occasionally" | "frequently" | "seldom",
            rest @ ..,
        ]
        | ["tend", "to", rest @ ..]
        | ["gave", "up", rest @ ..]
        | ["have", "given", "up", rest @ ..] => (Habit, Required(rest)),
        ["stopped" | "quit", verb, ..] | ["have", "stopped" | "quit", verb, ..]
            if verb.ends_with("ing") =>
        {
            (Habit, Object::None)
        }

        // Preferences.
        [
            "like" | "love" | "enjoy" | "adore" | "prefer" | "hate" | "dislike" | "detest"
            | "loathe",
            rest @ ..,
        ]
        | ["cannot", "stand", rest @ ..]
        | ["can", "not", "stand", rest @ ..]
        | ["do", "not", "like" | "love" | "enjoy" | "mind", rest @ ..]
        | ["do", "not", "care", "for" | "about", rest @ ..]
        | [
            "am",
            "into" | "obsessed" | "fond" | "passionate" | "crazy",
            rest @ ..,
        ]
        | ["am", "interested", "in", rest @ ..]
        | ["am", "not", "into" | "fond" | "keen", rest @ ..]
        | ["would", "rather", rest @ ..] => (Preference, Required(rest)),

        // Identity.
        ["am", "a" | "an", role, ..] if !NOT_ROLES.contains(role) => (Identity, Required(&m[2..])),
        ["work", "as" | "at" | "for" | "in", rest @ ..]
        | ["am", "working", "as" | "at" | "for", rest @ ..]
        | ["am", "from", rest @ ..]
        | ["come", "from", rest @ ..]
        | ["grew", "up", "in", rest @ ..]
        | ["was", "born", "in" | "on", rest @ ..]
        | ["live", "in", rest @ ..]
        | ["am", "living" | "based", "in", rest @ ..]
        | ["speak", rest @ ..]
        | ["study", rest @ ..]
        | ["am", "studying", rest @ ..]
        | [
            "have",
            "a" | "an",
            "degree" | "phd" | "masters" | "master",
            rest @ ..,
        ]
        | ["graduated", "from", rest @ ..]
        | ["go", "by", rest @ ..]
        | ["am", "called", rest @ ..]
        | ["identify", "as", rest @ ..] => (Identity, Required(rest)),
        ["am", age, ..] if age.chars().all(|c| c.is_ascii_digit()) => (Identity, Object::None),
        ["am", state] if STATES.contains(state) => (Identity, Object::None),
        ["am", _, ..] if capitalised(1) => (Identity, Object::None),
        _ => return None,
    };
    Some(rule)
}

/// "a big fan of jazz", "not a fan of jazz" -> "jazz".
fn fan_of<'a>(words: &'a [&'a str]) -> Option<&'a [&'a str]> {
    let words = words.strip_prefix(&["not"][..]).unwrap_or(words);
    let words = words.strip_prefix(&["a"][..])?;
    let words = words
        .strip_prefix(&["big"][..])
        .or_else(|| words.strip_prefix(&["huge"][..]))
        .unwrap_or(words);
    words.strip_prefix(&["fan", "of"][..])
}

/// Reads a predicate no fixed phrase matched: an episode (a past verb with a date, an
/// "I just ..." or an event verb) or a habit (a present verb with a frequency word, or
/// the bare present simple as an implied habit).
fn read_event_or_habit(
    m: &[&str],
    verb_capitalised: bool,
    episode_adverb: bool,
    phrases: &[TimePhrase],
) -> Option<(MemoryType, Certainty)> {
    let (verb, object) = m.split_first()?;
    // A predicate still opening with an adverb ("never", "usually") was for the
    // typed rules; if none matched, it is not a fact.
    if adverb_len(m) > 0 || !could_be_verb(verb, verb_capitalised) || is_modal(verb) {
        return None;
    }
    let has = |kind| phrases.iter().any(|p| p.kind == kind);
    if is_past(verb) {
        let conversational = CONVERSATIONAL_PAST.contains(verb)
            || (matches!(*verb, "was" | "were")
                && object.first().is_some_and(|w| w.ends_with("ing")));
        let is_event = has(TimeKind::Specific)
            || episode_adverb
            || EVENT_VERBS.contains(&past_to_base(verb).as_str());
        return (is_event && !conversational && object_says_something(object))
            .then_some((MemoryType::Episode, Certainty::Stated));
    }
    if verb.ends_with("ing") || matches!(*verb, "am" | "are" | "is") {
        return None;
    }
    if has(TimeKind::Recurring) {
        return Some((MemoryType::Habit, Certainty::Stated));
    }
    let implied = !has(TimeKind::Specific)
        && !NOT_HABIT_VERBS.contains(verb)
        && object_says_something(object);
    implied.then_some((MemoryType::Habit, Certainty::Implied))
}

/// The words of `object` outside its time expressions: what a plan is about.
fn without_time<'a>(object: &[&'a str]) -> Vec<&'a str> {
    let phrases = time::find_all(object);
    object
        .iter()
        .enumerate()
        .filter(|(i, _)| !phrases.iter().any(|p| (p.start..p.end()).contains(i)))
        .map(|(_, w)| *w)
        .collect()
}

/// Verbs of thinking: "I'll think about it tomorrow" plans nothing.
const MENTAL_VERBS: &[&str] = &[
    "think",
    "guess",
    "wonder",
    "know",
    "feel",
    "mean",
    "understand",
    "remember",
    "forget",
    "believe",
    "suppose",
    "consider",
    "decide",
    "let",
];

/// Whether a verb (base or "-ing" form) is conversation or thought: "ask", "talking",
/// "sharing", "chatting".
fn is_conversational(verb: &str) -> bool {
    let stem = verb.strip_suffix("ing");
    CONVERSATIONAL_VERBS.iter().chain(MENTAL_VERBS).any(|v| {
        verb == *v
            || stem.is_some_and(|stem| {
                stem == *v
                    || format!("{stem}e") == *v
                    || (stem.len() == v.len() + 1 && stem.starts_with(v))
            })
    })
}

/// A plan: a future form of a verb with a date to come. "am going to <verb>" (or "to
/// <Place>"), "will <verb>", "am <verb>ing", each only with an upcoming time
/// expression in the clause ("I'm going to bed" is no plan).
fn read_plan(m: &[&str], capitalised: impl Fn(usize) -> bool, phrases: &[TimePhrase]) -> bool {
    if !phrases.iter().any(|p| p.kind == TimeKind::Upcoming) {
        return false;
    }
    let (start, destination_allowed) = match m {
        ["am" | "are", "going", "to", ..] => (3, true),
        ["will", ..] => (1, false),
        ["am" | "are", verb, ..] if verb.len() > 4 && verb.ends_with("ing") => (1, false),
        _ => return false,
    };
    let Some(verb) = m.get(start) else {
        return false;
    };
    let object = without_time(&m[start + 1..]);
    if destination_allowed && capitalised(start) {
        return true;
    }
    could_be_verb(verb, capitalised(start))
        && !is_conversational(verb)
        && is_goal(&m[start..])
        && object_says_something(&object)
}

/// "my sister", "my sister Anna", "my best friend, Tom,": a person close to the user
/// opening the clause. `(subject for the summary, index of the predicate)`.
fn relative_subject(body: &[Token]) -> Option<(String, usize)> {
    let words: Vec<&str> = body.iter().map(|t| t.lower.as_str()).collect();
    let ["my" | "our", rest @ ..] = &words[..] else {
        return None;
    };
    let (relation, len) = crate::about::lexicon::relation_at(rest)?;
    let mut end = 1 + len;
    let mut subject = format!("User's {relation}");
    if let Some((name, consumed)) = people::name_at(&body[end..]) {
        subject = format!("{subject} {name}");
        end += consumed;
    }
    // "My sister and I ..." is the user's own clause.
    (words.get(end) != Some(&"and")).then_some((subject, end))
}

/// An event of a person close to the user: a past event verb (or any past verb with a
/// date), or a future form with a date to come ("is getting married next month").
fn reads_as_their_event(m: &[&str], episode_adverb: bool, phrases: &[TimePhrase]) -> bool {
    let has = |kind| phrases.iter().any(|p| p.kind == kind);
    let Some((verb, object)) = m.split_first() else {
        return false;
    };
    if is_past(verb) {
        return !CONVERSATIONAL_PAST.contains(verb)
            && !matches!(*verb, "was" | "were")
            && (has(TimeKind::Specific)
                || episode_adverb
                || EVENT_VERBS.contains(&past_to_base(verb).as_str()))
            && object_says_something(&without_time(object));
    }
    has(TimeKind::Upcoming)
        && match m {
            ["is" | "are", "going", "to", rest @ ..] | ["will", rest @ ..] => {
                rest.first().is_some_and(|v| !is_conversational(v))
                    && object_says_something(&without_time(rest))
            }
            ["is" | "are", verb, rest @ ..] if verb.len() > 4 && verb.ends_with("ing") => {
                !is_conversational(verb) && object_says_something(&without_time(rest))
            }
            _ => false,
        }
}

/// Nouns that type a "my <noun> is ..." clause, checked in this order against the
/// words before "is": the first noun found decides ("my favourite project is" is a
/// preference).
const MY_NOUNS: &[(&[&str], MemoryType)] = &[
    (&["favorite", "favourite"], MemoryType::Preference),
    (
        &[
            "name",
            "job",
            "role",
            "occupation",
            "profession",
            "background",
            "hometown",
            "birthday",
            "age",
            "nationality",
            "pronouns",
            "title",
            "major",
            "degree",
        ],
        MemoryType::Identity,
    ),
    (
        &[
            "goal",
            "goals",
            "dream",
            "ambition",
            "plan",
            "aim",
            "resolution",
        ],
        MemoryType::Goal,
    ),
    (
        &["project", "startup", "thesis", "dissertation", "novel"],
        MemoryType::Project,
    ),
    (&["diet", "allergy", "allergies"], MemoryType::Constraint),
    (&["routine"], MemoryType::Habit),
    (&["decision", "choice"], MemoryType::Decision),
];

/// The type of a "my ..." clause (words after "my"), from the noun before its "is":
/// "my name is", "my goal for this year is", "my favourite food is".
fn my_rule(words: &[&str]) -> Option<MemoryType> {
    let verb = words
        .iter()
        .take(6)
        .position(|w| matches!(*w, "is" | "are"))?;
    if verb == 0 || verb + 1 >= words.len() {
        return None;
    }
    words[..verb]
        .iter()
        .find_map(|word| {
            MY_NOUNS
                .iter()
                .find(|(nouns, _)| nouns.contains(word))
                .map(|(_, memory_type)| *memory_type)
        })
        .or_else(|| {
            // "my number is ...", "my ride is ...": an attribute the catalog names,
            // unless the noun phrase is a person ("my sister is Anna" is a relation).
            let noun_phrase = &words[..verb];
            let person = crate::about::lexicon::relation_at(noun_phrase).is_some();
            let attribute = catalog::by_noun(noun_phrase).filter(|_| !person)?;
            Some(catalog::memory_type(&attribute))
        })
}

/// The type of the fact `summary` states when it names an attribute of the catalog
/// (`about.rs`): "User is on day shifts" (a shift: a habit).
fn attribute_type(summary: &str) -> Option<MemoryType> {
    let about = crate::about::of_summary(summary);
    about.attribute.as_deref().map(catalog::memory_type)
}

/// "Python is my favorite language", "Haskell is my favourite now", "September 30 is
/// our wedding anniversary": the value said first, written "User's favorite language
/// is Python", "User's wedding anniversary is September 30".
fn value_first(body: &[Token], time_suffix: &str) -> Option<Reading> {
    let words: Vec<&str> = body.iter().map(|t| t.lower.as_str()).collect();
    // "X is my favourite", "X has become my favourite", "X became my favourite".
    let (is_at, copula_len) = (1..words.len().min(8)).find_map(|i| match &words[i..] {
        ["is" | "became" | "remains", ..] => Some((i, 1)),
        ["has" | "have", "become", ..] => Some((i, 2)),
        _ => None,
    })?;
    // The value runs from the last pause before "is": "new obsession: Phoebe
    // Bridgers is my favorite now".
    let value_start = body[..is_at]
        .iter()
        .rposition(|t| t.comma_after)
        .map_or(0, |i| i + 1);
    if value_start == is_at
        || matches!(
            words[value_start],
            "that"
                | "this"
                | "it"
                | "he"
                | "she"
                | "they"
                | "there"
                | "what"
                | "which"
                | "who"
                | "i"
        )
    {
        return None;
    }
    let after_copula = is_at + copula_len;
    let ["my" | "our", noun_words @ ..] = &words[after_copula..] else {
        return None;
    };
    let favorite = matches!(noun_words.first(), Some(&("favorite" | "favourite")));
    let value = render(&body[value_start..is_at]);
    // The noun phrase runs to a pause or a word marking time ("now").
    let noun_start = after_copula + 1 + usize::from(favorite);
    let mut noun_end = noun_start;
    for (offset, word) in words[noun_start..].iter().enumerate() {
        if crate::about::marks_change(&[word]) || crate::analyser::is_stop_word(word) {
            break;
        }
        noun_end = noun_start + offset + 1;
        if body[noun_start + offset].comma_after {
            break;
        }
    }
    let noun = render(&body[noun_start..noun_end]);
    // What follows the noun is kept when it says the value changed ("now", "these
    // days"): that decides what the fact replaces.
    let rest: Vec<&str> = words[noun_end..]
        .iter()
        .copied()
        .take_while(|w| !matches!(*w, "but" | "and" | "so" | "because"))
        .collect();
    let after: Vec<&str> = if crate::about::marks_change(&rest) {
        rest
    } else {
        Vec::new()
    };
    let (attribute, memory_type) = if favorite {
        let attribute = if noun.is_empty() {
            "favorite".to_owned()
        } else {
            format!("favorite {noun}")
        };
        (attribute, MemoryType::Preference)
    } else {
        // Only a value worth keeping: a date, a number, a name ("Mondays is my day"
        // says less than "September 30 is our anniversary").
        let names_something = body[value_start..is_at]
            .iter()
            .any(|t| t.text.chars().any(|c| c.is_ascii_digit()) || t.is_capitalised());
        let noun_words: Vec<&str> = words[noun_start..noun_end].to_vec();
        let typed = my_rule(&[&noun_words[..], &["is", "x"]].concat());
        if noun.is_empty() || !(names_something || typed.is_some()) {
            return None;
        }
        (noun.clone(), typed.unwrap_or(MemoryType::Identity))
    };
    let mut summary = format!("User's {attribute} is {value}");
    for word in after {
        summary.push(' ');
        summary.push_str(word);
    }
    summary.push_str(time_suffix);
    Some(Reading {
        memory_type,
        summary,
        certainty: Certainty::Stated,
        activity: None,
        dated: false,
    })
}

/// "Sunday mornings are for pickleball with the neighbors": what the user's recurring
/// time is for, "User spends Sunday mornings on pickleball with the neighbors".
fn days_for(tokens: &[Token], phrases: &[TimePhrase], body_start: usize) -> Option<Reading> {
    let leading = phrases
        .first()
        .filter(|p| p.start == 0 && p.kind == TimeKind::Recurring)?;
    let body = &tokens[body_start..];
    let words: Vec<&str> = body.iter().map(|t| t.lower.as_str()).collect();
    let ["are" | "is", "for", rest @ ..] = &words[..] else {
        return None;
    };
    if !object_says_something(rest) {
        return None;
    }
    let time = render(&tokens[..leading.end()]);
    Some(Reading {
        memory_type: MemoryType::Habit,
        summary: format!("User spends {time} on {}", render(&body[2..])),
        certainty: Certainty::Stated,
        activity: None,
        dated: false,
    })
}

/// "You can reach me at 303-555-0112", "call me on 555 0101": the user's phone number.
fn phone_to_reach(body: &[Token]) -> Option<Reading> {
    let words: Vec<&str> = body.iter().map(|t| t.lower.as_str()).collect();
    let at = words.windows(3).position(|w| {
        matches!(w[0], "reach" | "call" | "text" | "contact" | "ring")
            && w[1] == "me"
            && matches!(w[2], "at" | "on")
    })? + 3;
    let number: Vec<&Token> = body[at..]
        .iter()
        .take_while(|t| {
            t.text
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '(' | ')' | '.'))
        })
        .collect();
    let digits = number
        .iter()
        .flat_map(|t| t.text.chars())
        .filter(char::is_ascii_digit)
        .count();
    if digits < 7 {
        return None;
    }
    let number: Vec<&str> = number.iter().map(|t| t.text.as_str()).collect();
    Some(Reading {
        memory_type: MemoryType::Identity,
        summary: format!("User's phone number is {}", number.join(" ")),
        certainty: Certainty::Stated,
        activity: None,
        dated: false,
    })
}

/// A clause whose subject is a person named without "my" ("Kim on my team only writes
/// Scala", "Nugget the hamster is healthy"): a fact of theirs when its predicate names
/// an attribute of the catalog. A capitalised word alone may as well be a place or a
/// product, so nothing else is read from such a clause.
fn named_subject(body: &[Token], time_suffix: &str) -> Option<Reading> {
    let (name, len) = people::name_at(body)?;
    let rest = &body[len..];
    let first_person = rest
        .iter()
        .any(|t| matches!(t.lower.as_str(), "i" | "me" | "we" | "us"))
        || rest
            .iter()
            .any(|t| ADDRESSEE_WORDS.contains(&t.lower.as_str()));
    if first_person {
        return None;
    }
    let summary = format!("{name} {}{time_suffix}", render(rest));
    let about = crate::about::of_summary(&summary);
    about.holder_key()?;
    let memory_type = about.attribute.as_deref().map(catalog::memory_type)?;
    Some(Reading {
        memory_type,
        summary,
        certainty: Certainty::Stated,
        activity: None,
        dated: false,
    })
}

/// Reads one clause (preamble and hedges already stripped) as a fact, if its subject
/// is the user and a rule matches.
pub(super) fn read_clause(tokens: &[Token]) -> Option<Reading> {
    let words: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
    let phrases = time::find_all(&words);
    // A time expression opening the clause moves to the end of the summary:
    // "Every morning I run" -> "User runs every morning".
    let (body_start, time_suffix) = match phrases.first() {
        Some(leading) if leading.start == 0 => {
            let phrase = render(&tokens[..leading.end()]);
            let mut chars = phrase.chars();
            let lowered: String = chars
                .next()
                .map(|first| first.to_lowercase().chain(chars).collect())
                .unwrap_or_default();
            (leading.end(), format!(" {lowered}"))
        }
        _ => (0, String::new()),
    };
    let body = &tokens[body_start..];
    let body_words = &words[body_start..];
    if let ["my", rest @ ..] = body_words
        && let Some(memory_type) = my_rule(rest)
    {
        // The value runs to a pause: "My ride is a little red Vespa, perfect for
        // city traffic" says what the ride is in its first part.
        let copula = body_words.iter().position(|w| matches!(*w, "is" | "are"));
        let end = copula
            .and_then(|c| {
                body[c + 1..]
                    .iter()
                    .position(|t| t.comma_after)
                    .map(|i| c + i + 2)
            })
            .unwrap_or(body.len());
        return Some(Reading {
            memory_type,
            summary: format!("User's {}{time_suffix}", render(&body[1..end])),
            certainty: Certainty::Stated,
            activity: None,
            dated: false,
        });
    }
    if let Some(reading) = value_first(body, &time_suffix) {
        return Some(reading);
    }
    if let Some(reading) = days_for(tokens, &phrases, body_start) {
        return Some(reading);
    }
    if let Some(reading) = phone_to_reach(body) {
        return Some(reading);
    }
    if let ["call", "me", _, ..] = body_words {
        return Some(Reading {
            memory_type: MemoryType::Identity,
            summary: format!("User goes by {}", render(&body[2..])),
            certainty: Certainty::Stated,
            activity: None,
            dated: false,
        });
    }
    if let Some((subject, start)) = relative_subject(body) {
        let predicate = &body[start..];
        // Whose "my" or "we" would it be? Left to the transcript.
        let first_person = predicate.iter().any(|t| {
            matches!(
                t.lower.as_str(),
                "i" | "me" | "my" | "mine" | "we" | "us" | "our"
            ) || ADDRESSEE_WORDS.contains(&t.lower.as_str())
        });
        if first_person {
            return None;
        }
        let summary = format!("{subject} {}{time_suffix}", render(clause_end(predicate)));
        if let Some(memory_type) = attribute_type(&summary) {
            return Some(Reading {
                memory_type,
                summary,
                certainty: Certainty::Stated,
                activity: None,
                dated: phrases.iter().any(|p| p.kind != TimeKind::Recurring),
            });
        }
        let (kept, episode_adverb) = matchable(predicate);
        let m: Vec<&str> = kept.iter().map(|t| t.lower.as_str()).collect();
        return reads_as_their_event(&m, episode_adverb, &phrases).then_some(Reading {
            memory_type: MemoryType::Episode,
            summary,
            certainty: Certainty::Stated,
            activity: None,
            dated: true,
        });
    }
    if let Some(reading) = named_subject(body, &time_suffix) {
        return Some(reading);
    }
    // "We moved to Denver": where "we" live, the user lives; other facts of "we" are
    // not the user's alone.
    let we = body_words.first() == Some(&"we");
    let (subject, predicate_start, plural) = match body_words {
        ["i" | "we", ..] => ("User".to_owned(), 1, false),
        _ => joint_subject(body)?,
    };
    let predicate = clause_end(&body[predicate_start..]);
    if predicate
        .iter()
        .any(|t| ADDRESSEE_WORDS.contains(&t.lower.as_str()))
    {
        return None;
    }
    let (kept, episode_adverb) = matchable(predicate);
    let m: Vec<&str> = kept.iter().map(|t| t.lower.as_str()).collect();
    let capitalised = |index: usize| kept.get(index).is_some_and(|t| t.is_capitalised());
    let mut dated = false;
    let rendered = with_subject(&subject, predicate, plural) + &time_suffix;
    if we && attribute_type(&rendered).is_none() {
        return None;
    }
    let (memory_type, certainty) = match typed_rule(&m, capitalised) {
        Some((memory_type, Object::Required(object))) => {
            object_says_something(object).then_some((memory_type, Certainty::Stated))?
        }
        Some((memory_type, Object::None)) => (memory_type, Certainty::Stated),
        // A named attribute ("I'm on day shifts", "I took the job at Mercy General")
        // is a fact whatever the verb's tense.
        None if !plural && let Some(memory_type) = attribute_type(&rendered) => {
            (memory_type, Certainty::Stated)
        }
        None if read_plan(&m, capitalised, &phrases) => {
            dated = true;
            (MemoryType::Goal, Certainty::Stated)
        }
        None => read_event_or_habit(&m, capitalised(0), episode_adverb, &phrases)?,
    };
    dated |= memory_type == MemoryType::Episode;
    let summary = rendered;
    let activity = if memory_type == MemoryType::Episode && !plural {
        activity(predicate)
    } else {
        None
    };
    Some(Reading {
        memory_type,
        summary,
        certainty,
        activity,
        dated,
    })
}

/// Words that, after a pause, open a clause of their own: "I live in Portland, the
/// rain never stops", "I'm vegetarian, so no meat".
const CLAUSE_OPENERS: &[&str] = &[
    "the", "it", "its", "that", "this", "so", "which", "who", "he", "she", "they", "there", "but",
    "though", "although", "because", "since",
];

/// `predicate` up to the pause after which another clause begins.
fn clause_end(predicate: &[Token]) -> &[Token] {
    let end = (1..predicate.len()).find(|&i| {
        predicate[i - 1].comma_after && CLAUSE_OPENERS.contains(&predicate[i].lower.as_str())
    });
    &predicate[..end.unwrap_or(predicate.len())]
}

/// "My sister and I ...", "Tom and I ...": a short person mention joined with the
/// user. `(subject, index of the predicate, plural)`.
fn joint_subject(body: &[Token]) -> Option<(String, usize, bool)> {
    let and_i = body
        .windows(2)
        .take(6)
        .position(|pair| pair[0].lower == "and" && pair[1].lower == "i")?;
    let opens_with_person = body[0].lower == "my" || body[0].is_capitalised();
    (and_i > 0 && opens_with_person).then(|| {
        (
            format!("User and {}", render(&body[..and_i])),
            and_i + 2,
            true,
        )
    })
}

/// The activity of an episode's predicate, without its dates and "again"/"also".
fn activity(predicate: &[Token]) -> Option<Activity> {
    let words: Vec<&str> = predicate.iter().map(|t| t.lower.as_str()).collect();
    let phrases = time::find_all(&words);
    let verb_index = words.iter().position(|w| is_past(w))?;
    let in_phrase = |index: usize| phrases.iter().any(|p| (p.start..p.end()).contains(&index));
    let object: Vec<Token> = predicate
        .iter()
        .enumerate()
        .skip(verb_index + 1)
        .filter(|(index, token)| {
            !in_phrase(*index) && !matches!(token.lower.as_str(), "again" | "also" | "too")
        })
        .map(|(_, token)| token.clone())
        .collect();
    let base = past_to_base(words[verb_index]);
    let object_text = render(&object);
    let core: Vec<String> = text::content_words(&object_text).into_iter().collect();
    if core.is_empty() {
        return None;
    }
    Some(Activity {
        key: format!("{} {}", crate::analyser::stem(&base), core.join(" ")),
        habit_summary: format!("User regularly {} {object_text}", third_person_verb(&base)),
    })
}

//! Reading a question: whose fact it asks for and which attributes.

use super::catalog::{CATALOG, FAVORITE, PREFERRED};
use super::lexicon::{canonical_relation, is_relation_class, relation_at};
use super::words_of;

/// Whose fact a question asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskedHolder {
    /// A question in the first person that names no one else ("Where do I live?").
    User,
    /// Capitalised words that may name a person ("What does Ben do?"): the memory
    /// service keeps the ones that name a holder it knows.
    Names(Vec<String>),
    /// A person by their relation ("my mother", "my wife"), canonical.
    Relation(String),
    /// A class of relations ("my pets", "my kids").
    Class(String),
    /// Neither a person nor the first person.
    Unspecified,
}

/// What a question asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub holder: AskedHolder,
    /// Attribute names, as stored (`favorite language` included).
    pub attributes: Vec<String>,
    /// Words the asked attributes' statements are usually made with, for the
    /// full-text query (`catalog::Attribute::said_with`).
    pub expansion: Vec<String>,
}

const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "is", "are", "do",
    "does", "did", "can", "could", "should", "would", "will", "i", "tell", "remind",
];
const FIRST_PERSON: &[&str] = &["i", "me", "my", "mine", "myself", "we", "our", "us", "am"];
const CALENDAR: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const LIKING: &[&str] = &["enjoy", "like", "love", "adore", "prefer"];

/// Reads `question` (see [`Asked`]).
pub fn asked(question: &str) -> Asked {
    let words = words_of(question);
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();

    let mut names: Vec<String> = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let word = &words[index];
        let is_name = word.is_capitalised()
            && (index > 0 || !QUESTION_WORDS.contains(&word.lower.as_str()))
            && word.lower != "i"
            && !CALENDAR.contains(&word.lower.as_str())
            && !(word.text.chars().count() > 1 && word.text.chars().all(|c| !c.is_lowercase()))
            && word
                .text
                .chars()
                .all(|c| c.is_alphabetic() || matches!(c, '-' | '.'));
        if !is_name {
            index += 1;
            continue;
        }
        let start = index;
        while index < words.len() && words[index].is_capitalised() && index - start < 3 {
            index += 1;
            if words[index - 1].possessive {
                break;
            }
        }
        names.push(
            words[start..index]
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }

    let relation = lower.iter().enumerate().find_map(|(i, w)| {
        if !matches!(*w, "my" | "our") {
            return None;
        }
        let rest = &lower[i + 1..];
        if let Some(class) = rest.first().filter(|w| is_relation_class(w)) {
            return Some(AskedHolder::Class((*class).to_owned()));
        }
        relation_at(rest).map(|(r, _)| AskedHolder::Relation(canonical_relation(&r).to_owned()))
    });
    let holder = if !names.is_empty() {
        AskedHolder::Names(names)
    } else if let Some(relation) = relation {
        relation
    } else if lower.iter().any(|w| FIRST_PERSON.contains(w)) {
        AskedHolder::User
    } else {
        AskedHolder::Unspecified
    };

    let mut attributes: Vec<String> = Vec::new();
    let mut expansion: Vec<String> = Vec::new();
    for attribute in CATALOG {
        let hit = attribute
            .asked_by
            .iter()
            .any(|phrase| lower.windows(phrase.len()).any(|w| w == *phrase));
        if hit {
            attributes.push(attribute.name.to_owned());
            expansion.extend(attribute.said_with.iter().map(|w| (*w).to_owned()));
        }
    }
    let category = category(&lower);
    if let Some(at) = lower
        .iter()
        .position(|w| matches!(*w, "favorite" | "favourite"))
    {
        let noun = lower[at + 1..]
            .iter()
            .find(|w| !crate::analyser::is_stop_word(w))
            .map(|w| (*w).to_owned())
            .or(category);
        attributes.insert(0, favorite(noun));
        expansion.push("favorite".to_owned());
    } else if lower.iter().any(|w| LIKING.contains(w))
        && lower
            .iter()
            .any(|w| matches!(*w, "most" | "best" | "favorite"))
    {
        attributes.insert(0, favorite(category));
        expansion.push("favorite".to_owned());
    } else if lower
        .iter()
        .any(|w| matches!(*w, "prefer" | "prefers" | "preferred"))
        && let Some(noun) = category
    {
        attributes.insert(0, format!("{PREFERRED} {}", crate::analyser::stem(&noun)));
    }
    expansion.sort();
    expansion.dedup();
    Asked {
        holder,
        attributes,
        expansion,
    }
}

fn favorite(noun: Option<String>) -> String {
    match noun {
        Some(noun) => super::catalog::favorite(&[noun.as_str()]),
        None => FAVORITE.to_owned(),
    }
}

/// The noun a "which"/"what" question asks about: "Which language do I ..." ->
/// "language".
fn category(lower: &[&str]) -> Option<String> {
    let at = lower.iter().position(|w| matches!(*w, "which" | "what"))?;
    lower
        .get(at + 1)
        .filter(|w| !crate::analyser::is_stop_word(w) && !FIRST_PERSON.contains(w))
        .map(|w| (*w).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(question: &str) -> AskedHolder {
        asked(question).holder
    }

    fn attributes(question: &str) -> Vec<String> {
        asked(question).attributes
    }

    #[test]
    fn finds_whose_fact_is_asked_for() {
        assert_eq!(
            holder("What does Ben do for work?"),
            AskedHolder::Names(vec!["Ben".into()])
        );
        assert_eq!(
            holder("When is my mother's birthday?"),
            AskedHolder::Relation("mother".into())
        );
        assert_eq!(
            holder("Which of my pets takes medication?"),
            AskedHolder::Class("pets".into())
        );
        assert_eq!(
            holder("Where am I living at the moment?"),
            AskedHolder::User
        );
        assert_eq!(holder("What's the weather like?"), AskedHolder::Unspecified);
        // Months, acronyms and the first word of a question are no names.
        assert_eq!(holder("What did I do in May?"), AskedHolder::User);
        assert_eq!(
            holder("When did Caroline go to the LGBTQ support group?"),
            AskedHolder::Names(vec!["Caroline".into()])
        );
    }

    #[test]
    fn finds_the_attributes_asked_for() {
        assert!(
            attributes("Which number should the dentist call me on?").contains(&"phone".into())
        );
        assert!(attributes("Where am I living at the moment?").contains(&"residence".into()));
        assert!(attributes("Where should the package be delivered?").contains(&"address".into()));
        assert!(attributes("How do I get around?").contains(&"vehicle".into()));
        assert!(attributes("How do I get around?").contains(&"commute".into()));
        assert!(attributes("What hours do I work?").contains(&"shift".into()));
        assert!(attributes("What does Omar eat?").contains(&"diet".into()));
        assert!(attributes("What's my hometown?").contains(&"hometown".into()));
        assert_eq!(
            attributes("Which language do I enjoy coding in the most?")[0],
            "favorite language"
        );
        assert_eq!(attributes("What's my favourite food?")[0], "favorite food");
        assert!(attributes("Tell me a joke").is_empty());
        assert!(
            asked("Where am I living?")
                .expansion
                .contains(&"moved".into())
        );
    }
}

//! What a fact is about: its *holder* (the user, or a person around them), the
//! *attribute* it states (phone, employer, favourite language, ...) and the *value*.
//!
//! The memory service reads every memory it stores through [`of_summary`], whatever
//! wrote it (extraction, the REST API, MCP, an edit, an import), and decides from it
//! what a new fact replaces: a new value of a single-valued attribute of the same
//! holder supersedes the live one. Retrieval reads every question through
//! [`asked`] (`question.rs`), so that "What does Ben do for work?" is answered from
//! Ben's facts and never from another holder's fact about work.
//!
//! Summaries are read in the forms the extractors and people write them, third person:
//!
//! | Summary | Holder | Attribute | Value |
//! |---|---|---|---|
//! | User's phone number is 303-555-0176 now | user | phone | 303-555-0176 |
//! | User lives in Seattle | user | residence | Seattle |
//! | User's husband Ben is a pilot | Ben (husband) | occupation | pilot |
//! | User's mom's birthday is May 9 | mother | birthday | May 9 |
//! | User's wife is Elena | user | partner | Elena |
//! | Greg is allergic to latex | Greg | allergy | latex |
//! | User's favorite language is Haskell | user | favorite language | Haskell |
//! | User sold the Vespa | user | (none) | Vespa, negated |
//!
//! The attributes and their question words are in `catalog.rs`; word lists that tell
//! an occupation or a programming language from other words in `lexicon.rs`. What is
//! not recognised has no attribute: it is stored and found by its words as before.

pub mod catalog;
pub mod lexicon;
mod question;
mod summary;

use std::collections::BTreeSet;

pub use question::{Asked, AskedHolder, asked};
pub use summary::of_summary;

/// Who a fact is about, when it is not the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The person's name as written ("Ben", "Dr. Patel").
    pub name: Option<String>,
    /// Their relation to the user, canonical ("mother" for "mom").
    pub relation: Option<String>,
}

impl Holder {
    /// The stored form (`memories.holder`): the name, else the relation, lower case.
    pub fn key(&self) -> String {
        self.name
            .as_deref()
            .or(self.relation.as_deref())
            .unwrap_or_default()
            .to_lowercase()
    }
}

/// What one fact is about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct About {
    /// `None`: the user.
    pub holder: Option<Holder>,
    /// The attribute's stored name, when the fact states one.
    pub attribute: Option<String>,
    /// The value as written in the summary ("303-555-0176", "a pilot", "Seattle").
    pub value: String,
    /// The fact denies or ends the value ("no longer works at", "sold the Vespa").
    pub negated: bool,
    /// The fact says the value changed ("now", "new", "moved to", "took the job at"):
    /// what it replaces was true before, not a competing claim.
    pub changed: bool,
}

impl About {
    /// The stored holder key, `None` for the user.
    pub fn holder_key(&self) -> Option<String> {
        self.holder
            .as_ref()
            .map(Holder::key)
            .filter(|k| !k.is_empty())
    }

    /// Whether a holder has one value of this attribute at a time.
    pub fn is_single(&self) -> bool {
        self.attribute.as_deref().is_some_and(catalog::is_single)
    }

    /// The value's content words, stemmed, without the words that only mark time or
    /// change ("now", "new", "these days"): what two values are compared by.
    pub fn value_terms(&self) -> BTreeSet<String> {
        value_terms(&self.value)
    }
}

/// See [`About::value_terms`]. A marker word written with a capital is part of the
/// value ("New York").
pub fn value_terms(value: &str) -> BTreeSet<String> {
    let kept: Vec<&str> = value
        .split_whitespace()
        .filter(|word| {
            let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
            !(CHANGE_WORDS.contains(&bare) || VALUE_NOISE.contains(&bare))
        })
        .collect();
    crate::text::content_words(&kept.join(" "))
}

/// Compares two values of `attribute`: a phone number by its digits, an email address
/// as written (any case); anything else by [`compare_values`].
pub fn compare_values_of(attribute: Option<&str>, a: &str, b: &str) -> Values {
    let key = |value: &str| -> Option<String> {
        match attribute {
            Some(catalog::PHONE) => {
                let digits: String = value.chars().filter(char::is_ascii_digit).collect();
                (digits.len() >= 7).then_some(digits)
            }
            Some(catalog::EMAIL) => value.split_whitespace().find(|w| w.contains('@')).map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            }),
            _ => None,
        }
    };
    match (key(a), key(b)) {
        (Some(a), Some(b)) if a == b => Values::Same,
        (Some(_), Some(_)) => Values::Different,
        _ => compare_values(a, b),
    }
}

/// How two values of one attribute relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// The same value ("Seattle", "Seattle"), or one is the other with more detail
    /// ("Berlin", "Berlin, Germany").
    Same,
    /// Different values.
    Different,
    /// Nothing to compare (a value without content words).
    Unknown,
}

/// Compares two values of one attribute by their content words.
pub fn compare_values(a: &str, b: &str) -> Values {
    let (a, b) = (value_terms(a), value_terms(b));
    if a.is_empty() || b.is_empty() {
        return Values::Unknown;
    }
    if a.is_subset(&b) || b.is_subset(&a) {
        Values::Same
    } else {
        Values::Different
    }
}

/// Words that mark a change of value: the statement replaces what was true before.
const CHANGE_WORDS: &[&str] = &[
    "now",
    "new",
    "nowadays",
    "anymore",
    "since",
    "switched",
    "moved",
    "relocated",
    "joined",
    "recently",
    "changed",
    "latest",
    "lately",
    "currently",
];

/// Words inside a value that say nothing about it.
const VALUE_NOISE: &[&str] = &[
    "week", "month", "year", "today", "there", "again", "still", "only",
];

/// Multi-word change markers.
const CHANGE_PHRASES: &[&[&str]] = &[
    &["these", "days"],
    &["from", "this"],
    &["from", "now"],
    &["this", "time"],
    &["no", "longer"],
    &["took", "the", "job"],
    &["took", "a", "job"],
    &["after", "the", "move"],
];

/// Whether lower-case `words` mark a change of value.
pub(crate) fn marks_change(words: &[&str]) -> bool {
    words.iter().any(|w| CHANGE_WORDS.contains(w))
        || CHANGE_PHRASES
            .iter()
            .any(|phrase| words.windows(phrase.len()).any(|w| w == *phrase))
}

/// One word of a summary or question, as [`About`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Word {
    /// As written, without surrounding punctuation or a possessive "'s".
    pub text: String,
    pub lower: String,
    /// Written with "'s" (or a bare "'" after an s): "User's", "mom's".
    pub possessive: bool,
}

impl Word {
    pub fn is_capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

/// The words of `text`, contractions expanded ("doesn't" -> "does not"), possessives
/// marked rather than dropped.
pub(crate) fn words_of(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for piece in text.split_whitespace() {
        let piece = piece.replace(['\u{2018}', '\u{2019}', '`'], "'");
        let trimmed =
            piece.trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '#' | '+')));
        let trimmed = trimmed.trim_start_matches(['#', '+']);
        if trimmed.is_empty() {
            continue;
        }
        let lower = trimmed.to_lowercase();
        let possessive_stem = lower.strip_suffix("'s").filter(|stem| {
            !matches!(
                *stem,
                "it" | "that" | "what" | "he" | "she" | "there" | "who" | "here"
            )
        });
        if let Some(stem) = lower
            .strip_suffix("'s")
            .filter(|stem| possessive_stem.is_none() && !stem.is_empty())
        {
            // "it's", "that's": "is", not a possessive.
            for part in [stem, "is"] {
                out.push(Word {
                    text: part.to_owned(),
                    lower: part.to_owned(),
                    possessive: false,
                });
            }
            continue;
        }
        if let Some(stem) = possessive_stem {
            let text = &trimmed[..trimmed.len() - 2];
            out.push(Word {
                text: text.to_owned(),
                lower: stem.to_owned(),
                possessive: true,
            });
            continue;
        }
        let parts = crate::analyser::expand_contraction(&lower);
        if parts.len() == 1 {
            out.push(Word {
                text: trimmed.replace('\'', ""),
                lower: parts[0].clone(),
                possessive: false,
            });
        } else {
            for part in parts {
                out.push(Word {
                    text: part.clone(),
                    lower: part,
                    possessive: false,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_mark_possessives_and_expand_contractions() {
        let words = words_of("User's mom's number doesn't change; it's 555-0101.");
        let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
        assert_eq!(
            lower,
            [
                "user", "mom", "number", "does", "not", "change", "it", "is", "555-0101"
            ]
        );
        assert!(words[0].possessive && words[1].possessive && !words[2].possessive);
        assert_eq!(words[0].text, "User");
    }

    #[test]
    fn values_compare_by_content_words() {
        assert_eq!(compare_values("Berlin", "Berlin, Germany"), Values::Same);
        assert_eq!(
            compare_values("303-555-0176 now", "303-555-0176"),
            Values::Same
        );
        assert_eq!(
            compare_values("303-555-0112", "303-555-0176"),
            Values::Different
        );
        assert_eq!(compare_values("now", "Seattle"), Values::Unknown);
        // "day" is a value, not a time word: day shifts are not night shifts.
        assert_eq!(
            compare_values("day shifts from this week", "night shifts at the warehouse"),
            Values::Different
        );
    }
}

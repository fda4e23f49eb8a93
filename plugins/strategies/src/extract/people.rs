//! People named in a clause together with their relation to the user: "my sister
//! Anna", "my wife, Maria,", "Anna is my manager", "my boss is called Tom", "I have a
//! brother named Ben", "I'm married to Sam".
//!
//! Only people anchored to a relation are extracted: a capitalised word on its own is
//! as likely a place, a product or a language as a person.

use super::sentence::Token;
use super::time;
use crate::about::lexicon::relation_at;
use crate::model::PersonRef;

/// Titles that start a name ("Dr. Patel").
const TITLES: &[&str] = &["dr", "mr", "mrs", "ms", "miss", "prof", "professor", "sir"];

/// Capitalised words that are not names (besides weekdays and months, see `time`).
const NOT_NAMES: &[&str] = &[
    "i",
    "a",
    "an",
    "the",
    "my",
    "he",
    "she",
    "they",
    "it",
    "this",
    "that",
    "we",
    "you",
    "there",
    "here",
    "who",
    "what",
    "his",
    "her",
    "their",
    "our",
    "is",
    "and",
    "but",
    "so",
    "today",
    "yesterday",
    "tomorrow",
    "also",
    "just",
    "well",
];

/// A name starting at `tokens[0]`: up to three capitalised words, a title allowed
/// first; it ends after a word followed by a comma. `(name, tokens consumed)`.
pub(super) fn name_at(tokens: &[Token]) -> Option<(String, usize)> {
    let mut parts = Vec::new();
    for token in tokens.iter().take(3) {
        let is_title = parts.is_empty() && TITLES.contains(&token.lower.as_str());
        let is_name_word = token.is_capitalised()
            && !NOT_NAMES.contains(&token.lower.as_str())
            && !time::is_calendar_word(&token.lower)
            && token
                .text
                .chars()
                .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '.'));
        if !(is_title || is_name_word) {
            break;
        }
        parts.push(
            token
                .text
                .strip_suffix("'s")
                .unwrap_or(&token.text)
                .to_owned(),
        );
        if token.comma_after {
            break;
        }
    }
    // A title alone is not a name.
    let is_only_title = parts.len() == 1 && TITLES.contains(&tokens[0].lower.as_str());
    if parts.is_empty() || is_only_title {
        return None;
    }
    let consumed = parts.len();
    Some((parts.join(" "), consumed))
}

/// Every person named with a relation in `tokens`, in order of appearance, each name
/// once; and a person named without one in a joint subject ("Tom and I ...").
pub(super) fn find_persons(tokens: &[Token]) -> Vec<PersonRef> {
    let words: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
    let mut persons: Vec<PersonRef> = Vec::new();
    let mut add = |name: String, relation: Option<&str>| {
        if !persons.iter().any(|p| p.name.eq_ignore_ascii_case(&name)) {
            persons.push(PersonRef {
                name,
                relation: relation.map(str::to_owned),
            });
        }
    };
    for index in 0..tokens.len() {
        let after = index + 1;
        match words[index] {
            // "my sister Anna", "my wife, Maria", "my boss is Tom", "my boss is called
            // Tom", "my sister's name is Anna".
            "my" | "our" => {
                let Some((relation, len)) = relation_at(&words[after..]) else {
                    continue;
                };
                let mut name_start = after + len;
                name_start += match &words[name_start.min(words.len())..] {
                    ["is", "called" | "named", ..] | ["name", "is", ..] => 2,
                    ["is", ..] => 1,
                    _ => 0,
                };
                if let Some((name, _)) = name_at(&tokens[name_start.min(tokens.len())..]) {
                    add(name, Some(&relation));
                }
            }
            // "a brother named Ben", "a friend called Sue".
            "a" | "an" => {
                let Some((relation, len)) = relation_at(&words[after..]) else {
                    continue;
                };
                let name_start = after + len + 1;
                let is_named = matches!(words.get(after + len), Some(&("named" | "called")));
                if is_named
                    && let Some((name, _)) = name_at(&tokens[name_start.min(tokens.len())..])
                {
                    add(name, Some(&relation));
                }
            }
            // "married to Sam", "engaged to Kim".
            "married" | "engaged" if words.get(after) == Some(&"to") => {
                let relation = if words[index] == "married" {
                    "spouse"
                } else {
                    "fiance"
                };
                if let Some((name, _)) = name_at(&tokens[(after + 1).min(tokens.len())..]) {
                    add(name, Some(relation));
                }
            }
            _ => {}
        }
    }
    // A name opening the clause: "Anna is my manager", "Tom's my best friend", "Kim on
    // my team", "Nugget the hamster", or, with no relation, "Tom and I play tennis".
    if let Some((name, len)) = name_at(tokens) {
        let rest = &words[len..];
        if rest.starts_with(&["and", "i"]) {
            add(name, None);
        } else if let ["on", "my" | "our", "team", ..] = rest {
            add(name, Some("teammate"));
        } else if let ["from", "work", ..] = rest {
            add(name, Some("colleague"));
        } else if let ["the" | "my" | "our", pet, ..] = rest
            && crate::about::lexicon::is_pet(pet)
        {
            add(name, Some(pet));
        } else if let ["my", relation_words @ ..] = rest.strip_prefix(&["is"][..]).unwrap_or(rest)
            && let Some((relation, _)) = relation_at(relation_words)
        {
            add(name, Some(&relation));
        }
    }
    persons
}

#[cfg(test)]
mod tests {
    use super::super::sentence::tokenize;
    use super::*;

    fn persons(sentence: &str) -> Vec<(String, String)> {
        find_persons(&tokenize(sentence))
            .into_iter()
            .map(|p| (p.name, p.relation.unwrap_or_else(|| "-".to_owned())))
            .collect()
    }

    fn pair(name: &str, relation: &str) -> (String, String) {
        (name.to_owned(), relation.to_owned())
    }

    #[test]
    fn finds_people_with_their_relation() {
        assert_eq!(
            persons("my sister Anna lives in Rome"),
            [pair("Anna", "sister")]
        );
        assert_eq!(
            persons("I met my wife, Maria, in 2010"),
            [pair("Maria", "wife")]
        );
        assert_eq!(persons("Anna is my manager"), [pair("Anna", "manager")]);
        assert_eq!(
            persons("Tom's my best friend"),
            [pair("Tom", "best friend")]
        );
        assert_eq!(
            persons("my boss is called Tom Baker"),
            [pair("Tom Baker", "boss")]
        );
        assert_eq!(
            persons("my sister's name is Anna"),
            [pair("Anna", "sister")]
        );
        assert_eq!(
            persons("I have a brother named Ben"),
            [pair("Ben", "brother")]
        );
        assert_eq!(persons("I am married to Sam"), [pair("Sam", "spouse")]);
        assert_eq!(
            persons("my doctor is Dr. Patel"),
            [pair("Dr. Patel", "doctor")]
        );
        assert_eq!(persons("Tom and I play chess"), [pair("Tom", "-")]);
        assert_eq!(
            persons("my older brother Ben and my mom Sue"),
            [pair("Ben", "brother"), pair("Sue", "mom")]
        );
        // A comma ends a name: Tom is not part of Anna's name.
        assert_eq!(
            persons("I met my sister Anna, Tom and Ben"),
            [pair("Anna", "sister")]
        );
    }

    #[test]
    fn ignores_names_without_a_relation_and_relations_without_a_name() {
        assert!(persons("I moved to Paris with Google").is_empty());
        assert!(persons("my sister lives in Rome").is_empty());
        assert!(persons("my sister is nice").is_empty());
        assert!(persons("She is my manager").is_empty());
    }
}

//! English verb forms and the rewrite of a first-person clause into a third-person
//! summary ("I don't like my job" -> "User does not like their job").

use super::sentence::Token;
use crate::analyser::irregular_base;

const MODALS: &[&str] = &[
    "can", "cannot", "could", "will", "would", "should", "must", "may", "might", "shall",
];

/// Adverbs of frequency that may stand between the subject and its verb ("I usually
/// run"). They matter to the habit patterns, so those keep them in the clause.
const FREQUENCY_ADVERBS: &[&str] = &[
    "usually",
    "always",
    "often",
    "normally",
    "typically",
    "regularly",
    "generally",
    "sometimes",
    "rarely",
    "seldom",
    "never",
    "sometime",
    "occasionally",
    "frequently",
];

/// Other adverbs that may stand between the subject and its verb ("I really like tea",
/// "I'm currently working on", "I no longer eat"): skipped when matching a predicate,
/// kept in its summary. "no longer", "kind of" and "sort of" are handled as pairs.
pub(super) const SOFT_ADVERBS: &[&str] = &[
    "really",
    "truly",
    "absolutely",
    "totally",
    "definitely",
    "actually",
    "honestly",
    "seriously",
    "also",
    "still",
    "currently",
    "now",
    "genuinely",
    "literally",
    "kinda",
    "sorta",
    "probably",
    "maybe",
    "perhaps",
    "even",
    "mostly",
    "just",
    "recently",
    "finally",
    "already",
    "lately",
];

/// Words ending in "ed" that are not past tense.
const NOT_PAST_ED: &[&str] = &[
    "need", "feed", "seed", "speed", "bleed", "breed", "proceed", "succeed", "exceed", "indeed",
    "embed", "shed", "wed", "weed", "heed", "greed", "deed", "bed", "red",
];

/// How many of `words`' first words form one pre-verb adverb: 0, 1 or 2.
pub(super) fn adverb_len(words: &[&str]) -> usize {
    match words {
        ["no", "longer", ..] | ["kind", "of", ..] | ["sort", "of", ..] => 2,
        [first, ..] if SOFT_ADVERBS.contains(first) || FREQUENCY_ADVERBS.contains(first) => 1,
        _ => 0,
    }
}

/// The number of leading words of `words` that are adverbs.
pub(super) fn adverbs_before_verb(words: &[&str]) -> usize {
    let mut skipped = 0;
    loop {
        let len = adverb_len(&words[skipped..]);
        if len == 0 {
            return skipped;
        }
        skipped += len;
    }
}

pub(super) fn is_modal(word: &str) -> bool {
    MODALS.contains(&word)
}

/// Whether a lower-case verb is a past form ("went", "visited", "was").
pub(super) fn is_past(word: &str) -> bool {
    irregular_base(word).is_some()
        || (word.ends_with("ed") && word.chars().count() > 3 && !NOT_PAST_ED.contains(&word))
}

/// The base form of a past verb: irregular forms from a table, regular ones by
/// heuristic ("visited" -> "visit", "jogged" -> "jog", "hiked" -> "hike", "studied" ->
/// "study"). Inexact for some verbs; it only words inferred habits.
pub(super) fn past_to_base(word: &str) -> String {
    if let Some(base) = irregular_base(word) {
        return base.to_owned();
    }
    if let Some(base) = word.strip_suffix("ied") {
        return format!("{base}y");
    }
    let Some(base) = word.strip_suffix("ed") else {
        return word.to_owned();
    };
    let chars: Vec<char> = base.chars().collect();
    let is_vowel = |c: char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u');
    match chars[..] {
        // "jogged" -> "jog", but "called" -> "call", "passed" -> "pass".
        [.., a, b] if a == b && !is_vowel(a) && !matches!(a, 'l' | 's' | 'z' | 'f') => {
            chars[..chars.len() - 1].iter().collect()
        }
        // "danced" -> "dance", "moved" -> "move", "cycled" -> "cycle".
        [.., 'c' | 'v'] | [.., 'b' | 'c' | 'd' | 'f' | 'g' | 'k' | 'p' | 't', 'l'] => {
            format!("{base}e")
        }
        // Short consonant-vowel-consonant stems took an "e": "hiked", "baked", "used".
        [.., a, b, c]
            if chars.len() <= 4
                && !is_vowel(a)
                && is_vowel(b)
                && !is_vowel(c)
                && !matches!(c, 'w' | 'x' | 'y') =>
        {
            format!("{base}e")
        }
        [_, _] | [_] => format!("{base}e"),
        _ => base.to_owned(),
    }
}

/// The form of a lower-case verb after a singular third-person subject.
pub(super) fn third_person_verb(verb: &str) -> String {
    match verb {
        "am" | "are" => return "is".to_owned(),
        // Already third person.
        "is" | "was" | "has" | "does" => return verb.to_owned(),
        "have" => return "has".to_owned(),
        "do" => return "does".to_owned(),
        _ => {}
    }
    let unchanged = is_modal(verb)
        || is_past(verb)
        || verb.ends_with("ing")
        || !verb.chars().all(|c| c.is_alphabetic());
    if unchanged {
        return verb.to_owned();
    }
    let ends_with_consonant_y = verb.ends_with('y')
        && verb
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'));
    if ends_with_consonant_y {
        format!("{}ies", &verb[..verb.len() - 1])
    } else if ["s", "sh", "ch", "x", "z", "o"]
        .iter()
        .any(|suffix| verb.ends_with(suffix))
    {
        format!("{verb}es")
    } else {
        format!("{verb}s")
    }
}

/// The form of a verb after a plural subject ("User and their sister were").
fn plural_verb(verb: &str) -> String {
    match verb {
        "am" | "is" => "are",
        "was" => "were",
        other => other,
    }
    .to_owned()
}

/// A first-person pronoun's third-person counterpart.
fn swap_pronoun(lower: &str) -> Option<&'static str> {
    Some(match lower {
        "i" | "we" => "they",
        "me" | "us" => "them",
        "my" | "our" => "their",
        "mine" | "ours" => "theirs",
        "myself" | "ourselves" => "themselves",
        _ => return None,
    })
}

/// Renders tokens as text, first-person pronouns swapped to the third person
/// ("my sister and me" -> "their sister and them").
pub(super) fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut after_swapped_i = false;
    for (index, token) in tokens.iter().enumerate() {
        if !out.is_empty() {
            out.push(' ');
        }
        let word = match swap_pronoun(&token.lower) {
            Some(swapped) => swapped.to_owned(),
            None if after_swapped_i => plural_verb(&token.lower),
            None => token.text.clone(),
        };
        after_swapped_i = token.lower == "i";
        out.push_str(&word);
        if token.comma_after && index + 1 < tokens.len() {
            out.push(',');
        }
    }
    out
}

/// `subject` followed by a first-person predicate rewritten for it: leading adverbs
/// kept, the first verb conjugated (singular, or plural for a joint subject such as
/// "User and their sister"), pronouns swapped.
/// `("User", "usually go to my gym")` -> "User usually goes to their gym".
pub(super) fn with_subject(subject: &str, predicate: &[Token], plural: bool) -> String {
    let lower: Vec<&str> = predicate.iter().map(|t| t.lower.as_str()).collect();
    let verb_index = adverbs_before_verb(&lower);
    let mut parts = vec![subject.to_owned()];
    let adverbs: Vec<&str> = lower[..verb_index].to_vec();
    if !adverbs.is_empty() {
        parts.push(adverbs.join(" "));
    }
    if let Some(verb) = predicate.get(verb_index) {
        parts.push(if plural {
            plural_verb(&verb.lower)
        } else {
            third_person_verb(&verb.lower)
        });
        let rest = render(&predicate[verb_index + 1..]);
        if !rest.is_empty() {
            parts.push(rest);
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::sentence::tokenize;
    use super::*;

    #[test]
    fn conjugates_for_a_third_person_subject() {
        for (verb, expected) in [
            ("like", "likes"),
            ("go", "goes"),
            ("watch", "watches"),
            ("try", "tries"),
            ("play", "plays"),
            ("am", "is"),
            ("have", "has"),
            ("do", "does"),
            ("went", "went"),
            ("visited", "visited"),
            ("can", "can"),
            ("need", "needs"),
        ] {
            assert_eq!(third_person_verb(verb), expected, "{verb}");
        }
    }

    #[test]
    fn past_forms_map_back_to_their_base() {
        for (past, base) in [
            ("went", "go"),
            ("visited", "visit"),
            ("jogged", "jog"),
            ("hiked", "hike"),
            ("studied", "study"),
            ("played", "play"),
            ("danced", "dance"),
            ("called", "call"),
            ("used", "use"),
        ] {
            assert_eq!(past_to_base(past), base, "{past}");
        }
        assert!(is_past("went") && is_past("decided") && !is_past("need") && !is_past("go"));
    }

    #[test]
    fn rewrites_first_person_predicates() {
        let rewrite = |s: &str| with_subject("User", &tokenize(s), false);
        assert_eq!(
            rewrite("do not like my job"),
            "User does not like their job"
        );
        assert_eq!(
            rewrite("usually go to the gym"),
            "User usually goes to the gym"
        );
        assert_eq!(rewrite("no longer eat meat"), "User no longer eats meat");
        assert_eq!(
            rewrite("am allergic to nuts, sadly"),
            "User is allergic to nuts, sadly"
        );
        assert_eq!(rewrite("think I am late"), "User thinks they are late");
        assert_eq!(
            with_subject("User and their sister", &tokenize("was in Rome"), true),
            "User and their sister were in Rome"
        );
    }
}

//! Reading a summary: who holds the fact, then which attribute its predicate states.

use super::catalog::{self, *};
use super::lexicon::{self, canonical_relation, relation_at};
use super::{About, Holder, Word, marks_change, words_of};

/// Titles that may open a person's name ("Dr. Lindqvist").
const TITLES: &[&str] = &["dr", "mr", "mrs", "ms", "miss", "prof", "professor"];

/// Capitalised words that open a summary without being a person's name.
const NOT_NAMES: &[&str] = &[
    "user",
    "i",
    "the",
    "a",
    "an",
    "my",
    "our",
    "their",
    "this",
    "that",
    "it",
    "they",
    "we",
    "he",
    "she",
    "there",
    "today",
    "yesterday",
    "tomorrow",
];

/// Reads what `summary` is about (see the module docs of `about`).
pub fn of_summary(summary: &str) -> About {
    let words = words_of(summary);
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    let changed = marks_change(&lower);
    let negated = crate::text::is_negated(summary);
    let mut about = About {
        changed,
        negated,
        ..About::default()
    };
    let Some(first) = words.first() else {
        return about;
    };
    if first.lower == "user" {
        if first.possessive {
            read_after_users(&words[1..], &mut about);
        } else {
            read_predicate(&words[1..], &mut about);
        }
    } else if let Some(name_len) = name_len(&words)
        // "Carol and Tom hiked the Alps": a fact of both is no one holder's.
        && words.get(name_len).is_none_or(|w| w.lower != "and")
    {
        let name = words[..name_len]
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        about.holder = Some(Holder {
            name: Some(name),
            relation: None,
        });
        let rest = &words[name_len..];
        if words[name_len - 1].possessive {
            read_possessive(rest, &mut about);
        } else {
            read_predicate(skip_modifier(rest), &mut about);
        }
    }
    about
}

/// "User's ...": the user's own attribute, or a person named by their relation.
fn read_after_users(words: &[Word], about: &mut About) {
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    let Some((relation, relation_len)) = relation_at(&lower) else {
        read_possessive(words, about);
        return;
    };
    let relation = canonical_relation(&relation).to_owned();
    let after = &words[relation_len..];
    // "User's mom's birthday is May 9".
    if words[relation_len - 1].possessive {
        about.holder = Some(Holder {
            name: None,
            relation: Some(relation),
        });
        read_possessive(after, about);
        return;
    }
    let name = name_len(after).map(|len| {
        let name = after[..len]
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        (name, len)
    });
    // "User's sister is Anna": the user's relationship, valued by the person.
    if name.is_none()
        && let [copula, rest @ ..] = after
        && matches!(copula.lower.as_str(), "is" | "was")
        && let Some(len) = name_len(rest)
        && len == rest.len()
    {
        about.attribute = Some(if lexicon::is_partner(&relation) {
            PARTNER.to_owned()
        } else {
            relation
        });
        about.value = joined(rest);
        return;
    }
    let (name, name_len) = name.map_or((None, 0), |(n, len)| (Some(n), len));
    let possessive_name = name_len > 0 && after[name_len - 1].possessive;
    about.holder = Some(Holder {
        name,
        relation: Some(relation),
    });
    let rest = &after[name_len..];
    if possessive_name {
        read_possessive(rest, about);
    } else {
        read_predicate(skip_modifier(rest), about);
    }
}

/// The words of a name opening `words`: up to three capitalised words (a title
/// allowed first), ending at a possessive.
fn name_len(words: &[Word]) -> Option<usize> {
    let mut len = 0;
    for word in words.iter().take(3) {
        let title = len == 0 && TITLES.contains(&word.lower.as_str());
        let name_word = word.is_capitalised()
            && !NOT_NAMES.contains(&word.lower.as_str())
            && word
                .text
                .chars()
                .all(|c| c.is_alphabetic() || matches!(c, '-' | '.'));
        if !(title || name_word) {
            break;
        }
        len += 1;
        if word.possessive {
            break;
        }
    }
    let only_title = len == 1 && TITLES.contains(&words[0].lower.as_str());
    (len > 0 && !only_title).then_some(len)
}

/// Skips a short modifier between a name and its verb: "Kim on their team writes
/// Scala", "Omar from work is vegan".
fn skip_modifier(words: &[Word]) -> &[Word] {
    let opens = words
        .first()
        .is_some_and(|w| matches!(w.lower.as_str(), "on" | "from" | "at" | "in" | "of"));
    if !opens {
        return words;
    }
    let end = words.iter().take(4).position(|w| {
        matches!(
            w.lower.as_str(),
            "team"
                | "work"
                | "office"
                | "class"
                | "school"
                | "floor"
                | "street"
                | "block"
                | "building"
                | "gym"
        )
    });
    match end {
        Some(end) => &words[end + 1..],
        None => words,
    }
}

fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// "<noun phrase> is <value>" after a possessive: "phone number is 303-555-0176".
fn read_possessive(words: &[Word], about: &mut About) {
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    let Some(copula) = lower
        .iter()
        .take(6)
        .position(|w| matches!(*w, "is" | "are" | "was" | "were"))
    else {
        return;
    };
    if copula == 0 || copula + 1 >= words.len() {
        return;
    }
    let noun_phrase = &lower[..copula];
    let value = &words[copula + 1..];
    let attribute = catalog::by_noun(noun_phrase).or_else(|| {
        let content: Vec<&str> = noun_phrase
            .iter()
            .copied()
            .filter(|w| !crate::analyser::is_stop_word(w))
            .collect();
        (!content.is_empty()).then(|| content.join(" "))
    });
    let value_text = joined(value);
    // "lucky number is 7" is no phone number.
    let attribute = match attribute.as_deref() {
        Some(PHONE) if digits(&value_text) < 7 => Some(noun_phrase.join(" ")),
        _ => attribute,
    };
    about.attribute = attribute;
    about.value = value_text;
}

fn digits(text: &str) -> usize {
    text.chars().filter(char::is_ascii_digit).count()
}

/// Adverbs between the subject and the verb that say nothing of the attribute.
const SKIPPED_ADVERBS: &[&str] = &[
    "fully",
    "strictly",
    "officially",
    "basically",
    "happily",
    "now",
    "currently",
    "still",
    "also",
    "only",
    "just",
    "recently",
    "finally",
    "already",
    "really",
    "usually",
    "mostly",
    "mainly",
    "actually",
    "totally",
    "completely",
    "again",
];

/// Adverbs dropped from inside a verb phrase.
const INNER_ADVERBS: &[&str] = &[
    "now",
    "fully",
    "completely",
    "totally",
    "strictly",
    "officially",
    "finally",
    "recently",
    "mostly",
    "mainly",
    "basically",
    "currently",
    "still",
    "already",
    "just",
    "also",
];

/// A verb phrase: "lives in Seattle", "is a nurse in the ER", "takes the train to work".
fn read_predicate(words: &[Word], about: &mut About) {
    // Adverbs inside the verb phrase say nothing of the attribute: "went fully vegan",
    // "is now a team lead".
    let kept: Vec<Word> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| *i == 0 || !INNER_ADVERBS.contains(&w.lower.as_str()))
        .map(|(_, w)| w.clone())
        .collect();
    let words = &kept[..];
    let mut start = 0;
    while let Some(word) = words.get(start) {
        match word.lower.as_str() {
            w if SKIPPED_ADVERBS.contains(&w) => start += 1,
            "no" if words.get(start + 1).is_some_and(|w| w.lower == "longer") => start += 2,
            "does" | "do" | "did" if words.get(start + 1).is_some_and(|w| w.lower == "not") => {
                start += 2
            }
            _ => break,
        }
    }
    let mut words = words[start..].to_vec();
    // "has been living in Manchester" states what "is living in Manchester" does.
    if words.len() > 2
        && matches!(words[0].lower.as_str(), "has" | "have")
        && words[1].lower == "been"
    {
        words.splice(
            0..2,
            [Word {
                text: "is".to_owned(),
                lower: "is".to_owned(),
                possessive: false,
            }],
        );
    }
    let words = &words[..];
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    if let Some((attribute, value_start)) = verbal(&lower) {
        let value = &words[value_start.min(words.len())..];
        about.value = value_of(attribute, value);
        about.attribute = Some(attribute_name(attribute, value));
        if matches!(lower.first(), Some(&("left" | "quit"))) {
            about.negated = true;
        }
    } else if let ["sold" | "selling", rest @ ..] = &lower[..] {
        // Selling a thing ends having it: a negation of whatever holds it as a value.
        about.negated = true;
        about.value = joined(&words[1..]);
        let _ = rest;
    } else if let ["got", "rid", "of", ..] | ["gave", "away", ..] = &lower[..] {
        about.negated = true;
        about.value = joined(&words[if lower[1] == "rid" { 3 } else { 2 }..]);
    } else if let Some((attribute, value)) = shaped_value(words) {
        // However it is said ("switched carriers and got a new number: 617-555-0188"),
        // a phone number or an email address is that attribute's value.
        about.attribute = Some(attribute.to_owned());
        about.value = value;
    }
}

/// A phone number (seven digits or more, with a word for a phone nearby) or an email
/// address among `words`: `(attribute, value)`.
fn shaped_value(words: &[Word]) -> Option<(&'static str, String)> {
    let lower: Vec<&str> = words.iter().map(|w| w.lower.as_str()).collect();
    if let Some(email) = words.iter().find(|w| {
        w.text.contains('@') && w.text.rsplit('@').next().is_some_and(|d| d.contains('.'))
    }) {
        return Some((EMAIL, email.text.clone()));
    }
    let phone_word = lower.iter().any(|w| {
        matches!(
            *w,
            "number" | "phone" | "cell" | "mobile" | "reach" | "call" | "text" | "telephone"
        )
    });
    let number = words.iter().find(|w| {
        w.text.chars().filter(char::is_ascii_digit).count() >= 7
            && w.text
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '(' | ')' | '.'))
    })?;
    phone_word.then(|| (PHONE, number.text.clone()))
}

/// The stored attribute name: `preferred <noun>` takes the head noun of its value.
fn attribute_name(attribute: &str, value: &[Word]) -> String {
    if attribute == PREFERRED {
        return match head_noun(value) {
            Some(noun) => format!("{PREFERRED} {noun}"),
            None => PREFERRED.to_owned(),
        };
    }
    attribute.to_owned()
}

/// The last content word before a preposition: "chamomile tea in the evenings" ->
/// "tea".
fn head_noun(value: &[Word]) -> Option<String> {
    let end = value
        .iter()
        .position(|w| {
            matches!(
                w.lower.as_str(),
                "in" | "on"
                    | "at"
                    | "for"
                    | "with"
                    | "from"
                    | "to"
                    | "over"
                    | "instead"
                    | "than"
                    | "when"
                    | "because"
            )
        })
        .unwrap_or(value.len());
    value[..end]
        .iter()
        .rev()
        .map(|w| w.lower.as_str())
        .find(|w| !crate::analyser::is_stop_word(w) && !super::CHANGE_WORDS.contains(w))
        .map(crate::analyser::stem)
}

/// The value's words: for an occupation or a shift, the words that name it ("a nurse
/// in the ER there" -> "nurse"); otherwise everything after the pattern.
fn value_of(attribute: &str, value: &[Word]) -> String {
    let lower: Vec<&str> = value.iter().map(|w| w.lower.as_str()).collect();
    match attribute {
        OCCUPATION => {
            let end = lower
                .iter()
                .position(|w| matches!(*w, "in" | "at" | "for" | "with" | "on" | "and" | "so"))
                .unwrap_or(lower.len());
            joined(&value[..end])
        }
        _ => joined(value),
    }
}

/// The attribute a verb phrase states and where its value starts.
fn verbal(m: &[&str]) -> Option<(&'static str, usize)> {
    person(m)
        .or_else(|| residence_or_origin(m))
        .or_else(|| work(m))
        .or_else(|| transport(m))
        .or_else(|| health_and_diet(m))
        .or_else(|| tastes_and_skills(m))
}

/// 1 when `m[i]` is an article or "their".
fn det(m: &[&str], i: usize) -> usize {
    usize::from(matches!(m.get(i), Some(&("a" | "an" | "the" | "their"))))
}

/// Whether any of the six words from `m[i]` passes `test`.
fn any_from(m: &[&str], i: usize, test: fn(&str) -> bool) -> bool {
    m.iter().skip(i).take(6).any(|w| test(w))
}

fn is_number(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_digit())
}

fn residence_or_origin(m: &[&str]) -> Option<(&'static str, usize)> {
    let street_number = |i: usize| {
        m.get(i)
            .is_some_and(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            || m.get(i..i + 2) == Some(&["po", "box"][..])
    };
    Some(match m {
        ["lives" | "live" | "living" | "resides", "at", ..] if street_number(2) => (ADDRESS, 2),
        ["is" | "are", "living" | "residing", "at", ..] if street_number(3) => (ADDRESS, 3),
        ["lives" | "live" | "resides" | "reside", "in", ..] => (RESIDENCE, 2),
        [
            "is" | "are",
            "living" | "based" | "residing" | "located",
            "in",
            ..,
        ] => (RESIDENCE, 3),
        ["moved" | "relocated" | "moving" | "relocating", "to", ..] => (RESIDENCE, 2),
        ["has" | "have", "moved" | "relocated", "to", ..] => (RESIDENCE, 3),
        ["grew", "up", "in", ..] | ["was", "raised", "in", ..] => (HOMETOWN, 3),
        ["was", "born", "and", "raised", "in", ..] => (HOMETOWN, 5),
        ["is" | "are" | "comes" | "come", "from", ..] => (HOMETOWN, 2),
        ["was", "born", "on", ..] => (BIRTHDAY, 3),
        ["was", "born", "in", year, ..] if is_number(year) => (BIRTHDAY, 3),
        ["was", "born", "in", ..] => (HOMETOWN, 3),
        ["is" | "turned", age, ..] if is_number(age) => (AGE, 1),
        ["is" | "are" | "was", status, ..]
            if matches!(
                *status,
                "married" | "single" | "divorced" | "engaged" | "widowed" | "separated"
            ) =>
        {
            (RELATIONSHIP_STATUS, 1)
        }
        ["is" | "was", "called" | "named", ..] | ["goes", "by", ..] => (NAME, 2),
        _ => return None,
    })
}

fn work(m: &[&str]) -> Option<(&'static str, usize)> {
    Some(match m {
        ["works" | "work", "at" | "for", ..] => (EMPLOYER, 2),
        [
            "is" | "are",
            "working" | "employed",
            "at" | "for" | "by",
            ..,
        ] => (EMPLOYER, 3),
        [
            "took" | "got" | "accepted" | "started" | "landed" | "starts" | "began",
            "a" | "the",
            rest @ ..,
        ] => {
            let noun = usize::from(rest.first() == Some(&"new"));
            let is_job = matches!(
                rest.get(noun),
                Some(&("job" | "position" | "role" | "offer"))
            );
            match (is_job, rest.get(noun + 1)) {
                (true, Some(&("at" | "with" | "from"))) => (EMPLOYER, noun + 4),
                _ => return None,
            }
        }
        ["started" | "began", "working", "at" | "for", ..] => (EMPLOYER, 3),
        ["joined" | "left" | "quit", next, ..]
            if !matches!(*next, "the" | "a" | "my" | "their" | "smoking" | "drinking") =>
        {
            (EMPLOYER, 1)
        }
        ["was" | "got", "hired", "by" | "at", ..] => (EMPLOYER, 3),
        ["works" | "work", "as", ..] => (OCCUPATION, 2 + det(m, 2)),
        ["is" | "became" | "becomes" | "was", "a" | "an", ..] if occupation_named(&m[2..]) => {
            (OCCUPATION, 2)
        }
        [
            "works" | "work",
            "nights" | "days" | "evenings" | "weekends",
            ..,
        ] => (SHIFT, 1),
        ["works" | "work" | "is" | "are" | "was", ..] if shift_at(m).is_some() => {
            (SHIFT, shift_at(m)?)
        }
        ["studies" | "study", "at", ..] => (SCHOOL, 2),
        [
            "goes" | "go" | "is" | "are",
            ..,
            "school" | "elementary" | "high" | "college" | "university" | "academy"
            | "kindergarten" | "preschool",
        ] if m.get(1) == Some(&"to") || m.get(1..3) == Some(&["going", "to"][..]) => {
            (SCHOOL, if m[1] == "to" { 2 } else { 3 })
        }
        ["teaches" | "teach" | "taught", "at", ..] => (EMPLOYER, 2),
        ["makes" | "make" | "earns" | "earn" | "earned" | "made", ..]
            if m.iter()
                .skip(1)
                .take(4)
                .any(|w| w.chars().any(|c| c.is_ascii_digit())) =>
        {
            (INCOME, 1)
        }
        ["is" | "are", "studying", "at", ..] => (SCHOOL, 3),
        ["attends" | "attend", ..] => (SCHOOL, 1 + det(m, 1)),
        _ => return None,
    })
}

/// Whether a noun phrase names an occupation by its head, the last noun before a
/// preposition: "a junior developer at a small agency", "a team lead", "a retired
/// firefighter".
fn occupation_named(noun_phrase: &[&str]) -> bool {
    let end = noun_phrase
        .iter()
        .position(|w| {
            matches!(
                *w,
                "in" | "at" | "for" | "with" | "on" | "and" | "so" | "but" | "of" | "who" | "that"
            )
        })
        .unwrap_or(noun_phrase.len());
    noun_phrase[..end]
        .last()
        .is_some_and(|head| lexicon::is_occupation(head))
}

/// Where the words naming a shift start ("works night shifts", "is on day shifts"):
/// the adjectives before "shift(s)", within the first five words.
fn shift_at(m: &[&str]) -> Option<usize> {
    let shift = m
        .iter()
        .take(6)
        .position(|w| matches!(*w, "shift" | "shifts"))?;
    let start = m[..shift]
        .iter()
        .rposition(|w| {
            matches!(
                *w,
                "on" | "works" | "work" | "the" | "a" | "is" | "are" | "was"
            )
        })
        .map_or(1, |i| i + 1);
    (start <= shift).then_some(start)
}

fn transport(m: &[&str]) -> Option<(&'static str, usize)> {
    Some(match m {
        ["drives" | "drive" | "driving", next, ..]
            if !matches!(*next, "to" | "for" | "home" | "around") =>
        {
            (VEHICLE, 1 + det(m, 1))
        }
        ["rides" | "ride", ..] if any_from(m, 1, lexicon::is_transit) => (COMMUTE, 1 + det(m, 1)),
        ["rides" | "ride" | "owns" | "has", ..] if any_from(m, 1, lexicon::is_vehicle) => {
            (VEHICLE, 1 + det(m, 1))
        }
        ["bought" | "got" | "leased", ..]
            if any_from(m, 1, |w| lexicon::is_vehicle(w) && w != "bike") =>
        {
            (VEHICLE, 1 + det(m, 1))
        }
        ["takes" | "take" | "took" | "catches", ..]
            if m.iter().skip(1).take(3).any(|w| lexicon::is_transit(w)) =>
        {
            (COMMUTE, 1 + det(m, 1))
        }
        ["commutes" | "commute", "by" | "on" | "via" | "with", ..] => (COMMUTE, 2),
        [
            "bikes" | "cycles" | "walks" | "runs" | "drives" | "bike" | "cycle" | "walk",
            "to",
            "work",
            ..,
        ] => (COMMUTE, 0),
        _ => return None,
    })
}

fn health_and_diet(m: &[&str]) -> Option<(&'static str, usize)> {
    Some(match m {
        ["is" | "are", "allergic", "to", ..] => (ALLERGY, 3),
        ["has" | "have", "a" | "an", .., "allergy" | "allergies"] => (ALLERGY, 2),
        ["is" | "are" | "was", "on", ..] if any_from(m, 2, lexicon::is_medicine) => (MEDICATION, 2),
        ["takes" | "take", ..] if any_from(m, 1, lexicon::is_medicine) => (MEDICATION, 1),
        ["is" | "are" | "went" | "became", diet, ..] if lexicon::is_diet(diet) => (DIET, 1),
        ["is" | "are" | "went", "on", rest @ ..] if rest.contains(&"diet") => (DIET, 2),
        ["is" | "are" | "went" | "became", "a" | "an", diet, ..] if lexicon::is_diet(diet) => {
            (DIET, 2)
        }
        ["eats" | "eat" | "will", ..] if m.contains(&"anything") || m.contains(&"everything") => (
            DIET,
            m.iter()
                .position(|w| matches!(*w, "anything" | "everything"))
                .unwrap_or(1),
        ),
        _ => return None,
    })
}

fn tastes_and_skills(m: &[&str]) -> Option<(&'static str, usize)> {
    Some(match m {
        ["prefers" | "prefer", ..] => (PREFERRED, 1),
        ["speaks" | "speak", ..] if any_from(m, 1, lexicon::is_spoken_language) => {
            (SPOKEN_LANGUAGE, 1)
        }
        ["is" | "are", "learning", ..] | ["learns" | "learn" | "studies" | "study", ..]
            if m.len() > 1 =>
        {
            (
                LEARNING,
                m.iter()
                    .position(|w| {
                        matches!(*w, "learning" | "learns" | "learn" | "studies" | "study")
                    })
                    .map_or(1, |i| i + 1),
            )
        }
        [
            "writes" | "write" | "codes" | "code" | "programs" | "uses" | "use" | "develops",
            ..,
        ] if any_from(m, 1, lexicon::is_programming_language) => (PROGRAMMING_LANGUAGE, 1),
        ["is" | "are", ..]
            if m.iter().any(|w| {
                matches!(
                    *w,
                    "person"
                        | "developer"
                        | "programmer"
                        | "dev"
                        | "engineer"
                        | "guy"
                        | "girl"
                        | "fan"
                )
            }) && any_from(m, 1, lexicon::is_programming_language) =>
        {
            (PROGRAMMING_LANGUAGE, 1)
        }
        ["plays" | "play", next, ..] if !matches!(*next, "with" | "around" | "it") => (ACTIVITY, 1),
        ["does" | "do", next, ..]
            if !matches!(*next, "not" | "it" | "that" | "this" | "so" | "what") =>
        {
            (ACTIVITY, 1)
        }
        _ => return None,
    })
}

fn person(m: &[&str]) -> Option<(&'static str, usize)> {
    Some(match m {
        ["is" | "was", "married", "to", ..] => (PARTNER, 3),
        ["is" | "are", "engaged", "to", ..] => (PARTNER, 3),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(holder key or "-", attribute or "-", value)`.
    fn read(summary: &str) -> (String, String, String) {
        let about = of_summary(summary);
        (
            about.holder_key().unwrap_or_else(|| "-".into()),
            about.attribute.unwrap_or_else(|| "-".into()),
            about.value,
        )
    }

    fn expect(summary: &str, holder: &str, attribute: &str, value: &str) {
        assert_eq!(
            read(summary),
            (holder.to_owned(), attribute.to_owned(), value.to_owned()),
            "{summary}"
        );
    }

    #[test]
    fn reads_the_users_own_attributes() {
        expect(
            "User's phone number is 303-555-0176 now",
            "-",
            PHONE,
            "303-555-0176 now",
        );
        expect("User's number is 303-555-0176", "-", PHONE, "303-555-0176");
        expect("User's lucky number is 7", "-", "lucky number", "7");
        expect("User lives in Seattle", "-", RESIDENCE, "Seattle");
        expect(
            "User moved to Seattle in August",
            "-",
            RESIDENCE,
            "Seattle in August",
        );
        expect("User lives at 12 Oak Court", "-", ADDRESS, "12 Oak Court");
        expect(
            "User's address is 901 Bay Street since the move",
            "-",
            ADDRESS,
            "901 Bay Street since the move",
        );
        expect("User's PO box number is 4471", "-", PO_BOX, "4471");
        expect(
            "User works at Mercy General",
            "-",
            EMPLOYER,
            "Mercy General",
        );
        expect(
            "User took the job at Mercy General",
            "-",
            EMPLOYER,
            "Mercy General",
        );
        expect("User is a nurse in the ER there", "-", OCCUPATION, "nurse");
        expect(
            "User works night shifts at the warehouse",
            "-",
            SHIFT,
            "night shifts at the warehouse",
        );
        expect(
            "User is on day shifts from this week",
            "-",
            SHIFT,
            "day shifts from this week",
        );
        expect(
            "User's ride is a little red Vespa",
            "-",
            VEHICLE,
            "a little red Vespa",
        );
        expect("User drives a Ford F-150", "-", VEHICLE, "Ford F-150");
        expect(
            "User takes the commuter train to work these days",
            "-",
            COMMUTE,
            "commuter train to work these days",
        );
        expect(
            "User's favorite language is Python",
            "-",
            "favorite language",
            "Python",
        );
        expect(
            "User's favorite is Haskell now",
            "-",
            FAVORITE,
            "Haskell now",
        );
        expect("User prefers green tea", "-", "preferred tea", "green tea");
        expect(
            "User now prefers chamomile tea in the evenings",
            "-",
            "preferred tea",
            "chamomile tea in the evenings",
        );
        expect("User is allergic to bee stings", "-", ALLERGY, "bee stings");
        expect("User grew up in Savannah", "-", HOMETOWN, "Savannah");
        expect("User's birthday is December 2", "-", BIRTHDAY, "December 2");
        expect("User's wife is Elena", "-", PARTNER, "Elena");
        expect("User's sister is Anna", "-", "sister", "Anna");
        expect("User likes coffee", "-", "-", "");
        expect(
            "User is more of a TypeScript person",
            "-",
            PROGRAMMING_LANGUAGE,
            "more of a TypeScript person",
        );
    }

    #[test]
    fn reads_other_peoples_attributes() {
        expect("User's husband Ben is a pilot", "ben", OCCUPATION, "pilot");
        expect(
            "User's mom's birthday is May 9",
            "mother",
            BIRTHDAY,
            "May 9",
        );
        expect(
            "User's daughter Zoe does ballet across town",
            "zoe",
            ACTIVITY,
            "ballet across town",
        );
        expect("User's friend Omar is vegan", "omar", DIET, "vegan");
        expect(
            "User's cat Miso is on kidney meds twice a day",
            "miso",
            MEDICATION,
            "kidney meds twice a day",
        );
        expect(
            "User's wife Elena drives a Mazda CX-5",
            "elena",
            VEHICLE,
            "Mazda CX-5",
        );
        expect("Greg is allergic to latex", "greg", ALLERGY, "latex");
        expect(
            "Kim on their team only writes Scala",
            "kim",
            PROGRAMMING_LANGUAGE,
            "Scala",
        );
        expect(
            "Priyanka's birthday is June 1",
            "priyanka",
            BIRTHDAY,
            "June 1",
        );
        expect("Carol and Tom hiked the Alps together", "-", "-", "");
        let about = of_summary("User's sister Anna moved to Berlin last month");
        assert_eq!(about.holder_key().as_deref(), Some("anna"));
        assert_eq!(
            about.holder.and_then(|h| h.relation).as_deref(),
            Some("sister")
        );
    }

    #[test]
    fn reads_changes_and_negations() {
        assert!(of_summary("User's phone number is 303-555-0176 now").changed);
        assert!(of_summary("User is on day shifts from this week").changed);
        assert!(!of_summary("User lives in Seattle").changed);
        let sold = of_summary("User sold the Vespa after the winter");
        assert!(sold.negated && sold.attribute.is_none());
        assert_eq!(sold.value, "the Vespa after the winter");
        let left = of_summary("User no longer works at Google");
        assert!(left.negated);
        assert_eq!(left.attribute.as_deref(), Some(EMPLOYER));
    }
}

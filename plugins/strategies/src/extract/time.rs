//! Time expressions. A recurring one ("every morning", "on Mondays", "twice a week")
//! marks a habit; a specific one ("yesterday", "last week", "three days ago") dates an
//! episode.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeKind {
    Recurring,
    Specific,
}

/// A time expression found in a clause: `len` words from word `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TimePhrase {
    pub kind: TimeKind,
    pub start: usize,
    pub len: usize,
}

impl TimePhrase {
    pub fn end(&self) -> usize {
        self.start + self.len
    }
}

const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const MONTHS: &[&str] = &[
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

/// Whether a lowercase word names a weekday or a month (capitalised, yet no name).
pub(super) fn is_calendar_word(word: &str) -> bool {
    WEEKDAYS.contains(&word) || MONTHS.contains(&word)
}

const DAY_PARTS: &[&str] = &["morning", "afternoon", "evening", "night"];
const PERIODS: &[&str] = &[
    "day", "week", "weekend", "weekday", "month", "year", "summer", "winter", "spring", "autumn",
    "fall",
];
const COUNTS: &[&str] = &[
    "a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "few", "couple", "several", "of",
];

fn is_unit(word: &str) -> bool {
    WEEKDAYS.contains(&word) || DAY_PARTS.contains(&word) || PERIODS.contains(&word)
}

fn is_plural_unit(word: &str) -> bool {
    word.strip_suffix('s').is_some_and(is_unit)
}

fn is_count(word: &str) -> bool {
    COUNTS.contains(&word) || word.chars().all(|c| c.is_ascii_digit())
}

/// The time expression that starts `words`, if any, and how many words it spans.
fn match_start(words: &[&str]) -> Option<(TimeKind, usize)> {
    use TimeKind::{Recurring, Specific};
    let matched = match words {
        ["yesterday", part, ..] if DAY_PARTS.contains(part) => (Specific, 2),
        ["the", "day", "before", "yesterday", ..] => (Specific, 4),
        [
            "yesterday" | "today" | "tonight" | "recently" | "lately",
            ..,
        ] => (Specific, 1),
        ["last", unit, ..] if is_unit(unit) => (Specific, 2),
        ["this", "past", unit, ..] if is_unit(unit) => (Specific, 3),
        ["this", unit, ..] if is_unit(unit) => (Specific, 2),
        ["earlier", "today", ..] => (Specific, 2),
        ["earlier", "this", unit, ..] if is_unit(unit) => (Specific, 3),
        ["the", "other", "day", ..] => (Specific, 3),
        ["over", "the", "weekend", ..] => (Specific, 3),
        ["on", day, ..] if WEEKDAYS.contains(day) => (Specific, 2),
        ["in", year, ..]
            if year.len() == 4
                && (year.starts_with("19") || year.starts_with("20"))
                && year.chars().all(|c| c.is_ascii_digit()) =>
        {
            (Specific, 2)
        }
        ["on", unit, ..] if is_plural_unit(unit) => (Recurring, 2),
        ["at", "night" | "weekends", ..] => (Recurring, 2),
        ["in", "the", unit, ..] if is_plural_unit(unit) => (Recurring, 3),
        ["every" | "each", "other" | "single", unit, ..] if is_unit(unit) => (Recurring, 3),
        ["every" | "each", unit, ..] if is_unit(unit) => (Recurring, 2),
        ["most", unit, ..] if is_plural_unit(unit) => (Recurring, 2),
        ["daily" | "nightly" | "weekly" | "monthly" | "everyday", ..] => (Recurring, 1),
        ["once" | "twice", "a" | "per" | "each", unit, ..] if is_unit(unit) => (Recurring, 3),
        [count, "times", "a" | "per" | "each", unit, ..] if is_count(count) && is_unit(unit) => {
            (Recurring, 4)
        }
        _ => return match_ago(words).map(|len| (Specific, len)),
    };
    Some(matched)
}

/// "two days ago", "a few weeks ago", "a couple of months ago".
fn match_ago(words: &[&str]) -> Option<usize> {
    let ago = words.iter().take(6).position(|w| *w == "ago")?;
    let (counts, unit) = (&words[..ago.checked_sub(1)?], words[ago - 1]);
    let plausible = !counts.is_empty()
        && counts.iter().all(|w| is_count(w))
        && (is_unit(unit) || is_plural_unit(unit));
    plausible.then_some(ago + 1)
}

/// Every time expression in `words`, left to right, without overlaps.
pub(super) fn find_all(words: &[&str]) -> Vec<TimePhrase> {
    let mut phrases = Vec::new();
    let mut start = 0;
    while start < words.len() {
        match match_start(&words[start..]) {
            Some((kind, len)) => {
                phrases.push(TimePhrase { kind, start, len });
                start += len;
            }
            None => start += 1,
        }
    }
    phrases
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sentence: &str) -> Vec<(TimeKind, usize, usize)> {
        let words: Vec<&str> = sentence.split(' ').collect();
        find_all(&words)
            .iter()
            .map(|p| (p.kind, p.start, p.len))
            .collect()
    }

    #[test]
    fn finds_recurring_expressions() {
        use TimeKind::Recurring;
        assert_eq!(kinds("every morning i run"), [(Recurring, 0, 2)]);
        assert_eq!(kinds("i go to the gym on mondays"), [(Recurring, 5, 2)]);
        assert_eq!(kinds("i swim twice a week"), [(Recurring, 2, 3)]);
        assert_eq!(kinds("i read 3 times a week"), [(Recurring, 2, 4)]);
        assert_eq!(kinds("most evenings i cook"), [(Recurring, 0, 2)]);
        assert_eq!(kinds("i work at night"), [(Recurring, 2, 2)]);
    }

    #[test]
    fn finds_specific_expressions() {
        use TimeKind::Specific;
        assert_eq!(kinds("yesterday i went hiking"), [(Specific, 0, 1)]);
        assert_eq!(kinds("last week i went to paris"), [(Specific, 0, 2)]);
        assert_eq!(kinds("i moved here a few years ago"), [(Specific, 3, 4)]);
        assert_eq!(kinds("on saturday i ran"), [(Specific, 0, 2)]);
        assert_eq!(kinds("i graduated in 2019"), [(Specific, 2, 2)]);
    }

    #[test]
    fn ignores_words_that_only_look_like_time() {
        assert!(kinds("i like the morning light").is_empty());
        assert!(kinds("ago is a word").is_empty());
        assert!(kinds("i read a book").is_empty());
    }
}

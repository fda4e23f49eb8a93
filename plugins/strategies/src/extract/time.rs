//! Time expressions. A recurring one ("every morning", "on Mondays", "twice a week")
//! marks a habit; a specific one ("yesterday", "last week", "three days ago", "in
//! May") dates an episode; an upcoming one ("tomorrow", "next month", "in two weeks")
//! dates a plan.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeKind {
    Recurring,
    Specific,
    Upcoming,
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

/// Whether a word names a unit of time ("week", "morning", "monday", "days").
pub(super) fn is_time_unit(word: &str) -> bool {
    is_unit(word) || is_plural_unit(word) || MONTHS.contains(&word)
}

fn is_unit(word: &str) -> bool {
    WEEKDAYS.contains(&word) || DAY_PARTS.contains(&word) || PERIODS.contains(&word)
}

fn is_plural_unit(word: &str) -> bool {
    word.strip_suffix('s').is_some_and(is_unit)
}

fn is_count(word: &str) -> bool {
    COUNTS.contains(&word) || word.chars().all(|c| c.is_ascii_digit())
}

fn is_year(word: &str) -> bool {
    word.len() == 4
        && (word.starts_with("19") || word.starts_with("20"))
        && word.chars().all(|c| c.is_ascii_digit())
}

/// A day of the month: "5", "5th", "21st", "the 3rd" is read by the caller.
fn is_day_of_month(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    matches!(suffix, "" | "st" | "nd" | "rd" | "th")
        && (1..=2).contains(&digits.len())
        && digits.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d))
}

/// A month, optionally with its day and year: "may", "may 5", "may 5th 2023", "may
/// 2023". Returns how many words.
fn month_date(words: &[&str]) -> Option<usize> {
    let (month, rest) = words.split_first()?;
    if !MONTHS.contains(month) {
        return None;
    }
    let mut len = 1;
    if rest.first().is_some_and(|w| is_day_of_month(w)) {
        len += 1;
    }
    if words.get(len).is_some_and(|w| is_year(w)) {
        len += 1;
    }
    Some(len)
}

/// The time expression that starts `words`, if any, and how many words it spans.
fn match_start(words: &[&str]) -> Option<(TimeKind, usize)> {
    use TimeKind::{Recurring, Specific, Upcoming};
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
        ["in", year, ..] if is_year(year) => (Specific, 2),
        ["tomorrow", part, ..] if DAY_PARTS.contains(part) => (Upcoming, 2),
        ["the", "day", "after", "tomorrow", ..] => (Upcoming, 4),
        ["tomorrow" | "soon", ..] => (Upcoming, 1),
        ["next", unit, ..] if is_unit(unit) || MONTHS.contains(unit) => (Upcoming, 2),
        ["this", "coming", unit, ..] if is_unit(unit) => (Upcoming, 3),
        ["later", "this", unit, ..] if is_unit(unit) => (Upcoming, 3),
        ["later", "today" | "tonight", ..] => (Upcoming, 2),
        ["in", count, unit, ..]
            if is_count(count) && count != &"of" && (is_unit(unit) || is_plural_unit(unit)) =>
        {
            (Upcoming, 3)
        }
        ["in" | "last" | "since", rest @ ..] if month_date(rest).is_some() => {
            (Specific, 1 + month_date(rest).unwrap_or(0))
        }
        ["on", "the", day, "of", rest @ ..]
            if is_day_of_month(day) && month_date(rest).is_some() =>
        {
            (Specific, 4 + month_date(rest).unwrap_or(0))
        }
        ["on", rest @ ..] if month_date(rest).is_some_and(|len| len > 1) => {
            (Specific, 1 + month_date(rest).unwrap_or(0))
        }
        ["on", unit, ..] if is_plural_unit(unit) => (Recurring, 2),
        // "Sunday mornings are for pickleball", "Saturdays are chaos".
        [day, part, ..] if WEEKDAYS.contains(day) && is_plural_unit(part) => (Recurring, 2),
        [days, ..]
            if days
                .strip_suffix('s')
                .is_some_and(|day| WEEKDAYS.contains(&day)) =>
        {
            (Recurring, 1)
        }
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
    fn finds_calendar_dates() {
        use TimeKind::Specific;
        assert_eq!(kinds("in may i ran a marathon"), [(Specific, 0, 2)]);
        assert_eq!(kinds("i moved here in march 2021"), [(Specific, 3, 3)]);
        assert_eq!(kinds("on may 5th i ran"), [(Specific, 0, 3)]);
        assert_eq!(kinds("on the 3rd of june 2022 we met"), [(Specific, 0, 6)]);
        assert_eq!(kinds("last december i quit"), [(Specific, 0, 2)]);
        // A month's name alone is no date ("may" is a verb too).
        assert!(kinds("i may go").is_empty());
        assert!(kinds("on may i go").is_empty());
    }

    #[test]
    fn finds_upcoming_expressions() {
        use TimeKind::Upcoming;
        assert_eq!(kinds("tomorrow i fly to rome"), [(Upcoming, 0, 1)]);
        assert_eq!(kinds("i start next month"), [(Upcoming, 2, 2)]);
        assert_eq!(kinds("i move next june"), [(Upcoming, 2, 2)]);
        assert_eq!(kinds("we leave in two weeks"), [(Upcoming, 2, 3)]);
        assert_eq!(kinds("i see her later this week"), [(Upcoming, 3, 3)]);
        assert_eq!(kinds("this coming weekend we hike"), [(Upcoming, 0, 3)]);
        assert!(
            kinds("in the mornings i run")
                .iter()
                .all(|k| k.0 != Upcoming)
        );
    }

    #[test]
    fn ignores_words_that_only_look_like_time() {
        assert!(kinds("i like the morning light").is_empty());
        assert!(kinds("ago is a word").is_empty());
        assert!(kinds("i read a book").is_empty());
    }
}

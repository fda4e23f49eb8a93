//! What a transcript hit shows: the sentence of the message that matches the query
//! best, with as much of its neighbours as fits, within a character limit.
//!
//! Sentences end at `.`, `!` or `?` followed by a space, or at a line break. A
//! sentence scores one point per distinct query stem it holds (stems from
//! `engram_strategies::text`, the analyser retrieval and extraction share); the best
//! one (the earliest on a tie) is kept whole when it fits, then the sentences after
//! and before it join while they fit. A sentence longer than the limit is cut to a
//! window of words around its first match, with `…` where text was left out.

use std::collections::BTreeSet;

use engram_strategies::analyser;

const ELLIPSIS: char = '…';

/// The query stems a sentence is scored against.
pub fn stems(terms: &[String]) -> BTreeSet<String> {
    terms.iter().map(|t| analyser::stem(t)).collect()
}

/// The best part of `content` for `stems`, at most `max_chars` characters (`max_chars`
/// below 2 gives an empty string). Whitespace runs are collapsed to one space.
pub fn snippet(content: &str, stems: &BTreeSet<String>, max_chars: usize) -> String {
    let sentences = sentences(content);
    if sentences.is_empty() || max_chars < 2 {
        return String::new();
    }
    let scores: Vec<usize> = sentences.iter().map(|s| score(s, stems)).collect();
    let best = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i);
    let len = |s: &str| s.chars().count();
    if len(&sentences[best]) > max_chars {
        return cut(&sentences[best], stems, max_chars);
    }
    let (mut first, mut last) = (best, best);
    let mut used = len(&sentences[best]);
    loop {
        let mut grew = false;
        if last + 1 < sentences.len() && used + 1 + len(&sentences[last + 1]) <= max_chars {
            last += 1;
            used += 1 + len(&sentences[last]);
            grew = true;
        }
        if first > 0 && used + 1 + len(&sentences[first - 1]) <= max_chars {
            first -= 1;
            used += 1 + len(&sentences[first]);
            grew = true;
        }
        if !grew {
            break;
        }
    }
    let mut out = sentences[first..=last].join(" ");
    // Text left out after the kept sentences is marked when a character is left for
    // the mark; before them the capital of a sentence start shows it well enough.
    if last + 1 < sentences.len() && len(&out) < max_chars {
        out.push(ELLIPSIS);
    }
    out
}

/// The sentences of `content`, whitespace collapsed, empty ones dropped.
fn sentences(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in content.lines() {
        let mut current = String::new();
        let mut chars = line.split_whitespace().peekable();
        while let Some(word) = chars.next() {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
            let ends = word.ends_with(['.', '!', '?']) && chars.peek().is_some();
            if ends {
                out.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// Distinct query stems among the sentence's words.
fn score(sentence: &str, stems: &BTreeSet<String>) -> usize {
    let found: BTreeSet<String> = analyser::words(sentence)
        .iter()
        .map(|w| analyser::stem(w))
        .filter(|s| stems.contains(s))
        .collect();
    found.len()
}

/// A window of whole words around the first word that matches, `…` marking what was
/// left out on either side, at most `max_chars`.
fn cut(sentence: &str, stems: &BTreeSet<String>, max_chars: usize) -> String {
    let words: Vec<&str> = sentence.split(' ').collect();
    let matches = |w: &str| {
        analyser::words(w)
            .iter()
            .any(|p| stems.contains(&analyser::stem(p)))
    };
    let anchor = words.iter().position(|w| matches(w)).unwrap_or(0);
    let len = |w: &str| w.chars().count();
    // Room for the marks on both sides, given back when a side reaches the end.
    let budget = max_chars.saturating_sub(2);
    let (mut first, mut last) = (anchor, anchor);
    let mut used = len(words[anchor]);
    if used > budget {
        // One word longer than the limit: its start, and the mark after it.
        let head: String = words[anchor].chars().take(max_chars - 1).collect();
        return format!("{head}{ELLIPSIS}");
    }
    // Grow mostly forward: a sentence reads on from its match.
    loop {
        let mut grew = false;
        for _ in 0..2 {
            if last + 1 < words.len() && used + 1 + len(words[last + 1]) <= budget {
                last += 1;
                used += 1 + len(words[last]);
                grew = true;
            }
        }
        if first > 0 && used + 1 + len(words[first - 1]) <= budget {
            first -= 1;
            used += 1 + len(words[first]);
            grew = true;
        }
        if !grew {
            break;
        }
    }
    let mut out = String::new();
    if first > 0 {
        out.push(ELLIPSIS);
    }
    out.push_str(&words[first..=last].join(" "));
    if last + 1 < words.len() {
        out.push(ELLIPSIS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(words: &[&str]) -> BTreeSet<String> {
        stems(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn keeps_the_best_sentence_and_its_neighbours_that_fit() {
        let content = "Hey Mel! Good to see you. I went to a support group yesterday and it was so powerful. The stories were inspiring.";
        let q = query(&["support", "group"]);
        assert_eq!(snippet(content, &q, 500), content.replace("  ", " "));
        assert_eq!(
            snippet(content, &q, 60),
            "I went to a support group yesterday and it was so powerful.…"
        );
        let with_next = snippet(content, &q, 100);
        assert_eq!(
            with_next,
            "I went to a support group yesterday and it was so powerful. The stories were inspiring."
        );
        for max in [10, 30, 61, 99, 150, 200] {
            assert!(snippet(content, &q, max).chars().count() <= max, "{max}");
        }
    }

    #[test]
    fn stems_match_other_forms_of_the_query_words() {
        let content = "We talked about lunch. She was painting sunsets all summer.";
        assert_eq!(
            snippet(content, &query(&["paints", "sunset"]), 40),
            "She was painting sunsets all summer."
        );
    }

    #[test]
    fn a_long_sentence_is_cut_around_its_match() {
        let content = format!(
            "{} the trip to Lisbon was lovely {}",
            "word ".repeat(40),
            "more ".repeat(40)
        );
        let cut = snippet(&content, &query(&["lisbon"]), 60);
        assert!(cut.chars().count() <= 60, "{cut}");
        assert!(cut.contains("Lisbon"), "{cut}");
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
    }

    #[test]
    fn odd_inputs_give_bounded_text() {
        assert_eq!(snippet("", &query(&["x"]), 100), "");
        assert_eq!(snippet("   \n  ", &query(&["x"]), 100), "");
        assert_eq!(snippet("hello", &query(&["x"]), 1), "");
        let giant = "a".repeat(500);
        let cut = snippet(&giant, &query(&["a"]), 50);
        assert_eq!(cut.chars().count(), 50);
        assert!(
            snippet("日本語のテキスト。🙂🙂🙂", &query(&["x"]), 5)
                .chars()
                .count()
                <= 5
        );
    }
}

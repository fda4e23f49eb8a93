//! Fact comparison, shared by the strategies and the host: negation detection and the
//! comparisons the conflict rules rest on, over the words and stems of
//! [`crate::analyser`].
//!
//! Everything here works on one-sentence fact summaries ("User likes coffee",
//! "User does not like coffee", "User's sister is Anna"). A summary is reduced to a
//! [`Fact`]: its *core* (the stemmed content words, with stop words, negation markers
//! and sentiment verbs taken out) and its *polarity* (whether it states the fact
//! negatively). Two summaries are the same fact when their cores match, and oppose
//! each other when their cores match but their polarities differ.

use std::collections::BTreeSet;

use crate::analyser::{self, stem, words};

/// Jaccard similarity of two cores at or above which they count as the same fact.
/// High enough that small cores (two or three words) must match exactly, so that
/// "User likes coffee" and "User likes tea" never count as the same fact, while long
/// cores may differ by one word in five.
pub const SAME_FACT_SIMILARITY: f32 = 0.8;

/// A summary reduced to what the conflict rules compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// Stemmed content words, sorted and deduplicated.
    pub core: BTreeSet<String>,
    /// Whether the summary states the fact negatively ("does not like", "hates",
    /// "stopped drinking").
    pub negative: bool,
}

/// Words every fact summary carries ("User ...", "a friend named Anna"): not stop
/// words in general, but no fact content here.
const FACT_WORDS: &[&str] = &["called", "named", "user", "users"];

/// Words that negate the statement they are in.
const NEGATION_WORDS: &[&str] = &["not", "no", "never", "cannot", "neither"];

/// Verbs of giving something up: "stopped drinking coffee" negates "drinks coffee".
const CESSATION_WORDS: &[&str] = &["stopped", "quit", "ceased", "quitting", "stopping"];

/// Sentiment verbs are reduced to one core word, "like", with a polarity, so that
/// "loves coffee", "likes coffee", "hates coffee" and "can't stand coffee" share a
/// core and the negative ones oppose the positive ones.
const POSITIVE_SENTIMENT: &[&str] = &[
    "like", "likes", "liked", "liking", "love", "loves", "loved", "loving", "enjoy", "enjoys",
    "enjoyed", "enjoying", "adore", "adores", "adored", "fond",
];
const NEGATIVE_SENTIMENT: &[&str] = &[
    "hate", "hates", "hated", "hating", "dislike", "dislikes", "disliked", "detest", "detests",
    "detested", "loathe", "loathes", "loathed",
];
const SENTIMENT_CORE: &str = "like";

fn is_stop_word(word: &str) -> bool {
    analyser::is_stop_word(word) || FACT_WORDS.contains(&word)
}

/// What one pass over a summary's words finds.
struct Scan {
    core: BTreeSet<String>,
    /// Negation words and verbs of giving up.
    negations: usize,
    /// Whether the dislike verbs, counted alone, make the statement negative.
    negative_sentiment: bool,
}

fn scan(summary: &str) -> Scan {
    let words = words(summary);
    let mut scan = Scan {
        core: BTreeSet::new(),
        negations: 0,
        negative_sentiment: false,
    };
    let mut index = 0;
    while index < words.len() {
        let word = words[index].as_str();
        let next = words.get(index + 1).map(String::as_str);
        // "cannot stand" is dislike, not negation.
        if word == "cannot" && next == Some("stand") {
            scan.core.insert(SENTIMENT_CORE.to_owned());
            scan.negative_sentiment = !scan.negative_sentiment;
            index += 2;
            continue;
        }
        // "not only ... but also" and "not just" add to what is said, they deny nothing.
        if word == "not" && matches!(next, Some("only" | "just" | "merely" | "simply")) {
            index += 2;
            continue;
        }
        if matches!(word, "gave" | "give" | "given" | "giving") && next == Some("up") {
            scan.negations += 1;
            index += 2;
            continue;
        }
        if NEGATION_WORDS.contains(&word) || CESSATION_WORDS.contains(&word) {
            scan.negations += 1;
        } else if POSITIVE_SENTIMENT.contains(&word) {
            scan.core.insert(SENTIMENT_CORE.to_owned());
        } else if NEGATIVE_SENTIMENT.contains(&word) {
            scan.core.insert(SENTIMENT_CORE.to_owned());
            scan.negative_sentiment = !scan.negative_sentiment;
        } else if !is_stop_word(word) {
            scan.core.insert(stem(word));
        }
        index += 1;
    }
    scan
}

/// Reduces a summary to its [`Fact`]. `negated` is the stored flag: it decides the
/// polarity only when the text itself shows none (no negation word, no dislike verb),
/// so that a correctly flagged "User hates coffee" is not read as a double negative,
/// while a terse summary flagged as negated is still negative.
pub fn analyse(summary: &str, negated: bool) -> Fact {
    let scan = scan(summary);
    let negated_form = scan.negations % 2 == 1;
    let negative = if scan.negations > 0 || scan.negative_sentiment {
        negated_form != scan.negative_sentiment
    } else {
        negated
    };
    Fact {
        core: scan.core,
        negative,
    }
}

/// Whether a summary is stated in negated form: it holds an odd number of negation
/// words ("not", "no", "never", "cannot", "neither") or verbs of giving something up
/// ("stopped", "quit", "gave up"). Dislike verbs ("hates", "can't stand") are not
/// negation: they state a preference positively.
pub fn is_negated(summary: &str) -> bool {
    scan(summary).negations % 2 == 1
}

/// The stemmed content words of `s`: [`Fact::core`] without the polarity.
pub fn content_words(s: &str) -> BTreeSet<String> {
    analyse(s, false).core
}

/// Token Jaccard similarity of two texts over their content words (stemmed, stop
/// words, negation and sentiment polarity removed), in 0.0..=1.0. It measures how
/// much two texts are about the same thing, not whether they agree: "User likes
/// coffee" and "User hates coffee" score 1.0.
pub fn similarity(a: &str, b: &str) -> f32 {
    jaccard(&content_words(a), &content_words(b))
}

/// Jaccard similarity of two word sets; 0.0 when both are empty.
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

impl Fact {
    /// Whether the two facts are about the same thing, whatever their polarity: equal
    /// cores, or cores at least [`SAME_FACT_SIMILARITY`] alike. An empty core is about
    /// nothing.
    pub fn same_subject(&self, other: &Fact) -> bool {
        !self.core.is_empty()
            && (self.core == other.core || jaccard(&self.core, &other.core) >= SAME_FACT_SIMILARITY)
    }

    /// The same subject with the same polarity.
    pub fn same_fact(&self, other: &Fact) -> bool {
        self.same_subject(other) && self.negative == other.negative
    }
}

/// Whether two summaries state the same fact with the same polarity, judged from
/// their text alone: "User likes coffee" and "User loves coffee" are the same fact;
/// "User likes coffee" and "User does not like coffee" are not (they oppose).
pub fn same_fact(a: &str, b: &str) -> bool {
    analyse(a, false).same_fact(&analyse(b, false))
}

/// Whether two facts contradict each other. Symmetric. `a_negated` and `b_negated`
/// are the stored negation flags (see [`analyse`] for how they combine with the
/// text). Two kinds of contradiction are detected:
///
/// - the same fact with opposite polarity: "User likes coffee" vs "User does not like
///   coffee", "User no longer likes coffee", "User hates coffee"; "User drinks coffee"
///   vs "User stopped drinking coffee";
/// - two different values of an attribute a person has only one of at a time: "User's
///   name is Sam" vs "User's name is Alex", "User lives in Berlin" vs "User lives in
///   Paris", "User works as a nurse" vs "User works as a pilot". A value that only
///   adds to the other ("Berlin" vs "Berlin, Germany") is more detail, not a
///   contradiction.
pub fn opposes(a: &str, a_negated: bool, b: &str, b_negated: bool) -> bool {
    let (fact_a, fact_b) = (analyse(a, a_negated), analyse(b, b_negated));
    if fact_a.same_subject(&fact_b) {
        return fact_a.negative != fact_b.negative;
    }
    if fact_a.negative || fact_b.negative {
        return false;
    }
    match (single_valued_attribute(a), single_valued_attribute(b)) {
        (Some((attr_a, value_a)), Some((attr_b, value_b))) if attr_a == attr_b => {
            !value_a.is_empty() && !value_b.is_empty() && value_a.is_disjoint(&value_b)
        }
        _ => false,
    }
}

/// Attributes of the user that hold one value at a time, as normalized word prefixes
/// following the subject.
const SINGLE_VALUED_ATTRIBUTES: &[&[&str]] = &[
    &["name", "is"],
    &["lives", "in"],
    &["live", "in"],
    &["works", "as"],
    &["work", "as"],
];

/// `(attribute, value content words)` when `summary` states a single-valued attribute
/// of the user ("User lives in Berlin" -> `("live in", {"berlin"})`).
fn single_valued_attribute(summary: &str) -> Option<(String, BTreeSet<String>)> {
    let words = words(summary);
    let subject_len = words
        .iter()
        .take_while(|w| matches!(w.as_str(), "the" | "user" | "users" | "i" | "my"))
        .count();
    let rest = &words[subject_len..];
    SINGLE_VALUED_ATTRIBUTES.iter().find_map(|prefix| {
        if rest.len() > prefix.len() && rest.iter().zip(prefix.iter()).all(|(w, p)| w == p) {
            let attribute = prefix.iter().map(|w| stem(w)).collect::<Vec<_>>().join(" ");
            let value = rest[prefix.len()..]
                .iter()
                .filter(|w| !is_stop_word(w))
                .map(|w| stem(w))
                .collect();
            Some((attribute, value))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_negated_detects_negation_but_not_dislike() {
        assert!(is_negated("User does not like coffee"));
        assert!(is_negated("User doesn't like coffee"));
        assert!(is_negated("User no longer likes coffee"));
        assert!(is_negated("User stopped drinking coffee"));
        assert!(is_negated("User never eats pork"));
        assert!(is_negated("User cannot eat gluten"));
        assert!(is_negated("User gave up sugar"));
        assert!(!is_negated("User likes coffee"));
        assert!(!is_negated(
            "Tim has not only met LeBron but also seen him play live"
        ));
        assert!(!is_negated(
            "User is not just a fan of Rust, she teaches it"
        ));
        assert!(is_negated(
            "User is not only vegetarian, she is not eating fish either"
        ));
        assert!(!is_negated("User hates coffee"));
        assert!(!is_negated("User can't stand mushrooms"));
        assert!(!is_negated("User is allergic to peanuts"));
        // Two negations cancel out.
        assert!(!is_negated("User never stopped running"));
    }

    #[test]
    fn opposes_detects_negation_pairs_symmetrically() {
        let pairs = [
            (
                "User likes coffee",
                false,
                "User does not like coffee",
                true,
            ),
            ("I like coffee", false, "I don't like coffee", true),
            (
                "User likes coffee",
                false,
                "User no longer likes coffee",
                true,
            ),
            (
                "User drinks coffee",
                false,
                "User stopped drinking coffee",
                true,
            ),
            ("User loves coffee", false, "User hates coffee", false),
            ("User likes coffee", false, "User can't stand coffee", false),
            (
                "User always drinks coffee",
                false,
                "User never drinks coffee",
                true,
            ),
            (
                "User is vegetarian",
                false,
                "User is no longer vegetarian",
                true,
            ),
            (
                "User never stopped running",
                false,
                "User stopped running",
                true,
            ),
        ];
        for (a, a_neg, b, b_neg) in pairs {
            assert!(opposes(a, a_neg, b, b_neg), "{a} vs {b}");
            assert!(opposes(b, b_neg, a, a_neg), "{b} vs {a}");
        }
    }

    #[test]
    fn opposes_uses_the_flag_only_when_the_text_shows_no_polarity() {
        // A summary flagged as negated is negative even when its text shows no sign.
        assert!(opposes(
            "User: coffee drinker",
            true,
            "User coffee drinker",
            false
        ));
        // A dislike flagged as negated is not read as a double negative.
        assert!(opposes(
            "User hates coffee",
            true,
            "User likes coffee",
            false
        ));
        // Same flags, same text: no contradiction.
        assert!(!opposes(
            "User likes coffee",
            true,
            "User likes coffee",
            true
        ));
    }

    #[test]
    fn opposes_rejects_different_facts_and_agreeing_facts() {
        assert!(!opposes(
            "User likes coffee",
            false,
            "User likes coffee",
            false
        ));
        assert!(!opposes(
            "User likes coffee",
            false,
            "User does not like tea",
            true
        ));
        assert!(!opposes(
            "User hates coffee",
            false,
            "User does not like coffee",
            true
        ));
        assert!(!opposes(
            "User likes milk",
            false,
            "User does not like milk chocolate",
            true
        ));
        assert!(!opposes("", false, "", true));
    }

    #[test]
    fn opposes_detects_single_valued_attribute_changes() {
        assert!(opposes(
            "User's name is Sam",
            false,
            "User's name is Alex",
            false
        ));
        assert!(opposes(
            "User lives in Berlin",
            false,
            "User lives in Paris",
            false
        ));
        assert!(opposes(
            "User works as a nurse",
            false,
            "User works as a pilot",
            false
        ));
        assert!(!opposes(
            "User lives in Berlin",
            false,
            "User lives in Berlin, Germany",
            false
        ));
        assert!(!opposes(
            "User lives in Berlin",
            false,
            "User works as a pilot",
            false
        ));
    }

    #[test]
    fn same_fact_ignores_wording_but_not_polarity() {
        assert!(same_fact("User likes coffee", "User loves coffee"));
        assert!(same_fact(
            "User likes coffee",
            "The user really likes coffee."
        ));
        assert!(same_fact(
            "User's sister is Anna",
            "User has a sister named Anna"
        ));
        assert!(!same_fact("User likes coffee", "User does not like coffee"));
        assert!(!same_fact("User likes coffee", "User likes tea"));
        assert!(!same_fact("", ""));
    }

    #[test]
    fn similarity_is_token_jaccard_over_content_words() {
        assert_eq!(similarity("User likes coffee", "User likes coffee"), 1.0);
        let partial = similarity(
            "User is building a budgeting app",
            "User is building a budgeting app in Rust",
        );
        assert!((partial - 0.75).abs() < 1e-6, "{partial}");
        assert_eq!(similarity("User likes coffee", "User plays chess"), 0.0);
        assert_eq!(similarity("", ""), 0.0);
    }
}

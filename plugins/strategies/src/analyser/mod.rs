//! The one text analyser: how Engram turns text into words and terms, everywhere it
//! compares text (memory retrieval, the fact store's search, intent routing, the
//! registry feed's search, and the strategies' fact comparison).
//!
//! - [`words`]: lower-cased words; English contractions expanded ("don't" -> "do
//!   not"), possessive "'s" dropped, anything not a letter or digit a separator.
//!   [`identifier_words`] also splits `camelCase` and `HTTPServer` (names, slugs).
//! - [`is_stop_word`]: English function words, hedges and frequency adverbs: how
//!   something is said, not what about. Negation words are among them: callers that
//!   care about polarity (the conflict rules) look for negation before they drop stop
//!   words. [`is_request_phrasing`]: how a request is put ("please", "help", "find"),
//!   dropped from queries only.
//! - [`stem`]: irregular past forms to their base ("went" -> "go"), then Porter (1980),
//!   so that "likes", "liked" and "liking" meet, and so do "ran" and "running".
//! - [`terms`] and [`query_terms`]: the words that can match, stemmed: what indexes
//!   and queries hold.
//!
//! It lives in this crate because the strategies, compiled to WebAssembly, need it as
//! much as the host does.

mod porter;

/// Lower-cases `s`, expands English contractions ("don't" -> "do not", "can't" ->
/// "cannot", "I'm" -> "i am"), drops possessive "'s", turns every other
/// non-alphanumeric character into a space and collapses whitespace.
///
/// `normalize("I don't like Anna's coffee!") == "i do not like anna coffee"`.
pub fn normalize(s: &str) -> String {
    let lowered: String = s
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '`' | '\u{b4}' => '\'',
            c if c.is_alphanumeric() || c == '\'' => c,
            _ => ' ',
        })
        .collect();
    let mut out = String::with_capacity(lowered.len());
    for word in lowered.split_whitespace() {
        for part in expand_contraction(word.trim_matches('\'')) {
            if part.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&part);
        }
    }
    out
}

/// The words of `normalize(s)`.
pub fn words(s: &str) -> Vec<String> {
    normalize(s).split_whitespace().map(str::to_owned).collect()
}

/// Expands one lower-case word that may carry an apostrophe.
pub fn expand_contraction(word: &str) -> Vec<String> {
    let special = match word {
        "can't" | "cant" => Some("cannot"),
        "won't" | "wont" => Some("will not"),
        "shan't" => Some("shall not"),
        "i'm" | "im" => Some("i am"),
        "don't" | "dont" => Some("do not"),
        "doesn't" | "doesnt" => Some("does not"),
        "didn't" | "didnt" => Some("did not"),
        _ => None,
    };
    if let Some(expanded) = special {
        return expanded.split(' ').map(str::to_owned).collect();
    }
    let suffixes: [(&str, &str); 6] = [
        ("n't", "not"),
        ("'re", "are"),
        ("'ve", "have"),
        ("'ll", "will"),
        ("'d", "would"),
        ("'m", "am"),
    ];
    for (suffix, expansion) in suffixes {
        if let Some(stem) = word.strip_suffix(suffix) {
            return vec![stem.replace('\'', ""), expansion.to_owned()];
        }
    }
    // Possessive or "is": neither carries meaning for fact comparison.
    let word = word.strip_suffix("'s").unwrap_or(word);
    vec![word.replace('\'', "")]
}

/// [`words`], with `camelCase` and `HTTPServer` also split where the case changes:
/// for names written as identifiers.
pub fn identifier_words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut split = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                split.push(' ');
            }
        }
        split.push(c);
    }
    words(&split)
}

/// The terms of `s`: its words that are not stop words, stemmed, in order.
pub fn terms(s: &str) -> Vec<String> {
    words(s)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// Whether `word` (lower case, as [`words`] gives it) is a function word: an article,
/// pronoun, auxiliary, preposition, conjunction, hedge or frequency adverb. It says how
/// something is said, not what about.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Whether `word` is how a request or a question is phrased ("please", "help",
/// "tell", "find", "want", "thanks"): noise in a query, meaning in a stored fact
/// ("wants a dog" is not "has a dog"), so only query-side callers drop it.
pub fn is_request_phrasing(word: &str) -> bool {
    REQUEST_PHRASING.binary_search(&word).is_ok()
}

/// The words of a query that can match: its words that are neither stop words nor
/// request phrasing, stemmed, in order.
pub fn query_terms(s: &str) -> Vec<String> {
    query_words(s).iter().map(|w| stem(w)).collect()
}

/// [`query_terms`] before stemming: for a consumer that stems on its own (FTS5's
/// porter tokenizer) or wants the surface form (word embeddings).
///
/// `query_words("What did Anna say about the trips?") == ["anna", "trips"]`.
pub fn query_words(s: &str) -> Vec<String> {
    words(s)
        .into_iter()
        .filter(|w| !is_stop_word(w) && !is_request_phrasing(w))
        .collect()
}

/// Sorted, so that [`is_request_phrasing`] is a binary search.
const REQUEST_PHRASING: &[&str] = &[
    "anything",
    "find",
    "get",
    "gets",
    "getting",
    "give",
    "got",
    "hello",
    "help",
    "helping",
    "helps",
    "hey",
    "hi",
    "kindly",
    "know",
    "let",
    "lets",
    "like",
    "lot",
    "lots",
    "maybe",
    "need",
    "needs",
    "please",
    "provide",
    "say",
    "says",
    "show",
    "something",
    "sure",
    "tell",
    "thank",
    "thanks",
    "thing",
    "things",
    "want",
    "wants",
    "way",
    "well",
    "yes",
];

/// Sorted, so that [`is_stop_word`] is a binary search.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "actually",
    "after",
    "again",
    "against",
    "all",
    "already",
    "also",
    "always",
    "am",
    "an",
    "and",
    "any",
    "anymore",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "couldn",
    "currently",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "either",
    "else",
    "etc",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "frequently",
    "from",
    "further",
    "generally",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "id",
    "if",
    "im",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "ive",
    "just",
    "ll",
    "longer",
    "m",
    "many",
    "may",
    "me",
    "might",
    "mine",
    "more",
    "most",
    "much",
    "must",
    "mustn",
    "my",
    "myself",
    "no",
    "nor",
    "normally",
    "not",
    "now",
    "o",
    "of",
    "off",
    "often",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "others",
    "otherwise",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "per",
    "pretty",
    "quite",
    "rarely",
    "rather",
    "re",
    "really",
    "regularly",
    "s",
    "same",
    "seldom",
    "shall",
    "shan",
    "she",
    "should",
    "shouldn",
    "since",
    "so",
    "some",
    "sometimes",
    "still",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "through",
    "thus",
    "to",
    "too",
    "typically",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "usually",
    "ve",
    "very",
    "via",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "whatever",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "won",
    "would",
    "wouldn",
    "y",
    "yet",
    "you",
    "your",
    "youre",
    "yours",
    "yourself",
    "yourselves",
];

/// Invariant words Porter would otherwise mangle (`news` -> `new`).
const INVARIANT: &[&str] = &["always", "atlas", "bias", "cosmos", "news", "sky"];

/// A word's stem: the base of an irregular past form, then Porter's rules (lowercase
/// ASCII words of three letters or more; other words are left as they are).
pub fn stem(word: &str) -> String {
    let word = irregular_base(word).unwrap_or(word);
    if word.len() <= 2 || !word.bytes().all(|b| b.is_ascii_lowercase()) || INVARIANT.contains(&word)
    {
        return word.to_string();
    }
    let mut w: Vec<u8> = word.as_bytes().to_vec();
    porter::step1ab(&mut w);
    porter::step1c(&mut w);
    porter::step2(&mut w);
    porter::step3(&mut w);
    porter::step4(&mut w);
    porter::step5(&mut w);
    // Porter leaves "goes" as "goe" and "does" as "doe"; a final "oe" drops its "e" so
    // the third person meets the base ("shoe" and "shoes" still meet each other).
    if w.ends_with(b"oe") {
        w.pop();
    }
    String::from_utf8(w).unwrap_or_else(|_| word.to_string())
}

/// Irregular past forms and participles with their base form, for stemming and for
/// telling past tense from present. Regular forms are left to Porter's rules.
const IRREGULAR_PAST: &[(&str, &str)] = &[
    ("ate", "eat"),
    ("eaten", "eat"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bought", "buy"),
    ("broke", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("came", "come"),
    ("caught", "catch"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("did", "do"),
    ("done", "do"),
    ("drank", "drink"),
    ("drunk", "drink"),
    ("drove", "drive"),
    ("driven", "drive"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("flew", "fly"),
    ("forgot", "forget"),
    ("found", "find"),
    ("gave", "give"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("had", "have"),
    ("heard", "hear"),
    ("held", "hold"),
    ("kept", "keep"),
    ("knew", "know"),
    ("led", "lead"),
    ("left", "leave"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("met", "meet"),
    ("paid", "pay"),
    ("quit", "quit"),
    ("ran", "run"),
    ("rode", "ride"),
    ("sang", "sing"),
    ("sat", "sit"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("slept", "sleep"),
    ("sold", "sell"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("stood", "stand"),
    ("swam", "swim"),
    ("taught", "teach"),
    ("took", "take"),
    ("taken", "take"),
    ("thought", "think"),
    ("told", "tell"),
    ("went", "go"),
    ("woke", "wake"),
    ("was", "be"),
    ("were", "be"),
    ("won", "win"),
    ("wore", "wear"),
    ("wrote", "write"),
    ("written", "write"),
];

/// The base form of an irregular past form or participle, if `word` is one.
pub fn irregular_base(word: &str) -> Option<&'static str> {
    IRREGULAR_PAST
        .iter()
        .find(|(form, _)| *form == word)
        .map(|(_, base)| *base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(REQUEST_PHRASING.windows(2).all(|w| w[0] < w[1]));
        assert!(!STOP_WORDS.iter().any(|w| REQUEST_PHRASING.contains(w)));
    }

    #[test]
    fn words_expand_contractions_and_identifiers_split_at_case_changes() {
        assert_eq!(
            words("I don't like Anna's coffee!"),
            ["i", "do", "not", "like", "anna", "coffee"]
        );
        assert_eq!(
            identifier_words("airQualityForecast HTTPServer v2Api"),
            ["air", "quality", "forecast", "http", "server", "v2", "api"]
        );
    }

    #[test]
    fn stems_meet_across_forms_and_irregular_verbs() {
        for (a, b) in [
            ("likes", "liking"),
            ("connection", "connected"),
            ("went", "going"),
            ("ran", "running"),
            ("studies", "studied"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_eq!(stem("news"), "news");
        assert_ne!(stem("coffee"), stem("tea"));
    }

    #[test]
    fn query_terms_drop_phrasing_that_stored_terms_keep() {
        assert_eq!(
            query_terms("Please help me find the weather forecasts"),
            ["weather", "forecast"]
        );
        assert_eq!(
            query_words("What did Anna say about the trips?"),
            ["anna", "trips"]
        );
        assert_eq!(terms("User wants a dog"), ["user", "want", "dog"]);
    }

    #[test]
    fn normalize_expands_contractions_and_drops_punctuation() {
        assert_eq!(
            normalize("I don't like Anna's coffee!"),
            "i do not like anna coffee"
        );
        assert_eq!(normalize("I can’t stand it"), "i cannot stand it");
        assert_eq!(
            normalize("I'm fine, I've   been busy"),
            "i am fine i have been busy"
        );
        assert_eq!(
            normalize("She won't go; gluten-free"),
            "she will not go gluten free"
        );
        assert_eq!(normalize("  "), "");
    }

    #[test]
    fn stem_joins_forms_of_a_word() {
        for (a, b) in [
            ("likes", "like"),
            ("liked", "liking"),
            ("drinks", "drinking"),
            ("mornings", "morning"),
            ("running", "runs"),
            ("went", "go"),
            ("goes", "going"),
            ("studies", "studied"),
            ("coffees", "coffee"),
            ("watches", "watch"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
        assert_ne!(stem("coffee"), stem("tea"));
        assert_eq!(stem("pass"), "pass");
        assert_eq!(stem("bus"), "bus");
    }

    #[test]
    fn porter_stems_like_the_reference() {
        for (word, stemmed) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("agreed", "agre"),
            ("motoring", "motor"),
            ("hopping", "hop"),
            ("relational", "relat"),
            ("generalizations", "gener"),
            ("oscillators", "oscil"),
            ("happy", "happi"),
            ("forecasts", "forecast"),
            ("news", "news"),
            ("électricité", "électricité"),
        ] {
            assert_eq!(stem(word), stemmed, "{word}");
        }
    }
}

//! The lexical baselines' queries and tokenizers, shared so that "plain FTS5" and "the
//! tuned lexical search" mean the same in every bench (benches/brain.rs, benches/truth.rs).
//! Nothing of Engram's retrieval is in them: SQLite FTS5 and the analyser's stop words
//! only, so that a change to `host/src/brain/retrieve.rs` moves Engram's figure and never
//! its baseline.

use engram_strategies::analyser;

/// FTS5's default tokenizer: what "plain FTS5" means in the baselines.
pub const PLAIN_TOKENIZER: &str = "unicode61";
/// The Second Brain's tokenizer (host/src/brain/schema.rs): the tuned lexical search's.
pub const PORTER_TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

/// Every word of `text`, quoted (so no word is FTS5 syntax) and OR-ed: the plainest
/// query that still ranks partial matches. `None` when the text has no word.
pub fn or_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// The tuned lexical query: the content words of `text` (the analyser's stop words and
/// request phrasing dropped, as Engram reads a query), OR-ed. `None` when none is left.
pub fn content_query(text: &str) -> Option<String> {
    or_query(&analyser::query_words(text).join(" "))
}

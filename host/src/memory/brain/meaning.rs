//! Closeness in meaning for retrieval and search: the static word embeddings distilled
//! from all-MiniLM-L6-v2 that are compiled into the binary for routing
//! (`assets/minilm`, `crate::embed`). A text's vector is the mean of its content words' rows
//! ([`query_words`]: the same words the full-text query uses),
//! so computing one is a table lookup per token, no model run: cheap enough to embed
//! every full-text candidate of a retrieval on the fly, which is why no vector is
//! stored (the benchmark measured no gain from scoring beyond the candidates).

use engram_strategies::analyser;

use crate::embed;

/// The words of a query the full-text indexes and the meaning read: the analyser's
/// query words (unstemmed: FTS5 stems with its own porter tokenizer, and the
/// embeddings want the surface form), or all its words when none is left ("is it
/// there?"), so that it still matches something.
pub fn query_words(text: &str) -> Vec<String> {
    let kept = analyser::query_words(text);
    if kept.is_empty() {
        analyser::words(text)
    } else {
        kept
    }
}

/// A query's unit vector, or `None` when none of its words is known.
pub fn vector(terms: &[String]) -> Option<Vec<f32>> {
    embed::embeddings().embed(terms)
}

/// The cosine of `query` and `text`'s content words, 0 when it is negative or the
/// text has no known word.
pub fn closeness(query: &[f32], text: &str) -> f64 {
    embed::embeddings()
        .embed(&query_words(text))
        .map_or(0.0, |v| f64::from(embed::dot(query, &v).max(0.0)))
}

/// The cosine of two texts' content words, 0 when either has no known word.
pub fn similarity(a: &str, b: &str) -> f32 {
    let embeddings = embed::embeddings();
    let vector = |text: &str| embeddings.embed(&query_words(text));
    match (vector(a), vector(b)) {
        (Some(a), Some(b)) => embed::dot(&a, &b),
        _ => 0.0,
    }
}

/// What a memory's summary is about, for its meaning: without the subject "User"
/// (or "User's") the extractors start summaries with. The word stands for the
/// speaker, never for a topic, and a query does not say it: left in, it would pull
/// every memory's vector away from the query's, and a message saying the same
/// without it would outrank the memory.
pub fn about(summary: &str) -> &str {
    ["User's ", "User "]
        .iter()
        .find_map(|subject| summary.strip_prefix(subject))
        .unwrap_or(summary)
}

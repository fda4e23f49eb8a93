//! Retrieval before each message: the memories to inject into the agent's context.
//!
//! 1. Full-text candidates (FTS5 bm25 over summary and detail, porter-stemmed, stop
//!    words dropped from the query, and words common in the index dropped too unless
//!    that leaves fewer than 5 matches), live memories of both tiers.
//! 2. Conscious matches are ranked by a blend of relevance (bm25 relative to the best
//!    match), importance, confidence and recency; stale ones count for less.
//! 3. When the conscious results are weak (none, or none close to the best match) a
//!    subconscious memory that matches strongly is recalled: promoted back to the scope
//!    it had before (`prior_scope`, default active) and ranked with the others.
//! 4. The top memories are rendered one per line and kept while the block fits the
//!    budget: at most 5 lines, at most 900 characters in all (newlines included). A
//!    memory whose line does not fit is skipped in favour of the next one.
//! 5. Every returned memory gets `last_used_at = now` (and loses its stale mark).
//!
//! Line format: `- [<type>] <summary>`, for example `- [preference] User likes green tea`.

use engram_strategies::model::Scope;

use super::record::MemoryRecord;
use super::store::{StoreError, TextMatch, q};
use super::{ACTOR_SYSTEM, Brain};
use crate::time::DAY_MS;

pub const MAX_INJECTED: usize = 5;
pub const BUDGET_CHARS: usize = 900;
/// FTS candidates considered before ranking.
const CANDIDATES: usize = 50;
/// A subconscious match is "strong" when its bm25 is within this fraction of the best.
const STRONG_RELATIVE: f64 = 0.9;
/// Conscious results are "weak" when the best of them is below this fraction of the best.
const WEAK_RELATIVE: f64 = 0.7;

/// Full-text matches for free text, best first, as retrieval and search both want
/// them: stop words dropped, then the words common in the index left out as long as
/// the rarer ones still find `enough` matches. Common words weigh little in bm25 but
/// make it score thousands of rows, so on a large store this is much faster and, for
/// the top results, the same.
pub(super) fn text_matches(
    conn: &rusqlite::Connection,
    user: &str,
    text: &str,
    limit: usize,
    enough: usize,
) -> Result<Vec<TextMatch>, StoreError> {
    let query = query_terms(text);
    if let Some(selective) = q::selective_words(conn, &query)? {
        let found = q::search(conn, user, &selective, limit)?;
        if found.len() >= enough || selective == query {
            return Ok(found);
        }
    }
    q::search(conn, user, &query, limit)
}

/// Words that carry no topic; dropped from the query so they cannot dominate bm25.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "for", "with", "by",
    "from", "about", "as", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did",
    "have", "has", "had", "i", "me", "my", "you", "your", "he", "she", "it", "we", "they", "them",
    "his", "her", "its", "our", "their", "this", "that", "these", "those", "what", "which", "who",
    "whom", "when", "where", "why", "how", "can", "could", "would", "should", "will", "shall",
    "may", "might", "must", "there", "here", "so", "than", "then", "too", "very", "just", "not",
    "no", "any", "some", "all", "also", "into", "over", "up", "down", "out", "s", "t", "am",
    "please", "tell", "know", "think",
];

/// One memory chosen for injection.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    pub record: MemoryRecord,
    /// The rendered line (see the module docs for its format).
    pub line: String,
    pub score: f64,
    /// Recalled from the subconscious tier by this retrieval.
    pub recalled: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Retrieval {
    pub memories: Vec<Injected>,
    /// The lines joined by newlines: what the agent receives.
    pub block: String,
}

pub fn render_line(record: &MemoryRecord) -> String {
    format!("- [{}] {}", record.memory_type, record.summary)
}

/// The query text without stop words (or the original words when nothing is left).
pub fn query_terms(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let kept: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOP_WORDS.contains(&w.to_lowercase().as_str()))
        .collect();
    if kept.is_empty() {
        words.join(" ")
    } else {
        kept.join(" ")
    }
}

/// Relevance of a match relative to the best one: 1.0 for the best, less for weaker.
fn relative(bm25: f64, best: f64) -> f64 {
    // bm25() is negative, more negative is better.
    if best >= 0.0 {
        1.0
    } else {
        (bm25 / best).clamp(0.0, 1.0)
    }
}

fn blend(record: &MemoryRecord, relevance: f64, now: i64) -> f64 {
    let referenced = record
        .last_used_at
        .unwrap_or(0)
        .max(record.last_seen_at)
        .max(record.created_at);
    let age_days = ((now - referenced).max(0) as f64) / DAY_MS as f64;
    let recency = (-age_days / 30.0).exp();
    let score = 0.6 * relevance
        + 0.15 * f64::from(record.importance)
        + 0.15 * f64::from(record.confidence)
        + 0.1 * recency;
    if record.stale { score * 0.8 } else { score }
}

impl Brain {
    /// Chooses the memories to inject before a message (see the module docs).
    pub fn retrieve(&self, user: &str, message: &str) -> Result<Retrieval, StoreError> {
        let now = self.now();
        let matches = self
            .store
            .read(|c| text_matches(c, user, message, CANDIDATES, MAX_INJECTED))?;
        let Some(best) = matches.iter().map(|m| m.bm25).reduce(f64::min) else {
            return Ok(Retrieval::default());
        };
        let (conscious, subconscious): (Vec<&TextMatch>, Vec<&TextMatch>) =
            matches.iter().partition(|m| m.record.scope.is_conscious());
        let best_conscious = conscious
            .iter()
            .map(|m| relative(m.bm25, best))
            .fold(0.0, f64::max);
        let weak = conscious.is_empty() || best_conscious < WEAK_RELATIVE;

        let mut ranked: Vec<(f64, &TextMatch, bool)> = conscious
            .iter()
            .map(|m| (blend(&m.record, relative(m.bm25, best), now), *m, false))
            .collect();
        if weak {
            ranked.extend(
                subconscious
                    .iter()
                    .filter(|m| relative(m.bm25, best) >= STRONG_RELATIVE)
                    .map(|m| (blend(&m.record, relative(m.bm25, best), now), *m, true)),
            );
        }
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.record.id.cmp(&b.1.record.id))
        });

        let mut chosen = Vec::new();
        let mut used = 0;
        for (score, found, recalled) in ranked {
            if chosen.len() == MAX_INJECTED {
                break;
            }
            let line = render_line(&found.record);
            let cost = line.chars().count() + usize::from(!chosen.is_empty());
            if used + cost > BUDGET_CHARS {
                continue;
            }
            used += cost;
            chosen.push(Injected {
                record: found.record.clone(),
                line,
                score,
                recalled,
            });
        }
        self.mark_used(&mut chosen, now)?;
        let block = chosen
            .iter()
            .map(|i| i.line.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Retrieval {
            memories: chosen,
            block,
        })
    }

    /// Records the use of each chosen memory and promotes the recalled ones, in one
    /// transaction.
    fn mark_used(&self, chosen: &mut [Injected], now: i64) -> Result<(), StoreError> {
        if chosen.is_empty() {
            return Ok(());
        }
        // A promotion is a change of the memory and must be durable; a use alone is
        // bookkeeping.
        let promotes = chosen.iter().any(|i| i.recalled);
        let apply = |tx: &rusqlite::Transaction| {
            for injected in chosen.iter_mut() {
                let old = q::get(tx, &injected.record.user_id, &injected.record.id)?;
                let mut new = old.clone();
                new.last_used_at = Some(now);
                new.stale = false;
                if injected.recalled {
                    new.scope = old.prior_scope.unwrap_or(Scope::Active);
                    new.prior_scope = None;
                    new.updated_at = now;
                    q::update(tx, &old, &new, "PROMOTE", ACTOR_SYSTEM)?;
                } else {
                    // Being used is not a change of the fact: no history row.
                    q::touch(tx, &new)?;
                }
                injected.record = new;
            }
            Ok(())
        };
        if promotes {
            self.store.write(apply)
        } else {
            self.store.write_relaxed(apply)
        }
    }
}

//! Default conflict resolution: decides how one candidate relates to the stored
//! memories most similar to it (README, "The Second Brain": what is true now).
//!
//! The rules, in order:
//!
//! 1. A candidate that contradicts a memory ([`text::opposes`]: a negation mismatch,
//!    a dislike against a like, or a new value of a single-valued attribute) is
//!    weighed against the strongest memory it contradicts: the higher confidence
//!    wins; on equal confidence (within [`CONFIDENCE_EPSILON`]) the newer wins, and
//!    the candidate, just said, is always the newer. A winning candidate supersedes
//!    the memory; a losing one is stored already superseded by it.
//! 2. The same fact again (same core, same polarity) reinforces the memory.
//! 3. The same fact with more detail (the memory's core strictly inside the
//!    candidate's, similarity at least [`UPDATE_SIMILARITY`]) updates the memory with
//!    the candidate's wording.
//! 4. The same fact with less detail, or worded slightly differently, reinforces it.
//! 5. Anything else is new: add it.
//!
//! Every id returned is the id of one of the `related` memories.

use crate::model::{Candidate, Memory, MemoryPatch, Resolution};
use crate::text::{self, Fact, SAME_FACT_SIMILARITY};

/// Confidences closer than this are equal.
pub const CONFIDENCE_EPSILON: f32 = 1e-6;

/// How similar a more detailed candidate must be to a memory to update it rather than
/// be stored beside it.
pub const UPDATE_SIMILARITY: f32 = 0.5;

/// Decides what to do with `candidate` given the stored memories most similar to it.
pub fn resolve(candidate: &Candidate, related: &[Memory]) -> Resolution {
    let fact = text::analyse(&candidate.summary, candidate.negated);
    if fact.core.is_empty() {
        return Resolution::Reject("the summary states no fact".to_owned());
    }
    if let Some(opponent) = strongest_opponent(candidate, related) {
        return if opponent.confidence > candidate.confidence + CONFIDENCE_EPSILON {
            Resolution::SupersededBy(opponent.id.clone())
        } else {
            Resolution::Supersede(opponent.id.clone())
        };
    }
    let agreeing: Vec<(&Memory, Fact)> = related
        .iter()
        .map(|memory| (memory, text::analyse(&memory.summary, memory.negated)))
        .filter(|(_, stored)| stored.negative == fact.negative)
        .collect();
    if let Some((same, _)) = agreeing.iter().find(|(_, stored)| stored.core == fact.core) {
        return Resolution::Reinforce(same.id.clone());
    }
    let similarity = |stored: &Fact| text::jaccard(&stored.core, &fact.core);
    let more_detailed = agreeing.iter().find(|(_, stored)| {
        stored.core.is_subset(&fact.core) && similarity(stored) >= UPDATE_SIMILARITY
    });
    if let Some((memory, _)) = more_detailed {
        return Resolution::Update {
            id: memory.id.clone(),
            patch: detail_patch(candidate, memory),
        };
    }
    let restated = agreeing.iter().find(|(_, stored)| {
        let less_detailed =
            fact.core.is_subset(&stored.core) && similarity(stored) >= UPDATE_SIMILARITY;
        less_detailed || similarity(stored) >= SAME_FACT_SIMILARITY
    });
    match restated {
        Some((memory, _)) => Resolution::Reinforce(memory.id.clone()),
        None => Resolution::Add,
    }
}

/// The memory `candidate` contradicts with the highest confidence; on equal
/// confidence the most recently updated, then the first in `related` order (best
/// match first).
fn strongest_opponent<'a>(candidate: &Candidate, related: &'a [Memory]) -> Option<&'a Memory> {
    related
        .iter()
        .filter(|memory| {
            text::opposes(
                &candidate.summary,
                candidate.negated,
                &memory.summary,
                memory.negated,
            )
        })
        .fold(None, |best: Option<&Memory>, memory| match best {
            Some(best)
                if memory.confidence > best.confidence + CONFIDENCE_EPSILON
                    || ((memory.confidence - best.confidence).abs() <= CONFIDENCE_EPSILON
                        && memory.updated_at > best.updated_at) =>
            {
                Some(memory)
            }
            Some(best) => Some(best),
            None => Some(memory),
        })
}

/// The candidate's wording and detail for `memory`, and its confidence and
/// importance where they are higher: restating a fact with more detail confirms it.
fn detail_patch(candidate: &Candidate, memory: &Memory) -> MemoryPatch {
    let higher = |new: f32, old: f32| (new > old + CONFIDENCE_EPSILON).then_some(new);
    MemoryPatch {
        summary: Some(candidate.summary.clone()),
        detail: candidate.detail.clone(),
        memory_type: None,
        confidence: higher(candidate.confidence, memory.confidence),
        importance: higher(candidate.importance, memory.importance),
        durability: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, MemoryType};
    use crate::test_support::stored_memory;

    fn candidate(summary: &str, confidence: f32) -> Candidate {
        Candidate {
            memory_type: MemoryType::Preference,
            summary: summary.to_owned(),
            detail: None,
            confidence,
            importance: 0.6,
            durability: 0.8,
            evidence: Evidence::Direct,
            negated: text::is_negated(summary),
            persons: Vec::new(),
            source_turns: vec!["t1".to_owned()],
        }
    }

    fn memory(id: &str, summary: &str, confidence: f32) -> Memory {
        Memory {
            confidence,
            importance: 0.6,
            ..stored_memory(id, MemoryType::Preference, summary)
        }
    }

    fn supersede(id: &str) -> Resolution {
        Resolution::Supersede(id.to_owned())
    }

    #[test]
    fn higher_confidence_candidate_supersedes_the_memory_it_opposes() {
        let related = [memory("mem_1", "User likes coffee", 0.6)];
        let new = candidate("User does not like coffee", 0.9);
        assert_eq!(resolve(&new, &related), supersede("mem_1"));
    }

    #[test]
    fn lower_confidence_candidate_is_superseded_by_the_memory() {
        let related = [memory("mem_1", "User likes coffee", 0.9)];
        let new = candidate("User no longer likes coffee", 0.6);
        assert_eq!(
            resolve(&new, &related),
            Resolution::SupersededBy("mem_1".to_owned())
        );
    }

    #[test]
    fn equal_confidence_goes_to_the_newer_which_is_the_candidate() {
        let related = [memory("mem_1", "User drinks coffee", 0.9)];
        let new = candidate("User stopped drinking coffee", 0.9);
        assert_eq!(resolve(&new, &related), supersede("mem_1"));
        // Within the epsilon counts as equal.
        let slightly_higher = [memory("mem_1", "User drinks coffee", 0.900_000_5)];
        assert_eq!(resolve(&new, &slightly_higher), supersede("mem_1"));
        // Beyond it does not.
        let higher = [memory("mem_1", "User drinks coffee", 0.91)];
        assert_eq!(
            resolve(&new, &higher),
            Resolution::SupersededBy("mem_1".to_owned())
        );
    }

    #[test]
    fn negation_flag_mismatch_alone_is_a_contradiction() {
        let mut stored = memory("mem_1", "User: coffee drinker", 0.9);
        stored.negated = true;
        let new = candidate("User: coffee drinker", 0.9);
        assert_eq!(resolve(&new, &[stored]), supersede("mem_1"));
    }

    #[test]
    fn dislike_and_attribute_changes_are_contradictions() {
        let related = [memory("mem_1", "User loves coffee", 0.9)];
        assert_eq!(
            resolve(&candidate("User hates coffee", 0.9), &related),
            supersede("mem_1")
        );
        let related = [memory("mem_2", "User lives in Berlin", 0.9)];
        assert_eq!(
            resolve(&candidate("User lives in Lisbon", 0.9), &related),
            supersede("mem_2")
        );
    }

    #[test]
    fn weighs_against_the_strongest_opponent() {
        let related = [
            memory("mem_weak", "User likes coffee", 0.5),
            memory("mem_other", "User likes tea", 0.99),
            memory("mem_strong", "User loves coffee", 0.95),
        ];
        let new = candidate("User does not like coffee", 0.9);
        assert_eq!(
            resolve(&new, &related),
            Resolution::SupersededBy("mem_strong".to_owned())
        );
        // Among equally confident opponents, the most recently updated.
        let mut newer = memory("mem_newer", "User loves coffee", 0.5);
        newer.updated_at = 2_000;
        let related = [memory("mem_older", "User likes coffee", 0.5), newer];
        assert_eq!(resolve(&new, &related), supersede("mem_newer"));
    }

    #[test]
    fn same_fact_again_reinforces() {
        let related = [
            memory("mem_tea", "User likes tea", 0.9),
            memory("mem_coffee", "User likes coffee", 0.9),
        ];
        for summary in [
            "User likes coffee",
            "User loves coffee",
            "The user really likes coffee.",
        ] {
            assert_eq!(
                resolve(&candidate(summary, 0.9), &related),
                Resolution::Reinforce("mem_coffee".to_owned()),
                "{summary}"
            );
        }
        let negative = [memory("mem_1", "User does not eat meat", 0.9)];
        assert_eq!(
            resolve(&candidate("User doesn't eat meat", 0.9), &negative),
            Resolution::Reinforce("mem_1".to_owned())
        );
    }

    #[test]
    fn more_detail_updates_and_less_detail_reinforces() {
        let related = [memory("mem_1", "User is building a budgeting app", 0.8)];
        let mut detailed = candidate("User is building a budgeting app in Rust", 0.9);
        detailed.detail = Some("Said while planning the backend.".to_owned());
        assert_eq!(
            resolve(&detailed, &related),
            Resolution::Update {
                id: "mem_1".to_owned(),
                patch: MemoryPatch {
                    summary: Some("User is building a budgeting app in Rust".to_owned()),
                    detail: Some("Said while planning the backend.".to_owned()),
                    memory_type: None,
                    confidence: Some(0.9),
                    importance: None,
                    durability: None,
                },
            }
        );
        let related = [memory(
            "mem_2",
            "User is building a budgeting app in Rust",
            0.9,
        )];
        assert_eq!(
            resolve(
                &candidate("User is building a budgeting app", 0.9),
                &related
            ),
            Resolution::Reinforce("mem_2".to_owned())
        );
    }

    #[test]
    fn anything_else_is_added() {
        let new = candidate("User plays chess", 0.9);
        assert_eq!(resolve(&new, &[]), Resolution::Add);
        let related = [
            memory("mem_1", "User likes chess documentaries about history", 0.9),
            memory("mem_2", "User is allergic to cats", 0.9),
        ];
        assert_eq!(resolve(&new, &related), Resolution::Add);
        // A detail that flips polarity is a different fact, not an update.
        let related = [memory("mem_3", "User does not like coffee", 0.9)];
        assert_eq!(
            resolve(&candidate("User likes coffee with milk", 0.9), &related),
            Resolution::Add
        );
    }

    #[test]
    fn empty_summary_is_rejected() {
        let related = [memory("mem_1", "User likes coffee", 0.9)];
        assert!(matches!(
            resolve(&candidate("  the ", 0.9), &related),
            Resolution::Reject(_)
        ));
    }

    #[test]
    fn only_returns_ids_it_was_given() {
        let summaries = [
            "User likes coffee",
            "User does not like coffee",
            "User hates coffee",
            "User likes coffee with milk",
            "User lives in Berlin",
            "User lives in Paris",
            "User's sister is Anna",
            "User plays chess",
            "",
        ];
        let related: Vec<Memory> = summaries
            .iter()
            .enumerate()
            .map(|(index, summary)| {
                memory(&format!("mem_{index}"), summary, 0.5 + index as f32 / 20.0)
            })
            .collect();
        for summary in summaries {
            for confidence in [0.1, 0.7, 1.0] {
                for window in related.windows(3) {
                    let id = match resolve(&candidate(summary, confidence), window) {
                        Resolution::Reinforce(id)
                        | Resolution::Supersede(id)
                        | Resolution::SupersededBy(id)
                        | Resolution::Update { id, .. } => id,
                        Resolution::Add | Resolution::Reject(_) => continue,
                    };
                    assert!(
                        window.iter().any(|memory| memory.id == id),
                        "{summary}: {id} not in {window:?}"
                    );
                }
            }
        }
    }
}

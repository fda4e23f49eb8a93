//! {{name}}: an Engram consolidator. Every hour (and on demand) the host calls
//! `consolidate` with the user's conscious memories; return the profile summary (who
//! the user is), the active summary (what they are busy with) and any reflections.
//!
//! This one lists durable facts in the profile and active ones in the active summary,
//! most confident first, and proposes no reflections.

wit_bindgen::generate!({ path: "wit", world: "consolidator" });

use engram::plugin::types::Scope;

struct Plugin;

/// The host refuses summaries over 2,000 characters.
const MAX_SUMMARY_CHARS: usize = 2_000;

impl Guest for Plugin {
    fn consolidate(snapshot: Snapshot, _now: i64) -> Consolidation {
        let mut memories = snapshot.memories;
        memories.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        let summary = |scope: Scope| {
            join_bounded(
                memories
                    .iter()
                    .filter(|m| m.scope == scope)
                    .map(|m| m.summary.as_str()),
                MAX_SUMMARY_CHARS,
            )
        };
        Consolidation {
            profile_summary: summary(Scope::Durable),
            active_summary: summary(Scope::Active),
            reflections: Vec::new(),
        }
    }
}

/// Sentences joined with spaces, as many whole ones as fit in `max_chars`.
fn join_bounded<'a>(sentences: impl Iterator<Item = &'a str>, max_chars: usize) -> String {
    let mut out = String::new();
    for sentence in sentences {
        let sentence = sentence.trim().trim_end_matches('.');
        let next = if out.is_empty() { 0 } else { 1 } + sentence.chars().count() + 1;
        if out.chars().count() + next > max_chars {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(sentence);
        out.push('.');
    }
    out
}

export!(Plugin);

#[cfg(test)]
mod tests {
    use super::join_bounded;

    #[test]
    fn keeps_whole_sentences_within_the_bound() {
        let facts = ["User is Dana.", "User likes tea", "User runs"];
        assert_eq!(
            join_bounded(facts.into_iter(), 100),
            "User is Dana. User likes tea. User runs."
        );
        assert_eq!(join_bounded(facts.into_iter(), 20), "User is Dana.");
    }
}

//! Checks on what a plugin returns, before anything reaches the Second Brain. A result
//! that breaks one of these rules fails the call as `InvalidResult`: a plugin can be
//! buggy or hostile, and the host applies only well-formed decisions.

use std::collections::HashSet;

use engram_strategies::model::{
    Candidate, Consolidation, Conversation, Evidence, Memory, Resolution,
};

/// More candidates than this is not a strategy's answer but a flood; the host keeps at
/// most three anyway.
pub const MAX_CANDIDATES: usize = 64;
pub const MAX_SUMMARY_CHARS: usize = 1_000;
pub const MAX_DETAIL_CHARS: usize = 4_000;
pub const MAX_PERSONS: usize = 16;
pub const MAX_CONSOLIDATION_SUMMARY_CHARS: usize = 2_000;
pub const MAX_REFLECTIONS: usize = 32;

fn score(field: &str, value: f32) -> Result<(), String> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{field} {value} is outside 0.0..=1.0"))
    }
}

fn text(field: &str, value: &str, max_chars: usize) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("{field} is empty"));
    }
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(format!("{field} has {chars} characters, over {max_chars}"));
    }
    Ok(())
}

/// The first check on an extractor's answer, made before it is converted.
pub fn candidate_count(count: usize) -> Result<(), String> {
    if count > MAX_CANDIDATES {
        return Err(format!(
            "{count} candidates, more than the {MAX_CANDIDATES} accepted"
        ));
    }
    Ok(())
}

/// The first check on a consolidator's answer, made before it is converted.
pub fn reflection_count(count: usize) -> Result<(), String> {
    if count > MAX_REFLECTIONS {
        return Err(format!("{count} reflections, more than {MAX_REFLECTIONS}"));
    }
    Ok(())
}

pub fn candidates(list: &[Candidate], conversation: &Conversation) -> Result<(), String> {
    let turns: HashSet<&str> = conversation
        .messages
        .iter()
        .map(|m| m.turn_id.as_str())
        .collect();
    for (i, c) in list.iter().enumerate() {
        let at = |e: String| format!("candidate {i}: {e}");
        text("summary", &c.summary, MAX_SUMMARY_CHARS).map_err(at)?;
        if let Some(detail) = &c.detail {
            text("detail", detail, MAX_DETAIL_CHARS).map_err(at)?;
        }
        score("confidence", c.confidence).map_err(at)?;
        score("importance", c.importance).map_err(at)?;
        score("durability", c.durability).map_err(at)?;
        if matches!(c.evidence, Evidence::Manual | Evidence::System) {
            return Err(at("evidence must be direct or inferred".into()));
        }
        if c.persons.len() > MAX_PERSONS {
            return Err(at(format!(
                "{} persons, over {MAX_PERSONS}",
                c.persons.len()
            )));
        }
        for p in &c.persons {
            text("person name", &p.name, 200).map_err(at)?;
        }
        if let Some(unknown) = c.source_turns.iter().find(|t| !turns.contains(t.as_str())) {
            return Err(at(format!(
                "source turn `{unknown}` is not in the conversation"
            )));
        }
    }
    Ok(())
}

pub fn resolution(r: &Resolution, related: &[Memory]) -> Result<(), String> {
    let known = |id: &str| {
        if related.iter().any(|m| m.id == id) {
            Ok(())
        } else {
            Err(format!(
                "id `{id}` is not one of the related memories it was given"
            ))
        }
    };
    match r {
        Resolution::Add => Ok(()),
        Resolution::Reinforce(id) | Resolution::Supersede(id) | Resolution::SupersededBy(id) => {
            known(id)
        }
        Resolution::Update { id, patch } => {
            known(id)?;
            if let Some(s) = &patch.summary {
                text("patch.summary", s, MAX_SUMMARY_CHARS)?;
            }
            if let Some(d) = &patch.detail {
                text("patch.detail", d, MAX_DETAIL_CHARS)?;
            }
            for (field, value) in [
                ("patch.confidence", patch.confidence),
                ("patch.importance", patch.importance),
                ("patch.durability", patch.durability),
            ] {
                if let Some(v) = value {
                    score(field, v)?;
                }
            }
            Ok(())
        }
        Resolution::Reject(reason) => text("reject reason", reason, MAX_SUMMARY_CHARS),
    }
}

pub fn consolidation(c: &Consolidation, snapshot: &[Memory]) -> Result<(), String> {
    for (field, value) in [
        ("profile-summary", &c.profile_summary),
        ("active-summary", &c.active_summary),
    ] {
        let chars = value.chars().count();
        if chars > MAX_CONSOLIDATION_SUMMARY_CHARS {
            return Err(format!(
                "{field} has {chars} characters, over {MAX_CONSOLIDATION_SUMMARY_CHARS}"
            ));
        }
    }
    let ids: HashSet<&str> = snapshot.iter().map(|m| m.id.as_str()).collect();
    for (i, r) in c.reflections.iter().enumerate() {
        let at = |e: String| format!("reflection {i}: {e}");
        text("summary", &r.summary, MAX_SUMMARY_CHARS).map_err(at)?;
        score("confidence", r.confidence).map_err(at)?;
        score("importance", r.importance).map_err(at)?;
        if let Some(unknown) = r.based_on.iter().find(|id| !ids.contains(id.as_str())) {
            return Err(at(format!(
                "based-on id `{unknown}` is not in the snapshot"
            )));
        }
        if let Some(target) = &r.merge_with
            && !snapshot.iter().any(|m| {
                m.id == *target && m.memory_type == engram_strategies::model::MemoryType::Reflection
            })
        {
            return Err(at(format!(
                "merge-with `{target}` is not a reflection in the snapshot"
            )));
        }
    }
    Ok(())
}

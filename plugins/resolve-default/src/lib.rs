//! `builtin:resolve-default`: the default resolver, [`engram_strategies::resolve`]
//! behind the `resolver` world. This crate only converts WIT values to the strategy
//! model and back, field by field.

wit_bindgen::generate!({ path: "../../wit", world: "resolver" });

use engram::plugin::log::{Level, log};
use engram::plugin::types as wit;
use engram_strategies::{model, resolve};

struct DefaultResolver;

impl Guest for DefaultResolver {
    fn resolve(candidate: wit::Candidate, related: Vec<wit::Memory>) -> wit::Resolution {
        let candidate = model::Candidate {
            memory_type: memory_type_from_wit(candidate.memory_type),
            summary: candidate.summary,
            detail: candidate.detail,
            confidence: candidate.confidence,
            importance: candidate.importance,
            durability: candidate.durability,
            evidence: evidence_from_wit(candidate.evidence),
            negated: candidate.negated,
            persons: candidate.persons.into_iter().map(person_from_wit).collect(),
            source_turns: candidate.source_turns,
        };
        let related: Vec<model::Memory> = related.into_iter().map(memory_from_wit).collect();
        let resolution = resolve::resolve(&candidate, &related);
        // The decision and ids only: the user's facts stay out of the host's log.
        log(
            Level::Debug,
            &format!("{resolution:?} against {} related memories", related.len()),
        );
        resolution_to_wit(resolution)
    }
}

export!(DefaultResolver);

fn resolution_to_wit(resolution: model::Resolution) -> wit::Resolution {
    match resolution {
        model::Resolution::Add => wit::Resolution::Add,
        model::Resolution::Reinforce(id) => wit::Resolution::Reinforce(id),
        model::Resolution::Update { id, patch } => wit::Resolution::Update(wit::MemoryUpdate {
            id,
            patch: wit::MemoryPatch {
                summary: patch.summary,
                detail: patch.detail,
                memory_type: patch.memory_type.map(memory_type_to_wit),
                confidence: patch.confidence,
                importance: patch.importance,
                durability: patch.durability,
            },
        }),
        model::Resolution::Supersede(id) => wit::Resolution::Supersede(id),
        model::Resolution::SupersededBy(id) => wit::Resolution::SupersededBy(id),
        model::Resolution::Reject(reason) => wit::Resolution::Reject(reason),
    }
}

fn memory_from_wit(memory: wit::Memory) -> model::Memory {
    model::Memory {
        id: memory.id,
        memory_type: memory_type_from_wit(memory.memory_type),
        summary: memory.summary,
        detail: memory.detail,
        scope: match memory.scope {
            wit::Scope::Durable => model::Scope::Durable,
            wit::Scope::Active => model::Scope::Active,
            wit::Scope::Subconscious => model::Scope::Subconscious,
        },
        confidence: memory.confidence,
        importance: memory.importance,
        durability: memory.durability,
        evidence: evidence_from_wit(memory.evidence),
        negated: memory.negated,
        reinforcements: memory.reinforcements,
        persons: memory.persons.into_iter().map(person_from_wit).collect(),
        created_at: memory.created_at,
        updated_at: memory.updated_at,
        last_seen_at: memory.last_seen_at,
    }
}

fn person_from_wit(person: wit::PersonRef) -> model::PersonRef {
    model::PersonRef {
        name: person.name,
        relation: person.relation,
    }
}

fn evidence_from_wit(evidence: wit::Evidence) -> model::Evidence {
    match evidence {
        wit::Evidence::Direct => model::Evidence::Direct,
        wit::Evidence::Inferred => model::Evidence::Inferred,
        wit::Evidence::Manual => model::Evidence::Manual,
        wit::Evidence::System => model::Evidence::System,
    }
}

fn memory_type_from_wit(memory_type: wit::MemoryType) -> model::MemoryType {
    match memory_type {
        wit::MemoryType::Identity => model::MemoryType::Identity,
        wit::MemoryType::Preference => model::MemoryType::Preference,
        wit::MemoryType::Goal => model::MemoryType::Goal,
        wit::MemoryType::Project => model::MemoryType::Project,
        wit::MemoryType::Habit => model::MemoryType::Habit,
        wit::MemoryType::Decision => model::MemoryType::Decision,
        wit::MemoryType::Constraint => model::MemoryType::Constraint,
        wit::MemoryType::Relationship => model::MemoryType::Relationship,
        wit::MemoryType::Episode => model::MemoryType::Episode,
        wit::MemoryType::Reflection => model::MemoryType::Reflection,
    }
}

fn memory_type_to_wit(memory_type: model::MemoryType) -> wit::MemoryType {
    match memory_type {
        model::MemoryType::Identity => wit::MemoryType::Identity,
        model::MemoryType::Preference => wit::MemoryType::Preference,
        model::MemoryType::Goal => wit::MemoryType::Goal,
        model::MemoryType::Project => wit::MemoryType::Project,
        model::MemoryType::Habit => wit::MemoryType::Habit,
        model::MemoryType::Decision => wit::MemoryType::Decision,
        model::MemoryType::Constraint => wit::MemoryType::Constraint,
        model::MemoryType::Relationship => wit::MemoryType::Relationship,
        model::MemoryType::Episode => wit::MemoryType::Episode,
        model::MemoryType::Reflection => wit::MemoryType::Reflection,
    }
}

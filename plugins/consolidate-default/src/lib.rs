//! `builtin:consolidate-default`: the default consolidator,
//! [`engram_strategies::consolidate`] behind the `consolidator` world. This crate only
//! converts WIT values to the strategy model and back, field by field.

wit_bindgen::generate!({ path: "../../wit", world: "consolidator" });

use engram::plugin::log::{Level, log};
use engram::plugin::types as wit;
use engram_strategies::{consolidate, model};

struct DefaultConsolidator;

impl Guest for DefaultConsolidator {
    fn consolidate(snapshot: wit::Snapshot, now: i64) -> wit::Consolidation {
        let snapshot = model::Snapshot {
            user_id: snapshot.user_id,
            memories: snapshot.memories.into_iter().map(memory_from_wit).collect(),
        };
        let consolidation = consolidate::consolidate(&snapshot, now);
        log(
            Level::Debug,
            &format!(
                "{} memories -> profile {} bytes, active {} bytes, {} reflection(s)",
                snapshot.memories.len(),
                consolidation.profile_summary.len(),
                consolidation.active_summary.len(),
                consolidation.reflections.len()
            ),
        );
        wit::Consolidation {
            profile_summary: consolidation.profile_summary,
            active_summary: consolidation.active_summary,
            reflections: consolidation
                .reflections
                .into_iter()
                .map(|reflection| wit::Reflection {
                    summary: reflection.summary,
                    detail: reflection.detail,
                    confidence: reflection.confidence,
                    importance: reflection.importance,
                    based_on: reflection.based_on,
                    merge_with: reflection.merge_with,
                })
                .collect(),
        }
    }
}

export!(DefaultConsolidator);

fn memory_from_wit(memory: wit::Memory) -> model::Memory {
    model::Memory {
        id: memory.id,
        memory_type: match memory.memory_type {
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
        },
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
        evidence: match memory.evidence {
            wit::Evidence::Direct => model::Evidence::Direct,
            wit::Evidence::Inferred => model::Evidence::Inferred,
            wit::Evidence::Manual => model::Evidence::Manual,
            wit::Evidence::System => model::Evidence::System,
        },
        negated: memory.negated,
        reinforcements: memory.reinforcements,
        persons: memory
            .persons
            .into_iter()
            .map(|person| model::PersonRef {
                name: person.name,
                relation: person.relation,
            })
            .collect(),
        created_at: memory.created_at,
        updated_at: memory.updated_at,
        last_seen_at: memory.last_seen_at,
    }
}

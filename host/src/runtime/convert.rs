//! Field-by-field conversion between the strategy model (`engram_strategies::model`,
//! what the rest of the host speaks) and the WIT types of `bindings`. This is the only
//! place the two meet.

use engram_strategies::model;

use super::bindings::types as wit;

pub fn memory_type_to_wit(t: model::MemoryType) -> wit::MemoryType {
    use model::MemoryType as M;
    match t {
        M::Identity => wit::MemoryType::Identity,
        M::Preference => wit::MemoryType::Preference,
        M::Goal => wit::MemoryType::Goal,
        M::Project => wit::MemoryType::Project,
        M::Habit => wit::MemoryType::Habit,
        M::Decision => wit::MemoryType::Decision,
        M::Constraint => wit::MemoryType::Constraint,
        M::Relationship => wit::MemoryType::Relationship,
        M::Episode => wit::MemoryType::Episode,
        M::Reflection => wit::MemoryType::Reflection,
    }
}

pub fn memory_type_from_wit(t: wit::MemoryType) -> model::MemoryType {
    use wit::MemoryType as W;
    match t {
        W::Identity => model::MemoryType::Identity,
        W::Preference => model::MemoryType::Preference,
        W::Goal => model::MemoryType::Goal,
        W::Project => model::MemoryType::Project,
        W::Habit => model::MemoryType::Habit,
        W::Decision => model::MemoryType::Decision,
        W::Constraint => model::MemoryType::Constraint,
        W::Relationship => model::MemoryType::Relationship,
        W::Episode => model::MemoryType::Episode,
        W::Reflection => model::MemoryType::Reflection,
    }
}

pub fn scope_to_wit(s: model::Scope) -> wit::Scope {
    match s {
        model::Scope::Durable => wit::Scope::Durable,
        model::Scope::Active => wit::Scope::Active,
        model::Scope::Subconscious => wit::Scope::Subconscious,
    }
}

pub fn scope_from_wit(s: wit::Scope) -> model::Scope {
    match s {
        wit::Scope::Durable => model::Scope::Durable,
        wit::Scope::Active => model::Scope::Active,
        wit::Scope::Subconscious => model::Scope::Subconscious,
    }
}

fn evidence_to_wit(e: model::Evidence) -> wit::Evidence {
    match e {
        model::Evidence::Direct => wit::Evidence::Direct,
        model::Evidence::Inferred => wit::Evidence::Inferred,
        model::Evidence::Manual => wit::Evidence::Manual,
        model::Evidence::System => wit::Evidence::System,
    }
}

fn evidence_from_wit(e: wit::Evidence) -> model::Evidence {
    match e {
        wit::Evidence::Direct => model::Evidence::Direct,
        wit::Evidence::Inferred => model::Evidence::Inferred,
        wit::Evidence::Manual => model::Evidence::Manual,
        wit::Evidence::System => model::Evidence::System,
    }
}

fn person_to_wit(p: &model::PersonRef) -> wit::PersonRef {
    wit::PersonRef {
        name: p.name.clone(),
        relation: p.relation.clone(),
    }
}

fn person_from_wit(p: wit::PersonRef) -> model::PersonRef {
    model::PersonRef {
        name: p.name,
        relation: p.relation,
    }
}

pub fn memory_to_wit(m: &model::Memory) -> wit::Memory {
    wit::Memory {
        id: m.id.clone(),
        memory_type: memory_type_to_wit(m.memory_type),
        summary: m.summary.clone(),
        detail: m.detail.clone(),
        scope: scope_to_wit(m.scope),
        confidence: m.confidence,
        importance: m.importance,
        durability: m.durability,
        evidence: evidence_to_wit(m.evidence),
        negated: m.negated,
        reinforcements: m.reinforcements,
        persons: m.persons.iter().map(person_to_wit).collect(),
        created_at: m.created_at,
        updated_at: m.updated_at,
        last_seen_at: m.last_seen_at,
    }
}

pub fn conversation_to_wit(c: &model::Conversation) -> wit::Conversation {
    wit::Conversation {
        id: c.id.clone(),
        user_id: c.user_id.clone(),
        messages: c
            .messages
            .iter()
            .map(|m| wit::Message {
                turn_id: m.turn_id.clone(),
                role: match m.role {
                    model::Role::User => wit::Role::User,
                    model::Role::Assistant => wit::Role::Assistant,
                    model::Role::System => wit::Role::System,
                },
                content: m.content.clone(),
                timestamp: m.timestamp,
            })
            .collect(),
    }
}

pub fn candidate_to_wit(c: &model::Candidate) -> wit::Candidate {
    wit::Candidate {
        memory_type: memory_type_to_wit(c.memory_type),
        summary: c.summary.clone(),
        detail: c.detail.clone(),
        confidence: c.confidence,
        importance: c.importance,
        durability: c.durability,
        evidence: evidence_to_wit(c.evidence),
        negated: c.negated,
        persons: c.persons.iter().map(person_to_wit).collect(),
        source_turns: c.source_turns.clone(),
    }
}

pub fn candidate_from_wit(c: wit::Candidate) -> model::Candidate {
    model::Candidate {
        memory_type: memory_type_from_wit(c.memory_type),
        summary: c.summary,
        detail: c.detail,
        confidence: c.confidence,
        importance: c.importance,
        durability: c.durability,
        evidence: evidence_from_wit(c.evidence),
        negated: c.negated,
        persons: c.persons.into_iter().map(person_from_wit).collect(),
        source_turns: c.source_turns,
    }
}

pub fn resolution_from_wit(r: wit::Resolution) -> model::Resolution {
    match r {
        wit::Resolution::Add => model::Resolution::Add,
        wit::Resolution::Reinforce(id) => model::Resolution::Reinforce(id),
        wit::Resolution::Update(u) => model::Resolution::Update {
            id: u.id,
            patch: model::MemoryPatch {
                summary: u.patch.summary,
                detail: u.patch.detail,
                memory_type: u.patch.memory_type.map(memory_type_from_wit),
                confidence: u.patch.confidence,
                importance: u.patch.importance,
                durability: u.patch.durability,
            },
        },
        wit::Resolution::Supersede(id) => model::Resolution::Supersede(id),
        wit::Resolution::SupersededBy(id) => model::Resolution::SupersededBy(id),
        wit::Resolution::Reject(reason) => model::Resolution::Reject(reason),
    }
}

pub fn snapshot_to_wit(s: &model::Snapshot) -> wit::Snapshot {
    wit::Snapshot {
        user_id: s.user_id.clone(),
        memories: s.memories.iter().map(memory_to_wit).collect(),
    }
}

pub fn consolidation_from_wit(c: wit::Consolidation) -> model::Consolidation {
    model::Consolidation {
        profile_summary: c.profile_summary,
        active_summary: c.active_summary,
        reflections: c
            .reflections
            .into_iter()
            .map(|r| model::Reflection {
                summary: r.summary,
                detail: r.detail,
                confidence: r.confidence,
                importance: r.importance,
                based_on: r.based_on,
                merge_with: r.merge_with,
            })
            .collect(),
    }
}

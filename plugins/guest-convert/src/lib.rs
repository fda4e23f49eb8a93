//! The guest side of `engram:plugin/types`, generated once and shared by every adapter
//! crate (through wit-bindgen's `with`), together with the field-by-field conversions
//! between those types and `engram_strategies::model`. The host's counterpart is
//! `host/src/runtime/convert.rs`; the two cannot share code because wasmtime and
//! wit-bindgen generate different Rust types from the same WIT.

wit_bindgen::generate!({
    path: "../../wit",
    inline: "
        package engram:guest-convert;
        world shared-types {
            import engram:plugin/types@0.1.1;
        }
    ",
    world: "engram:guest-convert/shared-types",
    generate_all,
});

pub use engram::plugin::types as wit;
use engram_strategies::model;

/// Writes `From` both ways for a fieldless enum whose variants have the same names.
macro_rules! same_variants {
    ($wit:ident <=> $model:ident { $($variant:ident),+ $(,)? }) => {
        impl From<wit::$wit> for model::$model {
            fn from(value: wit::$wit) -> Self {
                match value {
                    $(wit::$wit::$variant => model::$model::$variant,)+
                }
            }
        }
        impl From<model::$model> for wit::$wit {
            fn from(value: model::$model) -> Self {
                match value {
                    $(model::$model::$variant => wit::$wit::$variant,)+
                }
            }
        }
    };
}

same_variants!(MemoryType <=> MemoryType {
    Identity, Preference, Goal, Project, Habit, Decision, Constraint, Relationship, Episode, Reflection,
});
same_variants!(Scope <=> Scope { Durable, Active, Subconscious });
same_variants!(Evidence <=> Evidence { Direct, Inferred, Manual, System });
same_variants!(Role <=> Role { User, Assistant, System });

impl From<wit::PersonRef> for model::PersonRef {
    fn from(p: wit::PersonRef) -> Self {
        model::PersonRef {
            name: p.name,
            relation: p.relation,
        }
    }
}

impl From<model::PersonRef> for wit::PersonRef {
    fn from(p: model::PersonRef) -> Self {
        wit::PersonRef {
            name: p.name,
            relation: p.relation,
        }
    }
}

fn all<A, B: From<A>>(items: Vec<A>) -> Vec<B> {
    items.into_iter().map(B::from).collect()
}

impl From<wit::Conversation> for model::Conversation {
    fn from(c: wit::Conversation) -> Self {
        model::Conversation {
            id: c.id,
            user_id: c.user_id,
            messages: c
                .messages
                .into_iter()
                .map(|m| model::Message {
                    turn_id: m.turn_id,
                    role: m.role.into(),
                    content: m.content,
                    timestamp: m.timestamp,
                })
                .collect(),
        }
    }
}

impl From<wit::Memory> for model::Memory {
    fn from(m: wit::Memory) -> Self {
        model::Memory {
            id: m.id,
            memory_type: m.memory_type.into(),
            summary: m.summary,
            detail: m.detail,
            scope: m.scope.into(),
            confidence: m.confidence,
            importance: m.importance,
            durability: m.durability,
            evidence: m.evidence.into(),
            negated: m.negated,
            reinforcements: m.reinforcements,
            persons: all(m.persons),
            created_at: m.created_at,
            updated_at: m.updated_at,
            last_seen_at: m.last_seen_at,
        }
    }
}

impl From<wit::Candidate> for model::Candidate {
    fn from(c: wit::Candidate) -> Self {
        model::Candidate {
            memory_type: c.memory_type.into(),
            summary: c.summary,
            detail: c.detail,
            confidence: c.confidence,
            importance: c.importance,
            durability: c.durability,
            evidence: c.evidence.into(),
            negated: c.negated,
            persons: all(c.persons),
            source_turns: c.source_turns,
        }
    }
}

impl From<model::Candidate> for wit::Candidate {
    fn from(c: model::Candidate) -> Self {
        wit::Candidate {
            memory_type: c.memory_type.into(),
            summary: c.summary,
            detail: c.detail,
            confidence: c.confidence,
            importance: c.importance,
            durability: c.durability,
            evidence: c.evidence.into(),
            negated: c.negated,
            persons: all(c.persons),
            source_turns: c.source_turns,
        }
    }
}

impl From<model::Resolution> for wit::Resolution {
    fn from(r: model::Resolution) -> Self {
        match r {
            model::Resolution::Add => wit::Resolution::Add,
            model::Resolution::Reinforce(id) => wit::Resolution::Reinforce(id),
            model::Resolution::Update { id, patch } => wit::Resolution::Update(wit::MemoryUpdate {
                id,
                patch: wit::MemoryPatch {
                    summary: patch.summary,
                    detail: patch.detail,
                    memory_type: patch.memory_type.map(Into::into),
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
}

impl From<wit::Snapshot> for model::Snapshot {
    fn from(s: wit::Snapshot) -> Self {
        model::Snapshot {
            user_id: s.user_id,
            memories: all(s.memories),
        }
    }
}

impl From<model::Consolidation> for wit::Consolidation {
    fn from(c: model::Consolidation) -> Self {
        wit::Consolidation {
            profile_summary: c.profile_summary,
            active_summary: c.active_summary,
            reflections: c
                .reflections
                .into_iter()
                .map(|r| wit::Reflection {
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
}

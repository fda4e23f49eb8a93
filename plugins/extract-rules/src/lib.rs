//! `builtin:extract-rules`: the default extractor, [`engram_strategies::extract`]
//! behind the `extractor` world. This crate only converts WIT values to the strategy
//! model and back, field by field.

wit_bindgen::generate!({ path: "../../wit", world: "extractor" });

use engram::plugin::log::{Level, log};
use engram::plugin::types as wit;
use engram_strategies::{extract, model};

struct RuleExtractor;

impl Guest for RuleExtractor {
    fn extract(conversation: wit::Conversation, now: i64) -> Vec<wit::Candidate> {
        let conversation = model::Conversation {
            id: conversation.id,
            user_id: conversation.user_id,
            messages: conversation.messages.into_iter().map(message).collect(),
        };
        let candidates = extract::extract(&conversation, now);
        log(
            Level::Debug,
            &format!(
                "{} candidate(s) from {} message(s) of conversation {}",
                candidates.len(),
                conversation.messages.len(),
                conversation.id
            ),
        );
        candidates.into_iter().map(candidate).collect()
    }
}

export!(RuleExtractor);

fn message(message: wit::Message) -> model::Message {
    model::Message {
        turn_id: message.turn_id,
        role: match message.role {
            wit::Role::User => model::Role::User,
            wit::Role::Assistant => model::Role::Assistant,
            wit::Role::System => model::Role::System,
        },
        content: message.content,
        timestamp: message.timestamp,
    }
}

fn candidate(candidate: model::Candidate) -> wit::Candidate {
    wit::Candidate {
        memory_type: memory_type(candidate.memory_type),
        summary: candidate.summary,
        detail: candidate.detail,
        confidence: candidate.confidence,
        importance: candidate.importance,
        durability: candidate.durability,
        evidence: match candidate.evidence {
            model::Evidence::Direct => wit::Evidence::Direct,
            model::Evidence::Inferred => wit::Evidence::Inferred,
            model::Evidence::Manual => wit::Evidence::Manual,
            model::Evidence::System => wit::Evidence::System,
        },
        negated: candidate.negated,
        persons: candidate
            .persons
            .into_iter()
            .map(|person| wit::PersonRef {
                name: person.name,
                relation: person.relation,
            })
            .collect(),
        source_turns: candidate.source_turns,
    }
}

fn memory_type(memory_type: model::MemoryType) -> wit::MemoryType {
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

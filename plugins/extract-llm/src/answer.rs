//! Reading the endpoint's answer as hostile input: the chat-completions envelope, then
//! the facts in the message against the schema, then each fact against the
//! conversation. Anything that does not fit is a [`Failure`], never a guess: an answer
//! with more than 3 facts is refused rather than cut, since a model that ignored that
//! bound may have ignored the rest of the instructions too.

use engram_strategies::model::{
    Candidate, Conversation, Evidence, MemoryType, PersonRef, Role,
};
use serde::Deserialize;

use crate::Failure;

/// The schema's bound on facts per answer.
pub const MAX_FACTS: usize = 3;
const MAX_SUMMARY_CHARS: usize = 300;
const MAX_PERSONS: usize = 8;
const MAX_NAME_CHARS: usize = 100;
const MAX_QUOTE_CHARS: usize = 1_000;

#[derive(Deserialize)]
struct Envelope {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Facts {
    facts: Vec<Fact>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fact {
    #[serde(rename = "type")]
    memory_type: String,
    summary: String,
    evidence: String,
    confidence: f64,
    negated: bool,
    persons: Vec<Person>,
    quote: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Person {
    name: String,
    relation: Option<String>,
}

/// The facts in a chat-completions response body, as candidates of `conversation`.
pub fn candidates(body: &[u8], conversation: &Conversation) -> Result<Vec<Candidate>, Failure> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        Failure::Garbage(format!("the answer is not a chat-completions response: {e}"))
    })?;
    let choice = envelope
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Garbage("the answer has no choices".into()))?;
    if let Some(refusal) = choice.message.refusal.filter(|r| !r.trim().is_empty()) {
        return Err(Failure::Refused(shorten(&refusal)));
    }
    match choice.finish_reason.as_deref() {
        Some("content_filter") => return Err(Failure::Refused("content filter".into())),
        Some("length") => {
            return Err(Failure::Garbage(
                "the answer was cut at maxTokens before it was complete".into(),
            ));
        }
        _ => {}
    }
    let content = choice
        .message
        .content
        .ok_or_else(|| Failure::Garbage("the answer's message has no content".into()))?;
    let facts: Facts = serde_json::from_str(strip_fence(&content)).map_err(|e| {
        Failure::Garbage(format!(
            "the message is not facts JSON of the schema: {e} (it begins {:?})",
            shorten(&content)
        ))
    })?;
    if facts.facts.len() > MAX_FACTS {
        return Err(Failure::Invalid(format!(
            "{} facts, more than the {MAX_FACTS} the schema allows",
            facts.facts.len()
        )));
    }
    facts
        .facts
        .into_iter()
        .enumerate()
        .map(|(i, fact)| candidate(fact, conversation).map_err(|e| Failure::Invalid(format!("fact {i}: {e}"))))
        .collect()
}

fn candidate(fact: Fact, conversation: &Conversation) -> Result<Candidate, String> {
    let memory_type = MemoryType::parse(&fact.memory_type)
        .filter(|t| *t != MemoryType::Reflection)
        .ok_or_else(|| format!("type {:?} is not one of the schema's", fact.memory_type))?;
    let evidence = match fact.evidence.as_str() {
        "direct" => Evidence::Direct,
        "inferred" => Evidence::Inferred,
        other => return Err(format!("evidence {other:?} is not direct or inferred")),
    };
    if !(0.0..=1.0).contains(&fact.confidence) {
        return Err(format!("confidence {} is outside 0..=1", fact.confidence));
    }
    let summary = bounded("summary", fact.summary, MAX_SUMMARY_CHARS)?;
    if fact.persons.len() > MAX_PERSONS {
        return Err(format!("{} persons, over {MAX_PERSONS}", fact.persons.len()));
    }
    let persons = fact
        .persons
        .into_iter()
        .map(|p| {
            Ok(PersonRef {
                name: bounded("person name", p.name, MAX_NAME_CHARS)?,
                relation: match p.relation {
                    Some(r) if !r.trim().is_empty() => {
                        Some(bounded("person relation", r, MAX_NAME_CHARS)?)
                    }
                    _ => None,
                },
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let quote = bounded("quote", fact.quote, MAX_QUOTE_CHARS)?;
    let turn = source_turn(&quote, conversation)
        .ok_or_else(|| format!("the quote {:?} is not in any of the user's messages", shorten(&quote)))?;
    Ok(Candidate {
        memory_type,
        summary,
        detail: None,
        confidence: fact.confidence as f32,
        importance: memory_type.default_importance(),
        durability: memory_type.default_durability(),
        evidence,
        negated: fact.negated,
        persons,
        source_turns: vec![turn],
    })
}

fn bounded(field: &str, value: String, max_chars: usize) -> Result<String, String> {
    let value = value.trim().to_string();
    if value.is_empty() {
        return Err(format!("{field} is empty"));
    }
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(format!("{field} has {chars} characters, over {max_chars}"));
    }
    Ok(value)
}

/// The user message the quote was taken from. Compared on letters and digits only,
/// lowercased, so that a model's changed quotes, spacing or case still match, and a
/// quote that is not there at all (an invented fact) does not.
fn source_turn(quote: &str, conversation: &Conversation) -> Option<String> {
    let needle = fold(quote);
    if needle.is_empty() {
        return None;
    }
    conversation
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .find(|m| fold(&m.content).contains(&needle))
        .map(|m| m.turn_id.clone())
}

fn fold(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Some models wrap JSON in a Markdown code fence even when asked for JSON only.
fn strip_fence(content: &str) -> &str {
    let trimmed = content.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

/// The first 120 characters, for error messages.
fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(120).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    short
}

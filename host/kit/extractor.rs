//! {{name}}: an Engram extractor. When a conversation ends, the host calls `extract`
//! with its messages; return 0 to 3 facts about the user (the host keeps the 3 most
//! important, checks every field, and stores what its resolver decides).
//!
//! This one remembers what the user asks it to: a message that starts with
//! "remember" ("Remember that I parked on level 3") becomes a fact.

wit_bindgen::generate!({ path: "wit", world: "extractor" });

use engram::plugin::types::{Evidence, MemoryType, Role};

struct Plugin;

impl Guest for Plugin {
    fn extract(conversation: Conversation, _now: i64) -> Vec<Candidate> {
        conversation
            .messages
            .iter()
            // Only the user's own words are evidence about the user.
            .filter(|message| message.role == Role::User)
            .filter_map(|message| {
                let fact = remembered(&message.content)?;
                Some(Candidate {
                    memory_type: MemoryType::Episode,
                    summary: format!("User asked to remember: {fact}"),
                    detail: None,
                    confidence: 0.9,
                    importance: 0.7,
                    durability: 0.5,
                    evidence: Evidence::Direct,
                    negated: false,
                    persons: Vec::new(),
                    source_turns: vec![message.turn_id.clone()],
                })
            })
            .take(3)
            .collect()
    }
}

/// What follows "remember (that)" at the start of a message, if the message asks.
fn remembered(text: &str) -> Option<String> {
    let text = text.trim();
    let rest = text.get(..8)?.eq_ignore_ascii_case("remember").then(|| &text[8..])?;
    if rest.starts_with(char::is_alphanumeric) {
        return None; // "remembered", "remembering"
    }
    let rest = rest.trim_start_matches([':', ',', ' ']);
    let rest = match rest.get(..5) {
        Some(that) if that.eq_ignore_ascii_case("that ") => &rest[5..],
        _ => rest,
    };
    let fact = rest.trim().trim_end_matches(['.', '!']);
    (!fact.is_empty()).then(|| fact.chars().take(300).collect())
}

export!(Plugin);

#[cfg(test)]
mod tests {
    use super::remembered;

    #[test]
    fn reads_what_the_user_asks_to_remember() {
        assert_eq!(
            remembered("Remember that I parked on level 3.").as_deref(),
            Some("I parked on level 3")
        );
        assert_eq!(remembered("remember: oat milk").as_deref(), Some("oat milk"));
        assert_eq!(remembered("Do you remember me?"), None);
        assert_eq!(remembered("Remembering is hard"), None);
        assert_eq!(remembered("remember"), None);
    }
}

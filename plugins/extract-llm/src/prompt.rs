//! The request: the versioned prompt and schema (`prompt/v<N>-*`), and the transcript
//! they are applied to. A change to either is a new version, so that an answer can
//! always be traced to the prompt that asked for it.

use engram_strategies::model::{Conversation, Role};
use serde_json::{Value, json};

use crate::settings::Settings;

/// The version of the prompt and the schema below.
pub const PROMPT_VERSION: u32 = 1;
pub const SYSTEM_PROMPT: &str = include_str!("../prompt/v1-system.txt");
pub const SCHEMA: &str = include_str!("../prompt/v1-schema.json");

/// The transcript sent is cut to its last this many characters (older messages are
/// dropped whole): the request stays bounded whatever the conversation's length.
pub const MAX_TRANSCRIPT_CHARS: usize = 24_000;

/// The chat-completions request body.
pub fn request_body(settings: &Settings, conversation: &Conversation) -> Result<String, String> {
    let schema: Value =
        serde_json::from_str(SCHEMA).map_err(|e| format!("schema v{PROMPT_VERSION}: {e}"))?;
    let body = json!({
        "model": settings.model,
        "temperature": 0,
        "max_tokens": settings.max_tokens,
        "messages": [
            { "role": "system", "content": SYSTEM_PROMPT },
            { "role": "user", "content": transcript(conversation) },
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": format!("engram_facts_v{PROMPT_VERSION}"),
                "strict": true,
                "schema": schema,
            },
        },
    });
    Ok(body.to_string())
}

/// The messages as `[role]` blocks, newest kept when the transcript is too long.
fn transcript(conversation: &Conversation) -> String {
    let mut blocks = Vec::new();
    let mut total = 0;
    for message in conversation.messages.iter().rev() {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => continue,
        };
        let block = format!("[{role}]\n{}\n", message.content.trim());
        total += block.chars().count();
        if total > MAX_TRANSCRIPT_CHARS && !blocks.is_empty() {
            break;
        }
        blocks.push(block);
    }
    blocks.reverse();
    let text = blocks.join("\n");
    // A single message longer than the bound keeps its end.
    let extra = text.chars().count().saturating_sub(MAX_TRANSCRIPT_CHARS);
    text.chars().skip(extra).collect()
}

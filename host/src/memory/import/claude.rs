//! Claude's data export (Settings > Privacy > Export data): `conversations.json`, an
//! array of `{uuid, name, created_at, chat_messages: [{uuid, sender, text, content,
//! created_at}]}`, `sender` `human` or `assistant`, times RFC 3339. A message's text
//! is its `text`, else its `content` blocks of type `text`; attachments are not kept.

use serde_json::Value;

use super::{Batch, ImportError, ImportedConversation, ImportedMessage, Source, cut};
use crate::memory::MAX_MESSAGE_BYTES;

pub fn parse(bytes: &[u8]) -> Result<Batch, ImportError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| {
        ImportError::new(
            format!("line {}", e.line()),
            format!("not JSON: {e} (expected Claude's conversations.json)"),
        )
    })?;
    let Value::Array(items) = root else {
        return Err(ImportError::new(
            "the file",
            "expected a JSON array of conversations (Claude's conversations.json)",
        ));
    };
    let mut batch = Batch::new(Source::Claude);
    for (i, item) in items.iter().enumerate() {
        let title = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty())
            .map(str::to_string);
        let entry = match &title {
            Some(t) => format!("conversation {} (\"{}\")", i + 1, t),
            None => format!("conversation {}", i + 1),
        };
        let fail = |reason: String| ImportError::new(entry.clone(), reason);
        let key = item
            .get("uuid")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("no `uuid`".into()))?;
        let created = match item.get("created_at").and_then(Value::as_str) {
            Some(text) => Some(crate::time::rfc3339::parse(text).map_err(fail)?),
            None => None,
        };
        let list = item
            .get("chat_messages")
            .and_then(Value::as_array)
            .ok_or_else(|| fail("no `chat_messages` array".into()))?;
        let mut messages = Vec::new();
        let mut last_at = created;
        for (j, message) in list.iter().enumerate() {
            let fail =
                |reason: String| ImportError::new(format!("{entry}, message {}", j + 1), reason);
            let role = match message.get("sender").and_then(Value::as_str) {
                Some("human") => "user",
                Some("assistant") => "assistant",
                Some(other) => {
                    return Err(fail(format!(
                        "`sender` is `{other}`: expected human or assistant"
                    )));
                }
                None => return Err(fail("no `sender`".into())),
            };
            let text = text_of(message);
            if text.trim().is_empty() {
                continue;
            }
            let at = match message.get("created_at").and_then(Value::as_str) {
                Some(t) => crate::time::rfc3339::parse(t).map_err(fail)?,
                None => last_at
                    .ok_or_else(|| fail("no `created_at`, in a conversation without one".into()))?,
            };
            last_at = Some(at);
            messages.push(ImportedMessage {
                role: role.to_string(),
                content: cut(&text, MAX_MESSAGE_BYTES).to_string(),
                at,
            });
        }
        if messages.is_empty() {
            continue;
        }
        batch.conversations.push(ImportedConversation {
            key: key.to_string(),
            title,
            messages,
        });
    }
    Ok(batch)
}

fn text_of(message: &Value) -> String {
    if let Some(text) = message
        .get("text")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
    {
        return text.to_string();
    }
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

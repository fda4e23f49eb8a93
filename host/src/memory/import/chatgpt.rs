//! ChatGPT's data export (Settings > Data controls > Export): `conversations.json`, an
//! array of conversations. Each keeps its messages as a tree (`mapping`: node id ->
//! `{message, parent, children}`, a regenerated answer being a sibling branch);
//! `current_node` is the leaf of the branch the person last saw, which is the one
//! kept, read from the root down. Times are Unix seconds (`create_time`). Kept: user
//! and assistant messages with text (`content.parts` strings of `text` and
//! `multimodal_text` content); dropped: system, tool and hidden messages, images.

use serde_json::Value;

use super::{Batch, ImportError, ImportedConversation, ImportedMessage, Source, cut};
use crate::memory::MAX_MESSAGE_BYTES;

pub fn parse(bytes: &[u8]) -> Result<Batch, ImportError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| {
        ImportError::new(
            format!("line {}", e.line()),
            format!("not JSON: {e} (expected ChatGPT's conversations.json)"),
        )
    })?;
    let Value::Array(items) = root else {
        return Err(ImportError::new(
            "the file",
            "expected a JSON array of conversations (ChatGPT's conversations.json)",
        ));
    };
    let mut batch = Batch::new(Source::Chatgpt);
    for (i, item) in items.iter().enumerate() {
        let title = item
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string);
        let entry = match &title {
            Some(t) => format!("conversation {} (\"{}\")", i + 1, t),
            None => format!("conversation {}", i + 1),
        };
        let fail = |reason: &str| ImportError::new(entry.clone(), reason.to_string());
        let key = item
            .get("conversation_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .ok_or_else(|| fail("no `conversation_id` or `id`"))?;
        let created = item.get("create_time").and_then(Value::as_f64);
        let mapping = item
            .get("mapping")
            .and_then(Value::as_object)
            .ok_or_else(|| fail("no `mapping` object (the messages)"))?;
        let Some(mut node) = item.get("current_node").and_then(Value::as_str) else {
            return Err(fail("no `current_node`"));
        };
        // From the leaf up to the root, at most one step per node (a cycle is refused).
        let mut branch = Vec::new();
        loop {
            let Some(entry_node) = mapping.get(node) else {
                return Err(fail(&format!("node `{node}` is not in `mapping`")));
            };
            branch.push(entry_node);
            if branch.len() > mapping.len() {
                return Err(fail("`mapping`'s parents form a cycle"));
            }
            match entry_node.get("parent") {
                Some(Value::String(parent)) => node = parent,
                Some(Value::Null) | None => break,
                Some(_) => return Err(fail(&format!("node `{node}`: `parent` is not a string"))),
            }
        }
        branch.reverse();
        let mut messages = Vec::new();
        let mut last_at = created.map(seconds_to_ms);
        for node in branch {
            let Some(message) = node.get("message").filter(|m| !m.is_null()) else {
                continue;
            };
            let role = message
                .pointer("/author/role")
                .and_then(Value::as_str)
                .ok_or_else(|| fail("a message without `author.role`"))?;
            if role != "user" && role != "assistant" {
                continue;
            }
            let hidden = message
                .pointer("/metadata/is_visually_hidden_from_conversation")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if hidden {
                continue;
            }
            let text = text_of(message);
            if text.trim().is_empty() {
                continue;
            }
            let at = message
                .get("create_time")
                .and_then(Value::as_f64)
                .map(seconds_to_ms)
                .or(last_at)
                .ok_or_else(|| {
                    fail("a message without `create_time`, in a conversation without one")
                })?;
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

fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

/// The text of a message: its string parts, one paragraph each.
fn text_of(message: &Value) -> String {
    let Some(content) = message.get("content") else {
        return String::new();
    };
    let kind = content.get("content_type").and_then(Value::as_str);
    if !matches!(kind, Some("text") | Some("multimodal_text")) {
        return String::new();
    }
    content
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(Value::as_str)
                .filter(|p| !p.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

//! A turn's input as checked types: every front door (REST, MCP, the chat channels,
//! the scheduler) parses what it was given into these before it asks for a turn, so a
//! [`Message`](super::Message) holds nothing unchecked and a refusal comes before
//! anything runs (routing, retrieval, which marks memories used, the gate). One set
//! of limits, the same that the stores and the gate keep:
//!
//! | input | limit | refusal |
//! |---|---|---|
//! | user | 1 to 128 characters, no control characters | 422 `invalid-field` `user` |
//! | message | not blank, at most 64 KiB as UTF-8 | `message` (or the front door's name) |
//! | conversation id | 1 to 128 characters, no control characters | `conversation_id` |
//! | channel | 1 to 64 characters, no control characters | `channel` |
//! | speaker's name | 1 to 100 characters, not blank, no control characters | `name` |

use super::TurnError;
use crate::gate::{MAX_CHANNEL_CHARS, MAX_CONVERSATION_CHARS};
use crate::memory::{MAX_MESSAGE_BYTES, MAX_NAME_CHARS};

fn invalid(field: &'static str, reason: impl Into<String>) -> TurnError {
    TurnError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// 1 to `max` characters, none of them a control character.
fn bounded(field: &'static str, text: &str, max: usize) -> Result<(), TurnError> {
    if text.is_empty() || text.chars().count() > max {
        return Err(invalid(field, format!("must be 1 to {max} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(invalid(field, "must not contain control characters"));
    }
    Ok(())
}

/// Whose turn it is (`crate::memory::user_or_default`'s rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(String);

impl User {
    pub fn parse(user: impl Into<String>) -> Result<User, TurnError> {
        let user = user.into();
        crate::memory::user_or_default(Some(&user)).map_err(|reason| invalid("user", reason))?;
        Ok(User(user))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the person said: not blank, at most [`MAX_MESSAGE_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    /// `text` as the message of a turn; `field` names it in a refusal (`message`, or a
    /// schedule's `input`).
    pub fn parse(field: &'static str, text: impl Into<String>) -> Result<Text, TurnError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(invalid(field, "must not be empty"));
        }
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(invalid(
                field,
                format!(
                    "{} bytes, over the {MAX_MESSAGE_BYTES}-byte limit",
                    text.len()
                ),
            ));
        }
        Ok(Text(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The conversation a message is recorded in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationId(String);

impl ConversationId {
    pub fn parse(id: impl Into<String>) -> Result<ConversationId, TurnError> {
        let id = id.into();
        bounded("conversation_id", &id, MAX_CONVERSATION_CHARS)?;
        Ok(ConversationId(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a message came from (`telegram`, `cli`, `mcp`, `schedule`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel(String);

impl Channel {
    pub fn parse(channel: impl Into<String>) -> Result<Channel, TurnError> {
        let channel = channel.into();
        bounded("channel", &channel, MAX_CHANNEL_CHARS)?;
        Ok(Channel(channel))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The sender's name, when the channel knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speaker(String);

impl Speaker {
    pub fn parse(name: impl Into<String>) -> Result<Speaker, TurnError> {
        let name = name.into();
        bounded("name", &name, MAX_NAME_CHARS)?;
        if name.trim().is_empty() {
            return Err(invalid("name", "must not be blank"));
        }
        Ok(Speaker(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::described::Described;

    fn refused_field(e: TurnError) -> Option<String> {
        e.describe().field
    }

    #[test]
    fn each_input_is_refused_naming_its_field_and_its_limit() {
        let long = |n: usize| "x".repeat(n);
        for (refused, field) in [
            (User::parse("").err(), "user"),
            (User::parse(long(129)).err(), "user"),
            (User::parse("a\u{7}").err(), "user"),
            (Text::parse("message", " \n").err(), "message"),
            (Text::parse("input", long(64 * 1024 + 1)).err(), "input"),
            (ConversationId::parse("").err(), "conversation_id"),
            (ConversationId::parse(long(129)).err(), "conversation_id"),
            (ConversationId::parse("c\n1").err(), "conversation_id"),
            (Channel::parse(long(65)).err(), "channel"),
            (Speaker::parse("  ").err(), "name"),
            (Speaker::parse(long(101)).err(), "name"),
        ] {
            let e = refused.unwrap_or_else(|| panic!("{field}: accepted"));
            assert_eq!(refused_field(e), Some(field.to_string()));
        }
    }

    #[test]
    fn values_at_the_limits_are_accepted_as_given() {
        let long = |n: usize| "é".repeat(n);
        assert_eq!(User::parse(long(128)).expect("user").as_str(), long(128));
        assert_eq!(
            Text::parse("message", "x".repeat(64 * 1024))
                .expect("text")
                .as_str()
                .len(),
            64 * 1024
        );
        assert_eq!(
            ConversationId::parse(long(128)).expect("id").as_str(),
            long(128)
        );
        assert_eq!(
            Channel::parse(long(64)).expect("channel").as_str(),
            long(64)
        );
        assert_eq!(Speaker::parse(" Ann ").expect("name").as_str(), " Ann ");
    }
}

//! A thin client of the Telegram Bot API: the few methods the channel uses, each a
//! `POST {base}/bot<token>/<method>` with a JSON body, through a [`net::Endpoint`]
//! (the operator's configured origin only, redirects refused, the token hidden from
//! every error). Updates are read leniently: fields the channel does not use are
//! ignored, and an update it cannot read is skipped, never fatal.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::net::{Endpoint, FetchError};

/// The Bot API's own base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org";
/// The largest answer read (a batch of updates included).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// How long a call other than a long poll may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Updates taken by one `getUpdates`.
const UPDATES_PER_POLL: u32 = 50;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("the Bot API refused {method}: {description} (HTTP {status})")]
    Refused {
        method: &'static str,
        status: u16,
        description: String,
    },
    #[error("the Bot API's answer to {method} is not what the API documents: {reason}")]
    Malformed {
        method: &'static str,
        reason: String,
    },
}

/// A row of inline buttons: (label, callback data of at most 64 bytes).
pub type Buttons = Vec<Vec<(String, String)>>;

pub struct BotApi {
    endpoint: Endpoint,
    token: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub from: Option<User>,
    pub chat: ChatRef,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ChatRef {
    pub id: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    /// The bot's message the button was under (absent when too old).
    #[serde(default)]
    pub message: Option<ButtonMessage>,
    #[serde(default)]
    pub data: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ButtonMessage {
    pub message_id: i64,
    pub chat: ChatRef,
}

impl BotApi {
    pub fn new(base_url: &str, token: String) -> Result<BotApi, FetchError> {
        Ok(BotApi {
            endpoint: Endpoint::new(base_url, Some(token.clone()))?,
            token,
        })
    }

    /// `text` with the token hidden.
    pub fn hide(&self, text: &str) -> String {
        self.endpoint.hide(text)
    }

    async fn call(
        &self,
        method: &'static str,
        params: &Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let answer = self
            .endpoint
            .post_json(
                &format!("bot{}/{method}", self.token),
                &[],
                params,
                timeout,
                MAX_ANSWER_BYTES,
            )
            .await?;
        let status = answer.status();
        let body = answer.body().await?;
        let document: Value = serde_json::from_slice(&body).map_err(|e| ApiError::Malformed {
            method,
            reason: format!("not JSON ({e})"),
        })?;
        if document["ok"] == json!(true) {
            return Ok(document["result"].clone());
        }
        let description = document["description"]
            .as_str()
            .unwrap_or("no description")
            .chars()
            .take(300)
            .collect::<String>();
        Err(ApiError::Refused {
            method,
            status,
            description: self.hide(&description),
        })
    }

    /// Updates after `offset` (which confirms the earlier ones), waiting up to `poll`
    /// for one to arrive. Updates that cannot be read are dropped here (logged), so one
    /// odd update never blocks the ones behind it; the highest id seen comes back too,
    /// so the caller confirms them all.
    pub async fn get_updates(
        &self,
        offset: i64,
        poll: Duration,
    ) -> Result<(Vec<Update>, Option<i64>), ApiError> {
        let params = json!({
            "offset": offset,
            "timeout": poll.as_secs(),
            "limit": UPDATES_PER_POLL,
            "allowed_updates": ["message", "callback_query"],
        });
        let result = self
            .call("getUpdates", &params, poll + CALL_TIMEOUT)
            .await?;
        let Value::Array(raw) = result else {
            return Err(ApiError::Malformed {
                method: "getUpdates",
                reason: "the result is not a list".into(),
            });
        };
        let mut last = None;
        let mut updates = Vec::with_capacity(raw.len());
        for value in raw {
            if let Some(id) = value["update_id"].as_i64() {
                last = last.max(Some(id));
            }
            match serde_json::from_value::<Update>(value) {
                Ok(update) => updates.push(update),
                Err(e) => tracing::warn!("skipping a Telegram update that cannot be read: {e}"),
            }
        }
        Ok((updates, last))
    }

    /// Sends `text` (plain, at most 4096 UTF-16 units: see `split`) with `buttons`
    /// under it; the new message's id.
    pub async fn send(&self, chat: i64, text: &str, buttons: &Buttons) -> Result<i64, ApiError> {
        let mut params = json!({"chat_id": chat, "text": text});
        if !buttons.is_empty() {
            params["reply_markup"] = keyboard(buttons);
        }
        let sent = self.call("sendMessage", &params, CALL_TIMEOUT).await?;
        sent["message_id"].as_i64().ok_or(ApiError::Malformed {
            method: "sendMessage",
            reason: "no message_id in the sent message".into(),
        })
    }

    /// Replaces the text (and buttons) of the bot's message `message`.
    pub async fn edit(
        &self,
        chat: i64,
        message: i64,
        text: &str,
        buttons: &Buttons,
    ) -> Result<(), ApiError> {
        let mut params = json!({"chat_id": chat, "message_id": message, "text": text});
        params["reply_markup"] = keyboard(buttons);
        self.call("editMessageText", &params, CALL_TIMEOUT)
            .await
            .map(drop)
    }

    /// Tells Telegram a button press was handled (`text`: a short notice to the
    /// presser).
    pub async fn answer_callback(&self, id: &str, text: Option<&str>) -> Result<(), ApiError> {
        let mut params = json!({"callback_query_id": id});
        if let Some(text) = text {
            params["text"] = json!(text);
        }
        self.call("answerCallbackQuery", &params, CALL_TIMEOUT)
            .await
            .map(drop)
    }

    /// "typing…" in the chat while an answer is being made.
    pub async fn typing(&self, chat: i64) -> Result<(), ApiError> {
        let params = json!({"chat_id": chat, "action": "typing"});
        self.call("sendChatAction", &params, CALL_TIMEOUT)
            .await
            .map(drop)
    }
}

fn keyboard(buttons: &Buttons) -> Value {
    let rows: Vec<Value> = buttons
        .iter()
        .map(|row| {
            row.iter()
                .map(|(text, data)| json!({"text": text, "callback_data": data}))
                .collect()
        })
        .collect();
    json!({ "inline_keyboard": rows })
}

//! STAND-IN for the Telegram Bot API (there is no network on this machine). A real HTTP
//! server on loopback that speaks the methods Engram's Telegram channel uses, as
//! `POST {base}/bot<token>/<method>` with a JSON body, refuses what Telegram refuses
//! (a wrong token, text over 4096 characters, callback data over 64 bytes), holds
//! `getUpdates` open as a long poll until an update arrives or its timeout passes, and
//! records every call. The test plays the people: it queues messages and button presses
//! as updates.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{Request, Response, Server};

/// One call the channel made.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    /// The id of the message a `sendMessage` created (to press its buttons).
    pub message_id: Option<i64>,
}

#[derive(Default)]
struct State {
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    calls: Vec<Call>,
}

pub struct Telegram {
    server: Server,
    state: Arc<(Mutex<State>, Condvar)>,
}

/// Telegram's limit on a message's text, in UTF-16 code units.
pub const MAX_TEXT: usize = 4096;

impl Telegram {
    pub fn start(token: &str) -> Telegram {
        let state = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let shared = state.clone();
        let prefix = format!("/bot{token}/");
        let server = Server::start(Arc::new(move |request: &Request| {
            let Some(method) = request.path.strip_prefix(&prefix) else {
                return Response::json(
                    401,
                    &json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
                );
            };
            handle(&shared, method, request.json())
        }));
        Telegram { server, state }
    }

    /// `channels.telegram.baseUrl` for this server.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// A text message from `user` (first name `name`) in `chat`.
    pub fn message(&self, chat: i64, user: i64, name: &str, text: &str) {
        let (lock, ready) = &*self.state;
        let mut state = lock.lock().unwrap();
        state.next_message += 1;
        let message_id = state.next_message;
        let chat_type = if chat == user { "private" } else { "group" };
        push(
            &mut state,
            json!({"message": {
                "message_id": message_id,
                "from": {"id": user, "is_bot": false, "first_name": name},
                "chat": {"id": chat, "type": chat_type},
                "date": 1_790_000_000,
                "text": text,
            }}),
        );
        ready.notify_all();
    }

    /// A press of the inline button with `data` under the bot's message `message_id`.
    pub fn press(&self, chat: i64, user: i64, message_id: i64, data: &str) {
        let (lock, ready) = &*self.state;
        let mut state = lock.lock().unwrap();
        let id = format!("cbq{}", state.next_update);
        push(
            &mut state,
            json!({"callback_query": {
                "id": id,
                "from": {"id": user, "is_bot": false, "first_name": "Presser"},
                "message": {
                    "message_id": message_id,
                    "chat": {"id": chat, "type": if chat == user { "private" } else { "group" }},
                    "date": 1_790_000_000,
                },
                "chat_instance": "1",
                "data": data,
            }}),
        );
        ready.notify_all();
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.0.lock().unwrap().calls.clone()
    }

    /// Waits (at most `limit`) until `done` holds for the calls so far; the calls.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Call]) -> bool) -> Vec<Call> {
        let (lock, ready) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap();
        loop {
            if done(&state.calls) {
                return state.calls.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let calls: Vec<String> = state
                    .calls
                    .iter()
                    .filter(|c| c.method != "getUpdates")
                    .map(|c| format!("{} {}", c.method, c.params))
                    .collect();
                panic!(
                    "the Telegram stand-in did not see what the test waited for within {limit:?}; calls:\n{}",
                    calls.join("\n")
                );
            }
            state = ready.wait_timeout(state, left).unwrap().0;
        }
    }

    /// The texts sent to `chat` (sendMessage and editMessageText), in order.
    pub fn texts_to(&self, chat: i64) -> Vec<String> {
        texts_to(&self.calls(), chat)
    }
}

/// The texts sent to `chat` among `calls`.
pub fn texts_to(calls: &[Call], chat: i64) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.method == "sendMessage" || c.method == "editMessageText")
        .filter(|c| c.params["chat_id"].as_i64() == Some(chat))
        .map(|c| c.params["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn push(state: &mut State, mut update: Value) {
    state.next_update += 1;
    update["update_id"] = json!(state.next_update);
    state.updates.push(update);
}

fn ok(result: Value) -> Response {
    Response::json(200, &json!({"ok": true, "result": result}))
}

fn bad(description: &str) -> Response {
    Response::json(
        400,
        &json!({"ok": false, "error_code": 400, "description": format!("Bad Request: {description}")}),
    )
}

fn handle(shared: &Arc<(Mutex<State>, Condvar)>, method: &str, params: Value) -> Response {
    let (lock, ready) = &**shared;
    if method == "getUpdates" {
        let offset = params["offset"].as_i64().unwrap_or(0);
        // Long polling, bounded so that a stopping test never waits long.
        let timeout = Duration::from_secs(params["timeout"].as_u64().unwrap_or(0).min(5));
        let deadline = Instant::now() + timeout;
        let mut state = lock.lock().unwrap();
        state.calls.push(Call {
            method: method.into(),
            params: params.clone(),
            message_id: None,
        });
        // Confirmed updates are forgotten, as Telegram forgets them.
        state
            .updates
            .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
        loop {
            if !state.updates.is_empty() {
                return ok(Value::Array(state.updates.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return ok(json!([]));
            }
            state = ready.wait_timeout(state, left).unwrap().0;
        }
    }
    let mut state = lock.lock().unwrap();
    let response = answer(&mut state, method, &params);
    ready.notify_all();
    response
}

/// Answers a call other than `getUpdates`, recording it.
fn answer(state: &mut State, method: &str, params: &Value) -> Response {
    let mut call = Call {
        method: method.into(),
        params: params.clone(),
        message_id: None,
    };
    let response = respond(state, method, params, &mut call);
    state.calls.push(call);
    response
}

fn respond(state: &mut State, method: &str, params: &Value, call: &mut Call) -> Response {
    match method {
        "getMe" => ok(
            json!({"id": 4242, "is_bot": true, "first_name": "Engram", "username": "engram_standin_bot"}),
        ),
        "sendMessage" | "editMessageText" => {
            let text = params["text"].as_str().unwrap_or_default();
            if text.is_empty() {
                return bad("message text is empty");
            }
            if text.encode_utf16().count() > MAX_TEXT {
                return bad("message is too long");
            }
            if let Some(problem) = bad_markup(&params["reply_markup"]) {
                return bad(&problem);
            }
            let message_id = if method == "sendMessage" {
                state.next_message += 1;
                call.message_id = Some(state.next_message);
                state.next_message
            } else {
                params["message_id"].as_i64().unwrap_or(0)
            };
            ok(json!({
                "message_id": message_id,
                "chat": {"id": params["chat_id"], "type": "private"},
                "date": 1_790_000_000,
                "text": text,
            }))
        }
        "answerCallbackQuery" | "sendChatAction" => ok(json!(true)),
        other => Response::json(
            404,
            &json!({"ok": false, "error_code": 404, "description": format!("Not Found: method {other}")}),
        ),
    }
}

fn bad_markup(markup: &Value) -> Option<String> {
    if markup.is_null() {
        return None;
    }
    let Some(rows) = markup["inline_keyboard"].as_array() else {
        return Some("reply_markup has no inline_keyboard".into());
    };
    for row in rows {
        let Some(row) = row.as_array() else {
            return Some("a keyboard row is not a list".into());
        };
        for button in row {
            if !button["text"].is_string() {
                return Some("button text is missing".into());
            }
            let data = button["callback_data"].as_str().unwrap_or_default();
            if data.is_empty() || data.len() > 64 {
                return Some("BUTTON_DATA_INVALID".into());
            }
        }
    }
    None
}

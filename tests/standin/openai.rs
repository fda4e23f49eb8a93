//! STAND-IN for an OpenAI-compatible chat-completions endpoint (there is no model and
//! no network on this machine). A real HTTP server on loopback that checks each request
//! is a well-formed `POST /v1/chat/completions`, records it, and answers what the test
//! scripted: streamed text, streamed tool calls (arguments split across chunks, as real
//! servers send them), a plain JSON completion, or raw bytes for the garbage cases.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{Request, Response, Server};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Streamed text, in a few pieces.
    Text(String),
    /// Streamed tool calls: (name, arguments).
    Tools(Vec<(String, Value)>),
    /// Some text, then tool calls, in one streamed answer.
    TextThenTools(String, Vec<(String, Value)>),
    /// Starts a stream, then says nothing more for this long and closes it unfinished.
    Stall(Duration),
    /// Whatever bytes the test wants, with this status and type.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
}

/// The script: the answer to the `n`th request (from 0), which the test may compute
/// from the request itself.
pub type Script = dyn Fn(usize, &Value) -> Reply + Send + Sync;

pub struct OpenAi {
    server: Server,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl OpenAi {
    pub fn start(script: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> OpenAi {
        let requests = Arc::new(Mutex::new(Vec::<Value>::new()));
        let seen = requests.clone();
        let script: Box<Script> = Box::new(script);
        let server = Server::start(Arc::new(move |request: &Request| {
            if let Some(problem) = malformed(request) {
                return Response::json(
                    400,
                    &json!({"error": {"message": problem, "type": "invalid_request_error"}}),
                );
            }
            let body = request.json();
            let n = {
                let mut seen = seen.lock().unwrap();
                seen.push(body.clone());
                seen.len() - 1
            };
            answer(script(n, &body))
        }));
        OpenAi { server, requests }
    }

    /// `llm.baseUrl` for this server.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }

    /// Every request received so far (the JSON bodies).
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// A stand-in that answers each request with the next step the test queued (and,
    /// once the queue is empty, a text saying so).
    pub fn queued() -> (OpenAi, Queue) {
        let queue = Queue::default();
        let steps = queue.0.clone();
        let server = OpenAi::start(move |_, request| {
            let step = steps.lock().unwrap().pop_front();
            match step {
                Some(step) => step(request),
                None => Reply::Text("(the test scripted nothing more)".into()),
            }
        });
        (server, queue)
    }
}

/// A step of a queued script: the reply, possibly made from the request.
type Step = Box<dyn FnOnce(&Value) -> Reply + Send>;

/// The queue behind [`OpenAi::queued`].
#[derive(Clone, Default)]
pub struct Queue(Arc<Mutex<VecDeque<Step>>>);

impl Queue {
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        let mut steps = self.0.lock().unwrap();
        for reply in replies {
            steps.push_back(Box::new(move |_| reply));
        }
    }

    /// A reply made from the request it answers.
    pub fn push_fn(&self, step: impl FnOnce(&Value) -> Reply + Send + 'static) {
        self.0.lock().unwrap().push_back(Box::new(step));
    }
}

/// The text of the last user message of a request.
pub fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// What a real endpoint would refuse.
fn malformed(request: &Request) -> Option<String> {
    if request.method != "POST" || request.path != "/v1/chat/completions" {
        return Some(format!("no route {} {}", request.method, request.path));
    }
    let body = request.json();
    if !body["model"].is_string() {
        return Some("`model` is required".into());
    }
    let Some(messages) = body["messages"].as_array() else {
        return Some("`messages` is required".into());
    };
    for message in messages {
        let role = message["role"].as_str().unwrap_or_default();
        if !["system", "user", "assistant", "tool"].contains(&role) {
            return Some(format!("bad role {role:?}"));
        }
        if !message["content"].is_string() && message["tool_calls"].is_null() {
            return Some("a message has no content".into());
        }
        if role == "tool" && !message["tool_call_id"].is_string() {
            return Some("a tool message has no tool_call_id".into());
        }
    }
    if let Some(tools) = body.get("tools") {
        let Some(tools) = tools.as_array() else {
            return Some("`tools` is not a list".into());
        };
        for tool in tools {
            if tool["type"] != "function" || !tool["function"]["name"].is_string() {
                return Some(format!("bad tool {tool}"));
            }
        }
    }
    None
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let event = json!({
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "model": "standin",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {event}\n\n")
}

fn answer(reply: Reply) -> Response {
    let pause = Duration::from_millis(5);
    let mut pieces: Vec<String> = vec![chunk(json!({"role": "assistant"}), None)];
    let (text, tools) = match reply {
        Reply::Raw {
            status,
            content_type,
            body,
        } => {
            return Response::Full {
                status,
                content_type,
                body: body.into_bytes(),
            };
        }
        Reply::Stall(pause) => {
            return Response::Stream {
                content_type: "text/event-stream".into(),
                pieces: vec![
                    (
                        Duration::ZERO,
                        chunk(json!({"role": "assistant"}), None).into_bytes(),
                    ),
                    (pause, Vec::new()),
                ],
            };
        }
        Reply::Text(text) => (text, Vec::new()),
        Reply::Tools(tools) => (String::new(), tools),
        Reply::TextThenTools(text, tools) => (text, tools),
    };
    // Text in three pieces, split on character boundaries.
    let chars: Vec<char> = text.chars().collect();
    let third = chars.len().div_ceil(3).max(1);
    for piece in chars.chunks(third) {
        let piece: String = piece.iter().collect();
        pieces.push(chunk(json!({"content": piece}), None));
    }
    for (index, (name, args)) in tools.iter().enumerate() {
        let args = args.to_string();
        let half = args.len() / 2;
        let (first, rest) = args.split_at(half);
        pieces.push(chunk(
            json!({"tool_calls": [{
                "index": index, "id": format!("call_{index}"), "type": "function",
                "function": {"name": name, "arguments": first},
            }]}),
            None,
        ));
        pieces.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": rest}}]}),
            None,
        ));
    }
    let finish = if tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    pieces.push(chunk(json!({}), Some(finish)));
    pieces.push("data: [DONE]\n\n".into());
    Response::Stream {
        content_type: "text/event-stream".into(),
        pieces: pieces
            .into_iter()
            .map(|p| (pause, p.into_bytes()))
            .collect(),
    }
}

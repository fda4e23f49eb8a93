//! STAND-IN for an OpenAI-compatible chat-completions endpoint (there is no model and
//! no network on this machine). A real HTTP server on loopback that checks each request
//! is a well-formed `POST /v1/chat/completions`, records it, and answers what the test
//! scripted, the way the request asked: streamed (`"stream": true`, the chat agent:
//! text in pieces, tool calls with their arguments split across chunks, as real servers
//! send them) or as one completion (`builtin:extract-llm`); or raw bytes, a stall or a
//! refusal for the failure cases. Shared by the host's tests and benches
//! (`support::openai`) and the end-to-end tests (`standin::openai`).
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{Request, Response, Server};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A message with this text.
    Text(String),
    /// Tool calls: (name, arguments).
    Tools(Vec<(String, Value)>),
    /// Some text, then tool calls, in one answer.
    TextThenTools(String, Vec<(String, Value)>),
    /// The model refuses: the message's `refusal`, no content.
    Refusal(String),
    /// Says nothing more for this long, then closes the connection unfinished: a
    /// stream after its first chunk, a completion before anything.
    Stall(Duration),
    /// Whatever bytes the test wants, with this status and type; a 200 without
    /// `declared` has no Content-Length, its body ending when the connection closes.
    Raw {
        status: u16,
        content_type: String,
        body: Vec<u8>,
        declared: bool,
    },
}

/// The script: the answer to the `n`th request (from 0), which the test may compute
/// from the request itself.
pub type Script = dyn Fn(usize, &Value) -> Reply + Send + Sync;

pub struct OpenAi {
    server: Server,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl OpenAi {
    pub fn start(script: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> OpenAi {
        let requests = Arc::new(Mutex::new(Vec::<Request>::new()));
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
                seen.push(request.clone());
                seen.len() - 1
            };
            let streamed = body["stream"] == true;
            answer(script(n, &body), streamed)
        }));
        OpenAi { server, requests }
    }

    /// `llm.baseUrl` for this server.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }

    /// The `allowedHosts` entry it needs: an IP literal, explicit enough to be private.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.server.port())
    }

    /// The JSON bodies of every request received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.raw_requests().iter().map(Request::json).collect()
    }

    /// Every request received so far, with its method, path and headers.
    pub fn raw_requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// A stand-in that answers every request with one reply, which the test may change
    /// ([`Answer::set`]).
    pub fn answering(reply: Reply) -> (OpenAi, Answer) {
        let answer = Answer(Arc::new(Mutex::new(reply)));
        let current = answer.0.clone();
        let server = OpenAi::start(move |_, _| current.lock().unwrap().clone());
        (server, answer)
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

/// The reply behind [`OpenAi::answering`].
#[derive(Clone)]
pub struct Answer(Arc<Mutex<Reply>>);

impl Answer {
    pub fn set(&self, reply: Reply) {
        *self.0.lock().unwrap() = reply;
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

/// A whole (not streamed) completion carrying `message`.
fn completion_of(message: Value, finish: &str) -> Vec<u8> {
    json!({
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": "standin",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
    .to_string()
    .into_bytes()
}

/// A whole completion whose message content is `content`.
pub fn completion(content: &str) -> Vec<u8> {
    completion_of(
        json!({"role": "assistant", "content": content, "refusal": null}),
        "stop",
    )
}

/// The facts JSON of the extraction schema, one fact per `(type, summary, quote)`.
pub fn facts(items: &[(&str, &str, &str)]) -> String {
    let facts: Vec<Value> = items
        .iter()
        .map(|(memory_type, summary, quote)| {
            json!({
                "type": memory_type,
                "summary": summary,
                "evidence": "direct",
                "confidence": 0.9,
                "negated": false,
                "persons": [],
                "quote": quote,
            })
        })
        .collect();
    json!({ "facts": facts }).to_string()
}

/// What a model that answers each conversation differently might extract from an
/// extraction request: each of the first 3 user messages of its transcript (the
/// `[user]` blocks of the second message) becomes an episode "User said: <message>"
/// quoting it.
pub fn echo_facts(request: &Value) -> String {
    let transcript = request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    let mut said = Vec::new();
    let mut in_user = false;
    for line in transcript.lines() {
        match line {
            "[user]" => in_user = true,
            "[assistant]" => in_user = false,
            text if in_user && !text.trim().is_empty() => said.push(text.trim().to_string()),
            _ => {}
        }
    }
    let items: Vec<(String, String)> = said
        .into_iter()
        .take(3)
        .map(|text| {
            let short: String = text.chars().take(200).collect();
            (format!("User said: {short}"), short)
        })
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|(summary, quote)| ("episode", summary.as_str(), quote.as_str()))
        .collect();
    facts(&borrowed)
}

fn answer(reply: Reply, streamed: bool) -> Response {
    let (text, tools) = match reply {
        Reply::Raw {
            status,
            content_type,
            body,
            declared,
        } => {
            if declared || status != 200 {
                return Response::Full {
                    status,
                    content_type,
                    body,
                };
            }
            return Response::Stream {
                content_type,
                pieces: vec![(Duration::ZERO, body)],
            };
        }
        Reply::Stall(pause) if !streamed => {
            std::thread::sleep(pause);
            return Response::Stream {
                content_type: "application/json".into(),
                pieces: Vec::new(),
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
        Reply::Refusal(reason) if !streamed => {
            return Response::Full {
                status: 200,
                content_type: "application/json".into(),
                body: completion_of(
                    json!({"role": "assistant", "content": null, "refusal": reason}),
                    "stop",
                ),
            };
        }
        Reply::Refusal(reason) => {
            return stream(vec![
                chunk(json!({"role": "assistant"}), None),
                chunk(json!({"refusal": reason}), None),
                chunk(json!({}), Some("stop")),
                "data: [DONE]\n\n".into(),
            ]);
        }
        Reply::Text(text) => (text, Vec::new()),
        Reply::Tools(tools) => (String::new(), tools),
        Reply::TextThenTools(text, tools) => (text, tools),
    };
    let finish = if tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    if !streamed {
        let calls: Vec<Value> = tools
            .iter()
            .enumerate()
            .map(|(index, (name, args))| {
                json!({
                    "id": format!("call_{index}"), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()},
                })
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": text, "refusal": null});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        return Response::Full {
            status: 200,
            content_type: "application/json".into(),
            body: completion_of(message, finish),
        };
    }
    let mut pieces: Vec<String> = vec![chunk(json!({"role": "assistant"}), None)];
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
    pieces.push(chunk(json!({}), Some(finish)));
    pieces.push("data: [DONE]\n\n".into());
    stream(pieces)
}

/// Server-sent events, each piece after a short pause, as a model streams them.
fn stream(pieces: Vec<String>) -> Response {
    let pause = Duration::from_millis(5);
    Response::Stream {
        content_type: "text/event-stream".into(),
        pieces: pieces
            .into_iter()
            .map(|p| (pause, p.into_bytes()))
            .collect(),
    }
}

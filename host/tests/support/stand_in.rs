//! A STAND-IN for an OpenAI-compatible chat-completions endpoint, on loopback. The test
//! machines have no network and no model, so this serves scripted answers (a good one,
//! broken ones, a hanging one) to `builtin:extract-llm`, and records every request it
//! gets. Shared by the host's tests and benchmarks and by the end-to-end tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// What the stand-in answers to the next requests.
#[derive(Debug, Clone)]
pub enum Answer {
    /// HTTP 200 with a completion whose message content is this text.
    Content(String),
    /// HTTP 200 with a completion whose message is a refusal.
    Refusal(String),
    /// Any status and body; `declared` sends a Content-Length, otherwise the body ends
    /// when the connection closes.
    Raw {
        status: u16,
        body: Vec<u8>,
        declared: bool,
    },
    /// Reads the request and never answers (the connection stays open for a minute).
    Hang,
    /// HTTP 200 with facts made from the request itself, like a model that answers each
    /// conversation differently: each of the first 3 user messages of the transcript
    /// becomes an episode "User said: <message>" quoting it.
    Echo,
}

/// One request as the stand-in read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lowercased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

pub struct StandIn {
    pub addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl StandIn {
    /// Listens on 127.0.0.1 (a free port) and answers `answer` until told otherwise.
    pub fn start(answer: Answer) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stand-in");
        let addr = listener.local_addr().expect("addr");
        let answer = Arc::new(Mutex::new(answer));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (current, log) = (answer.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (current, log) = (current.clone(), log.clone());
                std::thread::spawn(move || serve(stream, &current, &log));
            }
        });
        StandIn {
            addr,
            answer,
            requests,
        }
    }

    pub fn set(&self, answer: Answer) {
        *self.answer.lock().expect("lock") = answer;
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    /// The `baseUrl` setting that points at this stand-in.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The `allowedHosts` entry it needs: an IP literal, explicit enough to be private.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

/// A chat-completions response whose message content is `content`.
pub fn completion(content: &str) -> Vec<u8> {
    json!({
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "model": "stand-in",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
    .to_string()
    .into_bytes()
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

/// The facts [`Answer::Echo`] gives for a transcript of `[role]` blocks.
fn echo(transcript: &str) -> String {
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

fn serve(stream: TcpStream, answer: &Mutex<Answer>, log: &Mutex<Vec<Recorded>>) {
    let Ok(request) = read_request(&stream) else {
        return;
    };
    log.lock().expect("lock").push(request);
    let answer = answer.lock().expect("lock").clone();
    let (status, body, declared) = match answer {
        Answer::Content(content) => (200, completion(&content), true),
        Answer::Refusal(reason) => {
            let body = json!({
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": null, "refusal": reason},
                    "finish_reason": "stop"
                }]
            });
            (200, body.to_string().into_bytes(), true)
        }
        Answer::Raw {
            status,
            body,
            declared,
        } => (status, body, declared),
        Answer::Hang => {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        Answer::Echo => {
            let recorded = log.lock().expect("lock").last().cloned();
            let transcript = recorded
                .and_then(|r| serde_json::from_slice::<Value>(&r.body).ok())
                .and_then(|body| body["messages"][1]["content"].as_str().map(str::to_string))
                .unwrap_or_default();
            (200, completion(&echo(&transcript)), true)
        }
    };
    let mut head =
        format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nconnection: close\r\n");
    if declared {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

fn read_request(stream: &TcpStream) -> std::io::Result<Recorded> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Recorded {
        method,
        path,
        headers,
        body,
    })
}

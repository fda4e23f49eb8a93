//! MCP round-trip benchmark: `cargo bench -p engram-host --bench mcp` (`-- --quick` for a
//! short run). The real release daemon runs as a second process on a data directory
//! with 500 memories; the same message opens a turn through each way in, in turns
//! (one of each per round, the order rotating so that no way in always goes first):
//!
//! - REST: `POST /api/turns {message}` on a keep-alive connection (the baseline);
//! - MCP over streamable HTTP, a handshake-era session (`Mcp-Session-Id`, SSE answer);
//! - MCP over streamable HTTP, 2026-07-28 (stateless, JSON answer);
//! - MCP over stdio: `engram mcp` relaying to the daemon, as clients that spawn a
//!   command use it.
//!
//! Each is timed from the request's first byte to the parsed answer; every turn is then
//! ended over REST, untimed. It prints p50 and p95 per way in and their ratio to REST's
//! in the same run (target: within 1.5x). ENGRAM_MCP_BENCH_ROUNDS overrides the rounds
//! (default 300; `--quick` 60).

// This bench uses only some of the helpers shared by the benches.
#[allow(dead_code)]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::daemon::Daemon;
use common::{Rng, Table, agent_question, ms, percentile, ratio, synthetic_summary};

const MEMORIES: usize = 500;
const WARMUP: usize = 20;
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds: usize = std::env::var("ENGRAM_MCP_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 60 } else { 300 });
    let bin = env!("CARGO_BIN_EXE_engram");
    let data = tempfile::tempdir().expect("temporary data directory");
    let token = "mcp-bench-token-0123456789abcdef";
    let (daemon, _) = Daemon::start(Path::new(bin), data.path(), token);
    let url = format!("http://{}", daemon.addr);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let rest = Rest {
        http: http.clone(),
        url: url.clone(),
        token,
    };

    eprintln!("seeding {MEMORIES} memories...");
    let mut rng = Rng(0x3C9);
    runtime.block_on(async {
        for _ in 0..MEMORIES {
            let (memory_type, summary) = synthetic_summary(&mut rng, 10);
            let body = json!({"type": memory_type.as_str(), "summary": summary});
            rest.post("/api/brain/memory", &body).await;
        }
    });

    let session = runtime.block_on(McpHttp::session(&http, &url, token));
    let stateless = McpHttp::stateless(&http, &url, token);
    let mut stdio = StdioClient::start(bin, data.path(), token);

    let messages: Vec<String> = (0..rounds + WARMUP)
        .map(|i| agent_question(&mut rng, i))
        .collect();
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for (round, message) in messages.iter().enumerate() {
        for k in 0..4 {
            let way = (round + k) % 4;
            let started = Instant::now();
            let turn = match way {
                0 => runtime.block_on(rest.open(message)),
                1 => runtime.block_on(session.context(message)),
                2 => runtime.block_on(stateless.context(message)),
                _ => stdio.context(message),
            };
            let took = started.elapsed();
            runtime.block_on(rest.post(&format!("/api/turns/{turn}/end"), &json!({})));
            if round >= WARMUP {
                samples[way].push(took);
            }
        }
    }
    drop(stdio);
    let stopped = daemon.stop();
    assert!(stopped.success(), "the daemon stopped with {stopped}");

    for s in &mut samples {
        s.sort();
    }
    let p = |way: usize, q: f64| percentile(&samples[way], q);
    let mut table = Table::default();
    table.section(&format!(
        "memory_context round trip, {rounds} rounds over {MEMORIES} memories (baseline: POST /api/turns, same run)"
    ));
    table.row("REST POST /api/turns p50", &ms(p(0, 0.5)), "", "");
    table.row("REST POST /api/turns p95", &ms(p(0, 0.95)), "", "");
    for (way, name) in [
        (1, "MCP HTTP (session)"),
        (2, "MCP HTTP (2026-07-28)"),
        (3, "MCP stdio (engram mcp)"),
    ] {
        for (q, label) in [(0.5, "p50"), (0.95, "p95")] {
            table.row(
                &format!("{name} {label}"),
                &ms(p(way, q)),
                &ms(p(0, q)),
                &format!("{} REST (target <= 1.5x)", ratio(p(way, q), p(0, q))),
            );
        }
    }
    table.print();
}

struct Rest {
    http: reqwest::Client,
    url: String,
    token: &'static str,
}

impl Rest {
    async fn post(&self, path: &str, body: &Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(self.token)
            .json(body)
            .send()
            .await
            .expect("REST request");
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.json().await.expect("REST JSON")
    }

    async fn open(&self, message: &str) -> String {
        let opened = self
            .post("/api/turns", &json!({ "message": message }))
            .await;
        opened["turn_id"].as_str().expect("turn_id").to_string()
    }
}

/// `memory_context`'s arguments and the turn id of its answer.
fn call(id: u64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "memory_context", "arguments": {"message": message}},
    })
}

fn turn_of(answer: &Value) -> String {
    let result = &answer["result"];
    assert_ne!(
        result["isError"],
        json!(true),
        "memory_context failed: {answer}"
    );
    result["structuredContent"]["turn_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no turn_id in {answer}"))
        .to_string()
}

/// The JSON-RPC answer in an HTTP body: JSON, or the `data` of an SSE event.
fn answer_in(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer in {body}"))
}

struct McpHttp {
    http: reqwest::Client,
    url: String,
    token: &'static str,
    session: Option<String>,
    version: &'static str,
}

impl McpHttp {
    /// A handshake-era session: initialize, then initialized.
    async fn session(http: &reqwest::Client, url: &str, token: &'static str) -> McpHttp {
        let version = "2025-11-25";
        let mut client = McpHttp {
            http: http.clone(),
            url: format!("{url}/mcp"),
            token,
            session: None,
            version,
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}});
        let response = client.send(&initialize).await;
        client.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        assert!(client.session.is_some(), "no session id");
        let _ = response.text().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = client.send(&initialized).await.text().await;
        client
    }

    fn stateless(http: &reqwest::Client, url: &str, token: &'static str) -> McpHttp {
        McpHttp {
            http: http.clone(),
            url: format!("{url}/mcp"),
            token,
            session: None,
            version: "2026-07-28",
        }
    }

    async fn send(&self, message: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.version)
            .json(message);
        match &self.session {
            Some(session) => request = request.header("mcp-session-id", session),
            // A sessionless (2026-07-28) request names its method (and the tool or
            // prompt it calls) in headers too.
            None => {
                if let Some(method) = message["method"].as_str() {
                    request = request.header("mcp-method", method);
                }
                if let Some(name) = message["params"]["name"].as_str() {
                    request = request.header("mcp-name", name);
                }
            }
        }
        let response = request.send().await.expect("MCP request");
        if !response.status().is_success() {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            panic!("MCP answered {status} to {message}: {body}");
        }
        response
    }

    async fn context(&self, message: &str) -> String {
        let mut request = call(1, message);
        if self.session.is_none() {
            request["params"]["_meta"] = json!({
                VERSION_META: self.version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            });
        }
        let body = self.send(&request).await.text().await.expect("body");
        turn_of(&answer_in(&body))
    }
}

/// `engram mcp` as a child process, one JSON-RPC message a line.
struct StdioClient {
    child: Child,
    /// Taken (closed) when dropped, which ends the session.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    fn start(bin: &str, data: &Path, token: &str) -> StdioClient {
        let mut child = Command::new(bin)
            .arg("--data-dir")
            .arg(data)
            .arg("mcp")
            .env("ENGRAM_LOG", "warn")
            // The bench daemon takes its token from the environment (no auth-token
            // file is written), so the relay gets the same one.
            .env("ENGRAM_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start engram mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut stdio = StdioClient {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
        };
        stdio.request(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}),
        );
        stdio.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        stdio
    }

    fn write(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().expect("open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request and reads lines until its answer.
    fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.write(&message);
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read");
            assert!(read > 0, "engram mcp closed its output");
            if let Ok(answer) = serde_json::from_str::<Value>(&line)
                && answer["id"] == id
            {
                return answer;
            }
        }
    }

    fn context(&mut self, message: &str) -> String {
        self.next_id += 1;
        let answer = self.request(call(self.next_id, message));
        turn_of(&answer)
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        // Closing stdin ends the session; the relay exits by itself.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

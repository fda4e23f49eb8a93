//! `engram mcp` without `--embedded`: stdio for clients that spawn a command, relayed
//! to the running daemon's `/mcp` (streamable HTTP), found as `engram memory` finds it
//! (`daemon.json`, `auth-token`). There is one MCP server, the daemon's; this only
//! moves JSON-RPC messages between the two transports and knows nothing of tools.
//!
//! - Each line from stdin is one message, POSTed as it comes (requests run
//!   concurrently, as over stdio); the answer, a JSON body or an event stream, is
//!   written to stdout one message a line, in the order the daemon sends it.
//! - The session id (`Mcp-Session-Id`) and the protocol version negotiated by
//!   `initialize` go with every later POST; a 2026-07-28 request carries its version in
//!   its `_meta`, which is sent as the `MCP-Protocol-Version` header. Once a session
//!   exists, a GET stream brings the daemon's own notifications (`list_changed`).
//! - `notifications/cancelled` also drops the request's HTTP exchange, which is how
//!   the daemon learns of it for stateless requests.
//! - A request the daemon refuses without a JSON-RPC answer (401, 413, a daemon that
//!   went away) is answered here with a JSON-RPC error saying so: the client never
//!   waits for an answer that will not come.
//! - EOF on stdin ends the session (DELETE) and the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::client::{ClientError, Endpoint};
use crate::api::extract::MAX_BODY_BYTES;
use crate::mcp::http::PATH;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The longest message read from stdin. One over the daemon's body limit (1 MiB) is
/// answered here, as the daemon would refuse it: sending it only to be cut off
/// mid-body would lose the answer to its id.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The longest answer body kept when it is not an event stream.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// JSON-RPC's "internal error", for failures of the relay itself.
const RELAY_ERROR: i64 = -32603;

struct Bridge {
    endpoint: Endpoint,
    http: reqwest::Client,
    url: String,
    session: Mutex<Option<String>>,
    /// The version `initialize` negotiated (handshake-era sessions).
    version: Mutex<Option<String>>,
    /// Requests in flight by their JSON-RPC id, to drop on `notifications/cancelled`.
    inflight: Mutex<HashMap<String, AbortHandle>>,
    out: mpsc::UnboundedSender<Value>,
}

/// Relays stdin/stdout to the daemon until stdin closes.
pub fn run(endpoint: Endpoint) -> Result<(), ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClientError::Setup(e.to_string()))?;
    runtime.block_on(relay(endpoint))
}

async fn relay(endpoint: Endpoint) -> Result<(), ClientError> {
    let http = endpoint.http_client(None)?;
    // Fail now, with the CLI's message and exit code, rather than at the first request.
    http.get(format!("{}/healthz", endpoint.url))
        .send()
        .await
        .map_err(|e| endpoint.unreachable(&e))?;
    let (out, mut to_stdout) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(message) = to_stdout.recv().await {
            let mut line = message.to_string().into_bytes();
            line.push(b'\n');
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let bridge = Arc::new(Bridge {
        url: format!("{}{PATH}", endpoint.url),
        endpoint,
        http,
        session: Mutex::new(None),
        version: Mutex::new(None),
        inflight: Mutex::new(HashMap::new()),
        out,
    });
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(line) = read_line(&mut stdin).await {
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            // Not JSON: nothing to answer to (as the MCP SDKs do).
            continue;
        };
        if message["method"] == "notifications/cancelled"
            && let Some(cancelled) = message["params"].get("requestId")
            && let Some(task) = lock(&bridge.inflight).remove(&cancelled.to_string())
        {
            task.abort();
        }
        while tasks.try_join_next().is_some() {}
        if line.len() > MAX_BODY_BYTES {
            bridge.fail(&message, too_large());
            continue;
        }
        let id = request_id(&message);
        let task = tasks.spawn(bridge.clone().post(line, message));
        if let Some(id) = id {
            let mut inflight = lock(&bridge.inflight);
            inflight.retain(|_, task| !task.is_finished());
            inflight.insert(id, task);
        }
    }
    // The client is gone: let the daemon free the session, then stop.
    tasks.abort_all();
    let session = lock(&bridge.session).clone();
    if let Some(session) = session {
        let _ = bridge
            .http
            .delete(&bridge.url)
            .bearer_auth(&bridge.endpoint.token)
            .header(SESSION_HEADER, session)
            .send()
            .await;
    }
    drop(bridge);
    let _ = writer.await;
    Ok(())
}

/// One line of stdin without its end (a blank line is skipped); `None` at EOF. A line
/// over [`MAX_LINE_BYTES`] is dropped whole.
async fn read_line(stdin: &mut BufReader<tokio::io::Stdin>) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let available = stdin.fill_buf().await.ok()?;
        if available.is_empty() {
            return None;
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        if !oversized {
            if line.len() + take > MAX_LINE_BYTES {
                oversized = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        stdin.consume(take);
        if done {
            if oversized {
                tracing::error!("a message over {MAX_LINE_BYTES} bytes was dropped");
                oversized = false;
                continue;
            }
            while line.last().is_some_and(|b| b.is_ascii_whitespace()) {
                line.pop();
            }
            if line.is_empty() {
                continue;
            }
            return Some(line);
        }
    }
}

fn too_large() -> String {
    format!(
        "the message is over the daemon's {} MiB limit (413)",
        MAX_BODY_BYTES / (1024 * 1024)
    )
}

/// The id of a request (a message with a method and an id), as its JSON text.
fn request_id(message: &Value) -> Option<String> {
    (message.get("method").is_some() && message.get("id").is_some())
        .then(|| message["id"].to_string())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Bridge {
    fn send(&self, message: Value) {
        let _ = self.out.send(message);
    }

    /// Answers the request `message` (if it is one) with a JSON-RPC error.
    fn fail(&self, message: &Value, reason: String) {
        if request_id(message).is_some() {
            self.send(json!({
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": RELAY_ERROR, "message": reason},
            }));
        }
    }

    fn headers(&self, message: &Value) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, "application/json".parse().expect("static"));
        headers.insert(
            ACCEPT,
            "application/json, text/event-stream"
                .parse()
                .expect("static"),
        );
        let version = message["params"]["_meta"][VERSION_META]
            .as_str()
            .map(str::to_string)
            .or_else(|| lock(&self.version).clone());
        if let Some(version) = version.and_then(|v| v.parse().ok()) {
            headers.insert(VERSION_HEADER, version);
        }
        if let Some(session) = lock(&self.session).as_deref().and_then(|s| s.parse().ok()) {
            headers.insert(SESSION_HEADER, session);
        }
        headers
    }

    async fn post(self: Arc<Self>, body: Vec<u8>, message: Value) {
        let initialize = message["method"] == "initialize";
        let sent = self
            .http
            .post(&self.url)
            .bearer_auth(&self.endpoint.token)
            .headers(self.headers(&message))
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                let reason = self.endpoint.unreachable(&e).to_string();
                return self.fail(&message, reason);
            }
        };
        if initialize
            && let Some(session) = response.headers().get(SESSION_HEADER)
            && let Ok(session) = session.to_str()
        {
            *lock(&self.session) = Some(session.to_string());
        }
        let status = response.status();
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let relayed = if streamed {
            self.relay_stream(response, initialize).await
        } else {
            self.relay_body(response, initialize).await
        };
        if let Some(id) = request_id(&message) {
            lock(&self.inflight).remove(&id);
        }
        match relayed {
            Ok(true) => {}
            // Nothing that answers the request came back.
            Ok(false) if status.is_success() => {}
            Ok(false) => {
                let reason = match status.as_u16() {
                    401 => "the daemon refused the API token (401); check {data_dir}/auth-token or ENGRAM_TOKEN".to_string(),
                    404 if lock(&self.session).is_some() => "the daemon no longer knows this MCP session (it restarted?); restart the MCP client".to_string(),
                    413 => too_large(),
                    _ => format!("the daemon answered {status}"),
                };
                self.fail(&message, reason);
            }
            Err(reason) => self.fail(&message, reason),
        }
    }

    /// Relays a JSON answer; whether it held a JSON-RPC message.
    async fn relay_body(
        &self,
        mut response: reqwest::Response,
        initialize: bool,
    ) -> Result<bool, String> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!(
                    "the daemon's answer is over {MAX_ANSWER_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Array(batch)) => {
                let any = !batch.is_empty();
                for message in batch {
                    self.deliver(message, initialize);
                }
                Ok(any)
            }
            Ok(message) if message.get("jsonrpc").is_some() => {
                self.deliver(message, initialize);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Relays each event of a stream as it comes; whether any was a JSON-RPC message.
    async fn relay_stream(
        &self,
        mut response: reqwest::Response,
        initialize: bool,
    ) -> Result<bool, String> {
        let mut events = SseBuffer::default();
        let mut any = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            for data in events.push(&chunk)? {
                if let Ok(message) = serde_json::from_str::<Value>(&data) {
                    any = true;
                    self.deliver(message, initialize);
                }
            }
        }
        Ok(any)
    }

    fn deliver(self: &Bridge, message: Value, initialize: bool) {
        if initialize && let Some(version) = message["result"]["protocolVersion"].as_str() {
            *lock(&self.version) = Some(version.to_string());
        }
        if initialize && message.get("result").is_some() {
            self.open_notifications();
        }
        self.send(message);
    }

    /// Once the session exists, a GET stream brings what the daemon sends on its own.
    fn open_notifications(&self) {
        let Some(session) = lock(&self.session).clone() else {
            return;
        };
        let request = self
            .http
            .get(&self.url)
            .bearer_auth(&self.endpoint.token)
            .header(ACCEPT, "text/event-stream")
            .header(SESSION_HEADER, session);
        let request = match lock(&self.version).clone() {
            Some(version) => request.header(VERSION_HEADER, version),
            None => request,
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            let Ok(mut response) = request.send().await else {
                return;
            };
            if !response.status().is_success() {
                return;
            }
            let mut events = SseBuffer::default();
            while let Ok(Some(chunk)) = response.chunk().await {
                let Ok(datas) = events.push(&chunk) else {
                    return;
                };
                for data in datas {
                    if let Ok(message) = serde_json::from_str::<Value>(&data) {
                        let _ = out.send(message);
                    }
                }
            }
        });
    }
}

/// Server-sent events cut from a byte stream: the `data` of each complete event.
#[derive(Default)]
struct SseBuffer {
    pending: Vec<u8>,
}

impl SseBuffer {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        self.pending.extend_from_slice(chunk);
        if self.pending.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "an event from the daemon is over {MAX_ANSWER_BYTES} bytes"
            ));
        }
        let mut events = Vec::new();
        while let Some((end, skip)) = event_end(&self.pending) {
            let block: Vec<u8> = self.pending.drain(..end + skip).take(end).collect();
            let text = String::from_utf8_lossy(&block);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                events.push(data.join("\n"));
            }
        }
        Ok(events)
    }
}

/// Where the first event ends (a blank line) and how long its separator is.
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunks() {
        let mut sse = SseBuffer::default();
        assert!(sse.push(b"id: 1\nretry: 3000\n\n").unwrap().is_empty());
        assert!(sse.push(b"data: {\"a\":").unwrap().is_empty());
        assert_eq!(
            sse.push(b"1}\n\ndata: x\r\n\r\n").unwrap(),
            ["{\"a\":1}", "x"]
        );
        assert_eq!(sse.push(b"data: one\ndata: two\n\n").unwrap(), ["one\ntwo"]);
    }

    #[test]
    fn only_requests_have_ids_to_answer() {
        assert_eq!(
            request_id(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})),
            Some("7".into())
        );
        assert_eq!(
            request_id(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            None
        );
        assert_eq!(
            request_id(&json!({"jsonrpc": "2.0", "id": "a", "result": {}})),
            None
        );
    }
}

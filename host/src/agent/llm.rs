//! The model: one client for OpenAI-compatible chat completions (OpenAI, Ollama,
//! llama.cpp's server, vLLM all speak it), streaming, with tool calls. Requests go to
//! `{llm.baseUrl}/chat/completions` through a [`net::Endpoint`] (the operator's
//! address, possibly on loopback; nothing else is reachable through it).
//!
//! Everything the endpoint sends is treated as hostile: a streamed answer is parsed as
//! server-sent events line by line, each `data:` a JSON chunk; a plain JSON completion
//! (servers that ignore `stream`) is read too; anything else is [`LlmError::Malformed`]
//! naming what was wrong. The call has one deadline (`llm.timeoutSeconds`), the answer
//! a size limit, the reply text [`MAX_REPLY_BYTES`], each tool call's arguments
//! [`MAX_ARGUMENT_BYTES`] and a round at most [`MAX_TOOL_CALLS`] calls.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::LlmConfig;
use crate::memory::MAX_MESSAGE_BYTES;
use crate::net::{Endpoint, FetchError};

/// The longest reply kept (what a conversation records of one message).
pub const MAX_REPLY_BYTES: usize = MAX_MESSAGE_BYTES;
/// The longest arguments of one tool call.
pub const MAX_ARGUMENT_BYTES: usize = 64 * 1024;
/// Tool calls taken from one answer at most.
pub const MAX_TOOL_CALLS: usize = 16;
/// The largest answer read from the endpoint (a stream repeats a lot of JSON around
/// the text).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// Defaults of `llm.timeoutSeconds` and `llm.maxToolRounds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_TOOL_ROUNDS: u32 = 8;
/// The most of a service's error text shown.
const MAX_SHOWN_ERROR: usize = 300;

/// Why the model gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "chat needs a model: set llm.baseUrl and llm.model in config.yaml (any OpenAI-compatible endpoint: OpenAI, Ollama, llama.cpp's server, vLLM); {missing} is not set"
    )]
    NotConfigured { missing: &'static str },
    #[error(
        "llm.apiKeyEnv names the environment variable {var}, which is not set (or empty) in Engram's environment"
    )]
    ApiKeyMissing { var: String },
    #[error("llm.baseUrl is not usable: {0}")]
    BadBaseUrl(FetchError),
    #[error(
        "the model endpoint cannot be reached ({reason}); is the model server running at {base}? (llm.baseUrl)"
    )]
    Unreachable { base: String, reason: String },
    #[error(
        "the model endpoint gave no complete answer within {}s (llm.timeoutSeconds)",
        .timeout.as_secs()
    )]
    Timeout { timeout: Duration },
    #[error("the model endpoint answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the model endpoint reported an error: {0}")]
    Api(String),
    #[error("the model endpoint's answer is not a chat completion: {0}")]
    Malformed(String),
}

impl LlmError {
    /// A stable code, for logs and tests.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::NotConfigured { .. } => "llm-not-configured",
            LlmError::ApiKeyMissing { .. } => "llm-api-key-missing",
            LlmError::BadBaseUrl(_) => "llm-bad-base-url",
            LlmError::Unreachable { .. } => "llm-unreachable",
            LlmError::Timeout { .. } => "llm-timeout",
            LlmError::Status { .. } => "llm-http-status",
            LlmError::Api(_) => "llm-error",
            LlmError::Malformed(_) => "llm-malformed",
        }
    }
}

/// One message of the conversation as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    pub content: String,
    /// The speaker's name (a user message in a group chat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An assistant message's tool calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::plain("system", content.into())
    }

    pub fn user(content: impl Into<String>, name: Option<String>) -> ChatMessage {
        ChatMessage {
            name,
            ..ChatMessage::plain("user", content.into())
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage {
            tool_calls,
            ..ChatMessage::plain("assistant", content.into())
        }
    }

    pub fn tool(call_id: &str, content: String) -> ChatMessage {
        ChatMessage {
            tool_call_id: Some(call_id.to_string()),
            ..ChatMessage::plain("tool", content)
        }
    }

    fn plain(role: &'static str, content: String) -> ChatMessage {
        ChatMessage {
            role,
            content,
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call, as the model sent it and as it goes back in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model wrote it (it may not be valid JSON).
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOffer {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

/// What one model call answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`, ... as the endpoint said.
    pub finish_reason: Option<String>,
    /// The reply passed [`MAX_REPLY_BYTES`] and was cut there.
    pub cut: bool,
}

/// The configured model.
#[derive(Debug, Clone)]
pub struct Model {
    endpoint: Endpoint,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    temperature: Option<f32>,
}

impl Model {
    /// The model `llm` configures; `env` reads the environment (the API key's
    /// variable).
    pub fn from_config(
        llm: &LlmConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Model, LlmError> {
        let base = nonblank(&llm.base_url).ok_or(LlmError::NotConfigured {
            missing: "llm.baseUrl",
        })?;
        let model = nonblank(&llm.model).ok_or(LlmError::NotConfigured {
            missing: "llm.model",
        })?;
        let api_key = match nonblank(&llm.api_key_env) {
            None => None,
            Some(var) => Some(
                env(&var)
                    .filter(|key| !key.trim().is_empty())
                    .ok_or(LlmError::ApiKeyMissing { var })?,
            ),
        };
        let endpoint = Endpoint::new(&base, api_key.clone()).map_err(LlmError::BadBaseUrl)?;
        Ok(Model {
            endpoint,
            model,
            api_key,
            timeout: llm
                .timeout_seconds
                .filter(|s| *s > 0)
                .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(u64::from(s))),
            temperature: llm.temperature,
        })
    }

    /// The model's name, as configured.
    pub fn name(&self) -> &str {
        &self.model
    }

    /// Asks the model to continue `messages`, offering `tools`. The reply's text is
    /// given to `on_text` piece by piece as it streams in.
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolOffer],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, LlmError> {
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
        });
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        },
                    })
                })
                .collect();
        }
        if let Some(temperature) = self.temperature {
            body["temperature"] = json!(temperature);
        }
        let authorization = self.api_key.as_ref().map(|key| format!("Bearer {key}"));
        let mut headers = vec![("accept", "text/event-stream, application/json")];
        if let Some(value) = &authorization {
            headers.push(("authorization", value));
        }
        let mut answer = self
            .endpoint
            .post_json(
                "chat/completions",
                &headers,
                &body,
                self.timeout,
                MAX_ANSWER_BYTES,
            )
            .await
            .map_err(|e| self.fetch_error(e))?;
        if !(200..300).contains(&answer.status()) {
            let status = answer.status();
            let text = answer.body().await.unwrap_or_default();
            return Err(LlmError::Status {
                status,
                message: self.error_text(&text),
            });
        }
        let streamed = answer
            .content_type()
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        let mut reader = Reader::default();
        if streamed {
            let mut lines = SseLines::default();
            while let Some(chunk) = answer.chunk().await.map_err(|e| self.fetch_error(e))? {
                for data in lines.push(&chunk) {
                    if reader.event(&data, on_text)? == Flow::Done {
                        return reader.finish();
                    }
                }
            }
            for data in lines.end() {
                if reader.event(&data, on_text)? == Flow::Done {
                    return reader.finish();
                }
            }
            if reader.finish_reason.is_none() {
                return Err(LlmError::Malformed(
                    "the event stream ended before the model finished its answer".into(),
                ));
            }
            reader.finish()
        } else {
            let body = answer.body().await.map_err(|e| self.fetch_error(e))?;
            let value: Value = serde_json::from_slice(&body).map_err(|_| {
                LlmError::Malformed(format!(
                    "neither an event stream nor JSON: {}",
                    self.error_text(&body)
                ))
            })?;
            reader.whole(&value, on_text)?;
            reader.finish()
        }
    }

    fn fetch_error(&self, e: FetchError) -> LlmError {
        match e {
            FetchError::Timeout { timeout, .. } => LlmError::Timeout { timeout },
            FetchError::Network { reason, .. } | FetchError::Resolve { reason, .. } => {
                LlmError::Unreachable {
                    base: self.endpoint.base().to_string(),
                    reason: self.endpoint.hide(&reason),
                }
            }
            other => LlmError::Malformed(self.endpoint.hide(&other.to_string())),
        }
    }

    /// A service's error document (`{"error": {"message"}}` or text), short, on one
    /// line, without the key.
    fn error_text(&self, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| error_message(&v))
            .unwrap_or_else(|| text.trim().to_string());
        let one_line: String = message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_SHOWN_ERROR)
            .collect();
        let shown = self.endpoint.hide(&one_line);
        if shown.is_empty() {
            "(no message)".into()
        } else {
            shown
        }
    }
}

fn nonblank(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// `{"error": {"message": "..."}}` or `{"error": "..."}`.
fn error_message(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map(str::to_string)
        .or_else(|| Some(error.to_string()))
}

/// Server-sent events: the `data:` payloads of complete events, from bytes in pieces.
#[derive(Default)]
struct SseLines {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseLines {
    /// The payloads completed by `bytes`.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut done = Vec::new();
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            let line = String::from_utf8_lossy(&line);
            self.line(line.trim_end_matches(['\n', '\r']), &mut done);
        }
        done
    }

    /// What is left when the stream closes.
    fn end(&mut self) -> Vec<String> {
        let mut done = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        let rest = String::from_utf8_lossy(&rest);
        if !rest.trim().is_empty() {
            self.line(rest.trim_end_matches(['\n', '\r']), &mut done);
        }
        self.line("", &mut done);
        done
    }

    fn line(&mut self, line: &str, done: &mut Vec<String>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                done.push(self.data.join("\n"));
                self.data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
        // `event:`, `id:`, `retry:` and `:` comments (keep-alives) carry nothing here.
    }
}

#[derive(Debug, PartialEq)]
enum Flow {
    More,
    Done,
}

/// Assembles a completion from streamed chunks or a whole answer.
#[derive(Default)]
struct Reader {
    text: String,
    cut: bool,
    /// Tool calls by their index in the answer.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Reader {
    fn event(
        &mut self,
        data: &str,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Flow, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Malformed(format!(
                "an event is not JSON ({e}): {}",
                data.chars().take(120).collect::<String>()
            ))
        })?;
        if let Some(message) = error_message(&value) {
            return Err(LlmError::Api(
                message.chars().take(MAX_SHOWN_ERROR).collect(),
            ));
        }
        let choice = first_choice(&value)?;
        // Some servers send a usage-only chunk with no choices at the end.
        let Some(choice) = choice else {
            return Ok(Flow::More);
        };
        if let Some(delta) = choice.get("delta") {
            self.take(delta, on_text)?;
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(Flow::More)
    }

    /// A whole (non-streamed) completion.
    fn whole(
        &mut self,
        value: &Value,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), LlmError> {
        if let Some(message) = error_message(value) {
            return Err(LlmError::Api(
                message.chars().take(MAX_SHOWN_ERROR).collect(),
            ));
        }
        let choice = first_choice(value)?
            .ok_or_else(|| LlmError::Malformed("the answer has no choices".into()))?;
        let message = choice
            .get("message")
            .ok_or_else(|| LlmError::Malformed("the choice has no message".into()))?;
        self.take(message, on_text)?;
        self.finish_reason = Some(
            choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop")
                .to_string(),
        );
        Ok(())
    }

    /// Text and tool calls of a delta (streamed) or a message (whole).
    fn take(
        &mut self,
        part: &Value,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), LlmError> {
        match part.get("content") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => self.text(text, on_text),
            Some(other) => {
                return Err(LlmError::Malformed(format!(
                    "`content` is {}, not text",
                    kind(other)
                )));
            }
        }
        match part.get("tool_calls") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(calls)) => {
                for (position, call) in calls.iter().enumerate() {
                    self.call(position, call)?;
                }
                Ok(())
            }
            Some(other) => Err(LlmError::Malformed(format!(
                "`tool_calls` is {}, not a list",
                kind(other)
            ))),
        }
    }

    fn text(&mut self, text: &str, on_text: &mut (dyn FnMut(&str) + Send)) {
        if self.cut || text.is_empty() {
            return;
        }
        let room = MAX_REPLY_BYTES - self.text.len();
        let piece = if text.len() <= room {
            text
        } else {
            self.cut = true;
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        };
        self.text.push_str(piece);
        on_text(piece);
    }

    fn call(&mut self, position: usize, call: &Value) -> Result<(), LlmError> {
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        if !self.calls.contains_key(&index) && self.calls.len() >= MAX_TOOL_CALLS {
            return Err(LlmError::Malformed(format!(
                "more than {MAX_TOOL_CALLS} tool calls in one answer"
            )));
        }
        let partial = self.calls.entry(index).or_default();
        if let Some(id) = call.get("id").and_then(Value::as_str) {
            partial.id = id.to_string();
        }
        let function = call.get("function");
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
            // Streamed names come whole; some servers repeat them in every chunk.
            if partial.name != name {
                partial.name.push_str(name);
            }
        }
        match function.and_then(|f| f.get("arguments")) {
            None | Some(Value::Null) => {}
            Some(Value::String(piece)) => partial.arguments.push_str(piece),
            // A few servers send the arguments as an object rather than JSON text.
            Some(object @ Value::Object(_)) => partial.arguments.push_str(&object.to_string()),
            Some(other) => {
                return Err(LlmError::Malformed(format!(
                    "a tool call's `arguments` is {}",
                    kind(other)
                )));
            }
        }
        if partial.arguments.len() > MAX_ARGUMENT_BYTES || partial.name.len() > 256 {
            return Err(LlmError::Malformed(format!(
                "a tool call is larger than {MAX_ARGUMENT_BYTES} bytes"
            )));
        }
        Ok(())
    }

    fn finish(self) -> Result<Completion, LlmError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.trim().is_empty() {
                return Err(LlmError::Malformed(
                    "a tool call has no function name".into(),
                ));
            }
            tool_calls.push(ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                kind: "function",
                function: FunctionCall {
                    name: call.name,
                    arguments: call.arguments,
                },
            });
        }
        Ok(Completion {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
            cut: self.cut,
        })
    }
}

/// `choices[0]`; `None` when `choices` is empty; an error when it is missing.
fn first_choice(value: &Value) -> Result<Option<&Value>, LlmError> {
    match value.get("choices") {
        Some(Value::Array(choices)) => Ok(choices.first()),
        Some(other) => Err(LlmError::Malformed(format!(
            "`choices` is {}, not a list",
            kind(other)
        ))),
        None => Err(LlmError::Malformed(format!(
            "no `choices` in {}",
            value.to_string().chars().take(120).collect::<String>()
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_stream(pieces: &[&str]) -> Result<(Completion, Vec<String>), LlmError> {
        let mut lines = SseLines::default();
        let mut reader = Reader::default();
        let mut seen = Vec::new();
        let mut on_text = |t: &str| seen.push(t.to_string());
        for piece in pieces {
            for data in lines.push(piece.as_bytes()) {
                if reader.event(&data, &mut on_text)? == Flow::Done {
                    return Ok((reader.finish()?, seen));
                }
            }
        }
        for data in lines.end() {
            reader.event(&data, &mut on_text)?;
        }
        Ok((reader.finish()?, seen))
    }

    #[test]
    fn streamed_text_arrives_in_pieces_across_chunk_boundaries() {
        let (done, seen) = read_stream(&[
            ": keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n",
            "\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo, caf",
            "é\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        ])
        .unwrap();
        assert_eq!(done.text, "Hello, café");
        assert_eq!(seen, ["Hel", "lo, café"]);
        assert_eq!(done.finish_reason.as_deref(), Some("stop"));
        assert!(done.tool_calls.is_empty());
    }

    #[test]
    fn tool_calls_are_assembled_by_index() {
        let (done, _) = read_stream(&[
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"search_memory\",\"arguments\":\"{\\\"q\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"function\":{\"name\":\"fetch_url\",\"arguments\":{\"url\":\"http://x\"}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"tea\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        ])
        .unwrap();
        assert_eq!(done.tool_calls.len(), 2);
        assert_eq!(done.tool_calls[0].id, "c1");
        assert_eq!(done.tool_calls[0].function.name, "search_memory");
        assert_eq!(done.tool_calls[0].function.arguments, "{\"q\":\"tea\"}");
        assert_eq!(
            done.tool_calls[1].function.arguments,
            "{\"url\":\"http://x\"}"
        );
    }

    #[test]
    fn garbage_is_named() {
        for (pieces, needle) in [
            (vec!["data: {not json\n\n"], "not JSON"),
            (vec!["data: {\"id\":1}\n\n"], "no `choices`"),
            (
                vec!["data: {\"choices\":[{\"delta\":{\"content\":7}}]}\n\n"],
                "`content` is a number",
            ),
            (
                vec![
                    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
                ],
                "no function name",
            ),
        ] {
            let e = read_stream(&pieces).unwrap_err();
            assert_eq!(e.code(), "llm-malformed", "{e}");
            assert!(e.to_string().contains(needle), "{e}");
        }
        let e =
            read_stream(&["data: {\"error\":{\"message\":\"model not loaded\"}}\n\n"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the model endpoint reported an error: model not loaded"
        );
    }

    #[test]
    fn the_reply_is_cut_at_its_limit_on_a_character_boundary() {
        let mut reader = Reader::default();
        let mut on_text = |_: &str| {};
        let big = "é".repeat(MAX_REPLY_BYTES / 2 + 10);
        reader.text(&big, &mut on_text);
        reader.text("more", &mut on_text);
        let done = reader.finish().unwrap();
        assert!(done.cut);
        assert!(done.text.len() <= MAX_REPLY_BYTES);
        assert!(done.text.chars().all(|c| c == 'é'));
    }

    #[test]
    fn configuration_errors_say_what_to_set() {
        let none = |_: &str| None;
        let e = Model::from_config(&LlmConfig::default(), none).unwrap_err();
        assert_eq!(e.code(), "llm-not-configured");
        assert!(e.to_string().contains("llm.baseUrl"), "{e}");
        let llm = LlmConfig {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("m".into()),
            api_key_env: Some("MY_KEY".into()),
            ..LlmConfig::default()
        };
        let e = Model::from_config(&llm, none).unwrap_err();
        assert!(e.to_string().contains("MY_KEY"), "{e}");
        let model = Model::from_config(&llm, |v| (v == "MY_KEY").then(|| "k".into())).unwrap();
        assert_eq!(model.name(), "m");
        assert_eq!(model.timeout, DEFAULT_TIMEOUT);
        let bad = LlmConfig {
            base_url: Some("file:///etc".into()),
            ..llm
        };
        assert_eq!(
            Model::from_config(&bad, |_| Some("k".into()))
                .unwrap_err()
                .code(),
            "llm-bad-base-url"
        );
    }
}

//! `builtin:extract-llm`: extraction by a language model behind an OpenAI-compatible
//! chat-completions endpoint. It sends the conversation with a versioned prompt and
//! JSON schema (`prompt/`), reads the answer as hostile input (`answer.rs`) and
//! returns 0 to 3 candidates. Any failure (settings, network, timeout, a refusal, an
//! oversize or malformed answer, an invented quote) fails the call by trapping with
//! the reason; the host logs it, reports it in the brain status, and falls back to
//! the rule extractor for that conversation.

wit_bindgen::generate!({
    path: "../../wit",
    world: "extractor",
    with: { "engram:plugin/types@0.1.1": guest_convert::wit },
    generate_all,
});

mod answer;
mod http;
mod prompt;
mod settings;

use std::fmt;

use engram::plugin::config::{self, SecretError};
use engram::plugin::log::{Level, log};
use engram_strategies::model;
use guest_convert::wit;

use settings::Settings;

/// Why the plugin has no answer for a conversation.
#[derive(Debug)]
pub enum Failure {
    Settings(String),
    Secret(String),
    Http(String),
    Timeout(u64),
    Status(u16, String),
    TooLarge(usize),
    Refused(String),
    Garbage(String),
    Invalid(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Settings(why) => write!(f, "bad settings: {why}"),
            Failure::Secret(why) => write!(f, "no API key: {why}"),
            Failure::Http(why) => write!(f, "the request failed: {why}"),
            Failure::Timeout(ms) => write!(f, "no answer within {ms} ms (timeoutMs)"),
            Failure::Status(status, body) => {
                write!(f, "the endpoint answered HTTP {status}: {body:?}")
            }
            Failure::TooLarge(limit) => write!(f, "the answer is over {limit} bytes"),
            Failure::Refused(why) => write!(f, "the model refused: {why}"),
            Failure::Garbage(why) => write!(f, "unusable answer: {why}"),
            Failure::Invalid(why) => write!(f, "invalid facts: {why}"),
        }
    }
}

struct LlmExtractor;

impl Guest for LlmExtractor {
    fn extract(conversation: wit::Conversation, _now: i64) -> Vec<wit::Candidate> {
        let conversation = model::Conversation::from(conversation);
        match extract(&conversation) {
            Ok(candidates) => {
                log(
                    Level::Debug,
                    &format!(
                        "prompt v{}: {} fact(s) from conversation {}",
                        prompt::PROMPT_VERSION,
                        candidates.len(),
                        conversation.id
                    ),
                );
                candidates.into_iter().map(Into::into).collect()
            }
            // The extractor world returns a list, so a failure is a trap; the host
            // reads this message from stderr into the error it logs and reports.
            Err(failure) => panic!("extract-llm (prompt v{}): {failure}", prompt::PROMPT_VERSION),
        }
    }
}

fn extract(conversation: &model::Conversation) -> Result<Vec<model::Candidate>, Failure> {
    let settings = Settings::parse(&config::settings())?;
    let api_key = if settings.has_api_key {
        Some(config::secret("apiKeyEnv").map_err(|e| {
            Failure::Secret(match e {
                SecretError::NotConfigured(why) | SecretError::Unset(why) => why,
            })
        })?)
    } else {
        None
    };
    let body = prompt::request_body(&settings, conversation).map_err(Failure::Settings)?;
    let answer = http::post_json(
        &settings.endpoint,
        api_key.as_deref(),
        &body,
        settings.timeout_ms,
    )?;
    answer::candidates(&answer, conversation)
}

export!(LlmExtractor);

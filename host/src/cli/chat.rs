//! `engram chat`: through the running daemon, as `engram mcp` is, or in this process
//! when none runs. With a daemon (`engram serve` holding the data directory, found as
//! `engram memory` finds it, with the person's operator token) every line goes to its
//! `/chat` routes (`channels/terminal/daemon.rs`), so what the conversation changes
//! (memories learned or cleared, skills) is the daemon's at once. Without one, the
//! terminal takes the data directory's lock and runs the services itself
//! ([`Embedded`]); a data directory held by something else that serves no chat
//! (`engram mcp --embedded`) is refused, naming it.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::client::{Acting, ClientError, Endpoint, URL_ENV};
use crate::agent::ChatIo;
use crate::channels::memory_command::{Action, MemoryReply};
use crate::channels::terminal::daemon::{
    Answer, Event, MemoryLine, MessageLine, OpenSession, Opened, PATH, Said, SkillsLine,
};
use crate::channels::terminal::session::Closing;
use crate::channels::terminal::{Conversation, Embedded, TerminalIo, keys};
use crate::credentials::OPERATOR_TOKEN_ENV;
use crate::lock::{DataDirLock, LockState};
use crate::paths::DataDir;

/// A command's answer from the daemon, at most this late (a message's stream has none).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// `engram chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Whose memory the conversation uses
    #[arg(long, default_value = crate::memory::DEFAULT_USER, value_name = "USER")]
    pub user: String,
    /// Daemon URL [default: the `url` in {data_dir}/daemon.json, when `engram serve` runs]
    #[arg(long, env = URL_ENV, value_name = "URL")]
    pub url: Option<String>,
    /// The person's token [default: {data_dir}/operator-token]
    #[arg(long, env = OPERATOR_TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
}

pub fn run(data: DataDir, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let daemon_runs = args.url.is_some()
        || matches!(crate::lock::state(data.root())?, LockState::Held(Some(ref holder)) if holder.url.is_some());
    if daemon_runs {
        let endpoint = Endpoint::discover(data.root(), args.url, args.token, Acting::Person)?;
        let remote = Remote::open(endpoint, &args.user)?;
        return crate::channels::terminal::run(&data, remote);
    }
    // No daemon: this process holds the data directory (or says who does).
    let lock = DataDirLock::acquire(data.root(), "chat")?;
    let embedded = Embedded::open(data.clone(), lock, args.user)?;
    crate::channels::terminal::run(&data, embedded)
}

/// The conversation in the daemon, one HTTP request per line.
struct Remote {
    endpoint: Endpoint,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    session: Opened,
}

impl Remote {
    fn open(endpoint: Endpoint, user: &str) -> Result<Remote, ClientError> {
        let http = endpoint.http_client(None)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Setup(e.to_string()))?;
        let mut remote = Remote {
            endpoint,
            http,
            runtime,
            session: Opened {
                session: String::new(),
                user: user.to_string(),
                model: None,
                no_model: None,
            },
        };
        remote.session = remote.call(
            reqwest::Method::POST,
            "sessions",
            &OpenSession {
                user: Some(user.to_string()),
            },
        )?;
        Ok(remote)
    }

    fn url(&self, path: &str) -> String {
        if path == "sessions" {
            format!("{}{PATH}/sessions", self.endpoint.url)
        } else {
            format!(
                "{}{PATH}/sessions/{}{path}",
                self.endpoint.url, self.session.session
            )
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .bearer_auth(&self.endpoint.token)
    }

    /// A request whose whole answer is JSON.
    fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let request = self
            .request(method, path)
            .timeout(COMMAND_TIMEOUT)
            .json(body);
        self.runtime.block_on(async {
            let response = request
                .send()
                .await
                .map_err(|e| self.endpoint.unreachable(&e))?;
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.endpoint.unreachable(&e))?;
            if !status.is_success() {
                return Err(self.refusal(status.as_u16(), &bytes));
            }
            serde_json::from_slice(&bytes).map_err(|e| ClientError::Protocol {
                url: self.endpoint.url.clone(),
                reason: e.to_string(),
            })
        })
    }

    /// A command's text, or the failure as its text (the terminal shows either).
    fn said(&self, method: reqwest::Method, path: &str, body: &impl Serialize) -> Said {
        self.call(method, path, body)
            .unwrap_or_else(|e| Said::text(e.to_string()))
    }

    /// A refusal from the daemon's `/chat` routes: `{code, detail}`.
    fn refusal(&self, status: u16, body: &[u8]) -> ClientError {
        let doc: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        ClientError::Api {
            status,
            code: doc["code"].as_str().unwrap_or("unknown").to_string(),
            detail: doc["detail"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()),
            field: None,
            token_source: self.endpoint.token_source.clone(),
        }
    }

    /// A message's answer, streamed: printed as it comes, questions asked, Ctrl-C
    /// closing the stream (which stops the answer in the daemon).
    async fn stream(
        &self,
        text: &str,
        io: &mut TerminalIo,
    ) -> Result<Option<Closing>, ClientError> {
        let response = self
            .request(reqwest::Method::POST, "/messages")
            .json(&MessageLine {
                text: text.to_string(),
            })
            .send()
            .await
            .map_err(|e| self.endpoint.unreachable(&e))?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(self.refusal(status.as_u16(), &bytes));
        }
        let mut response = response;
        let mut pending = Vec::new();
        let mut closing = None;
        loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk.map_err(|e| self.endpoint.unreachable(&e))?,
                _ = tokio::signal::ctrl_c() => return Ok(Some(Closing::Stopped("(interrupted)".into()))),
            };
            let Some(chunk) = chunk else { break };
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let event: Event =
                    serde_json::from_slice(&line).map_err(|e| ClientError::Protocol {
                        url: self.endpoint.url.clone(),
                        reason: e.to_string(),
                    })?;
                match event {
                    Event::Text(piece) => io.text(&piece),
                    Event::Tool(line) => io.tool_line(&line),
                    Event::Ask { id, question } => {
                        io.finish();
                        let yes = keys::yes_no(&question);
                        let answered = self
                            .request(reqwest::Method::POST, "/answers")
                            .timeout(COMMAND_TIMEOUT)
                            .json(&Answer { ask: id, yes })
                            .send()
                            .await;
                        if let Err(e) = answered {
                            return Err(self.endpoint.unreachable(&e));
                        }
                    }
                    Event::Closing(last) => closing = Some(last),
                }
            }
        }
        Ok(closing)
    }
}

impl Conversation for Remote {
    fn user(&self) -> &str {
        &self.session.user
    }

    fn model(&self) -> Result<String, String> {
        match (&self.session.model, &self.session.no_model) {
            (Some(name), _) => Ok(name.clone()),
            (None, why) => Err(why.clone().unwrap_or_default()),
        }
    }

    fn message(&mut self, text: &str) -> Option<Closing> {
        let mut io = TerminalIo::default();
        let streamed = self.runtime.block_on(self.stream(text, &mut io));
        io.finish();
        match streamed {
            Ok(closing) => closing,
            Err(e) => Some(Closing::Failed(e.to_string())),
        }
    }

    fn memory(&mut self, action: Action) -> MemoryReply {
        self.said(reqwest::Method::POST, "/memory", &MemoryLine::of(action))
            .into()
    }

    fn skills(&mut self, line: &str) -> String {
        self.said(
            reqwest::Method::POST,
            "/skills",
            &SkillsLine {
                line: line.to_string(),
            },
        )
        .text
    }

    fn new_conversation(&mut self) -> String {
        self.said(reqwest::Method::POST, "/new", &serde_json::json!({}))
            .text
    }

    fn end(&mut self) -> String {
        self.said(reqwest::Method::DELETE, "", &serde_json::json!({}))
            .text
    }
}

//! One person's terminal conversation, wherever it runs: inside `engram chat` when no
//! daemon holds the data directory, or inside the daemon for an `engram chat` that goes
//! through it (`daemon.rs`). The same line does the same thing in both, over the same
//! services: so a memory cleared or learned in chat is the daemon's at once.

use std::future::Future;
use std::sync::Arc;

use super::super::learned;
use super::super::memory_command::{self, Action, MemoryReply};
use super::super::roles::Role;
use super::super::skills_command::handle_skills_command;
use super::CHANNEL;
use crate::agent::{Agent, Chat, ChatIo};
use crate::app::App;
use crate::skills::RegistryClient;

/// What is shown after an answer that did not simply end.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Closing {
    /// Why it stopped short (interrupted, the round limit, cut).
    Stopped(String),
    /// Why there is no (complete) answer.
    Failed(String),
}

pub struct Session {
    app: Arc<App>,
    agent: Agent,
    chat: Chat,
}

impl Session {
    /// A new conversation of `user` over `app`'s services.
    pub fn new(app: Arc<App>, user: String) -> Session {
        let agent = Agent::new(
            app.turns.clone(),
            app.memory.clone(),
            app.strategies.clone(),
            app.config.clone(),
        );
        Session {
            chat: Chat::new(user, CHANNEL),
            agent,
            app,
        }
    }

    pub fn user(&self) -> &str {
        self.chat.user()
    }

    /// The model's name, or why there is none.
    pub fn model(&self) -> Result<String, String> {
        self.agent
            .model()
            .map(|m| m.name().to_string())
            .map_err(|e| e.to_string())
    }

    /// A message for the agent: the answer goes to `io` as it streams; `interrupt`
    /// resolving stops it. Answers what to show after it, if anything.
    pub async fn message<C: ChatIo>(
        &mut self,
        text: &str,
        io: &mut C,
        interrupt: impl Future<Output = ()>,
    ) -> Option<Closing> {
        match self.agent.reply(&mut self.chat, text, io, interrupt).await {
            Ok(reply) => reply
                .stopped
                .map(|stopped| Closing::Stopped(stopped.notice())),
            Err(e) => Some(Closing::Failed(e.for_person())),
        }
    }

    /// Ends the conversation (the Second Brain learns from it) and starts another:
    /// `then`, and what was learned.
    pub async fn new_conversation(&mut self, then: &str) -> String {
        match self.agent.end_conversation(&mut self.chat).await {
            Ok(Some(ingested)) => format!("{then} {}", learned(&ingested)),
            Ok(None) => then.to_string(),
            Err(e) => format!("{then} (learning failed: {e})"),
        }
    }

    /// A `/memory` action for this conversation's user.
    pub async fn memory(&self, action: Action) -> MemoryReply {
        let memory = self.app.memory.clone();
        let user = self.chat.user().to_string();
        crate::background::run(move || memory_command::run(&memory, &user, action))
            .await
            .unwrap_or_else(|e| MemoryReply::text(format!("/memory failed: {e}")))
    }

    /// `/skills ...`: the terminal's person owns the machine, so every subcommand is
    /// theirs (an admin's).
    pub async fn skills(&self, line: &str) -> String {
        let config = self.app.config.current();
        match RegistryClient::from_config(&self.app.data, &config, None) {
            Ok(registry) => {
                handle_skills_command(line, Role::Admin, &self.app.skills, &registry)
                    .await
                    .text
            }
            Err(e) => e.to_string(),
        }
    }
}

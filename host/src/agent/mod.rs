//! The agent loop: a person's message in a chat channel becomes an answer.
//!
//! For each message [`Agent::reply`] opens a turn through the turn service (which
//! routes the message to a skill, retrieves the memory block and records the message in
//! the conversation), tells the model what the turn carries (`prompt`), streams the
//! model's answer to the channel ([`ChatIo::text`]), runs the model's tool calls through
//! `TurnService::run_host_tool` as the channel's caller (an ask goes to the person as a
//! question, [`ChatIo::approve`], and only their yes approves; a refusal or a denial goes
//! back to the model as a tool error), and ends the turn with the reply, which records
//! it. The turn is ended whatever happened, and every wait is bounded: at most
//! `llm.maxToolRounds` rounds of tool calls, `llm.timeoutSeconds` per model call, a
//! deadline per tool call.
//!
//! The model sees memory and skills only through the turn (README, "Security model":
//! the agent), and its tools are the host tools of `crate::tools`, offered with their
//! own descriptions and schemas.
//!
//! - `llm`: the OpenAI-compatible chat-completions client (streaming, tool calls)
//! - `prompt`: the system message of a turn
//!
//! A conversation ([`Chat`]) lives as long as its channel keeps it: `/new`, leaving
//! `engram chat`, or an idle gap ends it ([`Agent::end_conversation`]), which is when
//! the Second Brain learns from it.

pub mod llm;
mod prompt;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::ConfigFile;
use crate::credentials::{Principal, Via};
use crate::described::Described;
use crate::gate::{Caller, Verdict};
use crate::memory::Ingested;
use crate::memory::{Memory, MemoryError};
use crate::runtime::strategies::Strategies;
use crate::time::{Clock, SystemClock};
use crate::tools::HOST_TOOLS;
use crate::turns::input::{Channel, ConversationId, Speaker, Text, User};
use crate::turns::{Invoke, Message, TurnError, TurnOpened, TurnService};
use llm::{ChatMessage, Completion, LlmError, Model, ToolCall, ToolOffer};

/// The longest a host tool called by the model may take.
const TOOL_DEADLINE: Duration = Duration::from_secs(60);
/// The most of a tool's result given back to the model, in characters.
const MAX_TOOL_RESULT_CHARS: usize = 24_000;
/// Earlier messages of the conversation sent with each turn, at most, and their size.
const MAX_HISTORY_MESSAGES: usize = 40;
const MAX_HISTORY_BYTES: usize = 96 * 1024;
/// Without `memory.secondBrain.idleMinutes`: a gap after which a chat starts a new
/// conversation (the Second Brain ends idle ones after the same time).
const DEFAULT_IDLE: Duration = Duration::from_secs(10 * 60);

/// The channel's side of a turn: how the person sees the answer and is asked.
pub trait ChatIo: Send {
    /// A piece of the answer, as it streams in (plain text from the model: the
    /// channel makes it safe to show).
    fn text(&mut self, piece: &str);

    /// A tool call ran, was refused or failed.
    fn tool(&mut self, event: &ToolEvent);

    /// The gate asks before `ask.tool` runs with `ask.args`: the person's answer
    /// (`true`: yes, to this call only). A channel that cannot ask, or gets no answer
    /// in time, answers no.
    fn approve(&mut self, ask: &Ask) -> impl Future<Output = bool> + Send;
}

/// A question for the person: may this tool run?
#[derive(Debug, Clone)]
pub struct Ask {
    pub tool: String,
    pub args: Value,
    /// Why the gate asks.
    pub reason: String,
}

/// The most of a call's arguments a question shows; what the call would grant is
/// shown before them, whatever their length.
const MAX_ASKED_ARGS_CHARS: usize = 2_000;

impl Ask {
    /// `fetch_url {"url":"https://…"}` on one line, every control, invisible or
    /// direction-changing character shown as its code point (`<U+202E>`), so that the
    /// person reads the call as it is. Arguments past 2,000 characters are cut (the
    /// approval still covers exactly these arguments), never what the call grants:
    /// installing pasted SKILL.md text names the skill and the tools it asks for
    /// first.
    pub fn summary(&self) -> String {
        let args = match &self.args {
            Value::Null => String::new(),
            Value::Object(map) if map.is_empty() => String::new(),
            other => format!(
                " {}",
                crate::term_text::cut(
                    &crate::term_text::neutralised(&other.to_string()),
                    MAX_ASKED_ARGS_CHARS
                )
            ),
        };
        let grants = self.grants().map(|g| format!(" ({g})")).unwrap_or_default();
        format!(
            "{}{grants}{args}",
            crate::term_text::neutralised(&self.tool)
        )
    }

    /// Why the gate asks, shown as [`Ask::summary`] shows the call.
    pub fn reason_shown(&self) -> String {
        crate::term_text::neutralised(self.reason.trim_end_matches('.'))
    }

    /// What approving would let in beyond the call itself: for pasted SKILL.md text,
    /// the skill's name and the tools it asks for.
    fn grants(&self) -> Option<String> {
        if self.tool != "install_skill" {
            return None;
        }
        let text = self.args.get("skill_md")?.as_str()?;
        let shown = crate::term_text::neutralised;
        Some(match crate::skills::parse_skill(text.as_bytes()) {
            Ok(parsed) => {
                let tools = &parsed.frontmatter.allowed_tools;
                format!(
                    "skill `{}`, asking for the tools: {}",
                    shown(&parsed.frontmatter.name),
                    if tools.is_empty() {
                        "none".to_string()
                    } else {
                        shown(&tools.join(", "))
                    }
                )
            }
            Err(e) => format!("not a valid SKILL.md: {}", shown(&e.to_string())),
        })
    }
}

/// What happened to one tool call, for the person to see.
#[derive(Debug, Clone)]
pub enum ToolEvent {
    Ran { tool: String, result: Value },
    Refused { tool: String, reason: String },
    Failed { tool: String, message: String },
}

impl ToolEvent {
    /// One line for the chat: `install_skill: installed \`notes\` 1.0.0`.
    pub fn line(&self) -> String {
        match self {
            ToolEvent::Ran { tool, result } if tool == "install_skill" => {
                let field = |name: &str| result.get(name).and_then(Value::as_str);
                let mut line = format!(
                    "install_skill: {} `{}`",
                    field("status").unwrap_or("done"),
                    field("id").unwrap_or("?")
                );
                if let Some(version) = field("version") {
                    line.push_str(&format!(" {version}"));
                }
                if let Some(warnings) = result.get("warnings").and_then(Value::as_array)
                    && !warnings.is_empty()
                {
                    line.push_str(&format!(" ({} warning(s))", warnings.len()));
                }
                one_line(&line, 300)
            }
            ToolEvent::Ran { tool, .. } => format!("{tool}: done"),
            ToolEvent::Refused { tool, reason } => {
                one_line(&format!("{tool}: refused: {reason}"), 300)
            }
            ToolEvent::Failed { tool, message } => {
                one_line(&format!("{tool}: failed: {message}"), 300)
            }
        }
    }
}

/// Why a message got no (complete) answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No usable model is configured: nothing was opened or recorded.
    #[error(transparent)]
    NoModel(LlmError),
    /// The model failed during the turn `turn_id`, which has been ended (with what
    /// the model had said, if anything).
    #[error("{source}")]
    Model {
        turn_id: String,
        #[source]
        source: LlmError,
    },
    /// The turn could not be opened (a message too long, the gate full, memory failing).
    #[error(transparent)]
    Turn(#[from] TurnError),
}

impl AgentError {
    /// What the person is told: the error, unless it is the host's own failure, whose
    /// details are for the log.
    pub fn for_person(&self) -> String {
        match self {
            AgentError::Turn(e) if e.to_wire().is_internal() => {
                "Engram failed to handle this message; the daemon's log has the details.".into()
            }
            other => other.to_string(),
        }
    }
}

/// Why an answer stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The model still asked for tools after `llm.maxToolRounds` rounds.
    ToolRounds(u32),
    /// The person interrupted it.
    Interrupted,
    /// The answer passed the longest reply kept, and was cut there.
    Cut,
}

impl Stopped {
    /// A line for the chat.
    pub fn notice(&self) -> String {
        match self {
            Stopped::ToolRounds(n) => format!(
                "(stopped: the model was still calling tools after {n} rounds, the limit set by llm.maxToolRounds)"
            ),
            Stopped::Interrupted => "(interrupted)".into(),
            Stopped::Cut => "(the answer was cut at 64 KiB)".into(),
        }
    }
}

/// An answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub turn_id: String,
    /// The text the person saw, as recorded in the conversation.
    pub text: String,
    pub stopped: Option<Stopped>,
    /// The skill the message invoked, if any.
    pub invoked: Option<String>,
    /// The ids of the person's message and of the reply in the conversation (`None`
    /// where nothing was recorded: the fact store keeps no conversations, an empty
    /// reply is not kept).
    pub message_id: Option<String>,
    pub reply_id: Option<String>,
}

/// One conversation in a channel, as the agent keeps it between messages.
#[derive(Debug)]
pub struct Chat {
    user: String,
    channel: &'static str,
    /// The speaker's name, sent with their messages (a group chat has several).
    speaker: Option<String>,
    /// Host tools this person may not use in this channel (not offered to the model,
    /// refused if called anyway): `install_skill` for a bot's non-admins,
    /// `search_memory` where memory stays private.
    withheld: Vec<&'static str>,
    /// Whether their memory comes into the turns (see [`Chat::keep_memory_private`]).
    recall: bool,
    conversation_id: String,
    history: Vec<ChatMessage>,
    last_message: Option<Instant>,
}

impl Chat {
    /// A new conversation of `user` in `channel`.
    pub fn new(user: impl Into<String>, channel: &'static str) -> Chat {
        Chat {
            user: user.into(),
            channel,
            speaker: None,
            withheld: Vec::new(),
            recall: true,
            conversation_id: crate::ids::new_id("conv"),
            history: Vec::new(),
            last_message: None,
        }
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    pub fn set_speaker(&mut self, name: Option<String>) {
        self.speaker = name.filter(|n| !n.trim().is_empty());
    }

    /// Withholds the host tools `tools` from this person (see [`Chat::withheld`]).
    pub fn withhold(&mut self, tools: &[&'static str]) {
        self.withheld = tools.to_vec();
    }

    /// Keeps this person's memory out of the answers (a group chat, read by others,
    /// that has not been opened to personal memory): no memory block in the turns, and
    /// no `search_memory`. What they say is still recorded and learned from.
    pub fn keep_memory_private(&mut self, private: bool) {
        self.recall = !private;
        if private && !self.withheld.contains(&"search_memory") {
            self.withheld.push("search_memory");
        }
    }

    fn may_use(&self, tool: &str) -> bool {
        !self.withheld.contains(&tool)
    }

    /// Forgets the conversation and starts a new one.
    fn restart(&mut self) {
        self.conversation_id = crate::ids::new_id("conv");
        self.history.clear();
        self.last_message = None;
    }

    fn remember(&mut self, message: ChatMessage) {
        self.history.push(message);
        let mut bytes: usize = self.history.iter().map(|m| m.content.len()).sum();
        while self.history.len() > MAX_HISTORY_MESSAGES
            || (bytes > MAX_HISTORY_BYTES && self.history.len() > 1)
        {
            bytes -= self.history.remove(0).content.len();
        }
    }
}

/// The agent over the daemon's services.
pub struct Agent {
    turns: Arc<TurnService>,
    memory: Arc<Memory>,
    strategies: Arc<Strategies>,
    config: Arc<ConfigFile>,
}

impl Agent {
    pub fn new(
        turns: Arc<TurnService>,
        memory: Arc<Memory>,
        strategies: Arc<Strategies>,
        config: Arc<ConfigFile>,
    ) -> Agent {
        Agent {
            turns,
            memory,
            strategies,
            config,
        }
    }

    /// The model as configured now, or why there is none.
    pub fn model(&self) -> Result<Model, LlmError> {
        Model::from_config(&self.config.current().llm, |var| std::env::var(var).ok())
    }

    /// Answers `text` from the person in `chat`. `interrupt` resolving stops the
    /// answer where it is (the terminal's Ctrl-C); channels without one pass
    /// `std::future::pending()`. Without a model configured nothing is opened or
    /// recorded: the error says what to set.
    pub async fn reply<C: ChatIo>(
        &self,
        chat: &mut Chat,
        text: &str,
        io: &mut C,
        interrupt: impl Future<Output = ()>,
    ) -> Result<Reply, AgentError> {
        let config = self.config.current();
        let model = self.model().map_err(AgentError::NoModel)?;
        let rounds = config
            .llm
            .max_tool_rounds
            .filter(|n| *n > 0)
            .unwrap_or(llm::DEFAULT_TOOL_ROUNDS);
        let idle = config
            .memory
            .second_brain
            .idle_minutes
            .filter(|m| *m > 0)
            .map_or(DEFAULT_IDLE, |m| Duration::from_secs(u64::from(m) * 60));
        if chat.last_message.is_some_and(|at| at.elapsed() >= idle)
            && let Err(e) = self.end_conversation(chat).await
        {
            tracing::warn!("ending an idle chat conversation failed: {e}");
        }

        let message = Message {
            user: User::parse(chat.user.as_str())?,
            text: Text::parse("message", text)?,
            conversation_id: Some(ConversationId::parse(chat.conversation_id.as_str())?),
            channel: Some(Channel::parse(chat.channel)?),
            name: chat.speaker.clone().map(Speaker::parse).transpose()?,
            recall: chat.recall,
            opened_by: format!("channel:{}", chat.channel),
        };
        let turns = self.turns.clone();
        let opened = blocking(move || turns.open(message, Invoke::Routed)).await?;
        chat.last_message = Some(Instant::now());

        let content = match &opened.invoked {
            Some(skill) if skill.reason == "explicit" && !skill.message.trim().is_empty() => {
                skill.message.clone()
            }
            _ => text.to_string(),
        };
        let user_message = ChatMessage::user(content, chat.speaker.clone());
        let answered = self
            .converse(
                &model,
                rounds,
                chat,
                &opened,
                user_message.clone(),
                io,
                interrupt,
            )
            .await;

        let reply = answered.text.trim().to_string();
        let turns = self.turns.clone();
        let turn_id = opened.turn_id.clone();
        let recorded = (!reply.is_empty()).then(|| reply.clone());
        let user = chat.user.clone();
        let reply_id = match blocking(move || turns.end(&turn_id, &user, recorded.as_deref())).await
        {
            Ok(view) => view.reply_id,
            Err(e) => {
                tracing::warn!(turn = %opened.turn_id, "ending a chat turn failed: {e}");
                None
            }
        };
        chat.remember(user_message);
        if !reply.is_empty() {
            chat.remember(ChatMessage::assistant(reply.clone(), Vec::new()));
        }
        match answered.end {
            End::Failed(source) => Err(AgentError::Model {
                turn_id: opened.turn_id,
                source,
            }),
            End::Answered(stopped) => Ok(Reply {
                turn_id: opened.turn_id,
                text: reply,
                stopped,
                invoked: opened.invoked.map(|s| s.slug),
                message_id: opened.message_id,
                reply_id,
            }),
        }
    }

    /// Ends the chat's conversation, which is when the Second Brain learns from it
    /// (unless learning is paused), and starts a new one. `None` when nothing was
    /// recorded (no message yet, or the fact store serves memory).
    pub async fn end_conversation(&self, chat: &mut Chat) -> Result<Option<Ingested>, MemoryError> {
        let had_messages = chat.last_message.is_some();
        let user = chat.user.clone();
        let id = chat.conversation_id.clone();
        chat.restart();
        if !had_messages || self.memory.brain().is_err() {
            return Ok(None);
        }
        let memory = self.memory.clone();
        let strategies = self.strategies.clone();
        blocking(move || {
            let brain = memory.brain()?;
            Ok(Some(brain.end_conversation(&user, &id, &strategies)?))
        })
        .await
    }

    /// The conversation with the model for one turn: model calls and tool rounds
    /// until an answer without tool calls, the round limit, an interrupt or a failure.
    #[allow(clippy::too_many_arguments)]
    async fn converse<C: ChatIo>(
        &self,
        model: &Model,
        max_rounds: u32,
        chat: &Chat,
        opened: &TurnOpened,
        user_message: ChatMessage,
        io: &mut C,
        interrupt: impl Future<Output = ()>,
    ) -> Answered {
        let may_install = chat.may_use("install_skill");
        let today = crate::time::rfc3339::format(SystemClock.now_ms());
        let system = prompt::system_prompt(
            opened,
            chat.channel,
            &today[..10.min(today.len())],
            may_install,
        );
        let mut messages = Vec::with_capacity(chat.history.len() + 2);
        messages.push(ChatMessage::system(system));
        messages.extend(chat.history.iter().cloned());
        messages.push(user_message);
        let offers: Vec<ToolOffer> = HOST_TOOLS
            .iter()
            .filter(|tool| chat.may_use(tool.name))
            .map(|tool| ToolOffer {
                name: tool.name,
                description: tool.description,
                parameters: tool.args_schema(),
            })
            .collect();

        let mut interrupt = std::pin::pin!(interrupt);
        let mut text = String::new();
        let mut rounds = 0;
        loop {
            let completion = {
                let mut first = true;
                let mut on_text = |piece: &str| {
                    if first && !text.is_empty() {
                        text.push_str("\n\n");
                        io.text("\n\n");
                    }
                    first = false;
                    text.push_str(piece);
                    io.text(piece);
                };
                tokio::select! {
                    done = model.complete(&messages, &offers, &mut on_text) => done,
                    () = &mut interrupt => {
                        return Answered { text, end: End::Answered(Some(Stopped::Interrupted)) };
                    }
                }
            };
            let Completion {
                text: said,
                tool_calls,
                cut,
                ..
            } = match completion {
                Ok(done) => done,
                Err(e) => {
                    return Answered {
                        text,
                        end: End::Failed(e),
                    };
                }
            };
            if cut {
                return Answered {
                    text,
                    end: End::Answered(Some(Stopped::Cut)),
                };
            }
            if tool_calls.is_empty() {
                return Answered {
                    text,
                    end: End::Answered(None),
                };
            }
            if rounds == max_rounds {
                return Answered {
                    text,
                    end: End::Answered(Some(Stopped::ToolRounds(max_rounds))),
                };
            }
            rounds += 1;
            messages.push(ChatMessage::assistant(said, tool_calls.clone()));
            for call in &tool_calls {
                let content = self.run_tool(chat, &opened.turn_id, call, io).await;
                messages.push(ChatMessage::tool(&call.id, content));
            }
        }
    }

    /// Runs one tool call of the model through the turn service and answers what goes
    /// back to the model: the tool's result, or an error document.
    async fn run_tool<C: ChatIo>(
        &self,
        chat: &Chat,
        turn_id: &str,
        call: &ToolCall,
        io: &mut C,
    ) -> String {
        let tool = call.function.name.clone();
        let raw = call.function.arguments.trim();
        let args: Value = if raw.is_empty() {
            json!({})
        } else {
            match serde_json::from_str(raw) {
                Ok(args) => args,
                Err(e) => {
                    let message = format!("the arguments are not valid JSON: {e}");
                    io.tool(&ToolEvent::Failed {
                        tool: tool.clone(),
                        message: message.clone(),
                    });
                    return tool_error("invalid-arguments", &message);
                }
            }
        };
        if !chat.may_use(&tool) {
            let (code, reason) = if tool == "search_memory" {
                (
                    "memory-private",
                    format!(
                        "`{tool}` is not used here: this chat is read by others, and the person's memory stays private in it"
                    ),
                )
            } else {
                (
                    "admins-only",
                    format!("`{tool}` is for this channel's admins only"),
                )
            };
            io.tool(&ToolEvent::Refused {
                tool: tool.clone(),
                reason: reason.clone(),
            });
            return tool_error(code, &reason);
        }
        let mut asked = false;
        loop {
            let turns = self.turns.clone();
            let (user, channel, turn) = (chat.user.clone(), chat.channel, turn_id.to_string());
            let (name, call_args) = (tool.clone(), args.clone());
            let ran = blocking(move || {
                let caller = Caller::Channel {
                    channel,
                    user: &user,
                };
                let deadline = Instant::now() + TOOL_DEADLINE;
                turns.run_host_tool(caller, Some(&turn), &name, call_args, Some(deadline))
            })
            .await;
            match ran {
                Ok(ran) => {
                    io.tool(&ToolEvent::Ran {
                        tool: tool.clone(),
                        result: ran.result.clone(),
                    });
                    return bounded(ran.result.to_string());
                }
                Err(TurnError::Refused { decision, .. })
                    if decision.verdict == Verdict::Ask && !asked =>
                {
                    asked = true;
                    let ask = Ask {
                        tool: tool.clone(),
                        args: args.clone(),
                        reason: decision.reason.clone(),
                    };
                    if !io.approve(&ask).await {
                        let reason = "the user said no".to_string();
                        io.tool(&ToolEvent::Refused {
                            tool: tool.clone(),
                            reason: reason.clone(),
                        });
                        return tool_error(
                            "refused-by-user",
                            &format!(
                                "the user refused to let `{tool}` run; do not try it again in this turn"
                            ),
                        );
                    }
                    let turns = self.turns.clone();
                    let (user, channel, turn) =
                        (chat.user.clone(), chat.channel, turn_id.to_string());
                    let (name, shown) = (tool.clone(), args.clone());
                    // The yes covers the call the person was shown, nothing wider.
                    let approved = blocking(move || {
                        turns.approve(
                            &turn,
                            &user,
                            &name,
                            Some(&shown),
                            &Principal::Person(Via::Channel(channel.to_string())),
                        )
                    })
                    .await;
                    if let Err(e) = approved {
                        return self.failed(&tool, e, io);
                    }
                }
                Err(TurnError::Refused { decision, .. }) => {
                    io.tool(&ToolEvent::Refused {
                        tool: tool.clone(),
                        reason: decision.reason.clone(),
                    });
                    return tool_error(decision.code.as_str(), &decision.reason);
                }
                Err(e) => return self.failed(&tool, e, io),
            }
        }
    }

    fn failed<C: ChatIo>(&self, tool: &str, e: TurnError, io: &mut C) -> String {
        let described = e.to_wire();
        let message = if described.is_internal() {
            format!("`{tool}` failed inside Engram; the daemon's log has the details")
        } else {
            e.to_string()
        };
        io.tool(&ToolEvent::Failed {
            tool: tool.to_string(),
            message: message.clone(),
        });
        tool_error(described.code, &message)
    }
}

/// How a turn's conversation with the model went.
struct Answered {
    text: String,
    end: End,
}

enum End {
    Answered(Option<Stopped>),
    Failed(LlmError),
}

fn tool_error(code: &str, message: &str) -> String {
    json!({ "error": { "code": code, "message": message } }).to_string()
}

/// A tool result cut to what the model is given.
fn bounded(text: String) -> String {
    if text.chars().count() <= MAX_TOOL_RESULT_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_TOOL_RESULT_CHARS).collect();
    cut.push_str(" …(cut: the result is longer than Engram passes on)");
    cut
}

/// `text` on one line (control characters as spaces), at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() <= max {
        return line;
    }
    let mut out: String = line.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Runs blocking service work (SQLite, files, plugins) off the async workers
/// ([`crate::background::run`]); its panic is the chat loop's.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match crate::background::run(work).await {
        Ok(value) => value,
        Err(e) => panic!("blocking chat work failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_shows_hidden_characters_and_never_hides_what_it_grants() {
        let bidi = Ask {
            tool: "fetch_url".into(),
            args: json!({"url": "https://bank.example/\u{202E}lmth.nigol"}),
            reason: "asks\u{200B}.".into(),
        };
        assert_eq!(
            bidi.summary(),
            r#"fetch_url {"url":"https://bank.example/<U+202E>lmth.nigol"}"#
        );
        assert_eq!(bidi.reason_shown(), "asks<U+200B>");
        let padding = "Just a note. ".repeat(60);
        let skill = format!(
            "---\nname: helper\ndescription: {padding}\nallowed-tools:\n  - run_command\n  - send_message\n---\nDo it.\n"
        );
        let install = Ask {
            tool: "install_skill".into(),
            args: json!({ "skill_md": skill }),
            reason: "asks".into(),
        };
        let shown = install.summary();
        assert!(
            shown.starts_with(
                "install_skill (skill `helper`, asking for the tools: run_command, send_message) {"
            ),
            "{shown}"
        );
        assert!(shown.chars().count() > 300, "not cut at 300: {shown}");
    }
}

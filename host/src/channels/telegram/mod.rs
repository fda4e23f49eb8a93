//! The Telegram channel: `engram serve` answers as a Telegram bot when
//! `channels.telegram` is in config.yaml. It long-polls the Bot API (`getUpdates`, so
//! nothing has to reach this machine from outside) with the token from the environment
//! variable `channels.telegram.tokenEnv` names, at `channels.telegram.baseUrl`.
//!
//! Who may use it is `channels.bot` (read again for every update): admins and
//! approved users; anyone else gets one fixed refusal and nothing else (no turn, no
//! memory, no detail of the host). Each Telegram user has their own Engram user
//! (`telegram-<id>`, or what `channels.telegram.users` maps them to).
//!
//! - `/memory`: inline buttons Overview, Recent, Subconscious, Pause, Resume, Clear
//!   (then Yes), `memory_command`'s table; search is not in the bot's menu (ask the
//!   agent);
//! - `/skills ...`: the transport-independent handler, with buttons to view search
//!   results and, for admins, to install and remove;
//! - `/new`: ends the conversation (the Second Brain learns from it);
//! - anything else goes to the agent loop. A tool the gate asks about is put to the
//!   person as a message with Allow / Refuse buttons (only they can press them; no
//!   answer within 5 minutes is a refusal); `install_skill` is withheld from non-admins.
//!
//! Updates of one chat are handled in order by that chat's own task, chats in
//! parallel; only button presses that answer an approval skip the queue (the chat's
//! task is waiting for them). Replies over Telegram's 4096-character limit are split.

mod api;
mod split;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::memory_command::{self, Action, BOT_MENU, BOT_SEARCH, Choice};
use super::roles::Role;
use super::skills_command::{BotReply, handle_skills_command};
use crate::agent::{Agent, Ask, Chat, ChatIo, ToolEvent};
use crate::app::App;
use crate::config::TelegramConfig;
use crate::skills::RegistryClient;
use api::{BotApi, Buttons, CallbackQuery, Message, Update};

/// The channel's name in turns and the audit log.
pub const CHANNEL: &str = "telegram";
/// The environment variable read for the token without `channels.telegram.tokenEnv`.
pub const DEFAULT_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";
/// `getUpdates`' wait without `channels.telegram.pollSeconds`, and its bounds.
const DEFAULT_POLL_SECONDS: u32 = 30;
const MAX_POLL_SECONDS: u32 = 50;
/// How long an approval waits for the person's press.
const APPROVAL_WAIT: Duration = Duration::from_secs(5 * 60);
/// Updates waiting for one chat's task, at most; more are refused with a notice.
const QUEUED_PER_CHAT: usize = 32;
/// The longest wait between failed polls.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Telegram's limit on a button's data.
const MAX_BUTTON_DATA: usize = 64;
/// The longest button label: Telegram clips longer ones on a phone anyway.
const BUTTON_LABEL_CHARS: usize = 60;

/// What `/memory` answers in a group chat that has not been opened to personal memory.
pub const MEMORY_IN_GROUP: &str = "Your memory is personal, and this chat is read by others: send /memory to me in a private chat. (The person running Engram can open a group to memory with channels.telegram.memoryGroups.)";

/// The one answer to anyone not in `channels.bot`.
pub const REFUSAL: &str =
    "You are not on this bot's list of approved users; ask its admin to add you.";

const HELP: &str = "Talk to me in messages. Commands:
/memory - what I remember (Overview, Recent, Subconscious, Pause, Resume, Clear)
/skills - skills: /skills, /skills search <query>, /skills view <id>, /skills install <id>, /skills remove <id> (install and remove: admins)
/new - end this conversation (I learn from it) and start a new one
You can also ask me to install a skill from a URL, or paste a SKILL.md and ask me to install it (admins).";

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "channels.telegram: the environment variable {var} (channels.telegram.tokenEnv) holding the bot token is not set"
    )]
    NoToken { var: String },
    #[error("channels.telegram.pollSeconds must be 1 to {MAX_POLL_SECONDS}, not {0}")]
    BadPoll(u32),
    #[error("channels.telegram.baseUrl is not usable: {0}")]
    BadBaseUrl(crate::net::FetchError),
}

/// Runs the bot until `stop` turns true (or its sender goes). Without
/// `channels.telegram` it returns at once; a setting that cannot work is logged as an
/// error and the bot stays off (the daemon's other services go on).
pub async fn run(app: Arc<App>, stop: watch::Receiver<bool>) {
    let Some(settings) = app.config.current().channels.telegram.clone() else {
        return;
    };
    match Bot::new(app, &settings, |var| std::env::var(var).ok()) {
        Ok(bot) => Arc::new(bot).poll(stop).await,
        Err(e) => tracing::error!("the Telegram channel is off: {e}"),
    }
}

struct Bot {
    app: Arc<App>,
    api: BotApi,
    agent: Agent,
    poll: Duration,
    /// Each chat's queue, read by its task.
    chats: Mutex<HashMap<i64, mpsc::Sender<Update>>>,
    /// Approvals waiting for a press, by the id in their buttons.
    approvals: Mutex<HashMap<String, Pending>>,
}

struct Pending {
    /// The Telegram user who was asked: only they answer.
    user: i64,
    answer: oneshot::Sender<bool>,
}

impl Bot {
    fn new(
        app: Arc<App>,
        settings: &TelegramConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Bot, StartError> {
        let var = settings
            .token_env
            .clone()
            .unwrap_or_else(|| DEFAULT_TOKEN_ENV.to_string());
        let token = env(&var)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .ok_or(StartError::NoToken { var })?;
        let poll = settings.poll_seconds.unwrap_or(DEFAULT_POLL_SECONDS);
        if !(1..=MAX_POLL_SECONDS).contains(&poll) {
            return Err(StartError::BadPoll(poll));
        }
        let base = settings
            .base_url
            .as_deref()
            .unwrap_or(api::DEFAULT_BASE_URL);
        let api = BotApi::new(base, token).map_err(StartError::BadBaseUrl)?;
        let agent = Agent::new(
            app.turns.clone(),
            app.memory.clone(),
            app.strategies.clone(),
            app.config.clone(),
        );
        Ok(Bot {
            app,
            api,
            agent,
            poll: Duration::from_secs(u64::from(poll)),
            chats: Mutex::default(),
            approvals: Mutex::default(),
        })
    }

    async fn poll(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        tracing::info!("the Telegram channel is polling for updates");
        let mut offset = 0;
        let mut backoff = Duration::from_secs(1);
        while !*stop.borrow() {
            let polled = tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() { break }
                    continue;
                }
                polled = self.api.get_updates(offset, self.poll) => polled,
            };
            match polled {
                Ok((updates, last)) => {
                    backoff = Duration::from_secs(1);
                    if let Some(last) = last {
                        offset = last + 1;
                    }
                    for update in updates {
                        self.dispatch(update).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        "Telegram getUpdates failed: {}",
                        self.api.hide(&e.to_string())
                    );
                    tokio::select! {
                        _ = stop.changed() => {}
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        tracing::info!("the Telegram channel stopped");
    }

    fn role(&self, user: i64) -> Role {
        Role::of(&self.app.config.current().channels.bot, &user.to_string())
    }

    /// Whether `chat` is a group chat where personal memory must not show: any chat but
    /// the person's private one with the bot (whose id is theirs), unless listed in
    /// `channels.telegram.memoryGroups`.
    fn memory_private_in(&self, chat: i64, user: i64) -> bool {
        chat != user
            && !self
                .app
                .config
                .current()
                .channels
                .telegram
                .as_ref()
                .is_some_and(|t| t.memory_groups.contains(&chat))
    }

    /// The Engram user whose memory a Telegram user's chats use.
    fn engram_user(&self, user: i64) -> String {
        let id = user.to_string();
        self.app
            .config
            .current()
            .channels
            .telegram
            .as_ref()
            .and_then(|t| t.users.get(&id).cloned())
            .unwrap_or_else(|| format!("telegram-{id}"))
    }

    /// Sends `text` to `chat`, split at Telegram's limit; `buttons` go under the last
    /// piece. Failures are logged (the person cannot be told through a failing API).
    async fn say(&self, chat: i64, text: &str, buttons: &Buttons) -> Option<i64> {
        let pieces = split::split(text, split::MAX_UNITS);
        let count = pieces.len();
        let mut last = None;
        for (n, piece) in pieces.iter().enumerate() {
            let none = Buttons::new();
            let under = if n + 1 == count { buttons } else { &none };
            match self.api.send(chat, piece, under).await {
                Ok(id) => last = Some(id),
                Err(e) => {
                    tracing::warn!(
                        "Telegram sendMessage failed: {}",
                        self.api.hide(&e.to_string())
                    );
                    return None;
                }
            }
        }
        last
    }

    async fn answer_press(&self, press: &CallbackQuery, text: Option<&str>) {
        if let Err(e) = self.api.answer_callback(&press.id, text).await {
            tracing::warn!(
                "Telegram answerCallbackQuery failed: {}",
                self.api.hide(&e.to_string())
            );
        }
    }

    /// Routes one update: strangers are refused here, approvals answered here, the
    /// rest queued for its chat's task.
    async fn dispatch(self: &Arc<Self>, update: Update) {
        let (chat, from) = match (&update.message, &update.callback_query) {
            (Some(message), _) => match &message.from {
                Some(from) if !from.is_bot => (message.chat.id, from.id),
                _ => return,
            },
            (None, Some(press)) => {
                if self.role(press.from.id) == Role::Unknown {
                    self.answer_press(press, Some(REFUSAL)).await;
                    return;
                }
                if press.data.as_deref().is_some_and(|d| d.starts_with("a:")) {
                    self.approval_pressed(press).await;
                    return;
                }
                match &press.message {
                    Some(message) => (message.chat.id, press.from.id),
                    None => {
                        self.answer_press(press, Some("This button has expired."))
                            .await;
                        return;
                    }
                }
            }
            (None, None) => return,
        };
        if self.role(from) == Role::Unknown {
            self.say(chat, REFUSAL, &Buttons::new()).await;
            return;
        }
        let queued = {
            let mut chats = self.chats.lock().unwrap_or_else(|e| e.into_inner());
            let queue = chats
                .entry(chat)
                .or_insert_with(|| self.clone().spawn_chat(chat));
            match queue.try_send(update) {
                Err(mpsc::error::TrySendError::Closed(update)) => {
                    let fresh = self.clone().spawn_chat(chat);
                    let sent = fresh.try_send(update).is_ok();
                    *queue = fresh;
                    sent
                }
                other => other.is_ok(),
            }
        };
        if !queued {
            self.say(
                chat,
                "Too many messages are waiting in this chat; send this again after my answers.",
                &Buttons::new(),
            )
            .await;
        }
    }

    fn spawn_chat(self: Arc<Self>, chat: i64) -> mpsc::Sender<Update> {
        let (queue, mut updates) = mpsc::channel::<Update>(QUEUED_PER_CHAT);
        tokio::spawn(async move {
            let mut people: HashMap<i64, Chat> = HashMap::new();
            while let Some(update) = updates.recv().await {
                if let Some(message) = update.message {
                    self.on_message(chat, &mut people, message).await;
                } else if let Some(press) = update.callback_query {
                    self.on_press(chat, press).await;
                }
            }
        });
        queue
    }

    /// The person's conversation in `chat`, with the tools their role allows and their
    /// memory kept out where the chat is read by others.
    fn person<'a>(
        &self,
        people: &'a mut HashMap<i64, Chat>,
        chat: i64,
        user: i64,
        role: Role,
    ) -> &'a mut Chat {
        let person = people
            .entry(user)
            .or_insert_with(|| Chat::new(self.engram_user(user), CHANNEL));
        person.withhold(if role == Role::Admin {
            &[]
        } else {
            &["install_skill"]
        });
        person.keep_memory_private(self.memory_private_in(chat, user));
        person
    }

    async fn on_message(&self, chat: i64, people: &mut HashMap<i64, Chat>, message: Message) {
        let Some(from) = message.from else { return };
        let role = self.role(from.id);
        if role == Role::Unknown {
            self.say(chat, REFUSAL, &Buttons::new()).await;
            return;
        }
        let Some(text) = message.text.filter(|t| !t.trim().is_empty()) else {
            self.say(chat, "I read text messages only.", &Buttons::new())
                .await;
            return;
        };
        let mut words = text.split_whitespace();
        let command = words
            .next()
            .and_then(|w| w.strip_prefix('/'))
            .map(|w| w.split('@').next().unwrap_or_default().to_ascii_lowercase());
        match command.as_deref() {
            Some("start" | "help") => {
                self.say(chat, HELP, &Buttons::new()).await;
            }
            Some("memory") if self.memory_private_in(chat, from.id) => {
                self.say(chat, MEMORY_IN_GROUP, &Buttons::new()).await;
            }
            Some("memory") => {
                let user = self.engram_user(from.id);
                match words.next() {
                    None => {
                        let buttons = BOT_MENU
                            .chunks(3)
                            .map(|row| {
                                row.iter()
                                    .map(|c| (c.label().to_string(), format!("m:{}", c.key())))
                                    .collect()
                            })
                            .collect();
                        self.say(chat, "Second Brain: choose what to see or do.", &buttons)
                            .await;
                    }
                    Some(key) if Choice::parse(key) == Some(Choice::Forget) => {
                        let words: Vec<&str> = words.collect();
                        let action = Action::Forget(words.join(" "));
                        self.memory(chat, None, user, action).await
                    }
                    Some(key) => match Choice::parse(key).map(Choice::action) {
                        Some(Some(action)) => self.memory(chat, None, user, action).await,
                        Some(None) => {
                            self.say(chat, BOT_SEARCH, &Buttons::new()).await;
                        }
                        None => {
                            let keys: Vec<&str> = BOT_MENU.iter().map(|c| c.key()).collect();
                            let text = format!("/memory entries: {}", keys.join(", "));
                            self.say(chat, &text, &Buttons::new()).await;
                        }
                    },
                }
            }
            Some("skills") => self.skills(chat, &text, role).await,
            Some("new") => {
                let person = self.person(people, chat, from.id, role);
                let text = match self.agent.end_conversation(person).await {
                    Ok(Some(ingested)) => {
                        format!("New conversation. {}", super::learned(&ingested))
                    }
                    Ok(None) => "New conversation.".to_string(),
                    Err(e) => format!("New conversation. (learning failed: {e})"),
                };
                self.say(chat, &text, &Buttons::new()).await;
            }
            _ => {
                let person = self.person(people, chat, from.id, role);
                person.set_speaker(Some(from.first_name.clone()));
                self.converse(chat, from.id, person, &text).await;
            }
        }
    }

    /// A message for the agent: the answer (and what its tools did) as one reply.
    async fn converse(&self, chat: i64, user: i64, person: &mut Chat, text: &str) {
        if let Err(e) = self.api.typing(chat).await {
            tracing::debug!(
                "Telegram sendChatAction failed: {}",
                self.api.hide(&e.to_string())
            );
        }
        let mut io = BotIo {
            bot: self,
            chat,
            user,
            said: String::new(),
        };
        let replied = self
            .agent
            .reply(person, text, &mut io, std::future::pending())
            .await;
        let mut said = std::mem::take(&mut io.said);
        match replied {
            Ok(reply) => {
                if let Some(stopped) = reply.stopped {
                    said.push_str(&format!("\n\n{}", stopped.notice()));
                }
            }
            Err(e) => said.push_str(&format!("\n\n{}", e.for_person())),
        }
        if said.trim().is_empty() {
            said = "(the model gave an empty answer)".into();
        }
        self.say(chat, &said, &Buttons::new()).await;
    }

    /// Runs a `/memory` action; the result replaces the message `edit` (a
    /// confirmation whose buttons must not be pressed twice) or is sent anew.
    async fn memory(&self, chat: i64, edit: Option<i64>, user: String, action: Action) {
        // A question about one memory carries its id in the buttons that answer it.
        let forgetting = match &action {
            Action::ForgetOne {
                id,
                confirmed: false,
                ..
            } => Some(id.clone()),
            _ => None,
        };
        let memory = self.app.memory.clone();
        let reply = crate::background::run(move || memory_command::run(&memory, &user, action))
            .await
            .unwrap_or_else(|e| memory_command::MemoryReply::text(format!("/memory failed: {e}")));
        let buttons: Buttons = match (&forgetting, reply.confirm) {
            (Some(id), true) => vec![
                vec![("Yes, forget it".into(), format!("m:fy:{id}"))],
                vec![("Forget it, keep the messages".into(), format!("m:fk:{id}"))],
                vec![("No".into(), "m:clear-no".into())],
            ],
            (None, true) => vec![vec![
                ("Yes, clear everything".into(), "m:clear-yes".into()),
                ("No".into(), "m:clear-no".into()),
            ]],
            _ => reply
                .picks
                .iter()
                .map(|pick| format!("m:f:{}", pick.id))
                .zip(&reply.picks)
                .filter(|(data, _)| data.len() <= MAX_BUTTON_DATA)
                .map(|(data, pick)| {
                    vec![(memory_command::cut(&pick.label, BUTTON_LABEL_CHARS), data)]
                })
                .collect(),
        };
        self.replace_or_say(chat, edit, &reply.text, &buttons).await;
    }

    async fn replace_or_say(&self, chat: i64, edit: Option<i64>, text: &str, buttons: &Buttons) {
        if let Some(message) = edit
            && split::split(text, split::MAX_UNITS).len() == 1
        {
            match self.api.edit(chat, message, text, buttons).await {
                Ok(()) => return,
                Err(e) => tracing::warn!(
                    "Telegram editMessageText failed: {}",
                    self.api.hide(&e.to_string())
                ),
            }
        }
        self.say(chat, text, buttons).await;
    }

    /// `/skills ...` through the channel-independent handler, with buttons for what
    /// the person may do next.
    async fn skills(&self, chat: i64, text: &str, role: Role) {
        let sub = text
            .split_whitespace()
            .nth(1)
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        let reply = self.skills_reply(text, role).await;
        let mut buttons = Buttons::new();
        for item in &reply.items {
            let mut row = Vec::new();
            let mut button = |label: String, data: String| {
                if data.len() <= MAX_BUTTON_DATA {
                    row.push((label, data));
                }
            };
            match sub.as_str() {
                "search" => {
                    button(format!("View {}", item.id), format!("s:v:{}", item.id));
                    if role == Role::Admin {
                        button(format!("Install {}", item.id), format!("s:i:{}", item.id));
                    }
                }
                "view" if role == Role::Admin => {
                    button(format!("Install {}", item.id), format!("s:i:{}", item.id));
                }
                "" | "list" if role == Role::Admin => {
                    button(format!("Remove {}", item.id), format!("s:r:{}", item.id));
                }
                _ => {}
            }
            if !row.is_empty() {
                buttons.push(row);
            }
        }
        self.say(chat, &reply.text, &buttons).await;
    }

    async fn skills_reply(&self, text: &str, role: Role) -> BotReply {
        let config = self.app.config.current();
        match RegistryClient::from_config(&self.app.data, &config, None) {
            Ok(registry) => handle_skills_command(text, role, &self.app.skills, &registry).await,
            Err(e) => BotReply {
                status: super::skills_command::ReplyStatus::Failed,
                text: e.to_string(),
                items: Vec::new(),
            },
        }
    }

    async fn on_press(&self, chat: i64, press: CallbackQuery) {
        let role = self.role(press.from.id);
        let data = press.data.clone().unwrap_or_default();
        let message = press.message.as_ref().map(|m| m.message_id);
        self.answer_press(&press, None).await;
        if data.starts_with("m:") && self.memory_private_in(chat, press.from.id) {
            self.say(chat, MEMORY_IN_GROUP, &Buttons::new()).await;
        } else if let Some(key) = data.strip_prefix("m:") {
            let user = self.engram_user(press.from.id);
            match key {
                "clear-yes" => {
                    self.memory(chat, message, user, Action::ClearConfirmed)
                        .await
                }
                "clear-no" => {
                    self.replace_or_say(chat, message, "Nothing was deleted.", &Buttons::new())
                        .await;
                }
                key if key.starts_with("f:")
                    || key.starts_with("fy:")
                    || key.starts_with("fk:") =>
                {
                    let (step, id) = key.split_once(':').unwrap_or_default();
                    let action = Action::ForgetOne {
                        id: id.to_string(),
                        keep_messages: step == "fk",
                        confirmed: step != "f",
                    };
                    self.memory(chat, message, user, action).await
                }
                key => match Choice::parse(key).and_then(Choice::action) {
                    Some(action) => self.memory(chat, None, user, action).await,
                    None => {
                        self.say(chat, BOT_SEARCH, &Buttons::new()).await;
                    }
                },
            }
        } else if let Some(rest) = data.strip_prefix("s:") {
            let command = match rest.split_once(':') {
                Some(("v", id)) => format!("/skills view {id}"),
                Some(("i", id)) => format!("/skills install {id}"),
                Some(("r", id)) => format!("/skills remove {id}"),
                _ => return,
            };
            self.skills(chat, &command, role).await;
        }
    }

    /// A press of Allow or Refuse under an approval question (`a:<id>:y|n`).
    async fn approval_pressed(&self, press: &CallbackQuery) {
        let data = press.data.as_deref().unwrap_or_default();
        let mut parts = data.splitn(3, ':').skip(1);
        let (Some(id), Some(answer)) = (parts.next(), parts.next()) else {
            self.answer_press(press, None).await;
            return;
        };
        let notice = {
            let mut approvals = self.approvals.lock().unwrap_or_else(|e| e.into_inner());
            match approvals.get(id) {
                None => Some("This question is no longer open."),
                Some(pending) if pending.user != press.from.id => {
                    Some("Only the person who was asked can answer this.")
                }
                Some(_) => {
                    if let Some(pending) = approvals.remove(id) {
                        let _ = pending.answer.send(answer == "y");
                    }
                    None
                }
            }
        };
        self.answer_press(press, notice).await;
    }
}

/// The bot's side of a turn: the answer collected (sent whole when the turn ends),
/// tool lines among it, approvals asked with buttons.
struct BotIo<'a> {
    bot: &'a Bot,
    chat: i64,
    user: i64,
    said: String,
}

impl ChatIo for BotIo<'_> {
    fn text(&mut self, piece: &str) {
        self.said.push_str(piece);
    }

    fn tool(&mut self, event: &ToolEvent) {
        if !self.said.is_empty() && !self.said.ends_with('\n') {
            self.said.push('\n');
        }
        self.said.push_str(&format!("· {}\n", event.line()));
    }

    async fn approve(&mut self, ask: &Ask) -> bool {
        // What was said so far comes first, then the question.
        let before = std::mem::take(&mut self.said);
        if !before.trim().is_empty() {
            self.bot.say(self.chat, &before, &Buttons::new()).await;
        }
        let id = crate::ids::new_id("ap");
        let (answer, answered) = oneshot::channel();
        self.bot
            .approvals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                id.clone(),
                Pending {
                    user: self.user,
                    answer,
                },
            );
        let question = format!("Allow {}?\n({})", ask.summary(), ask.reason_shown());
        let buttons = vec![vec![
            ("Allow".to_string(), format!("a:{id}:y")),
            ("Refuse".to_string(), format!("a:{id}:n")),
        ]];
        let sent = self.bot.say(self.chat, &question, &buttons).await;
        let yes = match sent {
            Some(_) => match tokio::time::timeout(APPROVAL_WAIT, answered).await {
                Ok(Ok(yes)) => Some(yes),
                _ => None,
            },
            None => Some(false),
        };
        self.bot
            .approvals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let outcome = match yes {
            Some(true) => "allowed",
            Some(false) => "refused",
            None => "refused: no answer within 5 minutes",
        };
        if let Some(message) = sent {
            self.bot
                .replace_or_say(
                    self.chat,
                    Some(message),
                    &format!("{question}\n→ {outcome}"),
                    &Buttons::new(),
                )
                .await;
        }
        yes == Some(true)
    }
}

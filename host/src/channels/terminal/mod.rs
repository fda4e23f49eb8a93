//! `engram chat`: the terminal channel. A line editor with history (rustyline: the
//! usual keys, Up/Down through what was typed before, kept in
//! `{data_dir}/chat/history.txt`, bracketed paste so that a pasted SKILL.md stays one
//! message), answers streamed as they come, and the commands:
//!
//! - `/memory` opens the arrow-key menu of the spec's table (`/memory <entry>` runs one
//!   entry directly: `/memory search tea`);
//! - `/skills ...`: the bot command's handler; the terminal's user is the machine's
//!   owner, so install and remove are theirs too;
//! - `/new` ends the conversation (the Second Brain learns from it) and starts another;
//! - `/help`, `/exit` (or Ctrl-D, which also ends the conversation).
//!
//! Anything else is a message for the agent. Approvals are asked inline (y/n), and
//! Ctrl-C stops an answer that is streaming.
//!
//! The channel opens the data directory itself, like the other commands that work on
//! it directly; its turns are audited as `channel:terminal`.

mod io;
mod keys;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use crossterm::style::Stylize;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Config, Editor};

use super::learned;
use super::memory_command::{self, Action, Choice, TERMINAL_MENU};
use super::skills_command::{Role, handle_skills_command};
use crate::agent::{Agent, Chat};
use crate::app::App;
use crate::skills::RegistryClient;
use crate::term_text::clean_block;
use io::TerminalIo;

/// The channel's name in turns, the audit log and the prompt.
pub const CHANNEL: &str = "terminal";
/// Lines of history kept.
const HISTORY: usize = 1000;

const HELP: &str = "Type a message to talk to Engram. Commands:
  /memory            the Second Brain menu (Overview, Recent, Subconscious, Search, Pause, Resume, Clear)
  /memory <entry>    one entry directly, e.g. /memory recent, /memory search tea
  /skills ...        skills: /skills, /skills search <query>, /skills view <id>, /skills install <id>, /skills remove <id>
  /new               end this conversation (Engram learns from it) and start a new one
  /help              this text
  /exit              leave (Ctrl-D too); Ctrl-C stops an answer";

/// Runs the terminal channel for `user` until `/exit` or Ctrl-D.
pub fn run(app: App, user: String) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let app = Arc::new(app);
    let agent = Agent::new(
        app.turns.clone(),
        app.memory.clone(),
        app.strategies.clone(),
        app.config.clone(),
    );
    let mut session = Session {
        app: app.clone(),
        agent,
        chat: Chat::new(user.clone(), CHANNEL),
        editor: editor(&app)?,
        runtime,
    };
    session.banner();
    loop {
        match session.editor.readline("> ") {
            Ok(line) => {
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                let _ = session.editor.add_history_entry(text);
                session.save_history();
                if !session.handle(text)? {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    session.end_conversation("Bye.");
    Ok(ExitCode::SUCCESS)
}

struct Session {
    app: Arc<App>,
    agent: Agent,
    chat: Chat,
    editor: Editor<(), DefaultHistory>,
    runtime: tokio::runtime::Runtime,
}

fn editor(app: &App) -> anyhow::Result<Editor<(), DefaultHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY)?
        .history_ignore_dups(true)?
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    let _ = editor.load_history(&app.data.chat_history_file());
    Ok(editor)
}

impl Session {
    fn banner(&self) {
        let model = match self.agent.model() {
            Ok(model) => format!("model {}", model.name()),
            Err(e) => format!("{} ({})", "no model".yellow(), clean_block(&e.to_string())),
        };
        println!(
            "Engram chat, user {}, {model}.\nType a message, or /memory, /skills, /new, /help; Ctrl-D leaves.",
            self.chat.user()
        );
        if self.agent.model().is_err() {
            println!(
                "Chat needs llm.baseUrl and llm.model in {}; /memory, /skills and /new work without them.",
                self.app.config.path().display()
            );
        }
    }

    /// The history file, private to its owner (it holds what was typed).
    fn save_history(&mut self) {
        let path = self.app.data.chat_history_file();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&path);
        }
        if let Err(e) = self.editor.save_history(&path) {
            tracing::warn!("cannot save the chat history to {}: {e}", path.display());
        }
    }

    /// Handles one line; `false` to leave.
    fn handle(&mut self, text: &str) -> anyhow::Result<bool> {
        let mut words = text.split_whitespace();
        let command = words.next().unwrap_or_default().to_ascii_lowercase();
        match command.as_str() {
            "/exit" | "/quit" => return Ok(false),
            "/help" | "/?" => println!("{HELP}"),
            "/new" => self.end_conversation("New conversation."),
            "/memory" => {
                let rest: Vec<&str> = words.collect();
                self.memory(&rest)?;
            }
            "/skills" => self.skills(text),
            _ => self.message(text),
        }
        Ok(true)
    }

    fn message(&mut self, text: &str) {
        let mut io = TerminalIo::default();
        let interrupt = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let replied =
            self.runtime
                .block_on(self.agent.reply(&mut self.chat, text, &mut io, interrupt));
        io.finish();
        match replied {
            Ok(reply) => {
                if let Some(stopped) = reply.stopped {
                    println!("{}", stopped.notice().yellow());
                }
            }
            Err(e) => println!("{}", clean_block(&e.for_person()).red()),
        }
        println!();
    }

    fn end_conversation(&mut self, then: &str) {
        let ended = self
            .runtime
            .block_on(self.agent.end_conversation(&mut self.chat));
        match ended {
            Ok(Some(ingested)) => println!("{then} {}", learned(&ingested)),
            Ok(None) => println!("{then}"),
            Err(e) => println!("{then} {}", format!("(learning failed: {e})").red()),
        }
    }

    fn memory(&mut self, args: &[&str]) -> anyhow::Result<()> {
        let choice = match args.first() {
            Some(key) => match Choice::parse(key) {
                Some(choice) => choice,
                None => {
                    println!("No /memory entry `{}`. {}", clean_block(key), entries());
                    return Ok(());
                }
            },
            None if keys::interactive() => {
                let entries: Vec<(&str, &str)> = TERMINAL_MENU
                    .iter()
                    .map(|c| (c.label(), c.hint()))
                    .collect();
                match keys::menu("Second Brain", &entries)? {
                    Some(n) => TERMINAL_MENU[n],
                    None => return Ok(()),
                }
            }
            None => {
                println!("{}", entries());
                return Ok(());
            }
        };
        let action = match choice.action() {
            Some(action) => action,
            None => {
                let query = if args.len() > 1 {
                    args[1..].join(" ")
                } else {
                    match self.editor.readline("search: ") {
                        Ok(query) => query,
                        Err(_) => return Ok(()),
                    }
                };
                Action::Search(query)
            }
        };
        let reply = self.memory_action(action);
        println!("{}", clean_block(&reply.text));
        if reply.confirm {
            if keys::yes_no("Clear everything?") {
                let done = self.memory_action(Action::ClearConfirmed);
                println!("{}", clean_block(&done.text));
            } else {
                println!("Nothing was deleted.");
            }
        }
        println!();
        Ok(())
    }

    fn memory_action(&self, action: Action) -> memory_command::MemoryReply {
        let memory = self.app.memory.clone();
        let user = self.chat.user().to_string();
        self.runtime
            .block_on(crate::background::run(move || {
                memory_command::run(&memory, &user, action)
            }))
            .unwrap_or_else(|e| memory_command::MemoryReply {
                text: format!("/memory failed: {e}"),
                confirm: false,
            })
    }

    fn skills(&mut self, text: &str) {
        let config = self.app.config.current();
        let registry = match RegistryClient::from_config(&self.app.data, &config, None) {
            Ok(registry) => registry,
            Err(e) => {
                println!("{}", clean_block(&e.to_string()).red());
                return;
            }
        };
        let reply = self.runtime.block_on(handle_skills_command(
            text,
            Role::Admin,
            &self.app.skills,
            &registry,
        ));
        println!("{}\n", clean_block(&reply.text));
        let _ = std::io::stdout().flush();
    }
}

fn entries() -> String {
    let keys: Vec<&str> = TERMINAL_MENU.iter().map(|c| c.key()).collect();
    format!("Entries: /memory {}", keys.join(" | "))
}

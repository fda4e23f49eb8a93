//! `engram chat`: the terminal channel. A line editor with history (rustyline: the
//! usual keys, Up/Down through what was typed before, kept in
//! `{data_dir}/chat/history.txt`, bracketed paste so that a pasted SKILL.md stays one
//! message), answers streamed as they come, and the commands:
//!
//! - `/memory` opens the arrow-key menu of `memory_command`'s table (`/memory <entry>`
//!   runs one entry directly: `/memory search tea`);
//! - `/skills ...`: the bot command's handler; the terminal's user is the machine's
//!   owner, so install and remove are theirs too;
//! - `/new` ends the conversation (the Second Brain learns from it) and starts another;
//! - `/help`, `/exit` (or Ctrl-D, which also ends the conversation).
//!
//! Anything else is a message for the agent. Approvals are asked inline (y/n), and
//! Ctrl-C stops an answer that is streaming.
//!
//! Where the conversation runs is a [`Conversation`]: through the running daemon
//! (`cli/chat.rs` speaks to `daemon.rs` there), so that the daemon's services see every
//! change at once, or [`Embedded`] in this process when no daemon runs (it then holds
//! the data directory's lock). Either way [`session::Session`] does the work, and its
//! turns are audited as `channel:terminal`.

pub mod daemon;
mod io;
pub mod keys;
pub mod session;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use crossterm::style::Stylize;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Config, Editor};

use super::memory_command::{Action, Choice, MemoryReply, TERMINAL_MENU};
use crate::app::App;
use crate::lock::DataDirLock;
use crate::paths::DataDir;
use crate::term_text::clean_block;
pub use io::TerminalIo;
use session::{Closing, Session};

/// The channel's name in turns, the audit log and the prompt.
pub const CHANNEL: &str = "terminal";
/// Lines of history kept.
const HISTORY: usize = 1000;

const HELP: &str = "Type a message to talk to Engram. Commands:
  /memory            the Second Brain menu (Overview, Recent, Subconscious, Search, Pause, Resume, Clear, Forget)
  /memory <entry>    one entry directly, e.g. /memory recent, /memory search tea,
                     /memory forget tea (--keep-messages keeps what it was learned from)
  /skills ...        skills: /skills, /skills search <query>, /skills view <id>, /skills install <id>, /skills remove <id>
  /new               end this conversation (Engram learns from it) and start a new one
  /help              this text
  /exit              leave (Ctrl-D too); Ctrl-C stops an answer";

/// Where a terminal conversation runs: what each kind of line does. Every call blocks
/// until it is done (the terminal shows one thing at a time).
pub trait Conversation {
    fn user(&self) -> &str;
    /// The model's name, or why there is none.
    fn model(&self) -> Result<String, String>;
    /// A message for the agent: the answer printed as it streams, the gate's questions
    /// asked inline; Ctrl-C stops it. Answers what to show after it, if anything.
    fn message(&mut self, text: &str) -> Option<Closing>;
    fn memory(&mut self, action: Action) -> MemoryReply;
    fn skills(&mut self, line: &str) -> String;
    /// Ends the conversation (learned from) and starts another: `New conversation.`
    /// and what was learned.
    fn new_conversation(&mut self) -> String;
    /// Ends the conversation for good (learned from): `Bye.` and what was learned.
    fn end(&mut self) -> String;
}

/// The conversation in this process, over a data directory it holds (no daemon runs).
pub struct Embedded {
    session: Session,
    runtime: tokio::runtime::Runtime,
    _lock: DataDirLock,
}

impl Embedded {
    /// Opens the services over `data`, whose lock `lock` is, for `user`.
    pub fn open(data: DataDir, lock: DataDirLock, user: String) -> anyhow::Result<Embedded> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let app = Arc::new(App::open(data)?);
        Ok(Embedded {
            session: Session::new(app, user),
            runtime,
            _lock: lock,
        })
    }
}

impl Conversation for Embedded {
    fn user(&self) -> &str {
        self.session.user()
    }

    fn model(&self) -> Result<String, String> {
        self.session.model()
    }

    fn message(&mut self, text: &str) -> Option<Closing> {
        let mut io = TerminalIo::default();
        let interrupt = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let notice = self
            .runtime
            .block_on(self.session.message(text, &mut io, interrupt));
        io.finish();
        notice
    }

    fn memory(&mut self, action: Action) -> MemoryReply {
        self.runtime.block_on(self.session.memory(action))
    }

    fn skills(&mut self, line: &str) -> String {
        self.runtime.block_on(self.session.skills(line))
    }

    fn new_conversation(&mut self) -> String {
        self.runtime
            .block_on(self.session.new_conversation("New conversation."))
    }

    fn end(&mut self) -> String {
        self.runtime.block_on(self.session.new_conversation("Bye."))
    }
}

/// Runs the terminal channel over `conversation` until `/exit` or Ctrl-D; `data` is the
/// data directory whose history file and config the terminal names.
pub fn run(data: &DataDir, mut conversation: impl Conversation) -> anyhow::Result<ExitCode> {
    let mut editor = editor(data)?;
    banner(data, &conversation);
    loop {
        match editor.readline("> ") {
            Ok(line) => {
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(text);
                save_history(data, &mut editor);
                if !handle(&mut conversation, &mut editor, text)? {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    println!("{}", clean_block(&conversation.end()));
    Ok(ExitCode::SUCCESS)
}

fn editor(data: &DataDir) -> anyhow::Result<Editor<(), DefaultHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY)?
        .history_ignore_dups(true)?
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    let _ = editor.load_history(&data.chat_history_file());
    Ok(editor)
}

fn banner(data: &DataDir, conversation: &impl Conversation) {
    let model = match conversation.model() {
        Ok(name) => format!("model {name}"),
        Err(why) => format!("{} ({})", "no model".yellow(), clean_block(&why)),
    };
    println!(
        "Engram chat, user {}, {model}.\nType a message, or /memory, /skills, /new, /help; Ctrl-D leaves.",
        conversation.user()
    );
    if conversation.model().is_err() {
        println!(
            "Chat needs llm.baseUrl and llm.model in {}; /memory, /skills and /new work without them.",
            data.config_file().display()
        );
    }
}

/// The history file, private to its owner (it holds what was typed).
fn save_history(data: &DataDir, editor: &mut Editor<(), DefaultHistory>) {
    let path = data.chat_history_file();
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
    if let Err(e) = editor.save_history(&path) {
        tracing::warn!("cannot save the chat history to {}: {e}", path.display());
    }
}

/// Handles one line; `false` to leave.
fn handle(
    conversation: &mut impl Conversation,
    editor: &mut Editor<(), DefaultHistory>,
    text: &str,
) -> anyhow::Result<bool> {
    let mut words = text.split_whitespace();
    let command = words.next().unwrap_or_default().to_ascii_lowercase();
    match command.as_str() {
        "/exit" | "/quit" => return Ok(false),
        "/help" | "/?" => println!("{HELP}"),
        "/new" => println!("{}", clean_block(&conversation.new_conversation())),
        "/memory" => {
            let rest: Vec<&str> = words.collect();
            memory(conversation, editor, &rest)?;
        }
        "/skills" => {
            println!("{}\n", clean_block(&conversation.skills(text)));
            let _ = std::io::stdout().flush();
        }
        _ => {
            match conversation.message(text) {
                Some(Closing::Stopped(notice)) => println!("{}", clean_block(&notice).yellow()),
                Some(Closing::Failed(why)) => println!("{}", clean_block(&why).red()),
                None => {}
            }
            println!();
        }
    }
    Ok(true)
}

fn memory(
    conversation: &mut impl Conversation,
    editor: &mut Editor<(), DefaultHistory>,
    args: &[&str],
) -> anyhow::Result<()> {
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
    let action = match choice {
        Choice::Search => {
            let query = if args.len() > 1 {
                args[1..].join(" ")
            } else {
                match editor.readline("search: ") {
                    Ok(query) => query,
                    Err(_) => return Ok(()),
                }
            };
            Action::Search(query)
        }
        Choice::Forget => return forget(conversation, editor, args.get(1..).unwrap_or_default()),
        other => match other.action() {
            Some(action) => action,
            None => return Ok(()),
        },
    };
    let reply = conversation.memory(action);
    println!("{}", clean_block(&reply.text));
    if reply.confirm {
        if keys::yes_no("Clear everything?") {
            let done = conversation.memory(Action::ClearConfirmed);
            println!("{}", clean_block(&done.text));
        } else {
            println!("Nothing was deleted.");
        }
    }
    println!();
    Ok(())
}

/// `/memory forget [--keep-messages] [words]`: the memories matching the words (the
/// most recent without), one picked, then forgotten once the person says yes.
fn forget(
    conversation: &mut impl Conversation,
    editor: &mut Editor<(), DefaultHistory>,
    args: &[&str],
) -> anyhow::Result<()> {
    let keep_messages = args.contains(&"--keep-messages");
    let words: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--keep-messages")
        .collect();
    let offered = conversation.memory(Action::Forget(words.join(" ")));
    println!("{}", clean_block(&offered.text));
    if offered.picks.is_empty() {
        println!();
        return Ok(());
    }
    let picked = if keys::interactive() {
        let entries: Vec<(&str, &str)> = offered
            .picks
            .iter()
            .map(|p| (p.label.as_str(), ""))
            .collect();
        keys::menu("Forget", &entries)?
    } else {
        for (n, pick) in offered.picks.iter().enumerate() {
            println!("{}. {}", n + 1, clean_block(&pick.label));
        }
        editor
            .readline("number: ")
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .filter(|n| *n < offered.picks.len())
    };
    let Some(n) = picked else {
        println!("Nothing was forgotten.\n");
        return Ok(());
    };
    let id = offered.picks[n].id.clone();
    let ask = conversation.memory(Action::ForgetOne {
        id: id.clone(),
        keep_messages,
        confirmed: false,
    });
    println!("{}", clean_block(&ask.text));
    if ask.confirm && keys::yes_no("Forget it?") {
        let done = conversation.memory(Action::ForgetOne {
            id,
            keep_messages,
            confirmed: true,
        });
        println!("{}", clean_block(&done.text));
    } else if ask.confirm {
        println!("Nothing was forgotten.");
    }
    println!();
    Ok(())
}

fn entries() -> String {
    let keys: Vec<&str> = TERMINAL_MENU.iter().map(|c| c.key()).collect();
    format!("Entries: /memory {}", keys.join(" | "))
}

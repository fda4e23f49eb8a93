//! `engram chat` end to end in a real pseudo-terminal: the built binary runs on the
//! pty's slave side, the test types keys into the master side and reads the screen
//! back through a VT100 emulator (`vt100`), as a person at a terminal would. The model
//! is a STAND-IN (`standin::openai`, a loopback server speaking OpenAI's protocol: no
//! model can run here); everything else is the real data directory.

#![cfg(unix)]

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engram::app::App;
use engram::memory::NewMemory;
use engram::paths::DataDir;
use engram_e2e::standin::openai::{OpenAi, Reply};
use engram_e2e::{Daemon, engram, engram_bin, ok};
use engram_strategies::model::{MemoryType, Scope};
use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use serde_json::json;

const ROWS: u16 = 200;
const COLS: u16 = 160;
const WAIT: Duration = Duration::from_secs(60);

const UP: &str = "\x1b[A";
const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const ESC: &str = "\x1b";

/// `engram chat` in a pseudo-terminal.
struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    /// Where the screen is read from: the row the cursor was on when the last keys
    /// were sent, so earlier output never matches.
    from_row: u16,
}

impl Terminal {
    fn start(data: &Path) -> Terminal {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pseudo-terminal");
        let mut command = CommandBuilder::new(engram_bin());
        command.arg("--data-dir");
        command.arg(data);
        command.arg("chat");
        command.env("TERM", "xterm-256color");
        command.env("ENGRAM_LOG", "warn");
        command.env_remove("SECOND_BRAIN_ENABLED");
        let child = pty.slave.spawn_command(command).expect("spawn engram chat");
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            NonZeroU16::new(ROWS).unwrap(),
            NonZeroU16::new(COLS).unwrap(),
            0,
        )));
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pty.master.take_writer().expect("pty writer")));
        let (shown, answers) = (screen.clone(), writer.clone());
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buffer = [0u8; 8192];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let bytes = &buffer[..n];
                        let mut parser = shown.lock().unwrap();
                        parser.process(bytes);
                        // A terminal answers a cursor-position query (ESC [ 6 n); the
                        // emulator does not, so this answers for it.
                        if bytes.windows(4).any(|w| w == b"\x1b[6n") {
                            let (row, col) = parser.screen().cursor_position();
                            let report = format!("\x1b[{};{}R", row + 1, col + 1);
                            let mut writer = answers.lock().unwrap();
                            let _ = writer.write_all(report.as_bytes());
                            let _ = writer.flush();
                        }
                    }
                }
            }
        });
        Terminal {
            screen,
            writer,
            child,
            from_row: 0,
        }
    }

    fn rows(&self) -> Vec<String> {
        let parser = self.screen.lock().unwrap();
        parser.screen().rows(0, COLS).collect()
    }

    /// The screen from the marked row on, as text.
    fn text(&self) -> String {
        self.rows()[self.from_row as usize..].join("\n")
    }

    /// Marks where new output starts, then sends `keys`.
    fn send(&mut self, keys: &str) {
        self.from_row = self.screen.lock().unwrap().screen().cursor_position().0;
        self.keys(keys);
    }

    /// Sends `keys` without moving the mark (keys inside a menu or a question).
    fn keys(&mut self, keys: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(keys.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Waits until the screen since the mark holds `text`; the screen since the mark.
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let shown = self.text();
            if shown.contains(text) {
                return shown;
            }
            if Instant::now() > deadline {
                panic!(
                    "the screen did not show {text:?} within {WAIT:?}; it shows:\n{}",
                    self.rows().join("\n").trim_end()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Whether the row showing `text` is drawn in reverse video (the menu's cursor).
    fn highlighted(&self, text: &str) -> bool {
        let parser = self.screen.lock().unwrap();
        let screen = parser.screen();
        let rows: Vec<String> = screen.rows(0, COLS).collect();
        let Some(row) = rows.iter().rposition(|r| r.contains(text)) else {
            return false;
        };
        let col = rows[row].find(text).unwrap() as u16;
        screen
            .cell(row as u16, col)
            .is_some_and(|cell| cell.inverse())
    }

    /// Opens `/memory`, moves with `moves` and presses Enter; the screen afterwards
    /// once it shows `expect`.
    fn menu(&mut self, moves: &[&str], expect: &str) -> String {
        self.send("/memory\r");
        self.wait_for("› Overview");
        assert!(
            self.highlighted("› Overview"),
            "the cursor starts on Overview"
        );
        for key in moves {
            self.keys(key);
        }
        self.keys(ENTER);
        self.wait_for(expect)
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
    }
}

fn remember(data: &Path, summary: &str, scope: Scope) {
    let app = App::open(DataDir::new(data.to_path_buf())).unwrap();
    app.memory
        .add(
            "default",
            NewMemory {
                memory_type: MemoryType::Preference,
                summary: summary.into(),
                detail: None,
                evidence: None,
                scope: Some(scope),
                confidence: None,
                importance: None,
                holder: None,
                attribute: None,
            },
        )
        .unwrap();
}

#[test]
fn engram_chat_in_a_terminal_menus_approvals_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (model, queue) = OpenAi::queued();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "llm:\n  baseUrl: {}\n  model: standin-model\n  timeoutSeconds: 20\n",
            model.base_url()
        ),
    )
    .unwrap();
    remember(dir.path(), "Likes green tea", Scope::Durable);
    remember(dir.path(), "Used to play chess", Scope::Subconscious);

    let mut term = Terminal::start(dir.path());
    term.wait_for("Engram chat, user default, model standin-model.");

    // A message: the answer streams onto the screen; memory went to the model.
    queue.push([Reply::Text("Hello! Green tea, as usual?".into())]);
    term.send("which tea do I like?\r");
    term.wait_for("Hello! Green tea, as usual?");
    let system = model.requests()[0]["messages"][0]["content"].to_string();
    assert!(system.contains("Likes green tea"), "{system}");

    // /memory, row by row of `memory_command`'s table.
    let shown = term.menu(&[], "Second Brain: on, learning on.");
    assert!(shown.contains("Second Brain › Overview"), "{shown}");
    assert!(shown.contains("2 memories"), "{shown}");
    let shown = term.menu(&[DOWN], "Recent memories:");
    assert!(
        shown.contains("- [preference] Likes green tea (durable)"),
        "{shown}"
    );
    let shown = term.menu(&[DOWN, DOWN], "Subconscious (out of active recall");
    assert!(
        shown.contains("Used to play chess (subconscious)"),
        "{shown}"
    );
    assert!(!shown.contains("green tea"), "{shown}");
    term.menu(&[DOWN, DOWN, DOWN], "search: ");
    term.keys("chess\r");
    let shown = term.wait_for("Memories matching \"chess\":");
    assert!(shown.contains("Used to play chess"), "{shown}");
    term.menu(&[DOWN, DOWN, DOWN, DOWN], "Learning paused");
    term.menu(&[DOWN, DOWN, DOWN, DOWN, DOWN], "Learning resumed.");
    // Moving shows where the cursor is; Esc closes without doing anything.
    term.send("/memory\r");
    term.wait_for("› Overview");
    term.keys(DOWN);
    term.keys(DOWN);
    term.wait_for("› Subconscious");
    assert!(term.highlighted("› Subconscious"));
    assert!(!term.highlighted("  Overview"));
    term.keys(ESC);
    term.wait_for("Second Brain: closed");

    // Clear asks first: no keeps everything.
    let shown = term.menu(&[UP, UP], "Clear everything? [y/N]");
    assert!(
        shown.contains("Delete all 2 memories for good? This cannot be undone."),
        "{shown}"
    );
    term.keys("n\r");
    term.wait_for("Nothing was deleted.");

    // Forget (up from Overview wraps to it): the recent memories to pick one of, then
    // a yes forgets the one picked and nothing else.
    term.menu(&[UP], "Which memory should I forget?");
    term.wait_for("› - [");
    term.keys(ENTER);
    let shown = term.wait_for("Forget it? [y/N]");
    assert!(shown.contains("redacted too"), "{shown}");
    term.keys("y\r");
    term.wait_for("Forgotten: \"");

    // An approval asked inline: y installs the pasted skill and shows the result.
    let skill_md = "---\nname: tea-notes\ndescription: Keeps tasting notes about tea.\nversion: 0.1.0\n---\n# Tea notes\nWrite down each tea.\n";
    queue.push([
        Reply::Tools(vec![(
            "install_skill".into(),
            json!({ "skill_md": skill_md }),
        )]),
        Reply::Text("Installed it.".into()),
    ]);
    term.send("install the tea-notes skill I pasted\r");
    term.wait_for("Allow install_skill");
    term.wait_for("[y/N]");
    // A letter alone is not an answer: it waits for Enter.
    term.keys("y");
    term.wait_for("[y/N] y");
    term.keys("\r");
    let shown = term.wait_for("Installed it.");
    assert!(
        shown.contains("install_skill: installed `tea-notes` 0.1.0"),
        "{shown}"
    );
    // n refuses: the model hears it, nothing is installed.
    queue.push([
        Reply::Tools(vec![(
            "install_skill".into(),
            json!({ "skill_md": skill_md.replace("tea-notes", "coffee-notes") }),
        )]),
        Reply::Text("Fine, I did not install it.".into()),
    ]);
    // A y typed ahead, before the question is asked, does not answer it.
    term.send("one more install, please\ry");
    term.wait_for("[y/N]");
    term.keys("n\r");
    let shown = term.wait_for("Fine, I did not install it.");
    assert!(
        shown.contains("install_skill: refused: the user said no"),
        "{shown}"
    );

    // /skills lists what is installed, the new skill among them.
    term.send("/skills\r");
    let shown = term.wait_for("tea-notes");
    assert!(!shown.contains("coffee-notes"), "{shown}");

    // The line editor keeps history: Up brings back the last line.
    term.send(UP);
    term.wait_for("> /skills");
    term.keys("\x15"); // Ctrl-U: clear the line

    // /new ends the conversation (learned from) and starts another.
    term.send("/new\r");
    term.wait_for("New conversation.");
    let before = model.requests().len();
    queue.push([Reply::Text("A fresh start.".into())]);
    term.send("hi again\r");
    term.wait_for("A fresh start.");
    let fresh = model.requests()[before]["messages"].to_string();
    assert!(
        !fresh.contains("which tea"),
        "a new conversation has no history: {fresh}"
    );

    // Clear, confirmed.
    term.menu(&[UP, UP], "Clear everything? [y/N]");
    term.keys("y\r");
    term.wait_for("Cleared:");

    term.send("/exit\r");
    term.wait_for("Bye.");
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = term.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "engram chat did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    let history = std::fs::read_to_string(dir.path().join("chat/history.txt")).unwrap();
    assert!(history.contains("/skills"), "{history}");
}

#[test]
fn engram_chat_without_a_model_serves_commands_and_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Terminal::start(dir.path());
    let shown = term.wait_for("Chat needs llm.baseUrl and llm.model");
    assert!(shown.contains("no model"), "{shown}");
    term.send("hello\r");
    term.wait_for("chat needs a model: set llm.baseUrl and llm.model");
    term.menu(&[], "Second Brain: on, learning on.");
    term.send("/memory nonsense\r");
    term.wait_for("No /memory entry `nonsense`.");
    term.send("\x04"); // Ctrl-D leaves
    term.wait_for("Bye.");
}

#[test]
fn ctrl_c_stops_an_answer_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (model, queue) = OpenAi::queued();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "llm:\n  baseUrl: {}\n  model: standin-model\n  timeoutSeconds: 30\n",
            model.base_url()
        ),
    )
    .unwrap();
    let mut term = Terminal::start(dir.path());
    term.wait_for("model standin-model.");
    // A model that starts answering and then goes silent for longer than the test waits.
    queue.push([Reply::Stall(Duration::from_secs(25))]);
    term.send("tell me a long story\r");
    let deadline = Instant::now() + WAIT;
    while model.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never called");
        std::thread::sleep(Duration::from_millis(20));
    }
    term.keys("\x03");
    term.wait_for("(interrupted)");
    // The prompt is back and the next message is answered.
    queue.push([Reply::Text("Short one, then.".into())]);
    term.send("a short one then\r");
    term.wait_for("Short one, then.");
    term.send("/exit\r");
    term.wait_for("Bye.");
}

/// Item 11 (issue 30): `engram chat` opened the databases itself while `engram serve`
/// held the data directory. After `/memory clear` in chat the daemon still served the
/// deleted memory (search, GET by id) and `POST /api/turns` answered 404 for any
/// message matching it; a memory learned in chat was not searchable until a restart.
/// Now chat goes through the running daemon: both are the daemon's at once.
#[test]
fn item_11_engram_chat_goes_through_the_running_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let (model, queue) = OpenAi::queued();
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "llm:\n  baseUrl: {}\n  model: standin-model\n  timeoutSeconds: 20\n",
            model.base_url()
        ),
    )
    .unwrap();
    // As a person's daemon runs: its tokens in the data directory, where chat finds
    // the operator token.
    let daemon = Daemon::start_first_run(&mut engram(dir.path()), dir.path());
    let tea = ok(
        daemon.call(
            "POST",
            "/api/brain/memory",
            &json!({"type": "preference", "summary": "User likes green tea"}).to_string(),
        ),
        201,
    );
    let id = tea["id"].as_str().unwrap().to_string();
    let found =
        |q: &str| ok(daemon.get(&format!("/api/brain/memory/search?q={q}")), 200)["items"].clone();
    assert_eq!(found("tea").as_array().map(Vec::len), Some(1));

    let mut term = Terminal::start(dir.path());
    term.wait_for("Engram chat, user default, model standin-model.");
    term.send("/memory clear\r");
    term.wait_for("Clear everything? [y/N]");
    term.keys("y\r");
    term.wait_for("Cleared: 1 memory deleted.");
    // The daemon's own search, GET by id and turns agree at once.
    assert_eq!(found("tea"), json!([]));
    assert_eq!(daemon.get(&format!("/api/brain/memory/{id}")).status, 404);
    let turn = ok(
        daemon.call(
            "POST",
            "/api/turns",
            r#"{"message":"which green tea do I like?"}"#,
        ),
        201,
    );
    assert!(
        !turn["memory_block"].as_str().unwrap().contains("green tea"),
        "{turn}"
    );

    // Learned in chat: searchable through the daemon as soon as the conversation ends.
    queue.push([Reply::Text(
        "Nice, hiking is a great way to spend a weekend.".into(),
    )]);
    term.send("I love hiking in the mountains.\r");
    term.wait_for("great way to spend a weekend");
    term.send("/new\r");
    term.wait_for("New conversation.");
    let hiking = found("hiking");
    assert!(
        hiking.to_string().to_lowercase().contains("hiking"),
        "{hiking}"
    );
    term.send("/exit\r");
    term.wait_for("Bye.");
    // Chatting through the daemon is the person's: the agent's token is refused.
    assert_eq!(daemon.call("POST", "/chat/sessions", "{}").status, 403);
}

/// Item 11: without a daemon, chat holds the data directory itself, so a daemon
/// started meanwhile refuses it (the lock names `engram chat`).
#[test]
fn item_11_embedded_chat_holds_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut term = Terminal::start(dir.path());
    term.wait_for("Engram chat, user default");
    let out = engram_e2e::output_within(
        engram(dir.path()).args(["serve", "--listen", "127.0.0.1:0"]),
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("engram chat"), "{stderr}");
    term.send("/exit\r");
    term.wait_for("Bye.");
}

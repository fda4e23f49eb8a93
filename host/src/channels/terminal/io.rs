//! The terminal's side of a turn ([`ChatIo`]): the answer printed as it streams in,
//! made safe first (a model's text cannot move the cursor or recolour the screen), a
//! dim line per tool call, and approvals asked inline (y/n).

use std::io::Write;

use crossterm::style::Stylize;

use super::keys;
use crate::agent::{Ask, ChatIo, ToolEvent};

#[derive(Default)]
pub struct TerminalIo {
    /// Whether the answer so far ends with a newline (so a tool line starts on its
    /// own).
    at_line_start: bool,
    /// Whether anything was printed for this answer.
    printed: bool,
}

impl TerminalIo {
    /// Ends the answer on its own line.
    pub fn finish(&mut self) {
        if self.printed && !self.at_line_start {
            println!();
        }
        self.at_line_start = true;
    }

    /// A tool call's line (`install_skill: installed ...`), dim, on its own line.
    pub fn tool_line(&mut self, line: &str) {
        self.line(&format!("  · {}", crate::term_text::clean(line)));
    }

    fn line(&mut self, text: &str) {
        if self.printed && !self.at_line_start {
            println!();
        }
        println!("{}", text.dim());
        self.printed = true;
        self.at_line_start = true;
    }
}

impl ChatIo for TerminalIo {
    fn text(&mut self, piece: &str) {
        let safe: String = piece
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        if safe.is_empty() {
            return;
        }
        let mut out = std::io::stdout();
        let _ = out.write_all(safe.as_bytes());
        let _ = out.flush();
        self.printed = true;
        self.at_line_start = safe.ends_with('\n');
    }

    fn tool(&mut self, event: &ToolEvent) {
        self.tool_line(&event.line());
    }

    async fn approve(&mut self, ask: &Ask) -> bool {
        if self.printed && !self.at_line_start {
            println!();
        }
        self.printed = true;
        self.at_line_start = true;
        keys::yes_no(&format!(
            "Allow {}? ({})",
            ask.summary(),
            ask.reason_shown()
        ))
    }
}

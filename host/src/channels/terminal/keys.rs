//! What the terminal asks with single keys, in raw mode: the `/memory` arrow-key menu
//! and yes/no questions (approvals, Clear's confirmation). The terminal is put back as
//! it was whatever happens (a guard), and without a terminal on both ends nothing is
//! drawn: a menu falls back to its typed form and a question is answered no.

use std::io::{IsTerminal, Write};

use crossterm::cursor::{MoveToColumn, MoveToPreviousLine};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, poll, read};
use crossterm::style::{Attribute, Print, SetAttribute};
use crossterm::terminal::{Clear, ClearType, disable_raw_mode, enable_raw_mode};
use crossterm::{execute, queue};

use crate::term_text::clean;

/// Whether keys can be read and a menu drawn.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Raw mode until dropped.
struct Raw;

impl Raw {
    fn on() -> std::io::Result<Raw> {
        enable_raw_mode()?;
        Ok(Raw)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
    }
}

/// One key press (releases and repeats of other kinds are skipped).
fn key() -> std::io::Result<KeyEvent> {
    loop {
        if let Event::Key(key) = read()?
            && key.kind != KeyEventKind::Release
        {
            return Ok(key);
        }
    }
}

fn ctrl_c(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c')
}

/// Asks `question` and waits for an answer confirmed with Enter: `y` then Enter is
/// yes; `n`, Enter alone, Esc or Ctrl-C are no (Backspace takes a letter back). Keys
/// typed before the question was shown are dropped first, so that nothing typed ahead
/// answers it. Prints the answer after the question.
pub fn yes_no(question: &str) -> bool {
    let mut out = std::io::stdout();
    let _ = write!(out, "{} [y/N] ", clean(question));
    let _ = out.flush();
    if !interactive() {
        let _ = writeln!(out, "no (not a terminal)");
        return false;
    }
    let answer = (|| -> std::io::Result<bool> {
        let _raw = Raw::on()?;
        while poll(std::time::Duration::ZERO)? {
            read()?;
        }
        let mut typed: Option<bool> = None;
        loop {
            let key = key()?;
            if ctrl_c(&key) {
                return Ok(false);
            }
            let letter = match key.code {
                KeyCode::Enter => return Ok(typed == Some(true)),
                KeyCode::Esc => return Ok(false),
                KeyCode::Backspace => None,
                KeyCode::Char('y' | 'Y') => Some(true),
                KeyCode::Char('n' | 'N') => Some(false),
                _ => continue,
            };
            if typed.is_some() {
                execute!(out, MoveToColumn(0), Clear(ClearType::CurrentLine))?;
                write!(out, "{} [y/N] ", clean(question))?;
            }
            typed = letter;
            if let Some(yes) = typed {
                write!(out, "{}", if yes { "y" } else { "n" })?;
            }
            out.flush()?;
        }
    })()
    .unwrap_or(false);
    let _ = execute!(out, MoveToColumn(0), Clear(ClearType::CurrentLine));
    let _ = write!(out, "{} [y/N] ", clean(question));
    let _ = writeln!(out, "{}", if answer { "yes" } else { "no" });
    answer
}

/// An arrow-key menu: `title`, then one line per entry (`label` and `hint`). Up/Down
/// (or k/j) move, Enter chooses, Esc, q or Ctrl-C close it. The chosen entry's index;
/// `None` when closed. The menu is erased afterwards and the choice printed in its
/// place.
pub fn menu(title: &str, entries: &[(&str, &str)]) -> std::io::Result<Option<usize>> {
    let mut out = std::io::stdout();
    let width = entries
        .iter()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0);
    let draw = |out: &mut std::io::Stdout, at: usize, first: bool| -> std::io::Result<()> {
        if !first {
            queue!(out, MoveToPreviousLine(entries.len() as u16 + 1))?;
        }
        queue!(
            out,
            MoveToColumn(0),
            Clear(ClearType::FromCursorDown),
            Print(format!(
                "{title} (↑/↓ to move, Enter to choose, Esc to close)\r\n"
            ))
        )?;
        for (n, (label, hint)) in entries.iter().enumerate() {
            if n == at {
                queue!(
                    out,
                    SetAttribute(Attribute::Reverse),
                    Print(format!("› {label:<width$}")),
                    SetAttribute(Attribute::Reset),
                    Print(format!("  {hint}\r\n"))
                )?;
            } else {
                queue!(out, Print(format!("  {label:<width$}  {hint}\r\n")))?;
            }
        }
        out.flush()
    };
    let chosen = {
        let _raw = Raw::on()?;
        let mut at = 0;
        draw(&mut out, at, true)?;
        loop {
            let key = key()?;
            if ctrl_c(&key) {
                break None;
            }
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => at = (at + entries.len() - 1) % entries.len(),
                KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => at = (at + 1) % entries.len(),
                KeyCode::Enter => break Some(at),
                KeyCode::Esc | KeyCode::Char('q') => break None,
                _ => continue,
            }
            draw(&mut out, at, false)?;
        }
    };
    execute!(
        out,
        MoveToPreviousLine(entries.len() as u16 + 1),
        MoveToColumn(0),
        Clear(ClearType::FromCursorDown),
        Print(match chosen {
            Some(n) => format!("{title} › {}\n", entries[n].0),
            None => format!("{title}: closed\n"),
        })
    )?;
    Ok(chosen)
}

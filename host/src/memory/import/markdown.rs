//! A folder of Markdown notes (basic-memory, Obsidian): each note's observations
//! (basic-memory's `- [category] text #tags` lines) are memories, typed by their
//! category; a note without any is one memory, its title and first paragraph, the rest
//! of it as detail. Every memory's detail names the note's path. Optional YAML
//! frontmatter (`---` ... `---`) gives the title; relations (`- relates_to [[X]]`) are
//! links, not facts, and are left out.

use engram_strategies::model::MemoryType;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Batch, ImportError, ImportedMemory, Source, cut, type_of};
use crate::memory::NewMemory;

/// One note as the CLI read it: its path under the folder, and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub path: String,
    pub text: String,
}

const MAX_SUMMARY_BYTES: usize = 600;
const MAX_DETAIL_BYTES: usize = 3_900;

pub fn parse(notes: &[Note]) -> Result<Batch, ImportError> {
    let mut batch = Batch::new(Source::Markdown);
    for note in notes {
        let (frontmatter_title, body, body_line) = split_frontmatter(note)?;
        let title = frontmatter_title
            .or_else(|| {
                body.lines()
                    .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_string()))
            })
            .unwrap_or_else(|| {
                std::path::Path::new(&note.path)
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_else(|| note.path.clone())
            });
        let mut observations = 0;
        for (n, line) in body.lines().enumerate() {
            let Some((category, text)) = observation(line) else {
                continue;
            };
            let entry = format!("{} line {}", note.path, body_line + n);
            if text.is_empty() {
                return Err(ImportError::new(entry, "an observation without text"));
            }
            observations += 1;
            let memory_type = type_of_category(category).unwrap_or_else(|| type_of(text));
            let mut memory = NewMemory::new(memory_type, cut(text, MAX_SUMMARY_BYTES).trim());
            memory.detail = Some(format!("From {} ({title})", note.path));
            batch.memories.push(ImportedMemory {
                key: key(&note.path, text),
                memory,
            });
        }
        if observations > 0 {
            continue;
        }
        let paragraphs: Vec<&str> = body
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty() && !p.starts_with("# "))
            .collect();
        let Some(first) = paragraphs.first() else {
            continue;
        };
        let summary = format!(
            "{title}: {}",
            first.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let memory_type = type_of(&summary);
        let mut memory = NewMemory::new(memory_type, cut(&summary, MAX_SUMMARY_BYTES).trim());
        let rest = paragraphs[1..].join("\n\n");
        memory.detail = Some(
            cut(&format!("From {}\n\n{rest}", note.path), MAX_DETAIL_BYTES)
                .trim()
                .to_string(),
        );
        batch.memories.push(ImportedMemory {
            key: key(&note.path, &note.text),
            memory,
        });
    }
    Ok(batch)
}

/// The key of a memory from a note: its path and a hash of what it says, so an edited
/// note brings what changed and an unchanged one nothing.
fn key(path: &str, text: &str) -> String {
    let hash = hex::encode(&Sha256::digest(text.as_bytes())[..8]);
    let path: String = path
        .chars()
        .rev()
        .take(160)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{path}#{hash}")
}

/// The frontmatter's title (if any), the body, and the body's first line number.
fn split_frontmatter(note: &Note) -> Result<(Option<String>, &str, usize), ImportError> {
    let text = note.text.strip_prefix('\u{feff}').unwrap_or(&note.text);
    let Some(after) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((None, text, 1));
    };
    let Some(end) = after.find("\n---") else {
        return Err(ImportError::new(
            format!("{} line 1", note.path),
            "the frontmatter opened with `---` is never closed",
        ));
    };
    let yaml = &after[..end];
    let rest = &after[end + 4..];
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    let lines = yaml.lines().count() + 2;
    let title = match serde_norway::from_str::<serde_norway::Value>(yaml) {
        Ok(value) => value
            .get("title")
            .and_then(|t| t.as_str())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        Err(e) => {
            return Err(ImportError::new(
                format!(
                    "{} line {}",
                    note.path,
                    e.location().map_or(1, |l| l.line() + 1)
                ),
                format!("the frontmatter is not YAML: {e}"),
            ));
        }
    };
    Ok((title, body, lines + 1))
}

/// `- [category] text #tag` -> (category, text without the tags).
fn observation(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("- [")?;
    let (category, text) = rest.split_once(']')?;
    if category.is_empty() || category.contains('[') || text.starts_with('(') {
        return None;
    }
    let text = text.trim();
    let text = match text.find(" #") {
        Some(at) => text[..at].trim(),
        None if text.starts_with('#') => "",
        None => text,
    };
    Some((category.trim(), text))
}

fn type_of_category(category: &str) -> Option<MemoryType> {
    Some(match category.to_lowercase().as_str() {
        "preference" | "preferences" | "like" | "dislike" => MemoryType::Preference,
        "decision" | "decisions" => MemoryType::Decision,
        "goal" | "goals" => MemoryType::Goal,
        "project" | "projects" => MemoryType::Project,
        "habit" | "habits" | "routine" => MemoryType::Habit,
        "constraint" | "requirement" | "rule" => MemoryType::Constraint,
        "fact" | "identity" | "bio" => MemoryType::Identity,
        "person" | "relationship" => MemoryType::Relationship,
        "event" | "milestone" | "episode" => MemoryType::Episode,
        "idea" | "insight" | "reflection" | "lesson" => MemoryType::Reflection,
        _ => return None,
    })
}

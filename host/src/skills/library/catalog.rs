//! Progressive disclosure: until a skill is invoked, only a [`CatalogEntry`] (name,
//! description, a short summary, routing hints) is in context; the body is read by
//! [`Library::invoke`](super::Library::invoke) into an [`InvokedSkill`] when the skill
//! is actually used. Entries are data; whoever renders them (dashboard, prompt block)
//! escapes them for its own format.

use std::path::PathBuf;

use serde::Serialize;

use super::index::IndexEntry;
use crate::skills::format::fields::Frontmatter;
use crate::skills::format::id::SkillId;

/// The most characters a summary has, ellipsis included.
pub const SUMMARY_CHARS: usize = 160;

/// What listings and routing see of a skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogEntry {
    pub slug: String,
    pub id: String,
    /// Display name (the frontmatter's `name`).
    pub name: String,
    pub description: String,
    /// The description on one line, at most [`SUMMARY_CHARS`] characters.
    pub summary: String,
    pub version: Option<String>,
    pub category: Option<String>,
    pub categories: Vec<String>,
    pub tags: Vec<String>,
    pub intents: Vec<String>,
    pub allowed_tools: Vec<String>,
    pub active: bool,
    /// The prose at the start of the body, for routing by meaning
    /// (`format::paragraph::body_start`); not listed.
    #[serde(skip)]
    pub body_start: String,
}

impl CatalogEntry {
    /// The entry of the indexed skill `slug`, from its frontmatter and the start of
    /// its body.
    pub(super) fn new(
        slug: String,
        entry: &IndexEntry,
        fm: Frontmatter,
        body_start: String,
    ) -> CatalogEntry {
        CatalogEntry {
            body_start,
            summary: summarize(&fm.description),
            slug,
            id: entry.id.clone(),
            name: fm.name,
            description: fm.description,
            version: fm.version,
            category: entry.category.clone().or(fm.category),
            categories: fm.categories,
            tags: fm.tags,
            intents: fm.intents,
            allowed_tools: fm.allowed_tools,
            active: entry.active,
        }
    }
}

/// A skill being used: its instructions and where its resources are. Resources are
/// listed, not read; the skill reads them through a tool when it needs them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvokedSkill {
    pub id: SkillId,
    pub name: String,
    pub dir: PathBuf,
    /// The Markdown instructions, exactly as in the file.
    pub body: String,
    pub allowed_tools: Vec<String>,
    /// Those the person granted it, for its SKILL.md as it is now.
    pub granted_tools: Vec<String>,
    /// Files under `scripts/` and `references/`, relative to `dir`, sorted.
    pub resources: Vec<String>,
}

/// The description collapsed to one line and cut at a word boundary to fit
/// [`SUMMARY_CHARS`].
pub fn summarize(description: &str) -> String {
    let line = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= SUMMARY_CHARS {
        return line;
    }
    let cut: String = line.chars().take(SUMMARY_CHARS - 1).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > SUMMARY_CHARS / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([' ', ',', ';', ':', '.']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_summaries_are_one_short_line() {
        assert_eq!(
            summarize("Line one of the\ndescription.\n\nSecond."),
            "Line one of the description. Second."
        );
        let long = "word ".repeat(100);
        let s = summarize(&long);
        assert!(s.chars().count() <= SUMMARY_CHARS, "{s}");
        assert!(s.ends_with("word…"), "{s}");
        let unbroken = "x".repeat(500);
        assert_eq!(summarize(&unbroken).chars().count(), SUMMARY_CHARS);
        let wide = "技".repeat(500);
        assert_eq!(summarize(&wide).chars().count(), SUMMARY_CHARS);
    }
}

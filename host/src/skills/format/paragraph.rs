//! The description of a SKILL.md that has none, as other agents (Claude Code) take it:
//! the first paragraph of the body. A paragraph is a run of text lines ended by a blank
//! line, a heading, a rule or a code fence; headings, fenced code, HTML comments and
//! rules before it are skipped, and a body with headings only is described by its
//! first heading. Only the first [`BODY_SCAN_BYTES`] of the body are looked at, so a
//! listing that reads a file's head finds the same description as a full read, and the
//! result is cut to [`MAX_DESCRIPTION_CHARS`] at a word boundary.

use crate::skills::MAX_DESCRIPTION_CHARS;

/// How much of the body the first paragraph is looked for in.
pub const BODY_SCAN_BYTES: usize = 8 * 1024;

/// Characters of the start of a body that routing by meaning reads: an encoder reads
/// 256 tokens, and the frontmatter's fields come first.
pub const BODY_START_CHARS: usize = 1_000;

/// The prose at the start of `body`, on one line: fenced code and HTML comments left
/// out, heading marks dropped, cut to [`BODY_START_CHARS`] at a word boundary. A
/// skill's body is where it says what it is for, in more words than its description.
pub fn body_start(body: &str) -> String {
    let mut words: Vec<&str> = Vec::new();
    let mut chars = 0;
    let mut skipped = Skipped::default();
    'lines: for raw in body.lines() {
        let line = raw.trim();
        if skipped.goes_on(line) {
            continue;
        }
        if let Some(marker) = fence_marker(line) {
            skipped.fence = Some(marker);
            continue;
        }
        if line.starts_with("<!--") {
            skipped.open_comment(line);
            continue;
        }
        for word in line.trim_start_matches('#').split_whitespace() {
            let len = word.chars().count() + usize::from(!words.is_empty());
            if chars + len > BODY_START_CHARS {
                break 'lines;
            }
            chars += len;
            words.push(word);
        }
    }
    words.join(" ")
}

/// The first paragraph of `body` (already cut to [`BODY_SCAN_BYTES`]) on one line, or
/// its first heading, or `None` when it has neither.
pub(crate) fn first_paragraph(body: &str) -> Option<String> {
    let mut lines: Vec<&str> = Vec::new();
    let mut heading: Option<&str> = None;
    let mut skipped = Skipped::default();
    for raw in body.lines() {
        let line = raw.trim();
        if skipped.goes_on(line) {
            continue;
        }
        let opens_fence = fence_marker(line);
        let is_break = is_rule(line);
        let is_heading = line.starts_with('#');
        if line.is_empty() || opens_fence.is_some() || is_break || is_heading {
            if !lines.is_empty() {
                break;
            }
            skipped.fence = opens_fence;
            if is_heading && heading.is_none() {
                heading = Some(line.trim_start_matches('#').trim());
            }
            continue;
        }
        if line.starts_with("<!--") {
            if lines.is_empty() {
                skipped.open_comment(line);
                continue;
            }
            break;
        }
        lines.push(line);
    }
    let text = if lines.is_empty() {
        heading.filter(|h| !h.is_empty())?.to_string()
    } else {
        lines.join(" ")
    };
    Some(cut(&text))
}

/// The lines of a body that are not prose: inside fenced code or an HTML comment that
/// an earlier line opened.
#[derive(Default)]
struct Skipped {
    /// The marker (```` ``` ```` or `~~~`) of the open fence.
    fence: Option<&'static str>,
    comment: bool,
}

impl Skipped {
    /// Whether `line` (trimmed) is inside an open fence or comment; its closing line
    /// is, and closes it.
    fn goes_on(&mut self, line: &str) -> bool {
        if let Some(marker) = self.fence {
            if line.starts_with(marker) {
                self.fence = None;
            }
            return true;
        }
        if self.comment {
            self.comment = !line.contains("-->");
            return true;
        }
        false
    }

    /// `line` starts a comment: it stays open unless the line closes it.
    fn open_comment(&mut self, line: &str) {
        self.comment = !line.contains("-->");
    }
}

/// The fence `line` opens, if it opens one.
fn fence_marker(line: &str) -> Option<&'static str> {
    ["```", "~~~"].into_iter().find(|m| line.starts_with(m))
}

/// `---`, `***`, `___` or `===` lines (three or more, spaces allowed): thematic breaks
/// and setext underlines.
fn is_rule(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| *c != ' ').collect();
    compact.len() >= 3
        && ['-', '*', '_', '=']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
}

/// At most [`MAX_DESCRIPTION_CHARS`] characters, cut after a whole word when one fits.
fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    match head.rfind(' ') {
        Some(i) if i > head.len() / 2 => head[..i].trim_end().to_string(),
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_body_start_is_the_prose_on_one_line_cut_at_a_word() {
        let body = "# PDF tools\n\n<!-- generated\n by a tool -->\n```sh\nrm -rf /\n```\n\
                    Merge, split and\n  extract PDF text.\n\n## Steps\nOpen the file.\n";
        assert_eq!(
            body_start(body),
            "PDF tools Merge, split and extract PDF text. Steps Open the file."
        );
        let long = "word ".repeat(BODY_START_CHARS);
        let cut = body_start(&long);
        assert!(cut.chars().count() <= BODY_START_CHARS);
        assert!(
            cut.ends_with("word") && cut.len() > BODY_START_CHARS - 5,
            "{cut}"
        );
        assert_eq!(body_start(""), "");
    }

    #[test]
    fn skills_first_paragraph_skips_what_is_not_prose() {
        let body = "# PDF tools\n\n<!-- generated -->\n```sh\nrm -rf /\n```\n---\n\
                    Merge, split and\n  extract PDF text.\n\nSecond paragraph.\n";
        assert_eq!(
            first_paragraph(body).as_deref(),
            Some("Merge, split and extract PDF text.")
        );
        // A heading or a fence ends the paragraph, like a blank line.
        assert_eq!(
            first_paragraph("Text one\n## Next\nmore").as_deref(),
            Some("Text one")
        );
        assert_eq!(
            first_paragraph("Intro line\n```\ncode\n```").as_deref(),
            Some("Intro line")
        );
        // A multi-line comment is skipped whole.
        assert_eq!(
            first_paragraph("<!--\nnot this\n-->\nThis.").as_deref(),
            Some("This.")
        );
        // Headings only: the first heading.
        assert_eq!(
            first_paragraph("# No frontmatter here\n").as_deref(),
            Some("No frontmatter here")
        );
        assert_eq!(
            first_paragraph("# Title\n## Sub\n").as_deref(),
            Some("Title")
        );
        // Nothing to describe with.
        for body in [
            "",
            "\n\n",
            "```\nonly code\n```\n",
            "#\n---\n",
            "<!-- x -->",
        ] {
            assert_eq!(first_paragraph(body), None, "{body:?}");
        }
    }

    #[test]
    fn skills_first_paragraph_is_cut_at_the_description_limit() {
        let long = "word ".repeat(400);
        let d = first_paragraph(&long).unwrap();
        assert!(d.chars().count() <= MAX_DESCRIPTION_CHARS, "{}", d.len());
        assert!(d.ends_with("word"));
        let unbroken = "技".repeat(2000);
        assert_eq!(
            first_paragraph(&unbroken).unwrap().chars().count(),
            MAX_DESCRIPTION_CHARS
        );
    }
}

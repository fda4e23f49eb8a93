//! Finding the frontmatter in a SKILL.md's bytes: after an optional UTF-8 BOM, the
//! first line must be exactly `---`; the frontmatter runs to the next line that is
//! exactly `---` (a trailing `\r` is allowed on both, so CRLF files work). A `---`
//! inside a value is not a delimiter, which a naive `split("---")` gets wrong. The
//! scan works on bytes and stops at [`MAX_FRONTMATTER_BYTES`], so a huge or unclosed
//! file costs no more than that.
//!
//! [`split`] is the strict form (a registry install, whose files must have a
//! frontmatter); [`split_lenient`] is what every other path reads, as other agents do:
//! a file without frontmatter is all body, and blank lines before the opening `---`
//! are skipped. A `+++` (TOML) frontmatter is refused by both: it is a frontmatter this
//! format cannot read, not Markdown.

use super::error::SkillError;
use crate::skills::MAX_FRONTMATTER_BYTES;

const BOM: &[u8] = b"\xEF\xBB\xBF";
const DELIMITER: &[u8] = b"---";
const TOML_DELIMITER: &[u8] = b"+++";
/// Blank lines before an opening `---` are skipped up to this many bytes; past it the
/// file has no frontmatter (and a listing, which reads a file's head, agrees).
const MAX_LEADING_BLANK_BYTES: usize = 1024;

/// A SKILL.md cut in two. Both parts borrow from the input.
#[derive(Debug, PartialEq)]
pub(crate) struct Split<'a> {
    /// The bytes between the delimiter lines, line endings included.
    pub frontmatter: &'a [u8],
    /// Everything after the closing delimiter line: the bytes the sha256 is taken of.
    pub body: &'a [u8],
}

/// A SKILL.md read leniently.
#[derive(Debug, PartialEq)]
pub(crate) struct Lenient<'a> {
    /// `None` when the file has no frontmatter: then `body` is the whole file.
    pub frontmatter: Option<&'a [u8]>,
    pub body: &'a [u8],
    /// Blank lines skipped before the opening `---`.
    pub blank_lines: usize,
}

pub(crate) fn split(bytes: &[u8]) -> Result<Split<'_>, SkillError> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let (first, start) = line_at(bytes, 0);
    if first == TOML_DELIMITER {
        return Err(SkillError::FrontmatterUnsupported { delimiter: "+++" });
    }
    if first != DELIMITER {
        return Err(SkillError::FrontmatterMissing);
    }
    let mut pos = start;
    while pos < bytes.len() {
        let (line, next) = line_at(bytes, pos);
        if line == DELIMITER {
            return Ok(Split {
                frontmatter: &bytes[start..pos],
                body: &bytes[next..],
            });
        }
        if next - start > MAX_FRONTMATTER_BYTES {
            return Err(SkillError::FrontmatterTooLarge {
                limit: MAX_FRONTMATTER_BYTES,
            });
        }
        pos = next;
    }
    Err(SkillError::FrontmatterUnclosed)
}

pub(crate) fn split_lenient(bytes: &[u8]) -> Result<Lenient<'_>, SkillError> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let mut pos = 0;
    let mut blank_lines = 0;
    while pos < bytes.len() {
        let (line, next) = line_at(bytes, pos);
        if !line.iter().all(u8::is_ascii_whitespace) {
            break;
        }
        pos = next;
        blank_lines += 1;
    }
    let none = Lenient {
        frontmatter: None,
        body: bytes,
        blank_lines: 0,
    };
    if pos > MAX_LEADING_BLANK_BYTES {
        return Ok(none);
    }
    match split(&bytes[pos..]) {
        Ok(parts) => Ok(Lenient {
            frontmatter: Some(parts.frontmatter),
            body: parts.body,
            blank_lines,
        }),
        Err(SkillError::FrontmatterMissing) => Ok(none),
        Err(other) => Err(other),
    }
}

/// The line starting at `pos` without its `\n` or `\r\n`, and where the next one starts.
fn line_at(bytes: &[u8], pos: usize) -> (&[u8], usize) {
    let rest = &bytes[pos..];
    let (line, next) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], pos + i + 1),
        None => (rest, bytes.len()),
    };
    (line.strip_suffix(b"\r").unwrap_or(line), next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(input: &str) -> Result<(String, String), SkillError> {
        split(input.as_bytes()).map(|s| {
            (
                String::from_utf8(s.frontmatter.to_vec()).unwrap(),
                String::from_utf8(s.body.to_vec()).unwrap(),
            )
        })
    }

    #[test]
    fn skills_split_finds_the_delimiter_lines() {
        assert_eq!(
            parts("---\nname: a\n---\nbody\n").unwrap(),
            ("name: a\n".into(), "body\n".into())
        );
        assert_eq!(
            parts("\u{feff}---\r\nname: a\r\n---\r\nbody").unwrap(),
            ("name: a\r\n".into(), "body".into())
        );
        // A `---` inside a value is text, and `----` is not a delimiter.
        assert_eq!(
            parts("---\nd: a --- b\n----\n---\n").unwrap(),
            ("d: a --- b\n----\n".into(), String::new())
        );
        assert_eq!(parts("---\n---").unwrap(), (String::new(), String::new()));
    }

    #[test]
    fn skills_split_refuses_what_is_not_frontmatter() {
        assert_eq!(
            parts("\n---\na: b\n---\n"),
            Err(SkillError::FrontmatterMissing)
        );
        assert_eq!(
            parts("+++\na = 1\n+++\n"),
            Err(SkillError::FrontmatterUnsupported { delimiter: "+++" })
        );
        assert_eq!(
            parts("--- \na: b\n---\n"),
            Err(SkillError::FrontmatterMissing)
        );
        assert_eq!(parts(""), Err(SkillError::FrontmatterMissing));
        assert_eq!(parts("---\na: b\n"), Err(SkillError::FrontmatterUnclosed));
        assert_eq!(parts("---"), Err(SkillError::FrontmatterUnclosed));
    }

    #[test]
    fn skills_split_lenient_reads_files_without_frontmatter_as_body() {
        let lenient = |input: &'static str| split_lenient(input.as_bytes());
        let none = lenient("\u{feff}# Title\n\nText.\n").unwrap();
        assert_eq!(none.frontmatter, None);
        assert_eq!(none.body, b"# Title\n\nText.\n");
        // Blank lines (spaces and CRLF too) before the opening line are skipped.
        let late = lenient("\n  \r\n---\nname: a\n---\nbody").unwrap();
        assert_eq!(late.frontmatter, Some(&b"name: a\n"[..]));
        assert_eq!((late.body, late.blank_lines), (&b"body"[..], 2));
        let plain = lenient("---\nname: a\n---\n").unwrap();
        assert_eq!(plain.blank_lines, 0);
        let far = format!(
            "{}---\nname: a\n---\n",
            "\n".repeat(MAX_LEADING_BLANK_BYTES + 1)
        );
        assert_eq!(split_lenient(far.as_bytes()).unwrap().frontmatter, None);
        assert_eq!(lenient("").unwrap().body, b"");
        // What is a frontmatter, but a broken or foreign one, stays refused.
        assert_eq!(
            lenient("---\nname: a\n"),
            Err(SkillError::FrontmatterUnclosed)
        );
        assert_eq!(
            lenient("\n+++\na = 1\n+++\n"),
            Err(SkillError::FrontmatterUnsupported { delimiter: "+++" })
        );
    }

    #[test]
    fn skills_split_stops_at_the_frontmatter_budget() {
        let big = format!("---\n{}\n---\nbody", "a".repeat(MAX_FRONTMATTER_BYTES));
        assert!(matches!(
            parts(&big),
            Err(SkillError::FrontmatterTooLarge { .. })
        ));
        let unclosed = format!("---\n{}", "x: y\n".repeat(MAX_FRONTMATTER_BYTES));
        assert!(matches!(
            parts(&unclosed),
            Err(SkillError::FrontmatterTooLarge { .. })
        ));
        let fits = format!("---\n{}\n---\n", "a".repeat(MAX_FRONTMATTER_BYTES - 1));
        assert!(parts(&fits).is_ok());
    }
}

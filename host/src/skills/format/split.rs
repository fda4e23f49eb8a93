//! Finding the frontmatter in a SKILL.md's bytes: after an optional UTF-8 BOM, the
//! first line must be exactly `---`; the frontmatter runs to the next line that is
//! exactly `---` (a trailing `\r` is allowed on both, so CRLF files work). A `---`
//! inside a value is not a delimiter, which a naive `split("---")` gets wrong. The
//! scan works on bytes and stops at [`MAX_FRONTMATTER_BYTES`], so a huge or unclosed
//! file costs no more than that.

use super::error::SkillError;
use crate::skills::MAX_FRONTMATTER_BYTES;

const BOM: &[u8] = b"\xEF\xBB\xBF";
const DELIMITER: &[u8] = b"---";

/// A SKILL.md cut in two. Both parts borrow from the input.
#[derive(Debug, PartialEq)]
pub(crate) struct Split<'a> {
    /// The bytes between the delimiter lines, line endings included.
    pub frontmatter: &'a [u8],
    /// Everything after the closing delimiter line: the bytes the sha256 is taken of.
    pub body: &'a [u8],
}

pub(crate) fn split(bytes: &[u8]) -> Result<Split<'_>, SkillError> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let (first, start) = line_at(bytes, 0);
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
            Err(SkillError::FrontmatterMissing)
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

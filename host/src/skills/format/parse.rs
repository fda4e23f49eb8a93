//! SKILL.md bytes -> [`ParsedSkill`]: size and encoding checks first (cheap, and they
//! bound everything after), then the frontmatter split, the YAML, and the fields. The
//! body is kept as an opaque string; its sha256 identifies the skill's content (the
//! community registry's feed publishes the same digest).
//!
//! [`Leniency`] says whether a file without frontmatter is a skill: for everything but
//! a registry install it is (the whole file is its body, with the warning
//! `frontmatter-missing`). A missing `description` is the body's first paragraph
//! (`paragraph.rs`), with the warning `description-missing`; a missing `name` is
//! settled by validation, which knows the directory.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::error::{SkillError, Warning};
use super::fields::{Frontmatter, read_fields};
use super::paragraph::{BODY_SCAN_BYTES, first_paragraph};
use super::repair::repair;
use super::split::{split, split_lenient};
use super::yaml::parse_mapping;
use crate::skills::MAX_SKILL_FILE_BYTES;

/// Whether a SKILL.md must have a frontmatter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Leniency {
    /// What other agents load, for discovery and installs from files, URLs and chat:
    /// no frontmatter, or blank lines before it, are warnings.
    #[default]
    Lenient,
    /// A registry install: the feed carries each skill's name and description, so a
    /// SKILL.md without a frontmatter is a broken package, not a skill written for
    /// another agent.
    FrontmatterRequired,
}

/// A SKILL.md read faithfully, before the rules are applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedSkill {
    pub frontmatter: Frontmatter,
    /// Everything after the closing `---` line, exactly as in the file.
    pub body: String,
    /// sha256 of the body's bytes, lowercase hex.
    pub sha256: String,
    /// sha256 of the whole file (frontmatter and body), lowercase hex: what the person
    /// reviewed when they grant a skill its tools.
    pub file_sha256: String,
    pub warnings: Vec<Warning>,
}

/// Parses a whole SKILL.md, leniently.
pub fn parse_skill(bytes: &[u8]) -> Result<ParsedSkill, SkillError> {
    parse_skill_with(bytes, Leniency::Lenient)
}

pub fn parse_skill_with(bytes: &[u8], leniency: Leniency) -> Result<ParsedSkill, SkillError> {
    if bytes.len() > MAX_SKILL_FILE_BYTES {
        return Err(SkillError::FileTooLarge {
            size: bytes.len() as u64,
            limit: MAX_SKILL_FILE_BYTES,
        });
    }
    utf8(bytes, 0)?;
    let Located {
        frontmatter,
        body,
        mut warnings,
    } = locate(bytes, leniency)?;
    let text = utf8(body, bytes.len() - body.len())?;
    let mut fm = parse_frontmatter(frontmatter, &mut warnings)?;
    describe(
        &mut fm,
        window(body, bytes.len() - body.len())?,
        &mut warnings,
    );
    Ok(ParsedSkill {
        frontmatter: fm,
        sha256: hex::encode(Sha256::digest(body)),
        file_sha256: hex::encode(Sha256::digest(bytes)),
        body: text.to_string(),
        warnings,
    })
}

/// Parses the frontmatter of a file's first bytes (enough for the largest frontmatter
/// allowed and [`BODY_SCAN_BYTES`] after it), leniently: listings never read a whole
/// body, and find the description a full read would.
/// Returns the frontmatter, the warnings, and the start of the body
/// ([`body_start`](super::paragraph::body_start)).
pub(crate) fn parse_head(head: &[u8]) -> Result<(Frontmatter, Vec<Warning>, String), SkillError> {
    let Located {
        frontmatter,
        body,
        mut warnings,
    } = locate(head, Leniency::Lenient)?;
    let mut fm = parse_frontmatter(frontmatter, &mut warnings)?;
    let window = window(body, head.len() - body.len())?;
    describe(&mut fm, window, &mut warnings);
    Ok((fm, warnings, super::paragraph::body_start(window)))
}

/// Where a file's parts are, and the warnings the lenient reading earns.
struct Located<'a> {
    /// `None`: the file has no frontmatter.
    frontmatter: Option<&'a [u8]>,
    body: &'a [u8],
    warnings: Vec<Warning>,
}

fn locate(bytes: &[u8], leniency: Leniency) -> Result<Located<'_>, SkillError> {
    let mut warnings = Vec::new();
    if leniency == Leniency::FrontmatterRequired {
        let parts = split(bytes)?;
        return Ok(Located {
            frontmatter: Some(parts.frontmatter),
            body: parts.body,
            warnings,
        });
    }
    let parts = split_lenient(bytes)?;
    if parts.frontmatter.is_none() {
        warnings.push(Warning::FrontmatterMissing);
    } else if parts.blank_lines > 0 {
        warnings.push(Warning::LeadingBlankLines {
            lines: parts.blank_lines,
        });
    }
    Ok(Located {
        frontmatter: parts.frontmatter,
        body: parts.body,
        warnings,
    })
}

/// The start of the body the description may come from: its first [`BODY_SCAN_BYTES`],
/// less a character cut at the end (`base`: where the body starts in the input, for
/// the offset of an invalid byte).
fn window(body: &[u8], base: usize) -> Result<&str, SkillError> {
    let window = &body[..body.len().min(BODY_SCAN_BYTES)];
    match std::str::from_utf8(window) {
        Ok(text) => Ok(text),
        Err(e) if e.error_len().is_none() => utf8(&window[..e.valid_up_to()], base),
        Err(e) => Err(SkillError::NotUtf8 {
            offset: base + e.valid_up_to(),
        }),
    }
}

/// A missing description becomes the body's first paragraph, when it has one (else
/// validation refuses the skill).
fn describe(fm: &mut Frontmatter, window: &str, warnings: &mut Vec<Warning>) {
    if !fm.description.trim().is_empty() {
        return;
    }
    if let Some(paragraph) = first_paragraph(window) {
        fm.description = paragraph;
        if !warnings.contains(&Warning::FrontmatterMissing) {
            warnings.push(Warning::DescriptionMissing);
        }
    }
}

fn parse_frontmatter(
    bytes: Option<&[u8]>,
    warnings: &mut Vec<Warning>,
) -> Result<Frontmatter, SkillError> {
    let Some(bytes) = bytes else {
        return read_fields(&[], warnings);
    };
    let text = utf8(bytes, 0)?.replace("\r\n", "\n");
    let map = match parse_mapping(&text) {
        Ok(map) => map,
        Err(original @ SkillError::YamlSyntax { .. }) => {
            let Some((fixed, lines)) = repair(&text) else {
                return Err(original);
            };
            let Ok(map) = parse_mapping(&fixed) else {
                return Err(original);
            };
            warnings.push(Warning::YamlRepaired { lines });
            map
        }
        Err(other) => return Err(other),
    };
    read_fields(&map, warnings)
}

fn utf8(bytes: &[u8], base: usize) -> Result<&str, SkillError> {
    std::str::from_utf8(bytes).map_err(|e| SkillError::NotUtf8 {
        offset: base + e.valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_parse_keeps_the_body_and_hashes_its_bytes() {
        let file = b"---\r\nname: a\r\ndescription: d\r\n---\r\n# Body\r\n\r\nText.\r\n";
        let parsed = parse_skill(file).unwrap();
        assert_eq!(parsed.frontmatter.description, "d");
        assert_eq!(parsed.body, "# Body\r\n\r\nText.\r\n");
        assert_eq!(
            parsed.sha256,
            hex::encode(Sha256::digest(b"# Body\r\n\r\nText.\r\n"))
        );
    }

    #[test]
    fn skills_parse_checks_size_and_encoding_first() {
        let big = vec![b'a'; MAX_SKILL_FILE_BYTES + 1];
        assert!(matches!(
            parse_skill(&big),
            Err(SkillError::FileTooLarge { .. })
        ));
        assert_eq!(
            parse_skill(b"---\nname: caf\xe9\n---\n"),
            Err(SkillError::NotUtf8 { offset: 13 })
        );
        assert_eq!(
            parse_skill(b"---\nname: a\ndescription: d\n---\nbad \xff"),
            Err(SkillError::NotUtf8 { offset: 35 })
        );
    }

    #[test]
    fn skills_parse_repairs_with_a_warning_or_keeps_the_error() {
        let parsed = parse_skill(b"---\nname: a\ndescription: Use when: asked\n---\n").unwrap();
        assert_eq!(parsed.frontmatter.description, "Use when: asked");
        assert_eq!(parsed.warnings, [Warning::YamlRepaired { lines: vec![2] }]);
        assert!(matches!(
            parse_skill(b"---\nname: [a\ndescription: Use when: asked\n---\n"),
            Err(SkillError::YamlSyntax { .. })
        ));
    }

    #[test]
    fn skills_parse_head_reads_only_the_frontmatter() {
        let (fm, _, body_start) =
            parse_head(b"---\nname: a\ndescription: d\n---\nbody cut in the midd").unwrap();
        assert_eq!(fm.name, "a");
        assert_eq!(body_start, "body cut in the midd");
    }
}

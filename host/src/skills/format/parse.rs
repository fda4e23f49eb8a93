//! SKILL.md bytes -> [`ParsedSkill`]: size and encoding checks first (cheap, and they
//! bound everything after), then the frontmatter split, the YAML, and the fields. The
//! body is kept as an opaque string; its sha256 identifies the skill's content (the
//! community registry's feed publishes the same digest).

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::error::{SkillError, Warning};
use super::fields::{Frontmatter, read_fields};
use super::repair::repair;
use super::split::split;
use super::yaml::parse_mapping;
use crate::skills::MAX_SKILL_FILE_BYTES;

/// A SKILL.md read faithfully, before the rules are applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedSkill {
    pub frontmatter: Frontmatter,
    /// Everything after the closing `---` line, exactly as in the file.
    pub body: String,
    /// sha256 of the body's bytes, lowercase hex.
    pub sha256: String,
    pub warnings: Vec<Warning>,
}

/// Parses a whole SKILL.md.
pub fn parse_skill(bytes: &[u8]) -> Result<ParsedSkill, SkillError> {
    if bytes.len() > MAX_SKILL_FILE_BYTES {
        return Err(SkillError::FileTooLarge {
            size: bytes.len() as u64,
            limit: MAX_SKILL_FILE_BYTES,
        });
    }
    utf8(bytes, 0)?;
    let parts = split(bytes)?;
    let (frontmatter, warnings) = parse_frontmatter(parts.frontmatter)?;
    let body = utf8(parts.body, bytes.len() - parts.body.len())?.to_string();
    Ok(ParsedSkill {
        frontmatter,
        sha256: hex::encode(Sha256::digest(parts.body)),
        body,
        warnings,
    })
}

/// Parses only the frontmatter of a file's first bytes (enough to hold the largest
/// frontmatter allowed): listings never read a body.
pub(crate) fn parse_head(head: &[u8]) -> Result<(Frontmatter, Vec<Warning>), SkillError> {
    parse_frontmatter(split(head)?.frontmatter)
}

fn parse_frontmatter(bytes: &[u8]) -> Result<(Frontmatter, Vec<Warning>), SkillError> {
    let text = utf8(bytes, 0)?.replace("\r\n", "\n");
    let mut warnings = Vec::new();
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
    let frontmatter = read_fields(&map, &mut warnings)?;
    Ok((frontmatter, warnings))
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
        let (fm, _) =
            parse_head(b"---\nname: a\ndescription: d\n---\nbody cut in the midd").unwrap();
        assert_eq!(fm.name, "a");
    }
}

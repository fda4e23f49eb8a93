//! Why a SKILL.md was refused ([`SkillError`], one variant per rule) and what was
//! accepted with a remark ([`Warning`]). Each carries a stable code (`rule()` /
//! `code()`) that the REST and CLI layers return as JSON next to the human message, so
//! clients can act on the code and show the text.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// A SKILL.md that is refused. Every variant names the rule it broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkillError {
    #[error("no SKILL.md in {dir}")]
    MissingFile { dir: String },

    #[error("SKILL.md is {size} bytes; the limit is {limit} bytes")]
    FileTooLarge { size: u64, limit: usize },

    #[error("SKILL.md is not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },

    #[error("SKILL.md must start with a line that is exactly `---`, opening the YAML frontmatter")]
    FrontmatterMissing,

    #[error(
        "SKILL.md starts with a `{delimiter}` frontmatter; a SKILL.md frontmatter is YAML between `---` lines"
    )]
    FrontmatterUnsupported { delimiter: &'static str },

    #[error("the frontmatter is never closed by a line that is exactly `---`")]
    FrontmatterUnclosed,

    #[error("the frontmatter is larger than {limit} bytes")]
    FrontmatterTooLarge { limit: usize },

    #[error("the frontmatter is not valid YAML: {detail}")]
    YamlSyntax { detail: String },

    #[error("the frontmatter expands beyond the parser's budget (aliases or nesting): {detail}")]
    YamlBudget { detail: String },

    #[error("the frontmatter has the key `{key}` more than once")]
    YamlDuplicateKey { key: String },

    #[error("frontmatter keys must be text, found {found}")]
    YamlKeyType { found: &'static str },

    #[error("the frontmatter must be a YAML mapping of keys to values, found {found}")]
    FrontmatterNotMapping { found: &'static str },

    #[error(
        "the frontmatter has no `name`, and there is no directory to name the skill after (give it an id)"
    )]
    NameMissing,

    #[error("`name` must be text, found {found}")]
    NameType { found: &'static str },

    #[error("`name` {name:?} contains a path separator or `..`")]
    NamePath { name: String },

    #[error("`name` {name:?} contains the control or invisible character {codepoint}")]
    NameHiddenChar { name: String, codepoint: String },

    #[error("the {of} {name:?} has {chars} characters; the limit is {limit}")]
    NameLength {
        of: &'static str,
        name: String,
        chars: usize,
        limit: usize,
    },

    #[error(
        "the {of} {name:?} is not a valid skill name ({reason}): use 1-64 lowercase letters a-z, digits and single hyphens, not at either end"
    )]
    NameFormat {
        of: &'static str,
        name: String,
        reason: String,
    },

    #[error(
        "the frontmatter has no `description` (or it is empty), and the body has no paragraph to describe the skill with"
    )]
    DescriptionMissing,

    #[error("`description` must be text, found {found}")]
    DescriptionType { found: &'static str },

    #[error("`compatibility` has {chars} characters; the limit is {limit}")]
    CompatibilityLength { chars: usize, limit: usize },
}

impl SkillError {
    /// The rule this rejection names, stable across releases.
    pub fn rule(&self) -> &'static str {
        match self {
            SkillError::MissingFile { .. } => "skill-md-missing",
            SkillError::FileTooLarge { .. } => "file-too-large",
            SkillError::NotUtf8 { .. } => "not-utf8",
            SkillError::FrontmatterMissing => "frontmatter-missing",
            SkillError::FrontmatterUnsupported { .. } => "frontmatter-unsupported",
            SkillError::FrontmatterUnclosed => "frontmatter-unclosed",
            SkillError::FrontmatterTooLarge { .. } => "frontmatter-too-large",
            SkillError::YamlSyntax { .. } => "yaml-syntax",
            SkillError::YamlBudget { .. } => "yaml-budget",
            SkillError::YamlDuplicateKey { .. } => "yaml-duplicate-key",
            SkillError::YamlKeyType { .. } => "yaml-key-type",
            SkillError::FrontmatterNotMapping { .. } => "frontmatter-not-mapping",
            SkillError::NameMissing => "name-missing",
            SkillError::NameType { .. } => "name-type",
            SkillError::NamePath { .. } => "name-path",
            SkillError::NameHiddenChar { .. } => "name-hidden-char",
            SkillError::NameLength { .. } => "name-length",
            SkillError::NameFormat { .. } => "name-format",
            SkillError::DescriptionMissing => "description-missing",
            SkillError::DescriptionType { .. } => "description-type",
            SkillError::CompatibilityLength { .. } => "compatibility-length",
        }
    }
}

/// `{"rule": "...", "message": "..."}`.
impl Serialize for SkillError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("SkillError", 2)?;
        out.serialize_field("rule", self.rule())?;
        out.serialize_field("message", &self.to_string())?;
        out.end()
    }
}

/// Something accepted that the user should know about. The skill is usable.
///
/// The first five are the lenient load (what other agents, Claude Code among them,
/// accept); each keeps the code of the rule it relaxes.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// No frontmatter at all: the skill is named after its directory and described by
    /// the first paragraph of its body.
    FrontmatterMissing,
    /// The frontmatter follows blank lines; it was read from its first `---` line.
    LeadingBlankLines { lines: usize },
    /// No `name`: the directory's name (or the file's place) is used.
    NameMissing { name: String },
    /// No `description`: the first paragraph of the body is used.
    DescriptionMissing,
    /// `description` is longer than the Agent Skills limit: kept whole, and listings
    /// show its summary.
    DescriptionLength { chars: usize, limit: usize },
    /// The directory's name (or `name`, without a directory) is not a slug: the skill
    /// is identified by a slug made from it, and the original is the display name.
    SlugDerived { from: String, slug: String },
    /// The frontmatter was not valid YAML; it was read after quoting the values on
    /// these lines (an unquoted `: ` in a value, or `\'` inside single quotes).
    YamlRepaired { lines: Vec<usize> },
    /// `name` is not a slug (e.g. "Shell Scripting"): it is kept as the display name,
    /// and the skill's identity is its directory slug.
    DisplayName { name: String, slug: String },
    /// `name` is a slug but not the directory's: the directory wins.
    NameDirMismatch { name: String, slug: String },
    /// YAML read a number or boolean where text was expected; its source text is kept.
    FieldCoerced { field: String, text: String },
    /// `version` is not a semver string (e.g. `1.0`); kept as written.
    VersionNotSemver { version: String },
    /// Control or invisible characters (zero-width, bidi overrides, Unicode tags) were
    /// removed from a field so they cannot reach a listing or a prompt unnoticed.
    HiddenCharacters { field: String, count: usize },
    /// An optional field had a shape that cannot be used (e.g. `tags` as a mapping).
    FieldIgnored { field: String, found: &'static str },
    /// Only `skill.md` exists; it was read in place of `SKILL.md`.
    LowercaseFileName,
    /// An `allowed-tools` entry the tool gate cannot read or does not know: it grants
    /// nothing (found by the gate, through the library's [`ToolCheck`]).
    ///
    /// [`ToolCheck`]: crate::skills::library::ToolCheck
    ToolNotUnderstood { entry: String, detail: String },
}

impl Warning {
    /// A stable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            Warning::FrontmatterMissing => "frontmatter-missing",
            Warning::LeadingBlankLines { .. } => "leading-blank-lines",
            Warning::NameMissing { .. } => "name-missing",
            Warning::DescriptionMissing => "description-missing",
            Warning::DescriptionLength { .. } => "description-length",
            Warning::SlugDerived { .. } => "slug-derived",
            Warning::YamlRepaired { .. } => "yaml-repaired",
            Warning::DisplayName { .. } => "display-name",
            Warning::NameDirMismatch { .. } => "name-dir-mismatch",
            Warning::FieldCoerced { .. } => "field-coerced",
            Warning::VersionNotSemver { .. } => "version-not-semver",
            Warning::HiddenCharacters { .. } => "hidden-characters",
            Warning::FieldIgnored { .. } => "field-ignored",
            Warning::LowercaseFileName => "lowercase-file-name",
            Warning::ToolNotUnderstood { .. } => "tool-not-understood",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Warning::FrontmatterMissing => "SKILL.md has no frontmatter: the skill is named after its directory and described by the first paragraph of its body (add `name` and `description` between `---` lines)".to_string(),
            Warning::LeadingBlankLines { lines } => format!(
                "the frontmatter follows {lines} blank line(s); it was read anyway (start the file with `---`)"
            ),
            Warning::NameMissing { name } => {
                format!("the frontmatter has no `name`; the skill is named {name:?} after its directory")
            }
            Warning::DescriptionMissing => "the frontmatter has no `description`; the first paragraph of the body describes the skill".to_string(),
            Warning::DescriptionLength { chars, limit } => format!(
                "`description` has {chars} characters, over the {limit} of the Agent Skills spec; it is kept whole and listings show its summary"
            ),
            Warning::SlugDerived { from, slug } => format!(
                "{from:?} is not a skill slug; the skill is identified as `{slug}` and {from:?} is kept as its display name"
            ),
            Warning::YamlRepaired { lines } => {
                let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
                format!(
                    "the frontmatter is not valid YAML; it was read after quoting the value on line {} (quote it in the file)",
                    lines.join(", ")
                )
            }
            Warning::DisplayName { name, slug } => format!(
                "`name` {name:?} is not a skill slug; it is kept as the display name and the skill is identified as `{slug}`"
            ),
            Warning::NameDirMismatch { name, slug } => format!(
                "`name` `{name}` does not match the directory `{slug}`; the skill is identified as `{slug}`"
            ),
            Warning::FieldCoerced { field, text } => format!(
                "`{field}` is a YAML number or boolean; its text {text:?} is used (quote it in the file)"
            ),
            Warning::VersionNotSemver { version } => {
                format!("`version` {version:?} is not a semver version (like 1.0.0)")
            }
            Warning::HiddenCharacters { field, count } => {
                format!("removed {count} control or invisible character(s) from `{field}`")
            }
            Warning::FieldIgnored { field, found } => {
                format!("`{field}` is ignored: found {found}, expected text or a list")
            }
            Warning::LowercaseFileName => {
                "the file is named skill.md; SKILL.md is the standard name".to_string()
            }
            Warning::ToolNotUnderstood { detail, .. } => format!("`allowed-tools`: {detail}"),
        }
    }
}

/// `{"code": "...", "message": "..."}`.
impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("Warning", 2)?;
        out.serialize_field("code", self.code())?;
        out.serialize_field("message", &self.message())?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_errors_serialize_with_their_rule() {
        let e = SkillError::CompatibilityLength {
            chars: 550,
            limit: 500,
        };
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["rule"], "compatibility-length");
        assert!(json["message"].as_str().unwrap().contains("550"));

        let w = Warning::VersionNotSemver {
            version: "1.0".into(),
        };
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["code"], "version-not-semver");
    }
}

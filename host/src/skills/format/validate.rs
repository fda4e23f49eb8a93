//! The rules (DESIGN.md section 4): Agent Skills' limits, lenient where the ecosystem
//! is and strict where safety is.
//!
//! - Identity. A skill is identified by a slug: its directory's name when it has one
//!   (discovery, registry installs), else its `name`. The slug must follow the Agent
//!   Skills name rules. A `name` that differs from the directory is kept as the
//!   display name with a warning, so registry skills named "Shell Scripting" install.
//! - Strict: a name with a path separator, `..`, or a control or invisible character
//!   is refused outright, whatever the directory says; so is a name over 64 characters.
//! - Text fields lose control and invisible characters (with a warning); description
//!   1-1024 and compatibility at most 500 characters, counted as written.
//! - `version` should be semver; anything else is kept as written with a warning.

use serde::Serialize;

use super::error::{SkillError, Warning};
use super::fields::Frontmatter;
use super::id::{Slug, SlugError};
use super::parse::{ParsedSkill, parse_skill};
use super::text::{codepoint, is_hidden, strip_hidden};
use crate::skills::{MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// A skill that passed every rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidSkill {
    /// The identity: directory slug, or the name when there is no directory.
    pub slug: Slug,
    /// With hidden characters removed from its text fields.
    pub frontmatter: Frontmatter,
    pub body: String,
    pub sha256: String,
    pub warnings: Vec<Warning>,
}

/// Parses and validates a SKILL.md. `dir_name` is the skill directory's name, when the
/// file has one.
pub fn load_skill(bytes: &[u8], dir_name: Option<&str>) -> Result<ValidSkill, SkillError> {
    validate(parse_skill(bytes)?, dir_name)
}

pub fn validate(parsed: ParsedSkill, dir_name: Option<&str>) -> Result<ValidSkill, SkillError> {
    let ParsedSkill {
        frontmatter,
        body,
        sha256,
        mut warnings,
    } = parsed;
    let (slug, frontmatter) = validate_frontmatter(frontmatter, dir_name, &mut warnings)?;
    Ok(ValidSkill {
        slug,
        frontmatter,
        body,
        sha256,
        warnings,
    })
}

/// The rules on the frontmatter alone (listings validate without reading a body).
pub fn validate_frontmatter(
    mut fm: Frontmatter,
    dir_name: Option<&str>,
    warnings: &mut Vec<Warning>,
) -> Result<(Slug, Frontmatter), SkillError> {
    check_name(&fm.name)?;
    let slug = identity(&fm.name, dir_name)?;
    if fm.name != slug.as_str() {
        warnings.push(if Slug::parse(&fm.name).is_ok() {
            Warning::NameDirMismatch {
                name: fm.name.clone(),
                slug: slug.to_string(),
            }
        } else {
            Warning::DisplayName {
                name: fm.name.clone(),
                slug: slug.to_string(),
            }
        });
    }

    if fm.description.trim().is_empty() {
        return Err(SkillError::DescriptionMissing);
    }
    let chars = fm.description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::DescriptionLength {
            chars,
            limit: MAX_DESCRIPTION_CHARS,
        });
    }
    fm.description = clean("description", &fm.description, true, warnings);
    if fm.description.is_empty() {
        return Err(SkillError::DescriptionMissing);
    }

    if let Some(compat) = &fm.compatibility {
        let chars = compat.chars().count();
        if chars > MAX_COMPATIBILITY_CHARS {
            return Err(SkillError::CompatibilityLength {
                chars,
                limit: MAX_COMPATIBILITY_CHARS,
            });
        }
    }
    clean_optional("compatibility", &mut fm.compatibility, true, warnings);
    clean_optional("license", &mut fm.license, true, warnings);
    clean_optional("version", &mut fm.version, false, warnings);
    clean_optional("category", &mut fm.category, false, warnings);
    clean_optional("author", &mut fm.author, false, warnings);
    if let Some(version) = &fm.version
        && semver::Version::parse(version).is_err()
    {
        warnings.push(Warning::VersionNotSemver {
            version: version.clone(),
        });
    }
    for (field, list) in [
        ("categories", &mut fm.categories),
        ("tags", &mut fm.tags),
        ("intents", &mut fm.intents),
        ("allowed-tools", &mut fm.allowed_tools),
    ] {
        clean_list(field, list, warnings);
    }
    Ok((slug, fm))
}

/// The checks on `name` that no directory can excuse.
fn check_name(name: &str) -> Result<(), SkillError> {
    if name.trim().is_empty() {
        return Err(SkillError::NameMissing);
    }
    if let Some(c) = name.chars().find(|&c| is_hidden(c)) {
        return Err(SkillError::NameHiddenChar {
            name: name.to_string(),
            codepoint: codepoint(c),
        });
    }
    if name.contains(['/', '\\']) || name.contains("..") {
        return Err(SkillError::NamePath {
            name: name.to_string(),
        });
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(SkillError::NameLength {
            of: "name",
            name: name.to_string(),
            chars,
            limit: MAX_NAME_CHARS,
        });
    }
    Ok(())
}

fn identity(name: &str, dir_name: Option<&str>) -> Result<Slug, SkillError> {
    let (text, of) = match dir_name {
        Some(dir) if dir != name => (dir, "directory name"),
        Some(dir) => (dir, "name"),
        None => (name, "name"),
    };
    Slug::parse(text).map_err(|e| match e {
        SlugError::Empty => SkillError::NameMissing,
        SlugError::TooLong { chars } => SkillError::NameLength {
            of,
            name: text.to_string(),
            chars,
            limit: MAX_NAME_CHARS,
        },
        SlugError::Format(reason) => SkillError::NameFormat {
            of,
            name: text.to_string(),
            reason,
        },
    })
}

fn clean(field: &str, text: &str, multiline: bool, warnings: &mut Vec<Warning>) -> String {
    let (cleaned, count) = strip_hidden(text, multiline);
    if count > 0 {
        warnings.push(Warning::HiddenCharacters {
            field: field.to_string(),
            count,
        });
    }
    cleaned.trim().to_string()
}

fn clean_optional(
    field: &str,
    value: &mut Option<String>,
    multiline: bool,
    warnings: &mut Vec<Warning>,
) {
    if let Some(text) = value.take() {
        let text = clean(field, &text, multiline, warnings);
        *value = (!text.is_empty()).then_some(text);
    }
}

fn clean_list(field: &str, list: &mut Vec<String>, warnings: &mut Vec<Warning>) {
    let mut total = 0;
    for item in list.iter_mut() {
        let (cleaned, count) = strip_hidden(item, false);
        total += count;
        *item = cleaned.trim().to_string();
    }
    list.retain(|i| !i.is_empty());
    if total > 0 {
        warnings.push(Warning::HiddenCharacters {
            field: field.to_string(),
            count: total,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(frontmatter: &str, dir: Option<&str>) -> Result<ValidSkill, SkillError> {
        load_skill(format!("---\n{frontmatter}\n---\nbody\n").as_bytes(), dir)
    }

    fn codes(skill: &ValidSkill) -> Vec<&'static str> {
        skill.warnings.iter().map(Warning::code).collect()
    }

    #[test]
    fn skills_identity_is_the_directory_slug() {
        let s = skill(
            "name: Shell Scripting\ndescription: d",
            Some("shell-scripting"),
        )
        .unwrap();
        assert_eq!(s.slug.as_str(), "shell-scripting");
        assert_eq!(s.frontmatter.name, "Shell Scripting");
        assert_eq!(codes(&s), ["display-name"]);

        let s = skill("name: correct-name\ndescription: d", Some("wrong-name")).unwrap();
        assert_eq!(s.slug.as_str(), "wrong-name");
        assert_eq!(codes(&s), ["name-dir-mismatch"]);

        // Without a directory the name is the identity and must be a slug.
        assert_eq!(
            skill("name: web-search\ndescription: d", None)
                .unwrap()
                .slug
                .as_str(),
            "web-search"
        );
        let e = skill("name: Shell Scripting\ndescription: d", None).unwrap_err();
        assert_eq!(e.rule(), "name-format");
        let e = skill("name: my-skill\ndescription: d", Some("My Skill")).unwrap_err();
        assert_eq!(e.rule(), "name-format");
        assert!(e.to_string().contains("directory name"), "{e}");
    }

    #[test]
    fn skills_names_that_are_paths_or_hide_characters_are_refused() {
        for (name, rule) in [
            ("../../etc/evil", "name-path"),
            ("category/evil", "name-path"),
            ("a\\\\b", "name-path"),
            ("a..b", "name-path"),
            ("\"my\\u200bskill\"", "name-hidden-char"),
            ("\"my\\u202eskill\"", "name-hidden-char"),
            ("\"my\\U000E0041skill\"", "name-hidden-char"),
            ("\"my\\tskill\"", "name-hidden-char"),
            ("\"my\\x1bskill\"", "name-hidden-char"),
            ("\"   \"", "name-missing"),
        ] {
            let e = skill(&format!("name: {name}\ndescription: d"), Some("evil")).unwrap_err();
            assert_eq!(e.rule(), rule, "{name}");
        }
        let long = "a".repeat(65);
        let e = skill(&format!("name: {long}\ndescription: d"), Some("ok")).unwrap_err();
        assert_eq!(e.rule(), "name-length");
    }

    #[test]
    fn skills_text_limits_count_characters() {
        let ok = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(skill(&format!("name: a\ndescription: {ok}"), None).is_ok());
        let e = skill(&format!("name: a\ndescription: {ok}x"), None).unwrap_err();
        assert_eq!(e.rule(), "description-length");
        let e = skill(
            &format!(
                "name: a\ndescription: d\ncompatibility: {}",
                "x".repeat(501)
            ),
            None,
        )
        .unwrap_err();
        assert_eq!(e.rule(), "compatibility-length");
        let e = skill("name: a\ndescription: \"\\u200b\"", None).unwrap_err();
        assert_eq!(e.rule(), "description-missing");
    }

    #[test]
    fn skills_hidden_characters_are_removed_with_a_warning() {
        let s = skill(
            "name: a\ndescription: \"Safe\\u200b skill\"\ntags: [\"x\\u202e\", y]\nversion: 1.0.0",
            None,
        )
        .unwrap();
        assert_eq!(s.frontmatter.description, "Safe skill");
        assert_eq!(s.frontmatter.tags, ["x", "y"]);
        assert_eq!(codes(&s), ["hidden-characters", "hidden-characters"]);
        let s = skill("name: a\ndescription: d\nversion: 1.0", None).unwrap();
        assert_eq!(s.frontmatter.version.as_deref(), Some("1.0"));
        assert_eq!(codes(&s), ["field-coerced", "version-not-semver"]);
    }
}

//! The rules (README, "Skills"): Agent Skills' limits, lenient where the ecosystem
//! is and strict where safety is. The lenient load reads what other agents (Claude
//! Code) read, and says so in a warning each time.
//!
//! - Identity. A skill is identified by a slug: its directory's name when it has one
//!   (discovery, directory and registry installs), else its `name`. A directory name
//!   (or name) that is not a slug (`my--skill`, `My Skill`) gives a slug made from it
//!   ([`Slug::derive`], `slug-derived`), the original kept as the display name; one
//!   with letters outside ASCII gives none and is refused. A `name` that differs from
//!   the directory is kept as the display name with a warning, so registry skills
//!   named "Shell Scripting" install.
//! - A missing `name` is the directory's name, or for a lone file the name its place
//!   suggests ([`Origin::name_hint`]); `name-missing`.
//! - Strict: a name (given or taken from a directory) with a path separator, `..`, or a
//!   control or invisible character is refused outright; so is one over 64 characters.
//! - Text fields lose control and invisible characters (with a warning). A description
//!   over 1,024 characters is kept whole (`description-length`; listings show its
//!   summary); compatibility is at most 500 characters, counted as written.
//! - `version` should be semver; anything else is kept as written with a warning.

use serde::Serialize;

use super::error::{SkillError, Warning};
use super::fields::Frontmatter;
use super::id::{Slug, SlugError};
use super::parse::{Leniency, ParsedSkill, parse_skill_with};
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
    /// sha256 of the whole SKILL.md (see `ParsedSkill::file_sha256`).
    pub file_sha256: String,
    pub warnings: Vec<Warning>,
}

/// What is known of a SKILL.md besides its bytes: where it was found, which gives its
/// identity and the defaults of a lenient load, and how strictly it is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin<'a> {
    /// The skill directory's name (discovery, a directory install, the slug of the id
    /// an install was given): the skill's identity, and its name when it has none.
    pub dir: Option<&'a str>,
    /// For a file without a directory: the name its place suggests (the folder a
    /// `SKILL.md` was in, or the file's stem; from a path or a URL), used only when
    /// the frontmatter has no `name`.
    pub name_hint: Option<&'a str>,
    pub leniency: Leniency,
}

impl<'a> Origin<'a> {
    /// A skill in the directory `name`, read leniently.
    pub fn dir(name: &'a str) -> Origin<'a> {
        Origin {
            dir: Some(name),
            ..Origin::default()
        }
    }
}

/// Parses and validates a SKILL.md found at `origin`: the one load every path uses
/// (discovery, installs from a directory, file, URL, chat or registry).
pub fn load_skill(bytes: &[u8], origin: Origin) -> Result<ValidSkill, SkillError> {
    validate(parse_skill_with(bytes, origin.leniency)?, origin)
}

pub fn validate(parsed: ParsedSkill, origin: Origin) -> Result<ValidSkill, SkillError> {
    let ParsedSkill {
        frontmatter,
        body,
        sha256,
        file_sha256,
        mut warnings,
    } = parsed;
    let (slug, frontmatter) = validate_frontmatter(frontmatter, origin, &mut warnings)?;
    Ok(ValidSkill {
        slug,
        frontmatter,
        body,
        sha256,
        file_sha256,
        warnings,
    })
}

/// The rules on the frontmatter alone (listings validate without reading a body).
pub fn validate_frontmatter(
    mut fm: Frontmatter,
    origin: Origin,
    warnings: &mut Vec<Warning>,
) -> Result<(Slug, Frontmatter), SkillError> {
    if fm.name.trim().is_empty() {
        let place = origin.dir.or(origin.name_hint);
        fm.name = place.ok_or(SkillError::NameMissing)?.to_string();
        if !warnings.contains(&Warning::FrontmatterMissing) {
            warnings.push(Warning::NameMissing {
                name: fm.name.clone(),
            });
        }
    }
    check_name(&fm.name)?;
    let source = origin.dir.unwrap_or(&fm.name);
    let slug = identity(source, origin.dir.is_some())?;
    if source != slug.as_str() {
        warnings.push(Warning::SlugDerived {
            from: source.to_string(),
            slug: slug.to_string(),
        });
    }
    if fm.name != slug.as_str() && fm.name != source {
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
        warnings.push(Warning::DescriptionLength {
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

/// The checks on a name (given, or a directory's) that no leniency excuses.
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

/// The slug of `text` (a directory's name when `dir`, else the skill's name): itself,
/// or one derived from it.
fn identity(text: &str, dir: bool) -> Result<Slug, SkillError> {
    let of = if dir { "directory name" } else { "name" };
    if let Some(c) = text.chars().find(|&c| is_hidden(c)) {
        return Err(SkillError::NameHiddenChar {
            name: text.to_string(),
            codepoint: codepoint(c),
        });
    }
    let parsed = Slug::parse(text);
    if let Err(SlugError::Format(_)) = parsed
        && let Some(derived) = Slug::derive(text)
    {
        return Ok(derived);
    }
    parsed.map_err(|e| match e {
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
        let origin = Origin {
            dir,
            ..Origin::default()
        };
        load_skill(
            format!("---\n{frontmatter}\n---\nbody\n").as_bytes(),
            origin,
        )
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
        // A name or directory that is no slug gives one, and stays the display name.
        let s = skill("name: Shell Scripting\ndescription: d", None).unwrap();
        assert_eq!(
            (s.slug.as_str(), s.frontmatter.name.as_str()),
            ("shell-scripting", "Shell Scripting")
        );
        assert_eq!(codes(&s), ["slug-derived"]);
        let s = skill("name: my--skill\ndescription: d", Some("my--skill")).unwrap();
        assert_eq!(
            (s.slug.as_str(), s.frontmatter.name.as_str()),
            ("my-skill", "my--skill")
        );
        assert_eq!(codes(&s), ["slug-derived"]);
        let s = skill("name: Other Name\ndescription: d", Some("My Skill")).unwrap();
        assert_eq!(s.slug.as_str(), "my-skill");
        assert_eq!(codes(&s), ["slug-derived", "display-name"]);
        // Unless nothing ASCII is left to make one of.
        let e = skill("name: my-skill\ndescription: d", Some("навык")).unwrap_err();
        assert_eq!(e.rule(), "name-format");
        assert!(e.to_string().contains("directory name"), "{e}");
        let e = skill("name: café\ndescription: d", None).unwrap_err();
        assert_eq!(e.rule(), "name-format");
    }

    #[test]
    fn skills_missing_name_comes_from_the_directory_or_the_files_place() {
        for frontmatter in [
            "description: d",
            "name:\ndescription: d",
            "name: ' '\ndescription: d",
        ] {
            let s = skill(frontmatter, Some("pdf-tools")).unwrap();
            assert_eq!(s.frontmatter.name, "pdf-tools", "{frontmatter}");
            assert_eq!(codes(&s), ["name-missing"], "{frontmatter}");
        }
        // The original directory name is the display name, its slug the identity.
        let s = skill("description: d", Some("PDF Tools")).unwrap();
        assert_eq!(
            (s.slug.as_str(), s.frontmatter.name.as_str()),
            ("pdf-tools", "PDF Tools")
        );
        assert_eq!(codes(&s), ["name-missing", "slug-derived"]);
        // A lone file: the hint its place gives, else no name at all.
        let hinted = Origin {
            name_hint: Some("from-url"),
            ..Origin::default()
        };
        let s = load_skill(b"---\ndescription: d\n---\n", hinted).unwrap();
        assert_eq!(s.slug.as_str(), "from-url");
        assert_eq!(
            skill("description: d", None).unwrap_err(),
            SkillError::NameMissing
        );
        // A hint or directory that hides characters or climbs out is refused as a name.
        for hint in ["..", "a/b", "x\u{202e}y"] {
            let origin = Origin {
                name_hint: Some(hint),
                ..Origin::default()
            };
            assert!(
                load_skill(b"---\ndescription: d\n---\n", origin).is_err(),
                "{hint}"
            );
        }
        let e = skill("description: d", Some("my\u{200b}skill")).unwrap_err();
        assert_eq!(e.rule(), "name-hidden-char");
        let e = skill("name: ok\ndescription: d", Some("my\u{1b}skill")).unwrap_err();
        assert_eq!(e.rule(), "name-hidden-char");
    }

    #[test]
    fn skills_without_frontmatter_load_leniently_but_not_from_a_registry() {
        let md = b"# PDF tools\n\nMerge and split PDF files.\n\n## Steps\n1. Open.\n";
        let s = load_skill(md, Origin::dir("pdf-tools")).unwrap();
        assert_eq!(s.slug.as_str(), "pdf-tools");
        assert_eq!(s.frontmatter.name, "pdf-tools");
        assert_eq!(s.frontmatter.description, "Merge and split PDF files.");
        assert_eq!(codes(&s), ["frontmatter-missing"]);
        assert_eq!(s.body.as_bytes(), md);
        let registry = Origin {
            leniency: Leniency::FrontmatterRequired,
            ..Origin::dir("pdf-tools")
        };
        assert_eq!(
            load_skill(md, registry).unwrap_err(),
            SkillError::FrontmatterMissing
        );
        // A body with nothing to describe the skill with is still refused.
        let e = load_skill(b"```\ncode only\n```\n", Origin::dir("x")).unwrap_err();
        assert_eq!(e, SkillError::DescriptionMissing);
        // A missing description is the first paragraph, with or without frontmatter.
        let s = skill("name: a", None);
        assert_eq!(s.unwrap().frontmatter.description, "body");
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
        let s = skill(&format!("name: a\ndescription: {ok}"), None).unwrap();
        assert!(s.warnings.is_empty());
        // Longer: kept whole, with a warning.
        let s = skill(&format!("name: a\ndescription: {ok}x"), None).unwrap();
        assert_eq!(
            s.frontmatter.description.chars().count(),
            MAX_DESCRIPTION_CHARS + 1
        );
        assert_eq!(
            s.warnings,
            [Warning::DescriptionLength {
                chars: MAX_DESCRIPTION_CHARS + 1,
                limit: MAX_DESCRIPTION_CHARS
            }]
        );
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

//! Skill identities, which are also paths. A [`Slug`] can only hold `[a-z0-9-]`
//! (no `.`, no separator, nothing invisible), so a path built from slugs cannot leave
//! the skills directory; [`SkillId::dir_in`] is how the library builds every skill
//! path. ASCII only, deliberately: a slug is typed on command lines and compared by
//! people, and Unicode look-alikes (Cyrillic `а` for Latin `a`) or unnormalised
//! forms (`cafe\u{301}` vs `café`) would make two different skills look the same.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use crate::skills::MAX_NAME_CHARS;

/// 1-64 characters: lowercase ASCII letters, digits and single hyphens, not at either end.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Slug(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlugError {
    #[error("empty")]
    Empty,
    #[error("{chars} characters; the limit is {MAX_NAME_CHARS}")]
    TooLong { chars: usize },
    #[error("{0}")]
    Format(String),
}

impl Slug {
    pub fn parse(text: &str) -> Result<Slug, SlugError> {
        let chars = text.chars().count();
        if chars == 0 {
            return Err(SlugError::Empty);
        }
        if chars > MAX_NAME_CHARS {
            return Err(SlugError::TooLong { chars });
        }
        if let Some(c) = text
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(SlugError::Format(if c.is_uppercase() {
                "uppercase letters".to_string()
            } else {
                format!("the character {c:?}")
            }));
        }
        if text.starts_with('-') || text.ends_with('-') {
            return Err(SlugError::Format("a leading or trailing hyphen".into()));
        }
        if text.contains("--") {
            return Err(SlugError::Format("consecutive hyphens".into()));
        }
        Ok(Slug(text.to_string()))
    }

    /// A slug made from a name that is not one, as other agents accept such names
    /// for directories: ASCII letters lowercased, every run of other ASCII characters
    /// (spaces, `_`, `.`, repeated hyphens) one hyphen, none at either end. `None` when
    /// nothing is left or the text has any non-ASCII character: transliterating
    /// `café` or `навык` would guess, and two look-alike names must not meet in one
    /// slug. The length limit is not lifted: a longer text is no slug's source.
    pub fn derive(text: &str) -> Option<Slug> {
        if !text.is_ascii() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
        }
        while out.ends_with('-') {
            out.pop();
        }
        Slug::parse(&out).ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A skill id that is neither `slug` nor `category/slug`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid skill id {id:?}: {reason}")]
pub struct IdError {
    pub id: String,
    pub reason: String,
}

/// Where a skill lives: `<slug>/` (flat layout) or `<category>/<slug>/` (registry
/// layout, and the registry's id form). The slug alone identifies the skill.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SkillId {
    Flat(Slug),
    Registry { category: Slug, slug: Slug },
}

impl SkillId {
    /// Parses `slug` or `category/slug`.
    pub fn parse(id: &str) -> Result<SkillId, IdError> {
        let invalid = |reason: String| IdError {
            id: id.to_string(),
            reason,
        };
        let slug = |part: &str, what: &str| {
            Slug::parse(part).map_err(|e| invalid(format!("the {what} is not a slug: {e}")))
        };
        let mut parts = id.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(s), None, None) => Ok(SkillId::Flat(slug(s, "name")?)),
            (Some(c), Some(s), None) => Ok(SkillId::Registry {
                category: slug(c, "category")?,
                slug: slug(s, "name")?,
            }),
            _ => Err(invalid("expected `name` or `category/name`".into())),
        }
    }

    pub fn slug(&self) -> &Slug {
        match self {
            SkillId::Flat(slug) | SkillId::Registry { slug, .. } => slug,
        }
    }

    pub fn category(&self) -> Option<&Slug> {
        match self {
            SkillId::Flat(_) => None,
            SkillId::Registry { category, .. } => Some(category),
        }
    }

    /// The skill's directory under `root`.
    pub fn dir_in(&self, root: &Path) -> PathBuf {
        match self {
            SkillId::Flat(slug) => root.join(slug.as_str()),
            SkillId::Registry { category, slug } => {
                root.join(category.as_str()).join(slug.as_str())
            }
        }
    }
}

/// `slug` or `category/slug`: the id form, and the path relative to the skills root.
impl fmt::Display for SkillId {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SkillId::Flat(slug) => write!(f, "{slug}"),
            SkillId::Registry { category, slug } => write!(f, "{category}/{slug}"),
        }
    }
}

impl Serialize for SkillId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_slugs_follow_the_agent_skills_rules() {
        for good in ["a", "web-search", "123", "a1-b2", &"a".repeat(64)] {
            assert!(Slug::parse(good).is_ok(), "{good}");
        }
        for (bad, reason) in [
            ("", "empty"),
            ("MySkill", "uppercase"),
            ("my_skill", "'_'"),
            ("-a", "leading"),
            ("a-", "trailing"),
            ("a--b", "consecutive"),
            ("..", "'.'"),
            ("a/b", "'/'"),
            ("навык", "'н'"),
            ("a\u{200b}", "'\\u{200b}'"),
        ] {
            let e = Slug::parse(bad).unwrap_err().to_string();
            assert!(e.contains(reason), "{bad}: {e}");
        }
        assert_eq!(
            Slug::parse(&"a".repeat(65)),
            Err(SlugError::TooLong { chars: 65 })
        );
    }

    #[test]
    fn skills_slugs_derive_from_ascii_names_only() {
        for (name, slug) in [
            ("my--skill", "my-skill"),
            ("MySkill", "myskill"),
            ("-my-skill", "my-skill"),
            ("my_skill", "my-skill"),
            ("Shell Scripting", "shell-scripting"),
            ("pdf.tools v2", "pdf-tools-v2"),
            ("  --a__b--  ", "a-b"),
            ("web-search", "web-search"),
        ] {
            assert_eq!(
                Slug::derive(name).map(|s| s.to_string()).as_deref(),
                Some(slug),
                "{name}"
            );
        }
        for name in [
            "",
            "---",
            "_",
            "café",
            "навык",
            "技能",
            "a\u{200b}b",
            &"a".repeat(65),
        ] {
            assert_eq!(Slug::derive(name), None, "{name:?}");
        }
    }

    #[test]
    fn skills_ids_are_paths_that_stay_inside_the_root() {
        let root = Path::new("/data/skills");
        let flat = SkillId::parse("web-search").unwrap();
        assert_eq!(flat.dir_in(root), root.join("web-search"));
        let reg = SkillId::parse("ai-ml/agent-audit-logging").unwrap();
        assert_eq!(reg.to_string(), "ai-ml/agent-audit-logging");
        assert_eq!(reg.slug().as_str(), "agent-audit-logging");
        assert_eq!(reg.dir_in(root), root.join("ai-ml/agent-audit-logging"));
        for bad in [
            "../etc",
            "a/../b",
            "/abs",
            "a/b/c",
            "a\\b",
            "a/",
            "",
            ".",
            "a\u{0}b",
            "a/\u{202e}b",
        ] {
            let e = SkillId::parse(bad).unwrap_err();
            assert_eq!(
                crate::skills::LibraryError::from(e).code(),
                "invalid-id",
                "{bad}"
            );
        }
    }
}

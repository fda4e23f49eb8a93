//! What listings and the dashboard show of installed skills: each index entry with the
//! catalog view of its frontmatter and the warnings it earns, or why its SKILL.md can
//! no longer be used; one skill's detail adds its resource files and, only when asked
//! for, its body. Reads only: nothing here changes the directory or the index.

use serde::Serialize;

use super::catalog::CatalogEntry;
use super::error::LibraryError;
use super::error::ScanProblem;
use super::index::{Granted, IndexEntry};
use super::{Library, displayed, list_resources};
use crate::skills::format::error::Warning;

/// An indexed skill as listings show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstalledSkill {
    pub slug: String,
    pub entry: IndexEntry,
    /// What the catalog shows of it; `None` when its SKILL.md no longer validates.
    pub catalog: Option<CatalogEntry>,
    /// What its frontmatter earned (the skill is usable).
    pub warnings: Vec<Warning>,
    /// Why it cannot be used: its SKILL.md is gone or breaks a rule.
    pub error: Option<ScanProblem>,
    /// The sha256 of its whole SKILL.md, which the person's grant is bound to.
    pub file_sha256: Option<String>,
    /// The tools the person granted it, for its SKILL.md as it is now.
    pub granted_tools: Vec<String>,
}

/// One skill in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillDetail {
    pub skill: InstalledSkill,
    /// Files under `scripts/` and `references/`, relative to the skill's directory.
    pub resources: Vec<String>,
    /// The Markdown body, exactly as in the file; only when asked for.
    pub body: Option<String>,
}

impl Library {
    /// Every indexed skill, by slug.
    pub fn installed(&self) -> Result<Vec<InstalledSkill>, LibraryError> {
        let _lock = self.lock(false)?;
        let index = self.load_index()?;
        Ok(index
            .skills
            .into_iter()
            .map(|(slug, entry)| self.describe(slug, entry))
            .collect())
    }

    /// The skill `slug` with its resources, and its body when `with_body`.
    pub fn installed_skill(
        &self,
        slug: &str,
        with_body: bool,
    ) -> Result<SkillDetail, LibraryError> {
        let _lock = self.lock(false)?;
        let entry = self.load_index()?.take(slug)?;
        let mut skill = self.describe(slug.to_string(), entry);
        let mut resources = Vec::new();
        let mut body = None;
        if skill.error.is_none() {
            let id = skill.entry.skill_id()?;
            resources = list_resources(&id.dir_in(self.root()));
            if with_body {
                match self.load_dir(&id) {
                    Ok(valid) => body = Some(valid.body),
                    // The body broke a rule the frontmatter alone did not (not UTF-8).
                    Err(error) => {
                        skill.catalog = None;
                        skill.error = Some(ScanProblem::new(skill.entry.path.clone(), &error));
                    }
                }
            }
        }
        Ok(SkillDetail {
            skill,
            resources,
            body,
        })
    }

    fn describe(&self, slug: String, entry: IndexEntry) -> InstalledSkill {
        let head = entry.skill_id().and_then(|id| {
            let (_, fm, mut warnings, body_start) = self.load_head_warned(&id)?;
            warnings.extend(self.tool_warnings(&fm.allowed_tools));
            Ok((fm, warnings, body_start, self.file_sha256(&id)?))
        });
        match head {
            Ok((fm, warnings, body_start, file_sha256)) => InstalledSkill {
                catalog: Some(CatalogEntry::new(
                    slug.clone(),
                    &entry,
                    displayed(fm, &entry, &warnings),
                    body_start,
                )),
                warnings,
                error: None,
                granted_tools: Granted::for_file(entry.granted.as_ref(), &file_sha256),
                file_sha256: Some(file_sha256),
                slug,
                entry,
            },
            Err(error) => InstalledSkill {
                catalog: None,
                warnings: Vec::new(),
                error: Some(ScanProblem::new(entry.path.clone(), &error)),
                file_sha256: None,
                granted_tools: Vec::new(),
                slug,
                entry,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{SkillId, SkillPackage, Source, SourceKind, ToolConsent};

    #[test]
    fn skills_view_lists_warnings_errors_resources_and_the_body_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path().join("skills")).unwrap();
        let md = b"---\nname: Shell Helper\ndescription: Helps.\nversion: '1.0'\n---\nDo it.\n";
        let package = SkillPackage::new(
            Some(SkillId::parse("dev/shell").unwrap()),
            md.to_vec(),
            vec![
                ("scripts/run.sh".into(), b"echo".to_vec()),
                ("references/a/b.md".into(), b"b".to_vec()),
            ],
        )
        .unwrap();
        library
            .install(
                &package,
                Source::of(SourceKind::Registry),
                false,
                ToolConsent::Confirmed,
            )
            .unwrap();
        let broken = b"---\nname: broken\ndescription: fine\n---\n".to_vec();
        let package = SkillPackage::new(None, broken, vec![]).unwrap();
        library
            .install(
                &package,
                Source::of(SourceKind::File),
                false,
                ToolConsent::Confirmed,
            )
            .unwrap();
        std::fs::write(
            library.root().join("broken/SKILL.md"),
            "---\nnever closed\n",
        )
        .unwrap();

        let listed = library.installed().unwrap();
        assert_eq!(listed.len(), 2);
        let (broken, shell) = (&listed[0], &listed[1]);
        assert_eq!(shell.slug, "shell");
        let codes: Vec<&str> = shell.warnings.iter().map(Warning::code).collect();
        assert_eq!(codes, ["display-name", "version-not-semver"]);
        assert_eq!(shell.catalog.as_ref().unwrap().name, "Shell Helper");
        assert!(shell.error.is_none());
        assert_eq!(broken.error.as_ref().unwrap().code, "frontmatter-unclosed");
        assert!(broken.catalog.is_none());

        let detail = library.installed_skill("shell", false).unwrap();
        assert_eq!(detail.resources, ["references/a/b.md", "scripts/run.sh"]);
        assert_eq!(detail.body, None);
        let detail = library.installed_skill("shell", true).unwrap();
        assert_eq!(detail.body.as_deref(), Some("Do it.\n"));
        let detail = library.installed_skill("broken", true).unwrap();
        assert_eq!((detail.body, detail.resources.len()), (None, 0));
        assert_eq!(
            library.installed_skill("nope", false).unwrap_err().code(),
            "not-found"
        );
    }
}

//! Installing a validated [`SkillPackage`]: the files are written to
//! `.staging-<ulid>/` inside the skills root, fsynced, and renamed into place, so no
//! partial skill is ever visible under a skill's name; then the index is replaced
//! atomically. Validation happened when the package was built, so a package that
//! exists can be written, and nothing is written for one that could not be built.
//!
//! Statuses: `installed` (new), `updated` (version or body changed), `reinstalled`
//! (same version and body, `force`), `already-installed` (same, no `force`: nothing is
//! written). New skills start active; an update keeps the entry's active and pinned
//! state and its `installed_at`. Every install that changed the files or the index is
//! announced as `skill.installed` (with its status) once the index is saved.
//!
//! A skill's `allowed-tools` are granted as allow whenever it is invoked only once the
//! person has accepted them ([`ToolConsent`]), for the SKILL.md they accepted (the
//! index entry's `granted`, bound to the whole file's sha256). A skill that asks for
//! tools installs only when they were confirmed (`-y`, the dashboard's dialog, a
//! channel admin), unless the copy in place already asked for exactly the same tools;
//! otherwise the install is refused with [`LibraryError::ToolsUnconfirmed`], naming
//! the tools, and nothing is written. An install nobody confirmed keeps the grant only
//! for the very same file: a changed body, description or intents drops it until the
//! person confirms again. The built-ins install with [`ToolConsent::Later`]: nothing
//! granted until the person confirms (`Library::confirm_tools`).

use std::path::PathBuf;

use serde::Serialize;

use super::durable::{sync_dir, unique_name, write_new};
use super::error::LibraryError;
use super::index::{Granted, IndexEntry, Source};
use super::package::SkillPackage;
use super::scan::entry_for;
use super::{Library, STAGING_PREFIX};
use crate::events::EventKind;
use crate::skills::format::error::Warning;
use crate::skills::format::id::SkillId;
use crate::skills::format::validate::ValidSkill;

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallStatus {
    Installed,
    Updated,
    Reinstalled,
    AlreadyInstalled,
}

/// Whether the person has seen and accepted the tools a skill asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolConsent {
    /// They did: the tools are granted for this SKILL.md.
    Confirmed,
    /// Nobody did: new tools are refused (`tools-unconfirmed`); otherwise the skill
    /// installs, and keeps its grant only if its SKILL.md is the very same.
    NotConfirmed,
    /// Installed without a grant, for the person to confirm later (the built-ins).
    Later,
}

impl ToolConsent {
    /// `Confirmed` when `confirmed` is true.
    pub fn given(confirmed: bool) -> ToolConsent {
        if confirmed {
            ToolConsent::Confirmed
        } else {
            ToolConsent::NotConfirmed
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstallOutcome {
    pub status: InstallStatus,
    pub slug: String,
    pub id: String,
    /// Display name.
    pub name: String,
    pub version: Option<String>,
    pub sha256: String,
    pub path: PathBuf,
    pub warnings: Vec<Warning>,
    /// The skill's previous location, when `force` moved it to another category.
    pub replaced: Option<String>,
    /// The tools the skill asks for (allowed while it is invoked, once granted).
    pub allowed_tools: Vec<String>,
    /// Those the person has granted it, for this SKILL.md; empty until they confirm.
    pub granted_tools: Vec<String>,
}

/// A skill's tools, sorted and without repeats, to compare what two versions ask for.
fn tool_set(tools: &[String]) -> Vec<String> {
    let mut tools = tools.to_vec();
    tools.sort();
    tools.dedup();
    tools
}

impl Library {
    /// Installs `package` (see the module documentation). A skill with the same slug
    /// elsewhere (another category, or flat) is only replaced with `force`.
    pub fn install(
        &self,
        package: &SkillPackage,
        source: Source,
        force: bool,
        consent: ToolConsent,
    ) -> Result<InstallOutcome, LibraryError> {
        let _lock = self.lock(true)?;
        self.install_locked(package, source, force, consent)
    }

    /// [`Library::install`] for a caller that holds the exclusive lock.
    pub(super) fn install_locked(
        &self,
        package: &SkillPackage,
        source: Source,
        force: bool,
        consent: ToolConsent,
    ) -> Result<InstallOutcome, LibraryError> {
        let mut index = self.load_index()?;
        let id = package.id();
        let skill = package.skill();
        let slug = id.slug().to_string();
        let target = id.dir_in(self.root());

        let existing = index.skills.get(&slug).cloned();
        let moved_from = match &existing {
            Some(e) if e.path != id.to_string() => {
                if !force {
                    return Err(LibraryError::SlugTaken {
                        slug,
                        existing: e.path.clone(),
                    });
                }
                Some(e.skill_id()?)
            }
            _ => None,
        };
        self.check_target(id)?;
        // What is in place now: the indexed skill if its directory is still there, else
        // an unindexed skill at the target.
        let indexed = existing.as_ref().filter(|e| {
            e.skill_id()
                .is_ok_and(|at| Library::has_skill_file(&at.dir_in(self.root())))
        });
        let previous = match indexed {
            Some(e) => Some((e.version.clone(), e.sha256.clone())),
            None if Library::has_skill_file(&target) => Some(
                self.load_dir(id)
                    .map(|s| (s.frontmatter.version, s.sha256))
                    .unwrap_or_default(),
            ),
            None => None,
        };
        let in_place = match indexed {
            Some(e) => e.skill_id().ok(),
            None if Library::has_skill_file(&target) => Some(id.clone()),
            None => None,
        };
        let asked = tool_set(&skill.frontmatter.allowed_tools);
        if consent == ToolConsent::NotConfirmed && !asked.is_empty() {
            let before = in_place
                .and_then(|at| self.load_dir(&at).ok())
                .map(|s| tool_set(&s.frontmatter.allowed_tools));
            if before.as_ref() != Some(&asked) {
                return Err(LibraryError::ToolsUnconfirmed {
                    slug,
                    tools: asked,
                    before: before.unwrap_or_default(),
                });
            }
        }
        let granted = match consent {
            ToolConsent::Confirmed if !asked.is_empty() => Some(Granted {
                tools: skill.frontmatter.allowed_tools.clone(),
                file_sha256: skill.file_sha256.clone(),
                at: super::index::now(),
            }),
            ToolConsent::Confirmed | ToolConsent::Later => None,
            ToolConsent::NotConfirmed => existing
                .as_ref()
                .and_then(|e| e.granted.clone())
                .filter(|g| g.file_sha256 == skill.file_sha256),
        };
        let same = previous
            .as_ref()
            .is_some_and(|(v, sha)| *v == skill.frontmatter.version && *sha == skill.sha256);
        let status = match (&previous, same, force) {
            (None, _, _) => InstallStatus::Installed,
            (Some(_), true, true) => InstallStatus::Reinstalled,
            (Some(_), true, false) => InstallStatus::AlreadyInstalled,
            (Some(_), false, _) => InstallStatus::Updated,
        };
        let outcome = InstallOutcome {
            status,
            slug: slug.clone(),
            id: id.to_string(),
            name: skill.frontmatter.name.clone(),
            version: skill.frontmatter.version.clone(),
            sha256: skill.sha256.clone(),
            path: target.clone(),
            warnings: skill
                .warnings
                .iter()
                .cloned()
                .chain(self.tool_warnings(&skill.frontmatter.allowed_tools))
                .collect(),
            replaced: moved_from.as_ref().map(SkillId::to_string),
            allowed_tools: skill.frontmatter.allowed_tools.clone(),
            granted_tools: granted
                .as_ref()
                .map(|g| g.tools.clone())
                .unwrap_or_default(),
        };

        if status == InstallStatus::AlreadyInstalled {
            let regranted = existing
                .as_ref()
                .is_some_and(|e| e.granted != granted && consent == ToolConsent::Confirmed);
            let newly_listed = indexed.is_none();
            if newly_listed || regranted {
                // The same files were already in place, unindexed or indexed elsewhere,
                // or the person confirmed their tools now.
                let entry = entry(existing, id, skill, source, granted);
                index.skills.insert(slug, entry.clone());
                index.save(&self.index_path())?;
                if newly_listed {
                    // Newly listed, though no file changed.
                    self.announce(
                        EventKind::SkillInstalled,
                        &entry,
                        serde_json::json!({ "status": status, "replaced": null }),
                    );
                }
            }
            return Ok(outcome);
        }

        let staging = self.stage(package)?;
        let replaced_dir = self.commit(staging, id)?;
        let old_dir = match &moved_from {
            Some(old) if old.dir_in(self.root()).symlink_metadata().is_ok() => {
                Some(self.move_to_trash(old)?)
            }
            _ => None,
        };
        let entry = entry(existing, id, skill, source, granted);
        index.skills.insert(slug, entry.clone());
        index.save(&self.index_path())?;
        for dir in [replaced_dir, old_dir].into_iter().flatten() {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(category) = moved_from.as_ref().and_then(SkillId::category) {
            let _ = std::fs::remove_dir(self.root().join(category.as_str()));
        }
        self.announce(
            EventKind::SkillInstalled,
            &entry,
            serde_json::json!({ "status": status, "replaced": outcome.replaced }),
        );
        Ok(outcome)
    }

    /// Refuses to install where something that is not a skill is in the way: a
    /// non-skill directory (e.g. a category) at the target, or a skill where the
    /// category directory should be.
    pub(super) fn check_target(&self, id: &SkillId) -> Result<(), LibraryError> {
        let target = id.dir_in(self.root());
        if target.symlink_metadata().is_ok() && !Library::has_skill_file(&target) {
            return Err(LibraryError::PathTaken { path: target });
        }
        if let Some(category) = id.category() {
            let dir = self.root().join(category.as_str());
            if Library::has_skill_file(&dir) {
                return Err(LibraryError::PathTaken { path: dir });
            }
            // A category directory that is a symlink out of the root would carry the
            // install with it.
            if dir.exists() {
                self.check_inside(&dir)?;
            }
        }
        Ok(())
    }

    /// Writes the package to a fresh staging directory, every file and directory
    /// fsynced. Dropping the result deletes it.
    pub(super) fn stage(&self, package: &SkillPackage) -> Result<Staging, LibraryError> {
        let staging = Staging {
            dir: self.root().join(unique_name(STAGING_PREFIX)),
            committed: false,
        };
        let dir = &staging.dir;
        std::fs::create_dir(dir).map_err(LibraryError::io(dir))?;
        let skill_md = dir.join(crate::skills::SKILL_FILE);
        write_new(&skill_md, package.skill_md()).map_err(LibraryError::io(&skill_md))?;
        let mut dirs = vec![dir.to_path_buf()];
        for (path, bytes) in package.files() {
            let file = path.under(dir);
            if let Some(parent) = file.parent().filter(|p| !p.exists()) {
                std::fs::create_dir_all(parent).map_err(LibraryError::io(parent))?;
            }
            write_new(&file, bytes).map_err(LibraryError::io(&file))?;
            if let Some(parent) = file.parent() {
                dirs.push(parent.to_path_buf());
            }
        }
        dirs.sort();
        dirs.dedup();
        for d in dirs.iter().rev() {
            sync_dir(d).map_err(LibraryError::io(d))?;
        }
        Ok(staging)
    }

    /// Renames the staging directory to `id`'s place. An existing skill there is first
    /// moved to the trash (returned, for deletion once the index is saved), and put
    /// back if the rename fails.
    pub(super) fn commit(
        &self,
        mut staging: Staging,
        id: &SkillId,
    ) -> Result<Option<PathBuf>, LibraryError> {
        let target = id.dir_in(self.root());
        if let Some(category) = id.category() {
            let dir = self.root().join(category.as_str());
            if !dir.is_dir() {
                std::fs::create_dir(&dir).map_err(LibraryError::io(&dir))?;
                sync_dir(self.root()).map_err(LibraryError::io(self.root()))?;
            }
        }
        let trash = if target.symlink_metadata().is_ok() {
            Some(self.move_to_trash(id)?)
        } else {
            None
        };
        if let Err(e) = std::fs::rename(&staging.dir, &target) {
            if let Some(trash) = &trash {
                let _ = std::fs::rename(trash, &target);
            }
            return Err(LibraryError::io(&target)(e));
        }
        staging.committed = true;
        let parent = target.parent().unwrap_or(self.root());
        sync_dir(parent).map_err(LibraryError::io(parent))?;
        Ok(trash)
    }
}

/// A staging directory that deletes itself unless committed.
pub(super) struct Staging {
    dir: PathBuf,
    committed: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The index entry after an install: a fresh one with `granted`, keeping the previous
/// entry's `installed_at`, `active` and `pinned` when the slug was installed before.
fn entry(
    previous: Option<IndexEntry>,
    id: &SkillId,
    skill: &ValidSkill,
    source: Source,
    granted: Option<Granted>,
) -> IndexEntry {
    let fresh = IndexEntry {
        granted,
        ..entry_for(id, skill, source)
    };
    match previous {
        Some(previous) => IndexEntry {
            installed_at: previous.installed_at,
            active: previous.active,
            pinned: previous.pinned,
            ..fresh
        },
        None => fresh,
    }
}

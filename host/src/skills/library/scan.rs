//! The discovery scan: reconciles `.index.json` with the directories on disk.
//!
//! - A skill directory without an index entry is indexed with source `manual`. One
//!   whose name is not a slug (`My Skill`, `my--skill`) is renamed to the slug made
//!   from it (skill paths are only ever built from slugs), when that place is free;
//!   the original name stays its display name when its SKILL.md has none.
//! - An entry whose directory (or its SKILL.md) is gone is dropped and reported.
//! - An entry whose SKILL.md changed on disk is refreshed (name, version, sha256).
//! - Directories that do not validate are reported with the rule they break, and
//!   never indexed; an indexed skill that stopped validating keeps its entry.
//! - Leftovers of interrupted operations are settled: `.staging-*` (an install that
//!   never got its final name) is deleted; `.trash-*` (a directory moved aside by a
//!   remove or a replace) is put back if its place is empty and the index still lists
//!   it there, else deleted. The scan holds the exclusive lock, so none of these
//!   belongs to an operation still running.
//! - An unreadable index is kept aside as `.index.json.corrupt-<ulid>` and rebuilt.
//!
//! Once the index is saved, each added skill is announced as `skill.installed` and
//! each dropped one as `skill.removed` (with `reason: vanished`).

use std::path::Path;

use serde::Serialize;

use super::TEMPLATE_DIR;
use super::durable::sync_dir;
use super::durable::unique_name;
use super::error::{LibraryError, ScanProblem};
use super::index::{INDEX_FILE, Index, IndexEntry, Source, SourceKind, now};
use super::{
    Library, STAGING_PREFIX, TRASH_PREFIX, displayed, find_skill_file, load_skill_dir, trash_origin,
};
use crate::events::EventKind;
use crate::skills::format::id::{SkillId, Slug};
use crate::skills::format::validate::ValidSkill;

/// Directory entries a scan looks at, at most (root and each category together).
const MAX_SCAN_ENTRIES: usize = 10_000;

/// What a scan found and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScanReport {
    /// Slugs newly indexed as `manual`.
    pub added: Vec<String>,
    /// Slugs whose entry was refreshed from a SKILL.md changed on disk.
    pub refreshed: Vec<String>,
    /// Entries dropped because their directory is gone.
    pub dropped: Vec<DroppedEntry>,
    /// Directories that are not valid skills, with the rule they break.
    pub problems: Vec<ScanProblem>,
    /// Leftovers of interrupted operations, and what was done with each.
    pub recovered: Vec<String>,
    /// Skill directories whose name was not a slug, renamed to the slug made from it.
    pub renamed: Vec<Renamed>,
    /// Why the index was rebuilt, if it was unreadable.
    pub index_reset: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Renamed {
    /// The directory as it was (`My Skill`, `dev/my--skill`).
    pub from: String,
    /// Its path now (`my-skill`, `dev/my-skill`).
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DroppedEntry {
    pub slug: String,
    pub path: String,
}

/// What a scan would find that the index does not say, found without changing
/// anything (listings show it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiskCheck {
    /// Valid skill directories (`slug` or `category/slug`) the index does not list:
    /// the next scan adds them as `manual`.
    pub unindexed: Vec<String>,
    /// Directories that are not valid skills, or whose slug another skill has: never
    /// indexed. (Indexed skills that stopped validating are not repeated here.)
    pub problems: Vec<ScanProblem>,
    /// Whether `_template/SKILL.md` is there.
    pub template: bool,
}

impl Library {
    /// Looks at the directories the way [`Library::scan`] does, under the shared lock,
    /// and changes nothing.
    pub fn disk_check(&self) -> Result<DiskCheck, LibraryError> {
        let _lock = self.lock(false)?;
        let index = self.load_index()?;
        let mut report = ScanReport::default();
        let mut check = DiskCheck::default();
        for found in self.find_skill_dirs(&mut report)? {
            let (id, slug, path) = (&found.id, found.id.slug().to_string(), found.id.to_string());
            match (index.skills.get(&slug), &found.named) {
                (Some(entry), None) if entry.path == path => {}
                (Some(entry), _) => {
                    let error = LibraryError::SlugTaken {
                        slug,
                        existing: entry.path.clone(),
                    };
                    report
                        .problems
                        .push(ScanProblem::new(found.on_disk(), &error));
                }
                (None, named) => {
                    let loaded = match named {
                        Some(_) => self.check_rename(&found).map(drop),
                        None => self.load_dir(id).map(drop),
                    };
                    match loaded {
                        Ok(()) => check.unindexed.push(path),
                        Err(error) => report
                            .problems
                            .push(ScanProblem::new(found.on_disk(), &error)),
                    }
                }
            }
        }
        check.problems = report.problems;
        check.template = Library::has_skill_file(&self.root().join(TEMPLATE_DIR));
        Ok(check)
    }

    /// Reconciles the index with the disk (see the module documentation).
    pub fn scan(&self) -> Result<ScanReport, LibraryError> {
        let _lock = self.lock(true)?;
        let mut report = ScanReport::default();
        let mut index = match self.load_index() {
            Ok(index) => index,
            Err(LibraryError::IndexCorrupt { reason, .. }) => {
                let kept = self
                    .root()
                    .join(unique_name(&format!("{INDEX_FILE}.corrupt-")));
                std::fs::rename(self.index_path(), &kept)
                    .map_err(LibraryError::io(&self.index_path()))?;
                report.index_reset = Some(format!(
                    "{reason}; the old file is kept as {}",
                    kept.display()
                ));
                Index::default()
            }
            Err(e) => return Err(e),
        };
        let before = index.clone();
        self.settle_leftovers(&index, &mut report)?;

        let vanished: Vec<String> = index
            .skills
            .iter()
            .filter(|(_, e)| {
                e.skill_id()
                    .map(|id| !Library::has_skill_file(&id.dir_in(self.root())))
                    .unwrap_or(true)
            })
            .map(|(slug, _)| slug.clone())
            .collect();
        let mut dropped_entries = Vec::new();
        for slug in vanished {
            if let Some(entry) = index.skills.remove(&slug) {
                report.dropped.push(DroppedEntry {
                    slug,
                    path: entry.path.clone(),
                });
                dropped_entries.push(entry);
            }
        }

        for found in self.find_skill_dirs(&mut report)? {
            let id = &found.id;
            let slug = id.slug().to_string();
            let path = id.to_string();
            // The slug is the identity: a second directory with the same slug (in
            // another category, flat, or under a name that is not a slug) is not
            // indexed.
            if let Some(existing) = index
                .skills
                .get(&slug)
                .filter(|e| e.path != path || found.named.is_some())
            {
                let error = LibraryError::SlugTaken {
                    slug,
                    existing: existing.path.clone(),
                };
                report
                    .problems
                    .push(ScanProblem::new(found.on_disk(), &error));
                continue;
            }
            let loaded = match &found.named {
                Some(_) => self.rename_to_slug(&found, &mut report),
                None => self.load_dir(id),
            };
            let skill = match loaded {
                Ok(skill) => skill,
                Err(error) => {
                    report
                        .problems
                        .push(ScanProblem::new(found.on_disk(), &error));
                    continue;
                }
            };
            match index.skills.get_mut(&slug) {
                Some(entry) => {
                    if refresh(entry, id, &skill) {
                        report.refreshed.push(slug);
                    }
                }
                None => {
                    index.skills.insert(slug.clone(), manual_entry(id, &skill));
                    report.added.push(slug);
                }
            }
        }

        if index != before || report.index_reset.is_some() {
            index.save(&self.index_path())?;
        }
        for entry in &dropped_entries {
            let why = serde_json::json!({ "reason": "vanished" });
            self.announce(EventKind::SkillRemoved, entry, why);
        }
        for slug in &report.added {
            if let Some(entry) = index.skills.get(slug) {
                let how = serde_json::json!({ "status": "installed", "replaced": null });
                self.announce(EventKind::SkillInstalled, entry, how);
            }
        }
        Ok(report)
    }

    /// Deletes or restores what interrupted installs and removals left at the root.
    fn settle_leftovers(&self, index: &Index, report: &mut ScanReport) -> Result<(), LibraryError> {
        let root = self.root();
        let entries = std::fs::read_dir(root).map_err(LibraryError::io(root))?;
        let temp_index = format!(".{INDEX_FILE}.tmp-");
        for entry in entries.filter_map(Result::ok).take(MAX_SCAN_ENTRIES) {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let path = entry.path();
            if name.starts_with(STAGING_PREFIX) {
                let _ = std::fs::remove_dir_all(&path);
                report
                    .recovered
                    .push(format!("deleted the unfinished install {name}"));
            } else if name.starts_with(TRASH_PREFIX) {
                let restorable = trash_origin(&name).filter(|id| {
                    let listed = index
                        .skills
                        .get(id.slug().as_str())
                        .is_some_and(|e| e.path == id.to_string());
                    listed && id.dir_in(root).symlink_metadata().is_err()
                });
                match restorable {
                    Some(id) => {
                        let target = id.dir_in(root);
                        let restored = match target.parent() {
                            Some(parent) => std::fs::create_dir_all(parent)
                                .and_then(|()| std::fs::rename(&path, &target)),
                            None => Ok(()),
                        };
                        report.recovered.push(match restored {
                            Ok(()) => format!("restored {id} from {name}"),
                            Err(e) => format!("could not restore {id} from {name}: {e}"),
                        });
                    }
                    None => {
                        let _ = std::fs::remove_dir_all(&path);
                        report.recovered.push(format!("deleted {name}"));
                    }
                }
            } else if name.starts_with(&temp_index) {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(())
    }

    /// Validates the skill in `found`'s directory, whose name is not a slug, and checks
    /// that the slug's place is free; nothing is moved.
    fn check_rename(&self, found: &Found) -> Result<ValidSkill, LibraryError> {
        let dir = self.root().join(found.on_disk());
        let (file, _) = find_skill_file(&dir)?;
        self.check_inside(&file)?;
        let skill = load_skill_dir(&dir)?;
        let target = found.id.dir_in(self.root());
        if target.symlink_metadata().is_ok() {
            return Err(LibraryError::PathTaken { path: target });
        }
        Ok(skill)
    }

    /// [`Library::check_rename`], then the rename. The skill is the one read under
    /// its original name, which is its display name when its file has none.
    fn rename_to_slug(
        &self,
        found: &Found,
        report: &mut ScanReport,
    ) -> Result<ValidSkill, LibraryError> {
        let skill = self.check_rename(found)?;
        let from = self.root().join(found.on_disk());
        let target = found.id.dir_in(self.root());
        std::fs::rename(&from, &target).map_err(LibraryError::io(&from))?;
        let parent = target.parent().unwrap_or(self.root());
        sync_dir(parent).map_err(LibraryError::io(parent))?;
        report.renamed.push(Renamed {
            from: found.on_disk(),
            to: found.id.to_string(),
        });
        Ok(skill)
    }

    /// Skill directories on disk, flat and registry layout, sorted. Names starting with
    /// `.` (the library's own files) or `_` (`_template`) are not skills. A directory
    /// with a SKILL.md whose name is not a slug is returned with the slug made from it
    /// when there is one ([`Slug::derive`]), else reported.
    fn find_skill_dirs(&self, report: &mut ScanReport) -> Result<Vec<Found>, LibraryError> {
        let mut budget = MAX_SCAN_ENTRIES;
        let mut found = Vec::new();
        for name in dir_names(self.root(), &mut budget)? {
            let dir = self.root().join(&name);
            if Library::has_skill_file(&dir) {
                match addressed(&name) {
                    Some((slug, named)) => found.push(Found {
                        id: SkillId::Flat(slug),
                        category: None,
                        named,
                    }),
                    None => report.problems.push(unaddressable(&dir, name.clone())),
                }
                continue;
            }
            let category = Slug::parse(&name);
            for sub in dir_names(&dir, &mut budget)? {
                let skill_dir = dir.join(&sub);
                if !Library::has_skill_file(&skill_dir) {
                    continue;
                }
                let rel = format!("{name}/{sub}");
                match (&category, addressed(&sub)) {
                    (Ok(category), Some((slug, named))) => found.push(Found {
                        id: SkillId::Registry {
                            category: category.clone(),
                            slug,
                        },
                        category: Some(name.clone()),
                        named,
                    }),
                    (Ok(_), None) => report.problems.push(unaddressable(&skill_dir, rel)),
                    (Err(_), _) => {
                        if let Err(error) = SkillId::parse(&rel) {
                            report.problems.push(ScanProblem::new(rel, &error.into()));
                        }
                    }
                }
            }
        }
        Ok(found)
    }
}

/// A skill directory found on disk.
struct Found {
    /// Where it belongs.
    id: SkillId,
    /// The category directory's name, in the registry layout.
    category: Option<String>,
    /// Its name on disk, when that is not its slug.
    named: Option<String>,
}

impl Found {
    /// Its path relative to the skills root, as it is on disk.
    fn on_disk(&self) -> String {
        match (&self.named, &self.category) {
            (None, _) => self.id.to_string(),
            (Some(name), None) => name.clone(),
            (Some(name), Some(category)) => format!("{category}/{name}"),
        }
    }
}

/// The slug of a directory named `name`, and `name` itself when that is not it.
fn addressed(name: &str) -> Option<(Slug, Option<String>)> {
    match Slug::parse(name) {
        Ok(slug) => Some((slug, None)),
        Err(_) => Slug::derive(name).map(|slug| (slug, Some(name.to_string()))),
    }
}

/// Subdirectory names of `dir` that may hold skills, sorted; each costs one unit of
/// `budget`, and listing stops when it runs out.
fn dir_names(dir: &Path, budget: &mut usize) -> Result<Vec<String>, LibraryError> {
    let entries = std::fs::read_dir(dir).map_err(LibraryError::io(dir))?;
    let mut names = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with(['.', '_']) || !entry.path().is_dir() {
            continue;
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// The problem with a skill directory whose name is not a slug: validating it with
/// that name reports the rule it breaks.
fn unaddressable(dir: &Path, rel: String) -> ScanProblem {
    let error = match load_skill_dir(dir) {
        Err(e) => e,
        // Not expected: a name that is no slug fails validation.
        Ok(_) => LibraryError::InvalidId {
            id: rel.clone(),
            reason: "not a slug".into(),
        },
    };
    ScanProblem::new(rel, &error)
}

/// Brings an entry up to date with its SKILL.md; whether anything changed. A file
/// without `name` keeps the entry's name (see [`displayed`]).
fn refresh(entry: &mut IndexEntry, id: &SkillId, skill: &ValidSkill) -> bool {
    let fm = &displayed(skill.frontmatter.clone(), entry, &skill.warnings);
    let category = category_of(id, skill);
    let unchanged = entry.sha256 == skill.sha256
        && entry.name == fm.name
        && entry.version == fm.version
        && entry.category == category;
    if unchanged {
        return false;
    }
    entry.sha256 = skill.sha256.clone();
    entry.name = fm.name.clone();
    entry.version = fm.version.clone();
    entry.category = category;
    entry.updated_at = now();
    true
}

/// The index entry of a skill found on disk.
fn manual_entry(id: &SkillId, skill: &ValidSkill) -> IndexEntry {
    entry_for(id, skill, Source::of(SourceKind::Manual))
}

/// A fresh, active, unpinned entry.
pub(super) fn entry_for(id: &SkillId, skill: &ValidSkill, source: Source) -> IndexEntry {
    let now = now();
    IndexEntry {
        id: id.to_string(),
        name: skill.frontmatter.name.clone(),
        version: skill.frontmatter.version.clone(),
        category: category_of(id, skill),
        path: id.to_string(),
        source,
        sha256: skill.sha256.clone(),
        installed_at: now.clone(),
        updated_at: now,
        active: true,
        pinned: false,
        granted: None,
    }
}

/// The registry category of the skill's directory, else its frontmatter's.
fn category_of(id: &SkillId, skill: &ValidSkill) -> Option<String> {
    id.category()
        .map(Slug::to_string)
        .or_else(|| skill.frontmatter.category.clone())
}

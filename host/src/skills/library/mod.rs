//! The skills directory: `{data_dir}/skills/` with flat `<name>/SKILL.md` and registry
//! `<category>/<slug>/SKILL.md` skills, each with optional `scripts/` and
//! `references/`, and `.index.json` (see `index.rs`).
//!
//! Every change happens under an exclusive lock on `.lock` (the daemon and a CLI
//! process may share the directory) and re-reads the index first, so no process
//! overwrites another's change. Reads take a shared lock. Removal and replacement
//! first move a skill's directory to `.trash-<ulid>-<path>` at the root; the index is
//! saved after, so a crash in between is undone by the next discovery scan
//! (`scan.rs`), which puts the directory back when the index still lists it.

//!
//! Around the [`Library`]: `index` (the `.index.json` file), `install` (staged installs
//! renamed into place), `scan` (discovery and crash recovery), `seed` (the built-ins),
//! `package` (a validated SKILL.md with its files), `catalog` and `view` (what turns
//! and listings show), `durable` (fsync and rename helpers), `error`.

pub mod catalog;
pub(crate) mod durable;
pub mod error;
pub mod index;
pub mod install;
pub mod package;
pub mod scan;
pub mod seed;
pub mod shared;
pub mod view;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use self::catalog::{CatalogEntry, InvokedSkill};
use self::durable::{read_bounded, read_head, sync_dir, unique_name};
use self::index::{Granted, INDEX_FILE, Index, IndexEntry};
use self::package::RESOURCE_DIRS;
use crate::events::{Event, EventBus, EventKind, HOST_WIDE};
use crate::installs::Shared;
use crate::skills::format::error::{SkillError, Warning};
use crate::skills::format::fields::Frontmatter;
use crate::skills::format::id::{SkillId, Slug};
use crate::skills::format::paragraph::BODY_SCAN_BYTES;
use crate::skills::format::parse::parse_head;
use crate::skills::format::validate::{Origin, ValidSkill, load_skill, validate_frontmatter};
use crate::skills::{MAX_FRONTMATTER_BYTES, MAX_SKILL_FILE_BYTES, SKILL_FILE};
use error::{LibraryError, ScanProblem};

const LOCK_FILE: &str = ".lock";
/// The template's directory under the skills root: a skill to copy, never listed.
pub const TEMPLATE_DIR: &str = "_template";
pub(crate) const TRASH_PREFIX: &str = ".trash-";
pub(crate) const STAGING_PREFIX: &str = ".staging-";
/// Files listed as an invoked skill's resources, at most.
const MAX_RESOURCES: usize = 256;
/// Directory entries looked at while listing resources, at most.
const MAX_RESOURCE_ENTRIES: usize = 4096;
const MAX_RESOURCE_DEPTH: usize = 8;

/// The installed skills. Cheap to construct; holds its root, in the daemon the event
/// bus it announces committed changes on, and the last catalog it read (shared by
/// clones).
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
    events: Option<EventBus>,
    catalog_cache: Arc<Mutex<Option<CachedCatalog>>>,
    tool_check: Option<Arc<dyn ToolCheck>>,
    /// On PostgreSQL, the team's shared installs this directory is a copy of
    /// (`shared.rs`).
    shared: Option<Arc<Shared>>,
}

/// What the tool gate makes of a skill's `allowed-tools`: the entries it cannot read
/// or does not know, each a [`Warning::ToolNotUnderstood`]. The gate sits above the
/// library, so whoever assembles both (the daemon, the CLI) hands it in; installs and
/// listings then carry the warnings.
pub trait ToolCheck: Send + Sync + std::fmt::Debug {
    fn not_understood(&self, allowed_tools: &[String]) -> Vec<Warning>;
}

/// A catalog and what it was read from: the index file's and each SKILL.md's size
/// and modification time. Every turn asks for the catalog; while nothing on disk
/// changed, it is answered without reading and parsing every SKILL.md again.
#[derive(Debug)]
struct CachedCatalog {
    stamp: Vec<Option<(std::time::SystemTime, u64)>>,
    entries: Vec<CatalogEntry>,
    problems: Vec<ScanProblem>,
}

/// A held lock on the skills directory; released when dropped (the file is closed).
/// An exclusive one of a shared library shares what changed under it first.
pub(super) struct Lock {
    sharing: Option<Library>,
    _file: File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let Some(library) = self.sharing.take() else {
            return;
        };
        if let Some(shared) = &library.shared
            && let Err(e) = shared.sync(&shared::Held(&library))
        {
            // Kept here and shared by the next sync (the follower retries).
            tracing::warn!("a skills change is not shared with the other daemons yet: {e}");
        }
    }
}

impl Library {
    /// Opens (creating if needed) the skills directory at `root`.
    pub fn open(root: PathBuf) -> Result<Library, LibraryError> {
        std::fs::create_dir_all(&root).map_err(LibraryError::io(&root))?;
        Ok(Library {
            root,
            events: None,
            catalog_cache: Arc::default(),
            tool_check: None,
            shared: None,
        })
    }

    /// Keeps this directory a copy of the team's shared installs (PostgreSQL): every
    /// change is published, and every daemon's changes are applied here.
    pub fn with_shared(mut self, shared: Arc<Shared>) -> Library {
        self.shared = Some(shared);
        self
    }

    /// Pulls what other daemons published, under the exclusive lock, and shares only
    /// what this directory owes (`Shared::catch_up`): a read or the follower changes
    /// nothing here of its own.
    pub fn catch_up(&self) -> Result<(), LibraryError> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let _file = self.lock_file(true)?;
        if let Err(e) = shared.catch_up(&shared::Held(self)) {
            tracing::warn!("skills served as this daemon has them: {e}");
        }
        Ok(())
    }

    /// Reports, at install and in listings, the `allowed-tools` entries `check` says
    /// grant nothing. Without it nothing is said of them.
    pub fn with_tool_check(mut self, check: Arc<dyn ToolCheck>) -> Library {
        self.tool_check = Some(check);
        self
    }

    /// The warnings the tool check gives `allowed_tools`.
    pub(super) fn tool_warnings(&self, allowed_tools: &[String]) -> Vec<Warning> {
        match &self.tool_check {
            Some(check) if !allowed_tools.is_empty() => check.not_understood(allowed_tools),
            _ => Vec::new(),
        }
    }

    /// Announces every committed change (`skill.installed`, `skill.removed`,
    /// `skill.activated`, `skill.deactivated`) on `events`: installs, removals and
    /// (de)activations, whoever asked for them, and what a discovery scan added or
    /// dropped. Without it (the CLI working on the directory) nothing is announced.
    pub fn with_events(mut self, events: EventBus) -> Library {
        self.events = Some(events);
        self
    }

    /// Publishes `kind` for `entry` after its change was committed (the index saved).
    pub(super) fn announce(&self, kind: EventKind, entry: &IndexEntry, extra: serde_json::Value) {
        let Some(events) = &self.events else {
            return;
        };
        let mut data = serde_json::json!({
            "slug": entry.skill_id().map(|id| id.slug().to_string()).unwrap_or_default(),
            "id": entry.id,
            "name": entry.name,
            "version": entry.version,
            "source": entry.source.kind,
        });
        if let (Some(data), serde_json::Value::Object(extra)) = (data.as_object_mut(), extra) {
            data.extend(extra);
        }
        events.publish(Event {
            kind,
            user: HOST_WIDE.to_string(),
            data,
        });
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The index: every installed skill with its state.
    pub fn list(&self) -> Result<Index, LibraryError> {
        let _lock = self.lock(false)?;
        self.load_index()
    }

    pub fn entry(&self, slug: &str) -> Result<IndexEntry, LibraryError> {
        self.list()?.take(slug)
    }

    pub fn activate(&self, slug: &str) -> Result<IndexEntry, LibraryError> {
        self.set_active(slug, true)
    }

    /// The skill stays on disk and in the index; it is left out of routing.
    pub fn deactivate(&self, slug: &str) -> Result<IndexEntry, LibraryError> {
        self.set_active(slug, false)
    }

    fn set_active(&self, slug: &str, active: bool) -> Result<IndexEntry, LibraryError> {
        let _lock = self.lock(true)?;
        let mut index = self.load_index()?;
        let entry = index
            .skills
            .get_mut(slug)
            .ok_or_else(|| LibraryError::NotFound(slug.to_string()))?;
        if entry.active == active {
            return Ok(entry.clone());
        }
        entry.active = active;
        entry.updated_at = self::index::now();
        let entry = entry.clone();
        index.save(&self.index_path())?;
        let kind = if active {
            EventKind::SkillActivated
        } else {
            EventKind::SkillDeactivated
        };
        self.announce(kind, &entry, serde_json::Value::Null);
        Ok(entry)
    }

    /// Removes the skill's directory and its index entry.
    pub fn remove(&self, slug: &str) -> Result<IndexEntry, LibraryError> {
        let _lock = self.lock(true)?;
        self.remove_locked(slug)
    }

    /// [`Library::remove`] for a caller that holds the exclusive lock.
    pub(super) fn remove_locked(&self, slug: &str) -> Result<IndexEntry, LibraryError> {
        let mut index = self.load_index()?;
        let entry = index.take(slug)?;
        let id = entry.skill_id()?;
        let dir = id.dir_in(&self.root);
        let trash = if dir.symlink_metadata().is_ok() {
            Some(self.move_to_trash(&id)?)
        } else {
            None
        };
        if let Err(e) = index.save(&self.index_path()) {
            if let Some(trash) = &trash {
                let _ = std::fs::rename(trash, &dir);
            }
            return Err(e);
        }
        if let Some(trash) = trash {
            let _ = std::fs::remove_dir_all(trash);
        }
        if let Some(category) = id.category() {
            // Only succeeds when the category has no skill left.
            let _ = std::fs::remove_dir(self.root.join(category.as_str()));
        }
        self.announce(EventKind::SkillRemoved, &entry, serde_json::Value::Null);
        Ok(entry)
    }

    /// What routing and listings see of every indexed skill, without reading a body.
    /// Skills that no longer validate are left out and reported.
    pub fn catalog(&self) -> Result<(Vec<CatalogEntry>, Vec<ScanProblem>), LibraryError> {
        let _lock = self.lock(false)?;
        let index = self.load_index()?;
        let stamp_of = |path: &Path| {
            std::fs::metadata(path)
                .and_then(|m| Ok((m.modified()?, m.len())))
                .ok()
        };
        let mut stamp = vec![stamp_of(&self.index_path())];
        for entry in index.skills.values() {
            let file = entry
                .skill_id()
                .ok()
                .and_then(|id| find_skill_file(&id.dir_in(&self.root)).ok());
            stamp.push(file.and_then(|(path, _)| stamp_of(&path)));
        }
        let mut cache = self.catalog_cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = cache.as_ref()
            && cached.stamp == stamp
        {
            return Ok((cached.entries.clone(), cached.problems.clone()));
        }
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        for (slug, entry) in index.skills {
            let head = entry.skill_id().and_then(|id| self.load_head_warned(&id));
            match head {
                Ok((_, fm, warnings, body_start)) => {
                    let fm = displayed(fm, &entry, &warnings);
                    entries.push(CatalogEntry::new(slug, &entry, fm, body_start));
                }
                Err(error) => problems.push(ScanProblem::new(entry.path, &error)),
            }
        }
        *cache = Some(CachedCatalog {
            stamp,
            entries: entries.clone(),
            problems: problems.clone(),
        });
        Ok((entries, problems))
    }

    /// Reads an active skill's body for use: the step after the catalog.
    pub fn invoke(&self, slug: &str) -> Result<InvokedSkill, LibraryError> {
        let _lock = self.lock(false)?;
        let entry = self.load_index()?.take(slug)?;
        if !entry.active {
            return Err(LibraryError::Inactive(slug.to_string()));
        }
        let id = entry.skill_id()?;
        let skill = self.load_dir(&id)?;
        let dir = id.dir_in(&self.root);
        let granted_tools = Granted::for_file(entry.granted.as_ref(), &skill.file_sha256);
        let fm = displayed(skill.frontmatter, &entry, &skill.warnings);
        Ok(InvokedSkill {
            resources: list_resources(&dir),
            id,
            name: fm.name,
            dir,
            body: skill.body,
            allowed_tools: fm.allowed_tools,
            granted_tools,
        })
    }

    /// The person grants the skill `slug` its `allowed-tools`, for its SKILL.md as it
    /// is now, whose whole-file sha256 must be `file_sha256` (the file they read): a
    /// file changed since is refused ([`LibraryError::SkillChanged`]), so nothing they
    /// did not see is granted. Answers the entry with its grant. Only the person may
    /// call this (the front doors check).
    pub fn confirm_tools(&self, slug: &str, file_sha256: &str) -> Result<IndexEntry, LibraryError> {
        let _lock = self.lock(true)?;
        let mut index = self.load_index()?;
        let entry = index
            .skills
            .get_mut(slug)
            .ok_or_else(|| LibraryError::NotFound(slug.to_string()))?;
        let skill = self.load_dir(&entry.skill_id()?)?;
        if skill.file_sha256 != file_sha256 {
            return Err(LibraryError::SkillChanged {
                slug: slug.to_string(),
                current: skill.file_sha256,
            });
        }
        entry.granted = (!skill.frontmatter.allowed_tools.is_empty()).then(|| Granted {
            tools: skill.frontmatter.allowed_tools.clone(),
            file_sha256: skill.file_sha256.clone(),
            at: self::index::now(),
        });
        entry.updated_at = self::index::now();
        let entry = entry.clone();
        index.save(&self.index_path())?;
        Ok(entry)
    }

    /// The sha256 of the skill's whole SKILL.md (what grants are bound to).
    pub(super) fn file_sha256(&self, id: &SkillId) -> Result<String, LibraryError> {
        use sha2::{Digest, Sha256};
        let (path, _) = find_skill_file(&id.dir_in(&self.root))?;
        self.check_inside(&path)?;
        match read_bounded(&path, MAX_SKILL_FILE_BYTES) {
            Ok(Ok(bytes)) => Ok(hex::encode(Sha256::digest(&bytes))),
            Ok(Err(size)) => Err(SkillError::FileTooLarge {
                size,
                limit: MAX_SKILL_FILE_BYTES,
            }
            .into()),
            Err(e) => Err(LibraryError::io(&path)(e)),
        }
    }

    pub(super) fn index_path(&self) -> PathBuf {
        self.root.join(INDEX_FILE)
    }

    pub(super) fn load_index(&self) -> Result<Index, LibraryError> {
        Index::load(&self.index_path())
    }

    /// Locks the directory: shared to read, exclusive to change. A shared library
    /// first pulls what other daemons published (a read asks whether there is any,
    /// one query); an exclusive lock shares what changed under it when dropped. A
    /// database that cannot be reached leaves the directory as it is, and says so.
    pub(super) fn lock(&self, exclusive: bool) -> Result<Lock, LibraryError> {
        if !exclusive && let Some(shared) = &self.shared {
            match shared.behind() {
                Ok(true) => self.catch_up()?,
                Ok(false) => {}
                Err(e) => tracing::warn!("skills served as this daemon has them: {e}"),
            }
        }
        let file = self.lock_file(exclusive)?;
        let sharing = match &self.shared {
            Some(shared) if exclusive => {
                if let Err(e) = shared.pull(&shared::Held(self)) {
                    tracing::warn!("skills changed as this daemon has them: {e}");
                }
                Some(self.clone())
            }
            _ => None,
        };
        Ok(Lock {
            sharing,
            _file: file,
        })
    }

    fn lock_file(&self, exclusive: bool) -> Result<File, LibraryError> {
        let path = self.root.join(LOCK_FILE);
        crate::lock::wait_for(&path, exclusive).map_err(LibraryError::io(&path))
    }

    /// Reads and validates the skill in `id`'s directory.
    pub(super) fn load_dir(&self, id: &SkillId) -> Result<ValidSkill, LibraryError> {
        let dir = id.dir_in(&self.root);
        let (path, _) = find_skill_file(&dir)?;
        self.check_inside(&path)?;
        load_skill_dir(&dir)
    }

    /// Reads and validates only the frontmatter of the skill in `id`'s directory (and,
    /// for a skill without a description, the start of its body), with the warnings
    /// the frontmatter and file name earn.
    pub(super) fn load_head_warned(
        &self,
        id: &SkillId,
    ) -> Result<(Slug, Frontmatter, Vec<Warning>, String), LibraryError> {
        let (path, lowercase) = find_skill_file(&id.dir_in(&self.root))?;
        self.check_inside(&path)?;
        let size = path.metadata().map_err(LibraryError::io(&path))?.len();
        if size > MAX_SKILL_FILE_BYTES as u64 {
            return Err(SkillError::FileTooLarge {
                size,
                limit: MAX_SKILL_FILE_BYTES,
            }
            .into());
        }
        // Room for a BOM and both delimiter lines around the largest frontmatter, and
        // for the part of the body a missing description is looked for in.
        let head = read_head(&path, MAX_FRONTMATTER_BYTES + 64 + BODY_SCAN_BYTES)
            .map_err(LibraryError::io(&path))?;
        let (fm, mut warnings, body_start) = parse_head(&head)?;
        let (slug, fm) = validate_frontmatter(fm, Origin::dir(id.slug().as_str()), &mut warnings)?;
        if lowercase {
            warnings.push(Warning::LowercaseFileName);
        }
        Ok((slug, fm, warnings, body_start))
    }

    pub(super) fn has_skill_file(dir: &Path) -> bool {
        find_skill_file(dir).is_ok()
    }

    /// Refuses a path that resolves (through symlinks) outside the skills root.
    pub(super) fn check_inside(&self, path: &Path) -> Result<(), LibraryError> {
        let root = self
            .root
            .canonicalize()
            .map_err(LibraryError::io(&self.root))?;
        let real = path.canonicalize().map_err(LibraryError::io(path))?;
        if real.starts_with(&root) {
            Ok(())
        } else {
            Err(LibraryError::OutsideRoot {
                path: path.to_path_buf(),
            })
        }
    }

    /// Moves `id`'s directory to `.trash-<ulid>-<category>+<slug>` at the root, where a
    /// crash leaves it recoverable.
    pub(super) fn move_to_trash(&self, id: &SkillId) -> Result<PathBuf, LibraryError> {
        let dir = id.dir_in(&self.root);
        let encoded = id.to_string().replace('/', "+");
        let trash = self
            .root
            .join(format!("{}-{encoded}", unique_name(TRASH_PREFIX)));
        std::fs::rename(&dir, &trash).map_err(LibraryError::io(&dir))?;
        sync_dir(&self.root).map_err(LibraryError::io(&self.root))?;
        Ok(trash)
    }
}

/// Reads and validates the skill in `dir` (anywhere, e.g. a directory given to
/// `install --from`): its SKILL.md, or skill.md when only that exists, at most
/// [`MAX_SKILL_FILE_BYTES`], with the directory's name as the skill's identity (a
/// slug derived from it when it is none), leniently.
pub fn load_skill_dir(dir: &Path) -> Result<ValidSkill, LibraryError> {
    let (path, lowercase) = find_skill_file(dir)?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| LibraryError::InvalidId {
            id: dir.display().to_string(),
            reason: "the directory name is not UTF-8 text".into(),
        })?;
    let bytes = match read_bounded(&path, MAX_SKILL_FILE_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(size)) => {
            return Err(SkillError::FileTooLarge {
                size,
                limit: MAX_SKILL_FILE_BYTES,
            }
            .into());
        }
        Err(e) => return Err(LibraryError::io(&path)(e)),
    };
    let mut skill = load_skill(&bytes, Origin::dir(name))?;
    if lowercase {
        skill.warnings.push(Warning::LowercaseFileName);
    }
    Ok(skill)
}

/// Whether the skill's name is not in its file but came from its directory.
fn name_defaulted(warnings: &[Warning]) -> bool {
    warnings
        .iter()
        .any(|w| matches!(w, Warning::FrontmatterMissing | Warning::NameMissing { .. }))
}

/// What listings and turns show: a skill whose file has no name is shown by the name
/// the index recorded when it was installed or found (the original directory name,
/// before the directory took its slug).
pub(super) fn displayed(
    mut fm: Frontmatter,
    entry: &IndexEntry,
    warnings: &[Warning],
) -> Frontmatter {
    if name_defaulted(warnings) && !entry.name.is_empty() {
        fm.name = entry.name.clone();
    }
    fm
}

/// SKILL.md in `dir`, or skill.md when only that exists (and whether it was that).
fn find_skill_file(dir: &Path) -> Result<(PathBuf, bool), SkillError> {
    for (name, lowercase) in [(SKILL_FILE, false), ("skill.md", true)] {
        let path = dir.join(name);
        if path.is_file() {
            return Ok((path, lowercase));
        }
    }
    Err(SkillError::MissingFile {
        dir: dir.display().to_string(),
    })
}

/// The skill id a trash directory came from (see [`Library::move_to_trash`]).
pub(super) fn trash_origin(name: &str) -> Option<SkillId> {
    let rest = name.strip_prefix(TRASH_PREFIX)?;
    let (_ulid, encoded) = rest.split_once('-')?;
    SkillId::parse(&encoded.replace('+', "/")).ok()
}

/// Regular files under the skill's resource directories (symlinks are not followed),
/// relative to `dir`, sorted, bounded.
pub(super) fn list_resources(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = MAX_RESOURCE_ENTRIES;
    let mut pending: Vec<(PathBuf, String, usize)> = RESOURCE_DIRS
        .iter()
        .map(|d| (dir.join(d), d.to_string(), 1))
        .collect();
    while let Some((path, rel, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            if out.len() >= MAX_RESOURCES || budget == 0 {
                break;
            }
            budget -= 1;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let child = format!("{rel}/{name}");
            if kind.is_file() {
                out.push(child);
            } else if kind.is_dir() && depth < MAX_RESOURCE_DEPTH {
                pending.push((entry.path(), child, depth + 1));
            }
        }
    }
    out.sort();
    out
}

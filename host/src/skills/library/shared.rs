//! The skills directory's side of the team's shared installs (`crate::installs`): on
//! PostgreSQL, a skill installed, removed, (de)activated or granted its tools through
//! one daemon is served by every daemon on the database.
//!
//! An item is a skill: its index entry (as JSON) and its files (`SKILL.md` and those
//! under `scripts/` and `references/`). Every exclusive lock on the directory pulls
//! first and shares when released ([`Library::lock`]); every read first asks the
//! database whether it is behind (one query) and pulls when it is, so a skill installed
//! through one daemon is listed by another as soon as the install answered. A
//! follower thread ([`follow`]) pulls as soon as another daemon publishes, so that its
//! `skill.*` events reach this daemon's clients without a read.
//!
//! What another daemon changed is applied as that daemon applied it, through the
//! same validation, staging and rename as an install, and announced on this daemon's
//! events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::index::IndexEntry;
use super::package::{SkillPackage, read_resources};
use super::{Library, find_skill_file};
use crate::events::EventKind;
use crate::installs::{Item, Kind, Local};
use crate::skills::{MAX_SKILL_FILE_BYTES, SKILL_FILE};

/// How long the follower waits for a notification at a time (and so how soon it
/// stops once its [`Following`] is dropped).
const LISTEN_WAIT: Duration = Duration::from_secs(1);
/// Waits between checks of the database without a notification (one dropped while
/// the connection was down, a share that failed).
const CHECK_EVERY_WAITS: u32 = 5;

/// The library under its held exclusive lock, as the sync sees it.
pub(super) struct Held<'a>(pub(super) &'a Library);

impl Local for Held<'_> {
    fn digests(&self) -> Result<BTreeMap<String, Option<String>>, String> {
        let index = self.0.load_index().map_err(|e| e.to_string())?;
        Ok(index
            .skills
            .iter()
            .map(|(slug, entry)| (slug.clone(), self.digest_of(entry)))
            .collect())
    }

    fn digest(&self, slug: &str) -> Result<Option<Option<String>>, String> {
        let index = self.0.load_index().map_err(|e| e.to_string())?;
        Ok(index.skills.get(slug).map(|entry| self.digest_of(entry)))
    }

    fn read(&self, slug: &str) -> Result<Item, String> {
        let entry = self
            .0
            .load_index()
            .and_then(|mut index| index.take(slug))
            .map_err(|e| e.to_string())?;
        item_of(self.0, &entry).map_err(|e| e.to_string())
    }

    fn apply(&self, slug: &str, item: Item) -> Result<(), String> {
        apply(self.0, slug, item).map_err(|e| e.to_string())
    }

    fn remove(&self, slug: &str) -> Result<(), String> {
        self.0
            .remove_locked(slug)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl Held<'_> {
    /// The digest of the skill `entry` names; `None` when it cannot be read now.
    fn digest_of(&self, entry: &IndexEntry) -> Option<String> {
        item_of(self.0, entry).ok().map(|item| item.digest())
    }
}

/// The skill `entry` names as an item: the entry and the files in its directory.
fn item_of(library: &Library, entry: &IndexEntry) -> Result<Item, super::LibraryError> {
    let dir = entry.skill_id()?.dir_in(library.root());
    let (path, _) = find_skill_file(&dir)?;
    library.check_inside(&path)?;
    let skill_md = match super::read_bounded(&path, MAX_SKILL_FILE_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(size)) => {
            return Err(crate::skills::format::error::SkillError::FileTooLarge {
                size,
                limit: MAX_SKILL_FILE_BYTES,
            }
            .into());
        }
        Err(e) => return Err(super::LibraryError::io(&path)(e)),
    };
    let mut files = vec![(SKILL_FILE.to_string(), skill_md)];
    let mut resources = read_resources(&dir)?;
    resources.sort();
    files.extend(resources);
    let meta = serde_json::to_string(entry).map_err(|e| super::LibraryError::Io {
        path: dir.clone(),
        source: std::io::Error::other(e),
    })?;
    Ok(Item { meta, files })
}

/// Installs what another daemon published as `slug`: its files validated as any
/// install's are, its entry as that daemon wrote it.
fn apply(library: &Library, slug: &str, item: Item) -> Result<(), super::LibraryError> {
    let invalid = |reason: String| super::LibraryError::InvalidId {
        id: slug.to_string(),
        reason,
    };
    let entry: IndexEntry = serde_json::from_str(&item.meta)
        .map_err(|e| invalid(format!("its shared index entry is not one: {e}")))?;
    let id = entry.skill_id()?;
    if id.slug().as_str() != slug {
        return Err(invalid(format!("its shared entry is for `{}`", id.slug())));
    }
    let mut files = item.files.into_iter();
    let skill_md = match files.next() {
        Some((name, bytes)) if name == SKILL_FILE => bytes,
        _ => {
            return Err(invalid(
                "its shared files do not start with SKILL.md".into(),
            ));
        }
    };
    let package = SkillPackage::new(Some(id.clone()), skill_md, files.collect())?;
    library.check_target(&id)?;
    let mut index = library.load_index()?;
    let previous = index.skills.get(slug).cloned();
    if let Some(old) = previous
        .as_ref()
        .and_then(|p| p.skill_id().ok())
        .filter(|old| *old != id && old.dir_in(library.root()).symlink_metadata().is_ok())
    {
        let trash = library.move_to_trash(&old)?;
        let _ = std::fs::remove_dir_all(trash);
    }
    let staging = library.stage(&package)?;
    let replaced = library.commit(staging, &id)?;
    index.skills.insert(slug.to_string(), entry.clone());
    index.save(&library.index_path())?;
    if let Some(dir) = replaced {
        let _ = std::fs::remove_dir_all(dir);
    }
    let same_files = previous
        .as_ref()
        .is_some_and(|p| p.path == entry.path && p.sha256 == entry.sha256);
    match previous {
        Some(p) if same_files && p.active != entry.active => {
            let kind = if entry.active {
                EventKind::SkillActivated
            } else {
                EventKind::SkillDeactivated
            };
            library.announce(kind, &entry, serde_json::Value::Null);
        }
        Some(_) if same_files => {}
        _ => {
            let status = if previous.is_some() {
                "updated"
            } else {
                "installed"
            };
            library.announce(
                EventKind::SkillInstalled,
                &entry,
                serde_json::json!({ "status": status, "replaced": null, "shared": true }),
            );
        }
    }
    Ok(())
}

/// Stops the follower thread when dropped (within [`LISTEN_WAIT`]).
pub struct Following(Arc<AtomicBool>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Pulls into `library` whenever another daemon publishes a skill change (and every
/// few seconds, for a notification missed while the connection was down), so that
/// its events reach this daemon's clients. `None` for a library that is not shared.
pub fn follow(library: &Library) -> Option<Following> {
    let shared = library.shared.clone()?;
    let installs = shared.installs().clone();
    let library = library.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("skills-follow".into())
        .spawn(move || {
            let mut listener = None;
            let mut quiet = 0;
            while !stopped.load(Ordering::SeqCst) {
                if listener.is_none() {
                    listener = installs
                        .listen()
                        .map_err(|e| tracing::warn!("cannot listen for shared skill changes: {e}"))
                        .ok();
                }
                let heard = match listener.as_mut() {
                    Some(l) => match l.next_within(LISTEN_WAIT) {
                        Ok(payloads) => payloads.iter().any(|p| p == Kind::Skill.as_str()),
                        Err(e) => {
                            tracing::warn!("listening for shared skill changes: {e}");
                            listener = None;
                            false
                        }
                    },
                    None => {
                        std::thread::sleep(LISTEN_WAIT);
                        false
                    }
                };
                quiet += 1;
                if stopped.load(Ordering::SeqCst) || !(heard || quiet >= CHECK_EVERY_WAITS) {
                    continue;
                }
                quiet = 0;
                match shared.behind() {
                    Ok(true) => {
                        if let Err(e) = library.catch_up() {
                            tracing::warn!("pulling shared skill changes: {e}");
                        }
                    }
                    Ok(false) => {}
                    Err(e) => tracing::debug!("cannot ask the database for skill changes: {e}"),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start following shared skill changes: {e}");
    }
    Some(Following(stop))
}

//! Installed plugin packages under `{data_dir}/plugins/<name>/`. Installing validates
//! the package completely (manifest, component, world) before anything is written, and
//! the package appears under its name by one rename: never half-installed.
//!
//! On PostgreSQL the directory is a copy of the team's shared installs
//! (`crate::installs`): an install or removal is shared when done, and listing or
//! finding a package first pulls what other daemons (or their CLIs) installed.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::builtin;
use super::error::PluginError;
use super::manifest::Manifest;
use super::plugin::Runtime;
use crate::installs::{Item, Local, Shared};

/// A package's files, in the order they are shared.
const PACKAGE_FILES: [&str; 2] = ["plugin.toml", "plugin.wasm"];
/// Taken exclusively for an install, a removal or a pull; a daemon and a CLI may share
/// the directory.
const LOCK_FILE: &str = ".lock";

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallStatus {
    Installed,
    /// A package of that name existed and its version or contents changed.
    Updated,
    /// The same package was already installed; nothing was written.
    AlreadyInstalled,
}

pub struct PluginPackages {
    dir: PathBuf,
    shared: Option<Arc<Shared>>,
}

impl PluginPackages {
    pub fn new(dir: PathBuf) -> PluginPackages {
        PluginPackages { dir, shared: None }
    }

    /// Keeps the directory a copy of the team's shared plugins (PostgreSQL).
    pub fn with_shared(mut self, shared: Arc<Shared>) -> PluginPackages {
        self.shared = Some(shared);
        self
    }

    /// Pulls what other daemons installed when the database says there is any, and
    /// shares a change this directory could not share before. A database that cannot
    /// be reached leaves the directory as it is, and says so.
    fn catch_up(&self) {
        let Some(shared) = &self.shared else { return };
        match shared.behind() {
            Ok(false) => {}
            Ok(true) => match self.lock() {
                Ok(_lock) => {
                    if let Err(e) = shared.catch_up(&Held(self)) {
                        tracing::warn!("plugins served as this daemon has them: {e}");
                    }
                }
                Err(e) => tracing::warn!("plugins served as this daemon has them: {e}"),
            },
            Err(e) => tracing::warn!("plugins served as this daemon has them: {e}"),
        }
    }

    /// Shares what an install or removal changed (under its lock); a failure is
    /// retried by the next pull.
    fn share(&self) {
        if let Some(shared) = &self.shared
            && let Err(e) = shared.sync(&Held(self))
        {
            tracing::warn!("a plugin change is not shared with the other daemons yet: {e}");
        }
    }

    fn lock(&self) -> Result<File, PluginError> {
        let io = |path: PathBuf| move |source| PluginError::Io { path, source };
        std::fs::create_dir_all(&self.dir).map_err(io(self.dir.clone()))?;
        let path = self.dir.join(LOCK_FILE);
        crate::lock::wait_for(&path, true).map_err(io(path))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The package directory of an installed plugin, if its name is valid and present.
    pub fn package_dir(&self, name: &str) -> Result<PathBuf, PluginError> {
        self.catch_up();
        crate::ids::validate_name(name)
            .map_err(|_| PluginError::UnknownPlugin(name.to_string()))?;
        let dir = self.dir.join(name);
        if dir.join("plugin.toml").is_file() {
            Ok(dir)
        } else {
            Err(PluginError::UnknownPlugin(name.to_string()))
        }
    }

    /// Names of installed packages, sorted (directories starting with `.` are
    /// in-progress installs and are skipped).
    pub fn names(&self) -> Vec<String> {
        self.catch_up();
        self.names_here()
    }

    fn names_here(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| self.installed_here(n))
            .collect();
        names.sort();
        names
    }

    fn installed_here(&self, name: &str) -> bool {
        !name.starts_with('.')
            && crate::ids::validate_name(name).is_ok()
            && self.dir.join(name).join("plugin.toml").is_file()
    }

    /// Installs the package in `source` (plugin.toml + plugin.wasm).
    pub fn install(
        &self,
        runtime: &Runtime,
        source: &Path,
    ) -> Result<(InstallStatus, Manifest), PluginError> {
        let plugin = runtime.load_dir(source)?;
        let name = plugin.manifest.name.clone();
        // An installed plugin is configured by its name (`plugins.<name>` in
        // config.yaml): sharing a built-in's name would hand it the built-in's settings
        // and secrets.
        if builtin::find(&name).is_some() {
            return Err(PluginError::InvalidManifest {
                path: source.join("plugin.toml"),
                reason: format!(
                    "name: `{name}` is the name of a built-in plugin (builtin:{name}); choose another"
                ),
            });
        }
        let _lock = self.lock()?;
        if let Some(shared) = &self.shared
            && let Err(e) = shared.pull(&Held(self))
        {
            tracing::warn!("plugins changed as this daemon has them: {e}");
        }
        let target = self.dir.join(&name);
        let status = if !target.exists() {
            InstallStatus::Installed
        } else if installed_unchanged(&target, &plugin.sha256, &plugin.manifest) {
            return Ok((InstallStatus::AlreadyInstalled, plugin.manifest));
        } else {
            InstallStatus::Updated
        };
        let files = PACKAGE_FILES
            .iter()
            .map(|file| {
                let path = source.join(file);
                std::fs::read(&path)
                    .map(|bytes| (file.to_string(), bytes))
                    .map_err(|source| PluginError::Io { path, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.place(&name, &files)?;
        self.share();
        Ok((status, plugin.manifest))
    }

    /// Writes `files` as the package `name`, replacing what is there by one rename.
    fn place(&self, name: &str, files: &[(String, Vec<u8>)]) -> Result<(), PluginError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PluginError::Io { path, source }
        };
        let target = self.dir.join(name);
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let staging = self
            .dir
            .join(format!(".install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        for (file, bytes) in files {
            std::fs::write(staging.join(file), bytes).map_err(io(&staging.join(file)))?;
        }
        let retired = self.dir.join(format!(".old-{name}-{}", std::process::id()));
        if target.exists() {
            std::fs::rename(&target, &retired).map_err(io(&target))?;
        }
        if let Err(e) = std::fs::rename(&staging, &target) {
            // Put the previous version back rather than leave no plugin at all.
            let _ = std::fs::rename(&retired, &target);
            let _ = std::fs::remove_dir_all(&staging);
            return Err(PluginError::Io {
                path: target,
                source: e,
            });
        }
        let _ = std::fs::remove_dir_all(&retired);
        Ok(())
    }

    /// Removes an installed package.
    pub fn remove(&self, name: &str) -> Result<(), PluginError> {
        let dir = self.package_dir(name)?;
        let _lock = self.lock()?;
        std::fs::remove_dir_all(&dir).map_err(|source| PluginError::Io { path: dir, source })?;
        self.share();
        Ok(())
    }

    /// The package `name` as a shared item: its two files, no metadata.
    fn item(&self, name: &str) -> Result<Item, String> {
        let files = PACKAGE_FILES
            .iter()
            .map(|file| {
                let path = self.dir.join(name).join(file);
                std::fs::read(&path)
                    .map(|bytes| (file.to_string(), bytes))
                    .map_err(|e| format!("{}: {e}", path.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Item {
            meta: String::new(),
            files,
        })
    }
}

/// The directory under its held lock, as the sync sees it.
struct Held<'a>(&'a PluginPackages);

impl Held<'_> {
    /// The digest of the installed package `name`; `None` when it cannot be read now.
    fn digest_of(&self, name: &str) -> Option<String> {
        self.0.item(name).ok().map(|item| item.digest())
    }
}

impl Local for Held<'_> {
    fn digests(&self) -> Result<BTreeMap<String, Option<String>>, String> {
        Ok(self
            .0
            .names_here()
            .into_iter()
            .map(|name| {
                let digest = self.digest_of(&name);
                (name, digest)
            })
            .collect())
    }

    fn digest(&self, name: &str) -> Result<Option<Option<String>>, String> {
        Ok(self.0.installed_here(name).then(|| self.digest_of(name)))
    }

    fn read(&self, name: &str) -> Result<Item, String> {
        self.0.item(name)
    }

    /// A package another daemon installed: its name and files checked here, its
    /// component when it is loaded (as every installed package's is).
    fn apply(&self, name: &str, item: Item) -> Result<(), String> {
        crate::ids::validate_name(name).map_err(|e| e.to_string())?;
        if builtin::find(name).is_some() {
            return Err(format!("`{name}` is the name of a built-in plugin"));
        }
        let names: Vec<&str> = item.files.iter().map(|(f, _)| f.as_str()).collect();
        if names != PACKAGE_FILES {
            return Err(format!(
                "its shared files are {names:?}, not {PACKAGE_FILES:?}"
            ));
        }
        self.0.place(name, &item.files).map_err(|e| e.to_string())
    }

    fn remove(&self, name: &str) -> Result<(), String> {
        crate::ids::validate_name(name)?;
        let dir = self.0.dir.join(name);
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))
    }
}

/// Whether the package in `dir` has this wasm hash and manifest, read without
/// compiling it again.
fn installed_unchanged(dir: &Path, sha256: &str, manifest: &Manifest) -> bool {
    let same_wasm = std::fs::read(dir.join("plugin.wasm"))
        .is_ok_and(|wasm| hex::encode(Sha256::digest(&wasm)) == sha256);
    same_wasm && Manifest::load(dir).is_ok_and(|existing| existing == *manifest)
}

//! Installed plugin packages under `{data_dir}/plugins/<name>/`. Installing validates
//! the package completely (manifest, component, world) before anything is written, and
//! the package appears under its name by one rename: never half-installed.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::builtin;
use super::error::PluginError;
use super::manifest::Manifest;
use super::plugin::Runtime;

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
}

impl PluginPackages {
    pub fn new(dir: PathBuf) -> PluginPackages {
        PluginPackages { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The package directory of an installed plugin, if its name is valid and present.
    pub fn package_dir(&self, name: &str) -> Result<PathBuf, PluginError> {
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
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join("plugin.toml").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.') && crate::ids::validate_name(n).is_ok())
            .collect();
        names.sort();
        names
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
        let target = self.dir.join(&name);
        let status = if !target.exists() {
            InstallStatus::Installed
        } else if installed_unchanged(&target, &plugin.sha256, &plugin.manifest) {
            return Ok((InstallStatus::AlreadyInstalled, plugin.manifest));
        } else {
            InstallStatus::Updated
        };
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PluginError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let staging = self
            .dir
            .join(format!(".install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        for file in ["plugin.toml", "plugin.wasm"] {
            std::fs::copy(source.join(file), staging.join(file)).map_err(io(&source.join(file)))?;
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
        Ok((status, plugin.manifest))
    }

    /// Removes an installed package.
    pub fn remove(&self, name: &str) -> Result<(), PluginError> {
        let dir = self.package_dir(name)?;
        std::fs::remove_dir_all(&dir).map_err(|source| PluginError::Io { path: dir, source })
    }
}

/// Whether the package in `dir` has this wasm hash and manifest, read without
/// compiling it again.
fn installed_unchanged(dir: &Path, sha256: &str, manifest: &Manifest) -> bool {
    let same_wasm = std::fs::read(dir.join("plugin.wasm"))
        .is_ok_and(|wasm| hex::encode(Sha256::digest(&wasm)) == sha256);
    same_wasm && Manifest::load(dir).is_ok_and(|existing| existing == *manifest)
}

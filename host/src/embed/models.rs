//! Installed sentence-encoder models under `{data_dir}/models/<name>/`, one directory
//! each, holding the files of [`MODEL_FILES`]. A model is installed only after it
//! loaded ([`Encoder::load`]: every file checked, one text run) from a staging
//! directory beside its place, which then becomes the model by one rename: never half
//! a model under a name.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::encoder::{CONFIG, Encoder, EncoderError, MODEL_FILES};

/// `embed.model: static` in config.yaml: the static table, whatever is installed; so
/// no model may be called that.
pub const STATIC: &str = "static";

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model name {0}")]
    BadName(String),
    #[error("no model named {0:?} is installed (see `engram models list`)")]
    NotInstalled(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Encoder(#[from] EncoderError),
    #[error("{file}: {reason}")]
    Download { file: String, reason: String },
    #[error("{file}: sha256 {got} is not the pinned {expected}: refused, nothing was installed")]
    Hash {
        file: String,
        expected: String,
        got: String,
    },
    #[error("{file}: {got} bytes where {expected} were pinned: refused, nothing was installed")]
    Size {
        file: String,
        expected: u64,
        got: u64,
    },
    #[error("no known model is called {0:?}; `engram models pull` knows: {1}")]
    Unknown(String, String),
}

impl ModelError {
    /// A stable code for `--json`.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::BadName(_) => "bad-name",
            ModelError::NotInstalled(_) => "not-installed",
            ModelError::Io { .. } => "io",
            ModelError::Encoder(e) => e.code(),
            ModelError::Download { .. } => "download-failed",
            ModelError::Hash { .. } => "hash-mismatch",
            ModelError::Size { .. } => "size-mismatch",
            ModelError::Unknown(..) => "unknown-model",
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An installed model as `engram models list` shows it. Read from its files without
/// loading the weights.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledModel {
    pub name: String,
    pub path: PathBuf,
    /// All its files together.
    pub bytes: u64,
    /// The vector length and layer count `config.json` gives (`null` when unreadable).
    pub dims: Option<usize>,
    pub layers: Option<usize>,
}

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstallStatus {
    Installed,
    /// A model of that name was there and was replaced.
    Replaced,
}

pub struct Models {
    dir: PathBuf,
}

impl Models {
    pub fn new(dir: PathBuf) -> Models {
        Models { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The names of the installed models, sorted (directories starting with `.` are
    /// installs under way, or left by a crash, and are skipped).
    pub fn names(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(CONFIG).is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| valid_name(n).is_ok())
            .collect();
        names.sort();
        names
    }

    /// The installed models, described.
    pub fn list(&self) -> Vec<InstalledModel> {
        self.names()
            .into_iter()
            .map(|name| {
                let path = self.dir.join(&name);
                let config: Option<serde_json::Value> = std::fs::read(path.join(CONFIG))
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok());
                let size = |key: &str| {
                    config
                        .as_ref()
                        .and_then(|c| c.get(key)?.as_u64())
                        .map(|n| n as usize)
                };
                let bytes = MODEL_FILES
                    .iter()
                    .filter_map(|f| std::fs::metadata(path.join(f)).ok())
                    .map(|m| m.len())
                    .sum();
                InstalledModel {
                    dims: size("hidden_size"),
                    layers: size("num_hidden_layers"),
                    name,
                    path,
                    bytes,
                }
            })
            .collect()
    }

    /// The directory of an installed model.
    pub fn model_dir(&self, name: &str) -> Result<PathBuf, ModelError> {
        valid_name(name).map_err(|_| ModelError::NotInstalled(name.to_string()))?;
        let dir = self.dir.join(name);
        if dir.join(CONFIG).is_file() {
            Ok(dir)
        } else {
            Err(ModelError::NotInstalled(name.to_string()))
        }
    }

    /// Checks the model in `source` (it must load) and installs a copy of its files
    /// as `name`.
    pub fn add(&self, source: &Path, name: &str) -> Result<InstallStatus, ModelError> {
        valid_name(name)?;
        Encoder::load(source)?;
        let staging = self.staging(name)?;
        let copied = MODEL_FILES.iter().try_for_each(|file| {
            let from = source.join(file);
            if !from.is_file() {
                return Ok(());
            }
            let to = staging.join(file);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::copy(&from, &to).map(drop).map_err(io(&from))
        });
        match copied {
            Ok(()) => self.install(&staging, name),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                Err(e)
            }
        }
    }

    /// Removes an installed model.
    pub fn remove(&self, name: &str) -> Result<(), ModelError> {
        let dir = self.model_dir(name)?;
        std::fs::remove_dir_all(&dir).map_err(io(&dir))
    }

    /// A new, empty staging directory for an install of `name`, inside the models
    /// directory (so that the install is a rename on one file system).
    pub(super) fn staging(&self, name: &str) -> Result<PathBuf, ModelError> {
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let staging = self
            .dir
            .join(format!(".install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        Ok(staging)
    }

    /// Loads the model in `staging` and, if it loads, makes it the model `name` by one
    /// rename (a model already there is replaced). `staging` is gone afterwards,
    /// installed or not.
    pub(super) fn install(&self, staging: &Path, name: &str) -> Result<InstallStatus, ModelError> {
        if let Err(e) = Encoder::load(staging) {
            let _ = std::fs::remove_dir_all(staging);
            return Err(e.into());
        }
        let target = self.dir.join(name);
        let retired = self.dir.join(format!(".old-{name}-{}", std::process::id()));
        let status = if target.exists() {
            std::fs::rename(&target, &retired).map_err(io(&target))?;
            InstallStatus::Replaced
        } else {
            InstallStatus::Installed
        };
        if let Err(e) = std::fs::rename(staging, &target) {
            // Put the previous model back rather than leave none.
            let _ = std::fs::rename(&retired, &target);
            let _ = std::fs::remove_dir_all(staging);
            return Err(io(&target)(e));
        }
        let _ = std::fs::remove_dir_all(&retired);
        Ok(status)
    }
}

/// A model's name becomes a directory name: the rule of plugin names (1-64 lowercase
/// letters, digits and single hyphens), and not [`STATIC`].
pub fn valid_name(name: &str) -> Result<(), ModelError> {
    crate::ids::validate_name(name).map_err(ModelError::BadName)?;
    if name == STATIC {
        return Err(ModelError::BadName(format!(
            "`{STATIC}` names the static table (embed.model: static), not a model"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::rng::Rng;
    use crate::embed::{entries, tiny_bert};

    #[test]
    fn add_checks_copies_lists_and_removes() {
        let source = tempfile::tempdir().unwrap();
        let mut rng = Rng(7);
        tiny_bert::write(source.path(), &mut || rng.next());
        std::fs::write(source.path().join("README.md"), "not copied").unwrap();
        let data = tempfile::tempdir().unwrap();
        let models = Models::new(data.path().join("models"));
        assert!(models.list().is_empty());

        assert_eq!(
            models.add(source.path(), "tiny").unwrap(),
            InstallStatus::Installed
        );
        assert_eq!(
            models.add(source.path(), "tiny").unwrap(),
            InstallStatus::Replaced
        );
        assert_eq!(entries(models.dir()), ["tiny"]);
        let installed = models.model_dir("tiny").unwrap();
        for file in MODEL_FILES {
            assert_eq!(
                std::fs::read(installed.join(file)).unwrap(),
                std::fs::read(source.path().join(file)).unwrap(),
                "{file}"
            );
        }
        assert!(!installed.join("README.md").exists());
        Encoder::load(&installed).expect("the copy loads");
        let listed = models.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].name.as_str(), listed[0].dims, listed[0].layers),
            ("tiny", Some(tiny_bert::HIDDEN), Some(tiny_bert::LAYERS))
        );
        let source_bytes: u64 = MODEL_FILES
            .iter()
            .map(|f| std::fs::metadata(source.path().join(f)).unwrap().len())
            .sum();
        assert_eq!(listed[0].bytes, source_bytes);

        models.remove("tiny").unwrap();
        assert!(entries(models.dir()).is_empty());
        assert_eq!(models.remove("tiny").unwrap_err().code(), "not-installed");
    }

    #[test]
    fn a_model_that_does_not_load_or_a_bad_name_installs_nothing() {
        let source = tempfile::tempdir().unwrap();
        let mut rng = Rng(8);
        tiny_bert::write(source.path(), &mut || rng.next());
        let data = tempfile::tempdir().unwrap();
        let models = Models::new(data.path().join("models"));
        for bad in ["Tiny", "static", "../x", "", "a/b"] {
            assert_eq!(
                models.add(source.path(), bad).unwrap_err().code(),
                "bad-name",
                "{bad}"
            );
        }
        let weights = source.path().join(crate::embed::encoder::WEIGHTS);
        let bytes = std::fs::read(&weights).unwrap();
        std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
        let error = models.add(source.path(), "tiny").unwrap_err();
        assert_eq!(error.code(), "model-invalid");
        assert!(error.to_string().contains("model.safetensors"), "{error}");
        assert!(
            entries(models.dir()).is_empty(),
            "{:?}",
            entries(models.dir())
        );
        // Leftovers of a crashed install are not models.
        std::fs::create_dir_all(models.dir().join(".install-tiny-1")).unwrap();
        std::fs::write(models.dir().join(".install-tiny-1").join(CONFIG), "{}").unwrap();
        assert!(models.names().is_empty());
    }
}

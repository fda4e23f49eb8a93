//! Where Engram keeps its files. Everything lives under one data directory:
//! `--data-dir`, else `ENGRAM_DATA_DIR`, else `$XDG_DATA_HOME/engram`, else
//! `~/.local/share/engram`.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    pub fn new(root: PathBuf) -> DataDir {
        DataDir { root }
    }

    /// The default location when neither the flag nor ENGRAM_DATA_DIR is given.
    pub fn default_root() -> Option<PathBuf> {
        if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(xdg).join("engram"));
        }
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".local/share/engram"))
    }

    /// Creates the directory tree Engram writes into (private to the user).
    pub fn create(&self) -> std::io::Result<()> {
        for dir in [self.root.clone(), self.plugins_dir(), self.cache_dir()] {
            std::fs::create_dir_all(&dir)?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    pub fn plugin_kv_file(&self) -> PathBuf {
        self.plugins_dir().join("kv.sqlite3")
    }

    /// Installed skills, `.index.json` and `_template` (see `skills/library.rs`).
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// The schedules database (see `schedule/`).
    pub fn schedules_file(&self) -> PathBuf {
        self.root.join("schedule").join("schedules.db")
    }

    /// What imports brought, by key (see `memory/import/ledger.rs`).
    pub fn imports_file(&self) -> PathBuf {
        self.root.join("memory").join("imports.db")
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// What was typed into `engram chat` (its line editor's history; private: 0600).
    pub fn chat_history_file(&self) -> PathBuf {
        self.root.join("chat").join("history.txt")
    }

    pub fn component_cache_dir(&self) -> PathBuf {
        self.cache_dir().join("components")
    }
}

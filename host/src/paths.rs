//! Where Engram keeps its files. Everything lives under one data directory:
//! `--data-dir`, else `ENGRAM_DATA_DIR`, else `$XDG_DATA_HOME/engram`, else
//! `~/.local/share/engram`.

use std::path::{Path, PathBuf};

/// Entries [`DataDir::tighten_modes`] looks at, at most.
const MAX_CHECKED: usize = 100_000;
/// Levels below the data directory it goes down, at most (a registry skill's files
/// are at `skills/<category>/<slug>/references/...`).
const MAX_DEPTH: usize = 8;

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

    /// Creates the directory tree Engram writes into (private to the user), and makes
    /// what this process creates from now on private too: the umask becomes 077, so a
    /// database, a log or a cache written later is 0600 (0700 for a directory)
    /// whatever the shell's umask. Only the processes that run the services call this
    /// (`engram serve`, `chat`, `mcp --embedded`), and they write nowhere else.
    pub fn create(&self) -> std::io::Result<()> {
        #[cfg(unix)]
        // SAFETY: umask only swaps the process's file-creation mask.
        unsafe {
            libc::umask(0o077);
        }
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

    /// Takes group and other permissions off every file and directory under the data
    /// directory that has them (an older release, a copy, a hand-made file: SQLite's
    /// and a shell's defaults are 0644), and answers what it changed. Symlinks are not
    /// followed. The walk is bounded ([`MAX_CHECKED`] entries, [`MAX_DEPTH`] levels).
    pub fn tighten_modes(&self) -> Vec<PathBuf> {
        let mut changed = Vec::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mut budget = MAX_CHECKED;
            let mut pending = vec![(self.root.clone(), 0)];
            while let Some((dir, depth)) = pending.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.filter_map(Result::ok) {
                    if budget == 0 {
                        return changed;
                    }
                    budget -= 1;
                    let path = entry.path();
                    let Ok(meta) = path.symlink_metadata() else {
                        continue;
                    };
                    if meta.file_type().is_symlink() {
                        continue;
                    }
                    let mode = meta.permissions().mode();
                    if mode & 0o077 != 0
                        && std::fs::set_permissions(
                            &path,
                            std::fs::Permissions::from_mode(mode & 0o700),
                        )
                        .is_ok()
                    {
                        changed.push(path.clone());
                    }
                    if meta.is_dir() && depth < MAX_DEPTH {
                        pending.push((path, depth + 1));
                    }
                }
            }
        }
        changed
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

    /// Installed sentence-encoder models, one directory each (see `embed/models.rs`).
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
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

    /// The skills' vectors from an installed encoder (`routing/skill_vectors.rs`).
    pub fn skill_vectors_dir(&self) -> PathBuf {
        self.cache_dir().join("skill-vectors")
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn modes_readable_by_others_are_tightened_and_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::new(dir.path().join("data"));
        data.create().expect("create");
        let db = data.root().join("gate").join("audit.db");
        std::fs::create_dir_all(db.parent().expect("parent")).expect("dir");
        std::fs::write(&db, b"x").expect("write");
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        std::fs::set_permissions(
            db.parent().expect("parent"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        let private = data.root().join("auth-token");
        std::fs::write(&private, b"x").expect("write");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");

        let mut changed = data.tighten_modes();
        changed.sort();
        assert_eq!(
            changed,
            [db.parent().expect("parent").to_path_buf(), db.clone()]
        );
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(db.parent().expect("parent")), 0o700);
        assert_eq!(mode(&private), 0o600);
        assert!(data.tighten_modes().is_empty());
    }
}

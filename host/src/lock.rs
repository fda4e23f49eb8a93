//! One Engram process owns a data directory at a time: `engram serve` (and any other
//! command that runs the services, such as an embedded MCP server) holds an exclusive
//! `flock` on `{data_dir}/daemon.lock` for as long as it runs. The kernel drops the lock
//! when the process dies, however it dies, so a daemon killed with SIGKILL leaves no
//! stale lock behind, only a file whose content no longer counts.
//!
//! The holder writes who it is into the file ([`Holder`]: pid, command, URL once bound),
//! so that a second start can name it, and so that a client can check that the daemon
//! named in `daemon.json` really is the one holding the directory ([`state`]).
//! Commands that work on the data directory directly (`engram skills`, `engram
//! plugins`) take no part in this lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The lock file, relative to the data directory.
pub const LOCK_FILE: &str = "daemon.lock";

/// The holder's record is written as one block of this many bytes (JSON padded with
/// spaces) at offset 0, never truncated first, so a reader never sees an empty file
/// between a truncate and a write.
const RECORD_BYTES: usize = 512;

/// A probe ([`state`]) holds a shared lock for the time of one read; a start that
/// meets it retries for this long before concluding the directory is taken.
const ACQUIRE_RETRY: Duration = Duration::from_millis(200);

/// Who holds a data directory, as the holder wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// The command that holds it: `serve`, `mcp --embedded`.
    pub command: String,
    /// Where it listens, once it does (`http://127.0.0.1:7878`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`engram {}` (pid {}", self.command, self.pid)?;
        match &self.url {
            Some(url) => write!(f, ", {url})"),
            None => write!(f, ", not listening yet)"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the data directory {} is in use by {}; stop it first, or pass another --data-dir",
        .data_dir.display(),
        .holder.as_ref().map_or_else(|| "another engram process (it has not said which yet)".to_string(), Holder::to_string)
    )]
    Held {
        data_dir: PathBuf,
        /// `None` when the holder has not written its record yet (it is starting).
        holder: Option<Holder>,
    },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The exclusive lock on a data directory, held until this is dropped or the process
/// ends.
#[derive(Debug)]
pub struct DataDirLock {
    file: File,
    path: PathBuf,
    holder: Holder,
}

/// Opens (creating it) the lock file at `path`, which, like everything in the data
/// directory, only its owner may read.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Waits for the lock on the file at `path` (created if needed): shared to read,
/// exclusive to change; released when the file is dropped. For the directories a
/// daemon and a CLI process may both change (skills, plugins).
pub fn wait_for(path: &Path, exclusive: bool) -> std::io::Result<File> {
    let file = open_lock_file(path)?;
    if exclusive {
        file.lock()?;
    } else {
        file.lock_shared()?;
    }
    Ok(file)
}

impl DataDirLock {
    /// Takes the data directory for `command` (creating the directory if needed), or
    /// fails with [`LockError::Held`] naming the process that has it. Nothing else in
    /// the directory is read or written.
    pub fn acquire(data_dir: &Path, command: &str) -> Result<DataDirLock, LockError> {
        let path = data_dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(io)?;
        let file = open_lock_file(&path).map_err(io)?;
        let deadline = std::time::Instant::now() + ACQUIRE_RETRY;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        data_dir: data_dir.to_path_buf(),
                        holder: read_record(&file),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        let mut lock = DataDirLock {
            file,
            path,
            holder: Holder {
                pid: std::process::id(),
                command: command.to_string(),
                url: None,
            },
        };
        lock.write_record()?;
        Ok(lock)
    }

    /// Records where the holder listens, for the next start's error and for clients.
    pub fn set_url(&mut self, url: &str) -> Result<(), LockError> {
        self.holder.url = Some(url.to_string());
        self.write_record()
    }

    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    fn write_record(&mut self) -> Result<(), LockError> {
        let io = |source| LockError::Io {
            path: self.path.clone(),
            source,
        };
        let mut block = serde_json::to_vec(&self.holder).map_err(|e| io(e.into()))?;
        if block.len() > RECORD_BYTES {
            return Err(io(std::io::Error::other(format!(
                "the holder's record is over {RECORD_BYTES} bytes"
            ))));
        }
        block.resize(RECORD_BYTES, b' ');
        (&self.file).seek(SeekFrom::Start(0)).map_err(io)?;
        (&self.file).write_all(&block).map_err(io)?;
        // A record left longer by an older writer would not parse.
        self.file.set_len(RECORD_BYTES as u64).map_err(io)
    }
}

/// Whether a data directory's lock is held, and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    /// Nobody holds it: no lock file, or one left by a process that has died.
    Free,
    /// Held; `None` while the holder has not written its record yet (it is starting).
    Held(Option<Holder>),
}

/// Who holds `data_dir` right now. The answer is the kernel's (the file's content
/// counts only while its lock is held), so a client can trust the pid and URL it
/// reads here more than a `daemon.json` that anyone could have left behind.
pub fn state(data_dir: &Path) -> Result<LockState, LockError> {
    let path = data_dir.join(LOCK_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockState::Free),
        Err(source) => return Err(LockError::Io { path, source }),
    };
    match file.try_lock_shared() {
        // Released when `file` is dropped, at once.
        Ok(()) => Ok(LockState::Free),
        Err(TryLockError::WouldBlock) => Ok(LockState::Held(read_record(&file))),
        Err(TryLockError::Error(source)) => Err(LockError::Io { path, source }),
    }
}

/// The holder's record, if it has written a complete one.
fn read_record(mut file: &File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(RECORD_BYTES as u64 * 2)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(text.trim_end()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_acquire_fails_naming_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut first = DataDirLock::acquire(dir.path(), "serve").expect("first");
        first.set_url("http://127.0.0.1:7878").expect("url");
        let holder = Holder {
            pid: std::process::id(),
            command: "serve".into(),
            url: Some("http://127.0.0.1:7878".into()),
        };
        assert_eq!(first.holder(), &holder);
        // flock conflicts between open file descriptions, in one process too.
        match DataDirLock::acquire(dir.path(), "mcp --embedded") {
            Err(LockError::Held {
                holder: Some(found),
                data_dir,
            }) => {
                assert_eq!(found, holder);
                assert_eq!(data_dir, dir.path());
            }
            other => panic!("expected Held, got {other:?}"),
        }
        let message = DataDirLock::acquire(dir.path(), "serve")
            .expect_err("held")
            .to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id()))
                && message.contains("http://127.0.0.1:7878"),
            "{message}"
        );
        assert_eq!(
            state(dir.path()).expect("state"),
            LockState::Held(Some(holder))
        );
        drop(first);
        assert_eq!(state(dir.path()).expect("state"), LockState::Free);
        DataDirLock::acquire(dir.path(), "serve").expect("free again");
    }

    #[test]
    fn a_record_left_behind_does_not_hold_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        // What a daemon killed with SIGKILL leaves: its record, no lock.
        std::fs::write(
            dir.path().join(LOCK_FILE),
            r#"{"pid":999999,"command":"serve","url":"http://127.0.0.1:1"}"#,
        )
        .expect("write");
        assert_eq!(state(dir.path()).expect("state"), LockState::Free);
        let lock = DataDirLock::acquire(dir.path(), "serve").expect("acquire");
        assert_eq!(lock.holder().pid, std::process::id());
        let LockState::Held(Some(found)) = state(dir.path()).expect("state") else {
            panic!("not held");
        };
        assert_eq!(found.pid, std::process::id());
        assert_eq!(found.url, None, "the old URL is gone");
    }

    #[test]
    fn no_lock_file_is_free_and_acquire_creates_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("a/b");
        assert_eq!(state(&data).expect("state"), LockState::Free);
        let _lock = DataDirLock::acquire(&data, "serve").expect("acquire");
        assert!(data.join(LOCK_FILE).is_file());
    }
}

//! A consistent copy of the data directory while the daemon runs: a tar.gz of every
//! file under it, each SQLite database copied by `VACUUM INTO` (one read transaction:
//! the database as of one commit, whatever is written meanwhile, without its WAL),
//! everything else as it is. Left out: what the daemon rebuilds or owns only while it
//! runs (`daemon.lock`, `daemon.json`, `cache/`) and SQLite's side files (`-wal`,
//! `-shm`, `-journal`, folded into the copies). Restoring is unpacking it into an
//! empty data directory with no daemon running (CHANGELOG.md).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What a backup holds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BackupSummary {
    pub files: usize,
    pub databases: usize,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("copying the database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// A full disk is 507; anything else the host's own failure.
impl crate::described::Described for BackupError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        match self {
            BackupError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                Description::disk_full("backup")
            }
            BackupError::Io { .. } | BackupError::Sqlite { .. } => Description::internal("backup"),
        }
    }
}

/// Top-level entries never copied.
const SKIPPED: &[&str] = &["daemon.lock", "daemon.json", "cache"];
/// SQLite's side files, folded into their database's copy.
const SIDE_FILES: &[&str] = &["-wal", "-shm", "-journal"];

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the backup of `root` to `out` as tar.gz; `scratch` is a directory on the
/// same machine for the databases' copies (emptied after).
pub fn write(root: &Path, scratch: &Path, out: impl Write) -> Result<BackupSummary, BackupError> {
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort();
    let gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut summary = BackupSummary::default();
    for (n, relative) in files.iter().enumerate() {
        let path = root.join(relative);
        let (source, is_db) = if is_sqlite(&path)? {
            let copy = scratch.join(format!("db-{n}"));
            vacuum_into(&path, &copy)?;
            (copy, true)
        } else {
            (path.clone(), false)
        };
        let mut file = std::fs::File::open(&source).map_err(io(&source))?;
        let meta = file.metadata().map_err(io(&source))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(meta.len());
        header.set_mode(mode_of(&path));
        header.set_mtime(0);
        tar.append_data(&mut header, relative, &mut file)
            .map_err(io(&path))?;
        if is_db {
            drop(file);
            let _ = std::fs::remove_file(&source);
            summary.databases += 1;
        }
        summary.files += 1;
        summary.bytes += meta.len();
    }
    let gz = tar.into_inner().map_err(io(root))?;
    gz.finish().map_err(io(root))?.flush().map_err(io(root))?;
    Ok(summary)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), BackupError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let name = entry.file_name().to_string_lossy().to_string();
        if dir == root && SKIPPED.contains(&name.as_str()) {
            continue;
        }
        if SIDE_FILES.iter().any(|s| name.ends_with(s)) {
            continue;
        }
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            out.push(relative);
        }
    }
    Ok(())
}

fn is_sqlite(path: &Path) -> Result<bool, BackupError> {
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    match file.read_exact(&mut head) {
        Ok(()) => Ok(&head == b"SQLite format 3\0"),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(io(path)(e)),
    }
}

/// The database as of one read transaction, written whole to `copy`.
fn vacuum_into(path: &Path, copy: &Path) -> Result<(), BackupError> {
    let sqlite = |source| BackupError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sqlite)?;
    conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
        .map_err(sqlite)?;
    Ok(())
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777)
}

#[cfg(not(unix))]
fn mode_of(_path: &Path) -> u32 {
    0o600
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database written to while it is copied (its WAL holding the newest rows)
    /// comes out whole and readable; lock, daemon file, cache and side files stay out.
    #[test]
    fn a_backup_holds_every_file_and_whole_databases() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("data");
        std::fs::create_dir_all(root.join("memory")).expect("dirs");
        std::fs::create_dir_all(root.join("cache/components")).expect("cache");
        std::fs::write(root.join("config.yaml"), "mcp:\n  user: me\n").expect("config");
        std::fs::write(root.join("daemon.lock"), "pid").expect("lock");
        std::fs::write(root.join("cache/components/x"), "big").expect("cache file");
        let db = root.join("memory/test.db");
        let conn = crate::sqlite::open_wal(&db, "FULL").expect("db");
        conn.execute_batch("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept');")
            .expect("rows");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).expect("scratch");
        let mut out = Vec::new();
        let summary = write(&root, &scratch, &mut out).expect("backup");
        assert_eq!((summary.files, summary.databases), (2, 1));
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&out[..]));
        let restored = dir.path().join("restored");
        archive.unpack(&restored).expect("unpack");
        let names: Vec<_> = walk(&restored);
        assert_eq!(names, ["config.yaml", "memory/test.db"]);
        let copy = rusqlite::Connection::open(restored.join("memory/test.db")).expect("open");
        let value: String = copy
            .query_row("SELECT v FROM t", [], |r| r.get(0))
            .expect("row");
        assert_eq!(value, "kept");
        assert_eq!(std::fs::read_dir(&scratch).expect("scratch").count(), 0);
    }

    fn walk(root: &Path) -> Vec<String> {
        let mut files = Vec::new();
        collect(root, root, &mut files).expect("walk");
        let mut names: Vec<String> = files
            .iter()
            .map(|p| p.to_string_lossy().to_string())
            .collect();
        names.sort();
        names
    }
}

//! File-system steps that survive a crash: files are written in full and fsynced
//! before they get their final name by rename, and the directory holding a rename is
//! fsynced after it. Reads of files from outside are bounded.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// A name no other writer uses: `prefix` + a ULID.
pub(crate) fn unique_name(prefix: &str) -> String {
    format!("{prefix}{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// Creates `path` (which must not exist) with `bytes`, and fsyncs it.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes a rename or creation in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Replaces `path` with `bytes` atomically: readers see the old file or the new one,
/// never a mix, even if the process dies half-way.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(unique_name(&format!(".{file_name}.tmp-")));
    let result = write_new(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result?;
    sync_dir(dir)
}

/// Reads `path` if it has at most `limit` bytes; `Ok(Err(size))` if it is larger.
pub(crate) fn read_bounded(path: &Path, limit: usize) -> io::Result<Result<Vec<u8>, u64>> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit as u64 {
        return Ok(Err(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // The file may grow between the size check and the read.
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// The first `limit` bytes of `path` (fewer if it is shorter).
pub(crate) fn read_head(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(limit as u64)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_replace_file_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        replace_file(&path, b"one").unwrap();
        replace_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(read_bounded(&path, 3).unwrap(), Ok(b"two".to_vec()));
        assert_eq!(read_bounded(&path, 2).unwrap(), Err(3));
        assert_eq!(read_head(&path, 2).unwrap(), b"tw");
    }
}

//! Reading a registry install tarball (`<id>/SKILL.md`, `<id>/manifest.json`, and
//! optionally `<id>/scripts/...`, `<id>/references/...`) in memory, treating it as
//! hostile: nothing is ever extracted to disk from here, and the whole archive is
//! refused when any entry is a link or a device, has an absolute path, a `..`, a
//! backslash, a hidden character, or lies outside `<id>/`; when an entry declares
//! more bytes than its limit (checked on the header, before reading); when there are
//! too many entries; or when it decompresses to more than [`MAX_UNPACKED_BYTES`]
//! (a gzip bomb stops at the limit).

use std::io::Read;

use crate::skills::format::id::SkillId;
use crate::skills::format::text::is_hidden;
use crate::skills::library::package::RESOURCE_DIRS;
use crate::skills::{MAX_SKILL_FILE_BYTES, SKILL_FILE};

/// Compressed tarballs larger than this are not downloaded.
pub const MAX_TARBALL_BYTES: usize = 8 * 1024 * 1024;
/// Decompressed, headers included.
pub const MAX_UNPACKED_BYTES: u64 = 24 * 1024 * 1024;
/// Entries (files and directories) at most.
pub const MAX_ENTRIES: usize = 512;
const MAX_MANIFEST_BYTES: u64 = 64 * 1024;
/// One resource file at most (the package as a whole has its own limit).
const MAX_RESOURCE_BYTES: u64 = 8 * 1024 * 1024;

/// What an install tarball holds, read and bounded, not yet validated as a skill.
#[derive(Debug, Clone, Default)]
pub struct Unpacked {
    pub skill_md: Vec<u8>,
    /// `manifest.json`, when present (informational).
    pub manifest: Option<Vec<u8>>,
    /// Files under `scripts/` and `references/`, relative to the skill directory.
    pub files: Vec<(String, Vec<u8>)>,
    /// Other entries, which are not installed.
    pub ignored: Vec<String>,
}

/// Why a tarball was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArchiveError {
    #[error("unsafe archive entry {entry:?}: {reason}")]
    Unsafe { entry: String, reason: String },
    #[error("the archive is too large: {0}")]
    TooLarge(String),
    #[error("the archive is not a valid tar.gz: {0}")]
    Invalid(String),
    #[error("the archive has no {0}")]
    MissingSkill(String),
}

impl ArchiveError {
    pub fn code(&self) -> &'static str {
        match self {
            ArchiveError::Unsafe { .. } => "archive-unsafe",
            ArchiveError::TooLarge(_) => "archive-too-large",
            ArchiveError::Invalid(_) => "archive-invalid",
            ArchiveError::MissingSkill(_) => "archive-missing-skill",
        }
    }
}

/// Reads the install tarball of `id` (see the module documentation).
pub fn unpack(gz: &[u8], id: &SkillId) -> Result<Unpacked, ArchiveError> {
    if gz.len() > MAX_TARBALL_BYTES {
        return Err(ArchiveError::TooLarge(format!(
            "{} bytes compressed; the limit is {MAX_TARBALL_BYTES}",
            gz.len()
        )));
    }
    let decoder = flate2::read::GzDecoder::new(gz);
    let limited = Limited {
        inner: decoder,
        left: MAX_UNPACKED_BYTES,
    };
    let mut archive = tar::Archive::new(limited);
    let prefix = format!("{id}/");
    let mut out = Unpacked::default();
    let mut seen_skill = false;
    let entries = archive.entries().map_err(invalid)?;
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(ArchiveError::TooLarge(format!(
                "more than {MAX_ENTRIES} entries"
            )));
        }
        let mut entry = entry.map_err(invalid)?;
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let unsafe_entry = |reason: &str| ArchiveError::Unsafe {
            entry: name.escape_debug().to_string(),
            reason: reason.to_string(),
        };
        let path = std::str::from_utf8(&raw).map_err(|_| unsafe_entry("not UTF-8"))?;
        let path = path.strip_prefix("./").unwrap_or(path);
        check_path(path).map_err(&unsafe_entry)?;
        let kind = entry.header().entry_type();
        let is_dir = kind.is_dir();
        if !(kind.is_file() || is_dir) {
            return Err(unsafe_entry(
                "links, devices and other special entries are not allowed",
            ));
        }
        let trimmed = path.trim_end_matches('/');
        let rel = if is_dir && format!("{trimmed}/") == prefix {
            continue;
        } else if let Some(rel) = path.strip_prefix(&prefix) {
            rel.trim_end_matches('/')
        } else if is_dir && prefix.starts_with(&format!("{trimmed}/")) {
            // The category directory above `<id>/`.
            continue;
        } else {
            return Err(unsafe_entry(&format!("outside {prefix}")));
        };
        if is_dir {
            continue;
        }
        let size = entry.header().size().map_err(invalid)?;
        let limit = if rel == SKILL_FILE {
            MAX_SKILL_FILE_BYTES as u64
        } else if rel == "manifest.json" {
            MAX_MANIFEST_BYTES
        } else {
            MAX_RESOURCE_BYTES
        };
        if size > limit {
            return Err(ArchiveError::TooLarge(format!(
                "{name} declares {size} bytes; the limit is {limit}"
            )));
        }
        let in_resources = RESOURCE_DIRS
            .iter()
            .any(|d| rel.starts_with(&format!("{d}/")));
        if !(rel == SKILL_FILE || rel == "manifest.json" || in_resources) {
            out.ignored.push(rel.to_string());
            continue;
        }
        let mut bytes = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(invalid)?;
        if bytes.len() as u64 > limit {
            return Err(ArchiveError::TooLarge(format!(
                "{name} is larger than {limit} bytes"
            )));
        }
        if rel == SKILL_FILE {
            if seen_skill {
                return Err(unsafe_entry("a second SKILL.md"));
            }
            seen_skill = true;
            out.skill_md = bytes;
        } else if rel == "manifest.json" {
            out.manifest = Some(bytes);
        } else {
            out.files.push((rel.to_string(), bytes));
        }
    }
    if !seen_skill {
        return Err(ArchiveError::MissingSkill(format!("{prefix}{SKILL_FILE}")));
    }
    Ok(out)
}

/// A relative path of plain components: no leading `/`, no `.`/`..`, no backslash,
/// no control or invisible character.
fn check_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.starts_with('/') {
        return Err("absolute path");
    }
    if path.contains('\\') {
        return Err("backslash in path");
    }
    if path.chars().any(is_hidden) {
        return Err("control or invisible character in path");
    }
    for part in path.trim_end_matches('/').split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err("empty, `.` or `..` path component");
        }
    }
    Ok(())
}

fn invalid(e: std::io::Error) -> ArchiveError {
    if e.kind() == std::io::ErrorKind::FileTooLarge {
        ArchiveError::TooLarge(format!(
            "decompresses to more than {MAX_UNPACKED_BYTES} bytes"
        ))
    } else {
        ArchiveError::Invalid(e.to_string())
    }
}

/// A reader that fails (instead of ending) once `left` bytes have been read.
struct Limited<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // Only an error if there is more to read.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    "archive too large",
                )),
            };
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A raw ustar entry: `kind` is the type flag, `declared` the size in the header.
    pub(crate) fn tar_entry(path: &str, kind: u8, body: &[u8], declared: u64) -> Vec<u8> {
        let mut header = [0u8; 512];
        header[..path.len()].copy_from_slice(path.as_bytes());
        header[100..108].copy_from_slice(b"0000644\0");
        header[108..116].copy_from_slice(b"0000000\0");
        header[116..124].copy_from_slice(b"0000000\0");
        header[124..136].copy_from_slice(format!("{declared:011o}\0").as_bytes());
        header[136..148].copy_from_slice(b"00000000000\0");
        header[156] = kind;
        header[257..263].copy_from_slice(b"ustar\0");
        header[263..265].copy_from_slice(b"00");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| b as u32).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let mut out = header.to_vec();
        out.extend_from_slice(body);
        out.resize(out.len().div_ceil(512) * 512, 0);
        out
    }

    pub(crate) fn gzip(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut tar: Vec<u8> = entries.concat();
        tar.extend_from_slice(&[0u8; 1024]);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&tar).unwrap();
        enc.finish().unwrap()
    }

    fn file(path: &str, body: &[u8]) -> Vec<u8> {
        tar_entry(path, b'0', body, body.len() as u64)
    }

    const MD: &[u8] = b"---\nname: a\ndescription: d\n---\nbody\n";

    #[test]
    fn skills_archive_reads_the_protocol_layout() {
        let id = SkillId::parse("dev/a").unwrap();
        let gz = gzip(&[
            tar_entry("dev/", b'5', b"", 0),
            tar_entry("dev/a/", b'5', b"", 0),
            file("dev/a/SKILL.md", MD),
            file("dev/a/manifest.json", b"{}"),
            file("dev/a/scripts/run.sh", b"echo hi"),
            file("./dev/a/README.md", b"readme"),
        ]);
        let out = unpack(&gz, &id).unwrap();
        assert_eq!(out.skill_md, MD);
        assert_eq!(out.manifest.as_deref(), Some(&b"{}"[..]));
        assert_eq!(
            out.files,
            [("scripts/run.sh".to_string(), b"echo hi".to_vec())]
        );
        assert_eq!(out.ignored, ["README.md"]);
    }

    #[test]
    fn skills_archive_refuses_hostile_entries() {
        let id = SkillId::parse("dev/a").unwrap();
        let cases: Vec<(Vec<Vec<u8>>, &str)> = vec![
            (vec![file("dev/a/../../evil", b"x")], "archive-unsafe"),
            (vec![file("/etc/passwd", b"x")], "archive-unsafe"),
            (
                vec![file("dev/a/SKILL.md", MD), file("other/x", b"x")],
                "archive-unsafe",
            ),
            (
                vec![tar_entry("dev/a/SKILL.md", b'2', b"", 0)],
                "archive-unsafe",
            ),
            (
                vec![tar_entry("dev/a/scripts/x", b'1', b"", 0)],
                "archive-unsafe",
            ),
            (vec![tar_entry("dev/a/dev", b'3', b"", 0)], "archive-unsafe"),
            (vec![file("dev/a\\..\\x", b"x")], "archive-unsafe"),
            (vec![file("dev/a/\u{202e}x", b"x")], "archive-unsafe"),
            (
                vec![file("dev/a/SKILL.md", MD), file("dev/a/SKILL.md", MD)],
                "archive-unsafe",
            ),
            (
                vec![tar_entry("dev/a/SKILL.md", b'0', MD, 5 * 1024 * 1024)],
                "archive-too-large",
            ),
            (
                vec![file("dev/a/manifest.json", b"{}")],
                "archive-missing-skill",
            ),
        ];
        for (entries, code) in cases {
            let e = unpack(&gzip(&entries), &id).unwrap_err();
            assert_eq!(e.code(), code, "{e}");
        }
        assert_eq!(
            unpack(b"not gzip at all", &id).unwrap_err().code(),
            "archive-invalid"
        );
        let many: Vec<Vec<u8>> = (0..=MAX_ENTRIES)
            .map(|i| tar_entry(&format!("dev/a/x{i}/"), b'5', b"", 0))
            .collect();
        assert_eq!(
            unpack(&gzip(&many), &id).unwrap_err().code(),
            "archive-too-large"
        );
    }

    #[test]
    fn skills_archive_stops_a_gzip_bomb() {
        let id = SkillId::parse("dev/a").unwrap();
        // 28 MiB of zeros in entries each under their own limit compress to a few
        // dozen KiB.
        let zeros = vec![0u8; 7 * 1024 * 1024];
        let mut entries = vec![file("dev/a/SKILL.md", MD)];
        for i in 0..4 {
            entries.push(file(&format!("dev/a/assets/zero{i}"), &zeros));
        }
        let gz = gzip(&entries);
        assert!(gz.len() < MAX_TARBALL_BYTES);
        assert_eq!(unpack(&gz, &id).unwrap_err().code(), "archive-too-large");
    }
}

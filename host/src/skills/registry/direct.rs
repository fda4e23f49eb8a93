//! Installing from a URL of a raw SKILL.md, or from a local file or skill directory.
//!
//! A URL goes through [`net::get`](crate::net::get) with [`NetPolicy::for_url`]:
//! http(s) only, at most 1 MiB (the read stops beyond), 10 s for everything,
//! redirects followed by hand with each hop checked again, and non-public addresses
//! refused unless `network.allowPrivate` is set. The bytes then go through the same
//! parser and validator as every other install; the body is never run or rendered.
//!
//! These installs load leniently, as other agents do (`SkillPackage::new` and
//! `SkillPackage::from_origin`): a file without frontmatter, `name` or `description`
//! is named after its place and described by its first paragraph, with warnings.
//!
//! The skill's identity is the id given (`slug` or `category/slug`), else, for a
//! directory, the directory's name, else the frontmatter's `name`, else the name the
//! file's place gives ([`name_hint`]); a slug is derived from any of them that is not
//! one.

use std::path::Path;

use super::error::{RegistryError, blocking};
use crate::net::{self, NetPolicy};
use crate::skills::format::error::SkillError;
use crate::skills::format::id::SkillId;
use crate::skills::format::parse::Leniency;
use crate::skills::format::validate::Origin;
use crate::skills::library::Library;
use crate::skills::library::error::LibraryError;
use crate::skills::library::index::{Source, SourceKind};
use crate::skills::library::install::{InstallOutcome, ToolConsent};
use crate::skills::library::package::{SkillPackage, read_resources};
use crate::skills::{MAX_SKILL_FILE_BYTES, SKILL_FILE};

/// Downloads and validates the SKILL.md at `url`; nothing is written.
pub async fn fetch_url_package(
    url: &str,
    id: Option<SkillId>,
    allow_private: bool,
) -> Result<(SkillPackage, Source), RegistryError> {
    let fetched = net::get(
        url,
        &NetPolicy::for_url(allow_private, MAX_SKILL_FILE_BYTES),
    )
    .await?;
    let html = fetched
        .content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/html"));
    // An HTML page is no SKILL.md without frontmatter: its first "paragraph" would be
    // markup. So an HTML answer must have a frontmatter.
    let leniency = if html {
        Leniency::FrontmatterRequired
    } else {
        Leniency::Lenient
    };
    let slug = id.as_ref().map(|i| i.slug().to_string());
    let path = url_path(url);
    let origin = Origin {
        dir: slug.as_deref(),
        name_hint: name_hint(&path),
        leniency,
    };
    let package = SkillPackage::from_origin(id, origin, fetched.bytes, Vec::new());
    let package = package.map_err(|e| match e {
        LibraryError::Invalid(SkillError::FrontmatterMissing) if html => RegistryError::NotASkill {
            url: url.to_string(),
            reason: "the URL serves an HTML page, not a SKILL.md; use the raw file's URL".into(),
        },
        other => RegistryError::Library(other),
    })?;
    let source = Source {
        kind: SourceKind::Url,
        url: Some(url.to_string()),
        registry: None,
    };
    Ok((package, source))
}

/// Fetches `url` and installs it.
pub async fn install_from_url(
    library: &Library,
    url: &str,
    id: Option<SkillId>,
    force: bool,
    allow_private: bool,
    consent: ToolConsent,
) -> Result<InstallOutcome, RegistryError> {
    let (package, source) = fetch_url_package(url, id, allow_private).await?;
    let library = library.clone();
    blocking(move || library.install(&package, source, force, consent)).await
}

/// Reads a SKILL.md file, or a skill directory (its SKILL.md and the files under
/// `scripts/` and `references/`; symlinks are refused), and validates it.
pub fn read_file_package(
    path: &Path,
    id: Option<SkillId>,
) -> Result<(SkillPackage, Source), RegistryError> {
    let absolute = std::path::absolute(path).map_err(LibraryError::io(path))?;
    let meta = std::fs::metadata(&absolute).map_err(LibraryError::io(&absolute))?;
    let package = if meta.is_dir() {
        let skill_file = [SKILL_FILE, "skill.md"]
            .iter()
            .map(|n| absolute.join(n))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                LibraryError::from(SkillError::MissingFile {
                    dir: absolute.display().to_string(),
                })
            })?;
        let skill_md = read_limited(&skill_file)?;
        let files = read_resources(&absolute)?;
        match id {
            Some(id) => SkillPackage::new(Some(id), skill_md, files)?,
            None => {
                let name = absolute
                    .file_name()
                    .and_then(|n| n.to_str())
                    .ok_or_else(|| LibraryError::InvalidId {
                        id: absolute.display().to_string(),
                        reason: "the directory name is not UTF-8 text".into(),
                    })?;
                SkillPackage::from_origin(None, Origin::dir(name), skill_md, files)?
            }
        }
    } else {
        let skill_md = read_limited(&absolute)?;
        match id {
            Some(id) => SkillPackage::new(Some(id), skill_md, Vec::new())?,
            None => {
                let path = absolute.to_string_lossy().replace('\\', "/");
                let origin = Origin {
                    name_hint: name_hint(&path),
                    ..Origin::default()
                };
                SkillPackage::from_origin(None, origin, skill_md, Vec::new())?
            }
        }
    };
    let source = Source {
        kind: SourceKind::File,
        url: Some(absolute.display().to_string()),
        registry: None,
    };
    Ok((package, source))
}

/// Reads `path` (file or directory) and installs it.
pub fn install_from_file(
    library: &Library,
    path: &Path,
    id: Option<SkillId>,
    force: bool,
    consent: ToolConsent,
) -> Result<InstallOutcome, RegistryError> {
    let (package, source) = read_file_package(path, id)?;
    Ok(library.install(&package, source, force, consent)?)
}

/// The name a lone file's place gives it, for a SKILL.md without `name`: the folder
/// it is in when it is named SKILL.md (`.../pdf-tools/SKILL.md`), else its stem
/// (`.../pdf-tools.md`). `path` is `/`-separated (a file path or a URL's path).
fn name_hint(path: &str) -> Option<&str> {
    let mut parts = path.rsplit('/').filter(|p| !p.is_empty());
    let file = parts.next()?;
    if file.eq_ignore_ascii_case(SKILL_FILE) {
        return parts.next();
    }
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    (!stem.is_empty()).then_some(stem)
}

/// The path of `url`, percent-decoded when that gives UTF-8 (`My%20Skill`).
fn url_path(url: &str) -> String {
    let path = reqwest::Url::parse(url)
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    match percent_encoding::percent_decode_str(&path).decode_utf8() {
        Ok(decoded) => decoded.into_owned(),
        Err(_) => path,
    }
}

fn read_limited(path: &Path) -> Result<Vec<u8>, RegistryError> {
    match crate::skills::library::durable::read_bounded(path, MAX_SKILL_FILE_BYTES) {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(size)) => Err(LibraryError::from(SkillError::FileTooLarge {
            size,
            limit: MAX_SKILL_FILE_BYTES,
        })
        .into()),
        Err(e) => Err(LibraryError::io(path)(e).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str =
        "---\nname: from-file\ndescription: d\n---\n# Body\n```sh\ntouch /tmp/x\n```\n";

    #[test]
    fn skills_install_from_a_file_or_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path().join("skills")).unwrap();
        let file = dir.path().join("SKILL.md");
        std::fs::write(&file, MD).unwrap();
        let out = install_from_file(&library, &file, None, false, ToolConsent::Confirmed).unwrap();
        assert_eq!(out.id, "from-file");
        let entry = library.entry("from-file").unwrap();
        assert_eq!(entry.source.kind, SourceKind::File);
        assert_eq!(entry.source.url.as_deref(), Some(file.to_str().unwrap()));

        let skill_dir = dir.path().join("tool-kit");
        std::fs::create_dir_all(skill_dir.join("scripts/sub")).unwrap();
        std::fs::write(
            skill_dir.join(SKILL_FILE),
            MD.replace("from-file", "tool-kit"),
        )
        .unwrap();
        std::fs::write(skill_dir.join("scripts/sub/run.sh"), "rm -rf /").unwrap();
        std::fs::write(skill_dir.join("notes.txt"), "not installed").unwrap();
        let out =
            install_from_file(&library, &skill_dir, None, false, ToolConsent::Confirmed).unwrap();
        assert_eq!(out.id, "tool-kit");
        let installed = library.root().join("tool-kit");
        assert!(installed.join("scripts/sub/run.sh").is_file());
        assert!(!installed.join("notes.txt").exists());

        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", skill_dir.join("scripts/link")).unwrap();
            let e = install_from_file(&library, &skill_dir, None, true, ToolConsent::Confirmed)
                .unwrap_err();
            assert_eq!(e.code(), "package-path", "{e}");
        }

        let big = dir.path().join("big.md");
        std::fs::write(&big, vec![b'a'; MAX_SKILL_FILE_BYTES + 1]).unwrap();
        let e = install_from_file(&library, &big, None, false, ToolConsent::Confirmed).unwrap_err();
        assert_eq!(e.code(), "file-too-large");
        // Copied from another agent: no frontmatter, in a folder that is no slug.
        let copied = dir.path().join("Meeting Notes");
        std::fs::create_dir_all(&copied).unwrap();
        std::fs::write(
            copied.join(SKILL_FILE),
            "# Meeting notes\n\nTurn a transcript into action items.\n",
        )
        .unwrap();
        let out =
            install_from_file(&library, &copied, None, false, ToolConsent::NotConfirmed).unwrap();
        assert_eq!(
            (out.id.as_str(), out.name.as_str()),
            ("meeting-notes", "Meeting Notes")
        );
        let codes: Vec<&str> = out.warnings.iter().map(|w| w.code()).collect();
        assert_eq!(codes, ["frontmatter-missing", "slug-derived"]);
        assert!(library.root().join("meeting-notes/SKILL.md").is_file());
        // The file alone: named after its folder.
        let out = install_from_file(
            &library,
            &copied.join(SKILL_FILE),
            None,
            true,
            ToolConsent::NotConfirmed,
        )
        .unwrap();
        assert_eq!(out.id, "meeting-notes");
        // A lone file named otherwise: after its stem; with an id: the id.
        let lone = dir.path().join("standup_summary.md");
        std::fs::write(&lone, "Summarise a standup in three lines.\n").unwrap();
        let out =
            install_from_file(&library, &lone, None, false, ToolConsent::NotConfirmed).unwrap();
        assert_eq!(out.id, "standup-summary");
        let id = SkillId::parse("daily").unwrap();
        assert_eq!(
            install_from_file(&library, &lone, Some(id), false, ToolConsent::NotConfirmed)
                .unwrap()
                .id,
            "daily"
        );

        let bad = dir.path().join("bad.md");
        std::fs::write(&bad, b"---\nname: bad\ndescription: caf\xe9\n---\n").unwrap();
        assert_eq!(
            install_from_file(&library, &bad, None, false, ToolConsent::Confirmed)
                .unwrap_err()
                .code(),
            "not-utf8"
        );
    }

    #[test]
    fn skills_name_hints_come_from_the_files_place() {
        for (path, hint) in [
            ("/a/pdf-tools/SKILL.md", Some("pdf-tools")),
            ("/a/pdf-tools/skill.md", Some("pdf-tools")),
            ("/a/pdf-tools.md", Some("pdf-tools")),
            ("/org/repo/main/skills/My Skill/SKILL.md", Some("My Skill")),
            ("/SKILL.md", None),
            ("/", None),
            ("", None),
            ("/a/.md", None),
        ] {
            assert_eq!(name_hint(path), hint, "{path}");
        }
        assert_eq!(
            url_path("https://example.org/skills/My%20Skill/SKILL.md?raw=1"),
            "/skills/My Skill/SKILL.md"
        );
        assert_eq!(
            url_path("https://example.org/a%ff/SKILL.md"),
            "/a%ff/SKILL.md"
        );
    }
}

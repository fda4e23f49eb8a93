//! A skill ready to install: its SKILL.md validated and its extra files' paths checked,
//! all before anything is written. Extra files may only live under `scripts/` and
//! `references/`, by relative paths of plain names ([`PackagePath`]), so an archive
//! entry like `../../.bashrc` or `scripts/../../x` cannot be expressed at all.

use std::path::{Path, PathBuf};

use super::error::LibraryError;
use crate::skills::format::id::SkillId;
use crate::skills::format::parse::Leniency;
use crate::skills::format::text::is_hidden;
use crate::skills::format::validate::{Origin, ValidSkill, load_skill};

/// The directories a skill may ship files in.
pub const RESOURCE_DIRS: [&str; 2] = ["scripts", "references"];
const MAX_PACKAGE_FILES: usize = 256;
const MAX_PACKAGE_BYTES: usize = 16 * 1024 * 1024;
const MAX_PATH_DEPTH: usize = 8;
const MAX_COMPONENT_BYTES: usize = 255;

/// A relative file path inside a skill: `scripts/...` or `references/...`, made of
/// plain names (no `.`/`..`, no separators, nothing hidden, no leading dot).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PackagePath(Vec<String>);

impl PackagePath {
    pub fn parse(path: &str) -> Result<PackagePath, LibraryError> {
        let invalid = |reason: &str| LibraryError::PackagePath {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        let parts: Vec<&str> = path.split('/').collect();
        if parts.len() < 2 || !RESOURCE_DIRS.contains(&parts[0]) {
            return Err(invalid("files go under scripts/ or references/"));
        }
        if parts.len() > MAX_PATH_DEPTH {
            return Err(invalid("nested too deeply"));
        }
        for part in &parts {
            if part.is_empty() || part.starts_with('.') {
                return Err(invalid("empty, `.`, `..` or hidden path component"));
            }
            if part.contains('\\') || part.chars().any(is_hidden) {
                return Err(invalid("backslash, control or invisible character"));
            }
            if part.len() > MAX_COMPONENT_BYTES {
                return Err(invalid("path component too long"));
            }
        }
        Ok(PackagePath(parts.into_iter().map(str::to_string).collect()))
    }

    /// The path under a skill directory.
    pub fn under(&self, dir: &Path) -> PathBuf {
        self.0.iter().fold(dir.to_path_buf(), |p, c| p.join(c))
    }

    fn is_prefix_of(&self, other: &PackagePath) -> bool {
        other.0.len() > self.0.len() && other.0.starts_with(&self.0)
    }
}

impl std::fmt::Display for PackagePath {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0.join("/"))
    }
}

/// A validated skill and its files, ready for [`Library::install`](super::Library::install).
#[derive(Debug, Clone)]
pub struct SkillPackage {
    id: SkillId,
    skill: ValidSkill,
    skill_md: Vec<u8>,
    files: Vec<(PackagePath, Vec<u8>)>,
}

impl SkillPackage {
    /// Validates `skill_md` and `files`, leniently (every install but a registry's:
    /// files, URLs, chat, the built-ins). `id` says where the skill goes: `None` for
    /// the flat layout under its name (a slug derived from it if it is none), or an id
    /// whose slug becomes the skill's identity.
    pub fn new(
        id: Option<SkillId>,
        skill_md: Vec<u8>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<SkillPackage, LibraryError> {
        let dir = id.as_ref().map(|i| i.slug().as_str().to_string());
        let origin = Origin {
            dir: dir.as_deref(),
            ..Origin::default()
        };
        SkillPackage::build(id, origin, skill_md, files)
    }

    /// A registry's package (`category/slug`): read as [`SkillPackage::new`] reads,
    /// except that a SKILL.md without frontmatter is refused (`frontmatter-missing`).
    pub fn from_registry(
        id: SkillId,
        skill_md: Vec<u8>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<SkillPackage, LibraryError> {
        let slug = id.slug().to_string();
        let origin = Origin {
            dir: Some(&slug),
            name_hint: None,
            leniency: Leniency::FrontmatterRequired,
        };
        SkillPackage::build(Some(id), origin, skill_md, files)
    }

    /// A package read as `origin` says (a directory's name, a lone file's place, how
    /// strictly), installed under `id` when given (then `origin.dir` is its slug),
    /// else flat under the slug that place gives.
    pub fn from_origin(
        id: Option<SkillId>,
        origin: Origin,
        skill_md: Vec<u8>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<SkillPackage, LibraryError> {
        SkillPackage::build(id, origin, skill_md, files)
    }

    fn build(
        id: Option<SkillId>,
        origin: Origin,
        skill_md: Vec<u8>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<SkillPackage, LibraryError> {
        if files.len() > MAX_PACKAGE_FILES {
            return Err(LibraryError::PackageTooLarge {
                reason: format!("{} files; the limit is {MAX_PACKAGE_FILES}", files.len()),
            });
        }
        let total: usize = skill_md.len() + files.iter().map(|(_, b)| b.len()).sum::<usize>();
        if total > MAX_PACKAGE_BYTES {
            return Err(LibraryError::PackageTooLarge {
                reason: format!("{total} bytes; the limit is {MAX_PACKAGE_BYTES}"),
            });
        }
        let skill = load_skill(&skill_md, origin)?;
        let id = id.unwrap_or_else(|| SkillId::Flat(skill.slug.clone()));
        let mut checked = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            checked.push((PackagePath::parse(&path)?, bytes));
        }
        checked.sort_by(|a, b| a.0.cmp(&b.0));
        for pair in checked.windows(2) {
            if pair[0].0 == pair[1].0 || pair[0].0.is_prefix_of(&pair[1].0) {
                return Err(LibraryError::PackagePath {
                    path: pair[1].0.to_string(),
                    reason: format!("clashes with {}", pair[0].0),
                });
            }
        }
        Ok(SkillPackage {
            id,
            skill,
            skill_md,
            files: checked,
        })
    }

    pub fn id(&self) -> &SkillId {
        &self.id
    }

    pub fn skill(&self) -> &ValidSkill {
        &self.skill
    }

    pub(crate) fn skill_md(&self) -> &[u8] {
        &self.skill_md
    }

    pub(crate) fn files(&self) -> &[(PackagePath, Vec<u8>)] {
        &self.files
    }
}

/// The files under `dir`'s resource directories, relative, bounded; a symlink or
/// special file is an error.
pub fn read_resources(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, LibraryError> {
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut pending: Vec<(PathBuf, String, usize)> = RESOURCE_DIRS
        .iter()
        .map(|d| (dir.join(d), d.to_string(), 1))
        .filter(|(p, _, _)| p.symlink_metadata().is_ok())
        .collect();
    let too_large = |reason: String| LibraryError::PackageTooLarge { reason };
    while let Some((path, rel, depth)) = pending.pop() {
        let meta = path.symlink_metadata().map_err(LibraryError::io(&path))?;
        if meta.file_type().is_symlink() || !(meta.is_dir() || meta.is_file()) {
            return Err(LibraryError::PackagePath {
                path: rel,
                reason: "symlinks and special files are not installed".into(),
            });
        }
        if meta.is_file() {
            if out.len() >= MAX_PACKAGE_FILES {
                return Err(too_large(format!("more than {MAX_PACKAGE_FILES} files")));
            }
            total += meta.len();
            if total > MAX_PACKAGE_BYTES as u64 {
                return Err(too_large(format!("more than {MAX_PACKAGE_BYTES} bytes")));
            }
            let bytes = std::fs::read(&path).map_err(LibraryError::io(&path))?;
            out.push((rel, bytes));
            continue;
        }
        if depth > MAX_PATH_DEPTH {
            return Err(LibraryError::PackagePath {
                path: rel,
                reason: "nested too deeply".into(),
            });
        }
        for entry in std::fs::read_dir(&path).map_err(LibraryError::io(&path))? {
            let entry = entry.map_err(LibraryError::io(&path))?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| LibraryError::PackagePath {
                    path: format!("{rel}/{}", n.to_string_lossy()),
                    reason: "not UTF-8".into(),
                })?;
            pending.push((entry.path(), format!("{rel}/{name}"), depth + 1));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &[u8] = b"---\nname: my-skill\ndescription: d\n---\nbody\n";

    #[test]
    fn skills_package_paths_stay_under_the_resource_dirs() {
        assert_eq!(
            PackagePath::parse("scripts/run.sh").unwrap().to_string(),
            "scripts/run.sh"
        );
        assert!(PackagePath::parse("references/a/b.md").is_ok());
        for bad in [
            "run.sh",
            "scripts",
            "scripts/",
            "scripts//a",
            "scripts/../x",
            "scripts/./x",
            "scripts/.hidden",
            "/scripts/x",
            "scripts\\x",
            "scripts/a\\..\\b",
            "assets/x",
            "scripts/a\u{202e}b",
            "scripts/a\nb",
            "scripts/a/b/c/d/e/f/g/h",
        ] {
            assert_eq!(
                PackagePath::parse(bad).unwrap_err().code(),
                "package-path",
                "{bad}"
            );
        }
    }

    #[test]
    fn skills_package_validates_everything_up_front() {
        let p = SkillPackage::new(
            None,
            MD.to_vec(),
            vec![("scripts/a.sh".into(), b"x".to_vec())],
        )
        .unwrap();
        assert_eq!(p.id().to_string(), "my-skill");
        let p = SkillPackage::new(
            Some(SkillId::parse("dev/other").unwrap()),
            MD.to_vec(),
            vec![],
        )
        .unwrap();
        assert_eq!(p.skill().slug.as_str(), "other");
        assert_eq!(p.skill().warnings[0].code(), "name-dir-mismatch");

        let clash = vec![
            ("scripts/a".to_string(), vec![]),
            ("scripts/a/b".to_string(), vec![]),
        ];
        assert_eq!(
            SkillPackage::new(None, MD.to_vec(), clash)
                .unwrap_err()
                .code(),
            "package-path"
        );
        let twice = vec![
            ("scripts/a".to_string(), vec![]),
            ("scripts/a".to_string(), vec![]),
        ];
        assert_eq!(
            SkillPackage::new(None, MD.to_vec(), twice)
                .unwrap_err()
                .code(),
            "package-path"
        );
        let many = (0..300).map(|i| (format!("scripts/{i}"), vec![])).collect();
        assert_eq!(
            SkillPackage::new(None, MD.to_vec(), many)
                .unwrap_err()
                .code(),
            "package-too-large"
        );
        let e = SkillPackage::new(
            None,
            b"---\nname: ../x\ndescription: d\n---\n".to_vec(),
            vec![],
        )
        .unwrap_err();
        assert_eq!(e.code(), "name-path");
    }
}

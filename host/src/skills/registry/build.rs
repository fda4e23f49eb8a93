//! `engram registry build <skills> <out>`: a registry directory made from a folder of
//! one's own skills, for `engram registry serve <out>` (or any static file server with
//! the same paths), so a team can host its own. The folder holds `<slug>/SKILL.md`
//! (category `general`) or `<category>/<slug>/SKILL.md`, each with its optional
//! `scripts/` and `references/`. Written, as the client reads them (`client.rs`):
//!
//! - `api/feed.json`: every skill with the sha256 of its SKILL.md body;
//! - `api/skills/<id>/index.json`: the body, `allowedTools`, and every file besides
//!   SKILL.md with its sha256 (what an install verifies the tarball against);
//! - `api/skills/<id>/install.tar.gz`: `<id>/SKILL.md`, `<id>/manifest.json` and the
//!   files;
//! - `categories/<id>/SKILL.md`: the raw file.
//!
//! Every SKILL.md is read as a registry install reads it (a frontmatter required, its
//! `name` the directory's slug): a skill that would be refused at install is refused
//! here, naming its file, and nothing is written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::archive::{MAX_ENTRIES, MAX_TARBALL_BYTES};
use crate::skills::format::id::Slug;
use crate::skills::format::parse::{Leniency, parse_skill_with};
use crate::skills::library::package::RESOURCE_DIRS;
use crate::skills::{MAX_SKILL_FILE_BYTES, SKILL_FILE};

/// The category of a skill given without one.
pub const DEFAULT_CATEGORY: &str = "general";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path}: {reason}")]
    Skill { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: no SKILL.md found (expected <slug>/SKILL.md or <category>/<slug>/SKILL.md)")]
    Empty(PathBuf),
}

/// What was built.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Built {
    pub skills: Vec<String>,
    pub out: PathBuf,
}

struct Found {
    id: String,
    category: String,
    slug: String,
    dir: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn slug_of(path: &Path, text: &str) -> Result<String, BuildError> {
    Slug::parse(text)
        .map(|s| s.as_str().to_string())
        .map_err(|e| BuildError::Skill {
            path: path.to_path_buf(),
            reason: format!("`{text}` is not a slug: {e}"),
        })
}

fn is_hidden_or_template(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// `<slug>/SKILL.md` and `<category>/<slug>/SKILL.md` under `src`.
fn find(src: &Path) -> Result<Vec<Found>, BuildError> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(src).map_err(io(src))? {
        let dir = entry.map_err(io(src))?.path();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if !dir.is_dir() || is_hidden_or_template(&name) {
            continue;
        }
        if dir.join(SKILL_FILE).is_file() {
            let slug = slug_of(&dir, &name)?;
            found.push(Found {
                id: format!("{DEFAULT_CATEGORY}/{slug}"),
                category: DEFAULT_CATEGORY.to_string(),
                slug,
                dir,
            });
            continue;
        }
        for inner in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let skill_dir = inner.map_err(io(&dir))?.path();
            let inner_name = skill_dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if skill_dir.is_dir()
                && !is_hidden_or_template(&inner_name)
                && skill_dir.join(SKILL_FILE).is_file()
            {
                let category = slug_of(&dir, &name)?;
                let slug = slug_of(&skill_dir, &inner_name)?;
                found.push(Found {
                    id: format!("{category}/{slug}"),
                    category,
                    slug,
                    dir: skill_dir,
                });
            }
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(pair) = found.windows(2).find(|w| w[0].slug == w[1].slug) {
        return Err(BuildError::Skill {
            path: pair[1].dir.clone(),
            reason: format!(
                "the slug `{}` is also {}: a slug names one skill",
                pair[1].slug, pair[0].id
            ),
        });
    }
    Ok(found)
}

/// The files of `dir` under `scripts/` and `references/`, relative, sorted.
fn resources(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, BuildError> {
    let mut files = Vec::new();
    for resource in RESOURCE_DIRS {
        let mut stack = vec![dir.join(resource)];
        while let Some(current) = stack.pop() {
            if !current.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(&current).map_err(io(&current))? {
                let path = entry.map_err(io(&current))?.path();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                if name.starts_with('.') {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else if path.is_file() {
                    let relative = path
                        .strip_prefix(dir)
                        .unwrap_or(&path)
                        .to_string_lossy()
                        .replace('\\', "/");
                    files.push((relative, std::fs::read(&path).map_err(io(&path))?));
                }
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

fn hex_sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn tarball(id: &str, files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, std::io::Error> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        tar.append_data(&mut header, format!("{id}/{path}"), &bytes[..])?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    gz.finish()
}

/// Builds the registry of the skills under `src` into `out` (created; what is there
/// with the same paths is replaced). `now` is the feed's `generatedAt`.
pub fn build(src: &Path, out: &Path, now: &str) -> Result<Built, BuildError> {
    let found = find(src)?;
    if found.is_empty() {
        return Err(BuildError::Empty(src.to_path_buf()));
    }
    // Everything is read and checked before anything is written.
    let mut entries = Vec::new();
    for skill in &found {
        let path = skill.dir.join(SKILL_FILE);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        if bytes.len() > MAX_SKILL_FILE_BYTES {
            return Err(BuildError::Skill {
                path,
                reason: format!("over {MAX_SKILL_FILE_BYTES} bytes"),
            });
        }
        let parsed = parse_skill_with(&bytes, Leniency::FrontmatterRequired).map_err(|e| {
            BuildError::Skill {
                path: path.clone(),
                reason: e.to_string(),
            }
        })?;
        let front = &parsed.frontmatter;
        if front.name != skill.slug {
            return Err(BuildError::Skill {
                path,
                reason: format!(
                    "its name is {:?}; a registry skill is named after its directory, `{}`",
                    front.name, skill.slug
                ),
            });
        }
        if front.description.trim().is_empty() {
            return Err(BuildError::Skill {
                path,
                reason: "no description in the frontmatter (the feed lists it)".into(),
            });
        }
        let files = resources(&skill.dir)?;
        if files.len() + 3 > MAX_ENTRIES {
            return Err(BuildError::Skill {
                path,
                reason: format!("more than {MAX_ENTRIES} files"),
            });
        }
        let manifest = json!({
            "id": skill.id, "name": front.name, "description": front.description,
            "version": front.version,
            "files": std::iter::once(SKILL_FILE.to_string())
                .chain(files.iter().map(|(p, _)| p.clone()))
                .map(|p| json!({"path": p, "encoding": "utf8"}))
                .collect::<Vec<_>>(),
            "schema": "mercury-skill@1",
        });
        let mut packed = vec![
            (SKILL_FILE.to_string(), bytes.clone()),
            (
                "manifest.json".to_string(),
                serde_json::to_vec_pretty(&manifest).unwrap_or_default(),
            ),
        ];
        packed.extend(files.iter().cloned());
        let tar = tarball(&skill.id, &packed).map_err(io(&path))?;
        if tar.len() > MAX_TARBALL_BYTES {
            return Err(BuildError::Skill {
                path,
                reason: format!("its package is over {MAX_TARBALL_BYTES} bytes compressed"),
            });
        }
        entries.push((skill, parsed, bytes, files, tar));
    }
    let mut categories: BTreeMap<&str, usize> = BTreeMap::new();
    let mut feed_skills = Vec::new();
    for (skill, parsed, bytes, files, tar) in &entries {
        *categories.entry(skill.category.as_str()).or_default() += 1;
        let front = &parsed.frontmatter;
        feed_skills.push(json!({
            "id": skill.id, "name": front.name, "title": front.name,
            "description": front.description, "category": skill.category,
            "categorySlug": skill.category, "tags": front.tags, "author": front.author,
            "version": front.version, "sha": parsed.sha256, "size": bytes.len(),
            "updatedAt": now,
            "installUrl": format!("/api/skills/{}/install", skill.id),
            "detailUrl": format!("/api/skills/{}", skill.id),
            "pageUrl": format!("/skills/{}", skill.id),
        }));
        let detail = json!({
            "id": skill.id, "body": parsed.body, "sha": parsed.sha256,
            "allowedTools": front.allowed_tools,
            "files": files.iter().map(|(p, b)| json!({"path": p, "sha256": hex_sha(b)})).collect::<Vec<_>>(),
            "installUrl": format!("/api/skills/{}/install", skill.id),
        });
        let api_dir = out
            .join("api/skills")
            .join(&skill.category)
            .join(&skill.slug);
        write(
            &api_dir.join("index.json"),
            &serde_json::to_vec_pretty(&detail).unwrap_or_default(),
        )?;
        write(&api_dir.join("install.tar.gz"), tar)?;
        write(
            &out.join("categories")
                .join(&skill.category)
                .join(&skill.slug)
                .join(SKILL_FILE),
            bytes,
        )?;
    }
    let feed = json!({
        "schema": super::feed::SCHEMA,
        "generatedAt": now,
        "count": feed_skills.len(),
        "categories": categories.iter().map(|(slug, count)| json!({"slug": slug, "name": slug, "count": count})).collect::<Vec<_>>(),
        "skills": feed_skills,
    });
    write(
        &out.join("api/feed.json"),
        &serde_json::to_vec_pretty(&feed).unwrap_or_default(),
    )?;
    Ok(Built {
        skills: found.iter().map(|f| f.id.clone()).collect(),
        out: out.to_path_buf(),
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    std::fs::write(path, bytes).map_err(io(path))
}

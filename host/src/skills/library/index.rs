//! `{skills}/.index.json`, the source of truth for listing and updating skills (README,
//! "Skills"), in this shape:
//!
//! ```json
//! { "version": 1, "skills": { "<slug>": { "id", "name", "version", "category", "path",
//!   "source": {"kind": "seed|registry|url|file|manual", "url"?, "registry"?},
//!   "sha256", "installed_at", "updated_at", "active", "pinned",
//!   "granted"?: {"tools", "file_sha256", "at"} } } }
//! ```
//!
//! `granted` is Engram's addition: the tools the person granted the skill, and the
//! SKILL.md (the sha256 of the whole file) they granted them for. An entry without it
//! (a built-in, a skill found on disk, one installed before grants were kept) has none.
//!
//! It is replaced atomically on every change. Loading checks every entry's key and
//! path: an index is input too (people edit files), and a path in it must never lead
//! out of the skills directory.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::durable::{read_bounded, replace_file};
use super::error::LibraryError;
use crate::skills::format::id::{SkillId, Slug};

pub const INDEX_FILE: &str = ".index.json";
pub const INDEX_VERSION: u32 = 1;
/// Far beyond any real index (an entry is a few hundred bytes).
const MAX_INDEX_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    pub version: u32,
    /// Keyed by slug; sorted, so the file is stable.
    pub skills: BTreeMap<String, IndexEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// `slug` or `category/slug` (the registry id).
    pub id: String,
    /// Display name from the frontmatter.
    pub name: String,
    pub version: Option<String>,
    pub category: Option<String>,
    /// The directory relative to the skills root, `/`-separated.
    pub path: String,
    pub source: Source,
    /// sha256 of the SKILL.md body.
    pub sha256: String,
    /// RFC 3339 UTC.
    pub installed_at: String,
    pub updated_at: String,
    pub active: bool,
    /// Left alone by `skills update`.
    pub pinned: bool,
    /// What the person granted it; see the module documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted: Option<Granted>,
}

/// The tools the person granted a skill, for one SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    pub tools: Vec<String>,
    /// sha256 of the whole SKILL.md they confirmed: a file that differs (an update,
    /// an edit on disk) is granted nothing until they confirm again.
    pub file_sha256: String,
    /// RFC 3339 UTC.
    pub at: String,
}

impl Granted {
    /// The grant for the SKILL.md whose whole-file hash is `file_sha256`: its tools,
    /// or none when the person confirmed another text.
    pub fn for_file(granted: Option<&Granted>, file_sha256: &str) -> Vec<String> {
        granted
            .filter(|g| g.file_sha256 == file_sha256)
            .map(|g| g.tools.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub kind: SourceKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

impl Source {
    /// A source without url or registry (seed, file, manual).
    pub fn of(kind: SourceKind) -> Source {
        Source {
            kind,
            url: None,
            registry: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Seed,
    Registry,
    Url,
    File,
    Manual,
    /// SKILL.md text pasted into a chat (`install_skill {skill_md}`).
    Chat,
}

impl IndexEntry {
    /// Where the entry's skill lives (checked when the index was loaded).
    pub fn skill_id(&self) -> Result<SkillId, LibraryError> {
        Ok(SkillId::parse(&self.path)?)
    }
}

impl Default for Index {
    fn default() -> Index {
        Index {
            version: INDEX_VERSION,
            skills: BTreeMap::new(),
        }
    }
}

impl Index {
    /// Takes the entry of `slug` out of the index, or says that no such skill is
    /// installed.
    pub fn take(&mut self, slug: &str) -> Result<IndexEntry, LibraryError> {
        self.skills
            .remove(slug)
            .ok_or_else(|| LibraryError::NotFound(slug.to_string()))
    }

    /// Reads the index; a missing file is an empty index.
    pub(crate) fn load(path: &Path) -> Result<Index, LibraryError> {
        let corrupt = |reason: String| LibraryError::IndexCorrupt {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = match read_bounded(path, MAX_INDEX_BYTES) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(size)) => return Err(corrupt(format!("{size} bytes is too large"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Index::default()),
            Err(e) => return Err(LibraryError::io(path)(e)),
        };
        let index: Index = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if index.version != INDEX_VERSION {
            return Err(corrupt(format!("unknown version {}", index.version)));
        }
        for (slug, entry) in &index.skills {
            Slug::parse(slug).map_err(|e| corrupt(format!("key {slug:?}: {e}")))?;
            let id = entry
                .skill_id()
                .map_err(|e| corrupt(format!("entry {slug:?}: {e}")))?;
            if id.slug().as_str() != slug {
                return Err(corrupt(format!(
                    "entry {slug:?} points at {:?}, another skill's directory",
                    entry.path
                )));
            }
        }
        Ok(index)
    }

    pub(crate) fn save(&self, path: &Path) -> Result<(), LibraryError> {
        let mut json = serde_json::to_vec_pretty(self).map_err(|e| LibraryError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?;
        json.push(b'\n');
        replace_file(path, &json).map_err(LibraryError::io(path))
    }
}

/// Now, as RFC 3339 UTC with a fixed width, so that the index's stamps sort as text.
pub(crate) fn now() -> String {
    use crate::time::Clock;
    crate::time::rfc3339::format_fixed(crate::time::SystemClock.now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> IndexEntry {
        IndexEntry {
            id: path.to_string(),
            name: "n".into(),
            version: Some("1.0.0".into()),
            category: None,
            path: path.to_string(),
            source: Source {
                kind: SourceKind::Registry,
                url: None,
                registry: Some("https://r.example".into()),
            },
            sha256: "00".into(),
            installed_at: now(),
            updated_at: now(),
            active: true,
            pinned: false,
            granted: None,
        }
    }

    #[test]
    fn skills_index_has_the_designed_shape() {
        let mut index = Index::default();
        index
            .skills
            .insert("clean-code".into(), entry("development/clean-code"));
        let json = serde_json::to_value(&index).unwrap();
        assert_eq!(json["version"], 1);
        let e = &json["skills"]["clean-code"];
        let mut keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "active",
                "category",
                "id",
                "installed_at",
                "name",
                "path",
                "pinned",
                "sha256",
                "source",
                "updated_at",
                "version"
            ]
        );
        assert_eq!(
            e["source"],
            serde_json::json!({"kind": "registry", "registry": "https://r.example"})
        );
        assert!(e["installed_at"].as_str().unwrap().ends_with('Z'));
        // A grant adds `granted`; an index written before grants were kept reads as
        // granting nothing.
        let mut granted = entry("web-search");
        granted.granted = Some(Granted {
            tools: vec!["fetch_url".into()],
            file_sha256: "ab".into(),
            at: now(),
        });
        let json = serde_json::to_value(&granted).unwrap();
        assert_eq!(json["granted"]["tools"], serde_json::json!(["fetch_url"]));
        let mut old = serde_json::to_value(entry("web-search")).unwrap();
        old.as_object_mut().unwrap().remove("granted");
        let read: IndexEntry = serde_json::from_value(old).unwrap();
        assert_eq!(read.granted, None);
        assert_eq!(
            Granted::for_file(granted.granted.as_ref(), "ab"),
            ["fetch_url"]
        );
        assert!(Granted::for_file(granted.granted.as_ref(), "cd").is_empty());
    }

    #[test]
    fn skills_index_round_trips_and_refuses_paths_out_of_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        assert_eq!(Index::load(&path).unwrap(), Index::default());
        let mut index = Index::default();
        index.skills.insert("a".into(), entry("a"));
        index.save(&path).unwrap();
        assert_eq!(Index::load(&path).unwrap(), index);

        for (key, bad_path) in [("a", "../a"), ("a", "b"), ("a", "x/y/a"), ("A", "A")] {
            let mut index = Index::default();
            index.skills.insert(key.into(), entry(bad_path));
            std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
            let e = Index::load(&path).unwrap_err();
            assert_eq!(e.code(), "index-corrupt", "{bad_path}");
        }
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(Index::load(&path).unwrap_err().code(), "index-corrupt");
    }
}

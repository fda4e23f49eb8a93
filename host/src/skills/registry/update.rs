//! `engram skills update`: brings installed skills up to date from where each came
//! from: the registry (compared by sha256 with the feed), a URL or a file (fetched or
//! read again). It sits above the registry client and the direct installs, which do
//! not know about each other.

use std::path::PathBuf;

use serde::Serialize;

use super::client::{LoadedFeed, RegistryClient};
use super::direct;
use super::error::{RegistryError, blocking};
use crate::skills::{
    IndexEntry, InstallStatus, Library, LibraryError, SkillId, SourceKind, ToolConsent,
};

/// What `update` did for one installed skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpdateStatus {
    Updated,
    UpToDate,
    Skipped,
    Failed,
}

#[derive(Debug, Serialize)]
pub struct UpdateResult {
    pub slug: String,
    pub id: String,
    pub source: SourceKind,
    pub status: UpdateStatus,
    pub from_version: Option<String>,
    pub to_version: Option<String>,
    /// Why it was skipped.
    pub reason: Option<String>,
    pub error: Option<RegistryError>,
    /// The registry page, for registry skills.
    pub page_url: Option<String>,
}

impl RegistryClient {
    /// Brings installed skills up to date: all of them, or the one `only` names (slug
    /// or id). Registry skills from this registry are compared with the feed (fetched
    /// now, or the stale cache offline) and reinstalled when their sha differs; skills
    /// from a URL or a file are fetched or read again. Pinned skills, skills from
    /// another registry, seeded and manual skills are skipped. One failure does not
    /// stop the others; each result says what happened. An update that changes the
    /// tools a skill asks for fails (`tools-unconfirmed`) unless `consent` confirms them.
    pub async fn update(
        &self,
        library: &Library,
        only: Option<&str>,
        consent: ToolConsent,
    ) -> Result<(Vec<UpdateResult>, Option<LoadedFeed>), RegistryError> {
        let lib = library.clone();
        let index = blocking(move || lib.list()).await?;
        let entries: Vec<(String, IndexEntry)> = match only {
            Some(id) => {
                let slug = SkillId::parse(id)?.slug().to_string();
                let entry = index
                    .skills
                    .get(&slug)
                    .filter(|e| !id.contains('/') || e.id == id)
                    .cloned()
                    .ok_or_else(|| LibraryError::NotFound(id.to_string()))?;
                vec![(slug, entry)]
            }
            None => index.skills.into_iter().collect(),
        };
        let mut loaded: Option<LoadedFeed> = None;
        let mut results = Vec::new();
        for (slug, entry) in entries {
            let mut result = UpdateResult {
                slug: slug.clone(),
                id: entry.id.clone(),
                source: entry.source.kind,
                status: UpdateStatus::Skipped,
                from_version: entry.version.clone(),
                to_version: entry.version.clone(),
                reason: None,
                error: None,
                page_url: None,
            };
            if entry.pinned {
                result.reason = Some("pinned".into());
                results.push(result);
                continue;
            }
            let outcome = match entry.source.kind {
                SourceKind::Registry => {
                    let from = entry.source.registry.as_deref().unwrap_or_default();
                    if from != self.registry.as_str() {
                        result.reason = Some(format!(
                            "installed from the registry {from}; pass --registry {from} to update it"
                        ));
                        results.push(result);
                        continue;
                    }
                    result.page_url = Some(self.registry.skill_page_url(&entry.id));
                    if loaded.is_none() {
                        loaded = Some(self.refresh().await?);
                    }
                    let feed = loaded.as_mut().expect("loaded above");
                    match feed.find(&entry.id, &self.registry) {
                        Ok(skill) if skill.sha == entry.sha256 => {
                            result.status = UpdateStatus::UpToDate;
                            results.push(result);
                            continue;
                        }
                        Ok(_) => self
                            .install_with(feed, library, &entry.id, false, consent)
                            .await
                            .map(|r| r.outcome),
                        Err(RegistryError::NotInRegistry { .. }) => {
                            result.reason = Some("no longer in the registry".into());
                            results.push(result);
                            continue;
                        }
                        Err(e) => Err(e),
                    }
                }
                SourceKind::Url => match &entry.source.url {
                    Some(url) => {
                        let id = entry.skill_id()?;
                        direct::install_from_url(
                            library,
                            url,
                            Some(id),
                            false,
                            self.allow_private,
                            consent,
                        )
                        .await
                    }
                    None => Err(RegistryError::NotASkill {
                        url: String::new(),
                        reason: "the index records no URL for this skill".into(),
                    }),
                },
                SourceKind::File => match &entry.source.url {
                    Some(path) => {
                        let id = entry.skill_id()?;
                        let lib = library.clone();
                        let path = PathBuf::from(path);
                        blocking(move || {
                            direct::install_from_file(&lib, &path, Some(id), false, consent)
                        })
                        .await
                    }
                    None => Err(RegistryError::NotASkill {
                        url: String::new(),
                        reason: "the index records no file for this skill".into(),
                    }),
                },
                SourceKind::Seed | SourceKind::Manual | SourceKind::Chat => {
                    result.reason = Some(format!(
                        "{} skills have no source to update from",
                        match entry.source.kind {
                            SourceKind::Seed => "built-in",
                            SourceKind::Chat => "pasted",
                            _ => "manually placed",
                        }
                    ));
                    results.push(result);
                    continue;
                }
            };
            match outcome {
                Ok(outcome) => {
                    result.status = match outcome.status {
                        InstallStatus::AlreadyInstalled => UpdateStatus::UpToDate,
                        _ => UpdateStatus::Updated,
                    };
                    result.to_version = outcome.version;
                }
                Err(error) => {
                    result.status = UpdateStatus::Failed;
                    result.error = Some(error);
                }
            }
            results.push(result);
        }
        Ok((results, loaded))
    }
}

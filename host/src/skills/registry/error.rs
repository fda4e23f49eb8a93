//! Why a registry, URL or file install failed ([`RegistryError`], with a stable code
//! for clients), and [`blocking`], which runs the library's file-system work off the
//! async threads for every install path.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use http::StatusCode;

use super::archive::ArchiveError;
use super::feed::FeedError;
use crate::described::{Described, Description};
use crate::net::FetchError;
use crate::skills::LibraryError;

/// Why a registry, URL or file operation failed. Nothing was installed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid registry URL {url:?}: {reason}")]
    BadRegistry { url: String, reason: String },
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("the registry {registry} cannot be reached and no feed is cached: {source}")]
    Offline {
        registry: String,
        #[source]
        source: FetchError,
    },
    #[error("{registry}: {source}")]
    Feed {
        registry: String,
        #[source]
        source: FeedError,
    },
    #[error("no skill `{id}` in the registry {registry}")]
    NotInRegistry { id: String, registry: String },
    #[error("`{slug}` is in more than one category ({}); give the full id", candidates.join(", "))]
    Ambiguous {
        slug: String,
        candidates: Vec<String>,
    },
    #[error(
        "SHA-256 MISMATCH for {id}: the registry feed lists {expected}, but the SKILL.md body downloaded from {registry} hashes to {actual}. The file may have been tampered with; nothing was installed."
    )]
    ShaMismatch {
        id: String,
        registry: String,
        expected: String,
        actual: String,
    },
    #[error(
        "INTEGRITY MISMATCH for {id}: {reason}. The archive from {registry} is not what the registry vouches for; nothing was installed."
    )]
    Integrity {
        id: String,
        registry: String,
        reason: String,
    },
    #[error("{id}: the archive from the registry was refused: {source}")]
    Archive {
        id: String,
        #[source]
        source: ArchiveError,
    },
    #[error("{id}: the registry's detail answer is unusable: {reason}")]
    Detail { id: String, reason: String },
    #[error("{url}: {reason}")]
    NotASkill { url: String, reason: String },
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl RegistryError {
    /// A stable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::BadRegistry { .. } => "bad-registry-url",
            RegistryError::Fetch(e) => e.code(),
            RegistryError::Offline { .. } => "registry-unreachable",
            RegistryError::Feed { .. } => "feed-invalid",
            RegistryError::NotInRegistry { .. } => "not-in-registry",
            RegistryError::Ambiguous { .. } => "ambiguous-id",
            RegistryError::ShaMismatch { .. } => "sha-mismatch",
            RegistryError::Integrity { .. } => "integrity-mismatch",
            RegistryError::Archive { source, .. } => source.code(),
            RegistryError::Detail { .. } => "detail-invalid",
            RegistryError::NotASkill { .. } => "not-a-skill",
            RegistryError::Library(e) => e.code(),
            RegistryError::Internal(_) => "internal",
        }
    }
}

/// Refusals of the request are 422, a skill the registry does not have 404, and
/// whatever the far side did wrong (unreachable, tampered, unusable) 502; the
/// library's own errors as it describes them.
impl Described for RegistryError {
    fn describe(&self) -> Description {
        let status = match self {
            RegistryError::Library(e) => return e.describe(),
            RegistryError::Internal(_) => return Description::internal("skills registry"),
            RegistryError::Fetch(fetch @ crate::net::FetchError::Sink { .. }) => {
                return fetch.describe();
            }
            RegistryError::NotInRegistry { .. } => StatusCode::NOT_FOUND,
            RegistryError::Ambiguous { .. } | RegistryError::NotASkill { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            // The URL refused, or an answer unusable as a skill: the request's fault.
            RegistryError::Fetch(fetch)
                if !fetch.is_unreachable() && fetch.code() != "http-status" =>
            {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            RegistryError::Fetch(_)
            | RegistryError::BadRegistry { .. }
            | RegistryError::Offline { .. }
            | RegistryError::Feed { .. }
            | RegistryError::ShaMismatch { .. }
            | RegistryError::Integrity { .. }
            | RegistryError::Archive { .. }
            | RegistryError::Detail { .. } => StatusCode::BAD_GATEWAY,
        };
        Description::new(status, self.code(), self.to_string())
    }
}

/// `{"code": "...", "message": "..."}`.
impl Serialize for RegistryError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("RegistryError", 2)?;
        out.serialize_field("code", self.code())?;
        out.serialize_field("message", &self.to_string())?;
        out.end()
    }
}

/// Runs blocking library work off the async threads.
pub async fn blocking<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, RegistryError>
where
    T: Send + 'static,
    E: Into<RegistryError> + Send + 'static,
{
    match crate::background::run(work).await {
        Ok(result) => result.map_err(Into::into),
        Err(e) => Err(RegistryError::Internal(e.to_string())),
    }
}

impl From<crate::skills::IdError> for RegistryError {
    fn from(e: crate::skills::IdError) -> RegistryError {
        RegistryError::Library(e.into())
    }
}

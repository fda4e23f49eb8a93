//! What went wrong in the library ([`LibraryError`]), with a stable code for clients,
//! and how a listing reports a skill directory it could not use ([`ScanProblem`]).

use std::path::PathBuf;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use http::StatusCode;

use crate::described::{Described, Description};
use crate::skills::format::{IdError, SkillError};

/// A library operation that failed. Nothing on disk changed unless the variant says so.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error(transparent)]
    Invalid(#[from] SkillError),

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("invalid skill id {id:?}: {reason}")]
    InvalidId { id: String, reason: String },

    #[error("no installed skill named `{0}`")]
    NotFound(String),

    #[error("the skill `{0}` is inactive; activate it first")]
    Inactive(String),

    #[error("{path} is not a valid skills index ({reason}); a discovery scan rebuilds it")]
    IndexCorrupt { path: PathBuf, reason: String },

    #[error("invalid file path {path:?} in the skill package: {reason}")]
    PackagePath { path: String, reason: String },

    #[error("the skill package is too large: {reason}")]
    PackageTooLarge { reason: String },

    #[error(
        "a skill named `{slug}` is already installed at {existing}; remove it first or use force"
    )]
    SlugTaken { slug: String, existing: String },

    #[error("{path} is in the way: it exists and is not a skill directory")]
    PathTaken { path: PathBuf },

    #[error("{path} leads outside the skills directory")]
    OutsideRoot { path: PathBuf },

    #[error(
        "`{slug}` asks for the tools [{}]{}; they are granted whenever it is invoked, so the person must confirm them (-y, the dashboard's dialog, or \"confirm_tools\": true with the operator token); nothing was written",
        tools.join(", "),
        if before.is_empty() { String::new() } else { format!(" (the installed copy asks for [{}])", before.join(", ")) }
    )]
    ToolsUnconfirmed {
        slug: String,
        tools: Vec<String>,
        before: Vec<String>,
    },

    #[error(
        "`{slug}`'s SKILL.md is not the one confirmed (its sha256 is now {current}); read it again and confirm what it is now; nothing was granted"
    )]
    SkillChanged { slug: String, current: String },
}

impl LibraryError {
    /// A stable code for clients; a refused SKILL.md reports the rule it broke.
    pub fn code(&self) -> &'static str {
        match self {
            LibraryError::Invalid(e) => e.rule(),
            LibraryError::Io { .. } => "io",
            LibraryError::InvalidId { .. } => "invalid-id",
            LibraryError::NotFound(_) => "not-found",
            LibraryError::Inactive(_) => "inactive",
            LibraryError::IndexCorrupt { .. } => "index-corrupt",
            LibraryError::PackagePath { .. } => "package-path",
            LibraryError::PackageTooLarge { .. } => "package-too-large",
            LibraryError::SlugTaken { .. } => "slug-taken",
            LibraryError::PathTaken { .. } => "path-taken",
            LibraryError::OutsideRoot { .. } => "outside-root",
            LibraryError::ToolsUnconfirmed { .. } => "tools-unconfirmed",
            LibraryError::SkillChanged { .. } => "skill-changed",
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> LibraryError {
        let path = path.to_path_buf();
        move |source| LibraryError::Io { path, source }
    }
}

/// An unknown skill is 404; a refused name or SKILL.md is 422 with the rule it broke
/// as the code; a state that prevents the change is 409. Details never carry the data
/// directory's paths.
impl Described for LibraryError {
    fn describe(&self) -> Description {
        let code = self.code();
        let conflict = |detail: String| Description::new(StatusCode::CONFLICT, code, detail);
        match self {
            LibraryError::NotFound(_) => Description::not_found(self.to_string()),
            LibraryError::InvalidId { .. } => {
                Description::new(StatusCode::UNPROCESSABLE_ENTITY, code, self.to_string())
                    .on("name")
            }
            // A missing SKILL.md names its directory: keep only the last part.
            LibraryError::Invalid(SkillError::MissingFile { dir }) => {
                let name = std::path::Path::new(dir)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Description::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    code,
                    format!("no SKILL.md in {name}"),
                )
            }
            LibraryError::Invalid(_)
            | LibraryError::PackagePath { .. }
            | LibraryError::PackageTooLarge { .. } => {
                Description::new(StatusCode::UNPROCESSABLE_ENTITY, code, self.to_string())
            }
            LibraryError::Inactive(_)
            | LibraryError::SlugTaken { .. }
            | LibraryError::ToolsUnconfirmed { .. }
            | LibraryError::SkillChanged { .. } => conflict(self.to_string()),
            LibraryError::IndexCorrupt { reason, .. } => conflict(format!(
                "the skills index is not readable ({reason}); a discovery scan (POST /api/skills/scan) rebuilds it"
            )),
            LibraryError::PathTaken { .. } => conflict(
                "something that is not a skill directory is in the way in the skills directory"
                    .into(),
            ),
            LibraryError::OutsideRoot { .. } => {
                conflict("the skill's files lead outside the skills directory (a symlink?)".into())
            }
            LibraryError::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                Description::disk_full("skills library")
            }
            LibraryError::Io { .. } => Description::internal("skills library"),
        }
    }
}

/// `{"code": "...", "message": "..."}`.
impl Serialize for LibraryError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("LibraryError", 2)?;
        out.serialize_field("code", self.code())?;
        out.serialize_field("message", &self.to_string())?;
        out.end()
    }
}

impl From<IdError> for LibraryError {
    fn from(e: IdError) -> LibraryError {
        LibraryError::InvalidId {
            id: e.id,
            reason: e.reason,
        }
    }
}

/// A skill directory that could not be used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanProblem {
    /// Relative to the skills root.
    pub path: String,
    /// The rule or error code ([`LibraryError::code`]).
    pub code: &'static str,
    pub message: String,
}

impl ScanProblem {
    pub(crate) fn new(path: String, error: &LibraryError) -> ScanProblem {
        ScanProblem {
            path,
            code: error.code(),
            message: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_skill_md_reports_its_rule_as_the_library_code() {
        let l = LibraryError::from(SkillError::NameMissing);
        assert_eq!(l.code(), "name-missing");
        assert_eq!(serde_json::to_value(&l).unwrap()["code"], "name-missing");
    }
}

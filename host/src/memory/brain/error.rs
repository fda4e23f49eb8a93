//! What a Second Brain operation can fail with, below every module that fails: the
//! store, its memory index, the transcript and the secret detector all answer with
//! [`StoreError`].

use std::path::PathBuf;

use super::tokenizer::TokenizerError;
use crate::sqlite::SchemaError;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no memory `{0}`")]
    NotFound(String),
    #[error("no conversation `{0}`")]
    NoConversation(String),
    /// The id is taken by another user's record: a refusal that depends on what is
    /// stored, not on the request.
    #[error("{what} `{id}` belongs to another user")]
    OtherUsers { what: &'static str, id: String },
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(transparent)]
    SecretRefused(#[from] SecretRefused),
    #[error("import line {line}: {reason}")]
    Import { line: usize, reason: String },
    /// An import whose records name others that are nowhere: depends on what is
    /// stored, not on the lines alone.
    #[error("{0}")]
    Dangling(String),
    #[error("cannot open {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("search index: {0}")]
    Index(#[from] IndexError),
    /// The sentence encoder failed on texts the background worker embeds.
    #[error("sentence encoder: {0}")]
    Encoder(#[from] crate::embed::encoder::EncoderError),
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database: {0}")]
    Sql(#[from] crate::sql::SqlError),
    /// A Second Brain statement asked of a backend it is not yet written for (its
    /// move from SQLite onto `sql::Tx` is under way, issue 32).
    #[error("the Second Brain runs on SQLite only in this release")]
    SqliteOnly,
    /// The commit this write shared with others failed (`writer.rs`).
    #[error("database: the commit failed: {0}")]
    GroupFailed(String),
}

#[cfg(test)]
impl StoreError {
    /// A failure of the memory search index (whose types are the store's own), for
    /// the tests above the store that walk every variant.
    pub(crate) fn index_failure(cause: rusqlite::Error) -> StoreError {
        StoreError::Index(IndexError::Tokenizer(cause.into()))
    }
}

/// Refusals as the caller's (not found, another user's id, invalid, a secret, a bad
/// import); a full disk as 507; the rest as the host's own failure.
impl crate::described::Described for StoreError {
    fn describe(&self) -> crate::described::Description {
        use crate::described::Description;
        use http::StatusCode;
        match self {
            StoreError::NotFound(id) => {
                Description::not_found(format!("no memory or record `{id}`"))
            }
            StoreError::NoConversation(_) => Description::not_found(self.to_string()),
            StoreError::OtherUsers { .. } => Description::new(
                StatusCode::CONFLICT,
                "owned-by-another-user",
                format!(
                    "{}: choose another id",
                    crate::term_text::shown(&self.to_string())
                ),
            ),
            StoreError::Invalid { field, reason } => Description::invalid_field(*field, reason),
            StoreError::SecretRefused(e) => e.describe(),
            StoreError::Import { .. } => Description::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-import",
                format!("{self}; nothing was imported"),
            ),
            StoreError::Dangling(reason) => Description::new(
                StatusCode::CONFLICT,
                "unknown-reference",
                format!("{reason}; nothing was imported"),
            ),
            StoreError::Sqlite(e) if crate::sqlite::is_disk_full(e) => {
                Description::disk_full("Second Brain")
            }
            StoreError::Sql(e) => crate::sql::describe(e, "Second Brain"),
            StoreError::Open { .. }
            | StoreError::Schema(_)
            | StoreError::Index(_)
            | StoreError::Encoder(_)
            | StoreError::Sqlite(_)
            | StoreError::SqliteOnly
            | StoreError::GroupFailed(_) => Description::internal("Second Brain"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// A memory that says nothing but a secret ("User's password is hunter2"): refused
/// by every store, nothing written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the memory is nothing but a secret ({kinds}); secrets are never stored: say what it is for without its value"
)]
pub struct SecretRefused {
    pub kinds: String,
}

/// 422 `secret-refused`, on the memory's `summary`.
impl crate::described::Described for SecretRefused {
    fn describe(&self) -> crate::described::Description {
        crate::described::Description::new(
            http::StatusCode::UNPROCESSABLE_ENTITY,
            "secret-refused",
            self.to_string(),
        )
        .on("summary")
    }
}

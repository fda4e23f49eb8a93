//! `GET /api/backup`: the data directory as tar.gz, consistent while the daemon runs
//! (`backup.rs`). The person's only: it holds the tokens and every user's memory.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::blocking;
use super::error::{ApiError, Problem};
use crate::app::App;
use crate::credentials::{PersonAct, Principal};

pub const GZIP: &str = "application/gzip";

#[utoipa::path(get, path = "/api/backup", tag = "backup",
    summary = "A consistent copy of the data directory",
    description = "tar.gz of every file under the data directory, each SQLite database as of one read transaction (`VACUUM INTO`); the lock, `daemon.json` and `cache/` are left out. The operator token or a dashboard session only (403 `person-required` for the agent's). Restore by unpacking it into an empty data directory while no daemon runs.",
    responses(
        (status = 200, content_type = "application/gzip", body = Vec<u8>, description = "tar.gz"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The disk is full: no copy could be made", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn backup(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
) -> Result<impl IntoResponse, ApiError> {
    principal.require(PersonAct::Backup)?;
    let body = blocking(move || {
        let scratch = tempfile::tempdir_in(app.data.cache_dir())
            .map_err(|e| ApiError::internal("backup scratch directory", &e))?;
        let mut out = Vec::new();
        crate::backup::write(app.data.root(), scratch.path(), &mut out)?;
        Ok(out)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, GZIP)], body))
}

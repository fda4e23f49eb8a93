//! `engram backup [--output FILE]`: the running daemon's consistent copy of the data
//! directory (`GET /api/backup`, `backup.rs`), written to FILE (private to the user:
//! it holds the tokens and every memory). Exit codes: 0 written, 1 failed, 3 no
//! daemon (stop-and-copy the directory instead when none runs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use reqwest::Method;

use super::client::{Acting, DaemonClient, Endpoint, URL_ENV};
use crate::credentials::OPERATOR_TOKEN_ENV;

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where to write the tar.gz [default: engram-backup-<UTC time>.tar.gz here]
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Daemon URL [default: the `url` in {data_dir}/daemon.json]
    #[arg(long, env = URL_ENV, value_name = "URL")]
    pub url: Option<String>,
    /// The operator token [default: {data_dir}/operator-token]
    #[arg(long, env = OPERATOR_TOKEN_ENV, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
}

pub fn run(data_dir: &Path, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let endpoint = Endpoint::discover(data_dir, args.url, args.token, Acting::Person)?;
    let client = DaemonClient::with_timeout(endpoint, super::transfer::TRANSFER_TIMEOUT)?;
    let output = args.output.unwrap_or_else(|| {
        let now =
            crate::time::rfc3339::format(crate::time::Clock::now_ms(&crate::time::SystemClock));
        PathBuf::from(format!("engram-backup-{}.tar.gz", now.replace(':', "")))
    });
    let bytes = client.send::<()>(Method::GET, "/api/backup", &[], None)?;
    super::transfer::write_private(&output, &bytes)?;
    println!(
        "wrote {} ({} bytes): unpack it into an empty data directory, with no daemon running, to restore",
        output.display(),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}

//! `engram registry build <skills> <out>` makes a registry directory from a folder of
//! one's own skills (`skills/registry/build.rs`). `engram registry serve <dir>
//! [--listen 127.0.0.1:0]`: serves a directory laid out
//! like a registry mirror over `mercury-skills-registry@1` (see
//! `skills/registry_server.rs`), for a team's private registry or for tests. Prints
//! `listening on http://ADDR` as its first line, like `engram serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Serve a registry directory (api/feed.json, api/skills/..., categories/...)
    Serve {
        /// The directory, laid out like a registry mirror
        dir: PathBuf,
        /// Address to listen on (port 0 picks a free one); loopback unless you mean
        /// to share it
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// Make a registry directory from a folder of your own skills (<slug>/SKILL.md or
    /// <category>/<slug>/SKILL.md): feed, hashes, tarballs; serve it with `registry serve`
    Build {
        /// The folder of skills
        skills: PathBuf,
        /// Where to write the registry
        out: PathBuf,
    },
}

pub fn run(command: RegistryCommand) -> anyhow::Result<ExitCode> {
    match command {
        RegistryCommand::Serve { dir, listen } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            runtime.block_on(crate::skills::registry::server::serve(&dir, listen))?;
            Ok(ExitCode::SUCCESS)
        }
        RegistryCommand::Build { skills, out } => {
            let now =
                crate::time::rfc3339::format(crate::time::Clock::now_ms(&crate::time::SystemClock));
            let built = crate::skills::registry::build::build(&skills, &out, &now)?;
            println!(
                "built a registry of {} skills in {}: {}",
                built.skills.len(),
                out.display(),
                built.skills.join(", ")
            );
            println!(
                "serve it with `engram registry serve {}`, and point Engram at it with ENGRAM_SKILLS_REGISTRY or skills.registry",
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

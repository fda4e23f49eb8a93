//! `engram plugins build DIR`: `cargo build --release --target wasm32-wasip2` in the
//! crate, then the component cargo reports for it is loaded by the runtime (it must
//! implement the world plugin.toml declares) and only then put at `DIR/plugin.wasm`,
//! beside `DIR/plugin.toml`: the directory is then a package `install` takes as it is.
//! Cargo's own messages go to stderr as usual; the environment (`CARGO_TARGET_DIR`,
//! `CARGO_NET_OFFLINE`, ...) is the user's.

use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::runtime::{Manifest, PluginSource, Runtime, World};

pub const TARGET: &str = "wasm32-wasip2";

#[derive(Debug, Serialize)]
pub struct Built {
    pub name: String,
    pub version: String,
    pub world: World,
    /// `DIR/plugin.wasm`.
    pub wasm: PathBuf,
    pub wasm_bytes: usize,
    pub sha256: String,
}

pub fn build(runtime: &Runtime, dir: &Path) -> anyhow::Result<Built> {
    let manifest = Manifest::load(dir)?;
    let cargo_toml = dir.join("Cargo.toml");
    if !cargo_toml.is_file() {
        bail!(
            "{} has no Cargo.toml: give the directory of a plugin crate (`engram plugins new` writes one)",
            dir.display()
        );
    }
    let artifact = cargo_build(&cargo_toml)?;
    let wasm =
        std::fs::read(&artifact).with_context(|| format!("cannot read {}", artifact.display()))?;
    // Loading compiles the component and checks its world before anything is written.
    runtime.load(
        manifest.clone(),
        &wasm,
        PluginSource::Directory(dir.to_path_buf()),
    )?;
    let target = dir.join("plugin.wasm");
    let staging = dir.join(format!(".plugin.wasm.{}", std::process::id()));
    std::fs::write(&staging, &wasm)
        .and_then(|()| std::fs::rename(&staging, &target))
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok(Built {
        name: manifest.name,
        version: manifest.version,
        world: manifest.world,
        wasm: target,
        wasm_bytes: wasm.len(),
        sha256: hex::encode(Sha256::digest(&wasm)),
    })
}

/// Runs cargo and returns the `.wasm` it reports for the crate of `cargo_toml`.
fn cargo_build(cargo_toml: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut child = Command::new(&cargo)
        .args(["build", "--release", "--target", TARGET])
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(cargo_toml)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run {}: is Rust installed (https://rustup.rs)?",
                cargo.to_string_lossy()
            )
        })?;
    let wanted = cargo_toml.canonicalize().ok();
    let mut artifact = None;
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let ours = message["reason"] == "compiler-artifact"
                && message["manifest_path"]
                    .as_str()
                    .and_then(|p| Path::new(p).canonicalize().ok())
                    == wanted;
            if !ours {
                continue;
            }
            if let Some(files) = message["filenames"].as_array() {
                artifact = files
                    .iter()
                    .filter_map(|f| f.as_str())
                    .find(|f| f.ends_with(".wasm"))
                    .map(PathBuf::from)
                    .or(artifact);
            }
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!(
            "cargo build failed ({status}); its messages are above. A missing target is added with `rustup target add {TARGET}`"
        );
    }
    artifact.ok_or_else(|| {
        anyhow::anyhow!(
            "cargo built no .wasm for {}: is the crate a `cdylib` (`[lib] crate-type = [\"cdylib\"]`)?",
            cargo_toml.display()
        )
    })
}

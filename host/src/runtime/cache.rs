//! The compile cache: components are compiled once and kept, precompiled, under
//! `{data_dir}/cache/components/<sha256(wasm)>-<engine fingerprint>.cwasm`. A later
//! load deserialises the artifact instead of running Cranelift again.

use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::error::PluginError;

pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// How a component was obtained, for logs and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Compiled,
}

impl CompileCache {
    /// A cache in `dir`; `None` compiles every time (one-off CLI inspection).
    pub fn new(dir: Option<PathBuf>) -> CompileCache {
        CompileCache { dir }
    }

    pub fn artifact_path(&self, wasm_sha256: &str, fingerprint: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{wasm_sha256}-{fingerprint}.cwasm")))
    }

    /// The component for `wasm`, from the cache when possible. `name` is for errors.
    pub fn load(
        &self,
        engine: &Engine,
        fingerprint: &str,
        name: &str,
        wasm: &[u8],
        wasm_sha256: &str,
    ) -> Result<(Component, CacheOutcome), PluginError> {
        let artifact = self.artifact_path(wasm_sha256, fingerprint);
        if let Some(path) = &artifact
            && let Ok(bytes) = std::fs::read(path)
        {
            // The artifact is read into memory rather than mapped with
            // `deserialize_file`: a mapped file truncated by another process (a user
            // clearing the cache, a full disk) would kill the daemon with SIGBUS.
            // SAFETY: the bytes were written by `Component::serialize` of an engine
            // with the same fingerprint, into the user's own data directory; wasmtime
            // checks their header and version before use, and bytes that fail those
            // checks are recompiled below.
            match unsafe { Component::deserialize(engine, &bytes) } {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                Err(e) => tracing::warn!(
                    path = %path.display(),
                    "discarding unusable compile-cache entry: {e}"
                ),
            }
        }
        let component = compile(engine, name, wasm)?;
        if let Some(path) = &artifact
            && let Err(e) = store(&component, path)
        {
            tracing::warn!(path = %path.display(), "cannot write compile cache: {e}");
        }
        Ok((component, CacheOutcome::Compiled))
    }
}

pub fn compile(engine: &Engine, name: &str, wasm: &[u8]) -> Result<Component, PluginError> {
    if wasm.len() < 8 || wasm[..4] != *b"\0asm" {
        return Err(PluginError::NotAComponent {
            name: name.to_string(),
            reason: "the file does not start with the WebAssembly magic bytes".into(),
        });
    }
    // A core module has version 1 / layer 0; a component has layer 1.
    if wasm[4..8] == [1, 0, 0, 0] {
        return Err(PluginError::NotAComponent {
            name: name.to_string(),
            reason: "it is a core WebAssembly module; build it as a component (wasm32-wasip2)"
                .into(),
        });
    }
    Component::new(engine, wasm).map_err(|e| PluginError::NotAComponent {
        name: name.to_string(),
        reason: format!("{e:#}"),
    })
}

/// Writes the artifact atomically: a half-written file is never seen under its name.
fn store(component: &Component, path: &Path) -> std::io::Result<()> {
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

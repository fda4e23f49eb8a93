//! Which outside tools of the end-to-end suite this machine has: the test virtualenv
//! (`target/test-venv`, or `ENGRAM_TEST_PYTHON`: the MCP Python SDK and Schemathesis)
//! and Chromium with ChromeDriver (on `PATH`, or `ENGRAM_CHROMIUM` /
//! `ENGRAM_CHROMEDRIVER`). Each found sets a cfg (`test_venv`, `browser`); the tests
//! that need a missing one are compiled `#[ignore]` with the reason, so a local run
//! counts them as ignored rather than as passed. Under CI (`CI` set) both cfgs are
//! always set: there a missing tool fails its tests.
//!
//! The answer is kept until an input below changes: after installing a tool, run
//! `touch tests/build.rs` (or set the variable) for the next build to see it.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(test_venv)");
    println!("cargo::rustc-check-cfg=cfg(browser)");
    for var in [
        "CI",
        "ENGRAM_TEST_PYTHON",
        "ENGRAM_CHROMIUM",
        "ENGRAM_CHROMEDRIVER",
        "PATH",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    let ci = std::env::var_os("CI").is_some();

    let python = match std::env::var_os("ENGRAM_TEST_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None => target_dir().map(|target| target.join("test-venv/bin/python")),
    };
    if let Some(python) = python.filter(|p| p.is_file()) {
        watch(&python);
        println!("cargo::rustc-cfg=test_venv");
    } else if ci {
        println!("cargo::rustc-cfg=test_venv");
    }

    let chromium = find(
        "ENGRAM_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    let driver = find("ENGRAM_CHROMEDRIVER", &["chromedriver"]);
    if let (Some(chromium), Some(driver)) = (&chromium, &driver) {
        watch(chromium);
        watch(driver);
        println!("cargo::rustc-cfg=browser");
    } else if ci {
        println!("cargo::rustc-cfg=browser");
    }
}

/// Reruns this script when `path` changes or goes.
fn watch(path: &Path) {
    println!("cargo::rerun-if-changed={}", path.display());
}

/// The target directory the tests' binaries are built in (where `.ci/run` puts the
/// virtualenv): the one holding Cargo's `CACHEDIR.TAG` above `OUT_DIR`.
fn target_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    out.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
}

/// The tool `env` names, else the first of `names` on `PATH`.
fn find(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

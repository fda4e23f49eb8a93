//! Builds every guest crate under `plugins/` for wasm32-wasip2 and embeds the default
//! strategies in the binary.
//!
//! - Packages directly under `plugins/` that have a `plugin.toml` are embedded
//!   (`builtin:<name>`); those under `plugins/testing/` are only assembled for tests.
//! - Crates under `plugins/skill-scripts/` are skill scripts (world `skill-tool`):
//!   embedded as `SKILL_SCRIPTS` (name, wasm and the optional `script.toml`) for
//!   skills to ship as `scripts/<name>.wasm`, and copied to `SKILL_SCRIPTS_DIR`.
//! - The guest build is a separate cargo invocation with its own target directory and
//!   a cleaned environment (no CARGO_*, RUSTFLAGS or wrappers of this build leak into
//!   it), so host flags such as clippy's wrapper or coverage instrumentation never
//!   reach the wasm build.
//! - A missing wasm32-wasip2 target is installed with rustup (with a warning); when
//!   that is impossible the build stops with the command to run.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ has a parent")
        .to_path_buf();
    let plugins = root.join("plugins");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    watch(&root.join("wit"));
    watch(&plugins);

    ensure_target();
    let target_dir = guest_target_dir(&out_dir);
    build_guests(&plugins, &target_dir);

    let release = target_dir.join(TARGET).join("release");
    let packages = out_dir.join("packages");
    let mut builtins = String::from("pub static BUILTINS: &[Builtin] = &[\n");
    for (dir, embedded) in guest_packages(&plugins) {
        let (name, wasm) = built_guest(&dir, &release);
        let package = packages.join(&name);
        std::fs::create_dir_all(&package).expect("create package dir");
        copy(&dir.join("plugin.toml"), &package.join("plugin.toml"));
        copy(&wasm, &package.join("plugin.wasm"));
        if embedded {
            writeln!(
                builtins,
                "    Builtin {{ name: {name:?}, manifest: include_str!({:?}), wasm: include_bytes!({:?}) }},",
                package.join("plugin.toml"),
                package.join("plugin.wasm"),
            )
            .expect("write to string");
        }
    }
    builtins.push_str("];\n");
    let scripts = out_dir.join("skill-scripts");
    std::fs::create_dir_all(&scripts).expect("create skill-scripts dir");
    builtins.push_str("pub static SKILL_SCRIPTS: &[SkillScript] = &[\n");
    for dir in skill_scripts(&plugins) {
        let (name, wasm) = built_guest(&dir, &release);
        let target = scripts.join(format!("{name}.wasm"));
        copy(&wasm, &target);
        let manifest = dir.join("script.toml");
        let manifest = if manifest.is_file() {
            let copied = scripts.join(format!("{name}.toml"));
            copy(&manifest, &copied);
            format!("Some(include_str!({copied:?}))")
        } else {
            "None".to_string()
        };
        writeln!(
            builtins,
            "    SkillScript {{ name: {name:?}, manifest: {manifest}, wasm: include_bytes!({target:?}) }},",
        )
        .expect("write to string");
    }
    builtins.push_str("];\n");
    writeln!(
        builtins,
        "/// The built skill scripts as `<name>.wasm` (and `<name>.toml`), for tests.\n#[doc(hidden)]\npub const SKILL_SCRIPTS_DIR: &str = {:?};",
        scripts
    )
    .expect("write to string");
    writeln!(
        builtins,
        "/// Every guest package (embedded and test-only) assembled by the build, for tests.\n#[doc(hidden)]\npub const GUEST_PACKAGES_DIR: &str = {:?};",
        packages
    )
    .expect("write to string");
    std::fs::write(out_dir.join("builtins.rs"), builtins).expect("write builtins.rs");
}

/// Packages to assemble: `(dir, embedded)`.
fn guest_packages(plugins: &Path) -> Vec<(PathBuf, bool)> {
    let mut found = Vec::new();
    for (parent, embedded) in [
        (plugins.to_path_buf(), true),
        (plugins.join("testing"), false),
    ] {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let dir = entry.path();
            if dir.join("plugin.toml").is_file() && dir.join("Cargo.toml").is_file() {
                found.push((dir, embedded));
            }
        }
    }
    found.sort();
    found
}

/// Skill-script crates: `plugins/skill-scripts/<name>/Cargo.toml`.
fn skill_scripts(plugins: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(plugins.join("skill-scripts")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .collect();
    found.sort();
    found
}

/// Reruns the build script when any source file changes, skipping build output.
fn watch(dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            watch(&path);
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// `<target>/engram-plugins`, shared by the debug, release and clippy builds so the
/// guests compile once; the build-script layout is `<target>[/<triple>]/<profile>/build/<pkg>/out`.
fn guest_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("engram-plugins"))
        .unwrap_or_else(|| out_dir.join("engram-plugins"))
}

fn rustc() -> String {
    env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

fn ensure_target() {
    let sysroot = Command::new(rustc())
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = |sysroot: &Option<PathBuf>| {
        sysroot
            .as_ref()
            .is_some_and(|s| s.join("lib/rustlib").join(TARGET).join("lib").is_dir())
    };
    if installed(&sysroot) {
        return;
    }
    let toolchain = sysroot
        .as_ref()
        .and_then(|s| s.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", TARGET]);
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    println!(
        "cargo:warning=the {TARGET} target was missing; installing it with `rustup target add {TARGET}`"
    );
    match rustup.status() {
        Ok(status) if status.success() => {}
        _ => fail(&format!(
            "the {TARGET} target is not installed and rustup could not install it.\n\
             Run this, then build again:\n\n    rustup target add {TARGET}{}\n",
            toolchain
                .map(|t| format!(" --toolchain {t}"))
                .unwrap_or_default()
        )),
    }
}

fn build_guests(plugins: &Path, target_dir: &Path) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(plugins)
        .args([
            "build",
            "--release",
            "--target",
            TARGET,
            "--workspace",
            "--target-dir",
        ])
        .arg(target_dir);
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || matches!(
                key,
                "RUSTFLAGS" | "RUSTDOCFLAGS" | "RUSTC_WRAPPER" | "RUSTC_WORKSPACE_WRAPPER"
            );
        if leaks {
            command.env_remove(key);
        }
    }
    let output = command
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo for the guest build: {e}")));
    if !output.status.success() {
        fail(&format!(
            "building the plugins in {} for {TARGET} failed:\n{}",
            plugins.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
}

fn copy(from: &Path, to: &Path) {
    // Only rewrite when the bytes differ, so include_bytes! users do not rebuild needlessly.
    let new = std::fs::read(from)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", from.display())));
    if std::fs::read(to).ok().as_deref() != Some(new.as_slice()) {
        std::fs::write(to, new)
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", to.display())));
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    panic!("{message}");
}

/// The crate name of the guest in `dir` and the component the guest build produced for
/// it in `release` (cargo names the artifact after the crate, with underscores).
fn built_guest(dir: &Path, release: &Path) -> (String, PathBuf) {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("guest dirs have UTF-8 names")
        .to_string();
    let wasm = release.join(format!("{}.wasm", name.replace('-', "_")));
    if !wasm.is_file() {
        fail(&format!(
            "the guest build did not produce {}",
            wasm.display()
        ));
    }
    (name, wasm)
}

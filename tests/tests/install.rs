//! The install path a user takes from a clone: `cargo install --locked --path host`
//! puts `engram` where cargo installs binaries, and that binary runs. Installed here
//! with `--debug` into a temporary root: it reuses the workspace's target directory,
//! which `cargo test` has just built, so it links rather than rebuilds (a release
//! install compiles every dependency again, for tens of minutes on CI's two cores).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use engram_e2e::output_within;

#[test]
fn cargo_install_puts_a_working_engram_on_the_path() {
    // Cargo sets CARGO for the tests it runs: the same toolchain builds the install.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let root = tempfile::tempdir().expect("install root");
    let installed = output_within(
        Command::new(&cargo)
            .current_dir(workspace)
            .args(["install", "--locked", "--debug", "--path", "host", "--root"])
            .arg(root.path())
            .env_remove("CARGO_TARGET_DIR"),
        Duration::from_secs(1800),
    );
    assert!(
        installed.status.success(),
        "cargo install failed: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let bin = root
        .path()
        .join("bin")
        .join(format!("engram{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} is missing", bin.display());
    // On PATH, as a shell finds it.
    let path = std::env::join_paths(std::iter::once(root.path().join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let version = output_within(
        Command::new("sh")
            .args(["-c", "engram --version"])
            .env("PATH", &path),
        Duration::from_secs(60),
    );
    assert!(version.status.success());
    let text = String::from_utf8_lossy(&version.stdout);
    let schema = engram::memory::SCHEMA_VERSION;
    assert_eq!(
        text.trim(),
        format!(
            "engram {} (Second Brain schema {schema})",
            env!("CARGO_PKG_VERSION")
        )
    );

    // The next step of the README, with the installed binary in a temporary home: the
    // service it writes runs that binary (where cargo put it), not the clone's build.
    // `--no-start`: no systemd runs here (first_start.rs checks the enabling).
    #[cfg(target_os = "linux")]
    {
        let home = root.path().join("home");
        let data = root.path().join("data");
        let service = output_within(
            Command::new("sh")
                .args([
                    "-c",
                    "engram --data-dir \"$1\" service install --no-start",
                    "sh",
                ])
                .arg(&data)
                .env("PATH", &path)
                .env("HOME", &home)
                .env_remove("XDG_CONFIG_HOME")
                .env_remove("ENGRAM_DATA_DIR"),
            Duration::from_secs(60),
        );
        assert!(
            service.status.success(),
            "{}",
            String::from_utf8_lossy(&service.stderr)
        );
        let unit = std::fs::read_to_string(home.join(".config/systemd/user/engram.service"))
            .expect("the unit");
        let installed = bin.canonicalize().expect("installed binary");
        assert!(
            unit.contains(&format!(
                "ExecStart=\"{}\" serve --data-dir \"{}\" --log-format json",
                installed.display(),
                data.display()
            )),
            "{unit}"
        );
    }
}

//! End-to-end: the OpenAPI document is the contract. Schemathesis (PyPI `schemathesis`,
//! a fuzzer no one here wrote) reads `GET /api/openapi.json` from a fresh daemon and
//! checks every operation against the server with all its checks: statuses, content
//! types, headers and bodies as documented, schema-valid requests accepted and
//! schema-violating ones refused, credentials required, and the stateful links from
//! the operations that create something to the ones that use its id. The skills
//! registry is `engram registry serve` over tests/fixtures/registry-mirror on loopback.
//!
//! The run is bounded so that its time is predictable: a fixed seed, at most
//! `MAX_EXAMPLES` generated cases per operation and phase. Its configuration (and any
//! exclusion, with its reason; the README lists them) is tests/openapi/schemathesis.toml;
//! tests/openapi/hooks.py writes the import's JSON lines.
//!
//! Schemathesis lives in the test suite's virtualenv, `target/test-venv` (see
//! [`engram_e2e::test_python`]): without it the test is ignored, except under CI,
//! where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use engram_e2e::{Daemon, Listening, TOKEN, engram, fixtures};

/// Generated cases per operation and phase.
const MAX_EXAMPLES: &str = "25";
/// The fuzzer's seed: the same cases on every run.
const SEED: &str = "20";

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi")
}

#[test]
#[cfg_attr(
    not(test_venv),
    ignore = "needs target/test-venv (tests/requirements.txt; .ci/run makes it)"
)]
fn schemathesis_finds_no_gap_between_the_document_and_the_server() {
    let python = engram_e2e::test_python("openapi");
    let st = python.with_file_name("st");
    assert!(
        st.is_file(),
        "{} is missing: pip install -r tests/requirements.txt",
        st.display()
    );
    let registry = Listening::registry(&fixtures().join("registry-mirror"));
    let data = tempfile::tempdir().expect("data dir");
    std::fs::write(
        data.path().join("config.yaml"),
        format!("skills:\n  registry: {}\n", registry.url()),
    )
    .expect("config");
    let daemon = Daemon::start(&mut engram(data.path()));
    let reports = tempfile::tempdir().expect("reports dir");
    let output = Command::new(&st)
        .arg("--config-file")
        .arg(here().join("schemathesis.toml"))
        .arg("run")
        .arg(format!("{}/api/openapi.json", daemon.url()))
        .args([
            "--checks",
            "all",
            "--seed",
            SEED,
            "--max-examples",
            MAX_EXAMPLES,
        ])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--no-color", "--report", "junit", "--report-dir"])
        .arg(reports.path())
        .env("SCHEMATHESIS_HOOKS", here().join("hooks.py"))
        // Schemathesis keeps a cache in its working directory: not in the repository.
        .current_dir(reports.path())
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&output.stdout);
    eprintln!("{report}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "Schemathesis found a gap between the OpenAPI document and the server (its report is above)"
    );
    assert!(
        report.contains("Operations:"),
        "the run tested nothing: {report}"
    );
    assert!(
        report.contains("passed"),
        "the run tested nothing: {report}"
    );
    // The daemon survived the whole run.
    assert_eq!(daemon.get("/healthz").status, 200);
}

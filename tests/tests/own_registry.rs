//! End-to-end: a team's own registry. `engram registry build` turns a folder of
//! skills into a registry, `engram registry serve` hosts it, and both the CLI and the
//! daemon install from it when `ENGRAM_SKILLS_REGISTRY` names it. `engram skills
//! doctor` offline, and `engram skills scan`.

use std::path::Path;
use std::time::Duration;

use engram_e2e::{Daemon, Listening, engram, ok, output_within};
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
    std::fs::write(path, text).expect("write");
}

fn team_skills(root: &Path) {
    write(
        &root.join("team-notes/SKILL.md"),
        "---\nname: team-notes\ndescription: Writes meeting notes in the team's format.\nversion: 1.2.0\ntags: [notes]\n---\n\n# Team notes\n\nUse the template in references/template.md.\n",
    );
    write(
        &root.join("team-notes/references/template.md"),
        "## Decisions\n",
    );
    write(
        &root.join("ops/deploy-check/SKILL.md"),
        "---\nname: deploy-check\ndescription: Checks a deploy against the runbook.\n---\n\nRead the runbook first.\n",
    );
}

#[test]
fn a_registry_built_from_a_folder_serves_installs_to_the_cli_and_the_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let skills = dir.path().join("skills");
    let out = dir.path().join("registry");
    team_skills(&skills);
    let built = output_within(
        engram(dir.path())
            .args(["registry", "build"])
            .arg(&skills)
            .arg(&out),
        Duration::from_secs(60),
    );
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let text = String::from_utf8_lossy(&built.stdout);
    assert!(
        text.contains("general/team-notes") && text.contains("ops/deploy-check"),
        "{text}"
    );
    let registry = Listening::registry(&out);
    let feed = registry.get("/api/feed.json").json();
    assert_eq!(feed["count"], 2);

    // The CLI, through ENGRAM_SKILLS_REGISTRY: the skill and its reference file.
    let data = dir.path().join("data");
    let installed = output_within(
        engram(&data)
            .args(["skills", "install", "team-notes", "--json"])
            .env("ENGRAM_SKILLS_REGISTRY", registry.url()),
        Duration::from_secs(60),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stdout)
    );
    let skill_dir = data.join("skills/general/team-notes");
    assert_eq!(
        std::fs::read_to_string(skill_dir.join("references/template.md")).expect("reference"),
        "## Decisions\n"
    );

    // The daemon honours the same variable.
    let daemon = Daemon::start(engram(&data).env("ENGRAM_SKILLS_REGISTRY", registry.url()));
    let done = ok(
        daemon.person().call(
            "POST",
            "/api/skills/install-from-registry",
            &json!({"id": "ops/deploy-check"}).to_string(),
        ),
        200,
    );
    assert_eq!(done["status"], "installed");
    assert_eq!(done["registry"], registry.url());

    // A skill the registry would refuse is refused at build, naming its file.
    write(
        &skills.join("bad/SKILL.md"),
        "---\nname: not-bad\ndescription: x\n---\nbody\n",
    );
    let refused = output_within(
        engram(dir.path())
            .args(["registry", "build"])
            .arg(&skills)
            .arg(dir.path().join("other")),
        Duration::from_secs(60),
    );
    assert_eq!(refused.status.code(), Some(1));
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("bad/SKILL.md"), "{error}");
    assert!(!dir.path().join("other").exists(), "nothing written");
}

#[test]
fn doctor_offline_says_only_the_registry_is_unreachable() {
    let data = tempfile::tempdir().expect("tempdir");
    // Nothing listens on port 9 of loopback (discard is not run on test machines).
    let doctor = output_within(
        engram(data.path())
            .args(["skills", "doctor", "--json"])
            .env("ENGRAM_SKILLS_REGISTRY", "http://127.0.0.1:9"),
        Duration::from_secs(60),
    );
    assert_eq!(
        doctor.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&doctor.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).expect("json");
    assert_eq!(report["ok"], true);
    assert_eq!(report["offline"], true);
    for check in report["checks"].as_array().expect("checks") {
        assert_ne!(check["status"], "fail", "{check}");
    }
}

#[test]
fn skills_scan_indexes_what_was_dropped_in_by_hand() {
    let data = tempfile::tempdir().expect("tempdir");
    let data = data.path();
    // The first run of the library seeds the built-ins.
    let listed = output_within(
        engram(data).args(["skills", "list"]),
        Duration::from_secs(60),
    );
    assert!(listed.status.success());
    write(
        &data.join("skills/by-hand/SKILL.md"),
        "---\nname: by-hand\ndescription: Dropped into the folder by hand.\n---\nbody\n",
    );
    let scanned = output_within(
        engram(data).args(["skills", "scan"]),
        Duration::from_secs(60),
    );
    assert!(
        scanned.status.success(),
        "{}",
        String::from_utf8_lossy(&scanned.stderr)
    );
    let text = String::from_utf8_lossy(&scanned.stdout);
    assert!(text.contains("added: by-hand"), "{text}");
    let again = output_within(
        engram(data).args(["skills", "scan"]),
        Duration::from_secs(60),
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("the index matches"));
}

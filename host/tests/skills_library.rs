//! The skills library on disk: installs and their statuses, the two layouts,
//! activation, removal, discovery, progressive disclosure, refusal of hostile names
//! and oversized or undecodable files, and crash safety: an install that fails or is
//! killed (SIGKILL, by re-executing this binary as a child) leaves no partial skill
//! and a valid index.

use std::path::{Path, PathBuf};

use engram::skills::{
    INDEX_FILE, InstallStatus, Library, SkillId, SkillPackage, Source, SourceKind, ToolConsent,
    load_skill_dir,
};

fn skill_md(name: &str, version: &str, body: &str) -> Vec<u8> {
    format!(
        "---\nname: {name}\ndescription: Does {name} things. Use it when {name} is asked for.\nversion: {version}\ntags: [t1, t2]\nintents:\n  - do {name}\nallowed-tools: fetch_url search_memory\n---\n{body}"
    )
    .into_bytes()
}

fn package(id: Option<&str>, md: Vec<u8>, files: &[(&str, &str)]) -> SkillPackage {
    let files = files
        .iter()
        .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
        .collect();
    SkillPackage::new(id.map(|i| SkillId::parse(i).unwrap()), md, files).unwrap()
}

fn source() -> Source {
    Source {
        kind: SourceKind::Url,
        url: Some("https://example.org/SKILL.md".into()),
        registry: None,
    }
}

fn library() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(dir.path().join("skills")).unwrap();
    (dir, library)
}

/// Names under the root, sorted, without the lock file.
fn root_names(library: &Library) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(library.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != ".lock")
        .collect();
    names.sort();
    names
}

#[test]
fn skills_install_statuses() {
    let (_dir, library) = library();
    let v1 = package(None, skill_md("web-search", "1.0.0", "# One\n"), &[]);
    let install = |p: &SkillPackage, force| {
        library
            .install(p, source(), force, ToolConsent::Confirmed)
            .unwrap()
    };

    let first = install(&v1, false);
    assert_eq!(first.status, InstallStatus::Installed);
    assert_eq!(first.id, "web-search");
    let installed_at = library.entry("web-search").unwrap().installed_at;
    assert_eq!(install(&v1, false).status, InstallStatus::AlreadyInstalled);
    assert_eq!(install(&v1, true).status, InstallStatus::Reinstalled);

    library.deactivate("web-search").unwrap();
    let v2 = package(None, skill_md("web-search", "1.1.0", "# One\n"), &[]);
    assert_eq!(install(&v2, false).status, InstallStatus::Updated);
    // Same version, different body: the sha changed, so it is an update too.
    let v2b = package(None, skill_md("web-search", "1.1.0", "# Two\n"), &[]);
    assert_eq!(install(&v2b, false).status, InstallStatus::Updated);

    let entry = library.entry("web-search").unwrap();
    assert_eq!(entry.version.as_deref(), Some("1.1.0"));
    assert_eq!(entry.sha256, v2b.skill().sha256);
    assert_eq!(
        entry.installed_at, installed_at,
        "an update keeps installed_at"
    );
    assert!(entry.updated_at >= entry.installed_at);
    assert!(!entry.active, "an update keeps the skill inactive");
    assert_eq!(entry.source.kind, SourceKind::Url);
    let on_disk = std::fs::read(library.root().join("web-search/SKILL.md")).unwrap();
    assert_eq!(on_disk, skill_md("web-search", "1.1.0", "# Two\n"));
    assert_eq!(root_names(&library), [INDEX_FILE, "web-search"]);

    // The directory was deleted by hand: the same package installs again.
    std::fs::remove_dir_all(library.root().join("web-search")).unwrap();
    assert_eq!(install(&v2b, false).status, InstallStatus::Installed);
    assert!(load_skill_dir(&library.root().join("web-search")).is_ok());
    assert_eq!(
        library.entry("web-search").unwrap().installed_at,
        installed_at
    );
}

#[test]
fn skills_layouts_activation_catalog_and_invocation() {
    let (_dir, library) = library();
    let flat = package(
        None,
        skill_md("web-search", "1.0.0", "# Web search\n\nSearch.\n"),
        &[
            ("scripts/search.py", "print(1)\n"),
            ("references/engines.md", "x\n"),
        ],
    );
    let reg = package(
        Some("development/clean-code"),
        skill_md("clean-code", "2.0.0", "# Clean\n"),
        &[("references/deep/rules.md", "r\n")],
    );
    library
        .install(&flat, source(), false, ToolConsent::Confirmed)
        .unwrap();
    let outcome = library
        .install(
            &reg,
            Source::of(SourceKind::Registry),
            false,
            ToolConsent::Confirmed,
        )
        .unwrap();
    assert_eq!(outcome.path, library.root().join("development/clean-code"));

    let index = library.list().unwrap();
    let json = serde_json::to_value(&index).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["skills"]["clean-code"]["id"], "development/clean-code");
    assert_eq!(
        json["skills"]["clean-code"]["path"],
        "development/clean-code"
    );
    assert_eq!(json["skills"]["clean-code"]["category"], "development");
    assert_eq!(json["skills"]["clean-code"]["source"]["kind"], "registry");
    assert_eq!(json["skills"]["web-search"]["active"], true);
    assert_eq!(json["skills"]["web-search"]["pinned"], false);

    // Progressive disclosure: the catalog has no body; invoking reads it.
    let (catalog, problems) = library.catalog().unwrap();
    assert!(problems.is_empty());
    let web = catalog.iter().find(|c| c.slug == "web-search").unwrap();
    assert_eq!(
        web.summary,
        "Does web-search things. Use it when web-search is asked for."
    );
    assert_eq!(web.intents, ["do web-search"]);
    assert!(
        !serde_json::to_string(&catalog)
            .unwrap()
            .contains("# Web search")
    );
    let invoked = library.invoke("web-search").unwrap();
    assert_eq!(invoked.body, "# Web search\n\nSearch.\n");
    assert_eq!(invoked.allowed_tools, ["fetch_url", "search_memory"]);
    assert_eq!(
        invoked.resources,
        ["references/engines.md", "scripts/search.py"]
    );
    assert_eq!(
        library.invoke("clean-code").unwrap().resources,
        ["references/deep/rules.md"]
    );

    library.deactivate("web-search").unwrap();
    assert!(!library.entry("web-search").unwrap().active);
    assert!(
        library.root().join("web-search/SKILL.md").is_file(),
        "stays on disk"
    );
    assert_eq!(library.invoke("web-search").unwrap_err().code(), "inactive");
    library.activate("web-search").unwrap();
    assert!(library.invoke("web-search").is_ok());

    library.remove("clean-code").unwrap();
    assert!(
        !library.root().join("development").exists(),
        "empty category removed"
    );
    assert_eq!(
        library.remove("clean-code").unwrap_err().code(),
        "not-found"
    );
    library.remove("web-search").unwrap();
    assert!(library.list().unwrap().skills.is_empty());
    assert_eq!(root_names(&library), [INDEX_FILE]);
}

#[test]
fn skills_slug_is_unique_across_layouts() {
    let (_dir, library) = library();
    let a = package(Some("dev/tool"), skill_md("tool", "1.0.0", "a\n"), &[]);
    let b = package(Some("ops/tool"), skill_md("tool", "1.0.0", "b\n"), &[]);
    library
        .install(&a, source(), false, ToolConsent::Confirmed)
        .unwrap();
    let e = library
        .install(&b, source(), false, ToolConsent::Confirmed)
        .unwrap_err();
    assert_eq!(e.code(), "slug-taken");
    let moved = library
        .install(&b, source(), true, ToolConsent::Confirmed)
        .unwrap();
    assert_eq!(moved.replaced.as_deref(), Some("dev/tool"));
    assert_eq!(moved.status, InstallStatus::Updated);
    assert!(!library.root().join("dev").exists());
    assert_eq!(library.entry("tool").unwrap().path, "ops/tool");

    // A flat skill cannot be installed over a category directory, nor a registry
    // skill inside a flat skill's directory.
    let flat_ops = package(Some("ops"), skill_md("ops", "1.0.0", "x\n"), &[]);
    assert_eq!(
        library
            .install(&flat_ops, source(), false, ToolConsent::Confirmed)
            .unwrap_err()
            .code(),
        "path-taken"
    );
    let web = package(None, skill_md("web", "1.0.0", "x\n"), &[]);
    library
        .install(&web, source(), false, ToolConsent::Confirmed)
        .unwrap();
    let nested = package(Some("web/inner"), skill_md("inner", "1.0.0", "x\n"), &[]);
    assert_eq!(
        library
            .install(&nested, source(), false, ToolConsent::Confirmed)
            .unwrap_err()
            .code(),
        "path-taken"
    );
}

fn write_skill_dir(dir: &Path, contents: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), contents).unwrap();
}

#[test]
fn skills_discovery_scan() {
    let (_dir, library) = library();
    let root = library.root().to_path_buf();
    let kept = package(None, skill_md("kept", "1.0.0", "k\n"), &[]);
    let gone = package(Some("cat/gone"), skill_md("gone", "1.0.0", "g\n"), &[]);
    library
        .install(&kept, source(), false, ToolConsent::Confirmed)
        .unwrap();
    library
        .install(&gone, source(), false, ToolConsent::Confirmed)
        .unwrap();

    write_skill_dir(
        &root.join("manual-one"),
        &skill_md("manual-one", "0.1.0", "m\n"),
    );
    write_skill_dir(
        &root.join("tools/manual-two"),
        &skill_md("Manual Two", "0.1.0", "m\n"),
    );
    write_skill_dir(
        &root.join("_template"),
        &skill_md("template", "0.0.0", "t\n"),
    );
    write_skill_dir(&root.join(".hidden"), &skill_md("hidden", "0.0.0", "h\n"));
    write_skill_dir(
        &root.join("Bad_Name"),
        &skill_md("Bad_Name", "1.0.0", "b\n"),
    );
    write_skill_dir(&root.join("broken"), b"---\nnever closed\n");
    // Copied from another agent: no frontmatter, a directory name that is no slug.
    write_skill_dir(
        &root.join("Meeting Notes"),
        b"# Meeting notes\n\nTurn a transcript into decisions and action items.\n",
    );
    // Its slug's place is taken: reported, left where it is.
    write_skill_dir(&root.join("Manual One"), &skill_md("x", "1.0.0", "x\n"));
    write_skill_dir(
        &root.join("other/kept"),
        &skill_md("kept", "1.0.0", "dup\n"),
    );
    std::fs::create_dir_all(root.join("notes/empty")).unwrap();
    std::fs::remove_dir_all(root.join("cat/gone")).unwrap();
    std::fs::write(
        root.join("kept/SKILL.md"),
        skill_md("kept", "1.0.1", "edited\n"),
    )
    .unwrap();

    let check = library.disk_check().unwrap();
    assert_eq!(
        check.unindexed,
        [
            "bad-name",
            "meeting-notes",
            "manual-one",
            "tools/manual-two"
        ]
    );
    let report = library.scan().unwrap();
    assert_eq!(
        report.added,
        ["bad-name", "meeting-notes", "manual-one", "manual-two"]
    );
    let renamed: Vec<(&str, &str)> = report
        .renamed
        .iter()
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    assert_eq!(
        renamed,
        [("Bad_Name", "bad-name"), ("Meeting Notes", "meeting-notes")]
    );
    assert!(root.join("meeting-notes/SKILL.md").is_file());
    assert!(!root.join("Meeting Notes").exists());
    assert_eq!(report.refreshed, ["kept"]);
    assert_eq!(report.dropped.len(), 1);
    assert_eq!(
        (
            report.dropped[0].slug.as_str(),
            report.dropped[0].path.as_str()
        ),
        ("gone", "cat/gone")
    );
    let problems: Vec<(&str, &str)> = report
        .problems
        .iter()
        .map(|p| (p.path.as_str(), p.code))
        .collect();
    assert_eq!(
        problems,
        [
            ("Manual One", "path-taken"),
            ("broken", "frontmatter-unclosed"),
            ("other/kept", "slug-taken"),
        ]
    );
    let index = library.list().unwrap();
    let manual = &index.skills["manual-two"];
    assert_eq!(manual.source.kind, SourceKind::Manual);
    assert_eq!(
        (manual.name.as_str(), manual.path.as_str()),
        ("Manual Two", "tools/manual-two")
    );
    assert!(manual.active);
    assert_eq!(index.skills["kept"].version.as_deref(), Some("1.0.1"));
    // The original directory name is the display name of a skill without `name`, in
    // the index and in the catalog, though its directory is now its slug.
    assert_eq!(index.skills["meeting-notes"].name, "Meeting Notes");
    assert_eq!(index.skills["bad-name"].name, "Bad_Name");
    let (catalog, _) = library.catalog().unwrap();
    let notes = catalog.iter().find(|c| c.slug == "meeting-notes").unwrap();
    assert_eq!(notes.name, "Meeting Notes");
    assert_eq!(
        notes.description,
        "Turn a transcript into decisions and action items."
    );
    assert_eq!(index.skills.len(), 5);

    // A second scan finds nothing new, and keeps the display names.
    let again = library.scan().unwrap();
    assert!(again.added.is_empty() && again.refreshed.is_empty() && again.dropped.is_empty());
    assert!(again.renamed.is_empty());
    assert_eq!(
        library.entry("meeting-notes").unwrap().name,
        "Meeting Notes"
    );
}

#[test]
fn skills_scan_rebuilds_an_unreadable_index() {
    let (_dir, library) = library();
    let p = package(None, skill_md("one", "1.0.0", "x\n"), &[]);
    library
        .install(&p, source(), false, ToolConsent::Confirmed)
        .unwrap();
    // A hand-edited index pointing out of the root is not trusted.
    let index_path = library.root().join(INDEX_FILE);
    let text = std::fs::read_to_string(&index_path).unwrap();
    std::fs::write(
        &index_path,
        text.replace("\"path\": \"one\"", "\"path\": \"../one\""),
    )
    .unwrap();
    assert_eq!(library.list().unwrap_err().code(), "index-corrupt");
    let report = library.scan().unwrap();
    assert!(report.index_reset.is_some());
    assert_eq!(report.added, ["one"]);
    assert_eq!(
        library.entry("one").unwrap().source.kind,
        SourceKind::Manual
    );
}

#[test]
fn skills_hostile_names_and_ids_are_refused() {
    let (dir, library) = library();
    let outside = dir.path().join("etc");
    std::fs::create_dir_all(&outside).unwrap();
    for name in [
        "../../etc/evil",
        "category/evil",
        "..",
        "\"evil\\u200b\"",
        "\"evil\\u202e\"",
        "\"evil\\U000E0041\"",
        "\"evil\\x00\"",
        "\"evil\\n\"",
    ] {
        let md = format!("---\nname: {name}\ndescription: d\n---\nbody\n");
        let e = SkillPackage::new(None, md.into_bytes(), vec![]).unwrap_err();
        assert!(
            ["name-path", "name-hidden-char"].contains(&e.code()),
            "{name}: {e}"
        );
    }
    for id in [
        "../x",
        "a/../../x",
        "a/b/c",
        "/x",
        "a\\b",
        "x\u{200b}",
        "a/\u{7}",
    ] {
        assert!(
            matches!(SkillId::parse(id), Err(engram::skills::IdError { .. })),
            "{id}"
        );
    }
    for slug in ["../etc", "..", "a/b", "/etc", "x\u{202e}"] {
        assert_eq!(library.remove(slug).unwrap_err().code(), "not-found");
        assert_eq!(library.activate(slug).unwrap_err().code(), "not-found");
        assert_eq!(library.invoke(slug).unwrap_err().code(), "not-found");
    }
    let e = SkillPackage::new(
        None,
        skill_md("ok", "1.0.0", "x\n"),
        vec![("scripts/../../../etc/passwd".into(), b"x".to_vec())],
    )
    .unwrap_err();
    assert_eq!(e.code(), "package-path");
    assert!(outside.read_dir().unwrap().next().is_none());
    assert_eq!(root_names(&library), Vec::<String>::new());
}

#[test]
fn skills_oversize_and_undecodable_files_are_refused() {
    let (_dir, library) = library();
    let mut big = skill_md("big", "1.0.0", "");
    big.resize(1024 * 1024 + 1, b'x');
    assert_eq!(
        SkillPackage::new(None, big.clone(), vec![])
            .unwrap_err()
            .code(),
        "file-too-large"
    );
    let mut latin1 = skill_md("latin", "1.0.0", "caf");
    latin1.push(0xE9);
    assert_eq!(
        SkillPackage::new(None, latin1.clone(), vec![])
            .unwrap_err()
            .code(),
        "not-utf8"
    );
    let huge_frontmatter = format!(
        "---\nname: a\ndescription: d\nx: \"{}\"\n---\n",
        "y".repeat(70_000)
    );
    assert_eq!(
        SkillPackage::new(None, huge_frontmatter.into_bytes(), vec![])
            .unwrap_err()
            .code(),
        "frontmatter-too-large"
    );
    // Nothing was written.
    assert_eq!(root_names(&library), Vec::<String>::new());

    // Found on disk, they are reported and never indexed.
    write_skill_dir(&library.root().join("big"), &big);
    write_skill_dir(&library.root().join("latin"), &latin1);
    let report = library.scan().unwrap();
    let codes: Vec<&str> = report.problems.iter().map(|p| p.code).collect();
    assert_eq!(codes, ["file-too-large", "not-utf8"]);
    assert!(report.added.is_empty());
    assert!(library.list().unwrap().skills.is_empty());
}

#[cfg(unix)]
#[test]
fn skills_symlinks_out_of_the_root_are_refused() {
    let (dir, library) = library();
    let elsewhere = dir.path().join("elsewhere/linked");
    write_skill_dir(&elsewhere, &skill_md("linked", "1.0.0", "secret\n"));
    std::os::unix::fs::symlink(&elsewhere, library.root().join("linked")).unwrap();
    // Nor under a name that is no slug, which would otherwise be renamed to one.
    std::os::unix::fs::symlink(&elsewhere, library.root().join("Linked Too")).unwrap();
    let report = library.scan().unwrap();
    assert_eq!(report.problems.len(), 2, "{report:?}");
    assert!(report.problems.iter().all(|p| p.code == "outside-root"));
    assert!(report.renamed.is_empty());
    assert!(library.root().join("Linked Too").symlink_metadata().is_ok());
    assert!(library.list().unwrap().skills.is_empty());

    // An install does not follow a category symlink out of the root either.
    let outside = dir.path().join("outside-category");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, library.root().join("dev")).unwrap();
    let p = package(Some("dev/tool"), skill_md("tool", "1.0.0", "x\n"), &[]);
    let e = library
        .install(&p, source(), false, ToolConsent::Confirmed)
        .unwrap_err();
    assert_eq!(e.code(), "outside-root");
    assert!(outside.read_dir().unwrap().next().is_none());
}

#[test]
fn skills_failed_install_leaves_no_partial_skill() {
    let (_dir, library) = library();
    let p = package(None, skill_md("one", "1.0.0", "x\n"), &[]);
    library
        .install(&p, source(), false, ToolConsent::Confirmed)
        .unwrap();
    let index_before = std::fs::read(library.root().join(INDEX_FILE)).unwrap();

    // A stray file where the category directory must go: the install fails after
    // staging, at the rename.
    std::fs::write(library.root().join("blocked"), b"not a directory").unwrap();
    let reg = package(
        Some("blocked/two"),
        skill_md("two", "1.0.0", "x\n"),
        &[("scripts/a.sh", "echo\n")],
    );
    let e = library
        .install(&reg, source(), false, ToolConsent::Confirmed)
        .unwrap_err();
    assert_eq!(e.code(), "io", "{e}");
    assert_eq!(root_names(&library), [INDEX_FILE, "blocked", "one"]);
    assert_eq!(
        std::fs::read(library.root().join(INDEX_FILE)).unwrap(),
        index_before
    );
    assert!(library.list().is_ok());
}

#[test]
fn skills_scan_settles_what_a_crash_left() {
    let (_dir, library) = library();
    let root = library.root().to_path_buf();
    let p = package(None, skill_md("one", "1.0.0", "x\n"), &[]);
    library
        .install(&p, source(), false, ToolConsent::Confirmed)
        .unwrap();
    let q = package(None, skill_md("two", "1.0.0", "x\n"), &[]);
    library
        .install(&q, source(), false, ToolConsent::Confirmed)
        .unwrap();

    // An install killed while writing its staging directory...
    let staging = root.join(".staging-01hzzzzzzzzzzzzzzzzzzzzzzz");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("SKILL.md"), b"---\nname: half").unwrap();
    // ...a replace killed after moving `one` aside, before the new one arrived...
    std::fs::rename(
        root.join("one"),
        root.join(".trash-01hzzzzzzzzzzzzzzzzzzzzzzz-one"),
    )
    .unwrap();
    // ...and a remove of `two` killed after saving the index, before deleting.
    let mut index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(INDEX_FILE)).unwrap()).unwrap();
    index["skills"].as_object_mut().unwrap().remove("two");
    std::fs::write(root.join(INDEX_FILE), serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::rename(
        root.join("two"),
        root.join(".trash-01hzzzzzzzzzzzzzzzzzzzzzzy-two"),
    )
    .unwrap();

    // Nothing partial is listed meanwhile.
    let listed: Vec<String> = library.list().unwrap().skills.into_keys().collect();
    assert_eq!(listed, ["one"]);

    let report = library.scan().unwrap();
    assert_eq!(report.recovered.len(), 3, "{report:?}");
    assert!(
        report.dropped.is_empty() && report.added.is_empty(),
        "{report:?}"
    );
    assert_eq!(root_names(&library), [INDEX_FILE, "one"]);
    assert!(load_skill_dir(&root.join("one")).is_ok());
}

// ---- SIGKILL during installs and removals ----

/// Set in the child: the skills root to work in.
const CHILD_ENV: &str = "ENGRAM_SKILLS_CRASH_CHILD";
const ACK: &str = "ENGRAM-SKILLS-ACK";
const ROUNDS: u64 = 6;

/// The child: installs, updates, deactivates and removes skills in a loop until killed.
/// `#[ignore]`: it runs only as the child its parent starts (`--ignored --exact`).
/// Every skill carries `scripts/version.txt` equal to its SKILL.md's version, so a
/// directory mixing two installs would be caught.
#[test]
#[ignore = "the child process of skills_killed_installs_leave_no_partial_skill, which runs it"]
fn skills_crash_child() {
    let root = std::env::var_os(CHILD_ENV).unwrap_or_else(|| {
        panic!("skills_crash_child runs as its parent's child, with {CHILD_ENV} set")
    });
    let library = Library::open(PathBuf::from(root)).unwrap();
    let body = "Step.\n".repeat(40_000);
    let started = std::time::Instant::now();
    for i in 0u64.. {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            break;
        }
        let version = format!("1.0.{i}");
        let id = match i % 4 {
            0 => "flat-a".to_string(),
            1 => "cat-x/reg-b".to_string(),
            2 => "flat-c".to_string(),
            _ => "cat-y/reg-d".to_string(),
        };
        let md = skill_md(id.rsplit('/').next().unwrap(), &version, &body);
        let p = package(Some(&id), md, &[("scripts/version.txt", &version)]);
        library
            .install(&p, source(), false, ToolConsent::Confirmed)
            .unwrap();
        if i % 5 == 0 {
            let _ = library.deactivate("flat-a");
        }
        if i % 7 == 0 {
            let _ = library.remove("reg-b");
        }
        println!("{ACK} {i}");
    }
}

/// A visible skill directory is complete: it validates and its files agree.
fn assert_complete(dir: &Path) {
    let skill = load_skill_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let version = std::fs::read_to_string(dir.join("scripts/version.txt")).unwrap();
    assert_eq!(skill.frontmatter.version.as_deref(), Some(version.as_str()));
}

fn visible_skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        if name.starts_with("cat-") {
            for sub in std::fs::read_dir(entry.path()).unwrap() {
                out.push(sub.unwrap().path());
            }
        } else {
            out.push(entry.path());
        }
    }
    out
}

#[cfg(unix)]
#[test]
fn skills_killed_installs_leave_no_partial_skill() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "--ignored",
                "skills_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait for a few completed operations, then kill at a varying moment. The
        // reader thread keeps draining stdout so the child never blocks on it.
        let stdout = child.stdout.take().unwrap();
        let (acks, acked) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with(ACK) && acks.send(()).is_err() {
                    break;
                }
            }
        });
        for _ in 0..=(2 + round) {
            acked
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the child stopped acknowledging operations");
        }
        std::thread::sleep(std::time::Duration::from_millis(3 + round * 7));
        child.kill().unwrap();
        child.wait().unwrap();

        // Straight after the kill: a valid index, and only complete skills visible.
        let library = Library::open(root.clone()).unwrap();
        library.list().unwrap();
        for skill_dir in visible_skill_dirs(&root) {
            assert_complete(&skill_dir);
        }
        // After a scan: index and disk agree, and no leftovers remain.
        library.scan().unwrap();
        let index = library.list().unwrap();
        for (slug, entry) in &index.skills {
            let dir = root.join(&entry.path);
            assert_complete(&dir);
            let skill = load_skill_dir(&dir).unwrap();
            assert_eq!(&skill.sha256, &entry.sha256, "{slug}");
        }
        assert_eq!(index.skills.len(), visible_skill_dirs(&root).len());
        let leftovers: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(".staging-") || n.starts_with(".trash-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn skills_catalog_follows_edits_and_state_changes() {
    let (_dir, library) = library();
    library
        .install(
            &package(None, skill_md("notes", "1.0.0", "Body."), &[]),
            source(),
            false,
            ToolConsent::Confirmed,
        )
        .expect("install");
    let description = |library: &Library| {
        let (entries, _) = library.catalog().expect("catalog");
        (entries[0].description.clone(), entries[0].active)
    };
    let (before, active) = description(&library);
    assert!(active);
    // Asked again with nothing changed: the same answer (from the cache).
    assert_eq!(description(&library), (before.clone(), true));

    // An edit of the SKILL.md by hand shows at once.
    let file = library.root().join("notes/SKILL.md");
    let edited = String::from_utf8(std::fs::read(&file).expect("read"))
        .expect("utf-8")
        .replace(&before, "Keeps notes, now with a longer description.");
    std::fs::write(&file, edited).expect("edit");
    assert_eq!(
        description(&library).0,
        "Keeps notes, now with a longer description."
    );

    // So does a change of state through the library.
    library.deactivate("notes").expect("deactivate");
    assert!(!description(&library).1);
}

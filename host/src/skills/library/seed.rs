//! The built-in skills, embedded in the binary from `skills/` at the repository root:
//! `web-search`, `tweet-notifier`, `screenshot` and `word-stats` (a skill with a
//! script), and `_template`, a SKILL.md to copy when writing a skill.
//!
//! - Seeding writes what is missing and never overwrites: a directory that already has
//!   a SKILL.md (a built-in the user edited, or anything else) is left exactly as it
//!   is, and so is a built-in whose slug another installed skill uses.
//! - The built-ins are installed like any skill (staged, renamed into place, indexed
//!   with source `seed`, active, announced as `skill.installed`), and like any skill
//!   their tools are granted only once the person confirms them.
//! - `_template` is not a skill: its name is not a slug, so it cannot be installed,
//!   addressed or routed to. It is written as a plain file, never indexed, and the
//!   discovery scan skips it (it skips every name starting with `_`). Its `name` is
//!   `my-skill`, so a copy renamed to `my-skill/` is a valid skill as it stands.
//! - A built-in may ship skill scripts ([`BUILTIN_SCRIPTS`]) and reference files
//!   ([`BUILTIN_REFERENCES`]): the scripts' wasm, embedded by the guest build, is
//!   written to `scripts/<name>.wasm` and the references under `references/` with the
//!   rest of the skill, only when the skill's directory is created (so never over
//!   anything). [`example`] is `word-stats`, the built-in with a script.
//! - `.seeded.json` at the skills root records which built-ins this data directory
//!   has been given. [`seed_new_builtins`] (every daemon start) seeds only those it
//!   does not list, so a built-in the user removed stays removed, and one that a
//!   newer release adds arrives once. [`seed_builtins`] (`engram skills doctor
//!   --seed-skills`) restores every missing one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::durable::{read_bounded, replace_file, sync_dir};
use super::error::LibraryError;
use super::index::{Source, SourceKind};
use super::install::ToolConsent;
use super::package::SkillPackage;
use super::{Library, TEMPLATE_DIR};
use crate::skills::SKILL_FILE;
use crate::skills::format::id::{SkillId, Slug};

/// The template's SKILL.md.
pub const TEMPLATE: &str = include_str!("../../../../skills/_template/SKILL.md");
/// The built-in skills: slug and SKILL.md, in seeding order.
pub const BUILTINS: &[(&str, &str)] = &[
    (
        "web-search",
        include_str!("../../../../skills/web-search/SKILL.md"),
    ),
    (
        "tweet-notifier",
        include_str!("../../../../skills/tweet-notifier/SKILL.md"),
    ),
    (
        "screenshot",
        include_str!("../../../../skills/screenshot/SKILL.md"),
    ),
    (example::SLUG, example::SKILL_MD),
];
/// Skill scripts a built-in ships: `(skill slug, script name)`. The script's wasm (and
/// its `<name>.toml`, if any) comes from the guest build
/// (`runtime::builtin::SKILL_SCRIPTS`) and is seeded as `scripts/<name>.wasm`.
pub const BUILTIN_SCRIPTS: &[(&str, &str)] = &[(example::SLUG, example::SCRIPT)];
/// Reference files a built-in ships: `(skill slug, [(path under the skill, text)])`.
pub const BUILTIN_REFERENCES: &[(&str, &[(&str, &str)])] = &[(example::SLUG, example::REFERENCES)];

/// The built-in skill with a script, `word-stats` (`skills/word-stats/`): its SKILL.md,
/// its reference file and its script (`plugins/skill-scripts/word-stats`).
pub mod example {
    pub const SLUG: &str = "word-stats";
    pub const SKILL_MD: &str = include_str!("../../../../skills/word-stats/SKILL.md");
    pub const SCRIPT: &str = "word-stats";
    /// Its `references/` files: path under the skill and content.
    pub const REFERENCES: &[(&str, &str)] = &[(
        "references/writing-guide.md",
        include_str!("../../../../skills/word-stats/references/writing-guide.md"),
    )];

    /// The example as an installable package: SKILL.md, references and its script.
    pub fn package() -> Result<super::SkillPackage, super::LibraryError> {
        let mut files: Vec<(String, Vec<u8>)> = REFERENCES
            .iter()
            .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
            .collect();
        files.extend(super::script_files(SCRIPT));
        super::SkillPackage::new(None, SKILL_MD.as_bytes().to_vec(), files)
    }
}

/// `scripts/<name>.wasm` (and `scripts/<name>.toml`) of an embedded skill script;
/// nothing when the build has no script of that name.
fn script_files(name: &str) -> Vec<(String, Vec<u8>)> {
    let Some(script) = crate::runtime::builtin::skill_script(name) else {
        tracing::warn!(script = name, "no embedded skill script of that name");
        return Vec::new();
    };
    let mut files = vec![(format!("scripts/{name}.wasm"), script.wasm.to_vec())];
    if let Some(manifest) = script.manifest {
        files.push((format!("scripts/{name}.toml"), manifest.as_bytes().to_vec()));
    }
    files
}

/// Every file a built-in ships besides its SKILL.md: references, then scripts.
fn builtin_files(slug: &str) -> Vec<(String, Vec<u8>)> {
    let references = BUILTIN_REFERENCES
        .iter()
        .filter(|(skill, _)| *skill == slug)
        .flat_map(|(_, files)| files.iter())
        .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()));
    let scripts = BUILTIN_SCRIPTS
        .iter()
        .filter(|(skill, _)| *skill == slug)
        .flat_map(|(_, script)| script_files(script));
    references.chain(scripts).collect()
}

/// Which built-ins this data directory has been given (see the module documentation).
pub const SEEDED_FILE: &str = ".seeded.json";
const MAX_SEEDED_BYTES: usize = 64 * 1024;

/// What a seeding wrote and what it left alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SeedReport {
    /// `_template` and the slugs of the built-ins written, in seeding order.
    pub written: Vec<String>,
    pub skipped: Vec<SeedSkip>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeedSkip {
    pub name: String,
    pub reason: SkipReason,
    /// Relative to the skills root: what is in the way.
    pub path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// The directory has a SKILL.md (perhaps edited): it is never overwritten.
    Exists,
    /// Another installed skill has the slug (at `path`).
    SlugTaken,
    /// Something that is not a skill directory is in the way.
    PathTaken,
    /// The team's database (PostgreSQL) has had it: installed as the team has it, or
    /// removed by someone, which a new daemon must not undo.
    Shared,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Seeded {
    seeded: BTreeSet<String>,
}

/// Writes `_template` and every built-in that is missing; never overwrites anything.
/// Idempotent: a second call writes only what was deleted in between.
pub fn seed_builtins(library: &Library) -> Result<SeedReport, LibraryError> {
    seed(library, |_| true)
}

/// Seeds the built-ins this data directory was never given: all of them on the first
/// start, later only those a newer release added. `None` when there was none.
pub fn seed_new_builtins(library: &Library) -> Result<Option<SeedReport>, LibraryError> {
    let seeded = {
        let _lock = library.lock(false)?;
        load_seeded(library)
    };
    if all_names().all(|name| seeded.seeded.contains(name)) {
        return Ok(None);
    }
    seed(library, |name| !seeded.seeded.contains(name)).map(Some)
}

fn all_names() -> impl Iterator<Item = &'static str> {
    std::iter::once(TEMPLATE_DIR).chain(BUILTINS.iter().map(|(name, _)| *name))
}

fn seed(library: &Library, wanted: impl Fn(&str) -> bool) -> Result<SeedReport, LibraryError> {
    let _lock = library.lock(true)?;
    let mut report = SeedReport::default();
    if wanted(TEMPLATE_DIR) {
        seed_template(library, &mut report)?;
    }
    for (name, skill_md) in BUILTINS {
        if wanted(name) {
            seed_skill(library, name, skill_md, &mut report)?;
        }
    }
    let mut seeded = load_seeded(library);
    seeded
        .seeded
        .extend(all_names().filter(|n| wanted(n)).map(str::to_string));
    let path = library.root().join(SEEDED_FILE);
    let mut json = serde_json::to_vec_pretty(&seeded).map_err(|e| LibraryError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    json.push(b'\n');
    replace_file(&path, &json).map_err(LibraryError::io(&path))?;
    Ok(report)
}

/// The record of seeded names; an unreadable one counts as empty (the worst outcome
/// is that a removed built-in comes back once).
fn load_seeded(library: &Library) -> Seeded {
    let path = library.root().join(SEEDED_FILE);
    match read_bounded(&path, MAX_SEEDED_BYTES) {
        Ok(Ok(bytes)) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), "unreadable, treated as empty: {e}");
            Seeded::default()
        }),
        _ => Seeded::default(),
    }
}

fn seed_template(library: &Library, report: &mut SeedReport) -> Result<(), LibraryError> {
    let dir = library.root().join(TEMPLATE_DIR);
    let skip = |reason| SeedSkip {
        name: TEMPLATE_DIR.to_string(),
        reason,
        path: TEMPLATE_DIR.to_string(),
    };
    if Library::has_skill_file(&dir) {
        report.skipped.push(skip(SkipReason::Exists));
        return Ok(());
    }
    match dir.symlink_metadata() {
        // A symlink could lead the write out of the skills directory.
        Ok(meta) if !meta.is_dir() => {
            report.skipped.push(skip(SkipReason::PathTaken));
            return Ok(());
        }
        Ok(_) => {}
        Err(_) => {
            std::fs::create_dir(&dir).map_err(LibraryError::io(&dir))?;
            sync_dir(library.root()).map_err(LibraryError::io(library.root()))?;
        }
    }
    let file = dir.join(SKILL_FILE);
    replace_file(&file, TEMPLATE.as_bytes()).map_err(LibraryError::io(&file))?;
    report.written.push(TEMPLATE_DIR.to_string());
    Ok(())
}

fn seed_skill(
    library: &Library,
    name: &str,
    skill_md: &str,
    report: &mut SeedReport,
) -> Result<(), LibraryError> {
    let slug = Slug::parse(name).map_err(|e| LibraryError::InvalidId {
        id: name.to_string(),
        reason: e.to_string(),
    })?;
    let id = SkillId::Flat(slug);
    let dir = id.dir_in(library.root());
    let mut skip = |reason, path: String| {
        report.skipped.push(SeedSkip {
            name: name.to_string(),
            reason,
            path,
        });
    };
    if Library::has_skill_file(&dir) {
        skip(SkipReason::Exists, name.to_string());
        return Ok(());
    }
    if library.shared.as_ref().is_some_and(|s| s.knows(name)) {
        skip(SkipReason::Shared, name.to_string());
        return Ok(());
    }
    if let Some(other) = library
        .load_index()?
        .skills
        .get(name)
        .filter(|e| e.path != name)
    {
        skip(SkipReason::SlugTaken, other.path.clone());
        return Ok(());
    }
    if dir.symlink_metadata().is_ok() {
        skip(SkipReason::PathTaken, name.to_string());
        return Ok(());
    }
    // A new directory only (checked above), so the scripts never overwrite anything.
    let package = SkillPackage::new(Some(id), skill_md.as_bytes().to_vec(), builtin_files(name))?;
    // Built-in skills ask for tools like any other: installed with nothing granted,
    // until the person confirms them (a built-in forced into a turn must not bring
    // `run_command` with it).
    library.install_locked(
        &package,
        Source::of(SourceKind::Seed),
        false,
        ToolConsent::Later,
    )?;
    report.written.push(name.to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventBus, EventKind};
    use crate::skills::{INDEX_FILE, Origin, load_skill};

    fn library() -> (tempfile::TempDir, Library) {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path().join("skills")).unwrap();
        (dir, library)
    }

    fn names(report: &SeedReport) -> (Vec<&str>, Vec<(&str, SkipReason)>) {
        (
            report.written.iter().map(String::as_str).collect(),
            report
                .skipped
                .iter()
                .map(|s| (s.name.as_str(), s.reason))
                .collect(),
        )
    }

    const ALL: [&str; 5] = [
        "_template",
        "web-search",
        "tweet-notifier",
        "screenshot",
        "word-stats",
    ];

    #[test]
    fn skills_builtins_pass_the_validator_without_warnings() {
        let tools: &[(&str, &[&str])] = &[
            ("web-search", &["fetch_url"]),
            (
                "tweet-notifier",
                &[
                    "schedule_task",
                    "send_message",
                    "save_memory",
                    "search_memory",
                    "fetch_url",
                    "github_api",
                ],
            ),
            (
                "screenshot",
                &[
                    "run_command",
                    "create_file",
                    "write_file",
                    "send_file",
                    "cd",
                    "send_message",
                ],
            ),
            ("word-stats", &["read_skill_file"]),
        ];
        assert_eq!(BUILTINS.len(), tools.len());
        for ((name, md), (tool_name, tools)) in BUILTINS.iter().zip(tools) {
            assert_eq!(name, tool_name);
            let skill = load_skill(md.as_bytes(), Origin::dir(name)).unwrap();
            assert!(skill.warnings.is_empty(), "{name}: {:?}", skill.warnings);
            let fm = &skill.frontmatter;
            assert_eq!(fm.name, *name);
            assert_eq!(fm.allowed_tools, *tools, "{name}");
            assert!(semver::Version::parse(fm.version.as_deref().unwrap()).is_ok());
            assert!(fm.category.is_some(), "{name}");
            for list in [&fm.categories, &fm.intents, &fm.tags] {
                assert!(!list.is_empty(), "{name}");
            }
            assert!(fm.extra.is_empty() && fm.metadata.is_empty(), "{name}");
            for section in ["## What it does", "## Instructions"] {
                assert!(skill.body.contains(section), "{name}: {section}");
            }
        }
        // The template validates as the skill a renamed copy would be.
        let template = load_skill(TEMPLATE.as_bytes(), Origin::default()).unwrap();
        assert!(template.warnings.is_empty(), "{:?}", template.warnings);
        assert_eq!(template.slug.as_str(), "my-skill");
        assert!(load_skill(TEMPLATE.as_bytes(), Origin::dir("my-skill")).is_ok());
        // Its directory name is no slug: it can never be indexed or addressed.
        assert!(Slug::parse(TEMPLATE_DIR).is_err());
    }

    #[test]
    fn skills_seeding_writes_the_builtins_on_first_run() {
        let (_dir, library) = library();
        let events = EventBus::default();
        let mut stream = events.subscribe();
        let library = library.with_events(events);
        let report = seed_new_builtins(&library).unwrap().unwrap();
        assert_eq!(names(&report), (ALL.to_vec(), vec![]));

        let root = library.root();
        assert_eq!(
            std::fs::read_to_string(root.join("_template/SKILL.md")).unwrap(),
            TEMPLATE
        );
        let index = library.list().unwrap();
        assert_eq!(
            index.skills.keys().collect::<Vec<_>>(),
            ["screenshot", "tweet-notifier", "web-search", "word-stats"]
        );
        for (name, md) in BUILTINS {
            let entry = &index.skills[*name];
            assert_eq!(entry.source, Source::of(SourceKind::Seed));
            assert!(entry.active);
            assert_eq!(entry.path, *name);
            let on_disk = std::fs::read_to_string(root.join(name).join(SKILL_FILE)).unwrap();
            assert_eq!(on_disk, *md);
        }
        // word-stats comes with its reference and its script.
        let word_stats = root.join(example::SLUG);
        for (path, text) in example::REFERENCES {
            assert_eq!(
                std::fs::read_to_string(word_stats.join(path)).unwrap(),
                *text
            );
        }
        assert_eq!(
            std::fs::read(word_stats.join("scripts/word-stats.wasm")).unwrap(),
            crate::runtime::builtin::skill_script(example::SCRIPT)
                .unwrap()
                .wasm
        );
        let (catalog, problems) = library.catalog().unwrap();
        assert_eq!(catalog.len(), 4);
        assert!(problems.is_empty(), "{problems:?}");
        // The scan leaves the template alone and finds nothing to change.
        let scan = library.scan().unwrap();
        assert_eq!((scan.added.len(), scan.dropped.len()), (0, 0));
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        assert!(!library.list().unwrap().skills.contains_key("_template"));

        let mut announced = Vec::new();
        while let Ok(event) = stream.try_recv() {
            assert_eq!(event.kind, EventKind::SkillInstalled);
            assert_eq!(event.data["source"], "seed");
            announced.push(event.data["slug"].as_str().unwrap().to_string());
        }
        assert_eq!(
            announced,
            ["web-search", "tweet-notifier", "screenshot", "word-stats"]
        );

        // Later starts do nothing.
        assert_eq!(seed_new_builtins(&library).unwrap(), None);
    }

    #[test]
    fn skills_seeding_never_overwrites_an_existing_skill_md() {
        let (_dir, library) = library();
        let root = library.root().to_path_buf();
        // A user's own web-search and template before the first run.
        let own = "---\nname: web-search\ndescription: my own search\n---\nmine\n";
        std::fs::create_dir_all(root.join("web-search")).unwrap();
        std::fs::write(root.join("web-search/SKILL.md"), own).unwrap();
        std::fs::create_dir_all(root.join("_template")).unwrap();
        std::fs::write(root.join("_template/SKILL.md"), "my notes").unwrap();
        let report = seed_builtins(&library).unwrap();
        assert_eq!(
            names(&report),
            (
                vec!["tweet-notifier", "screenshot", "word-stats"],
                vec![
                    ("_template", SkipReason::Exists),
                    ("web-search", SkipReason::Exists)
                ]
            )
        );
        assert_eq!(
            std::fs::read_to_string(root.join("web-search/SKILL.md")).unwrap(),
            own
        );
        assert_eq!(
            std::fs::read_to_string(root.join("_template/SKILL.md")).unwrap(),
            "my notes"
        );

        // A seeded built-in the user edited stays edited, whatever is called again.
        let edited = BUILTINS[1].1.replace("Tweet notifier", "Post planner");
        std::fs::write(root.join("tweet-notifier/SKILL.md"), &edited).unwrap();
        let again = seed_builtins(&library).unwrap();
        assert_eq!(again.written, Vec::<String>::new());
        assert_eq!(again.skipped.len(), 5);
        assert_eq!(
            std::fs::read_to_string(root.join("tweet-notifier/SKILL.md")).unwrap(),
            edited
        );

        // A skill elsewhere with a built-in's slug, or a file in the way, is left alone.
        let (_dir2, other) = library_with_registry_screenshot();
        let report = seed_builtins(&other).unwrap();
        let skipped: Vec<_> = report
            .skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason, s.path.as_str()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("_template", SkipReason::PathTaken, "_template"),
                ("screenshot", SkipReason::SlugTaken, "design/screenshot")
            ]
        );
        assert_eq!(other.entry("screenshot").unwrap().path, "design/screenshot");
        assert!(other.root().join("_template").is_file());
    }

    /// A library with a registry skill `design/screenshot` and a file named
    /// `_template`.
    fn library_with_registry_screenshot() -> (tempfile::TempDir, Library) {
        let (dir, library) = library();
        let md = b"---\nname: screenshot\ndescription: another one\n---\n".to_vec();
        let package = SkillPackage::new(
            Some(SkillId::parse("design/screenshot").unwrap()),
            md,
            vec![],
        )
        .unwrap();
        library
            .install(
                &package,
                Source::of(SourceKind::Registry),
                false,
                ToolConsent::Confirmed,
            )
            .unwrap();
        std::fs::write(library.root().join("_template"), "a file").unwrap();
        (dir, library)
    }

    #[test]
    fn skills_seeding_again_restores_only_what_is_missing() {
        let (_dir, library) = library();
        seed_new_builtins(&library).unwrap();
        let root = library.root().to_path_buf();
        let kept = library.entry("web-search").unwrap();
        library.deactivate("tweet-notifier").unwrap();
        library.remove("screenshot").unwrap();
        std::fs::remove_dir_all(root.join("_template")).unwrap();

        // A daemon restart does not bring back what the user removed...
        assert_eq!(seed_new_builtins(&library).unwrap(), None);
        assert!(!root.join("screenshot").exists());
        assert!(!root.join("_template").exists());

        // ...the doctor does, and touches nothing else.
        let report = seed_builtins(&library).unwrap();
        assert_eq!(
            names(&report),
            (
                vec!["_template", "screenshot"],
                vec![
                    ("web-search", SkipReason::Exists),
                    ("tweet-notifier", SkipReason::Exists),
                    ("word-stats", SkipReason::Exists)
                ]
            )
        );
        assert_eq!(library.entry("web-search").unwrap(), kept);
        assert!(!library.entry("tweet-notifier").unwrap().active);
        assert!(library.entry("screenshot").unwrap().active);

        // A directory emptied by hand (index entry left behind) is restored too, and
        // its entry keeps its state.
        library.deactivate("web-search").unwrap();
        std::fs::remove_file(root.join("web-search/SKILL.md")).unwrap();
        std::fs::remove_dir(root.join("web-search")).unwrap();
        let report = seed_builtins(&library).unwrap();
        assert_eq!(report.written, ["web-search"]);
        let entry = library.entry("web-search").unwrap();
        assert!(!entry.active);
        assert_eq!(entry.installed_at, kept.installed_at);
    }

    #[test]
    fn skills_example_with_a_script_validates_and_installs_its_wasm() {
        let skill = load_skill(example::SKILL_MD.as_bytes(), Origin::dir(example::SLUG)).unwrap();
        assert!(skill.warnings.is_empty(), "{:?}", skill.warnings);
        assert_eq!(skill.frontmatter.allowed_tools, ["read_skill_file"]);
        for section in ["## What it does", "## Instructions"] {
            assert!(skill.body.contains(section), "{section}");
        }
        let (_dir, library) = library();
        library
            .install(
                &example::package().unwrap(),
                Source::of(SourceKind::Seed),
                false,
                ToolConsent::Confirmed,
            )
            .unwrap();
        let dir = library.root().join(example::SLUG);
        let wasm = std::fs::read(dir.join("scripts/word-stats.wasm")).unwrap();
        assert_eq!(
            wasm,
            crate::runtime::builtin::skill_script("word-stats")
                .unwrap()
                .wasm
        );
        assert!(dir.join("references/writing-guide.md").is_file());
        // Every built-in script named exists in the build.
        for (_, script) in BUILTIN_SCRIPTS {
            assert!(
                crate::runtime::builtin::skill_script(script).is_some(),
                "{script}"
            );
        }
    }

    #[test]
    fn skills_seeding_never_overwrites_a_builtins_references_or_scripts() {
        let (_dir, library) = library();
        seed_new_builtins(&library).unwrap();
        let dir = library.root().join(example::SLUG);
        let guide = dir.join("references/writing-guide.md");
        let script = dir.join("scripts/word-stats.wasm");
        std::fs::write(&guide, "my own guide\n").unwrap();
        std::fs::remove_file(&script).unwrap();
        let report = seed_builtins(&library).unwrap();
        assert!(report.written.is_empty(), "{report:?}");
        assert_eq!(std::fs::read_to_string(&guide).unwrap(), "my own guide\n");
        assert!(!script.exists());

        // A directory without SKILL.md but with the user's files: not a skill, left
        // alone.
        library.remove(example::SLUG).unwrap();
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(&guide, "mine\n").unwrap();
        let report = seed_builtins(&library).unwrap();
        assert_eq!(
            names(&report).1,
            [
                ("_template", SkipReason::Exists),
                ("web-search", SkipReason::Exists),
                ("tweet-notifier", SkipReason::Exists),
                ("screenshot", SkipReason::Exists),
                ("word-stats", SkipReason::PathTaken)
            ]
        );
        assert_eq!(std::fs::read_to_string(&guide).unwrap(), "mine\n");
        assert!(!dir.join(SKILL_FILE).exists());
    }

    #[test]
    fn skills_seeding_gives_a_new_release_builtin_once() {
        let (_dir, library) = library();
        seed_new_builtins(&library).unwrap();
        library.remove("web-search").unwrap();
        library.remove("screenshot").unwrap();
        // As if `screenshot` were new in this release: the record lacks it.
        let path = library.root().join(SEEDED_FILE);
        let mut seeded: Seeded = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        seeded.seeded.remove("screenshot");
        std::fs::write(&path, serde_json::to_vec(&seeded).unwrap()).unwrap();

        let report = seed_new_builtins(&library).unwrap().unwrap();
        assert_eq!(names(&report), (vec!["screenshot"], vec![]));
        assert!(library.entry("web-search").is_err());
        assert_eq!(seed_new_builtins(&library).unwrap(), None);

        // An unreadable record counts as empty: only what is missing is written.
        std::fs::write(&path, b"{not json").unwrap();
        let report = seed_new_builtins(&library).unwrap().unwrap();
        assert_eq!(report.written, ["web-search"]);
        assert!(library.root().join(INDEX_FILE).is_file());
    }
}

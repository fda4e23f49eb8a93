//! Conformance of the SKILL.md parser and validator with the acceptance data:
//!
//! - every fixture in `tests/fixtures/skills-edge-cases` gets the decision in [`EXPECTED`]
//!   (accept, accept with named warnings, or reject naming the rule), read as a skill
//!   directory is read during discovery (the directory's name is the identity, the
//!   lenient load), and the registry's reading refuses the ones without frontmatter;
//! - the real-world-shaped files of `tests/fixtures/skills-lenient` (written for this
//!   project: skills as people copy them from other agents) get [`LENIENT`];
//! - every SKILL.md of the community registry mirror parses, with version, category
//!   and tags read from the top level or `metadata`, and installs into a library.
//!
//! The data is in the repository (`tests/fixtures`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use engram::skills::{
    Leniency, Library, LibraryError, Origin, SUMMARY_CHARS, SkillId, SkillPackage, Source,
    SourceKind, ToolConsent, ValidSkill, load_skill, load_skill_dir, summarize,
};

mod support;

use support::fixtures as data_dir;

/// What we decide for a fixture.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Accept,
    /// Accepted, with exactly these warning codes, in order.
    Warn(&'static [&'static str]),
    /// Refused, naming this rule.
    Reject(&'static str),
}

use Expect::{Accept, Reject, Warn};

/// Our decision for each fixture. Where it departs from `recommended_daemon` in
/// cases.json, the comment says why. "Lenient" marks a decision that changed with the
/// lenient load (issue 17): Claude Code loads these files, and a person who copies a
/// skill that works there expects it to work here; each leniency is a warning whose
/// code names the rule it relaxes.
const EXPECTED: &[(&str, Expect)] = &[
    ("sr01-valid-minimal", Accept),
    ("sr02-missing-skill-md", Reject("skill-md-missing")),
    // Lenient (was: reject, name-format): a directory name that is no slug gives one
    // (`myskill`), and `MySkill` stays the display name. Paths are still built from
    // slugs only.
    ("sr03-name-uppercase", Warn(&["slug-derived"])),
    // A name over 64 characters is no name to derive from: refused, as before.
    ("sr04-name-too-long", Reject("name-length")),
    // Lenient (was: reject): `-my-skill` -> `my-skill`, as sr03.
    ("sr05-name-leading-hyphen", Warn(&["slug-derived"])),
    // Lenient (was: reject): `my--skill` -> `my-skill`, as sr03; a real skill in a
    // double-hyphen directory was refused by `install --from`.
    ("sr06-name-double-hyphen", Warn(&["slug-derived"])),
    // Lenient (was: reject; recommended "consider warn on discovery"): `my_skill` ->
    // `my-skill`, as sr03.
    ("sr07-name-underscore", Warn(&["slug-derived"])),
    // Discovery keeps the directory as identity and warns; an install without a
    // directory writes to `correct-name/` (the name), as recommended.
    ("sr08-name-dir-mismatch", Warn(&["name-dir-mismatch"])),
    ("sr09-unknown-field", Accept),
    ("sr10-all-optional-fields", Accept),
    ("sr11-allowed-tools-string", Accept),
    // sr12-sr14, "decide; reference accepts": we refuse non-ASCII names. A slug is
    // a path, a registry id and a command-line argument; ASCII keeps look-alikes
    // (Cyrillic `а` vs Latin `a`) and unnormalised forms from naming two skills alike.
    // No slug is derived from them either: transliterating would guess.
    ("sr12-i18n-chinese", Reject("name-format")),
    ("sr13-i18n-russian-hyphen", Reject("name-format")),
    ("sr14-i18n-russian-lower", Reject("name-format")),
    ("sr15-i18n-russian-upper", Reject("name-format")),
    // Lenient (was: reject; recommended "reject on install (or truncate in catalog)"):
    // kept whole with a warning, the catalog's summary is cut as always. Anthropic's
    // own `claude-api` skill has a 1,068-character description.
    ("sr16-description-too-long", Warn(&["description-length"])),
    ("sr17-compatibility-ok", Accept),
    (
        "sr18-compatibility-too-long",
        Reject("compatibility-length"),
    ),
    // Recommended: normalise (NFC/NFKC) before comparing. With ASCII-only slugs there
    // is nothing to normalise: `café` is refused whichever form it is in.
    ("sr19-nfkc-name", Reject("name-format")),
    // Lenient (was: reject): named after its directory, described by the first
    // paragraph of its body (here its only heading). Still refused by a registry
    // install (see `skills_registry_reading_still_requires_frontmatter`).
    ("sr20-no-frontmatter", Warn(&["frontmatter-missing"])),
    ("sr21-unclosed-frontmatter", Reject("frontmatter-unclosed")),
    ("sr22-invalid-yaml", Reject("yaml-syntax")),
    (
        "sr23-frontmatter-is-list",
        Reject("frontmatter-not-mapping"),
    ),
    // The source text "1.0" is kept, as recommended; YAML reads it as a number and
    // it is not semver, which the two warnings say.
    (
        "sr24-metadata-number-coerced",
        Warn(&["field-coerced", "version-not-semver"]),
    ),
    // Lenient (was: reject; "Claude Code falls back to dir name"): so do we.
    ("sr25-missing-name", Warn(&["name-missing"])),
    // Lenient (was: reject): Claude Code takes a missing description from the first
    // paragraph of the body, and so does the file without frontmatter (sr20) here;
    // one rule for both. A body with no paragraph or heading is still refused.
    ("sr26-missing-description", Warn(&["description-missing"])),
    ("sr27-both-skill-md-cases", Accept),
    // Recommended: accept. Accepted, with a warning suggesting the standard name.
    ("sr28-lowercase-skill-md", Warn(&["lowercase-file-name"])),
    // Accepted as recommended; the catalog is data, and its renderers (dashboard,
    // prompt block) escape `<`, `>` and `&` for their format.
    ("sr29-xml-escaping", Accept),
    ("ex01-bom", Accept),
    ("ex02-crlf", Accept),
    ("ex03-allowed-tools-block-list", Accept),
    ("ex04-allowed-tools-flow-list", Accept),
    ("ex05-allowed-tools-comma", Accept),
    ("ex06-allowed-tools-paren-spaces", Accept),
    ("ex07-metadata-json-flow", Accept),
    ("ex08-desc-folded", Accept),
    ("ex09-desc-literal", Accept),
    ("ex10-desc-nextline-plain", Accept),
    ("ex11-triple-dash-in-value", Accept),
    // The lenient fallback: the value is quoted and the result parsed, with a warning.
    ("ex12-unquoted-colon", Warn(&["yaml-repaired"])),
    ("ex13-single-quote-escape", Warn(&["yaml-repaired"])),
    // "Be explicit": the scalar's text "123" is the name (a valid slug), and the
    // warning says YAML read it as a number.
    ("ex14-name-number", Warn(&["field-coerced"])),
    // Lenient (was: reject): an empty name is a missing one (sr25).
    ("ex15-name-null", Warn(&["name-missing"])),
    // Lenient (was: reject): an empty or blank description is a missing one (sr26).
    ("ex16-empty-description", Warn(&["description-missing"])),
    (
        "ex17-whitespace-description",
        Warn(&["description-missing"]),
    ),
    ("ex18-duplicate-keys", Reject("yaml-duplicate-key")),
    ("ex19-path-traversal-name", Reject("name-path")),
    ("ex20-slash-name", Reject("name-path")),
    // "warn/strip/reject": stripped and warned, so the catalog never carries them.
    ("ex21-unicode-tags-smuggling", Warn(&["hidden-characters"])),
    ("ex22-zero-width-bidi", Warn(&["hidden-characters"])),
    ("ex23-yaml-alias-bomb", Reject("yaml-budget")),
    // "reject or trim; pick one". Changed (was: reject): with files without
    // frontmatter accepted, this one would be all body and be described by its own
    // frontmatter lines; the blank lines are skipped instead, with a warning.
    ("ex24-leading-blank-line", Warn(&["leading-blank-lines"])),
    // Lenient (was: reject, name-missing): sr25 and sr26 together.
    (
        "ex25-empty-frontmatter",
        Warn(&["description-missing", "name-missing"]),
    ),
    // Changed rule (was: frontmatter-missing): a TOML frontmatter is a frontmatter
    // we cannot read, not a Markdown file; read as one, `name = ...` would become its
    // description. Refused, naming what it is.
    ("ex26-toml-frontmatter", Reject("frontmatter-unsupported")),
    ("ex27-daemon-native-fields", Accept),
    ("ex28-registry-metadata-shape", Accept),
    (
        "ex29-version-float",
        Warn(&["field-coerced", "version-not-semver"]),
    ),
    ("ex30-tags-string", Accept),
    // "decide; document": serde_norway is YAML 1.2, so `yes`/`off` are the strings
    // "yes"/"off". These keys are not ours; they are kept verbatim in `extra`.
    ("ex31-yaml11-booleans", Accept),
    ("ex32-name-title-case-spaces", Warn(&["display-name"])),
    ("ex33-huge-body", Reject("file-too-large")),
    ("ex34-nonutf8", Reject("not-utf8")),
];

/// A decision as made: `Warn` of no codes is `Accept`.
#[derive(Debug, PartialEq)]
enum Decision {
    Accept,
    Warn(Vec<&'static str>),
    Reject(&'static str),
}

impl From<Expect> for Decision {
    fn from(e: Expect) -> Decision {
        match e {
            Accept => Decision::Accept,
            Warn(codes) => Decision::Warn(codes.to_vec()),
            Reject(rule) => Decision::Reject(rule),
        }
    }
}

fn decide(result: &Result<ValidSkill, LibraryError>) -> Decision {
    match result {
        Ok(skill) if skill.warnings.is_empty() => Decision::Accept,
        Ok(skill) => Decision::Warn(skill.warnings.iter().map(|w| w.code()).collect()),
        Err(e) => Decision::Reject(e.code()),
    }
}

#[derive(serde::Deserialize)]
struct Case {
    id: String,
    skill_dir: String,
    recommended_daemon: String,
}

fn cases() -> Vec<Case> {
    let path = data_dir().join("skills-edge-cases/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("cases.json")
}

fn load_case(case: &Case) -> Result<ValidSkill, LibraryError> {
    load_skill_dir(&data_dir().join("skills-edge-cases").join(&case.skill_dir))
}

#[test]
fn skills_edge_case_fixtures_get_the_expected_decision() {
    let cases = cases();
    let expected: BTreeMap<&str, Expect> = EXPECTED.iter().copied().collect();
    assert_eq!(expected.len(), EXPECTED.len(), "a fixture is listed twice");

    // Every fixture directory is in cases.json, and every case has a decision here.
    let on_disk: BTreeSet<String> = std::fs::read_dir(data_dir().join("skills-edge-cases"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    let in_cases: BTreeSet<String> = cases.iter().map(|c| c.id.clone()).collect();
    assert_eq!(on_disk, in_cases);
    let decided: BTreeSet<String> = expected.keys().map(|k| k.to_string()).collect();
    assert_eq!(
        decided, in_cases,
        "EXPECTED must cover exactly the fixtures"
    );

    let mut failures = Vec::new();
    for case in &cases {
        let result = load_case(case);
        let got = decide(&result);
        let want = Decision::from(expected[case.id.as_str()]);
        // The table, for `--nocapture` readers.
        println!("{:<36} {got:?}", case.id);
        if got != want {
            failures.push(format!(
                "{}: expected {want:?}, got {got:?} ({:?}); recommended: {}",
                case.id,
                result.as_ref().err().map(ToString::to_string),
                case.recommended_daemon
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn accepted(id: &str) -> ValidSkill {
    let case = cases().into_iter().find(|c| c.id == id).unwrap();
    load_case(&case).unwrap_or_else(|e| panic!("{id}: {e}"))
}

/// What the accepted fixtures must read as, beyond the decision.
#[test]
fn skills_edge_case_fixtures_read_their_fields_right() {
    let tools = |id: &str| accepted(id).frontmatter.allowed_tools;
    assert_eq!(
        tools("sr11-allowed-tools-string"),
        ["Bash(jq:*)", "Bash(git:*)"]
    );
    assert_eq!(
        tools("ex03-allowed-tools-block-list"),
        ["Read", "Bash(git:*)"]
    );
    assert_eq!(
        tools("ex04-allowed-tools-flow-list"),
        ["Read", "Write", "Bash"]
    );
    assert_eq!(tools("ex05-allowed-tools-comma"), ["Read", "Grep", "Glob"]);
    assert_eq!(
        tools("ex06-allowed-tools-paren-spaces"),
        ["Bash(git add *)", "Bash(git commit *)", "Read"]
    );

    let d = |id: &str| accepted(id).frontmatter.description;
    assert_eq!(d("sr27-both-skill-md-cases"), "uppercase wins");
    assert_eq!(d("sr29-xml-escaping"), "Use <foo> & <bar> tags");
    assert_eq!(d("ex01-bom"), "A test skill");
    assert_eq!(d("ex02-crlf"), "A test skill");
    assert_eq!(
        accepted("ex02-crlf").body,
        "# Body\r\n\r\nInstructions.\r\n"
    );
    assert_eq!(
        d("ex08-desc-folded"),
        "Line one of the description.\nSecond paragraph."
    );
    assert_eq!(
        summarize(&d("ex08-desc-folded")),
        "Line one of the description. Second paragraph."
    );
    assert_eq!(d("ex09-desc-literal"), "First line\nSecond line");
    assert_eq!(
        d("ex10-desc-nextline-plain"),
        "Sets things up. Use for login, auth providers, or roles."
    );
    assert_eq!(d("ex11-triple-dash-in-value"), "Before --- after");
    assert_eq!(
        d("ex12-unquoted-colon"),
        "Use this skill when: the user asks about PDFs"
    );
    assert_eq!(d("ex13-single-quote-escape"), "Objectives (Bloom's), scope");
    assert_eq!(d("ex21-unicode-tags-smuggling"), "Formats JSON files.");
    assert_eq!(d("ex22-zero-width-bidi"), "Safe skill evil text");

    let s = accepted("ex14-name-number");
    assert_eq!(
        (s.slug.as_str(), s.frontmatter.name.as_str()),
        ("123", "123")
    );
    let s = accepted("ex32-name-title-case-spaces");
    assert_eq!(s.slug.as_str(), "shell-scripting");
    assert_eq!(s.frontmatter.name, "Shell Scripting");
    let s = accepted("sr08-name-dir-mismatch");
    assert_eq!(s.slug.as_str(), "wrong-name");

    // The lenient load: what each leniency filled in.
    let ident = |id: &str| {
        let s = accepted(id);
        (s.slug.to_string(), s.frontmatter.name)
    };
    assert_eq!(
        ident("sr03-name-uppercase"),
        ("myskill".into(), "MySkill".into())
    );
    assert_eq!(
        ident("sr05-name-leading-hyphen"),
        ("my-skill".into(), "-my-skill".into())
    );
    assert_eq!(
        ident("sr06-name-double-hyphen"),
        ("my-skill".into(), "my--skill".into())
    );
    assert_eq!(
        ident("sr07-name-underscore"),
        ("my-skill".into(), "my_skill".into())
    );
    assert_eq!(
        ident("sr25-missing-name"),
        ("my-skill".into(), "my-skill".into())
    );
    assert_eq!(
        ident("ex15-name-null"),
        ("my-skill".into(), "my-skill".into())
    );
    let s = accepted("sr20-no-frontmatter");
    assert_eq!(s.slug.as_str(), "my-skill");
    assert_eq!(s.frontmatter.description, "No frontmatter here");
    assert_eq!(s.body, "# No frontmatter here\n");
    assert_eq!(d("sr26-missing-description"), "Body");
    assert_eq!(d("ex16-empty-description"), "Instructions.");
    assert_eq!(d("ex17-whitespace-description"), "Instructions.");
    assert_eq!(d("ex24-leading-blank-line"), "A test skill");
    assert_eq!(accepted("ex24-leading-blank-line").body, "Body\n");
    assert_eq!(d("ex25-empty-frontmatter"), "Body");
    let long = d("sr16-description-too-long");
    assert_eq!(long.chars().count(), 1100);
    assert_eq!(summarize(&long).chars().count(), 160);

    let v = |id: &str| accepted(id).frontmatter.version;
    assert_eq!(v("sr24-metadata-number-coerced").as_deref(), Some("1.0"));
    assert_eq!(v("ex29-version-float").as_deref(), Some("1.0"));

    let fm = accepted("ex07-metadata-json-flow").frontmatter;
    assert_eq!(
        fm.metadata["openclaw"]["requires"]["bins"],
        serde_json::json!(["curl"])
    );
    let fm = accepted("ex27-daemon-native-fields").frontmatter;
    assert_eq!(fm.version.as_deref(), Some("1.0.0"));
    assert_eq!(fm.category.as_deref(), Some("web"));
    assert_eq!(fm.categories, ["web", "research"]);
    assert_eq!(fm.intents, ["search the web", "look up"]);
    assert_eq!(fm.tags, ["search", "web"]);
    assert_eq!(fm.allowed_tools, ["fetch_url"]);
    let fm = accepted("ex28-registry-metadata-shape").frontmatter;
    assert_eq!(fm.version.as_deref(), Some("1.0.0"));
    assert_eq!(fm.category.as_deref(), Some("development"));
    assert_eq!(fm.tags, ["clean-code", "refactoring"]);
    assert_eq!(fm.author.as_deref(), Some("someone"));
    let fm = accepted("ex30-tags-string").frontmatter;
    assert_eq!(fm.tags, ["search", "web"]);
    assert_eq!(fm.intents, ["search the web"]);
    let fm = accepted("ex31-yaml11-booleans").frontmatter;
    assert_eq!(fm.extra["disable-model-invocation"], "yes");
    assert_eq!(fm.extra["user-invocable"], "off");
    let fm = accepted("sr09-unknown-field").frontmatter;
    assert_eq!(fm.extra["unknown_field"], "should not be here");
    let fm = accepted("sr17-compatibility-ok").frontmatter;
    assert_eq!(fm.compatibility.as_deref(), Some("Requires Python 3.11+"));
}

/// A registry install reads the same fixtures with the frontmatter required: the ones
/// without frontmatter, or with it after blank lines, are refused, and every other
/// decision is the lenient one.
#[test]
fn skills_registry_reading_still_requires_frontmatter() {
    let registry = |case: &Case| {
        let dir = data_dir().join("skills-edge-cases").join(&case.skill_dir);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(dir.join("SKILL.md")).ok()?;
        let origin = Origin {
            leniency: Leniency::FrontmatterRequired,
            ..Origin::dir(&name)
        };
        Some(load_skill(&bytes, origin).map_err(|e| e.rule()))
    };
    for case in cases() {
        let Some(strict) = registry(&case) else {
            continue;
        };
        let lenient = load_case(&case);
        match case.id.as_str() {
            "sr20-no-frontmatter" | "ex24-leading-blank-line" => {
                assert_eq!(strict.unwrap_err(), "frontmatter-missing", "{}", case.id)
            }
            _ => assert_eq!(
                strict.map(|s| s.slug),
                lenient.map(|s| s.slug).map_err(|e| e.code()),
                "{}",
                case.id
            ),
        }
    }
    // And so does a registry package, which is how registry installs are built.
    let md =
        std::fs::read(data_dir().join("skills-edge-cases/sr20-no-frontmatter/my-skill/SKILL.md"))
            .unwrap();
    let id = SkillId::parse("dev/my-skill").unwrap();
    let e = SkillPackage::from_registry(id.clone(), md.clone(), vec![]).unwrap_err();
    assert_eq!(e.code(), "frontmatter-missing");
    let package = SkillPackage::new(Some(id), md, vec![]).unwrap();
    assert_eq!(package.skill().warnings[0].code(), "frontmatter-missing");
}

/// Our decision for each real-world-shaped fixture of `tests/fixtures/skills-lenient`
/// (`<case>/<skill-dir>/SKILL.md`), read as discovery reads a directory.
const LENIENT: &[(&str, Expect)] = &[
    ("nf-title-and-text", Warn(&["frontmatter-missing"])),
    ("nf-comment-then-title", Warn(&["frontmatter-missing"])),
    ("nf-headings-only-intro", Warn(&["frontmatter-missing"])),
    ("nf-code-first", Warn(&["frontmatter-missing"])),
    // The first paragraph is over 1,024 characters: cut there, so no second warning.
    ("nf-long-first-paragraph", Warn(&["frontmatter-missing"])),
    ("nf-bom-crlf", Warn(&["frontmatter-missing"])),
    // The first paragraph hides Unicode tag characters: removed, as from any
    // description.
    (
        "nf-hidden-text",
        Warn(&["frontmatter-missing", "hidden-characters"]),
    ),
    ("nn-description-only", Warn(&["name-missing"])),
    ("nn-empty-name", Warn(&["name-missing"])),
    ("ld-long-description", Warn(&["description-length"])),
    ("dh-double-hyphen", Warn(&["slug-derived"])),
    (
        "dh-double-hyphen-no-frontmatter",
        Warn(&["frontmatter-missing", "slug-derived"]),
    ),
    ("dir-with-spaces", Warn(&["name-missing", "slug-derived"])),
    ("leading-blank-lines", Warn(&["leading-blank-lines"])),
    // Hostile or unreadable input stays refused, lenient or not.
    ("refused-not-utf8", Reject("not-utf8")),
    ("refused-toml", Reject("frontmatter-unsupported")),
    ("refused-nothing-to-describe", Reject("description-missing")),
    ("refused-non-ascii-dir", Reject("name-format")),
    ("refused-traversal-name", Reject("name-path")),
];

/// The repository's lenient-load fixtures.
fn lenient_fixtures() -> PathBuf {
    data_dir().join("skills-lenient")
}

/// The one skill directory of a lenient-load case.
fn lenient_case(case: &str) -> PathBuf {
    let dir = lenient_fixtures().join(case);
    let mut skills: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(skills.len(), 1, "{case}: one skill directory");
    skills.pop().unwrap()
}

#[test]
fn skills_real_world_shapes_load_leniently() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(lenient_fixtures())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    let listed: BTreeSet<String> = LENIENT.iter().map(|(c, _)| c.to_string()).collect();
    assert_eq!(on_disk, listed, "LENIENT must cover exactly the fixtures");
    let mut failures = Vec::new();
    for (case, expected) in LENIENT {
        let result = load_skill_dir(&lenient_case(case));
        let got = decide(&result);
        println!("{case:<36} {got:?}");
        if got != Decision::from(*expected) {
            failures.push(format!(
                "{case}: expected {expected:?}, got {got:?} ({result:?})"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));

    let load = |case: &str| load_skill_dir(&lenient_case(case)).unwrap();
    let s = load("nf-title-and-text");
    assert_eq!(
        (s.slug.as_str(), s.frontmatter.name.as_str()),
        ("csv-cleanup", "csv-cleanup")
    );
    assert!(
        s.frontmatter
            .description
            .starts_with("Clean up messy CSV exports before"),
        "{}",
        s.frontmatter.description
    );
    assert!(s.frontmatter.description.ends_with("drop duplicate rows."));
    assert_eq!(
        load("nf-comment-then-title").frontmatter.description,
        "Draft release notes from merged pull requests: group them by area, lead with \
         user-visible changes, and link each line to its pull request."
    );
    assert!(
        load("nf-headings-only-intro")
            .frontmatter
            .description
            .starts_with("Review SQL")
    );
    assert!(
        load("nf-code-first")
            .frontmatter
            .description
            .starts_with("Check Dockerfiles")
    );
    let incident = load("nf-long-first-paragraph").frontmatter.description;
    assert!(incident.chars().count() <= 1024 && incident.chars().count() > 900);
    let notes = load("nf-bom-crlf");
    assert_eq!(
        notes.frontmatter.description,
        "Turn a meeting transcript into notes: decisions, open questions and action items \
         with owners."
    );
    assert_eq!(
        load("nf-hidden-text").frontmatter.description,
        "Search the user's notes folder."
    );
    let bisect = load("nn-description-only");
    assert_eq!(bisect.slug.as_str(), "git-bisect");
    assert_eq!(
        bisect.frontmatter.allowed_tools,
        ["Bash(git bisect *)", "Bash(git log *)", "Read"]
    );
    assert_eq!(
        load("nn-empty-name").frontmatter.version.as_deref(),
        Some("1.2.0")
    );
    let api = load("ld-long-description");
    assert!(api.frontmatter.description.chars().count() > 1024);
    let summary = summarize(&api.frontmatter.description);
    assert!(
        summary.chars().count() <= SUMMARY_CHARS && summary.ends_with('…'),
        "{summary}"
    );
    let viz = load("dh-double-hyphen");
    assert_eq!(
        (viz.slug.as_str(), viz.frontmatter.name.as_str()),
        ("data-viz", "data-viz")
    );
    let forms = load("dh-double-hyphen-no-frontmatter");
    assert_eq!(
        (forms.slug.as_str(), forms.frontmatter.name.as_str()),
        ("pdf-forms", "pdf--forms")
    );
    let brand = load("dir-with-spaces");
    assert_eq!(
        (brand.slug.as_str(), brand.frontmatter.name.as_str()),
        ("brand-guidelines", "Brand Guidelines")
    );
}

/// The lenient fixtures install from their directories, as `engram skills install
/// --from <dir>` does, then list, route-ready, under their slugs; the display name of
/// a skill named after its directory survives the move to its slug directory, and a
/// registry install of the same files is refused where they have no frontmatter.
#[test]
fn skills_real_world_shapes_install_and_list() {
    let root = tempfile::tempdir().unwrap();
    let library = Library::open(root.path().join("skills")).unwrap();
    let mut installed = BTreeMap::new();
    for (case, expected) in LENIENT {
        let result = engram::skills::registry::direct::install_from_file(
            &library,
            &lenient_case(case),
            None,
            false,
            ToolConsent::Confirmed,
        );
        match (expected, result) {
            (Reject(rule), Err(e)) => assert_eq!(e.code(), *rule, "{case}"),
            (Reject(_), Ok(out)) => panic!("{case}: installed as {}", out.slug),
            (_, Ok(out)) => {
                installed.insert(out.slug.clone(), out.name.clone());
            }
            (_, Err(e)) => panic!("{case}: {e}"),
        }
    }
    let (catalog, problems) = library.catalog().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let listed: BTreeMap<String, String> = catalog
        .iter()
        .map(|c| (c.slug.clone(), c.name.clone()))
        .collect();
    assert_eq!(listed, installed);
    assert_eq!(listed["brand-guidelines"], "Brand Guidelines");
    assert_eq!(listed["pdf-forms"], "pdf--forms");
    assert!(
        catalog
            .iter()
            .all(|c| !c.description.is_empty() && c.summary.chars().count() <= 160)
    );
    // A scan finds nothing to change; the display names stay.
    let report = library.scan().unwrap();
    assert!(
        report.refreshed.is_empty() && report.problems.is_empty(),
        "{report:?}"
    );
    assert_eq!(
        library.entry("brand-guidelines").unwrap().name,
        "Brand Guidelines"
    );
    let invoked = library.invoke("pdf-forms").unwrap();
    assert_eq!(invoked.name, "pdf--forms");

    let md = std::fs::read(lenient_case("nf-title-and-text").join("SKILL.md")).unwrap();
    let id = SkillId::parse("data/csv-cleanup").unwrap();
    assert_eq!(
        SkillPackage::from_registry(id, md, vec![])
            .unwrap_err()
            .code(),
        "frontmatter-missing"
    );
}

/// The alias bomb is refused by budget, not by luck: a far larger one (9^12 scalars
/// if expanded) is refused the same way.
#[test]
fn skills_alias_bombs_are_refused_by_budget() {
    let mut yaml = String::from("---\nname: my-skill\ndescription: d\na0: &a0 [\"lol\"]\n");
    for level in 1..=12 {
        let refs = vec![format!("*a{}", level - 1); 9].join(",");
        yaml.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    yaml.push_str("---\nbody\n");
    let e = load_skill(yaml.as_bytes(), Origin::default()).unwrap_err();
    assert_eq!(e.rule(), "yaml-budget", "{e}");
}

#[derive(serde::Deserialize)]
struct Feed {
    skills: Vec<FeedSkill>,
}

#[derive(serde::Deserialize)]
struct FeedSkill {
    id: String,
    sha: String,
}

fn feed() -> Feed {
    let path = data_dir().join("registry-mirror/api/feed.json");
    serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("feed.json")
}

fn mirror_skill(id: &str) -> PathBuf {
    data_dir().join("registry-mirror/categories").join(id)
}

/// Every SKILL.md under `categories/` parses and validates, with version, category and
/// tags found (the registry puts them under `metadata`), and the body's sha256 is the
/// feed's `sha`. Five files are accepted with a warning, listed exactly.
#[test]
fn skills_registry_mirror_parses() {
    let feed = feed();
    let mut on_disk = Vec::new();
    for category in std::fs::read_dir(data_dir().join("registry-mirror/categories")).unwrap() {
        let category = category.unwrap();
        for skill in std::fs::read_dir(category.path()).unwrap() {
            let skill = skill.unwrap();
            on_disk.push(format!(
                "{}/{}",
                category.file_name().to_str().unwrap(),
                skill.file_name().to_str().unwrap()
            ));
        }
    }
    on_disk.sort();
    let mut in_feed: Vec<String> = feed.skills.iter().map(|s| s.id.clone()).collect();
    in_feed.sort();
    assert_eq!(on_disk, in_feed);
    assert_eq!(on_disk.len(), 136);

    let mut warned = BTreeMap::new();
    for entry in &feed.skills {
        let skill = load_skill_dir(&mirror_skill(&entry.id))
            .unwrap_or_else(|e| panic!("{}: {e}", entry.id));
        let fm = &skill.frontmatter;
        assert!(fm.version.is_some(), "{}: no version", entry.id);
        assert!(fm.category.is_some(), "{}: no category", entry.id);
        assert!(!fm.tags.is_empty(), "{}: no tags", entry.id);
        assert_eq!(skill.sha256, entry.sha, "{}: body sha256", entry.id);
        if !skill.warnings.is_empty() {
            let codes: Vec<&str> = skill.warnings.iter().map(|w| w.code()).collect();
            warned.insert(entry.id.as_str(), codes);
        }
    }
    let expected: BTreeMap<&str, Vec<&str>> = [
        // `name` is a title ("Shell Scripting"): kept as the display name.
        ("automation/shell-scripting", vec!["display-name"]),
        ("automation/workflow-automation", vec!["display-name"]),
        ("product/product-strategy", vec!["display-name"]),
        ("product/user-research", vec!["display-name"]),
        // `'... (Bloom\'s) ...'` is not valid YAML (ex13); read after the repair.
        (
            "education-learning/curriculum-design",
            vec!["yaml-repaired"],
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(warned, expected);
}

/// The whole mirror installs into a library as registry skills, lists, and the catalog
/// serves every one without reading a body; a second install of each is a no-op.
#[test]
fn skills_registry_mirror_installs() {
    let root = tempfile::tempdir().unwrap();
    let library = Library::open(root.path().join("skills")).unwrap();
    let source = Source {
        kind: SourceKind::Registry,
        url: None,
        registry: Some("file://mirror".into()),
    };
    let feed = feed();
    for entry in &feed.skills {
        let bytes = std::fs::read(mirror_skill(&entry.id).join("SKILL.md")).unwrap();
        let id = SkillId::parse(&entry.id).unwrap();
        let package = SkillPackage::new(Some(id), bytes, vec![]).unwrap();
        let outcome = library
            .install(&package, source.clone(), false, ToolConsent::Confirmed)
            .unwrap();
        assert_eq!(
            serde_json::to_value(outcome.status).unwrap(),
            "installed",
            "{}",
            entry.id
        );
        let again = library
            .install(&package, source.clone(), false, ToolConsent::Confirmed)
            .unwrap();
        assert_eq!(
            serde_json::to_value(again.status).unwrap(),
            "already-installed"
        );
    }
    let index = library.list().unwrap();
    assert_eq!(index.skills.len(), feed.skills.len());
    for entry in &feed.skills {
        let slug = entry.id.split('/').nth(1).unwrap();
        let indexed = &index.skills[slug];
        assert_eq!(indexed.path, entry.id);
        assert_eq!(indexed.sha256, entry.sha);
    }
    let report = library.scan().unwrap();
    assert!(
        report.added.is_empty() && report.dropped.is_empty() && report.problems.is_empty(),
        "{report:?}"
    );
    let (catalog, problems) = library.catalog().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(catalog.len(), feed.skills.len());
    let shell = catalog
        .iter()
        .find(|c| c.slug == "shell-scripting")
        .unwrap();
    assert_eq!(shell.name, "Shell Scripting");
    assert_eq!(shell.category.as_deref(), Some("automation"));
    assert!(catalog.iter().all(|c| c.summary.chars().count() <= 160));
}

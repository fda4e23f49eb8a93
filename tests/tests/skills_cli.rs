//! End-to-end: every `engram skills ...` subcommand, with `--json` and without,
//! against `engram registry serve` over `tests/fixtures/registry-mirror` on loopback.
//! Each answer is checked against the mirror's own files and the data directory.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use engram_e2e::{Daemon, Listening, engram, fixtures, ok};
use serde_json::Value;

const ID: &str = "ai-ml/agent-audit-logging";

fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.yaml"),
        "network:\n  allowPrivate: true\n",
    )
    .unwrap();
    dir
}

fn command(data: &Path, args: &[&str]) -> Command {
    let mut command = engram(data);
    command
        .arg("skills")
        .args(args)
        .env_remove("ENGRAM_SKILLS_REGISTRY")
        .stdin(Stdio::null());
    command
}

fn run(data: &Path, registry: &str, args: &[&str]) -> Output {
    command(data, args)
        .args(["--registry", registry])
        .output()
        .expect("run engram skills")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(data: &Path, registry: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let o = run(data, registry, &args);
    assert!(
        o.status.success(),
        "{args:?}: {:?}: {}",
        o.status,
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)))
}

fn text(data: &Path, registry: &str, args: &[&str]) -> String {
    let o = run(data, registry, args);
    assert!(
        o.status.success(),
        "{args:?}: {:?}: {}",
        o.status,
        stderr(&o)
    );
    stdout(&o)
}

fn feed() -> Value {
    let bytes = std::fs::read(fixtures().join("registry-mirror/api/feed.json")).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn skills_cli_every_subcommand_with_json() {
    let server = Listening::registry(&fixtures().join("registry-mirror"));
    let data = data_dir();
    let (d, r) = (data.path(), server.url());
    let feed = feed();

    // categories
    let cats = json(d, &r, &["categories"]);
    assert_eq!(cats["registry"]["url"], r);
    assert_eq!(cats["registry"]["source"], "flag");
    assert_eq!(cats["feed"]["from"], "network");
    assert_eq!(cats["total_skills"], 136);
    assert_eq!(cats["categories"].as_array().unwrap().len(), 23);
    assert_eq!(
        cats["categories"][0],
        serde_json::json!({"slug": "ai-ml", "name": "Ai Ml", "count": 12})
    );
    // The second call is served from the cache.
    assert_eq!(json(d, &r, &["categories"])["feed"]["from"], "cache");

    // browse
    let page = json(d, &r, &["browse", "ai-ml", "--page", "2", "--limit", "5"]);
    assert_eq!(
        (
            page["page"].as_u64(),
            page["pages"].as_u64(),
            page["total"].as_u64()
        ),
        (Some(2), Some(3), Some(12))
    );
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 5);
    let ai_ml: Vec<&Value> = feed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["categorySlug"] == "ai-ml")
        .collect();
    assert_eq!(items[0]["id"], ai_ml[5]["id"]);
    let item = &items[0];
    for key in [
        "id",
        "slug",
        "category",
        "category_name",
        "name",
        "title",
        "description",
        "version",
        "author",
        "tags",
        "sha256",
        "size",
        "updated_at",
        "page_url",
        "installed",
    ] {
        assert!(item.get(key).is_some(), "browse item lacks {key}: {item}");
    }
    assert_eq!(
        item["page_url"],
        format!("{r}/skills/{}", item["id"].as_str().unwrap())
    );
    let last = json(d, &r, &["browse", "ai-ml", "--page", "3", "--limit", "5"]);
    assert_eq!(last["items"].as_array().unwrap().len(), 2);
    let o = run(d, &r, &["browse", "no-such-category", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no category"), "{}", stderr(&o));

    // search: the exact id first, then names, tags, descriptions.
    let found = json(d, &r, &["search", ID]);
    assert_eq!(found["items"][0]["id"], ID);
    let found = json(d, &r, &["search", "audit", "logging", "--limit", "3"]);
    assert_eq!(found["query"], "audit logging");
    assert_eq!(found["items"][0]["id"], ID);
    assert!(found["items"].as_array().unwrap().len() <= 3);
    assert!(found["total"].as_u64().unwrap() >= 1);
    let scores: Vec<u64> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["score"].as_u64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert_eq!(json(d, &r, &["search", "zzzqqq"])["total"], 0);

    // view, --raw, --web
    let view = json(d, &r, &["view", ID]);
    assert_eq!(view["skill"]["id"], ID);
    assert_eq!(view["skill"]["installed"], false);
    assert!(
        view["body"]
            .as_str()
            .unwrap()
            .contains("# Agent Audit Log Reporting")
    );
    let by_slug = json(d, &r, &["view", "agent-audit-logging"]);
    assert_eq!(by_slug["skill"]["id"], ID);
    let raw = json(d, &r, &["view", ID, "--raw"]);
    let on_disk = std::fs::read_to_string(
        fixtures()
            .join("registry-mirror/categories")
            .join(ID)
            .join("SKILL.md"),
    )
    .unwrap();
    assert_eq!(raw["skill_md"], on_disk);
    assert_eq!(text(d, &r, &["view", ID, "--raw"]), on_disk);
    let web = json(d, &r, &["view", ID, "--web"]);
    assert_eq!(
        web,
        serde_json::json!({"id": ID, "page_url": format!("{r}/skills/{ID}"), "opened": false})
    );
    assert_eq!(
        text(d, &r, &["view", ID, "--web"]).trim(),
        format!("{r}/skills/{ID}")
    );

    // install (batch, one failing: exit 1, the others installed)
    let o = run(
        d,
        &r,
        &[
            "install",
            ID,
            "ai-ml/no-such",
            "backend/api-design",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let done: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(done["failed"], 1);
    let results = done["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["status"], "installed");
    assert_eq!(results[0]["requested"], ID);
    for key in [
        "status", "slug", "id", "name", "version", "sha256", "path", "warnings", "replaced",
        "source", "registry", "page_url", "error",
    ] {
        assert!(results[0].get(key).is_some(), "install result lacks {key}");
    }
    assert_eq!(results[1]["status"], "failed");
    assert_eq!(results[1]["error"]["code"], "not-in-registry");
    assert_eq!(results[2]["status"], "installed");
    assert!(d.join("skills").join(ID).join("SKILL.md").is_file());

    // list
    let list = json(d, &r, &["list"]);
    assert_eq!(list["count"], 2);
    let first = &list["skills"][0];
    assert_eq!(first["id"], ID);
    assert_eq!(first["source"]["kind"], "registry");
    assert_eq!(first["page_url"], format!("{r}/skills/{ID}"));
    assert_eq!(first["active"], true);
    assert!(
        first["description"]
            .as_str()
            .unwrap()
            .starts_with("Implement comprehensive")
    );
    assert_eq!(json(d, &r, &["view", ID])["skill"]["installed"], true);

    // update
    let up = json(d, &r, &["update"]);
    assert_eq!(up["failed"], 0);
    let statuses: Vec<&str> = up["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["up-to-date", "up-to-date"]);

    // info
    let info = json(d, &r, &["info"]);
    assert_eq!(info["reachable"], true);
    assert_eq!(info["skills"], 136);
    assert_eq!(info["categories"], 23);
    assert_eq!(info["installed"], 2);
    assert_eq!(info["installed_from_registry"], 2);
    assert_eq!(info["schema"], "mercury-skills-registry@1");
    assert_eq!(info["cache_ttl_seconds"], 3600);

    // doctor, then doctor --seed-skills
    let doctor = json(d, &r, &["doctor"]);
    assert_eq!(doctor["ok"], true, "{doctor}");
    assert_eq!(doctor["registry"]["reachable"], true);
    assert_eq!(doctor["cache"]["present"], true);
    assert_eq!(doctor["library"]["installed"], 2);
    assert!(doctor["seeded"].is_null());
    let seeded = json(d, &r, &["doctor", "--seed-skills"]);
    let written: Vec<&str> = seeded["seeded"]["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(written.contains(&"web-search"), "{seeded}");
    assert!(d.join("skills/web-search/SKILL.md").is_file());
    let again = json(d, &r, &["doctor", "--seed-skills"]);
    assert_eq!(again["seeded"]["written"], serde_json::json!([]));
    // A directory that is not a valid skill makes the doctor fail.
    std::fs::create_dir_all(d.join("skills/broken")).unwrap();
    std::fs::write(d.join("skills/broken/SKILL.md"), "---\nnever closed\n").unwrap();
    let o = run(d, &r, &["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doctor: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doctor["ok"], false);
    assert_eq!(
        doctor["library"]["problems"][0]["code"],
        "frontmatter-unclosed"
    );
    std::fs::remove_dir_all(d.join("skills/broken")).unwrap();

    // remove: refused without a terminal unless -y
    let o = run(d, &r, &["remove", ID, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("pass -y"), "{}", stderr(&o));
    assert!(d.join("skills").join(ID).is_dir());
    let removed = json(d, &r, &["remove", ID, "-y"]);
    assert_eq!(removed["status"], "removed");
    assert_eq!(removed["id"], ID);
    assert_eq!(removed["slug"], "agent-audit-logging");
    assert!(!d.join("skills").join(ID).exists());
    let o = run(d, &r, &["remove", ID, "-y"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no installed skill"), "{}", stderr(&o));
}

#[test]
fn skills_cli_human_output_and_registry_precedence() {
    let server = Listening::registry(&fixtures().join("registry-mirror"));
    let data = data_dir();
    let (d, r) = (data.path(), server.url());

    let cats = text(d, &r, &["categories"]);
    assert!(cats.contains("23 categories, 136 skills"), "{cats}");
    let found = text(d, &r, &["search", "audit"]);
    assert!(found.lines().next().unwrap().starts_with(ID), "{found}");
    assert!(found.contains(&format!("{r}/skills/{ID}")));
    let view = text(d, &r, &["view", ID]);
    assert!(view.starts_with("Agent Audit Log Reporting\n"), "{view}");
    let installed = text(d, &r, &["install", ID]);
    assert!(
        installed.contains(&format!("{ID} 1.0.0: installed")),
        "{installed}"
    );
    let list = text(d, &r, &["list"]);
    assert!(list.starts_with(ID), "{list}");
    let quiet = run(d, &r, &["install", ID, "-q"]);
    assert!(quiet.status.success());
    assert!(stderr(&quiet).is_empty(), "{}", stderr(&quiet));
    assert!(stdout(&quiet).contains("already installed"));

    // --registry > ENGRAM_SKILLS_REGISTRY > skills.registry > default.
    let info = |cmd: &mut Command| -> Value {
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let from_env = info(command(d, &["info", "--json"]).env("ENGRAM_SKILLS_REGISTRY", &r));
    assert_eq!(
        from_env["registry"],
        serde_json::json!({"url": r, "source": "env"})
    );
    let flag_wins = info(
        command(d, &["info", "--json", "--registry", &r])
            .env("ENGRAM_SKILLS_REGISTRY", "http://127.0.0.1:9"),
    );
    assert_eq!(flag_wins["registry"]["source"], "flag");
    std::fs::write(
        d.join("config.yaml"),
        format!("network:\n  allowPrivate: true\nskills:\n  registry: {r}/\n"),
    )
    .unwrap();
    let from_config = info(&mut command(d, &["info", "--json"]));
    assert_eq!(
        from_config["registry"],
        serde_json::json!({"url": r, "source": "config"})
    );

    // A bad registry URL and a bad command line.
    let o = run(d, "ftp://example.invalid", &["categories"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("invalid registry URL"),
        "{}",
        stderr(&o)
    );
    let o = command(d, &["browse"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = command(d, &["browse", "ai-ml", "--limit", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// `engram skills grant`: the person at the terminal grants a skill the tools its
/// SKILL.md asks for (a built-in grants none until then), asked first unless `-y`.
#[test]
fn skills_cli_grant_gives_a_skill_its_tools_for_its_file() {
    let data = data_dir();
    let d = data.path();
    let r = "http://127.0.0.1:9";
    // Seeds the built-ins (and fails its registry check: nothing listens there).
    run(d, r, &["doctor", "--seed-skills"]);
    let listed = json(d, r, &["list"]);
    let web = |listed: &Value| {
        listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["slug"] == "web-search")
            .cloned()
            .unwrap()
    };
    assert_eq!(
        web(&listed)["granted_tools"],
        serde_json::json!([]),
        "{listed}"
    );
    let o = run(d, r, &["grant", "web-search"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("pass -y"), "{}", stderr(&o));
    let granted = json(d, r, &["grant", "web-search", "-y"]);
    assert_eq!(granted["status"], "granted");
    assert_eq!(granted["granted_tools"], serde_json::json!(["fetch_url"]));
    assert_eq!(
        web(&json(d, r, &["list"]))["granted_tools"],
        serde_json::json!(["fetch_url"])
    );
    let o = run(d, r, &["grant", "word-stats", "-y"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The warnings of `code` in a JSON list of warnings.
fn warned<'a>(warnings: &'a Value, code: &str) -> Vec<&'a str> {
    warnings
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["code"] == code)
        .filter_map(|w| w["message"].as_str())
        .collect()
}

/// Issue 29, point 3: an `allowed-tools` entry Engram cannot read used to be accepted
/// and confirmed at install, then refused as `unknown-tool` at every turn, with no
/// word. The install still succeeds, and says which entry grants nothing: on the
/// terminal, in `--json`, in `skills list`, and in the daemon's REST listing (which
/// the dashboard shows). Claude Code's forms it does read are no warning.
#[test]
fn an_allowed_tools_entry_engram_cannot_read_is_a_warning_at_install() {
    let data = data_dir();
    let d = data.path();
    let src = tempfile::tempdir().unwrap();
    let skill = |slug: &str| {
        let dir = src.path().join(slug);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: {slug}\ndescription: Frobnicates the repository.\nallowed-tools: [Frobnicate(((, Read, Bash(git log:*), mcp__github]\n---\n\n# Frob\n"
            ),
        )
        .unwrap();
        dir.to_string_lossy().into_owned()
    };
    let human = command(d, &["install", "--from", &skill("frob"), "-y"])
        .output()
        .unwrap();
    assert!(human.status.success(), "{}", stderr(&human));
    let said = stdout(&human);
    assert!(
        said.contains("warning [tool-not-understood]") && said.contains("`Frobnicate(((`"),
        "{said}"
    );
    let o = command(
        d,
        &["install", "--from", &skill("frob-two"), "-y", "--json"],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let done: Value = serde_json::from_slice(&o.stdout).unwrap();
    let result = done["results"].get(0).unwrap_or(&done);
    let messages = warned(&result["warnings"], "tool-not-understood");
    assert_eq!(messages.len(), 1, "{done}");
    assert!(messages[0].contains("`Frobnicate(((`"), "{done}");
    assert!(messages[0].contains("grants nothing"), "{done}");

    let o = command(d, &["list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let frob = list["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slug"] == "frob")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(warned(&frob["warnings"], "tool-not-understood").len(), 1);

    let daemon = Daemon::start(&mut engram(d));
    let listed = ok(daemon.get("/api/skills/frob"), 200);
    let messages = warned(&listed["warnings"], "tool-not-understood");
    assert_eq!(messages.len(), 1, "{listed}");
    assert!(messages[0].contains("`Frobnicate(((`"), "{listed}");
}

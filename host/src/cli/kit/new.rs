//! `engram plugins new`: a plugin crate from the templates in `host/kit/`, with the WIT
//! files of this binary copied in, so that the crate builds wherever `engram` is
//! installed, with nothing of Engram's source tree around it. The crate appears by one
//! rename, complete or not at all.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Serialize;

use crate::ids::validate_name;
use crate::runtime::{World, builtin};

/// The contract this binary speaks, written into every new crate.
const WIT: [(&str, &str); 3] = [
    ("types.wit", include_str!("../../../../wit/types.wit")),
    ("host.wit", include_str!("../../../../wit/host.wit")),
    ("worlds.wit", include_str!("../../../../wit/worlds.wit")),
];

/// The version of `engram:plugin` in [`WIT`] (`X` in `package engram:plugin@X;`).
pub fn wit_version() -> &'static str {
    WIT[2]
        .1
        .split("package engram:plugin@")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or("unknown")
}

const CARGO_TOML: &str = include_str!("../../../kit/Cargo.toml.in");
const GITIGNORE: &str = include_str!("../../../kit/gitignore");

/// The source and the example input of each world.
fn templates(world: World) -> (&'static str, &'static str) {
    match world {
        World::Extractor => (
            include_str!("../../../kit/extractor.rs"),
            include_str!("../../../kit/extractor.json"),
        ),
        World::Resolver => (
            include_str!("../../../kit/resolver.rs"),
            include_str!("../../../kit/resolver.json"),
        ),
        World::Consolidator => (
            include_str!("../../../kit/consolidator.rs"),
            include_str!("../../../kit/consolidator.json"),
        ),
        World::SkillTool => (
            include_str!("../../../kit/skill-tool.rs"),
            include_str!("../../../kit/skill-tool.json"),
        ),
    }
}

/// What `new` wrote.
#[derive(Debug, Serialize)]
pub struct Created {
    pub name: String,
    pub world: World,
    pub path: PathBuf,
    /// The WIT package version the crate targets.
    pub wit: &'static str,
    /// Paths relative to `path`, sorted.
    pub files: Vec<String>,
}

/// Writes a new plugin crate named `name` for `world` at `dir`, which must not exist
/// or be empty.
pub fn create(name: &str, world: World, dir: &Path) -> anyhow::Result<Created> {
    validate_name(name).map_err(|e| anyhow::anyhow!("plugin name: {e}"))?;
    if builtin::find(name).is_some() {
        bail!("`{name}` is the name of a built-in plugin (builtin:{name}); choose another");
    }
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied || (dir.exists() && !dir.is_dir()) {
        bail!(
            "{} already exists and is not an empty directory",
            dir.display()
        );
    }
    let files = files(name, world);
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = parent.join(format!(".{name}.new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let written = write_all(&staging, &files).and_then(|()| {
        std::fs::rename(&staging, dir)
            .with_context(|| format!("cannot move the new crate to {}", dir.display()))
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let mut listed: Vec<String> = files.into_iter().map(|(path, _)| path).collect();
    listed.sort();
    Ok(Created {
        name: name.to_string(),
        world,
        path: dir.to_path_buf(),
        wit: wit_version(),
        files: listed,
    })
}

fn write_all(root: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (relative, text) in files {
        let path = root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Every file of the crate: `(relative path, contents)`.
fn files(name: &str, world: World) -> Vec<(String, String)> {
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{world}}", world.as_str())
            .replace("{{engram_version}}", env!("CARGO_PKG_VERSION"))
    };
    let (source, input) = templates(world);
    let mut files = vec![
        ("Cargo.toml".to_string(), fill(CARGO_TOML)),
        (".gitignore".to_string(), GITIGNORE.to_string()),
        ("plugin.toml".to_string(), manifest(name, world)),
        ("README.md".to_string(), readme(name, world)),
        ("src/lib.rs".to_string(), fill(source)),
        ("examples/input.json".to_string(), input.to_string()),
    ];
    for (file, text) in WIT {
        files.push((format!("wit/{file}"), text.to_string()));
    }
    files
}

fn manifest(name: &str, world: World) -> String {
    let memory_world = world != World::SkillTool;
    let mut text = format!(
        "name = \"{name}\"\nversion = \"0.1.0\"\nworld = \"{world}\"\ndescription = \"An Engram {world} plugin\"\n\n\
         # Everything defaults to nothing; the host checks each grant on every call.\n\
         [permissions]\n\
         # Hosts outbound HTTP (wasi:http) may reach: \"api.example.com\", \"api.example.com:8443\",\n\
         # \"*.example.com\", or an IP address such as \"127.0.0.1:11434\" (a local server).\n\
         allowed-hosts = []\n"
    );
    if memory_world {
        text.push_str(
            "# Names in allowed-hosts that may resolve to loopback or private addresses.\n\
             private-hosts = []\n\
             # A private key-value store, kept across calls (1 MiB).\n\
             kv = false\n",
        );
    }
    text.push_str(
        "# Tools the plugin may ask the gate for (the gate still decides).\n\
         tools = []\n\n\
         [limits]\n\
         memory-mib = 64     # at most 1024\n\
         timeout-ms = 2000   # at most 60000\n",
    );
    text
}

fn readme(name: &str, world: World) -> String {
    let (failure, usage) = if world == World::SkillTool {
        (
            "the agent gets the error",
            format!(
                "A skill ships the built component as `scripts/{name}.wasm`, with the\n\
                 `[permissions]` and `[limits]` of plugin.toml in `scripts/{name}.toml`."
            ),
        )
    } else {
        (
            "the host logs it, shows it in `GET /api/brain/status` and answers with its built-in strategy instead",
            format!(
                "Then select it in the data directory's `config.yaml`:\n\n\
                 ```yaml\nmemory:\n  strategies:\n    {world}: {name}\n```\n\n\
                 Its settings are its entry `plugins.{name}` in the same file: `settings()`\n\
                 (in `engram::plugin::config`) returns `plugins.{name}.settings` as JSON, and\n\
                 `secret(\"apiKeyEnv\")` the environment variable that setting names."
            ),
        )
    };
    format!(
        "# {name}\n\n\
         An Engram plugin for the `{world}` world of `engram:plugin@{wit}`, written by\n\
         `engram plugins new`.\n\n\
         - `src/lib.rs`: the plugin. `wit/worlds.wit` says what the world's export must\n  \
           return, `wit/types.wit` what each field means. A panic fails the call: {failure}.\n\
         - `plugin.toml`: name, version, world, permissions and limits.\n\
         - `wit/`: the contract, as the `engram` that wrote this crate speaks it.\n\
         - `examples/input.json`: one call's input, for `engram plugins test`.\n\n\
         Building needs Rust and its `wasm32-wasip2` target (`rustup target add wasm32-wasip2`).\n\n\
         ```sh\n\
         cargo test                                         # the unit tests, natively\n\
         engram plugins build .                             # -> ./plugin.wasm, checked by the runtime\n\
         engram plugins test . --input examples/input.json  # one call through the real runtime\n\
         engram plugins install .\n\
         ```\n\n\
         {usage}\n",
        wit = wit_version()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_complete_crate_or_nothing() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("my-extractor");
        let created = create("my-extractor", World::Extractor, &dir).expect("create");
        assert_eq!(created.wit, wit_version());
        for file in [
            "Cargo.toml",
            "plugin.toml",
            "src/lib.rs",
            "wit/worlds.wit",
            "examples/input.json",
        ] {
            assert!(dir.join(file).is_file(), "{file}");
        }
        let manifest = crate::runtime::Manifest::load(&dir).expect("a valid manifest");
        assert_eq!(manifest.world, World::Extractor);
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read");
        assert!(cargo.contains("name = \"my-extractor\"") && !cargo.contains("{{"));

        // Refusals leave nothing behind.
        let again = create("my-extractor", World::Extractor, &dir).expect_err("occupied");
        assert!(again.to_string().contains("already exists"), "{again}");
        for (name, why) in [("Bad_Name", "plugin name"), ("extract-llm", "built-in")] {
            let e = create(name, World::Resolver, &root.path().join("x")).expect_err(name);
            assert!(e.to_string().contains(why), "{e}");
        }
        let left: Vec<_> = std::fs::read_dir(root.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["my-extractor"]);
    }

    #[test]
    fn every_world_gets_a_valid_manifest_and_its_own_source() {
        for world in World::ALL {
            let files = files("kit-check", world);
            let get = |name: &str| {
                files
                    .iter()
                    .find(|(p, _)| p == name)
                    .map(|(_, t)| t.as_str())
                    .expect(name)
            };
            let manifest = crate::runtime::Manifest::parse(get("plugin.toml")).expect("valid");
            assert_eq!(manifest.world, world);
            assert!(
                get("src/lib.rs").contains(&format!("world: \"{world}\"")),
                "{world}"
            );
            let input: serde_json::Value =
                serde_json::from_str(get("examples/input.json")).expect("JSON");
            assert!(input.is_object());
        }
    }

    /// The template asks for the wit-bindgen Engram's own plugins use, so that a new
    /// crate builds from what a machine that built Engram already has.
    #[test]
    fn the_template_uses_the_wit_bindgen_of_the_builtin_plugins() {
        let builtin = include_str!("../../../../plugins/extract-rules/Cargo.toml");
        let line = |text: &str| {
            text.lines()
                .find(|l| l.starts_with("wit-bindgen ="))
                .map(str::to_string)
                .expect("a wit-bindgen line")
        };
        assert_eq!(line(CARGO_TOML), line(builtin));
        assert!(wit_version().starts_with("0.1."), "{}", wit_version());
    }
}

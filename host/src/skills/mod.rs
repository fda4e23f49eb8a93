//! Skills: SKILL.md parsing and validation, and the library of installed skills under
//! `{data_dir}/skills/` with its `.index.json` (DESIGN.md section 4).
//!
//! Reading a SKILL.md is a pipeline of small steps, each in its own module:
//! `split` finds the frontmatter in the raw bytes, `yaml` reads it into a bounded tree,
//! `fields` picks the fields out of it (top level or `metadata.*`), and `validate`
//! applies the rules and decides the skill's identity. [`parse_skill`] and
//! [`load_skill`] run the pipeline. The body is carried as an opaque string and never
//! interpreted.
//!
//! The library ([`Library`]) keeps skills on disk: discovery, activation, removal and
//! installs that are all-or-nothing even when the process is killed half-way.

mod archive;
pub mod bot;
mod catalog;
mod durable;
pub mod embed;
mod error;
pub mod feed;
pub mod fetch;
mod fields;
mod id;
mod index;
mod install;
mod library;
mod package;
mod parse;
pub mod registry;
pub mod registry_server;
mod repair;
pub mod route;
mod scan;
pub mod seed;
mod split;
mod text;
mod validate;
mod view;
pub mod wordpiece;
mod yaml;

pub use catalog::{CatalogEntry, InvokedSkill, SUMMARY_CHARS, summarize};
pub use error::{LibraryError, SkillError, Warning};
pub use fields::{Frontmatter, split_tool_list};
pub use id::{SkillId, Slug, SlugError};
pub use index::{INDEX_FILE, INDEX_VERSION, Index, IndexEntry, Source, SourceKind};
pub use install::{InstallOutcome, InstallStatus};
pub use library::{Library, load_skill_dir};
pub use package::{PackagePath, SkillPackage};
pub use parse::{ParsedSkill, parse_skill};
pub use registry::{RegistryClient, RegistryError, RegistryUrl, skill_page_url};
pub use scan::{DiskCheck, DroppedEntry, ScanProblem, ScanReport};
pub use seed::{SeedReport, SeedSkip, SkipReason, seed_builtins, seed_new_builtins};
pub use validate::{ValidSkill, load_skill, validate, validate_frontmatter};
pub use view::{InstalledSkill, SkillDetail};

/// A SKILL.md larger than this is refused before it is decoded: a skill is
/// instructions injected into a model's context, not a data file.
pub const MAX_SKILL_FILE_BYTES: usize = 1024 * 1024;
/// The frontmatter (between the `---` lines) may not exceed this; it bounds the work
/// the YAML parser does on input from the network.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// YAML nodes a frontmatter may produce, counting every alias expansion: stops
/// "billion laughs" documents long before they cost memory or time.
pub const MAX_YAML_NODES: usize = 100_000;
/// Agent Skills limits.
pub const MAX_NAME_CHARS: usize = 64;
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// The file name of a skill; `skill.md` is read when only that one exists.
pub const SKILL_FILE: &str = "SKILL.md";

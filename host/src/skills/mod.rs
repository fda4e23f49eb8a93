//! Skills (README, "Skills"): SKILL.md files, the library of installed skills, and
//! where skills come from. Three parts, each depending only on the ones before it:
//!
//! - [`format`]: one SKILL.md file -> a validated skill (no I/O);
//! - [`library`]: `{data_dir}/skills/` and its `.index.json`: discovery, installs,
//!   activation, removal, the built-ins, what turns and listings show;
//! - [`registry`]: the registry client and server, installs from a URL or a file,
//!   updates.
//!
//! Choosing a skill for a message is `crate::routing`; the chat command `/skills` is
//! `crate::channels`.

pub mod format;
pub mod library;
pub mod registry;

pub use format::fields::{Frontmatter, split_tool_list};
pub use format::parse::{ParsedSkill, parse_skill, parse_skill_with};
pub use format::validate::{ValidSkill, load_skill, validate, validate_frontmatter};
pub use format::{IdError, Leniency, Origin, SkillError, SkillId, Slug, SlugError, Warning};
pub use library::catalog::{CatalogEntry, InvokedSkill, SUMMARY_CHARS, summarize};
pub use library::error::{LibraryError, ScanProblem};
pub use library::index::{INDEX_FILE, INDEX_VERSION, Index, IndexEntry, Source, SourceKind};
pub use library::install::{InstallOutcome, InstallStatus, ToolConsent};
pub use library::package::{PackagePath, SkillPackage};
pub use library::scan::{DiskCheck, DroppedEntry, Renamed, ScanReport};
pub use library::seed::{SeedReport, SeedSkip, SkipReason, seed_builtins, seed_new_builtins};
pub use library::view::{InstalledSkill, SkillDetail};
pub use library::{Library, load_skill_dir};
pub use registry::{RegistryClient, RegistryError, RegistryUrl, skill_page_url};

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

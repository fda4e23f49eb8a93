//! The host tools (README, "Turns and the tool gate"): `save_memory`, `search_memory`,
//! `fetch_url`, `read_skill_file` and `install_skill`, the tools Engram runs itself
//! once the gate has allowed a call.
//!
//! [`HOST_TOOLS`] specifies each of them once: its name, the level it gets when the
//! operator says nothing, a one-line description written for a model, the JSON Schema
//! of its arguments and the function that runs it. The gate's catalog reads the
//! table (so the gate knows the host tools from here), and the turn service
//! (`crate::turns`) is the one caller of [`HostTools::call`], for REST, for scripts'
//! `tools.invoke` and for every later channel. Nothing here checks permissions: the
//! turn service asks the gate before it calls in.
//!
//! [`HostTools::call`] blocks (SQLite, files, and `fetch_url` waiting on the async
//! runtime), so it runs off the async workers: on the blocking pool for REST, and on
//! the script's own blocking thread for WASM.

mod fetch;
mod files;
mod memory;
mod skills;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::Value;

use http::StatusCode;

use crate::config::{ConfigFile, ToolLevel};
use crate::described::{Described, Description};
use crate::memory::Memory;
use crate::memory::MemoryError;
use crate::net::FetchError;
use crate::skills::{Library, LibraryError, RegistryError};
use crate::strict_json::ShapeError;

pub use fetch::{FETCH_MAX_BYTES, FETCH_MAX_TEXT_CHARS};
pub use files::{READ_MAX_BYTES, read_skill_file};
pub use memory::{save_args, search_args};

/// One host tool, specified once.
#[derive(Debug)]
pub struct HostTool {
    pub name: &'static str,
    /// One line, for a model choosing a tool (and for people reading the catalog).
    pub description: &'static str,
    /// The level without operator configuration: reading is allowed, saving and
    /// reaching the network ask (the gate's catalog explains the defaults).
    pub default_level: ToolLevel,
    args_schema: fn() -> Value,
    run: RunFn,
}

/// Runs a tool: the services, who it runs for, its arguments (an object), and the
/// caller's time left, if it has a deadline.
type RunFn = fn(&HostTools, &ToolContext, Value, Option<Duration>) -> Result<Value, ToolError>;

impl HostTool {
    /// The JSON Schema (draft 2020-12) of the arguments the tool accepts: an object,
    /// unknown fields refused, as the tool itself reads them.
    pub fn args_schema(&self) -> Value {
        (self.args_schema)()
    }
}

/// Every host tool, sorted by name.
pub const HOST_TOOLS: &[HostTool] = &[
    HostTool {
        name: "fetch_url",
        description: "Fetch an http(s) URL and return the response's status and text.",
        default_level: ToolLevel::Ask,
        args_schema: fetch::args_schema,
        run: fetch::run,
    },
    HostTool {
        name: "install_skill",
        description: "Install a skill from a raw SKILL.md's URL or from pasted SKILL.md text.",
        default_level: ToolLevel::Ask,
        args_schema: skills::install_schema,
        run: skills::install,
    },
    HostTool {
        name: "read_skill_file",
        description: "Read a file of the invoked skill (scripts/, references/) as text.",
        default_level: ToolLevel::Allow,
        args_schema: files::args_schema,
        run: files::run,
    },
    HostTool {
        name: "save_memory",
        description: "Save something the user said about themselves to their memory.",
        default_level: ToolLevel::Ask,
        args_schema: memory::save_schema,
        run: memory::save,
    },
    HostTool {
        name: "search_memory",
        description: "Search the user's memories and past conversations; best matches first.",
        default_level: ToolLevel::Allow,
        args_schema: memory::search_schema,
        run: memory::search,
    },
];

/// The host tool `name` (exact, case-sensitive).
pub fn host_tool(name: &str) -> Option<&'static HostTool> {
    HOST_TOOLS.iter().find(|tool| tool.name == name)
}

/// `fetch_url, read_skill_file, ...` for messages.
pub fn names() -> String {
    HOST_TOOLS
        .iter()
        .map(|tool| tool.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who a tool runs for: the turn's user, and the skill invoked in it (whose directory
/// `read_skill_file` reads).
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    pub user: &'a str,
    pub skill: Option<&'a str>,
}

/// Why a host tool did not run or failed. Messages never carry a path of the data
/// directory; failures whose details belong in the log are [`ToolError::is_internal`].
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{field}: unknown field")]
    UnknownArg { field: String },
    #[error("{field}: {reason}")]
    InvalidArg { field: String, reason: String },
    #[error("no skill is invoked in this turn, so there is no skill directory to read from")]
    NoSkillInvoked,
    #[error("no file `{0}` in the skill's directory")]
    NoSuchFile(String),
    #[error("`{0}` leads outside the skill's directory (a symlink?); refused")]
    OutsideSkillDir(String),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("`{0}` needs the daemon's async runtime, which this thread is not part of")]
    NoRuntime(&'static str),
    #[error("the caller's time ran out before `{0}` could run")]
    NoTimeLeft(&'static str),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// An install from a URL failed: the fetch, or the SKILL.md it served.
    #[error(transparent)]
    Install(RegistryError),
    #[error(
        "a skill named `{slug}` is already installed{}; pass force: true to replace it",
        .version.as_deref().map(|v| format!(" (version {v})")).unwrap_or_default()
    )]
    SkillExists {
        slug: String,
        version: Option<String>,
    },
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: std::io::Error,
    },
}

/// A bad argument is 422 naming `args.<field>` (400 for an unknown one), a refused
/// URL 422 and a failing server 502 (the fetcher's), a missing file 404, a path out of
/// the skill's directory 403; a call that cannot run here or now 503 / 504; the
/// memory's and the library's errors as they describe them; the host's own failures
/// 500.
impl Described for ToolError {
    fn describe(&self) -> Description {
        match self {
            ToolError::UnknownArg { field } => Description::unknown_field(field),
            ToolError::InvalidArg { field, reason } => Description::invalid_field(field, reason),
            ToolError::NoSkillInvoked => {
                Description::new(StatusCode::CONFLICT, "no-skill-invoked", self.to_string())
            }
            ToolError::NoSuchFile(_) => Description::not_found(self.to_string()),
            ToolError::OutsideSkillDir(_) => {
                Description::new(StatusCode::FORBIDDEN, "outside-skill-dir", self.to_string())
            }
            ToolError::Fetch(e) => e.describe(),
            ToolError::Memory(e) => e.describe(),
            ToolError::Library(e) => e.describe(),
            ToolError::Install(e) => e.describe(),
            ToolError::SkillExists { .. } => {
                Description::new(StatusCode::CONFLICT, "already-installed", self.to_string())
            }
            // Where the call came from, not the host's failure: a thread outside the
            // daemon's runtime (a plugin's call), a caller's deadline already past.
            ToolError::NoRuntime(_) => Description::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "tool-unavailable",
                self.to_string(),
            ),
            ToolError::NoTimeLeft(_) => Description::new(
                StatusCode::GATEWAY_TIMEOUT,
                "no-time-left",
                self.to_string(),
            ),
            ToolError::Io { .. } => Description::internal("host tool"),
        }
    }
}

impl ToolError {
    fn invalid(field: &str, reason: impl Into<String>) -> ToolError {
        ToolError::InvalidArg {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

/// The host tools over the daemon's services.
pub struct HostTools {
    memory: Arc<Memory>,
    skills: Library,
    config: Arc<ConfigFile>,
}

impl HostTools {
    pub fn new(memory: Arc<Memory>, skills: Library, config: Arc<ConfigFile>) -> HostTools {
        HostTools {
            memory,
            skills,
            config,
        }
    }

    /// Runs `tool` for `context` with `args`, a JSON object (`null`: none), and
    /// answers what the tool returns. Blocks: call it off the async workers.
    /// `deadline` is when the caller's time is up (a script's): nothing starts after
    /// it, and `fetch_url` is cut short at it.
    pub fn call(
        &self,
        context: &ToolContext,
        tool: &HostTool,
        args: Value,
        deadline: Option<Instant>,
    ) -> Result<Value, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Default::default()),
            Value::Object(map) => Value::Object(map),
            _ => return Err(ToolError::invalid("args", "must be an object")),
        };
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left.is_zero()) {
            return Err(ToolError::NoTimeLeft(tool.name));
        }
        (tool.run)(self, context, args, left)
    }
}

/// Reads a tool's arguments into `T` (deny unknown fields); errors name `args.<field>`.
fn tool_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    crate::strict_json::from_value(args).map_err(|e| match e {
        ShapeError::UnknownField(field) => ToolError::UnknownArg {
            field: format!("args.{field}"),
        },
        ShapeError::Invalid { field, message } => ToolError::InvalidArg {
            field: format!("args.{field}"),
            reason: message,
        },
    })
}

fn to_value(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::Io {
        context: "serialising a tool's result",
        source: e.into(),
    })
}

#[cfg(test)]
mod tests;

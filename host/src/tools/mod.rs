//! The host tools (DESIGN section 5): `save_memory`, `search_memory`, `fetch_url` and
//! `read_skill_file`, the tools Engram runs itself once the gate has allowed a call.
//! This is their one implementation, reached two ways: the agent's
//! `POST /api/turns/{id}/tools/{name}`, and a skill script's `tools.invoke`, for which
//! [`HostTools`] is the gate's [`ToolRunner`]. Neither checks permissions here: the
//! gate has decided before either calls in.
//!
//! [`HostTools::call`] blocks (SQLite, files, and `fetch_url` waiting on the async
//! runtime), so it runs off the async workers: on the blocking pool for REST, and on
//! the script's own blocking thread for WASM.

mod fetch;
mod files;

use std::sync::Arc;
use std::time::Instant;

use engram_strategies::model::Evidence;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::brain::facts::FactsError;
use crate::brain::open::MemoryBackend;
use crate::brain::store::StoreError;
use crate::brain::{NewMemory, SearchHit};
use crate::config::ConfigFile;
use crate::gate::{ToolRunner, Turn, policy};
use crate::net::FetchError;
use crate::shape::ShapeError;
use crate::skills::{Library, LibraryError};

pub use fetch::{FETCH_MAX_BYTES, FETCH_MAX_TEXT_CHARS};
pub use files::READ_MAX_BYTES;

/// `search_memory`: default and largest `limit`.
const SEARCH_DEFAULT: usize = 10;
const SEARCH_MAX: usize = 50;

/// One of the host tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTool {
    FetchUrl,
    ReadSkillFile,
    SaveMemory,
    SearchMemory,
}

impl HostTool {
    pub const ALL: [HostTool; 4] = [
        HostTool::FetchUrl,
        HostTool::ReadSkillFile,
        HostTool::SaveMemory,
        HostTool::SearchMemory,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostTool::FetchUrl => "fetch_url",
            HostTool::ReadSkillFile => "read_skill_file",
            HostTool::SaveMemory => "save_memory",
            HostTool::SearchMemory => "search_memory",
        }
    }

    pub fn parse(name: &str) -> Option<HostTool> {
        HostTool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `fetch_url, read_skill_file, ...` for messages.
    pub fn names() -> String {
        HostTool::ALL.map(HostTool::name).join(", ")
    }
}

/// Why a host tool did not run or failed. Messages never carry a path of the data
/// directory; failures whose details belong in the log are [`ToolError::is_internal`].
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{field}: unknown field")]
    UnknownArg { field: String },
    #[error("{field}: {reason}")]
    InvalidArg { field: String, reason: String },
    #[error("`{0}` is not a host tool; host tools are {names}", names = HostTool::names())]
    NotAHostTool(String),
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
    Store(#[from] StoreError),
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: std::io::Error,
    },
}

impl ToolError {
    /// Whether the error is the host's own failure (I/O, SQL), whose details are for
    /// the log only.
    pub fn is_internal(&self) -> bool {
        match self {
            ToolError::Io { .. } => true,
            ToolError::Store(e) => !matches!(
                e,
                StoreError::NotFound(_) | StoreError::Invalid { .. } | StoreError::Import { .. }
            ),
            ToolError::Facts(e) => matches!(e, FactsError::Io { .. }),
            ToolError::Library(e) => matches!(e, LibraryError::Io { .. }),
            _ => false,
        }
    }

    fn invalid(field: &str, reason: impl Into<String>) -> ToolError {
        ToolError::InvalidArg {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

/// The host tools over the daemon's services.
pub struct HostTools {
    memory: Arc<MemoryBackend>,
    skills: Library,
    config: Arc<ConfigFile>,
}

impl HostTools {
    pub fn new(memory: Arc<MemoryBackend>, skills: Library, config: Arc<ConfigFile>) -> HostTools {
        HostTools {
            memory,
            skills,
            config,
        }
    }

    /// Runs `tool` for `turn` (as its user, in its invoked skill's directory) with
    /// `args`, a JSON object (`null`: none), and answers what the tool returns. Blocks:
    /// call it off the async workers. `deadline` is when the caller's time is up (a
    /// script's): nothing starts after it, and `fetch_url` is cut short at it.
    pub fn call(
        &self,
        turn: &Turn,
        tool: HostTool,
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
            return Err(ToolError::NoTimeLeft(tool.name()));
        }
        match tool {
            HostTool::SaveMemory => self.save_memory(turn, args),
            HostTool::SearchMemory => self.search_memory(turn, args),
            HostTool::ReadSkillFile => files::read_skill_file(&self.skills, turn, args),
            HostTool::FetchUrl => {
                let allow_private = self.config.current().network.allow_private.unwrap_or(false);
                // The thread is the runtime's (a blocking-pool thread, as every caller
                // of this is); `block_on` waits here for the fetch, which is bounded by
                // its own time limit and by the caller's deadline.
                let runtime = tokio::runtime::Handle::try_current()
                    .map_err(|_| ToolError::NoRuntime(tool.name()))?;
                runtime.block_on(fetch::fetch_url(args, allow_private, left))
            }
        }
    }

    fn save_memory(&self, turn: &Turn, args: Value) -> Result<Value, ToolError> {
        let mut new: NewMemory = tool_args(args)?;
        // What the agent saves during a turn, it was told by the user.
        new.evidence = Some(Evidence::Direct);
        let record = match &*self.memory {
            MemoryBackend::Brain(brain) => brain.add(&turn.user, new)?,
            MemoryBackend::Facts { store, .. } => store.add(&turn.user, new)?,
        };
        to_value(record)
    }

    fn search_memory(&self, turn: &Turn, args: Value) -> Result<Value, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct SearchArgs {
            q: String,
            limit: Option<usize>,
        }
        let args: SearchArgs = tool_args(args)?;
        if args.q.trim().is_empty() || args.q.len() > 1000 {
            return Err(ToolError::invalid("args.q", "must be 1 to 1000 bytes"));
        }
        let limit = match args.limit {
            None => SEARCH_DEFAULT,
            Some(n) if (1..=SEARCH_MAX).contains(&n) => n,
            Some(_) => {
                return Err(ToolError::invalid(
                    "args.limit",
                    format!("must be 1 to {SEARCH_MAX}"),
                ));
            }
        };
        let found = match &*self.memory {
            MemoryBackend::Brain(brain) => brain.search(&turn.user, &args.q, limit)?,
            MemoryBackend::Facts { store, .. } => store.search(&turn.user, &args.q, limit)?,
        };
        let items: Vec<SearchHit> = found.into_iter().map(SearchHit::from).collect();
        Ok(serde_json::json!({ "items": to_value(items)? }))
    }
}

/// `tools.invoke` from a skill script, once the gate allowed it: the same tools as
/// the REST route, answered as JSON text. The script sees the tool's error message,
/// except for the host's own failures, which are logged and answered generically.
impl ToolRunner for HostTools {
    fn run(
        &self,
        turn: &Turn,
        tool: &str,
        args_json: &str,
        deadline: Option<Instant>,
    ) -> Result<String, String> {
        let host_tool = HostTool::parse(tool)
            .ok_or_else(|| ToolError::NotAHostTool(policy::shown(tool)).to_string())?;
        let args = if args_json.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(args_json)
                .map_err(|e| format!("the arguments are not JSON: {e}"))?
        };
        match self.call(turn, host_tool, args, deadline) {
            Ok(result) => Ok(result.to_string()),
            Err(e) if e.is_internal() => {
                tracing::error!(turn = %turn.id, tool, "host tool failed for a script: {e}");
                Err(format!(
                    "`{tool}` failed inside the host; the daemon log has the details"
                ))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Reads a tool's arguments into `T` (deny unknown fields); errors name `args.<field>`.
fn tool_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    crate::shape::from_value(args).map_err(|e| match e {
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

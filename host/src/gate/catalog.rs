//! The tools the gate knows: the host tools Engram runs itself (specified in
//! [`crate::tools::HOST_TOOLS`], read from there) and the agent-run tools the built-in
//! skills declare ([`AGENT_TOOLS`]), each with a one-line description and the level it
//! gets when the operator says nothing. A tool name outside these (and outside the
//! operator's `tools.policy`) is unknown, and unknown tools are denied, so that a
//! skill cannot widen what the agent may do by inventing a name.
//!
//! Defaults follow what a user of Claude Code expects: reading is allowed, anything
//! that writes, reaches the network, sends something to someone or runs a program
//! asks. An invoked skill raises its own `allowed-tools` from ask to allow for its
//! turn, so the built-in skills work without configuration, while outside a skill the
//! agent asks first. Nothing defaults to deny: deny is the operator's word, and a
//! skill can never lift it. `cd` only moves the agent's own working directory, so it
//! is allowed like a read.

use serde::Serialize;

use super::rules;
use crate::config::ToolLevel;
use crate::tools::{HOST_TOOLS, HostTool};

/// Who runs a tool once the gate allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Engram runs it (`POST /api/turns/:id/tools/:name`, or `tools.invoke` from WASM).
    Host,
    /// The agent runs it itself after asking (`POST /api/turns/:id/authorize`).
    Agent,
}

/// One known tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub kind: ToolKind,
    /// The level without operator configuration (see the module's text for why each).
    #[schema(value_type = String)]
    pub default_level: ToolLevel,
}

impl ToolSpec {
    fn host(tool: &HostTool) -> ToolSpec {
        ToolSpec {
            name: tool.name,
            description: tool.description,
            kind: ToolKind::Host,
            default_level: tool.default_level,
        }
    }
}

const fn agent(
    name: &'static str,
    default_level: ToolLevel,
    description: &'static str,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        kind: ToolKind::Agent,
        default_level,
    }
}

use ToolLevel::{Allow, Ask};

/// The agent-run tools the gate knows, sorted by name (bytewise: Claude Code's
/// capitalised names, which MCP clients ask `tool_authorize` about and ecosystem
/// skills list, come first, at Claude Code's own tiers).
pub const AGENT_TOOLS: &[ToolSpec] = &[
    agent("Bash", Ask, "Claude Code: run a shell command."),
    agent("Edit", Ask, "Claude Code: edit a file."),
    agent("Glob", Allow, "Claude Code: find files by pattern."),
    agent("Grep", Allow, "Claude Code: search file contents."),
    agent("LS", Allow, "Claude Code: list a directory."),
    agent("MultiEdit", Ask, "Claude Code: several edits to one file."),
    agent("NotebookEdit", Ask, "Claude Code: edit a Jupyter notebook."),
    agent(
        "NotebookRead",
        Allow,
        "Claude Code: read a Jupyter notebook.",
    ),
    agent("Read", Allow, "Claude Code: read a file."),
    agent("Task", Ask, "Claude Code: run a sub-agent."),
    agent(
        "TodoWrite",
        Allow,
        "Claude Code: keep the session's task list.",
    ),
    agent("WebFetch", Ask, "Claude Code: fetch a URL."),
    agent("WebSearch", Ask, "Claude Code: search the web."),
    agent("Write", Ask, "Claude Code: write a file."),
    agent("cd", Allow, "Change the agent's working directory."),
    agent(
        "create_file",
        Ask,
        "Create a new file on the user's machine.",
    ),
    agent(
        "github_api",
        Ask,
        "Call the GitHub API on the user's behalf.",
    ),
    agent(
        "run_command",
        Ask,
        "Run a program or shell command on the user's machine.",
    ),
    agent("schedule_task", Ask, "Schedule a task to run later."),
    agent(
        "send_file",
        Ask,
        "Send a file to the user or a contact over a channel.",
    ),
    agent(
        "send_message",
        Ask,
        "Send a message to the user or a contact over a channel.",
    ),
    agent(
        "write_file",
        Ask,
        "Write to or overwrite a file on the user's machine.",
    ),
];

/// The known tool `name` (exact, case-sensitive: tool names are identifiers).
pub fn lookup(name: &str) -> Option<ToolSpec> {
    crate::tools::host_tool(name)
        .map(ToolSpec::host)
        .or_else(|| {
            AGENT_TOOLS
                .binary_search_by(|spec| spec.name.cmp(name))
                .ok()
                .map(|i| AGENT_TOOLS[i])
        })
}

/// Every tool the gate knows, host tools first.
pub fn all() -> impl Iterator<Item = ToolSpec> {
    HOST_TOOLS
        .iter()
        .map(ToolSpec::host)
        .chain(AGENT_TOOLS.iter().copied())
}

/// The level of `tool` when the operator says nothing: the catalog's, and ask for a
/// tool of an MCP server (`mcp__server__tool`, as Claude Code names them), which can do
/// anything its server does; `None` for a tool the gate does not know.
pub fn default_level(tool: &str) -> Option<ToolLevel> {
    lookup(tool)
        .map(|spec| spec.default_level)
        .or_else(|| rules::mcp_server(tool).map(|_| Ask))
}

/// Why an `allowed-tools` entry grants nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum UnknownTool {
    /// Not a tool the gate knows; `suggestion` is a known tool that differs only in
    /// case or `-`/`_` (`Fetch_URL`, `fetch-url`).
    Unknown {
        name: String,
        suggestion: Option<String>,
    },
    /// An argument scope the gate cannot check against a call, such as
    /// `Read(./src/**)`: granting the whole tool would grant more than the author
    /// wrote, so it grants nothing.
    Scoped { name: String },
    /// Not an entry at all: unbalanced parentheses, characters no tool name has.
    Malformed { name: String, why: String },
}

impl UnknownTool {
    pub fn name(&self) -> &str {
        match self {
            UnknownTool::Unknown { name, .. }
            | UnknownTool::Scoped { name }
            | UnknownTool::Malformed { name, .. } => name,
        }
    }
}

impl std::fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnknownTool::Unknown {
                name,
                suggestion: Some(known),
            } => write!(
                f,
                "unknown tool `{name}` (did you mean `{known}`?); it grants nothing"
            ),
            UnknownTool::Unknown { name, .. } => {
                write!(f, "unknown tool `{name}`; it grants nothing")
            }
            UnknownTool::Scoped { name } => write!(
                f,
                "`{name}` is scoped by arguments, which the gate cannot enforce; it grants nothing"
            ),
            UnknownTool::Malformed { name, why } => write!(
                f,
                "`{name}` is not a tool name nor `Tool(specifier)` ({why}); it grants nothing"
            ),
        }
    }
}

/// The entries of a skill's `allowed-tools` that will grant nothing, in order, each
/// once: for reporting at install time. `also_known` names tools the operator's policy
/// makes known beyond the catalog.
pub fn unknown_tools<'a>(
    allowed_tools: &[String],
    also_known: impl Fn(&str) -> bool + 'a,
) -> Vec<UnknownTool> {
    let mut out: Vec<UnknownTool> = Vec::new();
    for name in allowed_tools {
        if out.iter().any(|u| u.name() == name) {
            continue;
        }
        match rules::parse(name) {
            Err(rules::NotUnderstood::Malformed(why)) => out.push(UnknownTool::Malformed {
                name: name.clone(),
                why: why.to_string(),
            }),
            Err(rules::NotUnderstood::Unchecked) => {
                out.push(UnknownTool::Scoped { name: name.clone() })
            }
            Ok(rules::ToolRule::McpServer(_)) => {}
            Ok(rule) => {
                let tool = rule.tool();
                if default_level(tool).is_none() && !also_known(tool) {
                    out.push(UnknownTool::Unknown {
                        name: name.clone(),
                        suggestion: suggest(tool),
                    });
                }
            }
        }
    }
    out
}

/// A known tool whose name equals `name` up to case and `-`/`_`.
fn suggest(name: &str) -> Option<String> {
    let fold = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let folded = fold(name);
    all()
        .find(|spec| spec.name == folded)
        .map(|spec| spec.name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_sorted_and_covers_host_and_builtin_skill_tools() {
        assert!(AGENT_TOOLS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(HOST_TOOLS.windows(2).all(|w| w[0].name < w[1].name));
        // A name is either the host's or the agent's, never both.
        for host in HOST_TOOLS {
            assert!(
                AGENT_TOOLS.iter().all(|a| a.name != host.name),
                "{}",
                host.name
            );
        }
        for host in [
            "save_memory",
            "search_memory",
            "fetch_url",
            "read_skill_file",
        ] {
            assert_eq!(lookup(host).map(|s| s.kind), Some(ToolKind::Host), "{host}");
        }
        // Every tool a built-in skill declares is known, so seeding reports nothing.
        for (skill, md) in crate::skills::library::seed::BUILTINS {
            let parsed = crate::skills::parse_skill(md.as_bytes()).expect("built-in parses");
            let allowed = parsed.frontmatter.allowed_tools;
            assert!(!allowed.is_empty(), "{skill}");
            let unknown = unknown_tools(&allowed, |_| false);
            assert!(unknown.is_empty(), "{skill}: {unknown:?}");
        }
        assert!(all().all(|s| !s.description.contains('\n') && s.description.len() < 80));
        assert_eq!(lookup("cd").map(|s| s.kind), Some(ToolKind::Agent));
        assert_eq!(lookup("made_up"), None);
    }

    #[test]
    fn reports_unknown_scoped_and_malformed_allowed_tools_once() {
        let allowed: Vec<String> = [
            "fetch_url",
            "Fetch_URL",
            "Bash(git add *)",
            "Read(./src/**)",
            "Read",
            "Frobnicate(((",
            "Frobnicate(((",
            "my_tool",
            "save-memory",
            "mcp__github",
            "mcp__github__create_issue",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let report = unknown_tools(&allowed, |name| name == "my_tool");
        assert_eq!(
            report,
            [
                UnknownTool::Unknown {
                    name: "Fetch_URL".into(),
                    suggestion: Some("fetch_url".into())
                },
                UnknownTool::Scoped {
                    name: "Read(./src/**)".into()
                },
                UnknownTool::Malformed {
                    name: "Frobnicate(((".into(),
                    why: "a `(` without its closing `)`".into()
                },
                UnknownTool::Unknown {
                    name: "save-memory".into(),
                    suggestion: Some("save_memory".into())
                },
            ]
        );
        assert!(report[0].to_string().contains("did you mean `fetch_url`"));
        assert!(report[2].to_string().contains("grants nothing"));
    }
}

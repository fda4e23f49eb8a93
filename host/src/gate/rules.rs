//! A skill's `allowed-tools` entries as the ecosystem writes them (Claude Code's
//! permission-rule syntax, which most SKILL.md files follow), read into rules the gate
//! can check against one call:
//!
//! - a bare tool name (`fetch_url`, `Read`, `Grep`, `WebFetch`) covers that tool with
//!   any arguments;
//! - `Bash(npm run test)` covers the Bash tool for exactly that command, and
//!   `Bash(git log:*)` (or `Bash(git log *)`) for the commands that are `git log` or
//!   start with `git log ` (a word boundary, so `git logx` is not covered); a command
//!   holding a shell operator (`;`, `&&`, `|`, `$(`, a newline, ...) is covered by no
//!   prefix, so a prefix cannot smuggle a second command in;
//! - `WebFetch(domain:example.com)` covers WebFetch for URLs on that host;
//! - `mcp__server__tool` names one tool of an MCP server, `mcp__server` (or
//!   `mcp__server__*`) every tool of it.
//!
//! Anything else (a malformed pattern, an argument scope Engram cannot check such as
//! `Read(./src/**)`) is not understood and covers nothing: it is reported at install
//! ([`super::catalog::unknown_tools`]) and never grants more than its author wrote.

use serde_json::Value;

/// The prefix of an MCP tool's name in Claude Code (`mcp__<server>__<tool>`).
pub const MCP_PREFIX: &str = "mcp__";

/// One understood `allowed-tools` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRule {
    /// The tool with any arguments.
    Tool(String),
    /// Every tool of one MCP server (`mcp__<server>`, the name it is checked by).
    McpServer(String),
    /// The Bash tool for one command (`prefix`: that command and what follows it
    /// after a space).
    Command { command: String, prefix: bool },
    /// WebFetch for URLs on one host.
    Domain(String),
}

/// Why an entry is not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotUnderstood {
    /// Not a tool name nor `Tool(specifier)`: unbalanced parentheses, an empty name or
    /// specifier, characters no tool name has.
    Malformed(&'static str),
    /// A specifier Engram cannot check against a call's arguments.
    Unchecked,
}

/// Reads one entry. Which names are tools is the catalog's and the policy's to say;
/// this is the syntax.
pub fn parse(entry: &str) -> Result<ToolRule, NotUnderstood> {
    let entry = entry.trim();
    let (name, specifier) = match entry.find('(') {
        None => (entry, None),
        Some(open) => {
            let Some(inner) = entry[open + 1..].strip_suffix(')') else {
                return Err(NotUnderstood::Malformed("a `(` without its closing `)`"));
            };
            if inner.contains(['(', ')']) {
                return Err(NotUnderstood::Malformed("parentheses inside the specifier"));
            }
            (&entry[..open], Some(inner.trim()))
        }
    };
    // `mcp__server__*` is the one name with a wildcard: every tool of that server.
    let plain = name.strip_suffix("__*").unwrap_or(name);
    let wildcard_elsewhere = plain != name && !name.starts_with(MCP_PREFIX);
    if plain.is_empty()
        || wildcard_elsewhere
        || !plain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
    {
        return Err(NotUnderstood::Malformed(
            "a tool name is letters, digits, `_` and `-`",
        ));
    }
    if let Some(rest) = name.strip_prefix(MCP_PREFIX) {
        if specifier.is_some() {
            return Err(NotUnderstood::Unchecked);
        }
        return mcp(rest);
    }
    match specifier {
        None | Some("*") => Ok(ToolRule::Tool(name.to_string())),
        Some("") => Err(NotUnderstood::Malformed("an empty specifier")),
        Some(spec) if name == "Bash" => command(spec),
        Some(spec) if name == "WebFetch" => match spec.strip_prefix("domain:") {
            Some(host) if !host.is_empty() && !host.contains(['/', '*', ' ']) => {
                Ok(ToolRule::Domain(host.to_ascii_lowercase()))
            }
            _ => Err(NotUnderstood::Unchecked),
        },
        Some(_) => Err(NotUnderstood::Unchecked),
    }
}

/// `server` or `server__tool` or `server__*`, after `mcp__`.
fn mcp(rest: &str) -> Result<ToolRule, NotUnderstood> {
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    if server.is_empty() || tool == Some("") {
        return Err(NotUnderstood::Malformed(
            "an MCP tool is `mcp__<server>` or `mcp__<server>__<tool>`",
        ));
    }
    match tool {
        None | Some("*") => Ok(ToolRule::McpServer(format!("{MCP_PREFIX}{server}"))),
        Some(_) => Ok(ToolRule::Tool(format!("{MCP_PREFIX}{rest}"))),
    }
}

/// A Bash specifier: exact, or a prefix ending in `:*` or ` *`.
fn command(spec: &str) -> Result<ToolRule, NotUnderstood> {
    let (command, prefix) = match spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *")) {
        Some(head) => (head.trim_end(), true),
        None => (spec, false),
    };
    if command.is_empty() || command.contains('*') {
        // A wildcard anywhere else is a glob this reading does not check.
        return Err(NotUnderstood::Unchecked);
    }
    Ok(ToolRule::Command {
        command: command.to_string(),
        prefix,
    })
}

/// The MCP server of an `mcp__<server>__<tool>` name (both parts non-empty).
pub fn mcp_server(tool: &str) -> Option<String> {
    let rest = tool.strip_prefix(MCP_PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| format!("{MCP_PREFIX}{server}"))
}

/// Characters that join or redirect shell commands: a command holding one is never
/// covered by a Bash rule, which speaks of one command.
const SHELL_OPERATORS: &[&str] = &[";", "&", "|", "`", "$(", ">", "<", "\n", "\r"];

impl ToolRule {
    /// The tool the rule is about (for the policy's level).
    pub fn tool(&self) -> &str {
        match self {
            ToolRule::Tool(name) | ToolRule::McpServer(name) => name,
            ToolRule::Command { .. } => "Bash",
            ToolRule::Domain(_) => "WebFetch",
        }
    }

    /// A call the rule covers (what a preview of the grant decides).
    pub fn example(&self) -> (String, Value) {
        match self {
            ToolRule::Tool(name) => (name.clone(), Value::Null),
            ToolRule::McpServer(server) => (format!("{server}__*"), Value::Null),
            ToolRule::Command { command, .. } => (
                "Bash".to_string(),
                serde_json::json!({ "command": command }),
            ),
            ToolRule::Domain(host) => (
                "WebFetch".to_string(),
                serde_json::json!({ "url": format!("https://{host}/") }),
            ),
        }
    }

    /// Whether the rule covers a call of `tool` with `args`.
    pub fn covers(&self, tool: &str, args: &Value) -> bool {
        match self {
            ToolRule::Tool(name) => name == tool,
            ToolRule::McpServer(server) => mcp_server(tool).as_deref() == Some(server),
            ToolRule::Command { command, prefix } => {
                let Some(called) = (tool == "Bash")
                    .then(|| args.get("command").and_then(Value::as_str))
                    .flatten()
                else {
                    return false;
                };
                let called = called.trim();
                if SHELL_OPERATORS.iter().any(|op| called.contains(op)) {
                    return false;
                }
                called == command
                    || (*prefix
                        && called
                            .strip_prefix(command.as_str())
                            .is_some_and(|rest| rest.starts_with([' ', '\t'])))
            }
            ToolRule::Domain(host) => {
                tool == "WebFetch"
                    && args
                        .get("url")
                        .and_then(Value::as_str)
                        .and_then(super::flow::host_of_url)
                        .is_some_and(|called| called == *host)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(command: &str) -> Value {
        json!({ "command": command })
    }

    #[test]
    fn reads_the_forms_the_ecosystem_writes() {
        let ok = |entry: &str| parse(entry).expect(entry);
        assert_eq!(ok("fetch_url"), ToolRule::Tool("fetch_url".into()));
        assert_eq!(ok("Read"), ToolRule::Tool("Read".into()));
        assert_eq!(ok("Bash(*)"), ToolRule::Tool("Bash".into()));
        assert_eq!(
            ok("Bash(git log:*)"),
            ToolRule::Command {
                command: "git log".into(),
                prefix: true
            }
        );
        assert_eq!(ok("Bash(git log *)"), ok("Bash(git log:*)"));
        assert_eq!(
            ok("Bash(npm run test)"),
            ToolRule::Command {
                command: "npm run test".into(),
                prefix: false
            }
        );
        assert_eq!(
            ok("WebFetch(domain:Docs.rs)"),
            ToolRule::Domain("docs.rs".into())
        );
        assert_eq!(
            ok("mcp__github__create_issue"),
            ToolRule::Tool("mcp__github__create_issue".into())
        );
        assert_eq!(ok("mcp__github"), ToolRule::McpServer("mcp__github".into()));
        assert_eq!(ok("mcp__github__*"), ok("mcp__github"));
    }

    #[test]
    fn malformed_and_unchecked_entries_are_not_understood() {
        for entry in [
            "Frobnicate(((",
            "Bash(git log",
            "Bash()",
            "Bash(a(b))",
            "(x)",
            "two words",
            "mcp__",
            "mcp__github__",
            "Read__*",
        ] {
            assert!(
                matches!(parse(entry), Err(NotUnderstood::Malformed(_))),
                "{entry}: {:?}",
                parse(entry)
            );
        }
        for entry in [
            "Read(./src/**)",
            "Edit(*.ts)",
            "Bash(git * --force)",
            "WebFetch(https://x.org)",
            "mcp__github(x)",
        ] {
            assert_eq!(parse(entry), Err(NotUnderstood::Unchecked), "{entry}");
        }
    }

    #[test]
    fn a_bash_rule_covers_its_command_and_nothing_joined_to_it() {
        let log = parse("Bash(git log:*)").expect("rule");
        assert!(log.covers("Bash", &bash("git log -3")));
        assert!(log.covers("Bash", &bash("git log")));
        assert!(!log.covers("Bash", &bash("git logx")));
        assert!(!log.covers("Bash", &bash("rm -rf /")));
        assert!(!log.covers("Bash", &bash("git log; rm -rf /")));
        assert!(!log.covers("Bash", &bash("git log && curl evil.example")));
        assert!(!log.covers("Bash", &bash("git log $(curl evil.example)")));
        assert!(!log.covers("Bash", &bash("git log > /etc/passwd")));
        assert!(!log.covers("Bash", &json!({})));
        assert!(!log.covers("run_command", &bash("git log")));
        let exact = parse("Bash(npm run test)").expect("rule");
        assert!(exact.covers("Bash", &bash("npm run test")));
        assert!(!exact.covers("Bash", &bash("npm run test --watch")));
    }

    #[test]
    fn mcp_and_domain_rules_cover_their_own() {
        let server = parse("mcp__github").expect("rule");
        assert!(server.covers("mcp__github__create_issue", &Value::Null));
        assert!(!server.covers("mcp__githubx__create_issue", &Value::Null));
        assert!(!server.covers("mcp__github", &Value::Null));
        let one = parse("mcp__github__create_issue").expect("rule");
        assert!(one.covers("mcp__github__create_issue", &Value::Null));
        assert!(!one.covers("mcp__github__delete_repo", &Value::Null));
        let docs = parse("WebFetch(domain:docs.rs)").expect("rule");
        assert!(docs.covers("WebFetch", &json!({"url": "https://docs.rs/serde"})));
        assert!(!docs.covers("WebFetch", &json!({"url": "https://evil.example/docs.rs"})));
    }
}

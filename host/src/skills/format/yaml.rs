//! Reading frontmatter YAML into a [`Node`] tree through serde_norway, within a budget.
//!
//! serde_norway already refuses runaway alias replays (its repetition limit) and deep
//! nesting (128 levels), but its repetition limit counts alias jumps, not the nodes a
//! jump replays: one wide anchor aliased many times still fits it. So every node we
//! build, replayed or not, is counted against [`MAX_YAML_NODES`]. Duplicate keys, which
//! serde would silently resolve to the last one, are refused: an ambiguous frontmatter
//! could show a reviewer one description and the router another.
//!
//! YAML resolves `1.0` to a float and `123` to an integer. For text fields the source
//! text matters (`version: 1.10` is not `1.1`), so when the tree holds such scalars a
//! second pass, guided by the first tree's shape, asks serde_norway for each one's text.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::SkillError;
use crate::skills::MAX_YAML_NODES;

/// A YAML value. Mapping keys are text; entries keep their order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// A scalar and its text (the source text once [`recover_source_text`] has run).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scalar {
    pub kind: ScalarKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ScalarKind {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str,
}

impl Node {
    /// What this is, for messages: "a list", "a mapping", "a number"...
    pub fn describe(&self) -> &'static str {
        match self {
            Node::Seq(_) => "a list",
            Node::Map(_) => "a mapping",
            Node::Scalar(s) => match s.kind {
                ScalarKind::Null => "nothing (null)",
                ScalarKind::Bool(_) => "a boolean",
                ScalarKind::Int(_) | ScalarKind::Float(_) => "a number",
                ScalarKind::Str => "text",
            },
        }
    }

    /// The value as JSON, for fields kept verbatim (`metadata`, unknown keys).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            Node::Scalar(s) => match s.kind {
                ScalarKind::Null => Value::Null,
                ScalarKind::Bool(b) => Value::Bool(b),
                ScalarKind::Int(i) => i64::try_from(i)
                    .map(Value::from)
                    .or_else(|_| u64::try_from(i).map(Value::from))
                    .unwrap_or_else(|_| Value::String(s.text.clone())),
                ScalarKind::Float(f) => serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or_else(|| Value::String(s.text.clone())),
                ScalarKind::Str => Value::String(s.text.clone()),
            },
        }
    }

    fn has_non_text_scalars(&self) -> bool {
        match self {
            Node::Scalar(s) => !matches!(s.kind, ScalarKind::Str | ScalarKind::Null),
            Node::Seq(items) => items.iter().any(Node::has_non_text_scalars),
            Node::Map(entries) => entries.iter().any(|(_, v)| v.has_non_text_scalars()),
        }
    }
}

/// Parses a frontmatter document (text between the delimiters, `\n` line endings).
/// An empty document is an empty mapping; anything but a mapping is refused.
pub(crate) fn parse_mapping(text: &str) -> Result<Vec<(String, Node)>, SkillError> {
    let budget = Budget::default();
    let result =
        NodeSeed { budget: &budget }.deserialize(serde_norway::Deserializer::from_str(text));
    let mut node = match result {
        Ok(node) => node,
        Err(e) => return Err(classify(e, budget.failure.take())),
    };
    if node.has_non_text_scalars() {
        recover_source_text(text, &mut node);
    }
    match node {
        Node::Map(entries) => Ok(entries),
        Node::Scalar(Scalar {
            kind: ScalarKind::Null,
            ..
        }) => Ok(Vec::new()),
        other => Err(SkillError::FrontmatterNotMapping {
            found: other.describe(),
        }),
    }
}

/// Why our visitor stopped the parser; recorded beside the error because serde turns
/// every custom error into text.
#[derive(Debug)]
enum Failure {
    TooManyNodes,
    DuplicateKey(String),
    KeyNotText(&'static str),
}

#[derive(Default)]
struct Budget {
    nodes: Cell<usize>,
    failure: RefCell<Option<Failure>>,
}

impl Budget {
    fn fail<E: de::Error>(&self, failure: Failure) -> E {
        let message = format!("{failure:?}");
        *self.failure.borrow_mut() = Some(failure);
        E::custom(message)
    }

    fn count<E: de::Error>(&self) -> Result<(), E> {
        let n = self.nodes.get() + 1;
        self.nodes.set(n);
        if n > MAX_YAML_NODES {
            return Err(self.fail(Failure::TooManyNodes));
        }
        Ok(())
    }
}

fn classify(error: serde_norway::Error, failure: Option<Failure>) -> SkillError {
    match failure {
        Some(Failure::TooManyNodes) => SkillError::YamlBudget {
            detail: format!("more than {MAX_YAML_NODES} nodes"),
        },
        Some(Failure::DuplicateKey(key)) => SkillError::YamlDuplicateKey { key },
        Some(Failure::KeyNotText(found)) => SkillError::YamlKeyType { found },
        None => {
            let detail = error.to_string();
            // serde_norway exposes no error kind, only these fixed messages for its
            // own limits.
            if detail.contains("repetition limit exceeded")
                || detail.contains("recursion limit exceeded")
            {
                SkillError::YamlBudget { detail }
            } else {
                SkillError::YamlSyntax { detail }
            }
        }
    }
}

struct NodeSeed<'a> {
    budget: &'a Budget,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor {
            budget: self.budget,
        })
    }
}

struct NodeVisitor<'a> {
    budget: &'a Budget,
}

impl NodeVisitor<'_> {
    fn scalar<E: de::Error>(&self, kind: ScalarKind, text: String) -> Result<Node, E> {
        self.budget.count()?;
        Ok(Node::Scalar(Scalar { kind, text }))
    }
}

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        self.scalar(ScalarKind::Bool(v), v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        self.scalar(ScalarKind::Int(v.into()), v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        self.scalar(ScalarKind::Int(v.into()), v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        self.scalar(ScalarKind::Int(v), v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        match i128::try_from(v) {
            Ok(i) => self.scalar(ScalarKind::Int(i), v.to_string()),
            Err(_) => self.scalar(ScalarKind::Str, v.to_string()),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        // Debug keeps the `.0` of integral floats: `1.0`, not `1`.
        self.scalar(ScalarKind::Float(v), format!("{v:?}"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        self.scalar(ScalarKind::Str, v.to_string())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        self.scalar(ScalarKind::Str, v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        self.scalar(ScalarKind::Null, String::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        self.budget.count()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(NodeSeed {
            budget: self.budget,
        })? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        self.budget.count()?;
        let mut entries = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key_seed(NodeSeed {
            budget: self.budget,
        })? {
            let key = match key {
                Node::Scalar(s) => s.text,
                other => return Err(self.budget.fail(Failure::KeyNotText(other.describe()))),
            };
            if !seen.insert(key.clone()) {
                return Err(self.budget.fail(Failure::DuplicateKey(key)));
            }
            let value = map.next_value_seed(NodeSeed {
                budget: self.budget,
            })?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }

    /// A value with a local tag (`!thing value`): the tag is dropped, the value kept.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Node, A::Error> {
        use serde::de::VariantAccess;
        let (_tag, variant): (IgnoredAny, _) = data.variant()?;
        variant.newtype_variant_seed(NodeSeed {
            budget: self.budget,
        })
    }
}

/// Replaces the text of numbers and booleans by their source text. Best effort: the
/// first pass already succeeded, so this one only fails on shapes it cannot retrace
/// (tagged collections), and then the first pass's rendering stays.
fn recover_source_text(text: &str, node: &mut Node) {
    let _ = TextSeed(node).deserialize(serde_norway::Deserializer::from_str(text));
}

struct TextSeed<'a>(&'a mut Node);

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.0 {
            Node::Scalar(s) if matches!(s.kind, ScalarKind::Str | ScalarKind::Null) => {
                d.deserialize_ignored_any(IgnoredAny).map(drop)
            }
            Node::Scalar(s) => {
                s.text = d.deserialize_str(SourceText)?;
                Ok(())
            }
            Node::Seq(items) => d.deserialize_seq(SeqText(items)),
            Node::Map(entries) => d.deserialize_map(MapText(entries)),
        }
    }
}

fn shape_changed<E: de::Error>() -> E {
    E::custom("the document's shape differs from the first pass")
}

/// A scalar's text as written (serde_norway hands plain scalars to `deserialize_str`
/// unresolved).
struct SourceText;

impl Visitor<'_> for SourceText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
}

struct SeqText<'a>(&'a mut Vec<Node>);

impl<'de> Visitor<'de> for SeqText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for item in self.0.iter_mut() {
            seq.next_element_seed(TextSeed(item))?
                .ok_or_else(shape_changed)?;
        }
        match seq.next_element::<IgnoredAny>()? {
            Some(_) => Err(shape_changed()),
            None => Ok(()),
        }
    }
}

struct MapText<'a>(&'a mut Vec<(String, Node)>);

impl<'de> Visitor<'de> for MapText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        for (_, value) in self.0.iter_mut() {
            map.next_key::<IgnoredAny>()?.ok_or_else(shape_changed)?;
            map.next_value_seed(TextSeed(value))?;
        }
        match map.next_key::<IgnoredAny>()? {
            Some(_) => Err(shape_changed()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(entries: &[(String, Node)], key: &str) -> String {
        match entries.iter().find(|(k, _)| k == key) {
            Some((_, Node::Scalar(s))) => s.text.clone(),
            other => panic!("{key}: {other:?}"),
        }
    }

    #[test]
    fn skills_yaml_keeps_the_source_text_of_numbers() {
        let map =
            parse_mapping("version: 1.10\nname: 0123\nx: [1.0, true]\nm: {v: 2.50}\n").unwrap();
        assert_eq!(text_of(&map, "version"), "1.10");
        assert_eq!(text_of(&map, "name"), "0123");
        let Some((_, Node::Map(m))) = map.iter().find(|(k, _)| k == "m") else {
            panic!()
        };
        assert_eq!(text_of(m, "v"), "2.50");
        // JSON keeps the typed value.
        let Some((_, x)) = map.iter().find(|(k, _)| k == "x") else {
            panic!()
        };
        assert_eq!(x.to_json(), serde_json::json!([1.0, true]));
    }

    #[test]
    fn skills_yaml_refuses_duplicates_non_mappings_and_odd_keys() {
        assert_eq!(
            parse_mapping("a: 1\nb: 2\na: 3\n"),
            Err(SkillError::YamlDuplicateKey { key: "a".into() })
        );
        assert_eq!(
            parse_mapping("m:\n  k: 1\n  k: 2\n"),
            Err(SkillError::YamlDuplicateKey { key: "k".into() })
        );
        assert!(matches!(
            parse_mapping("- a\n- b\n"),
            Err(SkillError::FrontmatterNotMapping { found: "a list" })
        ));
        assert!(matches!(
            parse_mapping("? [a]\n: b\n"),
            Err(SkillError::YamlKeyType { .. })
        ));
        assert!(matches!(
            parse_mapping("a: [b\n"),
            Err(SkillError::YamlSyntax { .. })
        ));
        assert_eq!(parse_mapping(""), Ok(Vec::new()));
    }

    #[test]
    fn skills_yaml_counts_replayed_nodes() {
        // One wide anchor aliased many times passes serde_norway's repetition limit
        // (it counts jumps) but not ours (we count nodes).
        let wide = format!(
            "a: &a [{}]\nb: [{}]\n",
            vec!["1"; 2000].join(","),
            vec!["*a"; 100].join(",")
        );
        assert!(matches!(
            parse_mapping(&wide),
            Err(SkillError::YamlBudget { .. })
        ));
        let deep = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(matches!(
            parse_mapping(&deep),
            Err(SkillError::YamlBudget { .. })
        ));
    }

    #[test]
    fn skills_yaml_drops_local_tags() {
        let map = parse_mapping("a: !thing value\n").unwrap();
        assert_eq!(text_of(&map, "a"), "value");
    }
}

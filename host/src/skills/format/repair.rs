//! The one lenient fallback for frontmatter that is not valid YAML, for two mistakes
//! that are common in published skills (the community registry ships one of each):
//!
//! - an unquoted `: ` inside a value (`description: Use when: the user asks`), which
//!   YAML reads as a nested mapping; the value is wrapped in double quotes;
//! - `\'` inside a single-quoted value (`'Bloom\'s'`), which YAML does not know as an
//!   escape; it becomes YAML's `''`.
//!
//! Only top-level `key: value` lines on one line are touched, the result must parse,
//! and the caller reports a warning naming the lines: the repair is never silent.

/// The repaired text and the 1-based lines that changed, or `None` when no line has
/// either mistake.
pub(crate) fn repair(text: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let (content, ending) = match line.strip_suffix('\n') {
            Some(c) => (c, "\n"),
            None => (line, ""),
        };
        match repair_line(content) {
            Some(fixed) => {
                out.push_str(&fixed);
                changed.push(i + 1);
            }
            None => out.push_str(content),
        }
        out.push_str(ending);
    }
    (!changed.is_empty()).then_some((out, changed))
}

fn repair_line(line: &str) -> Option<String> {
    let (key, value) = line.split_once(": ")?;
    let key_is_plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !key_is_plain {
        return None;
    }
    let value = value.trim();
    if let Some(inner) = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .filter(|inner| inner.contains("\\'"))
    {
        return Some(format!("{key}: '{}'", inner.replace("\\'", "''")));
    }
    let starts_special = value.starts_with([
        '\'', '"', '[', '{', '|', '>', '&', '*', '!', '%', '@', '`', '#',
    ]);
    if !starts_special && (value.contains(": ") || value.ends_with(':')) && !value.contains(" #") {
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        return Some(format!("{key}: \"{escaped}\""));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_repair_quotes_only_the_two_known_mistakes() {
        assert_eq!(
            repair("name: a\ndescription: Use when: asked\n"),
            Some((
                "name: a\ndescription: \"Use when: asked\"\n".to_string(),
                vec![2]
            ))
        );
        assert_eq!(
            repair("description: 'Bloom\\'s \"x\"'\n"),
            Some(("description: 'Bloom''s \"x\"'\n".to_string(), vec![1]))
        );
        // Indented lines, flow values, comments and clean lines are left alone.
        assert_eq!(repair("m:\n  d: a: b\n"), None);
        assert_eq!(repair("d: {a: b}\n"), None);
        assert_eq!(repair("d: a: b # c\n"), None);
        assert_eq!(repair("name: a\n"), None);
    }
}

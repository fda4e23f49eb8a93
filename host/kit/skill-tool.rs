//! {{name}}: a script for an Engram skill (`scripts/{{name}}.wasm` in the skill's
//! directory). The agent calls it with JSON arguments; return its output (JSON or
//! text) or an error message for the agent. The skill's directory is readable at
//! `/skill`; nothing else on disk is.
//!
//! This one counts the words of what it is given.

wit_bindgen::generate!({ path: "wit", world: "skill-tool" });

struct Plugin;

impl Guest for Plugin {
    fn run(args: String) -> Result<String, String> {
        if args.len() > 64 * 1024 {
            return Err("arguments over 64 KiB".into());
        }
        Ok(format!("{{\"words\": {}}}", words(&args)))
    }
}

/// Runs of letters or digits.
fn words(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count()
}

export!(Plugin);

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn counts_words() {
        assert_eq!(words(r#"{"text": "two words"}"#), 3);
        assert_eq!(words(""), 0);
    }
}

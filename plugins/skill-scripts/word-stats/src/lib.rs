//! Skill script `word-stats` (world `skill-tool`): statistics of one text file in its
//! skill's `references/` directory, as JSON.
//!
//! Arguments: `{"file": "<path under references/>", "top": <1..=50, default 10>}`.
//! Result: `{"file", "bytes", "lines", "words", "unique_words", "headings",
//! "reading_minutes", "top_words": [{"word", "count"}]}`.
//!
//! The host preopens the skill's directory read-only as `/skill` and nothing else, so
//! the script does not police the path itself: `../..`, an absolute path or a symlink
//! leading out of the skill fails in the sandbox and comes back as the script's error.

wit_bindgen::generate!({ path: "../../../wit", world: "skill-tool" });

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

/// Where the host preopens the skill's directory.
const SKILL_ROOT: &str = "/skill";
/// Largest file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
const MAX_TOP: u64 = 50;
/// Words too common to be worth listing.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "with", "this", "that", "from", "was",
    "were", "have", "has", "had", "its", "it's", "can", "will", "into", "than", "then", "they",
    "them", "their", "there", "what", "when", "which", "who", "how", "all", "any", "one", "our",
    "out", "use", "via", "each", "also", "only", "more", "most", "such",
];

struct WordStats;

impl Guest for WordStats {
    fn run(args: String) -> Result<String, String> {
        let args: Value =
            serde_json::from_str(&args).map_err(|e| format!("arguments are not JSON: {e}"))?;
        let file = args
            .get("file")
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty())
            .ok_or("give `file`: a path under the skill's references/ directory")?;
        let top = match args.get("top") {
            None => 10,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_TOP).contains(n))
                .ok_or(format!("`top` must be a whole number from 1 to {MAX_TOP}"))?,
        };
        let path = Path::new(SKILL_ROOT).join("references").join(file);
        let text = read(&path).map_err(|e| format!("cannot read `{file}`: {e}"))?;
        Ok(stats(file, &text, top as usize).to_string())
    }
}

fn read(path: &Path) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

fn stats(file: &str, text: &str, top: usize) -> Value {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut words = 0u64;
    for word in text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-'))
        .filter(|w| w.chars().any(char::is_alphanumeric))
    {
        words += 1;
        let word = word.to_lowercase();
        if word.chars().count() >= 3 && !STOP_WORDS.contains(&word.as_str()) {
            *counts.entry(word).or_default() += 1;
        }
    }
    let unique = counts.len();
    let mut ranked: Vec<(String, u64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(top);
    let headings = text
        .lines()
        .filter(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            (1..=6).contains(&hashes) && l[hashes..].starts_with(' ')
        })
        .count();
    json!({
        "file": file,
        "bytes": text.len(),
        "lines": text.lines().count(),
        "words": words,
        "unique_words": unique,
        "headings": headings,
        "reading_minutes": words.div_ceil(200),
        "top_words": ranked
            .into_iter()
            .map(|(word, count)| json!({ "word": word, "count": count }))
            .collect::<Vec<_>>(),
    })
}

export!(WordStats);

//! {{name}}: an Engram resolver. For each fact the extractor proposed, the host calls
//! `resolve` with the user's stored memories most like it (at most 5); return what
//! to do with it. Ids in the answer must be ids of `related`.
//!
//! This one reinforces a memory that says the same thing and adds anything else.

wit_bindgen::generate!({ path: "wit", world: "resolver" });

struct Plugin;

impl Guest for Plugin {
    fn resolve(candidate: Candidate, related: Vec<Memory>) -> Resolution {
        match related
            .iter()
            .find(|memory| same_text(&memory.summary, &candidate.summary))
        {
            Some(memory) => Resolution::Reinforce(memory.id.clone()),
            None => Resolution::Add,
        }
    }
}

/// The same words, whatever the case, spacing and punctuation.
fn same_text(a: &str, b: &str) -> bool {
    let fold = |s: &str| {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    fold(a) == fold(b)
}

export!(Plugin);

#[cfg(test)]
mod tests {
    use super::same_text;

    #[test]
    fn compares_words_not_spelling() {
        assert!(same_text("User likes green tea.", "user likes  GREEN tea"));
        assert!(!same_text("User likes green tea", "User likes black tea"));
    }
}

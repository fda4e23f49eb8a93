//! Characters that do not show: control characters, zero-width characters, bidi
//! controls, and the Unicode tag block. In a skill's name they are refused (a name is
//! an identity and a path); in descriptions, tags and other text they are removed with
//! a warning, because text hidden from the reader but read by a model is exactly how a
//! prompt gets smuggled into a skill listing.

/// Invisible or direction-changing characters: the one list, in `term_text`.
pub(crate) use crate::term_text::is_invisible;

/// A character that may never appear in a name.
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Removes hidden characters, keeping newlines and tabs where `multiline` (block
/// scalars in descriptions). Returns the text and how many were removed.
pub(crate) fn strip_hidden(text: &str, multiline: bool) -> (String, usize) {
    let keep = |c: char| !is_hidden(c) || (multiline && (c == '\n' || c == '\t'));
    let removed = text.chars().filter(|&c| !keep(c)).count();
    if removed == 0 {
        return (text.to_string(), 0);
    }
    (text.chars().filter(|&c| keep(c)).collect(), removed)
}

/// `U+200B`, for messages about a character that cannot be shown.
pub(crate) fn codepoint(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_text_strips_hidden_characters() {
        assert_eq!(
            strip_hidden("Safe\u{200b} skill \u{202e}evil\u{202c} text", false),
            ("Safe skill evil text".to_string(), 3)
        );
        let tags: String = "ignore"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        assert_eq!(
            strip_hidden(&format!("ok.{tags}"), false),
            ("ok.".to_string(), 6)
        );
        assert_eq!(
            strip_hidden("a\nb\tc\x1b[0m", true),
            ("a\nb\tc[0m".to_string(), 1)
        );
        assert_eq!(strip_hidden("a\nb", false), ("ab".to_string(), 1));
        assert_eq!(
            strip_hidden("café ✓ 技能", false),
            ("café ✓ 技能".to_string(), 0)
        );
        assert_eq!(codepoint('\u{200b}'), "U+200B");
    }
}

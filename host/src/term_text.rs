//! Text from a daemon, a registry or a model made fit for a terminal, for every command
//! that prints it (the CLI, `engram chat`): nothing it says can move the cursor or
//! rewrite the screen. Also what a person is asked to approve ([`neutralised`]), in a
//! terminal or a chat app alike: every character that does not show, or that turns
//! the text around, shown as its code point.

/// Invisible or direction-changing characters (not counting controls): zero-width
/// characters and joiners, bidi marks, embeddings, overrides and isolates, fillers, the
/// Unicode tag block. Text hidden from the reader but read by a program (a skill's
/// description for a model, a URL for a fetcher) is how something gets smuggled past
/// a person.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                      // soft hyphen
        | '\u{034F}'                    // combining grapheme joiner
        | '\u{061C}'                    // Arabic letter mark
        | '\u{115F}' | '\u{1160}'       // Hangul fillers
        | '\u{17B4}' | '\u{17B5}'       // Khmer inherent vowels
        | '\u{180B}'..='\u{180F}'       // Mongolian variation selectors, vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space/joiners, LRM, RLM
        | '\u{202A}'..='\u{202E}'       // bidi embeddings and overrides
        | '\u{2060}'..='\u{206F}'       // word joiner, invisible operators, bidi isolates
        | '\u{3164}' | '\u{FFA0}'       // Hangul fillers
        | '\u{FEFF}'                    // zero-width no-break space (BOM)
        | '\u{FFF0}'..='\u{FFF8}'
        | '\u{1D173}'..='\u{1D17A}'     // musical formatting controls
        | '\u{E0000}'..='\u{E0FFF}'     // tags and variation selectors supplement
    )
}

/// `text` on one line with every control, invisible or direction-changing character
/// shown as its code point (`<U+202E>`): a person approving a call reads it as it is,
/// in its own order (a URL with a right-to-left override shows reversed otherwise).
pub fn neutralised(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_invisible(c) {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// One line: control characters (newlines, escape sequences) become spaces.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Multi-line text: newlines and tabs kept, other controls removed.
pub fn clean_block(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// At most `width` characters, the cut marked with an ellipsis.
pub fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A name or id from outside as a reason or an error shows it (a tool name, a turn or
/// conversation id): at most 64 characters, control characters as `?`.
pub fn shown(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if name.chars().nth(64).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutralised_shows_what_does_not_show_and_keeps_the_rest() {
        assert_eq!(
            neutralised("https://evil.example/\u{202E}gpj.txt\u{200B}\n"),
            "https://evil.example/<U+202E>gpj.txt<U+200B><U+000A>"
        );
        assert_eq!(neutralised("café ✓ 技能"), "café ✓ 技能");
        assert!(is_invisible('\u{2066}') && !is_invisible('a'));
    }
}

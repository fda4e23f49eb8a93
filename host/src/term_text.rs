//! Text from a daemon, a registry or a model made fit for a terminal, for every command
//! that prints it (the CLI, `engram chat`): nothing it says can move the cursor or
//! rewrite the screen.

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

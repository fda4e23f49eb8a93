//! Long replies as several Telegram messages: Telegram refuses a text over 4096 UTF-16
//! code units, so a reply is cut into pieces under that, at a paragraph or line break
//! where there is one, else at a space, else anywhere (never inside a character).

/// Telegram's limit on one message's text, in UTF-16 code units.
pub const MAX_UNITS: usize = 4096;

/// `text` in pieces of at most `max` UTF-16 units each, none empty (an empty or blank
/// text gives no piece).
pub fn split(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if units(rest) <= max {
            pieces.push(rest.to_string());
            break;
        }
        // The longest prefix within the limit, as a byte index.
        let mut fits = 0;
        let mut counted = 0;
        for (at, c) in rest.char_indices() {
            counted += c.len_utf16();
            if counted > max {
                break;
            }
            fits = at + c.len_utf8();
        }
        let head = &rest[..fits];
        // Prefer a break in the second half, so pieces stay large.
        let cut = ["\n\n", "\n", " "]
            .iter()
            .filter_map(|sep| head.rfind(sep).filter(|at| *at >= fits / 2))
            .next()
            .unwrap_or(fits);
        let (piece, tail) = rest.split_at(cut);
        let piece = piece.trim_end();
        if !piece.is_empty() {
            pieces.push(piece.to_string());
        }
        rest = tail.trim_start();
    }
    pieces
}

fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_stay_whole_and_blank_ones_vanish() {
        assert_eq!(split("hello", MAX_UNITS), ["hello"]);
        assert!(split("  \n ", MAX_UNITS).is_empty());
    }

    #[test]
    fn long_texts_break_at_lines_then_spaces_then_anywhere() {
        let text = format!("{}\n{}", "a".repeat(30), "b".repeat(30));
        assert_eq!(split(&text, 40), ["a".repeat(30), "b".repeat(30)]);
        let words = "word ".repeat(20);
        for piece in split(&words, 22) {
            assert!(units(&piece) <= 22 && piece.starts_with('w') && piece.ends_with('d'));
        }
        let solid = "x".repeat(100);
        let pieces = split(&solid, 40);
        assert_eq!(
            pieces.iter().map(String::len).collect::<Vec<_>>(),
            [40, 40, 20]
        );
    }

    #[test]
    fn the_limit_counts_utf16_units_and_never_cuts_a_character() {
        // Each emoji is 2 UTF-16 units (4 bytes).
        let text = "😀".repeat(5000);
        let pieces = split(&text, MAX_UNITS);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| units(p) <= MAX_UNITS));
        assert_eq!(pieces.concat(), text);
    }
}

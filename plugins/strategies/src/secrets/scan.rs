//! Words as the detectors see them: whitespace-separated, each with its *core* (the
//! word without the quotes, brackets and sentence punctuation around it), and the few
//! words before the current one, whose context words are read only when a detector
//! asks.

use super::context;

/// How a redaction marker starts. The scanner takes a whole marker as one opaque word,
/// so that nothing in it (its kind name, say "password") starts a detection again.
pub(super) const MARKER_OPEN: &str = "[redacted: ";

/// The longest kind name a marker can carry, and then some.
const MARKER_NAME_MAX: usize = 24;

#[derive(Debug, Clone, Copy)]
pub(super) struct Word<'a> {
    /// The word without the punctuation around it.
    pub core: &'a str,
    /// Byte range of `core` in the text.
    pub start: usize,
    pub end: usize,
    /// Where the whole whitespace-separated word ends.
    pub raw_end: usize,
    /// A `[redacted: kind]` marker.
    pub marker: bool,
    /// What the word holds (punctuation around the core included), as the `HAS_*`
    /// bits: which detectors can start here.
    pub holds: u8,
}

/// [`Word::holds`]: a digit.
pub(super) const HAS_DIGIT: u8 = 1;
/// `:` or `=`: an assignment or a URL.
pub(super) const HAS_ASSIGN: u8 = 1 << 1;
/// `_` or `.`, or an upper-case letter: perhaps an identifier.
pub(super) const HAS_IDENTIFIER_MARK: u8 = 1 << 2;
/// `[`: perhaps a redaction marker.
const HAS_BRACKET: u8 = 1 << 3;
/// `\`: perhaps an escaped line break, which separates words.
const HAS_BACKSLASH: u8 = 1 << 4;
/// ASCII whitespace, which separates words.
const IS_SPACE: u8 = 1 << 5;

/// What each byte is, as the bits above: one table look-up per byte while a word is
/// read.
const BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            b'0'..=b'9' => HAS_DIGIT,
            b':' | b'=' => HAS_ASSIGN,
            b'_' | b'.' | b'A'..=b'Z' => HAS_IDENTIFIER_MARK,
            b'[' => HAS_BRACKET,
            b'\\' => HAS_BACKSLASH,
            b' ' | b'\t' | b'\n' | b'\r' | 0x0c => IS_SPACE,
            _ => 0,
        };
        byte += 1;
    }
    table
};

impl Word<'_> {
    /// The punctuation after the core, e.g. `":"` of `password:` or `"),"`.
    pub fn trailing<'t>(&self, text: &'t str) -> &'t str {
        &text[self.end..self.raw_end]
    }

    /// Whether the word ends with `:` or `=`, so that the next word is its value
    /// (`password: hunter2`, `"token":`).
    pub fn introduces_value(&self, text: &str) -> bool {
        self.trailing(text).contains([':', '='])
    }

    /// Whether a sentence or clause ends after this word (`.`, `!`, `?`, `;`, or a line
    /// break), so that context before it no longer applies.
    pub fn ends_sentence(&self, text: &str) -> bool {
        let trailing = self.trailing(text);
        let stop = if trailing == "." {
            !is_abbreviation(self.core)
        } else {
            trailing.contains(['.', '!', '?', ';'])
        };
        stop || line_break_at(text.as_bytes(), self.raw_end)
    }

    /// [`Word::ends_sentence`], or a comma.
    pub fn ends_clause(&self, text: &str) -> bool {
        self.ends_sentence(text) || self.trailing(text).contains(',')
    }
}

/// Abbreviations whose dot ends no sentence: "passport no. 123456789".
fn is_abbreviation(word: &str) -> bool {
    const ABBREVIATIONS: &[&str] = &[
        "acct", "approx", "dr", "e.g", "ext", "i.e", "mr", "mrs", "ms", "no", "nr", "num", "st",
        "tel", "vs",
    ];
    word.len() <= 6 && ABBREVIATIONS.contains(&word.to_ascii_lowercase().as_str())
}

/// Whether `text` can hold a finding at all, from one pass over its bytes: every
/// detection needs a digit, a word of [`MIN_KEY_LEN`](super::keys::MIN_KEY_LEN)
/// bytes or more, `://`, `-----`, or a word that names a value (password, PIN,
/// passphrase, seed, bearer, authorization...), alone or inside an identifier
/// (`DB_PASSWORD`, `?password=`). Most messages have none, and are done here.
pub(super) fn may_hold_secret(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let class = BYTE_CLASS[usize::from(b)];
        if class & HAS_DIGIT != 0 {
            return true;
        }
        if class & IS_SPACE != 0 {
            run = 0;
            i += 1;
            continue;
        }
        run += 1;
        if run >= super::keys::MIN_KEY_LEN
            || (b == b':' && bytes[i + 1..].starts_with(b"//"))
            || (b == b'-' && bytes[i..].starts_with(b"-----"))
        {
            return true;
        }
        let starts_letters = b.is_ascii_alphabetic()
            && (i == 0 || {
                let previous = bytes[i - 1];
                !previous.is_ascii_alphabetic()
                    || (previous.is_ascii_lowercase() && b.is_ascii_uppercase())
            });
        if starts_letters {
            // The letters up to a non-letter or a camelCase hump.
            let mut end = i + 1;
            while bytes.get(end).is_some_and(|n| {
                n.is_ascii_lowercase()
                    || (n.is_ascii_uppercase() && bytes[end - 1].is_ascii_uppercase())
            }) {
                end += 1;
            }
            if context::names_a_value(&bytes[i..end]) {
                return true;
            }
            run += end - i - 1;
            i = end;
            continue;
        }
        i += 1;
    }
    false
}

/// The length of the word separator at `bytes[i]`: ASCII whitespace, or the escapes
/// `\n`, `\r`, `\t` of text that arrives JSON- or string-escaped (two bytes); 0 when
/// there is none.
fn separator_len(bytes: &[u8], i: usize) -> usize {
    let Some(&b) = bytes.get(i) else {
        return 0;
    };
    let class = BYTE_CLASS[usize::from(b)];
    if class & IS_SPACE != 0 {
        1
    } else if class & HAS_BACKSLASH != 0 && matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't')) {
        2
    } else {
        0
    }
}

/// Whether a line ends at `bytes[i]` (a newline, or its `\n` escape).
fn line_break_at(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i) {
        Some(b'\n') => true,
        Some(b'\\') => bytes.get(i + 1) == Some(&b'n'),
        _ => false,
    }
}

/// Whether `text` holds a line break (or its `\n` escape).
pub(super) fn has_line_break(text: &str) -> bool {
    let bytes = text.as_bytes();
    (0..bytes.len()).any(|i| line_break_at(bytes, i))
}

fn is_leading_punctuation(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | '<' | '"' | '\'' | '`' | '*' | '\u{201c}' | '\u{2018}' | '\u{ab}'
    )
}

fn is_trailing_punctuation(c: char) -> bool {
    matches!(
        c,
        ')' | ']'
            | '}'
            | '>'
            | '"'
            | '\''
            | '`'
            | '*'
            | ','
            | '.'
            | ';'
            | ':'
            | '!'
            | '?'
            | '\u{201d}'
            | '\u{2019}'
            | '\u{bb}'
            | '\u{2026}'
    )
}

/// The first word at or after byte `from` (a char boundary), if any.
pub(super) fn word_at(text: &str, from: usize) -> Option<Word<'_>> {
    let bytes = text.as_bytes();
    let mut raw_start = from;
    while raw_start < bytes.len() {
        match separator_len(bytes, raw_start) {
            0 => break,
            len => raw_start += len,
        }
    }
    if raw_start >= bytes.len() {
        return None;
    }
    let mut raw_end = raw_start;
    let mut holds = 0;
    while let Some(&b) = bytes.get(raw_end) {
        let class = BYTE_CLASS[usize::from(b)];
        if class & (IS_SPACE | HAS_BACKSLASH) != 0 && separator_len(bytes, raw_end) > 0 {
            break;
        }
        holds |= class;
        raw_end += 1;
    }
    if holds & HAS_BRACKET != 0
        && let Some(marker_end) = marker_word_end(bytes, raw_start, raw_end)
    {
        return Some(Word {
            core: &text[raw_start..marker_end],
            start: raw_start,
            end: marker_end,
            raw_end: marker_end,
            marker: true,
            holds: 0,
        });
    }
    let raw = &text[raw_start..raw_end];
    // Most words are bare: punctuation is only looked for when a word does not start
    // or end with a letter or digit.
    let without_leading = if bytes[raw_start].is_ascii_alphanumeric() {
        raw
    } else {
        raw.trim_start_matches(is_leading_punctuation)
    };
    let core = match without_leading.as_bytes().last() {
        Some(b) if b.is_ascii_alphanumeric() => without_leading,
        _ => without_leading.trim_end_matches(is_trailing_punctuation),
    };
    let start = raw_start + (raw.len() - without_leading.len());
    Some(Word {
        core,
        start,
        end: start + core.len(),
        raw_end,
        marker: false,
        holds,
    })
}

/// When the word `bytes[start..end]` holds a marker: the end of the word with its
/// markers (which hold a space) and whatever is attached to them. A redaction leaves
/// the rest of a word around its marker, and that rest must read the same on every
/// pass for `redact` to be idempotent, so the whole word is taken as opaque.
fn marker_word_end(bytes: &[u8], start: usize, end: usize) -> Option<usize> {
    let mut position = start;
    let mut found = false;
    let mut word_end = end;
    while position < word_end {
        match marker_len(&bytes[position..]) {
            Some(len) => {
                found = true;
                position += len;
                while position < bytes.len() && separator_len(bytes, position) == 0 {
                    position += 1;
                }
                word_end = word_end.max(position);
            }
            None => position += 1,
        }
    }
    found.then_some(word_end)
}

/// The length of the marker `bytes` starts with: `[redacted: ` + a kind-like name + `]`.
fn marker_len(bytes: &[u8]) -> Option<usize> {
    let rest = bytes.strip_prefix(MARKER_OPEN.as_bytes())?;
    let name_len = rest
        .iter()
        .take(MARKER_NAME_MAX)
        .take_while(|b| b.is_ascii_lowercase() || **b == b'-')
        .count();
    (name_len > 0 && rest.get(name_len) == Some(&b']')).then_some(MARKER_OPEN.len() + name_len + 1)
}

/// How many words back the detectors may look for context.
pub(super) const RECENT_WORDS: usize = 6;

/// The last [`RECENT_WORDS`] words before the current one.
#[derive(Default)]
pub(super) struct Recent {
    /// A ring, oldest overwritten first.
    words: [Remembered; RECENT_WORDS],
    len: usize,
    next: usize,
}

#[derive(Debug, Clone, Copy, Default)]
struct Remembered {
    start: usize,
    end: usize,
    ends_sentence: bool,
    marker: bool,
}

/// A word read back from [`Recent`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Previous<'a> {
    pub core: &'a str,
    pub start: usize,
    pub marker: bool,
}

impl Recent {
    pub fn push(&mut self, text: &str, word: &Word<'_>) {
        self.words[self.next] = Remembered {
            start: word.start,
            end: word.end,
            ends_sentence: word.ends_sentence(text),
            marker: word.marker,
        };
        self.next = (self.next + 1) % RECENT_WORDS;
        self.len = (self.len + 1).min(RECENT_WORDS);
    }

    /// The words before the current one, newest first, at most `count`, within the
    /// current sentence: "I lost my key. 3fa9..." has no context for the hex.
    pub fn back<'t>(&self, text: &'t str, count: usize) -> impl Iterator<Item = Previous<'t>> {
        (0..self.len.min(count))
            .map(move |age| self.words[(self.next + RECENT_WORDS - 1 - age) % RECENT_WORDS])
            .take_while(|word| !word.ends_sentence)
            .map(|word| Previous {
                core: &text[word.start..word.end],
                start: word.start,
                marker: word.marker,
            })
    }

    /// The context bits of the words before the current one, within `count` words and
    /// the same sentence, OR-ed.
    pub fn context(&self, text: &str, count: usize) -> u32 {
        self.back(text, count)
            .filter(|word| !word.marker)
            .fold(0, |bits, word| bits | context::of(word.core))
    }
}

/// The words after byte `from`, up to `count`, stopping after the word that ends the
/// sentence (that word included).
pub(super) fn ahead(text: &str, from: usize, count: usize) -> impl Iterator<Item = Word<'_>> {
    let mut position = from;
    let mut ended = false;
    std::iter::from_fn(move || {
        if ended {
            return None;
        }
        let word = word_at(text, position)?;
        position = word.raw_end;
        ended = word.ends_sentence(text);
        Some(word)
    })
    .take(count)
}

/// `name=value` or `name:value` within one word (`DB_PASSWORD=hunter2`,
/// `"token":"abc"`, `SSN:604-38-2217`), or `name=` with the value in the next word.
pub(super) struct Assignment<'a> {
    /// The name, without quotes.
    pub name: &'a str,
    /// Where the value starts in the text, past the separator and any opening quote;
    /// the word's end when the value is the next word.
    pub value_start: usize,
}

pub(super) fn assignment<'a>(word: &Word<'a>) -> Option<Assignment<'a>> {
    let separator = word.core.find([':', '='])?;
    // `Token::new`, `std::env`: a path, not an assignment.
    if word.core[separator..].starts_with("::") {
        return None;
    }
    let name = word.core[..separator].trim_matches(['"', '\'', '`']);
    let is_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !is_name {
        return None;
    }
    let value = &word.core[separator + 1..];
    let skipped = value.len() - value.trim_start_matches(['"', '\'', '`', '=', ':']).len();
    Some(Assignment {
        name,
        value_start: word.start + separator + 1 + skipped,
    })
}

//! Secrets given by name: passwords, passphrases, PINs, seed phrases and bearer
//! tokens after the word that names them ("password is X", "password: X", "pw X",
//! "PIN 4821", "passphrase is <words>", "Authorization: Bearer X"), before it ("X is
//! my wifi password"), and the values of secret-named assignments (`DB_PASSWORD=X`,
//! `"api_key": "..."`).

use super::analyser;
use super::context;
use super::keys::{self, Standing};
use super::scan::{self, Assignment, Word};
use super::{Scan, SecretKind};

/// The longest passphrase or seed phrase taken, in words (BIP-39 phrases have 24).
const MAX_PHRASE_WORDS: usize = 25;

/// What a name says its value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    /// One word: a password.
    Password,
    /// Digits: a PIN or a lock's combination.
    Digits,
    /// Words to the end of the clause: a passphrase.
    Passphrase,
    /// Words to the end of the clause: a wallet's seed or recovery phrase.
    SeedPhrase,
    /// One token after `Bearer`.
    Bearer,
}

/// How a naming word is written: as a word of prose ("password", "PIN"), or as an
/// identifier in code or configuration (`DB_PASSWORD:`, `self.pw =`), whose values
/// are more often code than secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    Prose,
    Code,
}

/// The detections that start at a naming word or an assignment.
pub(super) fn at_word(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    if word.holds & scan::HAS_ASSIGN != 0
        && let Some(assignment) = scan::assignment(word)
    {
        return assigned(scan, word, &assignment);
    }
    let core = word.core;
    if context::names_a_value(core.as_bytes()) {
        let bits = context::of_word(core);
        if bits & context::NAMES_A_VALUE != 0 {
            let expected = if bits & context::BEARER != 0 {
                Expected::Bearer
            } else if bits & context::PASSPHRASE != 0 {
                Expected::Passphrase
            } else if bits & context::SEED != 0 {
                Expected::SeedPhrase
            } else if bits & context::PIN != 0 {
                Expected::Digits
            } else {
                Expected::Password
            };
            return named_value(scan, word, expected, Naming::Prose).or_else(|| {
                (expected == Expected::Password)
                    .then(|| value_before(scan))
                    .flatten()
            });
        }
        if core.eq_ignore_ascii_case("authorization") {
            return basic_credentials(scan, word);
        }
    }
    if core.eq_ignore_ascii_case("pass") && word.introduces_value(scan.text) {
        // "pass:" is short for "password:" only with its colon, and only before letters
        // with digits: "First pass: outline" is a pass of a process.
        let value = scan::ahead(scan.text, word.raw_end, 1).next()?;
        let letters_and_digits = value.core.bytes().any(|b| b.is_ascii_digit())
            && value.core.bytes().any(|b| b.is_ascii_alphabetic());
        if !letters_and_digits {
            return None;
        }
        return named_value(scan, word, Expected::Password, Naming::Prose);
    }
    if matches!(core, "-u" | "--user") {
        return command_line_credentials(scan, word);
    }
    if word.holds & scan::HAS_IDENTIFIER_MARK != 0
        && is_identifier(core)
        && context::of(core) & context::PASSWORD != 0
        && assigns(scan.text, word)
    {
        return named_value(scan, word, Expected::Password, Naming::Code);
    }
    None
}

/// A name as code writes it: `DB_PASSWORD`, `self.pw`, `smtpPassword`.
fn is_identifier(core: &str) -> bool {
    let bytes = core.as_bytes();
    let punctuated = bytes.iter().any(|b| matches!(b, b'_' | b'.'));
    let camel = bytes
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    (punctuated || camel)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Whether `word` is assigned the value that follows: `name:`, `name =`, `name :=`.
fn assigns(text: &str, word: &Word<'_>) -> bool {
    word.introduces_value(text)
        || scan::ahead(text, word.raw_end, 1)
            .next()
            .is_some_and(|next| {
                matches!(next.core, "=" | ":=")
                    || (next.core.is_empty() && next.introduces_value(text))
            })
}

/// The value after a naming word: directly after `name:`, after a link word ("is",
/// "was", "="), after a qualifier and a link ("password for the router is X", "seed
/// phrase: ..."), after "changed to", or (for strong-looking values) with nothing
/// between ("pw hunter2", "PIN 4821"). Names in code take only `:` and `=`.
fn named_value(
    scan: &mut Scan<'_>,
    word: &Word<'_>,
    expected: Expected,
    naming: Naming,
) -> Option<usize> {
    let text = scan.text;
    if word.ends_sentence(text) && !word.introduces_value(text) {
        return None;
    }
    let mut ahead = scan::ahead(text, word.raw_end, MAX_PHRASE_WORDS + 8);
    let mut name = *word;
    let mut next = ahead.next()?;
    // A name of two words: "seed phrase", "recovery words" ("mnemonic" alone will do),
    // "PIN code", "PIN number".
    let second = next.core.to_ascii_lowercase();
    let second_word = match expected {
        Expected::SeedPhrase if !word.core.eq_ignore_ascii_case("mnemonic") => {
            if !matches!(second.as_str(), "phrase" | "phrases" | "words") {
                return None;
            }
            true
        }
        Expected::Password | Expected::Digits => {
            !word.introduces_value(text)
                && matches!(second.as_str(), "code" | "number" | "no" | "#")
        }
        _ => false,
    };
    if second_word {
        if next.ends_sentence(text) && !next.introduces_value(text) {
            return None;
        }
        name = next;
        next = ahead.next()?;
    }
    let name_end = name.end;
    if name.introduces_value(text) {
        return take_value(
            scan,
            name_end,
            next,
            &mut ahead,
            expected,
            Linked::Yes(naming),
        );
    }
    let link = is_link(text, &next) || is_change_verb(next.core);
    if naming == Naming::Code {
        let assignment = matches!(next.core, "=" | ":=")
            || (next.core.is_empty() && next.introduces_value(text));
        if !assignment {
            return None;
        }
        let value = ahead.next()?;
        return take_value(
            scan,
            name_end,
            value,
            &mut ahead,
            expected,
            Linked::Yes(naming),
        );
    }
    if link {
        if is_change_verb(next.core) && !ahead.next()?.core.eq_ignore_ascii_case("to") {
            return None;
        }
        let value = ahead.next()?;
        return take_value(
            scan,
            name_end,
            value,
            &mut ahead,
            expected,
            Linked::Yes(naming),
        );
    }
    if next.core.eq_ignore_ascii_case("to") && changed_before(scan) {
        // "I changed my password to X".
        let value = ahead.next()?;
        return take_value(
            scan,
            name_end,
            value,
            &mut ahead,
            expected,
            Linked::Yes(naming),
        );
    }
    if is_qualifier_start(&next) {
        // "password for my bank account is X": a link within four words, same clause.
        let mut previous = next;
        for _ in 0..4 {
            if previous.ends_clause(text) {
                return None;
            }
            let candidate = ahead.next()?;
            if is_link(text, &candidate) {
                let value = ahead.next()?;
                return take_value(
                    scan,
                    name_end,
                    value,
                    &mut ahead,
                    expected,
                    Linked::Yes(naming),
                );
            }
            previous = candidate;
        }
        return None;
    }
    if name.ends_clause(text) {
        return None;
    }
    take_value(scan, name_end, next, &mut ahead, expected, Linked::No)
}

/// Whether a value is joined to its name by a link ("is", `:`, `=`), and how the name
/// is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linked {
    Yes(Naming),
    No,
}

/// Reports the value starting at `first` (with the words after it for phrases) when
/// it is one.
fn take_value<'a>(
    scan: &mut Scan<'a>,
    name_end: usize,
    first: Word<'a>,
    ahead: &mut impl Iterator<Item = Word<'a>>,
    expected: Expected,
    linked: Linked,
) -> Option<usize> {
    let text = scan.text;
    // A value is on its name's line: after `as pw:` at a line's end comes code.
    let same_line = !scan::has_line_break(&text[name_end..first.start]);
    if first.marker || (!same_line && expected != Expected::SeedPhrase) {
        return None;
    }
    match expected {
        Expected::Password => {
            let (offset, value) = literal(first.core);
            if !password_value(value, linked, false) {
                return None;
            }
            let start = first.start + offset;
            scan.report(SecretKind::Password, start, start + value.len())
        }
        Expected::Digits => {
            let digits = first.core.bytes().filter(u8::is_ascii_digit).count();
            let only_digits = first.core.bytes().all(|b| b.is_ascii_digit() || b == b'-');
            if !(only_digits && (4..=12).contains(&digits)) {
                return None;
            }
            scan.report(SecretKind::Password, first.start, first.end)
        }
        Expected::Bearer => {
            if first.core.len() < 16
                || !keys::looks_random(first.core.as_bytes(), Standing::Named)
                    && !bearer_shaped(first.core)
            {
                return None;
            }
            scan.report(SecretKind::ApiKey, first.start, first.end)
        }
        Expected::Passphrase | Expected::SeedPhrase => {
            let mut end = first.end;
            let mut last = first;
            let mut count = 1;
            let mut function_words = usize::from(is_function_word(first.core));
            while !last.ends_clause(text) && count < MAX_PHRASE_WORDS {
                let Some(word) = ahead.next() else {
                    break;
                };
                if word.marker || word.core.is_empty() {
                    break;
                }
                function_words += usize::from(is_function_word(word.core));
                end = word.end;
                last = word;
                count += 1;
            }
            // One word is judged as a password is; several are a phrase unless they
            // read as prose ("is long and hard to remember").
            let phrase = if count == 1 {
                password_value(first.core, linked, true)
            } else {
                !is_function_word(first.core)
                    && !keys::is_placeholder(first.core)
                    && function_words * 3 <= count
            };
            if !phrase {
                return None;
            }
            let kind = if expected == Expected::SeedPhrase {
                SecretKind::PrivateKey
            } else {
                SecretKind::Password
            };
            scan.report(kind, first.start, end)
        }
    }
}

/// A bearer token that [`keys::looks_random`] may miss: any 16+ characters of a
/// token's alphabet with a digit (opaque tokens are often hex or lower case).
fn bearer_shaped(token: &str) -> bool {
    !keys::is_sequential(token.as_bytes())
        && token.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
        })
        && token.bytes().any(|b| b.is_ascii_digit())
        && !keys::is_placeholder(token)
}

/// `Authorization: Basic <base64>`.
fn basic_credentials(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    if !word.introduces_value(scan.text) {
        return None;
    }
    let mut ahead = scan::ahead(scan.text, word.raw_end, 2);
    if !ahead.next()?.core.eq_ignore_ascii_case("basic") {
        return None;
    }
    let value = ahead.next()?;
    let base64 = value
        .core
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if value.marker || value.core.len() < 8 || !base64 || keys::is_placeholder(value.core) {
        return None;
    }
    scan.report(SecretKind::ApiKey, value.start, value.end)
}

/// `curl -u user:password`: the password after the user's name.
fn command_line_credentials(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    let credentials = scan::ahead(scan.text, word.raw_end, 1).next()?;
    let (_, password) = credentials.core.split_once(':')?;
    if credentials.marker || !password_value(password, Linked::Yes(Naming::Prose), false) {
        return None;
    }
    let start = credentials.end - password.len();
    scan.report(SecretKind::Password, start, credentials.end)
}

/// "BlueMoose#77 is my wifi password": a strong-looking value, a link, and at most
/// three words naming whose password it is.
fn value_before(scan: &mut Scan<'_>) -> Option<usize> {
    let mut words = scan.recent.back(scan.text, 5);
    let mut between = 0;
    loop {
        let previous = words.next()?;
        if previous.marker || between > 3 {
            return None;
        }
        if matches!(previous.core.to_ascii_lowercase().as_str(), "is" | "was") {
            break;
        }
        between += 1;
    }
    let value = words.next()?;
    if value.marker || !password_value(value.core, Linked::No, false) {
        return None;
    }
    let (start, end) = (value.start, value.start + value.core.len());
    drop(words);
    scan.report(SecretKind::Password, start, end)
}

/// The value of a secret-named assignment: `DB_PASSWORD=hunter2` (a password, unless
/// it is code: `password=os.environ[...]`, `password=None`), `API_KEY=...` (a key,
/// when random-looking; prefixed ones are found as such).
fn assigned(scan: &mut Scan<'_>, word: &Word<'_>, assignment: &Assignment<'_>) -> Option<usize> {
    let bits = context::of(assignment.name);
    if bits & (context::PASSWORD | context::KEY) == 0 {
        return None;
    }
    let text = scan.text;
    let (start, end) = if assignment.value_start < word.end {
        (assignment.value_start, word.end)
    } else {
        let next = scan::ahead(text, word.raw_end, 1).next()?;
        if next.marker || scan::has_line_break(&text[word.end..next.start]) {
            return None;
        }
        (next.start, next.end)
    };
    let (offset, value) = literal(text[start..end].trim_end_matches(['"', '\'', '`']));
    let start = start + offset;
    let end = start + value.len();
    if bits & context::PASSWORD == 0 && !value.bytes().all(keys::is_token_byte) {
        // Code around a key-named call or field (`Token::new("...")`), not a key.
        return None;
    }
    if bits & context::PASSWORD != 0 {
        if !password_value(value, Linked::Yes(Naming::Code), false) {
            return None;
        }
        return scan.report(SecretKind::Password, start, end);
    }
    let is_key =
        keys::looks_random(value.as_bytes(), Standing::Named) && !keys::is_placeholder(value);
    if is_key {
        let kind = if bits & context::PRIVATE != 0 {
            SecretKind::PrivateKey
        } else {
            SecretKind::ApiKey
        };
        return scan.report(kind, start, end);
    }
    None
}

/// A string literal's text: `b"x"`, `r'x'`, `"x"` -> `x`, and where it starts.
fn literal(value: &str) -> (usize, &str) {
    let bytes = value.as_bytes();
    let prefix = bytes
        .iter()
        .take(2)
        .take_while(|b| matches!(b, b'b' | b'B' | b'r' | b'R' | b'u' | b'U' | b'f' | b'F'))
        .count();
    let offset = match bytes.get(prefix) {
        Some(b'"' | b'\'') => prefix + 1,
        _ if bytes
            .first()
            .is_some_and(|b| matches!(b, b'"' | b'\'' | b'`')) =>
        {
            1
        }
        _ => 0,
    };
    let inner = &value[offset..];
    (offset, inner.trim_end_matches(['"', '\'', '`']))
}

/// "is", "was", ":", "=", or a bare `:`.
fn is_link(text: &str, word: &Word<'_>) -> bool {
    context::is_link(word.core) || (word.core.is_empty() && word.introduces_value(text))
}

/// "changed", "set", "reset", "updated": "password changed to X", "changed my
/// password to X".
fn is_change_verb(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "changed" | "change" | "set" | "reset" | "updated" | "update" | "switched"
    )
}

/// Whether a change verb comes shortly before the naming word: "changed my password".
fn changed_before(scan: &Scan<'_>) -> bool {
    scan.recent
        .back(scan.text, 3)
        .any(|word| is_change_verb(word.core))
}

/// Words that start a phrase saying whose password it is: "for my bank", "to the
/// router", "on the laptop".
fn is_qualifier_start(word: &Word<'_>) -> bool {
    matches!(
        word.core.to_ascii_lowercase().as_str(),
        "for" | "to" | "of" | "on" | "at" | "in" | "from" | "with"
    )
}

/// Words that describe a password rather than being one: "the password is wrong",
/// "the password is saved".
const DESCRIPTIONS: &[&str] = &[
    "attached",
    "bad",
    "blank",
    "broken",
    "case-sensitive",
    "changed",
    "complex",
    "complicated",
    "correct",
    "default",
    "different",
    "easy",
    "empty",
    "encrypted",
    "expired",
    "fine",
    "forgotten",
    "good",
    "great",
    "hard",
    "hashed",
    "here",
    "hidden",
    "incorrect",
    "insecure",
    "invalid",
    "long",
    "lost",
    "mine",
    "missing",
    "needed",
    "new",
    "nothing",
    "ok",
    "okay",
    "old",
    "optional",
    "private",
    "protected",
    "public",
    "random",
    "required",
    "reset",
    "right",
    "safe",
    "same",
    "saved",
    "secret",
    "secure",
    "sensitive",
    "set",
    "shared",
    "short",
    "simple",
    "something",
    "strong",
    "temporary",
    "there",
    "unique",
    "unknown",
    "valid",
    "weak",
    "working",
    "written",
    "wrong",
    "yours",
];

/// Whether `value` can be a password: four characters or more, not a placeholder,
/// code, a path, an address, a function word or a word describing a password. A
/// plain word needs a link from a name in prose ("password is sunshine"), and is not
/// taken when it reads like a verb or adverb ("is expired", "is changing"); with
/// nothing between it and its name, a value must look like a password (letters with
/// digits or symbols, or 4+ digits).
fn password_value(value: &str, linked: Linked, phrase: bool) -> bool {
    if value.chars().count() < 4
        || value.len() > 128
        || keys::is_placeholder(value)
        || is_code(value)
    {
        return false;
    }
    if value.starts_with(['/', '~']) || value.starts_with("./") || value.contains("://") {
        return false;
    }
    if value.contains('@') && value.contains('.') && !value.contains('#') {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if analyser::is_stop_word(&lower) || DESCRIPTIONS.contains(&lower.as_str()) {
        return false;
    }
    let letters = value.chars().filter(|c| c.is_alphabetic()).count();
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    let others = value.chars().count() - letters - digits;
    if letters > 0 && digits == 0 && others == 0 {
        let reads_as_verb = !phrase && ["ed", "ing", "ly"].iter().any(|end| lower.ends_with(end));
        return linked == Linked::Yes(Naming::Prose) && !reads_as_verb;
    }
    linked != Linked::No
        || (letters > 0 && (digits > 0 || others > 0))
        || (letters == 0 && digits >= 4)
}

fn is_function_word(word: &str) -> bool {
    analyser::is_stop_word(&word.to_ascii_lowercase())
}

/// Code rather than a literal: `os.environ["PW"]`, `args.password`, `get_password()`,
/// `db_password`.
fn is_code(value: &str) -> bool {
    if value.contains(['(', ')', '[', ']', '{', '}']) {
        return true;
    }
    let identifier_like = value
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'.');
    identifier_like && (value.contains('.') || value.contains('_'))
}

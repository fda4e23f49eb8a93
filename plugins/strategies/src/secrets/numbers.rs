//! Detections that start at a word holding digits: card numbers, IBANs, national ids,
//! one-time codes and card check codes. Each format is recognised by its grouping and
//! its check; the formats that are only digits without a check (a one-time code, a
//! passport number) or whose shape is common (9 digits) need their name nearby.

use super::checks;
use super::context;
use super::scan::{self, Previous, Word};
use super::{Scan, SecretKind};

/// More digits than any format here has, even with the extras a card may be followed
/// by.
const MAX_DIGITS: usize = 24;
const MAX_GROUPS: usize = 8;
/// How far back a context word may be (within the sentence).
const CONTEXT_WORDS: usize = 6;

/// A number as written: digit groups and the separator after each ("4716 2035 9981
/// 0042", "604-38-2217", "529.982.247-25").
struct Groups {
    digits: [u8; MAX_DIGITS],
    digit_count: usize,
    /// Digits in each group.
    lens: [u8; MAX_GROUPS],
    /// Byte position just after each group.
    ends: [usize; MAX_GROUPS],
    /// The separator after each group but the last.
    separators: [u8; MAX_GROUPS],
    count: usize,
    start: usize,
}

impl Groups {
    /// The groups of the number starting at byte `start` (a digit), or `None` when it
    /// runs into letters or goes on as a decimal or thousands-separated number
    /// ("3,000", "19.99" do go on: no format here has those separators at the end).
    fn parse(text: &str, start: usize) -> Option<Groups> {
        let bytes = text.as_bytes();
        let mut groups = Groups {
            digits: [0; MAX_DIGITS],
            digit_count: 0,
            lens: [0; MAX_GROUPS],
            ends: [0; MAX_GROUPS],
            separators: [0; MAX_GROUPS],
            count: 0,
            start,
        };
        let mut position = start;
        loop {
            let group_start = position;
            while let Some(&b) = bytes.get(position).filter(|b| b.is_ascii_digit()) {
                *groups.digits.get_mut(groups.digit_count)? = b - b'0';
                groups.digit_count += 1;
                position += 1;
            }
            groups.lens[groups.count] = (position - group_start) as u8;
            groups.ends[groups.count] = position;
            groups.count += 1;
            let separator = bytes.get(position).copied();
            let continues = matches!(separator, Some(b' ' | b'-' | b'.' | b'/'))
                && bytes.get(position + 1).is_some_and(u8::is_ascii_digit);
            if !continues || groups.count == MAX_GROUPS {
                break;
            }
            groups.separators[groups.count - 1] = separator.unwrap_or_default();
            position += 1;
        }
        let after = bytes.get(position).copied();
        let goes_on = after.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'%')
            || (matches!(after, Some(b',' | b'.' | b':'))
                && bytes.get(position + 1).is_some_and(u8::is_ascii_digit));
        (!goes_on).then_some(groups)
    }

    fn lens(&self) -> &[u8] {
        &self.lens[..self.count]
    }

    /// The digits of the first `groups` groups.
    fn digits_of(&self, groups: usize) -> &[u8] {
        let count: usize = self.lens[..groups].iter().map(|&l| usize::from(l)).sum();
        &self.digits[..count]
    }

    fn digits(&self) -> &[u8] {
        &self.digits[..self.digit_count]
    }

    fn end(&self) -> usize {
        self.ends[self.count - 1]
    }

    /// The one separator between the first `groups` groups: `Some(0)` for a single
    /// group, `None` when they differ.
    fn separator_of(&self, groups: usize) -> Option<u8> {
        match self.separators[..groups.saturating_sub(1)] {
            [] => Some(0),
            [first, ref rest @ ..] => rest.iter().all(|&s| s == first).then_some(first),
        }
    }

    fn separator(&self) -> Option<u8> {
        self.separator_of(self.count)
    }
}

/// The words before the current one, with their context bits, read once.
struct Before<'a> {
    words: [(Previous<'a>, u32); CONTEXT_WORDS],
    len: usize,
}

impl<'a> Before<'a> {
    fn read(scan: &Scan<'a>, extra: u32) -> Before<'a> {
        let empty = Previous {
            core: "",
            start: 0,
            marker: false,
        };
        let mut before = Before {
            words: [(empty, 0); CONTEXT_WORDS],
            len: 0,
        };
        for word in scan.recent.back(scan.text, CONTEXT_WORDS) {
            let bits = if word.marker {
                0
            } else {
                context::of(word.core)
            };
            before.words[before.len] = (word, bits);
            before.len += 1;
        }
        if extra != 0 {
            // An assignment's name (`SSN:604-38-2217`) counts as the word just before.
            before
                .words
                .copy_within(0..before.len.min(CONTEXT_WORDS - 1), 1);
            before.words[0] = (empty, extra);
            before.len = (before.len + 1).min(CONTEXT_WORDS);
        }
        before
    }

    fn words(&self) -> &[(Previous<'a>, u32)] {
        &self.words[..self.len]
    }

    fn bits(&self) -> u32 {
        self.words().iter().fold(0, |bits, (_, b)| bits | b)
    }

    /// How many words back the nearest word with any of `bits` is (0 = just before),
    /// skipping "code" where the word before it names another kind of code ("area
    /// code", "promo code").
    fn distance_to(&self, bits: u32) -> Option<usize> {
        let words = self.words();
        (0..words.len()).find(|&i| {
            let (_, found) = words[i];
            if found & bits == 0 {
                return false;
            }
            let only_code = found & bits == context::CODE;
            !(only_code
                && words
                    .get(i + 1)
                    .is_some_and(|(_, qualifier)| qualifier & context::NOT_SECRET_CODE != 0))
        })
    }

    /// Whether the words between the current word and `distance` back are only links
    /// ("is", ":", "was"), so that the context word introduces it directly.
    fn linked_within(&self, distance: usize) -> bool {
        self.words()[..distance]
            .iter()
            .all(|(word, _)| word.core.is_empty() || context::is_link(word.core))
    }
}

/// The number detections at `word`, which holds a digit or is a two-letter start of a
/// spaced UK NINO.
pub(super) fn at_word(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    let assignment = (word.holds & scan::HAS_ASSIGN != 0)
        .then(|| scan::assignment(word))
        .flatten();
    let (value, name_bits) = match assignment {
        Some(assignment) => (assignment.value_start, context::of(assignment.name)),
        None => (word.start, 0),
    };
    let first = *scan.text.as_bytes().get(value)?;
    if first.is_ascii_digit() {
        if let Some(groups) = Groups::parse(scan.text, value) {
            return digit_groups(scan, &groups, name_bits);
        }
        return letter_suffixed_id(scan, word, value, name_bits);
    }
    if first.is_ascii_uppercase() {
        return iban(scan, value)
            .or_else(|| nino(scan, value, name_bits))
            .or_else(|| letter_suffixed_id(scan, word, value, name_bits))
            .or_else(|| alphanumeric_code(scan, word, value, name_bits));
    }
    None
}

fn digit_groups(scan: &mut Scan<'_>, groups: &Groups, name_bits: u32) -> Option<usize> {
    let before = Before::read(scan, name_bits);
    card(scan, groups, &before)
        .or_else(|| national_id(scan, groups, &before))
        .or_else(|| short_code(scan, groups, &before))
}

/// A card number: the longest run of leading groups that is written as cards are
/// (whole, or in fours, or 4-6-5 / 4-6-4) with one separator, and is a valid number
/// of a card issuer. A number grouped in fours with an issuer's prefix but a failing
/// Luhn check (a mistyped card) counts only next to a word naming a card.
fn card(scan: &mut Scan<'_>, groups: &Groups, before: &Before<'_>) -> Option<usize> {
    if !scan.wants(SecretKind::Card) {
        return None;
    }
    for count in (1..=groups.count).rev() {
        let digits = groups.digits_of(count);
        if !(13..=19).contains(&digits.len())
            || !matches!(groups.separator_of(count), Some(0 | b' ' | b'-'))
        {
            continue;
        }
        let lens = &groups.lens[..count];
        let in_fours = count > 1
            && lens[..count - 1].iter().all(|&l| l == 4)
            && (1..=4).contains(&lens[count - 1]);
        if !(count == 1 || in_fours || lens == [4, 6, 5] || lens == [4, 6, 4]) {
            continue;
        }
        let end = groups.ends[count - 1];
        let valid = checks::card_number_valid(digits)
            || (in_fours
                && digits.len() == 16
                && checks::card_prefix_valid(digits)
                && (before.bits() & context::CARD != 0 || card_details_follow(scan, end)));
        if valid {
            return scan.report(SecretKind::Card, groups.start, end);
        }
    }
    None
}

/// Whether an expiry or a check code follows within two words ("4716 2035 9981 0042,
/// expires 03/27").
fn card_details_follow(scan: &Scan<'_>, end: usize) -> bool {
    scan::ahead(scan.text, end, 2).any(|word| {
        context::of_word(word.core) & context::CARD_CHECK != 0
            || matches!(
                word.core.to_ascii_lowercase().as_str(),
                "exp" | "expires" | "expiry" | "expiration"
            )
    })
}

fn national_id(scan: &mut Scan<'_>, groups: &Groups, before: &Before<'_>) -> Option<usize> {
    if !scan.wants(SecretKind::NationalId) {
        return None;
    }
    let named = before.bits() & context::NATIONAL_ID != 0;
    let digits = groups.digits();
    let separator = groups.separator();
    let valid = match (groups.lens(), separator) {
        // SSN or ITIN: the dashed form is distinctive (phone numbers are 3-3-4 or 3-4).
        ([3, 2, 4], Some(b'-')) => checks::ssn_digits_valid(digits),
        ([3, 2, 4], Some(b' ' | b'.')) => named && checks::ssn_digits_valid(digits),
        // Canadian SIN written in threes.
        ([3, 3, 3], Some(b' ' | b'-')) => named && checks::sin_valid(digits),
        // SSN, SIN or BSN, undashed.
        ([9], _) => {
            named
                && (checks::ssn_digits_valid(digits)
                    || checks::sin_valid(digits)
                    || checks::bsn_valid(digits))
        }
        // Aadhaar, in fours or whole.
        ([4, 4, 4], Some(b' ' | b'-')) | ([12], _) => named && checks::aadhaar_valid(digits),
        // CPF as written in Brazil.
        ([3, 3, 3, 2], _) => {
            groups.separators[..3] == [b'.', b'.', b'-'] && checks::cpf_valid(digits)
        }
        // CPF or PESEL, undashed.
        ([11], _) => named && (checks::cpf_valid(digits) || checks::pesel_valid(digits)),
        // US EIN.
        ([2, 7], Some(b'-')) => named,
        _ => false,
    };
    if valid {
        return scan.report(SecretKind::NationalId, groups.start, groups.end());
    }
    // Passport and licence numbers have no check to go by: 6 to 14 digits right after
    // the document's name.
    let document = before
        .distance_to(context::ID_DOCUMENT)
        .is_some_and(|distance| distance <= 3);
    if document
        && groups.count == 1
        && (6..=14).contains(&digits.len())
        && !followed_by_unit(scan, groups.end())
    {
        return scan.report(SecretKind::NationalId, groups.start, groups.end());
    }
    None
}

/// One-time codes (4 to 8 digits, or 3+3) and card check codes (3 or 4 digits) given
/// as such.
fn short_code(scan: &mut Scan<'_>, groups: &Groups, before: &Before<'_>) -> Option<usize> {
    let digits = groups.digits();
    let single = groups.count == 1;
    let split_six = groups.lens() == [3, 3] && matches!(groups.separator(), Some(b' ' | b'-'));
    if !(single || split_six) || followed_by_unit(scan, groups.end()) {
        return None;
    }
    if single
        && (3..=4).contains(&digits.len())
        && let Some(distance) = before.distance_to(context::CARD_CHECK)
        && before.linked_within(distance)
    {
        return scan.report(SecretKind::Card, groups.start, groups.end());
    }
    if !(4..=8).contains(&digits.len()) || !scan.wants(SecretKind::OneTimeCode) {
        return None;
    }
    let direct = code_named_before(before);
    let year = digits.len() == 4 && (1900..=2099).contains(&number(digits));
    let named = match direct {
        Some(true) => true,
        Some(false) => !year,
        None => !year && code_named_after(scan, groups.end()),
    };
    if named {
        return scan.report(SecretKind::OneTimeCode, groups.start, groups.end());
    }
    None
}

fn number(digits: &[u8]) -> u32 {
    digits.iter().fold(0, |n, &d| n * 10 + u32::from(d))
}

/// Whether a one-time code word comes before: `Some(true)` when it introduces the
/// value directly ("code 318552", "2FA code: 318552", "OTP is 318552"), `Some(false)`
/// when it is further back in the phrase ("code for Acme is 318552").
fn code_named_before(before: &Before<'_>) -> Option<bool> {
    let distance = before.distance_to(context::ONE_TIME | context::CODE)?;
    if before.linked_within(distance) {
        return Some(true);
    }
    // "Your verification code for Acme is 318552": a link word just before the value.
    let linked = before
        .words()
        .first()
        .is_some_and(|(word, _)| context::is_link(word.core));
    (linked && distance <= 4).then_some(false)
}

/// "318552 is your verification code", "318552 is the code for Acme".
/// "Use 318552 to verify your account", "enter 318552 to sign in".
fn code_named_after(scan: &Scan<'_>, end: usize) -> bool {
    let mut words = scan::ahead(scan.text, end, 6);
    let Some(link) = words.next() else {
        return false;
    };
    match link.core.to_ascii_lowercase().as_str() {
        "is" | "was" => words.take(4).any(|word| {
            let bits = context::of(word.core);
            bits & (context::ONE_TIME | context::CODE) != 0
        }),
        "to" => words.take(2).any(|word| {
            context::of(word.core) & context::ONE_TIME != 0
                || matches!(
                    word.core.to_ascii_lowercase().as_str(),
                    "sign"
                        | "log"
                        | "login"
                        | "confirm"
                        | "authenticate"
                        | "authorize"
                        | "activate"
                )
        }),
        _ => false,
    }
}

/// Units and nouns that make the number before them a quantity: "4000 steps",
/// "1500 ms", "2500 dollars".
fn followed_by_unit(scan: &Scan<'_>, end: usize) -> bool {
    const UNITS: &[&str] = &[
        "%", "am", "bytes", "calories", "cm", "days", "dollars", "euros", "feet", "ft", "gb",
        "hours", "hrs", "kb", "kg", "km", "lbs", "lines", "mb", "meters", "miles", "min",
        "minutes", "ms", "people", "percent", "pm", "points", "pounds", "rows", "seconds", "steps",
        "times", "tokens", "users", "views", "words", "years",
    ];
    scan::ahead(scan.text, end, 1)
        .next()
        .is_some_and(|word| UNITS.contains(&word.core.to_ascii_lowercase().as_str()))
}

/// An IBAN starting at byte `start`: country, check digits, then the country's length
/// of letters and digits, whole or in groups of four separated by single spaces.
fn iban(scan: &mut Scan<'_>, start: usize) -> Option<usize> {
    if !scan.wants(SecretKind::Iban) {
        return None;
    }
    let bytes = scan.text.as_bytes();
    let head = bytes.get(start..start + 4)?;
    if !(head[0].is_ascii_uppercase()
        && head[1].is_ascii_uppercase()
        && head[2].is_ascii_digit()
        && head[3].is_ascii_digit())
    {
        return None;
    }
    let length = checks::iban_length([head[0], head[1]])?;
    let mut collected = [0u8; 34];
    let mut count = 0;
    let mut position = start;
    while count < length {
        match bytes.get(position) {
            Some(&b) if b.is_ascii_uppercase() || b.is_ascii_digit() => {
                collected[count] = b;
                count += 1;
                position += 1;
            }
            Some(b' ')
                if count % 4 == 0
                    && bytes
                        .get(position + 1)
                        .is_some_and(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) =>
            {
                position += 1;
            }
            _ => break,
        }
    }
    let ends_there = !bytes.get(position).is_some_and(u8::is_ascii_alphanumeric);
    if count == length && ends_there && checks::iban_valid(&collected[..count]) {
        return scan.report(SecretKind::Iban, start, position);
    }
    None
}

/// A UK National Insurance number: `AB 12 34 56 C` as HMRC prints it, or `AB123456C`
/// next to its name.
fn nino(scan: &mut Scan<'_>, start: usize, name_bits: u32) -> Option<usize> {
    if !scan.wants(SecretKind::NationalId) {
        return None;
    }
    let bytes = scan.text.as_bytes();
    let prefix = [*bytes.get(start)?, *bytes.get(start + 1)?];
    let mut position = start + 2;
    let mut digits = 0;
    let mut spaced = false;
    while digits < 6 {
        match bytes.get(position) {
            Some(b) if b.is_ascii_digit() => {
                digits += 1;
                position += 1;
            }
            Some(b' ')
                if digits % 2 == 0 && bytes.get(position + 1).is_some_and(u8::is_ascii_digit) =>
            {
                spaced = true;
                position += 1;
            }
            _ => return None,
        }
    }
    if spaced && bytes.get(position) == Some(&b' ') {
        position += 1;
    }
    let suffix = *bytes.get(position)?;
    position += 1;
    if bytes.get(position).is_some_and(u8::is_ascii_alphanumeric)
        || !checks::nino_valid(prefix, suffix)
    {
        return None;
    }
    let named =
        (name_bits | scan.recent.context(scan.text, CONTEXT_WORDS)) & context::NATIONAL_ID != 0;
    if spaced || named {
        return scan.report(SecretKind::NationalId, start, position);
    }
    None
}

/// A Spanish DNI (`12345678Z`) or NIE (`X1234567L`) next to its name, by its control
/// letter.
fn letter_suffixed_id(
    scan: &mut Scan<'_>,
    word: &Word<'_>,
    start: usize,
    name_bits: u32,
) -> Option<usize> {
    if !scan.wants(SecretKind::NationalId) {
        return None;
    }
    let value = scan.text.get(start..word.end)?;
    let value_bytes = value.as_bytes();
    let (&letter, number_part) = value_bytes.split_last()?;
    let number_part = number_part.strip_suffix(b"-").unwrap_or(number_part);
    if !letter.is_ascii_uppercase() || !checks::dni_valid(number_part, letter) {
        return None;
    }
    let named =
        (name_bits | scan.recent.context(scan.text, CONTEXT_WORDS)) & context::NATIONAL_ID != 0;
    if named {
        return scan.report(SecretKind::NationalId, start, word.end);
    }
    None
}

/// A one-time code of letters and digits ("code: A7K9P2", "G-318552 is your Google
/// verification code") and a passport or licence number ("passport X1234567"), given
/// as such.
fn alphanumeric_code(
    scan: &mut Scan<'_>,
    word: &Word<'_>,
    start: usize,
    name_bits: u32,
) -> Option<usize> {
    let value = scan.text.get(start..word.end)?;
    let bytes = value.as_bytes();
    let before = Before::read(scan, name_bits);
    if let Some((letters, digits)) = value.split_once('-')
        && (1..=3).contains(&letters.len())
        && letters.bytes().all(|b| b.is_ascii_uppercase())
        && (4..=8).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (code_named_before(&before).is_some() || code_named_after(scan, word.end))
    {
        return scan.report(SecretKind::OneTimeCode, start, word.end);
    }
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    let letters = bytes.iter().filter(|b| b.is_ascii_uppercase()).count();
    if digits + letters != bytes.len() || digits < 2 || letters < 1 {
        return None;
    }
    // Generated codes mix letters and digits; "SUMMER20" and "BOGO25" are words with a
    // number, as promotion codes are.
    let longest_letter_run = bytes
        .split(u8::is_ascii_digit)
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    if (6..=8).contains(&bytes.len())
        && longest_letter_run <= 3
        && code_named_before(&before) == Some(true)
    {
        return scan.report(SecretKind::OneTimeCode, start, word.end);
    }
    let document = before
        .distance_to(context::ID_DOCUMENT)
        .is_some_and(|distance| distance <= 3);
    if document && (6..=14).contains(&bytes.len()) && digits >= 5 {
        return scan.report(SecretKind::NationalId, start, word.end);
    }
    None
}

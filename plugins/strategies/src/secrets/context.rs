//! Context words: the words that, near an ambiguous shape, say it is a secret (a
//! 6-digit number after "verification code", 9 digits after "SSN", a random token
//! after "API key"), or that it is not ("area code").
//!
//! A word's bits are those of the whole word, lower-cased, or of its parts when it is
//! an identifier (`OPENAI_API_KEY`, `apiKey`, `x-api-key`): a key's name says what its
//! value is.

/// Keys and tokens: key, token, secret, api, credential, bearer, auth.
pub(super) const KEY: u32 = 1;
/// password, passwd, pwd, pw, passcode.
pub(super) const PASSWORD: u32 = 1 << 1;
/// passphrase: its value runs to the end of the clause.
pub(super) const PASSPHRASE: u32 = 1 << 2;
/// seed, mnemonic, recovery (a wallet's phrase).
pub(super) const SEED: u32 = 1 << 3;
/// pin, pincode, combination: digits only.
pub(super) const PIN: u32 = 1 << 4;
/// Words that make a nearby number a one-time code: otp, 2fa, verification, ...
pub(super) const ONE_TIME: u32 = 1 << 5;
/// code, codes: a one-time code unless [`NOT_SECRET_CODE`] names another kind.
pub(super) const CODE: u32 = 1 << 6;
/// area, zip, postal, promo, error, status, ...: the code they qualify is no secret.
pub(super) const NOT_SECRET_CODE: u32 = 1 << 7;
/// The names of national ids with a check: ssn, social, sin, nino, aadhaar, bsn, ...
pub(super) const NATIONAL_ID: u32 = 1 << 8;
/// Identity documents without a check: passport, licence, identity card.
pub(super) const ID_DOCUMENT: u32 = 1 << 9;
/// cvv, cvc, csc.
pub(super) const CARD_CHECK: u32 = 1 << 10;
/// bearer (an Authorization header's scheme).
pub(super) const BEARER: u32 = 1 << 11;
/// private (a private key).
pub(super) const PRIVATE: u32 = 1 << 12;
/// card, visa, mastercard, credit, debit, ...: a payment card.
pub(super) const CARD: u32 = 1 << 13;

/// Sorted by word (a test checks), for a binary search.
const WORDS: &[(&str, u32)] = &[
    ("2-step", ONE_TIME),
    ("2fa", ONE_TIME),
    ("aadhaar", NATIONAL_ID),
    ("aadhar", NATIONAL_ID),
    ("access", KEY),
    ("airport", NOT_SECRET_CODE),
    ("amex", CARD),
    ("api", KEY),
    ("apikey", KEY),
    ("area", NOT_SECRET_CODE),
    ("article", NOT_SECRET_CODE),
    ("ascii", NOT_SECRET_CODE),
    ("auth", KEY),
    ("authentication", ONE_TIME),
    ("authenticator", ONE_TIME),
    ("authorization", KEY),
    ("bank", NOT_SECRET_CODE),
    ("bar", NOT_SECRET_CODE),
    ("bearer", KEY | BEARER),
    ("bic", NOT_SECRET_CODE),
    ("booking", NOT_SECRET_CODE),
    ("branch", NOT_SECRET_CODE),
    ("bsn", NATIONAL_ID),
    ("burgerservicenummer", NATIONAL_ID),
    ("card", CARD),
    ("cheat", NOT_SECRET_CODE),
    ("code", CODE),
    ("codes", CODE),
    ("color", NOT_SECRET_CODE),
    ("colour", NOT_SECRET_CODE),
    ("combination", PIN),
    ("country", NOT_SECRET_CODE),
    ("coupon", NOT_SECRET_CODE),
    ("course", NOT_SECRET_CODE),
    ("cpf", NATIONAL_ID),
    ("credential", KEY),
    ("credentials", KEY),
    ("credit", CARD),
    ("csc", CARD_CHECK),
    ("css", NOT_SECRET_CODE),
    ("cvc", CARD_CHECK),
    ("cvc2", CARD_CHECK),
    ("cvv", CARD_CHECK),
    ("cvv2", CARD_CHECK),
    ("debit", CARD),
    ("dial", NOT_SECRET_CODE),
    ("dialing", NOT_SECRET_CODE),
    ("dialling", NOT_SECRET_CODE),
    ("discount", NOT_SECRET_CODE),
    ("dni", NATIONAL_ID),
    ("dress", NOT_SECRET_CODE),
    ("ean", NOT_SECRET_CODE),
    ("ein", NATIONAL_ID),
    ("error", NOT_SECRET_CODE),
    ("exit", NOT_SECRET_CODE),
    ("flight", NOT_SECRET_CODE),
    ("gift", NOT_SECRET_CODE),
    ("hex", NOT_SECRET_CODE),
    ("html", NOT_SECRET_CODE),
    ("iata", NOT_SECRET_CODE),
    ("identity", ID_DOCUMENT),
    ("insurance", NATIONAL_ID),
    ("isbn", NOT_SECRET_CODE),
    ("item", NOT_SECRET_CODE),
    ("itin", NATIONAL_ID),
    ("key", KEY),
    ("keys", KEY),
    ("language", NOT_SECRET_CODE),
    ("licence", ID_DOCUMENT),
    ("license", ID_DOCUMENT),
    ("maestro", CARD),
    ("mastercard", CARD),
    ("mfa", ONE_TIME),
    ("mnemonic", SEED),
    ("model", NOT_SECRET_CODE),
    ("morse", NOT_SECRET_CODE),
    ("ni", NATIONAL_ID),
    ("nie", NATIONAL_ID),
    ("nif", NATIONAL_ID),
    ("nino", NATIONAL_ID),
    ("one-time", ONE_TIME),
    ("onetime", ONE_TIME),
    ("otp", ONE_TIME),
    ("part", NOT_SECRET_CODE),
    ("passcode", PASSWORD),
    ("passcodes", PASSWORD),
    ("passphrase", PASSPHRASE),
    ("passport", ID_DOCUMENT),
    ("passwd", PASSWORD),
    ("password", PASSWORD),
    ("passwords", PASSWORD),
    ("pesel", NATIONAL_ID),
    ("pin", PIN),
    ("pincode", PIN),
    ("post", NOT_SECRET_CODE),
    ("postal", NOT_SECRET_CODE),
    ("postcode", NOT_SECRET_CODE),
    ("private", KEY | PRIVATE),
    ("product", NOT_SECRET_CODE),
    ("promo", NOT_SECRET_CODE),
    ("promotional", NOT_SECRET_CODE),
    ("pw", PASSWORD),
    ("pwd", PASSWORD),
    ("qr", NOT_SECRET_CODE),
    ("recovery", SEED),
    ("reference", NOT_SECRET_CODE),
    ("referral", NOT_SECRET_CODE),
    ("response", NOT_SECRET_CODE),
    ("return", NOT_SECRET_CODE),
    ("room", NOT_SECRET_CODE),
    ("routing", NOT_SECRET_CODE),
    ("seat", NOT_SECRET_CODE),
    ("secret", KEY),
    ("secrets", KEY),
    ("seed", SEED),
    ("serial", NOT_SECRET_CODE),
    ("sin", NATIONAL_ID),
    ("sku", NOT_SECRET_CODE),
    ("social", NATIONAL_ID),
    ("sort", NOT_SECRET_CODE),
    ("source", NOT_SECRET_CODE),
    ("ssn", NATIONAL_ID),
    ("ssns", NATIONAL_ID),
    ("station", NOT_SECRET_CODE),
    ("status", NOT_SECRET_CODE),
    ("style", NOT_SECRET_CODE),
    ("swift", NOT_SECRET_CODE),
    ("tin", NATIONAL_ID),
    ("token", KEY),
    ("tokens", KEY),
    ("totp", ONE_TIME),
    ("tracking", NOT_SECRET_CODE),
    ("two-factor", ONE_TIME),
    ("unicode", NOT_SECRET_CODE),
    ("upc", NOT_SECRET_CODE),
    ("verification", ONE_TIME),
    ("verify", ONE_TIME),
    ("visa", CARD),
    ("voucher", NOT_SECRET_CODE),
    ("zip", NOT_SECRET_CODE),
];

/// The longest word in [`WORDS`].
const LONGEST: usize = 20;

/// The context bits of one word (a core, as the scanner gives it), or of its parts
/// when it is an identifier.
pub(super) fn of(word: &str) -> u32 {
    let whole = of_word(word);
    if whole != 0 || word.len() > 64 {
        return whole;
    }
    identifier_parts(word).fold(0, |bits, part| bits | lookup(part))
}

/// The context bits of one word taken whole ("password", "User's", not `self.pw`).
pub(super) fn of_word(word: &str) -> u32 {
    let word = word
        .strip_suffix("'s")
        .or_else(|| word.strip_suffix("\u{2019}s"))
        .unwrap_or(word);
    lookup(word.as_bytes())
}

/// The context bits of the words that name a value to follow them.
pub(super) const NAMES_A_VALUE: u32 = PASSWORD | PASSPHRASE | SEED | PIN | BEARER;

/// For each lower-case first letter, a bit per length (bit n: n letters) that a word
/// naming a value (or "authorization") can have: most words are ruled out by their
/// first letter and length alone.
const NAMING_LENGTHS: [u32; 26] = {
    let mut masks = [0u32; 26];
    let mut index = 0;
    while index < WORDS.len() {
        let (word, bits) = WORDS[index];
        if bits & NAMES_A_VALUE != 0 {
            masks[(word.as_bytes()[0] - b'a') as usize] |= 1 << word.len();
        }
        index += 1;
    }
    masks[0] |= 1 << AUTHORIZATION.len();
    masks
};

const AUTHORIZATION: &str = "authorization";

/// Whether `word` (letters) names a value that follows it: a password, passphrase,
/// PIN, seed phrase or bearer token, or an Authorization header.
#[inline]
pub(super) fn names_a_value(word: &[u8]) -> bool {
    let Some(first) = word.first().map(u8::to_ascii_lowercase) else {
        return false;
    };
    let could = first.is_ascii_lowercase()
        && word.len() < 32
        && NAMING_LENGTHS[usize::from(first - b'a')] & (1 << word.len()) != 0;
    could
        && (lookup(word) & NAMES_A_VALUE != 0
            || word.eq_ignore_ascii_case(AUTHORIZATION.as_bytes()))
}

/// Where each first byte's words start in [`WORDS`] (which is sorted), for
/// [`lookup`]: `FIRST_BYTE_STARTS[b]..FIRST_BYTE_STARTS[b + 1]`.
const FIRST_BYTE_STARTS: [u16; 257] = {
    let mut starts = [0u16; 257];
    let mut byte = 0;
    while byte < 256 {
        let mut index = 0;
        while index < WORDS.len() && (WORDS[index].0.as_bytes()[0] as usize) < byte {
            index += 1;
        }
        starts[byte] = index as u16;
        byte += 1;
    }
    starts[256] = WORDS.len() as u16;
    starts
};

/// The bits of one word, compared without case. Most words are not context words:
/// the length and the first byte's slice of the table rule them out quickly.
fn lookup(word: &[u8]) -> u32 {
    if word.len() < 2 || word.len() > LONGEST {
        return 0;
    }
    let mut lower = [0u8; LONGEST];
    for (slot, byte) in lower.iter_mut().zip(word) {
        *slot = byte.to_ascii_lowercase();
    }
    let lower = &lower[..word.len()];
    let first = usize::from(lower[0]);
    let candidates =
        &WORDS[usize::from(FIRST_BYTE_STARTS[first])..usize::from(FIRST_BYTE_STARTS[first + 1])];
    candidates
        .iter()
        .find(|(candidate, _)| candidate.len() == lower.len() && candidate.as_bytes() == lower)
        .map_or(0, |(_, bits)| *bits)
}

/// The parts of an identifier: split at `_`, `-`, `.` and where lower case turns upper
/// (`apiKey` -> `api`, `Key`).
fn identifier_parts(word: &str) -> impl Iterator<Item = &[u8]> {
    let bytes = word.as_bytes();
    let mut position = 0;
    std::iter::from_fn(move || {
        while position < bytes.len() && !bytes[position].is_ascii_alphanumeric() {
            position += 1;
        }
        if position >= bytes.len() {
            return None;
        }
        let start = position;
        position += 1;
        while position < bytes.len()
            && bytes[position].is_ascii_alphanumeric()
            && !(bytes[position].is_ascii_uppercase() && bytes[position - 1].is_ascii_lowercase())
        {
            position += 1;
        }
        Some(&bytes[start..position])
    })
}

/// Whether `word` is one of the words that join a name to its value: "is", "was",
/// "are", ":", "=", "->".
pub(super) fn is_link(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "is" | "was" | "are" | "were" | ":" | "=" | "->" | "\u{2192}" | "-" | "\u{2014}" | "is:"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_sorted_lower_case_and_short() {
        assert!(WORDS.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert!(
            WORDS
                .iter()
                .all(|(word, _)| word.len() <= LONGEST && *word == word.to_ascii_lowercase())
        );
    }

    #[test]
    fn identifiers_are_read_by_their_parts() {
        assert_eq!(of("OPENAI_API_KEY"), KEY);
        assert_eq!(of("apiKey"), KEY);
        assert_eq!(of("x-api-key"), KEY);
        assert_eq!(of("DB_PASSWORD"), PASSWORD);
        assert_eq!(of("Password"), PASSWORD);
        assert_eq!(of("SSN"), NATIONAL_ID);
        assert_eq!(of("one-time"), ONE_TIME);
        assert_eq!(of("getUserById"), 0);
        assert_eq!(of("keyboard"), 0);
    }
}

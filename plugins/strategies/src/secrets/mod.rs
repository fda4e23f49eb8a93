//! The secret detector: finds secrets and sensitive identifiers in text that is about
//! to be stored, indexed, extracted, logged or handed to a plugin, so that the caller
//! can replace them with `[redacted: <kind>]` first.
//!
//! - [`find`]: the findings of the enabled [`KindSet`], as byte ranges, in order and
//!   never overlapping.
//! - [`redact`]: the text with each finding replaced by [`marker`]`(kind)`; the text
//!   is borrowed, not copied, when nothing is found. A marker is never found again,
//!   so `redact(redact(x)) == redact(x)`.
//! - [`is_only_secret`]: whether a text states nothing but its secret ("User's
//!   password is hunter2"), which a memory add refuses rather than stores redacted.
//!
//! What each [`SecretKind`] covers, and what it deliberately leaves alone, is written
//! on the kind. Formats are recognised by their real structure and check digits
//! (Luhn, mod 97, the SSN's ranges, Verhoeff, ...), and where a shape alone is
//! ambiguous (a 6-digit one-time code, an undashed national id, a password that is a
//! plain word) only with the context words that name it nearby.
//!
//! One pass over the whitespace-separated words does the work: a word is looked at
//! further only when it could start a finding (it holds a digit, is long, names a
//! password, or starts a private key block); context words are read, backwards, only
//! then. Everything here is plain Rust without dependencies: the host calls it on
//! every write path, and guests may too.

mod checks;
mod context;
mod keys;
mod numbers;
mod passwords;
mod scan;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;

use crate::analyser;

use scan::{Recent, Word};

/// What a finding is. Wire names (config `memory.redact`, markers, counts) are those of
/// [`SecretKind::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecretKind {
    /// `api-key`: API keys and tokens. By their issuers' prefixes (OpenAI `sk-`,
    /// Anthropic `sk-ant-`, GitHub `ghp_`... and `github_pat_`, GitLab `glpat-`, Slack
    /// `xox?-`, AWS `AKIA`/`ASIA`, Google `AIza` and `ya29.`, Stripe, Hugging Face,
    /// npm, PyPI, SendGrid, Twilio, Telegram bot tokens and more), JWTs, the value of
    /// `Authorization: Bearer`/`Basic`, secret-named URL query values (`?token=`), and
    /// by shape: a random-looking token of 20+ characters mixing letters and digits
    /// next to a word such as key, token, secret or credential (or as the value of a
    /// `*_KEY=`/`"token":` assignment), or of 40+ characters mixing upper case, lower
    /// case and digits anywhere. Never: hex alone without such a word (git SHAs, hashes),
    /// UUIDs, paths, URLs themselves, identifiers in any case style, versions, base64
    /// of ordinary text, e-mail addresses, domain names.
    ApiKey,
    /// `password`: passwords, passphrases and PINs given as such: "password is X",
    /// "password: X", "pw X", "PIN 4821", "X is my wifi password", `DB_PASSWORD=X`,
    /// the password of `scheme://user:password@host` and of `?password=`. A passphrase
    /// runs to the end of its clause. Never a mention without a value ("I forgot my
    /// password", "the password is on the fridge", "password manager"), placeholders
    /// (`<password>`, `${DB_PASS}`, `your-password`, `****`) or code (`password=None`,
    /// `os.environ[...]`).
    Password,
    /// `one-time-code`: 4 to 8 digits (or 6 to 8 letters and digits) given as a
    /// verification, 2FA, OTP, sign-in or security code. Never a number without such a
    /// word in the same phrase, nor an area, zip, promo, error or status code, nor a
    /// year unless the code word introduces it directly.
    OneTimeCode,
    /// `national-id`: US SSNs (`ddd-dd-dddd` with valid area, group and serial; ITINs;
    /// undashed only next to SSN/social security), Canadian SINs (Luhn), UK NINOs,
    /// Indian Aadhaar (Verhoeff), Dutch BSN (11-test), Brazilian CPF, Spanish DNI/NIE,
    /// Polish PESEL, US EINs: each by its check, and the unspaced or unpunctuated forms
    /// only next to their name; passport, licence and tax id numbers next to those words.
    /// Never phone numbers (303-555-0176, 555-0101), dates, zip codes.
    NationalId,
    /// `card`: payment card numbers of 13 to 19 digits, whole or grouped by spaces or
    /// dashes, Luhn-valid with an issuer's prefix and length; 16 digits in fours with
    /// an issuer's prefix but failing Luhn (a mistyped card) only next to a card word
    /// or followed by an expiry or CVV; a CVV/CVC given as such. The expiry date is
    /// left alone (a date alone is no secret). Never a Luhn-invalid number otherwise,
    /// nor one without an issuer's prefix (order and tracking numbers, timestamps).
    Card,
    /// `iban`: IBANs (country code, check digits, the country's length, mod 97 == 1),
    /// whole or in groups of four.
    Iban,
    /// `private-key`: PEM/OpenSSH/PGP private key blocks (BEGIN to END, or to the end of
    /// the text when END is missing) that carry key material, `AGE-SECRET-KEY-1...`, and
    /// wallet seed/recovery phrases given as such. Never a BEGIN line alone in prose.
    PrivateKey,
}

impl SecretKind {
    pub const ALL: [SecretKind; 7] = [
        SecretKind::ApiKey,
        SecretKind::Password,
        SecretKind::OneTimeCode,
        SecretKind::NationalId,
        SecretKind::Card,
        SecretKind::Iban,
        SecretKind::PrivateKey,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::ApiKey => "api-key",
            SecretKind::Password => "password",
            SecretKind::OneTimeCode => "one-time-code",
            SecretKind::NationalId => "national-id",
            SecretKind::Card => "card",
            SecretKind::Iban => "iban",
            SecretKind::PrivateKey => "private-key",
        }
    }

    /// The kind of a wire name, as [`SecretKind::as_str`] spells it.
    pub fn parse(name: &str) -> Option<SecretKind> {
        SecretKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds a detection looks for (`memory.redact`); [`KindSet::all`] by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSet(u8);

impl KindSet {
    pub fn all() -> KindSet {
        SecretKind::ALL.into_iter().collect()
    }

    pub fn none() -> KindSet {
        KindSet(0)
    }

    pub fn contains(self, kind: SecretKind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub fn with(self, kind: SecretKind) -> KindSet {
        KindSet(self.0 | kind.bit())
    }

    pub fn without(self, kind: SecretKind) -> KindSet {
        KindSet(self.0 & !kind.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set as bits, for a caller that keeps it in an atomic.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The set [`KindSet::bits`] gave (unknown bits are dropped).
    pub fn from_bits(bits: u8) -> KindSet {
        KindSet(bits & KindSet::all().0)
    }

    /// The kinds in the set, in [`SecretKind::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = SecretKind> {
        SecretKind::ALL
            .into_iter()
            .filter(move |kind| self.contains(*kind))
    }
}

impl Default for KindSet {
    fn default() -> KindSet {
        KindSet::all()
    }
}

impl FromIterator<SecretKind> for KindSet {
    fn from_iter<I: IntoIterator<Item = SecretKind>>(kinds: I) -> KindSet {
        kinds.into_iter().fold(KindSet::none(), KindSet::with)
    }
}

/// One secret: its kind and its byte range in the text (`text[start..end]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub kind: SecretKind,
    pub start: usize,
    pub end: usize,
}

/// The text that stands in for a secret of `kind`: `[redacted: <kind>]`.
pub fn marker(kind: SecretKind) -> String {
    format!("{}{}]", scan::MARKER_OPEN, kind.as_str())
}

/// The secrets of the enabled kinds in `text`, in order, never overlapping. Where two
/// detections overlap they become one finding over both ranges, of the kind of the
/// longer, so that no part of either is left in the clear.
pub fn find(text: &str, kinds: KindSet) -> Vec<Finding> {
    if kinds.is_empty() || !scan::may_hold_secret(text) {
        return Vec::new();
    }
    find_in_words(text, kinds)
}

/// [`find`] without the first pass that rules most texts out.
fn find_in_words(text: &str, kinds: KindSet) -> Vec<Finding> {
    let mut scan = Scan {
        text,
        kinds,
        recent: Recent::default(),
        findings: Vec::new(),
    };
    let mut position = 0;
    while let Some(word) = scan::word_at(text, position) {
        position = word.raw_end;
        if !word.marker
            && let Some(resume) = scan.examine(&word)
        {
            position = position.max(resume);
        }
        scan.recent.push(text, &word);
    }
    merge(scan.findings)
}

/// A text after redaction and what was taken out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text with each finding replaced by its [`marker`]; borrowed when nothing was
    /// found.
    pub text: Cow<'a, str>,
    /// The kind of each finding, in order (one entry per marker).
    pub found: Vec<SecretKind>,
}

/// `text` with every secret of the enabled kinds replaced by `[redacted: <kind>]`.
pub fn redact(text: &str, kinds: KindSet) -> Redacted<'_> {
    let findings = find(text, kinds);
    if findings.is_empty() {
        return Redacted {
            text: Cow::Borrowed(text),
            found: Vec::new(),
        };
    }
    let mut out = String::with_capacity(text.len() + 16 * findings.len());
    let mut copied = 0;
    for finding in &findings {
        out.push_str(&text[copied..finding.start]);
        out.push_str(scan::MARKER_OPEN);
        out.push_str(finding.kind.as_str());
        out.push(']');
        copied = finding.end;
    }
    out.push_str(&text[copied..]);
    Redacted {
        text: Cow::Owned(out),
        found: findings.iter().map(|f| f.kind).collect(),
    }
}

/// Words that, next to a secret, only say which secret it is: what remains of "User's
/// social security number is 604-38-2217" once the number is out says nothing else.
/// Sorted (a test checks), for a binary search.
const SECRET_NAMING_WORDS: &[&str] = &[
    "2fa",
    "aadhaar",
    "access",
    "account",
    "amex",
    "api",
    "apikey",
    "auth",
    "bank",
    "bearer",
    "bsn",
    "card",
    "code",
    "combination",
    "cpf",
    "credential",
    "credentials",
    "credit",
    "cvc",
    "cvv",
    "debit",
    "dni",
    "driver",
    "drivers",
    "ein",
    "iban",
    "id",
    "identity",
    "insurance",
    "itin",
    "key",
    "licence",
    "license",
    "login",
    "mastercard",
    "mfa",
    "mnemonic",
    "national",
    "new",
    "nino",
    "number",
    "old",
    "one",
    "otp",
    "pass",
    "passcode",
    "passphrase",
    "passport",
    "passwd",
    "password",
    "personal",
    "pesel",
    "phrase",
    "pin",
    "private",
    "pw",
    "pwd",
    "recovery",
    "secret",
    "security",
    "seed",
    "sin",
    "social",
    "ssn",
    "tax",
    "time",
    "tin",
    "token",
    "user",
    "users",
    "verification",
    "visa",
    "wallet",
];

/// Whether `text` states nothing but secrets: it has at least one finding, and once
/// the findings are out only function words, the subject "User", and words naming the
/// secret ("password", "card", "social security number", ...) remain. "User's password
/// is hunter2" is only a secret; "My parents want the Netflix login. The password is X"
/// is not (the Netflix login is worth remembering, redacted).
pub fn is_only_secret(text: &str, kinds: KindSet) -> bool {
    let findings = find(text, kinds);
    if findings.is_empty() {
        return false;
    }
    let mut rest = String::with_capacity(text.len());
    let mut copied = 0;
    for finding in &findings {
        rest.push_str(&text[copied..finding.start]);
        rest.push(' ');
        copied = finding.end;
    }
    rest.push_str(&text[copied..]);
    analyser::words(&rest).iter().all(|word| {
        analyser::is_stop_word(word) || SECRET_NAMING_WORDS.binary_search(&word.as_str()).is_ok()
    })
}

/// Sorted findings with the overlapping ones joined.
fn merge(mut findings: Vec<Finding>) -> Vec<Finding> {
    if findings.len() < 2 {
        return findings;
    }
    findings.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
    let mut merged: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        match merged.last_mut() {
            Some(last) if finding.start < last.end => {
                if finding.end - finding.start > last.end - last.start {
                    last.kind = finding.kind;
                }
                last.end = last.end.max(finding.end);
            }
            _ => merged.push(finding),
        }
    }
    merged
}

/// "AB" of "AB 12 34 56 C": two capitals, then a space and a digit.
fn starts_spaced_nino(text: &str, word: &Word<'_>) -> bool {
    let core = word.core.as_bytes();
    core.len() == 2
        && core.iter().all(u8::is_ascii_uppercase)
        && text.as_bytes().get(word.end) == Some(&b' ')
        && text
            .as_bytes()
            .get(word.end + 1)
            .is_some_and(u8::is_ascii_digit)
}

/// The state of one [`find`]: the text, the kinds asked for, the words just before the
/// current one (for context words) and what was found so far.
pub(super) struct Scan<'a> {
    text: &'a str,
    kinds: KindSet,
    recent: Recent,
    findings: Vec<Finding>,
}

impl<'a> Scan<'a> {
    /// Runs the detectors that can start at `word`; the byte position to resume from
    /// when a finding reached past it.
    fn examine(&mut self, word: &Word<'a>) -> Option<usize> {
        let core = word.core.as_bytes();
        let first = *core.first()?;
        if first == b'-' && word.core.starts_with("-----BEGIN") {
            return keys::private_key_block(self, word);
        }
        let has_digit = word.holds & scan::HAS_DIGIT != 0;
        if word.holds & scan::HAS_ASSIGN != 0 && word.core.contains("://") {
            keys::url(self, word);
            return None;
        }
        if let Some(resume) = passwords::at_word(self, word) {
            return Some(resume);
        }
        if core.len() >= keys::MIN_KEY_LEN
            && let Some(resume) = keys::at_word(self, word)
        {
            return Some(resume);
        }
        if has_digit || starts_spaced_nino(self.text, word) {
            return numbers::at_word(self, word);
        }
        None
    }

    fn wants(&self, kind: SecretKind) -> bool {
        self.kinds.contains(kind)
    }

    /// Records a finding of `kind` over `start..end` when that kind is enabled; the end,
    /// to resume from, when it was recorded.
    fn report(&mut self, kind: SecretKind, start: usize, end: usize) -> Option<usize> {
        if !self.wants(kind) || start >= end {
            return None;
        }
        self.findings.push(Finding { kind, start, end });
        Some(end)
    }
}

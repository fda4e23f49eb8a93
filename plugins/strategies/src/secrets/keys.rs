//! API keys and tokens (by their issuers' prefixes, JWTs, Telegram bot tokens, and
//! by shape: long, random-looking, letters mixed with digits), secrets inside URLs,
//! and private key blocks.

use super::checks;
use super::context;
use super::scan::Word;
use super::{Scan, SecretKind};

/// The shortest word that can hold a key (AWS access key ids are 20 characters, a
/// Slack token's prefix and body 15).
pub(super) const MIN_KEY_LEN: usize = 15;

/// Context-free: a random-looking token at least this long is taken for a key
/// anywhere (shorter ones only next to a word such as "key" or "token").
const STANDALONE_KEY_LEN: usize = 40;
/// Next to a key word.
const CONTEXT_KEY_LEN: usize = 20;
/// Hex next to a key word: 32 is the usual length of hex API keys and auth tokens.
const HEX_KEY_LEN: usize = 32;

/// Which characters a key's body may hold after its prefix.
#[derive(Clone, Copy)]
enum Body {
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Za-z0-9_-]` (base64url)
    Url64,
    /// `[A-Za-z0-9_]`
    AlnumUnderscore,
    /// `[0-9a-f]`
    HexLower,
    /// `[0-9A-Z]`
    UpperAlnum,
    /// `[A-Za-z0-9_.-]`
    Dotted,
}

impl Body {
    fn allows(self, b: u8) -> bool {
        match self {
            Body::Alnum => b.is_ascii_alphanumeric(),
            Body::Url64 => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Body::AlnumUnderscore => b.is_ascii_alphanumeric() || b == b'_',
            Body::HexLower => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
            Body::UpperAlnum => b.is_ascii_digit() || b.is_ascii_uppercase(),
            Body::Dotted => b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'),
        }
    }
}

/// An issuer's key format: the prefix, then `min..=max` body characters.
struct Prefix {
    prefix: &'static str,
    kind: SecretKind,
    body: Body,
    min: usize,
    max: usize,
    /// The body must look random (the prefix alone is too common a word start, as
    /// `sk-` is).
    random: bool,
}

const fn key(prefix: &'static str, body: Body, min: usize, max: usize, random: bool) -> Prefix {
    Prefix {
        prefix,
        kind: SecretKind::ApiKey,
        body,
        min,
        max,
        random,
    }
}

/// Formats recognised by their prefix. Where one prefix starts another (`sk-ant-` and
/// `sk-`), either match gives the same kind, so the order only decides the extent.
const PREFIXES: &[Prefix] = &[
    // Anthropic, OpenAI (project, service account, admin, legacy), DeepSeek, OpenRouter.
    key("sk-ant-", Body::Url64, 20, 200, true),
    key("sk-", Body::Url64, 20, 200, true),
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh; fine-grained.
    key("ghp_", Body::Alnum, 30, 60, true),
    key("gho_", Body::Alnum, 30, 60, true),
    key("ghu_", Body::Alnum, 30, 60, true),
    key("ghs_", Body::Alnum, 30, 60, true),
    key("ghr_", Body::Alnum, 30, 60, true),
    key("github_pat_", Body::AlnumUnderscore, 40, 120, true),
    // GitLab personal, deploy and runner tokens.
    key("glpat-", Body::Url64, 20, 60, true),
    key("gldt-", Body::Url64, 20, 60, true),
    key("glrt-", Body::Url64, 20, 60, true),
    // Slack bot, user, app-level, refresh, legacy tokens.
    key("xoxb-", Body::Url64, 10, 200, true),
    key("xoxp-", Body::Url64, 10, 200, true),
    key("xoxa-", Body::Url64, 10, 200, true),
    key("xoxr-", Body::Url64, 10, 200, true),
    key("xoxs-", Body::Url64, 10, 200, true),
    key("xoxe-", Body::Url64, 10, 200, true),
    key("xapp-", Body::Url64, 10, 200, true),
    // AWS access key ids (long-term, temporary) and other IAM unique ids.
    key("AKIA", Body::UpperAlnum, 16, 16, false),
    key("ASIA", Body::UpperAlnum, 16, 16, false),
    key("ABIA", Body::UpperAlnum, 16, 16, false),
    key("ACCA", Body::UpperAlnum, 16, 16, false),
    // Google API keys, OAuth access tokens and client secrets.
    key("AIza", Body::Url64, 35, 35, false),
    key("ya29.", Body::Dotted, 30, 400, true),
    key("GOCSPX-", Body::Url64, 24, 40, false),
    // Stripe secret, restricted and webhook keys.
    key("sk_live_", Body::Alnum, 16, 120, false),
    key("sk_test_", Body::Alnum, 16, 120, false),
    key("rk_live_", Body::Alnum, 16, 120, false),
    key("rk_test_", Body::Alnum, 16, 120, false),
    key("whsec_", Body::Alnum, 24, 120, false),
    // Hugging Face, npm, PyPI.
    key("hf_", Body::Alnum, 30, 60, true),
    key("npm_", Body::Alnum, 36, 36, false),
    key("pypi-", Body::Url64, 50, 400, false),
    // Twilio account and API key SIDs (upper-case prefix, lower-case hex).
    key("AC", Body::HexLower, 32, 32, false),
    key("SK", Body::HexLower, 32, 32, false),
    // Mailgun, DigitalOcean, Shopify, Databricks, Postman, Linear, Groq, Replicate,
    // Perplexity, xAI, Notion, Docker Hub, Tailscale, Sentry, Grafana, Vault, Figma.
    key("key-", Body::HexLower, 32, 32, false),
    key("dop_v1_", Body::HexLower, 64, 64, false),
    key("shpat_", Body::HexLower, 32, 32, false),
    key("shpss_", Body::HexLower, 32, 32, false),
    key("dapi", Body::HexLower, 32, 32, false),
    key("PMAK-", Body::Url64, 40, 80, false),
    key("lin_api_", Body::Alnum, 32, 64, false),
    key("gsk_", Body::Alnum, 40, 64, true),
    key("r8_", Body::Alnum, 30, 60, true),
    key("pplx-", Body::Alnum, 40, 64, true),
    key("xai-", Body::Alnum, 40, 100, true),
    key("ntn_", Body::Alnum, 40, 60, true),
    key("secret_", Body::Alnum, 43, 43, true),
    key("dckr_pat_", Body::Url64, 24, 40, true),
    key("tskey-", Body::Url64, 20, 80, true),
    key("sntrys_", Body::Url64, 40, 400, true),
    key("glc_", Body::Url64, 30, 200, true),
    key("hvs.", Body::Url64, 24, 200, true),
    key("figd_", Body::Url64, 30, 60, true),
    // age secret keys (Bech32, upper case).
    Prefix {
        prefix: "AGE-SECRET-KEY-1",
        kind: SecretKind::PrivateKey,
        body: Body::UpperAlnum,
        min: 50,
        max: 70,
        random: false,
    },
];

/// Characters a key can be written with: base64 (standard and URL), dots between a
/// JWT's parts, dashes and underscores after prefixes.
pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+' | b'/')
}

/// The key detections of one long word: prefixed keys, JWTs, Telegram bot tokens,
/// then random-looking tokens (long ones anywhere, shorter ones after a key word).
pub(super) fn at_word(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    if !scan.wants(SecretKind::ApiKey) && !scan.wants(SecretKind::PrivateKey) {
        return None;
    }
    let mut resume = None;
    if let Some((start, end)) = telegram_bot_token(word.core, word.start) {
        resume = scan.report(SecretKind::ApiKey, start, end);
    }
    let bytes = word.core.as_bytes();
    let mut position = 0;
    while position < bytes.len() {
        if !is_token_byte(bytes[position]) {
            position += 1;
            continue;
        }
        let start = position;
        while position < bytes.len() && is_token_byte(bytes[position]) {
            position += 1;
        }
        // Base64 padding ends a token; any other `=` separates a name from its value.
        while position < bytes.len() && bytes[position] == b'=' && position - start >= 4 {
            position += 1;
        }
        let token = &word.core[start..position];
        if token.len() < MIN_KEY_LEN {
            continue;
        }
        let offset = word.start + start;
        if let Some((kind, len)) = prefixed(token)
            .or_else(|| jwt(token))
            .or_else(|| sendgrid(token))
        {
            resume = scan.report(kind, offset, offset + len).or(resume);
        } else if let Some((piece_start, piece_end)) = random_token(scan, token) {
            resume = scan
                .report(SecretKind::ApiKey, offset + piece_start, offset + piece_end)
                .or(resume);
        }
    }
    resume
}

/// The kind and length of the prefixed key `token` starts with.
fn prefixed(token: &str) -> Option<(SecretKind, usize)> {
    let bytes = token.as_bytes();
    PREFIXES.iter().find_map(|format| {
        let body = token.strip_prefix(format.prefix)?.as_bytes();
        let len = body
            .iter()
            .take(format.max + 1)
            .take_while(|b| format.body.allows(**b))
            .count();
        if len < format.min || len > format.max {
            return None;
        }
        let end = format.prefix.len() + len;
        // A key ends where its characters end: `AKIA` + 16 inside a longer run of
        // upper-case letters is something else.
        if bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let body = &body[..len];
        if format.random && !body_looks_random(body) {
            return None;
        }
        Some((format.kind, end))
    })
}

/// A prefixed key's body: letters mixed with digits (or both cases, as Hugging Face
/// tokens may be) and not made of words (`sk-some-kebab-name`).
fn body_looks_random(body: &[u8]) -> bool {
    let shape = Shape::of(body);
    (shape.digits > 0 || (shape.upper > 0 && shape.lower > 0))
        && shape.letters() > 0
        && shape.wordy_letters * 2 < shape.letters()
}

/// A JSON Web Token: `eyJ` (base64url of `{"`), a payload, and a signature that may be
/// empty; its length.
fn jwt(token: &str) -> Option<(SecretKind, usize)> {
    if !token.starts_with("eyJ") {
        return None;
    }
    let mut parts = token.splitn(4, '.');
    let header = parts.next()?;
    let payload = parts.next()?;
    let signature = parts.next()?;
    let is_url64 = |part: &str| part.bytes().all(|b| Body::Url64.allows(b));
    let valid = header.len() >= 10
        && payload.len() >= 10
        && is_url64(header)
        && is_url64(payload)
        && is_url64(signature);
    valid.then_some((
        SecretKind::ApiKey,
        header.len() + payload.len() + signature.len() + 2,
    ))
}

/// A SendGrid key: `SG.`, 22 base64url characters, `.`, 43 more; its length.
fn sendgrid(token: &str) -> Option<(SecretKind, usize)> {
    let rest = token.strip_prefix("SG.")?;
    let (id, secret) = rest.split_once('.')?;
    let secret_len = secret
        .bytes()
        .take_while(|b| Body::Url64.allows(*b))
        .count();
    let valid = id.len() == 22 && id.bytes().all(|b| Body::Url64.allows(b)) && secret_len == 43;
    valid.then_some((SecretKind::ApiKey, 3 + id.len() + 1 + secret_len))
}

/// `[bot]<8-10 digits>:<30+ base64url>` (a Telegram bot token), as a byte range of the
/// text.
fn telegram_bot_token(core: &str, core_start: usize) -> Option<(usize, usize)> {
    let colon = core.find(':')?;
    let (id, secret) = (&core[..colon], &core[colon + 1..]);
    let digits_start = id.len() - id.bytes().rev().take_while(u8::is_ascii_digit).count();
    let before = &id[..digits_start];
    let id_len = id.len() - digits_start;
    if !(8..=10).contains(&id_len)
        || before.ends_with(|c: char| c.is_ascii_alphanumeric()) && !before.ends_with("bot")
    {
        return None;
    }
    let secret_len = secret
        .bytes()
        .take_while(|b| Body::Url64.allows(*b))
        .count();
    let shape = Shape::of(&secret.as_bytes()[..secret_len]);
    if !(30..=50).contains(&secret_len)
        || secret
            .as_bytes()
            .get(secret_len)
            .is_some_and(u8::is_ascii_alphanumeric)
        || shape.letters() == 0
        || (shape.upper == 0 || shape.lower == 0)
    {
        return None;
    }
    Some((
        core_start + digits_start,
        core_start + colon + 1 + secret_len,
    ))
}

/// The part of `token` that is a random-looking key, by shape alone when long, or
/// next to a key word when shorter; as a byte range of `token`.
fn random_token(scan: &Scan<'_>, token: &str) -> Option<(usize, usize)> {
    // Hash names before a digest (`sha256-...` integrity, `sha512:`) say what follows is
    // a digest, not a secret.
    if starts_with_hash_name(token) {
        return None;
    }
    let trimmed = token.trim_end_matches(['.', '-', '_', '/']);
    // Dots separate domain labels, file names and versions: each piece is judged alone.
    let mut offset = 0;
    for piece in trimmed.split('.') {
        let range = (offset, offset + piece.len());
        offset += piece.len() + 1;
        if piece.len() < CONTEXT_KEY_LEN.min(HEX_KEY_LEN) {
            continue;
        }
        if looks_random(piece.as_bytes(), Standing::Alone) {
            return Some(range);
        }
        let standing = key_context(scan);
        if standing != Standing::Alone && looks_random(piece.as_bytes(), standing) {
            return Some(range);
        }
    }
    None
}

fn starts_with_hash_name(token: &str) -> bool {
    let lower = token.get(..7).unwrap_or(token).to_ascii_lowercase();
    ["sha1", "sha256", "sha384", "sha512", "md5", "sha-"]
        .iter()
        .any(|name| lower.starts_with(name))
}

/// How a candidate key stands in its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// No key word near: only long mixed-case tokens count.
    Alone,
    /// A key word a few words before ("my API key for staging is ...").
    NearKeyWord,
    /// The value a key word introduces ("token: ...", `API_KEY=...`): hex counts too.
    Named,
}

/// Whether the words before the current one name a key, and how closely.
fn key_context(scan: &Scan<'_>) -> Standing {
    let mut only_links_between = true;
    for word in scan.recent.back(scan.text, 4) {
        if word.marker {
            return Standing::Alone;
        }
        if context::of(word.core) & context::KEY != 0 {
            return if only_links_between {
                Standing::Named
            } else {
                Standing::NearKeyWord
            };
        }
        only_links_between &= word.core.is_empty() || context::is_link(word.core);
    }
    Standing::Alone
}

/// Whether a token, with no prefix to go by, looks like a machine-made secret in the
/// given standing.
pub(super) fn looks_random(token: &[u8], standing: Standing) -> bool {
    let shape = Shape::of(token);
    let len = token.len();
    if shape.hex_only {
        return standing == Standing::Named
            && len >= HEX_KEY_LEN
            && shape.digits >= 4
            && shape.letters() >= 4
            && checks::entropy(token) >= 3.0;
    }
    let (min_len, max_wordy) = match standing {
        Standing::Alone => (STANDALONE_KEY_LEN, 0.4),
        Standing::NearKeyWord | Standing::Named => (CONTEXT_KEY_LEN, 0.75),
    };
    if len < min_len || shape.digits == 0 || shape.letters() < 2 {
        return false;
    }
    let mixed_case = shape.upper >= 2 && shape.lower >= 2;
    if standing == Standing::Alone && !(mixed_case && shape.digits >= 2 && shape.symbols == 0) {
        return false;
    }
    if shape.symbols * 5 > len {
        return false;
    }
    let expected_entropy = (len.min(64) as f32).log2() * 0.8;
    checks::entropy(token) >= expected_entropy
        && (shape.wordy_letters as f32) < max_wordy * shape.letters() as f32
        && !is_sequential(token)
        && !is_identifier(token)
        && !is_base64_of_text(token)
}

/// Whether most of `token` runs up or down the alphabet or the digits ("abc123def456",
/// "0123456789abcdef"): how example values are made up, never what a generator gives.
pub(super) fn is_sequential(token: &[u8]) -> bool {
    let mut in_runs = 0;
    let mut run = 1;
    for pair in token.windows(2) {
        let step = i16::from(pair[1]) - i16::from(pair[0]);
        let same_class = pair[0].is_ascii_digit() == pair[1].is_ascii_digit()
            && pair[0].is_ascii_alphanumeric()
            && pair[1].is_ascii_alphanumeric();
        if same_class && step.abs() == 1 {
            run += 1;
        } else {
            if run >= 3 {
                in_runs += run;
            }
            run = 1;
        }
    }
    if run >= 3 {
        in_runs += run;
    }
    in_runs * 2 >= token.len()
}

/// Whether `token` is words and numbers joined by `-`, `_`, `.` or `/`
/// (`not-the-right-token-0123`, `ADR-004-deprecated-by-008`, `build_2024_final`):
/// each piece all digits, or letters in one case pattern.
fn is_identifier(token: &[u8]) -> bool {
    token
        .split(|b| matches!(b, b'-' | b'_' | b'.' | b'/'))
        .filter(|piece| !piece.is_empty())
        .all(|piece| {
            piece.iter().all(u8::is_ascii_digit)
                || case_words(piece).count() == 1 && piece.iter().all(u8::is_ascii_alphabetic)
        })
}

/// Character classes of a token, and how many of its letters sit in word-like runs.
struct Shape {
    digits: usize,
    upper: usize,
    lower: usize,
    symbols: usize,
    hex_only: bool,
    /// Letters in runs of four or more of one case pattern (`word`, `Word`, `WORD`)
    /// with a vowel: how identifiers, paths and prose are written, and rarely what a
    /// random generator gives.
    wordy_letters: usize,
}

impl Shape {
    fn of(token: &[u8]) -> Shape {
        let mut shape = Shape {
            digits: 0,
            upper: 0,
            lower: 0,
            symbols: 0,
            hex_only: true,
            wordy_letters: 0,
        };
        for &b in token {
            match b {
                b'0'..=b'9' => shape.digits += 1,
                b'A'..=b'Z' => shape.upper += 1,
                b'a'..=b'z' => shape.lower += 1,
                _ => shape.symbols += 1,
            }
            if !(b.is_ascii_hexdigit() || b == b'-') {
                shape.hex_only = false;
            }
        }
        shape.wordy_letters = case_words(token)
            .filter(|word| word.len() >= 4 && word.iter().any(|b| is_vowel(*b)))
            .map(<[u8]>::len)
            .sum();
        shape
    }

    fn letters(&self) -> usize {
        self.upper + self.lower
    }
}

fn is_vowel(b: u8) -> bool {
    matches!(
        b.to_ascii_lowercase(),
        b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
    )
}

/// The letter runs of `token` split as identifiers are: `lower`, `Capitalized`, `CAPS`
/// (`HTTPServer` -> `HTTP`, `Server`; `getUserById` -> `get`, `User`, `By`, `Id`).
fn case_words(token: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut position = 0;
    std::iter::from_fn(move || {
        while position < token.len() && !token[position].is_ascii_alphabetic() {
            position += 1;
        }
        let start = position;
        let first = *token.get(position)?;
        position += 1;
        let next_is_lower = token.get(position).is_some_and(u8::is_ascii_lowercase);
        if first.is_ascii_lowercase() || next_is_lower {
            while token.get(position).is_some_and(u8::is_ascii_lowercase) {
                position += 1;
            }
        } else {
            // Capitals up to the one that starts a Capitalized word.
            while token.get(position).is_some_and(u8::is_ascii_uppercase)
                && !token.get(position + 1).is_some_and(u8::is_ascii_lowercase)
            {
                position += 1;
            }
        }
        Some(&token[start..position])
    })
}

/// Whether `token` is base64 of printable text ("SGVsbG8gd29ybGQ=" is "Hello world"):
/// an encoding, not a secret.
fn is_base64_of_text(token: &[u8]) -> bool {
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let data = token
        .strip_suffix(b"==")
        .or_else(|| token.strip_suffix(b"="))
        .unwrap_or(token);
    let mut printable = 0usize;
    let mut decoded = 0usize;
    let mut buffer = 0u32;
    let mut bits = 0;
    for &b in data {
        let Some(v) = value(b) else {
            return false;
        };
        buffer = (buffer << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let byte = (buffer >> bits) & 0xff;
            decoded += 1;
            if (0x20..0x7f).contains(&byte) || byte == u32::from(b'\n') || byte == u32::from(b'\t')
            {
                printable += 1;
            }
        }
    }
    decoded >= 8 && printable * 20 >= decoded * 19
}

/// Secrets inside a URL: the password of `user:password@host`, the values of
/// secret-named query parameters (`?token=`, `api_key=`, `password=`), and prefixed
/// keys in its path (`/bot<token>/`). The rest of a URL is an address, not a secret.
pub(super) fn url(scan: &mut Scan<'_>, word: &Word<'_>) {
    let core = word.core;
    let Some(scheme_end) = core.find("://") else {
        return;
    };
    let rest_start = scheme_end + 3;
    let rest = &core[rest_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    if let Some(at) = authority.rfind('@')
        && let Some(colon) = authority[..at].find(':')
    {
        let password = &authority[colon + 1..at];
        if password.chars().count() >= 4 && !is_placeholder(password) {
            let start = word.start + rest_start + colon + 1;
            scan.report(SecretKind::Password, start, start + password.len());
        }
    }
    let after_authority = rest_start + authority_len;
    let query_start = core[after_authority..]
        .find('?')
        .map(|i| after_authority + i);
    let path_end = query_start.unwrap_or(core.len());
    let path = &core[after_authority..path_end];
    let mut offset = after_authority;
    for segment in path.split('/') {
        let start = word.start + offset;
        offset += segment.len() + 1;
        if let Some((kind, len)) = prefixed(segment) {
            scan.report(kind, start, start + len);
        } else if let Some((token_start, token_end)) = telegram_bot_token(segment, start) {
            scan.report(SecretKind::ApiKey, token_start, token_end);
        }
    }
    let Some(query_start) = query_start else {
        return;
    };
    let query_end = core[query_start..]
        .find('#')
        .map_or(core.len(), |i| query_start + i);
    let mut offset = query_start + 1;
    for pair in core[query_start + 1..query_end].split('&') {
        let pair_start = offset;
        offset += pair.len() + 1;
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let Some(kind) = secret_parameter(name) else {
            continue;
        };
        let value_counts = match kind {
            SecretKind::Password => !is_placeholder(value),
            _ => prefixed(value).is_some() || query_value_looks_secret(value),
        };
        if value_counts {
            let start = word.start + pair_start + name.len() + 1;
            scan.report(kind, start, start + value.len());
        }
    }
}

/// What a query parameter of this name holds, when it is a secret.
fn secret_parameter(name: &str) -> Option<SecretKind> {
    let mut normalized = [0u8; 24];
    let mut len = 0;
    for b in name.bytes().filter(|b| *b != b'_' && *b != b'-') {
        *normalized.get_mut(len)? = b.to_ascii_lowercase();
        len += 1;
    }
    match &normalized[..len] {
        b"password" | b"passwd" | b"pwd" | b"pass" => Some(SecretKind::Password),
        b"token" | b"accesstoken" | b"refreshtoken" | b"idtoken" | b"authtoken" | b"apitoken"
        | b"privatetoken" | b"apikey" | b"key" | b"accesskey" | b"secretkey" | b"secret"
        | b"clientsecret" | b"auth" | b"jwt" | b"sig" | b"signature" | b"xamzsignature"
        | b"xamzcredential" | b"xamzsecuritytoken" | b"sessionid" | b"session" => {
            Some(SecretKind::ApiKey)
        }
        _ => None,
    }
}

/// A query value worth hiding: 6 or more characters with a digit, not a placeholder
/// (`?token={token}`, `?key=sort`).
fn query_value_looks_secret(value: &str) -> bool {
    value.len() >= 6 && value.bytes().any(|b| b.is_ascii_digit()) && !is_placeholder(value)
}

/// Values that stand for a secret without being one: `<password>`, `${DB_PASS}`,
/// `{token}`, `%s`, `****`, `xxx`, `...`, `your-api-key`, `YOUR_API_KEY`, `changeme`.
pub(super) fn is_placeholder(value: &str) -> bool {
    let value = value.trim_matches(|c| matches!(c, '"' | '\'' | '`'));
    if value.is_empty() || value.contains("...") || value.contains('\u{2026}') {
        return true;
    }
    let bytes = value.as_bytes();
    if matches!(bytes[0], b'$' | b'<' | b'{' | b'%' | b'[' | b'(') || value.contains("{{") {
        return true;
    }
    if bytes.iter().all(|b| {
        matches!(
            b,
            b'*' | b'x' | b'X' | b'.' | b'#' | b'_' | b'-' | b'0' | b'?'
        )
    }) {
        return true;
    }
    // An environment variable's name: `YOUR_API_KEY`, `DB_PASSWORD`.
    if bytes.iter().all(|b| b.is_ascii_uppercase() || *b == b'_') && bytes.contains(&b'_') {
        return true;
    }
    let lower = value.to_ascii_lowercase();
    const STAND_IN_STARTS: &[&str] = &[
        "your",
        "my-",
        "my_",
        "example",
        "replace",
        "insert",
        "placeholder",
        "redacted",
        "dummy",
        "env.",
        "os.",
        "process.",
        "config.",
        "settings.",
        "self.",
    ];
    const STAND_INS: &[&str] = &[
        "secret",
        "password",
        "passwd",
        "pass",
        "pwd",
        "token",
        "key",
        "apikey",
        "api_key",
        "api-key",
        "null",
        "none",
        "nil",
        "undefined",
        "string",
        "str",
        "true",
        "false",
    ];
    STAND_IN_STARTS.iter().any(|start| lower.starts_with(start))
        || STAND_INS.contains(&lower.as_str())
}

/// A PEM, OpenSSH or PGP private key block at `word` (`-----BEGIN ... PRIVATE KEY-----`
/// and key material) to its END line, or to the end of the text when there is none.
pub(super) fn private_key_block(scan: &mut Scan<'_>, word: &Word<'_>) -> Option<usize> {
    if !scan.wants(SecretKind::PrivateKey) {
        return None;
    }
    let text = scan.text;
    let start = word.start;
    let after_begin = start + "-----BEGIN".len();
    let label_end = after_begin + text[after_begin..].find("-----")?;
    let label = &text[after_begin..label_end];
    if !label.contains("PRIVATE KEY") || label.len() > 60 || label.contains('\n') {
        return None;
    }
    let body_start = label_end + "-----".len();
    if !has_key_material(&text[body_start..]) {
        return None;
    }
    let end = match text[body_start..].find("-----END") {
        Some(end_line) => {
            let end_label = body_start + end_line + "-----END".len();
            text[end_label..]
                .find("-----")
                .filter(|close| !text[end_label..end_label + close].contains('\n'))
                .map_or(end_label, |close| end_label + close + "-----".len())
        }
        None => text.len(),
    };
    scan.report(SecretKind::PrivateKey, start, end)
}

/// Whether a key block's body (after its BEGIN line) starts with base64 key material,
/// past any `Proc-Type:`/`DEK-Info:`/`Comment:` header lines: a BEGIN line quoted in
/// prose, or followed by `...`, holds no key.
fn has_key_material(body: &str) -> bool {
    for line in body.lines().take(8) {
        let line = line.trim();
        if line.is_empty() || (line.contains(':') && !line.contains(' ')) || line.contains(": ") {
            continue;
        }
        let run = line
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            .count();
        return run >= 16;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let random = |s: &str, standing| looks_random(s.as_bytes(), standing);
        assert!(random(
            "Xb91KqLwT7nR2vPz4MdE8sFhYt6Ga3Nc5Wq0Je2L",
            Standing::Alone
        ));
        assert!(!random("Xb91KqLwT7nR2vPz4MdE8sFh", Standing::Alone));
        assert!(random("Xb91KqLwT7nR2vPz4MdE8sFh", Standing::NearKeyWord));
        assert!(!random(
            "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
            Standing::NearKeyWord
        ));
        assert!(random("3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", Standing::Named));
        assert!(!random(
            "ThisIsAVeryLongIdentifierNameForTesting2024",
            Standing::Alone
        ));
        assert!(!random(
            "SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NA==",
            Standing::Named
        ));
        assert!(!random("abc123def456ghi789jkl012", Standing::Named));
        assert!(!random("not-the-right-token-0123456789", Standing::Named));
        assert!(!random("ADR-004-deprecated-by-008", Standing::NearKeyWord));
    }

    #[test]
    fn placeholders() {
        for value in [
            "<password>",
            "${DB_PASS}",
            "YOUR_API_KEY",
            "****",
            "your-api-key",
            "...",
        ] {
            assert!(is_placeholder(value), "{value}");
        }
        for value in ["hunter2", "BlueMoose#77", "x7Gq2"] {
            assert!(!is_placeholder(value), "{value}");
        }
    }
}

use super::*;

use SecretKind::*;

/// Each finding of every kind as (kind, the text it covers).
fn found(text: &str) -> Vec<(SecretKind, &str)> {
    find(text, KindSet::all())
        .into_iter()
        .map(|f| (f.kind, &text[f.start..f.end]))
        .collect()
}

#[track_caller]
fn assert_finds(text: &str, kind: SecretKind, secret: &str) {
    assert_eq!(found(text), vec![(kind, secret)], "in {text:?}");
}

#[track_caller]
fn assert_clean(text: &str) {
    assert_eq!(found(text), vec![], "in {text:?}");
}

#[test]
fn api_keys_by_prefix() {
    for key in [
        "sk-ant-api03-Xb91KqLwT7nR2vPz4MdE8sFh",
        "ghp_9sLk2Vq8Xw3RtY6uIo0PaSdF4gHjK1zXcV7b",
        "sk-proj-Tq3vX9bLm2Nc8Rk4Wz7Yp1Hd6Gf5Js0A",
        "sk-9fKq2LmXv7Tn4Rb8Wc3Yz6Hd1Gp5Js0AeUi2Oq",
        "github_pat_11AZQX3VY0kR7pLm2Tq9Wn_4vB8cN1dF6gH0jK3sL5zX7wQ2eR9tY4uI8oP1aS6dF3gH5jK7lZ0xC",
        "glpat-x2Yb7Kq9LmN4vT8wRz3P",
        "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAY34FZKBOKMUTVV7A",
        "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        "sk_live_51H8mQzLkT3vX9bYp2Nc8Rk4Wz",
        "rk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
        "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "pypi-AgEIcHlwaS5vcmcCJGE4ZjY2YjU5LTI5MjEtNDRlNi1iMzQzLWY2NjYyMWRjMmZjYQACKlszLCJhOGY2",
        "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",
        "SK2c6b8f3e0a9d4c7b1e5f8a2d6c9b3e07",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ] {
        assert_finds(key, ApiKey, key);
        let sentence = format!("here you go: {key}, thanks");
        assert_finds(&sentence, ApiKey, key);
        let quoted = format!("OPENAI_API_KEY=\"{key}\"");
        assert_finds(&quoted, ApiKey, key);
    }
}

#[test]
fn api_keys_by_context_and_shape() {
    assert_finds(
        "My API key is 9fKq2LmXv7Tn4Rb8Wc3Yz6Hd",
        ApiKey,
        "9fKq2LmXv7Tn4Rb8Wc3Yz6Hd",
    );
    assert_finds(
        "token: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
        ApiKey,
        "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    );
    assert_finds(
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ApiKey,
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    );
    assert_finds(
        "DATADOG_API_KEY=9c1e6a2f4b8d3c7e5a0f2b4d6c8e1a3f",
        ApiKey,
        "9c1e6a2f4b8d3c7e5a0f2b4d6c8e1a3f",
    );
    assert_finds(
        "paste this somewhere safe: Zt4Qx8Lm2Vb7Nc1Rw5Yk9Hp3Gd6Js0AeUi8Oq2WsXz",
        ApiKey,
        "Zt4Qx8Lm2Vb7Nc1Rw5Yk9Hp3Gd6Js0AeUi8Oq2WsXz",
    );
    assert_finds(
        "curl -H \"Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543\" https://api.example.com",
        ApiKey,
        "8f14e45fceea167a5a36dedd4bea2543",
    );
    assert_finds(
        "Authorization: Basic dXNlcjpodW50ZXIy",
        ApiKey,
        "dXNlcjpodW50ZXIy",
    );
}

#[test]
fn secrets_in_urls_are_only_their_values() {
    assert_finds(
        "https://api.example.com/v1/items?token=Xb91KqLwT7nR2vPz&limit=10",
        ApiKey,
        "Xb91KqLwT7nR2vPz",
    );
    assert_finds(
        "see https://example.com/cb?api_key=a8Fk29dLq0&sort=name",
        ApiKey,
        "a8Fk29dLq0",
    );
    assert_finds(
        "https://example.com/login?user=ann&password=hunter2",
        Password,
        "hunter2",
    );
    assert_finds(
        "postgres://admin:S3cretPass@db.internal:5432/app",
        Password,
        "S3cretPass",
    );
    assert_finds(
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe",
        ApiKey,
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    );
    assert_finds(
        "https://api.example.com/v1?api_key=abcd1234efgh5678",
        ApiKey,
        "abcd1234efgh5678",
    );
    assert_clean("https://example.com/search?q=rust&page=2&sort=name");
    assert_clean("https://example.com/cb?token={token}&key=sort");
    assert_clean("postgres://user:password@localhost/db");
    assert_clean(
        "https://drive.google.com/file/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/view",
    );
}

#[test]
fn passwords_given_as_such() {
    assert_finds(
        "The password is BlueMoose#77, is it okay to share with family?",
        Password,
        "BlueMoose#77",
    );
    assert_finds("password: hunter2", Password, "hunter2");
    assert_finds("Password: hunter2.", Password, "hunter2");
    assert_finds("pw hunter2", Password, "hunter2");
    assert_finds("my wifi password is sunshine", Password, "sunshine");
    assert_finds(
        "the wifi password is \"Tr0ub4dor&3\"",
        Password,
        "Tr0ub4dor&3",
    );
    assert_finds("password for the router is Xk9#mP2q", Password, "Xk9#mP2q");
    assert_finds(
        "I changed my password to Summer2024!",
        Password,
        "Summer2024",
    );
    assert_finds("BlueMoose#77 is my wifi password", Password, "BlueMoose#77");
    assert_finds("my pin is 4821", Password, "4821");
    assert_finds("PIN 4821", Password, "4821");
    assert_finds("locker combination: 24-16-38", Password, "24-16-38");
    assert_finds("passcode 7719", Password, "7719");
    assert_finds("My PIN code is 560012", Password, "560012");
    assert_finds(
        "wifi: MyNetwork / pass: Summer2024!",
        Password,
        "Summer2024",
    );
    assert_finds(
        "curl -u admin:Sup3rS3cret! https://example.com",
        Password,
        "Sup3rS3cret",
    );
    assert_finds("DB_PASSWORD=s3cr3t!x", Password, "s3cr3t!x");
    assert_finds("{\"password\": \"hunter2\"}", Password, "hunter2");
    assert_finds(
        "the passphrase is correct horse battery staple, keep it safe",
        Password,
        "correct horse battery staple",
    );
    assert_finds(
        "My seed phrase: abandon ability able about above absent absorb abstract absurd abuse access accident.",
        PrivateKey,
        "abandon ability able about above absent absorb abstract absurd abuse access accident",
    );
}

#[test]
fn password_mentions_without_a_value_are_left() {
    for text in [
        "I forgot my password again",
        "The password is on the fridge",
        "the password is wrong",
        "The password is required.",
        "my password expired yesterday",
        "I use a password manager",
        "click the password reset link",
        "Passwords must be at least 12 characters long",
        "Enter your password:",
        "password: <your password>",
        "password = os.environ[\"DB_PASS\"]",
        "def login(user: str, password: str) -> bool:",
        "conn = connect(password=password)",
        "password=None",
        "DB_PASSWORD=${DB_PASSWORD}",
        "my pin is in the drawer",
        "pin the tab, then pin 3 more",
        "The password is. Well, I forgot.",
        "First pass: outline the chapters",
        "Second pass: Cross-references",
    ] {
        assert_clean(text);
    }
}

#[test]
fn one_time_codes() {
    assert_finds("Google sent me a 2FA code 318552", OneTimeCode, "318552");
    assert_finds("Your verification code is 482913.", OneTimeCode, "482913");
    assert_finds(
        "318552 is your Google verification code",
        OneTimeCode,
        "318552",
    );
    assert_finds("OTP: 9921", OneTimeCode, "9921");
    assert_finds(
        "the sign-in code for Acme is 551 203",
        OneTimeCode,
        "551 203",
    );
    assert_finds("code: A7K9P2", OneTimeCode, "A7K9P2");
    assert_finds(
        "G-318552 is your Google verification code.",
        OneTimeCode,
        "G-318552",
    );
    assert_finds("Use 739201 to verify your account", OneTimeCode, "739201");
    assert_finds("the door code is 4455", OneTimeCode, "4455");
    for text in [
        "my area code is 303",
        "zip code 94103",
        "I wrote 1200 lines of code",
        "it failed with error code 4040",
        "status code 5000",
        "I set up 2FA in 2023",
        "the code review took 2 days",
        "verification took 1500 ms",
        "Use code BOGO25 at checkout",
        "promo code: SUMMER20",
        "I have a pump with the model code HGD567",
        "we moved 2000 boxes to storage",
    ] {
        assert_clean(text);
    }
}

#[test]
fn national_ids() {
    assert_finds("604-38-2217", NationalId, "604-38-2217");
    assert_finds("123-45-6789", NationalId, "123-45-6789");
    assert_finds("my SSN is 604382217", NationalId, "604382217");
    assert_finds(
        "social security number: 604 38 2217",
        NationalId,
        "604 38 2217",
    );
    assert_finds("ITIN 912-70-1234", NationalId, "912-70-1234");
    assert_finds("SIN: 046 454 286", NationalId, "046 454 286");
    assert_finds("NI number AB 12 34 56 C", NationalId, "AB 12 34 56 C");
    assert_finds("national insurance AB123456C", NationalId, "AB123456C");
    assert_finds("Aadhaar 2345 6789 0124", NationalId, "2345 6789 0124");
    assert_finds("CPF 529.982.247-25", NationalId, "529.982.247-25");
    assert_finds("DNI 12345678Z", NationalId, "12345678Z");
    assert_finds("BSN 111222333", NationalId, "111222333");
    assert_finds("PESEL 44051401359", NationalId, "44051401359");
    assert_finds("EIN 12-3456789", NationalId, "12-3456789");
    assert_finds("passport number is 533380006", NationalId, "533380006");
    assert_finds("passport no. 533380006", NationalId, "533380006");
    assert_finds("my passport: X1234567", NationalId, "X1234567");
    for text in [
        "000-12-3456",
        "666-12-3456",
        "912-12-3456",
        "123-00-4567",
        "order 604382217 shipped",
        "ssn 666382217",
        "AB123456C",
        "QQ 12 34 56 C",
        "12345678Z",
        "DNI 12345678A",
        "my passport expires in 2027",
    ] {
        assert_clean(text);
    }
}

#[test]
fn phone_numbers_are_not_ids() {
    for text in [
        "call me at 303-555-0176",
        "+1 (415) 555-2671",
        "555-0101",
        "my number is 415 555 2671",
        "phone: 4155552671",
        "+44 20 7946 0958",
        "ring 0301 234 5678 after six",
    ] {
        assert_clean(text);
    }
}

#[test]
fn cards() {
    for card in [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "3782 822463 10005",
        "5555555555554444",
        "6011 1111 1111 1117",
    ] {
        assert_finds(card, Card, card);
    }
    assert_finds("my card 4716 2035 9981 0042", Card, "4716 2035 9981 0042");
    assert_finds(
        "use 4716 2035 9981 0042, expires 03/27",
        Card,
        "4716 2035 9981 0042",
    );
    assert_eq!(
        found("visa 4111 1111 1111 1111, CVV: 123"),
        vec![(Card, "4111 1111 1111 1111"), (Card, "123")]
    );
    for text in [
        "4111 1111 1111 1112",
        "4716 2035 9981 0042",
        "1234 5678 9012 3456",
        "order 1234567890123452",
        "tracking 4716203599810043",
        "1700000000000",
    ] {
        assert_clean(text);
    }
}

#[test]
fn ibans() {
    for iban in [
        "DE27 1007 7777 0209 2997 00",
        "GB82WEST12345698765432",
        "GB82 WEST 1234 5698 7654 32",
        "FR14 2004 1010 0505 0001 3M02 606",
        "NL91ABNA0417164300",
    ] {
        assert_finds(iban, Iban, iban);
        assert_finds(&format!("IBAN: {iban}."), Iban, iban);
    }
    assert_clean("DE28 1007 7777 0209 2997 00");
    assert_clean("GB82 WEST 1234 5698 7654 33");
    assert_clean("DE27 is the room number");
}

#[test]
fn private_keys() {
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----";
    assert_finds(&format!("here is the key:\n{pem}\nthanks"), PrivateKey, pem);
    let unterminated = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDGnG";
    assert_finds(unterminated, PrivateKey, unterminated);
    let flat =
        "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC -----END PRIVATE KEY-----";
    assert_finds(flat, PrivateKey, flat);
    let age = "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS";
    assert_finds(age, PrivateKey, age);
    assert_clean("Never commit files that start with -----BEGIN RSA PRIVATE KEY----- to git.");
    assert_clean("-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----");
    assert_clean(
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    );
}

#[test]
fn ordinary_text_is_left_alone() {
    for text in [
        "2024-05-01",
        "on 03/27/2024 we met",
        "December 2 at 14:30",
        "see you at 10:45am",
        "it cost $3,000",
        "she makes $40k a year",
        "only €19.99",
        "1,250.50 in total",
        "42",
        "1000000 people",
        "back in 1999",
        "zip 94103",
        "order #123456",
        "v1.2.3",
        "version 0.11.0",
        "commit e83c5163316f89bfbde7d9ab23ca2e25604af290",
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "MAX_MESSAGE_BYTES",
        "getUserById",
        "some-kebab-name",
        "ThisIsAVeryLongIdentifierNameForTheUserInterface2024",
        "https://github.com/rust-lang/rust/blob/master/src/README.md",
        "john.doe@example.com",
        "/usr/local/lib/python3.11/site-packages/numpy/core/__init__.py",
        "SGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NA==",
        "the key takeaway is to rest",
        "my token of appreciation",
        "integrity sha512-Q2FuIHlvdSBrZWVwIGEgc2VjcmV0PyBJIHRoaW5rIHlvdSBjYW4ga2VlcCBhIHNlY3JldC4=",
        "sk-learn is a library",
        "antidisestablishmentarianism",
        "www.example-domain-with-a-long-name.co.uk",
    ] {
        assert_clean(text);
    }
}

#[test]
fn redaction_replaces_each_finding_with_its_marker() {
    let text = "The password is BlueMoose#77, card 4111 1111 1111 1111.";
    let redacted = redact(text, KindSet::all());
    assert_eq!(
        redacted.text,
        "The password is [redacted: password], card [redacted: card]."
    );
    assert_eq!(redacted.found, vec![Password, Card]);
    let plain = "nothing to see here";
    assert!(matches!(
        redact(plain, KindSet::all()).text,
        Cow::Borrowed(_)
    ));
}

#[test]
fn redaction_is_idempotent() {
    for text in [
        "The password is BlueMoose#77, is it okay to share with family?",
        "password: hunter2 and the api key sk-ant-api03-Xb91KqLwT7nR2vPz4MdE8sFh",
        "my SSN is 604-38-2217 and my card 4111 1111 1111 1111",
        "the passphrase is correct horse battery staple",
        "token: [redacted: api-key] and password is [redacted: password]",
        "Google sent me a 2FA code 318552",
        "IBAN DE27 1007 7777 0209 2997 00, BIC DEUTDEFF",
        "BlueMoose#77 is my wifi password",
    ] {
        let once = redact(text, KindSet::all()).text.into_owned();
        let twice = redact(&once, KindSet::all());
        assert_eq!(twice.text, once, "from {text:?}");
        assert!(
            twice.found.is_empty(),
            "{once:?} found again: {:?}",
            twice.found
        );
    }
}

#[test]
fn secret_naming_words_are_sorted() {
    assert!(SECRET_NAMING_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
}

#[test]
fn only_secret() {
    let all = KindSet::all();
    assert_eq!(
        found("User's password is hunter2"),
        vec![(Password, "hunter2")]
    );
    assert!(is_only_secret(
        "ghp_9sLk2Vq8Xw3RtY6uIo0PaSdF4gHjK1zXcV7b",
        all
    ));
    assert!(is_only_secret("User's password is hunter2", all));
    assert!(is_only_secret(
        "User's social security number is 604-38-2217",
        all
    ));
    assert!(is_only_secret("my card 4716 2035 9981 0042", all));
    assert!(is_only_secret("The 2FA code is 318552.", all));
    assert!(is_only_secret("User's Visa is 4111 1111 1111 1111", all));
    assert!(is_only_secret("User's passport number is 533380006", all));
    assert!(!is_only_secret(
        "My parents want the Netflix login. The password is BlueMoose#77",
        all
    ));
    assert!(!is_only_secret("User likes green tea", all));
    assert!(!is_only_secret(
        "User's wifi password at the cabin is BlueMoose#77",
        all
    ));
    assert!(!is_only_secret(
        "User's password is hunter2",
        all.without(Password)
    ));
}

#[test]
fn kinds_can_be_turned_off() {
    let text =
        "card 4111 1111 1111 1111, ssn 604-38-2217, key sk-ant-api03-Xb91KqLwT7nR2vPz4MdE8sFh";
    let kinds =
        |set: KindSet| -> Vec<SecretKind> { find(text, set).iter().map(|f| f.kind).collect() };
    assert_eq!(kinds(KindSet::all()), vec![Card, NationalId, ApiKey]);
    assert_eq!(
        kinds(KindSet::all().without(Card)),
        vec![NationalId, ApiKey]
    );
    assert_eq!(kinds(KindSet::none().with(ApiKey)), vec![ApiKey]);
    assert!(find(text, KindSet::none()).is_empty());
    assert_eq!(KindSet::all().iter().count(), SecretKind::ALL.len());
    for kind in SecretKind::ALL {
        assert_eq!(SecretKind::parse(kind.as_str()), Some(kind));
        assert_eq!(marker(kind), format!("[redacted: {kind}]"));
    }
    assert_eq!(SecretKind::parse("ssn"), None);
}

#[test]
fn offsets_are_bytes_of_the_original_text() {
    let text = "Grüße aus München! Das Passwort… password: Grüße#42 ✓ und 🔑 sk-ant-api03-Xb91KqLwT7nR2vPz4MdE8sFh»";
    assert_eq!(
        found(text),
        vec![
            (Password, "Grüße#42"),
            (ApiKey, "sk-ant-api03-Xb91KqLwT7nR2vPz4MdE8sFh")
        ]
    );
    let redacted = redact(text, KindSet::all());
    assert!(redacted.text.ends_with("[redacted: api-key]»"));
}

/// SplitMix64, for arbitrary inputs that are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn arbitrary_input_neither_panics_nor_takes_long() {
    const PIECES: &[&str] = &[
        " ",
        "  ",
        "\n",
        "-",
        "--",
        "-----BEGIN",
        " PRIVATE KEY-----",
        "-----END",
        ":",
        "=",
        "://",
        "@",
        "?",
        "&",
        "#",
        ".",
        ",",
        "/",
        "'s",
        "\"",
        "[redacted: ",
        "]",
        "password",
        "is",
        "pin",
        "code",
        "2FA",
        "SSN",
        "key",
        "token",
        "Bearer",
        "seed",
        "phrase",
        "sk-",
        "ghp_",
        "AKIA",
        "eyJ",
        "AB",
        "DE27",
        "4111",
        "1111",
        "604",
        "38",
        "2217",
        "0",
        "9",
        "12345678",
        "Z",
        "é",
        "ü",
        "🔑",
        "\u{2019}",
        "\u{201c}",
        "»",
        "a",
        "Xb91KqLw",
        "https://x.io/?token=",
        "user:",
        "pw",
        "passphrase",
        "CVV",
        "IBAN",
        "AGE-SECRET-KEY-1",
        "hunter",
        "Moose#",
        "_",
        "DB_",
        "PASSWORD",
        "mnemonic",
        "Authorization",
        "Basic",
        "dXNlcjpodW50ZXI=",
        "\\n",
        "camelPassword",
        "xyzw",
        "QRST",
    ];
    let without_digits: Vec<&str> = PIECES
        .iter()
        .copied()
        .filter(|piece| !piece.bytes().any(|b| b.is_ascii_digit()))
        .collect();
    let mut rng = Rng(7);
    let started = std::time::Instant::now();
    for round in 0..6_000 {
        // Half the texts have no digit, so that the first pass is what rules them out.
        let pieces = if round % 2 == 0 {
            PIECES
        } else {
            &without_digits[..]
        };
        let mut text = String::new();
        for _ in 0..rng.below(60) {
            text.push_str(pieces[rng.below(pieces.len())]);
        }
        let findings = find(&text, KindSet::all());
        if !scan::may_hold_secret(&text) {
            assert_eq!(find_in_words(&text, KindSet::all()), vec![], "{text:?}");
        }
        for pair in findings.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{text:?}: {findings:?}");
        }
        for f in &findings {
            assert!(
                f.start < f.end && text.is_char_boundary(f.start) && text.is_char_boundary(f.end)
            );
        }
        let once = redact(&text, KindSet::all()).text.into_owned();
        assert_eq!(redact(&once, KindSet::all()).text, once, "from {text:?}");
        let _ = is_only_secret(&text, KindSet::all());
    }
    // A long text of digits and separators, the worst case for the number groups.
    let long: String = (0..20_000)
        .map(|i| if i % 5 == 4 { ' ' } else { '7' })
        .collect();
    let _ = find(&long, KindSet::all());
    let long_word = "a".repeat(200_000);
    let _ = find(&long_word, KindSet::all());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// The registry mirror's 136 SKILL.md texts: every finding, each a value given as the
/// secret it looks like (documented test card numbers and a CVC filled into a payment
/// form, a literal assigned to `password`), none of them prose or code mistaken for a
/// secret.
#[test]
fn registry_mirror_findings_are_the_known_ones() {
    let categories = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/registry-mirror/categories");
    let mut skills = 0;
    let mut findings = Vec::new();
    let mut categories_read: Vec<_> = std::fs::read_dir(&categories)
        .expect("the registry mirror fixture")
        .map(|entry| entry.expect("a category").path())
        .collect();
    categories_read.sort();
    for category in categories_read {
        let mut skill_dirs: Vec<_> = std::fs::read_dir(&category)
            .expect("a category directory")
            .map(|entry| entry.expect("a skill").path())
            .collect();
        skill_dirs.sort();
        for skill in skill_dirs {
            let text = std::fs::read_to_string(skill.join("SKILL.md")).expect("a SKILL.md");
            skills += 1;
            let name = skill
                .strip_prefix(&categories)
                .expect("under categories")
                .display()
                .to_string();
            for finding in find(&text, KindSet::all()) {
                findings.push((
                    name.clone(),
                    finding.kind,
                    text[finding.start..finding.end].to_string(),
                ));
            }
        }
    }
    assert_eq!(skills, 136);
    let expected = [
        // Visa and Mastercard test numbers in a list of "known-good card numbers".
        ("development/debugging-mastery", Card, "4111111111111111"),
        ("development/debugging-mastery", Card, "5500000000000004"),
        // A test card and its CVC typed into a checkout form by a browser test.
        ("development/testing-strategies", Card, "4111111111111111"),
        ("development/testing-strategies", Card, "123"),
        // Stripe's test Visa typed into a checkout form.
        ("frontend/frontend-testing", Card, "4242 4242 4242 4242"),
        // `password = b"super_secret_password123"`: a password literal in code.
        (
            "security/secure-coding",
            Password,
            "super_secret_password123",
        ),
    ];
    let expected: Vec<(String, SecretKind, String)> = expected
        .iter()
        .map(|(skill, kind, text)| (skill.to_string(), *kind, text.to_string()))
        .collect();
    assert_eq!(findings, expected);
}

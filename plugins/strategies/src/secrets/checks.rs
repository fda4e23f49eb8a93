//! Check digits and numbering rules: what makes a run of digits a card number, an
//! IBAN or a national id rather than any number of that length. Digits are passed as
//! values 0..=9.

/// The Luhn (mod 10) check: cards, Canadian SINs.
pub(super) fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(index, &digit)| {
            let digit = u32::from(digit);
            if index % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

fn number(digits: &[u8]) -> u64 {
    digits.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d))
    })
}

/// A payment card number: 13 to 19 digits, Luhn-valid, with an issuer's prefix and a
/// length that issuer uses.
pub(super) fn card_number_valid(digits: &[u8]) -> bool {
    card_prefix_valid(digits) && luhn_valid(digits)
}

/// Whether 13 to 19 digits start with a card issuer's prefix (Visa, Mastercard, Amex,
/// Discover, Diners, JCB, UnionPay, Maestro, Mir, RuPay) and have a length that issuer
/// uses.
pub(super) fn card_prefix_valid(digits: &[u8]) -> bool {
    let len = digits.len();
    if !(13..=19).contains(&len) {
        return false;
    }
    let prefix = |n: usize| number(&digits[..n.min(len)]);
    match digits[0] {
        4 => matches!(len, 13 | 16 | 19),
        2 => {
            let p4 = prefix(4);
            ((2221..=2720).contains(&p4) && len == 16) || ((2200..=2204).contains(&p4) && len >= 16)
        }
        3 => {
            let p2 = prefix(2);
            let p3 = prefix(3);
            let p4 = prefix(4);
            ((p2 == 34 || p2 == 37) && len == 15)
                || (((300..=305).contains(&p3) || p2 == 36 || p2 == 38 || p2 == 39) && len >= 14)
                || ((3528..=3589).contains(&p4) && len >= 16)
        }
        5 => {
            let p2 = prefix(2);
            ((51..=55).contains(&p2) && len == 16) || ((50..=58).contains(&p2) && len >= 13)
        }
        6 => len >= 13,
        8 => matches!(prefix(2), 81 | 82) && len == 16,
        _ => false,
    }
}

/// IBAN lengths by country (the SWIFT IBAN registry).
const IBAN_LENGTHS: &[(&[u8; 2], usize)] = &[
    (b"AD", 24),
    (b"AE", 23),
    (b"AL", 28),
    (b"AT", 20),
    (b"AZ", 28),
    (b"BA", 20),
    (b"BE", 16),
    (b"BG", 22),
    (b"BH", 22),
    (b"BI", 27),
    (b"BR", 29),
    (b"BY", 28),
    (b"CH", 21),
    (b"CR", 22),
    (b"CY", 28),
    (b"CZ", 24),
    (b"DE", 22),
    (b"DJ", 27),
    (b"DK", 18),
    (b"DO", 28),
    (b"EE", 20),
    (b"EG", 29),
    (b"ES", 24),
    (b"FI", 18),
    (b"FK", 18),
    (b"FO", 18),
    (b"FR", 27),
    (b"GB", 22),
    (b"GE", 22),
    (b"GI", 23),
    (b"GL", 18),
    (b"GR", 27),
    (b"GT", 28),
    (b"HN", 28),
    (b"HR", 21),
    (b"HU", 28),
    (b"IE", 22),
    (b"IL", 23),
    (b"IQ", 23),
    (b"IS", 26),
    (b"IT", 27),
    (b"JO", 30),
    (b"KW", 30),
    (b"KZ", 20),
    (b"LB", 28),
    (b"LC", 32),
    (b"LI", 21),
    (b"LT", 20),
    (b"LU", 20),
    (b"LV", 21),
    (b"LY", 25),
    (b"MC", 27),
    (b"MD", 24),
    (b"ME", 22),
    (b"MK", 19),
    (b"MN", 20),
    (b"MR", 27),
    (b"MT", 31),
    (b"MU", 30),
    (b"NI", 28),
    (b"NL", 18),
    (b"NO", 15),
    (b"OM", 23),
    (b"PK", 24),
    (b"PL", 28),
    (b"PS", 29),
    (b"PT", 25),
    (b"QA", 29),
    (b"RO", 24),
    (b"RS", 22),
    (b"RU", 33),
    (b"SA", 24),
    (b"SC", 31),
    (b"SD", 18),
    (b"SE", 24),
    (b"SI", 19),
    (b"SK", 24),
    (b"SM", 27),
    (b"SO", 23),
    (b"ST", 25),
    (b"SV", 28),
    (b"TL", 23),
    (b"TN", 24),
    (b"TR", 26),
    (b"UA", 29),
    (b"VA", 22),
    (b"VG", 24),
    (b"XK", 20),
    (b"YE", 30),
];

/// The length of an IBAN of this country, if it has IBANs.
pub(super) fn iban_length(country: [u8; 2]) -> Option<usize> {
    IBAN_LENGTHS
        .binary_search_by(|(code, _)| code.as_slice().cmp(country.as_slice()))
        .ok()
        .map(|index| IBAN_LENGTHS[index].1)
}

/// ISO 13616: the first four characters moved to the end, letters as 10..=35, the
/// number mod 97 is 1. `iban` is upper-case letters and digits only.
pub(super) fn iban_valid(iban: &[u8]) -> bool {
    if iban.len() < 5 || !iban.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    let (head, rest) = iban.split_at(4);
    let mut remainder: u32 = 0;
    for &c in rest.iter().chain(head) {
        let value = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

/// A US social security number as the SSA issues them: area not 000, 666 or 900-999,
/// group not 00, serial not 0000.
pub(super) fn ssn_valid(area: u32, group: u32, serial: u32) -> bool {
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

/// A US ITIN: area 900-999, group 50-65, 70-88, 90-92 or 94-99.
pub(super) fn itin_valid(area: u32, group: u32, serial: u32) -> bool {
    (900..=999).contains(&area)
        && matches!(group, 50..=65 | 70..=88 | 90..=92 | 94..=99)
        && serial != 0
}

/// The SSN or ITIN rules over 9 digits.
pub(super) fn ssn_digits_valid(digits: &[u8]) -> bool {
    if digits.len() != 9 {
        return false;
    }
    let area = number(&digits[..3]) as u32;
    let group = number(&digits[3..5]) as u32;
    let serial = number(&digits[5..]) as u32;
    ssn_valid(area, group, serial) || itin_valid(area, group, serial)
}

/// A Canadian social insurance number: 9 digits, Luhn. (0 starts only the fictitious
/// ones of examples, which are still written as a SIN.)
pub(super) fn sin_valid(digits: &[u8]) -> bool {
    digits.len() == 9 && luhn_valid(digits)
}

/// A Dutch BSN: 9 digits, 9*d1 + 8*d2 + ... + 2*d8 - d9 divisible by 11, not zero.
pub(super) fn bsn_valid(digits: &[u8]) -> bool {
    if digits.len() != 9 || digits.iter().all(|&d| d == 0) {
        return false;
    }
    let sum: i32 = digits
        .iter()
        .zip([9, 8, 7, 6, 5, 4, 3, 2, -1])
        .map(|(&d, weight)| i32::from(d) * weight)
        .sum();
    sum % 11 == 0
}

/// A Brazilian CPF: 11 digits, two mod-11 check digits, not all the same digit.
pub(super) fn cpf_valid(digits: &[u8]) -> bool {
    if digits.len() != 11 || digits.iter().all(|&d| d == digits[0]) {
        return false;
    }
    let check = |count: usize| -> u8 {
        let sum: u32 = digits[..count]
            .iter()
            .zip((2..=count as u32 + 1).rev())
            .map(|(&d, weight)| u32::from(d) * weight)
            .sum();
        ((sum * 10) % 11 % 10) as u8
    };
    check(9) == digits[9] && check(10) == digits[10]
}

/// A Polish PESEL: 11 digits, weights 1 3 7 9 1 3 7 9 1 3, then the check digit.
pub(super) fn pesel_valid(digits: &[u8]) -> bool {
    if digits.len() != 11 {
        return false;
    }
    let sum: u32 = digits[..10]
        .iter()
        .zip([1, 3, 7, 9, 1, 3, 7, 9, 1, 3])
        .map(|(&d, weight)| u32::from(d) * weight)
        .sum();
    (10 - sum % 10) % 10 == u32::from(digits[10])
}

/// A Spanish DNI (8 digits) or NIE (X, Y or Z and 7 digits) and its control letter.
pub(super) fn dni_valid(number_part: &[u8], letter: u8) -> bool {
    const LETTERS: &[u8; 23] = b"TRWAGMYFPDXBNJZSQVHLCKE";
    let (lead, digits) = match number_part.first() {
        Some(b'X') => (0, &number_part[1..]),
        Some(b'Y') => (1, &number_part[1..]),
        Some(b'Z') => (2, &number_part[1..]),
        _ => (0, number_part),
    };
    let expected_digits = if digits.len() == number_part.len() {
        8
    } else {
        7
    };
    if digits.len() != expected_digits || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let value = digits
        .iter()
        .fold(lead, |n: u64, &d| n * 10 + u64::from(d - b'0'));
    LETTERS[(value % 23) as usize] == letter
}

/// A UK National Insurance number: two prefix letters (neither D, F, I, Q, U, V, the
/// second not O, and not BG, GB, KN, NK, NT, TN, ZZ), six digits, suffix A to D.
pub(super) fn nino_valid(prefix: [u8; 2], suffix: u8) -> bool {
    let [first, second] = prefix;
    first.is_ascii_uppercase()
        && second.is_ascii_uppercase()
        && !b"DFIQUV".contains(&first)
        && !b"DFIOQUV".contains(&second)
        && !matches!(
            &prefix,
            b"BG" | b"GB" | b"KN" | b"NK" | b"NT" | b"TN" | b"ZZ"
        )
        && (b'A'..=b'D').contains(&suffix)
}

/// The Verhoeff check (Indian Aadhaar numbers).
pub(super) fn verhoeff_valid(digits: &[u8]) -> bool {
    const MULTIPLY: [[u8; 10]; 10] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
        [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
        [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
        [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
        [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
        [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    ];
    const PERMUTE: [[u8; 10]; 8] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
        [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
        [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
        [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
        [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
    ];
    let check = digits.iter().rev().enumerate().fold(0u8, |c, (index, &d)| {
        MULTIPLY[usize::from(c)][usize::from(PERMUTE[index % 8][usize::from(d % 10)])]
    });
    !digits.is_empty() && check == 0
}

/// An Aadhaar number: 12 digits, not starting with 0 or 1, Verhoeff-valid.
pub(super) fn aadhaar_valid(digits: &[u8]) -> bool {
    digits.len() == 12 && digits[0] >= 2 && verhoeff_valid(digits)
}

/// Shannon entropy of the bytes of `token`, in bits per byte.
pub(super) fn entropy(token: &[u8]) -> f32 {
    if token.is_empty() {
        return 0.0;
    }
    let mut counts = [0u16; 128];
    let mut other = 0u16;
    for &b in token {
        match counts.get_mut(usize::from(b)) {
            Some(count) => *count = count.saturating_add(1),
            None => other = other.saturating_add(1),
        }
    }
    let total = token.len() as f32;
    counts
        .iter()
        .chain(std::iter::once(&other))
        .filter(|&&count| count > 0)
        .map(|&count| {
            let p = f32::from(count) / total;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(s: &str) -> Vec<u8> {
        s.bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| b - b'0')
            .collect()
    }

    #[test]
    fn luhn_and_cards() {
        assert!(card_number_valid(&digits("4716 2035 9981 0048")));
        assert!(card_prefix_valid(&digits("4716 2035 9981 0042")));
        assert!(!luhn_valid(&digits("4716 2035 9981 0042")));
        assert!(card_number_valid(&digits("4111 1111 1111 1111")));
        assert!(card_number_valid(&digits("5555 5555 5555 4444")));
        assert!(card_number_valid(&digits("3782 822463 10005")));
        assert!(card_number_valid(&digits("6011 1111 1111 1117")));
        assert!(card_number_valid(&digits("3530 1113 3330 0000")));
        assert!(card_number_valid(&digits("2223 0031 2200 3222")));
        assert!(!card_number_valid(&digits("4716 2035 9981 0043")));
        assert!(!card_number_valid(&digits("1234 5678 9012 3452")));
        assert!(!card_number_valid(&digits("4111 1111 1111 111")));
    }

    #[test]
    fn ibans() {
        let iban = |s: &str| s.bytes().filter(|b| *b != b' ').collect::<Vec<u8>>();
        assert!(iban_valid(&iban("DE27 1007 7777 0209 2997 00")));
        assert!(iban_valid(&iban("GB82 WEST 1234 5698 7654 32")));
        assert!(iban_valid(&iban("FR14 2004 1010 0505 0001 3M02 606")));
        assert!(!iban_valid(&iban("DE28 1007 7777 0209 2997 00")));
        assert_eq!(iban_length(*b"DE"), Some(22));
        assert_eq!(iban_length(*b"US"), None);
        assert!(IBAN_LENGTHS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn national_ids() {
        assert!(ssn_digits_valid(&digits("604-38-2217")));
        assert!(ssn_digits_valid(&digits("123-45-6789")));
        assert!(ssn_digits_valid(&digits("912-70-1234")));
        assert!(!ssn_digits_valid(&digits("000-12-3456")));
        assert!(!ssn_digits_valid(&digits("666-12-3456")));
        assert!(!ssn_digits_valid(&digits("912-12-3456")));
        assert!(!ssn_digits_valid(&digits("123-00-4567")));
        assert!(!ssn_digits_valid(&digits("123-45-0000")));
        assert!(sin_valid(&digits("046 454 286")));
        assert!(!sin_valid(&digits("046 454 287")));
        assert!(bsn_valid(&digits("111222333")));
        assert!(!bsn_valid(&digits("111222334")));
        assert!(cpf_valid(&digits("529.982.247-25")));
        assert!(!cpf_valid(&digits("529.982.247-26")));
        assert!(!cpf_valid(&digits("111.111.111-11")));
        assert!(pesel_valid(&digits("44051401359")));
        assert!(!pesel_valid(&digits("44051401358")));
        assert!(dni_valid(b"12345678", b'Z'));
        assert!(!dni_valid(b"12345678", b'A'));
        assert!(dni_valid(b"X1234567", b'L'));
        assert!(nino_valid(*b"AB", b'C'));
        assert!(!nino_valid(*b"QQ", b'C'));
        assert!(!nino_valid(*b"GB", b'A'));
        assert!(!nino_valid(*b"AB", b'E'));
        assert!(aadhaar_valid(&digits("2345 6789 0124")));
        assert!(!aadhaar_valid(&digits("2345 6789 0123")));
        assert!(verhoeff_valid(&digits("2363")));
    }

    #[test]
    fn entropy_of_tokens() {
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-6);
    }
}

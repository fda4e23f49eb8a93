//! The Porter (1980) suffix-stripping algorithm, steps 1a to 5, on lowercase ASCII
//! bytes. `super::stem` decides which words reach it.

fn is_consonant(w: &[u8], i: usize) -> bool {
    match w[i] {
        b'a' | b'e' | b'i' | b'o' | b'u' => false,
        b'y' => i == 0 || !is_consonant(w, i - 1),
        _ => true,
    }
}

/// The number of vowel-consonant sequences in `w`.
fn measure(w: &[u8]) -> usize {
    let n = w.len();
    let mut i = 0;
    while i < n && is_consonant(w, i) {
        i += 1;
    }
    let mut m = 0;
    while i < n {
        while i < n && !is_consonant(w, i) {
            i += 1;
        }
        if i >= n {
            break;
        }
        while i < n && is_consonant(w, i) {
            i += 1;
        }
        m += 1;
    }
    m
}

fn has_vowel(w: &[u8]) -> bool {
    (0..w.len()).any(|i| !is_consonant(w, i))
}

fn double_consonant(w: &[u8]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1)
}

/// consonant-vowel-consonant, the last not w, x or y.
fn cvc(w: &[u8]) -> bool {
    let n = w.len();
    n >= 3
        && is_consonant(w, n - 3)
        && !is_consonant(w, n - 2)
        && is_consonant(w, n - 1)
        && !matches!(w[n - 1], b'w' | b'x' | b'y')
}

fn ends(w: &[u8], suffix: &str) -> bool {
    w.ends_with(suffix.as_bytes())
}

fn replace(w: &mut Vec<u8>, suffix: &str, with: &str) {
    w.truncate(w.len() - suffix.len());
    w.extend_from_slice(with.as_bytes());
}

/// Step 1a keeps the final "s" of words in "us" and "is" as well as "ss": those are
/// singulars ("bus", "status", "analysis", "tennis"), not plurals, and Porter's plain
/// rule would cut them to "bu" and "statu".
pub(super) fn step1ab(w: &mut Vec<u8>) {
    if ends(w, "sses") || ends(w, "ies") {
        w.truncate(w.len() - 2);
    } else if ends(w, "s") && !(ends(w, "ss") || ends(w, "us") || ends(w, "is")) {
        w.pop();
    }
    let mut again = false;
    if ends(w, "eed") {
        if measure(&w[..w.len() - 3]) > 0 {
            w.pop();
        }
    } else if ends(w, "ed") && has_vowel(&w[..w.len() - 2]) {
        w.truncate(w.len() - 2);
        again = true;
    } else if ends(w, "ing") && has_vowel(&w[..w.len() - 3]) {
        w.truncate(w.len() - 3);
        again = true;
    }
    if again {
        if ends(w, "at") || ends(w, "bl") || ends(w, "iz") {
            w.push(b'e');
        } else if double_consonant(w) && !matches!(w[w.len() - 1], b'l' | b's' | b'z') {
            w.pop();
        } else if measure(w) == 1 && cvc(w) {
            w.push(b'e');
        }
    }
}

pub(super) fn step1c(w: &mut [u8]) {
    let n = w.len();
    if n > 1 && w[n - 1] == b'y' && has_vowel(&w[..n - 1]) {
        w[n - 1] = b'i';
    }
}

fn rule_list(w: &mut Vec<u8>, rules: &[(&str, &str)]) {
    for (suffix, with) in rules {
        if ends(w, suffix) {
            if measure(&w[..w.len() - suffix.len()]) > 0 {
                replace(w, suffix, with);
            }
            return;
        }
    }
}

pub(super) fn step2(w: &mut Vec<u8>) {
    rule_list(
        w,
        &[
            ("ational", "ate"),
            ("tional", "tion"),
            ("enci", "ence"),
            ("anci", "ance"),
            ("izer", "ize"),
            ("abli", "able"),
            ("alli", "al"),
            ("entli", "ent"),
            ("eli", "e"),
            ("ousli", "ous"),
            ("ization", "ize"),
            ("ation", "ate"),
            ("ator", "ate"),
            ("alism", "al"),
            ("iveness", "ive"),
            ("fulness", "ful"),
            ("ousness", "ous"),
            ("aliti", "al"),
            ("iviti", "ive"),
            ("biliti", "ble"),
        ],
    );
}

pub(super) fn step3(w: &mut Vec<u8>) {
    rule_list(
        w,
        &[
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ],
    );
}

pub(super) fn step4(w: &mut Vec<u8>) {
    const SUFFIXES: [&str; 19] = [
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
        "ou", "ism", "ate", "iti", "ous", "ive", "ize",
    ];
    for suffix in SUFFIXES {
        if ends(w, suffix) {
            let stem = &w[..w.len() - suffix.len()];
            if measure(stem) > 1 && (suffix != "ion" || matches!(stem.last(), Some(b's' | b't'))) {
                w.truncate(stem.len());
            }
            return;
        }
    }
}

pub(super) fn step5(w: &mut Vec<u8>) {
    if ends(w, "e") {
        let stem = &w[..w.len() - 1];
        let m = measure(stem);
        if m > 1 || (m == 1 && !cvc(stem)) {
            w.pop();
        }
    }
    if measure(w) > 1 && double_consonant(w) && w[w.len() - 1] == b'l' {
        w.pop();
    }
}

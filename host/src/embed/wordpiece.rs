//! WordPiece tokenisation, as BERT's uncased tokenizer does it (the tokenizer of
//! all-MiniLM-L6-v2, whose distilled table [`super`] looks tokens up in).
//!
//! Basic step: control characters are dropped, text is lowercased, common accented
//! Latin letters are folded to their base letter (BERT strips accents through NFD;
//! this covers Latin-1 and Latin Extended-A, which is what a routing request needs),
//! CJK ideographs become words of their own, and every punctuation character is a
//! word of its own. Then each word is split greedily, longest match first, into
//! vocabulary pieces, continuation pieces prefixed with `##`; a word with a part no
//! piece covers (or longer than 100 characters) is `[UNK]` as a whole.

use std::collections::HashMap;

/// Longer words are `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary: one token a line, the line number is the id.
#[derive(Debug)]
pub struct WordPiece {
    ids: HashMap<&'static str, u32>,
    unk: u32,
}

impl WordPiece {
    /// From a `vocab.txt`. Panics without an `[UNK]` line (the vocabulary is compiled in).
    pub fn new(vocab: &'static str) -> WordPiece {
        let ids: HashMap<&'static str, u32> = vocab
            .lines()
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect();
        let unk = *ids.get("[UNK]").expect("the vocabulary has [UNK]");
        WordPiece { ids, unk }
    }

    /// The id of `[UNK]`.
    pub fn unk(&self) -> u32 {
        self.unk
    }

    /// The id of one vocabulary token (`play`, `##ing`).
    pub fn id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The token ids of `text`, without `[CLS]`/`[SEP]`.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for word in basic_words(text) {
            self.word(&word, &mut out);
        }
        out
    }

    fn word(&self, word: &str, out: &mut Vec<u32>) {
        let bounds: Vec<usize> = word
            .char_indices()
            .map(|(i, _)| i)
            .chain([word.len()])
            .collect();
        let chars = bounds.len() - 1;
        if chars > MAX_WORD_CHARS {
            out.push(self.unk);
            return;
        }
        let before = out.len();
        let mut key = String::with_capacity(word.len() + 2);
        let mut start = 0;
        while start < chars {
            let mut end = chars;
            let mut found = None;
            while start < end {
                key.clear();
                if start > 0 {
                    key.push_str("##");
                }
                key.push_str(&word[bounds[start]..bounds[end]]);
                if let Some(id) = self.ids.get(key.as_str()) {
                    found = Some(*id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => {
                    out.truncate(before);
                    out.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

/// BERT's basic tokenisation (uncased): see the module documentation.
fn basic_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, words: &mut Vec<String>| {
        if !current.is_empty() {
            words.push(std::mem::take(current));
        }
    };
    for c in text.chars() {
        if c == '\u{0}' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if c.is_whitespace() {
            flush(&mut current, &mut words);
        } else if is_cjk(c) || is_punctuation(c) {
            flush(&mut current, &mut words);
            words.push(c.to_string());
        } else {
            for l in c.to_lowercase() {
                match fold_accent(l) {
                    Some(base) => current.push_str(base),
                    None => current.push(l),
                }
            }
        }
    }
    flush(&mut current, &mut words);
    words
}

/// ASCII punctuation and symbols (BERT counts them all), and the Unicode punctuation
/// blocks and marks a request is likely to hold.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            c,
            '\u{a1}' | '\u{a7}' | '\u{ab}' | '\u{b6}' | '\u{b7}' | '\u{bb}' | '\u{bf}'
        )
        || ('\u{2010}'..='\u{2027}').contains(&c)
        || ('\u{2030}'..='\u{205e}').contains(&c)
        || ('\u{3001}'..='\u{3003}').contains(&c)
        || ('\u{3008}'..='\u{3011}').contains(&c)
        || ('\u{ff01}'..='\u{ff0f}').contains(&c)
}

/// The CJK ideograph blocks BERT splits character by character.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// The base letter(s) of an accented lowercase Latin letter.
fn fold_accent(c: char) -> Option<&'static str> {
    Some(match c {
        'à'..='å' | 'ā' | 'ă' | 'ą' => "a",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'ď' => "d",
        'è'..='ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'ĥ' => "h",
        'ì'..='ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' => "i",
        'ĵ' => "j",
        'ķ' => "k",
        'ĺ' | 'ļ' | 'ľ' => "l",
        'ñ' | 'ń' | 'ņ' | 'ň' => "n",
        'ò'..='ö' | 'ō' | 'ŏ' | 'ő' => "o",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'ś' | 'ŝ' | 'ş' | 'š' => "s",
        'ţ' | 'ť' => "t",
        'ù'..='ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
        'ŵ' => "w",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::embed;

    fn tokens(text: &str) -> Vec<&'static str> {
        let vocab: Vec<&'static str> = embed::VOCAB.lines().collect();
        embed::tokenizer()
            .tokenize(text)
            .into_iter()
            .map(|id| vocab[id as usize])
            .collect()
    }

    /// Expected tokenisations from the reference (Python BertTokenizer rules over the
    /// model's vocab.txt; see tools/distill-embeddings/distill.py).
    #[test]
    fn matches_the_reference_tokenisation() {
        assert_eq!(
            tokens("Hello, world! unaffable playing tokenization café AirQualityForecast"),
            [
                "hello",
                ",",
                "world",
                "!",
                "una",
                "##ffa",
                "##ble",
                "playing",
                "token",
                "##ization",
                "cafe",
                "air",
                "##qual",
                "##ity",
                "##for",
                "##eca",
                "##st"
            ]
        );
        assert_eq!(
            tokens("What's the WEATHER in São Paulo?"),
            [
                "what", "'", "s", "the", "weather", "in", "sao", "paulo", "?"
            ]
        );
    }

    #[test]
    fn ids_are_line_numbers_and_unknown_words_are_unk() {
        let t = embed::tokenizer();
        assert_eq!(t.id("[PAD]"), Some(0));
        assert_eq!(t.id("[UNK]"), Some(100));
        assert_eq!(t.id("the"), Some(1996));
        // A character no piece covers makes the whole word [UNK]; its neighbours stay.
        assert_eq!(
            t.tokenize("weather ab\u{2603}cd"),
            vec![t.id("weather").unwrap(), t.unk()]
        );
        assert_eq!(tokens(&"a".repeat(101)), ["[UNK]"]);
        assert!(t.tokenize(" \t\n").is_empty());
    }

    #[test]
    fn cjk_ideographs_are_words_of_their_own() {
        // 天 is in the vocabulary, 气 is not: two words, the second unknown.
        assert_eq!(tokens("天气"), ["天", "[UNK]"]);
    }
}

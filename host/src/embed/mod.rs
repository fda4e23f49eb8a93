//! Static word embeddings, for intent routing and for retrieval's sense of meaning: a table of one vector per WordPiece
//! token, distilled from the sentence-embedding model all-MiniLM-L6-v2 (Apache-2.0;
//! `host/assets/minilm/NOTICE.md`) by `tools/distill-embeddings/distill.py`.
//!
//! The table was made the model2vec way: each vocabulary token went through the
//! transformer alone (`[CLS] token [SEP]`, mean-pooled as the model pools), the rows
//! were reduced to 128 dimensions by PCA and scaled by an SIF weight from the token's
//! vocabulary rank (frequent pieces weigh less), then quantised to int8 with one f32
//! scale per row. A text's vector is the mean of its tokens' rows (`[UNK]` left out),
//! L2-normalised, so that the cosine of two texts is their dot product. Computing one
//! is a table lookup per token: no model runs at routing time.
//!
//! Both files are compiled in (4 MB for the table, 230 KB for the vocabulary); the
//! vocabulary's hash map is built on first use.
//!
//! Beside the table: a contextual sentence encoder run in this process from an
//! installed model (`encoder.rs`, `bert.rs`), the installed models
//! (`models.rs`, `{data_dir}/models/<name>/`), their download from the Hugging Face
//! hub (`hub.rs`), and which of the two serves (`active.rs`). The table's
//! tokenizer (`wordpiece.rs`) stays its own: it splits the words retrieval already
//! analysed, on the hot path of every search, where the model's tokenizer.json runs
//! the full Hugging Face pipeline once per text.

use std::sync::LazyLock;

pub mod active;
mod bert;
pub mod encoder;
pub mod hub;
pub mod models;
mod weights;
pub mod wordpiece;

#[cfg(test)]
#[path = "../../tests/support/http.rs"]
mod http;
#[cfg(test)]
use crate::test_rng as rng;
#[cfg(test)]
#[path = "../../tests/support/tiny_bert.rs"]
pub(crate) mod tiny_bert;

/// What is in a directory, hidden entries included, sorted (none when it is missing).
#[cfg(test)]
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

use wordpiece::WordPiece;

/// The model's WordPiece vocabulary, one token a line.
pub(crate) static VOCAB: &str = include_str!("../../assets/minilm/vocab.txt");
/// `EMB1`, u32 rows, u32 dims (little-endian), then per row an f32 scale and `dims`
/// int8 values.
static TABLE: &[u8] = include_bytes!("../../assets/minilm/minilm-static.bin");

const MAGIC: &[u8; 4] = b"EMB1";
const HEADER: usize = 12;

static TOKENIZER: LazyLock<WordPiece> = LazyLock::new(|| WordPiece::new(VOCAB));
static EMBEDDINGS: LazyLock<Embeddings> = LazyLock::new(|| Embeddings::parse(TABLE));

/// The compiled-in tokenizer.
pub fn tokenizer() -> &'static WordPiece {
    &TOKENIZER
}

/// The compiled-in table.
pub fn embeddings() -> &'static Embeddings {
    &EMBEDDINGS
}

/// A quantised embedding table, read in place.
#[derive(Debug)]
pub struct Embeddings {
    bytes: &'static [u8],
    rows: usize,
    dims: usize,
}

impl Embeddings {
    /// Panics on a malformed table: it is compiled in, and a unit test reads it.
    fn parse(bytes: &'static [u8]) -> Embeddings {
        assert!(
            bytes.len() >= HEADER && &bytes[..4] == MAGIC,
            "embedding table header"
        );
        let u32_at = |at: usize| {
            u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")) as usize
        };
        let (rows, dims) = (u32_at(4), u32_at(8));
        assert_eq!(
            bytes.len(),
            HEADER + rows * (4 + dims),
            "embedding table size"
        );
        Embeddings { bytes, rows, dims }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Adds row `token` to `sum`.
    fn add_row(&self, token: u32, sum: &mut [f32]) {
        let start = HEADER + token as usize * (4 + self.dims);
        let row = &self.bytes[start..start + 4 + self.dims];
        let scale = f32::from_le_bytes(row[..4].try_into().expect("four bytes"));
        for (s, q) in sum.iter_mut().zip(&row[4..]) {
            *s += scale * f32::from(*q as i8);
        }
    }

    /// The unit vector of `words` (each tokenised on its own), or `None` when none of
    /// them has a known piece.
    pub fn embed<S: AsRef<str>>(&self, words: &[S]) -> Option<Vec<f32>> {
        let tokenizer = tokenizer();
        let mut sum = vec![0f32; self.dims];
        let mut tokens = Vec::new();
        for word in words {
            tokens.extend(tokenizer.tokenize(word.as_ref()));
        }
        let mut any = false;
        for t in tokens {
            if t != tokenizer.unk() && (t as usize) < self.rows {
                self.add_row(t, &mut sum);
                any = true;
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        (any && norm > 0.0).then(|| {
            sum.iter_mut().for_each(|x| *x /= norm);
            sum
        })
    }
}

/// The dot product (the cosine of two unit vectors). Eight running sums instead of
/// one: floating-point addition is not associative, so the compiler vectorises a
/// single sum only when told the order; routing takes one dot per skill.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &str, b: &str) -> f32 {
        let e = embeddings();
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        dot(
            &e.embed(&words(a)).expect("known words"),
            &e.embed(&words(b)).expect("known words"),
        )
    }

    #[test]
    fn the_table_matches_the_vocabulary() {
        let e = embeddings();
        assert_eq!(e.rows, VOCAB.lines().count());
        assert_eq!(e.dims(), 128);
    }

    #[test]
    fn related_words_are_closer_than_unrelated_ones() {
        assert!(cos("weather", "forecast") > cos("weather", "invoice"));
        assert!(cos("translate", "language") > cos("translate", "recipe"));
        assert!(cos("will it rain tomorrow", "weather forecast") > 0.3);
    }

    #[test]
    fn dot_adds_every_lane_and_the_tail() {
        // 8 lanes and a remainder of 5; and vectors of unequal length.
        let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..21).map(|i| 1.0 - i as f32 * 0.25).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(
            (dot(&a, &b) - naive).abs() < 1e-4,
            "{} {naive}",
            dot(&a, &b)
        );
        assert_eq!(dot(&a[..3], &b), a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
        assert_eq!(dot(&[], &b), 0.0);
    }

    #[test]
    fn vectors_are_unit_and_unknown_text_has_none() {
        let v = embeddings()
            .embed(&["stock", "prices"])
            .expect("known words");
        let norm = dot(&v, &v).sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        assert!(embeddings().embed(&["\u{2603}\u{2603}"]).is_none());
        assert!(embeddings().embed::<&str>(&[]).is_none());
    }
}

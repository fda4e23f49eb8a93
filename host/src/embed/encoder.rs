//! A sentence encoder of the all-MiniLM-L6-v2 class, run in this process: a model
//! directory's `tokenizer.json` (Hugging Face's tokenizer, the reference
//! implementation of the file) turns a text into token ids, the BERT encoder
//! (`bert.rs`) into one hidden state per token, and their mean over the text's tokens
//! (padding left out), scaled to unit length, is the text's vector, as
//! sentence-transformers computes it. The cosine of two texts is then their dot
//! product ([`super::dot`]).
//!
//! A model directory holds `config.json` (the BERT sizes), `tokenizer.json` and
//! `model.safetensors`, and may hold sentence-transformers' `sentence_bert_config.json`
//! (`max_seq_length`: where a long text is cut) and `1_Pooling/config.json` (which
//! must ask for mean pooling). Loading checks everything it can before the encoder is
//! used: every tensor's name and shape, the tokenizer's ids against the vocabulary,
//! and one text run through the model must give finite numbers; an error names the
//! file at fault.
//!
//! Texts are run in batches of texts of similar length, each padded to its longest;
//! the result does not depend on the batch beyond float rounding (within 1e-5), and
//! the same call gives the same bits every time.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;
use tokenizers::utils::truncation::TruncationParams;

use super::bert::{Bert, BertConfig};
use super::weights::{Weights, WeightsError};

/// The files an encoder reads, relative to its directory: the first three are
/// required. `engram models add` copies exactly these.
pub const MODEL_FILES: [&str; 5] = [CONFIG, TOKENIZER, WEIGHTS, SENTENCE_CONFIG, POOLING_CONFIG];
pub const CONFIG: &str = "config.json";
pub const TOKENIZER: &str = "tokenizer.json";
pub const WEIGHTS: &str = "model.safetensors";
const SENTENCE_CONFIG: &str = "sentence_bert_config.json";
const POOLING_CONFIG: &str = "1_Pooling/config.json";
const REQUIRED: usize = 3;

/// Largest file read, per kind: the JSON files, the tokenizer, the weights.
const MAX_JSON_BYTES: u64 = 1 << 20;
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
pub const MAX_WEIGHTS_BYTES: u64 = 2 << 30;
/// Of a longer text only this much is tokenised (a model reads at most a few hundred
/// tokens of it anyway).
const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Texts run through the model together, at most. 16 rather than 32: the batch's
/// activations are the daemon's peak above the weights (VmHWM with the model, truth
/// bench: +127 MiB at 32, +110 at 16, +107 at 8), and on one core a batch of 16 embeds
/// about as fast per text as one of 32.
pub const BATCH: usize = 16;
/// The most token pairs a batch attends over (texts × their padded length²): each
/// head's attention scores hold that many floats while the batch runs. 16 texts of 64
/// tokens; longer ones go fewer at a time (1 of 256), so that embedding a few long
/// texts (a skill's body) does not add a third of the model's own size to the peak,
/// where batching them gains little anyway.
const MAX_BATCH_PAIRS: usize = BATCH * 64 * 64;
/// Embedded to tell a model's versions apart ([`Encoder::version`]).
const VERSION_PROBE: &str = "which version of the model is this";
/// The fewest tokens a model must accept (`[CLS]`, `[SEP]` and a few words).
const MIN_TOKENS: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    #[error("{}: missing (a model directory holds config.json, tokenizer.json and model.safetensors)", .0.display())]
    Missing(PathBuf),
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error("the encoder failed: {0}")]
    Run(String),
}

impl EncoderError {
    /// A stable code for clients.
    pub fn code(&self) -> &'static str {
        match self {
            EncoderError::Missing(_) => "model-file-missing",
            EncoderError::Read { .. } => "model-file-unreadable",
            EncoderError::Invalid { .. } => "model-invalid",
            EncoderError::Run(_) => "encoder-failed",
        }
    }
}

impl From<candle_core::Error> for EncoderError {
    fn from(e: candle_core::Error) -> EncoderError {
        EncoderError::Run(e.to_string())
    }
}

/// `sentence_bert_config.json`: where sentence-transformers cuts a text.
#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

/// `1_Pooling/config.json`: how token states become one vector.
#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

pub struct Encoder {
    bert: Bert,
    tokenizer: Tokenizer,
    dims: usize,
    max_tokens: usize,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("dims", &self.dims)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl Encoder {
    /// Loads and checks the model in `dir` (see the module documentation).
    pub fn load(dir: &Path) -> Result<Encoder, EncoderError> {
        for file in &MODEL_FILES[..REQUIRED] {
            if !dir.join(file).is_file() {
                return Err(EncoderError::Missing(dir.join(file)));
            }
        }
        let config_path = dir.join(CONFIG);
        let config: BertConfig = json(&config_path)?;
        if let Some(reason) = config.unsupported() {
            return Err(invalid(&config_path, reason));
        }
        let pooling_path = dir.join(POOLING_CONFIG);
        if pooling_path.exists() {
            let pooling: PoolingConfig = json(&pooling_path)?;
            if !pooling.pooling_mode_mean_tokens
                || pooling.pooling_mode_cls_token
                || pooling.pooling_mode_max_tokens
                || pooling.pooling_mode_mean_sqrt_len_tokens
            {
                return Err(invalid(
                    &pooling_path,
                    "only mean pooling (pooling_mode_mean_tokens alone) is supported".into(),
                ));
            }
        }
        let sentence_path = dir.join(SENTENCE_CONFIG);
        let sentence_max = if sentence_path.exists() {
            json::<SentenceConfig>(&sentence_path)?.max_seq_length
        } else {
            None
        };

        let tokenizer_path = dir.join(TOKENIZER);
        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_path, MAX_TOKENIZER_BYTES)?)
            .map_err(|e| invalid(&tokenizer_path, e.to_string()))?;
        if tokenizer.get_vocab_size(true) > config.vocab_size {
            return Err(invalid(
                &tokenizer_path,
                format!(
                    "{} tokens, more than the model's vocab_size {} ({CONFIG})",
                    tokenizer.get_vocab_size(true),
                    config.vocab_size
                ),
            ));
        }
        // sentence-transformers cuts where its own config says, whatever
        // tokenizer.json's truncation is, and pads per batch (here: below).
        let max_tokens = sentence_max
            .or(tokenizer.get_truncation().map(|t| t.max_length))
            .unwrap_or(config.max_position_embeddings)
            .min(config.max_position_embeddings);
        if max_tokens < MIN_TOKENS {
            return Err(invalid(
                &sentence_path,
                format!("max_seq_length {max_tokens}: at least {MIN_TOKENS} tokens are needed"),
            ));
        }
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(&tokenizer_path, e.to_string()))?;
        tokenizer.with_padding(None);

        let weights_path = dir.join(WEIGHTS);
        let weights =
            Weights::open(open(&weights_path, MAX_WEIGHTS_BYTES)?).map_err(|e| match e {
                WeightsError::Read(source) => EncoderError::Read {
                    path: weights_path.clone(),
                    source,
                },
                e => invalid(&weights_path, e.to_string()),
            })?;
        // Each tensor is read as the model asks for it, and the file closed with the
        // builder.
        let vb = VarBuilder::from_backend(Box::new(weights), DType::F32, Device::Cpu);
        let bert = Bert::load(vb, &config).map_err(|e| invalid(&weights_path, e.to_string()))?;
        let encoder = Encoder {
            bert,
            tokenizer,
            dims: config.hidden_size,
            max_tokens,
        };
        // Weights that load but compute nothing usable (a corrupt data section).
        let probe = encoder.embed("a sentence to check the weights with")?;
        if probe.iter().any(|x| !x.is_finite()) || probe.iter().all(|x| *x == 0.0) {
            return Err(invalid(
                &weights_path,
                "the weights give no usable vector (non-finite or zero): corrupt?".into(),
            ));
        }
        Ok(encoder)
    }

    /// The length of every vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Tokens read of a text, `[CLS]` and `[SEP]` included; the rest is cut.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The token ids the model reads for `text` (`[CLS]` ... `[SEP]`, cut at
    /// [`Encoder::max_tokens`]).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EncoderError> {
        Ok(self.encoding(text)?.get_ids().to_vec())
    }

    /// What tells this model's versions apart: a hash of its vector of a fixed
    /// sentence (16 hex digits), so new weights under the same name give another key.
    /// Empty when the model fails on that sentence.
    pub fn version(&self) -> String {
        self.embed(VERSION_PROBE)
            .map(|v| {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                hex::encode(&Sha256::digest(&bytes)[..8])
            })
            .unwrap_or_default()
    }

    /// `text`'s unit vector.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, EncoderError> {
        let mut vectors = self.embed_batch(&[text])?;
        vectors
            .pop()
            .ok_or_else(|| EncoderError::Run("no vector".into()))
    }

    /// The unit vector of each text, in order.
    pub fn embed_batch<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let encodings = texts
            .iter()
            .map(|t| self.encoding(t.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        // Texts of similar length together, so that little of a batch is padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        let lengths: Vec<usize> = order.iter().map(|&i| encodings[i].len()).collect();
        for range in batches(&lengths) {
            let chunk = &order[range];
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in chunk.iter().zip(self.run(&batch)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    fn encoding(&self, text: &str) -> Result<tokenizers::Encoding, EncoderError> {
        let text = &text[..text.floor_char_boundary(MAX_TEXT_BYTES)];
        self.tokenizer
            .encode_fast(text, true)
            .map_err(|e| EncoderError::Run(format!("tokenizing: {e}")))
    }

    /// One forward pass over `batch`, padded to its longest, then mean pooling over
    /// each text's own tokens and L2 normalisation.
    fn run(&self, batch: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let width = batch.iter().map(|e| e.len()).max().unwrap_or(0);
        let rows = batch.len();
        let mut ids = vec![0u32; rows * width];
        let mut types = vec![0u32; rows * width];
        let mut mask = vec![0u32; rows * width];
        for (row, encoding) in batch.iter().enumerate() {
            let at = row * width;
            let n = encoding.len();
            ids[at..at + n].copy_from_slice(encoding.get_ids());
            types[at..at + n].copy_from_slice(encoding.get_type_ids());
            mask[at..at + n].copy_from_slice(encoding.get_attention_mask());
        }
        let device = Device::Cpu;
        let tensor = |v: Vec<u32>| Tensor::from_vec(v, (rows, width), &device);
        let padded = batch.iter().any(|e| e.len() < width);
        let mask = tensor(mask)?;
        let states = self
            .bert
            .forward(&tensor(ids)?, &tensor(types)?, padded.then_some(&mask))?;
        // Mean over each text's tokens: the masked sum over the count.
        let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let sums = states.broadcast_mul(&weights)?.sum(1)?;
        // At least [CLS] and [SEP] in every row: never 0.
        let counts = weights.sum(1)?;
        let means = sums.broadcast_div(&counts)?;
        let mut vectors = means.to_vec2::<f32>()?;
        for v in &mut vectors {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|x| *x /= norm);
            }
        }
        Ok(vectors)
    }
}

/// Consecutive texts of `lengths` (in tokens, shortest first) run together: at most
/// [`BATCH`], and at most [`MAX_BATCH_PAIRS`] token pairs (a text alone always runs).
fn batches(lengths: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start + 1;
        while end < lengths.len()
            && end - start < BATCH
            && (end + 1 - start) * lengths[end] * lengths[end] <= MAX_BATCH_PAIRS
        {
            end += 1;
        }
        ranges.push(start..end);
        start = end;
    }
    ranges
}

fn invalid(path: &Path, reason: String) -> EncoderError {
    EncoderError::Invalid {
        path: path.to_path_buf(),
        reason,
    }
}

/// The file, open, if it is no larger than `limit`.
fn open(path: &Path, limit: u64) -> Result<File, EncoderError> {
    let error = |source| EncoderError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(error)?;
    let size = file.metadata().map_err(error)?.len();
    if size > limit {
        return Err(invalid(
            path,
            format!("{size} bytes, over the {limit}-byte limit"),
        ));
    }
    Ok(file)
}

/// The file's bytes, if it is no larger than `limit`.
fn read(path: &Path, limit: u64) -> Result<Vec<u8>, EncoderError> {
    let mut bytes = Vec::new();
    open(path, limit)?
        .read_to_end(&mut bytes)
        .map_err(|source| EncoderError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

fn json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, EncoderError> {
    serde_json::from_slice(&read(path, MAX_JSON_BYTES)?).map_err(|e| invalid(path, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::rng::Rng;
    use crate::embed::tiny_bert::{self, HEADS, HIDDEN, LAYERS, MAX_TOKENS, Tensors, id};

    fn tiny(seed: u64) -> (tempfile::TempDir, Tensors) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rng = Rng(seed);
        let tensors = tiny_bert::write(dir.path(), &mut || rng.next());
        (dir, tensors)
    }

    const TEXTS: &[&str] = &[
        "Hello, world!",
        "the cat sat on the mat",
        "will it rain tomorrow?",
        "what do i drive? my car is a cat",
        "",
        "unaffable playing",
        "a",
        "the dog is playing with an apple and the cat sat on the mat with my car",
    ];

    #[test]
    fn tokenizes_as_bert_does_and_cuts_long_texts() {
        let (dir, _) = tiny(1);
        let encoder = Encoder::load(dir.path()).expect("loads");
        let ids = |tokens: &[&str]| tokens.iter().map(|t| id(t)).collect::<Vec<u32>>();
        assert_eq!(
            encoder.tokenize("Hello, WORLD! Unaffable playing").unwrap(),
            ids(&[
                "[CLS]", "hello", ",", "world", "!", "un", "##aff", "##able", "play", "##ing",
                "[SEP]"
            ])
        );
        // Accents stripped, punctuation split off, unknown words one [UNK] each.
        assert_eq!(
            encoder.tokenize("Café: what's zebra").unwrap(),
            ids(&["[CLS]", "cafe", "[UNK]", "what", "'", "s", "[UNK]", "[SEP]"])
        );
        assert_eq!(encoder.tokenize("").unwrap(), ids(&["[CLS]", "[SEP]"]));
        // sentence_bert_config.json's max_seq_length, not tokenizer.json's 128.
        assert_eq!(encoder.max_tokens(), MAX_TOKENS);
        let long = encoder
            .tokenize(&"the cat sat on the mat. ".repeat(10))
            .unwrap();
        assert_eq!(long.len(), MAX_TOKENS);
        assert_eq!(long.last(), Some(&id("[SEP]")));
        assert_eq!(encoder.dims(), HIDDEN);
    }

    /// The forward pass and mean pooling, written out plainly in f64 from the tensors
    /// the test wrote: what candle computes must agree.
    fn reference(t: &Tensors, ids: &[u32]) -> Vec<f32> {
        let h = HIDDEN;
        let n = ids.len();
        let linear = |x: &[Vec<f64>], name: &str| -> Vec<Vec<f64>> {
            let w = t.get(&format!("{name}.weight"));
            let b = t.get(&format!("{name}.bias"));
            let inputs = x[0].len();
            x.iter()
                .map(|row| {
                    (0..b.len())
                        .map(|o| {
                            f64::from(b[o])
                                + (0..inputs)
                                    .map(|i| f64::from(w[o * inputs + i]) * row[i])
                                    .sum::<f64>()
                        })
                        .collect()
                })
                .collect()
        };
        let norm = |x: Vec<Vec<f64>>, name: &str| -> Vec<Vec<f64>> {
            let g = t.get(&format!("{name}.LayerNorm.weight"));
            let b = t.get(&format!("{name}.LayerNorm.bias"));
            x.into_iter()
                .map(|row| {
                    let mean = row.iter().sum::<f64>() / h as f64;
                    let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
                    (0..h)
                        .map(|j| {
                            (row[j] - mean) / (var + 1e-12).sqrt() * f64::from(g[j])
                                + f64::from(b[j])
                        })
                        .collect()
                })
                .collect()
        };
        let add = |a: &[Vec<f64>], b: &[Vec<f64>]| -> Vec<Vec<f64>> {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p + q).collect())
                .collect()
        };
        let (words, positions, types) = (
            t.get("embeddings.word_embeddings.weight"),
            t.get("embeddings.position_embeddings.weight"),
            t.get("embeddings.token_type_embeddings.weight"),
        );
        let x: Vec<Vec<f64>> = (0..n)
            .map(|p| {
                (0..h)
                    .map(|j| {
                        f64::from(words[ids[p] as usize * h + j])
                            + f64::from(positions[p * h + j])
                            + f64::from(types[j])
                    })
                    .collect()
            })
            .collect();
        let mut x = norm(x, "embeddings");
        let size = h / HEADS;
        for layer in 0..LAYERS {
            let l = format!("encoder.layer.{layer}");
            let q = linear(&x, &format!("{l}.attention.self.query"));
            let k = linear(&x, &format!("{l}.attention.self.key"));
            let v = linear(&x, &format!("{l}.attention.self.value"));
            let mut context = vec![vec![0f64; h]; n];
            for head in 0..HEADS {
                let cols = head * size..(head + 1) * size;
                for i in 0..n {
                    let scores: Vec<f64> = (0..n)
                        .map(|j| {
                            cols.clone().map(|c| q[i][c] * k[j][c]).sum::<f64>()
                                / (size as f64).sqrt()
                        })
                        .collect();
                    let top = scores.iter().cloned().fold(f64::MIN, f64::max);
                    let exps: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                    let total: f64 = exps.iter().sum();
                    for c in cols.clone() {
                        context[i][c] = (0..n).map(|j| exps[j] / total * v[j][c]).sum();
                    }
                }
            }
            let attended = norm(
                add(
                    &linear(&context, &format!("{l}.attention.output.dense")),
                    &x,
                ),
                &format!("{l}.attention.output"),
            );
            let inner: Vec<Vec<f64>> = linear(&attended, &format!("{l}.intermediate.dense"))
                .into_iter()
                .map(|row| row.into_iter().map(gelu).collect())
                .collect();
            x = norm(
                add(&linear(&inner, &format!("{l}.output.dense")), &attended),
                &format!("{l}.output"),
            );
        }
        let mean: Vec<f64> = (0..h)
            .map(|j| x.iter().map(|row| row[j]).sum::<f64>() / n as f64)
            .collect();
        let length = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
        mean.iter().map(|v| (v / length) as f32).collect()
    }

    /// GELU with erf (Abramowitz and Stegun 7.1.26, error under 1.5e-7).
    fn gelu(x: f64) -> f64 {
        let z = x / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
        0.5 * x * (1.0 + erf)
    }

    fn max_difference(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn embeddings_match_a_plain_computation_of_bert_and_mean_pooling() {
        let (dir, tensors) = tiny(2);
        let encoder = Encoder::load(dir.path()).expect("loads");
        for text in TEXTS {
            let ids = encoder.tokenize(text).unwrap();
            let got = encoder.embed(text).unwrap();
            let want = reference(&tensors, &ids);
            assert!(
                max_difference(&got, &want) < 2e-5,
                "{text:?}: {}",
                max_difference(&got, &want)
            );
            let norm = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
        }
        // Different texts, different vectors.
        let (a, b) = (
            encoder.embed(TEXTS[0]).unwrap(),
            encoder.embed(TEXTS[1]).unwrap(),
        );
        assert!(super::super::dot(&a, &b) < 0.999);
    }

    #[test]
    fn a_batch_gives_what_each_text_gives_alone_in_order() {
        let (dir, _) = tiny(3);
        let encoder = Encoder::load(dir.path()).expect("loads");
        // More texts than one batch holds, of mixed lengths, so that texts are padded
        // and batches are cut.
        let texts: Vec<String> = (0..BATCH + 9)
            .map(|i| {
                let words = TEXTS[i % TEXTS.len()];
                format!("{words} {}", "my car ".repeat(i % 5))
            })
            .collect();
        let batch = encoder.embed_batch(&texts).unwrap();
        assert_eq!(batch.len(), texts.len());
        for (text, vector) in texts.iter().zip(&batch) {
            let alone = encoder.embed(text).unwrap();
            assert!(
                max_difference(vector, &alone) < 1e-5,
                "{text:?}: {}",
                max_difference(vector, &alone)
            );
        }
        assert!(encoder.embed_batch::<&str>(&[]).unwrap().is_empty());
    }

    #[test]
    fn long_texts_run_fewer_at_a_time() {
        assert_eq!(batches(&[]), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(batches(&[10; 20]), [0..16, 16..20]);
        assert_eq!(batches(&[64; 17]), [0..16, 16..17]);
        assert_eq!(batches(&[181; 3]), [0..2, 2..3]);
        assert_eq!(batches(&[256; 3]), [0..1, 1..2, 2..3]);
        // Shortest first: the batch widens as it grows, and is cut where it would
        // attend over too many pairs (4 × 120² fits, 5 × 120² does not).
        assert_eq!(
            batches(&[20, 20, 120, 120, 120, 200, 512]),
            [0..4, 4..5, 5..6, 6..7]
        );
    }

    #[test]
    fn the_same_input_gives_the_same_bits() {
        let (dir, _) = tiny(4);
        let first = Encoder::load(dir.path()).expect("loads");
        let second = Encoder::load(dir.path()).expect("loads");
        let a = first.embed_batch(TEXTS).unwrap();
        assert_eq!(a, first.embed_batch(TEXTS).unwrap());
        assert_eq!(a, second.embed_batch(TEXTS).unwrap());
    }

    /// Loads `dir` after `spoil`, expecting a refusal that names `file`.
    fn refused(spoil: impl FnOnce(&Path), file: &str) -> String {
        let (dir, _) = tiny(5);
        spoil(dir.path());
        let error = Encoder::load(dir.path()).expect_err("refused").to_string();
        assert!(error.contains(file), "{file}: {error}");
        error
    }

    #[test]
    fn a_corrupt_or_truncated_model_is_refused_naming_the_file() {
        let weights = |dir: &Path| dir.join(WEIGHTS);
        let truncate = |dir: &Path| {
            let bytes = std::fs::read(weights(dir)).unwrap();
            std::fs::write(weights(dir), &bytes[..bytes.len() - 1000]).unwrap();
        };
        let error = refused(truncate, WEIGHTS);
        assert!(error.contains("cut short"), "{error}");
        let error = refused(
            |dir| std::fs::write(weights(dir), b"\x10\x00").unwrap(),
            WEIGHTS,
        );
        assert!(error.contains("too short"), "{error}");
        // A header whose offsets give a tensor another tensor's bytes.
        let error = refused(
            |dir| {
                let bytes = std::fs::read(weights(dir)).unwrap();
                let (length, rest) = bytes.split_at(8);
                let header_len = u64::from_le_bytes(length.try_into().unwrap()) as usize;
                let (header, data) = rest.split_at(header_len);
                let mut header: serde_json::Value = serde_json::from_slice(header).unwrap();
                let first = header["embeddings.word_embeddings.weight"]["data_offsets"].clone();
                header["embeddings.position_embeddings.weight"]["data_offsets"] = first;
                std::fs::write(weights(dir), {
                    let header = header.to_string().into_bytes();
                    let mut file = (header.len() as u64).to_le_bytes().to_vec();
                    file.extend_from_slice(&header);
                    file.extend_from_slice(data);
                    file
                })
                .unwrap();
            },
            WEIGHTS,
        );
        assert!(error.contains("data_offsets"), "{error}");
        // Weights of another shape than config.json says: the tensor is named.
        let error = refused(
            |dir| {
                let mut config = tiny_bert::config();
                config["intermediate_size"] = 48.into();
                std::fs::write(dir.join(CONFIG), config.to_string()).unwrap();
            },
            WEIGHTS,
        );
        assert!(error.contains("intermediate"), "{error}");
        // A tensor missing.
        refused(
            |dir| {
                let mut rng = Rng(5);
                let mut tensors = tiny_bert::tensors(&mut || rng.next());
                tensors
                    .0
                    .retain(|(n, _, _)| !n.contains("layer.1.output.dense"));
                std::fs::write(weights(dir), tiny_bert::safetensors(&tensors)).unwrap();
            },
            WEIGHTS,
        );
        // Weights that load but compute nothing.
        refused(
            |dir| {
                let mut rng = Rng(5);
                let mut tensors = tiny_bert::tensors(&mut || rng.next());
                tensors.0[0].2.iter_mut().for_each(|v| *v = f32::NAN);
                std::fs::write(weights(dir), tiny_bert::safetensors(&tensors)).unwrap();
            },
            WEIGHTS,
        );
        refused(
            |dir| std::fs::write(dir.join(CONFIG), b"{\"hidden").unwrap(),
            CONFIG,
        );
        refused(
            |dir| {
                let mut config = tiny_bert::config();
                config["hidden_act"] = "relu".into();
                std::fs::write(dir.join(CONFIG), config.to_string()).unwrap();
            },
            CONFIG,
        );
        refused(
            |dir| std::fs::write(dir.join(TOKENIZER), b"{}").unwrap(),
            TOKENIZER,
        );
        refused(
            |dir| std::fs::remove_file(dir.join(TOKENIZER)).unwrap(),
            TOKENIZER,
        );
        refused(
            |dir| {
                let mut config = tiny_bert::config();
                config["vocab_size"] = 20.into();
                std::fs::write(dir.join(CONFIG), config.to_string()).unwrap();
            },
            TOKENIZER,
        );
        refused(
            |dir| {
                std::fs::write(
                    dir.join(POOLING_CONFIG),
                    br#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
                )
                .unwrap()
            },
            POOLING_CONFIG,
        );
    }
}

//! A tiny BERT sentence encoder that the tests write themselves: the files and shapes
//! of all-MiniLM-L6-v2 (`config.json`, `tokenizer.json` with the same normaliser,
//! pre-tokeniser, WordPiece model and `[CLS] ... [SEP]` template,
//! `sentence_bert_config.json`, `1_Pooling/config.json`, `model.safetensors` with the
//! same tensor names, and an unused pooler as the real file has), at 32 dimensions, 2
//! layers and a 48-token vocabulary, with random weights. The safetensors file is
//! written by hand (8-byte header length, JSON header, little-endian f32 data) so that
//! no test needs a tensor library to make one.
//! Shared by the library's unit tests (by `#[path]`) and the end-to-end tests.
#![allow(dead_code)] // each user calls a different subset

use std::path::Path;

use serde_json::{Value, json};

pub const HIDDEN: usize = 32;
pub const LAYERS: usize = 2;
pub const HEADS: usize = 4;
pub const INTERMEDIATE: usize = 64;
pub const POSITIONS: usize = 64;
/// `max_seq_length` of its sentence_bert_config.json: longer texts are cut.
pub const MAX_TOKENS: usize = 16;

pub const VOCAB: &[&str] = &[
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "'", "a", "the", "is", "it",
    "cat", "dog", "sat", "on", "mat", "hello", "world", "play", "##ing", "##ed", "un", "##aff",
    "##able", "rain", "weather", "tomorrow", "will", "what", "do", "i", "drive", "my", "car", "s",
    "tea", "cafe", "sentence", "to", "check", "with", "weights", "##s", "an", "apple",
];

/// The weights written, by name: shape and values (row-major), for a reference
/// computation.
pub struct Tensors(pub Vec<(String, Vec<usize>, Vec<f32>)>);

impl Tensors {
    pub fn get(&self, name: &str) -> &[f32] {
        &self
            .0
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no tensor {name}"))
            .2
    }
}

/// The token id of `token` in [`VOCAB`].
pub fn id(token: &str) -> u32 {
    VOCAB
        .iter()
        .position(|t| *t == token)
        .unwrap_or_else(|| panic!("{token} is not in the vocabulary")) as u32
}

pub fn config() -> Value {
    json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": VOCAB.len(),
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    })
}

pub fn tokenizer() -> Value {
    let vocab: serde_json::Map<String, Value> = VOCAB
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
    let special = |token: &str| {
        json!({"id": id(token), "content": token, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let added: Vec<Value> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .into_iter()
        .map(special)
        .collect();
    json!({
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [id("[CLS]")], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [id("[SEP]")], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
}

/// Random weights of the right shapes, from `next` (a seeded generator).
pub fn tensors(next: &mut dyn FnMut() -> u64) -> Tensors {
    let mut out = Tensors(Vec::new());
    let mut add = |name: String, shape: Vec<usize>, centre: f32, spread: f32| {
        let values = (0..shape.iter().product::<usize>())
            .map(|_| centre + spread * ((next() >> 11) as f32 / (1u64 << 53) as f32 - 0.5))
            .collect();
        out.0.push((name, shape, values));
    };
    let h = HIDDEN;
    for (name, rows) in [
        ("word_embeddings", VOCAB.len()),
        ("position_embeddings", POSITIONS),
        ("token_type_embeddings", 2),
    ] {
        add(format!("embeddings.{name}.weight"), vec![rows, h], 0.0, 2.0);
    }
    let mut norms = vec!["embeddings".to_string()];
    for layer in 0..LAYERS {
        let l = format!("encoder.layer.{layer}");
        for (name, rows, cols) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", INTERMEDIATE, h),
            ("output.dense", h, INTERMEDIATE),
        ] {
            let spread = 2.0 / (cols as f32).sqrt();
            add(format!("{l}.{name}.weight"), vec![rows, cols], 0.0, spread);
            add(format!("{l}.{name}.bias"), vec![rows], 0.0, 0.2);
        }
        norms.push(format!("{l}.attention.output"));
        norms.push(format!("{l}.output"));
    }
    for prefix in norms {
        add(format!("{prefix}.LayerNorm.weight"), vec![h], 1.0, 0.4);
        add(format!("{prefix}.LayerNorm.bias"), vec![h], 0.0, 0.2);
    }
    add("pooler.dense.weight".into(), vec![h, h], 0.0, 0.2);
    add("pooler.dense.bias".into(), vec![h], 0.0, 0.2);
    out
}

/// The safetensors file of `tensors`.
pub fn safetensors(tensors: &Tensors) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut data = Vec::new();
    for (name, shape, values) in &tensors.0 {
        let start = data.len();
        for v in values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.insert(
            name.clone(),
            json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = Value::Object(header).to_string().into_bytes();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    file.extend_from_slice(&data);
    file
}

/// Writes the whole model directory into `dir` and answers its weights.
pub fn write(dir: &Path, next: &mut dyn FnMut() -> u64) -> Tensors {
    let tensors = tensors(next);
    std::fs::create_dir_all(dir.join("1_Pooling")).expect("model directory");
    let files = [
        ("config.json", config().to_string().into_bytes()),
        ("tokenizer.json", tokenizer().to_string().into_bytes()),
        (
            "sentence_bert_config.json",
            json!({"max_seq_length": MAX_TOKENS, "do_lower_case": false})
                .to_string()
                .into_bytes(),
        ),
        (
            "1_Pooling/config.json",
            json!({"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": false,
                   "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
                   "pooling_mode_mean_sqrt_len_tokens": false})
            .to_string()
            .into_bytes(),
        ),
        ("model.safetensors", safetensors(&tensors)),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).expect("model file");
    }
    tensors
}

//! A BERT encoder's forward pass on candle's CPU tensors: embeddings (word, position,
//! token type, LayerNorm), then `num_hidden_layers` post-norm blocks of multi-head
//! self-attention and a GELU feed-forward, as Hugging Face's `BertModel` computes them
//! (the weight names are its state dict's). Only the encoder: no pooler, no heads.
//!
//! Written here rather than taken from candle-transformers, whose 80,000 lines would
//! be compiled for these 200.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

/// The fields of `config.json` the forward pass reads; the rest are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "gelu")]
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
    pub model_type: Option<String>,
}

fn gelu() -> String {
    "gelu".into()
}
fn two() -> usize {
    2
}
fn layer_norm_eps() -> f64 {
    1e-12
}
fn absolute() -> String {
    "absolute".into()
}

impl BertConfig {
    /// What this forward pass cannot compute, if anything.
    pub fn unsupported(&self) -> Option<String> {
        if self.model_type.as_deref().is_some_and(|t| t != "bert") {
            return Some(format!(
                "model_type {:?}: only BERT models are supported",
                self.model_type.as_deref().unwrap_or_default()
            ));
        }
        if self.hidden_act != "gelu" {
            return Some(format!(
                "hidden_act {:?}: only \"gelu\" is supported",
                self.hidden_act
            ));
        }
        if self.position_embedding_type != "absolute" {
            return Some(format!(
                "position_embedding_type {:?}: only \"absolute\" is supported",
                self.position_embedding_type
            ));
        }
        let sizes = [
            self.vocab_size,
            self.hidden_size,
            self.num_hidden_layers,
            self.num_attention_heads,
            self.intermediate_size,
            self.max_position_embeddings,
            self.type_vocab_size,
        ];
        if sizes.contains(&0) {
            return Some("a size is 0".into());
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }
}

struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    norm: LayerNorm,
    heads: usize,
    head_size: usize,
}

struct Layer {
    attention: Attention,
    intermediate: Linear,
    output: Linear,
    norm: LayerNorm,
}

pub struct Bert {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
}

fn linear(vb: &VarBuilder, inputs: usize, outputs: usize, name: &str) -> Result<Linear> {
    candle_nn::linear(inputs, outputs, vb.pp(name))
}

fn layer_norm(vb: &VarBuilder, config: &BertConfig) -> Result<LayerNorm> {
    candle_nn::layer_norm(
        config.hidden_size,
        config.layer_norm_eps,
        vb.pp("LayerNorm"),
    )
}

impl Bert {
    /// Reads every weight, checking its shape against `config` (a missing or misshapen
    /// tensor is an error naming it). Weights under a `bert.` prefix (a checkpoint
    /// saved with a head) are read too.
    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<Bert> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let h = config.hidden_size;
        let e = vb.pp("embeddings");
        let embedding = |rows: usize, name: &str| candle_nn::embedding(rows, h, e.pp(name));
        let words = embedding(config.vocab_size, "word_embeddings")?;
        let positions = embedding(config.max_position_embeddings, "position_embeddings")?;
        let token_types = embedding(config.type_vocab_size, "token_type_embeddings")?;
        let norm = layer_norm(&e, config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let a = l.pp("attention");
                let s = a.pp("self");
                let attention = Attention {
                    query: linear(&s, h, h, "query")?,
                    key: linear(&s, h, h, "key")?,
                    value: linear(&s, h, h, "value")?,
                    output: linear(&a.pp("output"), h, h, "dense")?,
                    norm: layer_norm(&a.pp("output"), config)?,
                    heads: config.num_attention_heads,
                    head_size: h / config.num_attention_heads,
                };
                Ok(Layer {
                    attention,
                    intermediate: linear(
                        &l.pp("intermediate"),
                        h,
                        config.intermediate_size,
                        "dense",
                    )?,
                    output: linear(&l.pp("output"), config.intermediate_size, h, "dense")?,
                    norm: layer_norm(&l.pp("output"), config)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            words,
            positions,
            token_types,
            norm,
            layers,
        })
    }

    /// The last hidden states, `(batch, tokens, hidden)`, of `ids` and `type_ids`
    /// (`(batch, tokens)`, u32). `mask` (`(batch, tokens)`, 1 for a token, 0 for
    /// padding) keeps attention off the padding; `None` when nothing is padded.
    pub fn forward(
        &self,
        ids: &Tensor,
        type_ids: &Tensor,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let positions = Tensor::arange(0u32, tokens as u32, ids.device())?;
        let x = self
            .words
            .forward(ids)?
            .add(&self.token_types.forward(type_ids)?)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        let mut x = self.norm.forward(&x)?;
        // Added to the attention scores: 0 where a token is, the lowest f32 where
        // padding is, so that softmax gives padding a weight of exactly 0.
        let bias = mask
            .map(|mask| -> Result<Tensor> {
                let keep = mask.to_dtype(DType::F32)?;
                ((keep - 1.0)? * f64::from(f32::MAX))?
                    .unsqueeze(1)?
                    .unsqueeze(1)
            })
            .transpose()?;
        for layer in &self.layers {
            x = layer.forward(&x, bias.as_ref())?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let attended = self.attention.forward(x, bias)?;
        let inner = self.intermediate.forward(&attended)?.gelu_erf()?;
        let out = self.output.forward(&inner)?;
        self.norm.forward(&out.add(&attended)?)
    }
}

impl Attention {
    fn forward(&self, x: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        // (batch, heads, tokens, head_size)
        let heads = |t: Tensor| {
            t.reshape((batch, tokens, self.heads, self.head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = heads(self.query.forward(x)?)?;
        let k = heads(self.key.forward(x)?)?;
        let v = heads(self.value.forward(x)?)?;
        let scale = 1.0 / (self.head_size as f64).sqrt();
        let mut scores = (q.matmul(&k.t()?)? * scale)?;
        if let Some(bias) = bias {
            scores = scores.broadcast_add(bias)?;
        }
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch, tokens, hidden))?;
        let out = self.output.forward(&context)?;
        self.norm.forward(&out.add(x)?)
    }
}

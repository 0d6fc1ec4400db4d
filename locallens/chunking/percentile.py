"""Semantic chunking at percentile breakpoints (docs/behaviour.md#semantic-chunking).

Split into sentences, embed them all in one call, measure the cosine distance between each
sentence and the next, and cut where the distance reaches the ``percentile``-th percentile of
all those distances (the biggest topic shifts of *this* document), as long as the chunk so far
has ``min_tokens``; cut regardless before a sentence that would take the chunk past
``max_tokens``.

Choices where the reference implementation (a TypeScript `SemanticChunker`, not in this
repository) is loose:

* Tokens are counted with tiktoken (the reference estimates ``ceil(chars / 4)``). A chunk's size is
  the sum of its sentences' counts, as in the reference; the single spaces that join them usually
  merge into the next word's token, so the stored text counts the same or within a token or so.
* A sentence longer than ``max_tokens`` (a huge code block, a 50 MB line without a full stop) is
  first cut into token windows of ``max_tokens`` by the paragraph/token chunker: no chunk ever
  passes ``max_tokens`` on the way to an embedder that would silently truncate it. The
  reference would keep it whole.
* One sentence or fewer: the whole (stripped) text is the one chunk, as in the reference; an empty
  text gives no chunk.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Sequence

import numpy as np

from locallens.errors import LocallensError, UsageError
from locallens.tokens import get_encoding

__all__ = [
    "Encode",
    "PercentileChunker",
    "SplitSentences",
    "cosine_distances",
    "embed_documents",
    "embed_sentences",
    "group_by_breakpoints",
    "percentile_threshold",
    "unit_rows",
]

# Sentences → one L2-normalised row per sentence, shape (len(sentences), dim).
Encode = Callable[[list[str]], np.ndarray]
SplitSentences = Callable[[str], list[str]]


# Sentences go to the encoder in batches of up to this many windows' worth of tokens, on one BLAS
# thread (see `sentence_encode`, `embed_sentences`).
SENTENCE_BATCH = 8


def sentence_encode(encode: Encode) -> Encode:
    """`encode` with ``batch_size=SENTENCE_BATCH`` when it takes that keyword (Embedder.encode does).

    Sentences range from a 3-token heading to a 600-token code block. Embedder batches by tokens
    (npbert.token_batches): a batch holds up to ``batch_size`` full windows' worth of tokens, so
    8 long sentences or a few hundred short ones. Fewer slots than the default 32 keep the
    batches of long sentences small, where attention grows with the square of their length.
    """
    try:
        parameters = inspect.signature(encode).parameters
    except (TypeError, ValueError):  # a builtin or a C callable: no signature to read
        return encode
    if "batch_size" not in parameters:
        return encode
    batched: Callable[..., np.ndarray] = encode
    return functools.partial(batched, batch_size=SENTENCE_BATCH)


def embed_sentences(encode: Encode, sentences: list[str]) -> np.ndarray:
    """Unit rows of `sentences`: one `encode` call for the document, BLAS held to one thread.

    A document's sentence batches are small matrix products (8 sentences of ~25 tokens: 200 rows
    of 384), where a second BLAS thread gains little, and OpenBLAS threads synchronise by
    spinning: on a loaded machine (2 cores, load average above 10) 35 sentences of one document
    (861 tokens) took 10.9 s of CPU and 63 s of wall time with two threads, 1.0 s and 9 s with
    one. The limit applies to NumPy's BLAS only (the NumPy encoder); torch's threads are untouched.
    """
    from locallens.npbert import one_blas_thread  # one controller for the process

    with one_blas_thread():
        vectors = encode(sentences)
    return unit_rows(vectors, len(sentences))


def embed_documents(encode: Encode, documents: list[list[str]]) -> list[np.ndarray]:
    """`embed_sentences` for several documents' sentences in one call: unit rows per document.

    Sentences are short: a document's few dozen make small batches, which cost mostly the fixed
    price of a forward pass. Together, hundreds of sentences of similar length share a batch.
    """
    every = [sentence for sentences in documents for sentence in sentences]
    if not every:
        return [np.zeros((0, 0)) for _ in documents]
    rows = embed_sentences(encode, every)
    bounds = np.cumsum([0, *map(len, documents)])
    return [rows[start:end] for start, end in itertools.pairwise(bounds)]


def default_split(text: str) -> list[str]:
    # Imported late: sentences.py is its own module and the chunkers only need it at run time.
    from locallens.sentences import split_sentences

    return split_sentences(text)


def unit_rows(vectors: object, expected: int) -> np.ndarray:
    """Check `encode`'s answer and return it as float64 rows of length 1 (zero rows stay zero).

    The contract says rows arrive normalised; normalising again costs nothing and makes a dot
    product a cosine similarity even for an encoder that forgot. A zero row has no direction:
    its similarity to anything is 0 (distance 1), as in both reference implementations.
    """
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] != expected:
        raise LocallensError(
            f"the embedding function returned shape {array.shape} for {expected} sentences; expected ({expected}, dim)"
        )
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def cosine_distances(rows: np.ndarray) -> np.ndarray:
    """1 - cos(sentence i, sentence i+1) for each neighbouring pair of unit rows."""
    if len(rows) < 2:
        return np.zeros(0)
    return 1.0 - np.einsum("ij,ij->i", rows[:-1], rows[1:])


def percentile_threshold(distances: Sequence[float] | np.ndarray, percentile: float) -> float:
    """The `percentile`-th percentile with linear interpolation (the reference's formula).

    sorted[lo] * (1 - w) + sorted[hi] * w with index = p/100 * (n - 1), lo/hi its floor and
    ceiling, w its fraction: numpy's default ("linear") method. No distances: 0.0 (as the reference).
    """
    values = np.asarray(distances, dtype=np.float64)
    if values.size == 0:
        return 0.0
    return float(np.percentile(values, percentile, method="linear"))


def group_by_breakpoints(
    token_counts: Sequence[int],
    distances: Sequence[float] | np.ndarray,
    threshold: float,
    min_tokens: int,
    max_tokens: int,
) -> list[list[int]]:
    """Sentence indices grouped into chunks (docs/behaviour.md#semantic-chunking).

    Before sentence i + 1 (distance[i] from sentence i) a new chunk starts when
    ``distance >= threshold and current >= min_tokens`` (a topic shift, the chunk big enough),
    or when ``current + tokens(i + 1) > max_tokens`` (it would pass the maximum).
    """
    if not token_counts:
        return []
    groups: list[list[int]] = [[0]]
    current = token_counts[0]
    for i, distance in enumerate(distances):
        following = token_counts[i + 1]
        shift = distance >= threshold and current >= min_tokens
        if shift or current + following > max_tokens:
            groups.append([i + 1])
            current = following
        else:
            groups[-1].append(i + 1)
            current += following
    return groups


class PercentileChunker:
    """Percentile-breakpoint semantic chunking. ``chunk(text) -> list[str]``."""

    def __init__(
        self,
        encode: Encode,
        percentile: float = 90,
        min_tokens: int = 80,
        max_tokens: int = 600,
        *,
        split: SplitSentences | None = None,
    ) -> None:
        if not 0 <= percentile <= 100:
            raise UsageError(f"the breakpoint percentile must be between 0 and 100 (got {percentile})")
        if min_tokens < 0:
            raise UsageError(f"min_tokens cannot be negative (got {min_tokens})")
        if max_tokens < 1 or max_tokens < min_tokens:
            raise UsageError(f"max_tokens ({max_tokens}) must be positive and at least min_tokens ({min_tokens})")
        self.encode = encode
        self._encode_sentences = sentence_encode(encode)
        self.percentile = percentile
        self.min_tokens = min_tokens
        self.max_tokens = max_tokens
        self.split = split or default_split
        self._encoding = get_encoding()

    def chunk(self, text: str) -> list[str]:
        return self.chunk_many([text])[0]

    def chunk_many(self, texts: Sequence[str]) -> list[list[str]]:
        """`chunk` of each text, their sentences embedded in one call (see embed_documents)."""
        stripped = [text.strip() for text in texts]
        split = [sentences_within(text, self.split, self.max_tokens) if text else ([], []) for text in stripped]
        # A text of one sentence or none is its own chunk (or none): nothing to compare.
        compared = [i for i, (sentences, _) in enumerate(split) if len(sentences) > 1]
        rows = embed_documents(self._encode_sentences, [split[i][0] for i in compared])
        out: list[list[str]] = [[text] if text else [] for text in stripped]
        for i, document_rows in zip(compared, rows, strict=True):
            sentences, token_counts = split[i]
            distances = cosine_distances(document_rows)
            threshold = percentile_threshold(distances, self.percentile)
            groups = group_by_breakpoints(token_counts, distances, threshold, self.min_tokens, self.max_tokens)
            out[i] = [" ".join(sentences[j] for j in group) for group in groups]
        return out


def sentences_within(text: str, split: SplitSentences, max_tokens: int | None) -> tuple[list[str], list[int]]:
    """Sentences of `text` with their token counts; sentences over `max_tokens` cut in windows."""
    encoding = get_encoding()
    sentences: list[str] = []
    counts: list[int] = []
    for sentence in split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        n_tokens = len(encoding.encode_ordinary(sentence))
        if max_tokens is None or n_tokens <= max_tokens:
            sentences.append(sentence)
            counts.append(n_tokens)
            continue
        from locallens.chunking.paragraph import ParagraphTokenChunker

        for piece in ParagraphTokenChunker(max_tokens, 0).iter_chunks(sentence):
            sentences.append(piece)
            counts.append(len(encoding.encode_ordinary(piece)))
    return sentences, counts

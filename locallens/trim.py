"""Trim retrieved chunks to the sentences relevant to the query (docs/behaviour.md#trimming).

Each chunk is split into sentences (after its `[Doc: ...]` prefix), every sentence of every chunk
is embedded in ONE call, each sentence is scored by cosine similarity with the query, and each
chunk keeps the sentences that pass the threshold, at least `min_sentences` of its best ones, and
`window` neighbours on each side of every kept sentence. Kept sentences are joined in their
original order with a space, with ` [...] ` marking every gap. A chunk whose sentences are all
kept comes back untouched, and no chunk is ever emptied.

The embedding function is injected (`encode`), so this module needs no model and its tests need
no network; `locallens.embedding` provides the real one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from locallens.config import DEFAULT_MIN_SENTENCES
from locallens.config import DEFAULT_TRIM_THRESHOLD as DEFAULT_THRESHOLD
from locallens.config import DEFAULT_TRIM_WINDOW as DEFAULT_WINDOW
from locallens.domain import Chunk, Hit, TrimmedHit
from locallens.errors import UsageError
from locallens.sentences import split_chunk_prefix, split_sentences

__all__ = [
    "DEFAULT_MIN_SENTENCES",
    "DEFAULT_THRESHOLD",
    "DEFAULT_WINDOW",
    "ELLIPSIS",
    "Encode",
    "TrimmedHit",
    "join_kept",
    "select_sentences",
    "trim_chunks_by_sentence",
    "trim_text",
    "unit_rows",
]

# DEFAULT_THRESHOLD, DEFAULT_MIN_SENTENCES and DEFAULT_WINDOW are config's (imported above): the
# CLI shows them too. The ask path passes its own window, config.DEFAULT_ASK_TRIM_WINDOW.
ELLIPSIS = "[...]"  # marks sentences removed between two kept runs

# Embeds a list of texts into an (n, d) array of L2-normalised float vectors.
Encode = Callable[[list[str]], np.ndarray]


# --------------------------------------------------------------------------------------------
# The two pure steps, public so that callers (and tests) can use them on their own scores
# --------------------------------------------------------------------------------------------


def select_sentences(scores: Sequence[float], threshold: float, min_sentences: int, window: int) -> list[int]:
    """Indices of the sentences to keep, ascending (docs/behaviour.md#trimming, step 4).

    1. every index whose score is >= `threshold`;
    2. if fewer than `min_sentences`, the best of the others by score (ties: lower index first)
       until there are `min_sentences` (or all of them);
    3. with `window > 0`, the `window` neighbours on each side of every index kept so far.

    A non-empty list of scores never gives an empty selection: with `min_sentences=0` and nothing
    over the threshold the single best sentence is kept, since a chunk is never emptied (step 6).
    """
    count = len(scores)
    if count == 0:
        return []
    keep = {i for i, score in enumerate(scores) if score >= threshold}  # NaN never passes

    # Never empty: the guarantee is at least one sentence whatever `min_sentences` says.
    wanted = min(max(min_sentences, 1), count)
    if len(keep) < wanted:
        # Best first; equal scores fall back to the original order, so the result is
        # deterministic. A NaN score (a broken vector) sorts after every real score.
        def rank(i: int) -> tuple[float, int]:
            score = scores[i]
            return (math.inf if math.isnan(score) else -score, i)

        for i in sorted((i for i in range(count) if i not in keep), key=rank):
            if len(keep) >= wanted:
                break
            keep.add(i)

    if window > 0:
        # Neighbours of the selection from steps 1-2 only (the window does not cascade).
        for i in list(keep):
            keep.update(range(max(0, i - window), min(count, i + window + 1)))
    return sorted(keep)


def join_kept(sentences: Sequence[str], kept: Sequence[int]) -> str:
    """The kept sentences in order, joined by a space, with `[...]` between non-contiguous runs.

    >>> join_kept(["A.", "B.", "C."], [0, 2])
    'A. [...] C.'
    """
    pieces: list[str] = []
    previous = -1
    for i in sorted(kept):
        if previous >= 0 and i > previous + 1:
            pieces.append(ELLIPSIS)  # a gap: at least one sentence was dropped in between
        pieces.append(sentences[i])
        previous = i
    return " ".join(pieces)


# --------------------------------------------------------------------------------------------
# The trimmer
# --------------------------------------------------------------------------------------------


def _validate(threshold: float, min_sentences: int, window: int) -> None:
    # bool is an int subclass; `min_sentences=True` is a mistake, not a 1.
    if not isinstance(min_sentences, int) or isinstance(min_sentences, bool) or min_sentences < 0:
        raise UsageError(f"min_sentences must be an integer >= 0, got {min_sentences!r}")
    if not isinstance(window, int) or isinstance(window, bool) or window < 0:
        raise UsageError(f"window must be an integer >= 0, got {window!r}")
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise UsageError(f"threshold must be a number, got {threshold!r}") from None
    if math.isnan(value):
        raise UsageError("threshold must be a number, got NaN")


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; a zero row stays zero (its cosine is 0, not NaN)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0.0, norms, 1.0)


def _score_all(query_vec: np.ndarray | Sequence[float], flat: list[str], encode: Encode) -> np.ndarray:
    """Cosine similarity of every sentence in `flat` with the query, from ONE `encode` call."""
    query = np.asarray(query_vec, dtype=np.float64).reshape(-1)
    vectors = np.asarray(encode(flat), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(flat):
        raise UsageError(
            f"the embedding function returned an array of shape {vectors.shape} "
            f"for {len(flat)} sentences; expected ({len(flat)}, d)"
        )
    if vectors.shape[1] != query.shape[0]:
        raise UsageError(
            f"the query vector has {query.shape[0]} dimensions but the sentence vectors have "
            f"{vectors.shape[1]}: they must come from the same embedding model"
        )
    # Encoders are supposed to normalise; doing it again here costs nothing and makes the dot
    # product a true cosine whatever the encoder did. float64 keeps the scores stable.
    return unit_rows(vectors) @ unit_rows(query)


def trim_chunks_by_sentence(
    query_vec: np.ndarray | Sequence[float],
    hits: Sequence[Hit],
    threshold: float = DEFAULT_THRESHOLD,
    min_sentences: int = DEFAULT_MIN_SENTENCES,
    window: int = DEFAULT_WINDOW,
    *,
    encode: Encode,
) -> list[TrimmedHit]:
    """Trim every hit's content to its sentences relevant to `query_vec` (docs/behaviour.md#trimming).

    `encode` embeds a list of texts into an (n, d) array of L2-normalised vectors; it is called
    exactly once for all the sentences of all the hits (and not at all when there are none).
    The output has one TrimmedHit per input hit, in the same order.
    """
    _validate(threshold, min_sentences, window)

    # Step 1: split, and flatten with ownership (chunk k owns flat[offsets[k]:offsets[k+1]]).
    prefixes: list[str] = []
    per_chunk: list[list[str]] = []
    flat: list[str] = []
    offsets = [0]
    for hit in hits:
        prefix, body = split_chunk_prefix(hit.content)
        sentences = split_sentences(body)
        prefixes.append(prefix)
        per_chunk.append(sentences)
        flat.extend(sentences)
        offsets.append(len(flat))

    # Steps 2-3: one batch for everything, then cosine scores.
    all_scores = _score_all(query_vec, flat, encode) if flat else np.zeros(0)

    results: list[TrimmedHit] = []
    for k, hit in enumerate(hits):
        sentences = per_chunk[k]
        scores = [float(s) for s in all_scores[offsets[k] : offsets[k + 1]]]
        if not sentences:
            # Nothing to score (an empty body, or only a prefix): the chunk passes unchanged.
            results.append(TrimmedHit(hit, hit, [], [], [], False))
            continue

        # Step 4: selection.
        kept = select_sentences(scores, float(threshold), min_sentences, window)

        # Step 5: every sentence kept -> the original content, untouched (no useless `[...]`,
        # and the prefix keeps its original spacing).
        if len(kept) == len(sentences):
            results.append(TrimmedHit(hit, hit, sentences, scores, kept, False))
            continue

        body = join_kept(sentences, kept)
        content = f"{prefixes[k]}\n{body}" if prefixes[k] else body
        # Step 6: same hit, same chunk fields and score; only the content is shorter.
        trimmed = dataclasses.replace(hit, chunk=dataclasses.replace(hit.chunk, content=content))
        results.append(TrimmedHit(trimmed, hit, sentences, scores, kept, content != hit.content))
    return results


def trim_text(
    query_vec: np.ndarray | Sequence[float],
    text: str,
    threshold: float = DEFAULT_THRESHOLD,
    min_sentences: int = DEFAULT_MIN_SENTENCES,
    window: int = DEFAULT_WINDOW,
    *,
    encode: Encode,
) -> TrimmedHit:
    """Trim a free text as if it were one retrieved chunk (`locallens trim --text FILE`)."""
    chunk = Chunk(id="text-0", brain="", relative_path="<text>", chunk_index=0, content=text, checksum="")
    hit = Hit(chunk=chunk, score=0.0)
    return trim_chunks_by_sentence(query_vec, [hit], threshold, min_sentences, window, encode=encode)[0]

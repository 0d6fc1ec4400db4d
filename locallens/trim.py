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
import re
from collections.abc import Callable, Sequence

import numpy as np

from locallens.config import DEFAULT_MIN_SENTENCES
from locallens.config import DEFAULT_TRIM_THRESHOLD as DEFAULT_THRESHOLD
from locallens.config import DEFAULT_TRIM_WINDOW as DEFAULT_WINDOW
from locallens.domain import Chunk, Hit, TrimmedHit
from locallens.errors import UsageError
from locallens.sentences import split_chunk_prefix, split_sentences
from locallens.text import CJK_CLASS

__all__ = [
    "CJK_MARGIN",
    "CJK_MIN_OVERLAP",
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

# Chinese, Japanese and Korean sentences, at the default threshold. An English-first embedder
# (the packaged MiniLM) gives every CJK sentence of the excerpts a cosine of 0.2-0.9 with a CJK
# question, most of them above the default threshold, so the fixed threshold keeps nearly
# everything. A CJK sentence is kept instead when it scores within CJK_MARGIN of the question's
# best CJK sentence, or when it holds CJK_MIN_OVERLAP of the question's two-character pieces
# (the characters say what the embedder cannot). Measured by benchmarks/bench_cjk.py.
CJK_MARGIN = 0.2
CJK_MIN_OVERLAP = 0.3
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")
_CJK_RUN = re.compile(f"[{CJK_CLASS}ー]+")
_LETTER = re.compile(r"[^\W\d_]")


def is_cjk(text: str) -> bool:
    """Whether most letters of `text` are Han, kana or Hangul."""
    letters = len(_LETTER.findall(text))
    return bool(letters) and len(_CJK_CHAR.findall(text)) * 2 >= letters


def _pieces(text: str) -> set[str]:
    """The two-character pieces of the CJK runs of `text` (a one-character run counts whole)."""
    return {run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(max(1, len(run) - 1))}


def cjk_thresholds(sentences: Sequence[str], scores: Sequence[float], threshold: float, query: str) -> list[float]:
    """The threshold of each sentence: `threshold`, but for CJK sentences, when the query has CJK
    text, the calibrated rule above (a sentence holding enough of the query's pieces passes
    whatever its score)."""
    wanted = _pieces(query)
    if not wanted:
        # A question without CJK text (or none given): its pieces cannot rescue an answer
        # sentence the embedder ranks low, so the fixed threshold stays.
        return [threshold] * len(sentences)
    cjk = [is_cjk(sentence) for sentence in sentences]
    if not any(cjk):
        return [threshold] * len(sentences)
    best = max((score for score, flag in zip(scores, cjk) if flag and not math.isnan(score)), default=threshold)
    out = []
    for sentence, flag in zip(sentences, cjk):
        if not flag:
            out.append(threshold)
        elif len(wanted & _pieces(sentence)) >= CJK_MIN_OVERLAP * len(wanted):
            out.append(-math.inf)
        else:
            out.append(max(threshold, best - CJK_MARGIN))
    return out


# --------------------------------------------------------------------------------------------
# The two pure steps, public so that callers (and tests) can use them on their own scores
# --------------------------------------------------------------------------------------------


def select_sentences(
    scores: Sequence[float],
    threshold: float,
    min_sentences: int,
    window: int,
    *,
    thresholds: Sequence[float] | None = None,
) -> list[int]:
    """Indices of the sentences to keep, ascending (docs/behaviour.md#trimming, step 4).

    1. every index whose score is >= `threshold` (or its own entry of `thresholds`);
    2. if fewer than `min_sentences`, the best of the others by score (ties: lower index first)
       until there are `min_sentences` (or all of them);
    3. with `window > 0`, the `window` neighbours on each side of every index kept so far.

    A non-empty list of scores never gives an empty selection: with `min_sentences=0` and nothing
    over the threshold the single best sentence is kept, since a chunk is never emptied (step 6).
    """
    count = len(scores)
    if count == 0:
        return []
    limits = thresholds if thresholds is not None else [threshold] * count
    keep = {i for i, score in enumerate(scores) if score >= limits[i]}  # NaN never passes

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
    query: str = "",
) -> list[TrimmedHit]:
    """Trim every hit's content to its sentences relevant to `query_vec` (docs/behaviour.md#trimming).

    At the default threshold, Chinese, Japanese and Korean sentences are kept by the calibrated
    rule of `cjk_thresholds` (`query`, the question's text, gives its pieces); any other
    threshold, and every other sentence, use the threshold as given.

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
    if float(threshold) == DEFAULT_THRESHOLD:
        limits = cjk_thresholds(flat, [float(x) for x in all_scores], float(threshold), query)
    else:
        limits = [float(threshold)] * len(flat)

    results: list[TrimmedHit] = []
    for k, hit in enumerate(hits):
        sentences = per_chunk[k]
        scores = [float(s) for s in all_scores[offsets[k] : offsets[k + 1]]]
        if not sentences:
            # Nothing to score (an empty body, or only a prefix): the chunk passes unchanged.
            results.append(TrimmedHit(hit, hit, [], [], [], False))
            continue

        # Step 4: selection.
        kept = select_sentences(
            scores, float(threshold), min_sentences, window, thresholds=limits[offsets[k] : offsets[k + 1]]
        )

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
    query: str = "",
) -> TrimmedHit:
    """Trim a free text as if it were one retrieved chunk (`locallens trim --text FILE`)."""
    chunk = Chunk(id="text-0", brain="", relative_path="<text>", chunk_index=0, content=text, checksum="")
    hit = Hit(chunk=chunk, score=0.0)
    return trim_chunks_by_sentence(query_vec, [hit], threshold, min_sentences, window, encode=encode, query=query)[0]

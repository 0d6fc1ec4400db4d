"""The trimming A/B, swept over thresholds × windows (docs/behaviour.md#evaluation).

For every question the baseline is computed once: the question is embedded once and searched
once, and those hits (the untrimmed top-k context) are reused by every setting of the sweep; no
setting re-embeds the question or searches again. Each setting then trims the same hits with
`trim_chunks_by_sentence`, whose sentence vectors come from the store-backed `SentenceEncoder`
behind an in-process memo, so a sentence is embedded at most once per run whatever the number of
settings (and not at all when an earlier run cached it in the store).

Per setting (threshold, window), averaged over the questions:
- `avg_tokens_baseline`, `avg_tokens_trim`: the estimate round(1.3 × words) of the context
  before and after trimming (exact tiktoken counts are kept beside them: `avg_tiktoken_*`);
- `token_reduction_pct`: 100 × (1 − avg_tokens_trim / avg_tokens_baseline);
- `avg_overlap_vs_baseline`: the share of the baseline's chunks that survive trimming (0.92 means
  8% of the chunks lost), see `chunk_survives` for what survive means;
- `answer_retention`: over the questions that list expected answer substrings, the share of those
  substrings present in the baseline context that are still present in the trimmed context
  (pooled over all such substrings); None when no expected substring was present before trimming.

The best trade-off is marked by `mark_best` (rule in its docstring).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from locallens.domain import Hit, Rendering
from locallens.errors import UsageError
from locallens.evaluation.metrics import mean
from locallens.evaluation.questions import Question
from locallens.progress import NoProgress, Progress
from locallens.retrieval import count_context
from locallens.storage import content_hash
from locallens.trim import Encode, TrimmedHit, trim_chunks_by_sentence

SWEEPING = "trimming sweep"

# The best setting must keep at least this share of the answers (or, without answers, of the
# chunks); among those, the one that saves the most tokens wins.
BEST_MIN_QUALITY = 0.95

_WS = re.compile(r"\s+")


@dataclass(slots=True)
class Baseline:
    """One question's untrimmed retrieval, computed once and shared by every measurement."""

    question: Question
    vector: np.ndarray  # the query vector (embedded once)
    ranked_hits: list[Hit]  # the deep search, best first (retrieval metrics rank files in it)
    top_k: int
    # The question's English rendering, searched beside it as `ask` does (`locallens.crosslang`).
    rendering: Rendering | None = None

    @property
    def hits(self) -> list[Hit]:
        """The context `ask` would use: the first `top_k` hits."""
        return self.ranked_hits[: self.top_k]


@dataclass(frozen=True, slots=True)
class QuestionTrim:
    """One question under one setting."""

    threshold: float
    window: int
    tokens_baseline: int  # estimate round(1.3 × words)
    tokens_trim: int
    tiktoken_baseline: int
    tiktoken_trim: int
    chunks: int  # baseline chunks
    surviving: int  # chunks that survive (see chunk_survives)
    answers_before: int  # expected substrings present in the baseline context
    answers_after: int  # ... of those, still present after trimming

    @property
    def overlap(self) -> float:
        # No chunk retrieved: nothing could be lost.
        return self.surviving / self.chunks if self.chunks else 1.0


@dataclass(slots=True)
class SweepRow:
    """One setting of the sweep, averaged over the questions."""

    threshold: float
    window: int
    avg_tokens_baseline: float
    avg_tokens_trim: float
    token_reduction_pct: float
    avg_overlap_vs_baseline: float
    answer_retention: float | None
    avg_tiktoken_baseline: float = 0.0
    avg_tiktoken_trim: float = 0.0
    best: bool = False

    @property
    def quality(self) -> float:
        """What the best-trade-off rule protects: answer retention when known, else chunk overlap."""
        return self.answer_retention if self.answer_retention is not None else self.avg_overlap_vs_baseline

    def as_json(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "window": self.window,
            "avg_tokens_baseline": round(self.avg_tokens_baseline, 2),
            "avg_tokens_trim": round(self.avg_tokens_trim, 2),
            "token_reduction_pct": round(self.token_reduction_pct, 2),
            "avg_overlap_vs_baseline": round(self.avg_overlap_vs_baseline, 4),
            "answer_retention": None if self.answer_retention is None else round(self.answer_retention, 4),
            "best": self.best,
        }


@dataclass(slots=True)
class SweepResult:
    rows: list[SweepRow]
    per_question: list[list[QuestionTrim]] = field(default_factory=list)  # [question][setting]
    sentences: int = 0  # distinct sentences scored over the whole sweep (each embedded once at most)

    @property
    def best(self) -> SweepRow | None:
        return next((r for r in self.rows if r.best), None)


# --------------------------------------------------------------------------------------------
# The measures
# --------------------------------------------------------------------------------------------


def chunk_survives(trimmed: TrimmedHit, threshold: float) -> bool:
    """Whether a baseline chunk survives trimming, in the sense of `avg_overlap_vs_baseline`.

    Trimming never drops a chunk from the list (a chunk is never emptied: docs/behaviour.md#trimming), so counting
    chunk ids would always give 1.0. What trimming does lose is a chunk's content: a chunk
    survives when at least one of its sentences scores >= the threshold, i.e. the trimmer kept
    it on its merits. A chunk in which no sentence passes is cut down to the `min_sentences` best
    of its sentences (plus the window around them) only to honour the "never empty" guarantee:
    its content is lost to the context, and it counts as lost. A chunk with no sentence to score
    passes through unchanged and survives. The window adds neighbours around what was kept, so
    it changes tokens and answer retention but not survival.
    """
    if not trimmed.sentences:
        return True
    return any(score >= threshold for score in trimmed.scores)


def normalise_text(text: str) -> str:
    """Case-folded, whitespace-collapsed: trimming re-joins sentences with single spaces."""
    return _WS.sub(" ", text).strip().casefold()


def answers_present(answers: Sequence[str], context: str) -> list[bool]:
    """For each expected answer substring, whether it occurs in `context` (normalised)."""
    haystack = normalise_text(context)
    return [normalise_text(a) in haystack for a in answers]


def context_text(hits: Sequence[Hit]) -> str:
    return "\n\n".join(h.content for h in hits)


class MemoEncoder:
    """An in-process memo in front of an encoder: each distinct sentence is encoded once per run.

    The sweep trims the same hits once per setting; the store-backed `SentenceEncoder` would
    answer the repeats from SQLite, this answers them from memory.
    """

    def __init__(self, encode: Encode) -> None:
        self.encode = encode
        self.vectors: dict[bytes, np.ndarray] = {}
        self.calls = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        hashes = [content_hash(t) for t in texts]
        todo = {h: t for h, t in zip(hashes, texts) if h not in self.vectors}
        if todo:
            fresh = np.asarray(self.encode(list(todo.values())))
            self.vectors.update(zip(todo.keys(), fresh))
        if not hashes:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.vectors[h] for h in hashes])


def _validate(thresholds: Sequence[float], windows: Sequence[int], min_sentences: int) -> None:
    if not thresholds:
        raise UsageError("--thresholds needs at least one value")
    if not windows:
        raise UsageError("--windows needs at least one value")
    for w in windows:
        if not isinstance(w, int) or isinstance(w, bool) or w < 0:
            raise UsageError(f"--windows takes integers >= 0 (got {w!r})")
    for t in thresholds:
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t:
            raise UsageError(f"--thresholds takes numbers (got {t!r})")
    if min_sentences < 0:
        raise UsageError(f"min_sentences must be >= 0 (got {min_sentences})")


def measure(baseline: Baseline, threshold: float, window: int, min_sentences: int, encode: Encode) -> QuestionTrim:
    """Trim one question's baseline hits under one setting and measure what changed."""
    hits = baseline.hits
    before, tik_before = count_context(hits)
    trimmed = trim_chunks_by_sentence(
        baseline.vector, hits, threshold, min_sentences, window, encode=encode, query=baseline.question.text
    )
    after_hits = [t.hit for t in trimmed]
    after, tik_after = count_context(after_hits)
    answers = baseline.question.answers or ()
    present_before = answers_present(answers, context_text(hits))
    present_after = answers_present(answers, context_text(after_hits))
    return QuestionTrim(
        threshold=threshold,
        window=window,
        tokens_baseline=before,
        tokens_trim=after,
        tiktoken_baseline=tik_before,
        tiktoken_trim=tik_after,
        chunks=len(hits),
        surviving=sum(1 for t in trimmed if chunk_survives(t, threshold)),
        answers_before=sum(present_before),
        # Only substrings that were there before can be retained (trimming never adds text).
        answers_after=sum(1 for b, a in zip(present_before, present_after) if b and a),
    )


def aggregate(threshold: float, window: int, measured: Sequence[QuestionTrim]) -> SweepRow:
    """One sweep row from the per-question measurements of one setting."""
    n = len(measured)
    avg_before = sum(m.tokens_baseline for m in measured) / n if n else 0.0
    avg_after = sum(m.tokens_trim for m in measured) / n if n else 0.0
    # Trimming never lengthens a context; clamp anyway so float noise cannot show -0.0 %.
    reduction = max(0.0, 100.0 * (1.0 - avg_after / avg_before)) if avg_before > 0 else 0.0
    before_total = sum(m.answers_before for m in measured)
    return SweepRow(
        threshold=threshold,
        window=window,
        avg_tokens_baseline=avg_before,
        avg_tokens_trim=avg_after,
        token_reduction_pct=reduction,
        avg_overlap_vs_baseline=mean(m.overlap for m in measured) if n else 1.0,  # type: ignore[arg-type]
        answer_retention=(sum(m.answers_after for m in measured) / before_total) if before_total else None,
        avg_tiktoken_baseline=sum(m.tiktoken_baseline for m in measured) / n if n else 0.0,
        avg_tiktoken_trim=sum(m.tiktoken_trim for m in measured) / n if n else 0.0,
    )


def mark_best(rows: list[SweepRow], min_quality: float = BEST_MIN_QUALITY) -> SweepRow | None:
    """Mark the best trade-off: the most token reduction among the settings whose quality
    (answer retention when the questions carry answers, else chunk overlap) is >= `min_quality`;
    ties go to the higher quality, then to the earlier setting. When no setting reaches
    `min_quality`, the one with the best quality wins (ties: more reduction, then earlier).
    """
    for row in rows:
        row.best = False
    if not rows:
        return None
    order = {id(r): i for i, r in enumerate(rows)}
    eligible = [r for r in rows if r.quality >= min_quality]
    if eligible:
        best = max(eligible, key=lambda r: (r.token_reduction_pct, r.quality, -order[id(r)]))
    else:
        best = max(rows, key=lambda r: (r.quality, r.token_reduction_pct, -order[id(r)]))
    best.best = True
    return best


def sweep(
    baselines: Sequence[Baseline],
    thresholds: Sequence[float],
    windows: Sequence[int],
    *,
    encode: Encode,
    min_sentences: int = 1,
    progress: Progress | None = None,
) -> SweepResult:
    """Every (threshold, window) over every baseline; rows in thresholds-major order."""
    _validate(thresholds, windows, min_sentences)
    progress = progress or NoProgress()
    memo = encode if isinstance(encode, MemoEncoder) else MemoEncoder(encode)
    settings = [(float(t), int(w)) for t in thresholds for w in windows]
    progress.add(SWEEPING, len(baselines) * len(settings))
    per_question: list[list[QuestionTrim]] = []
    for baseline in baselines:
        row: list[QuestionTrim] = []
        for threshold, window in settings:
            row.append(measure(baseline, threshold, window, min_sentences, memo))
            progress.advance(SWEEPING)
        per_question.append(row)
    rows = [aggregate(t, w, [q[i] for q in per_question]) for i, (t, w) in enumerate(settings)]
    mark_best(rows)
    return SweepResult(rows, per_question, len(memo.vectors))

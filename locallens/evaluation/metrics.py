"""Pure metric functions: ranked retrieval (hit, recall, MRR, nDCG) and RAGAS-style answer scores.

Nothing here touches a model or a database: every function takes plain lists and returns a float,
so each can be checked against a hand computation.

Conventions shared by the ranking metrics:
- `ranked` is a list of item ids, best first. An id that appears more than once counts only at its
  first position (a document found twice is still one document); later repeats are dropped before
  any position is counted, so the ranks are those of the de-duplicated list.
- `relevant` is either a collection of ids (binary relevance: gain 1) or a mapping id -> graded
  relevance (BEIR qrels). A grade <= 0 means "judged not relevant" and gains nothing.
- Ranks are 1-based. A metric of a query with no relevant item is undefined (BEIR drops such
  queries); asking for one is a UsageError rather than a silent 0 or 1 that would skew a mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from locallens.errors import UsageError

__all__ = [
    "citation_validity",
    "contains_answer",
    "context_precision",
    "dedupe",
    "faithfulness",
    "hit_at_k",
    "mean",
    "mrr",
    "ndcg_at_k",
    "recall_at_k",
    "reciprocal_rank",
]

Relevance = Collection[str] | Mapping[str, float]

_ANSWER_TOKEN = re.compile(r"\w+(?:[.,:/-]\w+)*")


def contains_answer(answer: str, expected: Iterable[str]) -> bool:
    """Whether `answer` states one of the `expected` answers (fact accuracy).

    An expected answer is stated when it occurs in the answer (case and runs of whitespace
    ignored), or when every one of its tokens (words and numbers, `16.2` and `09:30` whole) is a
    token of the answer, in any order: "the port is 5433" states "port 5433".
    """
    lowered = " ".join(answer.lower().split())
    have = set(_ANSWER_TOKEN.findall(lowered))
    for item in expected:
        wanted = " ".join(item.lower().split())
        tokens = _ANSWER_TOKEN.findall(wanted)
        if wanted and (wanted in lowered or (tokens and all(token in have for token in tokens))):
            return True
    return False


def dedupe(ranked: Iterable[str]) -> list[str]:
    """`ranked` with every repeat removed, first occurrences kept in order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _gains(relevant: Relevance) -> dict[str, float]:
    """id -> gain (> 0 only). A plain collection is binary relevance."""
    if isinstance(relevant, Mapping):
        return {str(k): float(v) for k, v in relevant.items() if float(v) > 0}
    return {str(k): 1.0 for k in relevant}


def _check_k(k: int) -> None:
    if k < 1:
        raise UsageError(f"k must be at least 1 (got {k})")


def _require_relevant(gains: Mapping[str, float], metric: str) -> None:
    if not gains:
        raise UsageError(f"{metric} is undefined for a query without relevant items")


def hit_at_k(ranked: Sequence[str], relevant: Relevance, k: int) -> float:
    """1.0 if any relevant item is among the first `k` (de-duplicated) items, else 0.0."""
    _check_k(k)
    gains = _gains(relevant)
    _require_relevant(gains, "hit@k")
    return 1.0 if any(item in gains for item in dedupe(ranked)[:k]) else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Relevance, k: int) -> float:
    """Share of the relevant items found among the first `k` (de-duplicated) items."""
    _check_k(k)
    gains = _gains(relevant)
    _require_relevant(gains, "recall@k")
    found = sum(1 for item in dedupe(ranked)[:k] if item in gains)
    return found / len(gains)


def reciprocal_rank(ranked: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """1 / rank of the first relevant item (within the first `k` when given); 0.0 if none."""
    if k is not None:
        _check_k(k)
    gains = _gains(relevant)
    _require_relevant(gains, "reciprocal rank")
    items = dedupe(ranked)
    for rank, item in enumerate(items[:k] if k is not None else items, start=1):
        if item in gains:
            return 1.0 / rank
    return 0.0


def mrr(queries: Iterable[tuple[Sequence[str], Relevance]], k: int | None = None) -> float:
    """Mean reciprocal rank over (ranked, relevant) pairs; 0.0 for no queries at all."""
    return mean(reciprocal_rank(ranked, relevant, k) for ranked, relevant in queries) or 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Relevance, k: int = 10) -> float:
    """Normalised discounted cumulative gain at `k`.

    DCG@k = sum over ranks i = 1..k of gain(item_i) / log2(i + 1), with the gain being the graded
    relevance itself (linear gain, as trec_eval and BEIR's pytrec_eval compute it; for binary
    relevance every form agrees). The ideal DCG takes the `k` highest grades of the qrels, so a
    relevant item that was never retrieved still lowers the score.
    """
    _check_k(k)
    gains = _gains(relevant)
    _require_relevant(gains, "nDCG")
    dcg = sum(gains.get(item, 0.0) / math.log2(rank + 1) for rank, item in enumerate(dedupe(ranked)[:k], start=1))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    return dcg / idcg


# --------------------------------------------------------------------------------------------
# Answer quality (RAGAS-style: docs/behaviour.md#evaluation)
# --------------------------------------------------------------------------------------------


def faithfulness(supported: Sequence[bool]) -> float:
    """Statements supported by the context / all statements; 1.0 for an answer without any.

    An answer that states nothing ("the excerpts do not say") asserts nothing unsupported, which
    is what RAGAS-style faithfulness gives an empty statement list.
    """
    if not supported:
        return 1.0
    return sum(1 for s in supported if s) / len(supported)


def context_precision(relevant: Sequence[bool]) -> float:
    """RAGAS context precision of excerpts in rank order, judged relevant or not.

    The mean, over the ranks that hold a relevant excerpt, of precision@rank:
        sum_k (precision@k * v_k) / (number of relevant excerpts),  v_k in {0, 1}.
    Relevant excerpts ranked first score 1.0; the same excerpts ranked last score less.
    With no relevant excerpt (or no excerpt) the score is 0.0, as in RAGAS.
    """
    hits = 0
    total = 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def citation_validity(valid: int, invalid: int) -> float | None:
    """Share of `[N]` markers that name an excerpt the model was given.

    None when there are no markers at all: an answer that cites nothing is neither valid nor
    invalid in this sense, and scoring it 1.0 would reward a model that never cites. Aggregates
    are computed over all markers of all answers (see `locallens.evaluation.answers`).
    """
    if valid < 0 or invalid < 0:
        raise UsageError(f"citation counts cannot be negative (got {valid}, {invalid})")
    total = valid + invalid
    return valid / total if total else None


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the values that are not None; None when there are none."""
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None

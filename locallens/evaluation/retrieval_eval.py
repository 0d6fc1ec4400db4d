"""Retrieval quality on the user's questions, where the QUESTIONS file names the expected files.

The unit is the file: a file named in the question's `files` is relevant, and a file's rank is the
rank of its first (best) chunk among the retrieved chunks once every file is counted only at its
first appearance (so three chunks of one file followed by a chunk of another put that other file
at rank 2).

- hit@k, recall@k: over the files of the top-k chunks, i.e. exactly the context `ask` would build
  with `--top-k k` (hit: any expected file is there; recall: the share of expected files there).
- MRR and nDCG@10: over the file ranking of a deeper search (`RANKING_DEPTH` chunks), cut at
  10 files: reciprocal rank of the first expected file within the first 10 (0 if none), and
  binary-relevance nDCG@10.

A retrieved path matches an expected file when they are equal, or when one ends with the other
on a `/` boundary (`docs/hr/leave.md` matches `hr/leave.md`), so a QUESTIONS file keeps working
whether the brain was indexed from `sample_docs/` or from its parent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from locallens.domain import Hit
from locallens.evaluation.metrics import dedupe, hit_at_k, mean, ndcg_at_k, recall_at_k, reciprocal_rank
from locallens.evaluation.questions import normalise_path

RANKING_DEPTH = 50  # chunks searched per question: enough to rank 10 distinct files
RANK_CUTOFF = 10  # MRR@10 and nDCG@10


def path_matches(path: str, expected: str) -> bool:
    path, expected = normalise_path(path), normalise_path(expected)
    return path == expected or path.endswith("/" + expected) or expected.endswith("/" + path)


def ranked_files(hits: Sequence[Hit], expected: Sequence[str]) -> list[str]:
    """The hits' files in rank order, de-duplicated; a path matching an expected file is named by
    the expected spelling so that the metric functions can compare ids exactly."""
    ids: list[str] = []
    for hit in hits:
        path = hit.chunk.relative_path
        ids.append(next((e for e in expected if path_matches(path, e)), normalise_path(path)))
    return dedupe(ids)


@dataclass(frozen=True, slots=True)
class QuestionRetrieval:
    hit_at_k: float
    recall_at_k: float
    reciprocal_rank: float
    ndcg_at_10: float
    first_relevant_rank: int | None  # file rank of the first expected file in the deep ranking
    files: list[str]  # the deep file ranking, first RANK_CUTOFF files

    def as_json(self) -> dict[str, object]:
        return {
            "hit_at_k": self.hit_at_k,
            "recall_at_k": round(self.recall_at_k, 4),
            "reciprocal_rank": round(self.reciprocal_rank, 4),
            "ndcg_at_10": round(self.ndcg_at_10, 4),
            "first_relevant_rank": self.first_relevant_rank,
            "files": self.files,
        }


def score_question(ranked_hits: Sequence[Hit], top_k: int, expected: Sequence[str]) -> QuestionRetrieval:
    """File-level metrics of one question; `ranked_hits` is the deep search, best first."""
    relevant = set(expected)
    in_context = ranked_files(ranked_hits[:top_k], expected)
    deep = ranked_files(ranked_hits, expected)
    first = next((rank for rank, f in enumerate(deep, start=1) if f in relevant), None)
    return QuestionRetrieval(
        hit_at_k=hit_at_k(in_context, relevant, top_k),
        recall_at_k=recall_at_k(in_context, relevant, top_k),
        reciprocal_rank=reciprocal_rank(deep, relevant, RANK_CUTOFF),
        ndcg_at_10=ndcg_at_k(deep, relevant, RANK_CUTOFF),
        first_relevant_rank=first,
        files=deep[:RANK_CUTOFF],
    )


@dataclass(slots=True)
class RetrievalMetrics:
    k: int
    questions: int  # questions that named expected files
    hit_at_k: float
    recall_at_k: float
    mrr: float
    ndcg_at_10: float
    per_question: list[QuestionRetrieval] = field(default_factory=list)

    def as_json(self) -> dict[str, float]:
        return {
            "hit_at_k": round(self.hit_at_k, 4),
            "recall_at_k": round(self.recall_at_k, 4),
            "mrr": round(self.mrr, 4),
            "ndcg_at_10": round(self.ndcg_at_10, 4),
        }


def aggregate(results: Sequence[QuestionRetrieval], k: int) -> RetrievalMetrics | None:
    """Means over the questions with expected files; None when no question named any."""
    if not results:
        return None
    return RetrievalMetrics(
        k=k,
        questions=len(results),
        hit_at_k=mean(r.hit_at_k for r in results) or 0.0,
        recall_at_k=mean(r.recall_at_k for r in results) or 0.0,
        mrr=mean(r.reciprocal_rank for r in results) or 0.0,
        ndcg_at_10=mean(r.ndcg_at_10 for r in results) or 0.0,
        per_question=list(results),
    )

"""`--rerank llm`: the local LLM re-scores retrieval's first candidates by question likelihood.

With no cross-encoder on the machine, the GGUF that answers can still judge a passage: a passage
that answers a question makes that question likely. Each candidate scores
log P(question | "Passage: <its first tokens>\\nA question this passage answers:") from one
forward pass (`LocalLLM.continuation_logprob`); the question is the same for every candidate,
so the sum ranks as the mean would. That score is standardised over the candidates and blended
with the first stage's cosine, standardised likewise (`LLM_WEIGHT`); `retrieval.rerank_hits`
keeps the best `top_k`, at most `MAX_CHUNKS_PER_FILE` of one file while others are left, as the
first stage keeps them.

The cost is the prefill of every candidate: `LLM_CANDIDATES` candidates of at most
`PASSAGE_TOKENS` tokens each. The figures and why this is not the default are in
docs/benchmarks.md#reranking-with-the-local-llm.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from locallens.domain import Hit

if TYPE_CHECKING:
    from locallens.llm import LocalLLM

LLM_RERANKER = "llm"  # the `--rerank` value that names this reranker
LLM_CANDIDATES = 10  # first-stage candidates re-scored (each costs its prefill)
PASSAGE_TOKENS = 96  # of each candidate, its first tokens are read
LLM_WEIGHT = 0.25  # the blend: LLM_WEIGHT * z(question likelihood) + (1 - LLM_WEIGHT) * z(cosine)
SCORER_CTX = 512  # the scoring model's context: a passage and a question

_scorers: dict[Path, LocalLLM] = {}
_lock = threading.Lock()


def _scorer(path: str | None) -> LocalLLM:
    """The scoring model (the GGUF `path` names, else `ask`'s default), loaded once per process."""
    from locallens import models
    from locallens.llm import resolve_llm_path

    resolved = resolve_llm_path(path)
    with _lock:
        if resolved not in _scorers:
            info = models.LOADERS.check_gguf(resolved)
            _scorers[resolved] = models.LOADERS.llm(resolved, n_ctx=SCORER_CTX, info=info)
        return _scorers[resolved]


def question_likelihoods(llm: LocalLLM, question: str, passages: Sequence[str]) -> list[float]:
    """log P(question | passage) for each passage, each cut to its first `PASSAGE_TOKENS` tokens."""
    wanted = llm.text_tokens(" " + " ".join(question.split()))
    head = llm.text_tokens("Passage: ")
    tail = llm.text_tokens("\nA question this passage answers:")
    room = max(1, min(PASSAGE_TOKENS, llm.n_ctx - len(head) - len(tail) - len(wanted)))
    return [
        llm.continuation_logprob([*head, *llm.text_tokens(" ".join(p.split()))[:room], *tail], wanted) for p in passages
    ]


def _z(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    spread = float(array.std())
    return (array - array.mean()) / spread if spread > 1e-12 else np.zeros_like(array)


def blend(likelihoods: Sequence[float], cosines: Sequence[float], weight: float = LLM_WEIGHT) -> np.ndarray:
    """The blended score of each candidate (`LLM_WEIGHT`); higher is better."""
    return np.asarray(weight * _z(likelihoods) + (1.0 - weight) * _z(cosines))


def llm_rerank(
    question: str,
    hits: Sequence[Hit],
    *,
    llm: str | None = None,
    candidates: int = LLM_CANDIDATES,
    weight: float = LLM_WEIGHT,
) -> list[Hit]:
    """`hits` (first-stage order) with the first `candidates` re-sorted by the blended score,
    each with that score squashed to 0..1 as its `rerank_score`; the hits after them follow in
    their order. (`retrieval.rerank_hits` then keeps the best `top_k`, diversified.)"""
    pool = list(hits[: max(candidates, 1)])
    if len(pool) < 2:
        return list(hits)
    likelihoods = question_likelihoods(_scorer(llm), question, [h.content for h in pool])
    scores = blend(likelihoods, [h.score for h in pool], weight)
    order = np.argsort(-scores, kind="stable")
    ranked = [replace(pool[i], rerank_score=float(1.0 / (1.0 + np.exp(-scores[i])))) for i in order]
    return ranked + list(hits[len(pool) :])

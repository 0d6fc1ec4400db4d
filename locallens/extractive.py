"""`ask --extractive`: an answer made of the excerpts' own sentences, with no language model.

The sentences of the retrieved excerpts are scored against the question exactly as the trimmer
scores them (cosine similarity with the question vector, window 0, through the sentence cache),
and the most relevant ones are printed in relevance order, each with the number of its excerpt.
Every printed sentence is an excerpt's sentence, so every one is supported and cited by
construction. It is instant and deterministic: for scripts, cron and machines without the LLM.

Selection: sentences scoring at least `min_relevance` and within `margin` of the best one, no
heading or decoration, no sentence twice (overlapping chunks repeat sentences), at most
`max_sentences` and `max_tokens` tokens (the first one always fits). When no sentence reaches
`min_relevance`, the answer is the plain refusal: the excerpts do not answer the question.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from locallens.claims import (
    MIN_RELEVANCE,
    CheckedAnswer,
    Claim,
    Encode,
    claim_text,
    excerpt_sentences,
    refusal,
    with_citations,
)
from locallens.config import DEFAULT_MAX_TOKENS
from locallens.domain import Hit
from locallens.tokens import count_tokens
from locallens.trim import unit_rows

# Measured on the sample questions (benchmarks/bench_answers.py): 2 and 3 sentences state the
# expected answer equally often (16 of 20), 1 sentence in 12 of 20; the shorter answer wins.
DEFAULT_MAX_SENTENCES = 2
DEFAULT_MARGIN = 0.15


def _is_heading(sentence: str) -> bool:
    return sentence.lstrip().startswith("#")


def extractive_answer(
    question: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_sentences: int = DEFAULT_MAX_SENTENCES,
    margin: float = DEFAULT_MARGIN,
    min_relevance: float = MIN_RELEVANCE,
) -> CheckedAnswer:
    """The most relevant sentences of `hits` (numbered from 1), each cited; see the module doc."""
    started = time.perf_counter()
    excerpts = excerpt_sentences(hits)
    candidates = [(s, n) for s, n in zip(excerpts.sentences, excerpts.owner) if not _is_heading(s)]
    scores: list[float] = []
    if candidates:
        vectors = unit_rows(np.asarray(encode([s for s, _ in candidates]), dtype=np.float64))
        query = unit_rows(np.asarray(question_vector, dtype=np.float64).reshape(-1))
        scores = [float(x) for x in vectors @ query]

    # Relevance order; equal scores keep the excerpts' order (rank, then position).
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    best = scores[order[0]] if order else 0.0
    claims: list[Claim] = []
    seen: set[str] = set()
    used_tokens = 0
    for i in order:
        score = scores[i]
        if score < min_relevance or score < best - margin or len(claims) >= max_sentences:
            break
        sentence, n = candidates[i]
        text = claim_text(sentence)
        key = " ".join(text.lower().split())
        if not text or key in seen:
            continue
        tokens = count_tokens(text) + 3  # the citation
        if claims and used_tokens + tokens > max_tokens:
            break
        seen.add(key)
        used_tokens += tokens
        claims.append(
            Claim(
                written=sentence,
                text=with_citations(text, set(), n),
                claim=text,
                supported=True,
                score=1.0,
                source=n,
                evidence=sentence,
                relevance=score,
                citations=[n],
                citation_added=True,
                extracted=True,
            )
        )
    refused = not claims
    answer = refusal(question) if refused else "\n".join(c.text for c in claims)
    return CheckedAnswer(
        raw=answer,
        claims=claims,
        answer=answer,
        withheld=0,
        refused=refused,
        check_ms=(time.perf_counter() - started) * 1000,
    )

"""The answer check, as one face: every sentence of an answer checked against the excerpts sent.

The package is split by job:
- `check`: the check itself (`check_answer`, `Claim`, `CheckedAnswer`, the thresholds);
- `facts`: the literal facts of a claim and whether the excerpts hold them;
- `words`: content words and their keys (stems; CJK characters and runs);
- `align`: a claim's clauses and words against the sentences it rests on (polarity, opposites,
  numbers and identifiers, words lined up by their own vectors);
- `citations`: citation markers kept with their sentence, stripped and repaired;
- `refusal`: the plain refusal in the question's language.
"""

from __future__ import annotations

from locallens.claims.check import (
    MIN_RELEVANCE,
    MIN_SUPPORT,
    UNSUPPORTED_MARK,
    CheckedAnswer,
    Claim,
    check_answer,
    excerpt_sentences,
)
from locallens.claims.citations import claim_text, move_citations_before_stops, with_citations
from locallens.claims.facts import extract_facts, missing_facts
from locallens.claims.refusal import REFUSALS, question_language, refusal
from locallens.claims.words import novel_words, vocabulary_of
from locallens.trim import Encode

__all__ = [
    "MIN_RELEVANCE",
    "MIN_SUPPORT",
    "REFUSALS",
    "UNSUPPORTED_MARK",
    "CheckedAnswer",
    "Claim",
    "Encode",
    "check_answer",
    "claim_text",
    "excerpt_sentences",
    "extract_facts",
    "missing_facts",
    "move_citations_before_stops",
    "novel_words",
    "question_language",
    "refusal",
    "vocabulary_of",
    "with_citations",
]

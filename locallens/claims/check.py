"""The answer check: every sentence the model wrote is checked against the excerpts it was sent.

A station of its own between the LLM and the output. It receives the answer text and the
numbered excerpts, and returns one `Claim` per sentence:

1. The answer is split into sentences with the project's splitter (`split_sentences`), after a
   citation written after the full stop (`... 5433. [1]`) is moved before it, so that it stays
   with its sentence. Units with no letter or digit (a rule, a lone `[1]`) are decoration, not
   claims, and a sentence said a second time is dropped.
2. Each claim (citation markers and list/heading markup removed) is embedded with the brain's
   own embedder, together with every sentence of every excerpt, in one call through the
   sentence cache; its support `score` is the best cosine similarity with an excerpt sentence,
   and `source` the number of the excerpt that holds that sentence.
3. The literal facts of the claim are extracted (numbers, versions, ports, times, dates, paths,
   file names, URLs, e-mail addresses, command-line flags, `code`, "quoted names", identifiers
   such as `snake_case`, `CamelCase` and `ACRONYMS`, and capitalised names inside a sentence) and
   each must occur in the excerpts' text (or in the question); the ones that do not are
   `facts_missing`.
4. Every content word of the claim (function words aside, compared by a five-letter stem) must
   occur in the excerpts or the question; the ones that do not are `words_missing`: a faithful
   paraphrase reuses the excerpts' words, while a sentence built around them brings its own
   ("La capa de la oficina está en ...", "... is a correction to the original function").
5. A claim is `supported` when its score reaches `min_support` and no fact or word is missing.
6. Citations are repaired: `[n]` markers that point at an excerpt which does not back the claim
   are `wrong_citation` and removed from the printed text; a supported claim left without a
   citation gets the number of its supporting excerpt (`citation_added`).

What it checks is support, not truth: a sentence copied from a wrong excerpt passes, a sentence
that recombines the excerpts' own words and numbers wrongly ("200 requests per day" beside an
excerpt's "1,200 requests per minute ... a burst of 200") can pass, and a true sentence the
excerpts do not state is withheld. The thresholds are measured (see below and
`benchmarks/bench_answers.py`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locallens.claims.citations import claim_text, move_citations_before_stops, with_citations
from locallens.claims.facts import extract_facts, missing_facts
from locallens.claims.refusal import refusal
from locallens.claims.words import novel_words, vocabulary_of
from locallens.domain import Hit
from locallens.prompt import CITATION_RE, citation_numbers
from locallens.sentences import split_chunk_prefix, split_sentences
from locallens.trim import Encode, unit_rows

# Both thresholds were measured with the packaged MiniLM and SmolLM2 (benchmarks/bench_answers.py;
# figures in docs/decisions.md#answer-check-thresholds).
# MIN_SUPPORT: a claim is printable from this cosine similarity with its best excerpt sentence.
MIN_SUPPORT = 0.82
# MIN_RELEVANCE: an answer whose supported sentences all score below this against the question
# does not answer it; the extractive answer keeps only excerpt sentences at or above it.
MIN_RELEVANCE = 0.60

_HAS_ALNUM = re.compile(r"\w")


@dataclass(slots=True)
class Claim:
    """One sentence of an answer, checked against the excerpts."""

    written: str  # the sentence as the model wrote it
    text: str  # as printed: citations repaired (wrong ones removed, a missing one added)
    claim: str  # what was checked: no citation markers, no list or heading markup
    supported: bool
    score: float  # best cosine similarity with an excerpt sentence
    source: int | None  # number of the excerpt holding that sentence (1-based)
    evidence: str | None  # that excerpt sentence
    relevance: float  # cosine similarity with the question
    facts: list[str] = field(default_factory=list)
    facts_missing: list[str] = field(default_factory=list)
    words_missing: list[str] = field(default_factory=list)  # content words found nowhere in the excerpts
    citations: list[int] = field(default_factory=list)  # the citations printed with it
    citation_added: bool = False
    wrong_citation: list[int] = field(default_factory=list)  # cited excerpts that do not back it
    invalid_citation: list[int] = field(default_factory=list)  # cited numbers with no excerpt
    extracted: bool = False  # an excerpt's own sentence (the extractive answer), not the model's
    answering: bool = False  # extracted: the unit that answers (not one printed as its context)

    def as_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "supported": self.supported,
            "score": round(self.score, 4),
            "source": self.source,
            "relevance": round(self.relevance, 4),
            "facts_missing": self.facts_missing,
            "words_missing": self.words_missing,
            "citations": self.citations,
            "citation_added": self.citation_added,
            "wrong_citation": self.wrong_citation,
            "extracted": self.extracted,
            **({"answering": self.answering} if self.extracted else {}),
        }


@dataclass(slots=True)
class CheckedAnswer:
    """The answer after the check: what is printed, and why."""

    raw: str  # the model's answer, unchanged
    claims: list[Claim]
    answer: str  # the printed answer: supported claims only (or all, marked, when asked)
    withheld: int  # unsupported claims left out of `answer`
    refused: bool  # nothing supported answers the question: `answer` is the plain refusal
    check_ms: float = 0.0
    fallback: bool = False  # the model's answer was all withheld; `answer` is the extractive one
    summary: bool = False  # extracted: a summary of a document or section (a broad question)
    # Refused because the excerpts hold no answer to the question (the extractive answer's
    # evidence, `locallens.extractive.answer_evidence`), whatever the model wrote from them.
    unanswered: bool = False

    def notices(self, show_unsupported: bool = False) -> list[str]:
        """What the check did to the model's answer, in one plain line, when it matters to the
        person reading: an answer not the model's, or sentences left out. Repaired citations and
        the like are in the JSON claims only."""
        model = [c for c in self.claims if not c.extracted]
        if not model:
            return []
        shown = " (shown marked below, as asked)" if show_unsupported else " (--show-unsupported shows it)"
        if self.fallback:
            if any(c.score >= MIN_SUPPORT and not c.facts_missing and not c.words_missing for c in model):
                return [
                    f"the model's answer does not state what the excerpts' best passage does; this is that passage{shown}"
                ]
            return [f"the model's answer is not backed by the excerpts; this is the excerpts' own passage{shown}"]
        if self.unanswered:
            return [f"the excerpts do not answer the question; the model's answer is left out{shown}"]
        if self.refused:
            return [f"the model's answer is not backed by the excerpts{shown}"]
        if self.withheld:
            what = "sentence" if self.withheld == 1 else "sentences"
            return [f"{self.withheld} {what} of the model's answer left out: not backed by the excerpts{shown}"]
        return []

    @property
    def citations(self) -> list[int]:
        """Excerpt numbers cited by the printed answer, in order of first appearance."""
        seen: dict[int, None] = {}
        for claim in self.claims:
            if claim.supported and not self.refused:
                seen.update(dict.fromkeys(claim.citations))
        return list(seen)


@dataclass(frozen=True, slots=True)
class _Excerpts:
    sentences: list[str]  # every sentence of every excerpt, flattened
    owner: list[int]  # excerpt number (1-based) of each sentence
    texts: list[str]  # the excerpts' full contents, by number - 1


def excerpt_sentences(hits: Sequence[Hit]) -> _Excerpts:
    """Every sentence of every excerpt (prefix aside, decoration dropped), with its owner."""
    sentences: list[str] = []
    owner: list[int] = []
    for n, hit in enumerate(hits, start=1):
        _prefix, body = split_chunk_prefix(hit.content)
        for sentence in split_sentences(body):
            if _HAS_ALNUM.search(sentence):
                sentences.append(sentence)
                owner.append(n)
    return _Excerpts(sentences, owner, [hit.content for hit in hits])


def _backs(
    n: int, per_excerpt: dict[int, float], facts: Sequence[str], texts: Sequence[str], min_support: float
) -> bool:
    """Excerpt `n` backs a claim: similar enough to one of its sentences, or holding one of its facts."""
    if per_excerpt.get(n, 0.0) >= min_support:
        return True
    return bool(facts) and len(missing_facts(facts, texts[n - 1])) < len(facts)


def check_answer(
    answer: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    *,
    min_support: float = MIN_SUPPORT,
    min_relevance: float = MIN_RELEVANCE,
    show_unsupported: bool = False,
    question: str = "",
) -> CheckedAnswer:
    """Check every sentence of `answer` against `hits` (the excerpts sent, numbered from 1).

    `encode` is called once, for the claims and the excerpt sentences together. The printed
    answer keeps the answer's line layout; unsupported sentences are left out (or, with
    `show_unsupported`, kept and marked). When no supported sentence is relevant to the question
    (`min_relevance`), the printed answer is the plain refusal in the question's language.
    """
    started = time.perf_counter()
    normalised = move_citations_before_stops(answer.strip())
    units = split_sentences(normalised)
    # Where each unit sits in the answer, to keep its line layout when printing.
    spans: list[tuple[int, int]] = []
    pos = 0
    for unit in units:
        start = normalised.find(unit, pos)
        start = pos if start < 0 else start
        spans.append((start, start + len(unit)))
        pos = start + len(unit)

    claims_at: list[int] = []  # indices into `units` of real claims
    claim_texts: list[str] = []
    said: set[str] = set()
    for i, unit in enumerate(units):
        text = claim_text(unit)
        key = text.lower()
        if _HAS_ALNUM.search(text) and key not in said:  # a sentence said again is dropped
            said.add(key)
            claims_at.append(i)
            claim_texts.append(text)

    excerpts = excerpt_sentences(hits)
    n_hits = len(hits)
    claims: list[Claim] = []
    if claim_texts:
        vectors = unit_rows(np.asarray(encode(claim_texts + excerpts.sentences), dtype=np.float64))
        claim_vectors, sentence_vectors = vectors[: len(claim_texts)], vectors[len(claim_texts) :]
        query = unit_rows(np.asarray(question_vector, dtype=np.float64).reshape(1, -1))[0]
        relevance = claim_vectors @ query
        similarity = claim_vectors @ sentence_vectors.T if excerpts.sentences else None
        owners = np.asarray(excerpts.owner)
        # The question's own terms (an acronym, a version it names) are not inventions either.
        all_text = "\n".join([*excerpts.texts, question])
        vocabulary = vocabulary_of(all_text)
        for row, (i, text) in enumerate(zip(claims_at, claim_texts)):
            written = units[i]
            facts = extract_facts(text)
            missing = missing_facts(facts, all_text)
            novel = novel_words(text, vocabulary)
            if similarity is not None and similarity.shape[1]:
                best = int(np.argmax(similarity[row]))
                score, source, evidence = float(similarity[row, best]), excerpts.owner[best], excerpts.sentences[best]
                per_excerpt = {n: float(similarity[row, owners == n].max()) for n in set(excerpts.owner)}
            else:
                score, source, evidence, per_excerpt = 0.0, None, None, {}
            supported = score >= min_support and not missing and not novel

            cited: list[int] = []
            for match in CITATION_RE.finditer(written):
                cited.extend(n for n in citation_numbers(match) if n not in cited)
            invalid = [n for n in cited if not 1 <= n <= n_hits]
            valid = [n for n in cited if 1 <= n <= n_hits]

            right = [n for n in valid if _backs(n, per_excerpt, facts, excerpts.texts, min_support)]
            wrong = [n for n in valid if n not in right]
            add = source if supported and not right else None
            printed = with_citations(written, set(right), add) if supported else written
            claims.append(
                Claim(
                    written=written,
                    text=printed,
                    claim=text,
                    supported=supported,
                    score=score,
                    source=source,
                    evidence=evidence,
                    relevance=float(relevance[row]),
                    facts=facts,
                    facts_missing=missing,
                    words_missing=novel,
                    citations=right + ([add] if add is not None else []),
                    citation_added=add is not None,
                    wrong_citation=wrong,
                    invalid_citation=invalid,
                )
            )

    answers_question = any(c.supported and c.relevance >= min_relevance for c in claims)
    withheld = sum(1 for c in claims if not c.supported)
    if answers_question:
        printed = _layout(normalised, spans, claims_at, claims, show_unsupported)
    elif show_unsupported and claims:
        printed = refusal(question) + "\n\n" + _layout(normalised, spans, claims_at, claims, True)
    else:
        printed = refusal(question)
    return CheckedAnswer(
        raw=answer,
        claims=claims,
        answer=printed,
        withheld=withheld if answers_question else len(claims),
        refused=not answers_question,
        check_ms=(time.perf_counter() - started) * 1000,
    )


UNSUPPORTED_MARK = "(unsupported)"


def _layout(
    text: str, spans: list[tuple[int, int]], claims_at: list[int], claims: list[Claim], show_unsupported: bool
) -> str:
    """The printed claims, separated as in the answer: a blank line, a line break or a space."""
    out: list[str] = []
    for i, claim in zip(claims_at, claims):
        if claim.supported:
            piece = claim.text
        elif show_unsupported:
            piece = f"{UNSUPPORTED_MARK} {claim.written}"
        else:
            continue
        if out:
            # What stood right before this sentence in the answer (after whatever preceded it,
            # printed or not): a paragraph break, a line break or a space.
            gap = text[spans[i - 1][1] : spans[i][0]] if i > 0 else " "
            out.append("\n\n" if gap.count("\n") >= 2 else "\n" if "\n" in gap else " ")
        out.append(piece)
    return "".join(out)

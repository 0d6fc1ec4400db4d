"""The answer check: every sentence the model wrote is checked against the excerpts it was sent.

A station of its own between the LLM and the output. It receives the answer text and the
numbered excerpts, and returns one `Claim` per sentence:

1. The answer is split into sentences with the project's splitter (`split_sentences`), after a
   citation written after the full stop (`... 5433. [1]`) is moved before it, so that it stays
   with its sentence. Units with no letter or digit (a rule, a lone `[1]`) are decoration, not
   claims, and a sentence said a second time is dropped.
2. Each claim (citation markers and list/heading markup removed) is embedded with the brain's
   own embedder, together with every sentence of every excerpt (and the statements of a
   sentence unit that holds several: a list item of two sentences, a paragraph after a fence),
   in one call through the sentence cache; its support `score` is the best cosine similarity
   with one excerpt sentence or with the mean of two of its closest ones (a claim joining two
   statements), and `source` the number of the excerpt that holds its closest sentence.
3. The literal facts of the claim are extracted (numbers, versions, ports, times, dates, paths,
   file names, URLs, e-mail addresses, command-line flags, `code`, "quoted names", identifiers
   such as `snake_case`, `CamelCase` and `ACRONYMS`, and capitalised names inside a sentence) and
   each must occur in the excerpts' text (or their file names, or the question); the ones that
   do not are `facts_missing`.
4. Content words of the claim (function words aside, compared by Porter stem or five-letter
   prefix) that occur nowhere in the excerpts or the question are `words_missing`: a faithful
   paraphrase brings at most one of its own ("retained" for "kept"), a sentence built around the
   excerpts' words brings more ("La capa de la oficina está en ..."). A word of ordinary prose
   ("turns", "serves") counts half (COMMON_ZIPF), so a paraphrase may bring two such words.
5. `conflicts`: the excerpts' own words and facts recombined. A number found only in a sentence
   far less similar to the claim than its closest one (FACT_MARGIN: "kept for 90 days", where 90
   days is another retention); a number or identifier that stands, word for word, where the
   closest sentence has another; a number carrying the label of another number of that sentence
   ("the cap for Madrid is 140 EUR" against "Madrid 160 EUR, Lisbon 140 EUR"); a negation added to
   or dropped from the sentence the claim repeats.
   The alignment rules (`align`) add: each clause of the claim against the excerpt clause holding
   most of its words (a negation added or dropped where it bears on shared words, a word for its
   opposite, a number, number word or identifier for another one), a number counting something
   else than in the close sentences ("214 dispatchers" / "214 carriers"), an identifier found
   only in a distant sentence.
   A claim is `supported` when it is backed, no fact is missing, at most MAX_NOVEL_WORDS words
   are, and nothing conflicts. Backed: its score reaches `min_support` and it brings at most
   MAX_UNALIGNED_HIGH words the sentences it rests on do not hold, or its content words are
   nearly all those of its closest sentences (MIN_COVERAGE); optionally (off by default, see
   ALIGNED_TIERS) its words line up with those sentences and its score reaches a lower floor.
6. Citations are repaired: `[n]` markers that point at an excerpt which does not back the claim
   are `wrong_citation` and removed from the printed text; a supported claim left without a
   citation gets the number of its supporting excerpt (`citation_added`).

What it checks is support, not truth, and with an embedder and word rules rather than an
entailment model: a sentence copied from a wrong excerpt passes, a recombination the rules above
do not see (two subjects' roles swapped, "stays bound" for "is cleared") can pass, and a faithful
paraphrase in words of its own is withheld. The thresholds are measured on the packaged model's
answers (`benchmarks/bench_answers.py`) and on sentences a capable model writes
(`benchmarks/bench_check.py`).
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locallens.claims.align import NUMBER_WORDS, clause_conflicts, relabelled, soft_aligned
from locallens.claims.align import negated as is_negated
from locallens.claims.citations import claim_text, move_citations_before_stops, with_citations
from locallens.claims.facts import extract_facts, missing_facts
from locallens.claims.refusal import refusal
from locallens.claims.words import (
    FUNCTION_WORDS,
    common_word,
    content_words,
    known_word,
    novel_words,
    vocabulary_of,
    word_key,
)
from locallens.domain import Hit
from locallens.prompt import CITATION_RE, citation_numbers
from locallens.sentences import split_chunk_prefix, split_sentences
from locallens.trim import Encode, unit_rows

# Both thresholds were measured with the packaged MiniLM and SmolLM2 (benchmarks/bench_answers.py;
# figures in docs/decisions.md#answer-check-thresholds).
# MIN_SUPPORT: a claim is printable from this cosine similarity with its best excerpt sentence
# (or the mean of two, below).
MIN_SUPPORT = 0.82
# MIN_RELEVANCE: an answer whose supported sentences all score below this against the question
# does not answer it; the extractive answer keeps only excerpt sentences at or above it.
MIN_RELEVANCE = 0.60

# The rules for what a capable model writes, measured on hand-labelled sentences
# (benchmarks/bench_check.py; docs/benchmarks.md#the-answer-check-on-a-capable-models-sentences).
# A claim may rest on two excerpt sentences at once (a summary, two excerpts joined): its score is
# then that of the two sentences' mean vector, taken over the PAIR_CANDIDATES sentences closest
# to it.
PAIR_CANDIDATES = 5
# A claim whose content words are this share of the words of its COVERAGE_SENTENCES closest
# sentences is backed by them whatever its cosine (a paraphrase that reorders them scores low).
MIN_COVERAGE = 0.9
COVERAGE_SENTENCES = 3
# Both allowances need a statement: a fragment of a few words ("Glosario breve", a heading the
# model echoed) is trivially covered. Shorter claims need the cosine and all their words.
MIN_STATEMENT_WORDS = 4
# Content words found nowhere in the excerpts: a paraphrase brings one of its own ("retained" for
# "kept"); a sentence built around the excerpts' words brings more.
MAX_NOVEL_WORDS = 1
# A number must come from a sentence close to the claim: one whose similarity is at most
# FACT_MARGIN under the claim's closest sentence. A number found only in a distant sentence was
# moved from another statement ("kept for 90 days", where 90 days is the retention of something
# else).
FACT_MARGIN = 0.3
# A literal (or word) replaced by another counts only in a claim that copies this share of its
# closest sentence.
SWAP_ALIGNED = 0.6
# A claim that repeats its closest sentence (this share of its content words found in it, or the
# NEAR share at the NEAR cosine) must keep that sentence's polarity: a "not" added or dropped
# turns it into the opposite statement.
NEGATION_OVERLAP = 0.85
NEGATION_NEAR_OVERLAP, NEGATION_NEAR_SCORE = 0.75, 0.8

# The alignment rules (`align`), for what a capable model writes, measured on the tune split of
# benchmarks/bench_check.py and checked on its held-out and fresh sentences
# (docs/decisions.md#answer-check-thresholds). ALIGN = False is the check as it was before them.
ALIGN = True
# The sentences a claim rests on: its WINDOW_SENTENCES closest ones, every sentence of the excerpt
# holding its closest one (WINDOW_EXCERPTS), not the question (WINDOW_QUESTION). A content word of
# the claim they do not hold is `words_unaligned`.
WINDOW_SENTENCES = 3
WINDOW_EXCERPTS = 1
WINDOW_QUESTION = False
# Off by default (MAX_SOFT = 0, ALIGNED_TIERS empty): backing more sentences by their aligned
# words. Measured with MAX_SOFT = 1 and ALIGNED_TIERS ((0.6, 0), (0.7, 1)): on the tune split false
# withhold 0.49 -> 0.35 at catch 0.96 -> 0.95, but on the held-out and fresh sentences, never tuned
# on, it let through about one unbacked sentence for each backed one it kept.
# A word the excerpts hold nowhere lines up with a word of those sentences at SOFT_ALIGN, the
# cosine of the two words' own vectors ("verified" / "tested", "combines" / "merge"), for at most
# MAX_SOFT words a claim; a word the excerpts hold elsewhere (SOFT_ELSEWHERE) or a name or
# identifier (SOFT_NAMES) never does: it is another statement's word ("Fridays" / "Mondays").
SOFT_ALIGN = 0.45
MAX_SOFT = 0
SOFT_ELSEWHERE = False
SOFT_NAMES = False
# A claim is backed from a cosine of `floor` when at most `most` of its content words are not held
# by its TIER_SENTENCES closest sentences (the words of one statement, not the whole excerpt's),
# and it brings MIN_NEW_WORDS content words or facts the question does not hold (a restatement
# of the question in the excerpts' words is not an answer).
ALIGNED_TIERS: tuple[tuple[float, int], ...] = ()
TIER_SENTENCES = 2
MIN_NEW_WORDS = 2
# A claim backed by its cosine alone may bring no more than this many unaligned words (an
# invented clause brings several).
MAX_UNALIGNED_HIGH = 2
# An identifier, like a number, must come from a sentence close to the claim (FACT_MARGIN).
FACT_IDENTIFIERS = True
# A number the close sentences hold must count what they say it counts (`align.relabelled`).
UNIT_RULE = True
# The clauses a claim's clauses are compared with, for polarity and opposites.
CLAUSE_SENTENCES = 5
# A paraphrase's own ordinary words: a word the excerpts hold nowhere weighs COMMON_WEIGHT instead
# of 1 against MAX_NOVEL_WORDS and MAX_UNALIGNED_HIGH when it is a lower-case word of ordinary
# prose (Zipf >= COMMON_ZIPF in English or Spanish: "turns", "linear", "behaviour", "serves"), so
# a backed claim may bring two of them. Never a name, an identifier, a number, a rare word, or a
# word the excerpts hold elsewhere (another statement's word: "when the block is left", where the
# closest sentence says "entered"); and only for a claim whose facts are all in its
# RELAX_SENTENCES closest sentences and that is negated only if one of them is. Measured on the
# tune split of benchmarks/bench_check.py (docs/decisions.md#answer-check-thresholds); 0 is off.
COMMON_ZIPF = 4.0
COMMON_WEIGHT = 0.5
RELAX_SENTENCES = 2

_HAS_ALNUM = re.compile(r"\w")
_WORD = re.compile(r"[^\W\d_]{2,}")
# Where a unit of the splitter holds several statements: a blank line, a fence, a list item, a
# full stop before a capital.
_PIECE_BREAK = re.compile(
    r"\n\s*\n|^\s*```[\w-]*\s*$|\n\s*(?=[-*+]\s|\d{1,3}[.)]\s)|(?<=[.!?])\s+(?=[\"“(`¿¡]?[A-ZÁÉÍÓÚÑ])",
    re.M,
)
_TOKEN = re.compile(r"\d[\d.,:]*\d|\d|[^\W\d_][\w]*")
_NUMBER = re.compile(r"\d")
_NOT_A_NEGATION = re.compile(r"\bno (?:more|less|longer|later|earlier|fewer|sooner) than\b", re.I)
# Negation cues (English, Spanish): a claim and the excerpt sentence it rests on must agree.
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|nunca|ningún|ninguna|ninguno|nada|"
    r"tampoco|sin)\b|n['’]t\b",
    re.I,
)


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
    # Content words its closest sentences do not hold and no word of theirs lines up with.
    words_unaligned: list[str] = field(default_factory=list)
    # Why a claim that looks backed is not: a fact taken from a distant sentence, a negation the
    # excerpt sentence does not have (or drops).
    conflicts: list[str] = field(default_factory=list)
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
            "conflicts": self.conflicts,
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
    # `answer` is the extractive passage, not the model's answer (followed by those of the model's
    # supported sentences that add to it, if any: `generation.compose`).
    fallback: bool = False
    summary: bool = False  # extracted: a summary of a document or section (a broad question)
    # Refused because the excerpts hold no answer to the question (the extractive answer's
    # evidence, `locallens.extractive.answer_evidence`), whatever the model wrote from them.
    unanswered: bool = False
    # Refused: the question's words that no chunk of the brain holds and the language hardly
    # uses (`locallens.extractive.unknown_words`): a tool the notes never mention, or a typo.
    unknown: tuple[str, ...] = ()
    close: dict[str, str] = field(default_factory=dict)  # of those, the notes' word each may misspell
    # Refused over the word the question is about, which no chunk holds though the language uses
    # it (`locallens.extractive.missing_topic`: "dog"); it is among `unknown` too.
    topic: str = ""

    def notices(self, show_unsupported: bool = False) -> list[str]:
        """What the check did to the model's answer, in one plain line, when it matters to the
        person reading: an answer not the model's, or sentences left out. Repaired citations and
        the like are in the JSON claims only."""
        model = [c for c in self.claims if not c.extracted]
        if not model:
            return []
        shown = " (shown marked below, as asked)" if show_unsupported else " (--show-unsupported shows it)"
        if self.fallback:
            if added := sum(c.supported for c in model):
                what = "sentence" if added == 1 else "sentences"
                return [
                    f"the excerpts' best passage, then {added} {what} of the model's answer that {'adds' if added == 1 else 'add'} to it{shown}"
                ]
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


def _pieces(unit: str) -> list[str]:
    """The statements of one splitter unit when it holds several (a list item of two sentences, a
    paragraph after a code fence the chunk opened in the middle of): compared on their own too."""
    parts = [part.strip() for part in _PIECE_BREAK.split(unit) if part and part.strip()]
    return [part for part in parts if len(_WORD.findall(part)) >= 3] if len(parts) > 1 else []


def evidence_sentences(hits: Sequence[Hit]) -> _Excerpts:
    """What a claim is compared with: every sentence of every excerpt (`excerpt_sentences`) and
    the statements of the sentences that hold several (`_pieces`), each once, with its owner."""
    base = excerpt_sentences(hits)
    sentences: list[str] = []
    owner: list[int] = []
    seen: set[tuple[int, str]] = set()
    for sentence, n in zip(base.sentences, base.owner):
        for text in [sentence, *_pieces(sentence)]:
            if (n, text) not in seen:
                seen.add((n, text))
                sentences.append(text)
                owner.append(n)
    return _Excerpts(sentences, owner, base.texts)


def _backs(
    n: int, per_excerpt: dict[int, float], facts: Sequence[str], texts: Sequence[str], min_support: float
) -> bool:
    """Excerpt `n` backs a claim: similar enough to one of its sentences, or holding one of its facts."""
    if per_excerpt.get(n, 0.0) >= min_support:
        return True
    return bool(facts) and len(missing_facts(facts, texts[n - 1])) < len(facts)


def _weight(words: Sequence[str], common: set[str]) -> float:
    """What the words a claim brings weigh: COMMON_WEIGHT each of `common`, 1 each of the others."""
    return sum(COMMON_WEIGHT if w.lower() in common else 1.0 for w in words)


def _overlap(claim: str, sentence: str) -> float:
    """The share of the claim's content words found in `sentence` (by their keys, `words`)."""
    words = content_words(claim)
    if not words:
        return 0.0
    vocabulary = vocabulary_of(sentence)
    return sum(1 for word in words if known_word(word, vocabulary)) / len(words)


_IDENTIFIER = re.compile(r"[A-Za-z]*[a-z][A-Z]\w*|[A-Z]{2,}\w*|\w+_\w*")


def _literal(token: str) -> bool:
    """A token that names one thing: a number, or an identifier (`ValueError`, `RLock`, `SIGTERM`)."""
    return bool(_NUMBER.search(token) or _IDENTIFIER.fullmatch(token) or (ALIGN and token.lower() in NUMBER_WORDS))


def _swapped(claim: str, sentence: str, vocabulary: set[str]) -> list[str]:
    """Numbers, identifiers and words of the claim that stand where its closest sentence has
    another one: the claim and the sentence aligned word by word, a literal replaced by a literal
    ("kept for 90 days" against "kept for 35 days", "raises a ValueError" against "results in a
    ZeroDivisionError"), or one word by another the excerpts use too."""
    original, their_original = _TOKEN.findall(claim), _TOKEN.findall(sentence)
    ours, theirs = [t.lower() for t in original], [t.lower() for t in their_original]
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    found: list[str] = []
    # Only a near copy of the sentence says which value it replaced; a claim joining two
    # statements aligns by chance.
    if sum(block.size for block in matcher.get_matching_blocks()) < SWAP_ALIGNED * len(ours):
        return found
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or i2 - i1 > 3 or j2 - j1 > 3:
            continue
        # One word for another that the excerpts also use: a statement about something else
        # ("the production database" against "the staging database"). A synonym the excerpts
        # do not use is a paraphrase's word, not this.
        if i2 - i1 == 1 and j2 - j1 == 1:
            word, their = original[i1], their_original[j1]
            if (
                word.lower() not in FUNCTION_WORDS
                and their.lower() not in FUNCTION_WORDS
                and len(word) > 3
                and len(their) > 3
                and not _NUMBER.search(word + their)
                and word_key(word) != word_key(their)
                and known_word(word, vocabulary)
            ):
                found.append(f"{word} where the excerpt says {their}")
                continue
        mine = [t for t in original[i1:i2] if _literal(t)]
        other = [t for t in their_original[j1:j2] if _literal(t)]
        # Aligned between the same words on both sides: the same slot, another value.
        if mine and other and {t.lower() for t in mine} != {t.lower() for t in other} and i1 > 0 and j1 > 0:
            found.append(f"{', '.join(mine)} where the excerpt says {', '.join(other)}")
    return found


_SLOT_WINDOW = 2  # content words on each side of a number that say what it counts
_NAME_WEIGHT = 3  # a capitalised word in a number's label counts this much, another word 1
_SLOT_MARGIN = 2  # how much better another number's label must fit to be the claim's


def _slots(text: str) -> dict[str, list[dict[str, int]]]:
    """Each number of `text` with the content words around it (its label: "160 EUR" after
    "Madrid"), names weighing more, by number."""
    tokens = _TOKEN.findall(text)
    kinds: list[tuple[str, bool, str | None]] = []  # (token, is number, word key)
    for token in tokens:
        if _NUMBER.search(token):
            kinds.append((token.replace(",", ""), True, None))
        elif token.lower() in FUNCTION_WORDS or len(token) < 3:
            continue
        else:
            kinds.append((token, False, word_key(token)))
    slots: dict[str, list[dict[str, int]]] = {}
    for i, (token, number, _key) in enumerate(kinds):
        if not number:
            continue
        around: dict[str, int] = {}
        for j in [*range(i - 1, -1, -1)][: _SLOT_WINDOW * 2] + [*range(i + 1, len(kinds))][: _SLOT_WINDOW * 2]:
            other, other_number, key = kinds[j]
            if other_number or key is None:
                continue
            if abs(j - i) > _SLOT_WINDOW:
                continue
            around[key] = _NAME_WEIGHT if other[:1].isupper() else 1
        slots.setdefault(token, []).append(around)
    return slots


def _fit(label: dict[str, int], around: dict[str, int]) -> int:
    """How much of a number's label in the claim surrounds a number of the sentence."""
    return sum(weight for key, weight in label.items() if key in around)


def _misplaced(claim: str, sentence: str) -> list[str]:
    """Numbers of the claim that the closest sentence holds, but with the label of another of
    its numbers ("the cap for Madrid is 140 EUR" against "Madrid 160 EUR, Lisbon 140 EUR")."""
    ours, theirs = _slots(claim), _slots(sentence)
    found = []
    for number, contexts in ours.items():
        if number not in theirs:
            continue
        label = contexts[0]
        own = max(_fit(label, around) for around in theirs[number])
        rivals = [
            (_fit(label, around), other) for other, arounds in theirs.items() if other not in ours for around in arounds
        ]
        if rivals:
            score, other = max(rivals)
            if score >= own + _SLOT_MARGIN:
                found.append(f"{number} where the excerpt says {other}")
    return found


@dataclass(frozen=True, slots=True)
class _Support:
    score: float  # the claim's best cosine with one excerpt sentence, or with the mean of two
    best: int  # index of the closest excerpt sentence
    conflicts: list[str]
    coverage: float  # share of the claim's content words found in its closest sentences
    # Content words of the claim its WINDOW_SENTENCES closest sentences (and the question) do not
    # hold, and the window's own content words (to line them up with, `align.soft_aligned`).
    unaligned: list[str] = field(default_factory=list)
    window: list[str] = field(default_factory=list)
    words: int = 0  # content words of the claim
    tight: list[str] = field(default_factory=list)  # not held by its TIER_SENTENCES closest sentences
    # Its facts are all in its RELAX_SENTENCES closest sentences (or the question), and it is not
    # negated unless one of them is: its own ordinary words may weigh less (COMMON_ZIPF).
    faithful: bool = False


def _support(
    claim: str,
    facts: Sequence[str],
    similarity: np.ndarray,
    vectors: np.ndarray,
    claim_vector: np.ndarray,
    sentences: Sequence[str],
    question: str,
    vocabulary: set[str],
    owner: Sequence[int] = (),
) -> _Support:
    """How the excerpt sentences back one claim (`similarity`: its cosine with each of them)."""
    best = int(np.argmax(similarity))
    single = float(similarity[best])
    # Two sentences at once: the mean vector of each pair among the closest ones.
    score = single
    close = np.argsort(-similarity)[:PAIR_CANDIDATES]
    for a_pos, a in enumerate(close):
        for b in close[a_pos + 1 :]:
            mean = vectors[a] + vectors[b]
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                score = max(score, float(mean @ claim_vector) / norm)
    conflicts: list[str] = []
    # Each number must come from a sentence about the same thing as the claim.
    for fact in facts:
        literal = bool(_NUMBER.search(fact)) or (ALIGN and FACT_IDENTIFIERS and bool(_IDENTIFIER.fullmatch(fact)))
        if not literal or not missing_facts([fact], question):
            continue  # a name (the excerpt's subject is often only in its title), or the question's own
        holding = [i for i, text in enumerate(sentences) if not missing_facts([fact], text)]
        if holding and max(float(similarity[i]) for i in holding) < single - FACT_MARGIN:
            conflicts.append(f"{fact!r} is stated of something else")
    conflicts.extend(_swapped(claim, sentences[best], vocabulary))
    conflicts.extend(c for c in _misplaced(claim, sentences[best]) if c not in conflicts)
    if ALIGN and UNIT_RULE:
        near = [sentences[int(i)] for i in close[:CLAUSE_SENTENCES]]
        conflicts.extend(c for c in relabelled(claim, near) if c not in conflicts)
    # A negation added to, or dropped from, the sentence the claim repeats.
    overlap = _overlap(claim, sentences[best])
    if overlap >= NEGATION_OVERLAP or (overlap >= NEGATION_NEAR_OVERLAP and single >= NEGATION_NEAR_SCORE):
        negated = bool(_NEGATION.search(_NOT_A_NEGATION.sub("", claim)))
        nearest = [sentences[i] for i in close[:2]]
        if negated and not any(_NEGATION.search(text) for text in nearest):
            conflicts.append("negates what the excerpt states")
        elif not negated and _NEGATION.search(sentences[best]):
            conflicts.append("drops the excerpt's negation")
    if ALIGN:
        for conflict in clause_conflicts(claim, [sentences[i] for i in close[:CLAUSE_SENTENCES]]):
            if conflict not in conflicts and not any(c.split(" ")[0] in conflict for c in conflicts if "negation" in c):
                conflicts.append(conflict)
    coverage = _overlap(claim, "\n".join(sentences[i] for i in close[:COVERAGE_SENTENCES]))
    window_at = {int(i) for i in close[:WINDOW_SENTENCES]}
    if WINDOW_EXCERPTS:
        owners_of = {owner[int(i)] for i in close[:WINDOW_EXCERPTS]}
        window_at |= {j for j in range(len(sentences)) if owner[j] in owners_of}
    # The question's words are not the excerpts': a claim that restates the question lines up
    # only where the excerpts hold its words too (WINDOW_QUESTION).
    window_text = "\n".join([*(sentences[i] for i in sorted(window_at)), *([question] if WINDOW_QUESTION else [])])
    window_vocabulary = vocabulary_of(window_text)
    words = list(dict.fromkeys(content_words(claim)))
    unaligned = [w for w in words if not known_word(w, window_vocabulary)]
    # Only the switched-off ways of backing a claim (MAX_SOFT, ALIGNED_TIERS) read these.
    window = list(dict.fromkeys(w.lower() for w in content_words(window_text))) if MAX_SOFT else []
    tight: list[str] = []
    if ALIGNED_TIERS:
        tight_vocabulary = vocabulary_of("\n".join(sentences[int(i)] for i in close[:TIER_SENTENCES]))
        tight = [w for w in words if not known_word(w, tight_vocabulary)]
    faithful = False
    if COMMON_ZIPF:
        nearest_text = "\n".join(sentences[int(i)] for i in close[:RELAX_SENTENCES])
        faithful = not any(missing_facts([f], nearest_text) and missing_facts([f], question) for f in facts) and (
            not is_negated(claim) or any(is_negated(sentences[int(i)]) for i in close[:RELAX_SENTENCES])
        )
    return _Support(score, best, conflicts, coverage, unaligned, window, len(words), tight, faithful)


def check_answer(
    answer: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    *,
    min_support: float | None = None,
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
    min_support = MIN_SUPPORT if min_support is None else min_support
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

    excerpts = evidence_sentences(hits)
    n_hits = len(hits)
    claims: list[Claim] = []
    if claim_texts:
        unique = list(dict.fromkeys(claim_texts + excerpts.sentences))
        encoded = unit_rows(np.asarray(encode(unique), dtype=np.float64))
        row_of = {text: i for i, text in enumerate(unique)}
        claim_vectors = encoded[[row_of[t] for t in claim_texts]]
        sentence_vectors = encoded[[row_of[t] for t in excerpts.sentences]] if excerpts.sentences else None
        query = unit_rows(np.asarray(question_vector, dtype=np.float64).reshape(1, -1))[0]
        relevance = claim_vectors @ query
        similarity = claim_vectors @ sentence_vectors.T if sentence_vectors is not None else None
        owners = np.asarray(excerpts.owner)
        # The question's own terms (an acronym, a version it names) are not inventions either.
        # The excerpts' file names too: the model reads each excerpt under its path.
        all_text = "\n".join([*excerpts.texts, *(hit.chunk.relative_path for hit in hits), question])
        vocabulary = vocabulary_of(all_text)
        question_vocabulary = vocabulary_of(question)
        for row, (i, text) in enumerate(zip(claims_at, claim_texts)):
            written = units[i]
            facts = extract_facts(text)
            missing = missing_facts(facts, all_text)
            novel = novel_words(text, vocabulary)
            conflicts: list[str] = []
            found = None
            if similarity is not None and sentence_vectors is not None and similarity.shape[1]:
                found = _support(
                    text,
                    facts,
                    similarity[row],
                    sentence_vectors,
                    claim_vectors[row],
                    excerpts.sentences,
                    question,
                    vocabulary,
                    excerpts.owner,
                )
                score, conflicts, coverage = found.score, found.conflicts, found.coverage
                source, evidence = excerpts.owner[found.best], excerpts.sentences[found.best]
                per_excerpt = {n: float(similarity[row, owners == n].max()) for n in set(excerpts.owner)}
            else:
                score, source, evidence, per_excerpt, coverage = 0.0, None, None, {}, 0.0
            statement = len(content_words(text)) >= MIN_STATEMENT_WORDS
            unaligned: list[str] = found.unaligned if found is not None else []
            soft_all: set[str] = set()
            if ALIGN and MAX_SOFT and unaligned and found is not None:
                # Only a word the excerpts hold nowhere may line up by its vector: one they hold
                # elsewhere is another statement's (a wrong subject, a moved detail), and a name
                # or identifier is itself or another one.
                candidates = [
                    w
                    for w in unaligned
                    if (SOFT_ELSEWHERE or not known_word(w, vocabulary))
                    and (SOFT_NAMES or not (w[:1].isupper() or _IDENTIFIER.fullmatch(w)))
                ]
                lowered = [w.lower() for w in candidates]
                soft: set[str] = set()
                if lowered and found.window:
                    rows = unit_rows(np.asarray(encode(lowered + found.window), dtype=np.float64))
                    soft = set(soft_aligned(lowered, found.window, rows, SOFT_ALIGN))
                if len(soft) > MAX_SOFT:
                    soft = set()
                soft_all = soft
                unaligned = [w for w in unaligned if w.lower() not in soft]
                novel = [w for w in novel if w.lower() not in soft]
            backed = score >= min_support or (statement and coverage >= MIN_COVERAGE)
            # Words found nowhere in the excerpts that are ordinary prose weigh less (COMMON_ZIPF).
            common = (
                {w.lower() for w in novel if common_word(w, COMMON_ZIPF)}
                if COMMON_ZIPF and found is not None and found.faithful
                else set()
            )
            if ALIGN and found is not None and backed and _weight(unaligned, common) > MAX_UNALIGNED_HIGH:
                backed = False
            if ALIGN and found is not None and ALIGNED_TIERS:
                # Words its closest sentences do not hold, unless lined up by their vectors.
                loose = [w for w in found.tight if w.lower() not in soft_all]
                # ... and it must say something the question does not: a restatement of the
                # question in the excerpts' words ("the rotation is handed over to the next
                # engineer") is not an answer the floors should let through.
                beyond = [w for w in content_words(text) if not known_word(w, question_vocabulary)]
                # A fact counts once: `exec()` is not two things with the word "exec".
                beyond += [
                    f for f in facts if missing_facts([f], question) and not any(w.lower() in f.lower() for w in beyond)
                ]
                if (
                    statement
                    and len(set(beyond)) >= MIN_NEW_WORDS
                    and any(score >= floor and len(loose) <= most for floor, most in ALIGNED_TIERS)
                ):
                    backed = True
            allowed = MAX_NOVEL_WORDS if statement else 0
            supported = backed and not missing and _weight(novel, common) <= allowed and not conflicts

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
                    words_unaligned=unaligned,
                    conflicts=conflicts,
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

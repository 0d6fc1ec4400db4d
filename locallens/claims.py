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

from locallens.domain import Hit
from locallens.prompt import CITATION_RE, citation_numbers
from locallens.sentences import split_chunk_prefix, split_sentences
from locallens.trim import Encode, unit_rows

__all__ = [
    "MIN_RELEVANCE",
    "MIN_SUPPORT",
    "CheckedAnswer",
    "Claim",
    "Encode",
    "check_answer",
    "claim_text",
    "excerpt_sentences",
    "extract_facts",
    "missing_facts",
    "novel_words",
    "refusal",
    "vocabulary_of",
    "with_citations",
]


# Both thresholds were measured with the packaged MiniLM and SmolLM2 (benchmarks/bench_answers.py;
# figures in docs/decisions.md#answer-check-thresholds).
# MIN_SUPPORT: a claim is printable from this cosine similarity with its best excerpt sentence.
MIN_SUPPORT = 0.82
# MIN_RELEVANCE: an answer whose supported sentences all score below this against the question
# does not answer it; the extractive answer keeps only excerpt sentences at or above it.
MIN_RELEVANCE = 0.60


# --------------------------------------------------------------------------------------------
# Literal facts
# --------------------------------------------------------------------------------------------

_CODE = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]{1,80})"|“([^”\n]{1,80})”|«([^»\n]{1,80})»')
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s<>()\[\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.I)
# A path: slashes between name characters, starting at a word boundary.
_PATH = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*")
_FILE_EXTENSIONS = (
    "md|markdown|txt|rst|html?|pdf|py|json|toml|ya?ml|conf|cfg|ini|sh|sql|csv|log|gguf|db|js|ts|go|"
    "rs|java|c|h|cpp|xml|env|lock|service|timer|tar|gz|zip|exe|dll|so|pem|key|crt"
)
_FILE = re.compile(rf"(?<![\w.-])[\w-]{{2,}}\.(?:{_FILE_EXTENSIONS})\b", re.I)
_FLAG = re.compile(r"(?<!\S)--?[A-Za-z][\w-]*")
# Any token holding a digit: 5433, 16.2, v2.4.1, 09:30, 2024-10-02, 10.40.1.50, 1,200, 30%, c6i.
_DIGITS = re.compile(r"[\w.,:/+%°-]*\d[\w.,:/+%°-]*")
# snake_case and __dunder__, CamelCase / camelCase (an inner capital), ACRONYMS of 2+ letters.
_IDENT = re.compile(r"(?<!\w)(?:\w*[^\W\d]_\w*|_\w+|[^\W\d_]*[a-z][A-Z]\w*|[A-Z]{2,}[A-Z0-9]*)(?!\w)")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_EDGE_PUNCT = ".,:;/-'’"
# Capitalised words that are not names when they open a clause or a list entry.
_NOT_NAMES = frozenset(
    {
        "i",
        "a",
        "an",
        "the",
        "it",
        "this",
        "that",
        "these",
        "those",
        "yes",
        "no",
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "sí",
        "y",
        "o",
        "en",
        "de",
    }
)


def _strip_token(token: str) -> str:
    return token.strip(_EDGE_PUNCT)


def extract_facts(claim: str) -> list[str]:
    """The literal facts of one claim (citations already removed), in order, without repeats."""
    facts: list[str] = []
    taken: list[tuple[int, int]] = []  # spans already covered by a longer fact

    def add(value: str, span: tuple[int, int]) -> None:
        value = value.strip()
        if not value or any(a <= span[0] and span[1] <= b for a, b in taken):
            return
        taken.append(span)
        if value.lower() not in (f.lower() for f in facts):
            facts.append(value)

    for match in _CODE.finditer(claim):
        add(match.group(1), match.span())
    for match in _QUOTED.finditer(claim):
        add(next(g for g in match.groups() if g is not None), match.span())
    for match in _URL.finditer(claim):
        add(match.group(0).rstrip(".,;:"), match.span())
    for match in _PATH.finditer(claim):
        path = match.group(0).rstrip(".,;:")
        # `TCP/IP`, `and/or`: one slash between words is prose. A path starts at a root, has
        # two slashes or ends in a file name.
        if path.startswith(("/", "~", ".")) or path.count("/") >= 2 or _FILE.search(path):
            add(path, match.span())
    for match in _FILE.finditer(claim):
        add(match.group(0), match.span())
    for match in _FLAG.finditer(claim):
        add(match.group(0), match.span())
    for match in _DIGITS.finditer(claim):
        token = _strip_token(match.group(0))
        if any(ch.isdigit() for ch in token):
            add(token, match.span())
    for match in _IDENT.finditer(claim):
        add(_strip_token(match.group(0)), match.span())
    # Capitalised words inside a sentence: names of people, places, products, days.
    for match in _WORD.finditer(claim):
        word = _strip_token(match.group(0))
        if len(word) < 3 or not word[0].isupper() or word.lower() in _NOT_NAMES:
            continue
        before = claim[: match.start()].rstrip()
        if not before or before[-1] in ':;.!?¿¡"“«(-*#>':
            continue  # it opens the sentence, a clause or a list entry
        add(word, match.span())
    return facts


# Function words, which a faithful paraphrase may add freely (English and Spanish); every other
# word of a claim must occur in the excerpts or the question (see `novel_words`).
_FUNCTION_WORDS_EN_ES = frozenset(
    [
        "the",
        "and",
        "but",
        "that",
        "which",
        "who",
        "whom",
        "whose",
        "this",
        "these",
        "those",
        "with",
        "from",
        "into",
        "onto",
        "for",
        "are",
        "was",
        "were",
        "been",
        "being",
        "has",
        "have",
        "had",
        "does",
        "did",
        "not",
        "you",
        "your",
        "yours",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "its",
        "their",
        "there",
        "here",
        "then",
        "than",
        "also",
        "very",
        "such",
        "some",
        "any",
        "all",
        "each",
        "every",
        "both",
        "either",
        "neither",
        "nor",
        "what",
        "when",
        "where",
        "why",
        "how",
        "our",
        "ours",
        "we",
        "they",
        "them",
        "his",
        "her",
        "hers",
        "she",
        "him",
        "its",
        "yes",
        "however",
        "therefore",
        "thus",
        "because",
        "since",
        "while",
        "whereas",
        "although",
        "though",
        "unless",
        "until",
        "upon",
        "about",
        "above",
        "below",
        "after",
        "before",
        "just",
        "too",
        "instead",
        "other",
        "another",
        "same",
        "more",
        "most",
        "less",
        "least",
        "many",
        "much",
        "few",
        "own",
        "one",
        "ones",
        "use",
        "used",
        "el",
        "la",
        "los",
        "las",
        "una",
        "uno",
        "unos",
        "unas",
        "del",
        "que",
        "por",
        "para",
        "con",
        "sin",
        "pero",
        "como",
        "más",
        "muy",
        "este",
        "esta",
        "estos",
        "estas",
        "ese",
        "esa",
        "esos",
        "esas",
        "eso",
        "esto",
        "son",
        "está",
        "están",
        "ser",
        "hay",
        "sus",
        "nos",
        "les",
        "cual",
        "cuál",
        "cuales",
        "donde",
        "cuando",
        "porque",
        "pues",
        "también",
        "sino",
        "entre",
        "sobre",
        "tras",
        "desde",
        "hasta",
        "según",
        "otro",
        "otra",
        "otros",
        "otras",
        "mismo",
        "misma",
    ]
)
_WORDS = re.compile(r"[^\W\d_]{3,}")


def _stem(word: str) -> str:
    """A crude stem: the first five letters, lower case (required / requires / requirement)."""
    return word.lower()[:5]


# Chinese and Japanese write without spaces, so a "word" above is a whole clause there. Such a run
# is compared by its parts instead: each Han character and each katakana run (names, loanwords)
# must occur in the excerpts or the question; hiragana (particles, inflections) may differ freely.
# Korean puts spaces between words but glues particles to them (회의는, 회의를): a Hangul word is
# compared by its first two syllables.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ffー]{2,}")
_HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7a3]")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7a3ー]+")


# Function characters and words a faithful paraphrase may add, as the English and Spanish list
# above: Chinese/Japanese grammatical characters and Korean endings and conjunctions.
_FUNCTION_HAN = frozenset(
    "的了是在有和与及或要会能可以将被把也都就还而但这那其之为于个等请需应该所从到对由向给让使并且则即如若因此每各不没无吗呢吧"
)
_FUNCTION_HANGUL = frozenset(
    [
        "합니다",
        "입니다",
        "있습니다",
        "없습니다",
        "됩니다",
        "하세요",
        "해주세요",
        "주세요",
        "그리고",
        "그러나",
        "또는",
        "및",
        "또한",
        "하는",
        "있는",
        "없는",
        "되는",
        "한다",
        "된다",
        "있다",
        "없다",
        "이다",
        "하고",
        "해야",
        "합니까",
        "입니까",
        "있나요",
        "인가요",
        "그런데",
        "하지만",
    ]
)


def _word_keys(word: str) -> list[str]:
    """What of `word` must be found elsewhere: its stem, or for CJK text the parts named above."""
    if not _CJK.search(word):
        return [_stem(word)]
    keys = [han for han in _HAN.findall(word) if han not in _FUNCTION_HAN] + _KATAKANA_RUN.findall(word)
    keys += [hangul[:2] for hangul in _HANGUL_WORD.findall(word) if hangul not in _FUNCTION_HANGUL]
    return keys


def vocabulary_of(text: str) -> set[str]:
    """The keys `novel_words` looks up: stems of words, CJK characters and runs (see `_word_keys`)."""
    return {key for word in _WORDS.findall(text) for key in _word_keys(word)} | {
        key for run in _CJK_RUN.findall(text) for key in _word_keys(run)
    }


def novel_words(claim: str, vocabulary: set[str]) -> list[str]:
    """Content words of `claim` whose stem is not in `vocabulary` (stems of the excerpts and the
    question): words the model brought in from nowhere, such as a wrong subject ("La capa de la
    oficina...") or an invented relation ("a correction to the original function")."""
    novel: list[str] = []
    words = _WORDS.findall(claim) + [run for run in _CJK_RUN.findall(claim) if len(run) < 3]
    for word in words:
        if word.lower() in _FUNCTION_WORDS_EN_ES or word in novel:
            continue
        missing = [key for key in _word_keys(word) if key not in vocabulary]
        if not missing:
            continue
        # A CJK run is a whole clause: name what is missing of it, not the clause.
        for part in missing if _CJK.search(word) else [word]:
            if part not in novel:
                novel.append(part)
    return novel


_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}(?!\d))")
_SPACES = re.compile(r"\s+")


def _normalise(text: str) -> str:
    """Lower case, one space for any whitespace, no thousands separators (1,200 == 1200)."""
    return _SPACES.sub(" ", _NUMBER_SEPARATOR.sub("", text.lower()))


def _fact_pattern(fact: str) -> re.Pattern[str]:
    """How a fact must appear in the excerpts: whole, not as part of a longer number or word."""
    body = re.escape(_normalise(fact))
    if any(ch.isdigit() for ch in fact):
        # 5433 is not in 15433 nor in 5433.1; v2.4.1 does hold 2.4.1.
        return re.compile(rf"(?<!\d)(?<!\d[.,]){body}(?![.,]?\d)")
    if fact[:1].isalnum() and fact[-1:].isalnum():
        # Whole words, allowing a plural on either side (Monday / Mondays).
        stem = body[:-1] if body.endswith("s") and len(body) > 3 else body
        return re.compile(rf"(?<!\w){stem}(?:s|es)?(?!\w)")
    return re.compile(body)


def missing_facts(facts: Sequence[str], text: str) -> list[str]:
    """The facts that do not occur in `text`."""
    haystack = _normalise(text)
    return [fact for fact in facts if not _fact_pattern(fact).search(haystack)]


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


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

    def notices(self, show_unsupported: bool = False) -> list[str]:
        """What the check did to the model's answer, in a line or two for a person."""
        model = [c for c in self.claims if not c.extracted]
        shown = " (shown marked, as asked)" if show_unsupported else " (--show-unsupported shows them)"
        lines = []
        if self.refused or self.fallback:
            why = (
                "its supported sentences do not answer the question"
                if any(c.supported for c in model)
                else "none of its sentences is supported by the excerpts"
            )
            instead = (
                "; shown instead: the excerpts' most relevant sentences"
                if self.fallback
                else "; nor is any excerpt sentence relevant enough to answer"
            )
            lines.append(f"the model's answer was withheld: {why}{instead}{shown if model else ''}")
        elif self.withheld:
            lines.append(
                f"{self.withheld} sentence(s) of the model's answer withheld: not supported by the excerpts{shown}"
            )
        wrong = sum(len(c.wrong_citation) for c in model if c.supported)
        if wrong and not self.refused and not self.fallback:
            lines.append(
                f"{wrong} citation(s) pointed at an excerpt that does not back the sentence and were corrected"
            )
        return lines

    @property
    def citations(self) -> list[int]:
        """Excerpt numbers cited by the printed answer, in order of first appearance."""
        seen: dict[int, None] = {}
        for claim in self.claims:
            if claim.supported and not self.refused:
                seen.update(dict.fromkeys(claim.citations))
        return list(seen)


# A citation group right after a sentence's final punctuation belongs to that sentence:
# `... 5433. [1] The next` becomes `... 5433 [1]. The next`.
_CITATION_AFTER_STOP = re.compile(r"([.!?])([ \t]*)((?:" + CITATION_RE.pattern + r"[ \t]*)+)(?=\s|$)")
_MARKUP_LEAD = re.compile(r"^(?:[\s#>*+\-|]|\d{1,3}[.)](?=\s))*")
_EMPHASIS = re.compile(r"\*\*|__(?=\s)|(?<=\s)__")
_HAS_ALNUM = re.compile(r"\w")
_TRAILING_STOP = re.compile(r"([.!?…:;]+[\"'”’»)\]]*)$")


def move_citations_before_stops(text: str) -> str:
    """`... 5433. [1] Next` -> `... 5433 [1]. Next`: a citation stays with the sentence it ends."""
    return _CITATION_AFTER_STOP.sub(lambda m: f" {m.group(3).strip()}{m.group(1)}", text)


def claim_text(sentence: str) -> str:
    """The sentence without citation markers, list/heading markup and bold marks."""
    body = CITATION_RE.sub("", sentence)
    body = _MARKUP_LEAD.sub("", body)
    body = _EMPHASIS.sub("", body)
    body = re.sub(r"\s+([.,;:!?])", r"\1", body)  # where a citation stood before the stop
    return _SPACES.sub(" ", body).strip().strip("|").strip()


def with_citations(sentence: str, keep: set[int], add: int | None) -> str:
    """`sentence` with citation numbers outside `keep` removed, and `[add]` put before its stop."""

    def repl(match: re.Match[str]) -> str:
        numbers = [n for n in dict.fromkeys(citation_numbers(match)) if n in keep]
        return f"[{', '.join(map(str, numbers))}]" if numbers else ""

    text = CITATION_RE.sub(repl, sentence)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    if add is not None:
        stop = _TRAILING_STOP.search(text)
        cut = stop.start() if stop else len(text)
        text = f"{text[:cut].rstrip()} [{add}]{text[cut:]}"
    return text


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


# --------------------------------------------------------------------------------------------
# The plain refusal, in the question's language
# --------------------------------------------------------------------------------------------

REFUSALS: dict[str, str] = {
    "en": "The answer is not in the excerpts.",
    "es": "La respuesta no está en los fragmentos.",
    "fr": "La réponse ne figure pas dans les extraits.",
    "de": "Die Antwort steht nicht in den Auszügen.",
    "pt": "A resposta não está nos trechos.",
    "it": "La risposta non è negli estratti.",
    "uk": "Відповіді немає у фрагментах.",
    "ru": "Ответа нет во фрагментах.",
}

# A few frequent function words per language; the language with most hits wins (English on a tie).
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "the",
            "is",
            "are",
            "what",
            "which",
            "who",
            "how",
            "when",
            "where",
            "does",
            "do",
            "did",
            "of",
            "to",
            "in",
            "on",
            "for",
            "and",
            "a",
            "an",
            "can",
        ]
    ),
    "es": frozenset(
        [
            "el",
            "la",
            "los",
            "las",
            "qué",
            "cuál",
            "cuáles",
            "cómo",
            "cuándo",
            "dónde",
            "es",
            "son",
            "de",
            "del",
            "en",
            "para",
            "por",
            "y",
            "un",
            "una",
            "se",
        ]
    ),
    "fr": frozenset(
        [
            "le",
            "la",
            "les",
            "est",
            "sont",
            "quel",
            "quelle",
            "quels",
            "comment",
            "quand",
            "où",
            "de",
            "du",
            "des",
            "en",
            "pour",
            "et",
            "un",
            "une",
        ]
    ),
    "de": frozenset(
        [
            "der",
            "die",
            "das",
            "ist",
            "sind",
            "was",
            "welche",
            "welcher",
            "wie",
            "wann",
            "wo",
            "von",
            "zu",
            "in",
            "für",
            "und",
            "ein",
            "eine",
        ]
    ),
    "pt": frozenset(
        [
            "o",
            "a",
            "os",
            "as",
            "qual",
            "quais",
            "como",
            "quando",
            "onde",
            "é",
            "são",
            "de",
            "do",
            "da",
            "em",
            "para",
            "por",
            "e",
            "um",
            "uma",
        ]
    ),
    "it": frozenset(
        [
            "il",
            "lo",
            "la",
            "gli",
            "le",
            "è",
            "sono",
            "quale",
            "quali",
            "come",
            "quando",
            "dove",
            "di",
            "del",
            "della",
            "in",
            "per",
            "e",
            "un",
            "una",
        ]
    ),
}


def question_language(question: str) -> str:
    """A two-letter guess at the question's language, from its script and its function words."""
    if re.search(r"[іїєґІЇЄҐ]", question):
        return "uk"
    if re.search(r"[а-яА-ЯёЁ]", question):
        return "ru"
    words = re.findall(r"[^\W\d_]+", question.lower())
    counts = {lang: sum(w in vocab for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    if "¿" in question or "¡" in question or "ñ" in question.lower():
        counts["es"] += 2
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    return best if counts[best] > 0 else "en"


def refusal(question: str) -> str:
    """The plain "not in the excerpts" statement, in the question's language."""
    return REFUSALS[question_language(question)]

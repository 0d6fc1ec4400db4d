"""`ask --extractive` and the default mode's fallback: a short cited passage of the excerpts.

No language model. The excerpts are cut into answer units (`locallens.units`: sentences, list
items, table rows, code blocks, definitions with their term, a setup line with the block it
introduces), each unit is scored against the question (`locallens.unit_scores`: the embedder's
cosine through the sentence cache, key-term overlap, the kind of answer asked for, what
introduces it, the excerpt's rank), and the answer is built from the best ones:

- a specific question gets a passage: the best unit with what belongs to it (a table row with its
  header row, a block with the line that introduces it, the block a setup line introduces), then
  the next best unit if it scores within `MARGIN` of the best, within `passage_tokens` and a
  budget of printed words (`PASSAGE_WORDS`); a question the notes ask and answer (a FAQ's) is
  never printed, its answer is (`_restated`), and the FAQ entry asking the user's question opens
  the passage with its answer (`faq_answer`);
- a broad question ("what is X", "summarize X", "tell me about X", "what does the note on X say")
  whose topic names a document or a section among the excerpts gets an extractive summary of it:
  its lead and its most central units, in document order (`is_broad`, `summary_units`);
- otherwise the plain refusal, when the evidence that the excerpts answer at all is too weak
  (`answer_evidence`): the best unit's score; the rarest of the question's words that no excerpt
  holds, weighed by how few of the brain's chunks hold it (`missing_salience`: "dog" in "can I
  bring my dog to the Madrid office?" beside the office's benefits, a word no note holds); the
  rarest *name* of the question (a product, vendor, version) that no excerpt mentions
  (`missing_name`: "Stripe" beside another company's support phone); how far the best unit
  holding a value of the kind asked is from stating it about the question's words
  (`fact_unstated`: "how long is the probation period of new hires?" over notes whose only
  duration is an audit's three days). The plain refusal too when the excerpts hold under a fifth
  of the question's key terms, or no value at all of the kind of fact asked (`fact_absent`: "when
  was Python 3.12 released?" over excerpts without a date), or when the question names something
  no note of the brain mentions and the language hardly uses (`unknown_word`: "how do I run one
  test with pytest?" over notes that never say "pytest"). A broad question whose note holds
  only part of its topic is not summarised, and is answered only by a unit about its whole topic.

Every printed unit is an excerpt's own text (markup such as a bullet or table pipes aside) with
the number of its excerpt, so every one is supported and cited by construction.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from locallens.broad import is_broad, named_document, topic_terms, topic_words
from locallens.claims import CheckedAnswer, Claim, Encode, claim_text, question_language, refusal, with_citations
from locallens.claims.check import COMMON_WEIGHT, COMMON_ZIPF
from locallens.compare import Side, comparison, says, side_query, side_units, subject_of
from locallens.config import DEFAULT_CHUNK_SIZE
from locallens.domain import Hit, Rendering
from locallens.examples import as_blocks, asks_example, example_units
from locallens.modes import AnswerInput, AnswerOutput, TermCounts
from locallens.tokens import count_tokens
from locallens.trim import unit_rows
from locallens.unit_scores import (
    BIAS,
    BRIDGED,
    POSSESSIVE,
    QuestionTerms,
    answer_type,
    asked_fact,
    asks_default,
    asks_name,
    carries_fact,
    carries_name,
    combine,
    context_of,
    features,
    is_context_only,
    key_terms,
    key_words,
    question_terms,
    refusal_linear,
    says_default,
    symbol_keys,
    unit_keys,
    word_salience,
)
from locallens.units import (
    CODE,
    DEFINITION,
    ENTRY_SPAN,
    HEADER,
    HEADING,
    INTRODUCED,
    ITEM,
    ROW,
    SENTENCE,
    Unit,
    answer_units,
    is_field,
)

# Whether the excerpts answer at all, from combined evidence (`evidence_features`): the best
# unit's score (its linear score, before the logistic), the missing word (`missing_salience`), the
# missing name (`missing_name`) and the asked fact not stated about the question's words
# (`fact_unstated`); a logistic fitted by `benchmarks/bench_answers.py --fit --refusal-only` on
# the answerable and unanswerable questions of six corpora: sample (with broad, es, es-given),
# pydoc (with pydoc-es), stdlib, borg, postfix (with postfix-es) and apache (with apache-es), the
# questions `refused_whatever` refuses left out. Chosen leaving one corpus out (each judged by
# weights and a threshold fitted on the other five): 12 of 334 answerable questions refused and 48
# of 60 near misses, against 12 and 43 before the question's unknown name (`unknown_word`) refused
# whatever the weights; with the left-out corpus's cosines 0.1 lower, 17 and 49 against 17 and 45.
# With a typo of the notes' words not counted as unknown (`close_word`): 13 and 47 (18 and 48).
# The top excerpt's own score is left out: its cosine's scale differs between corpora
# (docs/decisions.md#the-refusal-across-corpora).
EVIDENCE_WEIGHTS = {
    "best_unit": 1.26,
    "missing": -1.11,
    "missing_name": -3.68,
    "fact_unstated": -4.5,
}
EVIDENCE_BIAS = -0.98
MIN_EVIDENCE = 0.75  # below this, the plain refusal
# ... and so when the excerpts hold less than this share of the question's key terms, whatever the
# units score: "how many teeth has a Nile crocodile?" over notes that say "20 minutes".
MIN_TERM_COVERAGE = 0.2
# The brain's counts of a missing word stop here: a word in this many chunks is common anyway.
TERM_COUNT_CAP = 1000
MIN_ANSWER_SCORE = 0.30  # a unit beside the best one is printed from this score
MARGIN = 0.15  # ... and when it scores within this of the best
MAX_ANSWERING = 2  # answering units in a passage, at most (and one more from another excerpt)
# A unit from an excerpt the passage does not print yet joins it when it scores within this of
# the best (`passage_units`).
OTHER_MARGIN = 0.3
CANDIDATES = 8  # the best units looked at for a passage
DEFAULT_PASSAGE_TOKENS = 105  # the passage's budget, citations included
# ... and its budget in words as printed (citations included), scaled with a smaller token budget:
# a manual's long sentences of plain words fill the tokens with more words than code does.
PASSAGE_WORDS = 64
SUMMARY_TOKENS = 90  # a summary's
MAX_TERM_TOKENS = 30  # a definition's term printed with a later sentence of its description, at most
SUMMARY_UNITS = 3  # a summary: the lead and at most this many units in all
# A broad question is answered with a summary when this share of its topic's key terms names
# the document (its path) or a section (a heading) among the excerpts.
MIN_TOPIC_MATCH = 0.5
# ... and not when a word of the topic is missing from the excerpts and rare in the brain (its
# `missing_salience` reaches this: in at most about the square root of the brain's chunks).
MIN_TOPIC_SALIENCE = 0.5
# A word of the question that no chunk of the brain holds refuses the question, whatever the
# weights, when leaving it out of the question moves the question's vector this far (1 - cosine)
# and brings the question closer to the excerpts (`missing_topic`): the word is what the question
# is about ("Can I bring my dog to the Madrid office?", 0.24), not a word of its own phrasing.
# Chosen on the development sets (docs/decisions.md#a-topic-the-notes-never-mention).
MIN_TOPIC_DROP = 0.15


@dataclass(slots=True)
class Scored:
    units: list[Unit]
    scores: np.ndarray  # probability that the unit states the answer
    cosines: np.ndarray
    vectors: np.ndarray
    # Each unit's linear score as the refusal reads it (`unit_scores.refusal_linear`; a unit the
    # scoring left out at the logit of a 0 score); None: read from `scores`.
    evidence: np.ndarray | None = None


# The linear score `best_unit` reads off a unit scored 0 (the logit of 1e-12, without `BIAS`).
_ZEROED_LINEAR = float(np.log(1e-12)) - BIAS


def score_units(
    question: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    term_counts: TermCounts | None = None,
) -> Scored:
    """Every answer unit of `hits` with its score (see `locallens.unit_scores`). `term_counts`:
    the brain's word counts, which weigh the question's words by their rarity (without them,
    every word weighs the same)."""
    units = answer_units(hits)
    if not units:
        empty = np.zeros(0)
        return Scored([], empty, empty, np.zeros((0, len(question_vector))))
    vectors = unit_rows(np.asarray(encode([u.text for u in units]), dtype=np.float64))
    query = unit_rows(np.asarray(question_vector, dtype=np.float64).reshape(-1))
    cosines = vectors @ query
    rows = features(
        question_terms(question, term_counts),
        units,
        cosines,
        [h.chunk.relative_path for h in hits],
        [h.score for h in hits],
    )
    scores = combine(rows)
    evidence = refusal_linear(rows)
    restated = _restated(units)
    for i, by_next in restated.items():
        # A question the notes ask and answer (a FAQ's) is answered by the text right after it:
        # that text scores at least what the question does ("Why does J move to the next tab?"
        # over "One reason is because dwb did it that way").
        if by_next:
            scores[i + 1] = max(scores[i + 1], scores[i])
            evidence[i + 1] = max(evidence[i + 1], evidence[i])
    for i, unit in enumerate(units):
        if (
            unit.kind == HEADING
            or is_context_only(unit)
            or count_tokens(unit.text) > 2 * SUMMARY_TOKENS
            or _cut_at_start(unit, hits)
            or _cut_at_end(unit, hits)
            or i in restated
        ):
            # A title, a header row, a unit too long to print as an answer, the tail of a
            # sentence the chunk's start cut (the chunk before holds it whole) or the head of one
            # its end cut, a question the notes ask and answer or list.
            scores[i] = 0.0
            evidence[i] = _ZEROED_LINEAR
    return Scored(units, scores, cosines, vectors, evidence)


# A plain lower-case word followed by a space ("been bound to a value...", "sh/net/tcp module,",
# "transparent' content", a word the cut left with a path or a quote in it), not an identifier
# ("fill(text, width=70)", "d[key]"); or punctuation.
_CUT_START = re.compile(
    r"^(?:(?!(?:class|def|async|import|from|return|lambda)\s)[a-z]+(?:[/'’][\w/]*)?[,;]?\s|[,;:.)\]’'\"])"
)


# A question's last line: words, then "?" (a symbol's own "?" is no question).
_ASKS = re.compile(r"\w[^\n]*\w\W*\?$")
MIN_ASKING_WORDS = 3


def _asks(unit: Unit) -> bool:
    """A unit that asks a question."""
    text = unit.text.rstrip()
    return (
        unit.kind in (SENTENCE, ITEM)
        and text.endswith("?")  # first: the expression below is slow on a long unit without one
        and len(text.split()) >= MIN_ASKING_WORDS
        and bool(_ASKS.search(text))
    )


# The text after a question answers it when it says this much.
MIN_ANSWER_WORDS = 4


def _restated(units: Sequence[Unit]) -> dict[int, bool]:
    """The questions the notes ask that restate a user's question rather than say something, each
    with whether the unit right after it is its answer: a FAQ's, answered by the prose or block
    after it (at least `MIN_ANSWER_WORDS` words, not an item or another question), or by what the
    excerpt's end cuts off; and those of a list of questions (a FAQ's contents). A
    question the notes ask and leave open ("Do you like this message?" over "-Me" in a mail) is
    what they say."""
    out: dict[int, bool] = {}
    for i, unit in enumerate(units):
        if not _asks(unit):
            continue
        after = units[i + 1] if i + 1 < len(units) and units[i + 1].excerpt == unit.excerpt else None
        before = units[i - 1] if i and units[i - 1].excerpt == unit.excerpt else None
        by_next = (
            after is not None
            and after.kind not in (HEADING, ITEM)
            and not _asks(after)
            and len(_WORD.findall(after.text)) >= MIN_ANSWER_WORDS
        )
        cut_off = after is None  # its answer past the excerpt's end
        listed = any(n is not None and _asks(n) for n in (before, after))
        if by_next or cut_off or listed:
            out[i] = by_next
    return out


# A FAQ's question this close to the user's (cosine), and closer than any other unit, is theirs.
FAQ_MATCH = 0.7


def faq_answer(scored: Scored) -> list[int]:
    """The answer of the FAQ entry that asks the user's question, to open the passage with (its
    next sentence follows it when the budget holds it); else nothing. The entry's question
    (`_restated`, answered by the unit after it) has a cosine of at least `FAQ_MATCH` and of at
    least any unit's but the notes' other questions' (a contents list repeats it). The notes' own
    wording of the question is the strongest sign of where its answer is, though the answer may
    share few of its words and sit in a lower-ranked excerpt ("How can I change the pass-phrase on
    my private key file?" over "You simply have to read it with the old pass-phrase and write it
    again")."""
    restated = _restated(scored.units)
    answered = [i for i, by_next in restated.items() if by_next and scored.scores[i + 1] > 0]
    if not answered:
        return []
    best = max(answered, key=lambda i: scored.cosines[i])
    others = [c for i, c in enumerate(scored.cosines) if i not in restated]
    if scored.cosines[best] < max(FAQ_MATCH, *others):
        return []
    return [best + 1]


def _cut(unit: Unit) -> bool:
    """A prose unit that starts where no sentence starts (a lower-case word, a comma): the end of
    a sentence cut by the chunk's start."""
    return unit.kind in (SENTENCE, DEFINITION) and bool(_CUT_START.match(unit.text))


# The head of a sentence the chunk's end cut (`_cut_at_end`): its last character a word's or a
# comma, at least this many words (a short line without a stop is a label or a title), in an
# excerpt of at least this many tokens (only a token window cuts a sentence, and it is as long as
# the chunker's chunks: a note's last line without a stop is no cut sentence).
_CUT_END = re.compile(r"[\w,]$")
CUT_END_WORDS = 8
CUT_END_MIN_TOKENS = int(0.9 * DEFAULT_CHUNK_SIZE)


def _cut_at_end(unit: Unit, hits: Sequence[Hit]) -> bool:
    """The head of a sentence the chunk's end cut (an over-long paragraph is split by tokens): a
    plain sentence, not a description under its term, that ends the excerpt on a word or a comma,
    of at least CUT_END_WORDS words ("If a command is not found, the child process created to
    execute it returns a status of" / "127 ..." in the next chunk). The chunk after it holds it
    whole when it is read; printed, it stops mid-sentence."""
    text = unit.text.rstrip()
    return (
        unit.kind == SENTENCE
        and not unit.term
        and bool(_CUT_END.search(text))
        and len(text.split()) >= CUT_END_WORDS
        and hits[unit.excerpt - 1].content.rstrip().endswith(text)
        and count_tokens(hits[unit.excerpt - 1].content) >= CUT_END_MIN_TOKENS
    )


def _cut_at_start(unit: Unit, hits: Sequence[Hit]) -> bool:
    """The tail of a sentence the chunk's start cut (`_cut`)."""
    return unit.index == 0 and hits[unit.excerpt - 1].chunk.chunk_index > 0 and _cut(unit)


def term_coverage(question: QuestionTerms, hits: Sequence[Hit]) -> float:
    """The share of the question's key terms that the excerpts hold. Asked across languages
    (`_across`), a word no excerpt holds counts only if a translation would keep it
    (`missing_words`): the English excerpt may say it in English."""
    # The refusal's keys (`unit_scores._key`), and the symbols the question names as written
    # (`symbol_keys`: "$?", which the excerpts hold or not as written too).
    symbols = symbol_keys(question.text)
    terms = key_terms(question.text, refined=True) | symbols
    if not terms:
        return 1.0
    held_symbols = symbols & frozenset().union(*(symbol_keys(h.content) for h in hits)) if symbols else frozenset()
    held = len(terms & (_held(hits) | held_symbols))
    if not _across(question.text, hits):
        return held / len(terms)
    missing = len({k for w in missing_words(question.text, hits) for k in key_terms(w, refined=True)} & terms)
    return held / max(1, held + missing)


def _across(question: str, hits: Sequence[Hit]) -> bool:
    """Whether the question is asked across languages (Spanish over English notes): the top
    excerpt, or most excerpts, are in another language than the question."""
    if not hits:
        return False
    own = question_language(question)
    other = [question_language(h.content[:_LANGUAGE_SAMPLE]) != own for h in hits]
    return other[0] or sum(other) * 2 > len(other)


def _held(hits: Sequence[Hit]) -> frozenset[str]:
    """The key terms of the excerpts and of their files' paths, a path read word by word
    (`manual-almacen-zaragoza.md` holds "zaragoza"), with the words their CamelCase identifiers
    join (`unit_keys`: `KeepAliveTimeout` holds "keep", "alive" and "timeout") and their
    two-letter words, which a question may write in capitals ("IP" where they write
    `Require ip`). Read by the refusal's refined keys (`key_terms(..., refined=True)`: plurals,
    hyphenated words, possessives; measured in
    docs/decisions.md#the-refusals-key-terms-names-as-documentation-writes-them)."""
    return _held_in(
        "\n".join(f"{h.content} {h.chunk.relative_path} {_path_words(h.chunk.relative_path)}" for h in hits)
    )


@lru_cache(maxsize=16)
def _held_in(text: str) -> frozenset[str]:
    """`_held` of the excerpts' text, read once per question (the refusal asks it four times)."""
    short = {w for w in _SHORT_WORD.findall(text.lower()) if key_terms(w.upper())}
    return unit_keys(text, refined=True) | short


_SHORT_WORD = re.compile(r"(?<![\w.-])[^\W\d_]{2}(?![\w-])")


def _path_words(path: str) -> str:
    return re.sub(r"[-_/.]+", " ", path)


def missing_words(question: str, hits: Sequence[Hit]) -> list[str]:
    """The question's words (content words, numbers, identifiers) that no excerpt holds, compared
    by key (`unit_scores.key_terms`: `minutes` meets `minutos`): "dog" in "can I bring my dog
    to the Madrid office?" over the office's benefits. An identifier is held when its parts are
    (`shutil.rmtree` by `shutil` and `rmtree`); a word naming the kind of answer asked
    ("command", "exception": `_KIND_WORDS`) is never missing.

    A question asked across languages (`_across`: Spanish over English notes) misses its
    own words by construction: then only the words that survive translation count, names,
    numbers and identifiers (`_untranslated`), and the words `unit_scores` bridges to English."""
    held = _held(hits)
    across = _across(question, hits)
    first = next(iter(_WORD.findall(question)), "")
    out: list[str] = []
    for key, word in key_words(question, refined=True).items():
        if key in held or key in _KIND_KEYS or key in _FORM_KEYS or _joined(key) in held:
            continue
        if (number := _number_after(word, question)) and f"{key}{number}" in held:
            continue  # "RHEL 6" where the excerpts write "RHEL6"
        parts = [part for part in re.split(r"[._]+", word) if part] if ("_" in word or "." in word) else []
        part_keys = [k for part in parts for k in key_terms(part, refined=True)]
        if part_keys and all(k in held for k in part_keys):
            continue
        if across and not (_untranslated(word, first) or word in BRIDGED):
            continue
        if "-" in word and key_terms(word, refined=True) - {key}:
            # A hyphenated word ("Apache-style", "keep-alive"): its parts the excerpts do not
            # hold are what is missing ("Apache"), each named and weighed as a word.
            out.extend(p for p in word.split("-") if (k := key_terms(p, refined=True)) and not k <= held)
            continue
        out.append(word)
    # A name with its version after a slash ("HTTP/3") is one name, as "Python 3.12" is: missing
    # when the excerpts write neither it nor its parts joined ("HTTP/2" and "http2" are not it).
    # Its parts are not words of their own.
    slashed = _SLASHED.findall(question)
    text = "\n".join(h.content for h in hits).lower() if slashed else ""
    for name in slashed:
        out = [w for w in out if w not in name.split("/")]
        written = {name.lower(), name.lower().replace("/", "")}
        if not any(re.search(rf"(?<![\w/]){re.escape(w)}(?![\w/]|\.\d)", text) for w in written):
            out.append(name)
    return list(dict.fromkeys(out))


_SLASHED = re.compile(r"(?<![\w/])[^\W\d_][\w-]*/\d+(?:\.\d+)*(?![\w/]|\.\d)")


_LANGUAGE_SAMPLE = 1000  # an excerpt's language is guessed from its start
# Words that name the kind of answer a question asks for ("which command", "what exception"):
# the excerpts give the command itself, seldom the word, so its absence tells nothing.
_KIND_WORDS = (
    "command commands option options flag flags function functions method methods exception exceptions "
    "error errors keyword statement operator attribute attributes argument arguments parameter parameters "
    "setting settings variable variables syntax comando opción función método excepción parámetro"
)


def _both_keys(words: str) -> frozenset[str]:
    """The keys of `words` as the unit scorer and as the refusal (`refined`) read them."""
    return frozenset(key for word in words.split() for key in (*key_terms(word), *key_terms(word, refined=True)))


_KIND_KEYS = _both_keys(_KIND_WORDS)
# Words of a question's form rather than its subject: adverbs, prepositions and pronouns a user
# writes around the subject ("instead of the screen", "without sorting", "whether it is"); the
# excerpts seldom repeat them, so their absence tells nothing.
_FORM_WORDS = (
    "instead without whether inside within once later back out over through during like else even still "
    "since until already again ever never always something anything nothing everything someone anyone whole few several "
    "own right just really actually basically simply quite rather etc able way "
    "tell summarize summarise describe explain overview rundown háblame cuéntame explícame resúmeme"
)
_FORM_KEYS = _both_keys(_FORM_WORDS)
# The user's own example ("a time zone like Europe/Paris", "such as 'Test'"): not a name to look up.
_EXAMPLE = re.compile(
    r"\b(?:like|such as|e\.g\.|for example|for instance|como por ejemplo|por ejemplo)\s+([^,;?!]+)", re.I
)
_WORD = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]")


def _number_after(word: str, question: str) -> str | None:
    """The version number written after `word` in the question ("6" of "our RHEL 6 servers",
    "3.12" of "Python 3.12"), lower-cased; None when there is none."""
    found = re.search(rf"(?<![\w.-]){re.escape(word)}[\s-]+(\d[\w.]*\w|\d)(?![\w.-])", question)
    return found.group(1).lower() if found else None


def _joined(key: str) -> str:
    """A name with a digit written without its hyphen: `sha-256` as `sha256`, `utf-8` as `utf8`."""
    return key.replace("-", "") if any(ch.isdigit() for ch in key) else key


def _untranslated(word: str, first: str) -> bool:
    """A word a translation keeps: with a digit or inner punctuation (`27001`, `dispatch-api`),
    or a capital past its first letter or anywhere but the question's first word (`Stripe`)."""
    if any(ch.isdigit() for ch in word) or any(ch in word for ch in "-._"):
        return True
    return any(ch.isupper() for ch in word[1:]) or (word[:1].isupper() and word != first)


def missing_salience(question: str, hits: Sequence[Hit], term_counts: TermCounts | None = None) -> float:
    """How telling the question's rarest word missing from the excerpts is (0..1): its inverse
    document frequency over the brain's chunks, log((N + 1) / (df + 1)) / log(N + 1), so that a
    word no chunk of the brain holds scores 1 and a word most chunks hold near 0; 0 when the
    excerpts hold every word. Without `term_counts` (the brain's counts unknown) a missing word
    scores 1."""
    missing = missing_words(question, hits)
    if not missing:
        return 0.0
    return max(word_salience(missing, term_counts).values())


# A duration written as a bare number, its unit of time in a field beside it (a reference's
# "Description: Number of seconds before a session expires" / "Default: SessionTimeout 300").
_BARE_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")
# A bare number's unit of data, named by the unit or a field beside it ("Default: 10240000" under
# "The maximal size in bytes of a message").
_SIZE_WORDS = re.compile(r"\b(?:bytes?|octets?|kilobytes?|megabytes?|gigabytes?|[kKMG]i?B)\b")
_TIME_WORDS = re.compile(
    r"\b(?:(?:milli|micro)?seconds?|minutes?|hours?|days?|weeks?|months?|years?|"
    r"segundos?|minutos?|horas?|d[ií]as?|semanas?|meses|a[nñ]os?)\b",
    re.I,
)
# The unit words by which a bare number of each kind is read (`_carries`).
_BARE_UNIT_WORDS = {"duration": _TIME_WORDS, "frequency": _TIME_WORDS, "size": _SIZE_WORDS}
NEAR_UNITS = 3  # a reference entry's fields read with one of them: this many either side


def _carries(units: Sequence[Unit], i: int, kind: str) -> bool:
    """Whether `units[i]` holds a value of the kind asked (`carries_fact`); a duration, a period or
    an amount of data also as a bare number whose unit (of time, of data) it or a field beside it
    names (`_near`: "Default: SSLSessionCacheTimeout 300" below "Description: Number of seconds
    before a session expires")."""
    unit = units[i]
    if carries_fact(unit.text, kind):
        return True
    words = _BARE_UNIT_WORDS.get(kind)
    if words is None or not _BARE_NUMBER.search(unit.text):
        return False
    return bool(words.search(" ".join([unit.text, *_near(units, i)])))


def _near(units: Sequence[Unit], i: int) -> list[str]:
    """The fields beside `units[i]` when it is a field of a reference entry (`units.is_field`:
    "Default: Timeout 60", with "Description: Amount of time the server will wait..." and
    "Syntax: Timeout seconds"): the unbroken run of fields around it in its excerpt,
    `NEAR_UNITS` either side at most; for a description's sentence or a field of a named entry,
    the entry's term and sentences. Prose has no fields: a sentence's neighbours may be about
    another subject."""
    unit = units[i]
    named = unit.term or unit.entry
    if named:
        # A sentence of a definition's description, or a field of its entry: the entry is its term
        # and its sentences ("ZFTP_TMOUT" / "Integer. The time in seconds to wait ... the default
        # value 60."; "Default: 30" under "Maximum time (in minutes) between two history items").
        return [named] + [
            other.text
            for j, other in enumerate(units)
            if j != i
            and abs(j - i) <= (ENTRY_SPAN if unit.entry else NEAR_UNITS)
            and other.excerpt == unit.excerpt
            and named in (other.term, other.entry)
        ]
    if not is_field(unit.text):
        return []
    out: list[str] = []
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(units) and abs(j - i) <= NEAR_UNITS:
            other = units[j]
            if other.excerpt != unit.excerpt or not is_field(other.text):
                break
            out.append(other.text)
            j += step
    return out


# A how-to question whose fact phrase is the object of its verb ("how do I measure how long a
# snippet takes?", "how can I count how many times a word occurs?") asks for a way, not the fact.
# So does a question for the setting that decides the fact ("which parameter sets how long ...",
# "¿qué variable fija cuánto tiempo ...?"): its answer is the setting's name.
_HOW_TO_FACT = re.compile(
    r"^\W*how (?:do|can|could|should|would) (?:i|we|you|one)\b.{0,200}?\bhow (?:long|many|much|often|big|large)\b"
    r"|\b(?:which|what) (?:\w+ )?(?:setting|parameter|option|variable|directive|flag|knob)s?\b.{0,200}?"
    r"\bhow (?:long|many|much|often)\b"
    r"|\bqu[eé] (?:\w+ )?(?:ajuste|par[aá]metro|opci[oó]n|variable|directiva)s?\b.{0,200}?\bcu[aá]nt[oa]s?\b",
    re.I,
)


def _refusal_fact(question: str) -> str | None:
    """The kind of fact the refusal holds the excerpts to (`asked_fact`), none for a how-to
    question whose fact phrase is the object of its verb (`_HOW_TO_FACT`)."""
    return None if _HOW_TO_FACT.search(question) else asked_fact(question)


def fact_absent(question: str, units: Sequence[Unit]) -> float:
    """1 when the question asks for a kind of fact (a phone number, a port, a price, a date, a
    duration: `asked_fact`) and no unit holds a value of that kind at all (`_carries`), else 0:
    "When was Python 3.12 released?" over excerpts without a date, "¿Cuál es el presupuesto de
    marketing?" over notes without an amount. No answerable question of the sets the refusal is
    fitted on has it (docs/decisions.md#the-refusal-across-corpora)."""
    kind = _refusal_fact(question)
    if kind is None or not units:
        return 0.0
    return 0.0 if any(_carries(units, i, kind) for i in range(len(units))) else 1.0


def fact_far(question: str, hits: Sequence[Hit], units: Sequence[Unit], term_counts: TermCounts | None = None) -> float:
    """How telling it is that no unit holding the kind of fact asked for is about the question's
    subject (0..1): the question asks for a phone number, a port, a price, a date or a duration
    (`unit_scores.asked_fact`), and its rarest word that the excerpts hold (its subject: "Loki"
    in "how long are logs kept in Loki?") is in none of the units holding a value of that kind
    (`carries_fact`), read with what introduces them (`context_of`) and the unit before. That
    word's salience, weighed as
    `missing_salience` weighs a missing word; 1 when no unit holds a value of that kind; 0 when
    one is about the subject, or the question asks for no such fact, or the excerpts hold none of
    its words."""
    kind = _refusal_fact(question)
    if kind is None or not hits:
        return 0.0
    typed = [i for i, u in enumerate(units) if _carries(units, i, kind)]
    if not typed:
        return 1.0
    held = _held(hits)
    words = [w for k, w in key_words(question, refined=True).items() if k in held]
    if not words:
        return 0.0
    salience = word_salience(words, term_counts)
    subject = max(words, key=lambda w: salience[w])
    subject_keys = key_terms(subject, refined=True)
    paths = [h.chunk.relative_path for h in hits]
    for i in typed:
        unit = units[i]
        around = [unit.text, *context_of(unit, units, paths[unit.excerpt - 1])]
        if i and units[i - 1].excerpt == unit.excerpt:
            around.append(units[i - 1].text)
        if subject_keys <= unit_keys(" ".join(around), refined=True):
            return 0.0
    return salience[subject]


_QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”|'[^'\n]*'")


# A key of the keyboard by its name: written with a capital by custom, no product's or vendor's
# name, and written otherwise by the notes ("presses Enter" against "If the line is empty",
# "RET", "newline"; "Tab" against "TAB", "C-i").
KEY_NAMES = frozenset(
    [
        "enter",
        "return",
        "tab",
        "esc",
        "escape",
        "backspace",
        "space",
        "spacebar",
        "delete",
        "del",
        "home",
        "end",
        "insert",
        "pgup",
        "pgdn",
        "pageup",
        "pagedown",
    ]
)


def _is_name(word: str, first: str) -> bool:
    """A word that names something (a product, a vendor, a version): with a digit, a capital past
    its first letter, or a capital anywhere but the question's first word (`Stripe`, `SHA-256`,
    `PyPI`, `3.12`); a lower-case compound such as `two-factor` is not one, nor a key's name
    (`KEY_NAMES`: "Enter", "Tab", "Esc"; "ESC" too)."""
    if word.lower() in KEY_NAMES:
        return False
    if any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]):
        return True
    return word[:1].isupper() and word != first


# An amount the user gives ("larger than 10 megabytes", "every 5 minutes", "3 retries"): a number
# before a content word is their own value, not a name to look up; after a name it is a version
# ("RHEL 6 servers", "Python 3 code") and stays one.
_QUANTITY = re.compile(r"(?<![\w.,-])(\d+(?:[.,]\d+)?)[ \t]+([a-z]+)\b")


def _quantities(question: str, first: str) -> set[str]:
    """The amounts the question gives (`_QUANTITY`): "10" of "larger than 10 megabytes", not "6"
    of "RHEL 6 servers"."""
    out = set()
    for found in _QUANTITY.finditer(question):
        before = _WORD.findall(question[max(0, found.start() - 80) : found.start()])  # the word before
        if key_terms(found.group(2)) and not (before and _is_name(before[-1], first)):
            out.add(found.group(1))
    return out


def missing_name(question: str, hits: Sequence[Hit], term_counts: TermCounts | None = None) -> float:
    """How telling the rarest *name* of the question missing from the excerpts is (0..1, weighed
    as `missing_salience` weighs any missing word): excerpts that never mention the product,
    vendor or version asked about ("Stripe", "SHA-256") are not about it, whatever else they
    share with the question. Words the question quotes (`except SomeError as e`, 'Test') are
    the user's own example, not a name to look up."""
    first = next(iter(_WORD.findall(question)), "")
    quoted = {w for span in _QUOTED.findall(question) + _EXAMPLE.findall(question) for w in _WORD.findall(span)}
    quoted |= _quantities(question, first)
    names = [w for w in missing_words(question, hits) if w not in quoted and _is_name(w, first)]
    if not names:
        return 0.0
    return max(word_salience(names, term_counts).values())


# A word a language hardly uses: under this Zipf frequency (log10 of its uses per billion words)
# in English and in the question's language (`wordfreq`): "pytest", "uvloop", "certbot",
# "permalinks", "XAMPP", where "spreadsheet" (3.3), "scratch" (4.2) or "plug" (4.1) is a user's
# own wording (`unknown_word`).
MAX_WORD_ZIPF = 1.5
# A user's own address or link ("me@laptop.localdomain"): not a name to look up.
_ADDRESS = re.compile(r"\S+@\S+|\w+://\S+")


def _zipf(word: str, language: str) -> float:
    """`word`'s Zipf frequency in `language`, or at least whether it reaches `MAX_WORD_ZIPF`: a
    word of wordfreq's small list (its commonest words, 10 ms to load) does; only another is
    looked up in the large list (0.15 s to load)."""
    from wordfreq import zipf_frequency

    common = float(zipf_frequency(word, language, wordlist="small"))
    return common if common >= MAX_WORD_ZIPF else float(zipf_frequency(word, language))


def unknown_word(question: str, hits: Sequence[Hit], term_counts: TermCounts | None = None) -> float:
    """1 when the question names something the notes never mention and the language hardly uses
    (`unknown_words`), else 0. Not a word that misspells one of the notes' (`close_word`:
    "defualt" is "default" mistyped, and the weights decide the question as for "default")."""
    return 1.0 if unknown_words(question, hits, term_counts, typos=False) else 0.0


def unknown_words(
    question: str, hits: Sequence[Hit], term_counts: TermCounts | None = None, *, typos: bool = True
) -> list[str]:
    """The words by which the question names something the notes never mention and the language
    hardly uses (a tool, a product, a file: "pytest", "uvloop", "requirements.txt", "XAMPP"): a word
    of the question that no excerpt holds as it is written (`_written`: "firewalld" is not the
    excerpts' "firewall", whose key it shares), that no chunk of the brain holds (`word_salience`
    1; every word when the brain's counts are unknown), and whose frequency in English and in the
    question's language is under `MAX_WORD_ZIPF`. A plain word the notes put otherwise
    ("spreadsheet", "scratch directory") is common in the language; numbers, quoted words, the
    user's own example, addresses and words naming the kind of answer are left out; asked across
    languages (`_across`), only a name, number or identifier counts, as in `missing_words`. No
    answerable question of the sets the refusal is fitted on has one
    (docs/decisions.md#a-name-the-notes-never-mention). A misspelt word is one too ("defualt"),
    which `ask` names on stderr when it refuses; with `typos` False, not a typo of a word the brain
    holds (`close_word`), which the gate (`unknown_word`) leaves to the weights."""
    if not hits:
        return []
    written = _written(hits)
    across = _across(question, hits)
    first = next(iter(_WORD.findall(question)), "")
    left_out = {
        w
        for span in _QUOTED.findall(question) + _EXAMPLE.findall(question) + _ADDRESS.findall(question)
        for w in _WORD.findall(span)
    }
    words = []
    for key, word in key_words(question, refined=True).items():
        if key in _KIND_KEYS or key in _FORM_KEYS or word in left_out or _NUMBER.fullmatch(word):
            continue
        bare = POSSESSIVE.sub("", word.lower())
        parts = [part for part in re.split(r"[._]+", bare) if part]
        if bare in written or _joined(bare) in written or (len(parts) > 1 and all(p in written for p in parts)):
            continue
        if across and not _untranslated(word, first):
            continue
        words.append(word)
    if not words:
        return []
    salience = word_salience(words, term_counts)
    own = "es" if question_language(question) == "es" else "en"
    languages = sorted({"en", own})
    nowhere = [w for w in words if salience[w] >= 1.0]
    if not typos and term_counts is not None and nowhere:
        # Without the typos of the notes' words (checked first: it needs only the small word list).
        nowhere = [w for w in nowhere if close_word(w, written, term_counts) is None]
    return [w for w in nowhere if daemon_name(w) or all(_zipf(w, lang) < MAX_WORD_ZIPF for lang in languages)]


# A service's name as Unix writes it: a word of the language and a "d" ("systemd", "firewalld",
# "sshd", "httpd"). However common the word, the name is no misspelling of it (`close_word` took
# "firewalld" for "firewall" mistyped, and the question was answered from the manual's firewall
# paragraph), and however common the name ("systemd" 2.2), it names something (`unknown_words`).
# The word is at least this common in English, the name less; a word ending in "e" with a "d" is
# its past tense ("queued", "cached", "piped"), no name; a word ending in "d" with another, a typo
# ("passwordd").
DAEMON_ZIPF = 3.0


def daemon_name(word: str) -> bool:
    """Whether `word` is a service's name: a word of at least three letters, not ending in "e" or
    "d", at least DAEMON_ZIPF common in English, and a "d", the whole less common than that."""
    lowered = word.lower()
    stem = lowered[:-1]
    return (
        lowered.endswith("d")
        and len(stem) >= 3
        and stem.isalpha()
        and not stem.endswith(("e", "d"))
        and _zipf(stem, "en") >= DAEMON_ZIPF
        and _zipf(lowered, "en") < DAEMON_ZIPF
    )


CLOSE_WORD = 0.8  # `close_word`: difflib's similarity ratio from which a word is a spelling of another
CLOSE_VOCABULARY = 30000  # ... looked for among the excerpts' words and the language's commonest


def close_word(word: str, written: frozenset[str], term_counts: TermCounts) -> str | None:
    """The word of the notes that `word` most likely misspells ("defualt": "default", "stagging":
    "staging"): of the excerpts' words (`written`, `_written`) and English's commonest
    (`wordfreq`) within one letter of its length, the closest (`CLOSE_WORD`) that some chunk of
    the brain holds; None when there is none ("pytest")."""
    from difflib import get_close_matches

    if daemon_name(word):
        return None  # "firewalld" is no misspelt "firewall"
    lowered = word.lower()
    near = (len(lowered) - 1, len(lowered), len(lowered) + 1)
    candidates = {w for w in written if w.isalpha() and len(w) in near} | _common_near(lowered, near)
    candidates.discard(lowered)
    found = get_close_matches(lowered, sorted(candidates), n=5, cutoff=CLOSE_WORD)
    if not found:
        return None
    held = word_salience(found, term_counts)
    found.sort(key=lambda w: w[0] != lowered[0])  # of equally close words, one with its first letter
    return next((w for w in found if held[w] < 1.0), None)


def _common_near(word: str, lengths: tuple[int, ...]) -> set[str]:
    """The commonest words (`_common_words`) of these lengths that `difflib` could find close to
    `word`: those whose letters it shares enough of (its `quick_ratio`, an upper bound of the
    similarity, at least `CLOSE_WORD`), counted for all of them at once; `get_close_matches` then
    weighs only these, and finds what it found among all of them."""
    by_length, alphabet = _common_letters()
    counts = np.zeros(len(alphabet), dtype=np.int16)
    for ch in word:
        if ch in alphabet:
            counts[alphabet[ch]] += 1
    out: set[str] = set()
    for length in lengths:
        words, letters = by_length.get(length, ((), None))
        if letters is None:
            continue
        shared = np.minimum(letters, counts).sum(axis=1)
        out.update(
            w for w, m in zip(words, shared.tolist(), strict=True) if 2.0 * m / (length + len(word)) >= CLOSE_WORD
        )
    return out


@lru_cache(maxsize=1)
def _common_letters() -> tuple[dict[int, tuple[tuple[str, ...], np.ndarray]], dict[str, int]]:
    """`_common_words` by length, each word's letter counts a row, and the letters' columns."""
    common = sorted(_common_words())
    alphabet = {ch: i for i, ch in enumerate(sorted({ch for w in common for ch in w}))}
    groups: dict[int, list[str]] = {}
    for w in common:
        groups.setdefault(len(w), []).append(w)
    by_length = {}
    for length, words in groups.items():
        letters = np.zeros((len(words), len(alphabet)), dtype=np.int16)
        for row, w in enumerate(words):
            for ch in w:
                letters[row, alphabet[ch]] += 1
        by_length[length] = (tuple(words), letters)
    return by_length, alphabet


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    """English's `CLOSE_VOCABULARY` commonest words (wordfreq's small list), read once."""
    from wordfreq import top_n_list

    return frozenset(top_n_list("en", CLOSE_VOCABULARY, wordlist="small"))


def _written(hits: Sequence[Hit]) -> frozenset[str]:
    """The excerpts' words as written, lower-cased, with and without their edge punctuation
    ("requirements.txt", "mod_ssl", "firewall"), and their files' paths."""
    tokens = set(_TOKEN.findall("\n".join(f"{h.content} {h.chunk.relative_path}" for h in hits).lower()))
    return frozenset(tokens | {t.strip(".+-") for t in tokens})


_TOKEN = re.compile(r"[\w.+-]+")
_NUMBER = re.compile(r"[\d.,]+")


# Kinds of fact the refusal only asks to be somewhere in the excerpts (`fact_absent`), not stated
# about the question's words (`fact_unstated`): a question about an amount of data is worded in
# the user's words ("how much memory does each cached object cost") that the stating sentence
# puts otherwise ("an overhead of about 1KB per object").
ABSENT_ONLY = frozenset({"size"})


def fact_unstated(
    question: str, hits: Sequence[Hit], units: Sequence[Unit], term_counts: TermCounts | None = None
) -> float:
    """How far the excerpts are from *stating* the fact asked about the subject asked (0..1).

    The question asks for a kind of fact (a phone number, a port, a price, a date, a duration:
    `asked_fact`; or a name, "which vendor / CI service / entidad certificadora": `asks_name`).
    Each unit holding a value of that kind (`_carries`) is read with what introduces it, the unit
    before, and the fields beside it when it is a reference entry's field (`_near`: "Default:
    Timeout 60" with "Description: Amount of time the server will wait..."), and scored by the
    share of the question's words it holds, each word weighed by its salience in the brain
    (`_salience`), an ordinary word of the language by half of it (`COMMON_ZIPF`); words of a
    language other than the unit's excerpt count only when a translation keeps them (names,
    numbers, bridged words). The
    result is 1 minus the best unit's share: 0 when one unit states a value of the kind about
    every word of the question, 1 when no unit holds such a value; 0 for a question that asks
    for no such fact. "How long is the probation period of new hires?" over notes whose only
    durations are an audit's three days is near 1, though every word is somewhere in them."""
    kind = _refusal_fact(question)
    if kind in ABSENT_ONLY:
        return 0.0
    wants_name = kind is None and asks_name(question)
    if (kind is None and not wants_name) or not units:
        return 0.0
    own = question_language(question)
    languages = [question_language(h.content[:_LANGUAGE_SAMPLE]) for h in hits]
    first = next(iter(_WORD.findall(question)), "")
    # The words of the question's form ("still", "never", "since") and of the kind of answer
    # ("setting") are not its subject, as in `missing_words`.
    words = {k: w for k, w in key_words(question, refined=True).items() if k not in _FORM_KEYS | _KIND_KEYS}
    kept = {k: w for k, w in words.items() if _untranslated(w, first) or w in BRIDGED}
    if not words:
        return 0.0
    salience = word_salience(list(words.values()), term_counts)
    # An ordinary word weighs half: a question's own wording ("open", "works", "keep") is put
    # otherwise by the unit stating the fact ("go to http://127.0.0.1:6081/"), its subject's names
    # and rarer words are not.
    ordinary = {
        w: COMMON_WEIGHT
        if w.islower() and not _is_name(w, first) and any(_zipf(w, lang) >= COMMON_ZIPF for lang in {"en", own})
        else 1.0
        for w in words.values()
    }
    question_keys = key_terms(question)
    paths = [h.chunk.relative_path for h in hits]
    best = 0.0
    for i, unit in enumerate(units):
        if wants_name:
            if not carries_name(unit.text, question_keys):
                continue
        elif not _carries(units, i, kind or ""):
            continue
        counted = words if languages[unit.excerpt - 1] == own else kept
        if not counted:
            continue
        weight = {w: salience[w] * ordinary[w] for w in counted.values()}
        if sum(weight.values()) <= 0:
            # Every word in every chunk (a brain of a note or two): none tells more, all count.
            weight = dict.fromkeys(counted.values(), 1.0)
        total = sum(weight.values())
        around = [unit.text, *context_of(unit, units, paths[unit.excerpt - 1]), *_near(units, i)]
        if i and units[i - 1].excerpt == unit.excerpt:
            around.append(units[i - 1].text)
        keys = unit_keys(" ".join(around), refined=True)
        best = max(best, sum(weight[w] for k, w in counted.items() if k in keys) / total)
    return 1.0 - best


# Every signal `evidence_features` can measure; the refusal weighs those of `EVIDENCE_WEIGHTS`
# (`benchmarks/bench_answers.py --fit` compares the others).
EVIDENCE_SIGNALS = (
    "best_unit",
    "term_coverage",
    "top_score",
    "top_gap",
    "best_cosine",
    "missing",
    "fact_far",
    "fact_absent",
    "missing_name",
    "fact_unstated",
)


def evidence_features(
    question: str,
    hits: Sequence[Hit],
    scored: Scored,
    term_counts: TermCounts | None = None,
    *,
    asked: str | None = None,
    names: Sequence[str] | None = None,
) -> dict[str, float]:
    """The refusal's evidence: the signals `names` (of `EVIDENCE_SIGNALS`; by default those
    `EVIDENCE_WEIGHTS` weighs and the two `answer_evidence` refuses by whatever the weights,
    `term_coverage` and `fact_absent`):

    - `best_unit`: the best unit's linear score (before the logistic);
    - `term_coverage`: the share of the question's key terms the excerpts hold;
    - `top_score`: the top excerpt's retrieval score (a cosine, whose scale differs between
      corpora); `top_gap`: how far it is ahead of the last excerpt's;
    - `best_cosine`: the best cosine of a unit with the question (or its rendering);
    - `missing`: how rare the question's rarest word missing from the excerpts is in the brain
      (`missing_salience`); `missing_name`: the same for a name (`missing_name`);
    - `fact_far`, `fact_unstated`: how far the units holding the kind of fact asked are from its
      subject, from stating it about the question's words; `fact_absent`: 1 when no unit holds a
      value of that kind at all (`MIN_TERM_COVERAGE`'s fellow: the plain refusal).

    `asked`: the text whose asked fact is measured (`fact_far`, `fact_unstated`), when not the
    question's own (a rendering that lost "presupuesto" -> "budget" still asks for an amount)."""
    fact_text = asked or question
    wanted = dict.fromkeys(names if names is not None else ("term_coverage", "fact_absent", *EVIDENCE_WEIGHTS))
    scores = [h.score for h in hits]
    signals = {
        "best_unit": lambda: (
            0.0
            if not scored.units
            else float(np.max(scored.evidence))
            if scored.evidence is not None
            else float(np.max(np.log(scored.scores / (1 - scored.scores + 1e-12) + 1e-12) - BIAS))
        ),
        "term_coverage": lambda: term_coverage(question_terms(question), hits),
        "top_score": lambda: scores[0] if scores else 0.0,
        "top_gap": lambda: scores[0] - scores[-1] if scores else 0.0,
        "best_cosine": lambda: float(np.max(scored.cosines)) if scored.units else 0.0,
        "missing": lambda: missing_salience(question, hits, term_counts),
        "fact_far": lambda: fact_far(fact_text, hits, scored.units, term_counts),
        "fact_absent": lambda: fact_absent(fact_text, scored.units),
        "missing_name": lambda: missing_name(question, hits, term_counts),
        "fact_unstated": lambda: fact_unstated(fact_text, hits, scored.units, term_counts),
    }
    return {name: float(signals[name]()) for name in wanted}


def refused_whatever(found: dict[str, float]) -> bool:
    """Whether the evidence refuses whatever the weights: the excerpts hold under
    `MIN_TERM_COVERAGE` of the question's key terms, no unit holds a value of the kind of fact
    asked (`fact_absent`), or the question names something unknown to the notes and rare in the
    language (`unknown_word`)."""
    return (
        found["term_coverage"] < MIN_TERM_COVERAGE
        or found.get("fact_absent", 0.0) >= 1.0
        or found.get("unknown_word", 0.0) >= 1.0
    )


def answer_evidence(found: dict[str, float]) -> float:
    """How likely the excerpts answer the question at all (0..1): the refusal's logistic
    (`EVIDENCE_WEIGHTS`) over the evidence `evidence_features` found; 0 when the excerpts hold
    under `MIN_TERM_COVERAGE` of the key terms, no value of the kind of fact asked, or the
    question names something the notes never mention and the language hardly uses."""
    if refused_whatever(found):
        return 0.0
    z = sum(weight * found[name] for name, weight in EVIDENCE_WEIGHTS.items()) + EVIDENCE_BIAS
    return float(1 / (1 + np.exp(-z)))


def _asks_fact(question: str) -> bool:
    return asked_fact(question) is not None or asks_name(question)


def with_rendering(scored: Scored, rendered: Scored) -> Scored:
    """A Spanish question over English excerpts read in English too: each unit keeps the better
    of its scores (and cosines) against the question and against its English rendering."""
    evidence = None
    if scored.evidence is not None and rendered.evidence is not None:
        evidence = np.maximum(scored.evidence, rendered.evidence)
    return Scored(
        scored.units,
        np.maximum(scored.scores, rendered.scores),
        np.maximum(scored.cosines, rendered.cosines),
        scored.vectors,
        evidence,
    )


def _evidence(
    question: str,
    hits: Sequence[Hit],
    scored: Scored,
    term_counts: TermCounts | None,
    rendering: Rendering | None,
    min_evidence: float,
) -> float:
    return weighed_evidence(question, hits, scored, term_counts, rendering, min_evidence=min_evidence)[0]


def evidence_readings(question: str, hits: Sequence[Hit], rendering: Rendering | None) -> list[tuple[str, str | None]]:
    """The texts whose evidence `weighed_evidence` weighs, each with the text whose asked fact is
    measured when not its own (`evidence_features`' `asked`): the question, and its English
    rendering when the question is asked across languages (`_across`; over notes in the
    question's own language the rendering would only lend a near miss the English words it
    lacks), or its documentation wording ("folder" as "directory": the same words but one). A
    rendering that lost the kind of fact asked ("presupuesto" rendered "estimate") is weighed
    with the question's; a word-by-word gloss keeps no question form to lose."""
    readings: list[tuple[str, str | None]] = [(question, None)]
    if rendering is None or (rendering.via != "wording" and not _across(question, hits)):
        return readings
    lost = rendering.via != "gloss" and _asks_fact(question) and not _asks_fact(rendering.text)
    readings.append((rendering.text, question if lost else None))
    return readings


def readings_evidence(
    question: str,
    hits: Sequence[Hit],
    scored: Scored,
    term_counts: TermCounts | None,
    rendering: Rendering | None,
    names: Sequence[str] | None = None,
) -> list[dict[str, float]]:
    """The evidence (`evidence_features`, the signals `names`) of each of `evidence_readings`,
    each with the question's own `unknown_word`: a rendering may keep a word it could not
    translate ("reintentando"), which is no name for all that."""
    unknown = {"unknown_word": unknown_word(question, hits, term_counts)}
    return [
        evidence_features(text, hits, scored, term_counts, asked=asked, names=names) | unknown
        for text, asked in evidence_readings(question, hits, rendering)
    ]


def weighed_evidence(
    question: str,
    hits: Sequence[Hit],
    scored: Scored,
    term_counts: TermCounts | None,
    rendering: Rendering | None,
    *,
    min_evidence: float = 0.0,
) -> tuple[float, dict[str, float]]:
    """`answer_evidence` of the stronger of `evidence_readings` (the question, or its English
    rendering), with the evidence it was weighed from (`evidence_features`). The question's
    `unknown_word` (the same for every reading) is read last, and only when the evidence reaches
    `min_evidence` without it: below, refusing whatever the weights changes nothing, and the word
    lists it reads cost a cold process up to 0.2 s to load (`_zipf`)."""
    best: tuple[float, dict[str, float]] | None = None
    for text, asked in evidence_readings(question, hits, rendering):
        found = evidence_features(text, hits, scored, term_counts, asked=asked) | {"unknown_word": 0.0}
        weighed = (answer_evidence(found) if scored.units and hits else 0.0), found
        if best is None or weighed[0] > best[0]:
            best = weighed
    assert best is not None
    if best[0] >= min_evidence and best[0] > 0 and unknown_word(question, hits, term_counts) >= 1.0:
        return 0.0, best[1] | {"unknown_word": 1.0}
    return best


def _without(question: str, word: str) -> str:
    """`question` with every occurrence of `word` (as a whole word, any case) left out."""
    return " ".join(re.sub(rf"(?i)(?<!\w){re.escape(word)}(?!\w)", " ", question).split())


def topic_moves(
    question: str, hits: Sequence[Hit], scored: Scored, term_counts: TermCounts | None, encode: Encode
) -> list[tuple[str, float, float]]:
    """For each word of the question that no excerpt holds (`missing_words`) and no chunk of the
    brain holds either (`word_salience` 1): (the word, how far leaving it out moves the question's
    vector, 1 - cosine, and how much closer the question without it is to the excerpts' best
    unit), both texts embedded alike. Empty without the brain's counts or units."""
    if term_counts is None or not hits or not scored.units:
        return []
    missing = missing_words(question, hits)
    if not missing:
        return []
    salience = word_salience(missing, term_counts)
    nowhere = [w for w in missing if salience[w] >= 1.0]
    if not nowhere:
        return []
    vectors = unit_rows(np.asarray(encode([question, *(_without(question, w) for w in nowhere)]), dtype=np.float64))
    units = unit_rows(np.asarray(scored.vectors, dtype=np.float64))
    drops = 1.0 - vectors[1:] @ vectors[0]
    closest = (units @ vectors.T).max(axis=0)  # the best unit's cosine with each text
    return [(w, float(drops[i]), float(closest[i + 1] - closest[0])) for i, w in enumerate(nowhere)]


def missing_topic(
    question: str, hits: Sequence[Hit], scored: Scored, term_counts: TermCounts | None, encode: Encode
) -> str | None:
    """The word the question is about that the notes never mention, if any: of `topic_moves`,
    the word that moves the question most of those that carry it (by at least `MIN_TOPIC_DROP`)
    and that the excerpts do not speak of in other words (left out, the question is closer to
    the excerpts' best unit than with it: the word pulls away from what they say).
    `unknown_words` refuses over a name the language hardly uses ("uvloop"); this one over any
    word the question is about: "dog" in "Can I bring my dog to the Madrid office?" over the
    office's page (it moves the question by 0.24; without it the best unit is 0.15 closer). A
    word of the question's own phrasing moves it little ("pain" in "quoting dates with spaces is
    a pain"); a word the notes put otherwise brings the question closer to them ("folder" where
    the manual says "directory": without it the best unit is 0.11 further)."""
    moves = sorted(topic_moves(question, hits, scored, term_counts, encode), key=lambda m: -m[1])
    return next((word for word, drop, closer in moves if drop >= MIN_TOPIC_DROP and closer > 0), None)


def _passage(best: Unit, units: Sequence[Unit]) -> list[Unit]:
    """`best` with what belongs to it: its setup line or header row before it, the block a setup
    line introduces after it."""
    same = {u.index: u for u in units if u.excerpt == best.excerpt}
    out: list[Unit] = []
    linked_units = [same[j] for j in (best.setup, best.header) if j is not None and j in same]
    named = best.term or best.entry
    if named and best.setup is None:
        # A description's later sentence, or a field of the entry ("Default: 10pt"): its term
        # line, when the excerpt holds it. A term that is a long list (a dozen signatures over one
        # description) is left out.
        linked_units += [
            u
            for u in same.values()
            if u.index < best.index and u.text == named and count_tokens(u.text) <= MAX_TERM_TOKENS
        ][-1:]
    if best.kind == CODE and not _PROMPT_START.match(best.text):
        # A session's output ("'1,234,567,890'") is read with the command that printed it.
        before = same.get(best.index - 1)
        if before is not None and before.kind == CODE and _PROMPT_START.match(before.text):
            linked_units.append(before)
    if not linked_units and best.kind == SENTENCE and _ANAPHOR.match(best.text):
        # "It terminates the nearest enclosing loop": the sentence before says what "it" is.
        before = same.get(best.index - 1)
        if before is not None and before.kind in (SENTENCE, DEFINITION, ITEM):
            linked_units.append(before)
    setup = same.get(best.setup) if best.setup is not None else None
    if setup is not None and _CONNECTIVE.match(setup.text):
        # A bare connective ("Then:", "For example:") introduces the block but says nothing: the
        # sentence before it says what the block is for ("Connect to the VPN first. Then:").
        before = same.get(setup.index - 1)
        if before is not None and before.kind == SENTENCE and before not in linked_units:
            linked_units.insert(linked_units.index(setup), before)
    out.extend(linked_units)
    if setup is not None and best.kind == ITEM:
        # An item of a list its setup line introduces comes after the items before it, when they
        # are few and short: "... in different modes as given by --files-cache:" printed over its
        # second item only would hide the first, "ctime,size,inode (default)".
        before_it = [same.get(j) for j in range(setup.index + 1, best.index)]
        if 0 < len(before_it) <= LEAD_ITEMS and all(
            u is not None and u.kind == ITEM and u.setup == setup.index and len(u.text.split()) <= LEAD_ITEM_WORDS
            for u in before_it
        ):
            out.extend(u for u in before_it if u is not None)
    out.append(best)
    nxt = same.get(best.index + 1)
    if nxt is not None and nxt.setup == best.index and nxt.kind in INTRODUCED:
        out.append(nxt)
    return out


# An item printed with its setup line brings the items before it: at most this many, each of at
# most this many words (`_passage`).
LEAD_ITEMS = 2
LEAD_ITEM_WORDS = 12
# A setup line that only links ("Then:", "For example:"), unlike a label ("Arguments:") that names
# what follows.
_CONNECTIVE = re.compile(
    r"^\s*(?:then|next|or|also|finally|afterwards|for example|e\.g\.|luego|despu[eé]s|entonces|"
    r"por ejemplo)\s*,?\s*:\s*$",
    re.I,
)
_FLAG_START = re.compile(r"-{1,2}\w")
_PROMPT_START = re.compile(r"^(?:>>>|\$|PS>|C:\\>)\s")
# A sentence whose subject is the one before it names ("It terminates the nearest enclosing loop",
# "This method is called when ...", "Esto ..."): printed after that sentence.
_ANAPHOR = re.compile(
    r"^(?:it|its|this|these|they|their|that|those|such|he|she|then|otherwise|esto|este|esta|estos|estas|"
    r"ese|esa|eso|ello|entonces)\b",
    re.I,
)


def _text_key(unit: Unit) -> str:
    """What makes two units the same text when printed: their words, whatever the markup and
    punctuation around them (overlapping chunks repeat units; a page kept as AsciiDoc and as the
    HTML made from it says "'article', 'manpage'" in one and "article, manpage" in the other)."""
    return " ".join(_MARKS.sub(" ", claim_text(unit.text).lower()).split())


_MARKS = re.compile(r"[^\w\s]+")


def _plain(unit: Unit) -> str:
    """The unit's text as printed: code as it is; otherwise on one line, without list or table
    markup (a term that is a flag, `--compression::`, keeps its dashes) and without a labelled
    list's marks (`_unlabelled`)."""
    if unit.kind == CODE:
        return unit.text
    if _FLAG_START.match(unit.text):
        return _unlabelled(" ".join(unit.text.split()))
    return _unlabelled(claim_text(unit.text))


# The marks of a labelled list's terms (`--force::`, `term;;`: AsciiDoc's, and the HTML reader's
# for a `<dt>`): what tells the answer units a term from its description, not what a person reads.
# Only before a space or the end: `std::vector` and `Foo::Bar` are names.
_LABEL_MARK = re.compile(r"(?::{2,4}|;;)(?=\s|$)")


def _unlabelled(text: str) -> str:
    """`text` with a labelled list's marks as a person reads them: terms stacked on one another
    joined by commas, a colon before the description, a term alone without mark ("-k:: --keep::
    Keep them." is "-k, --keep: Keep them.", "HISTSIZE::" is "HISTSIZE")."""
    parts = [part.strip() for part in _LABEL_MARK.split(text)]
    if len(parts) == 1:
        return text
    terms = ", ".join(part for part in parts[:-1] if part)
    return f"{terms}: {parts[-1]}" if parts[-1] else terms


def _printed(unit: Unit) -> str:
    """How a unit is printed with its citation: a code block keeps its lines, the citation after."""
    if unit.kind == CODE:
        return f"{unit.text}\n[{unit.excerpt}]"
    return with_citations(_plain(unit), set(), unit.excerpt)


def _claim(unit: Unit, score: float, answering: bool) -> Claim:
    return Claim(
        written=unit.text,
        text=_printed(unit),
        claim=_plain(unit),
        supported=True,
        score=1.0,
        source=unit.excerpt,
        evidence=unit.text,
        relevance=score,
        citations=[unit.excerpt],
        citation_added=True,
        extracted=True,
        answering=answering,
    )


def _tokens(unit: Unit) -> int:
    return count_tokens(unit.text) + 3  # the citation


def _words(unit: Unit) -> int:
    return len(_printed(unit).split())


# A unit repeats a printed one when its words hold the printed unit's, or are held by them, the
# shorter text of at least this many words: one sentence kept in two documents made from the same
# source (a manual page and the reference manual, a page and its PDF), one of them with a heading
# or a list marker run into it ("Invoked as an interactive non-login shell When an interactive
# shell ... is started, Bash reads ~/.bashrc" after "When an interactive shell ... ~/.bashrc").
REPEAT_WORDS = 6


@dataclass
class _Passage:
    """The passage being assembled: the units chosen (each with whether it answers), those
    printed by place and by text (overlapping chunks repeat a text under two excerpts), and the
    tokens and printed words used of the budget."""

    scored: Scored
    budget: int
    chosen: list[tuple[Unit, bool]] = field(default_factory=list)
    taken: set[tuple[int, int]] = field(default_factory=set)
    seen_text: set[str] = field(default_factory=set)
    used: int = 0
    used_words: int = 0

    @property
    def words(self) -> int:
        """The budget in printed words (`PASSAGE_WORDS` at the default budget of tokens)."""
        return self.budget * PASSAGE_WORDS // DEFAULT_PASSAGE_TOKENS

    def best(self) -> Unit:
        return next(u for u, answering in self.chosen if answering)

    @cached_property
    def positions(self) -> dict[tuple[int, int], int]:
        """Each unit's place in `scored.units`, by (excerpt, index)."""
        return {(u.excerpt, u.index): i for i, u in enumerate(self.scored.units)}

    def unprinted(self, group: list[Unit]) -> list[Unit]:
        """The units of `group` the passage does not print yet, by place or by text (`_repeats`)."""
        return [u for u in group if (u.excerpt, u.index) not in self.taken and not self._repeats(_text_key(u))]

    def _repeats(self, key: str) -> bool:
        """Whether a unit of text `key` says what a printed one says: the same words, or words
        that hold a printed unit's or are held by one's, the shorter of at least REPEAT_WORDS."""
        if key in self.seen_text:
            return True
        if len(key.split()) < REPEAT_WORDS:
            return False
        padded = f" {key} "
        return any(
            len(seen.split()) >= REPEAT_WORDS and (f" {seen} " in padded or padded in f" {seen} ")
            for seen in self.seen_text
        )

    def fits(self, group: Iterable[Unit]) -> bool:
        group = list(group)
        return (
            self.used + sum(_tokens(u) for u in group) <= self.budget
            and self.used_words + sum(_words(u) for u in group) <= self.words
        )

    def _record(self, group: list[Unit]) -> None:
        for u in group:
            self.taken.add((u.excerpt, u.index))
            self.seen_text.add(_text_key(u))
        self.used += sum(_tokens(u) for u in group)
        self.used_words += sum(_words(u) for u in group)

    def append(self, group: list[Unit], answering: Unit) -> None:
        """`group` at the passage's end, `answering` the unit of it that answers."""
        self._record(group)
        self.chosen.extend((u, u is answering) for u in group)

    def place(self, group: list[Unit]) -> None:
        """`group` (units of one excerpt, in order, not answering) in its place (`_placed`)."""
        self._record(group)
        self.chosen = _placed(self.chosen, group)

    def place_after(self, group: list[Unit], anchor: Unit) -> None:
        """`group` (not answering) right after `anchor` and the units of its excerpt that follow it
        in the passage."""
        self._record(group)
        at = next(i for i, (u, _) in enumerate(self.chosen) if u is anchor) + 1
        while at < len(self.chosen) and self.chosen[at][0].excerpt == anchor.excerpt:
            at += 1
        self.chosen[at:at] = [(u, False) for u in group]


def passage_units(
    scored: Scored,
    *,
    passage_tokens: int = DEFAULT_PASSAGE_TOKENS,
    other_excerpts: bool = True,
    max_answering: int = MAX_ANSWERING,
    margin: float = MARGIN,
    other_margin: float = OTHER_MARGIN,
    question: str = "",
    opening: Sequence[int] = (),
) -> list[tuple[Unit, bool]]:
    """The units of the printed passage, each with whether it is an answering unit: the best unit
    with what belongs to it, the next best while they score within `margin` of it (at most
    `max_answering`), and, when `other_excerpts`, one more from an excerpt not printed yet that
    scores within `other_margin` of the best: the answer is often in the second excerpt's unit
    when the first excerpt's best one restates the question. All within `passage_tokens`.
    (The rules' values are chosen with each corpus left out: `benchmarks/rank_study.py`.) When
    `question` asks for a default, the default its best unit's entry states (`_with_default`); so
    when it asks for a number the best unit lacks and its entry's default is one ("How many
    minutes ...?" over "Maximum time (in minutes) between two items." and "Default: 30"). When
    it asks for a kind of fact no printed unit holds, the unit of the best one's excerpt that
    holds one (`_with_fact`). `opening`: units (indices into `scored.units`) the passage opens
    with, each with what belongs to it, whatever the budget: a comparison's side each
    (`compared_units`), an example and the line introducing it (`examples.example_units`)."""
    order = np.argsort(-scored.scores, kind="stable")
    best_score = float(scored.scores[order[0]])
    passage = _Passage(scored, passage_tokens)
    excerpts: set[int] = set()
    answering = _open_with(passage, opening, excerpts)
    for rank, i in enumerate(order[:CANDIDATES]):
        score = float(scored.scores[i])
        unit = scored.units[int(i)]
        new_excerpt = other_excerpts and unit.excerpt not in excerpts
        if rank and (score < MIN_ANSWER_SCORE or score < best_score - (other_margin if new_excerpt else margin)):
            continue
        if (unit.excerpt, unit.index) in passage.taken or (answering >= max_answering and not new_excerpt):
            continue
        group = passage.unprinted(_passage(unit, scored.units))
        if not any(u is unit for u in group):
            continue  # the same text as a printed unit (overlapping chunks repeat it)
        if passage.chosen and not passage.fits(group):
            # Without the block it introduces, when only that does not fit; but a line that only
            # introduces (a term's name line, a setup line) says nothing without it.
            introduced = any(u.excerpt == unit.excerpt and u.index > unit.index for u in group)
            group = [u for u in group if u.excerpt != unit.excerpt or u.index <= unit.index]
            if introduced and (
                _term_line(unit, scored.units)
                or (unit.text.rstrip().endswith(":") and len(key_terms(unit.text)) < MIN_NEXT_TERMS)
            ):
                continue
            if not passage.fits(group) and unit.kind == ROW:
                # A table row whose header row does not fit: the row alone, which still states
                # its fact ("| SEV1 | ... | 10 minutes |" beside two units of another note; +2 stated
                # on the development sets, none lost, 3 passages changed: docs/benchmarks.md).
                group = [unit]
            if not passage.fits(group):
                continue
        passage.append(group, unit)
        excerpts.add(unit.excerpt)
        answering += 1
        if answering > max_answering:
            break
    if passage.chosen:
        default = bool(question) and asks_default(question)
        if default or (question and answer_type(question) == "number"):
            _with_default(passage, value=not default)
        if question:
            _with_fact(passage, order, question)
        _with_next(passage)
    return passage.chosen


def _open_with(passage: _Passage, opening: Sequence[int], excerpts: set[int]) -> int:
    """The passage's opening units (a comparison's side each; an example), each with what belongs to it,
    whatever the budget, and with the sentence that follows it in its section when the budget
    holds that and the openings still to come (documentation often says what a thing is in its
    second sentence: "break" may only occur nested in a loop. It terminates the nearest ...), a
    sentence introducing a block with the block. The number of openings printed."""
    units = passage.scored.units
    groups = [(units[i], _passage(units[i], units)) for i in opening]
    printed = 0
    for n, (unit, group) in enumerate(groups):
        group = passage.unprinted(group)
        if not any(u is unit for u in group):
            continue
        passage.append(group, unit)
        excerpts.add(unit.excerpt)
        printed += 1
        at = passage.positions.get((unit.excerpt, unit.index + 1))
        follower = units[at] if at is not None else None
        if (
            follower is None
            or follower.kind not in (SENTENCE, ITEM)
            or follower.section != unit.section
            or not passage.scored.scores[at]  # a FAQ's next question, a cut sentence
        ):
            continue
        # With what belongs to it (`_passage`): a line introducing a block comes with the block
        # ("You can accomplish this with the following commands:" and the commands), or not at all.
        follows = passage.unprinted(_passage(follower, units))
        if not any(u is follower for u in follows) or (
            follower.text.rstrip().endswith(":") and follows[-1] is follower
        ):
            continue
        rest = [u for _, later in groups[n + 1 :] for u in passage.unprinted(later)]
        if passage.fits([*follows, *rest]):
            passage.append(follows, follower)
    return printed


def _with_fact(passage: _Passage, order: np.ndarray, question: str) -> None:
    """For a question asking for a kind of fact (a duration, a port, a date...: `asked_fact`) when
    no printed unit holds a value of that kind (`_carries`): the best-scoring unit of the best
    one's excerpt that holds one, with what belongs to it, among the `CANDIDATES` best units and
    from `MIN_ANSWER_SCORE`, when the budget has room. The best-matching unit often restates the
    question ("The drafts are kept in the pocket until they expire.") and the value is a few
    lines on, in an option's entry ("--expire=<time>:: ... defaults to 90 days"). Only that
    excerpt: another excerpt's value is likely another subject's ("may be as high as 2 hours")."""
    kind = _refusal_fact(question)
    if kind is None:
        return
    scored, at = passage.scored, passage.positions
    if any(
        _carries(scored.units, at[(u.excerpt, u.index)], kind) for u, _ in passage.chosen if (u.excerpt, u.index) in at
    ):
        return
    best = passage.best()
    for i in order[:CANDIDATES]:
        unit = scored.units[int(i)]
        if float(scored.scores[i]) < MIN_ANSWER_SCORE:
            break
        if (
            unit.excerpt != best.excerpt
            or (unit.excerpt, unit.index) in passage.taken
            or not _carries(scored.units, int(i), kind)
        ):
            continue
        group = passage.unprinted(_passage(unit, scored.units))
        if any(u is unit for u in group) and passage.fits(group):
            passage.place(group)
        return


_HAS_DIGIT = re.compile(r"\d")
# How far after a definition its entry's fields may be ("Type: String" / "Default: 10pt").
ENTRY_UNITS = 6


def _other_entry(unit: Unit, best: Unit, units: Iterable[Unit]) -> bool:
    """Whether `unit` belongs to another entry than `best`'s: a title, another definition, a unit
    of another term, or another term's line."""
    if unit.kind in (HEADING, DEFINITION) or (unit.term and unit.term != best.term):
        return True
    return _term_line(unit, units)


def _term_line(unit: Unit, units: Iterable[Unit]) -> bool:
    """Whether `unit` is the line naming the term a later unit of its excerpt describes (`-p
    <period>` over its description, or over the entry's fields and then it)."""
    return any(u.excerpt == unit.excerpt and u.index > unit.index and u.term == unit.text for u in units)


def _with_default(passage: _Passage, *, value: bool = False) -> None:
    """For a question asking for a default: when an answering unit describes a term (an option, a
    setting) and another unit of that term's entry states its default ("Default: 10pt", "The
    default is 3.", "Defaults to:" over the command it names), that unit joins the passage in its
    place, with the block it introduces, unless it is printed already or the budget has no room. The
    answering units are read best first, and the first entry with a default gives it. A reference
    entry gives its default in a field of its own, after the description the question's words meet
    or before it; where the excerpt ends inside the entry, an overlapping excerpt holding the same
    description reads on (docs/decisions.md#a-default-read-on). `value`: the question asks for a
    number, not for a default; only when the answering unit holds none and the default is one."""
    units = passage.scored.units
    for unit, answering in list(passage.chosen):
        if not answering or not unit.term or (value and _HAS_DIGIT.search(unit.text)):
            continue
        key = _text_key(unit)
        # The unit's own excerpt first, then another excerpt holding the same description.
        for held in [unit, *(u for u in units if u.excerpt != unit.excerpt and _text_key(u) == key)]:
            found = _entry_default(held, units, value=value)
            if found is None:
                continue
            group = passage.unprinted([found, *_introduced(found, units)])
            if group and group[0] is found and passage.fits(group):
                if found.excerpt == unit.excerpt:
                    passage.place(group)  # in the entry's order
                else:
                    passage.place_after(group, unit)
            return


def _entry_default(best: Unit, units: Sequence[Unit], *, value: bool) -> Unit | None:
    """The unit of `best`'s entry (its term's other units, within ENTRY_UNITS either side in its
    excerpt) that states a default (a number when `value`), or None."""
    same = {u.index: u for u in units if u.excerpt == best.excerpt}
    entry: list[Unit] = []
    for step in (1, -1):  # after the description, then before it (fields may come first)
        for index in range(best.index + step, best.index + step * (ENTRY_UNITS + 1), step):
            u = same.get(index)
            if u is None or u.text == best.term or _other_entry(u, best, same.values()):
                break
            entry.append(u)
    return next((u for u in entry if says_default(u.text) and (not value or _HAS_DIGIT.search(u.text))), None)


def _introduced(unit: Unit, units: Sequence[Unit]) -> list[Unit]:
    """The block a setup line introduces ("Defaults to:" over the command), in order; none for a
    unit that does not end with ":"."""
    if not unit.text.rstrip().endswith(":"):
        return []
    return [u for u in units if u.excerpt == unit.excerpt and u.setup == unit.index]


def _placed(chosen: list[tuple[Unit, bool]], group: list[Unit]) -> list[tuple[Unit, bool]]:
    """`chosen` with `group` (units of one excerpt, in order, not answering) after the last printed
    unit of that excerpt that comes before it, else first."""
    first = group[0]
    last = max(
        (i for i, (u, _) in enumerate(chosen) if u.excerpt == first.excerpt and u.index <= first.index), default=-1
    )
    return [*chosen[: last + 1], *[(u, False) for u in group], *chosen[last + 1 :]]


# The kinds of unit that may follow the best one as its continuation (`_with_next`), and the key
# terms one that is not code holds at least.
_CONTINUATION = frozenset({SENTENCE, ITEM, DEFINITION, CODE})
MIN_NEXT_TERMS = 4


def _with_next(passage: _Passage) -> None:
    """The passage with the unit right after the best one (in its excerpt) when the budget has
    room for it: the best-matching unit often restates the question's topic and the answer is
    the line after it ("It will fail if /tmp is mounted with the noexec option." then "You can
    change the temporary directory by setting the TEMP environment variable"). A title, a unit
    the scoring left out (a cut sentence, one too long), a text already printed, or a fragment of
    fewer than `MIN_NEXT_TERMS` key terms is not added; a setup line ending with ":" only with
    the block it introduces."""
    scored, at = passage.scored, passage.positions
    best = passage.best()
    k = at.get((best.excerpt, best.index + 1))
    if k is None or scored.scores[k] <= 0:
        return
    nxt = scored.units[k]
    if nxt.kind not in _CONTINUATION or not passage.unprinted([nxt]):
        return
    if nxt.kind != CODE and len(key_terms(nxt.text)) < MIN_NEXT_TERMS:
        return  # a fragment ("Sometimes called "memoize".", "Given this configuration:")
    if is_field(nxt.text) or _term_line(nxt, scored.units):
        return  # a reference entry's next field ("Context: server config"), or the next entry
    group = [nxt]
    if nxt.text.rstrip().endswith(":"):
        # A setup line comes with the block it introduces, or not at all.
        k2 = at.get((nxt.excerpt, nxt.index + 1))
        block = scored.units[k2] if k2 is not None else None
        if block is None or block.setup != nxt.index or (block.excerpt, block.index) in passage.taken:
            return
        group.append(block)
    if passage.fits(group):
        # After the last printed unit of the best one's group (its introduced block, if printed).
        passage.place(group)


# A summary's later units are prose: a code block, or a table row or header without the rest of
# its table ("2024-10-14 | Marta Iglesias | Jonas Lindqvist"), says nothing read on its own.
_NOT_SUMMARY = frozenset({CODE, ROW, HEADER})
_TITLE_WORDS = 8
_SENTENCE_END = re.compile(r"[.!?:;。！？…)\]\"'”]\s*$")
# A document's author line ("The Compiler <mail@qutebrowser.org>", AsciiDoc's second line).
_BYLINE = re.compile(r"^[^.!?<>\n]{0,60}<[^<>\s@]+@[^<>\s]+>$")


def _title_like(text: str) -> bool:
    """A title or banner line: a few words and no sentence end ("18 Zsh Line Editor", "Apache HTTP
    Server Version 2.4")."""
    return len(_WORD.findall(text)) <= _TITLE_WORDS and not _SENTENCE_END.search(text)


def _byline(text: str) -> bool:
    return bool(_BYLINE.match(text.strip()))


# What a list item without a sentence end holds when it is a command's synopsis or a bar of links:
# brackets, a bar, an option.
_SYNOPSIS = re.compile(r"[\[\]]| \| |(?:^|\s)--?[A-Za-z]")
# A sentence's stop (not a synopsis's "..." nor a colon), before closing quotes or brackets.
_ENDS_SENTENCE = re.compile(r"(?<!\.\.)[.!?。！？]['\"”’)\]]*\s*$")
# A summary's unit has at least this many words ("event ports (Solaris)" is a list's fragment).
_SUMMARY_MIN_WORDS = 4
# The rest of a sentence a command or a block interrupted: " and type in the text below." after
# "Or run" and the command.
_CONTINUES = re.compile(r"^(?:and|or|but|nor|then|so|which|that|because|y|o|pero)\b")


def _summary_material(unit: Unit, hits: Sequence[Hit], restated: bool = False) -> bool:
    """Whether a unit may go into a summary: a sentence of the document, a list item or an entry's
    description field, not a line without a sentence end (a title or banner, a line of fields:
    "BACKUP AND RESTORE POLICY Northwind Labs", "Owner: Platform team · Last reviewed: 2024-10-02",
    "Available Languages: en | fr | ja"), an author line, a question the document asks (a FAQ's),
    the tail of a sentence the chunk's start cut or a block interrupted ("and type in the text
    below."), a fragment, an item of code ("tcp_output [ -q ] -P
    prompt"), a table or a code block."""
    text = unit.text.strip()
    if (
        unit.kind in _NOT_SUMMARY
        or len(_WORD.findall(text)) < _SUMMARY_MIN_WORDS
        or _title_like(text)
        or _byline(text)
        or restated
        or _cut_at_start(unit, hits)
        or _CONTINUES.match(text)
    ):
        return False
    return bool(_ENDS_SENTENCE.search(text)) or (unit.kind == ITEM and not _SYNOPSIS.search(text)) or _described(text)


# A field's label ("Description:", "Owner:"), anywhere in a line.
_FIELD_LABEL = re.compile(r"(?:^|\s)[A-Z][\w-]*(?: [\w()-]+){0,2}:\s")


def _described(text: str) -> bool:
    """A reference entry's one field saying in words what it is ("Description: Compress content via
    Brotli before it is delivered to the client"), not a line of several ("Owner: Platform team ·
    Last reviewed: 2024-10-02 · Status: living document")."""
    if not is_field(text) or "·" in text or " | " in text or len(_FIELD_LABEL.findall(text)) != 1:
        return False
    value = text.split(":", 1)[1]
    return len(_WORD.findall(value)) >= _SUMMARY_MIN_WORDS and not _SYNOPSIS.search(value)


def _opens_summary(unit: Unit, hits: Sequence[Hit], restated: bool = False) -> bool:
    """Whether a unit may lead a summary: summary material that ends a sentence (not a list item,
    nor a line introducing what the summary will not print: "Topics covered in this document:")."""
    text = unit.text.strip()
    return _summary_material(unit, hits, restated) and (bool(_ENDS_SENTENCE.search(text)) or _described(text))


def summary_units(
    topic: str,
    scored: Scored,
    hits: Sequence[Hit],
    *,
    passage_tokens: int = SUMMARY_TOKENS,
    term_counts: TermCounts | None = None,
) -> list[Unit] | None:
    """The units of an extractive summary of the document or section `topic` names, or None when
    it names none of the excerpts' documents or sections. With the brain's word counts
    (`term_counts`), a file the topic names by its file name (`broad.named_document`, each word
    weighed by its salience) is the document before any other: "installing borg" is
    installation.txt, not the index page whose title says "Borg"."""
    terms = topic_terms(topic)
    if not terms or not scored.units:
        return None

    def match(text: str) -> float:
        return len(key_terms(text) & terms) / len(terms)

    # The document: the one whose path (or title) the topic names best, then the best ranked.
    paths = [h.chunk.relative_path for h in hits]
    titles = {p: "" for p in paths}
    for unit in scored.units:
        path = paths[unit.excerpt - 1]
        if unit.kind == HEADING and not titles[path] and hits[unit.excerpt - 1].chunk.chunk_index == 0:
            titles[path] = unit.text
    doc_match = {p: max(match(re.sub(r"[-_/.]+", " ", p)), match(titles[p])) for p in paths}
    # A section: a heading the topic names better than any document.
    best_heading, heading_match = None, 0.0
    for unit in scored.units:
        if unit.kind == HEADING and hits[unit.excerpt - 1].chunk.chunk_index + unit.index > 0:
            m = match(unit.text)
            if m > heading_match:
                best_heading, heading_match = unit, m
    # Of the documents named equally well, the best ranked that holds the whole topic: one that
    # holds only part of it ("the travel insurance policy" over the travel and expense policy,
    # without a word of insurance; "the Madrid office benefits" over the Madrid office's network
    # page) is not what was asked about.
    best_match = max(doc_match.values())
    by_title = None
    if max(best_match, heading_match) >= MIN_TOPIC_MATCH:
        named = (p for p in dict.fromkeys(paths) if doc_match[p] == best_match)
        by_title = next(
            (
                p
                for p in named
                if not missing_words(topic_words(topic), [h for h in hits if h.chunk.relative_path == p])
            ),
            None,
        )
    by_name = None
    if term_counts is not None:
        ranked = list(dict.fromkeys(paths))
        by_name = named_document(topic, ranked, lambda words: word_salience(words, term_counts), ranked)
    # The file named by its file name first; when it gives no summary (no sentence to lead with),
    # the one its title or path names.
    for doc in dict.fromkeys(d for d in (by_name, by_title) if d is not None):
        # A section the topic names better than the document: of the named file, its own.
        section = best_heading if heading_match > doc_match[doc] else None
        if section is not None and doc == by_name and paths[section.excerpt - 1] != doc:
            section = None
        units = _summary_of(topic, doc, section, scored, hits, passage_tokens)
        if units:
            return units
    return None


def _summary_of(
    topic: str, doc: str, heading: Unit | None, scored: Scored, hits: Sequence[Hit], passage_tokens: int
) -> list[Unit] | None:
    """The units of an extractive summary of document `doc`, or of the section under `heading`
    (`summary_units`): its lead and its most central sentences, in the document's order; None
    when it has no unit to lead with."""
    wanted = topic_terms(topic)
    paths = [h.chunk.relative_path for h in hits]
    if heading is not None:
        section = heading.text.split("\n")[0].lstrip("#").strip()
        scope = [
            i
            for i, u in enumerate(scored.units)
            if u.excerpt == heading.excerpt and u.section == section and u.kind != HEADING
        ]
    else:
        scope = [i for i, u in enumerate(scored.units) if paths[u.excerpt - 1] == doc and u.kind != HEADING]
    scope = [i for i in scope if not is_context_only(scored.units[i])]
    if not scope:
        return None

    def place(i: int) -> tuple[int, int]:
        unit = scored.units[i]
        return (hits[unit.excerpt - 1].chunk.chunk_index, unit.index)

    scope.sort(key=place)
    # Overlapping chunks repeat units: keep the first of each text.
    unique: list[int] = []
    texts: set[str] = set()
    for i in scope:
        key = _text_key(scored.units[i])
        if key not in texts:
            texts.add(key)
            unique.append(i)
    asked = _restated(scored.units)  # a FAQ's questions, which restate rather than say

    def material(i: int) -> bool:
        return _summary_material(scored.units[i], hits, i in asked)

    def entry(i: int) -> bool:
        """An option's description or its name, neither of which names the topic."""
        unit = scored.units[i]
        if unit.term:
            said = f"{unit.term} {unit.text}"
            return not (wanted & key_terms(said) or symbol_keys(topic) & symbol_keys(unit.term))
        return _term_line(unit, scored.units)

    # The document's own prose leads before another option's description: a reference page that
    # lists its options before its description (borg's usage pages) is not about "--force"; "What
    # is $$?" is answered by the description of `$$`.
    opening = [i for i in unique if _opens_summary(scored.units[i], hits, i in asked)]
    lead = next((i for i in opening if not entry(i)), opening[0] if opening else None)
    if lead is None:
        lead = next((i for i in unique if material(i)), None)
    if lead is None:  # a section that is a table: its first row
        lead = next((i for i in unique if scored.units[i].kind == ROW), None)
    if lead is None:
        return None
    vectors = scored.vectors[unique]
    centroid = unit_rows(vectors.mean(axis=0).reshape(-1))
    centrality = vectors @ centroid
    ranked = sorted(range(len(unique)), key=lambda k: -(centrality[k] + 0.5 * scored.cosines[unique[k]]))
    chosen = [lead]
    used = _tokens(scored.units[lead])
    at = {place(i): i for i in unique}
    for k in ranked:
        i = unique[k]
        if i in chosen or scored.units[i].kind in _NOT_SUMMARY:
            continue
        text = scored.units[i].text
        chunk, index = place(i)
        if _ANAPHOR.match(text) and at.get((chunk, index - 1)) not in chosen:
            continue  # "Those working days do not count..." read without the sentence it points back to
        if not material(i):
            continue  # a title line ("Configuring & Installing suEXEC"), an author, a FAQ's question, a cut sentence
        if scored.units[i].term or _term_line(scored.units[i], scored.units):
            continue  # one option's description ("Number of seconds to cache tokens for"), or its name
        cost = _tokens(scored.units[i])
        if used + cost > passage_tokens:
            continue
        chosen.append(i)
        used += cost
        if len(chosen) >= SUMMARY_UNITS:
            break
    chosen.sort(key=place)
    return [scored.units[i] for i in chosen]


def _states_topic(topic: str, scored: Scored) -> bool:
    """Whether some unit, read with its context, holds every key term of a broad question's topic."""
    wanted = topic_terms(topic)
    return any(wanted <= key_terms(" ".join([u.text, *context_of(u, scored.units)])) for u in scored.units)


def extractive_answer(
    question: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    *,
    max_tokens: int | None = None,
    passage_tokens: int = DEFAULT_PASSAGE_TOKENS,
    min_evidence: float = MIN_EVIDENCE,
    term_counts: TermCounts | None = None,
    rendering: Rendering | None = None,
    searched: str | None = None,
) -> CheckedAnswer:
    """The passage (or summary) of `hits` (numbered from 1) that answers `question`, each unit
    cited; the plain refusal when none does (see the module doc). `max_tokens` caps the passage
    further when it is smaller than `passage_tokens`. `rendering`: the question in English
    (`locallens.crosslang`), read beside it (`with_rendering`). `searched`: what retrieval
    searched for when not the question alone (a chat's follow-up with the question before it),
    whose words tell which example a follow-up asking for one means."""
    started = time.perf_counter()
    budget = min(passage_tokens, max_tokens) if max_tokens else passage_tokens
    scored = score_units(question, hits, question_vector, encode, term_counts)
    if rendering is not None and rendering.vector is not None:
        scored = with_rendering(scored, score_units(rendering.text, hits, rendering.vector, encode, term_counts))
    claims: list[Claim] = []
    topic_word: str | None = None  # the word the question is about that no note holds, when refused over it
    topic = is_broad(question)
    # A comparison opens its passage with each side; a broad one ("Summarize the difference between
    # A and B") is summarised as any broad question is.
    sides = None if topic else comparison(question)
    if topic and missing_salience(topic_words(topic), hits, term_counts) >= MIN_TOPIC_SALIENCE:
        topic = None  # the topic names something no excerpt holds: "summarize the stock option plan"
    summary = (
        summary_units(topic, scored, hits, passage_tokens=min(budget, SUMMARY_TOKENS), term_counts=term_counts)
        if topic
        else None
    )
    if summary:
        claims = [_claim(u, 1.0, answering=False) for u in summary]  # a summary: no one unit answers
    elif topic and not _states_topic(topic, scored):
        pass  # a broad question no document covers, and no unit is about its whole topic: refused
    elif (
        scored.units
        and _evidence(question, hits, scored, term_counts, rendering, min_evidence) >= min_evidence
        and not (topic_word := missing_topic(question, hits, scored, term_counts, encode))
    ):
        if sides:
            opening = compared_units(question, sides, hits, encode, term_counts, scored)
        elif asks_example(question):
            # "Show me an example of ...": the manual's example first, with the line introducing it.
            also = [rendering.text if rendering is not None else "", searched or ""]
            opening = example_units(question, scored.units, scored.scores, also=also)
            scored.units = as_blocks(scored.units, opening)
        else:
            opening = faq_answer(scored)
        claims = [
            _claim(u, float(scored.scores[scored.units.index(u)]), answering)
            for u, answering in passage_units(
                scored, passage_tokens=budget, other_excerpts=not topic, question=question, opening=opening
            )
        ]
    refused = not claims
    answer = refusal(question) if refused else "\n".join(c.text for c in claims)
    # Refused over a word no chunk of the brain holds: the person may have misspelt it.
    unknown: tuple[str, ...] = ()
    close: dict[str, str] = {}
    if refused and term_counts is not None:
        unknown = tuple(
            dict.fromkeys([*unknown_words(question, hits, term_counts), *([topic_word] if topic_word else [])])
        )
        written = _written(hits) if unknown else frozenset()
        # The word the question is about is one the language uses, no typo to correct.
        close = {w: c for w in unknown if w != topic_word and (c := close_word(w, written, term_counts))}
    return CheckedAnswer(
        raw=answer,
        claims=claims,
        answer=answer,
        withheld=0,
        refused=refused,
        check_ms=(time.perf_counter() - started) * 1000,
        summary=bool(summary),
        unanswered=refused,
        unknown=unknown,
        close=close,
        topic=topic_word or "",
    )


def compared_units(
    question: str,
    sides: tuple[Side, Side],
    hits: Sequence[Hit],
    encode: Encode,
    term_counts: TermCounts | None,
    scored: Scored,
) -> list[int]:
    """The unit that best answers each side of a comparison on its own (`compare.side_units`):
    every unit scored against the side's own question ("What is return(pipe) in vcl_recv?"),
    among the units that mention the side in their text, their term or their section heading."""
    paths = [h.chunk.relative_path for h in hits]
    texts = [
        " ".join([u.term, u.text, *context_of(u, scored.units, paths[u.excerpt - 1] if paths else "")])
        for u in scored.units
    ]
    side_scores = []
    for side, other in (sides, sides[::-1]):
        text = side_query(question, side, other)
        side_scores.append(score_units(text, hits, np.asarray(encode([text])[0]), encode, term_counts).scores)
    own = [f"{u.term} {u.text}" for u in scored.units]
    subjects = [subject_of(u.text, u.term, u.section) for u in scored.units]
    # What the notes say of a side: prose of some length, not an example or a bare term line.
    prose = [says(u.text, u.kind) for u in scored.units]
    return side_units(sides, texts, side_scores, own=own, subjects=subjects, leads=_leads(scored.units), prose=prose)


def _leads(units: Sequence[Unit]) -> frozenset[int]:
    """The units that open what their section (its heading in the same excerpt) or their entry
    (a definition's term) says: the first sentence, item or definition under each."""
    seen: set[tuple[int, str]] = set()
    out = set()
    for i, unit in enumerate(units):
        if unit.kind not in (SENTENCE, ITEM, DEFINITION):
            continue
        for key in (
            (unit.excerpt, "§" + unit.section) if unit.section else None,
            (unit.excerpt, unit.term) if unit.term else None,
        ):
            if key is not None and key not in seen:
                seen.add(key)
                out.add(i)
    return frozenset(out)


PROMPT_PASSAGE_TOKENS = 320  # the passages a prompt of selected passages holds, in all


def passage_hits(
    question: str,
    hits: Sequence[Hit],
    question_vector: np.ndarray,
    encode: Encode,
    *,
    budget: int = PROMPT_PASSAGE_TOKENS,
    term_counts: TermCounts | None = None,
) -> list[Hit]:
    """The excerpts cut down to their best passages (best units first, with what belongs to
    them, until `budget` tokens), each excerpt keeping its units in their order; excerpts left
    with nothing are dropped. For a prompt of selected passages instead of whole chunks."""
    from dataclasses import replace

    scored = score_units(question, hits, question_vector, encode, term_counts)
    kept: set[tuple[int, int]] = set()
    used = 0
    for i in np.argsort(-scored.scores, kind="stable"):
        group = [u for u in _passage(scored.units[int(i)], scored.units) if (u.excerpt, u.index) not in kept]
        cost = sum(_tokens(u) for u in group)
        if kept and used + cost > budget:
            break
        kept.update((u.excerpt, u.index) for u in group)
        used += cost
    out = []
    for n, h in enumerate(hits, start=1):
        texts = [u.text for u in scored.units if u.excerpt == n and (n, u.index) in kept]
        if texts:
            out.append(replace(h, chunk=replace(h.chunk, content="\n".join(texts))))
    return out or list(hits)


class ExtractiveMode:
    """`ask --extractive`: the excerpts' best passage, no LLM (`locallens.modes`)."""

    name = "extractive"
    uses_llm = False

    def answer(self, given: AnswerInput) -> AnswerOutput:
        checked = extractive_answer(
            given.question,
            given.hits,
            given.question_vector,
            given.encode,
            max_tokens=given.options.max_tokens,
            term_counts=given.term_counts,
            rendering=given.rendering,
            searched=given.searched,
        )
        return AnswerOutput(checked=checked, timings={"extract_ms": checked.check_ms})

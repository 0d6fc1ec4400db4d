"""The default answer mode: the local LLM writes, the answer check keeps what the excerpts back.

`GenerateMode` fits the excerpts into the model's context, prompts with them (`locallens.prompt`),
streams the answer through `LoopGuard` (a small model's loops are cut before they are shown),
parses its citations and checks every sentence (`locallens.claims`); when nothing of it is left,
the extractive passage stands in (`checked_answer`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from locallens.claims import (
    MIN_RELEVANCE,
    CheckedAnswer,
    Claim,
    Encode,
    check_answer,
    extract_facts,
    missing_facts,
    refusal,
)
from locallens.domain import Hit, Rendering
from locallens.extractive import extractive_answer, passage_hits
from locallens.models import Models
from locallens.modes import AnswerInput, AnswerOptions, AnswerOutput, TermCounts
from locallens.prompt import CITATION_RE, Citations, build_grounded_history, fit_hits_to_context, parse_citations
from locallens.tokens import count_tokens
from locallens.unit_scores import key_terms, key_words, word_salience

if TYPE_CHECKING:
    from locallens.llm import LocalLLM, Usage


class LoopGuard:
    """Stops a generation that has started repeating itself, before the repeat is shown.

    Small models fall into loops ("## 2. The staging database is ... ## 3. The staging database
    is ...", or "The answer is: [6]" twenty times with a new citation each time) and would fill
    --max-tokens with them. Lines are compared by a key that ignores markup, numbering and
    citation markers: a line of some length (`MIN_LINE`) that comes back ends the answer, and a
    shorter one ends it on its `MAX_SHORT_REPEATS + 1`-th appearance (a short line such as "ok"
    may legitimately recur once). So does a line that starts the prompt over ("Question:",
    "Source excerpts:"): the model is writing itself a new question to answer.
    Text streams as it comes, except a line that so far could be a repeat or such a header: it
    is held until it differs (then released) or is confirmed (then the answer ends without it).
    """

    MIN_LINE = 16
    MAX_SHORT_REPEATS = 2
    # The headers of the user message in prompt.py, as `_key` reduces them.
    PROMPT_HEADERS = ("question:", "source excerpts:")

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}  # line key -> times seen
        self.line = ""  # the current line so far
        self.held = ""  # the part of it not yet released
        self.text = ""  # everything fed so far
        self.cut_at: int | None = None  # where the answer must end: a loop inside a line starts there

    @staticmethod
    def _key(line: str) -> str:
        without_citations = CITATION_RE.sub(" ", line)
        key = re.sub(r"^[\s#>*+\-\d.)\]\[]*", "", without_citations)
        return " ".join(key.split()).lower()

    def _repeats(self, key: str) -> bool:
        """Whether the finished line `key` is one repeat too many."""
        count = self.seen.get(key, 0)
        return count >= (1 if len(key) >= self.MIN_LINE else self.MAX_SHORT_REPEATS)

    def feed(self, piece: str) -> tuple[str, bool]:
        """(text to show now, whether to stop generating).

        A loop inside one line (a sentence said again, or a fragment repeated over and over with
        no line break) also stops the generation; `cut_at` then says where the answer ends,
        since part of the loop may have been shown already.
        """
        self.text += piece
        if re.search(r"[\s.!?:;,]", piece) and (cut := loop_start(self.text)) is not None:
            self.cut_at = cut
            return "", True
        out: list[str] = []
        for part in re.split(r"(\n)", piece):
            if part == "\n":
                key = self._key(self.line)
                if key and self._repeats(key):
                    self.line = self.held = ""
                    return "".join(out), True
                if key:
                    self.seen[key] = self.seen.get(key, 0) + 1
                out.append(self.held + "\n")
                self.line = self.held = ""
                continue
            self.line += part
            self.held += part
            key = self._key(self.line)
            if any(key.startswith(header) for header in self.PROMPT_HEADERS):
                self.line = self.held = ""
                return "".join(out), True
            if (
                key
                and not any(seen.startswith(key) for seen in self.seen)
                and not any(header.startswith(key) for header in self.PROMPT_HEADERS)
            ):
                out.append(self.held)
                self.held = ""
        return "".join(out), False

    def flush(self) -> str:
        """What is still held when the generation ends by itself."""
        held, self.line, self.held = self.held, "", ""
        return held


# A fragment of 4-60 characters said four times in a row, with only spaces or light punctuation
# between: "de la nota de la nota de la nota de la nota", "2024-03-20: 2024-03-20: ...".
_REPEATED_FRAGMENT = re.compile(r"(?<!\w)(\S.{3,59}?)(?:[\s,;:.]*\1){3,}", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def loop_start(text: str) -> int | None:
    """Where `text` starts looping inside its lines, or None.

    The loop is a sentence whose key (as `LoopGuard._key` makes it) came before, at least
    `LoopGuard.MIN_LINE` long, or a short fragment repeated four times in a row. The text up to
    the returned offset keeps the first occurrence and drops the repeats.
    """
    match = _REPEATED_FRAGMENT.search(text)
    cut = match.start() + len(match.group(1)) if match else None
    seen: set[str] = set()
    start = 0
    for boundary in _SENTENCE_END.finditer(text + "\n"):
        key = LoopGuard._key(text[start : boundary.start()])
        if len(key) >= LoopGuard.MIN_LINE:
            if key in seen:
                cut = start if cut is None else min(cut, start)
                break
            seen.add(key)
        start = boundary.end()
    return cut


@dataclass(slots=True)
class Generation:
    kept: list[Hit]  # the excerpts sent, numbered from 1
    dropped: list[Hit]  # lowest-ranked excerpts that did not fit the context
    answer: str
    citations: Citations
    stopped_looping: bool
    usage: Usage | None


def citation_grammar(n_excerpts: int) -> str:
    """A GBNF grammar for answers whose every sentence ends with a citation `[n]`, n in 1..k.

    A sentence is any run of text without brackets or line breaks; after its citation comes an
    optional full stop, then a space or a line break and the next sentence, or the end.
    """
    numbers = " | ".join(f'"{n}"' for n in range(1, max(1, n_excerpts) + 1))
    return (
        "root ::= sentence (sep sentence)*\n"
        'sentence ::= [^\\[\\]\\n]+ "[" cite "]" "."?\n'
        f"cite ::= {numbers}\n"
        'sep ::= " " | "\\n" | "\\n\\n"\n'
    )


def generate_grounded(
    llm: LocalLLM,
    question: str,
    hits: list[Hit],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    cite_grammar: bool = False,
    on_text: Callable[[str], None] | None = None,
) -> Generation:
    """Fit the excerpts, prompt with them, stream the answer (stopping loops), parse citations.

    The one generation path of `ask` and of `eval --answers`. `hits` must not be empty: with no
    excerpts the model is never called. With `cite_grammar`, sampling is constrained by
    `citation_grammar` (every sentence ends with a citation of an excerpt that was sent).
    `on_text` receives the model's text as it streams (what the loop guard lets through, before
    the check): `locallens chat` shows it while the answer is being written.
    """
    kept, dropped = fit_hits_to_context(
        question, hits, count_prompt_tokens=llm.count_prompt_tokens, n_ctx=llm.n_ctx, max_tokens=max_tokens
    )
    pieces: list[str] = []
    guard = LoopGuard()
    looping = False
    grammar = llm.compile_grammar(citation_grammar(len(kept))) if cite_grammar else None
    stream = llm.stream_chat(
        build_grounded_history(question, kept), max_tokens=max_tokens, temperature=temperature, grammar=grammar
    )
    for piece in stream:
        shown, looping = guard.feed(piece)
        pieces.append(shown)
        if on_text is not None and shown:
            on_text(shown)
        if looping:
            stream.close()  # ends generation; usage is still recorded
            break
    if not looping:
        pieces.append(guard.flush())
    answer = (guard.text[: guard.cut_at] if guard.cut_at is not None else "".join(pieces)).strip()
    return Generation(kept, dropped, answer, parse_citations(answer, len(kept)), looping, llm.last_usage)


def checked_answer(
    model_answer: str,
    kept: list[Hit],
    question: str,
    question_vector: np.ndarray,
    encode: Encode,
    *,
    max_tokens: int,
    show_unsupported: bool = False,
    term_counts: TermCounts | None = None,
    rendering: Rendering | None = None,
    passage_from: list[Hit] | None = None,
    searched: str | None = None,
) -> CheckedAnswer:
    """The model's answer after the check, composed with the excerpts' best passage
    (`locallens.extractive`) by `compose`; the plain refusal when neither answers, and when the
    excerpts hold no answer to the question at all (the extractive answer's evidence refuses:
    `unanswered`), whatever the model wrote from them.

    A model that wrote nothing the excerpts support (the packaged 135M model, often) has still
    been shown excerpts that may hold the answer: rather than refuse, the answer is then the
    passage. The claims are the passage's followed by the model's (those not printed withheld),
    or the model's alone when its answer is printed.

    `passage_from`: the excerpts the passage (and the refusal's evidence) is drawn from, when not
    `kept` itself: the whole excerpts that `kept` was cut from, numbered alike (a prompt of
    selected passages). `searched`: what retrieval searched for when not the question alone
    (`extractive_answer`).
    """
    checked = check_answer(
        model_answer, kept, question_vector, encode, show_unsupported=show_unsupported, question=question
    )
    extracted = extractive_answer(
        question,
        passage_from or kept,
        question_vector,
        encode,
        max_tokens=max_tokens,
        term_counts=term_counts,
        rendering=rendering,
        searched=searched,
    )
    if extracted.unanswered and not checked.refused:
        # The excerpts hold no answer to the question (the refusal's evidence): what the model
        # wrote from them, even backed, is about a neighbouring subject. Refused, its sentences
        # kept in the claims (withheld).
        answer = refusal(question)
        if show_unsupported:
            answer += "\n\n" + checked.answer
        return CheckedAnswer(
            raw=model_answer,
            claims=[replace(c, supported=False) for c in checked.claims],
            answer=answer,
            withheld=len(checked.claims),
            refused=True,
            check_ms=checked.check_ms + extracted.check_ms,
            unanswered=True,
            unknown=extracted.unknown,
            close=extracted.close,
            topic=extracted.topic,
        )
    if extracted.refused:  # and so is the model's answer: the plain refusal
        checked.check_ms += extracted.check_ms
        checked.unknown, checked.close, checked.topic = extracted.unknown, extracted.close, extracted.topic
        return checked
    return compose(checked, extracted, question, term_counts=term_counts, show_unsupported=show_unsupported)


# The model's answer is printed instead of the passage when it rests on the passage and states its
# key facts (`_covers`): at least this share of the answering units' rare words, and every literal
# fact. A rare word: its inverse document frequency in the brain at least `MIN_KEY_SALIENCE`
# (`unit_scores.word_salience`; 1 for a word no chunk holds).
COVER_SHARE = 0.5
MIN_KEY_SALIENCE = 0.5
# What the model's supported sentences may add after the passage, in tokens (citations included):
# the passage's own budget is 100 (`extractive.DEFAULT_PASSAGE_TOKENS`), ~60 words.
ADDED_TOKENS = 40

# How the model's answer and the passage are composed (docs/benchmarks.md measures each):
# `model_alone`: when the model's answer is printed instead of the passage: "covers" (it rests on
# a unit of the passage and states its key facts), "agrees" (it rests on a unit of the passage:
# the rule before), "never"; `add`: which of the model's sentences follow the passage: "same"
# (citing only excerpts the passage cites), "any", "none".
ModelAlone = Literal["covers", "agrees", "never"]
Additions = Literal["same", "any", "none"]


def compose(
    checked: CheckedAnswer,
    extracted: CheckedAnswer,
    question: str,
    *,
    term_counts: TermCounts | None = None,
    show_unsupported: bool = False,
    model_alone: ModelAlone = "covers",
    add: Additions = "same",
    added_tokens: int = ADDED_TOKENS,
    cover_share: float = COVER_SHARE,
) -> CheckedAnswer:
    """The printed answer from the model's checked answer and the excerpts' passage (the passage
    not refused): the model's answer when it rests on the passage and states the passage's key
    facts (`_agrees`, `_covers`), so that it never says less than the passage it replaces; else
    the passage, followed by the model's supported sentences that add to it (`_additions`).
    Every printed sentence is a supported, cited claim; the claims hold all of the model's."""
    check_ms = checked.check_ms + extracted.check_ms
    if not checked.refused and model_alone != "never":
        alone = _agrees(checked, extracted)
        if alone and model_alone == "covers":
            alone = _covers(checked, extracted, question, term_counts, cover_share)
        if alone:
            checked.check_ms = check_ms
            return checked
    added = _additions(checked, extracted, question, add=add, added_tokens=added_tokens) if add != "none" else {}
    answer = "\n".join([extracted.answer, *(c.text for c in added.values())])
    if show_unsupported and checked.refused:  # the model's sentences follow, marked, as after a refusal
        answer += checked.answer.removeprefix(refusal(question))
    model_claims = [added.get(i) or replace(c, supported=False) for i, c in enumerate(checked.claims)]
    return CheckedAnswer(
        raw=checked.raw,
        claims=extracted.claims + model_claims,
        answer=answer,
        withheld=len(model_claims) - len(added),
        refused=False,
        check_ms=check_ms,
        fallback=True,
    )


def _key_facts(extracted: CheckedAnswer, question: str, term_counts: TermCounts | None) -> tuple[list[str], set[str]]:
    """The literal facts (numbers, identifiers, flags, paths, names) and the rare words of the
    passage's answering units (all its units, for a summary) that the question does not hold."""
    units = [c for c in extracted.claims if c.answering] or extracted.claims
    text = " ".join(c.claim for c in units)
    facts = [f for f in extract_facts(text) if missing_facts([f], question)]
    words = key_words(text)
    asked = key_terms(question)
    words = {k: w for k, w in words.items() if k not in asked and not any(ch.isdigit() for ch in k)}
    salience = word_salience(list(words.values()), term_counts) if term_counts is not None else {}
    rare = {k for k, w in words.items() if salience.get(w, 1.0) >= MIN_KEY_SALIENCE}
    return facts, rare


def _covers(
    checked: CheckedAnswer,
    extracted: CheckedAnswer,
    question: str,
    term_counts: TermCounts | None,
    cover_share: float = COVER_SHARE,
) -> bool:
    """Whether the model's printed sentences hold the passage's key facts: every literal fact of
    its answering units, and at least `cover_share` of their rare words."""
    facts, rare = _key_facts(extracted, question, term_counts)
    printed = " ".join(c.claim for c in checked.claims if c.supported)
    if missing_facts(facts, printed):
        return False
    return not rare or len(rare & key_terms(printed)) >= cover_share * len(rare)


# A list item's or heading's mark: an added sentence is printed after the passage, on its own line.
_LIST_MARK = re.compile(r"^(?:\s|[#>*+•]|-(?=\s)|\d{1,3}[.)](?=\s))*")


def _additions(
    checked: CheckedAnswer, extracted: CheckedAnswer, question: str, *, add: str, added_tokens: int
) -> dict[int, Claim]:
    """The model's supported, relevant sentences that add to the passage: resting on no unit it
    prints, holding a key term neither it nor the question holds, within `added_tokens`."""
    units = _passage_evidence(extracted)
    cited = {n for c in extracted.claims for n in c.citations}
    held = key_terms(" ".join([question, *(c.claim for c in extracted.claims)]))
    out: dict[int, Claim] = {}  # by the claim's place in the model's answer
    used = 0
    for i, claim in enumerate(checked.claims):
        if not _backed(claim):
            continue
        if add == "same" and not set(claim.citations) <= cited:  # another note than the passage's
            continue
        if _rests_on(claim, units):
            continue
        terms = key_terms(claim.claim)
        if not terms - held:
            continue
        cost = count_tokens(claim.text)
        if used + cost > added_tokens:
            continue
        out[i] = replace(claim, text=_LIST_MARK.sub("", claim.text))
        held |= terms
        used += cost
    return out


def _agrees(checked: CheckedAnswer, extracted: CheckedAnswer) -> bool:
    """Whether a supported, relevant sentence of the model rests on a unit of the passage."""
    units = _passage_evidence(extracted)
    return any(_backed(claim) and _rests_on(claim, units) for claim in checked.claims)


def _passage_evidence(extracted: CheckedAnswer) -> list[str]:
    """The texts of the passage's units, on one line each (a unit's claim evidence is its text)."""
    return [text for c in extracted.claims if (text := " ".join((c.evidence or "").split()))]


def _backed(claim: Claim) -> bool:
    """A supported, relevant sentence of the model, with the excerpt text it rests on."""
    return claim.supported and claim.relevance >= MIN_RELEVANCE and bool(claim.evidence)


def _rests_on(claim: Claim, units: list[str]) -> bool:
    """Whether the excerpt text `claim` rests on is (part of) one of the passage's `units`."""
    evidence = " ".join((claim.evidence or "").split())
    return any(evidence in unit or unit in evidence for unit in units)


class GenerateMode:
    """The default mode: the LLM's answer from the grounded prompt, checked (`checked_answer`)."""

    name = "generate"
    uses_llm = True

    def answer(self, given: AnswerInput) -> AnswerOutput:
        out = AnswerOutput()
        hits = list(given.hits)
        if given.options.prompt_passages:
            hits = passage_hits(
                given.question, hits, given.question_vector, given.encode, term_counts=given.term_counts
            )
        gen = _generate(given.options, given.question, hits, out, given.models)
        # With a prompt of passages, the excerpts sent are cut from the retrieved ones: the model's
        # sentences are checked against what it was shown, while the passage that stands in for
        # them, the refusal's evidence and the sources are the whole excerpts', numbered alike,
        # followed by the retrieved ones that had no passage to send (which the model did not
        # read: a citation of one is invalid), so that the extractive answer reads every excerpt.
        sources = gen.kept
        if given.options.prompt_passages:
            whole = {h.id: h for h in given.hits}
            sent = {h.id for h in gen.kept} | {h.id for h in gen.dropped}
            sources = [whole.get(h.id, h) for h in gen.kept] + [h for h in given.hits if h.id not in sent]
        out.sources, out.sent, out.dropped = sources, gen.kept, gen.dropped
        out.stopped_looping = gen.stopped_looping
        out.invalid_citations = gen.citations.invalid
        out.checked = checked_answer(
            gen.answer,
            gen.kept,
            given.question,
            given.question_vector,
            given.encode,
            max_tokens=given.options.max_tokens,
            show_unsupported=given.options.show_unsupported,
            term_counts=given.term_counts,
            rendering=given.rendering,
            passage_from=sources,
            searched=given.searched,
        )
        out.timings["check_ms"] = out.checked.check_ms
        return out


def _generate(
    request: AnswerOptions, question: str, hits: list[Hit], result: AnswerOutput, models: Models
) -> Generation:
    """Generate with the GGUF `request` names (or the packaged one) and record usage."""
    started = time.perf_counter()
    with models.llm(
        request.llm, n_ctx=request.n_ctx, gpu_layers=request.gpu_layers, seed=request.seed, threads=request.threads
    ) as llm:
        # Loading the GGUF (cold), or waiting for the warm model's previous generation to end.
        result.timings["llm_load_ms"] = (time.perf_counter() - started) * 1000
        result.models["llm"] = llm.model_name
        gen = generate_grounded(
            llm,
            question,
            hits,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            cite_grammar=request.cite_grammar,
            on_text=request.on_text,
        )
    usage = gen.usage
    if usage is not None:
        result.prompt_tokens, result.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        result.cached_tokens = usage.cached_tokens
        result.timings["prompt_ms"] = usage.prompt_ms
        result.timings["generate_ms"] = usage.generate_ms
    return gen

"""`eval --answers`: generate grounded answers and judge them with a local model (docs/behaviour.md#evaluation).

Each question is answered by `ask`'s own answer mode (`locallens.modes`, through
`answer.answer_with`: the same fitting, grounded prompt, loop guard, answer check and fallback),
on one loaded model: `answer.ask` loads the GGUF on every call, which would dominate an
evaluation of twenty questions. The context is the untrimmed top-k baseline, what `ask` uses by
default.

Judging is RAGAS-style and local. The judge is a llama.cpp model whose output is constrained by a
grammar built from a JSON schema (`LocalLLM.generate_json`), so even a 135M model returns a
parseable verdict; each output is still checked, and failures are counted, never guessed.

- Faithfulness: the answer is split into statements with `split_sentences` (citation markers
  removed, statements without a letter or digit dropped) and each statement is judged on its
  own against the excerpts the generator saw, schema `{"supported": boolean}`. One call per
  statement rather than one call returning an array: a small judge asked to list and judge the
  statements itself would also choose what the statements are (and may skip some), while a
  fixed statement list makes the denominator ours and each verdict a single boolean. The cost is
  one prefill of the context per statement. faithfulness = supported / judged statements, 1.0
  for an answer with no statement (nothing asserted, nothing unsupported).
- Context precision: each excerpt sent to the generator is judged for relevance to the question,
  schema `{"relevant": boolean}`, and the verdicts in rank order give RAGAS context precision
  (`metrics.context_precision`).
- Citation validity: valid `[N]` / all `[N]`, pooled over every answer; an answer without any
  marker adds nothing to either count (None per answer), and the aggregate is None when no answer
  cited anything, rather than a 1.0 that would reward never citing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from locallens.claims import CheckedAnswer, Encode
from locallens.config import DEFAULT_N_CTX
from locallens.domain import ChatMessage, Hit, Rendering
from locallens.errors import LocallensError, UsageError
from locallens.evaluation.metrics import citation_validity, contains_answer, context_precision, faithfulness, mean
from locallens.evaluation.questions import Question
from locallens.models import Models
from locallens.modes import DEFAULT_MODE, AnswerInput, AnswerOptions, TermCounts
from locallens.progress import NoProgress, Progress
from locallens.prompt import format_hits
from locallens.sentences import split_sentences

if TYPE_CHECKING:
    from locallens.llm import LocalLLM

ANSWERING = "answering"
JUDGING = "judging"

SUPPORTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}},
    "required": ["supported"],
    "additionalProperties": False,
}
RELEVANT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"relevant": {"type": "boolean"}},
    "required": ["relevant"],
    "additionalProperties": False,
}

FAITHFULNESS_SYSTEM = (
    "You are a strict fact checker. Decide whether the statement is supported by the context: "
    "every fact in the statement must appear in the context, without guessing. Reply with JSON only."
)
RELEVANCE_SYSTEM = (
    "You judge search results. Decide whether the excerpt contains information that helps to "
    "answer the question. Reply with JSON only."
)

# `[1]`, `[1, 2]`, `[1-3]`: markers point at excerpts; they are not part of what is asserted.
_MARKER = re.compile(r"\s*\[\s*\d+(?:\s*[-\u2013\u2014,]\s*\d+)*\s*\]")
_WORDISH = re.compile(r"\w")


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    llm: str | None = None  # generator GGUF; None: $LOCALLENS_LLM, then the packaged SmolLM2
    judge: str | None = None  # judge GGUF; None: the same resolution (the packaged LLM)
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = 256  # per answer
    judge_max_tokens: int = 32  # `{"supported": false}` is ~7 tokens; the grammar bounds whitespace
    gpu_layers: int = 0
    seed: int = 0
    extractive: bool = False  # answer as `ask --extractive` does (no generator model)

    @property
    def mode(self) -> str:
        """The answer mode run on each question (`locallens.modes`)."""
        return "extractive" if self.extractive else DEFAULT_MODE


def answer_statements(answer: str) -> list[str]:
    """The statements of an answer: its sentences, citation markers removed, empty ones dropped."""
    statements = []
    for sentence in split_sentences(answer):
        cleaned = _MARKER.sub("", sentence).strip()
        if _WORDISH.search(cleaned):
            statements.append(cleaned)
    return statements


def faithfulness_messages(context: str, statement: str) -> list[ChatMessage]:
    return [
        ChatMessage("system", FAITHFULNESS_SYSTEM),
        ChatMessage(
            "user", f"Context:\n{context}\n\nStatement:\n{statement}\n\nIs the statement supported by the context?"
        ),
    ]


def relevance_messages(question: str, excerpt: str) -> list[ChatMessage]:
    return [
        ChatMessage("system", RELEVANCE_SYSTEM),
        ChatMessage(
            "user", f"Question:\n{question}\n\nExcerpt:\n{excerpt}\n\nDoes this excerpt help to answer the question?"
        ),
    ]


@dataclass(slots=True)
class JudgeStats:
    calls: int = 0
    parse_failures: int = 0  # output not JSON, or not `{key: boolean}`
    errors: int = 0  # the call itself failed (e.g. the prompt does not fit the judge's context)
    seconds: float = 0.0


class Judge:
    """Boolean verdicts from a grammar-constrained model; None when a verdict could not be had."""

    def __init__(self, llm: LocalLLM, max_tokens: int) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.stats = JudgeStats()

    def verdict(self, messages: list[ChatMessage], schema: dict[str, Any], key: str) -> bool | None:
        self.stats.calls += 1
        started = time.perf_counter()
        try:
            value = self.llm.generate_json(messages, schema, max_tokens=self.max_tokens)
        except UsageError:
            # The prompt does not fit the judge's context window: no verdict, counted apart.
            self.stats.errors += 1
            return None
        except LocallensError:
            # generate_json's "not valid JSON" / "not an object": a parse failure.
            self.stats.parse_failures += 1
            return None
        finally:
            self.stats.seconds += time.perf_counter() - started
        verdict = value.get(key)
        if not isinstance(verdict, bool):
            self.stats.parse_failures += 1
            return None
        return verdict


@dataclass(frozen=True, slots=True)
class StatementVerdict:
    statement: str
    supported: bool | None  # None: the judge gave no usable verdict


@dataclass(frozen=True, slots=True)
class ExcerptVerdict:
    n: int  # the excerpt's number in the prompt
    path: str
    chunk_index: int
    relevant: bool | None
    citation: str = ""  # where the excerpt is, for a person (docs/behaviour.md#locations)


@dataclass(slots=True)
class QuestionAnswer:
    question: str
    answer: str | None = None  # the printed answer (after the answer check)
    model_answer: str | None = None  # what the generator wrote, before the check
    excerpts_sent: int = 0
    excerpts_dropped: int = 0  # lowest-ranked hits that did not fit the generator's context
    citations: list[int] = field(default_factory=list)  # cited by the printed answer
    invalid_citations: list[int] = field(default_factory=list)  # the generator's [N] with no excerpt
    statements: list[StatementVerdict] = field(default_factory=list)
    excerpts: list[ExcerptVerdict] = field(default_factory=list)
    error: str | None = None  # why no answer was generated
    stopped_looping: bool = False  # generation cut short because the model repeated itself
    checked: CheckedAnswer | None = None
    expected: tuple[str, ...] | None = None  # the question's `answers`
    answerable: bool = True

    @property
    def refused(self) -> bool:
        """No answer at all, or the plain refusal: the excerpts do not hold the answer."""
        return self.answer is None or (self.checked is not None and self.checked.refused)

    @property
    def fact_correct(self) -> bool | None:
        """Whether the printed answer states an expected answer (None: no `answers` to compare)."""
        if not self.expected or not self.answerable:
            return None
        return not self.refused and contains_answer(self.answer or "", self.expected)

    @property
    def printed_sentences(self) -> int:
        if self.checked is None or self.checked.refused:
            return 0
        return sum(1 for c in self.checked.claims if c.supported)

    @property
    def cited_sentences(self) -> int:
        if self.checked is None or self.checked.refused:
            return 0
        return sum(1 for c in self.checked.claims if c.supported and c.citations)

    @property
    def faithfulness(self) -> float | None:
        if self.answer is None:
            return None
        judged = [s.supported for s in self.statements if s.supported is not None]
        if self.statements and not judged:
            return None  # statements exist, but no verdict came back for any of them
        return faithfulness([bool(v) for v in judged])

    @property
    def context_precision(self) -> float | None:
        judged = [e.relevant for e in self.excerpts if e.relevant is not None]
        if not judged:
            return None
        # Rank order is kept; an excerpt without a verdict is left out of the ranking.
        return context_precision([bool(v) for v in judged])

    @property
    def citation_validity(self) -> float | None:
        return citation_validity(len(self.citations), len(self.invalid_citations))

    def as_json(self) -> dict[str, Any]:
        checked = self.checked
        return {
            "answer": self.answer,
            "model_answer": self.model_answer,
            "error": self.error,
            "refused": self.refused,
            "answerable": self.answerable,
            "fact_correct": self.fact_correct,
            "withheld": checked.withheld if checked else 0,
            "claims": [c.as_json() for c in checked.claims] if checked else [],
            "stopped_looping": self.stopped_looping,
            "excerpts_sent": self.excerpts_sent,
            "excerpts_dropped": self.excerpts_dropped,
            "citations": self.citations,
            "invalid_citations": self.invalid_citations,
            "statements": [{"statement": s.statement, "supported": s.supported} for s in self.statements],
            "excerpts": [
                {"n": e.n, "path": e.path, "chunk_index": e.chunk_index, "citation": e.citation, "relevant": e.relevant}
                for e in self.excerpts
            ],
            "faithfulness": _round(self.faithfulness),
            "context_precision": _round(self.context_precision),
            "citation_validity": _round(self.citation_validity),
        }


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(slots=True)
class AnswerMetrics:
    questions: int  # questions answered
    faithfulness: float | None
    context_precision: float | None
    citation_validity: float | None
    generator: str
    judge: str
    judge_calls: int
    judge_parse_failures: int
    judge_errors: int
    generate_seconds: float
    judge_seconds: float
    per_question: list[QuestionAnswer] = field(default_factory=list)
    mode: str = "generate"  # or "extractive"

    def _share(self, hits: int, total: int) -> float | None:
        return hits / total if total else None

    @property
    def fact_accuracy(self) -> float | None:
        """Answerable questions with `answers` whose printed answer states one of them."""
        verdicts = [q.fact_correct for q in self.per_question if q.fact_correct is not None]
        return self._share(sum(verdicts), len(verdicts))

    @property
    def citation_coverage(self) -> float | None:
        """Printed sentences that carry a valid citation."""
        return self._share(
            sum(q.cited_sentences for q in self.per_question), sum(q.printed_sentences for q in self.per_question)
        )

    @property
    def refusal_rate(self) -> float | None:
        """Unanswerable questions answered with the plain refusal."""
        unanswerable = [q for q in self.per_question if not q.answerable]
        return self._share(sum(q.refused for q in unanswerable), len(unanswerable))

    @property
    def false_refusals(self) -> int:
        return sum(1 for q in self.per_question if q.answerable and q.refused)

    @property
    def withheld(self) -> int:
        return sum(q.checked.withheld for q in self.per_question if q.checked is not None)

    @property
    def check_ms(self) -> float | None:
        costs = sorted(q.checked.check_ms for q in self.per_question if q.checked is not None)
        return costs[len(costs) // 2] if costs else None

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "fact_accuracy": _round(self.fact_accuracy),
            "citation_coverage": _round(self.citation_coverage),
            "refusal_rate": _round(self.refusal_rate),
            "false_refusals": self.false_refusals,
            "withheld": self.withheld,
            "faithfulness": _round(self.faithfulness),
            "context_precision": _round(self.context_precision),
            "citation_validity": _round(self.citation_validity),
            "answered": self.questions,
            "generator": self.generator,
            "judge": self.judge,
            "judge_calls": self.judge_calls,
            "judge_parse_failures": self.judge_parse_failures,
            "judge_errors": self.judge_errors,
            "timings": {
                "generate_s": round(self.generate_seconds, 2),
                "judge_s": round(self.judge_seconds, 2),
                "check_ms_median": _round(self.check_ms, 1),
            },
        }


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def evaluate_answers(
    questions: Sequence[Question],
    contexts: Sequence[Sequence[Hit]],
    question_vectors: Sequence[np.ndarray],
    encode: Encode,
    settings: AnswerSettings = AnswerSettings(),
    progress: Progress | None = None,
    term_counts: TermCounts | None = None,
    renderings: Sequence[Rendering | None] | None = None,
) -> AnswerMetrics:
    """Answer each question from its context as `ask` does (one loaded generator, the answer
    check, or the extractive answer), then judge the printed answers. `term_counts`: the brain's
    word counts, which the refusal weighs a missing word by (`answer.brain_term_counts`);
    `renderings`: each question's English rendering, when it was searched in English too."""
    from locallens.llm import resolve_llm_path
    from locallens.models import LOADERS

    if renderings is None:
        renderings = [None] * len(questions)
    if not len(questions) == len(contexts) == len(question_vectors) == len(renderings):
        raise UsageError("evaluate_answers needs one context, one vector and one rendering per question")
    progress = progress or NoProgress()
    from locallens.answer import get_mode

    generator_path = resolve_llm_path(settings.llm) if get_mode(settings.mode).uses_llm else None
    judge_path = resolve_llm_path(settings.judge)
    generator_info = None if generator_path is None else LOADERS.check_gguf(generator_path)
    judge_info = LOADERS.check_gguf(judge_path)

    judge_llm = LOADERS.llm(
        judge_path, n_ctx=settings.n_ctx, n_gpu_layers=settings.gpu_layers, seed=settings.seed, info=judge_info
    )
    # The judge's prompts hold the generator's excerpts plus a statement: the same context size
    # fits them. The same file is loaded once and serves both roles.
    generator = (
        None
        if generator_path is None
        else judge_llm
        if _same_file(generator_path, judge_path)
        else LOADERS.llm(
            generator_path,
            n_ctx=settings.n_ctx,
            n_gpu_layers=settings.gpu_layers,
            seed=settings.seed,
            info=generator_info,
        )
    )
    judge = Judge(judge_llm, settings.judge_max_tokens)
    results: list[QuestionAnswer] = []
    generate_seconds = 0.0
    try:
        progress.add(ANSWERING, len(questions))
        for question, hits, vector, rendering in zip(questions, contexts, question_vectors, renderings):
            result = QuestionAnswer(question=question.text, expected=question.answers, answerable=question.answerable)
            results.append(result)
            started = time.perf_counter()
            kept = _answer(
                generator, question.text, list(hits), vector, encode, settings, result, term_counts, rendering
            )
            generate_seconds += time.perf_counter() - started
            progress.advance(ANSWERING)
            if result.answer is None:
                continue
            statements = [] if result.refused else answer_statements(result.answer)
            progress.add(JUDGING, len(statements) + len(kept))
            context = format_hits(kept)
            for statement in statements:
                verdict = judge.verdict(faithfulness_messages(context, statement), SUPPORTED_SCHEMA, "supported")
                result.statements.append(StatementVerdict(statement, verdict))
                progress.advance(JUDGING)
            for n, hit in enumerate(kept, start=1):
                verdict = judge.verdict(relevance_messages(question.text, hit.content), RELEVANT_SCHEMA, "relevant")
                result.excerpts.append(
                    ExcerptVerdict(n, hit.chunk.relative_path, hit.chunk.chunk_index, verdict, hit.citation())
                )
                progress.advance(JUDGING)
    finally:
        if generator is not None and generator is not judge_llm:
            generator.close()
        judge_llm.close()

    answered = [r for r in results if r.answer is not None]
    valid = sum(len(r.citations) for r in answered)
    invalid = sum(len(r.invalid_citations) for r in answered)
    return AnswerMetrics(
        questions=len(answered),
        faithfulness=mean(r.faithfulness for r in answered),
        context_precision=mean(r.context_precision for r in answered),
        citation_validity=citation_validity(valid, invalid),
        generator="extractive (no LLM)" if generator_path is None else generator_path.name,
        judge=judge_path.name,
        judge_calls=judge.stats.calls,
        judge_parse_failures=judge.stats.parse_failures,
        judge_errors=judge.stats.errors,
        generate_seconds=generate_seconds,
        judge_seconds=judge.stats.seconds,
        per_question=results,
        mode="extractive" if generator_path is None else "generate",
    )


class _Loaded(Models):
    """The evaluation's one loaded generator, handed to the answer mode as `ask`'s models are."""

    def __init__(self, llm: LocalLLM | None) -> None:
        self.loaded = llm

    @contextmanager
    def llm(
        self, path: str | None, *, n_ctx: int, gpu_layers: int = 0, seed: int = 0, threads: int | None = None
    ) -> Iterator[LocalLLM]:
        if self.loaded is None:
            raise UsageError("this answer mode needs a generator model")
        yield self.loaded


def _answer(
    llm: LocalLLM | None,
    question: str,
    hits: list[Hit],
    vector: np.ndarray,
    encode: Encode,
    settings: AnswerSettings,
    result: QuestionAnswer,
    term_counts: TermCounts | None = None,
    rendering: Rendering | None = None,
) -> list[Hit]:
    """`ask`'s answer mode on one question's excerpts; returns the excerpts actually sent."""
    if not hits:
        # `ask` never calls the model without excerpts (exit 4); neither does the evaluation.
        result.error = "nothing relevant found"
        return []
    from locallens.answer import answer_with

    options = AnswerOptions(max_tokens=settings.max_tokens, n_ctx=settings.n_ctx, gpu_layers=settings.gpu_layers)
    try:
        asked = answer_with(
            settings.mode,
            AnswerInput(question, hits, vector, encode, _Loaded(llm), options, term_counts, rendering),
        )
    except UsageError as exc:  # the question cannot fit even with one excerpt
        result.error = str(exc)
        return []
    if asked.checked is None:
        result.error = f"answer mode {settings.mode!r} prints no answer"
        return []
    result.checked = asked.checked
    result.answer = asked.checked.answer
    result.citations = asked.checked.citations
    result.model_answer = asked.checked.raw if asked.mode == "generate" else None
    result.stopped_looping = asked.stopped_looping
    result.excerpts_sent, result.excerpts_dropped = len(asked.sources), len(asked.dropped)
    result.invalid_citations = asked.invalid_citations
    return asked.sources

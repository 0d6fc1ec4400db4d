"""`eval --answers`: generate grounded answers and judge them with a local model (SPEC §8, seed 04).

Generation follows `ask` step for step (fit the excerpts into the context, the grounded prompt of
SPEC §2, greedy decoding with `ask`'s loop guard, citations parsed against the excerpts sent), but in one loop over one
loaded model: `answer.ask` loads the GGUF on every call, which would dominate an evaluation of
twenty questions. The context is the untrimmed top-k baseline, what `ask` uses by default.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locallens.domain import ChatMessage, Hit
from locallens.errors import LocallensError, UsageError
from locallens.evaluation.metrics import citation_validity, context_precision, faithfulness, mean
from locallens.evaluation.progress import EvalProgress, NoProgress
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
    n_ctx: int = 4096
    max_tokens: int = 256  # per answer
    judge_max_tokens: int = 32  # `{"supported": false}` is ~7 tokens; the grammar bounds whitespace
    gpu_layers: int = 0
    seed: int = 0


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
        ChatMessage("user", f"Context:\n{context}\n\nStatement:\n{statement}\n\n"
                            "Is the statement supported by the context?"),
    ]


def relevance_messages(question: str, excerpt: str) -> list[ChatMessage]:
    return [
        ChatMessage("system", RELEVANCE_SYSTEM),
        ChatMessage("user", f"Question:\n{question}\n\nExcerpt:\n{excerpt}\n\n"
                            "Does this excerpt help to answer the question?"),
    ]


@dataclass(slots=True)
class JudgeStats:
    calls: int = 0
    parse_failures: int = 0  # output not JSON, or not `{key: boolean}`
    errors: int = 0  # the call itself failed (e.g. the prompt does not fit the judge's context)
    seconds: float = 0.0


class Judge:
    """Boolean verdicts from a grammar-constrained model; None when a verdict could not be had."""

    def __init__(self, llm: "LocalLLM", max_tokens: int) -> None:
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


@dataclass(slots=True)
class QuestionAnswer:
    question: str
    answer: str | None = None
    excerpts_sent: int = 0
    excerpts_dropped: int = 0  # lowest-ranked hits that did not fit the generator's context
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    statements: list[StatementVerdict] = field(default_factory=list)
    excerpts: list[ExcerptVerdict] = field(default_factory=list)
    error: str | None = None  # why no answer was generated
    stopped_looping: bool = False  # generation cut short because the model repeated itself

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
        return {
            "answer": self.answer,
            "error": self.error,
            "stopped_looping": self.stopped_looping,
            "excerpts_sent": self.excerpts_sent,
            "excerpts_dropped": self.excerpts_dropped,
            "citations": self.citations,
            "invalid_citations": self.invalid_citations,
            "statements": [{"statement": s.statement, "supported": s.supported} for s in self.statements],
            "excerpts": [{"n": e.n, "path": e.path, "chunk_index": e.chunk_index, "relevant": e.relevant}
                         for e in self.excerpts],
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

    def as_json(self) -> dict[str, Any]:
        return {
            "faithfulness": _round(self.faithfulness),
            "context_precision": _round(self.context_precision),
            "citation_validity": _round(self.citation_validity),
            "answered": self.questions,
            "generator": self.generator,
            "judge": self.judge,
            "judge_calls": self.judge_calls,
            "judge_parse_failures": self.judge_parse_failures,
            "judge_errors": self.judge_errors,
            "timings": {"generate_s": round(self.generate_seconds, 2), "judge_s": round(self.judge_seconds, 2)},
        }


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def evaluate_answers(
    questions: Sequence[str],
    contexts: Sequence[Sequence[Hit]],
    settings: AnswerSettings = AnswerSettings(),
    progress: EvalProgress | None = None,
) -> AnswerMetrics:
    """Answer each question from its context with one loaded generator, then judge the answers."""
    from locallens.llm import LocalLLM, check_gguf, resolve_llm_path

    if len(questions) != len(contexts):
        raise UsageError("evaluate_answers needs one context per question")
    progress = progress or NoProgress()
    generator_path = resolve_llm_path(settings.llm)
    judge_path = resolve_llm_path(settings.judge)
    check_gguf(generator_path)
    check_gguf(judge_path)

    generator = LocalLLM(generator_path, n_ctx=settings.n_ctx, n_gpu_layers=settings.gpu_layers, seed=settings.seed)
    # The judge's prompts hold the generator's excerpts plus a statement: the same context size
    # fits them. The same file is loaded once and serves both roles.
    judge_llm = generator if _same_file(generator_path, judge_path) else LocalLLM(
        judge_path, n_ctx=settings.n_ctx, n_gpu_layers=settings.gpu_layers, seed=settings.seed)
    judge = Judge(judge_llm, settings.judge_max_tokens)
    results: list[QuestionAnswer] = []
    generate_seconds = 0.0
    judge_total = 0
    try:
        progress.start(ANSWERING, len(questions))
        for question, hits in zip(questions, contexts):
            result = QuestionAnswer(question=question)
            results.append(result)
            started = time.perf_counter()
            kept = _generate(generator, question, list(hits), settings, result)
            generate_seconds += time.perf_counter() - started
            progress.advance(ANSWERING)
            if result.answer is None:
                continue
            statements = answer_statements(result.answer)
            judge_total += len(statements) + len(kept)
            progress.start(JUDGING, judge_total)
            context = format_hits(kept)
            for statement in statements:
                verdict = judge.verdict(faithfulness_messages(context, statement), SUPPORTED_SCHEMA, "supported")
                result.statements.append(StatementVerdict(statement, verdict))
                progress.advance(JUDGING)
            for n, hit in enumerate(kept, start=1):
                verdict = judge.verdict(relevance_messages(question, hit.content), RELEVANT_SCHEMA, "relevant")
                result.excerpts.append(ExcerptVerdict(n, hit.chunk.relative_path, hit.chunk.chunk_index, verdict))
                progress.advance(JUDGING)
    finally:
        if judge_llm is not generator:
            judge_llm.close()
        generator.close()

    answered = [r for r in results if r.answer is not None]
    valid = sum(len(r.citations) for r in answered)
    invalid = sum(len(r.invalid_citations) for r in answered)
    return AnswerMetrics(
        questions=len(answered),
        faithfulness=mean(r.faithfulness for r in answered),
        context_precision=mean(r.context_precision for r in answered),
        citation_validity=citation_validity(valid, invalid),
        generator=generator_path.name,
        judge=judge_path.name,
        judge_calls=judge.stats.calls,
        judge_parse_failures=judge.stats.parse_failures,
        judge_errors=judge.stats.errors,
        generate_seconds=generate_seconds,
        judge_seconds=judge.stats.seconds,
        per_question=results,
    )


def _generate(llm: "LocalLLM", question: str, hits: list[Hit], settings: AnswerSettings,
              result: QuestionAnswer) -> list[Hit]:
    """`ask`'s generation on a loaded model; returns the excerpts actually sent."""
    if not hits:
        # `ask` never calls the model without excerpts (exit 4); neither does the evaluation.
        result.error = "nothing relevant found"
        return []
    from locallens.answer import generate_grounded

    try:
        gen = generate_grounded(llm, question, hits, max_tokens=settings.max_tokens)
    except UsageError as exc:  # the question cannot fit even with one excerpt
        result.error = str(exc)
        return []
    result.answer, result.stopped_looping = gen.answer, gen.stopped_looping
    result.excerpts_sent, result.excerpts_dropped = len(gen.kept), len(gen.dropped)
    result.citations, result.invalid_citations = gen.citations.cited, gen.citations.invalid
    return gen.kept

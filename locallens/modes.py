"""Answer modes: what `ask` does with the excerpts once retrieval has found them.

A mode is a name and a factory in `MODES`. `answer.ask` (and `eval --answers`, through
`answer.answer_with`) looks the mode up by name and calls its `answer` with the excerpts, the
question's vector, the sentence encoder and the models; the mode fills in the `AskResult`
(`checked`, `sources` when it sends fewer excerpts than it got, timings, models). The built-in
modes:

- `generate` (the default): the local LLM writes an answer from the grounded prompt, the answer
  check keeps what the excerpts support, and the extractive passage stands in when nothing is
  left (`locallens.answer.GenerateMode`);
- `extractive` (`--extractive`): no LLM, the excerpts' best passage (`locallens.extractive`);
- `context` (`--context-only`): no answer at all, the excerpts only.

Adding a mode is one module with a class like the ones below and one line in `MODES`
(CONTRIBUTING.md has a worked example).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from locallens.config import DEFAULT_MAX_TOKENS, DEFAULT_N_CTX
from locallens.domain import Hit
from locallens.errors import UsageError

if TYPE_CHECKING:
    from locallens.answer import AskRequest, AskResult
    from locallens.models import Models
    from locallens.trim import Encode


@dataclass(frozen=True, slots=True)
class AnswerOptions:
    """What a mode may need of the request beyond the excerpts (generation settings)."""

    llm: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    n_ctx: int = DEFAULT_N_CTX
    gpu_layers: int = 0
    threads: int | None = None
    seed: int = 0
    show_unsupported: bool = False
    cite_grammar: bool = False

    @classmethod
    def of(cls, request: AskRequest) -> AnswerOptions:
        return cls(
            llm=request.llm,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            n_ctx=request.n_ctx,
            gpu_layers=request.gpu_layers,
            threads=request.threads,
            seed=request.seed,
            show_unsupported=request.show_unsupported,
            cite_grammar=request.cite_grammar,
        )


@dataclass(frozen=True, slots=True)
class AnswerInput:
    """Everything a mode answers from."""

    question: str
    hits: Sequence[Hit]  # the retrieved excerpts, numbered from 1
    question_vector: np.ndarray
    encode: Encode  # sentence vectors through the brain's cache
    models: Models
    options: AnswerOptions


class AnswerMode(Protocol):
    name: str
    uses_llm: bool  # the question must then fit the LLM's context (checked before retrieval)

    def answer(self, given: AnswerInput, result: AskResult) -> None:
        """Fill `result` (at least `checked`, unless the mode prints no answer)."""


class ContextMode:
    """`--context-only`: the excerpts, no answer."""

    name = "context"
    uses_llm = False

    def answer(self, given: AnswerInput, result: AskResult) -> None:
        return None


class ExtractiveMode:
    """`--extractive`: the excerpts' best passage, no LLM."""

    name = "extractive"
    uses_llm = False

    def answer(self, given: AnswerInput, result: AskResult) -> None:
        from locallens.extractive import extractive_answer

        result.checked = extractive_answer(
            given.question, given.hits, given.question_vector, given.encode, max_tokens=given.options.max_tokens
        )
        result.timings["extract_ms"] = result.checked.check_ms


def _generate() -> AnswerMode:
    from locallens.answer import GenerateMode

    return GenerateMode()


# name -> factory. The factories import lazily, so that `--help` loads no mode's dependencies.
MODES: dict[str, Callable[[], AnswerMode]] = {
    "generate": _generate,
    "extractive": ExtractiveMode,
    "context": ContextMode,
}
DEFAULT_MODE = "generate"


def get_mode(name: str) -> AnswerMode:
    """The mode registered as `name` (UsageError, exit 2, for an unknown name)."""
    factory = MODES.get(name)
    if factory is None:
        raise UsageError(f"unknown answer mode {name!r}; known: {', '.join(sorted(MODES))}")
    return factory()

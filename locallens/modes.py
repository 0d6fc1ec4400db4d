"""Answer modes: what `ask` does with the excerpts once retrieval has found them.

A mode is a class with a `name`, `uses_llm` and `answer(given) -> AnswerOutput`; `answer.MODES`
maps each name to its class, and `answer.ask` (and `eval --answers`, through `answer.answer_with`)
looks the mode up by name and calls it with the excerpts, the question's vector, the sentence
encoder and the models. The built-in modes:

- `generate` (the default): the local LLM writes an answer from the grounded prompt, the answer
  check keeps what the excerpts support, and the extractive passage stands in when nothing is
  left (`locallens.generation.GenerateMode`);
- `extractive` (`--extractive`): no LLM, the excerpts' best passage
  (`locallens.extractive.ExtractiveMode`);
- `context` (`--context-only`): no answer at all, the excerpts only (`ContextMode` below).

This module holds only the shapes a mode works with, so that a mode's module imports it and
nothing imports a mode but `answer`. Adding a mode is one module with a class like these and one
line in `answer.MODES` (CONTRIBUTING.md has a worked example).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from locallens.config import DEFAULT_MAX_TOKENS, DEFAULT_N_CTX, DEFAULT_PROMPT_PASSAGES
from locallens.domain import Hit, Rendering

if TYPE_CHECKING:
    from locallens.claims import CheckedAnswer
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
    prompt_passages: bool = DEFAULT_PROMPT_PASSAGES  # the prompt holds the excerpts' best passages, not whole chunks
    on_text: Callable[[str], None] | None = None  # the model's text as it streams (`locallens chat`)


# How many of the brain's chunks hold each word (up to a cap), with the brain's chunk count:
# `(chunks, {word: count})`, from the store's keyword index (`IndexStore.term_counts`).
TermCounts = Callable[[Sequence[str]], tuple[int, dict[str, int]]]


@dataclass(frozen=True, slots=True)
class AnswerInput:
    """Everything a mode answers from."""

    question: str
    hits: Sequence[Hit]  # the retrieved excerpts, numbered from 1
    question_vector: np.ndarray
    encode: Encode  # sentence vectors through the brain's cache
    models: Models
    options: AnswerOptions
    # The brain's word counts: how rare a question's word missing from the excerpts is. None:
    # unknown, and such a word counts as found in no other chunk either.
    term_counts: TermCounts | None = None
    # The question's English rendering, when it was searched in English too (`locallens.crosslang`).
    rendering: Rendering | None = None
    # What retrieval searched for when not the question alone: a chat's follow-up with the
    # question before it ("Show me an example of that." after the question naming "that").
    searched: str | None = None


@dataclass(slots=True)
class AnswerOutput:
    """What a mode gives back; `ask` copies it into its `AskResult`."""

    checked: CheckedAnswer | None = None  # None: the mode prints no answer
    sources: list[Hit] | None = None  # the excerpts the answer was drawn from, when fewer than given
    sent: list[Hit] | None = None  # the excerpts as the model read them, when cut from `sources`
    dropped: list[Hit] = field(default_factory=list)  # excerpts that did not fit the model's context
    stopped_looping: bool = False
    invalid_citations: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    models: dict[str, str | None] = field(default_factory=dict)


class AnswerMode(Protocol):
    name: str
    uses_llm: bool  # the question must then fit the LLM's context (checked before retrieval)

    def answer(self, given: AnswerInput) -> AnswerOutput: ...


class ContextMode:
    """`--context-only`: the excerpts, no answer."""

    name = "context"
    uses_llm = False

    def answer(self, given: AnswerInput) -> AnswerOutput:
        return AnswerOutput()


DEFAULT_MODE = "generate"

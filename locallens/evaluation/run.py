"""`locallens eval`: measure trimming, retrieval and answers.

Two entry points, one per form of the command:

- `run_eval(EvalRequest(db=..., questions=PATH))` → `EvalReport`: over the QUESTIONS file, the
  trimming sweep (always), retrieval metrics (when questions name their `files`) and, with
  `answers=True`, generated answers judged by a local grammar-constrained model.
- `run_beir(EvalRequest(db=..., beir=DIR))` → `BeirReport`: a BEIR-layout benchmark through the
  real index/search pipeline (nDCG@10, recall@10, recall@100).

One pass over the questions feeds every measurement: each question is embedded once (one batch
for all of them) and searched once; the sweep, the retrieval metrics and the answers all reuse
those hits. This module holds the request, the report's data and the orchestration; turning a
report into JSON, text, CSV or a plot is `locallens.evaluation.report`'s job. The CLI only parses
flags, calls one of these, and prints `as_json()` or `render_text()` (plus `write_csv` / `plot`
on request).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locallens.config import (
    DEFAULT_DEVICE,
    DEFAULT_EVAL_THRESHOLDS,
    DEFAULT_EVAL_WINDOWS,
    DEFAULT_HYBRID,
    DEFAULT_MIN_SENTENCES,
    DEFAULT_N_CTX,
    DEFAULT_TOP_K,
)
from locallens.errors import UsageError
from locallens.evaluation.answers import AnswerMetrics, AnswerSettings, evaluate_answers
from locallens.evaluation.beir import DEFAULT_CHUNKS_PER_QUERY, BeirReport, evaluate_beir
from locallens.evaluation.questions import Question, load_questions
from locallens.evaluation.retrieval_eval import RANKING_DEPTH, RetrievalMetrics, score_question
from locallens.evaluation.retrieval_eval import aggregate as aggregate_retrieval
from locallens.evaluation.trimming import Baseline, SweepResult, sweep
from locallens.models import Models
from locallens.progress import NoProgress, Progress
from locallens.storage import DbLocation

EMBEDDING_QUESTIONS = "embedding questions"
RETRIEVING = "retrieving"


@dataclass(frozen=True, slots=True)
class EvalRequest:
    db: DbLocation
    brain: str = "default"
    questions: Path | None = None  # QUESTIONS file (run_eval)
    beir: Path | None = None  # BEIR-layout folder (run_beir)
    top_k: int = DEFAULT_TOP_K
    thresholds: tuple[float, ...] = DEFAULT_EVAL_THRESHOLDS
    windows: tuple[int, ...] = DEFAULT_EVAL_WINDOWS
    min_sentences: int = DEFAULT_MIN_SENTENCES
    answers: bool = False
    llm: str | None = None  # generator GGUF for --answers (None: $LOCALLENS_LLM, then packaged)
    judge: str | None = None  # judge GGUF (None: the packaged LLM)
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = 256  # per generated answer
    device: str = DEFAULT_DEVICE
    model: str | None = None  # embedding model of the BEIR brain (None: auto, or the brain's pin)
    beir_chunks: int = DEFAULT_CHUNKS_PER_QUERY  # chunks searched per BEIR query
    hybrid: bool = DEFAULT_HYBRID  # search by vector and keywords fused (retrieval.hybrid_search)
    extractive: bool = False  # --answers without a generator: the extractive answer
    inline_questions: tuple[Question, ...] | None = None  # instead of a QUESTIONS file (the MCP tool)


def _parse_list(text: str, kind: type, flag: str) -> tuple[Any, ...]:
    items = [p.strip() for p in text.split(",") if p.strip()]
    if not items:
        raise UsageError(f"{flag} needs at least one value")
    try:
        return tuple(kind(p) for p in items)
    except ValueError:
        raise UsageError(
            f"{flag} takes comma-separated {'numbers' if kind is float else 'integers'} (got {text!r})"
        ) from None


def parse_thresholds(text: str) -> tuple[float, ...]:
    """`"0.3,0.38,0.45"` → (0.3, 0.38, 0.45); UsageError on anything else."""
    return _parse_list(text, float, "--thresholds")


def parse_windows(text: str) -> tuple[int, ...]:
    """`"0,1,2"` → (0, 1, 2); UsageError on anything else (negative values included)."""
    windows = _parse_list(text, int, "--windows")
    if any(w < 0 for w in windows):
        raise UsageError(f"--windows takes integers >= 0 (got {text!r})")
    return windows


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class EvalReport:
    brain: str
    db: str
    model: str  # embedding model of the brain
    top_k: int
    questions: list[Question]
    baselines: list[Baseline]
    sweep: SweepResult
    retrieval: RetrievalMetrics | None = None
    answers: AnswerMetrics | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    search: str = "vector"  # or "hybrid"

    # The renderers live in locallens.evaluation.report; these methods are the public face.

    def as_json(self) -> dict[str, Any]:
        from locallens.evaluation.report import as_json

        return as_json(self)

    def write_csv(self, path: Path) -> None:
        """One row per sweep setting (the JSON sweep fields plus exact tiktoken averages)."""
        from locallens.evaluation.report import write_csv

        write_csv(self, path)

    def plot(self, path: Path) -> None:
        """Token reduction against chunk overlap and answer retention, as a PNG."""
        from locallens.evaluation.report import plot

        plot(self, path)

    def render_text(self) -> str:
        from locallens.evaluation.report import render_text

        return render_text(self)


# --------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------


def _validate(request: EvalRequest) -> None:
    if request.top_k < 1:
        raise UsageError(f"--top-k must be at least 1 (got {request.top_k})")
    if not request.thresholds:
        raise UsageError("--thresholds needs at least one value")
    if not request.windows or any(w < 0 for w in request.windows):
        raise UsageError(f"--windows takes integers >= 0 (got {request.windows!r})")


def _baselines(
    store: Any,
    brain: Any,
    embedder: Any,
    questions: Sequence[Question],
    top_k: int,
    progress: Progress,
    hybrid: bool = False,
) -> list[Baseline]:
    """Embed every question once (one batch, with the model's query prefix) and search once, a
    question in Spanish in English too, as `ask` searches it (`locallens.crosslang`)."""
    from locallens import crosslang
    from locallens.retrieval import search

    texts = [embedder.spec.query_prefix + q.text for q in questions]
    progress.add(EMBEDDING_QUESTIONS, len(texts))
    vectors = embedder.encode(texts, progress=lambda n: progress.advance(EMBEDDING_QUESTIONS, n))
    depth = max(top_k, RANKING_DEPTH)  # deep enough for the file ranking; the context is its prefix
    progress.add(RETRIEVING, len(questions))
    baselines = []
    for question, vector in zip(questions, vectors, strict=False):
        rendering = crosslang.embedded(crosslang.render(question.text), embedder.encode_query)
        hits = search(store, brain, question.text, vector, depth, hybrid=hybrid, also=crosslang.variants(rendering))
        baselines.append(Baseline(question, vector, hits, top_k, rendering))
        progress.advance(RETRIEVING)
    return baselines


def run_eval(request: EvalRequest, progress: Progress | None = None, models: Models | None = None) -> EvalReport:
    """The QUESTIONS form of `locallens eval` (see the module doc)."""
    from locallens.answer import brain_term_counts
    from locallens.retrieval import SentenceEncoder
    from locallens.storage import open_store

    if request.questions is None and not request.inline_questions:
        raise UsageError("give a QUESTIONS file (or --beir DIR)")
    _validate(request)
    progress = progress or NoProgress()
    models = models or Models()
    started = time.perf_counter()
    questions = list(request.inline_questions or ()) or load_questions(request.questions)  # type: ignore[arg-type]
    timings: dict[str, float] = {}

    with open_store(request.db) as store:
        brain = store.get_brain(request.brain)
        t0 = time.perf_counter()
        embedder = models.embedder(brain.model, request.device)
        t1 = time.perf_counter()
        baselines = _baselines(store, brain, embedder, questions, request.top_k, progress, request.hybrid)
        t2 = time.perf_counter()
        encode = SentenceEncoder(embedder, store)
        result = sweep(
            baselines,
            request.thresholds,
            request.windows,
            min_sentences=request.min_sentences,
            encode=encode,
            progress=progress,
        )
        t3 = time.perf_counter()
        timings.update(embed_load_s=t1 - t0, retrieve_s=t2 - t1, sweep_s=t3 - t2)

        answers = None
        if request.answers:
            answers = evaluate_answers(
                questions,
                [b.hits for b in baselines],
                [b.vector for b in baselines],
                encode,
                AnswerSettings(
                    llm=request.llm,
                    judge=request.judge,
                    n_ctx=request.n_ctx,
                    max_tokens=request.max_tokens,
                    extractive=request.extractive,
                ),
                progress,
                brain_term_counts(store, brain),
                [b.rendering for b in baselines],
            )
            timings["answers_s"] = time.perf_counter() - t3

    scored = [
        score_question(b.ranked_hits, request.top_k, q.files)
        for q, b in zip(questions, baselines, strict=False)
        if q.files
    ]
    retrieval = aggregate_retrieval(scored, request.top_k)

    return EvalReport(
        brain=request.brain,
        db=str(request.db),
        model=brain.model,
        top_k=request.top_k,
        questions=questions,
        baselines=baselines,
        sweep=result,
        retrieval=retrieval,
        answers=answers,
        seconds=time.perf_counter() - started,
        timings=timings,
        search="hybrid" if request.hybrid else "vector",
    )


def run_beir(request: EvalRequest, progress: Progress | None = None) -> BeirReport:
    """The `--beir DIR` form: index the corpus into brain `beir-<name>` of `request.db` and score it."""
    if request.beir is None:
        raise UsageError("--beir needs a BEIR-layout folder")
    return evaluate_beir(
        request.beir,
        request.db,
        model=request.model,
        device=request.device,
        chunks_per_query=request.beir_chunks,
        hybrid=request.hybrid,
        progress=progress,
    )

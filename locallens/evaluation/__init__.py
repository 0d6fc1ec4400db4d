"""`locallens eval`: measure trimming, retrieval and answers (SPEC §6 and §8, issue 5).

Two entry points, one per form of the command:

- `run_eval(EvalRequest(db=..., questions=PATH))` → `EvalReport`: over the QUESTIONS file, the
  trimming sweep of seed 02 (always), retrieval metrics (when questions name their `files`) and,
  with `answers=True`, generated answers judged by a local grammar-constrained model.
- `run_beir(EvalRequest(db=..., beir=DIR))` → `BeirReport`: a BEIR-layout benchmark through the
  real index/search pipeline (nDCG@10, recall@10, recall@100).

One pass over the questions feeds every measurement: each question is embedded once (one batch
for all of them) and searched once; the sweep, the retrieval metrics and the answers all reuse
those hits. The CLI only parses flags, calls one of these, and prints `as_json()` or
`render_text()` (plus `write_csv` / `plot` on request).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locallens.errors import UsageError
from locallens.evaluation.answers import AnswerMetrics, AnswerSettings, evaluate_answers
from locallens.models import Models
from locallens.evaluation.beir import DEFAULT_CHUNKS_PER_QUERY, BeirReport, evaluate_beir
from locallens.evaluation.progress import EvalProgress, NoProgress
from locallens.evaluation.questions import Question, load_questions
from locallens.evaluation.retrieval_eval import RANKING_DEPTH, RetrievalMetrics, score_question
from locallens.evaluation.retrieval_eval import aggregate as aggregate_retrieval
from locallens.evaluation.trimming import BEST_MIN_QUALITY, Baseline, SweepResult, sweep

__all__ = [
    "BeirReport",
    "EvalProgress",
    "EvalReport",
    "EvalRequest",
    "NoProgress",
    "parse_thresholds",
    "parse_windows",
    "run_beir",
    "run_eval",
]

EMBEDDING_QUESTIONS = "embedding questions"
RETRIEVING = "retrieving"

CSV_COLUMNS = (
    "threshold", "window", "avg_tokens_baseline", "avg_tokens_trim", "token_reduction_pct",
    "avg_overlap_vs_baseline", "answer_retention", "avg_tiktoken_baseline", "avg_tiktoken_trim", "best",
)


@dataclass(frozen=True, slots=True)
class EvalRequest:
    db: Path
    brain: str = "default"
    questions: Path | None = None  # QUESTIONS file (run_eval)
    beir: Path | None = None  # BEIR-layout folder (run_beir)
    top_k: int = 5
    thresholds: tuple[float, ...] = (0.3, 0.38, 0.45)
    windows: tuple[int, ...] = (0, 1, 2)
    min_sentences: int = 1
    answers: bool = False
    llm: str | None = None  # generator GGUF for --answers (None: $LOCALLENS_LLM, then packaged)
    judge: str | None = None  # judge GGUF (None: the packaged LLM)
    n_ctx: int = 4096
    max_tokens: int = 256  # per generated answer
    device: str = "auto"
    model: str | None = None  # embedding model of the BEIR brain (None: auto, or the brain's pin)
    beir_chunks: int = DEFAULT_CHUNKS_PER_QUERY  # chunks searched per BEIR query
    hybrid: bool = False  # search by vector and keywords fused (retrieval.hybrid_search)
    extractive: bool = False  # --answers without a generator: the extractive answer
    inline_questions: tuple[Question, ...] | None = None  # instead of a QUESTIONS file (the MCP tool)


def _parse_list(text: str, kind: type, flag: str) -> tuple[Any, ...]:
    items = [p.strip() for p in text.split(",") if p.strip()]
    if not items:
        raise UsageError(f"{flag} needs at least one value")
    try:
        return tuple(kind(p) for p in items)
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated {'numbers' if kind is float else 'integers'} "
                         f"(got {text!r})") from None


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

    # ---------------------------------------------------------------------------- JSON

    def as_json(self) -> dict[str, Any]:
        return {
            "questions": len(self.questions),
            "search": self.search,
            "sweep": [row.as_json() for row in self.sweep.rows],
            "retrieval": self.retrieval.as_json() if self.retrieval else None,
            "answers": self.answers.as_json() if self.answers else None,
            "per_question": self._per_question(),
        }

    def _per_question(self) -> list[dict[str, Any]]:
        retrieval_iter = iter(self.retrieval.per_question if self.retrieval else [])
        out = []
        for i, (question, baseline) in enumerate(zip(self.questions, self.baselines)):
            measured = self.sweep.per_question[i] if i < len(self.sweep.per_question) else []
            retrieval = next(retrieval_iter).as_json() if (self.retrieval and question.files) else None
            answer = (self.answers.per_question[i].as_json()
                      if self.answers and i < len(self.answers.per_question) else None)
            out.append({
                "question": question.text,
                "line": question.line,
                "files": list(question.files) if question.files else None,
                "answers": list(question.answers) if question.answers else None,
                "hits": [{"path": h.chunk.relative_path, "chunk_index": h.chunk.chunk_index,
                          "score": round(h.score, 4)} for h in baseline.hits],
                "tokens_baseline": measured[0].tokens_baseline if measured else 0,
                "trim": [{"threshold": m.threshold, "window": m.window, "tokens_trim": m.tokens_trim,
                          "overlap": round(m.overlap, 4), "answers_before": m.answers_before,
                          "answers_after": m.answers_after} for m in measured],
                "retrieval": retrieval,
                "answer": answer,
            })
        return out

    # ----------------------------------------------------------------------------- CSV

    def write_csv(self, path: Path) -> None:
        """One row per sweep setting (the JSON sweep fields plus exact tiktoken averages)."""
        path = Path(path).expanduser()
        try:
            with path.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(CSV_COLUMNS)
                for row in self.sweep.rows:
                    writer.writerow([
                        row.threshold, row.window, f"{row.avg_tokens_baseline:.2f}", f"{row.avg_tokens_trim:.2f}",
                        f"{row.token_reduction_pct:.2f}", f"{row.avg_overlap_vs_baseline:.4f}",
                        "" if row.answer_retention is None else f"{row.answer_retention:.4f}",
                        f"{row.avg_tiktoken_baseline:.2f}", f"{row.avg_tiktoken_trim:.2f}",
                        "1" if row.best else "0",
                    ])
        except OSError as exc:
            raise UsageError(f"cannot write the CSV file {path}: {exc.strerror or exc}") from exc

    # ---------------------------------------------------------------------------- plot

    def plot(self, path: Path) -> None:
        """Token reduction (x) against chunk overlap and, where known, answer retention (y), one
        point per setting labelled with its threshold and window; the best trade-off is ringed."""
        try:
            import matplotlib

            matplotlib.use("Agg")  # files only: never open a window, work without a display
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise UsageError("--plot needs matplotlib: pip install matplotlib") from exc
        path = Path(path).expanduser()
        rows = self.sweep.rows
        fig, ax = plt.subplots(figsize=(7.5, 5.0), dpi=110)
        try:
            xs = [r.token_reduction_pct for r in rows]
            ax.scatter(xs, [r.avg_overlap_vs_baseline for r in rows], marker="o", color="tab:blue",
                       label="chunk overlap vs baseline")
            has_retention = any(r.answer_retention is not None for r in rows)
            if has_retention:
                ax.scatter(xs, [r.answer_retention for r in rows], marker="^", color="tab:green",
                           label="answer retention")
            for r in rows:
                # Settings often share a quality (retention 1.0): slanted labels stay legible.
                ax.annotate(f"t={r.threshold:g} w={r.window}", (r.token_reduction_pct, r.quality),
                            textcoords="offset points", xytext=(3, 5), fontsize=7, rotation=40)
            best = self.sweep.best
            if best is not None:
                ax.scatter([best.token_reduction_pct], [best.quality], s=260, facecolors="none",
                           edgecolors="tab:red", linewidths=2,
                           label=f"best: t={best.threshold:g} w={best.window}")
            ax.axhline(BEST_MIN_QUALITY, color="grey", linestyle=":", linewidth=1)
            ax.set_xlabel("token reduction (%)")
            ax.set_ylabel("retention / overlap")
            ax.set_xlim(0, 100)
            ax.set_ylim(0, 1.2)  # headroom for the labels of points at 1.0
            ax.set_title(f"Trimming sweep: {len(self.questions)} questions, brain {self.brain}, top-{self.top_k}")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower left", fontsize=8)
            fig.tight_layout()
            try:
                fig.savefig(path, format="png")
            except OSError as exc:
                raise UsageError(f"cannot write the plot {path}: {exc.strerror or exc}") from exc
        finally:
            plt.close(fig)

    # ---------------------------------------------------------------------------- text

    def render_text(self) -> str:
        lines = [f"{len(self.questions)} questions, brain {self.brain!r} ({self.model}), top-{self.top_k} context, "
                 f"{self.search} search", ""]
        lines.append("Trimming sweep (tokens: seed estimate, round(1.3 x words); exact tiktoken in --csv)")
        header = (f"  {'threshold':>9}  {'window':>6}  {'tokens before':>13}  {'tokens after':>12}  "
                  f"{'reduction':>9}  {'overlap':>7}  {'answers kept':>12}")
        lines.append(header)
        for r in self.sweep.rows:
            retention = "-" if r.answer_retention is None else f"{r.answer_retention:.3f}"
            mark = "  <- best" if r.best else ""
            lines.append(f"  {r.threshold:>9g}  {r.window:>6}  {r.avg_tokens_baseline:>13.1f}  "
                         f"{r.avg_tokens_trim:>12.1f}  {r.token_reduction_pct:>8.1f}%  "
                         f"{r.avg_overlap_vs_baseline:>7.3f}  {retention:>12}{mark}")
        basis = "answer retention" if any(r.answer_retention is not None for r in self.sweep.rows) else "chunk overlap"
        lines.append(f"  best: most reduction with {basis} >= {BEST_MIN_QUALITY:g} "
                     "(else the best " + basis + ")")
        lines.append("")
        if self.retrieval is not None:
            m = self.retrieval
            lines.append(f"Retrieval ({m.questions} questions with expected files)")
            lines.append(f"  hit@{m.k} {m.hit_at_k:.3f}   recall@{m.k} {m.recall_at_k:.3f}   "
                         f"MRR@10 {m.mrr:.3f}   nDCG@10 {m.ndcg_at_10:.3f}")
        else:
            lines.append("Retrieval: no question names its expected files")
        if self.answers is not None:
            a = self.answers

            def fmt(v: float | None) -> str:
                return "-" if v is None else f"{v:.3f}"

            lines.append("")
            lines.append(f"Answers ({a.questions} answered by {a.generator}, judged by {a.judge})")
            lines.append(f"  fact accuracy {fmt(a.fact_accuracy)}   citation coverage {fmt(a.citation_coverage)}   "
                         f"refusals {fmt(a.refusal_rate)} (unanswerable questions)   "
                         f"false refusals {a.false_refusals}   withheld sentences {a.withheld}")
            lines.append(f"  faithfulness {fmt(a.faithfulness)}   context precision {fmt(a.context_precision)}   "
                         f"citation validity {fmt(a.citation_validity)}")
            lines.append(f"  judge calls {a.judge_calls}, unparseable {a.judge_parse_failures}, "
                         f"failed {a.judge_errors}; generate {a.generate_seconds:.1f}s, judge {a.judge_seconds:.1f}s")
        lines.append("")
        lines.append(f"done in {self.seconds:.1f}s")
        return "\n".join(lines)


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


def _baselines(store: Any, brain: Any, embedder: Any, questions: Sequence[Question], top_k: int,
               progress: EvalProgress, hybrid: bool = False) -> list[Baseline]:
    """Embed every question once (one batch, with the model's query prefix) and search once."""
    from locallens.retrieval import search

    texts = [embedder.spec.query_prefix + q.text for q in questions]
    progress.start(EMBEDDING_QUESTIONS, len(texts))
    vectors = embedder.encode(texts, progress=lambda n: progress.advance(EMBEDDING_QUESTIONS, n))
    depth = max(top_k, RANKING_DEPTH)  # deep enough for the file ranking; the context is its prefix
    progress.start(RETRIEVING, len(questions))
    baselines = []
    for question, vector in zip(questions, vectors):
        hits = search(store, brain, question.text, vector, depth, hybrid=hybrid)
        baselines.append(Baseline(question, vector, hits, top_k))
        progress.advance(RETRIEVING)
    return baselines


def run_eval(request: EvalRequest, progress: EvalProgress | None = None, models: Models | None = None) -> EvalReport:
    """The QUESTIONS form of `locallens eval` (see the module doc)."""
    from locallens.retrieval import SentenceEncoder
    from locallens.store import Store

    if request.questions is None and not request.inline_questions:
        raise UsageError("give a QUESTIONS file (or --beir DIR)")
    _validate(request)
    progress = progress or NoProgress()
    models = models or Models()
    started = time.perf_counter()
    questions = list(request.inline_questions or ()) or load_questions(request.questions)  # type: ignore[arg-type]
    timings: dict[str, float] = {}

    with Store(Path(request.db).expanduser(), create=False) as store:
        brain = store.get_brain(request.brain)
        t0 = time.perf_counter()
        embedder = models.embedder(brain.model, request.device)
        t1 = time.perf_counter()
        baselines = _baselines(store, brain, embedder, questions, request.top_k, progress, request.hybrid)
        t2 = time.perf_counter()
        encode = SentenceEncoder(embedder, store)
        result = sweep(baselines, request.thresholds, request.windows, min_sentences=request.min_sentences,
                       encode=encode, progress=progress)
        t3 = time.perf_counter()
        timings.update(embed_load_s=t1 - t0, retrieve_s=t2 - t1, sweep_s=t3 - t2)

        answers = None
        if request.answers:
            answers = evaluate_answers(
                questions, [b.hits for b in baselines], [b.vector for b in baselines], encode,
                AnswerSettings(llm=request.llm, judge=request.judge, n_ctx=request.n_ctx,
                               max_tokens=request.max_tokens, extractive=request.extractive),
                progress,
            )
            timings["answers_s"] = time.perf_counter() - t3

    scored = [score_question(b.ranked_hits, request.top_k, q.files) for q, b in zip(questions, baselines) if q.files]
    retrieval = aggregate_retrieval(scored, request.top_k)

    return EvalReport(
        brain=request.brain, db=str(request.db), model=brain.model, top_k=request.top_k,
        questions=questions, baselines=baselines, sweep=result, retrieval=retrieval, answers=answers,
        seconds=time.perf_counter() - started, timings=timings, search="hybrid" if request.hybrid else "vector",
    )


def run_beir(request: EvalRequest, progress: EvalProgress | None = None) -> BeirReport:
    """The `--beir DIR` form: index the corpus into brain `beir-<name>` of `request.db` and score it."""
    if request.beir is None:
        raise UsageError("--beir needs a BEIR-layout folder")
    return evaluate_beir(request.beir, Path(request.db).expanduser(), model=request.model, device=request.device,
                         chunks_per_query=request.beir_chunks, hybrid=request.hybrid, progress=progress)

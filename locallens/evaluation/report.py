"""How an `EvalReport` becomes output: JSON, plain text, CSV and a PNG plot.

`EvalReport` (in `locallens.evaluation`) holds the measurements; its `as_json`, `render_text`,
`write_csv` and `plot` methods call the functions here, which only format and never measure.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locallens.errors import UsageError
from locallens.evaluation.trimming import BEST_MIN_QUALITY

if TYPE_CHECKING:
    from locallens.evaluation import EvalReport

__all__ = ["CSV_COLUMNS", "as_json", "plot", "render_text", "write_csv"]

CSV_COLUMNS = (
    "threshold",
    "window",
    "avg_tokens_baseline",
    "avg_tokens_trim",
    "token_reduction_pct",
    "avg_overlap_vs_baseline",
    "answer_retention",
    "avg_tiktoken_baseline",
    "avg_tiktoken_trim",
    "best",
)


# ---------------------------------------------------------------------------------------- JSON


def as_json(report: EvalReport) -> dict[str, Any]:
    return {
        "questions": len(report.questions),
        "search": report.search,
        "sweep": [row.as_json() for row in report.sweep.rows],
        "retrieval": report.retrieval.as_json() if report.retrieval else None,
        "answers": report.answers.as_json() if report.answers else None,
        "per_question": _per_question(report),
    }


def _per_question(report: EvalReport) -> list[dict[str, Any]]:
    retrieval_iter = iter(report.retrieval.per_question if report.retrieval else [])
    out = []
    for i, (question, baseline) in enumerate(zip(report.questions, report.baselines, strict=False)):
        measured = report.sweep.per_question[i] if i < len(report.sweep.per_question) else []
        retrieval = next(retrieval_iter).as_json() if (report.retrieval and question.files) else None
        answer = (
            report.answers.per_question[i].as_json()
            if report.answers and i < len(report.answers.per_question)
            else None
        )
        out.append(
            {
                "question": question.text,
                "line": question.line,
                "files": list(question.files) if question.files else None,
                "answers": list(question.answers) if question.answers else None,
                "hits": [
                    {
                        "path": h.chunk.relative_path,
                        "chunk_index": h.chunk.chunk_index,
                        "citation": h.citation(),
                        "score": round(h.score, 4),
                    }
                    for h in baseline.hits
                ],
                "tokens_baseline": measured[0].tokens_baseline if measured else 0,
                "trim": [
                    {
                        "threshold": m.threshold,
                        "window": m.window,
                        "tokens_trim": m.tokens_trim,
                        "overlap": round(m.overlap, 4),
                        "answers_before": m.answers_before,
                        "answers_after": m.answers_after,
                    }
                    for m in measured
                ],
                "retrieval": retrieval,
                "answer": answer,
            }
        )
    return out


# ----------------------------------------------------------------------------------------- CSV


def write_csv(report: EvalReport, path: Path) -> None:
    """One row per sweep setting (the JSON sweep fields plus exact tiktoken averages)."""
    path = Path(path).expanduser()
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(CSV_COLUMNS)
            for row in report.sweep.rows:
                writer.writerow(
                    [
                        row.threshold,
                        row.window,
                        f"{row.avg_tokens_baseline:.2f}",
                        f"{row.avg_tokens_trim:.2f}",
                        f"{row.token_reduction_pct:.2f}",
                        f"{row.avg_overlap_vs_baseline:.4f}",
                        "" if row.answer_retention is None else f"{row.answer_retention:.4f}",
                        f"{row.avg_tiktoken_baseline:.2f}",
                        f"{row.avg_tiktoken_trim:.2f}",
                        "1" if row.best else "0",
                    ]
                )
    except OSError as exc:
        raise UsageError(f"cannot write the CSV file {path}: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------------------------------- plot


def plot(report: EvalReport, path: Path) -> None:
    """Token reduction (x) against chunk overlap and, where known, answer retention (y), one
    point per setting labelled with its threshold and window; the best trade-off is ringed."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window, work without a display
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UsageError("--plot needs matplotlib: pip install matplotlib") from exc
    path = Path(path).expanduser()
    rows = report.sweep.rows
    fig, ax = plt.subplots(figsize=(7.5, 5.0), dpi=110)
    try:
        xs = [r.token_reduction_pct for r in rows]
        ax.scatter(
            xs,
            [r.avg_overlap_vs_baseline for r in rows],
            marker="o",
            color="tab:blue",
            label="chunk overlap vs baseline",
        )
        has_retention = any(r.answer_retention is not None for r in rows)
        if has_retention:
            ax.scatter(
                xs, [r.answer_retention or 0.0 for r in rows], marker="^", color="tab:green", label="answer retention"
            )
        for r in rows:
            # Settings often share a quality (retention 1.0): slanted labels stay legible.
            ax.annotate(
                f"t={r.threshold:g} w={r.window}",
                (r.token_reduction_pct, r.quality),
                textcoords="offset points",
                xytext=(3, 5),
                fontsize=7,
                rotation=40,
            )
        best = report.sweep.best
        if best is not None:
            ax.scatter(
                [best.token_reduction_pct],
                [best.quality],
                s=260,
                facecolors="none",
                edgecolors="tab:red",
                linewidths=2,
                label=f"best: t={best.threshold:g} w={best.window}",
            )
        ax.axhline(BEST_MIN_QUALITY, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("token reduction (%)")
        ax.set_ylabel("retention / overlap")
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 1.2)  # headroom for the labels of points at 1.0
        ax.set_title(f"Trimming sweep: {len(report.questions)} questions, brain {report.brain}, top-{report.top_k}")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
        fig.tight_layout()
        try:
            fig.savefig(path, format="png")
        except OSError as exc:
            raise UsageError(f"cannot write the plot {path}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------- text


def render_text(report: EvalReport) -> str:
    lines = [
        f"{len(report.questions)} questions, brain {report.brain!r} ({report.model}), top-{report.top_k} context, "
        f"{report.search} search",
        "",
    ]
    lines.append("Trimming sweep (tokens: estimate, round(1.3 x words); exact tiktoken in --csv)")
    header = (
        f"  {'threshold':>9}  {'window':>6}  {'tokens before':>13}  {'tokens after':>12}  "
        f"{'reduction':>9}  {'overlap':>7}  {'answers kept':>12}"
    )
    lines.append(header)
    for r in report.sweep.rows:
        retention = "-" if r.answer_retention is None else f"{r.answer_retention:.3f}"
        mark = "  <- best" if r.best else ""
        lines.append(
            f"  {r.threshold:>9g}  {r.window:>6}  {r.avg_tokens_baseline:>13.1f}  "
            f"{r.avg_tokens_trim:>12.1f}  {r.token_reduction_pct:>8.1f}%  "
            f"{r.avg_overlap_vs_baseline:>7.3f}  {retention:>12}{mark}"
        )
    basis = "answer retention" if any(r.answer_retention is not None for r in report.sweep.rows) else "chunk overlap"
    lines.append(f"  best: most reduction with {basis} >= {BEST_MIN_QUALITY:g} (else the best " + basis + ")")
    lines.append("")
    if report.retrieval is not None:
        m = report.retrieval
        lines.append(f"Retrieval ({m.questions} questions with expected files)")
        lines.append(
            f"  hit@{m.k} {m.hit_at_k:.3f}   recall@{m.k} {m.recall_at_k:.3f}   "
            f"MRR@10 {m.mrr:.3f}   nDCG@10 {m.ndcg_at_10:.3f}"
        )
    else:
        lines.append("Retrieval: no question names its expected files")
    if report.answers is not None:
        a = report.answers

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.3f}"

        lines.append("")
        lines.append(f"Answers ({a.questions} answered by {a.generator}, judged by {a.judge})")
        lines.append(
            f"  fact accuracy {fmt(a.fact_accuracy)}   citation coverage {fmt(a.citation_coverage)}   "
            f"refusals {fmt(a.refusal_rate)} (unanswerable questions)   "
            f"false refusals {a.false_refusals}   withheld sentences {a.withheld}"
        )
        lines.append(
            f"  faithfulness {fmt(a.faithfulness)}   context precision {fmt(a.context_precision)}   "
            f"citation validity {fmt(a.citation_validity)}"
        )
        lines.append(
            f"  judge calls {a.judge_calls}, unparseable {a.judge_parse_failures}, "
            f"failed {a.judge_errors}; generate {a.generate_seconds:.1f}s, judge {a.judge_seconds:.1f}s"
        )
    lines.append("")
    lines.append(f"done in {report.seconds:.1f}s")
    return "\n".join(lines)

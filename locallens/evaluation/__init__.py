"""`locallens eval`: measure trimming, retrieval and answers (the package's face).

- `run_eval(EvalRequest(db=..., questions=PATH))` → `EvalReport`: the trimming sweep, retrieval
  metrics and, with `answers=True`, judged answers, from one pass over the questions.
- `run_beir(EvalRequest(db=..., beir=DIR))` → `BeirReport`: a BEIR-layout benchmark through the
  real index and search.

The run logic is `evaluation.run`; each measurement has its module (`trimming`,
`retrieval_eval`, `answers`, `beir`, `metrics`), the QUESTIONS file is `questions`, and turning
a report into JSON, text, CSV or a plot is `report`.
"""

from __future__ import annotations

from locallens.evaluation.run import (
    BeirReport,
    EvalReport,
    EvalRequest,
    NoProgress,
    Progress,
    parse_thresholds,
    parse_windows,
    run_beir,
    run_eval,
)

__all__ = [
    "BeirReport",
    "EvalReport",
    "EvalRequest",
    "NoProgress",
    "Progress",
    "parse_thresholds",
    "parse_windows",
    "run_beir",
    "run_eval",
]

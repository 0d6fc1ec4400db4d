"""`bench_answers.py --diagnose` and `--replay`: why an answering unit was left out of the passage,
and cached units scored again, on fakes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from locallens.extractive import Scored, passage_units
from locallens.unit_scores import FEATURES, WEIGHTS, combine
from locallens.units import excerpt_units

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_answers import replay_scored, why_not_printed  # noqa: E402
from rank_study import RankCase  # noqa: E402

FIRST = " ".join(f"Backups of service number {n} run every night at two." for n in range(10))
SECOND = "Backups of the billing service are kept for 35 days."


def _scored(scores: list[float]) -> Scored:
    units = excerpt_units(FIRST, 1) + excerpt_units(SECOND, 2)
    assert len(units) == len(scores) == 11
    return Scored(units, np.array(scores), np.zeros(11), np.zeros((11, 3)))


def test_why_an_answering_unit_was_left_out_of_the_passage() -> None:
    def why(scores: list[float], i: int) -> str:
        scored = _scored(scores)
        return why_not_printed(scored, i, [u for u, _ in passage_units(scored)])

    ranked = [0.9, 0.85, 0.8, 0.79, 0.78, 0.77, 0.76, 0.75, 0.74, 0.73]
    assert why([*ranked, 0.5], 10) == "ranks below 8"
    assert why([0.9] + [0.1] * 9 + [0.25], 10) == "under the 0.3 floor"
    assert why([0.9] + [0.1] * 9 + [0.55], 10) == "outside OTHER_MARGIN (other excerpt)"
    assert why([0.9, 0.1, 0.7] + [0.1] * 8, 2) == "outside MARGIN (same excerpt)"
    assert why([0.9] + [0.1] * 9 + [0.0], 10) == "scored 0 (title, cut or too long)"
    # Within the margins: the slots or the budget went to better-scored units.
    assert why([0.9, 0.88, 0.87, *[0.1] * 7, 0.86], 2) == "slots or budget"


def test_replay_scores_cached_rows_as_the_scorer_does_and_keeps_left_out_units_at_zero() -> None:
    units = excerpt_units(SECOND + " Restores are tested monthly.", 1)
    x = np.random.default_rng(0).random((len(units), len(FEATURES)))
    case = {"units": units, "x": [x], "zeroed": np.array([False, True])}
    scored = replay_scored(case)
    assert scored.scores[0] == combine(x)[0] and scored.scores[1] == 0.0
    # Rows cached before a signal was added read 0 for it.
    case["x"] = [x[:, :-1]]
    assert np.isclose(replay_scored(case).scores[0], combine(np.pad(x[:, :-1], ((0, 0), (0, 1))))[0])
    # Other weights.
    weights = {**WEIGHTS, "cosine": 0.0}
    assert replay_scored({**case, "x": [x]}, weights).scores[0] == combine(x, weights)[0]


def _case(corpus: str, x: np.ndarray, y: list[bool], keys: list[str] | None = None) -> RankCase:
    n = len(y)
    return RankCase(corpus, [x], np.ones(n, dtype=bool), np.array(y), keys or [f"{corpus}{k}" for k in range(n)])


def test_recall_at_k_counts_a_positive_among_the_k_best_distinct_texts() -> None:
    from rank_study import recall_at

    x = np.array([[0.9], [0.8], [0.7], [0.1]])
    # The second best repeats the best's text (overlapping chunks): the positive is 2nd distinct.
    case = _case("a", x, [False, False, True, False], keys=["same", "same", "other", "last"])
    assert list(recall_at([case], np.array([1.0]), [0])) == [0, 1, 1]
    # A unit the scoring left out is never counted, however it scores.
    case.ok[2] = False
    case.y[2] = False
    assert list(recall_at([case], np.array([1.0]), [0])) == [0, 0, 0]
    # Questions without a positive are not counted at all.
    assert list(recall_at([_case("b", x, [False] * 4)], np.array([1.0]), [0])) == [0, 0, 0]


def test_the_listwise_and_pairwise_fits_learn_the_signal_that_marks_the_positive() -> None:
    from rank_study import fit_listwise, fit_pairwise, loco, recall_at

    rng = np.random.default_rng(1)
    cases = []
    for k in range(40):
        noise = rng.random((6, 1))
        marker = np.zeros((6, 1))
        marker[k % 6] = 1.0
        # Column 0 is noise, column 1 marks the positive.
        cases.append(_case("abc"[k % 3], np.hstack([noise, marker]), [j == k % 6 for j in range(6)]))
    for fit in (fit_listwise, fit_pairwise):
        w = fit(cases, [0, 1])
        assert w[1] > abs(w[0])
        assert recall_at(cases, w, [0, 1])[0] == 40
        total, per = loco(cases, [0, 1], fit)
        assert total[0] == 40 and set(per) == {"a", "b", "c"}

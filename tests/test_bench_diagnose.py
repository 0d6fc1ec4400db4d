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

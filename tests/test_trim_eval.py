"""`trim` and `eval` with the fakes: keep/drop by threshold, the sentence cache, retrieval metrics,
judged answers and the JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import FakeModels, check_trim_json, cli, cli_json, cosine, quote_best_sentence, stdout_json, write_corpus

QUERY = "Which port does the staging database listen on?"
TEXT = (
    "The cafeteria opens at eight. The staging database listens on port 5433. "
    "Parking is free on weekends. Our mascot is a heron."
)


@pytest.fixture()
def db(tmp_path: Path, fake_models: FakeModels) -> Path:
    db = tmp_path / "index.db"
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", str(db))
    return db


def _trim_text(tmp_path: Path, *flags: str) -> dict:
    path = tmp_path / "note.txt"
    path.write_text(TEXT, encoding="utf-8")
    result = cli("trim", QUERY, "--text", str(path), "--json", *flags)
    assert result.exit_code == 0, result.output
    return stdout_json(result)


def test_trim_keeps_the_sentences_above_the_threshold(tmp_path: Path, fake_models: FakeModels) -> None:
    assert cosine(QUERY, "The staging database listens on port 5433.") > 0.5
    (chunk,) = _trim_text(tmp_path, "--threshold", "0.5")["chunks"]
    assert chunk["kept"] == [1] and "port 5433" in chunk["trimmed"] and "mascot" not in chunk["trimmed"]
    assert not chunk["trimmed"].startswith("[...] ")
    # Everything passes a threshold of -1; a threshold no sentence reaches still keeps the best one.
    assert _trim_text(tmp_path, "--threshold", "-1")["chunks"][0]["kept"] == [0, 1, 2, 3]
    assert _trim_text(tmp_path, "--threshold", "0.99")["chunks"][0]["kept"] == [1]
    # A window keeps the neighbours of a kept sentence too.
    assert _trim_text(tmp_path, "--threshold", "0.5", "--window", "1")["chunks"][0]["kept"] == [0, 1, 2]


def test_trim_from_stdin_matches_the_file(tmp_path: Path, fake_models: FakeModels) -> None:
    from_file = _trim_text(tmp_path, "--threshold", "0.5")
    result = cli("trim", QUERY, "--text", "-", "--json", "--threshold", "0.5", input=TEXT)
    assert stdout_json(result)["chunks"][0]["trimmed"] == from_file["chunks"][0]["trimmed"]


def test_trim_json_shape_and_accounting(db: Path, fake_models: FakeModels) -> None:
    result = cli("trim", QUERY, "--db", str(db), "--json", "--threshold", "0.3")
    assert result.exit_code == 0, result.output
    check_trim_json(stdout_json(result))
    verbose = cli("trim", QUERY, "--db", str(db), "--threshold", "0.3", "--verbose")
    assert "  keep +" in verbose.stdout and "  drop " in verbose.stdout


def test_sentence_vectors_are_cached_by_index_and_reused(tmp_path: Path, fake_models: FakeModels) -> None:
    db = tmp_path / "index.db"
    out = cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", str(db), "--sentence-vectors")
    assert out["sentences_embedded"] > 0
    embedder = fake_models.embedder
    before = len(embedder.calls)
    assert cli("trim", QUERY, "--db", str(db), "--json").exit_code == 0
    assert embedder.calls[before:] == [[QUERY]]  # the question only: every sentence came from the cache
    again = cli_json("index", str(tmp_path / "docs"), "--db", str(db), "--sentence-vectors")
    assert again["sentences_embedded"] == 0


def test_trim_without_index_exits_3(tmp_path: Path, fake_models: FakeModels) -> None:
    assert cli("trim", QUERY, "--db", str(tmp_path / "none.db")).exit_code == 3


# -- eval ---------------------------------------------------------------------------------------

QUESTIONS = [
    {"question": QUERY, "files": ["engineering/staging.md"], "answers": ["5433"]},
    {
        "question": "How long are nightly PostgreSQL backups kept?",
        "files": ["operations/backups.txt"],
        "answers": ["35 days"],
    },
    {"question": "When is the espresso machine descaled?", "files": ["office/coffee.md"], "answers": ["Fridays"]},
    {"question": "How long does parental leave last?", "files": ["hr/leave.md"]},
]


@pytest.fixture()
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return path


def test_eval_json_shape_and_retrieval_metrics(db: Path, questions: Path, fake_models: FakeModels) -> None:
    data = cli_json("eval", str(questions), "--db", str(db))
    assert list(data) == ["questions", "search", "sweep", "retrieval", "answers", "per_question"]
    assert data["questions"] == len(QUESTIONS) and data["search"] == "hybrid" and data["answers"] is None
    assert cli_json("eval", str(questions), "--db", str(db), "--no-hybrid")["search"] == "vector"
    assert [(row["threshold"], row["window"]) for row in data["sweep"]] == [
        (t, w) for t in (0.3, 0.38, 0.45) for w in (0, 1, 2)
    ]
    assert sum(row["best"] for row in data["sweep"]) == 1
    # Each question names words only its file has: the fake embedder ranks that file first.
    assert data["retrieval"] == {"hit_at_k": 1.0, "recall_at_k": 1.0, "mrr": 1.0, "ndcg_at_10": 1.0}
    first = data["per_question"][0]
    assert first["question"] == QUERY and first["retrieval"]["files"][0] == "engineering/staging.md"
    assert len(first["hits"]) == 5 and len(first["trim"]) == 9


def test_eval_metrics_notice_a_miss(db: Path, tmp_path: Path, fake_models: FakeModels) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": QUERY, "files": ["office/coffee.md"]}) + "\n", encoding="utf-8")
    data = cli_json("eval", str(path), "--db", str(db), "--top-k", "1")
    assert data["retrieval"]["hit_at_k"] == 0.0 and data["retrieval"]["recall_at_k"] == 0.0
    assert 0.0 < data["retrieval"]["mrr"] < 1.0  # found lower down the ranking of every file


def test_eval_of_plain_questions_has_no_retrieval_metrics(db: Path, tmp_path: Path, fake_models: FakeModels) -> None:
    path = tmp_path / "q.txt"
    path.write_text(f"{QUERY}\nWhen is the espresso machine descaled?\n", encoding="utf-8")
    data = cli_json("eval", str(path), "--db", str(db), "--thresholds", "0.3,0.45", "--windows", "0,1")
    assert data["retrieval"] is None and len(data["sweep"]) == 4


def _judge(verdict: bool) -> Any:
    def reply(messages: list[Any]) -> str:
        user = messages[-1].content
        if "\n\nStatement:\n" in user:
            return json.dumps({"supported": verdict})
        if "\n\nExcerpt:\n" in user:
            return json.dumps({"relevant": verdict})
        return quote_best_sentence(messages)

    return reply


@pytest.mark.parametrize("extractive", [False, True])
def test_eval_answers_judged_by_the_fake_llm(
    db: Path, questions: Path, fake_models: FakeModels, extractive: bool
) -> None:
    fake_models.replies = _judge(True)
    data = cli_json(
        "eval",
        str(questions),
        "--db",
        str(db),
        "--answers",
        "--top-k",
        "2",
        "--thresholds",
        "0.38",
        "--windows",
        "0",
        *(["--extractive"] if extractive else []),
    )
    answers = data["answers"]
    assert {"faithfulness", "context_precision", "citation_validity"} <= set(answers)
    assert answers["faithfulness"] == 1.0 and answers["context_precision"] == 1.0
    assert answers["judge_parse_failures"] == 0 and answers["judge_errors"] == 0
    assert len(fake_models.llms) == 1  # generator and judge are the same file: loaded once
    assert fake_models.llm.closed


def test_eval_answers_count_unparseable_verdicts(db: Path, questions: Path, fake_models: FakeModels) -> None:
    fake_models.replies = lambda messages: (
        "not json" if "\n\nExcerpt:\n" in messages[-1].content else (_judge(False)(messages))
    )
    data = cli_json(
        "eval", str(questions), "--db", str(db), "--answers", "--top-k", "1", "--thresholds", "0.38", "--windows", "0"
    )
    answers = data["answers"]
    assert answers["judge_parse_failures"] == len(QUESTIONS) and answers["faithfulness"] == 0.0


def test_eval_usage_errors(db: Path, tmp_path: Path, fake_models: FakeModels) -> None:
    assert cli("eval", "--db", str(db)).exit_code == 2
    assert cli("eval", str(tmp_path / "missing.jsonl"), "--db", str(db)).exit_code in (2, 3)
    path = tmp_path / "q.txt"
    path.write_text(QUERY + "\n", encoding="utf-8")
    assert cli("eval", str(path), "--db", str(db), "--thresholds", "x").exit_code == 2
    assert cli("eval", str(path), "--db", str(tmp_path / "none.db")).exit_code == 3

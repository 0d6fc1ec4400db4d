"""`locallens eval` core (docs/behaviour.md#evaluation): metrics, QUESTIONS files, the trimming sweep, retrieval
metrics, judged answers and the BEIR runner.

The metric functions are checked against hand computations; the sweep and the retrieval metrics
run on the session's sample_docs index with tests/data/questions.jsonl; the BEIR runner indexes a
five-document fixture for real. The answers test loads the packaged SmolLM2 (marked slow).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locallens.domain import Chunk, Hit
from locallens.errors import UsageError
from locallens.evaluation import (
    EvalReport,
    EvalRequest,
    parse_thresholds,
    parse_windows,
    run_beir,
    run_eval,
)
from locallens.evaluation.beir import load_beir, rank_documents, safe_doc_name
from locallens.evaluation.metrics import (
    citation_validity,
    context_precision,
    faithfulness,
    hit_at_k,
    mean,
    mrr,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from locallens.evaluation.questions import Question, load_questions, parse_questions
from locallens.evaluation.retrieval_eval import path_matches, score_question
from locallens.evaluation.trimming import (
    Baseline,
    SweepRow,
    answers_present,
    chunk_survives,
    mark_best,
    sweep,
)
from locallens.trim import TrimmedHit

from .conftest import ROOT

QUESTIONS_JSONL = ROOT / "tests" / "data" / "questions.jsonl"
QUESTIONS_TXT = ROOT / "tests" / "data" / "questions.txt"
LOG3 = math.log2(3)  # the discount of rank 2

SWEEP_KEYS = {
    "threshold",
    "window",
    "avg_tokens_baseline",
    "avg_tokens_trim",
    "token_reduction_pct",
    "avg_overlap_vs_baseline",
    "answer_retention",
    "best",
}


def _hit(path: str, index: int = 0, content: str = "text", score: float = 0.5) -> Hit:
    return Hit(
        Chunk(
            id=f"{path}-{index}", brain="b", relative_path=path, chunk_index=index, content=content, checksum="0" * 64
        ),
        score,
    )


# --------------------------------------------------------------------------------------------
# Metric functions, hand-computed
# --------------------------------------------------------------------------------------------


def test_hit_and_recall_at_k() -> None:
    assert hit_at_k(["a", "b", "c"], {"c"}, 2) == 0.0
    assert hit_at_k(["a", "b", "c"], {"c"}, 3) == 1.0
    assert recall_at_k(["a", "b", "c", "d"], {"b", "d", "x"}, 3) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "b", "c", "d"], {"b", "d", "x"}, 4) == pytest.approx(2 / 3)
    # A repeat counts once and does not take a rank: "b" is at rank 2 of ["a", "b"].
    assert hit_at_k(["a", "a", "b"], {"b"}, 2) == 1.0
    # Graded qrels: grade 0 is "judged not relevant".
    assert recall_at_k(["a"], {"a": 1, "b": 0}, 1) == 1.0


def test_reciprocal_rank_and_mrr() -> None:
    assert reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a", "a", "c"], {"c"}) == pytest.approx(1 / 2)  # de-duplicated
    assert reciprocal_rank(["a", "b", "c"], {"c"}, k=2) == 0.0
    assert reciprocal_rank(["a"], {"z"}) == 0.0
    # (1/1 + 1/4) / 2
    assert mrr([(["x", "y"], {"x"}), (["a", "b", "c", "d"], {"d"})]) == pytest.approx(0.625)
    assert mrr([]) == 0.0


def test_ndcg_binary_and_graded() -> None:
    # Binary: relevant at ranks 1 and 3 of 3; ideal: ranks 1 and 2.
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}, 10) == pytest.approx((1 + 1 / 2) / (1 + 1 / LOG3))
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 10) == 1.0
    # Graded, linear gain: b(1) then a(2) vs the ideal a(2) then b(1).
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx((1 + 2 / LOG3) / (2 + 1 / LOG3))
    # The ideal comes from the qrels: a relevant document never retrieved lowers the score...
    assert ndcg_at_k(["a"], {"a", "b"}, 10) == pytest.approx(1 / (1 + 1 / LOG3))
    # ...unless the cut-off leaves no room for it in the ideal ranking either.
    assert ndcg_at_k(["a"], {"a", "b"}, 1) == 1.0
    # A grade-0 judgement gains nothing and is not part of the ideal.
    assert ndcg_at_k(["a", "b"], {"a": 0, "b": 1}, 10) == pytest.approx(1 / LOG3)
    assert ndcg_at_k(["x", "y"], {"a"}, 10) == 0.0


def test_ranking_metrics_refuse_undefined_cases() -> None:
    for call in (
        lambda: hit_at_k(["a"], set(), 1),
        lambda: recall_at_k(["a"], {"a": 0}, 1),
        lambda: ndcg_at_k(["a"], {}, 10),
        lambda: reciprocal_rank(["a"], []),
    ):
        with pytest.raises(UsageError, match="undefined"):
            call()
    with pytest.raises(UsageError, match="k must be at least 1"):
        recall_at_k(["a"], {"a"}, 0)


@settings(max_examples=60, deadline=None)
@given(
    ranked=st.lists(st.sampled_from("abcdefgh"), max_size=12),
    grades=st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 3), min_size=1),
    k=st.integers(1, 10),
)
def test_ranking_metrics_stay_in_range(ranked: list[str], grades: dict[str, int], k: int) -> None:
    if not any(g > 0 for g in grades.values()):
        return
    for value in (
        hit_at_k(ranked, grades, k),
        recall_at_k(ranked, grades, k),
        reciprocal_rank(ranked, grades, k),
        ndcg_at_k(ranked, grades, k),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12
    ideal = sorted((d for d, g in grades.items() if g > 0), key=lambda d: -grades[d])
    assert ndcg_at_k(ideal + ranked, grades, k) == pytest.approx(1.0)


def test_answer_metrics() -> None:
    assert faithfulness([]) == 1.0
    assert faithfulness([True, False, True, True]) == 0.75
    # RAGAS context precision: mean of precision@k at the relevant ranks.
    assert context_precision([True, False, True]) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert context_precision([False, True]) == 0.5
    assert context_precision([True, True]) == 1.0
    assert context_precision([False, False]) == 0.0
    assert context_precision([]) == 0.0
    assert citation_validity(3, 1) == 0.75
    assert citation_validity(0, 0) is None
    assert mean([None, 1.0, 0.0]) == 0.5
    assert mean([None]) is None


# --------------------------------------------------------------------------------------------
# QUESTIONS files
# --------------------------------------------------------------------------------------------


def test_plain_text_questions(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("# my questions\n\nWhere is the printer?\n   \n  What port?  \n# done\n", encoding="utf-8")
    questions = load_questions(path)
    assert [(q.text, q.line, q.files, q.answers) for q in questions] == [
        ("Where is the printer?", 3, None, None),
        ("What port?", 5, None, None),
    ]
    assert len(load_questions(QUESTIONS_TXT)) == len(load_questions(QUESTIONS_JSONL)) == 20


def test_jsonl_questions(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"question": "Port?", "files": ["./engineering\\\\staging.md"], "answers": ["5433"]}\n'
        "\n# a comment\n"
        '{"question": " Only text ", "id": 7, "files": [], "answers": null}\n',
        encoding="utf-8",
    )
    first, second = load_questions(path)
    assert first == Question("Port?", ("engineering/staging.md",), ("5433",), 1)
    assert second == Question("Only text", None, None, 4)
    # JSONL is recognised by content too, whatever the file is called.
    assert parse_questions('{"question": "Q?"}\n')[0].text == "Q?"
    loaded = load_questions(QUESTIONS_JSONL)
    assert all(q.files and q.answers for q in loaded)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"question": "ok"}\n{"question": "ok"}\n{"question": \n', "line 3: not valid JSON"),
        ('{"question": "ok"}\n\n["a list"]\n', "line 3: expected a JSON object"),
        ('{"question": "ok"}\n{"files": ["a.md"]}\n', 'line 2: "question" must be a non-empty string'),
        ('{"question": "ok", "files": "a.md"}\n{"question": "q", "files": [1]}\n', 'line 2: "files" must be a list'),
        ('{"question": "ok"}\nWhere is the printer?\n', "line 2: not valid JSON"),
    ],
)
def test_bad_jsonl_line_is_a_usage_error_naming_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=re.escape(message)):
        load_questions(path)


def test_unusable_questions_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such questions file"):
        load_questions(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(UsageError, match="holds no questions"):
        load_questions(empty)
    binary = tmp_path / "bad.txt"
    binary.write_bytes(b"first?\nsecond \xff?\n")
    with pytest.raises(UsageError, match="line 2: not UTF-8"):
        load_questions(binary)


def test_list_flags() -> None:
    assert parse_thresholds("0.3, 0.38,0.45") == (0.3, 0.38, 0.45)
    assert parse_windows("0,1,2") == (0, 1, 2)
    with pytest.raises(UsageError, match="--thresholds"):
        parse_thresholds("0.3,high")
    with pytest.raises(UsageError, match="--windows"):
        parse_windows("0,-1")
    with pytest.raises(UsageError, match="--windows"):
        parse_windows("")


# --------------------------------------------------------------------------------------------
# Sweep building blocks (no model)
# --------------------------------------------------------------------------------------------


def test_chunk_survives_only_when_a_sentence_passes_on_its_own() -> None:
    hit = _hit("a.md")
    passed = TrimmedHit(hit, hit, ["A.", "B."], [0.2, 0.5], [1], True)
    forced = TrimmedHit(hit, hit, ["A.", "B."], [0.2, 0.3], [1], True)  # kept only by min_sentences
    empty = TrimmedHit(hit, hit, [], [], [], False)
    assert chunk_survives(passed, 0.4) and not chunk_survives(forced, 0.4) and chunk_survives(empty, 0.9)


def test_answers_are_matched_case_and_whitespace_insensitively() -> None:
    context = "PostgreSQL 16.2\n  on PORT 5433. [...] Other."
    assert answers_present(["postgresql 16.2 on port 5433", "5434"], context) == [True, False]


def _row(t: float, w: int, reduction: float, overlap: float, retention: float | None) -> SweepRow:
    return SweepRow(t, w, 100.0, 100.0 - reduction, reduction, overlap, retention)


def test_best_trade_off_rule() -> None:
    rows = [_row(0.3, 0, 30, 0.99, 1.0), _row(0.38, 0, 50, 0.90, 0.96), _row(0.45, 0, 70, 0.70, 0.80)]
    assert mark_best(rows) is rows[1]  # most reduction with retention >= 0.95
    assert [r.best for r in rows] == [False, True, False]
    # Without answers, the overlap is what must stay >= 0.95.
    rows = [_row(0.3, 0, 30, 0.99, None), _row(0.38, 0, 50, 0.90, None)]
    assert mark_best(rows) is rows[0]
    # Nobody qualifies: the best quality wins, ties broken by reduction.
    rows = [_row(0.3, 0, 30, 0.5, 0.9), _row(0.3, 1, 10, 0.5, 0.9), _row(0.45, 0, 70, 0.4, 0.6)]
    assert mark_best(rows) is rows[0]
    assert sum(r.best for r in rows) == 1


def test_sweep_with_a_fake_encoder_counts_each_sentence_once() -> None:
    # Sentence vectors chosen so that their cosine with the query is the number they carry.
    scores = {"Alpha one.": 0.9, "Beta two.": 0.2, "Gamma three.": 0.5, "Delta four.": 0.1}
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.array([[scores[t], math.sqrt(1 - scores[t] ** 2)] for t in texts])

    question = Question("q", None, ("gamma three",), 1)
    hits = [_hit("a.md", 0, "Alpha one. Beta two."), _hit("b.md", 0, "Gamma three. Delta four.")]
    baseline = Baseline(question, np.array([1.0, 0.0]), hits, top_k=2)
    result = sweep([baseline], [0.4, 0.6], [0, 1], encode=encode)
    assert [(r.threshold, r.window) for r in result.rows] == [(0.4, 0), (0.4, 1), (0.6, 0), (0.6, 1)]
    # Four settings, but each distinct sentence is embedded once.
    assert sorted(t for call in calls for t in call) == sorted(scores)
    t04w0, t04w1, t06w0, t06w1 = result.rows
    # Each chunk has 4 words: round(1.3 * 4) = 5 tokens. 0.4/w0 keeps "Alpha one." and
    # "Gamma three.", 2 words each: round(1.3 * 2) = 3 tokens per chunk.
    assert (t04w0.avg_tokens_baseline, t04w0.avg_tokens_trim) == (10.0, 6.0)
    assert t04w0.token_reduction_pct == pytest.approx(40.0)
    assert t04w0.avg_overlap_vs_baseline == 1.0 and t04w0.answer_retention == 1.0
    assert t04w1.avg_tokens_trim == t04w1.avg_tokens_baseline and t04w1.token_reduction_pct == 0.0
    # 0.6: chunk b has no sentence >= 0.6; it keeps its best one ("Gamma three.") only by the
    # min_sentences guarantee, so it does not survive, but the answer is still there.
    assert t06w0.avg_overlap_vs_baseline == 0.5 and t06w0.answer_retention == 1.0
    assert t06w1.avg_overlap_vs_baseline == 0.5
    assert sum(r.best for r in result.rows) == 1


# --------------------------------------------------------------------------------------------
# The sweep and the retrieval metrics on sample_docs
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_report(sample_index: Path) -> EvalReport:
    return run_eval(EvalRequest(db=sample_index, questions=QUESTIONS_JSONL, device="cpu"))


def test_eval_json_shape(sample_report: EvalReport) -> None:
    data = json.loads(json.dumps(sample_report.as_json()))
    assert list(data) == ["questions", "search", "sweep", "retrieval", "answers", "per_question"]
    assert data["questions"] == 20 and data["search"] == "hybrid"  # the default
    assert [(row["threshold"], row["window"]) for row in data["sweep"]] == [
        (t, w) for t in (0.3, 0.38, 0.45) for w in (0, 1, 2)
    ]
    assert all(set(row) == SWEEP_KEYS for row in data["sweep"])
    assert set(data["retrieval"]) == {"hit_at_k", "recall_at_k", "mrr", "ndcg_at_10"}
    assert data["answers"] is None
    assert len(data["per_question"]) == 20
    first = data["per_question"][0]
    assert first["question"].startswith("Which PostgreSQL version")
    assert len(first["hits"]) == 5 and len(first["trim"]) == 9
    assert first["retrieval"]["files"][0] == "engineering/staging-environment.md"


def test_sweep_invariants(sample_report: EvalReport) -> None:
    rows = sample_report.sweep.rows
    assert sum(r.best for r in rows) == 1
    for row in rows:
        assert 0.0 <= row.token_reduction_pct <= 100.0
        assert 0.0 <= row.avg_overlap_vs_baseline <= 1.0
        assert row.answer_retention is not None and 0.0 <= row.answer_retention <= 1.0
        assert row.avg_tokens_baseline == rows[0].avg_tokens_baseline > 0
        assert row.avg_tokens_trim <= row.avg_tokens_baseline
    # Window 0: a higher threshold keeps a subset of the sentences: fewer or equal tokens, for
    # every question, and never more surviving chunks.
    by_threshold = sorted((r for r in rows if r.window == 0), key=lambda r: r.threshold)
    for low, high in itertools.pairwise(by_threshold):
        assert high.avg_tokens_trim <= low.avg_tokens_trim
        assert high.avg_overlap_vs_baseline <= low.avg_overlap_vs_baseline
    for measured in sample_report.sweep.per_question:
        window0 = sorted((m for m in measured if m.window == 0), key=lambda m: m.threshold)
        assert all(b.tokens_trim <= a.tokens_trim for a, b in itertools.pairwise(window0))
    # A wider window keeps more: more or equal tokens at the same threshold.
    for t in (0.3, 0.38, 0.45):
        tokens = [r.avg_tokens_trim for r in rows if r.threshold == t]
        assert tokens == sorted(tokens)


def test_eval_by_vector_alone_and_by_default_hybrid(sample_index: Path, sample_report: EvalReport) -> None:
    hybrid = sample_report
    vector = run_eval(
        EvalRequest(
            db=sample_index, questions=QUESTIONS_JSONL, device="cpu", hybrid=False, thresholds=(0.38,), windows=(1,)
        )
    )
    assert hybrid.as_json()["search"] == "hybrid" and "hybrid search" in hybrid.render_text()
    assert vector.as_json()["search"] == "vector"
    assert hybrid.retrieval is not None and vector.retrieval is not None
    assert hybrid.retrieval.hit_at_k >= vector.retrieval.hit_at_k >= 0.8
    # The fused rankings differ from the vector rankings for some question.
    assert any(
        [h.chunk.id for h in a.hits] != [h.chunk.id for h in b.hits] for a, b in zip(hybrid.baselines, vector.baselines)
    )


def test_retrieval_metrics_on_sample_docs(sample_report: EvalReport) -> None:
    retrieval = sample_report.retrieval
    assert retrieval is not None and retrieval.questions == 20 and retrieval.k == 5
    assert retrieval.hit_at_k >= 0.8
    for value in (retrieval.recall_at_k, retrieval.mrr, retrieval.ndcg_at_10):
        assert 0.0 <= value <= 1.0
    # With one expected file per question, hit@k and recall@k coincide.
    assert retrieval.recall_at_k == retrieval.hit_at_k


def test_questions_are_embedded_once_and_searched_once(
    sample_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder
) -> None:  # type: ignore[no-untyped-def]
    from locallens.storage.sqlite import Store

    searches: list[int] = []
    real_knn = Store.knn

    def counting_knn(self, brain, vector, k, **kwargs):  # type: ignore[no-untyped-def]
        searches.append(k)
        return real_knn(self, brain, vector, k, **kwargs)

    def no_single_query(text: str) -> np.ndarray:
        raise AssertionError("questions are embedded in one batch, never one by one")

    monkeypatch.setattr(Store, "knn", counting_knn)
    monkeypatch.setattr(embedder, "encode_query", no_single_query)
    questions = tmp_path / "q.txt"
    questions.write_text("Which port does staging use?\nWhat is the hotel cap in Madrid?\n", encoding="utf-8")
    report = run_eval(
        EvalRequest(db=sample_index, questions=questions, device="cpu", thresholds=(0.3, 0.45), windows=(0, 1, 2))
    )
    assert len(searches) == 2  # one search per question, whatever the number of settings
    assert len(report.sweep.rows) == 6
    assert report.retrieval is None  # no expected files in a plain text file
    assert all(r.answer_retention is None for r in report.sweep.rows)
    assert report.as_json()["retrieval"] is None


def test_score_question_ranks_files_by_their_first_chunk() -> None:
    hits = [_hit("docs/a.md", 0), _hit("docs/a.md", 1), _hit("docs/b.md"), _hit("docs/c.md")]
    scored = score_question(hits, 2, ["b.md"])
    assert (scored.hit_at_k, scored.recall_at_k) == (0.0, 0.0)  # the top-2 chunks are both a.md
    assert scored.reciprocal_rank == 0.5 and scored.first_relevant_rank == 2  # b.md is file #2
    assert scored.ndcg_at_10 == pytest.approx(1 / LOG3)
    assert scored.files == ["docs/a.md", "b.md", "docs/c.md"]
    assert path_matches("sample_docs/hr/leave.md", "hr/leave.md")
    assert not path_matches("hr/old-leave.md", "leave.md")


def test_csv_plot_and_text(sample_report: EvalReport, tmp_path: Path) -> None:
    sample_report.write_csv(tmp_path / "sweep.csv")
    with (tmp_path / "sweep.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 9 and [r["best"] for r in rows].count("1") == 1
    assert {"threshold", "window", "token_reduction_pct", "answer_retention"} <= set(rows[0])
    sample_report.plot(tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = sample_report.render_text()
    assert "<- best" in text and "hit@5" in text and "nDCG@10" in text
    with pytest.raises(UsageError, match="cannot write the CSV"):
        sample_report.write_csv(tmp_path / "missing-folder" / "x.csv")


def test_eval_usage_errors(sample_index: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="QUESTIONS"):
        run_eval(EvalRequest(db=sample_index))
    with pytest.raises(UsageError, match="--top-k"):
        run_eval(EvalRequest(db=sample_index, questions=QUESTIONS_TXT, top_k=0))
    with pytest.raises(UsageError, match="--beir"):
        run_beir(EvalRequest(db=sample_index))


# --------------------------------------------------------------------------------------------
# Answers, judged by the packaged LLM
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_answers_judged_with_grammar_constrained_output(sample_index: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(QUESTIONS_JSONL.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8"
    )
    report = run_eval(
        EvalRequest(
            db=sample_index,
            questions=questions,
            device="cpu",
            answers=True,
            top_k=2,
            max_tokens=64,
            thresholds=(0.38,),
            windows=(0,),
        )
    )
    answers = report.answers
    assert answers is not None and answers.questions == 2
    per_question = answers.per_question
    expected_calls = sum(len(q.statements) + len(q.excerpts) for q in per_question)
    assert answers.judge_calls == expected_calls > 0
    # The grammar makes every verdict parseable: none failed, none missing.
    assert answers.judge_parse_failures == 0 and answers.judge_errors == 0
    assert all(s.supported is not None for q in per_question for s in q.statements)
    assert all(e.relevant is not None for q in per_question for e in q.excerpts)
    assert all(len(q.excerpts) == q.excerpts_sent == 2 for q in per_question)
    for value in (answers.faithfulness, answers.context_precision):
        assert value is not None and 0.0 <= value <= 1.0
    assert answers.citation_validity is None or 0.0 <= answers.citation_validity <= 1.0
    data = report.as_json()["answers"]
    assert {"faithfulness", "context_precision", "citation_validity"} <= set(data)
    assert data["judge_parse_failures"] == 0
    assert "faithfulness" in report.render_text()


@pytest.mark.slow
def test_extractive_answers_measured_by_fact_accuracy_citations_and_refusals(
    sample_index: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"question": "How long are the nightly PostgreSQL backups kept?", "answers": ["35 days"]}\n'
        '{"question": "Which port does the staging database listen on?", "answers": ["5433"]}\n'
        '{"question": "zebra giraffe migration across the savanna", "answerable": false}\n',
        encoding="utf-8",
    )
    report = run_eval(
        EvalRequest(
            db=sample_index,
            questions=questions,
            device="cpu",
            answers=True,
            extractive=True,
            top_k=2,
            max_tokens=64,
            thresholds=(0.38,),
            windows=(0,),
        )
    )
    answers = report.answers
    assert answers is not None and answers.mode == "extractive"
    per_question = answers.per_question
    assert [q.refused for q in per_question] == [False, False, True]
    assert answers.refusal_rate == 1.0 and answers.false_refusals == 0
    assert answers.citation_coverage == 1.0
    assert answers.fact_accuracy == sum(bool(q.fact_correct) for q in per_question[:2]) / 2
    assert "5433" in (per_question[1].answer or "")
    data = report.as_json()["answers"]
    assert {"fact_accuracy", "citation_coverage", "refusal_rate", "false_refusals", "withheld", "mode"} <= set(data)
    assert "fact accuracy" in report.render_text()


def test_answerable_must_be_a_boolean() -> None:
    assert parse_questions('{"question": "q?", "answerable": false}')[0].answerable is False
    with pytest.raises(UsageError, match="answerable"):
        parse_questions('{"question": "q?", "answerable": "no"}')


# --------------------------------------------------------------------------------------------
# BEIR on a tiny fixture
# --------------------------------------------------------------------------------------------

TINY_CORPUS = [
    {
        "_id": "d1",
        "title": "Photosynthesis",
        "text": "Green plants use chlorophyll to turn sunlight, water and carbon dioxide into glucose and oxygen.",
    },
    {
        "_id": "d2",
        "title": "Volcanoes",
        "text": "During an eruption magma rises through the crust and pours out as lava, ash and volcanic gas.",
    },
    {
        "_id": "d3",
        "title": "Chess openings",
        "text": "The Sicilian Defence answers the king's pawn opening with the move c5 and leads to sharp games.",
    },
    {
        "_id": "d4",
        "title": "Sourdough",
        "text": "A sourdough starter of wild yeast and lactic acid bacteria leavens bread dough slowly.",
    },
    {
        "_id": "doc/5.v2",
        "title": "",
        "text": "A turbofan jet engine compresses air, burns kerosene and produces thrust for aircraft.",
    },
]
TINY_QUERIES = [
    {"_id": "q1", "text": "How do plants make glucose from sunlight?"},
    {"_id": "q2", "text": "What comes out of a volcano when it erupts?"},
    {"_id": "q3", "text": "Which chess opening starts with the move c5?"},
    {"_id": "q9", "text": "A training query that the test split does not judge."},
]
# q3 is also judged relevant to a document that is not in the corpus: it can never be retrieved,
# so recall@10 is 1/2 and the ideal DCG counts it (nDCG = 1 / (1 + 1/log2(3))). q7 has no text.
TINY_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\nq3\tgone\t1\nq7\td4\t1\n"


@pytest.fixture()
def tiny_beir(tmp_path: Path) -> Path:
    folder = tmp_path / "beir-tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in TINY_CORPUS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in TINY_QUERIES), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(TINY_QRELS, encoding="utf-8")
    return folder


def test_beir_on_a_tiny_dataset(tiny_beir: Path, tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "db" / "index.db"
    stages: dict[str, list[int]] = {}

    class Recorder:
        def add(self, stage: str, n: int) -> None:  # locallens.progress.Progress: n more units of work
            stages.setdefault(stage, [0, 0])[0] += n

        def advance(self, stage: str, n: int = 1) -> None:
            stages[stage][1] += n

    report = run_beir(EvalRequest(db=db, beir=tiny_beir, device="cpu"), Recorder())
    assert (report.dataset, report.brain, report.documents, report.queries) == ("tiny", "beir-tiny", 5, 3)
    assert report.queries_skipped == 1  # q7: judged but without a query text
    assert report.ndcg_at_10 == pytest.approx((1 + 1 + 1 / (1 + 1 / LOG3)) / 3)
    assert report.recall_at_10 == pytest.approx((1 + 1 + 0.5) / 3)
    assert report.recall_at_100 == pytest.approx(report.recall_at_10)
    assert [q.ndcg_at_10 for q in report.per_query][:2] == [1.0, 1.0]
    assert report.short_rankings == 3  # five documents cannot fill a top 100
    docs = db.parent / "beir" / "tiny" / "docs"
    assert sorted(p.name for p in docs.iterdir()) == sorted(
        ["d1.txt", "d2.txt", "d3.txt", "d4.txt", safe_doc_name("doc/5.v2")]
    )
    assert (docs / "d1.txt").read_text(encoding="utf-8").startswith("Photosynthesis Green plants")
    assert (docs / safe_doc_name("doc/5.v2")).read_text(encoding="utf-8").startswith("A turbofan")
    assert report.files_embedded == 5
    # Every stage finished what it announced.
    for stage in ("writing documents", "indexing files", "embedding chunks", "encoding queries", "searching"):
        total, done = stages[stage]
        assert total == done > 0, stage
    data = report.as_json()
    assert {"ndcg_at_10", "recall_at_10", "recall_at_100", "queries", "timings"} <= set(data)
    assert "nDCG@10" in report.render_text()

    # A rerun writes nothing and embeds nothing: same figures.
    again = run_beir(EvalRequest(db=db, beir=tiny_beir, device="cpu"))
    assert (again.files_written, again.files_embedded, again.chunks_embedded) == (0, 0, 0)
    assert again.ndcg_at_10 == report.ndcg_at_10

    # Hybrid search on the same brain: keyword and vector rankings fused, same bounds.
    hybrid = run_beir(EvalRequest(db=db, beir=tiny_beir, device="cpu", hybrid=True))
    assert hybrid.as_json()["search"] == "hybrid" and "hybrid search" in hybrid.render_text()
    assert hybrid.chunks_embedded == 0 and hybrid.recall_at_10 == pytest.approx((1 + 1 + 0.5) / 3)


def test_beir_reading_and_naming(tiny_beir: Path) -> None:
    dataset = load_beir(tiny_beir)
    assert dataset.name == "tiny"
    assert dataset.corpus["doc/5.v2"].startswith("A turbofan")  # no title: no leading space
    assert dataset.qrels["q3"] == {"d3": 1, "gone": 1}
    assert safe_doc_name("d1") == "d1.txt"
    unsafe = {safe_doc_name(i) for i in ("a/b", "a.b", "a_b", ".hidden", "")}
    assert len(unsafe) == 5 and not any(n.startswith(".") for n in unsafe)
    assert rank_documents(
        ["x.txt", "y.txt", "x.txt", "other.txt", "z.txt"], {"x.txt": "X", "y.txt": "Y", "z.txt": "Z"}, limit=2
    ) == ["X", "Y"]
    (tiny_beir / "qrels" / "test.tsv").unlink()
    with pytest.raises(UsageError, match="not a BEIR dataset folder"):
        load_beir(tiny_beir)


def test_beir_bad_corpus_line(tiny_beir: Path) -> None:
    with (tiny_beir / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{broken\n")
    with pytest.raises(UsageError, match=r"corpus\.jsonl line 6"):
        load_beir(tiny_beir)


# -- the CLI ------------------------------------------------------------------------------------


def test_eval_cli_json_csv_plot(sample_index: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from locallens.cli import app

    csv_path, png_path = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(QUESTIONS_JSONL),
            "--db",
            str(sample_index),
            "--windows",
            "0,1",
            "--json",
            "--csv",
            str(csv_path),
            "--plot",
            str(png_path),
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"questions", "sweep", "retrieval", "answers", "per_question"}
    assert len(out["sweep"]) == 6 and out["answers"] is None
    assert out["retrieval"]["hit_at_k"] >= 0.8
    assert csv_path.read_text(encoding="utf-8").count("\n") == 7
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = CliRunner().invoke(app, ["eval", str(QUESTIONS_JSONL), "--db", str(sample_index), "--windows", "0"])
    assert "<- best" in text.stdout and "nDCG@10" in text.stdout


def test_eval_cli_usage_errors(sample_index: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from locallens.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["eval", "--db", str(sample_index)]).exit_code == 2
    assert (
        runner.invoke(app, ["eval", str(QUESTIONS_JSONL), "--db", str(sample_index), "--thresholds", "x"]).exit_code
        == 2
    )
    assert runner.invoke(app, ["eval", str(QUESTIONS_JSONL), "--db", str(tmp_path / "none.db")]).exit_code == 3

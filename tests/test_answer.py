"""`ask` end to end with the fakes: retrieval, the grounded prompt, citations, the answer check,
refusals, context fitting, exit codes and the JSON shape.

The fake LLM answers from a script; by default it quotes the excerpt sentence closest to the
question with its citation (`quote_best_sentence`), as a well-behaved model would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locallens.domain import Chunk, Hit
from locallens.prompt import SYSTEM_PROMPT, build_grounded_history

from .helpers import DEFAULT_MODEL, FakeModels, cli, cli_json, context_text, stdout_json, stdout_jsonl, write_corpus

QUESTION = "Which port does the staging database listen on?"
UNRELATED = "zebra giraffe migration across the savanna"


@pytest.fixture()
def db(tmp_path: Path, fake_models: FakeModels) -> Path:
    """The fast corpus indexed with the fake embedder."""
    db = tmp_path / "index.db"
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", str(db))
    return db


def _ask(db: Path, question: str, *flags: str) -> tuple[int, dict]:
    result = cli("ask", question, "--db", str(db), "--json", *flags)
    return result.exit_code, stdout_json(result)


def _hits(sources: list[dict]) -> list[Hit]:
    return [Hit(Chunk(s["id"], "default", s["path"], s["chunk_index"], s["content"], ""), s["score"]) for s in sources]


def test_context_only_json_shape_and_no_llm(db: Path, fake_models: FakeModels) -> None:
    code, out = _ask(db, QUESTION, "--context-only")
    assert code == 0 and "answer" not in out and not fake_models.llms
    assert set(out) >= {"question", "sources", "dropped", "tokens", "timings", "models"}
    assert [s["n"] for s in out["sources"]] == [1, 2, 3, 4, 5]
    assert set(out["sources"][0]) == {
        "n",
        "id",
        "path",
        "chunk_index",
        "citation",
        "line_start",
        "line_end",
        "page",
        "span",
        "score",
        "content",
    }
    assert out["sources"][0]["citation"] == "engineering/staging.md:1-5"
    assert out["sources"][0]["path"] == "engineering/staging.md"
    scores = [s["score"] for s in out["sources"]]
    assert scores == sorted(scores, reverse=True)
    assert out["models"] == {"embedding": DEFAULT_MODEL, "llm": None}
    assert set(out["timings"]) >= {"embed_ms", "search_ms"}
    text = cli("ask", QUESTION, "--db", str(db), "--context-only").stdout
    assert text == context_text(out["sources"])  # the model reads `#chunk-N`; a person the lines


def test_the_prompt_is_the_grounded_history_of_the_sources(db: Path, fake_models: FakeModels) -> None:
    code, out = _ask(db, QUESTION, "--whole-excerpts")
    assert code == 0, out
    (prompt,) = fake_models.prompts
    assert prompt == build_grounded_history(QUESTION, _hits(out["sources"]))
    assert [m.role for m in prompt] == ["system", "user"] and prompt[0].content == SYSTEM_PROMPT
    llm = fake_models.llm
    assert llm.closed  # a CLI call releases its model
    assert out["tokens"]["prompt"] == llm.count_prompt_tokens(prompt) and out["tokens"]["completion"] > 0
    assert out["models"]["llm"] == llm.model_name and llm.model_name.endswith(".gguf")


def test_generated_answer_json_shape_and_citations(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [1]."]
    code, out = _ask(db, QUESTION)
    assert code == 0
    assert set(out) >= {
        "question",
        "answer",
        "mode",
        "fallback",
        "refused",
        "withheld",
        "citations",
        "invalid_citations",
        "claims",
        "model_answer",
        "notices",
        "sources",
        "dropped",
        "tokens",
        "trimmed",
        "stopped_looping",
        "timings",
        "models",
    }
    assert out["mode"] == "generate" and out["refused"] is False and out["fallback"] is False
    assert "5433" in out["answer"] and "[1]" in out["answer"] and out["citations"] == [1]
    assert out["model_answer"] == "The staging database listens on port 5433 [1]."
    (claim,) = out["claims"]
    assert claim["supported"] is True and claim["source"] == 1 and claim["score"] > 0.8
    assert set(out["tokens"]) == {
        "prompt",
        "prompt_cached",
        "completion",
        "context_before_trim",
        "context_in_prompt",
        "context_before_trim_tiktoken",
        "context_in_prompt_tiktoken",
    }
    plain = cli("ask", QUESTION, "--db", str(db))
    assert plain.exit_code == 0 and "5433" in plain.stdout and "Sources:" in plain.stdout
    assert "[1] engineering/staging.md:1-5 (" in plain.stdout


def test_a_citation_of_no_excerpt_is_reported_and_repaired(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [9]."]
    code, out = _ask(db, QUESTION)
    assert code == 0 and out["invalid_citations"] == [9]
    assert "[9]" not in out["answer"] and out["citations"] == [1]


def test_an_unsupported_sentence_is_withheld_and_shown_on_request(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [1]. It also hosts the moon base on port 80 [1]."]
    code, out = _ask(db, QUESTION)
    assert code == 0 and out["withheld"] == 1 and "moon" not in out["answer"]
    assert [c["supported"] for c in out["claims"]] == [True, False]
    code, shown = _ask(db, QUESTION, "--show-unsupported")
    assert code == 0 and "moon" in shown["answer"] and "(unsupported)" in shown["answer"]


def test_an_answer_the_excerpts_do_not_support_falls_back_to_them(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["Bananas grow in Ecuador [2]."]
    code, out = _ask(db, QUESTION)
    assert code == 0 and out["fallback"] is True and out["mode"] == "extractive"
    assert "5433" in out["answer"] and out["model_answer"] == "Bananas grow in Ecuador [2]."


def test_stderr_says_what_happened_once_and_only_when_it_matters(db: Path, fake_models: FakeModels) -> None:
    """The check's notices go to stderr only when the printed answer is the model's own with
    sentences of it left out; --json keeps them all and prints none on stderr."""
    note = "locallens: note: 1 sentence of the model's answer left out: not backed by the excerpts"
    for reply, stderr in (
        ("The staging database listens on port 5433 [1].", ""),  # supported as written
        ("Bananas grow in Ecuador [2].", ""),  # the excerpts' own passage, cited: nothing to add
        ("The staging database listens on port 5433 [1]. It also hosts the moon base on port 80 [1].", note),
    ):
        fake_models.replies = [reply]
        plain = cli("ask", QUESTION, "--db", str(db))
        assert plain.exit_code == 0 and "5433" in plain.stdout
        assert plain.stderr.startswith(stderr) and len(plain.stderr.splitlines()) == (1 if stderr else 0), plain.stderr
        as_json = cli("ask", QUESTION, "--db", str(db), "--json")
        assert as_json.stderr == ""
        out = stdout_json(as_json)
        assert bool(out["notices"]) is (reply != "The staging database listens on port 5433 [1].")
    # The sentences set aside, shown marked as asked: the marks say it, no line on stderr.
    shown = cli("ask", QUESTION, "--db", str(db), "--show-unsupported")
    assert "(unsupported)" in shown.stdout and shown.stderr == ""
    # A refusal says itself on stdout; the model's answer left out is in the JSON.
    fake_models.replies = ["Bananas grow in Ecuador [1]."]
    refused = cli("ask", UNRELATED, "--db", str(db))
    assert refused.exit_code == 4 and refused.stdout.startswith("The answer is not in the excerpts.")
    assert refused.stderr == ""


@pytest.mark.parametrize(
    ("question", "refusal"),
    [
        (UNRELATED, "The answer is not in the excerpts."),
        ("¿Cuántos dientes tiene un cocodrilo del Nilo adulto?", "La respuesta no está en los fragmentos."),
    ],
)
def test_nothing_relevant_is_the_plain_refusal_exit_4(
    db: Path, fake_models: FakeModels, question: str, refusal: str
) -> None:
    fake_models.replies = ["Bananas grow in Ecuador [1]."]
    code, out = _ask(db, question)
    assert code == 4 and out["refused"] is True and out["answer"] == refusal and out["citations"] == []
    assert len(out["sources"]) == 5  # the sources are listed all the same
    result = cli("ask", question, "--db", str(db))
    assert result.exit_code == 4 and result.stdout.startswith(refusal)


def test_no_excerpts_is_exit_4_without_the_llm(db: Path, fake_models: FakeModels) -> None:
    result = cli("ask", QUESTION, "--db", str(db), "--min-score", "0.99")
    assert result.exit_code == 4 and "nothing relevant" in result.stderr and not fake_models.llms
    result = cli("ask", QUESTION, "--db", str(db), "--path", "nowhere/*")
    assert result.exit_code == 4 and not fake_models.llms


def test_extractive_answers_without_the_llm(db: Path, fake_models: FakeModels) -> None:
    code, out = _ask(db, QUESTION, "--extractive")
    assert code == 0 and out["mode"] == "extractive" and not fake_models.llms
    assert "5433" in out["answer"] and out["citations"] == [1] and "model_answer" not in out
    code, refused = _ask(db, UNRELATED, "--extractive")
    assert code == 4 and refused["refused"] is True


def test_context_fitting_drops_the_lowest_ranked_excerpts(db: Path, fake_models: FakeModels) -> None:
    result = cli("ask", QUESTION, "--db", str(db), "--json", "--ctx", "300", "--max-tokens", "32", "--whole-excerpts")
    assert result.exit_code == 0, result.output
    out = stdout_json(result)
    assert out["dropped"] and len(out["sources"]) + len(out["dropped"]) == 5
    assert "did not fit in the model's context" in result.stderr
    assert out["sources"][0]["path"] == "engineering/staging.md"
    (prompt,) = fake_models.prompts
    assert prompt == build_grounded_history(QUESTION, _hits(out["sources"]))
    assert fake_models.llm.count_prompt_tokens(prompt) + 32 <= 300
    # With passages (the default) the same: what did not fit is neither sent nor a source.
    cut = stdout_json(cli("ask", QUESTION, "--db", str(db), "--json", "--ctx", "300", "--max-tokens", "32"))
    assert cut["dropped"] and len(cut["sources"]) + len(cut["dropped"]) == 5
    assert fake_models.llm.count_prompt_tokens(fake_models.prompts[-1]) + 32 <= 300
    result = cli("ask", QUESTION, "--db", str(db), "--ctx", "160", "--max-tokens", "32")
    assert result.exit_code == 2 and "raise --ctx" in result.stderr


def test_a_question_that_cannot_fit_is_refused_before_any_model_loads(db: Path, fake_models: FakeModels) -> None:
    loads = len(fake_models.embedder_loads)  # the index run's
    result = cli("ask", "port " * 3000, "--db", str(db), "--ctx", "512")
    assert result.exit_code == 2 and len(fake_models.embedder_loads) == loads and not fake_models.llms


def test_a_repeating_model_is_stopped(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [1].\n" * 12]
    code, out = _ask(db, QUESTION)
    assert code == 0 and out["stopped_looping"] is True
    assert out["answer"].count("5433") == 1


def test_cite_grammar_constrains_generation(db: Path, fake_models: FakeModels) -> None:
    from locallens.answer import citation_grammar

    code, out = _ask(db, QUESTION, "--cite-grammar")
    assert code == 0
    assert fake_models.llm.grammars == [("gbnf", citation_grammar(len(out["sources"])))]
    assert _ask(db, QUESTION)[0] == 0
    assert fake_models.llm.grammars == [None]


def test_max_tokens_cuts_the_generation(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [1]. " + "More words here. " * 40]
    reply = fake_models.replies[0]
    _, out = _ask(db, QUESTION, "--max-tokens", "8")
    assert reply.startswith(out["model_answer"]) and len(out["model_answer"]) < len(reply) / 4
    assert out["tokens"]["completion"] < 16 and "More words" not in out["model_answer"]


def test_a_missing_llm_is_exit_6_before_generation(
    db: Path, fake_models: FakeModels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = cli("ask", QUESTION, "--db", str(db), "--llm", str(tmp_path / "nope.gguf"))
    assert result.exit_code == 6 and "nope.gguf" in result.stderr and not fake_models.llms
    monkeypatch.setenv("LOCALLENS_LLM", str(tmp_path / "from-env.gguf"))
    result = cli("ask", QUESTION, "--db", str(db))
    assert result.exit_code == 6 and "from-env.gguf" in result.stderr
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")  # any existing file passes the fake's check
    code, out = _ask(db, QUESTION, "--llm", str(gguf))
    assert code == 0 and out["models"]["llm"] == "mine.gguf"


def test_trim_shrinks_the_context(db: Path, fake_models: FakeModels) -> None:
    _, plain = _ask(db, QUESTION, "--context-only")
    code, trimmed = _ask(db, QUESTION, "--context-only", "--trim", "--threshold", "0.3")
    assert code == 0 and trimmed["trimmed"] is True and plain["trimmed"] is False
    assert trimmed["tokens"]["context_in_prompt"] < trimmed["tokens"]["context_before_trim"]
    assert any("5433" in s["content"] for s in trimmed["sources"])


def test_path_glob_and_hybrid_search(db: Path, fake_models: FakeModels) -> None:
    code, out = _ask(db, "WireGuard puerto", "--context-only", "--path", "notas/*")
    assert code == 0 and {s["path"] for s in out["sources"]} == {"notas/vpn.md"}
    code, out = _ask(db, "51820", "--context-only", "--hybrid", "--top-k", "1")
    assert code == 0 and out["sources"][0]["path"] == "notas/vpn.md"
    code, out = _ask(db, 'port "5433" OR (', "--context-only", "--hybrid")  # FTS syntax is not an error
    assert code == 0


def test_two_stage_retrieval_with_a_reranker(db: Path, fake_models: FakeModels) -> None:
    code, out = _ask(db, QUESTION, "--context-only", "--rerank", "fake-cross-encoder", "--min-relevance", "0.5")
    assert code == 0 and out["models"]["reranker"] == "fake-cross-encoder"
    assert fake_models.reranker.calls == 1
    assert all("rerank_score" in s and s["rerank_score"] >= 0.5 for s in out["sources"])
    assert out["sources"][0]["path"] == "engineering/staging.md"


def test_batch_answers_every_line_with_one_model_load(db: Path, fake_models: FakeModels, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": QUESTION})
        + "\n# a comment\n\n"
        + json.dumps({"question": "How long are nightly backups kept?", "top_k": 2})
        + "\n"
        + "not json\n"
        + json.dumps({"question": QUESTION, "bogus": 1})
        + "\n",
        encoding="utf-8",
    )
    result = cli("ask", "--batch", str(questions), "--db", str(db))
    assert result.exit_code == 7
    lines = stdout_jsonl(result)
    assert [line["line"] for line in lines] == [1, 4, 5, 6]
    assert "5433" in lines[0]["answer"] and "35 days" in lines[1]["answer"] and len(lines[1]["sources"]) == 2
    assert lines[2]["exit_code"] == 2 and lines[3]["exit_code"] == 2 and "bogus" in lines[3]["error"]
    assert len(fake_models.llms) == 1 and len(fake_models.prompts) == 2 and fake_models.llm.reuse_prefix


def test_library_ask_returns_the_cli_json(db: Path, fake_models: FakeModels) -> None:
    from locallens.answer import AskRequest, ask

    result = ask(AskRequest(question=QUESTION, db=db))
    assert not result.refused and "5433" in (result.answer or "")
    assert result.sources and result.models["embedding"] == DEFAULT_MODEL
    _, out = _ask(db, QUESTION)
    assert {k: v for k, v in result.as_json().items() if k != "timings"} == {
        k: v for k, v in out.items() if k != "timings"
    }


def test_a_prompt_of_selected_passages_cites_the_files_lines(db: Path, fake_models: FakeModels) -> None:
    """With the prompt cut to the excerpts' passages, a cited sentence is still placed on its
    file's lines (through the whole chunk it was cut from)."""
    from locallens.answer import AskRequest, ask
    from locallens.storage import parse_db

    fake_models.replies = ["The staging database listens on port 5433 [1]."]
    whole = ask(AskRequest(question=QUESTION, db=parse_db(db), prompt_passages=False)).as_json()
    cut = ask(AskRequest(question=QUESTION, db=parse_db(db), prompt_passages=True)).as_json()
    assert not cut["refused"] and "5433" in cut["answer"]
    # The excerpt as sent is its units, one a line (the blank lines of the file are gone); the
    # sources are the whole excerpts, numbered alike.
    assert "# Staging environment\nThe staging database listens on port 5433.\n" in fake_models.prompts[-1][1].content
    assert cut["sources"] == whole["sources"]
    placed = [(c["line_start"], c["line_end"]) for c in cut["claims"] if c["supported"]]
    assert placed and placed == [(c["line_start"], c["line_end"]) for c in whole["claims"] if c["supported"]]
    assert placed[0] == (3, 3)


def test_passages_and_whole_excerpts_flags_choose_what_the_prompt_holds(db: Path, fake_models: FakeModels) -> None:
    fake_models.replies = ["The staging database listens on port 5433 [1]."]
    code, cut = _ask(db, QUESTION, "--passages")
    assert code == 0
    code, whole = _ask(db, QUESTION, "--whole-excerpts")
    assert code == 0
    first_prompt, second_prompt = (p[1].content for p in fake_models.prompts)
    assert "# Staging environment\n\nThe staging database" in second_prompt  # the chunk as indexed
    assert "# Staging environment\n\nThe staging database" not in first_prompt
    assert cut["tokens"]["context_in_prompt"] <= whole["tokens"]["context_in_prompt"]  # the same words here
    assert cut["sources"] == whole["sources"]  # the whole excerpts, whatever the model read

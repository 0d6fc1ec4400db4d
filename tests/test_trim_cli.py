"""`locallens trim`, `ask --trim` and the sentence-vector cache, with the real embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locallens.retrieval import SentenceEncoder, TrimSettings, retrieve
from locallens.storage.sqlite import Store

from .helpers import SAMPLE_DOCS, check_trim_json, cli

QUERY = "Which port does the staging database listen on?"


def test_trim_json_shape_and_accounting(sample_index: Path) -> None:
    result = cli("trim", QUERY, "--db", str(sample_index), "--json", "--threshold", "0.4")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    check_trim_json(out)  # shape, arithmetic, and the sentence that carries the answer survives
    assert out["tiktoken_in_context"] < out["tiktoken_before"]


def test_trim_text_output_and_verbose(sample_index: Path) -> None:
    result = cli("trim", QUERY, "--db", str(sample_index), "--threshold", "0.45")
    assert result.exit_code == 0
    assert "[...]" in result.stdout and "tokens: " in result.stdout and "% less" in result.stdout
    verbose = cli("trim", QUERY, "--db", str(sample_index), "--threshold", "0.45", "--verbose")
    assert "  keep +" in verbose.stdout and "  drop " in verbose.stdout


@pytest.mark.slow
def test_trim_given_text_needs_no_index(tmp_path: Path) -> None:
    text = (
        "The cafeteria opens at eight. The staging database listens on port 5433. "
        "Parking is free on weekends. Our mascot is a heron."
    )
    path = tmp_path / "note.txt"
    path.write_text(text, encoding="utf-8")
    out = json.loads(cli("trim", QUERY, "--text", str(path), "--json", "--threshold", "0.5").stdout)
    (chunk,) = out["chunks"]
    assert chunk["trimmed"].startswith("[...] ") is False
    assert "port 5433" in chunk["trimmed"] and "mascot" not in chunk["trimmed"]
    assert chunk["kept"] == [1]
    from_stdin = json.loads(cli("trim", QUERY, "--text", "-", "--json", "--threshold", "0.5", input=text).stdout)
    assert from_stdin["chunks"][0]["trimmed"] == chunk["trimmed"]


def test_trim_without_index_exits_3(tmp_path: Path) -> None:
    assert cli("trim", QUERY, "--db", str(tmp_path / "none.db")).exit_code == 3


def test_ask_trim_flag_and_environment(sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = json.loads(cli("ask", QUERY, "--db", str(sample_index), "--context-only", "--json").stdout)
    assert plain["trimmed"] is False
    assert plain["tokens"]["context_before_trim"] == plain["tokens"]["context_in_prompt"]
    trimmed = json.loads(cli("ask", QUERY, "--db", str(sample_index), "--context-only", "--json", "--trim").stdout)
    assert trimmed["trimmed"] is True
    assert trimmed["tokens"]["context_in_prompt"] < trimmed["tokens"]["context_before_trim"]
    assert trimmed["tokens"]["context_in_prompt_tiktoken"] < trimmed["tokens"]["context_before_trim_tiktoken"]
    assert [s["id"] for s in trimmed["sources"]] == [s["id"] for s in plain["sources"]]
    monkeypatch.setenv("LOCALLENS_TRIM", "1")
    from_env = json.loads(cli("ask", QUERY, "--db", str(sample_index), "--context-only", "--json").stdout)
    assert from_env["sources"] == trimmed["sources"]
    monkeypatch.setenv("LOCALLENS_TRIM_THRESHOLD", "0.9")
    strict = json.loads(cli("ask", QUERY, "--db", str(sample_index), "--context-only", "--json").stdout)
    assert strict["tokens"]["context_in_prompt"] <= from_env["tokens"]["context_in_prompt"]
    monkeypatch.setenv("LOCALLENS_TRIM_THRESHOLD", "high")
    assert cli("ask", QUERY, "--db", str(sample_index), "--context-only").exit_code == 2


def test_sentence_vectors_are_cached_in_the_store(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "index.db"
    assert cli("index", str(SAMPLE_DOCS / "engineering"), "--db", str(db)).exit_code == 0
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        first = SentenceEncoder(embedder, store)
        settings = TrimSettings(enabled=True)
        a = retrieve(store, brain, embedder, QUERY, 5, trim=settings)
        # retrieve builds its own encoder; measure with ours on the same hits.
        from locallens.trim import trim_chunks_by_sentence

        qvec = embedder.encode_query(QUERY)
        plain = retrieve(store, brain, embedder, QUERY, 5).hits
        trim_chunks_by_sentence(qvec, plain, encode=first)
        assert first.calls == 1 and first.encoded == 0  # retrieve() already cached them all
        b = retrieve(store, brain, embedder, QUERY, 5, trim=settings)
        assert [h.content for h in a.hits] == [h.content for h in b.hits]


def test_index_sentence_vectors_precomputes_everything(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "index.db"
    result = cli("index", str(SAMPLE_DOCS / "hr"), "--db", str(db), "--sentence-vectors", "--json")
    out = json.loads(result.stdout)
    assert out["sentences_embedded"] > out["chunks"]["total"]
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        encoder = SentenceEncoder(embedder, store)
        from locallens.trim import trim_chunks_by_sentence

        hits = retrieve(store, brain, embedder, "How many days of leave?", 5).hits
        trim_chunks_by_sentence(embedder.encode_query("How many days of leave?"), hits, encode=encoder)
        assert encoder.calls == 1 and encoder.encoded == 0
    again = json.loads(cli("index", str(SAMPLE_DOCS / "hr"), "--db", str(db), "--sentence-vectors", "--json").stdout)
    assert again["sentences_embedded"] == 0


def test_trim_with_hybrid_search_finds_exact_tokens(sample_index: Path) -> None:
    plain = json.loads(
        cli("trim", "10.40.1.50", "--db", str(sample_index), "--json", "--top-k", "3", "--no-hybrid").stdout
    )
    result = cli("trim", "10.40.1.50", "--db", str(sample_index), "--json", "--top-k", "3")  # hybrid: the default
    assert result.exit_code == 0, result.output
    hybrid = json.loads(result.stdout)
    assert hybrid["chunks"][0]["path"] == "notas/manual-almacen-zaragoza.md"
    assert "10.40.1.50" in hybrid["chunks"][0]["content"]
    assert [c["id"] for c in plain["chunks"]] != [c["id"] for c in hybrid["chunks"]]

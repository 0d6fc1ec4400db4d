"""`--rerank llm`: the local LLM re-scores the first candidates by the question's likelihood.

The fast tests run on the fake LLM, whose likelihood of a question is minus the number of its
words the passage lacks (tests/helpers.py); the slow ones score with the packaged SmolLM2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from locallens import llm_rerank
from locallens.domain import Chunk, Hit

from .helpers import SMALL_DOCS, FakeModels, cli_json, copy_sample_docs


def make_hit(path: str, index: int, content: str, score: float) -> Hit:
    chunk = Chunk(f"c-{path}-{index}", "default", path, index, content, "0" * 64)
    return Hit(chunk=chunk, score=score)


@pytest.fixture
def scorer(fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch) -> FakeModels:
    monkeypatch.setattr(llm_rerank, "_scorers", {})  # a fresh scoring model per test
    return fake_models


def test_the_passage_that_makes_the_question_likely_comes_first(scorer: FakeModels) -> None:
    question = "Which port does the staging database listen on?"
    hits = [
        make_hit("a.md", 0, "The production database is backed up nightly.", 0.80),
        make_hit("b.md", 0, "The staging database listens on port 5433.", 0.70),
        make_hit("c.md", 0, "Lunch is served at noon.", 0.60),
    ]
    ranked = llm_rerank.llm_rerank(question, hits, weight=0.5)[:2]
    assert [h.chunk.relative_path for h in ranked] == ["b.md", "a.md"]
    assert all(h.rerank_score is not None and 0.0 < h.rerank_score < 1.0 for h in ranked)
    assert ranked[0].rerank_score > ranked[1].rerank_score  # type: ignore[operator]


def test_the_blend_weighs_the_first_stage_too() -> None:
    # Equal likelihoods: the cosine decides; weight 1: the likelihood alone.
    assert list(llm_rerank.blend([-3.0, -3.0], [0.9, 0.5], weight=0.5).round(3)) == [1.0 * 0.5, -1.0 * 0.5]
    assert list(llm_rerank.blend([-3.0, -3.0], [0.9, 0.5]).round(3)) == [0.75, -0.75]  # the shipped weight
    assert list(llm_rerank.blend([-1.0, -5.0], [0.5, 0.9], weight=1.0)) == [1.0, -1.0]


def test_only_the_first_candidates_are_scored_each_cut_to_its_first_tokens(scorer: FakeModels) -> None:
    long_text = " ".join(f"word{i}" for i in range(500))
    hits = [make_hit(f"f{i}.md", 0, long_text, 0.9 - i / 100) for i in range(llm_rerank.LLM_CANDIDATES + 5)]
    ranked = llm_rerank.llm_rerank("what is word3?", hits)
    scored = scorer.llm.scored
    assert len(scored) == llm_rerank.LLM_CANDIDATES
    frame = len(scorer.llm.text_tokens("Passage: \nA question this passage answers:"))
    assert all(len(prompt) == llm_rerank.PASSAGE_TOKENS + frame for prompt, _ in scored)
    # The candidates re-sorted, the rest after them as they came.
    assert {h.chunk.relative_path for h in ranked[: llm_rerank.LLM_CANDIDATES]} == {
        f"f{i}.md" for i in range(llm_rerank.LLM_CANDIDATES)
    }
    assert ranked[llm_rerank.LLM_CANDIDATES :] == hits[llm_rerank.LLM_CANDIDATES :]


def test_one_file_fills_no_more_places_than_the_first_stage_allows(scorer: FakeModels) -> None:
    from locallens.retrieval import MAX_CHUNKS_PER_FILE, RerankSettings, rerank_hits

    question = "When does the on-call rotation hand over?"
    same = [make_hit("on-call.md", i, f"The on-call rotation hands over on Monday, part {i}.", 0.6) for i in range(4)]
    others = [make_hit(f"other{i}.md", 0, f"Unrelated note {i}.", 0.6) for i in range(3)]
    ranked = rerank_hits(question, others + same, RerankSettings("llm"), top_k=5)
    paths = [h.chunk.relative_path for h in ranked]
    assert paths[0] == "on-call.md"
    assert paths.count("on-call.md") == MAX_CHUNKS_PER_FILE


def test_fewer_than_two_candidates_are_returned_as_they_are(scorer: FakeModels) -> None:
    hit = make_hit("a.md", 0, "Only one.", 0.5)
    assert llm_rerank.llm_rerank("anything?", [hit]) == [hit]
    assert not scorer.llms  # nothing to compare: no model loaded


def test_ask_rerank_llm_end_to_end(scorer: FakeModels, tmp_path: Path) -> None:
    docs = copy_sample_docs(tmp_path / "docs", SMALL_DOCS)
    db = str(tmp_path / "index.db")
    cli_json("index", str(docs), "--db", db)
    data = cli_json("ask", "How long is parental leave?", "--db", db, "--rerank", "llm", "--extractive", "--json")
    assert data["models"]["reranker"] == "llm"
    assert data["sources"] and all("rerank_score" in s for s in data["sources"])
    assert data["sources"][0]["path"] == "hr/leave-policy.md"
    assert scorer.llm.scored  # the candidates were scored by the LLM


@pytest.mark.slow
def test_real_model_continuation_logprob_matches_full_logits() -> None:
    import llama_cpp
    import numpy as np

    from locallens.llm import LocalLLM, resolve_llm_path

    path = resolve_llm_path(None)
    llm = LocalLLM(path, n_ctx=512)
    prompt = llm.text_tokens("Passage: Parental leave is 16 weeks, fully paid.\nA question this passage answers:")
    question = llm.text_tokens(" How long is parental leave?")
    ours = llm.continuation_logprob(prompt, question)
    assert ours == llm.continuation_logprob(prompt, question)  # the cache is cleared: repeatable
    full = llama_cpp.Llama(model_path=str(path), n_ctx=512, logits_all=True, verbose=False)
    full.eval(prompt + question)
    logits = full.scores[: len(prompt) + len(question)].astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    expected = sum(logp[len(prompt) - 1 + i, t] for i, t in enumerate(question))
    assert ours == pytest.approx(expected, abs=0.5)  # batched evaluation differs in the last digits
    # A generation after a scoring starts from an empty cache, as always.
    from locallens.domain import ChatMessage

    messages = [ChatMessage("user", "Say hello.")]
    first = "".join(llm.stream_chat(messages, max_tokens=8))
    llm.continuation_logprob(prompt, question)
    assert "".join(llm.stream_chat(messages, max_tokens=8)) == first
    llm.close()
    full.close()


@pytest.mark.slow
def test_real_model_prefers_the_passage_that_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_rerank, "_scorers", {})
    hits = [
        make_hit("lunch.md", 0, "Lunch is served in the cafeteria from noon to two.", 0.5),
        make_hit("leave.md", 0, "Parental leave is sixteen weeks, fully paid, for every parent.", 0.5),
    ]
    ranked = llm_rerank.llm_rerank("How long is parental leave?", hits, weight=1.0)
    assert ranked[0].chunk.relative_path == "leave.md"

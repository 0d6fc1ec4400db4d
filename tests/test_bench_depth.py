"""`benchmarks/bench_depth.py`'s reading of a retrieved chunk together with the next one of its file
(`read_on`, small-to-big) and its join of two consecutive chunks (`joined_chunks`): on fakes, no
model. (Measured and not adopted for `ask`: docs/decisions.md#reading-deeper.)"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from locallens.domain import Chunk, Hit, Location
from locallens.storage.types import Brain
from locallens.tokens import count_tokens

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_depth import joined_chunks, read_on

BRAIN = Brain(1, "default", "fake", 4, "paragraph", 220, 40, 0.0, None)


def test_the_shared_text_of_two_chunks_is_read_once() -> None:
    first = "To roll back a release, run:\n\n    deploy rollback"
    then = "deploy rollback --to previous\n\nThe old version is live in a minute."
    assert joined_chunks(first, then, overlap=3) == (
        "To roll back a release, run:\n\n    deploy rollback --to previous\n\nThe old version is live in a minute."
    )


def test_a_short_shared_heading_and_no_shared_text() -> None:
    assert (
        joined_chunks("Some text.\n\nNote:", "Note:\n\n   Be careful.", overlap=2)
        == "Some text.\n\nNote:\n\n   Be careful."
    )
    # The chunker cut between paragraphs: nothing is shared, a blank line joins them.
    assert joined_chunks("The end of one.", "A new paragraph.") == "The end of one.\n\nA new paragraph."


def test_of_several_ends_that_match_the_one_nearest_the_overlap_is_shared() -> None:
    ruler = "*" * 40
    first = f"Title\n{ruler}\n{ruler}"
    then = f"{ruler}\nBody"
    # Two ends of `first` start `then` (one ruler, or both with the newline between); the chunks
    # overlap by one ruler's tokens.
    assert joined_chunks(first, then, overlap=count_tokens(ruler)) == f"Title\n{ruler}\n{ruler}\nBody"


_WORDS = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8), min_size=6, max_size=60)


@given(_WORDS, st.data())
def test_joined_consecutive_cuts_give_back_the_text(words: list[str], data: st.DataObject) -> None:
    text = " ".join(words)
    n = len(words)
    end = data.draw(st.integers(2, n - 1))  # the first chunk: words [0, end)
    start = data.draw(st.integers(1, end - 1))  # the next one: words [start, n), sharing [start, end)
    first, then = " ".join(words[:end]), " ".join(words[start:])
    shared = " ".join(words[start:end])
    joined = joined_chunks(first, then, overlap=count_tokens(shared))
    # Both chunks are read whole, the result is never longer than the two side by side, and a
    # shared run that cannot be confused with another end of `first` is read once.
    assert joined.startswith(first) and joined.endswith(then)
    assert len(joined) <= len(first) + len(then) + 2
    if [k for k in range(1, len(first) + 1) if then.startswith(first[-k:])] == [len(shared)]:
        assert joined == text


class FakeStore:
    """The one store method `read_on` uses: a chunk by its id (as the SQLite and PostgreSQL stores)."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = {c.id: c for c in chunks}
        self.asked: list[str] = []

    def chunk_by_id(self, brain: Brain, chunk_id: str) -> Chunk | None:
        self.asked.append(chunk_id)
        return self.chunks.get(chunk_id)


def _chunks(path: str, checksum: str, texts: list[str], lines: list[tuple[int, int]]) -> list[Chunk]:
    return [
        Chunk(f"{checksum[:12]}-{i}", "default", path, i, text, checksum, Location(a, b))
        for i, (text, (a, b)) in enumerate(zip(texts, lines))
    ]


def test_the_first_hits_are_read_with_their_next_chunk() -> None:
    deploy = _chunks(
        "ops/deploy.md",
        "a" * 64,
        ["Deploys run from CI.\n\nTo roll back, run:", "To roll back, run:\n\n    deploy rollback", "Last words."],
        [(1, 3), (3, 5), (6, 6)],
    )
    leave = _chunks("hr/leave.md", "b" * 64, ["Leave is 25 days.", "Carry over 5 days."], [(1, 1), (2, 2)])
    store = FakeStore(deploy + leave)
    hits = [Hit(deploy[0], 0.9), Hit(leave[1], 0.8), Hit(deploy[2], 0.7)]
    read = read_on(store, BRAIN, hits, ranks=2)
    # The first: joined with its next chunk, the shared setup line once; its id, rank and score kept.
    assert read[0].content == "Deploys run from CI.\n\nTo roll back, run:\n\n    deploy rollback"
    assert (read[0].id, read[0].score, read[0].chunk.location) == (deploy[0].id, 0.9, Location(1, 5))
    assert read[0].citation() == "ops/deploy.md:1-5"
    # The second is its file's last chunk: nothing to join. The third is beyond `ranks`.
    assert read[1:] == hits[1:]
    assert len(read) == len(hits)


def test_a_neighbour_already_among_the_hits_is_not_read_twice() -> None:
    notes = _chunks("notes.md", "c" * 64, ["One.", "Two.", "Three."], [(1, 1), (2, 2), (3, 3)])
    store = FakeStore(notes)
    hits = [Hit(notes[0], 0.9), Hit(notes[1], 0.8)]
    assert read_on(store, BRAIN, hits, ranks=2) == [
        hits[0],
        replace(hits[1], chunk=replace(notes[1], content="Two.\n\nThree.", location=Location(2, 3))),
    ]


def test_read_on_with_nothing_to_join_returns_the_hits() -> None:
    store = FakeStore([])
    hit = Hit(_chunks("a.md", "d" * 64, ["Alone."], [(1, 1)])[0], 0.5)
    assert read_on(store, BRAIN, [hit], ranks=5) == [hit]
    assert read_on(store, BRAIN, [], ranks=5) == []

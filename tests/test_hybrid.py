"""Hybrid search: the score fusion, stemmed keywords, and the step-5 upgrade."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from locallens.domain import Chunk, Hit
from locallens.retrieval import (
    HYBRID_VECTOR_WEIGHT,
    IDENTIFIER_VECTOR_WEIGHT,
    fuse_scores,
    hybrid_search,
    identifiers_only,
    search,
)
from locallens.storage import Brain, DocumentRecord, migrations
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import Store

from .helpers import write_one_chunk_notes

DIM = 4
NOTES = {
    # The dense side (VECTORS) prefers notes/a.md for the question vector below; only rotate.md
    # speaks of rotating logs, in other inflections than the question's.
    "a.md": "Backups run nightly and are kept for thirty days.",
    "rotate.md": "Log rotation: the service rotates its logs every Sunday and compresses the old ones.",
    "faq.md": "Questions and answers: ask the help desk, and they will know.",
    "other.md": "The printer is on the second floor, next to the kitchen.",
}
VECTORS = {"a.md": [1, 0, 0, 0], "rotate.md": [0.9, 0.436, 0, 0], "faq.md": [0, 0, 1, 0], "other.md": [0, 0, 0, 1]}
QUESTION_VECTOR = np.array([1, 0, 0, 0], dtype=np.float32)


def write_notes(store: Store, brain: Brain) -> None:
    write_one_chunk_notes(store, brain, NOTES, VECTORS)


@pytest.fixture()
def notes(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
        write_notes(store, brain)
        yield store, brain


def paths(store: Store, ids: list[int]) -> list[str]:
    return [store.execute("SELECT relative_path FROM chunks WHERE id = ?", (i,))[0][0] for i in ids]


# -- the fusion ------------------------------------------------------------------------------


def test_a_clear_keyword_match_overtakes_a_slightly_closer_vector() -> None:
    cosine = {1: 0.80, 2: 0.78, 3: 0.40, 4: 0.35}
    assert fuse_scores(cosine, {}) == [1, 2, 3, 4]  # no keyword match: the vector order
    assert fuse_scores(cosine, {2: 7.5}) == [2, 1, 3, 4]  # a lone match counts (it is not 0 = missing)
    # a weak vector candidate is not carried to the top by a keyword match alone
    assert fuse_scores(cosine, {4: 7.5})[0] == 1


def test_the_weight_moves_the_fusion_from_keywords_to_vectors() -> None:
    cosine = {1: 0.9, 2: 0.5, 3: 0.1}
    keyword = {3: 9.0, 2: 1.0}
    assert fuse_scores(cosine, keyword, weight=1.0) == [1, 2, 3]
    assert fuse_scores(cosine, keyword, weight=0.0) == [3, 2, 1]


def test_ties_go_to_the_higher_cosine_then_the_smaller_key() -> None:
    assert fuse_scores({("b", 0, "x"): 0.5, ("a", 0, "x"): 0.5}, {}) == [("a", 0, "x"), ("b", 0, "x")]
    assert fuse_scores({1: 0.5, 2: 0.5}, {1: 1.0, 2: 1.0}) == [1, 2]


@given(
    st.dictionaries(
        st.integers(0, 50),
        st.tuples(st.floats(-1, 1), st.one_of(st.none(), st.floats(0, 30))),
        min_size=1,
        max_size=30,
    ),
    st.floats(0, 1),
)
def test_fusion_ranks_every_candidate_once(candidates: dict[int, tuple[float, float | None]], weight: float) -> None:
    cosine = {i: c for i, (c, _) in candidates.items()}
    keyword = {i: s for i, (_, s) in candidates.items() if s is not None}
    order = fuse_scores(cosine, keyword, weight)
    assert sorted(order) == sorted(cosine)
    if weight == 1.0:  # vectors alone: by cosine, ties by key
        assert order == sorted(cosine, key=lambda i: (-cosine[i], i))


def test_the_default_leans_to_the_vectors_and_a_bare_identifier_to_the_keywords() -> None:
    # Measured on three corpora (docs/decisions.md#hybrid-search); a change must be measured again.
    assert IDENTIFIER_VECTOR_WEIGHT < HYBRID_VECTOR_WEIGHT < 1.0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("10.40.1.50", True),
        ("NWL-CY-22871", True),
        ("v2.1 10.0.0.1?", True),
        ("What is at 10.40.1.50?", False),  # a sentence: the embedder can read it
        ("ERR_CONN_RESET", False),  # one word (underscores are word characters), no digit
        ("", False),
        ("?!", False),
    ],
)
def test_identifier_only_queries(query: str, expected: bool) -> None:
    assert identifiers_only(query) is expected


def test_a_bare_identifier_finds_its_one_exact_match_first(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    # The vectors prefer a.md by far; only other.md contains the code.
    code = Chunk(id="code-0", brain=brain.name, relative_path="code.md", chunk_index=0,
                 content="The label printer answers at 10.40.1.50 on the warehouse network.", checksum="code")  # fmt: skip
    vectors = np.array([[0.1, 0.1, 0.1, 0.98]], dtype=np.float32)
    record = DocumentRecord(
        root="/notes", relative_path="code.md", size=1, mtime_ns=1, checksum="code", chunks=[code], vectors=vectors
    )
    store.write_document(brain, record)
    assert search(store, brain, "", QUESTION_VECTOR, 1, hybrid=False)[0].chunk.relative_path == "a.md"
    assert hybrid_search(store, brain, "10.40.1.50", QUESTION_VECTOR, 3)[0].chunk.relative_path == "code.md"


# -- hybrid search on a store -----------------------------------------------------------------


def test_hybrid_search_finds_an_inflected_word_the_vector_ranked_second(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    assert search(store, brain, "", QUESTION_VECTOR, 1, hybrid=False)[0].chunk.relative_path == "a.md"
    hits = hybrid_search(store, brain, "how do I rotate the log files?", QUESTION_VECTOR, 3)
    assert hits[0].chunk.relative_path == "rotate.md"
    cosine = float(np.dot(QUESTION_VECTOR, VECTORS["rotate.md"]) / np.linalg.norm(VECTORS["rotate.md"]))
    assert hits[0].score == pytest.approx(cosine, abs=1e-5)  # the score shown stays the cosine


def test_keyword_scores_are_stemmed_bm25(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    scored = store.keyword_scores(brain, "rotating logs", 5)
    assert paths(store, [i for i, _ in scored]) == ["rotate.md"] and scored[0][1] > 0
    assert store.keyword_search(brain, "rotating logs", 5) == [i for i, _ in scored]


# -- the schema upgrade ---------------------------------------------------------------------


def test_a_database_written_before_stemming_is_upgraded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = next(s for s in migrations.MIGRATIONS if s.name == "stemmed_keywords")
    earlier = tuple(s for s in migrations.MIGRATIONS if s.version < step.version)
    db = tmp_path / "index.db"
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", earlier)
        patch.setattr(store_module, "SCHEMA_VERSION", earlier[-1].version)
        with Store(db) as store:
            brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
            with store.transaction():  # the columns today's writer fills (a later step adds them)
                migrations._chunk_locations(store.conn)
                migrations._reading_versions(store.conn)
            write_notes(store, brain)
            assert store.execute("PRAGMA user_version")[0][0] == step.version - 1
            assert store.keyword_search(brain, "rotating", 5) == []  # unstemmed: no match
    with Store(db) as store:
        assert store.execute("PRAGMA user_version")[0][0] == migrations.SCHEMA_VERSION
        brain = store.get_brain("default")
        assert paths(store, store.keyword_search(brain, "rotating", 5)) == ["rotate.md"]
        ((sql,),) = store.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'")
        assert "porter unicode61" in sql and "header" in sql
        store.fts_integrity_check()
        assert store.integrity_check() == "ok"
        # the triggers follow deletions and new rows
        ((doc_id,),) = store.execute("SELECT id FROM documents WHERE relative_path = 'rotate.md'")
        store.delete_documents(brain, [doc_id])
        assert store.keyword_search(brain, "rotating", 5) == []
        store.fts_integrity_check()


# -- diversity across files -------------------------------------------------------------------


def _write_files(store: Store, brain: Brain, files: dict[str, list[float]]) -> None:
    """Each file's chunks with these cosines to QUESTION_VECTOR (and their text `<file> part <n>`)."""
    for path, cosines in files.items():
        chunks = [Chunk(id=f"{path}-{i}", brain=brain.name, relative_path=path, chunk_index=i,
                        content=f"{path} part {i}", checksum=path) for i in range(len(cosines))]  # fmt: skip
        vectors = np.array([[c, float(np.sqrt(1 - c * c)), 0, 0] for c in cosines], dtype=np.float32)
        record = DocumentRecord(
            root="/notes", relative_path=path, size=1, mtime_ns=1, checksum=path, chunks=chunks, vectors=vectors
        )
        store.write_document(brain, record)


def test_one_file_gives_at_most_two_of_the_top_results_while_others_have_some(tmp_path: Path) -> None:
    from locallens.retrieval import MAX_CHUNKS_PER_FILE

    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
        # long.md's four chunks are all closer to the question than either other file.
        _write_files(store, brain, {"long.md": [0.99, 0.98, 0.97, 0.96], "b.md": [0.9], "c.md": [0.8]})
        for hybrid in (False, True):
            hits = search(store, brain, "part", QUESTION_VECTOR, 5, hybrid=hybrid)
            assert MAX_CHUNKS_PER_FILE == 2
            # long.md's third chunk is held back behind b.md and c.md, then fills the place left.
            assert [(h.chunk.relative_path, h.chunk.chunk_index) for h in hits] == [
                ("long.md", 0), ("long.md", 1), ("b.md", 0), ("c.md", 0), ("long.md", 2)
            ]  # fmt: skip


def test_ask_reads_after_the_top_results_what_the_cap_held_back_from_them(tmp_path: Path) -> None:
    from locallens.retrieval import READ_HELD_BACK

    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
        # long.md's four chunks are the fused first four; the cap holds back its 3rd and 4th.
        _write_files(store, brain, {"long.md": [0.99, 0.98, 0.97, 0.96], "b.md": [0.9], "c.md": [0.8]})
        top = search(store, brain, "part", QUESTION_VECTOR, 5, hybrid=True)
        read = search(store, brain, "part", QUESTION_VECTOR, 5, hybrid=True, read_held=True)
        assert READ_HELD_BACK
        # The five are as before; long.md's 4th chunk, the one held back still unread, comes after them.
        assert read[:5] == top
        assert [(h.chunk.relative_path, h.chunk.chunk_index) for h in read[5:]] == [("long.md", 3)]
        # Without a chunk held back from the first five, nothing is added.
        assert search(store, brain, "part", QUESTION_VECTOR, 2, hybrid=True, read_held=True) == search(
            store, brain, "part", QUESTION_VECTOR, 2, hybrid=True
        )
        # Vector search (`--no-hybrid`) returns its k as before.
        assert len(search(store, brain, "part", QUESTION_VECTOR, 5, hybrid=False, read_held=True)) == 5


@given(st.lists(st.sampled_from("abcd"), max_size=14), st.integers(1, 8))
def test_what_the_cap_held_back_and_the_capped_results_read_the_whole_fused_top(files: list[str], k: int) -> None:
    from locallens.retrieval import MAX_CHUNKS_PER_FILE, diversify, held_back

    hits = [_hit(f, i) for i, f in enumerate(files)]
    order = [_key_of(h) for h in hits]
    held = held_back(order, k)
    top = {_key_of(h) for h in diversify(hits, k)}
    # every chunk the fused ranking puts among the first k is read, by the cap's k or after them
    assert set(order[:k]) <= top | set(held)
    # only chunks past their file's first MAX_CHUNKS_PER_FILE among the first k, in their order
    past_cap = [
        kk for i, kk in enumerate(order[:k]) if sum(o[0] == kk[0] for o in order[: i + 1]) > MAX_CHUNKS_PER_FILE
    ]
    assert held == past_cap
    assert len(held) <= max(0, k - MAX_CHUNKS_PER_FILE)


def test_ask_reads_the_first_files_chunks_the_cap_held_back_deeper_in_the_ranking() -> None:
    """Of the first-ranked file, the chunks the cap held back among the first 2k are read after the
    k results; another file's only among the first k; in the fused order, at most k - 2."""
    from locallens.retrieval import BEST_FILE_DEPTH, read_held_back

    assert BEST_FILE_DEPTH == 2
    files = ["top", "top", "b", "c", "b", "d", "b", "top", "e", "top", "top"]
    order = [_key_of(_hit(f, i)) for i, f in enumerate(files)]
    # b's 3rd chunk (place 7) is past the first 5; top's 3rd and 4th (places 8, 10) are within 10.
    assert read_held_back(order, 5) == [order[7], order[9]]
    assert read_held_back(order, 5, taken=[order[7]]) == [order[9]]
    # At most k - 2: with k 3, one chunk.
    assert len(read_held_back(order, 3)) <= 1
    assert read_held_back([], 5) == []


@given(st.lists(st.sampled_from("abcd"), max_size=20), st.integers(1, 8))
def test_what_ask_reads_after_its_results_is_held_back_and_bounded(files: list[str], k: int) -> None:
    from locallens.retrieval import MAX_CHUNKS_PER_FILE, held_back, read_held_back

    order = [_key_of(_hit(f, i)) for i, f in enumerate(files)]
    read = read_held_back(order, k)
    assert len(read) <= max(0, k - MAX_CHUNKS_PER_FILE)
    assert set(read) <= set(held_back(order, 2 * k))
    assert read == sorted(read, key=order.index)  # in the fused order
    # what the cap held back from the first k is read, unless the bound is reached first
    near = held_back(order, k)
    assert set(near) <= set(read) or len(read) == max(0, k - MAX_CHUNKS_PER_FILE)
    # deeper in the ranking, only the first file's
    assert all(kk in near or kk[0] == order[0][0] for kk in read)


def _hit(path: str, index: int) -> Hit:
    return Hit(Chunk(f"{path}-{index}", "default", path, index, f"{path} {index}", "0" * 64), score=0.5)


@given(st.lists(st.sampled_from("abcde"), max_size=14), st.integers(1, 8))
def test_diversify_keeps_the_order_and_caps_a_file_only_while_others_are_left(files: list[str], k: int) -> None:
    from locallens.retrieval import MAX_CHUNKS_PER_FILE, diversify

    hits = [_hit(f, i) for i, f in enumerate(files)]
    out = diversify(hits, k)
    assert len(out) == min(k, len(hits))
    assert len({id(h) for h in out}) == len(out)  # each hit once
    if out:
        assert out[0] is hits[0]  # the best hit stays first
    left_out = {h.chunk.relative_path for h in hits} - {h.chunk.relative_path for h in out}
    for path in {h.chunk.relative_path for h in out}:
        # a file has more than its share only when no file with a candidate was left out for it
        if sum(h.chunk.relative_path == path for h in out) > MAX_CHUNKS_PER_FILE:
            assert not left_out
    # within one file, its chunks keep their order
    for path in set(files):
        mine = [h.chunk.chunk_index for h in out if h.chunk.relative_path == path]
        assert mine == sorted(mine)


# -- which chunk of a file ----------------------------------------------------------------------


class _Counts:
    """A store's two reads that `best_chunks` makes: word counts (every word in 1 of 100 chunks)
    and a chunk by id (a file's first chunk, for its title)."""

    def __init__(self, hits: list[Hit]) -> None:
        self.chunks = {h.chunk.id: h.chunk for h in hits}

    def term_counts(self, brain: object, words: list[str], cap: int) -> tuple[int, dict[str, int]]:
        return 100, dict.fromkeys(words, 1)

    def chunk_by_id(self, brain: object, chunk_id: str) -> Chunk | None:
        return self.chunks.get(chunk_id)


def _chunk_hit(path: str, index: int, text: str) -> Hit:
    return Hit(Chunk(f"{path[:12]}-{index}", "default", path, index, text, path), score=0.5)


def _key_of(hit: Hit) -> tuple[str, int, str]:
    return (hit.chunk.relative_path, hit.chunk.chunk_index, hit.chunk.checksum)


def test_a_files_places_go_to_its_chunks_that_hold_the_questions_terms() -> None:
    from locallens.retrieval import best_chunks

    guide = [
        _chunk_hit("guide.md", 0, "Cache guide\n\nThe cache keeps pages in memory."),
        _chunk_hit("guide.md", 1, "The cache is fast and many sites use it."),
        _chunk_hit("guide.md", 2, "Its default TTL is 120 seconds."),
    ]
    other = _chunk_hit("other.md", 0, "Printers are on the second floor.")
    order = [guide[0], guide[1], guide[2], other]  # the fused ranking
    fused = {_key_of(h): s for h, s in zip(order, (1.0, 0.9, 0.7, 0.5))}
    chosen = [guide[0], guide[1], other]  # what the fused ranking gives 3 places to
    question = "What is the default TTL of the cache?"
    out = best_chunks(_Counts(order), None, chosen, order, fused, [question])  # type: ignore[arg-type]
    # guide.md keeps its two places, other.md its one; the chunk holding "default" and "TTL" takes
    # the first of guide.md's (0.7 + 0.5 x 1 against 1.0 + 0.5 x 1/3: the title's "cache" is held
    # by every chunk of the file, so it adds to each alike), the fused first the second.
    assert [(h.chunk.relative_path, h.chunk.chunk_index) for h in out] == [
        ("guide.md", 2), ("guide.md", 0), ("other.md", 0)
    ]  # fmt: skip
    # (Without the title's words held by every chunk, guide.md would keep its first two chunks: the
    # TTL chunk's 0.7 + 0.5 x 2/3 = 1.03 is below the second's 0.9 + 0.5 x 1/3 = 1.07.)
    # No key term (only stop words): the fused ranking's choice stands.
    assert best_chunks(_Counts(order), None, chosen, order, fused, ["What is it?"]) == chosen  # type: ignore[arg-type]


@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["default ttl", "cache", "port 80", ""])), max_size=12),
    st.integers(1, 6),
)
def test_best_chunks_keeps_each_files_places_and_reads_each_chunk_once(chunks: list[tuple[str, str]], k: int) -> None:
    from locallens.retrieval import best_chunks, diversify

    order = [_chunk_hit(f"{path}.md", i, text) for i, (path, text) in enumerate(chunks)]
    fused = {_key_of(h): -i / 10 for i, h in enumerate(order)}
    chosen = diversify(order, k)
    out = best_chunks(_Counts(order), None, chosen, order, fused, ["Which port is the default?"])  # type: ignore[arg-type]
    assert [h.chunk.relative_path for h in out] == [h.chunk.relative_path for h in chosen]
    assert len({_key_of(h) for h in out}) == len(out)
    assert all(h in order for h in out)


def test_the_nearest_chunks_file_is_among_the_first_five() -> None:
    from locallens.retrieval import keep_nearest

    chosen = [_chunk_hit(f"{name}.md", 0, name) for name in "abcdefg"]
    nearest = _chunk_hit("n.md", 3, "the embedder's nearest")
    out = keep_nearest(chosen, nearest)
    assert [h.chunk.relative_path for h in out] == ["a.md", "b.md", "c.md", "d.md", "n.md", "e.md", "f.md"]
    # already among the first five (by its file), or among the later results: moved up, read once
    assert keep_nearest([*chosen[:4], _chunk_hit("n.md", 0, "n"), *chosen[4:6]], nearest)[4].chunk.chunk_index == 0
    later = [*chosen[:6], nearest]
    assert keep_nearest(later, nearest) == [*chosen[:4], nearest, *chosen[4:6]]
    # fewer results than five places: left as they are
    assert keep_nearest(chosen[:3], nearest) == chosen[:3]


def test_one_document_in_two_formats_shares_one_files_places() -> None:
    """`a2x.1.txt` and its rendering `a2x.1.html` hold the same text: together they take the
    places of one file, so the others' chunks are not pushed out by a copy."""
    from locallens.retrieval import diversify, document_of, held_back

    assert document_of("man/a2x.1.txt") == document_of("man/a2x.1.html") == "man/a2x.1"
    assert document_of("notes/a.md") != document_of("other/a.md")
    hits = [_hit(p, i) for i, p in enumerate(["a2x.1.txt", "a2x.1.html", "a2x.1.html", "b.txt", "c.txt"])]
    assert [h.chunk.relative_path for h in diversify(hits, 4)] == ["a2x.1.txt", "a2x.1.html", "b.txt", "c.txt"]
    assert held_back([_key_of(h) for h in hits], 3) == [_key_of(hits[2])]


class _Named:
    """The reads `with_named_document` makes of a store: its files' paths, word counts ("borg" in
    most chunks, any other word in few), a file's chunks and the nearest of them."""

    def __init__(self, files: dict[str, int]) -> None:
        self.files = files

    def document_paths(self, brain: object) -> list[str]:
        return list(self.files)

    def term_counts(self, brain: object, words: list[str], cap: int) -> tuple[int, dict[str, int]]:
        return 100, {w: 90 if w == "borg" else 2 for w in words}

    def document_chunks(self, brain: object, path: str) -> list[Chunk]:
        return [_chunk_hit(path, i, f"{path} {i}").chunk for i in range(self.files[path])]

    def knn(self, brain: object, query: object, k: int, *, path_glob: str | None = None) -> list[Hit]:
        assert path_glob in self.files
        return [_chunk_hit(path_glob, i, f"{path_glob} {i}") for i in reversed(range(min(k, self.files[path_glob])))]


def test_a_broad_question_reads_the_file_its_topic_names_from_its_first_chunk() -> None:
    from locallens.retrieval import with_named_document

    store = _Named({"changes.txt": 40, "quickstart.txt": 3, "book.txt": 9, "usage-general.txt": 5, "faq.txt": 4})
    hits = [_chunk_hit(p, i, p) for p, i in [("changes.txt", 7), ("changes.txt", 9), ("book.txt", 0)]]
    hits += [_chunk_hit("usage-general.txt", 0, "u"), _chunk_hit("faq.txt", 2, "f"), _chunk_hit("book.txt", 4, "b")]

    def places(out: list[Hit]) -> list[tuple[str, int]]:
        return [(h.chunk.relative_path, h.chunk.chunk_index) for h in out]

    out = with_named_document(store, None, "the borg quickstart", None, hits)  # type: ignore[arg-type]
    # "quickstart" names one file; "borg", which most chunks hold, names none: its first chunk
    # takes the fifth place, one excerpt more; nothing the search found is dropped.
    assert places(out) == [*places(hits[:4]), ("quickstart.txt", 0), *places(hits[4:])]
    # A file among the first five by a later chunk gets its first chunk before that one.
    out = with_named_document(store, None, "the FAQ", None, hits)  # type: ignore[arg-type]
    assert places(out) == [*places(hits[:4]), ("faq.txt", 0), *places(hits[4:])]
    out = with_named_document(store, None, "the changes", None, hits)  # type: ignore[arg-type]
    assert places(out) == [("changes.txt", 0), *places(hits)]
    # Its first chunk among them already, or a topic naming no file, or two alike: unchanged.
    assert with_named_document(store, None, "the book", None, hits) == hits  # type: ignore[arg-type]
    assert with_named_document(store, None, "retention", None, hits) == hits  # type: ignore[arg-type]
    two = _Named({"usage-prune.txt": 3, "prune-notes.txt": 2, "changes.txt": 40})
    assert with_named_document(two, None, "pruning", None, hits) == hits  # type: ignore[arg-type]


def test_a_summary_reads_a_reference_pages_description_when_its_options_come_first() -> None:
    from locallens.retrieval import lead_chunk

    def chunks(*texts: str) -> list[Chunk]:
        return [_chunk_hit("usage-prune.txt", i, text).chunk for i, text in enumerate(texts)]

    options = "borg prune\n\n--force  force pruning\n\n--list  output a list"
    described = "--save-space  work slower\n\nDescription\n\nThe prune command prunes a repository."
    assert lead_chunk(chunks(options, described, "More.")) == 1
    # A first chunk with its own description title, or no such title in the first three: the first.
    assert lead_chunk(chunks("NAME\n\nDESCRIPTION\n\nvarnishstat shows statistics.", described)) == 0
    assert lead_chunk(chunks(options, "More options.", "Still more.", described)) == 0
    assert lead_chunk([]) == 0

"""The store contract: every `IndexStore` method behaves the same on SQLite and on PostgreSQL.

The tests of the first part run once per store (the `store` fixture); vectors are small hand-made
unit vectors of DIM dimensions whose cosine ranking is known. The second part covers what only
the PostgreSQL store has: its HNSW index against exact search, its errors (unreachable server,
refused login, no index, newer schema), the writer lock, the path filter's translation of GLOB.
The PostgreSQL server is tests/pg.py's, one per session, with a new database per test.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from locallens.domain import Chunk
from locallens.errors import (
    EXIT_DB_AUTH,
    EXIT_DB_UNREACHABLE,
    EXIT_DB_UNSUPPORTED,
    EXIT_LOCKED,
    EXIT_NO_INDEX,
    DatabaseAuthError,
    DatabaseUnreachableError,
    DatabaseUnsupportedError,
    LockedError,
    NoIndexError,
    StoreError,
)
from locallens.storage import (
    Brain,
    DbLocation,
    DocumentRecord,
    IndexStore,
    PostgresURL,
    content_hash,
    open_store,
    parse_db,
)
from locallens.storage import postgres as pgstore
from locallens.storage import postgres_keywords as pgkeywords
from locallens.storage import postgres_schema as pgschema
from locallens.storage.sqlite import WINDOW_SHIFT

from .pg import PASSWORD, PASSWORD_ROLE, PgServer, new_database

DIM = 8


def e(*weights: float) -> np.ndarray:
    """The unit vector along these first coordinates: e(1) is the first axis, e(1, 1) the diagonal."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


def write(
    store: IndexStore,
    brain: Brain,
    path: str,
    texts: Sequence[str],
    vectors: Sequence[np.ndarray],
    *,
    root: str = "/r",
    headers: Sequence[str] | None = None,
    reading: str = "",
) -> list[Chunk]:
    checksum = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    chunks = [
        Chunk(
            id=f"{checksum[:12]}-{i}", brain=brain.name, relative_path=path, chunk_index=i, content=t, checksum=checksum
        )
        for i, t in enumerate(texts)
    ]
    store.write_document(
        brain,
        DocumentRecord(
            root=root,
            relative_path=path,
            size=sum(len(t) for t in texts),
            mtime_ns=1,
            checksum=checksum,
            chunks=chunks,
            vectors=list(vectors),
            headers=headers,
            reading=reading,
        ),
    )
    return chunks


def ranked(store: IndexStore, brain: Brain, query: np.ndarray, k: int = 10, **kwargs: str) -> list[tuple[str, float]]:
    return [(hit.chunk.content, round(hit.score, 4)) for hit in store.knn(brain, query, k, **kwargs)]


def keyword_paths(store: IndexStore, brain: Brain, query: str, **kwargs: str) -> list[str]:
    ids = store.keyword_search(brain, query, 10, **kwargs)
    hits = store.hits_by_id(brain, e(1), ids)
    return [hits[i].chunk.relative_path for i in ids]


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> DbLocation:
    return tmp_path / "index.db" if kind == "sqlite" else parse_db(request.getfixturevalue("pg_url"))


@pytest.fixture()
def store(location: DbLocation) -> Iterator[IndexStore]:
    with open_store(location, create=True) as opened:
        yield opened


@pytest.fixture()
def brain(store: IndexStore) -> Brain:
    return store.create_brain("default", "test-model", DIM, "paragraph", 200, 20)


# -- brains -----------------------------------------------------------------------------------


def test_brains_are_created_found_and_listed(store: IndexStore) -> None:
    created = store.create_brain("default", "test-model", DIM, "paragraph", 200, 20, headers=True)
    assert (created.name, created.model, created.dim, created.chunker) == ("default", "test-model", DIM, "paragraph")
    assert (created.chunk_size, created.chunk_overlap, created.headers, created.multi_vector) == (200, 20, True, False)
    assert created.last_indexed is None and abs(created.created_at - time.time()) < 60
    assert store.find_brain("default") == created == store.get_brain("default")
    assert store.find_brain("nope") is None
    with pytest.raises(NoIndexError, match=r"no brain named 'nope' in .* \(brains: default\)") as err:
        store.get_brain("nope")
    assert err.value.exit_code == EXIT_NO_INDEX
    store.create_brain("Other", "m2", 4, "recursive", 100, 0, multi_vector=True)
    assert [b.name for b in store.brains()] == ["Other", "default"]  # by code point, as SQLite sorts
    store.set_chunking(created, "recursive", 300, 30)
    changed = store.get_brain("default")
    assert (changed.chunker, changed.chunk_size, changed.chunk_overlap) == ("recursive", 300, 30)
    assert store.read_only is False and store.location


def test_touch_brain_records_roots_and_time(store: IndexStore, brain: Brain) -> None:
    store.touch_brain(brain, ["/r2", "/r1"])
    store.touch_brain(brain, ["/r1"])
    assert store.roots(brain) == ["/r1", "/r2"]
    touched = store.get_brain("default").last_indexed
    assert touched is not None and abs(touched - time.time()) < 60
    assert store.stats(brain).roots == ["/r1", "/r2"]


def test_delete_brain_removes_it_and_only_it(store: IndexStore, brain: Brain) -> None:
    other = store.create_brain("other", "test-model", DIM, "paragraph", 200, 20)
    write(store, brain, "a.md", ["alpha text"], [e(1)])
    write(store, other, "b.md", ["beta text"], [e(1)])
    store.touch_brain(brain, ["/r"])
    store.delete_brain(brain)
    assert store.find_brain("default") is None
    assert ranked(store, other, e(1)) == [("beta text", 1.0)]
    again = store.create_brain("default", "test-model", DIM, "paragraph", 200, 20)
    assert store.documents(again) == {} and store.vector_count(again) == 0 and store.roots(again) == []
    assert store.keyword_search(again, "alpha", 5) == []


def test_replace_brain_swaps_in_the_rebuilt_one(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "old.md", ["old text"], [e(1)])
    rebuilt = store.create_brain(".rebuild-default", "test-model", DIM, "paragraph", 200, 20)
    write(store, rebuilt, "new.md", ["new text"], [e(1)])
    store.replace_brain(brain, rebuilt, "default")
    current = store.get_brain("default")
    assert current.id == rebuilt.id and [b.name for b in store.brains()] == ["default"]
    assert ranked(store, current, e(1)) == [("new text", 1.0)]
    assert store.document_paths(current) == ["new.md"]
    fresh = store.create_brain(".fresh", "test-model", DIM, "paragraph", 200, 20)
    store.replace_brain(None, fresh, "second")
    assert [b.name for b in store.brains()] == ["default", "second"]


# -- documents --------------------------------------------------------------------------------


def test_documents_and_their_chunks(store: IndexStore, brain: Brain) -> None:
    a = write(store, brain, "a.md", ["first", "second", "third"], [e(1), e(0, 1), e(0, 0, 1)])
    write(store, brain, "B.md", ["upper"], [e(1)])
    write(store, brain, "b.md", ["lower"], [e(1)], root="/s", reading="text/2+chunks/1")
    docs = store.documents(brain)
    assert [docs[key].reading for key in (("/r", "a.md"), ("/s", "b.md"))] == ["", "text/2+chunks/1"]
    assert set(docs) == {("/r", "a.md"), ("/r", "B.md"), ("/s", "b.md")}
    doc = docs[("/r", "a.md")]
    assert (doc.root, doc.relative_path, doc.size, doc.mtime_ns, doc.checksum) == ("/r", "a.md", 16, 1, a[0].checksum)
    assert store.document_chunks(brain, "a.md") == a
    assert store.document_chunks(brain, "missing.md") == []
    assert store.chunk_by_id(brain, a[1].id) == a[1]
    assert store.chunk_by_id(brain, "nope-0") is None
    assert store.document_paths(brain) == ["B.md", "a.md", "b.md"]
    store.update_document_stat(doc.id, 99, 12345)
    updated = store.documents(brain)[("/r", "a.md")]
    assert (updated.id, updated.size, updated.mtime_ns) == (doc.id, 99, 12345)


def test_rewriting_a_document_replaces_its_chunks(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["old alpha text"], [e(1)])
    new = write(store, brain, "a.md", ["new beta text", "gamma"], [e(1, 1), e(0, 1)])
    assert store.document_chunks(brain, "a.md") == new
    assert len(store.documents(brain)) == 1 and store.documents(brain)[("/r", "a.md")].checksum == new[0].checksum
    assert store.vector_count(brain) == 2
    assert store.keyword_search(brain, "alpha", 5) == []
    assert keyword_paths(store, brain, "beta") == ["a.md"]
    assert [content for content, _ in ranked(store, brain, e(1))] == ["new beta text", "gamma"]


def test_delete_documents(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["alpha"], [e(1)])
    write(store, brain, "b.md", ["beta"], [e(0, 1)])
    store.delete_documents(brain, [store.documents(brain)[("/r", "a.md")].id])
    assert list(store.documents(brain)) == [("/r", "b.md")]
    assert store.vector_count(brain) == 1 and store.keyword_search(brain, "alpha", 5) == []
    assert ranked(store, brain, e(1)) == [("beta", 0.0)]
    assert store.reusable_vectors(brain, [content_hash("alpha")]) == {}


def test_forget_roots_drops_the_roots_and_the_documents_in_one_go(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["alpha"], [e(1)])
    write(store, brain, "b.md", ["beta"], [e(0, 1)], root="/s")
    store.touch_brain(brain, ["/r", "/s"])
    store.forget_roots(brain, ["/r"], [store.documents(brain)[("/r", "a.md")].id])
    assert store.roots(brain) == ["/s"] and list(store.documents(brain)) == [("/s", "b.md")]
    assert store.vector_count(brain) == 1 and store.keyword_search(brain, "alpha", 5) == []
    store.forget_roots(brain, ["/s"], [])  # a root with no documents left
    assert store.roots(brain) == [] and len(store.documents(brain)) == 1


# -- vectors ----------------------------------------------------------------------------------


def test_knn_ranks_by_cosine_similarity_ties_in_insertion_order(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["same", "diagonal", "orthogonal", "opposite"], [e(1), e(1, 1), e(0, 1), e(-1)])
    write(store, brain, "b.md", ["diagonal again"], [e(1, 1)])
    expected = [("same", 1.0), ("diagonal", 0.7071), ("diagonal again", 0.7071), ("orthogonal", 0.0)]
    assert ranked(store, brain, e(1)) == [*expected, ("opposite", -1.0)]
    assert ranked(store, brain, e(1), 3) == expected[:3]  # (which of two tied rows a cut keeps is not fixed)
    assert store.knn(brain, e(1), 0) == []
    assert store.vector_count(brain) == 5


def test_knn_path_filter_is_applied_inside_the_search(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "notes/a.md", ["a"], [e(1)])
    write(store, brain, "notes/sub/b.txt", ["b"], [e(1, 0.3)])
    write(store, brain, "other/c.md", ["c"], [e(1, 0.1)])

    def found(glob: str) -> list[str]:
        return [content for content, _ in ranked(store, brain, e(1), 2, path_glob=glob)]

    assert found("notes/*") == ["a", "b"]  # `*` crosses folders, as in GLOB
    assert found("*.md") == ["a", "c"]
    assert found("notes/[ab].md") == found("notes/?.md") == ["a"]
    assert found("*/[^a]*") == ["c", "b"]
    assert found("NOTES/*") == found("nothing/*") == found("[") == []


def test_hits_by_id_scores_like_knn(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["xray", "yankee", "zulu"], [e(1), e(1, 1), e(0, 1)])
    ids = store.keyword_search(brain, "xray yankee zulu", 10)
    assert len(ids) == 3
    hits = store.hits_by_id(brain, e(1), ids)
    by_content = {hit.chunk.content: round(hit.score, 4) for hit in hits.values()}
    assert by_content == dict(ranked(store, brain, e(1)))
    assert store.hits_by_id(brain, e(1), []) == {}


def test_multi_vector_chunks_score_as_their_best_window(store: IndexStore) -> None:
    brain = store.create_brain("multi", "test-model", DIM, "paragraph", 200, 20, multi_vector=True)
    windows = np.stack([e(0, 1), e(1)])
    write(store, brain, "a.md", ["windows", "single"], [windows, e(1, 1)])
    write(store, brain, "b.md", ["other"], [e(0, 0, 1)])
    assert ranked(store, brain, e(1), 2) == [("windows", 1.0), ("single", 0.7071)]
    assert ranked(store, brain, e(0, 1), 1) == [("windows", 1.0)]
    assert ranked(store, brain, e(1), 5, path_glob="a.md") == [("windows", 1.0), ("single", 0.7071)]
    assert store.vector_count(brain) == 3  # chunks, not windows
    hits = store.hits_by_id(brain, e(1), store.keyword_search(brain, "windows single", 5))
    assert sorted((h.chunk.content, round(h.score, 4)) for h in hits.values()) == [
        ("single", 0.7071),
        ("windows", 1.0),
    ]
    reused = store.reusable_vectors(brain, [content_hash("windows"), content_hash("single")])
    assert reused[content_hash("windows")].shape == (2, DIM)
    np.testing.assert_array_equal(reused[content_hash("windows")], windows)
    np.testing.assert_array_equal(reused[content_hash("single")], e(1, 1))


def test_reusable_vectors_by_content_hash(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "a.md", ["kept text"], [e(1, 2, 3)])
    reused = store.reusable_vectors(brain, [content_hash("kept text"), content_hash("unknown")])
    assert list(reused) == [content_hash("kept text")]
    assert reused[content_hash("kept text")].dtype == np.float32
    np.testing.assert_array_equal(reused[content_hash("kept text")], e(1, 2, 3))
    assert store.reusable_vectors(brain, []) == {}


# -- keywords ---------------------------------------------------------------------------------

KEYWORD_NOTES = {
    "en.md": "The printer is on the second floor, next to the kitchen.",
    "es.md": "La canción de la mañana se escucha en el jardín.",
    "policy.md": "Policy NWL-CY-22871 covers water damage; policy NWL-CY-22872 does not.",
    "scrambled.md": "Codes 22871 CY NWL in another order.",
    "ip.md": "The gateway is 192.168.1.10 on port 443; the old one was 192.168.1.100.",
    "old-ip.md": "The backup gateway is 192.168.1.100.",
    "zh.md": "打印机位于三楼的复印室。打印文件前请先刷工卡。",
    "ja.md": "プリンターは二階の会議室の隣にあります。VPNの設定は情報システム部へ。",
    "ko.md": "서버 주소는 10.20.0.15입니다. 서버가 매주 일요일에 재시작됩니다.",
}


@pytest.fixture()
def notes(store: IndexStore, brain: Brain) -> Brain:
    for n, (path, text) in enumerate(KEYWORD_NOTES.items()):
        write(store, brain, path, [text], [e(*([0] * (n % DIM)), 1)])
    return brain


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kitchen", ["en.md"]),
        ("canción", ["es.md"]),
        ("cancion MAÑANA", ["es.md"]),  # case and diacritics do not matter
        ("NWL-CY-22871", ["policy.md"]),  # a phrase: the same parts in another order do not match
        ("192.168.1.10", ["ip.md"]),
    ],
)
def test_keyword_search_finds_words_and_phrases(
    store: IndexStore, notes: Brain, query: str, expected: list[str]
) -> None:
    assert keyword_paths(store, notes, query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("打印", "zh.md"),  # a 2-character word inside a run of Han
        ("打印机在哪里", "zh.md"),
        ("VPN 設定", "ja.md"),  # a Latin word glued to Japanese text
        ("서버 주소", "ko.md"),
    ],
)
def test_keyword_search_finds_words_inside_cjk_text(store: IndexStore, notes: Brain, query: str, expected: str) -> None:
    assert keyword_paths(store, notes, query)[:1] == [expected]


def test_keyword_search_syntax_in_a_question_cannot_break_it(store: IndexStore, notes: Brain) -> None:
    queries = ['"unbalanced', "a & b | !c", "NEAR(x y)", "printer:*", "(", "'", "\\", "-", "AND OR NOT"]
    for query in [*queries, '打印"机', "。、！", "打印 & !机:*"]:
        store.keyword_search(notes, query, 5)
    assert store.keyword_search(notes, "", 5) == store.keyword_search(notes, "printer", 0) == []
    assert keyword_paths(store, notes, "printer's kitchen?") == ["en.md"]


def test_keyword_search_path_filter(store: IndexStore, notes: Brain) -> None:
    assert sorted(keyword_paths(store, notes, "gateway")) == ["ip.md", "old-ip.md"]
    assert keyword_paths(store, notes, "gateway", path_glob="old-*") == ["old-ip.md"]
    assert keyword_paths(store, notes, "gateway", path_glob="[") == []


def test_keyword_search_indexes_headers(store: IndexStore) -> None:
    brain = store.create_brain("h", "test-model", DIM, "paragraph", 200, 20, headers=True)
    write(store, brain, "a.md", ["body text"], [e(1)], headers=["Quarterly Report"])
    assert keyword_paths(store, brain, "quarterly") == ["a.md"]


@pytest.mark.parametrize(
    "query",
    [
        "gateway",
        "printer kitchen gateway",
        "NWL-CY-22871 policy",
        "canción jardín",
        "192.168.1.10 port",
        "打印",
        "VPN 設定",
    ],
)
def test_keyword_scores_are_keyword_search_with_its_scores(store: IndexStore, notes: Brain, query: str) -> None:
    scores = store.keyword_scores(notes, query, 10)
    assert scores and [chunk_id for chunk_id, _ in scores] == store.keyword_search(notes, query, 10)
    values = [score for _, score in scores]
    assert all(isinstance(score, float) and score > 0 for score in values), scores
    assert values == sorted(values, reverse=True)  # best first; ties allowed
    assert store.keyword_scores(notes, query, 1) == scores[:1]


def test_keyword_scores_are_higher_for_better_matches_and_filtered(store: IndexStore, brain: Brain) -> None:
    write(store, brain, "both.md", ["Rotate the audit logs every night."], [e(1)])
    write(store, brain, "one.md", ["Rotate the tyres every spring."], [e(1)])
    write(store, brain, "sub/other.md", ["Audit logs are kept for a year."], [e(1)])
    scores = store.keyword_scores(brain, "rotate audit logs", 10)
    paths = keyword_paths(store, brain, "rotate audit logs")
    assert paths[0] == "both.md" and set(paths) == {"both.md", "one.md", "sub/other.md"}
    assert scores[0][1] > scores[-1][1]
    filtered = store.keyword_scores(brain, "rotate audit logs", 10, path_glob="sub/*")
    assert len(filtered) == 1 and filtered[0][0] in {chunk_id for chunk_id, _ in scores}
    assert store.keyword_scores(brain, "", 5) == store.keyword_scores(brain, "rotate", 0) == []
    assert store.keyword_scores(brain, "rotate", 5, path_glob="[") == []


def test_keyword_scores_weigh_rare_words_over_repeated_common_ones(store: IndexStore, brain: Brain) -> None:
    # BM25 in both stores: "zebra" is in one chunk of eight, "report" in all of them, so the chunk
    # with the rare word comes first even though another repeats the common one five times.
    write(store, brain, "repeats.md", ["report report report report report"], [e(1)])
    write(store, brain, "rare.md", ["zebra report"], [e(1)])
    for n in range(6):
        write(store, brain, f"r{n}.md", [f"report number {n}"], [e(1)])
    assert keyword_paths(store, brain, "report zebra")[:2] == ["rare.md", "repeats.md"]
    write(store, brain, "more.md", ["zebra zebra crossing"], [e(1)])  # the same store object
    assert keyword_paths(store, brain, "zebra")[0] == "more.md"


def write_shell_notes(store: IndexStore, brain: Brain) -> None:
    """Four notes sharing a symbol search's question words and none of its symbols."""
    for n in range(4):
        write(store, brain, f"n{n}.md", [f"The shell keeps status {n} of the last command."], [e(1)])


def test_keyword_search_finds_a_symbol_the_question_names_as_written(store: IndexStore, brain: Brain) -> None:
    # No word index holds "$?" or "<<<": the chunks holding them as written are found by a scan
    # and their ranking fused with the words'. "$ ? 2" holds both characters, not the symbol.
    write(
        store, brain, "status.md", ["Special parameter ($?) expands to the exit status of the last pipeline."], [e(1)]
    )
    write(store, brain, "prompt.md", ["The prompt shows $ and asks ? when the last status is 2."], [e(1)])
    write(store, brain, "here.md", ["A here string: cat <<< word feeds word to the command."], [e(1)])
    write(store, brain, "sub/status.md", ["In scripts, test $? after each command; $? is reset."], [e(1)])
    write_shell_notes(store, brain)
    assert keyword_paths(store, brain, "What does $? hold?")[:2] == ["sub/status.md", "status.md"]
    assert "prompt.md" in keyword_paths(store, brain, "what does the prompt show")
    assert keyword_paths(store, brain, "What is <<< for?")[0] == "here.md"
    assert keyword_paths(store, brain, "What does $? hold?", path_glob="sub/*") == ["sub/status.md"]
    # A question without a symbol is searched by its words alone, as before.
    assert keyword_paths(store, brain, "exit pipeline") == ["status.md"]


def test_keyword_search_finds_a_construct_by_its_shape(store: IndexStore, brain: Brain) -> None:
    # "${#var}" and the manual's "${#parameter}" are one construct (`text.shapes`): the chunk
    # writing it is found though no word of the question is in it; one holding its pieces
    # apart ("${" here, "#" there) is not.
    write(store, brain, "length.md", ["${#parameter} gives the length in characters of the value."], [e(1)])
    write(store, brain, "default.md", ["${parameter:-word} uses a default value when unset."], [e(1)])
    write(store, brain, "apart.md", ["Write ${HOME} in a path; a # starts a comment} here."], [e(1)])
    write_shell_notes(store, brain)
    assert keyword_paths(store, brain, "What does ${#var} give me?") == ["length.md"]
    assert keyword_paths(store, brain, "What does ${var:-default} do?")[0] == "default.md"


def test_keyword_search_finds_a_key_chord_in_any_notation(store: IndexStore, brain: Brain) -> None:
    # A question's "Ctrl-R" is a manual's "^R" or "C-r" (`text.chords`); "-r" as an option and
    # "^Rest" are not it, though a scan's first test lets them through.
    write(store, brain, "zle.md", ["history-incremental-search-backward (^R ^Xr) searches the history."], [e(1)])
    write(store, brain, "readline.md", ["reverse-search-history (C-r) searches the history."], [e(1)])
    write(store, brain, "rm.md", ["rm -r removes directories; +r grants reading; ^Rest is a word."], [e(1)])
    write_shell_notes(store, brain)
    assert sorted(keyword_paths(store, brain, "Which widget does Ctrl-R run?")) == ["readline.md", "zle.md"]
    assert keyword_paths(store, brain, "What does C-d do, and M-f?") == []


def test_a_symbol_is_not_scanned_for_past_the_brains_size_cap(
    store: IndexStore, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    import locallens.storage.types

    for n in range(4):
        write(store, brain, f"s{n}.md", [f"Parameter {n}: ($?) expands to the exit status; ^R searches."], [e(1)])
    assert len(keyword_paths(store, brain, "What does $? hold?")) == 4
    assert len(keyword_paths(store, brain, "What does Ctrl-R do?")) == 4
    # A chord's scan, several times as long as a symbol's, stops at a smaller brain.
    monkeypatch.setattr(locallens.storage.types, "CHORD_SCAN_MAX_CHUNKS", 3)
    assert keyword_paths(store, brain, "What does Ctrl-R do?") == []  # its words match nothing
    assert len(keyword_paths(store, brain, "What does $? hold?")) == 4
    monkeypatch.setattr(locallens.storage.types, "SYMBOL_SCAN_MAX_CHUNKS", 3)
    assert keyword_paths(store, brain, "What does $? hold?") == []


STEMMED_NOTES = {
    "pool.md": "Each connection to the database comes from the pool.",
    "index.md": "The documents were indexed overnight.",
    "config.md": "See the configuration reference for every setting.",
    "rotate.md": "Logs rotate at midnight.",
    "other.md": "Nothing of interest here.",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("connections", "pool.md"),  # plural of the indexed word
        ("connected", "pool.md"),
        ("indexing", "index.md"),  # another inflection of "indexed"
        ("configured", "config.md"),  # configured, configuration -> configur
        ("rotation", "rotate.md"),
        ("log", "rotate.md"),
        ("CONNECTIONS", "pool.md"),
        ("connection-pool", None),  # a phrase of stems: "connection pool" is not in the text
        ("connection pool", "pool.md"),
    ],
)
def test_keyword_search_matches_other_inflections(
    store: IndexStore, brain: Brain, query: str, expected: str | None
) -> None:
    for path, text in STEMMED_NOTES.items():
        write(store, brain, path, [text], [e(1)])
    assert keyword_paths(store, brain, query) == ([expected] if expected else [])


def test_term_counts_count_the_brains_chunks_holding_each_word(store: IndexStore, brain: Brain) -> None:
    # What the answer's refusal weighs a question's missing word by: stemmed as the keyword
    # search stems it, a word with inner punctuation as a phrase, counting stops at the cap, and
    # another brain's chunks do not count.
    for path, text in STEMMED_NOTES.items():
        write(store, brain, path, [text], [e(1)])
    write(store, brain, "more.md", ["More connections: the pool grew.", "connection-pool tuning"], [e(1), e(1)])
    other = store.create_brain("other", "test-model", DIM, "paragraph", 200, 20)
    write(store, other, "zebra.md", ["zebra connections"], [e(1)])
    total, counts = store.term_counts(brain, ["connections", "Loki", "connection-pool", "the", "--", "zebra"], 2)
    assert total == 7
    assert counts == {"connections": 2, "Loki": 0, "connection-pool": 1, "the": 2, "--": 0, "zebra": 0}
    assert store.term_counts(brain, ["the"], 10)[1] == {"the": 4}
    assert store.term_counts(other, ["connection"], 10) == (1, {"connection": 1})


# -- sentence cache, reporting, export --------------------------------------------------------


def test_sentence_cache_round_trip(store: IndexStore) -> None:
    first, second = hashlib.sha256(b"1").digest(), hashlib.sha256(b"2").digest()
    store.cache_sentence_vectors("m", [(first, e(1)), (second, e(0, 1))])
    store.cache_sentence_vectors("m", [(first, e(0, 0, 1))])  # already cached: kept as it was
    found = store.cached_sentence_vectors("m", [first, second, b"missing"])
    assert set(found) == {first, second}
    np.testing.assert_array_equal(found[first], e(1))
    assert store.cached_sentence_vectors("other-model", [first]) == {}
    assert store.try_cache_sentence_vectors("m", [(b"third", e(1, 1))]) is True
    np.testing.assert_array_equal(store.cached_sentence_vectors("m", [b"third"])[b"third"], e(1, 1))


def test_stats_and_sizes(store: IndexStore) -> None:
    brain = store.create_brain("multi", "test-model", DIM, "paragraph", 200, 20, multi_vector=True)
    write(store, brain, "a.md", ["one", "two"], [np.stack([e(1), e(0, 1)]), e(1)])
    write(store, brain, "b.md", ["three"], [e(1)])
    store.touch_brain(brain, ["/r"])
    stats = store.stats(brain)
    assert (stats.brain.name, stats.roots, stats.documents, stats.chunks) == ("multi", ["/r"], 2, 3)
    assert stats.vectors == 3 and stats.fts_rows == 3
    assert store.size_bytes() > 0 and store.free_bytes() >= 0


def test_export_refuses_a_chunk_that_lost_a_window_vector(kind: str, store: IndexStore) -> None:
    multi = store.create_brain("multi", "test-model", DIM, "paragraph", 200, 20, multi_vector=True)
    write(store, multi, "a.md", ["one", "two"], [np.stack([e(1), e(0, 1)]), e(1)])
    assert [np.shape(v) for doc in store.export_documents(multi) for v in doc.vectors] == [(2, DIM), (DIM,)]
    # The second window of the first chunk goes missing (the database damaged by hand).
    if kind == "sqlite":
        window = store.execute("SELECT id FROM chunks WHERE chunk_index = 0")[0][0] + (1 << WINDOW_SHIFT)
        store.conn.execute(f"DELETE FROM {multi.vec_table} WHERE rowid = ?", (window,))  # type: ignore[attr-defined]
    else:
        store.conn.execute(f"DELETE FROM {pgstore.SCHEMA}.{multi.vec_table} WHERE win = 1")  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match=r"chunk \S+ of a\.md has lost its vector"):
        list(store.export_documents(multi))


def test_export_then_write_elsewhere_gives_the_same_index(
    kind: str, store: IndexStore, brain: Brain, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    multi = store.create_brain("multi", "test-model", DIM, "paragraph", 200, 20, headers=True, multi_vector=True)
    for target in (brain, multi):
        first = np.stack([e(1), e(1, 1)]) if target.multi_vector else e(1)
        write(store, target, "a.md", ["alpha one", "beta two"], [first, e(0, 1)])
        write(store, target, "sub/b.md", ["gamma three"], [e(1, 0, 1)], root="/s", headers=["Title"])
    other_location = (
        parse_db(new_database(request.getfixturevalue("pg_server"))) if kind == "sqlite" else tmp_path / "other.db"
    )
    with open_store(other_location, create=True) as other:
        for source in (brain, multi):
            copy = other.create_brain(
                source.name,
                source.model,
                source.dim,
                source.chunker,
                source.chunk_size,
                source.chunk_overlap,
                headers=source.headers,
                multi_vector=source.multi_vector,
            )
            exported = list(store.export_documents(source))
            assert [(d.root, d.relative_path) for d in exported] == [("/r", "a.md"), ("/s", "sub/b.md")]
            for doc in exported:
                other.write_document(copy, doc)
            again = list(other.export_documents(copy))
            for before, after in zip(exported, again, strict=True):
                assert (before.chunks, before.headers, before.hashes) == (after.chunks, after.headers, after.hashes)
                assert (before.size, before.mtime_ns, before.checksum) == (after.size, after.mtime_ns, after.checksum)
                for left, right in zip(before.vectors, after.vectors, strict=True):
                    np.testing.assert_array_equal(left, right)
            assert exported[0].vectors[0].shape == ((2, DIM) if source.multi_vector else (DIM,))
            for query in (e(1), e(0, 1), e(1, 0, 1)):
                assert ranked(other, copy, query) == ranked(store, source, query)
            assert keyword_paths(other, copy, "gamma") == keyword_paths(store, source, "gamma") == ["sub/b.md"]


# -- PostgreSQL only --------------------------------------------------------------------------


def _random_unit(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_exact_search_equals_sqlite_and_hnsw_recall(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dim, docs, per_doc = 32, 20, 100
    rng = np.random.default_rng(7)
    vectors = _random_unit(rng, docs * per_doc, dim)
    queries = _random_unit(rng, 20, dim)
    stores = {"sqlite": open_store(tmp_path / "index.db", create=True), "pg": open_store(parse_db(pg_url), create=True)}
    brains = {}
    for name, opened in stores.items():
        brains[name] = brain = opened.create_brain("default", "random", dim, "paragraph", 200, 20)
        for d in range(docs):
            path = f"d{d}.md"
            chunks = [
                Chunk(id=f"d{d}-{i}", brain="default", relative_path=path, chunk_index=i, content="c", checksum=path)
                for i in range(per_doc)
            ]
            part = vectors[d * per_doc : (d + 1) * per_doc]
            opened.write_document(
                brain,
                DocumentRecord(
                    root="/r", relative_path=path, size=1, mtime_ns=1, checksum=path, chunks=chunks, vectors=part
                ),
            )

    def top(name: str, query: np.ndarray, opened: IndexStore | None = None) -> list[tuple[str, float]]:
        return [(h.chunk.id, h.score) for h in (opened or stores[name]).knn(brains[name], query, 10)]

    try:
        # Under EXACT_BELOW_VECTORS the PostgreSQL store scans: SQLite's ranking, up to float rounding.
        for query in queries:
            exact, reference = top("pg", query), top("sqlite", query)
            assert [i for i, _ in exact] == [i for i, _ in reference]
            np.testing.assert_allclose([s for _, s in exact], [s for _, s in reference], atol=1e-5)
        monkeypatch.setattr(pgstore, "EXACT_BELOW_VECTORS", 0)
        stores["pg"].touch_brain(brains["pg"], ["/r"])  # the end of a run: builds the HNSW index
        recall = [
            len({i for i, _ in top("pg", query)} & {i for i, _ in top("sqlite", query)}) / 10 for query in queries
        ]
        assert np.mean(recall) >= 0.9, recall
        with open_store(parse_db(pg_url, exact=True)) as exact_store:
            for query in queries[:5]:
                assert [i for i, _ in top("pg", query, exact_store)] == [i for i, _ in top("sqlite", query)]
    finally:
        for opened in stores.values():
            opened.close()


def test_the_hnsw_index_is_built_when_a_run_ends_on_a_large_enough_brain(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setattr(pgstore, "EXACT_BELOW_VECTORS", 3)

    def indexed(name: str) -> bool:
        with psycopg.connect(pg_url) as conn:
            return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"locallens.{name}_hnsw",)).fetchone() == (True,)

    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        write(store, brain, "a.md", ["x", "y"], [e(1), e(0, 1)])
        store.touch_brain(brain, ["/r"])
        assert not indexed(brain.vec_table)  # 2 vectors: searches scan them
        write(store, brain, "b.md", ["z"], [e(1, 1)])
        assert not indexed(brain.vec_table)  # built at the end of a run, not row by row
        store.touch_brain(brain, ["/r"])
        assert indexed(brain.vec_table)
        assert ranked(store, brain, e(1), 2) == [("x", 1.0), ("z", 0.7071)]
        write(store, brain, "c.md", ["w"], [e(1, 0.1)])  # from now on the index follows every write
        assert ranked(store, brain, e(1), 2) == [("x", 1.0), ("w", 0.995)]
        wide = store.create_brain("wide", "m", pgstore.HNSW_MAX_DIM + 1, "paragraph", 200, 20)
        write(store, wide, "a.md", ["a", "b", "c"], [np.ones(pgstore.HNSW_MAX_DIM + 1, np.float32)] * 3)
        store.touch_brain(wide, ["/r"])
        assert not indexed(wide.vec_table)  # too many dimensions for HNSW: always exact
        assert len(store.knn(wide, np.ones(pgstore.HNSW_MAX_DIM + 1, np.float32), 2)) == 2


def test_only_the_approximate_query_can_use_the_index(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    monkeypatch.setattr(pgstore, "EXACT_BELOW_VECTORS", 0)
    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        write(store, brain, "a.md", ["x", "y"], [e(1), e(0, 1)])
        store.touch_brain(brain, ["/r"])
    table = f"{pgstore.SCHEMA}.{brain.vec_table}"
    params = {"q": f"[{','.join(map(str, e(1)))}]", "limit": 5, "brain": brain.id, "pattern": "^a"}
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")  # even so, an exact query cannot use HNSW
        for approximate, multi, filtered in [(True, False, False), (False, False, False), (False, True, True)]:
            sql = pgstore.nearest_sql(table, approximate=approximate, multi_vector=multi, filtered=filtered)
            plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + sql.replace("%(q)s", "%(q)s::vector"), params))
            assert (f"{brain.vec_table}_hnsw" in plan) == approximate, plan


def test_an_empty_database_is_no_index_and_is_left_untouched(pg_url: str) -> None:
    import psycopg

    url = parse_db(pg_url)
    with pytest.raises(NoIndexError) as err:
        open_store(url)
    assert str(err.value) == f"no index at {url}: run `locallens index PATH` first (or pass --db)"
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regnamespace('locallens')").fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (0,)


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    import psycopg

    url = parse_db(pg_url)
    open_store(url, create=True).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE locallens.meta SET value = '99' WHERE key = 'schema_version'")
    for create in (False, True):
        with pytest.raises(StoreError, match=r"written by a newer locallens \(schema 99\); upgrade locallens"):
            open_store(url, create=create)


def test_a_schema_1_database_gets_stemmed_keywords_when_opened(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    url = parse_db(pg_url)
    texts = [f"Chunk {n}: the documents were indexed." for n in range(20)]
    with monkeypatch.context() as schema_1:  # keyword rows as schema 1 wrote them: words unstemmed
        schema_1.setattr(pgkeywords, "porter_stem", lambda word: word)
        with open_store(url, create=True) as store:
            brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20, headers=True)
            write(store, brain, "pool.md", ["Each connection comes from the pool."], [e(1)], headers=["Connections"])
            write(store, brain, "index.md", texts, [e(0, 1)] * len(texts))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE locallens.meta SET value = '1' WHERE key = 'schema_version'")
        (before,) = conn.execute("SELECT tsv::text FROM locallens.chunks WHERE relative_path = 'pool.md'").fetchone()
    assert "'connection'" in before and "'connect'" not in before

    monkeypatch.setattr(pgschema, "_RETOKENISE_BATCH", 7)  # 21 chunks: several batches
    with open_store(url) as store:
        brain = store.get_brain("default")
        assert keyword_paths(store, brain, "connected") == ["pool.md"]
        assert len(store.keyword_search(brain, "indexing", 50)) == len(texts)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT value FROM locallens.meta WHERE key = 'schema_version'").fetchone() == (
            str(pgstore.SCHEMA_VERSION),
        )
        rows = conn.execute("SELECT id, header, content FROM locallens.chunks").fetchall()
        stale = conn.execute(
            "SELECT c.id FROM locallens.chunks c JOIN unnest(%s::bigint[], %s::text[]) AS t(id, tsv) ON c.id = t.id"
            " WHERE c.tsv <> t.tsv::tsvector",
            ([row[0] for row in rows], [pgstore.tsvector_text(row[1], row[2]) for row in rows]),
        ).fetchall()
        assert len(rows) == 21 and stale == []
        (after,) = conn.execute("SELECT tsv::text FROM locallens.chunks WHERE relative_path = 'pool.md'").fetchone()
    assert after == "'come':4 'connect':1,3 'each':2 'from':5 'pool':7 'the':6"  # header first


def test_two_first_opens_at_once_create_the_schema_once(pg_url: str) -> None:
    url = parse_db(pg_url)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def first_open() -> None:
        barrier.wait()
        try:
            open_store(url, create=True).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_open) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_an_unreachable_server() -> None:
    url = PostgresURL("postgresql://locallens:hunter2-secret@127.0.0.1:1/index")
    with pytest.raises(DatabaseUnreachableError) as err:
        open_store(url)
    assert err.value.exit_code == EXIT_DB_UNREACHABLE
    assert str(err.value).startswith("cannot connect to postgresql://locallens:***@127.0.0.1:1/index: ")
    assert "hunter2" not in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DatabaseUnreachableError), pgstore.writer_lock(url, "default", 0):
        pass


def test_without_psycopg_the_message_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now raises ImportError
    with pytest.raises(DatabaseUnsupportedError, match=r"pip install 'locallens\[postgres\]'") as err:
        open_store(parse_db("postgresql://u:pw@127.0.0.1:1/index"))
    assert err.value.exit_code == EXIT_DB_UNSUPPORTED


def test_a_refused_login_never_shows_the_password(pg_server: PgServer, pg_url: str) -> None:
    database = urlsplit(pg_url).path.lstrip("/")
    url = parse_db(pg_server.url(database, PASSWORD_ROLE, "wrong-" + PASSWORD))
    with pytest.raises(DatabaseAuthError, match="password authentication failed") as err:
        open_store(url)
    assert err.value.exit_code == EXIT_DB_AUTH and PASSWORD not in str(err.value)
    assert f"{PASSWORD_ROLE}:***@" in str(err.value)
    with pytest.raises(DatabaseAuthError, match="database 'no_such_db' does not exist") as err:
        open_store(parse_db(pg_server.url("no_such_db")))
    assert err.value.exit_code == EXIT_DB_AUTH


def test_a_role_without_privileges_and_a_read_only_role(pg_server: PgServer, pg_url: str) -> None:
    import psycopg

    open_store(parse_db(pg_url), create=True).close()
    database = urlsplit(pg_url).path.lstrip("/")
    url = parse_db(pg_server.url(database, PASSWORD_ROLE, PASSWORD))
    with pytest.raises(DatabaseAuthError, match="permission denied for schema locallens") as err:
        open_store(url)
    assert PASSWORD not in str(err.value)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA locallens TO {PASSWORD_ROLE}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA locallens TO {PASSWORD_ROLE}")
    with open_store(url) as reader:
        assert reader.read_only is True
        assert reader.brains() == []
        assert reader.try_cache_sentence_vectors("m", [(b"h", e(1))]) is False


def test_the_sentence_cache_is_skipped_when_locked(pg_url: str) -> None:
    import psycopg

    with open_store(parse_db(pg_url), create=True) as store, psycopg.connect(pg_url, autocommit=True) as other:
        with other.transaction():
            other.execute("LOCK TABLE locallens.sentence_cache IN ACCESS EXCLUSIVE MODE")
            start = time.monotonic()
            assert store.try_cache_sentence_vectors("m", [(b"h", e(1))]) is False
            assert time.monotonic() - start < 2
        assert store.try_cache_sentence_vectors("m", [(b"h", e(1))]) is True
        assert list(store.cached_sentence_vectors("m", [b"h"])) == [b"h"]


def test_writer_lock_is_per_brain_and_released_on_close(pg_url: str) -> None:
    url = PostgresURL(pg_url)
    with pgstore.writer_lock(url, "default", 0):
        start = time.monotonic()
        with pytest.raises(LockedError) as err, pgstore.writer_lock(url, "default", 0.5):
            pass
        assert 0.45 <= time.monotonic() - start < 3
        assert err.value.exit_code == EXIT_LOCKED
        assert str(err.value) == (
            f"brain 'default' in {url} is being indexed by another run; waited 0.5s (raise --wait to wait longer)"
        )
        with pgstore.writer_lock(url, "other", 0):
            pass

    acquired, released = threading.Event(), threading.Event()

    def hold() -> None:
        with pgstore.writer_lock(url, "default", 0):
            acquired.set()
            released.wait(10)
            time.sleep(0.3)

    holder = threading.Thread(target=hold)
    holder.start()
    assert acquired.wait(10)
    start = time.monotonic()
    released.set()
    with pgstore.writer_lock(url, "default", 10):
        assert 0.2 <= time.monotonic() - start < 5
    holder.join()


def test_the_path_filter_matches_what_sqlite_glob_matches(pg_url: str) -> None:
    import psycopg

    patterns = ["*.md", "docs/*", "a?c", "[abc]*", "[^a]*", "[]]x", "[a-c]*", "[z-a]*", "[^]*", "*[", "x[-a]"]
    patterns += ["%_*", "(a)*", "a.b", "ü*", "*\\*", "[a-]*", "[]-a]*", "{a,b}", "a+b", "$x^", "[!-/]*", "[^]-a]*"]
    patterns += ["*[.]*", "a[\\]b", "*", "", "[[]*", "a]b", "[a-c-e]*", "*|*", "a{2}"]
    paths = ["a.md", "docs/x.md", "abc", "aXc", "b", "]x", "-", "x-", "xa", "%_z", "(a)q", "a.b", "axb", "über"]
    paths += ["q*", "\\", "a-b", "[", "a]b", "{a,b}", "a+b", "$x^", "!", "/x", ".", "ü", "a\\b", "]", "d", "e", "a|b"]
    paths += ["aa", "a{2}"]
    reference = sqlite3.connect(":memory:")
    with psycopg.connect(pg_url) as conn:
        for pattern in patterns:
            regex = pgstore.glob_regex(pattern)
            for path in paths:
                (expected,) = reference.execute("SELECT ? GLOB ?", (path, pattern)).fetchone()
                got = regex is not None and conn.execute("SELECT %s ~ %s", (path, regex)).fetchone() == (True,)
                assert got == bool(expected), (pattern, path, regex)


def test_common_words_are_counted_out_from_prune_min_chunks(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # No ANALYZE: the planner's statistics know nothing; the counts alone find `the` common.
    texts = [f"the the the note {n}" for n in range(30)] + ["the zebra"]
    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        write(store, brain, "a.md", texts, [e(1)] * len(texts))
        assert len(store.keyword_search(brain, "the zebra", 50)) == 31  # below PRUNE_MIN_CHUNKS: all scored
        monkeypatch.setattr(pgkeywords, "PRUNE_MIN_CHUNKS", 20)
        assert len(store.keyword_search(brain, "the zebra", 50)) == 1
        assert len(store.keyword_search(brain, "the note", 50)) == 30  # all common: the rarer stays
        assert len(store.keyword_search(brain, "the", 50)) == 31
        assert len(store.keyword_search(brain, "zebra-the", 50)) == 0  # a phrase is never left out
        assert store.keywords._stats(brain)[0] == 31
        write(store, brain, "b.md", ["the zebra again"], [e(1)])
        assert store.keywords._stats(brain)[0] == 32  # a write forgets the cached counts


def test_term_counts_are_kept_until_a_write(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"the note {n}" for n in range(30)] + ["the zebra"]
    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        write(store, brain, "a.md", texts, [e(1)] * len(texts))
        calls: list[str] = []
        execute = store.keywords.execute
        monkeypatch.setattr(
            store.keywords, "execute", lambda sql, *a, **k: (calls.append(sql), execute(sql, *a, **k))[1]
        )
        counting = lambda: sum("count(*) FROM (SELECT 1" in sql for sql in calls)  # noqa: E731
        assert store.keywords._term_counts(brain, ["'the'", "'zebra'", "'absent'"], 5) == {"'the'": 5, "'zebra'": 1}
        assert store.keywords._term_counts(brain, ["'zebra'", "'the'", "'absent'"], 3) == {"'the'": 3, "'zebra'": 1}
        assert counting() == 1  # kept, and a lower cap is answered from them
        assert store.keywords._term_counts(brain, ["'the'", "'zebra'"], 100) == {"'the'": 31, "'zebra'": 1}
        assert counting() == 2  # `the` stopped at 5: counted again for a higher cap
        assert store.keywords._term_counts(brain, ["'zebra'"], 100) == {"'zebra'": 1}
        assert counting() == 2
        write(store, brain, "b.md", ["the zebra again"], [e(1)])
        assert store.keywords._term_counts(brain, ["'zebra'"], 100) == {"'zebra'": 2}  # a write forgets them
        assert counting() == 3
        monkeypatch.setattr(pgkeywords, "KEYWORD_STATS_TTL_S", 0.0)
        assert store.keywords._term_counts(brain, ["'zebra'"], 100) == {"'zebra'": 2}
        assert counting() == 4  # and so does time


def test_keyword_candidates_give_the_exact_ranking_on_a_large_match(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chunks that repeat a word, are short or long, hold one, two or three of the question's
    # words: the candidates' BM25 (KEYWORD_EXACT_MATCHES exceeded) must rank as the full scoring.
    rng = random.Random(3)
    words = ["river", "stone", "lantern", "harbor", "copper", "meadow"]
    texts = [
        " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        + f" filler {n} "
        + "padding " * rng.randint(0, 30)
        for n in range(120)
    ]
    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        write(store, brain, "a.md", texts, [e(1)] * len(texts))
        questions = ["river stone", "lantern harbor copper", "meadow", "stone copper meadow river"]
        exact = {q: store.keyword_scores(brain, q, 120) for q in questions}
        monkeypatch.setattr(pgkeywords, "KEYWORD_EXACT_MATCHES", 0)
        monkeypatch.setattr(pgkeywords, "KEYWORD_CANDIDATES", 60)
        for q in questions:
            got = store.keyword_scores(brain, q, 10)
            best = dict(exact[q])
            assert all(score == pytest.approx(best[i]) for i, score in got)  # each score is the chunk's BM25
            # The same ranking (chunks of equal score, summed in another order, may swap).
            assert [s for _, s in got] == pytest.approx([s for _, s in exact[q][:10]])
        everywhere = store.keyword_scores(brain, "river", 120)
        assert 60 < len(everywhere) < 120
        assert store.keyword_scores(brain, "river", 100) == everywhere  # k beyond the candidates: 5 k of them
        assert store.keyword_scores(brain, "river", 5, path_glob="b*") == []  # the path filter still applies


def test_common_words_are_left_out_of_a_keyword_search(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    monkeypatch.setattr(pgkeywords, "KEYWORD_PRUNE_MIN_CHUNKS", 1)
    with open_store(parse_db(pg_url), create=True) as store:
        brain = store.create_brain("default", "m", DIM, "paragraph", 200, 20)
        texts = [f"the the the note {n}" for n in range(30)] + ["the zebra"]
        write(store, brain, "a.md", texts, [e(1)] * len(texts))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE locallens.chunks")
        zebra = store.keyword_search(brain, "zebra", 5)
        assert len(zebra) == 1
        assert store.keyword_search(brain, "the zebra", 5) == zebra  # without `the`, zebra comes first
        assert len(store.keyword_search(brain, "the note", 50)) == 30  # all common: the rarer stays
        assert len(store.keyword_search(brain, "the", 50)) == 31  # a lone word is never left out

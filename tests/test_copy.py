"""`locallens copy`: brains move between stores with their vectors, whole or not at all.

Fast tier: the source brains are indexed with the fake embedder (tests/helpers.py), whose
`passages` record proves that nothing is embedded again after a copy. The PostgreSQL round trips
run on the server the suite starts itself (the `pg_url` fixture, tests/pg.py); if it cannot
start, they fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locallens.storage import IndexStore, PostgresURL, open_store, parse_db
from locallens.storage.sqlite import Store

from .helpers import (
    CORPUS,
    FakeEmbedder,
    FakeModels,
    bag_of_words_vector,
    cli,
    cli_json,
    snapshot,
    stdout_json,
    table_counts,
    write_corpus,
    write_files,
)

QUERIES = (
    "Which port does the staging database listen on?",
    "parental leave weeks",
    "WireGuard puerto VPN",
    "backups cold storage",
    "espresso machine descaled",
)
# A file long enough that, with the small window below, its chunks get several window vectors.
LONG = {
    "guides/handbook.md": "# Handbook\n\n"
    + "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"word{i}x{j} handbook section{i}" for j in range(30)) for i in range(4)
    )
    + "\n"
}
WINDOW = 24  # the fake model's window, in words: long chunks are embedded in several windows
# The second brain's flags: every setting a brain records differs from the defaults.
WORK = ("--brain", "work", "--headers", "--multi-vector", "--chunk-size", "120", "--chunk-overlap", "10")


@pytest.fixture()
def models(fake_models: FakeModels) -> FakeModels:
    """The fakes, with an embedder of a small window so that multi-vector brains get windows."""
    from locallens.embedding import new_brain_encoder, resolve_model

    name = resolve_model(None, encoder=new_brain_encoder(None)).name
    fake_models.embedders[name] = FakeEmbedder(name, fake_models.dim, max_seq_length=WINDOW)
    return fake_models


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    return write_files(write_corpus(tmp_path / "docs"), LONG)


@pytest.fixture()
def source(tmp_path: Path, docs: Path, models: FakeModels) -> Path:
    """Two brains: `default` (plain) and `work` (headers, multi-vector, other chunk sizes)."""
    db = tmp_path / "source.db"
    cli_json("index", str(docs), "--db", str(db))
    cli_json("index", str(docs), "--db", str(db), *WORK)
    return db


def opened(db: Path | str) -> IndexStore:
    """The store at `db` (a path or a URL), searching exactly on PostgreSQL."""
    return open_store(parse_db(str(db), exact=True))


def dump(db: Path | str, name: str) -> dict[str, Any]:
    """Everything a brain holds, independent of internal row ids."""
    with opened(db) as store:
        brain = store.get_brain(name)
        docs = []
        for doc in store.export_documents(brain):
            docs.append(
                {
                    "doc": (doc.root, doc.relative_path, doc.size, doc.mtime_ns, doc.checksum),
                    "chunks": [(c.id, c.relative_path, c.chunk_index, c.content, c.checksum) for c in doc.chunks],
                    "vectors": [(np.shape(v), np.asarray(v, dtype=np.float32).tobytes()) for v in doc.vectors],
                    "headers": doc.headers,
                    "hashes": doc.hashes,
                }
            )
        return {
            "settings": (
                brain.model,
                brain.dim,
                brain.chunker,
                brain.chunk_size,
                brain.chunk_overlap,
                brain.headers,
                brain.multi_vector,
            ),
            "roots": store.roots(brain),
            "documents": docs,
        }


def nearest(db: Path | str, name: str) -> list[list[tuple[str, str, float]]]:
    """knn results for QUERIES as (chunk id, path, cosine): row ids differ between stores."""
    with opened(db) as store:
        brain = store.get_brain(name)
        return [
            [(h.chunk.id, h.chunk.relative_path, h.score) for h in store.knn(brain, bag_of_words_vector(q), 8)]
            for q in QUERIES
        ]


def related(db: Path | str, name: str) -> list[list[tuple[float, str, str]]]:
    """The knn hits that share a word with their query, as (-score to 4 places, id, path) sorted.

    For comparing stores: float rounding (pgvector sums in double) may swap chunks that tie, and
    the fake embedder gives every unrelated chunk the same score, 0, so which of those make the
    top k is arbitrary."""
    return [sorted((-round(s, 4), i, p) for i, p, s in hits if s > 1e-3) for hits in nearest(db, name)]


def rankings(db: Path | str, name: str) -> list[Any]:
    """knn (scores rounded) and keyword results for QUERIES, by public chunk id."""
    out: list[Any] = [[(i, p, round(s, 5)) for i, p, s in hits] for hits in nearest(db, name)]
    with opened(db) as store:
        brain = store.get_brain(name)
        for query in QUERIES:
            ids = store.keyword_search(brain, query, 8)
            by_id = store.hits_by_id(brain, bag_of_words_vector(query), ids)
            out.append([(by_id[i].chunk.id, by_id[i].chunk.relative_path) for i in ids])
    return out


def brain_names(db: Path | str) -> list[str]:
    with opened(db) as store:
        return [b.name for b in store.brains()]


def counts(db: Path | str, name: str) -> tuple[int, int, int]:
    """(documents, chunks, vectors) of a brain, in either store."""
    with opened(db) as store:
        stats = store.stats(store.get_brain(name))
        return stats.documents, stats.chunks, stats.vectors


def state(db: Path | str) -> dict[str, Any]:
    """What a reader of `db` can see: every brain, with its contents and counts."""
    return {name: (dump(db, name), counts(db, name)) for name in brain_names(db)}


def test_copy_keeps_settings_roots_chunks_vectors_and_rankings(tmp_path: Path, source: Path) -> None:
    dest = tmp_path / "sub" / "dest.db"
    result = cli("copy", str(source), str(dest), "--json")
    assert result.exit_code == 0, result.output
    out = stdout_json(result)
    assert out["source"] == str(source) and out["dest"] == str(dest)
    assert [b["name"] for b in out["brains"]] == ["default", "work"]
    assert brain_names(dest) == ["default", "work"]
    for entry in out["brains"]:
        name = entry["name"]
        assert dump(dest, name) == dump(source, name)
        assert table_counts(dest, name) == table_counts(source, name)
        assert rankings(dest, name) == rankings(source, name)
        documents, chunks, vectors, _ = table_counts(source, name)
        assert (entry["documents"], entry["chunks"], entry["vectors"]) == (documents, chunks, vectors)
        assert entry["replaced"] is False
    work = dump(dest, "work")
    assert work["settings"][5:] == (True, True) and work["settings"][3:5] == (120, 10)
    assert any(header for doc in work["documents"] for header in doc["headers"])
    windows = [shape for doc in work["documents"] for shape, _ in doc["vectors"] if len(shape) == 2]
    assert windows, "the multi-vector brain should hold chunks with several window vectors"
    assert out["brains"][1]["window_vectors"] == sum(shape[0] - 1 for shape in windows)
    assert out["brains"][0]["window_vectors"] == 0


def test_text_output_is_one_line_per_brain(tmp_path: Path, source: Path) -> None:
    dest = tmp_path / "dest.db"
    result = cli("copy", str(source), str(dest), "--brain", "default")
    assert result.exit_code == 0, result.output
    documents, chunks, vectors, _ = table_counts(source, "default")
    assert result.stdout == f"copied brain 'default': {documents} documents, {chunks} chunks, {vectors} vectors\n"
    assert brain_names(dest) == ["default"]
    quiet = cli("copy", str(source), str(tmp_path / "quiet.db"), "--quiet")
    assert quiet.exit_code == 0 and quiet.stdout == ""


def test_ask_on_the_copy_gives_the_same_sources(tmp_path: Path, source: Path) -> None:
    dest = tmp_path / "dest.db"
    assert cli("copy", str(source), str(dest), "--quiet").exit_code == 0
    for brain in ("default", "work"):
        for flags in ((), ("--hybrid",)):
            answers = []
            for db in (source, dest):
                result = cli("ask", QUERIES[0], "--db", str(db), "--brain", brain, "--context-only", "--json", *flags)
                assert result.exit_code == 0, result.output
                answers.append(stdout_json(result)["sources"])
            assert answers[0] == answers[1] and answers[0]


def test_incremental_index_of_the_copy_embeds_nothing(
    tmp_path: Path, docs: Path, source: Path, models: FakeModels
) -> None:
    dest = tmp_path / "dest.db"
    assert cli("copy", str(source), str(dest), "--quiet").exit_code == 0
    embedder = models.embedder
    # A duplicate under a new name is read, but its vectors are found by content hash.
    shutil.copyfile(docs / "hr/leave.md", docs / "hr/leave-copy.md")
    passages = len(embedder.passages)
    for extra in ((), WORK):
        report = cli_json("index", str(docs), "--db", str(dest), *extra)
        assert report["files"] == {
            "new": 1,
            "changed": 0,
            "unchanged": len(CORPUS) + len(LONG),
            "removed": 0,
            "skipped": 0,
            "read_again": 0,  # the copy keeps each document's reading
        }
        assert report["chunks"]["embedded"] == 0 and report["chunks"]["reused"] > 0
    assert len(embedder.passages) == passages


def test_existing_brain_is_refused_without_replace_and_replaced_with_it(
    tmp_path: Path, source: Path, models: FakeModels
) -> None:
    other = write_files(tmp_path / "other", {"notes.md": "# Notes\n\nThe lunch menu changes on Mondays.\n"})
    dest = tmp_path / "dest.db"
    cli_json("index", str(other), "--db", str(dest))
    before = state(dest)
    refused = cli("copy", str(source), str(dest))
    assert refused.exit_code == 2
    assert "'default'" in refused.stderr and "--replace" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and refused.stdout == ""
    assert state(dest) == before  # not even `work`, which DEST lacks, was copied
    out = cli_json("copy", str(source), str(dest), "--replace")
    assert [(b["name"], b["replaced"]) for b in out["brains"]] == [("default", True), ("work", False)]
    assert dump(dest, "default") == dump(source, "default")
    assert brain_names(dest) == ["default", "work"]


def test_missing_source_exits_3_and_creates_nothing(tmp_path: Path, models: FakeModels) -> None:
    dest = tmp_path / "dest.db"
    result = cli("copy", str(tmp_path / "absent.db"), str(dest))
    assert result.exit_code == 3 and "absent.db" in result.stderr
    assert not dest.exists() and not Path(f"{dest}.lock").exists()


def test_unknown_or_internal_brain(tmp_path: Path, source: Path) -> None:
    dest = tmp_path / "dest.db"
    unknown = cli("copy", str(source), str(dest), "--brain", "nope")
    assert unknown.exit_code == 3 and "'nope'" in unknown.stderr
    internal = cli("copy", str(source), str(dest), "--brain", ".rebuild:default:1")
    assert internal.exit_code == 2
    assert not dest.exists()


def test_same_source_and_dest_exit_2(tmp_path: Path, source: Path) -> None:
    before = state(source)
    for spelling in (str(source), str(tmp_path / "sub" / ".." / source.name)):
        result = cli("copy", str(source), spelling)
        assert result.exit_code == 2 and "same database" in result.stderr
    assert state(source) == before
    a, b = "postgresql://alice:s3cret@DB.example.com/lens", "postgres://bob:hunter2@db.example.com:5432/lens"
    result = cli("copy", a, b)
    assert result.exit_code == 2 and "same database" in result.stderr
    assert "s3cret" not in result.output and "hunter2" not in result.output


def test_malformed_urls_are_a_usage_error_without_the_password() -> None:
    result = cli("copy", "postgresql://u:s3cret@[::1/db", "postgresql://u:s3cret@[::1/other")
    assert result.exit_code == 2, result.output
    assert "s3cret" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_dest_locked_exits_5(tmp_path: Path, source: Path) -> None:
    from locallens.storage.sqlite import write_lock

    dest = tmp_path / "dest.db"
    with write_lock(dest, 0):
        result = cli("copy", str(source), str(dest), "--wait", "0.2")
    assert result.exit_code == 5 and "--wait" in result.stderr
    assert not dest.exists()


def _interrupt_second_write(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the second document written by the copy raise (after its own transaction ran)."""
    original = Store.write_document
    written: list[str] = []

    def write_document(self: Store, brain: Any, doc: Any) -> None:
        original(self, brain, doc)
        written.append(doc.relative_path)
        if len(written) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Store, "write_document", write_document)
    return written


def test_interrupted_copy_leaves_dest_as_it_was(
    tmp_path: Path, source: Path, models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = write_files(tmp_path / "other", {"notes.md": "# Notes\n\nThe lunch menu changes on Mondays.\n"})
    dest = tmp_path / "dest.db"
    cli_json("index", str(other), "--db", str(dest))
    before, rows = state(dest), snapshot(dest)
    written = _interrupt_second_write(monkeypatch)
    result = cli("copy", str(source), str(dest), "--replace")
    assert result.exit_code == 130 and len(written) == 2
    assert state(dest) == before and snapshot(dest) == rows
    assert brain_names(dest) == ["default"]  # the hidden brain went too
    # Into a DEST that did not exist: it still does not.
    fresh = tmp_path / "fresh.db"
    written.clear()
    assert cli("copy", str(source), str(fresh)).exit_code == 130
    assert not fresh.exists() and not Path(f"{fresh}-wal").exists()


def test_a_copy_that_does_not_match_its_source_is_never_swapped_in(
    tmp_path: Path, source: Path, models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Store.write_document
    calls = 0

    def write_document(self: Store, brain: Any, doc: Any) -> None:
        nonlocal calls
        calls += 1
        if calls != 2:  # the second document is lost without an error
            original(self, brain, doc)

    monkeypatch.setattr(Store, "write_document", write_document)
    dest = tmp_path / "dest.db"
    result = cli("copy", str(source), str(dest))
    assert result.exit_code == 1 and "incomplete" in result.stderr and result.stdout == ""
    assert not dest.exists()  # created by the copy, and left without a brain: removed


def test_failure_after_the_first_brain_keeps_it(
    tmp_path: Path, source: Path, models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "dest.db"
    documents = table_counts(source, "default")[0]
    original = Store.write_document
    calls = 0

    def write_document(self: Store, brain: Any, doc: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == documents + 1:  # the first document of the second brain
            raise OSError("disk unplugged")
        original(self, brain, doc)

    monkeypatch.setattr(Store, "write_document", write_document)
    result = cli("copy", str(source), str(dest))
    assert result.exit_code == 1 and "disk unplugged" in result.stderr
    assert result.stdout.startswith("copied brain 'default'")
    assert brain_names(dest) == ["default"] and dump(dest, "default") == dump(source, "default")


def test_leftovers_are_removed_and_internal_brains_not_copied(tmp_path: Path, source: Path) -> None:
    dest = tmp_path / "dest.db"
    with Store(source) as store:
        store.create_brain(".rebuild:default:1", "m", 4, "paragraph", 220, 40)
    with Store(dest) as store:
        store.create_brain(".copy:default:999999", "m", 4, "paragraph", 220, 40)
        store.create_brain(".copy:defaultish:1", "m", 4, "paragraph", 220, 40)
    out = cli_json("copy", str(source), str(dest), "--brain", "default")
    assert [b["name"] for b in out["brains"]] == ["default"]
    # Only leftovers of the brain copied are removed (`defaultish` is another brain's).
    assert brain_names(dest) == [".copy:defaultish:1", "default"]
    again = cli_json("copy", str(source), str(tmp_path / "all.db"))
    assert [b["name"] for b in again["brains"]] == ["default", "work"]


def test_sentence_cache_of_the_copied_models_comes_along(tmp_path: Path, source: Path) -> None:
    model = dump(source, "default")["settings"][0]
    items = [(bytes([i]) * 32, np.full(4, i, dtype=np.float32)) for i in range(5)]
    with Store(source) as store:
        store.cache_sentence_vectors(model, items)
        store.cache_sentence_vectors("another-model", items[:1])
    dest = tmp_path / "dest.db"
    out = cli_json("copy", str(source), str(dest))
    assert out["sentence_vectors"] == 5
    with Store(dest, create=False) as store:
        found = store.cached_sentence_vectors(model, [h for h, _ in items])
        assert {h: v.tolist() for h, v in found.items()} == {h: v.tolist() for h, v in items}
        assert store.cached_sentence_vectors("another-model", [items[0][0]]) == {}
    assert json.loads(json.dumps(out)) == out


# --------------------------------------------------------------------------------------------
# PostgreSQL (a server started by the test session: tests/pg.py)
# --------------------------------------------------------------------------------------------


def test_sqlite_to_postgres_and_back_keeps_everything(
    tmp_path: Path, docs: Path, source: Path, models: FakeModels, pg_url: str
) -> None:
    model = dump(source, "default")["settings"][0]
    items = [(bytes([i]) * 32, np.full(4, i, dtype=np.float32)) for i in range(3)]
    with Store(source) as store:
        store.cache_sentence_vectors(model, items)

    there = cli_json("copy", str(source), pg_url)
    assert there["dest"] == str(PostgresURL(pg_url)) and there["sentence_vectors"] == 3
    assert [b["name"] for b in there["brains"]] == ["default", "work"]
    for name in ("default", "work"):
        assert dump(pg_url, name) == dump(source, name)
        assert counts(pg_url, name) == counts(source, name)
        assert related(pg_url, name) == related(source, name)

    back = tmp_path / "back.db"
    again = cli_json("copy", pg_url, str(back))
    assert again["source"] == str(PostgresURL(pg_url)) and again["sentence_vectors"] == 3
    for name in ("default", "work"):
        assert dump(back, name) == dump(source, name)
        assert rankings(back, name) == rankings(source, name)
        assert table_counts(back, name) == table_counts(source, name)
    with Store(back, create=False) as store:
        assert set(store.cached_sentence_vectors(model, [h for h, _ in items])) == {h for h, _ in items}

    # The copy on the server answers like the original (the sources related to the question:
    # see `related`), and indexing it embeds nothing.
    answers = [cli_json("ask", QUERIES[0], "--db", str(db), "--context-only")["sources"] for db in (pg_url, source)]
    on_pg, on_sqlite = ([(s["id"], round(s["score"], 4)) for s in a if s["score"] > 1e-3] for a in answers)
    assert on_pg == on_sqlite and on_pg
    passages = len(models.embedder.passages)
    for extra in ((), WORK):
        report = cli_json("index", str(docs), "--db", pg_url, *extra)
        assert report["files"]["unchanged"] == len(CORPUS) + len(LONG) and report["chunks"]["embedded"] == 0
    assert len(models.embedder.passages) == passages


def test_postgres_dest_refuses_replaces_and_locks(tmp_path: Path, source: Path, pg_url: str) -> None:
    from locallens.storage.postgres import writer_lock

    empty = cli("copy", pg_url, str(tmp_path / "out.db"))  # a database without an index
    assert empty.exit_code == 3 and not (tmp_path / "out.db").exists()

    cli_json("copy", str(source), pg_url, "--brain", "default")
    before = state(pg_url)
    refused = cli("copy", str(source), pg_url)
    assert refused.exit_code == 2 and "'default'" in refused.stderr and "--replace" in refused.stderr
    assert state(pg_url) == before
    with writer_lock(PostgresURL(pg_url), "default", 0):
        locked = cli("copy", str(source), pg_url, "--replace", "--brain", "default", "--wait", "0.3")
    assert locked.exit_code == 5 and "--wait" in locked.stderr
    out = cli_json("copy", str(source), pg_url, "--replace")
    assert [(b["name"], b["replaced"]) for b in out["brains"]] == [("default", True), ("work", False)]
    assert brain_names(pg_url) == ["default", "work"]
    assert dump(pg_url, "default") == dump(source, "default")


def test_interrupted_copy_into_postgres_leaves_it_as_it_was(
    source: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from locallens.storage.postgres import PostgresStore

    cli_json("copy", str(source), pg_url, "--brain", "default")
    before = state(pg_url)
    original = PostgresStore.write_document
    written: list[str] = []

    def write_document(self: PostgresStore, brain: Any, doc: Any) -> None:
        original(self, brain, doc)
        written.append(doc.relative_path)
        if len(written) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(PostgresStore, "write_document", write_document)
    result = cli("copy", str(source), pg_url, "--replace")
    assert result.exit_code == 130 and len(written) == 2
    assert state(pg_url) == before and brain_names(pg_url) == ["default"]


def test_postgres_passwords_never_show(source: Path, pg_url: str) -> None:
    from .pg import PASSWORD_ROLE

    wrong = pg_url.replace("postgresql://postgres@", f"postgresql://{PASSWORD_ROLE}:n0t-the-Pw@", 1)
    assert wrong != pg_url
    result = cli("copy", str(source), wrong)
    assert result.exit_code == 9, result.output
    assert "n0t-the-Pw" not in result.output and len(result.stderr.strip().splitlines()) == 1

"""Chunk headers (title and section path), several vectors per long chunk, and the header in the
keyword index: what each promises, without a model except where marked slow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from locallens.domain import Chunk, Document, FileStat
from locallens.errors import ModelMismatchError
from locallens.headers import chunk_headers, compose, document_title, embedded_text
from locallens.indexer import EmbedSettings, IndexRequest, _pinned_settings
from locallens.readers import read_document
from locallens.storage import DocumentRecord, migrations
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import WINDOW_SHIFT, Store

from .helpers import FakeEmbedder, bag_of_words_vector

DIM = 4


def doc(path: str, text: str, **kwargs: object) -> Document:
    return Document("/r", path, text, "c" * 64, len(text), 0, **kwargs)  # type: ignore[arg-type]


# --- headers ---------------------------------------------------------------------------------


def test_markdown_title_and_heading_path_skip_code_fences() -> None:
    text = (
        "# Guide\n\nintro\n\n## Install\n\n```sh\n# not a heading\n```\n\ntext a\n\n"
        "### Linux\n\ntext b\n\nOther\n-----\n\ntext c"
    )
    d = doc("guide.md", text)
    assert document_title(d) == "Guide"
    assert chunk_headers(d, ["intro", "text a", "text b", "text c"]) == [
        "Guide",
        "Guide > Install",
        "Guide > Install > Linux",
        "Guide > Other",
    ]


def test_a_chunk_that_starts_with_its_heading_leaves_it_to_the_text() -> None:
    d = doc("g.md", "# Guide\n\n## Install\n\nrun it")
    assert chunk_headers(d, ["## Install\n\nrun it"]) == ["Guide"]
    # A BEIR document starts with its title: its first chunk is embedded as it is.
    assert compose("Aspirin and sleep", [], "Aspirin and sleep We studied...") == ""
    assert embedded_text("", "body") == "body" and embedded_text("T > S", "body") == "T > S\n\nbody"


def test_a_chunk_that_opens_a_section_is_not_under_the_section_before_it() -> None:
    """A chunk starting on a heading is under that heading's parents, not under the sibling or
    deeper sections the heading closes (their words would steer the chunk's vector and keywords);
    a heading written with code marks counts as the same heading."""
    text = (
        "# Tool\n\n## OPTIONS\n\n### Renaming\n\n--tag-rename::\n\tRename tags.\n\n#### Deep\n\nx\n\n"
        "### Path shortcuts\n\n--paths-from-file::\n\tRead paths.\n\n## Why did `tool` rewrite it?\n\nBecause."
    )
    d = doc("tool.md", text)
    assert chunk_headers(
        d,
        [
            "### Renaming\n\n--tag-rename::\n\tRename tags.",
            "### Path shortcuts\n\n--paths-from-file::\n\tRead paths.",
            "## Why did `tool` rewrite it?\n\nBecause.",
        ],
    ) == ["Tool > OPTIONS", "Tool > OPTIONS", "Tool"]
    # A chunk that starts just after a heading is still under it.
    assert chunk_headers(d, ["--paths-from-file::\n\tRead paths."]) == ["Tool > OPTIONS > Path shortcuts"]


def test_text_manual_sections_and_the_file_name_as_title() -> None:
    text = "NAME\n    shutil - copy files\n\nFUNCTIONS\n    copy(src, dst)\n        Copy data."
    d = doc("lib/shutil.txt", text)
    assert document_title(d) == "shutil"
    assert chunk_headers(d, ["copy(src, dst)\n        Copy data."]) == ["shutil > FUNCTIONS"]


def test_html_title_and_headings_come_from_the_reader(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text(
        "<html><head><title>Widget  Manual</title></head><body><h1>Setup</h1><p>Plug it in.</p>"
        "<h2>Power</h2><p>Use 12 V.</p></body></html>",
        encoding="utf-8",
    )
    st = page.stat()
    read = read_document(FileStat(str(tmp_path), "p.html", str(page), st.st_size, st.st_mtime_ns))
    assert isinstance(read, Document)
    assert read.title == "Widget Manual" and read.headings == ((1, "Setup"), (2, "Power"))
    assert chunk_headers(read, ["Use 12 V."]) == ["Widget Manual > Setup > Power"]


def test_settings_follow_the_brain_and_a_change_needs_rebuild() -> None:
    from locallens.storage import Brain

    old = Brain(1, "b", "m", DIM, "paragraph", 220, 40, 0.0, None, headers=False, multi_vector=False)
    request = IndexRequest(paths=[], db=Path("x.db"), brain="b")
    assert _pinned_settings(request, old) == EmbedSettings(headers=False, multi_vector=False)
    assert _pinned_settings(request, None) == EmbedSettings()  # a new brain: the defaults
    with pytest.raises(ModelMismatchError, match="--rebuild"):
        _pinned_settings(IndexRequest(paths=[], db=Path("x.db"), brain="b", headers=True), old)
    rebuilt = IndexRequest(paths=[], db=Path("x.db"), brain="b", rebuild=True, headers=True, multi_vector=True)
    assert _pinned_settings(rebuilt, old) == EmbedSettings(headers=True, multi_vector=True)


# --- the store: several vectors per chunk, the header in the keyword index ---------------------


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def chunk(path: str, index: int, content: str) -> Chunk:
    return Chunk(f"{'c' * 12}-{index}", "b", path, index, content, "c" * 64)


def write(
    store: Store,
    brain,
    path: str,
    contents: list[str],
    vectors: list[np.ndarray],  # type: ignore[no-untyped-def]
    headers: list[str] | None = None,
) -> None:
    store.write_document(
        brain,
        DocumentRecord(
            root="/r",
            relative_path=path,
            size=1,
            mtime_ns=1,
            checksum="c" * 64,
            chunks=[chunk(path, i, c) for i, c in enumerate(contents)],
            vectors=vectors,
            headers=headers,
        ),
    )


def test_a_chunk_scores_as_its_best_window_and_knn_returns_distinct_chunks(tmp_path: Path) -> None:
    with Store(tmp_path / "i.db") as store:
        brain = store.create_brain("b", "m", DIM, "paragraph", 220, 40, multi_vector=True)
        # a.md chunk 0 has three windows; its last one is the query's direction.
        write(
            store,
            brain,
            "a.md",
            ["long one", "short"],
            [np.stack([unit(0, 1, 0, 0), unit(0, 0, 1, 0), unit(1, 0, 0, 0)]), unit(0, 1, 1, 0)],
        )
        write(store, brain, "b/x.md", ["other"], [np.stack([unit(1, 0.2, 0, 0), unit(0, 0, 0, 1)])])
        query = unit(1, 0, 0, 0)
        hits = store.knn(brain, query, 3)
        assert [(h.chunk.relative_path, h.chunk.chunk_index) for h in hits] == [("a.md", 0), ("b/x.md", 0), ("a.md", 1)]
        assert hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert [h.chunk.relative_path for h in store.knn(brain, query, 1)] == ["a.md"]
        assert [h.chunk.relative_path for h in store.knn(brain, query, 5, path_glob="b/*")] == ["b/x.md"]
        ids = [r[0] for r in store.execute("SELECT id FROM chunks ORDER BY id")]
        by_id = store.hits_by_id(brain, query, ids)
        assert by_id[ids[0]].score == pytest.approx(1.0, abs=1e-6)  # the best window, as knn
        assert store.vector_count(brain) == store.stats(brain).vectors == 3
        assert store.execute(f"SELECT count(*) FROM {brain.vec_table}")[0][0] == 6
        assert all(
            part == (rowid & ((1 << WINDOW_SHIFT) - 1)) % store_module.PARTITIONS
            for rowid, part in store.execute(f"SELECT rowid, part FROM {brain.vec_table}")
        )
        # Reuse hands back every window; deleting a document deletes them all.
        ((h,),) = store.execute("SELECT content_hash FROM chunks WHERE id = ?", (ids[0],))
        assert store.reusable_vectors(brain, [h])[h].shape == (3, DIM)
        ((doc_id,),) = store.execute("SELECT id FROM documents WHERE relative_path = 'a.md'")
        store.delete_documents(brain, [doc_id])
        assert store.execute(f"SELECT count(*) FROM {brain.vec_table}")[0][0] == 2


def test_the_header_is_keyword_searchable_and_the_text_unchanged(tmp_path: Path) -> None:
    with Store(tmp_path / "i.db") as store:
        brain = store.create_brain("b", "m", DIM, "paragraph", 220, 40, headers=True)
        write(store, brain, "w.md", ["Plug it in and wait."], [unit(1, 0, 0, 0)], headers=["Widget manual > Setup"])
        write(store, brain, "z.md", ["Nothing here."], [unit(0, 1, 0, 0)])
        ids = store.keyword_search(brain, "widget", 5)
        assert len(ids) == 1
        assert store.hits_by_id(brain, unit(1, 0, 0, 0), ids)[ids[0]].content == "Plug it in and wait."
        store.fts_integrity_check()


def test_upgrade_adds_the_settings_and_the_fts_header_column(tmp_path: Path, monkeypatch) -> None:
    ours = next(step for step in migrations.MIGRATIONS if step.name == "chunk_headers")
    before = tuple(step for step in migrations.MIGRATIONS if step.version < ours.version)
    db = tmp_path / "old.db"
    monkeypatch.setattr(migrations, "MIGRATIONS", before)
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", before[-1].version)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", before[-1].version)
    with Store(db) as store:
        store.conn.execute(
            "INSERT INTO brains(name, model, dim, chunker, chunk_size, chunk_overlap, created_at)"
            " VALUES ('b', 'm', 4, 'paragraph', 220, 40, 0)"
        )
        store.conn.execute(
            "INSERT INTO documents(brain_id, root, relative_path, size, mtime_ns, checksum, indexed_at)"
            " VALUES (1, '/r', 'a.md', 1, 1, 'c', 0)"
        )
        store.conn.execute(
            "INSERT INTO chunks(brain_id, document_id, chunk_id, relative_path, chunk_index, content,"
            " checksum, content_hash) VALUES (1, 1, 'c-0', 'a.md', 0, 'the quick fox', 'c', x'00')"
        )
    monkeypatch.undo()
    with Store(db) as store:
        brain = store.get_brain("b")
        assert (brain.headers, brain.multi_vector) == (False, False)  # kept as they were computed
        assert store.execute("SELECT header, vectors FROM chunks") == [("", 1)]
        assert store.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'fox'") == [(1,)]
        store.fts_integrity_check()


# --- the embedder ----------------------------------------------------------------------------------


def test_the_fast_tiers_embedder_cuts_windows_and_pools_as_the_real_one() -> None:
    # The fake replaces only the model (a word tokenizer, a bag of words per window): the
    # windows with their header, one row per window, and their token-weighted mean are Embedder's.
    fake = FakeEmbedder(dim=64, max_seq_length=10)  # 8 tokens between [CLS] and [SEP]
    text = " ".join(f"w{i}" for i in range(20))
    windows = fake.windows([text], ["Head"])
    assert windows.weights == [5, 5, 5, 5]  # 6 tokens of room after the header: 4 even windows
    (multi,) = fake.encode_passages([text], ["Head"], multi_vector=True)
    assert multi.shape == (4, 64)
    for j, row in enumerate(multi):
        window_words = " ".join(f"w{i}" for i in range(5 * j, 5 * j + 5))
        np.testing.assert_allclose(row, bag_of_words_vector(f"Head {window_words}", 64), atol=1e-6)
    (mean,) = fake.encode_passages([text], ["Head"])
    pooled = (multi * np.asarray(windows.weights, dtype=np.float32)[:, None]).sum(axis=0)
    np.testing.assert_allclose(mean[0], pooled / np.linalg.norm(pooled), atol=1e-6)
    # A text that fits gets exactly the bag of words of its header and text.
    (short,) = fake.encode_passages(["two words"], ["Head"])
    np.testing.assert_allclose(short[0], bag_of_words_vector("Head two words", 64), atol=1e-6)
    assert fake.passages == [text, text, "two words"] and fake.count_over_length([text, "two words"]) == 1


# --- the embedder (real model) ------------------------------------------------------------------


@pytest.mark.slow
def test_passages_with_headers_and_windows(embedder) -> None:  # type: ignore[no-untyped-def]
    long = " ".join(f"Sentence {i} says something about topic {i % 7}." for i in range(80))
    plain = embedder.encode(["short text", long])
    same = embedder.encode_passages(["short text", long])
    np.testing.assert_allclose(np.vstack(same), plain, atol=1e-6)
    multi = embedder.encode_passages(["short text", long], ["Title > Section", "Title > Section"], multi_vector=True)
    assert multi[0].shape == (1, embedder.dim) and multi[1].shape[0] >= 2
    mean = embedder.encode_passages([long], ["Title > Section"])[0]
    assert mean.shape == (1, embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(np.vstack([*multi, mean]), axis=1), 1.0, atol=1e-5)
    direct = embedder.encode([embedded_text("Title > Section", "short text")])[0]
    np.testing.assert_allclose(multi[0][0], direct, atol=1e-6)

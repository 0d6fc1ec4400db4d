"""Vector search in the store: partitioned vec0 tables, the parallel scan, the schema upgrade."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from locallens.errors import StoreError
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import PARTITIONS, Store

QUESTION = "Which port does the staging database listen on?"


@pytest.fixture()
def sample_copy(sample_index: Path, tmp_path: Path) -> Path:
    target = tmp_path / "index.db"
    shutil.copy(sample_index, target)
    return target


def exact_ranking(store: Store, brain, query: np.ndarray) -> list[tuple[int, float]]:  # type: ignore[no-untyped-def]
    """Every (rowid, cosine) of the brain, computed here in NumPy, best first."""
    rows = store.execute(f"SELECT rowid, embedding FROM {brain.vec_table}")
    matrix = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    return sorted(zip((r[0] for r in rows), cosines.tolist()), key=lambda t: (-t[1], t[0]))


def test_vectors_are_spread_over_the_partitions_by_rowid(sample_index: Path) -> None:
    with Store(sample_index, create=False) as store:
        brain = store.get_brain("default")
        rows = store.execute(f"SELECT rowid, part FROM {brain.vec_table}")
        assert rows and all(part == rowid % PARTITIONS for rowid, part in rows)
        assert len({part for _, part in rows}) == PARTITIONS
        assert store.vector_count(brain) == len(rows) == store.stats(brain).chunks


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("k", [1, 5, 40, 500])
def test_knn_is_exact_serial_or_parallel(
    sample_index: Path,
    embedder,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
    parallel: bool,
    k: int,
) -> None:
    monkeypatch.setattr(store_module, "PARALLEL_MIN_VECTORS", 0 if parallel else 10**9)
    monkeypatch.setattr(store_module, "_usable_cores", lambda: 2)
    with Store(sample_index, create=False) as store:
        brain = store.get_brain("default")
        query = embedder.encode_query(QUESTION)
        expected = exact_ranking(store, brain, query)[:k]
        hits = store.knn(brain, query, k)
        assert len(hits) == min(k, store.vector_count(brain))  # every vector when k exceeds them
        assert [h.score for h in hits] == pytest.approx([score for _, score in expected], abs=1e-5)
        assert len(store._readers) == (1 if parallel else 0)


def test_parallel_knn_applies_the_path_filter_inside(
    sample_index: Path,
    embedder,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with Store(sample_index, create=False) as store:
        brain = store.get_brain("default")
        query = embedder.encode_query(QUESTION)
        serial = store.knn(brain, query, 3, path_glob="hr/*")
        monkeypatch.setattr(store_module, "PARALLEL_MIN_VECTORS", 0)
        monkeypatch.setattr(store_module, "_usable_cores", lambda: 4)
        parallel = store.knn(brain, query, 3, path_glob="hr/*")
        assert len(parallel) == 3 and all(h.chunk.relative_path.startswith("hr/") for h in parallel)
        assert [h.chunk.id for h in parallel] == [h.chunk.id for h in serial]


def v1_database(path: Path) -> None:
    """Turn a current index into what schema 1 wrote: one unpartitioned vec0 table per brain."""
    with Store(path, create=False) as store, store.transaction():
        for brain in store.brains():
            rows = store.execute(f"SELECT rowid, embedding FROM {brain.vec_table}")
            store.conn.execute(f"DROP TABLE {brain.vec_table}")
            store.conn.execute(
                f"CREATE VIRTUAL TABLE {brain.vec_table} USING vec0("
                f"embedding float[{brain.dim}] distance_metric=cosine)"
            )
            for rowid, blob in rows:
                store.conn.execute(f"INSERT INTO {brain.vec_table}(rowid, embedding) VALUES (?, ?)", (rowid, blob))
        store.conn.execute("PRAGMA user_version=1")


def test_a_schema_1_index_is_upgraded_in_place(sample_copy: Path, sample_index: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Store(sample_index, create=False) as store:
        before = {
            r[0]: r[1] for r in store.execute(f"SELECT rowid, embedding FROM {store.get_brain('default').vec_table}")
        }
    v1_database(sample_copy)
    with Store(sample_copy, create=False) as store:
        assert store.execute("PRAGMA user_version")[0][0] == store_module.SCHEMA_VERSION
        brain = store.get_brain("default")
        assert (
            "PARTITION KEY" in store.execute("SELECT sql FROM sqlite_master WHERE name = ?", (brain.vec_table,))[0][0]
        )
        after = {r[0]: r[1] for r in store.execute(f"SELECT rowid, embedding FROM {brain.vec_table}")}
        assert after == before
        assert (
            store.knn(brain, embedder.encode_query(QUESTION), 1)[0].chunk.relative_path
            == "engineering/staging-environment.md"
        )
        assert store.integrity_check() == "ok"


def test_a_newer_schema_is_refused(sample_copy: Path) -> None:
    with Store(sample_copy, create=False) as store:
        store.conn.execute(f"PRAGMA user_version={store_module.SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer locallens"):
        Store(sample_copy, create=False)


def test_keyword_search_leaves_out_words_most_chunks_have(sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "KEYWORD_PRUNE_MIN_CHUNKS", 0)
    with Store(sample_index, create=False) as store:
        brain = store.get_brain("default")
        assert store._without_common_words(['"the"', '"staging"', '"of"']) == ['"staging"']
        # Phrases stay; when every word is common, the rarest stays.
        assert store._without_common_words(['"the"', '"10 40 1 50"']) == ['"the"', '"10 40 1 50"']
        assert len(store._without_common_words(['"the"', '"and"'])) == 1
        # Diacritics are folded as the index folds them: "qué" is counted as "que".
        assert store._without_common_words(['"qué"', '"puerto"']) == store._without_common_words(['"que"', '"puerto"'])
        ids = store.keyword_search(brain, "the port of the staging database", 3)
        paths = [
            r[0] for r in store.execute(f"SELECT relative_path FROM chunks WHERE id IN ({','.join(map(str, ids))})")
        ]
        assert "engineering/staging-environment.md" in paths
    monkeypatch.setattr(store_module, "KEYWORD_PRUNE_MIN_CHUNKS", 10**9)
    with Store(sample_index, create=False) as store:
        assert store._without_common_words(['"the"', '"staging"', '"of"']) == ['"the"', '"staging"', '"of"']

"""`locallens index` hardening: unlistable folders, vanished roots, overlapping roots, progress
kept by a run stopped mid-way, and no leftovers from a failed first run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from locallens import walk as walk_module
from locallens.storage.sqlite import Store

from .helpers import cli, cli_json


def stored_paths(db: Path) -> list[str]:
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        return sorted(d.relative_path for d in store.documents(brain).values())


def n_files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


# -- 1. a folder that cannot be listed keeps its files ----------------------------------------


@pytest.mark.slow
def test_unlistable_folder_is_a_counted_skip_and_keeps_its_files(docs: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    assert any(p.startswith("engineering/") for p in before)
    # As root, chmod cannot make a folder unreadable: the listing itself fails instead.
    target = os.fspath((docs / "engineering").resolve())
    real_scandir = walk_module.os.scandir

    def guarded_scandir(path):  # type: ignore[no-untyped-def]
        if os.fspath(path) == target:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(walk_module.os, "scandir", guarded_scandir)
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 7, result.output
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == ["locallens: warning: skipped engineering: permission denied"]
    out = json.loads(result.stdout)
    assert out["skipped"] == [{"path": "engineering", "reason": "permission denied"}]
    assert out["files"]["removed"] == 0
    assert stored_paths(db) == before


# -- 2. a root that vanished is not pruned unless asked ---------------------------------------


@pytest.mark.slow
def test_missing_root_keeps_its_documents_unless_prune_missing(docs: Path, db: Path, tmp_path: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    away = tmp_path / "unmounted"
    docs.rename(away)
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 7, result.output
    assert "missing" in result.stderr and "--prune-missing" in result.stderr
    out = json.loads(result.stdout)
    assert out["files"]["removed"] == 0 and out["skipped"][0]["path"] == str(docs.resolve())
    assert stored_paths(db) == before
    # Back again (remounted): nothing to do.
    away.rename(docs)
    assert cli_json("index", str(docs), "--db", str(db))["files"]["unchanged"] == len(before)
    docs.rename(away)
    out = cli_json("index", str(docs), "--db", str(db), "--prune-missing")
    assert out["files"]["removed"] == len(before) and out["skipped"] == []
    assert stored_paths(db) == []


@pytest.mark.slow
def test_empty_root_that_had_documents_is_kept_like_an_unmounted_drive(docs: Path, db: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    shutil.rmtree(docs)
    docs.mkdir()  # an empty mount point
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 7, result.output
    assert "empty" in result.stderr and "--prune-missing" in result.stderr
    assert stored_paths(db) == before
    out = cli_json("index", str(docs), "--db", str(db), "--prune-missing")
    assert out["files"]["removed"] == len(before)


@pytest.mark.slow
def test_rebuild_with_a_missing_root_is_refused_unless_prune_missing(docs: Path, db: Path, tmp_path: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    docs.rename(tmp_path / "unmounted")
    result = cli("index", str(docs), "--db", str(db), "--rebuild")
    assert result.exit_code == 2 and "--prune-missing" in result.stderr
    assert stored_paths(db) == before


@pytest.mark.slow
def test_missing_path_never_indexed_is_still_a_usage_error(docs: Path, db: Path, tmp_path: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    result = cli("index", str(tmp_path / "nope"), "--db", str(db))
    assert result.exit_code == 2 and "no such file or directory" in result.stderr


# -- 3. overlapping roots: one document per file -----------------------------------------------


def _chunk_contents(db: Path) -> list[str]:
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        return [r[0] for r in store.execute("SELECT content FROM chunks WHERE brain_id = ?", (brain.id,))]


def test_sub_folder_of_a_root_is_not_stored_twice(docs: Path, db: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    first = cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    result = cli("index", str(docs / "engineering"), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert "is inside" in result.stderr
    out = json.loads(result.stdout)
    assert out["files"]["new"] == 0 and out["files"]["unchanged"] == n_files(docs / "engineering")
    assert stored_paths(db) == before
    assert out["chunks"]["total"] == first["chunks"]["total"]
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        hits = store.knn(brain, embedder.encode_query("how do we deploy to staging?"), 10)
    contents = [(h.chunk.relative_path, h.chunk.content) for h in hits]
    assert len(contents) == len(set(contents))
    # `status` matches documents the same way: nothing is stale.
    assert cli_json("status", "--db", str(db))["brains"][0]["stale"] == 0
    # The whole again: still one document per file, and nothing new or removed.
    again = cli_json("index", str(docs), "--db", str(db))
    assert again["files"]["new"] == 0 and again["files"]["removed"] == 0
    assert stored_paths(db) == before


@pytest.mark.slow
def test_root_containing_an_earlier_root_does_not_duplicate_it(docs: Path, db: Path) -> None:
    cli_json("index", str(docs / "engineering"), "--db", str(db))
    result = cli("index", str(docs), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert "is inside" in result.stderr
    assert len(stored_paths(db)) == n_files(docs)
    contents = _chunk_contents(db)
    out = json.loads(result.stdout)
    assert out["chunks"]["total"] == len(contents)
    # Deleting a file under the inner root is seen by a run of the outer one.
    (docs / "engineering" / "deploy-runbook.md").unlink()
    assert cli_json("index", str(docs), "--db", str(db))["files"]["removed"] == 1
    assert len(stored_paths(db)) == n_files(docs)


# -- 4. a run stopped mid-way keeps its progress -----------------------------------------------


def _corpus(folder: Path, files: int = 30, paragraphs: int = 6) -> Path:
    folder.mkdir()
    for i in range(files):
        text = "\n\n".join(
            f"Note {i} part {j}: the {['red', 'blue', 'green'][j % 3]} shelf holds box {i * 100 + j}."
            for j in range(paragraphs)
        )
        (folder / f"note-{i:02d}.md").write_text(text + "\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_interrupted_first_run_keeps_finished_files_and_rerun_completes(tmp_path: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens.embedding import Embedder

    corpus = _corpus(tmp_path / "corpus")
    real_encode = Embedder.encode_passages
    embedded = 0

    def stopped_after_some_work(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        # Like a time limit: the run is stopped once it has done about 40 chunks of work.
        nonlocal embedded
        if embedded + len(texts) > 40:
            raise KeyboardInterrupt
        embedded += len(texts)
        return real_encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(Embedder, "encode_passages", stopped_after_some_work)
    args = ("index", str(corpus), "--db", str(db), "--chunk-size", "24", "--chunk-overlap", "0")
    result = cli(*args)
    assert result.exit_code == 130, result.output
    partial = stored_paths(db)
    assert 0 < len(partial) < 30
    monkeypatch.setattr(Embedder, "encode_passages", real_encode)
    out = cli_json(*args)
    assert out["files"]["new"] == 30 - len(partial) and out["files"]["unchanged"] == len(partial)
    assert len(stored_paths(db)) == 30


@pytest.mark.slow
def test_pending_files_are_flushed_after_commit_seconds(tmp_path: Path, db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens import indexer

    corpus = _corpus(tmp_path / "corpus", files=5, paragraphs=2)
    writes: list[str] = []
    real_write = Store.write_document

    def counting_write(self, brain, doc):  # type: ignore[no-untyped-def]
        writes.append(doc.relative_path)
        return real_write(self, brain, doc)

    monkeypatch.setattr(Store, "write_document", counting_write)
    flushes: list[int] = []
    real_flush = indexer._Run._flush

    def counting_flush(self, report):  # type: ignore[no-untyped-def]
        flushes.append(len(self.pending))
        return real_flush(self, report)

    monkeypatch.setattr(indexer._Run, "_flush", counting_flush)
    monkeypatch.setattr(indexer, "COMMIT_SECONDS", 0.0)  # every file is "late": flushed at once
    cli_json("index", str(corpus), "--db", str(db))
    assert len(writes) == 5
    assert [n for n in flushes if n] == [1, 1, 1, 1, 1]


# -- 5. a failed first run leaves nothing behind -----------------------------------------------


@pytest.mark.slow
def test_failed_first_run_leaves_no_database_or_lock(docs: Path, db: Path, tmp_path: Path) -> None:
    result = cli("index", str(docs), "--db", str(db), "--model", str(tmp_path / "nonexistent" / "folder"))
    assert result.exit_code == 6, result.output
    for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}.lock")):
        assert not leftover.exists(), leftover
    # And the next run works as a first run.
    out = cli_json("index", str(docs), "--db", str(db))
    assert out["files"]["new"] == n_files(docs)


@pytest.mark.slow
def test_failed_run_on_an_existing_index_keeps_it(docs: Path, db: Path, tmp_path: Path) -> None:
    cli_json("index", str(docs), "--db", str(db))
    before = stored_paths(db)
    result = cli(
        "index", str(docs), "--db", str(db), "--brain", "other", "--model", str(tmp_path / "nonexistent" / "folder")
    )
    assert result.exit_code == 6, result.output
    assert db.exists() and stored_paths(db) == before

"""`locallens forget`: roots leave a brain with their documents; the files on disk stay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from locallens.storage.sqlite import Store, write_lock

from .helpers import FakeModels, cli, cli_json, write_corpus


@pytest.fixture()
def roots(tmp_path: Path) -> tuple[Path, Path]:
    notes, work = tmp_path / "notes", tmp_path / "work"
    write_corpus(notes)
    write_corpus(work)
    return notes, work


def _stored(db: Path) -> list[tuple[str, str]]:
    with Store(db, create=False) as store:
        return sorted(store.documents(store.get_brain("default")))


def test_forget_drops_a_root_and_its_files_only(
    roots: tuple[Path, Path], tmp_path: Path, fake_models: FakeModels
) -> None:
    notes, work = roots
    db = tmp_path / "index.db"
    cli_json("index", str(notes), str(work), "--db", str(db))
    before = _stored(db)
    files_on_disk = sorted(p for p in work.rglob("*") if p.is_file())
    dry = cli_json("forget", str(work), "--db", str(db), "--dry-run")
    assert dry["dry_run"] is True and dry["documents"] == len(files_on_disk) and _stored(db) == before
    out = cli_json("forget", str(work), "--db", str(db))
    assert out["forgotten"] == [{"root": str(work.resolve()), "documents": dry["documents"], "chunks": dry["chunks"]}]
    assert all(root == str(notes.resolve()) for root, _ in _stored(db))
    status = cli_json("status", "--db", str(db))["brains"][0]
    assert status["roots"] == [str(notes.resolve())]
    assert sorted(p for p in work.rglob("*") if p.is_file()) == files_on_disk  # untouched
    # A search no longer finds it; `index` brings it back, re-using nothing it forgot.
    again = cli_json("index", str(work), "--db", str(db))
    assert again["files"]["new"] == len(files_on_disk) and _stored(db) == before


def test_forget_refuses_a_path_inside_a_root_or_unknown(
    roots: tuple[Path, Path], tmp_path: Path, fake_models: FakeModels
) -> None:
    notes, _ = roots
    db = tmp_path / "index.db"
    cli_json("index", str(notes), "--db", str(db))
    before = _stored(db)
    inside = next(p for p in notes.iterdir() if p.is_dir())
    result = cli("forget", str(inside), "--db", str(db))
    assert result.exit_code == 2 and f"inside root {notes.resolve()}" in result.stderr
    result = cli("forget", str(tmp_path / "elsewhere"), "--db", str(db))
    assert result.exit_code == 2 and "is not a root" in result.stderr and str(notes.resolve()) in result.stderr
    assert cli("forget", str(notes), "--db", str(tmp_path / "none.db")).exit_code == 3
    assert not (tmp_path / "none.db").exists()
    assert cli("forget", str(notes), "--db", str(db), "--brain", "nope").exit_code == 3
    assert _stored(db) == before


def test_forget_a_missing_root_and_a_nested_one(
    roots: tuple[Path, Path], tmp_path: Path, fake_models: FakeModels
) -> None:
    notes, work = roots
    db = tmp_path / "index.db"
    inner = next(p for p in notes.iterdir() if p.is_dir())
    cli_json("index", str(notes), str(inner), str(work), "--db", str(db))
    # The inner root's files are also the outer root's: forgetting it keeps them.
    out = cli_json("forget", str(inner), "--db", str(db))
    assert out["documents"] == 0 and out["kept_by_other_roots"] > 0
    # An unmounted drive can be forgotten.
    shutil.rmtree(work)
    out = cli_json("forget", str(work), "--db", str(db))
    assert out["documents"] > 0
    assert cli_json("status", "--db", str(db))["brains"][0]["roots"] == [str(notes.resolve())]


def test_forget_waits_for_a_running_index_then_exits_5(
    roots: tuple[Path, Path], tmp_path: Path, fake_models: FakeModels
) -> None:
    notes, _ = roots
    db = tmp_path / "index.db"
    cli_json("index", str(notes), "--db", str(db))
    with write_lock(db, 0):
        result = cli("forget", str(notes), "--db", str(db), "--wait", "0.2")
    assert result.exit_code == 5
    assert _stored(db)

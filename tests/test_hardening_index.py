"""`index` hardening, round three: one document per file however reached (symlinks, hard links),
a `--rebuild` that keeps what it is not told to change and resumes when interrupted, a file caught
mid-save never stored empty, and `status` after a run that never finished.

Fast tier: the fake embedder (`fake_models`), no model loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from locallens import indexer, readers
from locallens.errors import StoreError
from locallens.indexer import IndexRequest, _pinned_model
from locallens.storage import Brain
from locallens.storage.sqlite import Store

from .helpers import FakeEmbedder, FakeModels, cli, cli_json, write_files


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


def stored(db: Path, brain: str = "default") -> dict[str, list[str]]:
    """{relative path: its chunk texts} of a brain."""
    with Store(db, create=False) as store:
        b = store.get_brain(brain)
        rows = store.execute(
            "SELECT d.relative_path, c.content FROM documents d LEFT JOIN chunks c ON c.document_id = d.id"
            " WHERE d.brain_id = ? ORDER BY d.relative_path, c.chunk_index",
            (b.id,),
        )
    out: dict[str, list[str]] = {}
    for path, content in rows:
        out.setdefault(path, [])
        if content is not None:
            out[path].append(content)
    return out


# -- row 50: symlinks and hard links inside a root ----------------------------------------------


def _versions(root: Path) -> Path:
    write_files(
        root,
        {
            "v2/a.md": "# Release notes\n\nVersion two ships the widget exporter.\n",
            "v2/b.md": "# Upgrade\n\nRun the migration before the upgrade.\n",
        },
    )
    (root / "current").symlink_to("v2")
    (root / "latest.md").symlink_to(root / "v2" / "b.md")
    return root


def test_row50_a_symlinked_folder_and_file_give_one_document_per_file(
    tmp_path: Path, db: Path, fake_models: FakeModels
) -> None:
    root = _versions(tmp_path / "docs")
    result = cli("index", str(root), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output  # another path to a file is not an error
    out = json.loads(result.stdout)
    assert sorted(stored(db)) == ["current/a.md", "current/b.md"]
    assert out["files"]["new"] == 2 and out["files"]["skipped"] == 2
    assert out["skipped"] == [
        {"path": "latest.md", "reason": "same file as current/b.md"},
        {"path": "v2", "reason": "same folder as current"},
    ]
    assert "skipped latest.md: same file as current/b.md" in result.stderr
    # No duplicate hits: every chunk text is stored once.
    texts = [t for chunks in stored(db).values() for t in chunks]
    assert len(texts) == len(set(texts))
    # `status` walks the same way: nothing is stale right after the run.
    assert cli_json("status", "--db", str(db))["brains"][0]["stale"] == 0
    again = cli_json("index", str(root), "--db", str(db))
    assert again["files"] == {"new": 0, "changed": 0, "unchanged": 2, "removed": 0, "skipped": 2, "read_again": 0}


def test_row50_duplicates_stored_before_are_removed_without_embedding(
    tmp_path: Path, db: Path, fake_models: FakeModels
) -> None:
    root = write_files(tmp_path / "docs", {"v2/a.md": "# A\n\nAlpha text.\n", "v2/b.md": "# B\n\nBeta text.\n"})
    cli_json("index", str(root), "--db", str(db))
    assert sorted(stored(db)) == ["v2/a.md", "v2/b.md"]
    # A link that comes first in the walk's order now reaches the same files: they move to it.
    (root / "current").symlink_to("v2")
    out = cli_json("index", str(root), "--db", str(db))
    assert sorted(stored(db)) == ["current/a.md", "current/b.md"]
    assert out["files"]["new"] == 2 and out["files"]["removed"] == 2
    assert out["chunks"]["embedded"] == 0  # the same texts: their vectors are reused


def test_row50_a_hard_link_across_two_roots_is_one_document(tmp_path: Path, db: Path, fake_models: FakeModels) -> None:
    one = write_files(tmp_path / "one", {"shared.md": "# Shared\n\nThe same file in two folders.\n"})
    two = tmp_path / "two"
    two.mkdir()
    os.link(one / "shared.md", two / "linked.md")
    out = cli_json("index", str(one), str(two), "--db", str(db))
    assert out["files"]["new"] == 1
    assert out["skipped"] == [
        {"path": str((two / "linked.md").resolve()), "reason": f"same file as {(one / 'shared.md').resolve()}"}
    ]
    assert cli_json("status", "--db", str(db))["brains"][0]["stale"] == 0


# -- row 51: --rebuild keeps the model, settings and roots; an interrupted one resumes -----------


def _model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "custom-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


def test_row51_rebuild_keeps_the_model_settings_and_every_root(
    tmp_path: Path, db: Path, fake_models: FakeModels
) -> None:
    notes = write_files(tmp_path / "notes", {"n.md": "# Notes\n\nA note about the garden.\n"})
    work = write_files(tmp_path / "work", {"w.md": "# Work\n\nThe quarterly report is due.\n"})
    model = _model_folder(tmp_path)
    cli_json("index", str(notes), "--db", str(db), "--model", str(model), "--multi-vector")
    cli_json("index", str(work), "--db", str(db))
    result = cli("index", str(notes), "--db", str(db), "--rebuild", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["model"] == str(model.resolve())
    assert out["files"]["new"] == 2 and out["chunks"]["embedded"] == out["chunks"]["total"]
    # It says what it rebuilds: the brain, its model, its settings and every root.
    assert f"rebuilding brain 'default' with {model.resolve()}" in result.stderr
    assert "one vector per window on" in result.stderr
    assert str(notes.resolve()) in result.stderr and str(work.resolve()) in result.stderr
    (brain,) = cli_json("status", "--db", str(db))["brains"]
    assert brain["model"] == str(model.resolve())
    assert sorted(brain["roots"]) == sorted([str(notes.resolve()), str(work.resolve())])
    assert sorted(stored(db)) == ["n.md", "w.md"]
    with Store(db, create=False) as store:
        assert store.get_brain("default").multi_vector is True


def test_row51_rebuild_model_and_encoder_rules() -> None:
    brain = Brain(1, "b", "all-MiniLM-L6-v2@int8", 384, "paragraph", 220, 40, 0.0, None)

    def pinned(**kwargs: object) -> str:
        return _pinned_model(IndexRequest(paths=[], db=Path("x.db"), brain="b", rebuild=True, **kwargs), brain)  # type: ignore[arg-type]

    assert pinned() == "all-MiniLM-L6-v2@int8"  # nothing named: the brain's model and encoder
    assert pinned(model="auto") == "all-MiniLM-L6-v2@int8"  # the CLI's default is "auto"
    assert pinned(model="minilm") == "all-MiniLM-L6-v2@int8"  # its own model keeps its encoder
    assert pinned(encoder="fp32") == "all-MiniLM-L6-v2"  # told otherwise


def test_row51_rebuild_drops_a_missing_root_only_with_prune_missing(
    tmp_path: Path, db: Path, fake_models: FakeModels
) -> None:
    notes = write_files(tmp_path / "notes", {"n.md": "# Notes\n\nA note.\n"})
    gone = write_files(tmp_path / "gone", {"g.md": "# Gone\n\nOn a drive that is unplugged.\n"})
    cli_json("index", str(notes), str(gone), "--db", str(db))
    gone.rename(tmp_path / "unplugged")
    refused = cli("index", str(notes), "--db", str(db), "--rebuild")
    assert refused.exit_code == 2 and "--prune-missing" in refused.stderr
    out = cli_json("index", str(notes), "--db", str(db), "--rebuild", "--prune-missing")
    assert out["files"]["new"] == 1
    assert cli_json("status", "--db", str(db))["brains"][0]["roots"] == [str(notes.resolve())]


def _many_files(root: Path, n: int = 60) -> Path:
    return write_files(root, {f"f{i:02d}.md": f"# Note {i}\n\nTopic{i} is written about here.\n" for i in range(n)})


def _stop_after_the_first_slice(monkeypatch: pytest.MonkeyPatch) -> Callable[..., object]:
    """Ctrl-C once the first slice (32 chunks) is embedded and committed: the embedder raises
    KeyboardInterrupt on its second call, and the run flushes only once whatever the machine's
    load. Returns the real `encode_passages`, to put back for the rerun."""
    real_encode = FakeEmbedder.encode_passages
    calls = 0

    def stopped(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls > 1:
            raise KeyboardInterrupt
        return real_encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(FakeEmbedder, "encode_passages", stopped)
    monkeypatch.setattr(indexer, "COMMIT_SECONDS", 3600.0)
    return real_encode


def test_row51_an_interrupted_rebuild_is_shown_by_status_and_resumed(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _many_files(tmp_path / "docs")
    first = cli_json("index", str(root), "--db", str(db))
    real_encode = _stop_after_the_first_slice(monkeypatch)
    assert cli("index", str(root), "--db", str(db), "--rebuild").exit_code == 130
    monkeypatch.setattr(FakeEmbedder, "encode_passages", real_encode)
    # The old brain still serves, whole; status shows the unfinished rebuild and how to finish it.
    status = cli_json("status", "--db", str(db))
    assert [b["documents"] for b in status["brains"]] == [60]
    (unfinished,) = status["unfinished_rebuilds"]
    assert unfinished["brain"] == "default" and unfinished["documents"] == 32
    assert unfinished["roots"] == [str(root.resolve())]
    plain = cli("status", "--db", str(db))
    assert "unfinished rebuild of brain 'default'" in plain.stdout and "--rebuild" in plain.stdout
    # The rerun goes on from it: the 32 files rebuilt already are neither read nor embedded again.
    passages = len(fake_models.embedder.passages)
    result = cli("index", str(root), "--db", str(db), "--rebuild", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["files"]["unchanged"] == 32 and out["files"]["new"] == 28
    assert out["chunks"]["embedded"] == 28 and out["chunks"]["total"] == first["chunks"]["total"]
    assert len(fake_models.embedder.passages) - passages == 28
    assert "resuming an interrupted rebuild of brain 'default'" in result.stderr
    after = cli_json("status", "--db", str(db))
    assert after["unfinished_rebuilds"] == [] and after["brains"][0]["documents"] == 60


def test_row51_a_rebuild_with_another_model_does_not_resume_the_leftover(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _many_files(tmp_path / "docs")
    cli_json("index", str(root), "--db", str(db))
    real_encode = _stop_after_the_first_slice(monkeypatch)
    assert cli("index", str(root), "--db", str(db), "--rebuild").exit_code == 130
    monkeypatch.setattr(FakeEmbedder, "encode_passages", real_encode)
    model = _model_folder(tmp_path)
    out = cli_json("index", str(root), "--db", str(db), "--rebuild", "--model", str(model))
    assert out["files"]["new"] == 60 and out["chunks"]["embedded"] == 60
    assert cli_json("status", "--db", str(db))["unfinished_rebuilds"] == []


def test_row51_the_dimension_drift_advice_names_a_rebuild_that_keeps_the_brain() -> None:
    from locallens.errors import ModelMismatchError
    from locallens.retrieval import check_dimension

    brain = Brain(1, "work", "/models/custom", 384, "paragraph", 220, 40, 0.0, 1.0)
    with pytest.raises(ModelMismatchError) as raised:
        check_dimension(brain, 768)
    message = str(raised.value)
    assert "`locallens index --rebuild --brain work PATH`" in message
    assert "keeps its model" in message


# -- row 55: a file caught mid-save (truncate, then write) ---------------------------------------


def _one_file(tmp_path: Path, db: Path) -> Path:
    root = write_files(tmp_path / "docs", {"notes.md": "# Notes\n\nThe first version of the notes.\n"})
    cli_json("index", str(root), "--db", str(db))
    return root / "notes.md"


def _truncate(path: Path) -> None:
    """What an editor saving in place does first: the file is empty, with a new mtime."""
    path.write_bytes(b"")
    st = path.stat()
    os.utime(path, ns=(st.st_mtime_ns + 1_000_000_000, st.st_mtime_ns + 1_000_000_000))


def test_row55_a_file_read_mid_save_is_read_again_once_written(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_file(tmp_path, db)
    _truncate(path)  # the walk sees it empty
    settles = 0

    def editor_finishes() -> None:
        nonlocal settles
        settles += 1
        path.write_text("# Notes\n\nThe second version of the notes.\n", encoding="utf-8")

    monkeypatch.setattr(readers, "_settle", editor_finishes)
    out = cli_json("index", str(path.parent), "--db", str(db))
    assert settles == 1 and out["files"]["changed"] == 1 and out["skipped"] == []
    assert stored(db) == {"notes.md": ["# Notes\n\nThe second version of the notes."]}
    # The stat stored is the written file's: the next run reads nothing.
    assert cli_json("index", str(path.parent), "--db", str(db))["files"]["unchanged"] == 1


def test_row55_a_file_still_being_written_keeps_its_previous_version(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_file(tmp_path, db)
    before = stored(db)
    _truncate(path)
    monkeypatch.setattr(readers, "_settle", lambda: _truncate(path))  # empty again at every look
    result = cli("index", str(path.parent), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["skipped"] == [{"path": "notes.md", "reason": "file changed while being read"}]
    assert stored(db) == before  # never stored empty; the next run reads it again


def test_row55_a_file_that_changes_while_read_is_read_again(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_file(tmp_path, db)
    path.write_text("# Notes\n\nHalf", encoding="utf-8")
    real_read = readers._read_bytes
    reads = 0

    def read_while_writing(fh, limit):  # type: ignore[no-untyped-def]
        nonlocal reads
        reads += 1
        data = real_read(fh, limit)
        if reads == 1:  # the rest of the save lands while the first read is under way
            path.write_text("# Notes\n\nHalf and the rest of it.\n", encoding="utf-8")
        return data

    monkeypatch.setattr(readers, "_read_bytes", read_while_writing)
    monkeypatch.setattr(readers, "_settle", lambda: None)
    out = cli_json("index", str(path.parent), "--db", str(db))
    assert reads == 2 and out["files"]["changed"] == 1
    assert stored(db) == {"notes.md": ["# Notes\n\nHalf and the rest of it."]}


def test_row55_a_file_emptied_on_purpose_is_stored_empty(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _one_file(tmp_path, db)
    _truncate(path)
    settles = 0

    def nothing_happens() -> None:
        nonlocal settles
        settles += 1

    monkeypatch.setattr(readers, "_settle", nothing_happens)
    out = cli_json("index", str(path.parent), "--db", str(db))
    assert settles == 1 and out["files"]["changed"] == 1 and out["skipped"] == []
    assert stored(db) == {"notes.md": []}  # an empty file: a document of 0 chunks, as always


def test_row55_a_new_empty_file_is_read_once(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "docs", {"empty.md": ""})

    def no_settle() -> None:
        raise AssertionError("a file with no stored version waited")

    monkeypatch.setattr(readers, "_settle", no_settle)
    assert cli_json("index", str(root), "--db", str(db))["files"]["new"] == 1


# -- row 70: status after a first index that never finished --------------------------------------


def test_row70_status_after_an_interrupted_first_index(
    tmp_path: Path, db: Path, fake_models: FakeModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _many_files(tmp_path / "docs")
    _stop_after_the_first_slice(monkeypatch)
    assert cli("index", str(root), "--db", str(db)).exit_code == 130
    (brain,) = cli_json("status", "--db", str(db))["brains"]
    assert brain["last_indexed"] is None and brain["documents"] == 32
    # Its roots are known, so what is left is counted right: the 28 files not indexed yet.
    assert brain["roots"] == [str(root.resolve())] and brain["stale"] == 28
    plain = cli("status", "--db", str(db)).stdout
    assert "first index not finished, 28 file(s) still to index" in plain
    assert "changed since" not in plain and "last indexed never" not in plain


# -- row 71: a database file that cannot be written -----------------------------------------------


@pytest.fixture()
def read_only_db(tmp_path: Path) -> Iterator[Path]:
    """A locallens database (WAL mode, one brain) whose file is 0444 and, so that root cannot write
    it either, immutable (ext4's flag); its folder stays writable, as in a user's home."""
    db = tmp_path / "shared" / "index.db"
    with Store(db) as store:
        store.create_brain("scratch", "m", 4, "paragraph", 220, 40)
    db.chmod(0o444)
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        if os.geteuid() == 0:
            pytest.skip("needs chattr to make a file read-only for root")
    elif subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable flag (chattr +i failed)")
    try:
        yield db
    finally:
        if os.geteuid() == 0 and shutil.which("chattr") is not None:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True)


def test_a_wal_file_another_process_removes_meanwhile_is_not_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite deletes -wal and -shm when another process's last connection closes: a file there
    when the writer looked, gone when it asked whether it may write it, is no read-only file (a
    watcher's batch died so, racing a cron `index`)."""
    from locallens.storage import sqlite as store_module

    db = tmp_path / "index.db"
    db.write_bytes(b"")
    shm = Path(f"{db}-shm")
    shm.write_bytes(b"")
    real_access = os.access

    def racing_access(path: Any, mode: int) -> bool:
        if Path(path) == shm:
            shm.unlink()  # the other connection closed between exists() and access()
            return False
        return real_access(path, mode)

    monkeypatch.setattr(store_module.os, "access", racing_access)
    store_module.check_writable(db)  # no StoreError
    shm.write_bytes(b"")
    monkeypatch.setattr(store_module.os, "access", lambda path, mode: Path(path) != shm)
    with pytest.raises(StoreError, match="is read-only"):
        store_module.check_writable(db)


def test_row71_a_read_only_database_file_is_left_without_wal_files(
    read_only_db: Path, tmp_path: Path, fake_models: FakeModels
) -> None:
    db = read_only_db
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n"})
    # A reader is served from the file as it is, and creates nothing beside it either.
    status = cli("status", "--db", str(db), "--json")
    assert status.exit_code == 0, status.output
    assert [b["name"] for b in json.loads(status.stdout)["brains"]] == ["scratch"]
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]
    for args in (("index", str(docs)), ("copy", str(tmp_path / "other.db"), str(db), "--replace")):
        if args[0] == "copy":
            cli_json("index", str(docs), "--db", str(tmp_path / "other.db"))
            result = cli(*args)
        else:
            result = cli(*args, "--db", str(db))
        assert result.exit_code == 1, result.output
        assert f"{db} is read-only" in result.stderr and "chmod u+w" in result.stderr
        assert "Traceback" not in result.output
        leftovers = sorted(p.name for p in db.parent.iterdir() if p.name != db.name)
        assert leftovers == [], leftovers  # no -wal/-shm (0444) that would keep it unwritable
    # Made writable again, the database is indexed at once.
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(db)], capture_output=True)
    db.chmod(0o600)
    assert cli_json("index", str(docs), "--db", str(db))["files"]["new"] == 1
    for suffix in ("-wal", "-shm"):
        extra = Path(f"{db}{suffix}")
        if extra.exists():
            assert stat.S_IMODE(extra.stat().st_mode) == 0o600

"""The store keeps to its own files: other programs' databases, private modes, model drift, read-only media."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from locallens.storage import migrations
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import Store

from .helpers import SAMPLE_DOCS, SMALL_DOCS, cli, copy_sample_docs

QUESTION = "¿En qué puerto escucha la VPN?"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two documents indexed once for this module; tests work on copies (`small_db`)."""
    from locallens.indexer import IndexRequest, index

    root = copy_sample_docs(tmp_path_factory.mktemp("small-docs"), SMALL_DOCS, flat=True)
    db = tmp_path_factory.mktemp("small-index") / "index.db"
    index(IndexRequest(paths=[root], db=db))
    assert not Path(f"{db}-wal").exists()  # closed: everything is in the one file
    return db


@pytest.fixture()
def small_db(small_index: Path, tmp_path: Path) -> Path:
    db = tmp_path / "copy" / "index.db"
    db.parent.mkdir()
    shutil.copyfile(small_index, db)
    return db


@pytest.fixture()
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def one_line(result) -> str:  # type: ignore[no-untyped-def]
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in result.output
    return err


# -- someone else's database --------------------------------------------------------------------


def foreign_database(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, amount REAL)")
    conn.executemany("INSERT INTO invoices(amount) VALUES (?)", [(1.5,), (2.25,)])
    conn.execute("PRAGMA user_version=7")
    conn.commit()
    conn.close()
    return path.read_bytes()


def test_another_programs_database_is_refused_and_left_byte_identical(tmp_path: Path, small: Path) -> None:
    db = tmp_path / "app.sqlite"
    before = foreign_database(db)
    for args in (
        ("status",),
        ("ask", QUESTION, "--context-only"),
        ("ask", QUESTION, "--context-only", "--trim"),
        ("trim", QUESTION),
        ("index", str(small)),
    ):
        result = cli(*args, "--db", str(db))
        assert result.exit_code == 2, (args, result.output)
        assert "not a locallens database" in one_line(result), args
        assert db.read_bytes() == before, args
        assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite", "small"], args
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    conn.close()


def test_a_database_with_another_application_id_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA application_id=1234")
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE brains(id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    result = cli("status", "--db", str(db))
    assert result.exit_code == 2 and "not a locallens database" in one_line(result)
    assert db.read_bytes() == before


def test_a_foreign_database_with_tables_named_like_ours_is_left_byte_identical(tmp_path: Path, small: Path) -> None:
    """`meta` and `brains` are common table names: they do not make a file ours."""
    db = tmp_path / "app.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE brains(id INTEGER PRIMARY KEY, species TEXT)")
    conn.execute("INSERT INTO brains(species) VALUES ('octopus')")
    conn.execute("PRAGMA user_version=3")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    dest = tmp_path / "dest.db"
    for args in (
        ("status", "--db", str(db)),
        ("status", "--json", "--db", str(db)),
        ("ask", QUESTION, "--context-only", "--db", str(db)),
        ("trim", QUESTION, "--db", str(db)),
        ("index", str(small), "--dry-run", "--db", str(db)),
        ("index", str(small), "--db", str(db)),
        ("copy", str(db), str(dest)),
        ("copy", str(tmp_path / "nothing.db"), str(db)),
    ):
        result = cli(*args)
        assert result.exit_code in (2, 3), (args, result.output)
        assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1, (args, result.output)
        assert db.read_bytes() == before, args
        assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite", "small"], args
    assert "not a locallens database" in cli("status", "--db", str(db)).stderr
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()


@pytest.mark.slow
def test_locallens_sets_its_application_id_and_recognises_older_databases(small_db: Path, small: Path) -> None:
    with Store(small_db, create=False) as store:
        assert store.execute("PRAGMA application_id")[0][0] == store_module.APPLICATION_ID
        with store.transaction():
            store.conn.execute("PRAGMA application_id=0")  # as a release before the id wrote it
    # Read-only commands accept it and leave it as it is...
    assert cli("status", "--db", str(small_db)).exit_code == 0
    assert cli("ask", QUESTION, "--db", str(small_db), "--context-only").exit_code == 0
    with Store(small_db, create=False) as store:
        assert store.execute("PRAGMA application_id")[0][0] == 0
    # ...and the next write gives it the id.
    assert cli("index", str(small), "--db", str(small_db)).exit_code == 0
    with Store(small_db, create=False) as store:
        assert store.execute("PRAGMA application_id")[0][0] == store_module.APPLICATION_ID


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    db = tmp_path / "nothing" / "index.db"
    for args in (("status",), ("ask", QUESTION, "--context-only"), ("trim", QUESTION)):
        result = cli(*args, "--db", str(db))
        assert result.exit_code == 3, (args, result.output)
        assert "no index" in one_line(result)
    assert not db.parent.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    for args in (("status",), ("ask", QUESTION, "--context-only"), ("trim", QUESTION)):
        result = cli(*args, "--db", str(empty))
        assert result.exit_code == 3, (args, result.output)
        assert "no index" in one_line(result)
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.slow
def test_index_turns_an_empty_file_into_an_index(tmp_path: Path, small: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    assert cli("index", str(small), "--db", str(db), "--dry-run").exit_code == 0
    assert db.read_bytes() == b""  # a dry run writes nothing
    assert cli("index", str(small), "--db", str(db)).exit_code == 0
    assert cli("status", "--db", str(db)).exit_code == 0


# -- private by default -------------------------------------------------------------------------


@pytest.mark.slow
def test_home_database_wal_and_lock_are_private_whatever_the_umask(
    small: Path, isolated_home: Path, umask_022: None
) -> None:
    assert not isolated_home.exists()
    assert cli("index", str(small)).exit_code == 0
    db = isolated_home / "index.db"
    assert mode(isolated_home) == 0o700
    assert mode(db) == 0o600
    assert mode(Path(f"{db}.lock")) == 0o600
    with Store(db, create=False) as store:
        store.execute("SELECT count(*) FROM chunks")
        for suffix in ("-wal", "-shm"):
            assert mode(Path(f"{db}{suffix}")) == 0o600, suffix


@pytest.mark.slow
def test_a_chosen_existing_folder_keeps_its_mode_and_new_folders_are_private(
    small: Path, tmp_path: Path, umask_022: None
) -> None:
    chosen = tmp_path / "chosen"
    chosen.mkdir(mode=0o755)
    os.chmod(chosen, 0o755)
    assert cli("index", str(small), "--db", str(chosen / "x.db")).exit_code == 0
    assert mode(chosen) == 0o755
    assert mode(chosen / "x.db") == 0o600
    fresh = tmp_path / "new" / "deeper"
    assert cli("index", str(small), "--db", str(fresh / "x.db")).exit_code == 0
    assert mode(tmp_path / "new") == 0o700 and mode(fresh) == 0o700
    assert mode(fresh / "x.db") == 0o600 and mode(Path(f"{fresh / 'x.db'}.lock")) == 0o600


def test_the_tokenizer_cache_under_the_home_is_private(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    from locallens import tokens

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    tokens._seed_cache(tokens.ENCODING)
    cache = isolated_home / "tiktoken"
    assert mode(isolated_home) == 0o700 and mode(cache) == 0o700
    files = list(cache.iterdir())
    assert files and all(mode(f) == 0o600 for f in files)


# -- model drift at question time ---------------------------------------------------------------


def pin_dimension(db: Path, dim: int) -> None:
    """What a brain looks like when its model folder now holds a model of another dimension."""
    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        with store.transaction():
            store.conn.execute(f"DROP TABLE {brain.vec_table}")
            migrations.create_vec_table(store.conn, brain.id, dim)
            store.conn.execute("UPDATE brains SET dim = ? WHERE id = ?", (dim, brain.id))


@pytest.mark.slow
def test_ask_and_trim_refuse_a_brain_of_another_dimension_with_advice(small_db: Path) -> None:
    pin_dimension(small_db, 8)
    for args in (
        ("ask", QUESTION, "--context-only"),
        ("ask", QUESTION, "--context-only", "--hybrid"),
        ("trim", QUESTION),
    ):
        result = cli(*args, "--db", str(small_db))
        assert result.exit_code == 2, (args, result.output)
        err = one_line(result)
        assert "--rebuild" in err and "8 dimensions" in err, err


@pytest.mark.slow
def test_search_checks_the_query_vector_dimension(small_db: Path) -> None:
    """Every question path (ask, trim, eval, serve) goes through search(): it checks there too."""
    import numpy as np

    from locallens.errors import ModelMismatchError
    from locallens.retrieval import search

    with Store(small_db, create=False) as store:
        brain = store.get_brain("default")
        with pytest.raises(ModelMismatchError, match="--rebuild"):
            search(store, brain, QUESTION, np.zeros(brain.dim + 1, dtype=np.float32), 3)


# -- read-only media ----------------------------------------------------------------------------


@pytest.fixture()
def immutable(small_db: Path) -> Iterator[Path]:
    """The database and its folder made unwritable, even for root (the ext4 immutable flag)."""
    targets = [str(small_db), str(small_db.parent)]
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr to make a folder read-only for root (read-only media stand-in)")
    if subprocess.run(["chattr", "+i", *targets], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable flag (chattr +i failed)")
    try:
        yield small_db
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)


@pytest.mark.slow
def test_a_database_on_read_only_media_can_still_be_queried(immutable: Path) -> None:
    db = immutable
    with pytest.raises(PermissionError):
        (db.parent / "probe").touch()
    result = cli("status", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    result = cli("ask", QUESTION, "--db", str(db), "--context-only", "--json", "--trim")
    assert result.exit_code == 0, result.output
    assert "vpn-wireguard.md" in result.stdout
    with Store(db, create=False) as store:
        assert store.read_only
    # Writing is still refused, as one line.
    result = cli("index", str(SAMPLE_DOCS / "hr"), "--db", str(db))
    assert result.exit_code != 0 and "Traceback" not in result.output

"""Faults of docs/behaviour.md#bad-input-and-faults that are not about one input file: disk, models, readers, configuration."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from locallens.storage.sqlite import Store

from .helpers import cli


@pytest.mark.slow
def test_disk_full_is_one_line_nonzero_and_commits_nothing_partial(small: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "index.db"
    assert cli("index", str(small), "--db", str(db)).exit_code == 0
    with Store(db, create=False) as store:
        before = store.execute("SELECT relative_path, chunk_id FROM chunks ORDER BY 1, 2")
    # A database that cannot grow behaves exactly like a full disk for SQLite (SQLITE_FULL).
    real_migrate = Store._migrate

    def capped(self: Store) -> None:
        real_migrate(self)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(Store, "_migrate", capped)
    big = small / "big.md"
    big.write_text(
        "\n\n".join(f"Paragraph {i} about storage quotas and inode tables." * 8 for i in range(60)), encoding="utf-8"
    )
    result = cli("index", str(small), "--db", str(db))
    assert result.exit_code == 1
    # The error is one line; the only other line a first run may print is the one-time notice of
    # the ONNX encoder being made and ready (a test run alone makes it here, a whole suite earlier).
    lines = [line for line in result.stderr.strip().splitlines() if "encoder" not in line or "error" in line]
    assert "disk full" in result.stderr and len(lines) == 1
    assert "Traceback" not in result.output
    monkeypatch.undo()
    with Store(db, create=False) as store:
        assert store.integrity_check() == "ok"
        assert store.execute("SELECT relative_path, chunk_id FROM chunks ORDER BY 1, 2") == before
    # With room again, a rerun completes the job.
    assert cli("index", str(small), "--db", str(db)).exit_code == 0


def test_unwritable_database_location_is_one_line(small: Path) -> None:
    result = cli("index", str(small), "--db", "/proc/locallens-test/index.db")
    assert result.exit_code == 1
    assert "/proc/locallens-test" in result.stderr and "Traceback" not in result.output


@pytest.mark.slow
def test_ask_reads_the_last_committed_state_while_a_writer_is_active(small: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    assert cli("index", str(small), "--db", str(db)).exit_code == 0
    writer = Store(db, create=False)
    writer.conn.execute("BEGIN IMMEDIATE")
    writer.conn.execute("DELETE FROM chunks")  # uncommitted: readers must not see it
    try:
        started = time.monotonic()
        result = cli("ask", "¿En qué puerto escucha la VPN?", "--db", str(db), "--context-only", "--json", "--trim")
        assert result.exit_code == 0, result.output
        assert time.monotonic() - started < 20
        assert json.loads(result.stdout)["sources"][0]["path"] == "vpn-wireguard.md"
    finally:
        writer.conn.execute("ROLLBACK")
        writer.close()


@pytest.mark.slow
def test_named_hub_model_unavailable_offline_is_exit_6_fast(small: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    result = cli("index", str(small), "--db", str(tmp_path / "i.db"), "--model", "bge-small")
    assert result.exit_code == 6
    assert "BAAI/bge-small-en-v1.5" in result.stderr and str(tmp_path / "hf") in result.stderr
    assert time.monotonic() - started < 15


def test_missing_model_folder_is_exit_6(small: Path, tmp_path: Path) -> None:
    result = cli("index", str(small), "--db", str(tmp_path / "i.db"), "--model", str(tmp_path / "no-model"))
    assert result.exit_code == 6 and str(tmp_path / "no-model") in result.stderr


def test_auto_prefers_bge_small_from_the_local_cache(tmp_path: Path) -> None:
    from locallens.embedding import BGE_QUERY_INSTRUCTION, resolve_model

    assert resolve_model("auto").name == "all-MiniLM-L6-v2"
    snapshot = tmp_path / "hf" / "hub" / "models--BAAI--bge-small-en-v1.5" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    spec = resolve_model("auto")
    assert spec.name == "BAAI/bge-small-en-v1.5" and spec.source == str(snapshot)
    assert spec.query_prefix == BGE_QUERY_INSTRUCTION
    assert resolve_model("minilm").name == "all-MiniLM-L6-v2"


@pytest.mark.slow
def test_config_file_then_env_then_flag(small: Path, tmp_path: Path, isolated_home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens.cli import main

    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        'brain = "from-config"\n[index]\nchunk_size = 120\nchunk_overlap = 10\n', encoding="utf-8"
    )

    def run(*args: str) -> dict:
        monkeypatch.setattr("sys.argv", ["locallens", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        assert exit_info.value.code in (0, None)
        return {}

    db = tmp_path / "cfg.db"
    run("index", str(small), "--db", str(db))
    monkeypatch.setenv("LOCALLENS_BRAIN", "from-env")
    run("index", str(small), "--db", str(db))
    run("index", str(small), "--db", str(db), "--brain", "from-flag")
    with Store(db, create=False) as store:
        brains = {b.name: b for b in store.brains()}
    assert set(brains) == {"from-config", "from-env", "from-flag"}
    assert brains["from-config"].chunk_size == 120 and brains["from-config"].chunk_overlap == 10


def test_bad_config_file_is_a_usage_error(isolated_home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens.cli import main

    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text("brain = [unclosed\n", encoding="utf-8")
    monkeypatch.setattr("sys.argv", ["locallens", "status"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2

"""The commands on a PostgreSQL store, end to end: real embedding model, a real PostgreSQL with
pgvector started by the test suite (tests/pg.py), several processes at once.

The store's own contract (both stores, same tests) is tests/test_store_contract.py; `copy` is
tests/test_copy.py. Here: every command on a `postgresql://` --db gives what it gives on SQLite,
two indexers on one brain (one waits, or exits 5), readers during an index run, a SIGKILL
mid-run and its rerun.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from locallens.storage import PostgresURL, open_store, parse_db

from .helpers import ROOT, SAMPLE_DOCS, cli, cli_json, copy_sample_docs

pytestmark = pytest.mark.slow

QUESTION = "Which port does the staging database listen on?"
# Five files (the answer's among them): enough for every check here, a fifth of sample_docs' time.
FIVE_DOCS = (
    "engineering/staging-environment.md",
    "hr/leave-policy.md",
    "hr/remote-work.txt",
    "notas/vpn-wireguard.md",
    "operations/backup-policy.txt",
)


@pytest.fixture()
def five(tmp_path: Path) -> Path:
    return copy_sample_docs(tmp_path / "five", FIVE_DOCS)


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "locallens", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


def _documents(url: str, brain: str = "default") -> int:
    db = parse_db(url)
    try:
        with open_store(db) as store:
            found = store.find_brain(brain)
            return len(store.documents(found)) if found is not None else 0
    except Exception:
        return 0  # the schema or brain does not exist yet


def _source_ids(out: dict) -> list[str]:
    return [s["id"] for s in out["sources"]]


def test_every_command_works_on_postgres_as_on_sqlite(five: Path, pg_url: str, tmp_path: Path) -> None:
    docs = five
    sqlite_db = str(tmp_path / "index.db")
    first = cli_json("index", str(docs), "--db", pg_url)
    reference = cli_json("index", str(docs), "--db", sqlite_db)
    assert first["chunks"]["total"] == reference["chunks"]["total"] > 0
    assert first["files"] == reference["files"]
    assert first["db"] == str(PostgresURL(pg_url))

    # Unchanged tree: nothing embedded again; a changed file re-embeds only its chunks.
    again = cli_json("index", str(docs), "--db", pg_url)
    assert again["chunks"]["embedded"] == 0 and again["files"]["unchanged"] == first["files"]["new"]
    changed = docs / "hr" / "leave-policy.md"
    changed.write_text(changed.read_text(encoding="utf-8") + "\n\nA new closing paragraph.\n", encoding="utf-8")
    third = cli_json("index", str(docs), "--db", pg_url)
    assert third["files"]["changed"] == 1 and 0 < third["chunks"]["embedded"] < first["chunks"]["total"]
    cli_json("index", str(docs), "--db", sqlite_db)

    # Vector search: the same excerpts in the same order (the PostgreSQL store searches a brain
    # this small exactly). Hybrid (the default): PostgreSQL's BM25 measures a chunk's length in
    # distinct lexemes, FTS5 in words, so the fused order may differ below the top; the answer's
    # excerpt still leads.
    on_pg = cli_json("ask", QUESTION, "--context-only", "--json", "--no-hybrid", "--db", pg_url)
    on_sqlite = cli_json("ask", QUESTION, "--context-only", "--json", "--no-hybrid", "--db", sqlite_db)
    assert _source_ids(on_pg) == _source_ids(on_sqlite)
    assert [s["score"] for s in on_pg["sources"]] == pytest.approx([s["score"] for s in on_sqlite["sources"]], abs=1e-3)
    hybrid_pg = cli_json("ask", QUESTION, "--context-only", "--json", "--db", pg_url)
    hybrid_sqlite = cli_json("ask", QUESTION, "--context-only", "--json", "--db", sqlite_db)
    assert (
        hybrid_pg["sources"][0]["path"] == hybrid_sqlite["sources"][0]["path"] == "engineering/staging-environment.md"
    )
    assert "5433" in json.dumps(hybrid_pg["sources"][:2])
    exact = cli_json("ask", QUESTION, "--context-only", "--json", "--exact", "--no-hybrid", "--db", pg_url)
    assert _source_ids(exact) == _source_ids(on_pg)

    trimmed = cli_json("trim", QUESTION, "--json", "--db", pg_url)
    assert "5433" in json.dumps(trimmed)

    status = cli_json("status", "--json", "--db", pg_url)
    (brain,) = status["brains"]
    assert brain["name"] == "default" and brain["chunks"] == third["chunks"]["total"]

    # A removed file is pruned from the index.
    (docs / "hr" / "leave-policy.md").unlink()
    pruned = cli_json("index", str(docs), "--db", pg_url)
    assert pruned["files"]["removed"] == 1


def test_postgres_errors_are_one_line_with_their_exit_codes(pg_url: str) -> None:
    url = PostgresURL(pg_url)
    closed = "postgresql://someone:hunter2@127.0.0.1:1/nothing"
    result = cli("status", "--db", closed)
    assert result.exit_code == 8, result.output
    assert "hunter2" not in result.output and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1

    wrong_db = urlunsplit(urlsplit(url.url)._replace(path="/no_such_database"))
    result = cli("status", "--db", wrong_db)
    assert result.exit_code == 9, result.output
    assert "no_such_database" in result.stderr

    # A database that exists but holds no index: exit 3, like a missing SQLite file.
    result = cli("ask", QUESTION, "--context-only", "--db", pg_url)
    assert result.exit_code == 3, result.output


def test_second_indexer_of_a_brain_waits_or_exits_5(five: Path, pg_url: str) -> None:
    docs = five
    from locallens.storage.postgres import writer_lock

    cli_json("index", str(docs), "--db", pg_url)
    with writer_lock(PostgresURL(pg_url), "default", 0):
        started = time.monotonic()
        result = cli("index", str(docs), "--db", pg_url, "--wait", "0.5")
        assert result.exit_code == 5, result.output
        assert time.monotonic() - started >= 0.5 and "--wait" in result.stderr
        # Another brain is not blocked, and readers keep working.
        assert cli("index", str(docs / "hr"), "--db", pg_url, "--brain", "hr").exit_code == 0
        assert cli("status", "--db", pg_url).exit_code == 0

    # Two real runs at once on a new brain: one waits for the other, then finds everything done.
    a = _spawn("index", str(docs), "--db", pg_url, "--brain", "twice", "--json", "--wait", "300")
    b = _spawn("index", str(docs), "--db", pg_url, "--brain", "twice", "--json", "--wait", "300")
    outs = [json.loads(p.communicate(timeout=600)[0]) for p in (a, b)]
    assert a.returncode == 0 and b.returncode == 0
    assert sorted(o["chunks"]["embedded"] for o in outs)[0] == 0
    assert _documents(pg_url, "twice") == sum(1 for p in docs.rglob("*") if p.is_file())


def test_readers_work_while_a_rebuild_runs(docs: Path, pg_url: str) -> None:
    cli_json("index", str(docs), "--db", pg_url)
    writer = _spawn("index", str(docs), "--db", pg_url, "--rebuild", "--json")
    answers = 0
    try:
        while writer.poll() is None and answers < 3:
            out = cli_json("ask", QUESTION, "--context-only", "--json", "--db", pg_url)
            assert out["sources"][0]["path"] == "engineering/staging-environment.md"
            answers += 1
    finally:
        _, stderr = writer.communicate(timeout=600)
    assert writer.returncode == 0, stderr
    assert answers >= 1
    assert cli_json("ask", QUESTION, "--context-only", "--json", "--db", pg_url)["sources"]


def test_sigkill_mid_run_then_rerun_completes(tmp_path: Path, pg_url: str) -> None:
    corpus = tmp_path / "corpus"
    for i in range(6):
        shutil.copytree(SAMPLE_DOCS, corpus / f"copy{i}")
        for p in (corpus / f"copy{i}").rglob("*.md"):  # unique text: every copy needs embedding
            p.write_text(p.read_text(encoding="utf-8") + f"\n\nCopy number {i}.\n", encoding="utf-8")
    total_files = sum(1 for p in corpus.rglob("*") if p.is_file())
    proc = _spawn("index", str(corpus), "--db", pg_url, "--json")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and _documents(pg_url) == 0:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _documents(pg_url)
    assert 0 < partial < total_files, "the kill should land mid-run"

    # The server released the killed run's lock: the rerun does not wait, and finishes the job.
    out = cli_json("index", str(corpus), "--db", pg_url, "--wait", "0")
    assert out["files"]["new"] == total_files - partial
    with open_store(parse_db(pg_url)) as store:
        stats = store.stats(store.get_brain("default"))
    assert stats.documents == total_files and stats.chunks == stats.vectors == out["chunks"]["total"]

"""`index --watch`: edits, deletions, atomic saves, temporary files, bursts, a vanishing root, the
writer lock shared with other runs, and stopping on a signal. Fast tier: the fake embedder, the
watcher in a thread of the test (its real file events, inotify on Linux)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from locallens.indexer import IndexRequest, index
from locallens.storage import open_store
from locallens.storage.sqlite import write_lock
from locallens.watch import WatchBatch, stop_on_signals, watch

from .helpers import cli, write_corpus


def documents(db: Path) -> dict[str, str]:
    """{relative path: text} of the brain's documents, as stored."""
    with open_store(db) as store:
        brain = store.get_brain("default")
        return {
            path: "\n".join(c.content for c in store.document_chunks(brain, path))
            for path in store.document_paths(brain)
        }


def eventually(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting until {what}")


class Watcher:
    def __init__(self, request: IndexRequest) -> None:
        self.batches: list[WatchBatch] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=watch, args=(request, self.batches.append, self.stop), daemon=True)
        self.thread.start()
        time.sleep(0.3)  # the watches are in place


@pytest.fixture()
def watched(fake_models: Any, tmp_path: Path) -> Iterator[tuple[Path, Path, Watcher]]:
    root = write_corpus(tmp_path / "docs")
    db = tmp_path / "index.db"
    request = IndexRequest(paths=[root], db=db)
    index(request)
    watcher = Watcher(request)
    yield root, db, watcher
    watcher.stop.set()
    watcher.thread.join(timeout=20)
    assert not watcher.thread.is_alive(), "the watcher did not stop"


def test_edit_new_file_and_delete(watched: tuple[Path, Path, Watcher]) -> None:
    root, db, watcher = watched
    (root / "hr" / "leave.md").write_text("# Parental leave\n\nParental leave lasts twenty weeks now.\n")
    eventually(lambda: "twenty weeks" in documents(db).get("hr/leave.md", ""), "the edit is indexed")
    (root / "new.md").write_text("The rooftop terrace opens at eight.\n")
    eventually(lambda: "new.md" in documents(db), "the new file is indexed")
    (root / "office" / "coffee.md").unlink()
    eventually(lambda: "office/coffee.md" not in documents(db), "the deleted file is gone")
    assert watcher.batches and all(b.report.skipped == [] for b in watcher.batches)


def test_atomic_saves_and_temporary_files(watched: tuple[Path, Path, Watcher]) -> None:
    root, db, _ = watched
    target = root / "notas" / "vpn.md"
    # An editor's atomic save: the new text goes to a temporary file renamed over the original.
    temp = target.with_name(".vpn.md.tmp-1234")
    temp.write_text("# VPN\n\nLa VPN usa WireGuard en el puerto 51821.\n")
    os.replace(temp, target)
    # Swap and backup files that vim and emacs leave beside the files they edit.
    (root / "notas" / ".vpn.md.swp").write_bytes(b"b0VIM 9.0\x00" * 20)
    (root / "notas" / "vpn.md~").write_text("old text of the backup copy\n")
    (root / "notas" / ".#vpn.md").write_text("lock of emacs\n")
    eventually(lambda: "51821" in documents(db).get("notas/vpn.md", ""), "the atomic save is indexed")
    time.sleep(0.5)
    assert set(documents(db)) == {
        "engineering/staging.md",
        "notas/vpn.md",
        "hr/leave.md",
        "operations/backups.txt",
        "office/coffee.md",
    }


def test_a_burst_of_a_thousand_changes(watched: tuple[Path, Path, Watcher]) -> None:
    root, db, watcher = watched
    burst = root / "burst"
    burst.mkdir()
    for n in range(1000):
        (burst / f"note-{n:04d}.md").write_text(f"Note number {n} mentions the word kumquat{n}.\n")
    eventually(lambda: sum(p.startswith("burst/") for p in documents(db)) == 1000, "all 1,000 are indexed", 120)
    assert len(watcher.batches) < 100  # grouped into batches, not one run per file


def test_a_root_that_disappears_and_comes_back(fake_models: Any, tmp_path: Path) -> None:
    outer = tmp_path / "mnt"
    root = write_corpus(outer / "docs")
    db = tmp_path / "index.db"
    request = IndexRequest(paths=[root], db=db)
    index(request)
    watcher = Watcher(request)
    try:
        hidden = outer / "docs-unmounted"
        root.rename(hidden)  # the drive goes away
        eventually(lambda: any(b.roots_missing for b in watcher.batches), "the missing root is noticed")
        assert len(documents(db)) == 5  # its files are kept while it is away
        (hidden / "new.md").write_text("Written while the drive was away: the lift is serviced on Tuesdays.\n")
        hidden.rename(root)  # back again
        eventually(lambda: "new.md" in documents(db), "the root is indexed again once back")
        (root / "later.md").write_text("And it is watched again: the canteen closes at three.\n")
        eventually(lambda: "later.md" in documents(db), "the root is watched again")
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=20)
    assert not watcher.thread.is_alive()


def test_the_writer_lock_is_shared(watched: tuple[Path, Path, Watcher]) -> None:
    root, db, _watcher = watched
    # Between batches the watcher holds no lock: another index run (cron's) goes through.
    result = cli("index", str(root), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    # While another writer holds the lock, the watcher keeps its changes and retries.
    with write_lock(db, 0):
        (root / "held.md").write_text("Written while another run held the lock.\n")
        time.sleep(1.5)
        assert "held.md" not in documents(db)
    eventually(lambda: "held.md" in documents(db), "the change is indexed once the lock is free")


def test_a_signal_stops_the_watcher_after_its_batch() -> None:
    stop = threading.Event()
    with stop_on_signals(stop):
        os.kill(os.getpid(), signal.SIGTERM)
        eventually(stop.is_set, "SIGTERM sets the stop flag", 5)
        stop.clear()
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: no KeyboardInterrupt mid-commit
        eventually(stop.is_set, "SIGINT sets the stop flag", 5)


def test_the_database_under_a_root_does_not_feed_back(fake_models: Any, tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "docs")
    db = root / "index.db"  # the index lives inside the folder it watches
    request = IndexRequest(paths=[root], db=db)
    index(request)
    watcher = Watcher(request)
    try:
        (root / "one.md").write_text("One change, one batch.\n")
        eventually(lambda: "one.md" in documents(db), "the change is indexed")
        time.sleep(1.5)
        assert len(watcher.batches) <= 2  # the batch's own writes to index.db trigger nothing
    finally:
        watcher.stop.set()
        watcher.thread.join(timeout=20)


@pytest.mark.slow
def test_watch_as_a_service_runs_it(tmp_path: Path) -> None:
    """The real command with the real model: JSON lines per batch, a cron run between batches,
    SIGTERM ends it with exit 0 after its batch."""
    import json
    import subprocess
    import sys

    from .helpers import SMALL_DOCS, copy_sample_docs

    root = copy_sample_docs(tmp_path / "docs", SMALL_DOCS)
    db = tmp_path / "index.db"
    command = [sys.executable, "-m", "locallens", "index", str(root), "--db", str(db)]
    proc = subprocess.Popen([*command, "--watch", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # the first pass
        assert first["files"]["new"] == 2
        time.sleep(0.5)
        (root / "hr" / "leave-policy.md").write_text("# Leave\n\nParental leave lasts twenty weeks.\n")
        batch = json.loads(proc.stdout.readline())
        assert batch["batch"] == 1 and batch["files"]["changed"] == 1
        cron = subprocess.run([*command, "--quiet"], capture_output=True, text=True, timeout=120)
        assert cron.returncode in (0, 5), cron.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in proc.stderr.read() if proc.stderr else True
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "twenty weeks" in documents(db)["hr/leave-policy.md"]


def test_watch_refuses_dry_run(tmp_path: Path) -> None:
    result = cli("index", str(write_corpus(tmp_path / "docs")), "--db", str(tmp_path / "i.db"), "--watch", "--dry-run")
    assert result.exit_code == 2
    assert "--watch and --dry-run" in result.stderr

"""`locallens index --watch`: index, then follow the roots' changes as they happen.

After the first pass (an ordinary `index` run), the roots are watched with watchfiles (the
kernel's file events: inotify, FSEvents, ReadDirectoryChangesW; near-zero CPU while nothing
changes, docs/decisions.md#watching-files). Changes are grouped: a batch is yielded once no new
change came for `STEP_MS`, or after `DEBOUNCE_MS` of continuous changes (a burst of 1,000 files
is a handful of batches, not 1,000 runs). Each batch is an ordinary incremental `index` run over
all the roots: unchanged files cost a stat, changed ones are re-read and re-embedded, vanished
ones are removed. Working from what is on disk rather than from the events themselves is what
makes editors' atomic saves (write a temporary file, rename it over the original) and their
swap files harmless: by the time the batch runs, the temporary file is gone or is ignored.

The writer lock is held only while a batch runs, never while waiting for changes, so a cron
`index` (or any other writer) runs between batches; one that arrives during a batch waits its
`--wait` and then exits 5, as it always has. A batch that finds the lock taken is kept and
retried `LOCKED_RETRY_S` later: the watcher never gives up its changes.

A root that disappears (an unmounted drive, a folder moved away) keeps its indexed files, as
`index` always does; the watcher looks for it every `ROOT_CHECK_S` and, once it is back,
indexes it again and watches it anew. SIGINT (Ctrl-C) and SIGTERM (systemd stopping the unit)
set a flag: the batch being written completes and is committed, then the watcher returns.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.errors import LockedError
from locallens.indexer import IndexReport, IndexRequest, index

DEBOUNCE_MS = 1000  # the longest a batch keeps gathering changes that keep coming
STEP_MS = 100  # a batch is run once no new change arrived for this long
ROOT_CHECK_S = 2.0  # how often vanished roots are looked for again
LOCKED_RETRY_S = 1.0  # a batch that found the writer lock taken runs again after this


@dataclass(slots=True)
class WatchBatch:
    """One batch: the changes that triggered it and the index run they led to."""

    number: int
    changes: int  # file events grouped into this batch (after the filter)
    report: IndexReport
    roots_missing: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "batch": self.number,
            "changes": self.changes,
            "roots_missing": self.roots_missing,
            **self.report.as_json(),
        }


class WatchFilter:
    """Which file events matter: watchfiles' default filter (VCS folders, editor swap and backup
    files: `.swp`, `~`, `.#name`) and never the database's own files, which may live under a root."""

    def __init__(self, db: Any) -> None:
        from watchfiles import DefaultFilter

        self._default = DefaultFilter()
        self._own: set[str] = set()
        if isinstance(db, Path):
            base = str(db.resolve())
            self._own = {base, f"{base}-wal", f"{base}-shm", f"{base}-journal", f"{base}.lock"}

    def __call__(self, change: Any, path: str) -> bool:
        return path not in self._own and self._default(change, path)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` (the current batch then finishes) instead of interrupting."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are delivered to the main thread only: the caller stops us with `stop`
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _existing(roots: list[Path]) -> list[Path]:
    return [root for root in roots if root.exists()]


def watch(
    request: IndexRequest,
    on_batch: Callable[[WatchBatch], None],
    stop: threading.Event | None = None,
) -> int:
    """Follow `request.paths` until `stop` is set (or SIGINT/SIGTERM); returns the batches run.

    The first pass is the caller's (an ordinary `index` run, printed as `index` prints it); every
    batch after it goes to `on_batch`.
    """
    from watchfiles import watch as watch_paths

    stop = stop or threading.Event()
    roots = [Path(p).expanduser().resolve() for p in request.paths]
    batch_request = dataclasses.replace(request, wait=0.0, rebuild=False)  # a first --rebuild is done once
    keep = WatchFilter(request.db)
    batches = 0

    def run_batch(changes: int) -> bool:
        """One index run; False when the lock was taken (the batch is to be retried)."""
        nonlocal batches
        try:
            report = index(batch_request)
        except LockedError:
            return False
        batches += 1
        missing = [str(r) for r in roots if not r.exists()]
        on_batch(WatchBatch(batches, changes, report, missing))
        return True

    with stop_on_signals(stop):
        pending = 0  # changes seen but not yet indexed (the lock was taken)
        while not stop.is_set():
            watched = _existing(roots)
            if not watched:
                stop.wait(ROOT_CHECK_S)
                continue
            restart = False
            last_check = time.monotonic()
            for changes in watch_paths(
                *watched,
                watch_filter=keep,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=stop,
                rust_timeout=int(min(ROOT_CHECK_S, LOCKED_RETRY_S) * 1000),
                yield_on_timeout=True,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                pending += len(changes)
                if pending and run_batch(pending):
                    pending = 0
                if time.monotonic() - last_check >= ROOT_CHECK_S:
                    last_check = time.monotonic()
                    if _existing(roots) != watched:
                        restart = True  # a root vanished or came back: watch the new set
                        break
                if stop.is_set():
                    break
            if restart and not stop.is_set():
                pending += 1  # a root that came back is indexed again at once
                if run_batch(pending):
                    pending = 0
    return batches

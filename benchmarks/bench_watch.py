"""`locallens index --watch` on sample_docs/: how soon an edit is searchable, and what idling costs.

One run, the default (packaged) model, the real command as a subprocess (`index --watch --json`):
1. edits: 20 times, a file gets a new sentence with a unique word; the time from the save (the
   write returning) until `locallens trim WORD --json` finds the word in its excerpts, polled
   every 50 ms in this process through the library (`retrieve`, as `ask` searches), so the poll
   itself costs no process start. Median, min and max; also the watcher's own batch time;
2. a deleted file: the time until no excerpt of it is found any more;
3. a cron run: `locallens index` of the same roots while the watcher runs: its exit code (0, or
   5 when it met a batch in progress and its --wait ran out) and its wall time;
4. idle CPU: the watcher's CPU seconds (utime + stime from /proc) over 30 s with no change.

    python benchmarks/bench_watch.py [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import _common as c

EDIT_TARGET = "operations/vendor-contacts.md"
DELETE_TARGET = "operations/on-call-rotation.md"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def found(db: Path, word: str, path: str | None = None) -> bool:
    from locallens.models import WarmModels
    from locallens.retrieval import retrieve
    from locallens.storage import open_store

    models = found.__dict__.setdefault("models", WarmModels())
    with open_store(db) as store:
        brain = store.get_brain("default")
        result = retrieve(store, brain, models.embedder(brain.model), word, 5, hybrid=True)
    return any((word in h.content) if path is None else (h.chunk.relative_path == path) for h in result.hits)


def main() -> None:
    args = c.parse_args(__doc__ or "")
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("bench_watch", args.quick)
    edits = 5 if args.quick else 20
    table = c.Table("index --watch on sample_docs")
    with c.bench_dir("watch") as tmp:
        docs = tmp / "docs"
        shutil.copytree(c.SAMPLE_DOCS, docs)
        db = tmp / "index.db"
        c.note("first pass and watcher start")
        watcher = subprocess.Popen(
            c.cli_command("index", str(docs), "--db", str(db), "--watch", "--json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert watcher.stdout is not None
        json.loads(watcher.stdout.readline())  # the first pass is done
        time.sleep(1.0)
        latencies: list[float] = []
        target = docs / EDIT_TARGET
        original = target.read_text(encoding="utf-8")
        batches: list[float] = []
        for n in range(edits):
            word = f"zanzibarq{n}x"
            target.write_text(original + f"\n\nThe escalation contact of week {n} is {word}.\n", encoding="utf-8")
            saved = time.perf_counter()
            while not found(db, word):
                time.sleep(0.05)
                if time.perf_counter() - saved > 60:
                    raise SystemExit(f"edit {n} not searchable after 60 s")
            latencies.append(time.perf_counter() - saved)
            batches.append(json.loads(watcher.stdout.readline())["seconds"])
            c.note(f"edit {n}: searchable after {latencies[-1]:.2f} s")
            time.sleep(0.3)
        table.section("an edit, from the save until a search finds it")
        table.add(f"median of {edits}", c.fmt_s(c.median(latencies)), "< 2 s", c.median(latencies) < 2.0)
        table.add("min / max", f"{min(latencies):.2f} / {max(latencies):.2f} s")
        table.add("the watcher's batch (index run), median", c.fmt_s(c.median(batches)))

        (docs / DELETE_TARGET).unlink()
        deleted = time.perf_counter()
        while found(db, "on-call rotation stipend", DELETE_TARGET):
            time.sleep(0.05)
        table.section("a deleted file")
        table.add("gone from the results after", c.fmt_s(time.perf_counter() - deleted))

        c.note("a cron run during the watch")
        cron = c.run_child(c.cli_command("index", str(docs), "--db", str(db), "--quiet", "--wait", "10"))
        table.section("cron `index` while watching")
        table.add("exit code", str(cron.returncode), "0 or 5", cron.returncode in (0, 5))
        table.add("wall time", c.fmt_s(cron.seconds))

        idle = 10 if args.quick else 30
        c.note(f"idle for {idle} s")
        time.sleep(2.0)
        before, t0 = cpu_seconds(watcher.pid), time.perf_counter()
        time.sleep(idle)
        used, wall = cpu_seconds(watcher.pid) - before, time.perf_counter() - t0
        table.section(f"idle watcher, {idle} s without a change")
        table.add("CPU", f"{used * 1000 / wall:.2f} ms per s ({100 * used / wall:.3f}% of a core)")
        watcher.terminate()
        code = watcher.wait(timeout=30)
        table.add("exit code on SIGTERM", str(code), "0", code == 0)
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

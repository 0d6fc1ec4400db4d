"""Chunker benchmark: a full `locallens index sample_docs` with each chunking strategy.

    .venv/bin/python benchmarks/bench_chunkers.py [--quick] [--rounds N]

Each round indexes sample_docs/ three times, each time in a fresh database, as a user would:

    locallens index sample_docs --db <tmp>/<chunker>-<round>.db --chunker <chunker> --json

with the packaged MiniLM embedding model, offline, in a subprocess (so start-up, model loading
and the import of torch count). The three strategies run in turn within a round (paragraph,
percentile, maxmin), so a drift of the shared machine's speed touches all three alike, and the
ratio to paragraph chunking is taken round by round. The table gives, per strategy, the median
wall and CPU seconds, the median of the per-round ratios to paragraph (target: the semantic
chunkers within 2x), the chunk count and the mean chunk length in tiktoken tokens (what the
chunks of the last round hold).

Default 3 rounds (--quick: 1). One round costs about three paragraph runs: ~1-2 minutes on 2
idle cores, several times that on a loaded machine (the load average is printed).
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import _common as c

CHUNKERS = ("paragraph", "percentile", "maxmin")
TARGET_RATIO = 2.0
FULL_ROUNDS = 3


@dataclass(slots=True)
class Figures:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    ratio: list[float] = field(default_factory=list)  # wall / paragraph's wall in the same round
    chunks: int = 0
    mean_tokens: float = 0.0
    peak_rss: int = 0


def chunk_lengths(db: Path) -> list[int]:
    """Tokens (tiktoken cl100k, as the chunkers count) of every chunk stored in `db`."""
    from locallens.tokens import count_tokens

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return [count_tokens(content) for (content,) in conn.execute("SELECT content FROM chunks")]


def index_once(tmp: Path, chunker: str, round_no: int) -> tuple[float, float, c.ChildRun, Path]:
    """One CLI index run on a fresh database: (wall s, CPU s of the child, the run, the db)."""
    db = tmp / f"{chunker}-{round_no}.db"
    before = os.times()
    run = c.run_child(
        c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db), "--chunker", chunker, "--json"),
        cwd=c.ROOT,
    )
    after = os.times()
    c.check_child(run, f"locallens index --chunker {chunker}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return run.seconds, cpu, run, db


def main() -> None:
    args = c.parse_args(
        __doc__.splitlines()[0], ints=[("--rounds", f"rounds of the three runs (default {FULL_ROUNDS})")]
    )
    rounds = args.rounds or (1 if args.quick else FULL_ROUNDS)
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("chunker benchmark: locallens index sample_docs", args.quick)
    figures = {name: Figures() for name in CHUNKERS}
    with c.bench_dir("chunkers") as tmp:
        for round_no in range(1, rounds + 1):
            paragraph_wall = None
            for name in CHUNKERS:
                wall, cpu, run, db = index_once(tmp, name, round_no)
                report = json.loads(run.stdout)
                f = figures[name]
                f.wall.append(wall)
                f.cpu.append(cpu)
                f.peak_rss = max(f.peak_rss, run.max_rss_bytes)
                if name == "paragraph":
                    paragraph_wall = wall
                assert paragraph_wall is not None
                f.ratio.append(wall / paragraph_wall)
                lengths = chunk_lengths(db)
                f.chunks = int(report["chunks"]["total"])
                f.mean_tokens = statistics.fmean(lengths) if lengths else 0.0
                c.note(
                    f"round {round_no}/{rounds} {name}: {c.fmt_s(wall)} wall, {c.fmt_s(cpu)} CPU, "
                    f"{f.chunks} chunks, load {c.load_average()}"
                )

    table = c.Table(f"locallens index sample_docs, fresh database, median of {rounds} round(s)")
    for name in CHUNKERS:
        f = figures[name]
        ratio = c.median(f.ratio)
        table.section(name)
        table.add(
            f"{name}: index time",
            c.fmt_s(c.median(f.wall)),
            note=f"CPU {c.fmt_s(c.median(f.cpu))}, peak RSS {c.fmt_bytes(f.peak_rss)}",
        )
        if name == "paragraph":
            table.add(f"{name}: ratio to paragraph", "1.00x")
        else:
            table.add(
                f"{name}: ratio to paragraph",
                f"{ratio:.2f}x",
                f"<= {TARGET_RATIO:.0f}x",
                ratio <= TARGET_RATIO,
                note="median of the per-round ratios",
            )
        table.add(f"{name}: chunks", str(f.chunks))
        table.add(f"{name}: mean chunk tokens", f"{f.mean_tokens:.0f}", note="tiktoken cl100k")
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

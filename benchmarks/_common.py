"""Shared plumbing of the benchmark scripts: the machine header, timing helpers, the table.

Benchmarks print figures; they are not tests. Every script prints the machine it ran on (cores,
CPU model, load average at start and end: the reference machine is shared, so a figure measured
under load says so) and one table with the target beside each figure and PASS/MISS where the
script sets a target.

This module is imported by the scripts as a sibling (`python benchmarks/bench_x.py` puts
`benchmarks/` first on sys.path); it is not part of the `locallens` package.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = ROOT / "sample_docs"
QUESTIONS = ROOT / "tests" / "data" / "questions.txt"

T = TypeVar("T")


# ------------------------------------------------------------------------------------------
# Environment
# ------------------------------------------------------------------------------------------


def offline_env() -> None:
    """Never reach a model hub; keep tokenizers from spawning threads behind our back."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Settings a user may have exported would change what is measured (another model, trimming,
    # hybrid search, ...); only where locallens keeps its files stays.
    for var in [v for v in os.environ if v.startswith("LOCALLENS_") and v != "LOCALLENS_HOME"]:
        os.environ.pop(var)


@contextmanager
def bench_dir(prefix: str) -> Iterator[Path]:
    """A temporary folder for databases and corpora, removed afterwards (even on Ctrl-C).

    LOCALLENS_HOME points inside it, so neither this process nor the CLI subprocesses read the
    user's config file or default database.
    """
    with tempfile.TemporaryDirectory(prefix=f"locallens-{prefix}-") as tmp:
        path = Path(tmp)
        previous = os.environ.get("LOCALLENS_HOME")
        os.environ["LOCALLENS_HOME"] = str(path / "home")
        try:
            yield path
        finally:
            if previous is None:
                os.environ.pop("LOCALLENS_HOME", None)
            else:
                os.environ["LOCALLENS_HOME"] = previous


def parse_args(
    description: str,
    extra: Sequence[tuple[str, str]] = (),
    ints: Sequence[tuple[str, str]] = (),
    strings: Sequence[tuple[str, str]] = (),
) -> argparse.Namespace:
    """`--quick`, plus boolean flags, integer and string options ((flag, help) each) of a script."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a small version for smoke-testing (under a minute); default: full size"
    )
    for flag, help_text in extra:
        parser.add_argument(flag, action="store_true", help=help_text)
    for flag, help_text in ints:
        parser.add_argument(flag, type=int, default=None, help=help_text)
    for flag, help_text in strings:
        parser.add_argument(flag, default=None, help=help_text)
    return parser.parse_args()


def cli_command(*args: str) -> list[str]:
    """`python -m locallens ARGS` with this interpreter (the project's venv)."""
    return [sys.executable, "-m", "locallens", *args]


# ------------------------------------------------------------------------------------------
# Machine
# ------------------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unavailable"
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min)"


def print_machine(title: str, quick: bool) -> None:
    print(f"== {title} ({'quick' if quick else 'full'} run) ==")
    print(f"machine   : {usable_cores()} usable cores ({os.cpu_count()} online), {cpu_model()}")
    print(f"platform  : {platform.platform()}, Python {platform.python_version()}")
    print(f"load avg  : {load_average()} at start")
    print(f"started   : {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(flush=True)


def print_end(started: float) -> None:
    print(f"\nload avg  : {load_average()} at end")
    print(f"took      : {time.perf_counter() - started:.1f} s in all", flush=True)


def note(message: str) -> None:
    """A progress line, so a long run shows where it is."""
    print(f"  .. {message}", flush=True)


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def timed_cpu(fn: Callable[[], T]) -> tuple[float, float, T]:
    """(wall seconds, CPU seconds of this process, all threads, result) of one call.

    On a shared machine the CPU time moves less than the wall time when other jobs take the
    cores (though spinning thread pools still inflate it).
    """
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p95 of 50 samples is the 48th smallest)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[rank - 1]


@dataclass(slots=True)
class ChildRun:
    """A finished subprocess: wall time, exit code, output and its own peak RSS."""

    seconds: float
    returncode: int
    stdout: str
    stderr: str
    max_rss_bytes: int  # the child's own peak (os.wait4), not the max over all children
    cpu_seconds: float = 0.0  # the child's own user + system CPU time (os.wait4)


def run_child(cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> ChildRun:
    """Run `cmd`, timing it from spawn to exit, with the child's peak RSS from wait4.

    `subprocess.run` reaps the child itself and only RUSAGE_CHILDREN (a maximum over every child
    ever waited for) would remain; wait4 gives this child's own figure.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it was reaped
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    cpu = usage.ru_utime + usage.ru_stime
    return ChildRun(seconds, proc.returncode, stdout, stderr, int(usage.ru_maxrss) * scale, cpu)


def check_child(run: ChildRun, what: str) -> None:
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"{what} failed with exit code {run.returncode}:\n{tail}")


# ------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    figure: str
    value: str
    target: str = ""
    passed: bool | None = None  # None: informational, no target
    note: str = ""


def _is_section(row: Row) -> bool:
    return row.figure.startswith("[") and not row.value


@dataclass(slots=True)
class Table:
    title: str
    rows: list[Row] = field(default_factory=list)

    def add(self, figure: str, value: str, target: str = "", passed: bool | None = None, note: str = "") -> None:
        self.rows.append(Row(figure, value, target, passed, note))

    def section(self, name: str) -> None:
        self.rows.append(Row(f"[{name}]", ""))

    def print(self) -> None:
        headers = ("figure", "value", "target", "result")
        cells = [
            (r.figure, r.value, r.target, "" if r.passed is None else ("PASS" if r.passed else "MISS"))
            for r in self.rows
            if not _is_section(r)
        ]
        widths = [max([len(h), *(len(cell[i]) for cell in cells)]) for i, h in enumerate(headers)]
        print(f"\n{self.title}")
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths)) + "  note")
        print("  ".join("-" * w for w in widths) + "  ----")
        for row in self.rows:
            if _is_section(row):
                print(row.figure)
                continue
            result = "" if row.passed is None else ("PASS" if row.passed else "MISS")
            cell = (row.figure, row.value, row.target, result)
            print(("  ".join(x.ljust(w) for x, w in zip(cell, widths)) + "  " + row.note).rstrip())
        misses = [r.figure for r in self.rows if r.passed is False]
        judged = [r for r in self.rows if r.passed is not None]
        print(
            f"\ntargets: {len(judged) - len(misses)}/{len(judged)} met"
            + (f"; missed: {', '.join(misses)}" if misses else ""),
            flush=True,
        )


def states_answer(unit: Any, units: Sequence[Any], answers: Sequence[str] | None) -> bool:
    """Whether `unit`, printed with what belongs to it (`extractive._passage`: its setup line,
    header row or term), holds one of the expected `answers`: the answering units of the
    answer benchmarks' diagnoses and studies."""
    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import _passage

    return contains_answer(" ".join(p.text for p in _passage(unit, units)), answers or ())


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.1f} s"


def fmt_ms(ms: float) -> str:
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_bytes(n: float) -> str:
    """Decimal units, as the targets are written (1.5 GB = 1.5e9 bytes)."""
    if n < 1e6:
        return f"{n / 1e3:.0f} kB"
    return f"{n / 1e6:.0f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"

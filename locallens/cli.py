"""The command line: parse flags, call one function of the core, render what comes back.

No logic lives here. Results go to stdout, progress and warnings to stderr; `--json` prints one
JSON document and nothing else on stdout. Errors are one line on stderr with a stable exit code
(see locallens/errors.py and the README). Heavy modules (torch, sentence-transformers, llama.cpp)
are imported by the core only when a command needs them, so `--help` is instant.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from locallens import __version__
from locallens.errors import EXIT_UNEXPECTED, EXIT_SKIPPED, LocallensError

app = typer.Typer(
    name="locallens",
    help="Chat with your files, locally. Index a folder, then ask questions answered from it "
    "with numbered citations. Nothing leaves the machine.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=True,
)

# -- shared options -----------------------------------------------------------------------------

BrainOpt = typer.Option("default", "--brain", "-b", envvar="LOCALLENS_BRAIN", help="Named index inside the database.")
DbOpt = typer.Option(None, "--db", envvar="LOCALLENS_DB", help="Database file [default: $LOCALLENS_HOME/index.db].")
JsonOpt = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else.")


def _db(db: Optional[Path]) -> Path:
    from locallens.config import default_db_path

    return (db or default_db_path()).expanduser()


# -- output -------------------------------------------------------------------------------------


def _color() -> bool:
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def stderr_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def stdout_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    # Not a TTY (a pipe, cron): plain text, no ANSI codes, no wrapping at 80 columns.
    if not sys.stdout.isatty():
        return Console(file=sys.stdout, no_color=True, color_system=None, highlight=False,
                       soft_wrap=True, width=10_000)
    return Console(no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def warn(message: str) -> None:
    print(f"locallens: warning: {message}", file=sys.stderr, flush=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> NoReturn:
    print(f"locallens: error: {message}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


@contextmanager
def handled() -> Iterator[None]:
    """Map core errors to one-line messages and exit codes; never a traceback for a user error."""
    try:
        yield
    except LocallensError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        print("locallens: interrupted; committed work is kept, rerun to complete", file=sys.stderr)
        raise typer.Exit(130) from None
    except BrokenPipeError:
        _quiet_broken_pipe()
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if os.environ.get("LOCALLENS_DEBUG"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        fail(f"unexpected {type(exc).__name__}: {first} (set LOCALLENS_DEBUG=1 for a traceback)", EXIT_UNEXPECTED)


def _quiet_broken_pipe() -> NoReturn:
    # The reader went away (`| head`): point stdout at /dev/null so the interpreter's final flush
    # cannot raise again, and leave quietly.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise typer.Exit(0)


# -- progress -----------------------------------------------------------------------------------


class RichProgress:
    """Files, then embedding, as rich bars on stderr; silent when stderr is not a terminal."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=stderr_console(), transient=True,
        )
        self.files_task: Any = None
        self.embed_task: Any = None

    def __enter__(self) -> "RichProgress":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def files(self, total: int) -> None:
        self.files_task = self.progress.add_task("files", total=total)

    def file_done(self, n: int = 1) -> None:
        if self.files_task is not None:
            self.progress.advance(self.files_task, n)

    def embedding(self, total: int) -> None:
        if self.embed_task is None:
            self.embed_task = self.progress.add_task("embedding", total=total)
        else:
            self.progress.update(self.embed_task, total=(self.progress.tasks[self.embed_task].total or 0) + total)

    def embedded(self, n: int) -> None:
        if self.embed_task is not None:
            self.progress.advance(self.embed_task, n)


@contextmanager
def progress_for_stderr() -> Iterator[Any]:
    if sys.stderr.isatty():
        with RichProgress() as bar:
            yield bar
    else:
        from locallens.indexer import NoProgress

        yield NoProgress()


# -- commands -----------------------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        print(f"locallens {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """Chat with your files, locally."""


@app.command(epilog="Examples:\n\n  locallens index ./notes\n\n  locallens index ./notes ./docs --brain work --json\n\n"
             "  locallens index ./notes --dry-run\n\n  locallens index ./notes --model bge-small --rebuild")
def index(
    paths: list[Path] = typer.Argument(..., help="Folders or files to index.", show_default=False),
    brain: str = BrainOpt,
    db: Optional[Path] = DbOpt,
    chunk_size: int = typer.Option(220, "--chunk-size", min=1, envvar="LOCALLENS_CHUNK_SIZE", help="Max tokens per chunk."),
    chunk_overlap: int = typer.Option(40, "--chunk-overlap", min=0, envvar="LOCALLENS_CHUNK_OVERLAP", help="Tokens shared by consecutive chunks."),
    model: str = typer.Option("auto", "--model", "-m", envvar="LOCALLENS_MODEL", help="Embedding model: auto, bge-small, bge-base, bge-m3, minilm, a hub id or a folder."),
    device: str = typer.Option("auto", "--device", envvar="LOCALLENS_DEVICE", help="auto, cpu, cuda or mps."),
    include: list[str] = typer.Option([], "--include", help="Also index files matching this glob (repeatable)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Skip files matching this glob (repeatable)."),
    max_file_mb: float = typer.Option(10.0, "--max-file-mb", min=0.0, envvar="LOCALLENS_MAX_FILE_MB", help="Skip files larger than this."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Re-embed everything (e.g. with another --model); the old index serves until the new one is complete."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would change; touch nothing."),
    wait: float = typer.Option(0.0, "--wait", min=0.0, envvar="LOCALLENS_WAIT", help="Seconds to wait for another index run to finish."),
    json_out: bool = JsonOpt,
) -> None:
    """Index folders of documents, incrementally (only what changed is re-read and re-embedded)."""
    with handled():
        from locallens.config import ChunkSettings
        from locallens.indexer import IndexRequest
        from locallens.indexer import index as run_index

        request = IndexRequest(
            paths=paths, db=_db(db), brain=brain,
            chunking=ChunkSettings(chunk_size, chunk_overlap), model=model, device=device,
            include=include, exclude=exclude, max_bytes=int(max_file_mb * 1024 * 1024),
            rebuild=rebuild, dry_run=dry_run, wait=wait,
        )
        with progress_for_stderr() as bar:
            report = run_index(request, bar)
        for skipped in report.skipped:
            warn(f"skipped {skipped.path}: {skipped.reason}")
        if report.over_length:
            warn(f"{report.over_length} chunk(s) are longer than the embedding model's max sequence "
                 "length and were embedded truncated; lower --chunk-size to avoid it")
        if json_out:
            print_json(report.as_json())
        else:
            stdout_console().print(
                f"{'[dry run: nothing written] ' if report.dry_run else ''}"
                f"brain {report.brain!r} ({report.model}) in {report.db}\n"
                f"files: {report.new} new, {report.changed} changed, {report.unchanged} unchanged, "
                f"{report.removed} removed, {len(report.skipped)} skipped\n"
                f"chunks: {report.chunks_embedded} embedded, {report.chunks_reused} reused, "
                f"{report.chunks_total} in the brain; {report.seconds:.2f}s",
                markup=False,
            )
        if report.had_errors:
            raise typer.Exit(EXIT_SKIPPED)


@app.command(epilog="Examples:\n\n  locallens status\n\n  locallens status --brain work --json")
def status(
    brain: Optional[str] = typer.Option(None, "--brain", "-b", help="Only this brain."),
    db: Optional[Path] = DbOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Show brains, their model, roots, sizes, last run and how many files changed since."""
    with handled():
        from locallens.status import collect_status

        info = collect_status(_db(db), brain)
        if json_out:
            print_json(info)
            return
        out = stdout_console()
        out.print(f"database {info['db']} ({info['db_bytes'] / 1e6:.1f} MB, "
                  f"{info['free_bytes'] / 1e6:.1f} MB reclaimable with VACUUM)", markup=False)
        if not info["brains"]:
            out.print("no brains yet: run `locallens index PATH`", markup=False)
        for b in info["brains"]:
            out.print(
                f"\n{b['name']}: {b['model']} ({b['dim']} dims), {b['documents']} documents, "
                f"{b['chunks']} chunks, last indexed {b['last_indexed'] or 'never'}, "
                f"{b['stale']} file(s) changed since\n  roots: {', '.join(b['roots']) or '-'}",
                markup=False,
            )


def main() -> None:
    from locallens.config import load_default_map
    from locallens.errors import UsageError

    try:
        default_map = load_default_map()
    except UsageError as exc:
        print(f"locallens: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    try:
        app(default_map=default_map)
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        sys.exit(0)


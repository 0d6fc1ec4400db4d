"""The command line: parse flags, call one function of the core, render what comes back.

No logic lives here. Results go to stdout, progress and warnings to stderr; `--json` prints one
JSON document and nothing else on stdout. Errors are one line on stderr with a stable exit code
(see locallens/errors.py and docs/guide.md#exit-codes). Heavy modules (torch, sentence-transformers, llama.cpp)
are imported by the core only when a command needs them, so `--help` is instant.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from locallens import __version__
from locallens.config import (
    CHUNKERS,
    DEFAULT_ASK_TRIM_WINDOW,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_CHUNKER,
    DEFAULT_DEVICE,
    DEFAULT_EVAL_THRESHOLDS,
    DEFAULT_EVAL_WINDOWS,
    DEFAULT_HYBRID,
    DEFAULT_MAX_FILE_MB,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_MIN_SENTENCES,
    DEFAULT_N_CTX,
    DEFAULT_PROMPT_PASSAGES,
    DEFAULT_RERANK_CANDIDATES,
    DEFAULT_SHOW_CONTEXT,
    DEFAULT_TOP_K,
    DEFAULT_TRIM_THRESHOLD,
    DEFAULT_TRIM_WINDOW,
    DEVICES,
    or_list,
)
from locallens.errors import (
    EXIT_INTERRUPTED,
    EXIT_NOTHING_FOUND,
    EXIT_OK,
    EXIT_SKIPPED,
    EXIT_UNEXPECTED,
    LocallensError,
)

if TYPE_CHECKING:
    from rich.console import Console

    from locallens.retrieval import TrimSettings
    from locallens.storage import DbLocation


class _Commands(typer.core.TyperGroup):
    """The command group; a bad value is blamed on where it came from.

    Click checks every value the same way whatever its source (a flag, a LOCALLENS_* variable,
    the config file), but its message names the flag and the variable even when the config file
    gave the value. This names the one source the value really came from.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args, shell = _completion_shell(args)
        if shell is not None:
            ctx.meta["completion_shell"] = shell
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        args = [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])), *ctx.args]
        try:
            return super().invoke(ctx)
        except _ClickUsageError as exc:
            if isinstance(exc, typer.BadParameter):
                _blame_source(exc)
            if "--json" in args[: args.index("--") if "--" in args else None]:
                # Refused while parsing (a bad flag value, an unknown option): click says why on
                # stderr; with --json, stdout still gets its one document.
                print_error_json(exc.format_message(), exc.exit_code)
            raise


# click's usage error (typer >= 0.20 vendors click: not `click.UsageError` there)
_ClickUsageError: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _blame_source(exc: Any) -> None:
    param, sub = exc.param, exc.ctx
    if param is None or sub is None or exc.param_hint is not None or not param.name:
        return
    source = getattr(sub.get_parameter_source(param.name), "name", None)
    flags = " / ".join(f"'{o}'" for o in getattr(param, "opts", [])) or f"'{param.name}'"
    if source == "DEFAULT_MAP":
        from locallens.config import config_path

        exc.param_hint = f"'{param.name}' in the config file {config_path()}"
    elif source == "ENVIRONMENT":
        names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or [])
        name = next((n for n in names if os.environ.get(n)), names[0] if names else "?")
        exc.param_hint = f"the environment variable {name} ({flags})"
    elif source == "COMMANDLINE":
        exc.param_hint = flags


app = typer.Typer(
    cls=_Commands,
    name="locallens",
    help="Chat with your files, locally. Index a folder, then ask questions answered from it "
    "with numbered citations. Nothing leaves the machine.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # Typer's own completion options are flags for the shell it detects among the process's
    # parents: `--show-completion bash` from an sh script (a Dockerfile, a package's install step)
    # printed "Shell sh not supported." and exit 1. `_root` declares them with an optional SHELL.
    add_completion=False,
)

# -- value checks (click callbacks: the same check whatever the source; `_blame_source` names it) --


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(value: str | None) -> str | None:
        if value is not None and value not in choices:
            raise typer.BadParameter(f"must be {or_list(choices)} (got {value!r})")
        return value

    return check


def _not_blank(message: str) -> Any:
    """A callback that refuses a value of only white space, with `message`."""

    def check(value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise typer.BadParameter(message)
        return value

    return check


_brain_name = _not_blank("a brain name must not be empty")
_token = _not_blank("a token must not be blank")


def _model_name(value: str | None) -> str | None:
    """An unknown model name is a usage error of the value's source, checked before any work;
    a folder that is missing is left to the command (exit 6, naming it)."""
    if value is None or value == "auto":
        return value
    from locallens.embedding import resolve_model
    from locallens.errors import LocallensError, UsageError

    try:
        resolve_model(value)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None
    except LocallensError:
        pass
    return value


# -- shared options -----------------------------------------------------------------------------

BrainOpt = typer.Option(
    "default", "--brain", "-b", envvar="LOCALLENS_BRAIN", callback=_brain_name, help="Named index inside the database."
)
DbOpt = typer.Option(
    None,
    "--db",
    envvar="LOCALLENS_DB",
    help="Database file, or a postgresql://user@host:port/dbname URL [default: $LOCALLENS_HOME/index.db].",
)
ExactOpt = typer.Option(
    False,
    "--exact",
    envvar="LOCALLENS_EXACT",
    help="PostgreSQL: search every vector instead of the HNSW index (exact, slower on large brains).",
)
JsonOpt = typer.Option(False, "--json", help="Print one JSON document on stdout and nothing else.")
HybridOpt = typer.Option(
    DEFAULT_HYBRID,
    "--hybrid/--no-hybrid",
    envvar="LOCALLENS_HYBRID",
    help="Fuse keyword (BM25) and vector search: finds exact codes, numbers and names; --no-hybrid: vectors alone.",
)
QuietOpt = typer.Option(
    False, "--quiet", "-q", help="Print only what needs a person (errors, skipped files): for cron and scripts."
)
DeviceOpt = typer.Option(
    DEFAULT_DEVICE,
    "--device",
    envvar="LOCALLENS_DEVICE",
    callback=_one_of(DEVICES),
    help=f"Embedding device: {or_list(DEVICES)}.",
)
_THRESHOLD_DEFAULT = f"[default: $LOCALLENS_TRIM_THRESHOLD or {DEFAULT_TRIM_THRESHOLD:g}]"


def _server_url(value: str | None) -> str | None:
    """A click callback: `--server` parsed once (`http_api.parse_server_url`); the source of a
    bad value is named by `_blame_source`, and credentials in it are never printed."""
    if value is None:
        return None
    from locallens.errors import UsageError
    from locallens.http_api import parse_server_url

    try:
        return parse_server_url(value)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


def _number(low: float | None = None, high: float | None = None, allow_inf: bool = False) -> Any:
    """A click callback: the value must be a number (not NaN; not infinite unless `allow_inf`)
    within low..high. The same check runs whether the value came from the flag, its environment
    variable or the config file; `_blame_source` names which one it was."""

    def check(value: float | None) -> float | None:
        from locallens.config import number_problem

        if value is not None and (problem := number_problem(value, low, high, allow_inf)):
            raise typer.BadParameter(problem)
        return value

    return check


def _wait_option(help: str) -> Any:
    """`--wait SECONDS` (also $LOCALLENS_WAIT) of the commands that take a writer lock."""
    return typer.Option(0.0, "--wait", min=0.0, envvar="LOCALLENS_WAIT", callback=_number(allow_inf=True), help=help)


def _threshold_option(what: str) -> Any:
    """`--threshold` of `ask` and `trim`: $LOCALLENS_TRIM_THRESHOLD, a cosine similarity in -1..1."""
    return typer.Option(
        None,
        "--threshold",
        envvar="LOCALLENS_TRIM_THRESHOLD",
        show_envvar=False,
        callback=_number(-1.0, 1.0),
        help=f"{what}, a cosine similarity in -1..1 {_THRESHOLD_DEFAULT}.",
    )


def _db(db: str | None, exact: bool = False) -> DbLocation:
    """The `--db` value as a location: a path (default `$LOCALLENS_HOME/index.db`) or a URL."""
    from locallens.config import default_db_path
    from locallens.storage import parse_db

    return parse_db(db or default_db_path(), exact=exact)


# -- output -------------------------------------------------------------------------------------


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def stdout_console() -> Console:
    from rich.console import Console

    # Not a TTY (a pipe, cron): plain text, no ANSI codes, no wrapping at 80 columns.
    if not sys.stdout.isatty():
        console = Console(
            file=sys.stdout, no_color=True, color_system=None, highlight=False, soft_wrap=True, width=10_000
        )
    else:
        console = Console(no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    console.on_broken_pipe = _pipe_closed  # type: ignore[method-assign]
    return console


def _pipe_closed() -> NoReturn:
    # rich's own handler exits 1; a reader that went away (`| head`) is not a failure: `handled`
    # turns this into a quiet exit 0.
    raise BrokenPipeError


# Control characters (C0, DEL, C1): ESC starts terminal escape sequences (colours, window titles,
# OSC 52 clipboard writes), BEL rings, CR overwrites the line. File names and document text may
# hold any of them; plain-text output shows them escaped, never raw (--json is exact: JSON escapes
# them itself). Unicode format characters (category Cf: the bidi overrides and isolates such as
# U+202E, which print a name backwards, zero-width spaces and joiners, soft hyphens) and the line
# and paragraph separators (Zl, Zp) are escaped too in a one-line value (a path, a name):
# `\u202e`. Text that is itself several lines (an answer, an excerpt) keeps its other format
# characters (a joiner inside an emoji, Persian's zero-width non-joiner) and has only the
# characters that reorder or break lines escaped.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_REORDERING = frozenset(
    [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]  # embeddings, overrides, isolates
)


def _unicode_escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _escape_format(match: re.Match[str]) -> str:
    import unicodedata

    char = match.group()
    return _unicode_escape(char) if unicodedata.category(char) in ("Cf", "Zl", "Zp") else char


def _escape_reordering(match: re.Match[str]) -> str:
    char = match.group()
    return _unicode_escape(char) if ord(char) in _REORDERING else char


def clean(text: object, multiline: bool = False) -> str:
    """`text` safe for a terminal: control characters escaped (`\\x1b`, `\\n`, ...), and format
    characters (`\\u202e`): all of them in one-line text, those that reorder or break lines in
    `multiline` text.

    With `multiline` (text that is itself several lines: an answer, an excerpt, a report), line
    feeds and tabs stay as they are and every other control character is escaped."""
    pattern = _CONTROL_BUT_LINES if multiline else _CONTROL
    out = pattern.sub(lambda m: _ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"), str(text))
    if out.isascii():
        return out
    return _NON_ASCII.sub(_escape_reordering if multiline else _escape_format, out)


def warn(message: str) -> None:
    print(f"locallens: warning: {clean(message)}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    print(f"locallens: note: {clean(message)}", file=sys.stderr, flush=True)


def print_json(data: Any) -> None:
    global _json_printed
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()
    _json_printed = True


# With --json, stdout holds one JSON document whatever the outcome: the command's result (an
# `ask` refusal is an answer, `"refused": true`), else, when the command ends in an error, the
# error as `{"error": message, "exit_code": n}` on one line (the shape of the HTTP API's errors
# and `ask --batch`'s failed lines); the one-line message still goes to stderr.
_json_errors = False
_json_printed = False


def print_error_json(message: str, code: int) -> None:
    sys.stdout.write(json.dumps({"error": message, "exit_code": code}, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> NoReturn:
    if _json_errors and not _json_printed:
        try:
            print_error_json(message, code)
        except (BrokenPipeError, ValueError):  # stdout gone: the exit code and stderr still say it
            pass
    print(f"locallens: error: {clean(message)}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


# The exit code a command ends with when the reader closes the pipe while it prints: 0, unless
# the command already knows its outcome is another one (an `ask` refusal prints, then exits 4).
_exit_if_pipe_closes = 0


def exit_if_pipe_closes(code: int) -> None:
    global _exit_if_pipe_closes
    _exit_if_pipe_closes = code


@contextmanager
def handled(json_out: bool = False) -> Iterator[None]:
    """Map core errors to one-line messages and exit codes; never a traceback for a user error.

    With `json_out` (the command's --json), an error is also one JSON document on stdout."""
    global _json_errors, _json_printed
    _json_errors, _json_printed = json_out, False
    try:
        yield
    except LocallensError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        if _json_errors and not _json_printed:
            with suppress(BrokenPipeError, ValueError):
                print_error_json("interrupted; committed work is kept, rerun to complete", EXIT_INTERRUPTED)
        print("locallens: interrupted; committed work is kept, rerun to complete", file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:
        _silence_stdout()
        raise typer.Exit(_exit_if_pipe_closes) from None
    except typer.Exit:
        raise
    except Exception as exc:
        if os.environ.get("LOCALLENS_DEBUG"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        fail(f"unexpected {type(exc).__name__}: {first} (set LOCALLENS_DEBUG=1 for a traceback)", EXIT_UNEXPECTED)


def _silence_stdout() -> None:
    """The reader went away (`| head`): point stdout at /dev/null so the interpreter's final
    flush cannot raise again, and the caller leaves quietly."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# -- progress -----------------------------------------------------------------------------------


class RichProgress:
    """A `locallens.progress.Progress` drawn as one rich bar per stage on stderr."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=stderr_console(),
            transient=True,
        )
        self.tasks: dict[str, Any] = {}
        self.totals: dict[str, int] = {}

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def add(self, stage: str, n: int) -> None:
        self.totals[stage] = self.totals.get(stage, 0) + n
        if stage in self.tasks:
            self.progress.update(self.tasks[stage], total=self.totals[stage])
        else:
            self.tasks[stage] = self.progress.add_task(stage, total=n)

    def advance(self, stage: str, n: int = 1) -> None:
        if stage in self.tasks:
            self.progress.advance(self.tasks[stage], n)


@contextmanager
def progress_for_stderr(quiet: bool = False) -> Iterator[Any]:
    """Bars on a terminal; nothing when stderr is not one (a pipe, cron) or with --quiet."""
    if sys.stderr.isatty() and not quiet:
        with RichProgress() as bar:
            yield bar
    else:
        from locallens.progress import NoProgress

        yield NoProgress()


# -- commands -----------------------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        print(f"locallens {__version__}")
        raise typer.Exit(EXIT_OK)


SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
_COMPLETION_OPTIONS = ("--install-completion", "--show-completion")


def _completion_shell(args: list[str]) -> tuple[list[str], str | None]:
    """`--show-completion [SHELL]` / `--install-completion [SHELL]` before any command: the
    arguments without the SHELL named after the option (or `=SHELL`), and that SHELL. Click's
    parser has no option whose value may be left out, so the shell is taken here."""
    for at, arg in enumerate(args):
        if not arg.startswith("-") or arg == "--":
            break  # the command: its own options follow
        option, equals, value = arg.partition("=")
        if option not in _COMPLETION_OPTIONS:
            continue
        if equals:
            return [*args[:at], option, *args[at + 1 :]], value
        following = args[at + 1] if at + 1 < len(args) else ""
        if following and not following.startswith("-") and following not in _command_names():
            return [*args[: at + 1], *args[at + 2 :]], following
        return args, None
    return args, None


def _command_names() -> set[str]:
    """The commands' names (a word after the option that is one is the command, not a shell)."""
    return {command.name or command.callback.__name__ for command in app.registered_commands if command.callback}


def _completion(install: bool) -> Any:
    """The callback of `--install-completion` / `--show-completion`: the SHELL named after it,
    or the shell this runs in; a shell it cannot tell or does not know is a usage error naming
    the ones it knows."""

    def callback(ctx: Any, param: Any, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        shell = ctx.meta.get("completion_shell")
        if shell is None:
            import shellingham

            try:
                shell = shellingham.detect_shell()[0].lower()
            except shellingham.ShellDetectionFailure:
                shell = None
            if shell not in SHELLS:
                raise typer.BadParameter(
                    f"cannot tell which shell this is{f' ({shell} is not one it completes)' if shell else ''}: "
                    f"name {or_list(SHELLS)} after it, e.g. {param.opts[0]} bash"
                )
        elif shell not in SHELLS:
            raise typer.BadParameter(f"must be {or_list(SHELLS)} (got {shell!r})")
        from typer import completion

        (completion.install_callback if install else completion.show_callback)(ctx, param, shell)

    return callback


def _completion_option(install: bool, help: str) -> Any:
    """`--install-completion` / `--show-completion`: eager flags whose SHELL `_completion_shell` took."""
    name = "--install-completion" if install else "--show-completion"
    return typer.Option(False, name, is_eager=True, expose_value=False, callback=_completion(install), help=help)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
    install_completion: bool = _completion_option(
        install=True,
        help=f"Install completion for the shell named after it ({or_list(SHELLS)}) or the shell this runs in.",
    ),
    show_completion: bool = _completion_option(
        install=False,
        help=f"Print the completion script for the shell named after it ({or_list(SHELLS)}) or the shell "
        "this runs in: locallens --show-completion bash > /etc/bash_completion.d/locallens",
    ),
) -> None:
    """Chat with your files, locally."""


@app.command(
    epilog="Examples:\n\n  locallens index ./notes\n\n  locallens index ./notes ./docs --brain work --json\n\n"
    "  locallens index ./notes --dry-run\n\n  locallens index ./notes --model bge-small --rebuild"
)
def index(
    paths: list[Path] = typer.Argument(..., help="Folders or files to index.", show_default=False),
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    chunk_size: int | None = typer.Option(
        None,
        "--chunk-size",
        min=1,
        envvar="LOCALLENS_CHUNK_SIZE",
        show_default=False,
        help=f"Max tokens per chunk [default: the brain's; a new brain: {DEFAULT_CHUNK_SIZE}]. "
        "Another value than the brain's re-chunks every file.",
    ),
    chunk_overlap: int | None = typer.Option(
        None,
        "--chunk-overlap",
        min=0,
        envvar="LOCALLENS_CHUNK_OVERLAP",
        show_default=False,
        help=f"Tokens shared by consecutive chunks [default: the brain's; a new brain: {DEFAULT_CHUNK_OVERLAP}].",
    ),
    chunker: str | None = typer.Option(
        None,
        "--chunker",
        envvar="LOCALLENS_CHUNKER",
        callback=_one_of(CHUNKERS),
        show_default=False,
        help=f"{or_list(CHUNKERS)}: paragraph packs tokens, the others are semantic "
        f"[default: the brain's; a new brain: {DEFAULT_CHUNKER}].",
    ),
    model: str = typer.Option(
        "auto",
        "--model",
        "-m",
        envvar="LOCALLENS_MODEL",
        callback=_model_name,
        help="Embedding model: auto, bge-small, bge-base, bge-m3, minilm, a hub id or a folder.",
    ),
    device: str = DeviceOpt,
    encoder: str | None = typer.Option(
        None,
        "--encoder",
        envvar="LOCALLENS_ENCODER",
        show_default=False,
        help="What computes the vectors: fp32 (a new brain's default), int8 (ONNX Runtime, made locally once, ~2x less CPU) or static (fast mode for very large folders: static embeddings distilled locally once, lower quality). Recorded in the brain with the model; changing it needs --rebuild.",
    ),
    include: list[str] = typer.Option([], "--include", help="Also index files matching this glob (repeatable)."),
    exclude: list[str] = typer.Option([], "--exclude", help="Skip files matching this glob (repeatable)."),
    max_file_mb: float = typer.Option(
        DEFAULT_MAX_FILE_MB,
        "--max-file-mb",
        min=0.0,
        envvar="LOCALLENS_MAX_FILE_MB",
        callback=_number(),
        help="Skip files larger than this.",
    ),
    rebuild: bool = typer.Option(
        False,
        "--rebuild",
        help="Re-embed the whole brain (every root; its model, encoder and settings unless named, e.g. another --model); "
        "the old index serves until the new one is complete, and an interrupted rebuild is resumed.",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would change; touch nothing."),
    sentence_vectors: bool = typer.Option(
        False, "--sentence-vectors", help="Also embed every sentence now, so trimming at question time embeds nothing."
    ),
    prune_missing: bool = typer.Option(
        False,
        "--prune-missing",
        help="Remove the files of a root that is missing or empty (by default they are kept: the drive may be unmounted).",
    ),
    wait: float = _wait_option("Seconds to wait for another index run to finish."),
    headers: bool | None = typer.Option(
        None,
        "--headers/--no-headers",
        show_default=False,
        help="Embed each chunk with its document title and section headings, also keyword-indexed (a new brain: on). Recorded in the brain; changing it needs --rebuild.",
    ),
    multi_vector: bool | None = typer.Option(
        None,
        "--multi-vector/--no-multi-vector",
        show_default=False,
        help="A chunk longer than the model's window keeps one vector per window instead of their mean (a new brain: off). Recorded in the brain; changing it needs --rebuild.",
    ),
    watch: bool = typer.Option(
        False,
        "--watch",
        help="After indexing, keep watching the folders and index what changes (Ctrl-C or SIGTERM stops); "
        "with --json, one JSON line per batch.",
    ),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Index folders of documents, incrementally (only what changed is re-read and re-embedded)."""
    with handled(json_out):
        from locallens.config import ChunkChoice
        from locallens.indexer import IndexRequest
        from locallens.indexer import index as run_index

        request = IndexRequest(
            paths=paths,
            db=_db(db),
            brain=brain,
            chunking=ChunkChoice(chunk_size, chunk_overlap, chunker),
            model=model,
            encoder=encoder,
            device=device,
            include=include,
            exclude=exclude,
            max_bytes=int(max_file_mb * 1024 * 1024),
            rebuild=rebuild,
            dry_run=dry_run,
            wait=wait,
            sentence_vectors=sentence_vectors,
            prune_missing=prune_missing,
            headers=headers,
            multi_vector=multi_vector,
        )
        if watch and dry_run:
            from locallens.errors import UsageError

            raise UsageError("--watch and --dry-run cannot go together: a watcher writes")
        from locallens.onnx_encoder import announcements

        with progress_for_stderr(quiet or (watch and json_out)) as bar, announcements(not quiet):
            report = run_index(request, bar)
        if watch:
            _print_index_report(report, json_out, quiet, watching=True)
            raise typer.Exit(_watch(request, json_out, quiet))
        _print_index_report(report, json_out, quiet)
        if report.had_errors:
            raise typer.Exit(EXIT_SKIPPED)


def _print_index_report(report: Any, json_out: bool, quiet: bool, watching: bool = False) -> None:
    """An index run's skipped files and notes on stderr, then its summary (or JSON) on stdout;
    a watcher's runs print their JSON as one line each."""
    for skipped in report.skipped:
        warn(f"skipped {skipped.path}: {skipped.reason}")
    if not quiet:
        for message in report.notes:
            note(message)
    if report.over_length and not quiet:
        note(
            f"{report.over_length} chunk(s) are longer than the embedding model's "
            "window and were embedded in windows (whole, not truncated)"
        )
    if report.located and not quiet:
        note(
            f"{'would locate' if report.dry_run else 'located'} the chunks of {report.located} unchanged "
            "file(s) indexed before chunk locations were stored (nothing re-embedded)"
        )
    if json_out and watching:
        sys.stdout.write(json.dumps(report.as_json(), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    elif json_out:
        print_json(report.as_json())
    elif not quiet:
        stdout_console().print(
            f"{'[dry run: nothing written] ' if report.dry_run else ''}"
            f"brain {clean(repr(report.brain))} ({clean(report.model)}) in {clean(report.db)}\n"
            f"files: {report.new} new, {report.changed} changed, {report.unchanged} unchanged, "
            f"{report.removed} removed, {len(report.skipped)} skipped"
            f"{f', {report.reread} read again (made by an older reader or chunking)' if report.reread else ''}\n"
            f"{_other_types_line(report.other_types)}"
            f"chunks: {report.chunks_embedded} embedded, {report.chunks_reused} reused, "
            f"{report.chunks_total} in the brain; {report.seconds:.2f}s",
            markup=False,
        )


# How many kinds of file `index`'s summary names among those that are not documents.
OTHER_TYPES_SHOWN = 3


def _other_types_line(others: Mapping[str, int]) -> str:
    """The summary's line on the files under the roots that are not documents (scripts, archives,
    images without OCR...), with the commonest kinds, or "" when there are none: "other files: 88
    not read (47 without extension, 18 .sh, 9 .bash, 14 more of 4 kinds); --include GLOB reads
    a kind as text"."""
    if not others:
        return ""
    ranked = sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [f"{n} {clean(ext) if ext else 'without extension'}" for ext, n in ranked[:OTHER_TYPES_SHOWN]]
    rest = ranked[OTHER_TYPES_SHOWN:]
    if rest:
        shown.append(f"{sum(n for _, n in rest)} more of {len(rest)} kind{'s' if len(rest) > 1 else ''}")
    total = sum(others.values())
    return f"other files: {total} not read ({', '.join(shown)}); --include GLOB reads a kind as text\n"


def _watch(request: Any, json_out: bool, quiet: bool) -> int:
    """`index --watch` after its first pass: one line (or JSON line) per batch until stopped."""
    import time

    from locallens.watch import watch

    if not quiet and not json_out:
        note(f"watching {len(request.paths)} folder(s) for changes; Ctrl-C stops after the current batch")

    def on_batch(batch: Any) -> None:
        report = batch.report
        for skipped in report.skipped:
            warn(f"skipped {skipped.path}: {skipped.reason}")
        if json_out:
            sys.stdout.write(json.dumps(batch.as_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        elif not quiet and (report.new or report.changed or report.removed):
            stdout_console().print(
                f"{time.strftime('%H:%M:%S')} {report.new} new, {report.changed} changed, {report.removed} removed; "
                f"{report.chunks_embedded} chunks embedded, {report.chunks_total} in the brain; {report.seconds:.2f}s",
                markup=False,
            )

    watch(request, on_batch)
    if not quiet and not json_out:
        note("stopped watching; everything seen so far is committed")
    return 0


# The models' options, shared by ask, serve and mcp.
LlmOpt = typer.Option(
    None, "--llm", envvar="LOCALLENS_LLM", help="A GGUF file [default: the packaged SmolLM2-135M-Instruct]."
)
CtxOpt = typer.Option(
    DEFAULT_N_CTX, "--ctx", min=0, envvar="LOCALLENS_CTX", help="Context window in tokens (0: the model's own)."
)
ThreadsOpt = typer.Option(
    None,
    "--threads",
    min=1,
    envvar="LOCALLENS_THREADS",
    help="CPU threads for the LLM [default: every core; fewer on a busy machine].",
)
GpuOpt = typer.Option(0, "--gpu-layers", envvar="LOCALLENS_GPU_LAYERS", help="Layers to offload to a GPU (-1: all).")


def _read_question(question: str | None) -> str:
    if question is None:
        from locallens.errors import UsageError

        raise UsageError("give a QUESTION (or - to read it from stdin, or --batch FILE)")
    if question == "-":
        question = sys.stdin.read()
    return question.strip()


def _trim_settings(trim: bool | None, threshold: float | None, window: int, min_sentences: int = 1) -> TrimSettings:
    from locallens.retrieval import trim_settings_from_env

    return trim_settings_from_env(trim, threshold, window, min_sentences)


@app.command(
    epilog='Examples:\n\n  locallens ask "How long is parental leave?"\n\n'
    '  echo "¿Qué puerto usa la VPN?" | locallens ask - --json\n\n'
    "  locallens ask \"deploy steps\" --path 'engineering/*' --context-only\n\n"
    '  locallens ask "..." --llm ~/models/qwen2.5-1.5b-instruct-q4_k_m.gguf --trim'
)
def ask(
    question: str | None = typer.Argument(None, help="The question, or - to read it from stdin.", show_default=False),
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    exact: bool = ExactOpt,
    top_k: int = typer.Option(
        DEFAULT_TOP_K,
        "--top-k",
        "-k",
        min=1,
        envvar="LOCALLENS_TOP_K",
        help="Excerpts to retrieve; hybrid search also reads the chunks among them that the per-file cap "
        "moved out for other files (up to k-2 more, listed and cited like the others).",
    ),
    min_score: float | None = typer.Option(
        None, "--min-score", callback=_number(-1, 1), help="Drop excerpts with a cosine similarity below this (-1..1)."
    ),
    path: str | None = typer.Option(
        None,
        "--path",
        help="Only sources whose relative path matches this glob ('notas/*', '*.md'; * crosses /); "
        "without a wildcard, that file or folder ('engineering' is everything below engineering/).",
    ),
    llm: str | None = LlmOpt,
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", min=1, help="Longest answer, in tokens."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, callback=_number(), help="0 is deterministic."),
    ctx: int = CtxOpt,
    gpu_layers: int = GpuOpt,
    threads: int | None = ThreadsOpt,
    context_only: bool = typer.Option(
        False, "--context-only", help="Print the numbered excerpts that would go to the model; never load it."
    ),
    trim: bool | None = typer.Option(
        None,
        "--trim/--no-trim",
        envvar="LOCALLENS_TRIM",
        show_envvar=False,
        help="Trim excerpts to their relevant sentences [default: $LOCALLENS_TRIM or off].",
    ),
    threshold: float | None = _threshold_option("Trimming threshold"),
    window: int = typer.Option(
        DEFAULT_ASK_TRIM_WINDOW,
        "--window",
        min=0,
        help="Neighbour sentences kept around each relevant one when trimming.",
    ),
    hybrid: bool = HybridOpt,
    rerank: str | None = typer.Option(
        None,
        "--rerank",
        envvar="LOCALLENS_RERANK",
        help="Cross-encoder (folder or cached hub id) to re-score the top --candidates, or `llm`: the local LLM re-scores the top 10 (slow) [default: off].",
    ),
    candidates: int = typer.Option(
        DEFAULT_RERANK_CANDIDATES, "--candidates", min=1, help="Stage-1 candidates for --rerank."
    ),
    min_relevance: float = typer.Option(
        DEFAULT_MIN_RELEVANCE,
        "--min-relevance",
        callback=_number(0, 1),
        help="Drop reranked excerpts scoring below this (0..1).",
    ),
    device: str = DeviceOpt,
    extractive: bool = typer.Option(
        False,
        "--extractive",
        help="No LLM: answer with the excerpts' most relevant sentences, each cited (instant, deterministic).",
    ),
    show_unsupported: bool = typer.Option(
        False, "--show-unsupported", help="Also print the sentences the excerpts do not support, marked (unsupported)."
    ),
    cite_grammar: bool = typer.Option(
        False, "--cite-grammar", help="Constrain the LLM so that every sentence ends with a citation [n]."
    ),
    prompt_passages: bool = typer.Option(
        DEFAULT_PROMPT_PASSAGES,
        "--passages/--whole-excerpts",
        help="Prompt the LLM with the excerpts' best passages (fewer tokens to read), or with the whole excerpts.",
    ),
    batch: str | None = typer.Option(
        None,
        "--batch",
        help='JSONL questions ({"question", ...}) from this file or - (stdin); JSONL answers out, one model load for all.',
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        envvar="LOCALLENS_SERVER",
        callback=_server_url,
        help="Ask a running `locallens serve` at this URL (answers locally if it is down).",
    ),
    token: str | None = typer.Option(
        None, "--token", envvar="LOCALLENS_TOKEN", callback=_token, help="Bearer token for --server."
    ),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Answer a question from your indexed files, citing the excerpts it used.

    Every sentence of the model's answer is checked against the excerpts: only sentences they
    support are printed, each with the number of an excerpt that backs it. When none is left, the
    answer says the excerpts do not hold it, and the exit code is 4.
    """
    with handled(json_out):
        from locallens.answer import AskRequest
        from locallens.answer import ask as run_ask
        from locallens.retrieval import RerankSettings

        request = AskRequest(
            question="-" if batch is not None else _read_question(question),
            db=_db(db, exact),
            brain=brain,
            top_k=top_k,
            min_score=min_score,
            path_glob=path,
            llm=llm,
            max_tokens=max_tokens,
            temperature=temperature,
            n_ctx=ctx,
            gpu_layers=gpu_layers,
            threads=threads,
            context_only=context_only,
            trim=_trim_settings(trim, threshold, window),
            device=device,
            rerank=RerankSettings(rerank, candidates, min_relevance, device) if rerank else None,
            hybrid=hybrid,
            extractive=extractive,
            show_unsupported=show_unsupported,
            cite_grammar=cite_grammar,
            prompt_passages=prompt_passages,
        )
        if batch is not None:
            raise typer.Exit(_ask_batch(batch, request))
        from locallens.show import remember_answer

        if context_only:
            result = run_ask(request)
            remember_answer(request.db, request.brain, result.as_json())
            if json_out:
                print_json(result.as_json())
            else:
                sys.stdout.write(_plain_context(result.sources) + "\n")
            return
        data = _ask_via_server(server, token, request) if server else None
        if data is None:
            data = run_ask(request).as_json()
        # Remembered for `show N` before printing: the paths it resolves become hyperlinks.
        exit_if_pipe_closes(EXIT_NOTHING_FOUND if data.get("refused") else EXIT_OK)
        _print_answer(data, json_out, quiet, remember_answer(request.db, request.brain, data))
        if data.get("refused"):
            raise typer.Exit(EXIT_NOTHING_FOUND)


def _plain_context(hits: list[Any]) -> str:
    """The numbered excerpts as the model gets them, each header naming the excerpt's location
    for a person (`[1] notes.md:12-20`; the model reads `#chunk-N`), safe for a terminal: a
    path's control characters (a newline too: the header is one line) and the content's (but its
    line structure) are escaped."""
    from locallens.prompt import EXCERPT_SEPARATOR

    return EXCERPT_SEPARATOR.join(
        f"[{n}] {clean(hit.citation())}\n{clean(hit.content, multiline=True)}" for n, hit in enumerate(hits, start=1)
    )


def _ask_via_server(url: str, token: str | None, request: Any) -> dict[str, Any] | None:
    """The server's answer, or None (with a warning) when it cannot be reached."""
    from locallens.errors import LocallensError
    from locallens.http_api import ServerUnavailable, post

    try:
        status, body = post(url, "/ask", request.tool_args(), token=token)
    except ServerUnavailable as exc:
        warn(f"the server at {url} is not answering ({exc}); answering locally")
        return None
    if status != 200:
        error = LocallensError(f"{body.get('error', f'HTTP {status}')} (from {url})")
        error.exit_code = int(body.get("exit_code", 1))
        raise error
    return body


def _print_answer(
    data: dict[str, Any], json_out: bool, quiet: bool = False, sources: list[dict[str, Any]] | None = None
) -> None:
    """Warnings and notes on stderr (not with `quiet`: none of them needs a person), then the
    answer and its sources (or the JSON) on stdout. `sources`: the sources with their files
    (`show.remember_answer`), for the terminal's hyperlinks. A loop the model fell into and was
    cut is in the JSON only (`stopped_looping`): the check decides what is printed either way.
    Of the check's notices, only those that matter to the reader (`answer.notices_to_print`)."""
    from locallens.answer import notices_to_print

    if data.get("dropped") and not quiet:
        warn(
            f"{len(data['dropped'])} lowest-ranked excerpt(s) did not fit in the model's context and were left out: "
            + ", ".join(d.get("citation") or f"{d['path']}#chunk-{d['chunk_index']}" for d in data["dropped"])
        )
    for line in notices_to_print(data) if not quiet and not json_out else []:
        note(line)
    if json_out:
        print_json(data)
        return
    out = stdout_console()
    answer = data.get("answer") or ""
    units = [c for c in data.get("claims", []) if c.get("extracted")]
    if out.is_terminal and not data.get("refused") and answer == "\n".join(c["text"] for c in units):
        # On a terminal the unit that answers is emphasised; what is printed stays the same text.
        for unit in units:
            out.print(
                clean(unit["text"], multiline=True), markup=False, style="bold" if unit.get("answering") else None
            )
    else:
        out.print(clean(answer, multiline=True), markup=False)
    if data.get("trimmed"):
        tokens = data["tokens"]
        out.print(
            f"\n(trimmed context: {tokens['context_before_trim']} → {tokens['context_in_prompt']} tokens)",
            markup=False,
            style="dim",
        )
    out.print("", markup=False)
    _print_sources(data, out, sources)


def _print_sources(
    data: dict[str, Any], out: Console | None = None, sources: list[dict[str, Any]] | None = None
) -> None:
    """The sources of an answer (`ask --json`'s shape), each marked when the answer did not cite it."""
    from locallens.show import cited_lines

    out = out or stdout_console()
    out.print("Sources:", markup=False, style="bold")
    cited = set(data.get("citations", []))
    lines = cited_lines(data)
    for source in sources if sources is not None else data["sources"]:
        mark = "" if source["n"] in cited or data.get("refused") else "  (not cited)"
        at = ""
        if source["n"] in cited and lines.get(source["n"]):
            spans = [f"{a}" if a == b else f"{a}-{b}" for a, b in lines[source["n"]]]
            at = f", cited: line{'s' if len(spans) > 1 or '-' in spans[0] else ''} {', '.join(spans)}"
        citation = source.get("citation") or f"{source['path']}#chunk-{source['chunk_index']}"
        out.print(f"[{source['n']}] ", end="", markup=False)
        out.print(_linked(clean(citation), source.get("file")), end="", markup=False)
        out.print(f" ({source['score']:.2f}){at}{mark}", markup=False)


def _ask_batch(path: str, defaults: Any) -> int:
    """`ask --batch`: the questions file (or stdin) through `service.ask_batch`, answers on stdout
    as they come (exit 7 when some lines failed)."""
    from locallens.errors import UsageError
    from locallens.service import ask_batch

    if path == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            raw = Path(path).expanduser().read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read --batch {path}: {exc.strerror or exc}") from None

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    return EXIT_SKIPPED if ask_batch(raw, defaults, write) else EXIT_OK


@app.command(
    epilog='Examples:\n\n  locallens trim "how do I roll back a deploy?"\n\n'
    '  locallens trim "VPN port" --threshold 0.45 --window 1 --verbose\n\n'
    '  cat notes.md | locallens trim "budget" --text - --json'
)
def trim(
    query: str = typer.Argument(..., help="The question to trim against.", show_default=False),
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    exact: bool = ExactOpt,
    top_k: int = typer.Option(DEFAULT_TOP_K, "--top-k", "-k", min=1, help="Chunks to retrieve and trim."),
    threshold: float | None = _threshold_option("Keep sentences scoring at least this"),
    min_sentences: int = typer.Option(
        DEFAULT_MIN_SENTENCES, "--min-sentences", min=0, help="Keep at least this many sentences per chunk."
    ),
    window: int = typer.Option(
        DEFAULT_TRIM_WINDOW, "--window", min=0, help="Also keep this many neighbours of every kept sentence."
    ),
    text: str | None = typer.Option(
        None, "--text", help="Trim this file (or - for stdin) as one chunk instead of searching the index."
    ),
    model: str = typer.Option(
        "auto", "--model", "-m", help="Embedding model for --text (with an index, the brain's own)."
    ),
    device: str = DeviceOpt,
    hybrid: bool = HybridOpt,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every sentence with its score, kept or dropped."),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Show retrieved chunks trimmed to the sentences relevant to QUERY, and the tokens saved."""
    with handled(json_out):
        from locallens.errors import UsageError
        from locallens.retrieval import trim_from_index, trim_given_text, trim_report

        settings = _trim_settings(True, threshold, window, min_sentences)
        if text is not None:
            if text == "-":
                body = sys.stdin.read()
            else:
                try:
                    body = Path(text).expanduser().read_text(encoding="utf-8-sig")
                except (OSError, UnicodeDecodeError) as exc:
                    raise UsageError(f"cannot read --text {text}: {exc}") from exc
            result = trim_given_text(body, query, settings, model=model, device=device)
        else:
            result = trim_from_index(_db(db, exact), brain, query, top_k, settings, device=device, hybrid=hybrid)
        if not result.hits:
            fail(f"nothing relevant found in brain {brain!r}", EXIT_NOTHING_FOUND)
        if json_out:
            print_json(trim_report(query, result, settings))
            return
        out = stdout_console()
        for n, d in enumerate(result.trim_details, start=1):
            c = d.original.chunk
            out.print(
                f"[{n}] {clean(c.citation())} ({d.original.score:.2f}) {len(d.kept)}/{len(d.sentences)} sentences kept",
                markup=False,
                style="bold",
            )
            if verbose:
                kept = set(d.kept)
                for i, (sentence, score) in enumerate(zip(d.sentences, d.scores)):
                    flag = "keep" if i in kept else "drop"
                    out.print(
                        f"  {flag} {score:+.3f}  {clean(sentence)}", markup=False, style=None if i in kept else "dim"
                    )
            else:
                out.print(clean(d.hit.content, multiline=True), markup=False)
            out.print("", markup=False)
        out.print(
            f"tokens: {result.tokens_before} → {result.tokens_in_context} ({result.reduction_pct:.1f}% less; "
            f"tiktoken {result.tiktoken_before} → {result.tiktoken_in_context})",
            markup=False,
        )


@app.command(
    "eval",
    epilog="Examples:\n\n  locallens eval tests/data/questions.jsonl\n\n"
    "  locallens eval questions.txt --thresholds 0.3,0.4,0.5 --windows 0,1 --csv sweep.csv --plot sweep.png\n\n"
    "  locallens eval questions.jsonl --answers --judge ~/models/qwen2.5-3b-instruct-q4_k_m.gguf --json\n\n"
    "  locallens eval --beir ~/datasets/beir-scifact",
)
def eval_(
    questions: Path | None = typer.Argument(
        None, help="Questions: one per line, or JSONL {question, files?, answers?}.", show_default=False
    ),
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    exact: bool = ExactOpt,
    top_k: int = typer.Option(DEFAULT_TOP_K, "--top-k", "-k", min=1, help="Excerpts per question."),
    thresholds: str = typer.Option(
        ",".join(f"{t:g}" for t in DEFAULT_EVAL_THRESHOLDS),
        "--thresholds",
        help="Trimming thresholds to sweep (comma-separated).",
    ),
    windows: str = typer.Option(
        ",".join(map(str, DEFAULT_EVAL_WINDOWS)), "--windows", help="Trimming windows to sweep (comma-separated)."
    ),
    answers: bool = typer.Option(
        False, "--answers", help="Also generate answers and judge faithfulness, context precision and citations."
    ),
    llm: str | None = typer.Option(
        None, "--llm", envvar="LOCALLENS_LLM", help="GGUF that answers (with --answers) [default: the packaged LLM]."
    ),
    judge: str | None = typer.Option(
        None, "--judge", help="GGUF that judges (with --answers) [default: the packaged LLM]."
    ),
    extractive: bool = typer.Option(
        False, "--extractive", help="With --answers: answer as `ask --extractive` does (no generator)."
    ),
    beir: Path | None = typer.Option(
        None, "--beir", help="Run a BEIR-layout dataset folder instead (corpus.jsonl, queries.jsonl, qrels/test.tsv)."
    ),
    model: str = typer.Option("auto", "--model", "-m", help="Embedding model for the --beir brain."),
    device: str = DeviceOpt,
    hybrid: bool = HybridOpt,
    csv_out: Path | None = typer.Option(None, "--csv", help="Write the sweep as CSV."),
    plot: Path | None = typer.Option(None, "--plot", help="Draw token reduction against overlap/retention (PNG)."),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Measure trimming (token reduction vs. loss), retrieval quality and answer quality."""
    with handled(json_out):
        from locallens.errors import UsageError
        from locallens.evaluation import EvalRequest, parse_thresholds, parse_windows, run_beir, run_eval

        if (questions is None) == (beir is None):
            raise UsageError("give either a QUESTIONS file or --beir DIR")
        request = EvalRequest(
            db=_db(db, exact),
            brain=brain,
            questions=questions,
            beir=beir,
            top_k=top_k,
            thresholds=parse_thresholds(thresholds),
            windows=parse_windows(windows),
            answers=answers,
            llm=llm,
            judge=judge,
            device=device,
            model=None if model == "auto" else model,
            hybrid=hybrid,
            extractive=extractive,
        )
        with progress_for_stderr(quiet) as bar:
            report: Any = run_beir(request, bar) if beir is not None else run_eval(request, bar)
        if beir is None:
            if csv_out is not None:
                report.write_csv(csv_out)
            if plot is not None:
                report.plot(plot)
        if json_out:
            print_json(report.as_json())
        else:
            stdout_console().print(clean(report.render_text(), multiline=True), markup=False)


def _service(
    db: DbLocation,
    brain: str,
    llm: str | None,
    ctx: int,
    threads: int | None,
    gpu_layers: int,
    device: str,
    hybrid: bool,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    readable_dirs: tuple[Path, ...] = (),
) -> Any:
    from locallens.service import Service, ServiceSettings

    return Service(
        ServiceSettings(
            db=db,
            brain=brain,
            llm=llm,
            n_ctx=ctx,
            threads=threads,
            gpu_layers=gpu_layers,
            device=device,
            hybrid=hybrid,
            max_tokens=max_tokens,
            readable_dirs=readable_dirs,
        )
    )


DEFAULT_HOST = "127.0.0.1"  # `serve` listens on loopback unless told otherwise
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServerOptions:
    """The options `serve` and `mcp` share, declared once (`_with_server_options`): the index and
    how the models run."""

    brain: str
    db: str | None
    exact: bool
    llm: str | None
    ctx: int
    threads: int | None
    gpu_layers: int
    device: str
    hybrid: bool

    def service(self, readable_dirs: tuple[Path, ...] = ()) -> Any:
        return _service(
            _db(self.db, self.exact),
            self.brain,
            self.llm,
            self.ctx,
            self.threads,
            self.gpu_layers,
            self.device,
            self.hybrid,
            readable_dirs=readable_dirs,
        )


# Each field of ServerOptions: its type and its option, in the order `--help` lists them.
_SERVER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "brain": (str, BrainOpt),
    "db": (str | None, DbOpt),
    "exact": (bool, ExactOpt),
    "llm": (str | None, LlmOpt),
    "ctx": (int, CtxOpt),
    "threads": (int | None, ThreadsOpt),
    "gpu_layers": (int, GpuOpt),
    "device": (str, DeviceOpt),
    "hybrid": (bool, HybridOpt),
}
SERVER_OPTIONS: Any = None  # the default of a command's `server` parameter, replaced by the options


def _with_server_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`'s `server: ServerOptions` parameter, shown to typer as ServerOptions' options in
    its place; the command gets them back as one ServerOptions."""
    signature = inspect.signature(command, eval_str=True)
    hints = typing.get_type_hints(command)
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
        for name, (kind, option) in _SERVER_OPTIONS.items()
    ]
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name == "server":
            parameters.extend(shared)
        else:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def run(**values: Any) -> None:
        server = ServerOptions(**{name: values.pop(name) for name in _SERVER_OPTIONS})
        command(server=server, **values)

    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {
        **{k: v for k, v in hints.items() if k != "server"},
        **{name: kind for name, (kind, _) in _SERVER_OPTIONS.items()},
    }
    return run


@app.command(
    epilog="Examples:\n\n  locallens serve\n\n  locallens serve --port 9000 --brain work\n\n"
    '  curl -s localhost:8765/ask -d \'{"question": "Which port does staging use?"}\'\n\n'
    "  LOCALLENS_TOKEN=s3cret locallens serve --host 0.0.0.0"
)
@_with_server_options
def serve(
    host: str = typer.Option(DEFAULT_HOST, "--host", help="Address to listen on (beyond loopback only with a token)."),
    port: int = typer.Option(DEFAULT_PORT, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."),
    token: str | None = typer.Option(
        None, "--token", envvar="LOCALLENS_TOKEN", callback=_token, help="Bearer token every request must carry."
    ),
    server: ServerOptions = SERVER_OPTIONS,
    quiet: bool = QuietOpt,
) -> None:
    """Serve ask and search over a local HTTP JSON API, with the models kept loaded."""
    with handled():
        from locallens.http_api import make_server, print_listening

        service = server.service()
        httpd = make_server(service, host, port, token)
        if not quiet:
            print_listening(host, httpd.server_address[1])
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
            service.close()


@app.command(
    epilog="Examples:\n\n  locallens mcp\n\n  locallens mcp --brain work --db ~/notes.db\n\n"
    "  locallens mcp --http 127.0.0.1:8766"
)
@_with_server_options
def mcp(
    http: str | None = typer.Option(None, "--http", help="Serve streamable HTTP on HOST:PORT instead of stdio."),
    server: ServerOptions = SERVER_OPTIONS,
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Accepted for uniform scripts: the MCP server prints nothing but errors anyway."
    ),
    allow_read: list[Path] = typer.Option(
        [],
        "--allow-read",
        help="A folder whose questions files eval_retrieval may read, besides the brain's roots (repeatable).",
        metavar="DIR",
        show_default=False,
    ),
) -> None:
    """Run a Model Context Protocol server (stdio by default) for AI agents and editors."""
    with handled():
        from locallens.errors import UsageError
        from locallens.http_api import is_loopback
        from locallens.mcp_server import serve_http, serve_stdio

        for folder in allow_read:
            if not folder.expanduser().is_dir():
                raise UsageError(f"--allow-read {folder}: not a folder")
        readable = tuple(folder.expanduser().resolve() for folder in allow_read)
        service = server.service(readable_dirs=readable)
        try:
            if http is None:
                serve_stdio(service)
            else:
                host, _, port = http.rpartition(":")
                if not host or not port.isdigit():
                    raise UsageError(f"--http takes HOST:PORT, got {http!r}")
                if not is_loopback(host):
                    raise UsageError(
                        f"--http {http} listens beyond this machine, and the MCP HTTP transport takes no token: "
                        "listen on 127.0.0.1, ::1 or localhost (`locallens serve --token` serves beyond it)"
                    )
                serve_http(service, host, int(port))
        except KeyboardInterrupt:
            pass
        finally:
            service.close()


@app.command(
    epilog="Examples:\n\n  locallens chat\n\n  locallens chat --brain work --extractive\n\n"
    "  locallens chat --llm ~/models/qwen2.5-1.5b-instruct-q4_k_m.gguf --no-history"
)
def chat(
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    exact: bool = ExactOpt,
    top_k: int = typer.Option(
        DEFAULT_TOP_K,
        "--top-k",
        "-k",
        min=1,
        max=100,
        envvar="LOCALLENS_TOP_K",
        help="Excerpts per question; and, as in ask, what the per-file cap held back among them (up to k-2 more).",
    ),
    llm: str | None = LlmOpt,
    max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", min=1, help="Longest answer, in tokens."),
    ctx: int = CtxOpt,
    threads: int | None = ThreadsOpt,
    gpu_layers: int = GpuOpt,
    device: str = DeviceOpt,
    hybrid: bool = HybridOpt,
    extractive: bool = typer.Option(
        False, "--extractive", help="Start with extractive answers (no LLM); /generate switches back."
    ),
    follow_ups: bool = typer.Option(
        True,
        "--follow-ups/--no-follow-ups",
        help="Search a short follow-up (6 words at most, opening with and/what about/y/... or leaning on "
        "a pronoun: 'who does it?') together with the question before it; the prompt still holds only "
        "the new question.",
    ),
    history: bool = typer.Option(
        True,
        "--history/--no-history",
        envvar="LOCALLENS_CHAT_HISTORY",
        help="Keep the questions typed in $LOCALLENS_HOME/chat_history (private, 0600) for the arrow keys.",
    ),
) -> None:
    """Ask question after question at a terminal, with the models kept loaded.

    Every question is searched on its own and answered from its excerpts alone: the prompt never
    holds earlier questions or answers. The answer streams as the model writes it, then the
    checked answer and its sources are printed as `ask` prints them. Type /help for the commands
    (/sources, /show N, /extractive, /generate, /brain NAME, /path GLOB, /quit). Ctrl-C stops an
    answer, Ctrl-D leaves. Not at a terminal: exit 2 (use `ask --batch`)."""
    with handled():
        from locallens.chat import ChatOutput, ChatSession, check_terminal, history_path, interactive
        from locallens.show import remember_answer, show_source

        check_terminal(sys.stdin)
        location = _db(db, exact)
        service = _service(location, brain, llm, ctx, threads, gpu_layers, device, hybrid, max_tokens)

        def stream(text: str) -> None:
            sys.stdout.write(clean(text, multiline=True))
            sys.stdout.flush()

        output = ChatOutput(
            stream=stream,
            say=lambda text: stdout_console().print(clean(text, multiline=True), markup=False),
            error=lambda message: print(f"locallens: {clean(message)}", file=sys.stderr, flush=True),
            answer=lambda data: _print_answer(
                data, json_out=False, sources=remember_answer(location, session.brain, data)
            ),
            sources=_print_sources,
            show=lambda number: _print_region(show_source(number)),
        )
        session = ChatSession(service, output, top_k=top_k, extractive=extractive, follow_ups=follow_ups)
        try:
            code = interactive(session, history_path() if history else None)
        finally:
            service.close()
        raise typer.Exit(code)


@app.command(
    epilog="Examples:\n\n  locallens show hr/leave-policy.md:12-20\n\n  locallens show 2\n\n"
    "  locallens show hr/expense-policy.pdf#page=1"
)
def show(
    target: str = typer.Argument(
        ...,
        help="PATH:LINE, PATH:START-END, PATH#page=N (any #kind=label a citation prints), or N: source N of the last answer.",
        show_default=False,
    ),
    db: str | None = DbOpt,
    context: int = typer.Option(
        DEFAULT_SHOW_CONTEXT, "--context", "-C", min=0, help="Lines printed before and after the cited ones."
    ),
) -> None:
    """Print the cited lines of an indexed file, marked with >: jump from a citation to its source."""
    with handled():
        from locallens import show as jump

        if target.strip().isdigit():
            region = jump.show_source(int(target), context)
        else:
            region = jump.show_target(_db(db, False), jump.parse_target(target), context)
        _print_region(region)


def _print_region(region: Any) -> None:
    """A file region (`locallens.show`): its citation, then its lines, the cited ones marked >."""
    for line in region.notes:
        note(line)
    out = stdout_console()
    out.print(_linked(clean(region.citation), region.path), markup=False, style="bold")
    width = max((len(str(n)) for n, _ in region.lines if n is not None), default=0)
    for number, line in region.lines:
        if number is None:
            out.print(clean(line, multiline=True), markup=False)
            continue
        mark = ">" if number in region.marked else " "
        out.print(
            f"{mark} {number:>{width}} │ {clean(line, multiline=True)}",
            markup=False,
            style="bold" if number in region.marked else None,
        )


def hyperlinks() -> bool:
    """Source paths are OSC 8 hyperlinks only on a terminal, never on a pipe or with NO_COLOR."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _linked(text: str, path: object) -> Any:
    """`text` as a hyperlink to the file `path` (`file://...`) when `hyperlinks()`, else as is."""
    if path is None or not hyperlinks():
        return text
    from pathlib import Path as _Path

    from rich.style import Style
    from rich.text import Text

    return Text(text, style=Style(link=_Path(str(path)).absolute().as_uri()))


@app.command(epilog="Examples:\n\n  locallens status\n\n  locallens status --brain work --json")
def status(
    brain: str | None = typer.Option(None, "--brain", "-b", callback=_brain_name, help="Only this brain."),
    db: str | None = DbOpt,
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Show brains, their model, roots, sizes, last run and how many files changed since.

    With --quiet nothing is printed: the exit code says whether the database (and brain) can be
    read (0) or not (3)."""
    with handled(json_out):
        from locallens.status import collect_status
        from locallens.storage import keeps_deleted_pages

        location = _db(db)
        info = collect_status(location, brain)
        if json_out:
            print_json(info)
            return
        if quiet:
            return
        out = stdout_console()
        # SQLite keeps deleted pages until VACUUM; PostgreSQL's autovacuum reuses them itself.
        reclaim = (
            f", {info['free_bytes'] / 1e6:.1f} MB reclaimable with VACUUM" if keeps_deleted_pages(location) else ""
        )
        out.print(f"database {clean(info['db'])} ({info['db_bytes'] / 1e6:.1f} MB{reclaim})", markup=False)
        if not info["brains"]:
            out.print("no brains yet: run `locallens index PATH`", markup=False)
        for b in info["brains"]:
            # A brain whose first run never finished has no "since": its files are still to index.
            freshness = (
                # stale: new, changed or gone since, or made by an older reader or chunking
                f"last indexed {b['last_indexed']}, {b['stale']} file(s) out of date"
                if b["last_indexed"]
                else f"first index not finished, {b['stale']} file(s) still to index (run `locallens index` again)"
            )
            out.print(
                f"\n{clean(b['name'])}: {clean(b['model'])} ({b['dim']} dims), {clean(b['chunker'])} chunks of "
                f"{b['chunk_size']}/{b['chunk_overlap']} tokens, {b['documents']} documents, "
                f"{b['chunks']} chunks, {freshness}\n  roots: {clean(', '.join(b['roots'])) or '-'}",
                markup=False,
            )
        for r in info["unfinished_rebuilds"]:
            out.print(
                f"\nunfinished rebuild of brain {clean(repr(r['brain']))} with {clean(r['model'])}: "
                f"{r['documents']} documents, {r['chunks']} chunks so far; `locallens index --rebuild "
                f"--brain {clean(r['brain'])} PATH` resumes it (with the same model and settings)",
                markup=False,
            )


@app.command(
    epilog="Examples:\n\n  locallens forget ~/Downloads\n\n  locallens forget /mnt/usb/notes --brain work --dry-run"
)
def forget(
    paths: list[Path] = typer.Argument(
        ..., help="Roots of the brain to drop (a folder holding roots drops them all).", show_default=False
    ),
    brain: str = BrainOpt,
    db: str | None = DbOpt,
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be forgotten; change nothing."),
    wait: float = _wait_option("Seconds to wait for a running index of the brain to finish."),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Take roots out of a brain: their files' chunks and vectors go, the files on disk stay.

    A path inside a root (not a root itself) is refused: the root's next `index` would bring it
    back; use `index ROOT --exclude GLOB`. A path may be missing on disk (an unmounted drive).
    `locallens index PATH` adds it again."""
    with handled(json_out):
        from locallens.forget import ForgetRequest
        from locallens.forget import forget as run_forget

        report = run_forget(ForgetRequest(paths=paths, db=_db(db), brain=brain, dry_run=dry_run, wait=wait))
        if json_out:
            print_json(report.as_json())
        elif not quiet:
            out = stdout_console()
            for line in report.summary().splitlines():
                out.print(clean(line), markup=False)


@app.command(
    "copy",
    epilog="Examples:\n\n  locallens copy ~/.local/share/locallens/index.db postgresql://me@db.example.com/locallens\n\n"
    "  locallens copy postgresql://me@db.example.com/locallens team.db --brain work\n\n"
    "  locallens copy index.db backup.db --replace --json",
)
def copy_(
    source: str = typer.Argument(..., help="Database to copy from: a file or a postgresql:// URL.", show_default=False),
    dest: str = typer.Argument(
        ..., help="Database to copy into (created if missing): a file or a postgresql:// URL.", show_default=False
    ),
    brains: list[str] = typer.Option(
        [], "--brain", "-b", help="Copy only this brain (repeatable) [default: every brain]."
    ),
    replace: bool = typer.Option(False, "--replace", help="Overwrite brains that DEST already holds."),
    wait: float = _wait_option("Seconds to wait for another writer of DEST to finish."),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Copy brains with their vectors into another database.

    SOURCE and DEST are each a SQLite file or a PostgreSQL URL. Every brain (or each --brain)
    is copied with its settings, roots, documents, chunks and vectors: nothing is re-embedded.
    A brain arrives whole or not at all: it is written under a hidden name and swapped in when
    complete, so DEST serves what it held until then. A brain DEST already holds is refused
    (exit 2) unless --replace."""
    with handled(json_out):
        from locallens.copying import BrainCopy, CopyRequest, copy_brains
        from locallens.storage import parse_db

        request = CopyRequest(source=parse_db(source), dest=parse_db(dest), brains=brains, replace=replace, wait=wait)
        copied: list[BrainCopy] = []
        try:
            with progress_for_stderr(quiet) as bar:
                report = copy_brains(request, bar, on_brain=copied.append)
        finally:
            # After the bars are gone (while they are drawn, rich sends stdout to stderr); and
            # also when a later brain failed: the brains already swapped in are in DEST.
            if not json_out and not quiet:
                out = stdout_console()
                for done in copied:
                    out.print(clean(done.summary()), markup=False)
        if json_out:
            print_json(report.as_json())
        elif not quiet and report.sentence_vectors:
            note(f"also copied {report.sentence_vectors} cached sentence vector(s) into {report.dest}")


@app.command(epilog="Examples:\n\n  locallens models\n\n  locallens models --json")
def models(
    db: str | None = DbOpt,
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """List the models usable offline: packaged, in the Hugging Face cache, and named in the settings.

    Each with its kind (embedding, llm, reranker), size, where it comes from, whether it is usable,
    and which brains were built with it. Nothing is downloaded: `locallens pull NAME` does that."""
    with handled(json_out):
        from locallens.doctor import list_models, models_json, render_models

        entries = list_models(_db(db))
        if json_out:
            sys.stdout.write(models_json(entries) + "\n")
        elif not quiet:
            stdout_console().print(clean(render_models(entries), multiline=True), markup=False)


def _catalogue_help() -> str:
    from locallens.pull import CATALOGUE

    return "\n\n".join(f"  {e.name:16} {e.kind:9} {e.about}" for e in CATALOGUE)


@app.command(
    epilog="Catalogue:\n\n" + _catalogue_help() + "\n\nExamples:\n\n  locallens pull bge-small\n\n"
    '  locallens pull qwen-1.5b && locallens ask "..." --llm qwen-1.5b\n\n'
    "  locallens pull Qwen/Qwen2.5-3B-Instruct-GGUF/qwen2.5-3b-instruct-q8_0.gguf"
)
def pull(
    name: str = typer.Argument(
        ...,
        help="A catalogue name, a hub id (OWNER/REPO or OWNER/REPO/FILE.gguf), or a GGUF's URL (on the hub or not).",
        show_default=False,
    ),
    sha256: str | None = typer.Option(
        None,
        "--sha256",
        metavar="HEX",
        help="The SHA-256 the one file must have (a URL may carry it as #sha256=HEX); a mismatch is removed, exit 6.",
        show_default=False,
    ),
    json_out: bool = JsonOpt,
    quiet: bool = QuietOpt,
) -> None:
    """Download a model into the Hugging Face cache: the one command that uses the network.

    Through the hub's own client, with a progress bar; a dropped connection is resumed, a pull
    that was stopped continues from the bytes it had, files already there are kept, and every
    file is checked against the hub's checksum (a mismatch is removed, exit 6). A GGUF at any
    other URL is fetched the same way, checked against --sha256 when given. Then name it where a
    model is asked for: --model bge-small, --llm qwen-1.5b, --rerank minilm-reranker, --llm URL.
    No network: one line, exit 6."""
    with handled(json_out):
        from locallens.pull import parse_target
        from locallens.pull import pull as run_pull

        result = run_pull(parse_target(name, sha256), progress=not quiet and not json_out and sys.stderr.isatty())
        if json_out:
            print_json(result.as_json())
        elif not quiet:
            checked = "verified" if result.verified else "not verified: no checksum given (--sha256)"
            stdout_console().print(
                f"{clean(result.target.name)} ({result.kind}, {result.bytes / 1e6:.1f} MB, "
                f"{len(result.files)} file(s) {checked}) in {clean(result.path)}\nuse it with: {clean(result.usage())}",
                markup=False,
            )


@app.command(epilog="Examples:\n\n  locallens doctor\n\n  locallens doctor --json")
def doctor(
    db: str | None = DbOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Show what this installation can do: versions, SQLite extensions, the store, models, GPU, settings.

    Offline, read-only. Each setting is shown with where its value came from (environment,
    config file or default)."""
    with handled(json_out):
        from locallens.doctor import doctor as run_doctor
        from locallens.doctor import render_doctor

        report = run_doctor(_db(db))
        if json_out:
            print_json(report)
        else:
            stdout_console().print(clean(render_doctor(report), multiline=True), markup=False)


def option_kinds() -> dict[str, dict[str, str]]:
    """{command: {the name an option goes by in the config file: its kind}}, for every command;
    the kinds are `config.KINDS`' keys (what a config value of the option must be), read from
    the annotations of the command's function (`top_k: int`, `db: str | None`, `include: list[str]`)."""
    import typing

    group: Any = typer.main.get_command(app)
    kinds: dict[str, dict[str, str]] = {}
    for name, command in group.commands.items():
        hints = typing.get_type_hints(command.callback)
        kinds[name] = {p.name: _kind(hints.get(p.name, str)) for p in command.params if p.name}
    return kinds


def _kind(annotation: Any) -> str:
    import types
    import typing

    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # `int | None`: its int
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is list:
        return "strings"
    return {bool: "boolean", int: "integer", float: "number"}.get(annotation, "string")


def main() -> None:
    from locallens.config import load_default_map
    from locallens.errors import UsageError

    try:
        default_map = load_default_map(option_kinds())
    except UsageError as exc:
        args = sys.argv[1:]
        if "--json" in args[: args.index("--") if "--" in args else None]:
            print_error_json(str(exc), exc.exit_code)
        print(f"locallens: error: {clean(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    if os.environ.get("_LOCALLENS_COMPLETE"):
        # a shell asking for completions: Typer's completion classes answer it (registered by
        # Typer itself only when it adds its own completion options)
        from typer.completion import completion_init

        completion_init()
    try:
        # "locallens" however it was started (`python -m locallens` too): the name its usage
        # lines print and its completion script completes
        app(default_map=default_map, prog_name="locallens")
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(_exit_if_pipe_closes)
    except SystemExit as exc:
        # Click answers a closed pipe while it prints (--help, --version, completion) with exit
        # 1, after wrapping stdout in its PacifyFlushWrapper: a reader that went away is not a
        # failure.
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _silence_stdout()
            sys.exit(_exit_if_pipe_closes)
        raise

"""Where things live, and the config file.

Precedence for every option is flag > LOCALLENS_* environment variable > config file > default.
The first two are Typer's (`envvar=`); the config file feeds click's `default_map`, which click
consults after the environment and before the built-in default.

The config file is TOML at `$LOCALLENS_CONFIG`, else `$LOCALLENS_HOME/config.toml`. Top-level keys
apply to every command that has an option of that name; a `[ask]`, `[index]`, ... table applies to
that command only and wins over the top level:

    brain = "notes"
    [ask]
    top_k = 8
    llm = "/models/qwen2.5-1.5b-instruct-q4_k_m.gguf"
"""

from __future__ import annotations

import difflib
import math
import os
import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMANDS = ("index", "ask", "trim", "eval", "status")

# -- defaults -------------------------------------------------------------------------------------
# One definition of each default a command exposes. The CLI's options (and the help texts that
# show them), the request dataclasses and the core functions all read these. They live here, not
# in the modules that use them, because the CLI needs them at import time and those modules load
# NumPy (this one must stay light: `locallens --help` imports it).

CHUNKERS = ("paragraph", "percentile", "maxmin")
DEFAULT_CHUNKER = "paragraph"
DEFAULT_MAX_FILE_MB = 10.0  # index: larger files are skipped (counted, not an error)
DEFAULT_CHUNK_SIZE = 220  # tokens per chunk (the paragraph chunker)
DEFAULT_CHUNK_OVERLAP = 40  # tokens shared by consecutive chunks

DEVICES = ("auto", "cpu", "cuda", "mps")  # where the embedding model runs
DEFAULT_DEVICE = "auto"

DEFAULT_TOP_K = 5  # excerpts retrieved per question
DEFAULT_SHOW_CONTEXT = 3  # `show`: lines printed before and after the cited ones
DEFAULT_HYBRID = True  # vector and keyword search fused (`--no-hybrid`: vector search alone)

DEFAULT_TRIM_THRESHOLD = 0.38  # a sentence is kept when its cosine similarity reaches this
DEFAULT_TRIM_WINDOW = 0  # neighbours kept around a kept sentence (`trim`)
DEFAULT_ASK_TRIM_WINDOW = 1  # the same for `ask --trim`: an answer reads better with context
DEFAULT_MIN_SENTENCES = 1  # sentences every trimmed chunk keeps at least
DEFAULT_EVAL_THRESHOLDS = (0.3, DEFAULT_TRIM_THRESHOLD, 0.45)  # what `eval` sweeps
DEFAULT_EVAL_WINDOWS = (0, 1, 2)

DEFAULT_N_CTX = 4096  # the LLM's context window, in tokens (0: the model's own)
DEFAULT_MAX_TOKENS = 384  # longest answer, in tokens
DEFAULT_PROMPT_PASSAGES = True  # the LLM reads the excerpts' best passages (True) or the whole excerpts

DEFAULT_RERANK_CANDIDATES = 50  # stage-1 candidates a cross-encoder re-scores
DEFAULT_MIN_RELEVANCE = 0.4  # reranked excerpts scoring below this (0..1) are dropped


def locallens_home() -> Path:
    """`$LOCALLENS_HOME`, else the XDG data dir (`~/.local/share/locallens`)."""
    if home := os.environ.get("LOCALLENS_HOME"):
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg).expanduser() / "locallens"


def default_db_path() -> Path:
    return locallens_home() / "index.db"


PRIVATE_DIR_MODE = 0o700  # folders locallens creates: the index holds the full text of notes
PRIVATE_FILE_MODE = 0o600  # the database, its WAL/SHM, the lock file and cache files


def make_private_dir(path: Path) -> None:
    """Create `path` and its missing parents as 0700 folders, whatever the umask.

    Folders that already exist keep their mode: a folder the user chose is the user's business.
    """
    path = Path(path)
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # created meanwhile by another process: not ours to chmod
        os.chmod(folder, PRIVATE_DIR_MODE)


def config_path() -> Path:
    if explicit := os.environ.get("LOCALLENS_CONFIG"):
        return Path(explicit).expanduser()
    return locallens_home() / "config.toml"


def _unknown(path: Path, key: str, known: Iterable[str], where: str = "") -> UsageError:
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return UsageError(f"config file {path}: unknown option {key!r}{where}{hint}")


# What a config value must be, by the kind of its option: TOML's own types, never converted (click
# would turn `db = 42` into the path "42" and `top_k = 2.5` into 2). Each kind is (what a message
# calls it, the Python types `tomllib` gives for it); a bool is never a number.
KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "string": ("a string", (str,)),
    "integer": ("an integer", (int,)),
    "number": ("a number", (int, float)),
    "boolean": ("true or false", (bool,)),
    "strings": ("an array of strings", (list,)),
}


def _toml_type(value: object) -> str:
    """How a TOML value is called in a message: `the integer 42`, `the string 'x'`, `a table`."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"  # dates and times


def kind_problem(value: object, kind: str) -> str | None:
    """What is wrong with a config `value` for an option of `kind` (a key of KINDS), or None."""
    what, types = KINDS[kind]
    ok = isinstance(value, types) and not (isinstance(value, bool) and kind in ("integer", "number"))
    if ok and kind == "strings":
        odd = next((item for item in value if not isinstance(item, str)), None)  # type: ignore[attr-defined]
        if odd is not None:
            return f"must be {what} (got an array holding {_toml_type(odd)})"
    return None if ok else f"must be {what} (got {_toml_type(value)})"


def _check_kinds(path: Path, values: Mapping[str, Any], kinds: Iterable[Mapping[str, str]], where: str = "") -> None:
    for key, value in values.items():
        for kind in {k[key] for k in kinds if key in k}:
            if problem := kind_problem(value, kind):
                raise UsageError(f"'{key}' in the config file {path}{where} {problem}")


def load_default_map(
    known: Mapping[str, Collection[str] | Mapping[str, str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Read the config file into click's `default_map` shape: {command: {param: value}}.

    `known` ({command: option names}) makes an unknown key or table a usage error naming it and
    the closest known name (a misspelt `topk` would otherwise be ignored without a word). When
    each command maps its option names to their kinds ({name: a key of KINDS}), a value of
    another TOML type is a usage error naming the key, the file and the type expected."""
    path = config_path()
    if os.environ.get("LOCALLENS_CONFIG") and not path.exists():
        raise UsageError(f"LOCALLENS_CONFIG names {path}, which does not exist")
    if path.exists() and not path.is_file():
        raise UsageError(f"config file {path} is not a file (a folder?): point LOCALLENS_CONFIG at a TOML file")
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from exc
    top = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
    if known is not None:
        everywhere = set().union(*(known.get(c, ()) for c in COMMANDS))
        for key in top:
            if key not in everywhere:
                raise _unknown(path, key, everywhere)
        _check_kinds(path, top, [k for c in COMMANDS if isinstance(k := known.get(c, ()), Mapping)])
        for key, value in data.items():
            if isinstance(value, dict) and key not in COMMANDS:
                close = difflib.get_close_matches(key, COMMANDS, n=1)
                hint = f"; did you mean [{close[0]}]?" if close else f" (tables: {', '.join(COMMANDS)})"
                raise UsageError(f"config file {path}: unknown table [{key}]{hint}")
    default_map: dict[str, dict[str, Any]] = {}
    for command in COMMANDS:
        section = data.get(command, {})
        if not isinstance(section, dict):
            raise UsageError(f"config file {path}: [{command}] must be a table")
        if known is not None:
            for key in section:
                if key.replace("-", "_") not in known.get(command, ()):
                    raise _unknown(path, key.replace("-", "_"), known.get(command, ()), f" in [{command}]")
            if isinstance(kinds := known.get(command, ()), Mapping):
                _check_kinds(path, {k.replace("-", "_"): v for k, v in section.items()}, [kinds], f" ([{command}])")
        merged = dict(top)
        merged.update({k.replace("-", "_"): v for k, v in section.items()})
        default_map[command] = merged
    return default_map


def or_list(items: Iterable[object]) -> str:
    """`("a", "b", "c")` → "a, b or c", for messages and help texts."""
    words = [str(item) for item in items]
    return " or ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def env_flag(name: str) -> bool:
    """True for 1/true/yes/on, False for 0/false/no/off or unset (case-insensitive); anything
    else is a usage error naming the variable, as a bad value of a flag is."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in {"1", "true", "yes", "on", "y", "t"}:
        return True
    if raw in {"", "0", "false", "no", "off", "n", "f"}:
        return False
    raise UsageError(f"{name} must be 1/true/yes/on or 0/false/no/off (got {os.environ[name]!r})")


def number_problem(
    value: float, low: float | None = None, high: float | None = None, allow_inf: bool = False
) -> str | None:
    """What is wrong with `value` as a setting, or None: NaN never, infinity only with
    `allow_inf`, and within low..high. The one check behind flags, variables and the config file."""
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        return f"must be a finite number (got {value})"
    if (low is not None and value < low) or (high is not None and value > high):
        return (
            f"must be within {low if low is not None else '-inf'}..{high if high is not None else 'inf'} (got {value})"
        )
    return None


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    strategy: str = DEFAULT_CHUNKER  # one of CHUNKERS (docs/behaviour.md#chunking)

    def __post_init__(self) -> None:
        if self.strategy not in CHUNKERS:
            raise UsageError(f"--chunker must be {or_list(CHUNKERS)} (got {self.strategy!r})")
        if self.chunk_size <= 0:
            raise UsageError(f"--chunk-size must be positive (got {self.chunk_size})")
        if self.chunk_overlap < 0:
            raise UsageError(f"--chunk-overlap cannot be negative (got {self.chunk_overlap})")
        if self.chunk_size <= self.chunk_overlap:
            raise UsageError(
                f"--chunk-size ({self.chunk_size}) must be larger than --chunk-overlap "
                f"({self.chunk_overlap}), or chunking would never advance"
            )


@dataclass(frozen=True, slots=True)
class ChunkChoice:
    """The chunk settings a command named; None is "not named".

    An `index` run without `--chunk-size`, `--chunk-overlap` or `--chunker` keeps what the brain
    recorded (a cron job or `--watch` never re-chunks a brain made with other sizes); a new brain
    takes the defaults. What is named replaces the brain's value, and then every file is
    re-chunked.
    """

    chunk_size: int | None = None
    chunk_overlap: int | None = None
    strategy: str | None = None

    def resolve(self, base: ChunkSettings) -> ChunkSettings:
        return ChunkSettings(
            base.chunk_size if self.chunk_size is None else self.chunk_size,
            base.chunk_overlap if self.chunk_overlap is None else self.chunk_overlap,
            base.strategy if self.strategy is None else self.strategy,
        )

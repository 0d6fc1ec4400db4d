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

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMMANDS = ("index", "ask", "trim", "eval", "status")


def locallens_home() -> Path:
    """`$LOCALLENS_HOME`, else the XDG data dir (`~/.local/share/locallens`)."""
    if home := os.environ.get("LOCALLENS_HOME"):
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg).expanduser() / "locallens"


def default_db_path() -> Path:
    return locallens_home() / "index.db"


def config_path() -> Path:
    if explicit := os.environ.get("LOCALLENS_CONFIG"):
        return Path(explicit).expanduser()
    return locallens_home() / "config.toml"


def load_default_map() -> dict[str, dict[str, Any]]:
    """Read the config file into click's `default_map` shape: {command: {param: value}}."""
    path = config_path()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from exc
    top = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
    default_map: dict[str, dict[str, Any]] = {}
    for command in COMMANDS:
        section = data.get(command, {})
        if not isinstance(section, dict):
            raise UsageError(f"config file {path}: [{command}] must be a table")
        merged = dict(top)
        merged.update({k.replace("-", "_"): v for k, v in section.items()})
        default_map[command] = merged
    return default_map


def env_flag(name: str) -> bool:
    """True for 1/true/yes/on (case-insensitive)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    chunk_size: int = 220
    chunk_overlap: int = 40
    strategy: str = "paragraph"  # paragraph | percentile | maxmin (SPEC §1, §7)

    def __post_init__(self) -> None:
        if self.strategy not in ("paragraph", "percentile", "maxmin"):
            raise UsageError(f"--chunker must be paragraph, percentile or maxmin (got {self.strategy!r})")
        if self.chunk_size <= 0:
            raise UsageError(f"--chunk-size must be positive (got {self.chunk_size})")
        if self.chunk_overlap < 0:
            raise UsageError(f"--chunk-overlap cannot be negative (got {self.chunk_overlap})")
        if self.chunk_size <= self.chunk_overlap:
            raise UsageError(
                f"--chunk-size ({self.chunk_size}) must be larger than --chunk-overlap "
                f"({self.chunk_overlap}), or chunking would never advance"
            )

"""How long-running work reports progress: one protocol for indexing and evaluation.

Work comes in named stages ("files", "embedding", "searching", ...). `add(stage, n)` announces
`n` more units of work in a stage (the first call shows it; later calls raise its total, as the
indexer discovers embedding work batch by batch); `advance(stage, n)` marks `n` of them done.
The core never draws anything: the CLI passes a rich bar on a terminal and `NoProgress`
otherwise (a pipe, `--quiet`, library use, tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["NoProgress", "Progress", "Relabelled"]


class Progress(Protocol):
    def add(self, stage: str, n: int) -> None:
        """`n` more units of work in `stage`."""
        ...

    def advance(self, stage: str, n: int = 1) -> None:
        """`n` units of `stage` done."""
        ...


class NoProgress:
    """Progress that goes nowhere."""

    def add(self, stage: str, n: int) -> None:
        return None

    def advance(self, stage: str, n: int = 1) -> None:
        return None


class Relabelled:
    """Passes progress on under other stage names (the indexer's "files" shown as "indexing
    files" when an evaluation runs it as one of its steps); unlisted stages keep their name."""

    def __init__(self, progress: Progress, labels: Mapping[str, str]) -> None:
        self.progress = progress
        self.labels = dict(labels)

    def add(self, stage: str, n: int) -> None:
        self.progress.add(self.labels.get(stage, stage), n)

    def advance(self, stage: str, n: int = 1) -> None:
        self.progress.advance(self.labels.get(stage, stage), n)

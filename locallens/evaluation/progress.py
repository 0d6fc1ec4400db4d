"""How the long evaluation steps report progress, so the CLI can draw one bar per stage.

A stage is named by a short label ("embedding chunks", "searching", ...). `start(stage, total)`
creates the stage's bar, or raises its total when called again for the same stage (the indexer
announces its embedding work batch by batch); `advance(stage, n)` moves it. The core never draws
anything itself.
"""

from __future__ import annotations

from typing import Protocol


class EvalProgress(Protocol):
    def start(self, stage: str, total: int) -> None: ...
    def advance(self, stage: str, n: int = 1) -> None: ...


class NoProgress:
    """Progress that goes nowhere (library use, tests)."""

    def start(self, stage: str, total: int) -> None:
        return None

    def advance(self, stage: str, n: int = 1) -> None:
        return None


class IndexProgressAdapter:
    """Feeds the indexer's progress callbacks (`locallens.indexer.Progress`) into EvalProgress."""

    FILES = "indexing files"
    EMBEDDING = "embedding chunks"

    def __init__(self, progress: EvalProgress) -> None:
        self.progress = progress
        self.embed_total = 0

    def files(self, total: int) -> None:
        self.progress.start(self.FILES, total)

    def file_done(self, n: int = 1) -> None:
        self.progress.advance(self.FILES, n)

    def embedding(self, total: int) -> None:
        # Called once per embedding batch with that batch's size: the bar's total grows.
        self.embed_total += total
        self.progress.start(self.EMBEDDING, self.embed_total)

    def embedded(self, n: int) -> None:
        self.progress.advance(self.EMBEDDING, n)

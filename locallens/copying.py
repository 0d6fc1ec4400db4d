"""`copy`: move brains from one store to another with their vectors, so nothing is re-embedded.

A brain travels whole: its settings (model, dimension, chunker and sizes, `headers`,
`multi_vector`), roots, documents (root, path, size, mtime, checksum), chunks (ids, text,
headers, content hashes) and every vector, window vectors included. What arrives is exactly
what an `index` run would have written, so the next incremental `index` of the copy finds its
files unchanged (and, for a file that was touched, reuses its vectors by content hash).

Safety:
- SOURCE is only read, and in one snapshot (a read-only transaction), so an `index` run writing
  SOURCE meanwhile cannot make a brain arrive half old, half new.
- DEST is written under its writer lock (SQLite: the `<db>.lock` file lock of `index`, held for
  the whole copy; PostgreSQL: the server's advisory lock of each brain), LockedError after `wait`.
- Each brain is built under a hidden name (`.copy:<name>:<pid>`), checked against SOURCE
  (documents, chunks, vectors, roots), and only then swapped in under its name in one
  transaction (`replace_brain`). Until that moment DEST serves what it held before; a copy that
  fails or is interrupted removes its hidden brain, and one that could not (killed) leaves it to
  be removed by the next copy of that brain. A SQLite DEST that the copy created and that holds
  no brain after a failure is deleted again.
- A brain that DEST already holds is refused (UsageError) unless `replace`; all of them are
  checked before anything is written.
- Messages name a PostgreSQL location by `str(PostgresURL)`, which never shows its password.

Also copied: the sentence-vector cache (used by trimming) of each copied brain's model; DEST
keeps the rows it already holds. The store interface has no listing of the cache, so it is read
here from either store's table.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from locallens.errors import NoIndexError, StoreError, UsageError
from locallens.progress import NoProgress, Progress
from locallens.storage import DbLocation, IndexStore, open_store, open_writer, same_location

if TYPE_CHECKING:
    from locallens.storage import Brain

# Hidden brains being copied are named `.copy:<name>:<pid>`; names starting with "." are never
# listed, searched or copied.
HIDDEN_PREFIX = ".copy:"
INTERNAL_PREFIX = "."
# Sentence-cache rows are read and written in pages of this many, so a large cache never has to
# fit in memory at once.
SENTENCE_PAGE = 2_000


@dataclass(frozen=True, slots=True)
class CopyRequest:
    source: DbLocation
    dest: DbLocation
    brains: Sequence[str] = ()  # empty: every brain of SOURCE except internal ones
    replace: bool = False  # overwrite brains DEST already holds
    wait: float = 0.0  # seconds to wait for DEST's writer lock


@dataclass(frozen=True, slots=True)
class BrainCopy:
    """One brain as it arrived in DEST (counts read back from DEST after the copy)."""

    name: str
    model: str
    dim: int
    documents: int
    chunks: int
    vectors: int  # chunks with a vector, as `status` counts them
    window_vectors: int  # vectors beyond each chunk's first (multi-vector brains)
    roots: list[str]
    replaced: bool  # DEST held a brain of this name, now overwritten

    def summary(self) -> str:
        windows = f" (+{self.window_vectors} window vectors)" if self.window_vectors else ""
        return (
            f"copied brain {self.name!r}: {self.documents} documents, {self.chunks} chunks, "
            f"{self.vectors} vectors{windows}"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "model": self.model,
            "dim": self.dim,
            "documents": self.documents,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "window_vectors": self.window_vectors,
            "roots": self.roots,
            "replaced": self.replaced,
        }


@dataclass
class CopyReport:
    source: str  # never with a password
    dest: str
    brains: list[BrainCopy] = field(default_factory=list)
    # Sentence-cache entries offered to DEST (those it already held are kept as they were);
    # None when SOURCE's cache cannot be listed (a store this module does not know).
    sentence_vectors: int | None = 0
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "dest": self.dest,
            "brains": [b.as_json() for b in self.brains],
            "sentence_vectors": self.sentence_vectors,
            "seconds": round(self.seconds, 3),
        }


def copy_brains(
    request: CopyRequest,
    progress: Progress | None = None,
    on_brain: Callable[[BrainCopy], None] | None = None,
) -> CopyReport:
    """Copy the requested brains of `request.source` into `request.dest`.

    `on_brain` is called as each brain is swapped in, so a caller can report it even when a
    later brain fails.
    """
    progress = progress or NoProgress()
    started = time.perf_counter()
    if same_location(request.source, request.dest):
        raise UsageError(f"SOURCE and DEST are the same database ({request.dest}): copy into another one")
    for name in request.brains:
        if name.startswith(INTERNAL_PREFIX):
            raise UsageError(f"brain {name!r} is internal (an unfinished rebuild or copy) and is never copied")
    report = CopyReport(source=str(request.source), dest=str(request.dest))
    with open_store(request.source, create=False) as source, source.read_snapshot():
        brains = _chosen_brains(source, request)
        progress.add("brains", len(brains))
        _Copier(request, source, progress, report, on_brain).into(request.dest, brains)
    report.seconds = time.perf_counter() - started
    return report


def _chosen_brains(source: IndexStore, request: CopyRequest) -> list[Brain]:
    """The brains to copy: those named (each must exist), else every brain that is not internal."""
    if request.brains:
        return [source.get_brain(name) for name in dict.fromkeys(request.brains)]
    brains = [b for b in source.brains() if not b.name.startswith(INTERNAL_PREFIX)]
    if not brains:
        raise NoIndexError(f"no brains in {request.source} to copy: run `locallens index PATH` first")
    return brains


@dataclass
class _Copier:
    """One copy run: SOURCE open, the report filling up as brains arrive."""

    request: CopyRequest
    source: IndexStore
    progress: Progress
    report: CopyReport
    on_brain: Callable[[BrainCopy], None] | None

    def into(self, dest_db: DbLocation, brains: list[Brain]) -> None:
        """Copy under DEST's writer lock: a SQLite file's for the whole copy, on PostgreSQL each
        brain's while it is copied. A SQLite DEST this run created and left without a brain is
        removed: as it was, absent."""
        with open_writer(dest_db, self.request.wait) as store:
            self._refuse_existing(store, brains)
            for brain in brains:
                with store.writing(brain.name, self.request.wait):
                    self._copy_brain(store, brain)
            self._copy_sentence_cache(store, brains)

    def _refuse_existing(self, dest: IndexStore, brains: list[Brain]) -> None:
        """Without `replace`, refuse before writing anything when DEST holds one of the brains."""
        if self.request.replace:
            return
        for brain in brains:
            if dest.find_brain(brain.name) is not None:
                raise UsageError(
                    f"brain {brain.name!r} already exists in {self.request.dest}: pass --replace to overwrite it"
                )

    def _copy_brain(self, dest: IndexStore, brain: Brain) -> None:
        """Build `brain` in DEST under a hidden name, check it, then swap it in (one transaction)."""
        source = self.source
        for leftover in dest.brains():  # of a copy of this brain that was killed: never swapped in
            if leftover.name.startswith(f"{HIDDEN_PREFIX}{brain.name}:"):
                dest.delete_brain(leftover)
        existing = dest.find_brain(brain.name)  # again, now under the lock
        if existing is not None and not self.request.replace:
            raise UsageError(
                f"brain {brain.name!r} already exists in {self.request.dest}: pass --replace to overwrite it"
            )
        expected = source.stats(brain)
        hidden = f"{HIDDEN_PREFIX}{brain.name}:{os.getpid()}"
        target = dest.create_brain(
            hidden,
            brain.model,
            brain.dim,
            brain.chunker,
            brain.chunk_size,
            brain.chunk_overlap,
            headers=brain.headers,
            multi_vector=brain.multi_vector,
        )
        windows = 0
        try:
            self.progress.add("documents", expected.documents)
            for doc in source.export_documents(brain):
                dest.write_document(target, doc)
                windows += sum(max(np.shape(v)[0] - 1, 0) for v in doc.vectors if np.ndim(v) == 2)
                self.progress.advance("documents")
            dest.touch_brain(target, expected.roots)
            got = dest.stats(target)
            want = (expected.documents, expected.chunks, expected.vectors, sorted(expected.roots))
            have = (got.documents, got.chunks, got.vectors, sorted(got.roots))
            if have != want:
                raise StoreError(
                    f"copy of brain {brain.name!r} into {self.request.dest} is incomplete "
                    f"(documents, chunks, vectors: {have[:3]} instead of {want[:3]}); "
                    f"{self.request.dest} was left as it was: run the copy again"
                )
            dest.replace_brain(existing, target, brain.name)
        except BaseException:
            _drop_hidden(dest, hidden)
            raise
        done = BrainCopy(
            name=brain.name,
            model=brain.model,
            dim=brain.dim,
            documents=got.documents,
            chunks=got.chunks,
            vectors=got.vectors,
            window_vectors=windows,
            roots=sorted(got.roots),
            replaced=existing is not None,
        )
        self.report.brains.append(done)
        self.progress.advance("brains")
        if self.on_brain is not None:
            self.on_brain(done)

    def _copy_sentence_cache(self, dest: IndexStore, brains: list[Brain]) -> None:
        """Offer DEST the cached sentence vectors of the copied brains' models (trimming reuses
        them); rows DEST already holds stay as they are."""
        total = 0
        for model in dict.fromkeys(b.model for b in brains):
            after = b""
            while page := self.source.sentence_cache_page(model, after, SENTENCE_PAGE):
                dest.cache_sentence_vectors(model, page)
                total += len(page)
                after = page[-1][0]
        self.report.sentence_vectors = total


def _drop_hidden(dest: IndexStore, hidden: str) -> None:
    """Best effort: remove a hidden brain that was never swapped in (looked up by its hidden name,
    so a brain already swapped in is never touched). Left behind, the next copy removes it."""
    with contextlib.suppress(Exception):
        leftover = dest.find_brain(hidden)
        if leftover is not None:
            dest.delete_brain(leftover)

"""`forget`: take roots out of a brain (their documents, chunks, vectors), leaving the files alone.

A brain's roots are the folders (or single files) `index` was given. `forget PATH` drops every
root that is PATH or lies below it, and the documents stored for them: their chunks, vectors and
keyword rows go in one transaction, under the same writer lock as `index` (a concurrent `index`
waits or exits 5, as two `index` runs do). A document that another remaining root also reaches
(a root inside a root) stays. The files on disk are never touched; `index PATH` brings them back.

A PATH inside a root, not a root itself, is refused: the root would bring the files back on its
next `index`. Index the root with `--exclude` instead, or forget the root. A PATH the brain does
not know is refused too, naming the brain's roots (a typo must not look like success). PATH may
be missing on disk: an unmounted drive can be forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locallens.errors import NoIndexError, UsageError
from locallens.indexer import _file_path, _resolve_roots, _under
from locallens.storage import DbLocation, db_exists, open_writer


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    paths: Sequence[Path]
    db: DbLocation
    brain: str = "default"
    dry_run: bool = False
    wait: float = 0.0


@dataclass(slots=True)
class ForgottenRoot:
    root: str
    documents: int = 0
    chunks: int = 0


@dataclass(slots=True)
class ForgetReport:
    brain: str
    db: str
    dry_run: bool
    roots: list[ForgottenRoot] = field(default_factory=list)
    kept: int = 0  # documents under a forgotten root that a remaining root still reaches

    def as_json(self) -> dict[str, Any]:
        return {
            "brain": self.brain,
            "db": self.db,
            "dry_run": self.dry_run,
            "forgotten": [{"root": r.root, "documents": r.documents, "chunks": r.chunks} for r in self.roots],
            "documents": sum(r.documents for r in self.roots),
            "chunks": sum(r.chunks for r in self.roots),
            "kept_by_other_roots": self.kept,
        }

    def summary(self) -> str:
        verb = "would forget" if self.dry_run else "forgot"
        lines = [
            f"{verb} {r.root}: {r.documents} file(s), {r.chunks} chunk(s) from brain {self.brain!r}" for r in self.roots
        ]
        if self.kept:
            lines.append(f"kept {self.kept} file(s) that another root of the brain also holds")
        lines.append("the files on disk are untouched; `locallens index PATH` brings them back")
        return "\n".join(lines)


def forget(request: ForgetRequest) -> ForgetReport:
    if not db_exists(request.db):
        raise NoIndexError(f"no index at {request.db}: nothing to forget")
    with open_writer(request.db, request.wait) as store, store.writing(request.brain, request.wait):
        brain = store.get_brain(request.brain)
        roots = store.roots(brain)
        wanted: list[str] = []
        for path in request.paths:
            key = str(_resolve_roots([path], allow_missing=True)[0])
            matched = [r for r in roots if _under(r, key)]
            if not matched:
                outer = [r for r in roots if _under(key, r)]
                if outer:
                    raise UsageError(
                        f"{key} is inside root {outer[0]} of brain {brain.name!r}, not a root: forget {outer[0]}, "
                        "or index it with --exclude"
                    )
                known = ", ".join(roots) or "none"
                raise UsageError(f"{key} is not a root of brain {brain.name!r} (its roots: {known})")
            wanted += [r for r in matched if r not in wanted]
        remaining = [r for r in roots if r not in wanted]
        report = ForgetReport(brain=brain.name, db=store.location, dry_run=request.dry_run)
        forgotten = {root: ForgottenRoot(root) for root in wanted}
        doomed: list[int] = []
        for (doc_root, relative), doc in store.documents(brain).items():
            file = _file_path(doc_root, relative)
            root = next((r for r in wanted if _under(file, r)), None)
            if root is None:
                continue
            if any(_under(file, other) for other in remaining):
                report.kept += 1
                continue
            doomed.append(doc.id)
            forgotten[root].documents += 1
            forgotten[root].chunks += len(store.chunk_texts(doc.id))
        report.roots = list(forgotten.values())
        if not request.dry_run:
            store.forget_roots(brain, wanted, doomed)
    return report

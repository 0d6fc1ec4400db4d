"""`status`: what is in the database, per brain, and how stale it is.

A brain whose first run never finished (`last_indexed` null) is shown with the files still to
index. The hidden brain of an interrupted `index --rebuild` is not a brain of its own: it is
listed under `unfinished_rebuilds` with how far it got, since the next `index --rebuild` of the
brain (same model and settings) resumes it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from locallens.indexer import REBUILD_PREFIX, stale_files
from locallens.storage import DbLocation, open_store


def _iso(ts: float | None) -> str | None:
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds") if ts else None


def collect_status(db: DbLocation, brain_name: str | None = None) -> dict[str, Any]:
    with open_store(db) as store:
        brains = (
            [store.get_brain(brain_name)]
            if brain_name
            else [
                b
                for b in store.brains()
                if not b.name.startswith(".")  # hidden: an unfinished --rebuild (listed apart) or copy
            ]
        )
        out = []
        for brain in brains:
            stats = store.stats(brain)
            out.append(
                {
                    "name": brain.name,
                    "model": brain.model,
                    "dim": brain.dim,
                    "roots": stats.roots,
                    "documents": stats.documents,
                    "chunks": stats.chunks,
                    "vectors": stats.vectors,
                    "fts_rows": stats.fts_rows,
                    "chunker": brain.chunker,
                    "chunk_size": brain.chunk_size,
                    "chunk_overlap": brain.chunk_overlap,
                    "last_indexed": _iso(brain.last_indexed),
                    "stale": stale_files(store, brain),
                }
            )
        rebuilds = []
        for hidden in store.brains():
            if not hidden.name.startswith(REBUILD_PREFIX):
                continue
            target = hidden.name[len(REBUILD_PREFIX) :].rsplit(":", 1)[0]
            if brain_name and target != brain_name:
                continue
            stats = store.stats(hidden)
            rebuilds.append(
                {
                    "brain": target,
                    "model": hidden.model,
                    "roots": stats.roots,
                    "documents": stats.documents,
                    "chunks": stats.chunks,
                }
            )
        return {
            "db": str(db),
            "db_bytes": store.size_bytes(),
            "free_bytes": store.free_bytes(),
            "brains": out,
            "unfinished_rebuilds": rebuilds,
        }

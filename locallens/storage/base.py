"""What both backends do alike, written once: brains by name, the chunk columns, the export.

`StoreBase` holds the logic that does not depend on the database: look a brain up or say which
ones exist, create one in a transaction, delete or replace one, and export a brain's documents
whole (`export_documents`, for `locallens copy`, refusing a chunk that lost a vector). Each
backend supplies the SQL (`_insert_brain`, `_delete_brain_rows`, `_rename_brain`, `_export_rows`,
`_export_windows`) and its transaction. Rows that start with CHUNK_COLUMNS become Chunks through
`chunk_from_row`. Imports only the package's leaf (`storage.types`), the domain and the errors;
the backends build on it and never import each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from locallens.domain import Chunk
from locallens.errors import NoIndexError, StoreError
from locallens.storage.types import Brain, BrainSettings, DocumentRecord, StoredDocument, stored_location

# The chunk columns a query selects first (`chunks` as `c`); whatever a query adds comes after.
CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.relative_path, c.chunk_index, c.content, c.checksum,"
    " c.line_start, c.line_end, c.span_kind, c.span_label"
)
N_CHUNK_COLUMNS = 10
# What `export_documents` reads of a document's chunks, in order: then header, content_hash, vectors.
EXPORT_COLUMNS = f"{CHUNK_COLUMNS}, c.header, c.content_hash, c.vectors"
EXPORT_ORDER = "ORDER BY c.chunk_index, c.id"


def chunk_from_row(brain: Brain, row: Sequence[Any]) -> Chunk:
    """A Chunk from a row that starts with CHUNK_COLUMNS."""
    return Chunk(
        id=row[1],
        brain=brain.name,
        relative_path=row[2],
        chunk_index=row[3],
        content=row[4],
        checksum=row[5],
        location=stored_location(*row[6:10]),
    )


def _exported_document(
    brain: Brain, doc: StoredDocument, rows: Sequence[Sequence[Any]], vectors: Sequence[np.ndarray]
) -> DocumentRecord:
    """The record of one stored document: `rows` start with CHUNK_COLUMNS, then header and
    content_hash; `vectors[i]` is row i's vector or its (windows, dim) matrix."""
    n = N_CHUNK_COLUMNS
    return DocumentRecord(
        root=doc.root,
        relative_path=doc.relative_path,
        size=doc.size,
        mtime_ns=doc.mtime_ns,
        checksum=doc.checksum,
        chunks=[chunk_from_row(brain, row) for row in rows],
        vectors=list(vectors),
        headers=[row[n] or "" for row in rows],
        hashes=[bytes(row[n + 1]) for row in rows],
        line_offset=doc.line_offset,
        reading=doc.reading,
    )


class StoreBase(ABC):
    """The brain logic both backends share; `storage.IndexStore` is the whole contract."""

    @property
    @abstractmethod
    def location(self) -> str: ...  # for messages: a path, or a URL without its password

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def brains(self) -> list[Brain]: ...

    @abstractmethod
    def find_brain(self, name: str) -> Brain | None: ...

    @abstractmethod
    def _insert_brain(self, name: str, settings: BrainSettings) -> None:
        """The brain's row and its empty vector table, inside the caller's transaction."""

    @abstractmethod
    def _delete_brain_rows(self, brain: Brain) -> None:
        """The brain, its documents, chunks, keyword rows and vectors, inside the caller's transaction."""

    @abstractmethod
    def _rename_brain(self, brain: Brain, name: str) -> None:
        """Give the brain another name, inside the caller's transaction."""

    @abstractmethod
    def documents(self, brain: Brain) -> dict[tuple[str, str], StoredDocument]: ...

    @abstractmethod
    def _export_rows(self, doc: StoredDocument) -> list[Any]:
        """The document's chunk rows (EXPORT_COLUMNS, in EXPORT_ORDER)."""

    @abstractmethod
    def _export_windows(self, brain: Brain, rows: Sequence[Sequence[Any]]) -> dict[int, list[np.ndarray]]:
        """Each row's stored vectors, by the row's id (its first column), in window order."""

    def __exit__(self, *exc: object) -> None:
        self.close()

    def export_documents(self, brain: Brain) -> Iterator[DocumentRecord]:
        """Every document of the brain with its chunks, vectors (all windows), headers and hashes,
        by root and path: what `locallens copy` writes into another store. A chunk that has lost a
        vector is a StoreError: a copy is never made of part of a brain."""
        n = N_CHUNK_COLUMNS
        for doc in sorted(self.documents(brain).values(), key=lambda d: (d.root, d.relative_path)):
            rows = self._export_rows(doc)
            found = self._export_windows(brain, rows)
            vectors = []
            for row in rows:
                windows = found.get(row[0], [])
                if len(windows) != max(int(row[n + 2]), 1):
                    raise StoreError(f"{self.location}: chunk {row[1]} of {doc.relative_path} has lost its vector")
                vectors.append(windows[0] if len(windows) == 1 else np.stack(windows))
            yield _exported_document(brain, doc, rows, vectors)

    def get_brain(self, name: str) -> Brain:
        brain = self.find_brain(name)
        if brain is None:
            known = ", ".join(b.name for b in self.brains() if not b.name.startswith(".")) or "none"
            raise NoIndexError(f"no brain named {name!r} in {self.location} (brains: {known})")
        return brain

    def create_brain(
        self,
        name: str,
        model: str,
        dim: int,
        chunker: str,
        chunk_size: int,
        chunk_overlap: int,
        *,
        headers: bool = False,
        multi_vector: bool = False,
    ) -> Brain:
        with self.transaction():
            self._insert_brain(
                name, BrainSettings(model, dim, chunker, chunk_size, chunk_overlap, headers, multi_vector)
            )
        return self.get_brain(name)

    def delete_brain(self, brain: Brain) -> None:
        with self.transaction():
            self._delete_brain_rows(brain)

    def replace_brain(self, old: Brain | None, new: Brain, name: str) -> None:
        """Atomically swap a freshly built brain in under `name` (used by --rebuild)."""
        with self.transaction():
            if old is not None:
                self._delete_brain_rows(old)
            self._rename_brain(new, name)

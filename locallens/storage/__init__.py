"""Where an index lives: a SQLite file (the default) or a PostgreSQL database shared by a team.

`--db` (or `$LOCALLENS_DB`, or `db` in the config file) is either a path, which selects the
SQLite store (`locallens.store`), or a `postgresql://user@host:port/dbname` URL (also
`postgres://`), which selects the PostgreSQL + pgvector store (`locallens.pgstore`). Both stores
implement `IndexStore`, so every command runs unchanged on either; `open_store` picks one.

A URL may carry a password (`postgresql://user:secret@host/db`); `PostgresURL` keeps it for the
connection only: its `str()` (used in every message, report and JSON document) shows `***` in
its place. libpq's usual environment (`PGPASSWORD`, `~/.pgpass`, `PGSSLMODE`, ...) also applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    import numpy as np

    from locallens.domain import Chunk, Hit
    from locallens.storage.sqlite import Brain, BrainStats, StoredDocument

POSTGRES_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^(postgresql|postgres)://", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PostgresURL:
    """A PostgreSQL connection URL; `str()` never shows its password."""

    url: str = field(repr=False)
    exact: bool = False  # search without the HNSW index (`--exact`): exact, slower on large brains

    def __str__(self) -> str:
        try:
            parts = urlsplit(self.url)
        except ValueError:  # malformed (libpq says how); the password is masked all the same
            masked = re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", self.url)
            return re.sub(r"^([^:]+://[^/?#@]*?:)[^/?#@]*@", r"\1***@", masked)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            if ":" in user:
                user = user.split(":", 1)[0] + ":***"
            netloc = f"{user}@{host}"
        query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))

    def __repr__(self) -> str:
        return f"PostgresURL({str(self)!r})"


DbLocation = Path | PostgresURL


def parse_db(value: str | Path, *, exact: bool = False) -> DbLocation:
    """A `--db` value as a location: a PostgreSQL URL, else a path (`~` expanded)."""
    text = str(value)
    if _URL.match(text.strip()):
        return PostgresURL(text.strip(), exact=exact)
    return Path(text).expanduser()


def is_postgres(db: DbLocation) -> bool:
    return isinstance(db, PostgresURL)


@dataclass(frozen=True, slots=True)
class DocumentExport:
    """One stored document with everything needed to store it elsewhere without re-embedding."""

    root: str
    relative_path: str
    size: int
    mtime_ns: int
    checksum: str
    chunks: list[Chunk]
    vectors: list[np.ndarray]  # chunk i's vector (dim,), or its window vectors (windows, dim)
    headers: list[str]
    hashes: list[bytes]


class IndexStore(Protocol):
    """What the pipeline needs from a store; `locallens.store.Store` is the reference behaviour."""

    read_only: bool

    @property
    def location(self) -> str: ...  # for messages: a path, or a URL without its password

    def close(self) -> None: ...
    def __enter__(self) -> IndexStore: ...
    def __exit__(self, *exc: object) -> None: ...

    def brains(self) -> list[Brain]: ...
    def find_brain(self, name: str) -> Brain | None: ...
    def get_brain(self, name: str) -> Brain: ...
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
    ) -> Brain: ...
    def set_chunking(self, brain: Brain, chunker: str, chunk_size: int, chunk_overlap: int) -> None: ...
    def delete_brain(self, brain: Brain) -> None: ...
    def replace_brain(self, old: Brain | None, new: Brain, name: str) -> None: ...
    def touch_brain(self, brain: Brain, roots: Iterable[str]) -> None: ...
    def roots(self, brain: Brain) -> list[str]: ...

    def documents(self, brain: Brain) -> dict[tuple[str, str], StoredDocument]: ...
    def chunk_by_id(self, brain: Brain, chunk_id: str) -> Chunk | None: ...
    def document_chunks(self, brain: Brain, relative_path: str) -> list[Chunk]: ...
    def document_paths(self, brain: Brain) -> list[str]: ...
    def update_document_stat(self, doc_id: int, size: int, mtime_ns: int) -> None: ...
    def write_document(
        self,
        brain: Brain,
        *,
        root: str,
        relative_path: str,
        size: int,
        mtime_ns: int,
        checksum: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | Sequence[np.ndarray],
        headers: Sequence[str] | None = None,
        hashes: Sequence[bytes] | None = None,
    ) -> None: ...
    def delete_documents(self, brain: Brain, doc_ids: Sequence[int]) -> None: ...
    def export_documents(self, brain: Brain) -> Iterator[DocumentExport]: ...

    def reusable_vectors(self, brain: Brain, hashes: Iterable[bytes]) -> dict[bytes, np.ndarray]: ...
    def vector_count(self, brain: Brain) -> int: ...
    def knn(self, brain: Brain, query: np.ndarray, k: int, *, path_glob: str | None = None) -> list[Hit]: ...
    def keyword_search(self, brain: Brain, query: str, k: int, *, path_glob: str | None = None) -> list[int]: ...
    def keyword_scores(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]: ...
    def hits_by_id(self, brain: Brain, query: np.ndarray, ids: Sequence[int]) -> dict[int, Hit]: ...

    def cached_sentence_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]: ...
    def cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None: ...
    def try_cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> bool: ...

    def stats(self, brain: Brain) -> BrainStats: ...
    def size_bytes(self) -> int: ...
    def free_bytes(self) -> int: ...


def write_export(store: IndexStore, brain: Brain, doc: DocumentExport) -> None:
    """Store `doc` (read by some store's `export_documents`) in `brain`, vectors and all."""
    store.write_document(
        brain,
        root=doc.root,
        relative_path=doc.relative_path,
        size=doc.size,
        mtime_ns=doc.mtime_ns,
        checksum=doc.checksum,
        chunks=doc.chunks,
        vectors=doc.vectors,
        headers=doc.headers,
        hashes=doc.hashes,
    )


def open_store(db: DbLocation, *, create: bool = False) -> IndexStore:
    """The store at `db`. `create`: may create the database or schema and upgrade it (`index`).

    A PostgreSQL URL with `exact` set searches without the HNSW index (the SQLite store always
    searches exactly)."""
    if isinstance(db, PostgresURL):
        from locallens.storage.postgres import PostgresStore

        return PostgresStore(db, create=create, exact=db.exact)
    from locallens.storage.sqlite import Store

    return Store(db, create=create)


def db_exists(db: DbLocation) -> bool:
    """True when `db` may hold an index: a SQLite file that exists; a PostgreSQL URL always
    (whether it holds one is learnt on connecting)."""
    return isinstance(db, PostgresURL) or db.exists()

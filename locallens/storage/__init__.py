"""Where an index lives: a SQLite file (the default) or a PostgreSQL database shared by a team.

`--db` (or `$LOCALLENS_DB`, or `db` in the config file) is either a path, which selects the
SQLite store (`storage.sqlite`), or a `postgresql://user@host:port/dbname` URL (also
`postgres://`), which selects the PostgreSQL + pgvector store (`storage.postgres`). Both stores
implement `IndexStore`, so every command runs unchanged on either; `open_store` picks one for
reading, `open_writer` for writing (with the backend's writer lock).

This module is the package's face: the rest of locallens imports storage only from here, never a
backend. The shared types live in `storage.types` (a leaf the backends build on) and are
re-exported here. A backend is a module with `open_store(db, *, create)` and
`open_writer(db, wait)`, registered by name in STORES and imported on first use (PostgreSQL
needs an optional dependency).

A URL may carry a password (`postgresql://user:secret@host/db`); `PostgresURL` keeps it for the
connection only: its `str()` (used in every message, report and JSON document) shows `***` in
its place. libpq's usual environment (`PGPASSWORD`, `~/.pgpass`, `PGSSLMODE`, ...) also applies.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from locallens.storage.types import (
    POSTGRES_SCHEMES,
    Brain,
    BrainStats,
    DbLocation,
    DocumentRecord,
    PostgresURL,
    StoredDocument,
    content_hash,
    parse_db,
)

if TYPE_CHECKING:
    import numpy as np

    from locallens.domain import Chunk, Hit, Location

__all__ = [
    "POSTGRES_SCHEMES",
    "STORES",
    "Brain",
    "BrainStats",
    "DbLocation",
    "DocumentRecord",
    "IndexStore",
    "PostgresURL",
    "StoredDocument",
    "content_hash",
    "db_exists",
    "folder_of",
    "keeps_deleted_pages",
    "open_store",
    "open_writer",
    "parse_db",
    "register_store",
    "same_location",
    "store_kind",
]

DEFAULT_PG_PORT = 5432
# Store backends by name: the module that implements each (see the module docstring).
STORES: dict[str, str] = {
    "sqlite": "locallens.storage.sqlite",
    "postgres": "locallens.storage.postgres",
}


def register_store(name: str, module: str) -> None:
    """Make `module` (dotted, imported on first use) the backend called `name`."""
    STORES[name] = module


def store_kind(db: DbLocation) -> str:
    """The name of the backend a location selects."""
    return "postgres" if isinstance(db, PostgresURL) else "sqlite"


def _backend(db: DbLocation) -> Any:
    """The backend module of `db`'s kind (its `open_store` and `open_writer`)."""
    return importlib.import_module(STORES[store_kind(db)])


class IndexStore(Protocol):
    """What the pipeline needs from a store; `storage.sqlite.Store` is the reference behaviour."""

    read_only: bool

    @property
    def location(self) -> str: ...  # for messages: a path, or a URL without its password

    def close(self) -> None: ...
    # Writers: the brain's writer lock for the block (a no-op where `open_writer` locked the
    # whole database already), and one consistent view for a long read (`copy`).
    def writing(self, brain: str, wait: float) -> AbstractContextManager[None]: ...
    def read_snapshot(self) -> AbstractContextManager[None]: ...
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
    def add_roots(self, brain: Brain, roots: Iterable[str]) -> None: ...
    def roots(self, brain: Brain) -> list[str]: ...

    def documents(self, brain: Brain) -> dict[tuple[str, str], StoredDocument]: ...
    def chunk_by_id(self, brain: Brain, chunk_id: str) -> Chunk | None: ...
    def document_chunks(self, brain: Brain, relative_path: str) -> list[Chunk]: ...
    def document_paths(self, brain: Brain) -> list[str]: ...
    def update_document_stat(self, doc_id: int, size: int, mtime_ns: int) -> None: ...
    def chunk_texts(self, doc_id: int) -> list[tuple[int, str]]: ...
    def set_locations(
        self, doc_id: int, line_offset: int, locations: Sequence[tuple[int, Location | None]]
    ) -> None: ...
    def write_document(self, brain: Brain, doc: DocumentRecord) -> None: ...
    def delete_documents(self, brain: Brain, doc_ids: Sequence[int]) -> None: ...
    # Drop these roots and these documents (their chunks, vectors, keyword rows) in one transaction.
    def forget_roots(self, brain: Brain, roots: Sequence[str], doc_ids: Sequence[int]) -> None: ...
    def export_documents(self, brain: Brain) -> Iterator[DocumentRecord]: ...

    def reusable_vectors(self, brain: Brain, hashes: Iterable[bytes]) -> dict[bytes, np.ndarray]: ...
    def vector_count(self, brain: Brain) -> int: ...
    def knn(self, brain: Brain, query: np.ndarray, k: int, *, path_glob: str | None = None) -> list[Hit]: ...
    def keyword_search(self, brain: Brain, query: str, k: int, *, path_glob: str | None = None) -> list[int]: ...
    def keyword_scores(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]: ...
    def hits_by_id(self, brain: Brain, query: np.ndarray, ids: Sequence[int]) -> dict[int, Hit]: ...
    def term_counts(self, brain: Brain, words: Sequence[str], cap: int) -> tuple[int, dict[str, int]]: ...

    def cached_sentence_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]: ...
    def cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None: ...
    def try_cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> bool: ...
    def sentence_cache_page(self, model: str, after: bytes, limit: int) -> list[tuple[bytes, np.ndarray]]: ...

    def stats(self, brain: Brain) -> BrainStats: ...
    def size_bytes(self) -> int: ...
    def free_bytes(self) -> int: ...


def open_store(db: DbLocation, *, create: bool = False) -> IndexStore:
    """The store at `db`. `create`: may create the database or schema and upgrade it (`index`).

    A PostgreSQL URL with `exact` set searches without the HNSW index (the SQLite store always
    searches exactly)."""
    store: IndexStore = _backend(db).open_store(db, create=create)
    return store


def open_writer(db: DbLocation, wait: float) -> AbstractContextManager[IndexStore]:
    """The store at `db` for writing (created or upgraded if need be), under the backend's writer
    lock: a SQLite file is locked whole for the block; on PostgreSQL each brain is locked by
    `store.writing(brain, wait)`. Another `index` holding it past `wait` seconds: LockedError."""
    writer: AbstractContextManager[IndexStore] = _backend(db).open_writer(db, wait)
    return writer


def db_exists(db: DbLocation) -> bool:
    """True when `db` may hold an index: a SQLite file that exists; a PostgreSQL URL always
    (whether it holds one is learnt on connecting)."""
    return isinstance(db, PostgresURL) or db.exists()


def folder_of(db: DbLocation) -> Path | None:
    """The folder a SQLite database file lives in; None for a database on a server."""
    return None if isinstance(db, PostgresURL) else Path(db).expanduser().resolve().parent


def keeps_deleted_pages(db: DbLocation) -> bool:
    """True when deleted rows keep their space until VACUUM (SQLite); PostgreSQL's autovacuum
    reuses it by itself."""
    return not isinstance(db, PostgresURL)


def same_location(a: DbLocation, b: DbLocation) -> bool:
    """True when `a` and `b` name the same database: one file (whatever the spelling of its
    path), or one PostgreSQL database on one server (whatever the user or password)."""
    if isinstance(a, PostgresURL) and isinstance(b, PostgresURL):
        return _postgres_identity(a) == _postgres_identity(b)
    if isinstance(a, Path) and isinstance(b, Path):
        try:
            if a.exists() and b.exists():
                return os.path.samefile(a, b)
        except OSError:
            pass
        return a.resolve() == b.resolve()
    return False


def _postgres_identity(url: PostgresURL) -> tuple[str, int, str, str]:
    """(host, port, database, options) of a URL: what selects the database, not who logs in."""
    try:
        parts = urlsplit(url.url)
    except ValueError:  # malformed: compared as it is; connecting to it reports the problem
        return url.url, -1, "", ""
    query = {k.lower(): v[-1] for k, v in parse_qs(parts.query).items()}
    host = (parts.hostname or query.get("host", "") or "localhost").lower()
    try:
        port = parts.port or int(query.get("port", DEFAULT_PG_PORT))
    except ValueError:
        port = -1  # not a number: the connection will say so
    user = parts.username or query.get("user", "")
    database = parts.path.lstrip("/") or query.get("dbname", "") or user
    return host, port, database, query.get("options", "")

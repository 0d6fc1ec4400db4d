"""The SQLite store: brains, documents, chunks, vectors (sqlite-vec) and full text (FTS5).

Binding: `apsw`, which bundles a SQLite able to load sqlite-vec on Pythons built without extension
loading, and leaves transactions to us (no implicit BEGIN), so `BEGIN IMMEDIATE` means what it
says (see docs/decisions.md#sqlite-binding).

Layout: one file, many *brains* (named indexes). Each brain pins the embedding model and
dimension it was built with and owns one vec0 table `vec_<brain id>` (a vec0 column has a fixed
dimension, so brains of different models live side by side). The vec0 table is split into
PARTITIONS partitions by `rowid % PARTITIONS` (a vec0 partition key), so that a large brain is
scanned by several threads at once. `chunks.id` (an integer rowid) is
the key shared by the chunk row, its vector row and its FTS row; the public chunk id
(`checksum[:12]-index`) is `chunks.chunk_id`, which is not unique across files (two copies of a
file have the same ids, by design: see docs/behaviour.md#chunk-ids).

Search (`knn`) is exact: sqlite-vec's brute-force cosine scan; from PARALLEL_MIN_VECTORS on, each
core scans its share of the partitions on its own connection and the results are merged
(see docs/decisions.md#exact-vector-search for the timings and the approximate searches rejected).

sqlite-vec quirks handled here: `INSERT OR REPLACE` into vec0 fails, so vectors are deleted then
inserted; deleted rows do not shrink the file (`status` reports free pages; `VACUUM` reclaims).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from locallens.domain import Chunk, Hit, Location
from locallens.errors import LockedError, NoIndexError, StoreError
from locallens.stemming import porter_stem
from locallens.storage.base import (
    CHUNK_COLUMNS,
    EXPORT_COLUMNS,
    EXPORT_ORDER,
    N_CHUNK_COLUMNS,
    StoreBase,
    chunk_from_row,
)
from locallens.storage.migrations import PARTITIONS, SCHEMA_VERSION, create_vec_table, upgrade
from locallens.storage.types import (
    COMMON_WORD_FRACTION,
    KEYWORD_PRUNE_MIN_CHUNKS,
    MULTI_VECTOR_OVERFETCH,
    Brain,
    BrainSettings,
    BrainStats,
    DocumentRecord,
    StoredDocument,
    fused_rankings,
    location_columns,
    scan_condition,
    scanned_symbols,
    scanned_within,
    symbol_ranking,
    symbol_rows,
)
from locallens.text import NO_SPACE_CLASS

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import apsw

# `PRAGMA application_id` of a locallens database ("LLen"), set when locallens creates it. A
# database without it is ours only if it has every table and column of the first release and a
# schema number locallens used (written by a release before the id existed; it gets the id on its
# next write). Any other non-empty database belongs to another program and is never modified.
APPLICATION_ID = 0x4C4C656E
BUSY_TIMEOUT_MS = 30_000
# Reads go through a memory map: a vector scan then costs ~40% less than through read() calls.
# SQLite only maps for reading; writes still go through its journal, so nothing can be corrupted.
MMAP_BYTES = 1 << 30
# Below this many vectors one scan takes a few ms, less than starting threads and connections.
PARALLEL_MIN_VECTORS = 20_000
# Keyword search in scripts written without spaces (Han, kana, Hangul, Thai) goes through the
# trigram index `chunks_trigram` (see Store._trigram_search): a run of such characters in a query,
# and each 2-character piece of it (most Chinese words have two characters) stands for at most
# TRIGRAM_EXPANSIONS of the indexed trigrams that start with it.
NO_SPACE_RUN = re.compile(f"[{NO_SPACE_CLASS}]+")
TRIGRAM_EXPANSIONS = 32
# The word (stemmed unicode61), trigram and symbol rankings of one query are fused by reciprocal
# rank (`storage.types.fused_rankings`).
# A chunk with several vectors (one per window of the model, `brains.multi_vector`) keeps its first
# at rowid `chunks.id` and window j at `chunks.id + (j << WINDOW_SHIFT)`: the extra rowids can
# never meet a chunk id, the chunk is `rowid & CHUNK_ROWID_MASK`, and the partition
# (`rowid % PARTITIONS`) is the chunk's own.
WINDOW_SHIFT = 40
CHUNK_ROWID_MASK = (1 << WINDOW_SHIFT) - 1


def _scalar(conn: apsw.Connection, sql: str) -> Any:
    """The first column of the first row of `sql` (a PRAGMA or a COUNT: there always is one)."""
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row[0]


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn SQLite failures into one-line StoreErrors that say what was being done."""
    import apsw

    try:
        yield
    except apsw.FullError as exc:
        raise StoreError(f"{action}: disk full ({exc}); nothing from the failed step was committed") from exc
    except apsw.ReadOnlyError as exc:
        raise StoreError(f"{action}: the database is read-only ({exc})") from exc
    except apsw.CantOpenError as exc:
        raise StoreError(
            f"{action}: cannot open the database ({exc}); check the folder exists and is writable"
        ) from exc
    except apsw.BusyError as exc:
        raise StoreError(f"{action}: the database stayed busy for {BUSY_TIMEOUT_MS // 1000}s ({exc})") from exc
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        raise StoreError(f"{action}: the database file is damaged or not a locallens index ({exc})") from exc
    except apsw.IOError as exc:
        raise StoreError(f"{action}: I/O error ({exc})") from exc


# What every release before the application id wrote (the first migration step's tables and
# columns): a database without the id is taken as an older locallens one only when it has all of
# them and a schema number locallens has used. Table names alone (`meta`, `brains`) are common.
_FIRST_RELEASE_COLUMNS = {
    "meta": {"key", "value"},
    "brains": {"id", "name", "model", "dim", "chunker", "chunk_size", "chunk_overlap", "created_at", "last_indexed"},
    "roots": {"brain_id", "path"},
    "documents": {"id", "brain_id", "root", "relative_path", "size", "mtime_ns", "checksum", "indexed_at"},
    "chunks": {"id", "brain_id", "document_id", "chunk_id", "relative_path", "chunk_index", "content", "checksum"},
}


def _is_older_locallens(conn: apsw.Connection, names: set[str]) -> bool:
    """A database written by a locallens release before the application id (reads only)."""
    if not set(_FIRST_RELEASE_COLUMNS) <= names or "chunks_fts" not in names:
        return False
    if not 1 <= _scalar(conn, "PRAGMA user_version") <= SCHEMA_VERSION:
        return False
    for table, columns in _FIRST_RELEASE_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not columns <= have:
            return False
    return True


def _check_ours(conn: apsw.Connection, path: Path, create: bool) -> bool:
    """True for a locallens database, False for an empty one; refuses anyone else's database.

    Only reads: a database of another program is left byte for byte as it was (exit 2). An
    empty database is no index for the commands that only read (exit 3).
    """
    from locallens.errors import UsageError

    app_id = _scalar(conn, "PRAGMA application_id")
    if app_id == APPLICATION_ID:
        return True
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if app_id == 0 and _is_older_locallens(conn, names):
        return True  # written before locallens set its application id
    if app_id == 0 and not names and _scalar(conn, "PRAGMA user_version") == 0:
        if not create:
            raise NoIndexError(
                f"no index at {path} (the file is an empty database): run `locallens index PATH` first (or pass --db)"
            )
        return False
    raise UsageError(
        f"{path} is not a locallens database (another program's SQLite file); it was left untouched: pass another --db"
    )


def check_not_foreign(path: Path) -> None:
    """Refuse (UsageError) a file that holds another program's SQLite database; only reads it.

    `index` calls this before it takes its lock, so not even a lock file appears beside it.
    """
    import apsw

    path = Path(path)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
    except OSError:
        return  # opening it later reports the problem
    with _translated(f"opening {path}"):
        # Read-write like the program's own connections, which only reads here: a read-only
        # connection could leave -wal/-shm files behind a WAL database on closing.
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            _check_ours(conn, path, create=True)
        finally:
            conn.close()


def check_writable(db: Path) -> None:
    """A writer refuses a database file (or its -wal/-shm) it cannot write, before anything opens
    it. SQLite would open it read-only without a word, create -wal/-shm files with the database
    file's read-only mode, fail on the first write and leave them behind: the database would
    stay unwritable even once the file's own mode is fixed."""
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        # Checked again when not writable: SQLite deletes -wal and -shm when another process's
        # last connection closes, and a file gone between the two looks read-only to access().
        if path.exists() and not os.access(path, os.W_OK) and path.exists():
            raise StoreError(
                f"{path} is read-only (its permissions or flags), so it cannot be written: "
                "make it writable (chmod u+w), or query the database read-only with ask or status"
            )


@contextlib.contextmanager
def write_lock(db: Path, wait: float) -> Iterator[None]:
    """Exclusive advisory lock for writers of `db`; LockedError after `wait` seconds."""
    from locallens.config import PRIVATE_FILE_MODE, make_private_dir

    lock_path = Path(f"{db}.lock")
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        try:
            make_private_dir(lock_path.parent)  # a folder it creates is 0700; existing ones stay
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {lock_path}: {exc.strerror}") from exc
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise StoreError(f"cannot lock {lock_path}: {exc.strerror}") from exc
                    if time.monotonic() >= deadline:
                        raise LockedError(
                            f"{db} is being indexed by another run; waited {wait:g}s (raise --wait to wait longer)"
                        ) from None
                    time.sleep(0.1)
        except BaseException:
            os.close(fd)
            raise
        # A failed first run removes the lock file it created while holding it: a lock taken on
        # that unlinked file locks nothing, so take the one now at the path instead.
        held = os.fstat(fd)
        try:
            current = os.stat(lock_path)
        except FileNotFoundError:
            current = None
        if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)  # closing releases the flock


@contextlib.contextmanager
def open_writer(db: Path, wait: float) -> Iterator[Store]:
    """The SQLite store at `db`, opened (created if need be) under its writer lock: one writer
    per database file, whatever the brain (`Store.writing` then has nothing more to lock).

    Another program's database is refused before any lock file appears. A database this call
    created that holds no brain when the block fails is removed again, with its WAL files and the
    lock file if it made it: a failed first run (of `index` or `copy`) leaves nothing behind.
    """
    check_writable(db)  # first: even the foreign-database check opens it, and would leave -wal/-shm
    check_not_foreign(db)
    lock_path = Path(f"{db}.lock")
    lock_existed = lock_path.exists()
    with write_lock(db, wait):
        db_existed = db.exists()
        store: Store | None = None
        discard = False
        try:
            store = Store(db, create=True)
            yield store
        except BaseException:
            discard = not db_existed and (store is None or not _has_brains(store))
            raise
        finally:
            if store is not None:
                store.close()
            if discard:
                _remove_files(db, None if lock_existed else lock_path)


def _has_brains(store: Store) -> bool:
    try:
        return bool(store.brains())
    except Exception:
        return True


def _remove_files(db: Path, lock_path: Path | None) -> None:
    """Delete a database this run created (and its WAL files), and the lock file if it made it."""
    paths = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")]
    if lock_path is not None:
        paths.append(lock_path)  # still locked by us: a waiter notices and takes the new file
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def open_store(db: Path, *, create: bool = False) -> Store:
    """The SQLite store at `db` (the face's `open_store`)."""
    return Store(db, create=create)


class Store(StoreBase):
    """One open database. Not thread-safe; one per process and command."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        import apsw

        self.path = Path(path)
        self._readers: list[apsw.Connection] = []  # extra read-only connections of _parallel_scan
        self._pool: ThreadPoolExecutor | None = None  # and its threads
        self._vocab_ready = False  # temp.chunks_vocab (fts5vocab) created on this connection
        self._trigram_vocab_ready = False  # temp.trigram_vocab, likewise
        self._create = create  # may create the database and upgrade or convert it (`index`)
        self._read_uri: str | None = None  # set when opened read-only (read-only media)
        self.read_only = False
        if not create and not self.path.exists():
            raise NoIndexError(f"no index at {self.path}: run `locallens index PATH` first (or pass --db)")
        if create:
            check_writable(self.path)
            self._create_private_file()
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        with _translated(f"opening {self.path}"):
            if not create and self._unwritable_and_closed():
                # A reader of a file it cannot write: SQLite would open it read-only and leave
                # -wal/-shm files with the file's read-only mode behind, which a later writer could
                # not use. With no -wal/-shm there is no open connection and nothing to recover:
                # the file is read as it is, creating nothing.
                self._open_read_only(StoreError(f"cannot open {self.path} read-only"), immutable_first=True)
                return
            try:
                self.conn = self._connect(flags)
                self._migrate()
            except BaseException as exc:
                if hasattr(self, "conn"):
                    self.conn.close()
                    del self.conn
                if create or not isinstance(exc, (apsw.ReadOnlyError, apsw.CantOpenError)) or self._writable():
                    raise
                self._open_read_only(exc)

    def _create_private_file(self) -> None:
        """Create the folder (0700) and an empty database file (0600) unless they exist.

        SQLite gives the -wal and -shm files the mode of the database file, so they are private
        too, whatever the umask.
        """
        from locallens.config import PRIVATE_FILE_MODE, make_private_dir

        try:
            make_private_dir(self.path.parent)
        except OSError as exc:
            raise StoreError(f"cannot create the folder {self.path.parent}: {exc.strerror}") from exc
        if self.path.name == ":memory:" or self.path.exists():
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        except FileExistsError:
            return
        except OSError:
            return  # SQLite reports it, with the usual message
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
        finally:
            os.close(fd)

    @property
    def location(self) -> str:
        return str(self.path)

    def _writable(self) -> bool:
        """False when the database file or its folder cannot be written (read-only media)."""
        return os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)

    def _unwritable_and_closed(self) -> bool:
        """The database file cannot be written by us, and has no -wal/-shm beside it."""
        try:
            if os.access(self.path, os.W_OK) or self.path.name == ":memory:":
                return False
        except OSError:
            return False
        return not any(Path(f"{self.path}{suffix}").exists() for suffix in ("-wal", "-shm", "-journal"))

    def _open_read_only(self, error: BaseException, *, immutable_first: bool = False) -> None:
        """Open a database on read-only media for reading: `ask` and `status` still work.

        First as an ordinary read-only connection; when SQLite cannot even do that (a WAL database
        needs its -shm file, which it cannot create in a read-only folder), as an immutable file:
        nothing can change it while it sits on read-only media.
        """
        from urllib.parse import quote

        import apsw

        base = "file:" + quote(str(self.path.absolute()))
        uris = [base + "?mode=ro", base + "?immutable=1"]
        for uri in reversed(uris) if immutable_first else uris:
            try:
                conn = self._connect(apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, uri)
            except (apsw.ReadOnlyError, apsw.CantOpenError):
                continue
            try:
                self._check_ours(conn)
                version = _scalar(conn, "PRAGMA user_version")
            except (apsw.ReadOnlyError, apsw.CantOpenError):
                conn.close()
                continue
            except BaseException:
                conn.close()
                raise
            if version != SCHEMA_VERSION:
                conn.close()
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} was written by a newer locallens (schema {version}); upgrade locallens"
                    )
                raise StoreError(
                    f"{self.path} needs a schema upgrade but is on read-only media; copy it somewhere writable"
                )
            self.conn, self._read_uri, self.read_only = conn, uri, True
            return
        raise error

    def _check_ours(self, conn: apsw.Connection) -> bool:
        return _check_ours(conn, self.path, self._create)

    def _connect(self, flags: int, target: str | None = None) -> apsw.Connection:
        """A connection with sqlite-vec loaded and memory-mapped reads."""
        import apsw
        import sqlite_vec

        conn = apsw.Connection(target or str(self.path), flags=flags)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        return conn

    # -- plumbing -----------------------------------------------------------------------------

    def _migrate(self) -> None:
        self._check_ours(self.conn)  # before anything is written: never convert another's database
        version = _scalar(self.conn, "PRAGMA user_version")
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} was written by a newer locallens (schema {version}); upgrade locallens")
        # WAL: readers (ask, status) keep working while an index run writes.
        mode = _scalar(self.conn, "PRAGMA journal_mode=WAL")
        if mode.lower() != "wal" and self.path.name != ":memory:":
            raise StoreError(f"cannot switch {self.path} to WAL mode (got {mode})")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        app_id = _scalar(self.conn, "PRAGMA application_id")
        if version < SCHEMA_VERSION or (self._create and app_id != APPLICATION_ID):
            with self.transaction():
                # Again under the write lock: another process may have upgraded it meanwhile.
                version = _scalar(self.conn, "PRAGMA user_version")
                steps = upgrade(self.conn, version)
                self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            if version > 0 and any(step.rewrites_vectors for step in steps):
                # The upgrade rewrote every vector into the WAL; reads from the WAL are not memory-
                # mapped, so move them into the database file now (best effort: readers may hold it).
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; any exception (Ctrl-C included) rolls back."""
        with _translated(f"writing {self.path}"):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def writing(self, brain: str, wait: float) -> contextlib.AbstractContextManager[None]:
        """Nothing to take: `open_writer` holds the file's lock, which covers every brain."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read in the block sees one moment: a WAL read transaction, which blocks no writer."""
        self.execute("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                self.execute("ROLLBACK")

    def sentence_cache_page(self, model: str, after: bytes, limit: int) -> list[tuple[bytes, np.ndarray]]:
        """Up to `limit` cached sentence vectors of `model`, in hash order, after hash `after`."""
        rows = self.execute(
            "SELECT text_hash, vector FROM sentence_cache WHERE model = ? AND text_hash > ? ORDER BY text_hash LIMIT ?",
            (model, after, limit),
        )
        return [(bytes(h), np.frombuffer(bytes(v), dtype=np.float32)) for h, v in rows]

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        with _translated(f"reading {self.path}"):
            return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for reader in self._readers:
            reader.close()
        self._readers.clear()
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    # -- brains -------------------------------------------------------------------------------

    def _brain_columns(self) -> str:
        """The brains columns Brain is built from; an upgrade step runs before the settings exist."""
        columns = "id, name, model, dim, chunker, chunk_size, chunk_overlap, created_at, last_indexed"
        names = {row[1] for row in self.execute("PRAGMA table_info(brains)")}
        return columns + (", headers, multi_vector" if "multi_vector" in names else "")

    @staticmethod
    def _brain(row: Sequence[Any]) -> Brain:
        return Brain(*row[:9], *(bool(flag) for flag in row[9:]))

    def brains(self) -> list[Brain]:
        return [self._brain(row) for row in self.execute(f"SELECT {self._brain_columns()} FROM brains ORDER BY name")]

    def find_brain(self, name: str) -> Brain | None:
        rows = self.execute(f"SELECT {self._brain_columns()} FROM brains WHERE name = ?", (name,))
        return self._brain(rows[0]) if rows else None

    def _insert_brain(self, name: str, settings: BrainSettings) -> None:
        s = settings
        self.conn.execute(
            "INSERT INTO brains(name, model, dim, chunker, chunk_size, chunk_overlap, created_at, headers,"
            " multi_vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                s.model,
                s.dim,
                s.chunker,
                s.chunk_size,
                s.chunk_overlap,
                time.time(),
                int(s.headers),
                int(s.multi_vector),
            ),
        )
        create_vec_table(self.conn, self.conn.last_insert_rowid(), s.dim)

    def set_chunking(self, brain: Brain, chunker: str, chunk_size: int, chunk_overlap: int) -> None:
        with self.transaction():
            self.conn.execute(
                "UPDATE brains SET chunker = ?, chunk_size = ?, chunk_overlap = ? WHERE id = ?",
                (chunker, chunk_size, chunk_overlap, brain.id),
            )

    def _delete_brain_rows(self, brain: Brain) -> None:
        # Chunks first through their own path so the FTS trigger removes their rows.
        self.conn.execute("DELETE FROM chunks WHERE brain_id = ?", (brain.id,))
        self.conn.execute(f"DROP TABLE IF EXISTS {brain.vec_table}")
        self.conn.execute("DELETE FROM brains WHERE id = ?", (brain.id,))

    def _rename_brain(self, brain: Brain, name: str) -> None:
        self.conn.execute("UPDATE brains SET name = ? WHERE id = ?", (name, brain.id))

    def touch_brain(self, brain: Brain, roots: Iterable[str]) -> None:
        with self.transaction():
            self.conn.execute("UPDATE brains SET last_indexed = ? WHERE id = ?", (time.time(), brain.id))
            for root in roots:
                self.conn.execute("INSERT OR IGNORE INTO roots(brain_id, path) VALUES (?, ?)", (brain.id, root))

    def add_roots(self, brain: Brain, roots: Iterable[str]) -> None:
        """Record roots of a brain whose run has not finished (`last_indexed` stays as it is)."""
        with self.transaction():
            for root in roots:
                self.conn.execute("INSERT OR IGNORE INTO roots(brain_id, path) VALUES (?, ?)", (brain.id, root))

    def roots(self, brain: Brain) -> list[str]:
        return [r[0] for r in self.execute("SELECT path FROM roots WHERE brain_id = ? ORDER BY path", (brain.id,))]

    # -- documents ----------------------------------------------------------------------------

    def documents(self, brain: Brain) -> dict[tuple[str, str], StoredDocument]:
        rows = self.execute(
            "SELECT id, root, relative_path, size, mtime_ns, checksum, line_offset, reading FROM documents"
            " WHERE brain_id = ?",
            (brain.id,),
        )
        return {(r[1], r[2]): StoredDocument(*r) for r in rows}

    def chunk_by_id(self, brain: Brain, chunk_id: str) -> Chunk | None:
        """The chunk with this id (`<checksum[:12]>-<index>`), if the brain holds it."""
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.brain_id = ? AND c.chunk_id = ? LIMIT 1",
            (brain.id, chunk_id),
        )
        return chunk_from_row(brain, rows[0]) if rows else None

    def document_chunks(self, brain: Brain, relative_path: str) -> list[Chunk]:
        """A document's chunks in order (none when the brain has no such path)."""
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.brain_id = ? AND c.relative_path = ? ORDER BY c.chunk_index",
            (brain.id, relative_path),
        )
        return [chunk_from_row(brain, row) for row in rows]

    def document_paths(self, brain: Brain) -> list[str]:
        """The relative paths of the brain's documents, sorted."""
        return [
            r[0]
            for r in self.execute(
                "SELECT DISTINCT relative_path FROM documents WHERE brain_id = ? ORDER BY relative_path", (brain.id,)
            )
        ]

    def update_document_stat(self, doc_id: int, size: int, mtime_ns: int) -> None:
        with self.transaction():
            self.conn.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))

    def chunk_texts(self, doc_id: int) -> list[tuple[int, str]]:
        """A document's chunks as (row id, text), in order: what `set_locations` locates."""
        return [
            (int(r[0]), str(r[1]))
            for r in self.execute(
                "SELECT id, content FROM chunks WHERE document_id = ? ORDER BY chunk_index", (doc_id,)
            )
        ]

    def set_locations(self, doc_id: int, line_offset: int, locations: Sequence[tuple[int, Location | None]]) -> None:
        """Store the locations of a document's chunks (by row id) and its line offset, in one transaction."""
        with self.transaction():
            self.conn.executemany(
                "UPDATE chunks SET line_start = ?, line_end = ?, span_kind = ?, span_label = ? WHERE id = ?",
                [(*location_columns(location), rowid) for rowid, location in locations],
            )
            self.conn.execute("UPDATE documents SET line_offset = ? WHERE id = ?", (line_offset, doc_id))

    def write_document(self, brain: Brain, doc: DocumentRecord) -> None:
        """Replace one document's chunks, vectors and FTS rows in a single transaction."""
        root, relative_path, chunks, vectors = doc.root, doc.relative_path, doc.chunks, doc.vectors
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        headers, hashes = doc.header_list(), doc.hash_list()
        size, mtime_ns, checksum = doc.size, doc.mtime_ns, doc.checksum
        with self.transaction():
            row = self.conn.execute(
                "SELECT id FROM documents WHERE brain_id = ? AND root = ? AND relative_path = ?",
                (brain.id, root, relative_path),
            ).fetchone()
            if row is not None:
                self._delete_document_rows(brain, row[0])
            self.conn.execute(
                "INSERT INTO documents(brain_id, root, relative_path, size, mtime_ns, checksum, indexed_at, line_offset,"
                " reading) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (brain.id, root, relative_path, size, mtime_ns, checksum, time.time(), doc.line_offset, doc.reading),
            )
            doc_id = self.conn.last_insert_rowid()
            for chunk, vector, header, digest in zip(chunks, vectors, headers, hashes, strict=True):
                windows = np.ascontiguousarray(np.atleast_2d(vector), dtype=np.float32)
                self.conn.execute(
                    "INSERT INTO chunks(brain_id, document_id, chunk_id, relative_path, chunk_index, content,"
                    " checksum, content_hash, header, vectors, line_start, line_end, span_kind, span_label)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        brain.id,
                        doc_id,
                        chunk.id,
                        chunk.relative_path,
                        chunk.chunk_index,
                        chunk.content,
                        chunk.checksum,
                        digest,
                        header,
                        len(windows),
                        *location_columns(chunk.location),
                    ),
                )
                rowid = self.conn.last_insert_rowid()
                for window, row in enumerate(windows):
                    self.conn.execute(
                        f"INSERT INTO {brain.vec_table}(rowid, part, embedding) VALUES (?, ?, ?)",
                        (rowid + (window << WINDOW_SHIFT), rowid % PARTITIONS, row.tobytes()),
                    )

    def _delete_document_rows(self, brain: Brain, doc_id: int) -> None:
        self.conn.execute(
            f"DELETE FROM {brain.vec_table} WHERE rowid IN (SELECT id FROM chunks WHERE document_id = ?)",
            (doc_id,),
        )
        extra = [
            rowid + (window << WINDOW_SHIFT)
            for rowid, count in self.conn.execute(
                "SELECT id, vectors FROM chunks WHERE document_id = ? AND vectors > 1", (doc_id,)
            )
            for window in range(1, count)
        ]
        for start in range(0, len(extra), 500):
            part = extra[start : start + 500]
            self.conn.execute(f"DELETE FROM {brain.vec_table} WHERE rowid IN ({','.join('?' * len(part))})", part)
        self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
        self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def delete_documents(self, brain: Brain, doc_ids: Sequence[int]) -> None:
        with self.transaction():
            for doc_id in doc_ids:
                self._delete_document_rows(brain, doc_id)

    def forget_roots(self, brain: Brain, roots: Sequence[str], doc_ids: Sequence[int]) -> None:
        with self.transaction():
            for doc_id in doc_ids:
                self._delete_document_rows(brain, doc_id)
            self.conn.executemany(
                "DELETE FROM roots WHERE brain_id = ? AND path = ?", [(brain.id, root) for root in roots]
            )

    def _export_rows(self, doc: StoredDocument) -> list[Any]:
        return self.execute(f"SELECT {EXPORT_COLUMNS} FROM chunks c WHERE c.document_id = ? {EXPORT_ORDER}", (doc.id,))

    def _export_windows(self, brain: Brain, rows: Sequence[Sequence[Any]]) -> dict[int, list[np.ndarray]]:
        # Every vector row of the document (each chunk's windows), read 500 rowids at a time.
        n = N_CHUNK_COLUMNS  # then header, content_hash, vectors
        wanted = {row[0]: [row[0] + (w << WINDOW_SHIFT) for w in range(max(int(row[n + 2]), 1))] for row in rows}
        rowids = [rowid for windows in wanted.values() for rowid in windows]
        found: dict[int, bytes] = {}
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            found.update(
                self.execute(
                    f"SELECT rowid, embedding FROM {brain.vec_table} WHERE rowid IN ({','.join('?' * len(part))})",
                    part,
                )
            )
        # A chunk with a missing window gets only the windows before it: export_documents refuses it.
        out: dict[int, list[np.ndarray]] = {}
        for chunk_pk, rowids_of_chunk in wanted.items():
            present = list(itertools.takewhile(found.__contains__, rowids_of_chunk))
            out[chunk_pk] = [np.frombuffer(found[rowid], dtype=np.float32).copy() for rowid in present]
        return out

    # -- vectors ------------------------------------------------------------------------------

    def reusable_vectors(self, brain: Brain, hashes: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors already stored in this brain for chunks with these exact texts.

        The brain pins one model, so a vector stored for the same text is the vector the model
        would compute again: renames, duplicates and unchanged paragraphs cost no embedding.
        """
        found: dict[bytes, np.ndarray] = {}
        with _translated(f"reading {self.path}"):
            for h in set(hashes):
                row = self.conn.execute(
                    f"SELECT v.embedding, c.id, c.vectors FROM chunks c JOIN {brain.vec_table} v ON v.rowid = c.id"
                    " WHERE c.brain_id = ? AND c.content_hash = ? LIMIT 1",
                    (brain.id, h),
                ).fetchone()
                if row is None:
                    continue
                found[h] = np.frombuffer(row[0], dtype=np.float32)
                if row[2] > 1:  # a chunk with one vector per window: (windows, dim)
                    rest = [
                        self.conn.execute(
                            f"SELECT embedding FROM {brain.vec_table} WHERE rowid = ?",
                            (row[1] + (window << WINDOW_SHIFT),),
                        ).fetchone()
                        for window in range(1, row[2])
                    ]
                    windows = [r[0] for r in rest if r is not None]
                    if len(windows) < len(rest):
                        del found[h]  # incomplete: embed it again
                        continue
                    found[h] = np.stack([found[h], *(np.frombuffer(w, dtype=np.float32) for w in windows)])
        return found

    def vector_count(self, brain: Brain) -> int:
        """Chunks with a vector in the brain (window vectors beyond a chunk's first not counted),
        from sqlite-vec's one row per vector in `<table>_rowids`, by rowid range."""
        ((count,),) = self.execute(
            f"SELECT count(*) FROM {brain.vec_table}_rowids WHERE rowid <= ?", (CHUNK_ROWID_MASK,)
        )
        return int(count)

    def knn(self, brain: Brain, query: np.ndarray, k: int, *, path_glob: str | None = None) -> list[Hit]:
        """The k nearest chunks by cosine similarity; a path filter is applied inside the search.

        In a multi-vector brain a chunk scores as its best window: the vector table is asked for
        MULTI_VECTOR_OVERFETCH times k rows, and again for more while fewer than k distinct chunks
        came back and more rows remain.
        """
        if k <= 0:
            return []
        where, filter_params = "", []
        if path_glob and brain.multi_vector:
            ((most,),) = self.execute(
                "SELECT max(vectors) FROM chunks WHERE brain_id = ? AND relative_path GLOB ?", (brain.id, path_glob)
            )
            where = (
                f" AND rowid IN (WITH RECURSIVE w(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM w WHERE n < ?)"
                f" SELECT c.id + (w.n << {WINDOW_SHIFT}) FROM chunks c JOIN w ON w.n < c.vectors"
                " WHERE c.brain_id = ? AND c.relative_path GLOB ?)"
            )
            filter_params = [max(int(most or 1), 1) - 1, brain.id, path_glob]
        elif path_glob:
            where = " AND rowid IN (SELECT id FROM chunks WHERE brain_id = ? AND relative_path GLOB ?)"
            filter_params = [brain.id, path_glob]
        sql = f"SELECT rowid, distance FROM {brain.vec_table} WHERE embedding MATCH ? AND k = ?{where}"
        workers = min(PARTITIONS, _usable_cores())
        parallel = workers > 1 and self.vector_count(brain) >= PARALLEL_MIN_VECTORS
        limit = min(k * (MULTI_VECTOR_OVERFETCH if brain.multi_vector else 1), 4096)
        while True:
            params: list[Any] = [np.ascontiguousarray(query, dtype=np.float32).tobytes(), limit, *filter_params]
            nearest = (
                self._parallel_scan(sql + " AND part = ?", params, workers) if parallel else self.execute(sql, params)
            )
            best: dict[int, float] = {}  # chunk rowid -> its closest window's distance
            for rowid, distance in nearest:
                chunk_rowid = rowid & CHUNK_ROWID_MASK
                if chunk_rowid not in best or distance < best[chunk_rowid]:
                    best[chunk_rowid] = distance
            if not brain.multi_vector or len(best) >= k or limit >= 4096 or len(nearest) < limit:
                break
            limit = min(limit * 2, 4096)
        if not best:
            return []
        ids = list(best)
        chunks = {
            r[0]: chunk_from_row(brain, r)
            for r in self.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE c.id IN ({','.join('?' * len(ids))})",
                ids,
            )
        }
        # Closest first; equal distances in insertion order, so results are deterministic.
        ranked = sorted(best.items(), key=lambda r: (r[1], r[0]))[:k]
        return [Hit(chunks[rowid], score=1.0 - float(distance)) for rowid, distance in ranked if rowid in chunks]

    def _parallel_scan(self, sql: str, params: list[Any], workers: int) -> list[tuple[Any, ...]]:
        """Run `sql` once per partition, `workers` partitions at a time, each on its own connection.

        Each worker's connection reads its own WAL snapshot: a commit landing between them can
        show one partition before it and another after, which only matters as much as a search
        that ran a moment earlier or later. Chunks are then read on the main connection.
        """
        from concurrent.futures import ThreadPoolExecutor

        while len(self._readers) < workers - 1:
            self._readers.append(self._open_reader())
        if self._pool is None:  # threads start on first use and then stay for the next searches
            self._pool = ThreadPoolExecutor(max_workers=PARTITIONS - 1, thread_name_prefix="locallens-scan")
        connections = [self.conn, *self._readers[: workers - 1]]

        def scan(worker: int) -> list[tuple[Any, ...]]:
            conn = connections[worker]
            with _translated(f"reading {self.path}"):
                return [
                    row
                    for part in range(worker, PARTITIONS, workers)
                    for row in conn.execute(sql, [*params, part]).fetchall()
                ]

        # Worker 0 is this thread, on the main connection; the others run in the pool.
        others = [self._pool.submit(scan, worker) for worker in range(1, workers)]
        rows = scan(0)
        for future in others:
            rows += future.result()
        return rows

    def _open_reader(self) -> apsw.Connection:
        import apsw

        with _translated(f"opening {self.path}"):
            if self._read_uri is not None:  # read-only media: as the main connection was opened
                return self._connect(apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI, self._read_uri)
            return self._connect(apsw.SQLITE_OPEN_READONLY)

    def keyword_search(self, brain: Brain, query: str, k: int, *, path_glob: str | None = None) -> list[int]:
        """Chunk ids ranked by BM25 (FTS5) for the words of `query`, best first (see keyword_scores)."""
        return [chunk_id for chunk_id, _ in self.keyword_scores(brain, query, k, path_glob=path_glob)]

    def keyword_scores(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, score) ranked by BM25 (FTS5) for the words of `query`, best (highest) first.

        Words go to the stemmed word index `chunks_fts`; the score is FTS5's bm25() negated.
        When the query has runs of Han, kana, Hangul or Thai, they (and its other words of 3
        characters or more, which such text often glues to its neighbours: `VPNの設定`) also go to
        the trigram index `chunks_trigram`. When it names symbols ("$?", "<<<"; `text.symbols`),
        the chunks holding them as written are ranked too (`_symbol_search`). The rankings are then
        fused by reciprocal rank, and the score is the fused one; with neither, the result is the
        word ranking alone.
        """
        words = self._word_search(brain, query, k, path_glob=path_glob)
        if k <= 0:
            return words
        rankings = [words]
        if NO_SPACE_RUN.search(query):
            rankings.append(self._trigram_search(brain, query, k, path_glob=path_glob))
        asked = scanned_symbols(query)
        if asked:
            rankings.append(self._symbol_search(brain, asked, k, path_glob))
        return fused_rankings(rankings, k)

    def _symbol_search(self, brain: Brain, asked: list[str], k: int, path_glob: str | None) -> list[tuple[int, float]]:
        """(chunk id, score) of `brain`'s chunks holding any of the symbols or shapes `asked`
        (`storage.types.scanned_symbols`, `symbol_ranking`): one scan of the brain's chunks with
        `instr`, in a brain of at most SYMBOL_SCAN_MAX_CHUNKS chunks (`scanned_within`)."""
        total = self._chunk_count(brain)
        asked = scanned_within(asked, total)
        if not asked:
            return []
        held, pieces = scan_condition(asked, "instr(c.content, ?) > 0")
        where, params = "", [brain.id, *pieces]
        if path_glob:
            where, params = " AND c.relative_path GLOB ?", [*params, path_glob]
        rows = self.execute(f"SELECT c.id, c.content FROM chunks c WHERE c.brain_id = ? AND ({held}){where}", params)
        return symbol_ranking(symbol_rows([(r[0], r[1]) for r in rows], asked), total, k)

    def _trigram_terms(self, query: str) -> list[str]:
        """The trigrams that stand for `query` in `chunks_trigram`, as quoted FTS5 strings.

        The trigram tokenizer cannot match fewer than 3 characters, and most Chinese words
        (and many Korean stems before their particle) have 2. Each 2-character piece of a run
        is therefore replaced by the indexed trigrams that start with it (the most frequent
        TRIGRAM_EXPANSIONS, read from the index's vocabulary by a range scan): any occurrence of
        the piece that is not the last thing in a chunk is the start of one of them. The run's
        own trigrams are always among them, so a document sharing a longer substring with the
        query matches more of them and ranks higher. Measured with benchmarks/bench_cjk.py: on
        its 20 questions keyword hit@5 is 1.00 with the expansion and 0.90 without it (Chinese
        0.71: the 2-character words were lost); at 20,000 CJK chunks a search takes ~45 ms,
        where a LIKE '%xx%' scan for the same pieces (no index can serve it, and it has no BM25
        to rank by) takes ~250 ms. A bigram index would need a tokenizer SQLite does not have.
        """
        lowered = query.lower()
        terms: list[str] = []
        pieces: list[str] = []
        for run in NO_SPACE_RUN.findall(lowered):
            terms += [run[i : i + 3] for i in range(len(run) - 2)]
            pieces += [run[i : i + 2] for i in range(len(run) - 1)]
        # Latin words and numbers of the same query, as substrings (glued to CJK text, the
        # unicode61 index sees them as part of one long word).
        terms += re.findall(r"\w{3,}", NO_SPACE_RUN.sub(" ", lowered))
        if pieces:
            if not self._trigram_vocab_ready:
                self.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.trigram_vocab USING fts5vocab(main, chunks_trigram, 'row')"
                )
                self._trigram_vocab_ready = True
            for piece in dict.fromkeys(pieces):
                terms += [
                    r[0]
                    for r in self.execute(
                        "SELECT term FROM temp.trigram_vocab WHERE term >= ? AND term < ? ORDER BY doc DESC, term"
                        " LIMIT ?",
                        (piece, piece + "\U0010ffff", TRIGRAM_EXPANSIONS),
                    )
                ]
        return ['"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms)]

    def _trigram_search(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, -bm25) over `chunks_trigram` for the trigrams of `query`, best first."""
        terms = self._trigram_terms(query)
        if not terms:
            return []
        return self._ranked("chunks_trigram", " OR ".join(terms), brain, k, path_glob)

    def _word_search(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, -bm25) over the stemmed word index `chunks_fts`, best first.

        Every term is quoted and the terms OR-ed, so no FTS5 syntax in a question (quotes,
        `NEAR`, `-`, `:`, `*`) can make the query fail or mean something else. FTS5 stems the
        terms as it stemmed the text.
        """
        # One term per whitespace-separated token; a token with inner punctuation (an IP, a
        # version, a policy number such as NWL-CY-22871) becomes a phrase of its parts, which is
        # how FTS5's tokenizer indexed it, so it matches only that exact sequence.
        terms = []
        for token in query.lower().split():
            parts = re.findall(r"\w+", token)
            if len(parts) > 1:
                terms.append('"' + " ".join(parts) + '"')
            elif parts and (len(parts[0]) > 1 or parts[0].isdigit()):
                terms.append(f'"{parts[0]}"')
        if not terms or k <= 0:
            return []
        terms = self._without_common_words(list(dict.fromkeys(terms)))
        return self._ranked("chunks_fts", " OR ".join(terms), brain, k, path_glob)

    def _ranked(self, table: str, match: str, brain: Brain, k: int, path_glob: str | None) -> list[tuple[int, float]]:
        """(chunk id, -bm25) of `brain`'s chunks matching the FTS5 query `match` in `table`, best first."""
        where, params = "", [match, brain.id]
        if path_glob:
            where, params = " AND c.relative_path GLOB ?", [*params, path_glob]
        rows = self.execute(
            f"SELECT c.id, bm25({table}) FROM {table} JOIN chunks c ON c.id = {table}.rowid"
            f" WHERE {table} MATCH ? AND c.brain_id = ?{where} ORDER BY bm25({table}), c.id LIMIT ?",
            [*params, k],
        )
        return [(r[0], -float(r[1])) for r in rows]

    def _without_common_words(self, terms: list[str]) -> list[str]:
        """Drop single words found in more than COMMON_WORD_FRACTION of the chunks (the, of, on).

        BM25 gives them little weight, but FTS5 still scores every chunk that has one: at 100k
        chunks they made a keyword search take ~67 ms. Applied from KEYWORD_PRUNE_MIN_CHUNKS on,
        so smaller databases rank exactly as without it. Phrases are always kept, and when every
        word is common the rarest one stays.
        """
        words = [t for t in terms if " " not in t]
        if len(words) < 2:
            return terms
        ((total,),) = self.execute("SELECT count(*) FROM chunks")
        if total < KEYWORD_PRUNE_MIN_CHUNKS:
            return terms
        if not self._vocab_ready:
            self.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunks_vocab USING fts5vocab(main, chunks_fts, 'row')"
            )
            self._vocab_ready = True
        frequency = {}
        for term in words:
            # The index holds words case- and diacritic-folded (unicode61, remove_diacritics 2),
            # then stemmed (porter).
            folded = porter_stem(
                "".join(ch for ch in unicodedata.normalize("NFKD", term.strip('"')) if not unicodedata.combining(ch))
            )
            rows = self.execute("SELECT doc FROM temp.chunks_vocab WHERE term = ?", (folded,))
            frequency[term] = int(rows[0][0]) if rows else 0
        common = {t for t in words if frequency[t] > COMMON_WORD_FRACTION * total}
        if common == set(words):
            common.discard(min(words, key=lambda t: frequency[t]))
        return [t for t in terms if t not in common]

    def _chunk_count(self, brain: Brain) -> int:
        """How many chunks `brain` holds."""
        ((total,),) = self.execute("SELECT count(*) FROM chunks WHERE brain_id = ?", (brain.id,))
        return int(total)

    def term_counts(self, brain: Brain, words: Sequence[str], cap: int) -> tuple[int, dict[str, int]]:
        """(the brain's chunks, how many of them hold each of `words`, counted up to `cap`).

        A word is looked up in the stemmed word index as a question's word is (`_word_search`):
        `minutes` counts the chunks holding `minute`; a word with inner punctuation (`sha-256`)
        counts those holding its parts in sequence. A word of no letters or digits counts 0.
        """
        total = self._chunk_count(brain)
        counts: dict[str, int] = {}
        for word in dict.fromkeys(words):
            parts = re.findall(r"\w+", word.lower())
            if not parts or cap <= 0:
                counts[word] = 0
                continue
            ((n,),) = self.execute(
                "SELECT count(*) FROM (SELECT 1 FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
                " WHERE chunks_fts MATCH ? AND c.brain_id = ? LIMIT ?)",
                ('"' + " ".join(parts) + '"', brain.id, cap),
            )
            counts[word] = int(n)
        return total, counts

    def hits_by_id(self, brain: Brain, query: np.ndarray, ids: Sequence[int]) -> dict[int, Hit]:
        """These chunks as hits, scored by cosine similarity with `query` like knn() scores them."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS}, vec_distance_cosine(v.embedding, ?) FROM chunks c"
            f" JOIN {brain.vec_table} v ON v.rowid = c.id WHERE c.id IN ({marks})",
            [blob, *ids],
        )
        hits = {r[0]: Hit(chunk_from_row(brain, r), score=1.0 - float(r[N_CHUNK_COLUMNS])) for r in rows}
        if brain.multi_vector:
            # A chunk scores as its best window, as in knn().
            extra = [
                rowid + (window << WINDOW_SHIFT)
                for rowid, count in self.execute(
                    f"SELECT id, vectors FROM chunks WHERE id IN ({marks}) AND vectors > 1", list(ids)
                )
                for window in range(1, count)
            ]
            if extra:
                for rowid, distance in self.execute(
                    f"SELECT rowid, vec_distance_cosine(embedding, ?) FROM {brain.vec_table}"
                    f" WHERE rowid IN ({','.join('?' * len(extra))})",
                    [blob, *extra],
                ):
                    hit = hits.get(rowid & CHUNK_ROWID_MASK)
                    if hit is not None and 1.0 - float(distance) > hit.score:
                        hits[rowid & CHUNK_ROWID_MASK] = Hit(hit.chunk, score=1.0 - float(distance))
        return hits

    # -- sentence vectors (trimming) ----------------------------------------------------------

    def cached_sentence_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with _translated(f"reading {self.path}"):
            for h in set(hashes):
                row = self.conn.execute(
                    "SELECT vector FROM sentence_cache WHERE model = ? AND text_hash = ?", (model, h)
                ).fetchone()
                if row is not None:
                    found[h] = np.frombuffer(row[0], dtype=np.float32)
        return found

    def cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        if not items:
            return
        with self.transaction():
            for h, vector in items:
                self.conn.execute(
                    "INSERT OR IGNORE INTO sentence_cache(model, text_hash, vector) VALUES (?, ?, ?)",
                    (model, h, np.ascontiguousarray(vector, dtype=np.float32).tobytes()),
                )

    def try_cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> bool:
        """Cache if the database is free within 200 ms; a reader never waits on an index run."""
        import apsw

        self.conn.set_busy_timeout(200)
        try:
            self.cache_sentence_vectors(model, items)
            return True
        except StoreError as exc:
            if isinstance(exc.__cause__, (apsw.BusyError, apsw.ReadOnlyError, apsw.CantOpenError)):
                return False
            raise
        finally:
            self.conn.set_busy_timeout(BUSY_TIMEOUT_MS)

    # -- reporting ----------------------------------------------------------------------------

    def stats(self, brain: Brain) -> BrainStats:
        ((documents,),) = self.execute("SELECT count(*) FROM documents WHERE brain_id = ?", (brain.id,))
        chunks = self._chunk_count(brain)
        vectors = self.vector_count(brain)  # chunks with vectors (a multi-vector chunk counts once)
        # The FTS index is shared by all brains: count this brain's rows through its doc sizes.
        ((fts_rows,),) = self.execute(
            "SELECT count(*) FROM chunks_fts_docsize WHERE id IN (SELECT id FROM chunks WHERE brain_id = ?)",
            (brain.id,),
        )
        return BrainStats(brain, self.roots(brain), documents, chunks, vectors, fts_rows)

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.stat(f"{self.path}{suffix}").st_size
        return total

    def free_bytes(self) -> int:
        ((pages,),) = self.execute("PRAGMA freelist_count")
        ((page_size,),) = self.execute("PRAGMA page_size")
        return int(pages) * int(page_size)

    def integrity_check(self) -> str:
        return str(self.execute("PRAGMA integrity_check")[0][0])

    def fts_integrity_check(self) -> None:
        """Raises if an FTS index disagrees with the chunks table.

        The trigram index holds no text (contentless): its own check covers its structure, and
        its rows are compared with the chunks it must hold (those with a NO_SPACE_CLASS character).
        """
        with self.transaction():
            self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
            self.conn.execute("INSERT INTO chunks_trigram(chunks_trigram) VALUES ('integrity-check')")
            pattern = f"*[{NO_SPACE_CLASS}]*"
            ((wrong,),) = self.conn.execute(
                "SELECT count(*) FROM chunks c FULL JOIN chunks_trigram_docsize t ON t.id = c.id"
                " WHERE (c.id IS NOT NULL AND (c.content GLOB ?1 OR c.header GLOB ?1)) IS NOT (t.id IS NOT NULL)",
                (pattern,),
            ).fetchall()
            if wrong:
                raise StoreError(f"{self.path}: the trigram index disagrees with the chunks table on {wrong} rows")

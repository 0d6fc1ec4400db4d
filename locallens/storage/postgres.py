"""The PostgreSQL store: the same index as `storage.sqlite`, in a database a team can share.

Binding: psycopg 3, imported only when a PostgreSQL `--db` is used, so that the SQLite path and
`locallens --help` never pay for it. The connection is in autocommit mode: reads never leave a
transaction open on a shared server, and every write method runs in one explicit transaction
(`write_document`: one per file), as in the SQLite store.

Layout: the schema `locallens` and its upgrade steps are `storage.postgres_schema`'s; `chunks.id`
is the key shared by a chunk, its vectors and its keyword row (`keyword_search` returns it and
`hits_by_id` takes it back).

Vector search: below EXACT_BELOW_VECTORS vectors, with a path filter, with `exact`, or when a
search asks for more rows than HNSW can return, it scans every vector (exact, the SQLite store's
results up to float rounding); otherwise it walks the brain's HNSW index (approximate, cosine).
That index is built by `touch_brain`, which ends every `index` and `copy` run, once the brain
holds EXACT_BELOW_VECTORS vectors: below that no search uses it, and writing the vectors then
building it in one go is ~8x faster than keeping it up to date row by row (2,000 vectors of 384
dimensions: 2 s against 16 s on 2 busy cores). Later runs then update it row by row.

Keyword search: `chunks.tsv` (a tsvector with a GIN index), its lexemes and BM25 ranking are
`storage.postgres_keywords`'s; this module adds the path filter (`glob_regex`).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from locallens.domain import Chunk, Hit, Location
from locallens.errors import (
    DatabaseAuthError,
    DatabaseUnreachableError,
    DatabaseUnsupportedError,
    LocallensError,
    LockedError,
    NoIndexError,
    StoreError,
    UsageError,
)
from locallens.storage.base import (
    CHUNK_COLUMNS,
    EXPORT_COLUMNS,
    EXPORT_ORDER,
    N_CHUNK_COLUMNS,
    StoreBase,
    chunk_from_row,
)
from locallens.storage.postgres_keywords import KeywordIndex, tsvector_text
from locallens.storage.postgres_schema import SCHEMA, SCHEMA_LOCK_KEY, SCHEMA_VERSION, upgrade, vec_table
from locallens.storage.types import (
    MULTI_VECTOR_OVERFETCH,
    Brain,
    BrainSettings,
    BrainStats,
    DocumentRecord,
    PostgresURL,
    StoredDocument,
    location_columns,
)

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT_S = 10
# pgvector 0.5 brought HNSW; older servers are refused with a message that says so.
MIN_PGVECTOR = (0, 5, 0)
# HNSW candidate list size per search (`hnsw.ef_search`): larger finds more of the true nearest
# neighbours and costs more. A search for n rows uses max(HNSW_EF_SEARCH, n), because an HNSW
# scan returns at most ef_search rows; pgvector accepts at most HNSW_MAX_EF_SEARCH, so a search
# for more rows than that is exact. Measured on clustered synthetic 384-d vectors (benchmarks/
# bench_pg.py; docs/decisions.md#postgresql-store), recall@10 at 10 / 20 / 40 / 100 / 200: 0.882 /
# 0.960 / 0.995 / 1.000 / 1.000 at 100k chunks, 0.566 / 0.679 / 0.806 / 0.917 / 0.961 at 500k,
# where 200 costs 6.5 ms at p50 against 6.0 for 100 (exact: 251 ms).
HNSW_EF_SEARCH = 200
HNSW_MAX_EF_SEARCH = 1000
# HNSW build parameters (pgvector's defaults, written out so that they are a decision).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Memory for building the index: per vector its floats plus the graph's neighbour lists and
# bookkeeping (~1.5 KB at m=16; 100k vectors of 384 dimensions need ~290 MB), capped. Measured at
# 100k (benchmarks/bench_pg.py): 144 s with the server's default 64 MB, 46 s in memory.
HNSW_BYTES_PER_NODE = 1_500
HNSW_BUILD_MAX_MB = 2_048
# pgvector indexes vectors of at most this many dimensions with HNSW; a brain of a larger model
# has no index and is always searched exactly.
HNSW_MAX_DIM = 2000
# Below this many vectors (window vectors included) in a brain an exact scan takes a few ms and
# is never wrong: the brain has no HNSW index until it reaches it, and searches do not use one.
EXACT_BELOW_VECTORS = 10_000
# A reader caches sentence vectors only if the cache is free within this long.
CACHE_LOCK_TIMEOUT_MS = 200
# How often writer_lock asks again for a brain's lock while another run holds it.
LOCK_POLL_S = 0.2
# pgvector's binary format of a vector: dimension, an unused int16, then big-endian float4s.
_VECTOR_HEADER = struct.Struct(">HH")
_BRAIN_COLUMNS = (
    "id, name, model, dim, chunker, chunk_size, chunk_overlap, created_at, last_indexed, headers, multi_vector"
)


# -- errors -----------------------------------------------------------------------------------


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise DatabaseUnsupportedError(
            "a PostgreSQL --db needs psycopg: install locallens with the postgres extra: pip install 'locallens[postgres]'"
        ) from None
    return psycopg


def _secrets(url: PostgresURL) -> list[str]:
    """The password of `url` in every spelling a message could quote it in, longest first."""
    # Read by hand first: a URL too malformed for urlsplit (libpq quotes it whole) still has one.
    found = re.findall(r"^[^:]+://[^/?#@]*?:([^/?#@]*)@", url.url)
    found += re.findall(r"(?i)[?&]password=([^&#]*)", url.url)
    with contextlib.suppress(ValueError):
        parts = urlsplit(url.url)
        if parts.password:
            found.append(parts.password)
        found += parse_qs(parts.query).get("password", [])
    found += [unquote(secret) for secret in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def _one_line(text: str, url: PostgresURL) -> str:
    """`text` on one line, with the password of `url` (should a message ever quote it) masked."""
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return " ".join(text.split())


def _message(exc: Exception, url: PostgresURL) -> str:
    """The server's own message for a psycopg error (its first line), else the error's text."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    return _one_line(primary or str(exc) or exc.__class__.__name__, url)


# Words of a login refused by the server (the other refusals are "cannot reach it").
_AUTH_WORDS = ("authentication", "password", "role", "permission denied", "pg_hba.conf", "not permitted", "privilege")


# libpq refusing the URL itself before it connects (fe-connect.c): a port that is not a number
# in 1..65535, an option whose value it does not know (`sslmode=bogus`), an unknown option.
_BAD_URL = re.compile(
    r"\binvalid (?:port number|integer value|[\w-]+ value|connection option)\b|"
    r"\bvalue \S+ invalid when\b|\bcould not match \d+ (?:port|host)"
)
# libpq giving up on a login before the server decides: the server asked for a password and the
# URL, PGPASSWORD and ~/.pgpass gave none.
_NO_PASSWORD = ("no password supplied", "password retrieved from file", "fe_sendauth")


def _connect_error(exc: Exception, url: PostgresURL) -> LocallensError:
    """What a failed connection means for the user: a URL libpq cannot use (2), server
    unreachable (8) or login refused (9).

    libpq gives no SQLSTATE for a failed connection: what the server said follows its FATAL:;
    what libpq says itself (a bad port or option, no password to send) has no FATAL:.
    """
    text = re.sub(r"^connection (?:failed|is bad):\s*", "", _one_line(str(exc), url))
    said = re.search(r"(?:FATAL|ERROR):\s*(.*)$", text)
    reason = said.group(1) if said else text
    if not said and _BAD_URL.search(reason):
        return UsageError(f"cannot use {url}: {reason}; fix the URL's port or options")
    if not said and any(words in reason for words in _NO_PASSWORD):
        tail = reason[reason.find("fe_sendauth: ") + len("fe_sendauth: ") :] if "fe_sendauth: " in reason else reason
        return DatabaseAuthError(
            f"cannot log in to {url}: {tail} (the server asks for one: put it in the URL, PGPASSWORD or ~/.pgpass)"
        )
    database = re.search(r'database "(.*?)" does not exist', reason)
    if database:
        return DatabaseAuthError(
            f"cannot open {url}: database {database.group(1)!r} does not exist; create it (createdb) or pass another --db"
        )
    if said and any(word in reason.lower() for word in _AUTH_WORDS):
        return DatabaseAuthError(f"cannot log in to {url}: {reason}")
    return DatabaseUnreachableError(f"cannot connect to {url}: {reason}")


def _connection_lost(exc: Exception) -> bool:
    import psycopg

    if isinstance(exc, psycopg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None)
    return isinstance(exc, psycopg.OperationalError) and (
        state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")
    )


@contextlib.contextmanager
def _translated(url: PostgresURL, action: str) -> Iterator[None]:
    """Turn psycopg failures into one-line errors that say what was being done."""
    import psycopg

    try:
        yield
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseAuthError(
            f"{action}: {_message(exc, url)}; ask the database owner to grant this role access to schema {SCHEMA}"
        ) from exc
    except psycopg.Error as exc:
        if _connection_lost(exc):
            raise DatabaseUnreachableError(f"{action}: lost the connection ({_message(exc, url)})") from exc
        raise StoreError(f"{action}: {_message(exc, url)}") from exc


def _connect(url: PostgresURL) -> psycopg.Connection[Any]:
    """An autocommit connection to `url`, failures mapped to exit codes 8, 9 and 10."""
    pg = _psycopg()
    try:
        conn: psycopg.Connection[Any] = pg.connect(
            url.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="locallens"
        )
    except pg.OperationalError as exc:
        raise _connect_error(exc, url) from None
    except pg.Error as exc:  # a malformed URL: libpq cannot even parse it
        raise UsageError(f"cannot use {url}: {_one_line(str(exc), url)}") from None
    return conn


# -- vectors over the wire --------------------------------------------------------------------


def _register_vector(conn: psycopg.Connection[Any], oid: int) -> None:
    """NumPy arrays go to the server as pgvector `vector`s in binary, and come back as float32."""
    from psycopg.abc import Buffer
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            values = np.asarray(obj, dtype=">f4").reshape(-1)
            return _VECTOR_HEADER.pack(values.size, 0) + values.tobytes()

    VectorDumper.oid = oid

    class VectorBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Buffer) -> np.ndarray:
            dim, _ = _VECTOR_HEADER.unpack_from(data)
            return np.frombuffer(data, dtype=">f4", count=dim, offset=_VECTOR_HEADER.size).astype(np.float32)

    class VectorTextLoader(Loader):
        def load(self, data: Buffer) -> np.ndarray:
            return np.array(bytes(data).decode().strip("[]").split(","), dtype=np.float32)

    conn.adapters.register_dumper(np.ndarray, VectorDumper)
    conn.adapters.register_loader(oid, VectorTextLoader)
    conn.adapters.register_loader(oid, VectorBinaryLoader)


# -- path filter ------------------------------------------------------------------------------


def _regex_char(ch: str) -> str:
    """`ch` as a literal in a PostgreSQL regular expression, also inside a bracket expression."""
    return ch if ch.isalnum() or not ch.isascii() else f"\\U{ord(ch):08x}"


def glob_regex(pattern: str) -> str | None:
    """A PostgreSQL regular expression matching what SQLite's `GLOB pattern` matches.

    `*` is any text (`/` included), `?` one character, `[...]` a set (`^` first negates it, `]`
    first is a member, `a-z` a range of code points); everything else is literal and case
    matters. None when nothing can match (SQLite: an unclosed `[`, or an empty set).
    """
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            invert = i < n and pattern[i] == "^"
            i += invert
            members: list[str] = []
            if i < n and pattern[i] == "]":
                members.append(_regex_char("]"))
                i += 1
            prior: str | None = None
            closed = False
            while i < n:
                member = pattern[i]
                i += 1
                if member == "]":
                    closed = True
                    break
                if member == "-" and prior is not None and i < n and pattern[i] != "]":
                    last = pattern[i]
                    i += 1
                    if last >= prior:
                        members.append(f"{_regex_char(prior)}-{_regex_char(last)}")
                    prior = None
                else:
                    members.append(_regex_char(member))
                    prior = member
            if not closed:
                return None
            if not members:
                if not invert:
                    return None
                out.append(".")
            else:
                out.append("[" + ("^" if invert else "") + "".join(members) + "]")
        else:
            out.append(_regex_char(ch))
    out.append("$")
    return "".join(out)


# -- vector search SQL ------------------------------------------------------------------------


def nearest_sql(table: str, *, approximate: bool, multi_vector: bool, filtered: bool) -> str:
    """The nearest-rows query on a brain's vector table: (chunk id, cosine distance) rows.

    Parameters: q (the query vector), limit, and brain and pattern when `filtered`. The
    approximate query is the one form the HNSW index serves (`ORDER BY embedding <=> q`). The
    exact ones order by an expression it cannot serve, `distance + 0` or a chunk's minimum over
    its windows, so they scan every vector, ties in insertion (chunk id) order.
    """
    if approximate:
        return f"SELECT chunk_id, embedding <=> %(q)s FROM {table} ORDER BY embedding <=> %(q)s LIMIT %(limit)s"
    join = ""
    if filtered:
        join = (
            # The path pattern is tested once per document, not once per chunk.
            f" JOIN {SCHEMA}.chunks c ON c.id = v.chunk_id WHERE c.document_id IN (SELECT d.id FROM"
            f" {SCHEMA}.documents d WHERE d.brain_id = %(brain)s AND d.relative_path ~ %(pattern)s)"
        )
    if multi_vector:  # a chunk scores as its best window
        return (
            f"SELECT v.chunk_id, min(v.embedding <=> %(q)s) AS distance FROM {table} v{join}"
            " GROUP BY v.chunk_id ORDER BY distance, v.chunk_id LIMIT %(limit)s"
        )
    return (
        f"SELECT v.chunk_id, (v.embedding <=> %(q)s) + 0 AS distance FROM {table} v{join}"
        " ORDER BY distance, v.chunk_id LIMIT %(limit)s"
    )


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


# -- the writer lock --------------------------------------------------------------------------


def brain_lock_key(brain: str) -> int:
    """The advisory lock key of a brain: a stable signed 64-bit hash of ('locallens', name)."""
    digest = hashlib.sha256(b"locallens\x00" + brain.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def writer_lock(url: PostgresURL, brain: str, wait: float) -> Iterator[None]:
    """Hold the brain's session advisory lock, on a connection of its own, while indexing.

    Asked for every LOCK_POLL_S until `wait` seconds have passed (LockedError). Released
    explicitly when the block ends, before the connection closes: the server ends a closed
    session a moment later, and a run starting right after would find the lock still held. The
    server releases it with the session too, also when the holder is killed.
    """
    conn = _connect(url)
    key = brain_lock_key(brain)
    held = False
    try:
        deadline = time.monotonic() + max(wait, 0.0)
        with _translated(url, f"locking brain {brain!r} in {url}"):
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:  # type: ignore[index]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LockedError(
                        f"brain {brain!r} in {url} is being indexed by another run; waited {wait:g}s"
                        " (raise --wait to wait longer)"
                    )
                time.sleep(min(LOCK_POLL_S, left))
        held = True
        yield
    finally:
        if held:
            with contextlib.suppress(Exception):  # a broken connection: the session's end releases it
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        conn.close()


def open_store(url: PostgresURL, *, create: bool = False) -> PostgresStore:
    """The PostgreSQL store at `url` (the face's `open_store`); `url.exact` searches exactly."""
    return PostgresStore(url, create=create, exact=url.exact)


@contextlib.contextmanager
def open_writer(url: PostgresURL, wait: float) -> Iterator[PostgresStore]:
    """The PostgreSQL store at `url`, its schema created or upgraded if need be. Writers lock per
    brain (`PostgresStore.writing`), so runs on other brains go on meanwhile; `wait` is theirs."""
    with PostgresStore(url, create=True) as store:
        yield store


# -- the store --------------------------------------------------------------------------------


class PostgresStore(StoreBase):
    """One open PostgreSQL index. Not thread-safe; one per process and command."""

    def __init__(self, url: PostgresURL, *, create: bool = False, exact: bool = False) -> None:
        self.url = url
        self.exact = exact or url.exact
        self.read_only = False
        self._indexed: set[int] = set()  # ids of brains whose HNSW index was seen
        self.conn = _connect(url)
        self.keywords = KeywordIndex(self.execute)
        try:
            with self._translated(f"opening {url}"):
                self._open(create)
        except BaseException:
            self.conn.close()
            raise

    @property
    def location(self) -> str:
        return str(self.url)

    def _translated(self, action: str) -> contextlib.AbstractContextManager[None]:
        return _translated(self.url, action)

    # -- plumbing -----------------------------------------------------------------------------

    def _schema_version(self) -> int | None:
        """The schema version, or None when the database holds no locallens index."""
        row = self.conn.execute(f"SELECT to_regclass('{SCHEMA}.meta') IS NOT NULL").fetchone()
        if row is None or not row[0]:
            return None
        row = self.conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row is not None else None

    def _open(self, create: bool) -> None:
        version = self._schema_version()
        if version is None and not create:
            raise NoIndexError(f"no index at {self.url}: run `locallens index PATH` first (or pass --db)")
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(f"{self.url} was written by a newer locallens (schema {version}); upgrade locallens")
        if version is None or version < SCHEMA_VERSION:
            self._upgrade()
        self._prepare_session()
        row = self.conn.execute(f"SELECT has_table_privilege('{SCHEMA}.chunks', 'INSERT')").fetchone()
        self.read_only = not (row and row[0])

    def _upgrade(self) -> None:
        """Create the schema, or bring it to SCHEMA_VERSION, in one transaction.

        Under an advisory lock, and the version is read again under it: another client may have
        done it meanwhile.
        """
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            self._create_vector_extension()
            version = self._schema_version() or 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.url} was written by a newer locallens (schema {version}); upgrade locallens")
            upgrade(self.conn, version)

    def _create_vector_extension(self) -> None:
        import psycopg

        if self.conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        if not self.conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            raise DatabaseUnsupportedError(
                f"{self.url}: the server has no pgvector extension; install pgvector on it"
                " (https://github.com/pgvector/pgvector) or pass another --db"
            )
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseAuthError(
                f"{self.url}: this role may not create the pgvector extension ({_message(exc, self.url)});"
                " ask the database owner to run CREATE EXTENSION vector"
            ) from exc
        except (
            psycopg.errors.FeatureNotSupported,
            psycopg.errors.UndefinedFile,
            psycopg.errors.UndefinedObject,
        ) as exc:
            raise DatabaseUnsupportedError(
                f"{self.url}: cannot create the pgvector extension ({_message(exc, self.url)})"
            ) from exc

    def _prepare_session(self) -> None:
        """Find pgvector (its schema goes on the search path), check its version, and teach the
        connection its `vector` type."""
        row = self.conn.execute(
            "SELECT n.nspname, e.extversion, t.oid FROM pg_extension e"
            " JOIN pg_namespace n ON n.oid = e.extnamespace"
            " JOIN pg_type t ON t.typnamespace = e.extnamespace AND t.typname = 'vector'"
            " WHERE e.extname = 'vector'"
        ).fetchone()
        if row is None:
            raise DatabaseUnsupportedError(
                f"{self.url} holds a locallens index but the pgvector extension was removed;"
                " ask the database owner to run CREATE EXTENSION vector"
            )
        schema, version, oid = row
        if _version_tuple(version) < MIN_PGVECTOR:
            raise DatabaseUnsupportedError(
                f"{self.url}: pgvector {version} has no HNSW index; locallens needs pgvector"
                f" {'.'.join(map(str, MIN_PGVECTOR))} or later (ALTER EXTENSION vector UPDATE)"
            )
        # Our tables are always named with their schema; the search path only finds pgvector's
        # type and operators, wherever the extension was installed.
        self.conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (schema,))
        _register_vector(self.conn, int(oid))

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, binary: bool = False) -> list[Any]:
        with self._translated(f"reading {self.url}"):
            return self.conn.execute(sql, params, binary=binary).fetchall()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; any exception (Ctrl-C included) rolls it back."""
        with self._translated(f"writing {self.url}"), self.conn.transaction():
            yield

    def writing(self, brain: str, wait: float) -> contextlib.AbstractContextManager[None]:
        """The brain's writer lock, across every host (`writer_lock`)."""
        return writer_lock(self.url, brain, wait)

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read in the block sees one moment: REPEATABLE READ, which blocks no writer."""
        with self.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def sentence_cache_page(self, model: str, after: bytes, limit: int) -> list[tuple[bytes, np.ndarray]]:
        """Up to `limit` cached sentence vectors of `model`, in hash order, after hash `after`."""
        rows = self.execute(
            f"SELECT text_hash, vector FROM {SCHEMA}.sentence_cache WHERE model = %s AND text_hash > %s"
            " ORDER BY text_hash LIMIT %s",
            (model, after, limit),
        )
        return [(bytes(h), np.frombuffer(bytes(v), dtype=np.float32)) for h, v in rows]

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    # -- brains -------------------------------------------------------------------------------

    def brains(self) -> list[Brain]:
        rows = self.execute(f'SELECT {_BRAIN_COLUMNS} FROM {SCHEMA}.brains ORDER BY name COLLATE "C"')
        return [Brain(*row) for row in rows]

    def find_brain(self, name: str) -> Brain | None:
        rows = self.execute(f"SELECT {_BRAIN_COLUMNS} FROM {SCHEMA}.brains WHERE name = %s", (name,))
        return Brain(*rows[0]) if rows else None

    def _insert_brain(self, name: str, settings: BrainSettings) -> None:
        s = settings
        row = self.conn.execute(
            f"INSERT INTO {SCHEMA}.brains(name, model, dim, chunker, chunk_size, chunk_overlap, created_at,"
            " headers, multi_vector) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (name, s.model, s.dim, s.chunker, s.chunk_size, s.chunk_overlap, time.time(), s.headers, s.multi_vector),
        ).fetchone()
        assert row is not None
        # Its HNSW index comes later (touch_brain), once the brain is large enough to use it.
        self.conn.execute(
            f"CREATE TABLE {SCHEMA}.vec_{int(row[0])}(chunk_id bigint NOT NULL, win integer NOT NULL,"
            f" embedding vector({int(s.dim)}) NOT NULL, PRIMARY KEY(chunk_id, win))"
        )

    def _has_index(self, brain: Brain) -> bool:
        if brain.id not in self._indexed:  # once built, an index stays as long as its brain
            row = self.conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (f"{SCHEMA}.{brain.vec_table}_hnsw",)
            ).fetchone()
            if row and row[0]:
                self._indexed.add(brain.id)
        return brain.id in self._indexed

    def _large(self, brain: Brain) -> bool:
        """True from EXACT_BELOW_VECTORS vector rows on; counting stops there (a few ms)."""
        if EXACT_BELOW_VECTORS <= 0:
            return True
        row = self.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {vec_table(brain)} LIMIT %s) s", (EXACT_BELOW_VECTORS,)
        ).fetchone()
        return bool(row and row[0] >= EXACT_BELOW_VECTORS)

    def _build_index(self, brain: Brain) -> None:
        """Build the brain's HNSW index if it is large enough and has none (see the module doc).

        Readers go on meanwhile (with exact scans); writers of this brain wait, and there are
        none during `touch_brain`, which ends a run that holds the brain's writer lock.
        """
        if brain.dim > HNSW_MAX_DIM or self._has_index(brain) or not self._large(brain):
            return
        with self.transaction():
            # Built in memory when it fits (a graph larger than maintenance_work_mem is built ~3x
            # slower); SET LOCAL: only for this transaction, the server's setting stays as it is.
            rows = self.conn.execute(f"SELECT count(*) FROM {vec_table(brain)}").fetchone()
            need = int((rows[0] if rows else 0) * (brain.dim * 4 + HNSW_BYTES_PER_NODE))
            memory_mb = min(max(need >> 20, 64), HNSW_BUILD_MAX_MB)
            self.conn.execute(f"SET LOCAL maintenance_work_mem = '{memory_mb}MB'")
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {brain.vec_table}_hnsw ON {vec_table(brain)}"
                f" USING hnsw (embedding vector_cosine_ops)"
                f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            )

    def set_chunking(self, brain: Brain, chunker: str, chunk_size: int, chunk_overlap: int) -> None:
        with self.transaction():
            self.conn.execute(
                f"UPDATE {SCHEMA}.brains SET chunker = %s, chunk_size = %s, chunk_overlap = %s WHERE id = %s",
                (chunker, chunk_size, chunk_overlap, brain.id),
            )

    def _delete_brain_rows(self, brain: Brain) -> None:
        self.keywords.forget()
        # Roots, documents and chunks go with the brain row (ON DELETE CASCADE).
        self.conn.execute(f"DROP TABLE IF EXISTS {vec_table(brain)}")
        self.conn.execute(f"DELETE FROM {SCHEMA}.brains WHERE id = %s", (brain.id,))

    def _rename_brain(self, brain: Brain, name: str) -> None:
        self.conn.execute(f"UPDATE {SCHEMA}.brains SET name = %s WHERE id = %s", (name, brain.id))

    def touch_brain(self, brain: Brain, roots: Iterable[str]) -> None:
        """Record the end of a run (time, roots), then build the HNSW index if it is now due."""
        with self.transaction():
            self.conn.execute(f"UPDATE {SCHEMA}.brains SET last_indexed = %s WHERE id = %s", (time.time(), brain.id))
            with self.conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {SCHEMA}.roots(brain_id, path) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    [(brain.id, root) for root in roots],
                )
        with self._translated(f"indexing the vectors of brain {brain.name!r} in {self.url}"):
            self._build_index(brain)

    def add_roots(self, brain: Brain, roots: Iterable[str]) -> None:
        """Record roots of a brain whose run has not finished (`last_indexed` stays as it is)."""
        with self.transaction(), self.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {SCHEMA}.roots(brain_id, path) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(brain.id, root) for root in roots],
            )

    def roots(self, brain: Brain) -> list[str]:
        rows = self.execute(
            f'SELECT path FROM {SCHEMA}.roots WHERE brain_id = %s ORDER BY path COLLATE "C"', (brain.id,)
        )
        return [r[0] for r in rows]

    # -- documents ----------------------------------------------------------------------------

    def documents(self, brain: Brain) -> dict[tuple[str, str], StoredDocument]:
        rows = self.execute(
            f"SELECT id, root, relative_path, size, mtime_ns, checksum, line_offset, reading FROM {SCHEMA}.documents"
            " WHERE brain_id = %s",
            (brain.id,),
        )
        return {(r[1], r[2]): StoredDocument(*r) for r in rows}

    def chunk_by_id(self, brain: Brain, chunk_id: str) -> Chunk | None:
        """The chunk with this id (`<checksum[:12]>-<index>`), if the brain holds it."""
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS} FROM {SCHEMA}.chunks c WHERE c.brain_id = %s AND c.chunk_id = %s"
            " ORDER BY c.id LIMIT 1",
            (brain.id, chunk_id),
        )
        return chunk_from_row(brain, rows[0]) if rows else None

    def document_chunks(self, brain: Brain, relative_path: str) -> list[Chunk]:
        """A document's chunks in order (none when the brain has no such path)."""
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS} FROM {SCHEMA}.chunks c WHERE c.brain_id = %s AND c.relative_path = %s"
            " ORDER BY c.chunk_index, c.id",
            (brain.id, relative_path),
        )
        return [chunk_from_row(brain, row) for row in rows]

    def document_paths(self, brain: Brain) -> list[str]:
        """The relative paths of the brain's documents, sorted (by code point, as SQLite sorts)."""
        rows = self.execute(
            f'SELECT DISTINCT relative_path COLLATE "C" FROM {SCHEMA}.documents WHERE brain_id = %s'
            ' ORDER BY relative_path COLLATE "C"',
            (brain.id,),
        )
        return [r[0] for r in rows]

    def update_document_stat(self, doc_id: int, size: int, mtime_ns: int) -> None:
        with self.transaction():
            self.conn.execute(
                f"UPDATE {SCHEMA}.documents SET size = %s, mtime_ns = %s WHERE id = %s", (size, mtime_ns, doc_id)
            )

    def chunk_texts(self, doc_id: int) -> list[tuple[int, str]]:
        """A document's chunks as (row id, text), in order: what `set_locations` locates."""
        rows = self.execute(
            f"SELECT id, content FROM {SCHEMA}.chunks WHERE document_id = %s ORDER BY chunk_index, id", (doc_id,)
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def set_locations(self, doc_id: int, line_offset: int, locations: Sequence[tuple[int, Location | None]]) -> None:
        """Store the locations of a document's chunks (by row id) and its line offset, in one transaction."""
        columns = [location_columns(location) for _, location in locations]
        with self.transaction():
            self.conn.execute(
                f"UPDATE {SCHEMA}.chunks c SET line_start = t.ls, line_end = t.le, span_kind = t.sk, span_label = t.sl"
                " FROM unnest(%s::bigint[], %s::integer[], %s::integer[], %s::text[], %s::text[])"
                " AS t(id, ls, le, sk, sl) WHERE c.id = t.id",
                (
                    [rowid for rowid, _ in locations],
                    [c[0] for c in columns],
                    [c[1] for c in columns],
                    [c[2] for c in columns],
                    [c[3] for c in columns],
                ),
            )
            self.conn.execute(f"UPDATE {SCHEMA}.documents SET line_offset = %s WHERE id = %s", (line_offset, doc_id))

    def write_document(self, brain: Brain, doc: DocumentRecord) -> None:
        """Replace one document's chunks, vectors and keyword rows in a single transaction."""
        root, relative_path, chunks, vectors = doc.root, doc.relative_path, doc.chunks, doc.vectors
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        headers, hashes = doc.header_list(), doc.hash_list()
        size, mtime_ns, checksum = doc.size, doc.mtime_ns, doc.checksum
        windows = [np.ascontiguousarray(np.atleast_2d(vector), dtype=np.float32) for vector in vectors]
        self.keywords.forget()
        with self.transaction():
            row = self.conn.execute(
                f"SELECT id FROM {SCHEMA}.documents WHERE brain_id = %s AND root = %s AND relative_path = %s",
                (brain.id, root, relative_path),
            ).fetchone()
            if row is not None:
                self._delete_document_rows(brain, [row[0]])
            row = self.conn.execute(
                f"INSERT INTO {SCHEMA}.documents(brain_id, root, relative_path, size, mtime_ns, checksum, indexed_at,"
                " line_offset, reading) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (brain.id, root, relative_path, size, mtime_ns, checksum, time.time(), doc.line_offset, doc.reading),
            ).fetchone()
            assert row is not None
            doc_id = row[0]
            if not chunks:
                return
            # Ascending ids in chunk order: knn breaks ties in this (insertion) order.
            ids = sorted(
                r[0]
                for r in self.conn.execute(
                    f"SELECT nextval('{SCHEMA}.chunks_id_seq') FROM generate_series(1, %s)", (len(chunks),)
                )
            )
            with self.conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {SCHEMA}.chunks(id, brain_id, document_id, chunk_id, relative_path, chunk_index,"
                    " content, checksum, content_hash, header, vectors, tsv, line_start, line_end, span_kind, span_label)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s, %s, %s, %s)",
                    [
                        (
                            chunk_pk,
                            brain.id,
                            doc_id,
                            chunk.id,
                            chunk.relative_path,
                            chunk.chunk_index,
                            chunk.content,
                            chunk.checksum,
                            bytes(digest),
                            header,
                            len(matrix),
                            tsvector_text(header, chunk.content),
                            *location_columns(chunk.location),
                        )
                        for chunk_pk, chunk, header, digest, matrix in zip(ids, chunks, headers, hashes, windows)
                    ],
                )
                cur.executemany(
                    f"INSERT INTO {vec_table(brain)}(chunk_id, win, embedding) VALUES (%s, %s, %s)",
                    [
                        (chunk_pk, window, vector)
                        for chunk_pk, matrix in zip(ids, windows)
                        for window, vector in enumerate(matrix)
                    ],
                )

    def _delete_document_rows(self, brain: Brain, doc_ids: Sequence[int]) -> None:
        self.keywords.forget()
        # Vector rows have no foreign key to chunks: one would make every chunk deletion probe
        # every brain's vector table. They are deleted here, then chunks go with their documents.
        ids = [int(doc_id) for doc_id in doc_ids]
        self.conn.execute(
            f"DELETE FROM {vec_table(brain)} WHERE chunk_id IN"
            f" (SELECT id FROM {SCHEMA}.chunks WHERE document_id = ANY(%s::bigint[]))",
            (ids,),
        )
        self.conn.execute(
            f"DELETE FROM {SCHEMA}.documents WHERE id = ANY(%s::bigint[]) AND brain_id = %s", (ids, brain.id)
        )

    def delete_documents(self, brain: Brain, doc_ids: Sequence[int]) -> None:
        if not doc_ids:
            return
        with self.transaction():
            self._delete_document_rows(brain, doc_ids)

    def forget_roots(self, brain: Brain, roots: Sequence[str], doc_ids: Sequence[int]) -> None:
        with self.transaction():
            if doc_ids:
                self._delete_document_rows(brain, doc_ids)
            with self.conn.cursor() as cur:
                cur.executemany(
                    f"DELETE FROM {SCHEMA}.roots WHERE brain_id = %s AND path = %s",
                    [(brain.id, root) for root in roots],
                )

    def _windows(self, brain: Brain, chunk_pks: Sequence[int]) -> dict[int, list[np.ndarray]]:
        """The vectors of these chunks, each chunk's in window order."""
        found: dict[int, list[np.ndarray]] = {}
        rows = self.execute(
            f"SELECT chunk_id, embedding FROM {vec_table(brain)} WHERE chunk_id = ANY(%s::bigint[]) ORDER BY chunk_id, win",
            (list(chunk_pks),),
            binary=True,
        )
        for chunk_pk, vector in rows:
            found.setdefault(chunk_pk, []).append(vector)
        return found

    def _export_rows(self, doc: StoredDocument) -> list[Any]:
        return self.execute(
            f"SELECT {EXPORT_COLUMNS} FROM {SCHEMA}.chunks c WHERE c.document_id = %s {EXPORT_ORDER}", (doc.id,)
        )

    def _export_windows(self, brain: Brain, rows: Sequence[Sequence[Any]]) -> dict[int, list[np.ndarray]]:
        return self._windows(brain, [row[0] for row in rows])

    # -- vectors ------------------------------------------------------------------------------

    def reusable_vectors(self, brain: Brain, hashes: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors already stored in this brain for chunks with these exact texts.

        The brain pins one model, so a vector stored for the same text is the vector the model
        would compute again: renames, duplicates and unchanged paragraphs cost no embedding.
        """
        wanted = list({bytes(h) for h in hashes})
        if not wanted:
            return {}
        rows = self.execute(
            f"SELECT DISTINCT ON (content_hash) content_hash, id, vectors FROM {SCHEMA}.chunks"
            " WHERE brain_id = %s AND content_hash = ANY(%s::bytea[]) ORDER BY content_hash, id",
            (brain.id, wanted),
        )
        windows = self._windows(brain, [row[1] for row in rows])
        found: dict[bytes, np.ndarray] = {}
        for digest, chunk_pk, count in rows:
            stored = windows.get(chunk_pk, [])
            if not stored or len(stored) != count:
                continue  # incomplete: embed it again
            found[bytes(digest)] = stored[0] if count == 1 else np.stack(stored)
        return found

    def vector_count(self, brain: Brain) -> int:
        """Chunks with a vector in the brain (window vectors beyond a chunk's first not counted)."""
        ((count,),) = self.execute(f"SELECT count(*) FROM {vec_table(brain)} WHERE win = 0")
        return int(count)

    def _indexed_search(self, brain: Brain, rows: int) -> bool:
        """True when a search for `rows` rows goes through the HNSW index (see the module doc)."""
        if self.exact or brain.dim > HNSW_MAX_DIM or rows > HNSW_MAX_EF_SEARCH:
            return False
        return self._has_index(brain) and self._large(brain)

    def _approximate(self, brain: Brain, query: np.ndarray, k: int) -> dict[int, float] | None:
        """chunk id -> distance of (about) the k nearest chunks through the HNSW index; None
        when the index returned fewer than k chunks and an exact scan must answer instead.

        In a multi-vector brain the index is asked for MULTI_VECTOR_OVERFETCH times k rows (each
        chunk counts once, at its best window), and again for more while fewer than k chunks
        came back. The planner is told not to scan the table: the choice between an exact scan
        and the index is made here, by size, not by its estimates.
        """
        limit = k * (MULTI_VECTOR_OVERFETCH if brain.multi_vector else 1)
        sql = nearest_sql(vec_table(brain), approximate=True, multi_vector=brain.multi_vector, filtered=False)
        while True:
            self.conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_seqscan', 'off', true)",
                (str(max(HNSW_EF_SEARCH, limit)),),
            )
            rows = self.conn.execute(sql, {"q": query, "limit": limit}).fetchall()
            best: dict[int, float] = {}
            for chunk_pk, distance in rows:
                if chunk_pk not in best or distance < best[chunk_pk]:
                    best[chunk_pk] = distance
            if len(best) >= k:
                return best
            if len(rows) < limit or limit >= HNSW_MAX_EF_SEARCH:
                return None
            limit = min(limit * 2, HNSW_MAX_EF_SEARCH)

    def _exact(self, brain: Brain, query: np.ndarray, k: int, pattern: str | None) -> dict[int, float]:
        sql = nearest_sql(
            vec_table(brain), approximate=False, multi_vector=brain.multi_vector, filtered=pattern is not None
        )
        params = {"q": query, "limit": k, "brain": brain.id, "pattern": pattern}
        return {chunk_pk: distance for chunk_pk, distance in self.conn.execute(sql, params).fetchall()}

    def _chunks(self, brain: Brain, chunk_pks: Sequence[int]) -> dict[int, Chunk]:
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS} FROM {SCHEMA}.chunks c WHERE c.id = ANY(%s::bigint[])", (list(chunk_pks),)
        )
        return {row[0]: chunk_from_row(brain, row) for row in rows}

    def knn(self, brain: Brain, query: np.ndarray, k: int, *, path_glob: str | None = None) -> list[Hit]:
        """The k nearest chunks by cosine similarity; a path filter is applied inside the search.

        A filtered search is always exact: the HNSW index would return its nearest rows first and
        the filter would then keep too few of them (pgvector 0.6 cannot resume the walk).
        """
        if k <= 0:
            return []
        pattern = glob_regex(path_glob) if path_glob else None
        if path_glob and pattern is None:
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        with self._translated(f"reading {self.url}"), self.conn.transaction():
            best = None
            rows = k * (MULTI_VECTOR_OVERFETCH if brain.multi_vector else 1)
            if pattern is None and self._indexed_search(brain, rows):
                best = self._approximate(brain, vector, k)
            if best is None:
                best = self._exact(brain, vector, k, pattern)
        if not best:
            return []
        chunks = self._chunks(brain, list(best))
        # Closest first; equal distances in insertion order, so results are deterministic.
        ranked = sorted(best.items(), key=lambda r: (r[1], r[0]))[:k]
        return [Hit(chunks[pk], score=1.0 - float(distance)) for pk, distance in ranked if pk in chunks]

    def hits_by_id(self, brain: Brain, query: np.ndarray, ids: Sequence[int]) -> dict[int, Hit]:
        """These chunks as hits, scored by cosine similarity with `query` like knn() scores them
        (a multi-vector chunk as its best window)."""
        if not ids:
            return {}
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        rows = self.execute(
            f"SELECT {CHUNK_COLUMNS}, min(v.embedding <=> %s) FROM {SCHEMA}.chunks c"
            f" JOIN {vec_table(brain)} v ON v.chunk_id = c.id WHERE c.id = ANY(%s::bigint[]) AND c.brain_id = %s"
            " GROUP BY c.id",
            (vector, [int(i) for i in ids], brain.id),
        )
        return {row[0]: Hit(chunk_from_row(brain, row), score=1.0 - float(row[N_CHUNK_COLUMNS])) for row in rows}

    # -- keywords -----------------------------------------------------------------------------

    def keyword_search(self, brain: Brain, query: str, k: int, *, path_glob: str | None = None) -> list[int]:
        """Chunk ids ranked by BM25 for the terms of `query`, best first (see keyword_scores)."""
        return [chunk_pk for chunk_pk, _ in self.keyword_scores(brain, query, k, path_glob=path_glob)]

    def keyword_scores(
        self, brain: Brain, query: str, k: int, *, path_glob: str | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) for the terms of `query`, best first (`postgres_keywords.KeywordIndex`)."""
        pattern = glob_regex(path_glob) if path_glob else None
        if path_glob and pattern is None:
            return []
        return self.keywords.scores(brain, query, k, pattern)

    def term_counts(self, brain: Brain, words: Sequence[str], cap: int) -> tuple[int, dict[str, int]]:
        """(the brain's chunks, how many of them hold each of `words`, counted up to `cap`;
        `postgres_keywords.KeywordIndex.term_counts`)."""
        return self.keywords.term_counts(brain, words, cap)

    # -- sentence vectors (trimming) ----------------------------------------------------------

    def cached_sentence_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        wanted = list({bytes(h) for h in hashes})
        if not wanted:
            return {}
        rows = self.execute(
            f"SELECT text_hash, vector FROM {SCHEMA}.sentence_cache WHERE model = %s AND text_hash = ANY(%s::bytea[])",
            (model, wanted),
        )
        return {bytes(h): np.frombuffer(bytes(v), dtype=np.float32) for h, v in rows}

    def _insert_cached(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        # In hash order, so that two writers of overlapping sets cannot wait on each other.
        unique = dict(sorted((bytes(h), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for h, v in items))
        self.conn.execute(
            f"INSERT INTO {SCHEMA}.sentence_cache(model, text_hash, vector)"
            " SELECT %s, h, v FROM unnest(%s::bytea[], %s::bytea[]) AS t(h, v) ORDER BY h ON CONFLICT DO NOTHING",
            (model, list(unique), list(unique.values())),
        )

    def cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        if not items:
            return
        with self.transaction():
            self._insert_cached(model, items)

    def try_cache_sentence_vectors(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> bool:
        """Cache if the rows can be locked within CACHE_LOCK_TIMEOUT_MS; a reader never waits on
        an index run (nor fails for a role that may only read)."""
        import psycopg

        if not items:
            return True
        if self.read_only:
            return False
        try:
            with self.transaction():
                self.conn.execute(f"SET LOCAL lock_timeout = '{int(CACHE_LOCK_TIMEOUT_MS)}ms'")
                self._insert_cached(model, items)
            return True
        except StoreError as exc:
            refused = (
                psycopg.errors.LockNotAvailable,
                psycopg.errors.InsufficientPrivilege,
                psycopg.errors.ReadOnlySqlTransaction,
            )
            if isinstance(exc.__cause__, refused):
                return False
            raise

    # -- reporting ----------------------------------------------------------------------------

    def stats(self, brain: Brain) -> BrainStats:
        ((documents, chunks, keyword_rows),) = self.execute(
            f"SELECT (SELECT count(*) FROM {SCHEMA}.documents WHERE brain_id = %(b)s),"
            f" count(*), count(tsv) FROM {SCHEMA}.chunks WHERE brain_id = %(b)s",
            {"b": brain.id},
        )
        vectors = self.vector_count(brain)  # chunks with vectors (a multi-vector chunk counts once)
        return BrainStats(brain, self.roots(brain), int(documents), int(chunks), vectors, int(keyword_rows))

    def size_bytes(self) -> int:
        """Tables of the locallens schema with their indexes and TOAST data."""
        ((total,),) = self.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (SCHEMA,),
        )
        return int(total)

    def free_bytes(self) -> int:
        """0: PostgreSQL reuses the space of deleted rows itself (autovacuum), and measuring it
        needs the pgstattuple extension, which a shared server may not have. `status` therefore
        reports no space to reclaim, which is what a user can act on from here."""
        return 0

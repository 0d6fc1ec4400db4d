"""The SQLite store's schema, as named upgrade steps.

`PRAGMA user_version` holds the number of the last step a database has been through. Opening a
database for writing runs every later step, in order, inside one write transaction, so a database
is always at one step or the next, never between two. A fresh database runs them all. A step must
therefore work both on a database written by an older release and on an empty one (where there
are no brains yet), and must never be edited once released: a new change is a new step.

Adding a step: write `_step_name(conn)` (it gets the apsw connection, inside the write
transaction, and uses nothing of the store), append `Migration(n + 1, "name", _step_name)` to
MIGRATIONS, and add a test that opens a database written at step n (see tests/test_search.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from locallens.text import NO_SPACE_CLASS

if TYPE_CHECKING:
    import apsw

# The layout of a brain's vec0 table, which the steps create too: PARTITIONS partitions by
# `rowid % PARTITIONS` (a large brain is then scanned by several threads at once), vectors stored
# in blocks of VEC_CHUNK_SIZE per partition (sqlite-vec's default is 1024: with 4 partitions a
# small brain would preallocate 4,096 vectors; scan speed is the same).
PARTITIONS = 4
VEC_CHUNK_SIZE = 256


@dataclass(frozen=True)
class Migration:
    version: int  # user_version once this step has run
    name: str
    apply: Callable[[apsw.Connection], None]
    # The step rewrites every vector: the store then checkpoints the WAL into the database file,
    # because reads from the WAL are not memory-mapped.
    rewrites_vectors: bool = False


_TABLES = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS brains(
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    chunker TEXT NOT NULL,
    chunk_size INTEGER NOT NULL,
    chunk_overlap INTEGER NOT NULL,
    created_at REAL NOT NULL,
    last_indexed REAL
);
CREATE TABLE IF NOT EXISTS roots(
    brain_id INTEGER NOT NULL REFERENCES brains(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    PRIMARY KEY(brain_id, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY,
    brain_id INTEGER NOT NULL REFERENCES brains(id) ON DELETE CASCADE,
    root TEXT NOT NULL,
    relative_path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    indexed_at REAL NOT NULL,
    UNIQUE(brain_id, root, relative_path)
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    brain_id INTEGER NOT NULL,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_id TEXT NOT NULL,
    relative_path TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    content TEXT NOT NULL,
    checksum TEXT NOT NULL,
    content_hash BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document_id);
CREATE INDEX IF NOT EXISTS chunks_brain_hash ON chunks(brain_id, content_hash);
CREATE INDEX IF NOT EXISTS chunks_brain_path ON chunks(brain_id, relative_path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    content, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TABLE IF NOT EXISTS sentence_cache(
    model TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(model, text_hash)
) WITHOUT ROWID;
"""


def vec_table(brain_id: int) -> str:
    """The name of a brain's vec0 table."""
    return f"vec_{brain_id}"


def create_vec_table(conn: apsw.Connection, brain_id: int, dim: int) -> None:
    """A brain's vec0 table, partitioned, for vectors of `dim` floats compared by cosine."""
    conn.execute(
        f"CREATE VIRTUAL TABLE {vec_table(brain_id)} USING vec0(part INTEGER PARTITION KEY,"
        f" embedding float[{dim}] distance_metric=cosine, chunk_size={VEC_CHUNK_SIZE})"
    )


def _add_column(conn: apsw.Connection, table: str, column: str, definition: str) -> None:
    """Add a column where it is missing: a database that already has it is left as is."""
    if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


def _drop_fts_triggers(conn: apsw.Connection) -> None:
    """Drop the triggers that keep `chunks_fts` in step with `chunks` (before the table is replaced)."""
    conn.execute("DROP TRIGGER IF EXISTS chunks_fts_insert")
    conn.execute("DROP TRIGGER IF EXISTS chunks_fts_delete")


def _index_chunks_with_headers(conn: apsw.Connection) -> None:
    """A new `chunks_fts` (columns `content`, `header`) filled from `chunks`, with its triggers.

    The triggers index each chunk's header with its text as chunks are written or deleted; the
    'rebuild' command then reads every existing chunk into the index.
    """
    conn.execute(
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN"
        " INSERT INTO chunks_fts(rowid, content, header) VALUES (new.id, new.content, new.header); END"
    )
    conn.execute(
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN"
        " INSERT INTO chunks_fts(chunks_fts, rowid, content, header)"
        " VALUES ('delete', old.id, old.content, old.header); END"
    )
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def _tables(conn: apsw.Connection) -> None:
    """Step 1, the first release: brains, roots, documents, chunks, their FTS5 index, the cache.

    Each brain's vectors live in a vec0 table of their own, created with the brain (a vec0
    column has a fixed dimension, so brains of different models live side by side).
    """
    conn.execute(_TABLES)


def _partitioned_vectors(conn: apsw.Connection) -> None:
    """Step 2: each brain's vec0 table split into partitions by `rowid % PARTITIONS`.

    A large brain is then scanned by several threads at once. vec0 tables cannot be renamed
    (their shadow tables keep their names), so the vectors go through a temporary plain table.
    """
    brains: list[tuple[int, int]] = [
        (int(i), int(d)) for i, d in conn.execute("SELECT id, dim FROM brains ORDER BY id")
    ]
    for brain_id, dim in brains:
        table = vec_table(brain_id)
        columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
        if any(column[1] == "part" for column in columns):
            continue  # already partitioned (a brain created by this release)
        conn.execute("CREATE TEMP TABLE v1_vectors(id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
        conn.execute(f"INSERT INTO v1_vectors SELECT rowid, embedding FROM {table}")
        conn.execute(f"DROP TABLE {table}")
        create_vec_table(conn, brain_id, dim)
        conn.execute(
            f"INSERT INTO {table}(rowid, part, embedding)"
            f" SELECT id, id % {PARTITIONS}, embedding FROM v1_vectors ORDER BY id"
        )
        conn.execute("DROP TABLE v1_vectors")


def _chunk_headers(conn: apsw.Connection) -> None:
    """Step 3: chunk headers and several vectors per chunk: brain settings, chunk columns, FTS `header`.

    - `brains.headers`: chunks are embedded with their header (document title and section
      headings, `locallens.headers`), which also goes into the keyword index.
    - `brains.multi_vector`: a chunk longer than the model's window keeps one vector per window
      instead of their mean. Both are 0 for brains written before this step, which keep their
      vectors as they were computed; `index --rebuild` re-embeds with the current defaults.
    - `chunks.header`: the header of the chunk ('' when the brain's `headers` is off).
    - `chunks.vectors`: how many vectors the chunk has (window j > 0 has rowid
      `id + (j << 40)` in the brain's vec0 table, see `sqlite.WINDOW_SHIFT`).
    - `chunks_fts` gains a `header` column: it is rebuilt in place with the options it had
      (tokenizer included), and its triggers index the header with the text.
    """
    import re

    _add_column(conn, "brains", "headers", "INTEGER NOT NULL DEFAULT 0")
    _add_column(conn, "brains", "multi_vector", "INTEGER NOT NULL DEFAULT 0")
    _add_column(conn, "chunks", "header", "TEXT NOT NULL DEFAULT ''")
    _add_column(conn, "chunks", "vectors", "INTEGER NOT NULL DEFAULT 1")
    ((sql,),) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchall()
    if "header" in {row[1] for row in conn.execute("PRAGMA table_info(chunks_fts)")}:
        return
    with_header, count = re.subn(r"fts5\(\s*content\s*,", "fts5(content, header,", str(sql), count=1, flags=re.I)
    if not count:
        raise RuntimeError(f"unexpected chunks_fts definition: {sql}")
    _drop_fts_triggers(conn)
    conn.execute("DROP TABLE chunks_fts")
    conn.execute(with_header)
    _index_chunks_with_headers(conn)


# The scripts written without spaces (`text.NO_SPACE_CLASS`) as a GLOB character class;
# `sqlite.NO_SPACE_RUN` is the same class as a regular expression (tests/test_cjk.py checks that
# they agree).
_HAS_NO_SPACE_SCRIPT = f"'*[{NO_SPACE_CLASS}]*'"


def _trigram_index(conn: apsw.Connection) -> None:
    """Step 4: `chunks_trigram`, an FTS5 trigram index of the chunks in scripts written without spaces.

    FTS5's unicode61 tokenizer (`chunks_fts`) reads a run of Han, kana or Hangul as one word, so
    no word inside it can be found. The trigram tokenizer indexes every 3-character substring.
    It holds only the chunks (text or header) with a character of NO_SPACE_CLASS: a trigram index
    of all text costs ~3.6 bytes per character (sample_docs/: +18% of the database, more than
    the vectors on long documents) and brings nothing to space-separated text, which chunks_fts
    already finds. Because it holds a subset of the rows, it is contentless with
    `contentless_delete=1` rather than an external-content table on `chunks` (whose 'rebuild' and
    content check assume every row is indexed): the delete trigger deletes by rowid, a no-op for a
    chunk that was never indexed. Filled here from the existing chunks; the triggers keep it in
    step with `chunks` afterwards (documents rewritten or deleted, brains deleted or rebuilt).
    """
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_trigram USING fts5("
        "content, header, content='', contentless_delete=1, tokenize='trigram')"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS chunks_trigram_insert AFTER INSERT ON chunks"
        f" WHEN new.content GLOB {_HAS_NO_SPACE_SCRIPT} OR new.header GLOB {_HAS_NO_SPACE_SCRIPT} BEGIN"
        " INSERT INTO chunks_trigram(rowid, content, header) VALUES (new.id, new.content, new.header); END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS chunks_trigram_delete AFTER DELETE ON chunks BEGIN"
        " DELETE FROM chunks_trigram WHERE rowid = old.id; END"
    )
    conn.execute(
        "INSERT INTO chunks_trigram(rowid, content, header) SELECT id, content, header FROM chunks"
        f" WHERE content GLOB {_HAS_NO_SPACE_SCRIPT} OR header GLOB {_HAS_NO_SPACE_SCRIPT}"
    )


def _stemmed_keywords(conn: apsw.Connection) -> None:
    """Step 5: `chunks_fts` with English stemming (FTS5 `porter` over `unicode61`).

    A question says "configure" where the text says "configuring" or "configuration"; without
    stemming keyword search missed it. Measured (docs/decisions.md#hybrid-search): SciFact
    keyword-only nDCG@10 0.651 → 0.689. Stemming applies the English suffix rules to every word;
    other languages' words are stemmed by the same rules in the text and in the query alike, so
    identical words still match. The table is rebuilt in place with its columns and the options
    of step 3 (`content`, `header`, external content `chunks`), the tokenizer replaced, and
    refilled from the chunks. `locallens.stemming.porter_stem` is the same stemmer in Python
    (for the PostgreSQL store and for reading this index's vocabulary).
    """
    _drop_fts_triggers(conn)
    conn.execute("DROP TABLE IF EXISTS chunks_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(content, header, content='chunks', content_rowid='id',"
        " tokenize='porter unicode61 remove_diacritics 2')"
    )
    _index_chunks_with_headers(conn)


def _chunk_locations(conn: apsw.Connection) -> None:
    """Step 6: where each chunk is in its file: its lines, or its page, slide, sheet, message, cell.

    docs/behaviour.md#locations.

    - `chunks.line_start`, `chunks.line_end`: the chunk's first and last line in the file (1-based,
      inclusive) for documents whose text keeps the file's lines (plain text, markdown, ...).
    - `chunks.span_kind`, `chunks.span_label`: otherwise, the part of the file it comes from
      (`page` and `3`, `slide` and `4`, ...); all four are NULL when it is not known.
    - `documents.line_offset`: the blank lines before the text (text line 1 is file line
      `line_offset + 1`); NULL marks a document stored before this step, whose chunks have no
      location yet.

    The store holds no document text, so the locations of existing chunks are not computed here:
    the next `index` run reads each such document once, and, when its text is unchanged, aligns
    the stored chunk texts with it and fills the columns. Nothing is re-chunked or re-embedded.
    Until then those chunks are cited by their number (`path#chunk-N`), as before.
    """

    _add_column(conn, "chunks", "line_start", "INTEGER")
    _add_column(conn, "chunks", "line_end", "INTEGER")
    _add_column(conn, "chunks", "span_kind", "TEXT")
    _add_column(conn, "chunks", "span_label", "TEXT")
    _add_column(conn, "documents", "line_offset", "INTEGER")


# The formats whose chunks step 6 had no location for, and that readers now locate: HTML and
# e-mail by their source lines, EPUB by chapter file and lines, Word and OpenDocument text by
# paragraph (docs/formats.md).
FORMATS_LOCATED_SINCE_STEP_7 = (".html", ".htm", ".eml", ".mbox", ".epub", ".docx", ".odt")


def located_formats_where(path_column: str) -> str:
    """SQL (both backends) true for a document of `FORMATS_LOCATED_SINCE_STEP_7`."""
    return "(" + " OR ".join(f"lower({path_column}) LIKE '%{ext}'" for ext in FORMATS_LOCATED_SINCE_STEP_7) + ")"


def _format_locations(conn: apsw.Connection) -> None:
    """Step 7: HTML, e-mail, EPUB, Word and OpenDocument chunks get locations on the next index.

    Their readers now say where each chunk is (source lines, chapter file and lines, paragraph
    number), which step 6 could not. This step only marks such documents whose chunks have no
    location at all as "not located yet" (`documents.line_offset` NULL): the next `index` run
    reads each once and, when its text is unchanged, fills the chunks' location columns without
    re-chunking or re-embedding anything (docs/behaviour.md#locations). No schema change.
    """
    conn.execute(
        "UPDATE documents SET line_offset = NULL WHERE line_offset IS NOT NULL AND "
        + located_formats_where("relative_path")
        + " AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = documents.id"
        " AND (c.line_start IS NOT NULL OR c.span_kind IS NOT NULL))"
    )


def _reading_versions(conn: apsw.Connection) -> None:
    """Step 8: each document records the reader and chunking versions that made it (`documents.reading`).

    "html_page/2+chunks/1": `locallens.indexer.document_reading`. When a reader's version or the
    chunking version is raised, the next `index` run reads again every document an older one
    made, its file unchanged or not, and writes it anew (vectors reused where a chunk's embedded
    text is the same). '' marks a document stored before this step: version 1 of its reader and
    of chunking, so only formats whose reader changed since are read again.
    """
    _add_column(conn, "documents", "reading", "TEXT NOT NULL DEFAULT ''")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "tables", _tables),
    Migration(2, "partitioned_vectors", _partitioned_vectors, rewrites_vectors=True),
    Migration(3, "chunk_headers", _chunk_headers),
    Migration(4, "trigram_index", _trigram_index),
    Migration(5, "stemmed_keywords", _stemmed_keywords),
    Migration(6, "chunk_locations", _chunk_locations),
    Migration(7, "format_locations", _format_locations),
    Migration(8, "reading_versions", _reading_versions),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def pending(version: int) -> list[Migration]:
    """The steps a database at `version` has not been through yet, in order."""
    return [step for step in MIGRATIONS if step.version > version]


def upgrade(conn: apsw.Connection, version: int) -> list[Migration]:
    """Run every step after `version`, in order; the caller holds the write transaction."""
    steps = pending(version)
    for step in steps:
        step.apply(conn)
        conn.execute(f"PRAGMA user_version={step.version}")
    return steps

"""The storage package's shared types: where an index lives, what a store holds, what it is given.

A leaf of the package (it imports only `locallens.domain`): the face (`locallens.storage`) and
every backend (`storage.sqlite`, `storage.postgres`) build on it, and the backends never import
each other or the face.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from locallens.domain import Location
from locallens.text import chords, is_chord, occurrences, scan_alternatives, shapes, symbols

if TYPE_CHECKING:
    import numpy as np

    from locallens.domain import Chunk

POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_SCHEMA = "locallens"  # the PostgreSQL schema that holds an index's tables
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
        # Written out, not `urlunsplit`: for a scheme it does not know, that drops an empty host
        # (`postgresql:///db?host=/run/pg` would print as `postgresql:/db?...`, `postgresql://`
        # as `postgresql:`).
        text = f"{parts.scheme}://{netloc}{parts.path}"
        return text + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")

    def __repr__(self) -> str:
        return f"PostgresURL({str(self)!r})"


DbLocation = Path | PostgresURL


def parse_db(value: str | Path, *, exact: bool = False) -> DbLocation:
    """A `--db` value as a location: a PostgreSQL URL, else a path (`~` expanded)."""
    text = str(value)
    if _URL.match(text.strip()):
        return PostgresURL(text.strip(), exact=exact)
    return Path(text).expanduser()


@dataclass(frozen=True, slots=True)
class Brain:
    id: int
    name: str
    model: str
    dim: int
    chunker: str
    chunk_size: int
    chunk_overlap: int
    created_at: float
    last_indexed: float | None
    headers: bool = False  # chunks embedded (and keyword-indexed) with their header
    multi_vector: bool = False  # long chunks keep one vector per model window

    @property
    def vec_table(self) -> str:
        return f"vec_{self.id}"


@dataclass(frozen=True, slots=True)
class BrainSettings:
    """What a new brain pins (a Brain's row but its id, name and times)."""

    model: str
    dim: int
    chunker: str
    chunk_size: int
    chunk_overlap: int
    headers: bool = False
    multi_vector: bool = False


@dataclass(frozen=True, slots=True)
class StoredDocument:
    id: int
    root: str
    relative_path: str
    size: int
    mtime_ns: int
    checksum: str
    # Blank lines before the text (docs/behaviour.md#locations); None: stored before chunk
    # locations existed, its chunks not located yet.
    line_offset: int | None = None
    # The reader and chunking versions that made the stored text and chunks ("html_page/2+chunks/1";
    # "": stored before readings were recorded), `indexer.read_as_now`.
    reading: str = ""


@dataclass(frozen=True, slots=True)
class BrainStats:
    brain: Brain
    roots: list[str]
    documents: int
    chunks: int
    vectors: int
    fts_rows: int


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One document as a store writes it (`write_document`) and reads it back whole
    (`export_documents`, for `locallens copy`): nothing needs re-embedding.

    `vectors[i]` is chunk i's vector (dim,), or a (windows, dim) matrix of its window vectors;
    `headers[i]` its header (keyword-indexed beside its text; None: no headers) and `hashes[i]`
    the `content_hash` of what was embedded for it (None: of its text). Each chunk's `location`
    is stored with it; `line_offset` is the document's (None: not located yet)."""

    root: str
    relative_path: str
    size: int
    mtime_ns: int
    checksum: str
    chunks: Sequence[Chunk]
    vectors: np.ndarray | Sequence[np.ndarray]
    headers: Sequence[str] | None = None
    hashes: Sequence[bytes] | None = None
    line_offset: int | None = 0
    reading: str = ""  # the reader and chunking versions that made the text and chunks

    def header_list(self) -> list[str]:
        return list(self.headers) if self.headers is not None else [""] * len(self.chunks)

    def hash_list(self) -> list[bytes]:
        if self.hashes is not None:
            return list(self.hashes)
        return [content_hash(chunk.content) for chunk in self.chunks]


def stored_location(line_start: Any, line_end: Any, span_kind: Any, span_label: Any) -> Location | None:
    """A chunk's location from its four columns (all NULL: not known, docs/behaviour.md#locations)."""
    if line_start is not None:  # span_kind "lines": the source lines of HTML or e-mail text
        end = int(line_end if line_end is not None else line_start)
        return Location(int(line_start), end, kind="lines" if span_kind == "lines" else "")
    if span_kind:
        return Location(kind=str(span_kind), label=str(span_label or ""))
    return None


def location_columns(location: Location | None) -> tuple[int | None, int | None, str | None, str | None]:
    """The four columns of a chunk's location (the inverse of `stored_location`)."""
    if location is None:
        return None, None, None, None
    return location.line_start, location.line_end, location.kind or None, location.label or None


def content_hash(text: str) -> bytes:
    """Key of the embedding reuse: sha256 of the exact text that is embedded."""
    return hashlib.sha256(text.encode("utf-8")).digest()


# Keyword search leaves out words found in more than this fraction of the chunks, from this many
# chunks in the database on (see Store._without_common_words).
COMMON_WORD_FRACTION = 0.2
KEYWORD_PRUNE_MIN_CHUNKS = 20_000
# A multi-vector brain's knn asks the vector table for this many times k rows (each chunk counts
# once, at its best window), and asks again for more while fewer than k distinct chunks came back.
MULTI_VECTOR_OVERFETCH = 3


# Symbols a question names ("$?", "<<<", "//"; `locallens.text.symbols`) and constructs it writes
# (`${#var}`, known by their shape `${#x}`; `locallens.text.shapes`) are in no word index: both
# stores find the chunks holding one by a scan (SQLite `instr`, PostgreSQL `strpos`; a shape's
# pieces as written, `${#` and `}`, then its words' shapes), only for a question naming one, rank
# them by BM25 over the occurrences (`symbol_ranking`) and fuse that ranking with the words' by
# reciprocal rank (`fused_rankings`).
# The scan reads every chunk's text, about 1.7 ms per 1,000 chunks (20,000 chunks of 1,400
# characters: 35 ms; docs/decisions.md#symbols-in-a-question): in a brain of more than
# SYMBOL_SCAN_MAX_CHUNKS chunks it is not made, and the question is searched by its words, its
# symbols still weighed by the answer stage.
KEYWORD_RRF_K = 60
SYMBOL_SCAN_MAX_CHUNKS = 20_000
# A key chord's scan tests several pieces per chunk (its notations, `text.chord_pieces`) and reads
# the many chunks holding one ("-d"): about 8-11 ms per 1,000 chunks (zsh-html, 2,005 chunks, 15-25
# ms; apache-html, 3,188, 20-35 ms), so it is made in brains of at most CHORD_SCAN_MAX_CHUNKS.
CHORD_SCAN_MAX_CHUNKS = 5_000
# BM25's parameters, FTS5's (the SQLite store's word index) values: PostgreSQL's word ranking
# (`postgres_keywords`) and both stores' symbol ranking compute BM25 with them.
BM25_K1 = 1.2
BM25_B = 0.75


def scanned_symbols(query: str) -> list[str]:
    """What a store scans its chunks for, for `query`: its symbols, its constructs' shapes and
    its key chords (`text.chords`: "^R" for "Ctrl-R", which a manual may write "C-r")."""
    return [*symbols(query), *shapes(query), *chords(query)]


def scanned_within(asked: Sequence[str], total: int) -> list[str]:
    """Of `asked` (`scanned_symbols`), what a scan of a brain of `total` chunks looks for: nothing
    past SYMBOL_SCAN_MAX_CHUNKS, no key chord past CHORD_SCAN_MAX_CHUNKS."""
    if total > SYMBOL_SCAN_MAX_CHUNKS:
        return []
    return [term for term in asked if total <= CHORD_SCAN_MAX_CHUNKS or not is_chord(term)]


def scan_condition(asked: Sequence[str], holds: str) -> tuple[str, list[str]]:
    """The SQL condition of a scan for `asked` (`scanned_symbols`) and its parameters, in order:
    a chunk holding all the pieces of one of their alternatives as written
    (`text.scan_alternatives`: a symbol itself, a shape's `${#` and `}`, one piece of a chord's
    notations), `holds` being the store's test of one piece
    ("instr(c.content, ?) > 0"). `symbol_rows` then counts the occurrences."""
    groups = [pieces for term in asked for pieces in scan_alternatives(term)]
    condition = " OR ".join("(" + " AND ".join(holds for _ in pieces) + ")" for pieces in groups)
    return condition, [piece for pieces in groups for piece in pieces]


def symbol_rows(rows: Sequence[tuple[int, str]], asked: Sequence[str]) -> list[tuple[int, int, list[int]]]:
    """(chunk id, length, occurrences of each of `asked`) of the scanned `rows` (chunk id, text)
    that hold one, for `symbol_ranking`."""
    out = []
    for chunk_id, content in rows:
        counts = [occurrences(content, term) for term in asked]
        if any(counts):
            out.append((chunk_id, len(content), counts))
    return out


def symbol_ranking(rows: Sequence[tuple[int, int, Sequence[int]]], total: int, k: int) -> list[tuple[int, float]]:
    """(chunk id, score) best first, of `rows` (chunk id, its length in characters, how often it
    holds each symbol) among `total` chunks: BM25 with each symbol a term (idf from the rows
    holding it; lengths against the rows' mean length, which a scan that reads only the matching
    rows has). Equal scores in id order."""
    if not rows or k <= 0:
        return []
    held = [sum(1 for _, _, counts in rows if counts[i] > 0) for i in range(len(rows[0][2]))]
    idf = [max(math.log((total - n + 0.5) / (n + 0.5) + 1.0), 1e-6) for n in held]
    mean_length = sum(length for _, length, _ in rows) / len(rows) or 1.0
    scored = []
    for chunk_id, length, counts in rows:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean_length)
        score = sum(w * tf * (BM25_K1 + 1) / (tf + norm) for w, tf in zip(idf, counts) if tf > 0)
        scored.append((chunk_id, score))
    return sorted(scored, key=lambda item: (-item[1], item[0]))[:k]


def fused_rankings(rankings: Sequence[list[tuple[int, float]]], k: int) -> list[tuple[int, float]]:
    """One ranking of several (best first each) by reciprocal rank, 1 / (KEYWORD_RRF_K + rank)
    summed; a single non-empty ranking as it is."""
    present = [ranking for ranking in rankings if ranking]
    if len(present) <= 1:
        return present[0] if present else []
    fused: dict[int, float] = {}
    for ranking in present:
        for rank, (chunk_id, _) in enumerate(ranking, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (KEYWORD_RRF_K + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]

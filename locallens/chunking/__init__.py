"""Chunking: Document text → chunk texts → Chunk records (docs/behaviour.md#chunking).

Strategies behind one small protocol, each in its own module and registered by name
(`register_chunker`; `get_chunker` builds one by name):

* ``paragraph`` (default): paragraphs packed into token-bounded chunks with overlap.
* ``percentile``: semantic breakpoints at a percentile of neighbour distances.
* ``maxmin``: Max-Min semantic grouping of sentences.

A registered name is what `--chunker` takes once it is also in `config.CHUNKERS` (the list
`--help` shows without importing this package; a test checks that the two agree).

A chunker only turns text into chunk texts; `make_chunks` turns those into `Chunk` records with
the stable ids of docs/behaviour.md#chunk-ids, so every strategy numbers and names its chunks the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from locallens.chunking.maxmin import MaxMinChunker, is_garbage_chunk
from locallens.chunking.paragraph import ParagraphTokenChunker, split_paragraphs
from locallens.chunking.percentile import Encode, PercentileChunker
from locallens.config import CHUNKERS, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from locallens.domain import Chunk, Document
from locallens.errors import UsageError

# What chunking makes of a document's text, numbered: raise it with any change that gives some
# document other chunks, chunk headers or locations (a chunker, `locallens.headers`,
# `locallens.locations`). Each document is stored with it (`indexer.document_reading`), and the
# next `index` run re-chunks every document chunked by an earlier version, re-embedding only
# chunks whose embedded text changed (`scripts/reading_digests.py` checks it is raised).
# 2: a chunk that opens on a heading is no longer under the sections that heading closes.
CHUNKING_VERSION = 2

__all__ = [
    "CHUNKING_VERSION",
    "STRATEGIES",
    "Chunker",
    "ChunkerSpec",
    "Encode",
    "MaxMinChunker",
    "ParagraphTokenChunker",
    "PercentileChunker",
    "chunker_names",
    "get_chunker",
    "is_garbage_chunk",
    "make_chunks",
    "register_chunker",
    "split_paragraphs",
]

STRATEGIES = CHUNKERS  # the names `--chunker` takes


@runtime_checkable
class Chunker(Protocol):
    def chunk(self, text: str) -> list[str]:
        """The chunk texts of `text`, in document order."""
        ...

    def chunk_many(self, texts: Sequence[str]) -> list[list[str]]:
        """`chunk` of each of `texts`; the semantic chunkers embed all their sentences at once."""
        ...


def make_chunks(document: Document, brain: str, texts: Iterable[str]) -> list[Chunk]:
    """Chunk records for `document` (docs/behaviour.md#chunk-ids).

    Contents are stripped and empty ones dropped *before* numbering, so the survivors are
    numbered 0..n-1 without gaps, and the id is ``f"{checksum[:12]}-{chunk_index}"``: the same
    bytes give the same ids; one changed byte changes the checksum and so every id of the file.
    """
    contents = [stripped for text in texts if (stripped := text.strip())]
    prefix = document.checksum[:12]
    return [
        Chunk(
            id=f"{prefix}-{chunk_index}",
            brain=brain,
            relative_path=document.relative_path,
            chunk_index=chunk_index,
            content=content,
            checksum=document.checksum,
        )
        for chunk_index, content in enumerate(contents)
    ]


@dataclass(frozen=True, slots=True)
class ChunkerSpec:
    """How to build a registered chunker: `build(chunk_size, chunk_overlap, encode, **options)`.

    A semantic chunker (`needs_encoder`) compares sentences and gets `encode` (sentences →
    L2-normalised rows); a chunker that takes no options raises TypeError on any, which
    `get_chunker` reports as a usage error."""

    build: Callable[..., Chunker]
    needs_encoder: bool = False


_CHUNKERS: dict[str, ChunkerSpec] = {}


def register_chunker(name: str, build: Callable[..., Chunker], *, needs_encoder: bool = False) -> None:
    """Make `get_chunker(name)` build `build(chunk_size, chunk_overlap, encode, **options)`."""
    _CHUNKERS[name] = ChunkerSpec(build, needs_encoder)


def chunker_names() -> tuple[str, ...]:
    """The registered chunkers, in registration order."""
    return tuple(_CHUNKERS)


def get_chunker(
    strategy: str,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    encode: Encode | None = None,
    **options: Any,
) -> Chunker:
    """The registered chunker called `strategy` (case-insensitive).

    `chunk_size` and `chunk_overlap` configure the paragraph chunker; the semantic chunkers keep
    their own defaults (docs/behaviour.md#semantic-chunking), which `options` may override (e.g.
    ``max_tokens=250``), and need `encode` (sentences → L2-normalised rows, e.g.
    ``Embedder.encode``).
    """
    name = strategy.strip().lower()
    spec = _CHUNKERS.get(name)
    if spec is None:
        raise UsageError(f"unknown chunking strategy {strategy!r}: choose one of {', '.join(_CHUNKERS)}")
    if spec.needs_encoder and encode is None:
        raise UsageError(f"the {name} chunker needs an embedding model to compare sentences")
    try:
        return spec.build(chunk_size, chunk_overlap, encode, **options)
    except TypeError as exc:  # an option the chunker does not have
        raise UsageError(f"bad option for the {name} chunker: {exc}") from exc


def _paragraph(chunk_size: int, chunk_overlap: int, encode: Encode | None, **options: Any) -> Chunker:
    if options:
        raise UsageError(f"the paragraph chunker takes no options besides size and overlap (got {sorted(options)})")
    return ParagraphTokenChunker(chunk_size, chunk_overlap)


def _percentile(chunk_size: int, chunk_overlap: int, encode: Encode, **options: Any) -> Chunker:
    return PercentileChunker(encode, **options)


def _maxmin(chunk_size: int, chunk_overlap: int, encode: Encode, **options: Any) -> Chunker:
    return MaxMinChunker(encode, **options)


register_chunker("paragraph", _paragraph)
register_chunker("percentile", _percentile, needs_encoder=True)
register_chunker("maxmin", _maxmin, needs_encoder=True)

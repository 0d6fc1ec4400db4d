"""The plain data that flows along the pipeline. No behaviour beyond trivial derived values."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Rendering:
    """A question's English rendering (`locallens.crosslang`): its text, and how it was made
    (`apertium`: Apertium's translator; `gloss`: word by word; `wording`: an English question in
    documentation's words, "folder" as "directory")."""

    text: str
    via: str
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)  # its embedding


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """Where a stretch of Document.text comes from in a file that has no useful line numbers."""

    start: int  # character offset into Document.text, inclusive
    end: int  # character offset, exclusive
    # "page" (PDF, OCR'd images), "slide" (pptx/odp), "sheet" (xlsx/ods; label "Sheet1" or
    # "Sheet1!5" for one row), "cell" (ipynb), "para" (docx/odt: the Nth paragraph); "lines"
    # (HTML, eml, mbox: the file's own lines, in `line_start`/`line_end`, label ""); "chapter"
    # (epub: the chapter file inside the book as label, its lines in `line_start`/`line_end`)
    kind: str
    label: str  # what a person reads after '#kind=' in a citation: "3", "4", "Budget", ...
    line_start: int | None = None  # "lines" and "chapter": the first source line, 1-based
    line_end: int | None = None  # the last source line, inclusive


@dataclass(frozen=True, slots=True)
class Document:
    """One file under an indexed root, decoded and normalised (docs/behaviour.md#documents)."""

    root: str  # absolute, resolved root the file was found under
    relative_path: str  # POSIX-style path relative to root
    text: str  # UTF-8 text, "\r\n" -> "\n", stripped
    checksum: str  # sha256 hex of `text`
    size: int  # bytes on disk when read
    mtime_ns: int  # st_mtime_ns when read
    # What the file's format says about its structure (empty for plain text and markdown, whose
    # title and headings are read from `text`): an HTML <title> or PDF metadata title, and the
    # HTML h1-h6 headings as (level, text) in document order.
    title: str = ""
    headings: tuple[tuple[int, str], ...] = ()
    # Where stretches of `text` come from (pages, slides, sheet rows, messages, cells), in order
    # and non-overlapping; empty for text formats.
    spans: tuple[SourceSpan, ...] = ()
    # True when `text`'s lines ARE the file's lines (md, txt, rst, org after only BOM/line-end
    # normalisation), so a chunk's line range can be cited as path:START-END.
    line_mapped: bool = False
    # Lines of the file before the first line of `text` (the blank lines the strip removed): text
    # line 1 is file line `line_offset + 1`. Only meaningful when `line_mapped`.
    line_offset: int = 0
    # The reader that made `text` and its version ("html_page/2", `readers.registry.reading_of`):
    # stored with the document (with the chunking version), so a newer reader reads it again.
    reading: str = ""


@dataclass(frozen=True, slots=True)
class Location:
    """Where a chunk is in its file (docs/behaviour.md#locations): lines, or a span's label."""

    line_start: int | None = None  # first line in the file, 1-based (line_mapped documents)
    line_end: int | None = None  # last line, inclusive
    # The SourceSpan kind ("page", "slide", ...) for other formats; "" for a text file's lines;
    # "lines" for the source lines of text that is not the file's (HTML, e-mail)
    kind: str = ""
    label: str = ""  # the span's label, or "first-last" when the chunk runs over several spans

    def cite(self, path: str) -> str | None:
        """`path:START-END` (`path:LINE` for one line), `path#kind=label`; None when it says neither."""
        if self.line_start is not None:
            end = self.line_end if self.line_end is not None else self.line_start
            return f"{path}:{self.line_start}" if end == self.line_start else f"{path}:{self.line_start}-{end}"
        if self.kind and self.label:
            return f"{path}#{self.kind}={self.label}"
        return None


@dataclass(frozen=True, slots=True)
class FileStat:
    """A file the walker found, before it is read: enough to decide whether it changed."""

    root: str
    relative_path: str
    path: str  # absolute path
    size: int
    mtime_ns: int
    # The file's identity (st_dev, st_ino; 0 when unknown): one file reached by two paths (a
    # symlink, a hard link, a bind mount) is one document.
    dev: int = field(default=0, compare=False)
    ino: int = field(default=0, compare=False)


# Skip reasons the walker and the readers share, spelled once so they and the tests agree.
REASON_PERMISSION = "permission denied"
REASON_NOT_REGULAR = "not a regular file"
REASON_DISAPPEARED = "file disappeared"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that was not indexed, and why. `error` marks faults (exit 7) vs. plain policy skips."""

    path: str
    reason: str
    error: bool = False
    # Set when the path is another way to a file or folder already found (a symlink, a hard link):
    # the path it duplicates. Such a path is not a document, and one stored under it is removed.
    same_as: str = ""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document, the unit that is embedded, searched and cited (docs/behaviour.md#chunk-ids)."""

    id: str  # f"{checksum[:12]}-{chunk_index}"
    brain: str
    relative_path: str
    chunk_index: int
    content: str
    checksum: str  # checksum of the whole document
    location: Location | None = None  # None: unknown (a brain indexed before locations, HTML)

    def citation(self) -> str:
        """How a person reads where this chunk is: `path:12-20`, `path#page=3`, else `path#chunk-1`
        (docs/behaviour.md#locations)."""
        cited = self.location.cite(self.relative_path) if self.location is not None else None
        return cited or f"{self.relative_path}#chunk-{self.chunk_index}"


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved chunk with its relevance score (cosine similarity, higher is better)."""

    chunk: Chunk
    score: float
    rerank_score: float | None = None

    @property
    def content(self) -> str:
        return self.chunk.content

    @property
    def id(self) -> str:
        return self.chunk.id

    def citation(self) -> str:
        """The chunk's citation for a person (`Chunk.citation`)."""
        return self.chunk.citation()


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class TrimmedHit:
    """One chunk after trimming, with everything needed to explain the decision."""

    hit: Hit  # the output: `original` with only `chunk.content` replaced (when trimmed)
    original: Hit  # the hit as it came in
    sentences: list[str]  # the body's sentences (prefix excluded), in order
    scores: list[float]  # cosine similarity of each sentence with the query
    kept: list[int]  # indices into `sentences`, ascending
    trimmed: bool  # True when `hit.content` differs from `original.content`

    @property
    def dropped(self) -> int:
        """How many sentences were removed."""
        return len(self.sentences) - len(self.kept)


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """What `retrieve()` returns (docs/behaviour.md#token-accounting)."""

    hits: list[Hit]
    tokens_before: int  # estimate round(1.3 * words) of the untrimmed hits
    tokens_in_context: int  # same estimate after trimming (== tokens_before when not trimming)
    tiktoken_before: int  # exact tiktoken counts beside the estimate
    tiktoken_in_context: int
    trimmed: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    trim_details: list[TrimmedHit] = field(default_factory=list)  # per chunk, when trimmed
    query_vector: np.ndarray | None = None  # the question's embedding, reused by the answer check
    # The question's English rendering when it was searched in English too (`locallens.crosslang`).
    rendering: Rendering | None = None

    @property
    def reduction_pct(self) -> float:
        """How much smaller the context is after trimming, in percent of the untrimmed (0 when empty)."""
        if not self.tokens_before:
            return 0.0
        return 100.0 * (self.tokens_before - self.tokens_in_context) / self.tokens_before


def document_of(path: str) -> str:
    """One document however many formats it is kept in: the path without its extension, so that
    the same document side by side in two formats (`a2x.1.txt` and its rendering `a2x.1.html`,
    `report.docx` and `report.pdf`) is one file to the per-file cap (`retrieval.diversify`: it
    shares the places one file gets, instead of two copies of its text taking four of the five)
    and one file a broad question names (`broad.named_document`)."""
    return str(PurePosixPath(path).with_suffix(""))

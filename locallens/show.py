"""`locallens show`: jump from a citation to the file (docs/behaviour.md#show).

`show PATH:LINE`, `show PATH:START-END`, `show PATH#page=3` (any span kind) or `show N` (source N
of the last answer) becomes a `Region`: the lines (or the span's text) of one file under a root of
some brain of the database, with the cited lines marked. HTML and e-mail are cited by their source
lines and shown as they are in the file (markup and all, what an editor shows at that line); an
EPUB chapter the same, from its file inside the book (`book.epub#chapter=OEBPS/ch2.xhtml:12-20`);
Word and OpenDocument paragraphs (`#para=12-15`) are printed numbered. Only files under a brain's
roots are ever read, through the same size cap and decoding as indexing. The CLI only renders
the region.

The last answer is remembered by `ask` in `$LOCALLENS_HOME/last-answer.json` (mode 0600, in the
0700 data folder, replaced atomically): the database and brain it came from and, per source, its
citation, absolute path, location and cited lines. Nothing else reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locallens.config import DEFAULT_SHOW_CONTEXT, PRIVATE_FILE_MODE, locallens_home, make_private_dir
from locallens.domain import Document, FileStat, Skipped
from locallens.errors import LocallensError, NoIndexError, UsageError
from locallens.locations import parse_chapter_label, span_labels
from locallens.storage import DbLocation, IndexStore, open_store

__all__ = [
    "Region",
    "Target",
    "last_answer_path",
    "parse_target",
    "remember_answer",
    "show_source",
    "show_target",
]

LAST_ANSWER_FILE = "last-answer.json"
_LINES = re.compile(r"^(?P<path>.+):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SPAN = re.compile(r"^(?P<path>.+)#(?P<kind>[a-z]+)=(?P<label>.+)$")
# The span kinds a citation can name (`path#kind=label`), tried before `path:LINE` because an EPUB
# label ends in lines (`#chapter=OEBPS/ch2.xhtml:12-20`).
_SPAN_KINDS = frozenset({"page", "slide", "sheet", "cell", "para", "chapter", "message"})


@dataclass(frozen=True, slots=True)
class Target:
    """What `show` was asked for: a path and lines, or a path and a span (`#page=3`)."""

    path: str
    line_start: int | None = None
    line_end: int | None = None
    kind: str = ""
    label: str = ""


@dataclass(slots=True)
class Region:
    """What `show` prints: numbered lines of a file (or a span's text), the cited ones marked."""

    citation: str  # the header: `path:START-END`, `path#page=3`
    path: Path  # absolute, for the terminal's hyperlink
    lines: list[tuple[int | None, str]]  # (line number or None for span text, text)
    marked: set[int] = field(default_factory=set)  # line numbers to mark
    notes: list[str] = field(default_factory=list)  # said on stderr


def parse_target(text: str) -> Target:
    """`path:12`, `path:12-20`, `path#page=3`, or a bare `path` (its first lines)."""
    text = text.strip()
    if not text:
        raise UsageError("show needs PATH:LINE, PATH#page=N or a source number")
    span = _SPAN.match(text)
    if span and span["kind"] in _SPAN_KINDS and not Path(text).expanduser().exists():
        return Target(span["path"], kind=span["kind"], label=span["label"])
    if (match := _LINES.match(text)) and not Path(text).expanduser().exists():
        start = int(match["start"])
        end = int(match["end"]) if match["end"] else start
        if start < 1 or end < start:
            raise UsageError(f"bad line range in {text!r}: lines count from 1, START-END with END >= START")
        return Target(match["path"], start, end)
    if (match := _SPAN.match(text)) and not Path(text).expanduser().exists():
        return Target(match["path"], kind=match["kind"], label=match["label"])
    return Target(text)


# -- which file -------------------------------------------------------------------------------


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _roots(store: IndexStore) -> list[Path]:
    roots: list[Path] = []
    for brain in store.brains():
        for root in store.roots(brain):
            with contextlib.suppress(OSError):
                roots.append(Path(root).resolve())
    return roots


def _resolve(path: str, roots: Sequence[Path]) -> Path:
    """The file `path` names, under one of `roots`: as given (absolute, or from the current
    folder), else relative to a root (as citations print it). Never a file outside the roots."""
    given = Path(path).expanduser()
    if given.is_absolute():
        candidates = [given]
    else:  # a root that is a single file is its own relative path's parent
        candidates = [given, *(root / path if root.is_dir() else root.parent / path for root in roots)]
    outside: Path | None = None
    for candidate in candidates:
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if not real.is_file():
            continue
        if any(_under(real, root) for root in roots):
            return real
        outside = outside or real
    if outside is not None:
        raise UsageError(
            f"{path} is not under the roots of any brain of this database: show only reads indexed folders"
        )
    raise UsageError(f"no such file: {path}")


def _read(path: Path) -> tuple[str, Document]:
    """The file as indexing reads it: (the text with its line ends as "\\n", the Document)."""
    from locallens.readers import DEFAULT_MAX_BYTES, read_document

    st = path.stat()
    document = read_document(
        FileStat(str(path.parent), path.name, str(path), st.st_size, st.st_mtime_ns), DEFAULT_MAX_BYTES
    )
    if isinstance(document, Skipped):  # too large, binary, unreadable, ...
        raise UsageError(f"cannot show {path}: {document.reason}")
    if _source_lined(document):  # HTML, e-mail: the file's lines, as the reader numbered them
        return _source_text(_bytes(path)), document
    if not document.line_mapped:
        return "", document
    # A text format whose lines are the file's: the file's own lines, as an editor shows them (the
    # AsciiDoc reader makes its markup lines plain, `== Options` a `## Options`, moving none), up
    # to its last line that holds something, as the document's text is stripped.
    return _source_text(_bytes(path)).rstrip(), document


def _bytes(path: Path) -> bytes:
    """The file's bytes, never more than the size cap (`_read` has checked it already)."""
    from locallens.readers import DEFAULT_MAX_BYTES

    with path.open("rb") as fh:
        return fh.read(DEFAULT_MAX_BYTES)


def _source_lined(document: Document) -> bool:
    """Whether the document's chunks are cited by the lines of its source (HTML, e-mail)."""
    return any(span.kind == "lines" for span in document.spans)


def _source_text(data: bytes) -> str:
    """A source file's text, its lines numbered as the readers number them (`source_lines`)."""
    from locallens.readers.base import ReadSkip, decode_text, source_lines

    try:
        text = decode_text(data)
    except ReadSkip:  # e-mail is bytes: an 8-bit body in another charset shows as best it can
        text = data.decode("utf-8", "replace")
    return source_lines(text)


# -- regions ----------------------------------------------------------------------------------


def _line_region(
    display: str, path: Path, text: str, start: int, end: int, marked: Iterable[int], context: int
) -> Region:
    lines = text.split("\n")
    if start > len(lines):
        raise UsageError(f"{display} has {len(lines)} line(s); line {start} is out of range")
    end = min(end, len(lines))
    first = max(1, start - context)
    last = min(len(lines), end + context)
    citation = f"{display}:{start}" if start == end else f"{display}:{start}-{end}"
    return Region(
        citation=citation,
        path=path,
        lines=[(n, lines[n - 1]) for n in range(first, last + 1)],
        marked={n for n in marked if start <= n <= end} or set(range(start, end + 1)),
    )


def _span_region(display: str, path: Path, document: Document, kind: str, label: str) -> Region:
    spans = [span for span in document.spans if span.kind == kind]
    if not spans:
        raise UsageError(f"{display} has no {kind}s to show")
    labels = [span.label for span in spans]
    named = span_labels(label, labels)
    if named is None:
        raise UsageError(f"{display} has no {kind} {label} (it has {labels[0]} to {labels[-1]})")
    chosen = spans[labels.index(named[0]) : labels.index(named[1]) + 1]
    if kind == "para":  # numbered as cited: `[12] text`
        text = "\n".join(f"[{span.label}] {document.text[span.start : span.end]}" for span in chosen)
    else:
        text = "\n\n".join(document.text[span.start : span.end] for span in chosen)
    return Region(citation=f"{display}#{kind}={label}", path=path, lines=[(None, line) for line in text.split("\n")])


def _chapter_region(display: str, path: Path, document: Document, label: str, context: int) -> Region:
    """An EPUB location: the lines of the chapter file inside the book, as the file has them; a
    chunk that runs into the next chapters shows each chapter's cited lines under its name."""
    from locallens.readers.base import ReadSkip
    from locallens.readers.safety import checked_zip, read_member

    chapters = list(dict.fromkeys(span.label for span in document.spans if span.kind == "chapter"))
    parsed = parse_chapter_label(label)
    if parsed is None or parsed[0] not in chapters or parsed[2] not in chapters:
        known = f" (it has {chapters[0]} to {chapters[-1]})" if chapters else ""
        raise UsageError(f"{display} has no chapter {label}{known}: cite it as {display}#chapter=FILE:LINE")
    first, start, last, end = parsed
    try:
        book = checked_zip(_bytes(path), "EPUB")
        texts = {
            name: _source_text(read_member(book, name, "EPUB"))
            for name in chapters[chapters.index(first) : chapters.index(last) + 1]
        }
    except ReadSkip as skip:
        raise UsageError(f"cannot show {display}: {skip.reason}") from None
    if first == last:
        region = _line_region(f"{display}#chapter={first}", path, texts[first], start, end, (), context)
        region.citation = f"{display}#chapter={label}"
        return region
    region = Region(citation=f"{display}#chapter={label}", path=path, lines=[])
    for name, text in texts.items():
        lines = text.split("\n")
        low = start if name == first else 1
        high = min(end, len(lines)) if name == last else len(lines)
        region.lines.append((None, f"── {name}"))
        region.lines.extend((n, lines[n - 1]) for n in range(low, high + 1))
    region.marked = {n for n, _ in region.lines if n is not None}
    return region


def show_target(db: DbLocation, target: Target, context: int = DEFAULT_SHOW_CONTEXT) -> Region:
    """The region `target` names, in a file under a root of some brain of `db`."""
    with open_store(db) as store:
        roots = _roots(store)
    path = _resolve(target.path, roots)
    text, document = _read(path)
    display = target.path
    if target.kind == "chapter":
        return _chapter_region(display, path, document, target.label, context)
    if target.kind:
        return _span_region(display, path, document, target.kind, target.label)
    if not (document.line_mapped or _source_lined(document)):
        kinds = sorted({span.kind for span in document.spans})
        hint = f"; cite it as {display}#{kinds[0]}=N" if kinds else ""
        raise UsageError(f"{display} has no lines to show{hint}")
    if target.line_start is None:  # a bare path: its first lines, nothing marked
        region = _line_region(display, path, text, 1, 1 + 2 * context, (), 0)
        region.marked = set()
        region.citation = display
        return region
    return _line_region(display, path, text, target.line_start, target.line_end or target.line_start, (), context)


# -- the last answer --------------------------------------------------------------------------


def last_answer_path() -> Path:
    return locallens_home() / LAST_ANSWER_FILE


def _files(db: DbLocation, brain: str, sources: Sequence[dict[str, Any]]) -> list[str | None]:
    """The absolute path of each source's file (None when the store cannot say)."""
    found: dict[tuple[str, str], str] = {}
    try:
        with open_store(db) as store:
            stored = store.find_brain(brain)
            if stored is not None:
                for doc in store.documents(stored).values():
                    key = (doc.relative_path, doc.checksum[:12])
                    found.setdefault(key, os.path.join(doc.root, *doc.relative_path.split("/")))
    except LocallensError:
        pass  # a server's answer over a database this machine does not have: paths stay relative
    return [found.get((str(s.get("path", "")), str(s.get("id", "")).rsplit("-", 1)[0])) for s in sources]


def cited_lines(data: dict[str, Any]) -> dict[int, list[tuple[int, int]]]:
    """The file lines each source's printed sentences come from, by source number."""
    cited: dict[int, list[tuple[int, int]]] = {}
    for claim in data.get("claims") or []:
        if claim.get("supported") and claim.get("source") and claim.get("line_start") is not None:
            span = (int(claim["line_start"]), int(claim.get("line_end") or claim["line_start"]))
            if span not in cited.setdefault(int(claim["source"]), []):
                cited[int(claim["source"])].append(span)
    return {n: _merged(spans) for n, spans in cited.items()}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` sorted, those that overlap as one: two sentences of lines 6-8 and 8 are lines 6-8."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def remember_answer(db: DbLocation, brain: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """Remember `ask`'s answer for `show N` (privately) and return its sources with their files.

    Best effort: an answer is never lost because it could not be remembered.
    """
    cited = cited_lines(data)
    given = list(data.get("sources") or [])
    files = _files(db, brain, given)
    sources = [
        {
            "n": source.get("n"),
            "id": source.get("id"),
            "path": source.get("path"),
            "file": file,
            "chunk_index": source.get("chunk_index"),
            "citation": source.get("citation"),
            "line_start": source.get("line_start"),
            "line_end": source.get("line_end"),
            "span": source.get("span"),
            "cited": cited.get(int(source.get("n") or 0), []),
        }
        for source, file in zip(given, files)
    ]
    record = {"db": str(db), "brain": brain, "question": data.get("question"), "sources": sources}
    path = last_answer_path()
    with contextlib.suppress(OSError):
        make_private_dir(path.parent)
        fd, temp = tempfile.mkstemp(prefix=".last-answer.", dir=path.parent)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh, ensure_ascii=False)
            os.chmod(temp, PRIVATE_FILE_MODE)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    return [{**source, "file": file} for source, file in zip(given, files)]


def _recall() -> dict[str, Any]:
    path = last_answer_path()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError("no answer to show sources of yet: run `locallens ask QUESTION` first") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the last answer ({path}): {exc}; run `locallens ask` again") from None
    if not isinstance(record, dict) or not isinstance(record.get("sources"), list):
        raise UsageError(f"cannot read the last answer ({path}); run `locallens ask` again")
    return record


def show_source(number: int, context: int = DEFAULT_SHOW_CONTEXT) -> Region:
    """Source `number` of the last answer: its lines (or span) in its file, the cited lines marked."""
    from locallens.storage import parse_db

    record = _recall()
    sources = record["sources"]
    if not 1 <= number <= len(sources):
        raise UsageError(f"the last answer has {len(sources)} source(s); there is no source {number}")
    source = sources[number - 1]
    db = parse_db(str(record.get("db") or ""))
    try:
        with open_store(db) as store:
            roots = _roots(store)
    except NoIndexError:
        raise NoIndexError(f"the database of the last answer is gone: {record.get('db')}") from None
    path = _resolve(source.get("file") or str(source.get("path")), roots)
    text, document = _read(path)
    display = str(source.get("path"))
    notes = []
    if document.checksum[:12] != str(source.get("id", "")).rsplit("-", 1)[0]:
        notes.append(f"{display} changed since it was indexed; the cited lines may have moved (run `locallens index`)")
    span = source.get("span")
    if source.get("line_start") is not None and (document.line_mapped or _source_lined(document)):
        marked = [n for start, end in source.get("cited") or [] for n in range(int(start), int(end) + 1)]
        region = _line_region(display, path, text, int(source["line_start"]), int(source["line_end"]), marked, context)
    elif isinstance(span, dict) and span.get("kind") == "chapter":
        region = _chapter_region(display, path, document, str(span.get("label", "")), context)
    elif isinstance(span, dict) and span.get("kind"):
        region = _span_region(display, path, document, str(span["kind"]), str(span.get("label", "")))
    else:
        raise UsageError(
            f"source {number} ({source.get('citation') or display}) has no location in the index:"
            " run `locallens index` to locate it, then ask again"
        )
    region.notes.extend(notes)
    return region

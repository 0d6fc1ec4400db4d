"""Read one walked file into a `Document`: size cap, stable read, sniffing, decoding, HTML and PDF
text, normalisation and checksum.

`read_document(stat)` reads one file once, sniffs and decodes it, extracts the text of HTML and
PDF files and normalises it into a `Document`, or returns a `Skipped` naming the reason. It never
raises for a bad file: a bad file is a `Skipped`, and the run goes on.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import math
import os
import re
import stat as stat_mod
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from locallens.config import DEFAULT_MAX_FILE_MB
from locallens.domain import Document, FileStat, Skipped, SourceSpan
from locallens.walk import REASON_DISAPPEARED, REASON_NOT_REGULAR, REASON_PERMISSION, _oserror_text

DEFAULT_MAX_BYTES: int = int(DEFAULT_MAX_FILE_MB * 1024 * 1024)

# How much of a file is sniffed for a NUL byte: a NUL there means a binary file.
SNIFF_BYTES = 8 * 1024

_MB = 1024 * 1024
_HTML_EXTENSIONS = (".html", ".htm")
_PDF_EXTENSIONS = (".pdf",)

_BOM_UTF8 = b"\xef\xbb\xbf"
_BOM_UTF16_LE = b"\xff\xfe"
_BOM_UTF16_BE = b"\xfe\xff"
_BOM_UTF32_LE = b"\xff\xfe\x00\x00"
_BOM_UTF32_BE = b"\x00\x00\xfe\xff"

REASON_BINARY = "binary file"
REASON_CHANGED = "file changed while being read"
REASON_PDF_NO_TEXT = "PDF has no extractable text"


def sha256_text(text: str) -> str:
    """SHA-256 hex of the UTF-8 bytes of `text`: the document checksum."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_text(text: str) -> str:
    """Line ends as "\\n" ("\\r\\n" and a lone "\\r", old Mac style, too), then strip."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


class _Skip(Exception):
    """Internal: carries a Skipped out of the decoding helpers."""

    def __init__(self, reason: str, error: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


def _format_mb(n: int, round_up: bool) -> str:
    """Bytes as MB for a message: one decimal, rounded so that "N MB > cap M MB" always reads true."""
    value = n / _MB
    if value >= 0.1:
        scaled = value * 10
        value = (math.ceil(scaled) if round_up else math.floor(scaled)) / 10
        text = f"{value:.1f}"
    else:
        text = f"{value:.2g}"  # tiny caps (tests, odd configs) still show something non-zero
    return text[:-2] if text.endswith(".0") else text


def _too_large_reason(size: int, max_bytes: int) -> str:
    return (
        f"file too large ({_format_mb(size, True)} MB > cap {_format_mb(max_bytes, False)} MB; "
        "raise with --max-file-mb)"
    )


def _read_bytes(fh: io.BufferedReader, limit: int) -> bytes:
    """Read at most `limit` bytes. A seam of its own so tests can change the file mid-read."""
    return fh.read(limit)


def read_document(stat: FileStat, max_bytes: int = DEFAULT_MAX_BYTES) -> Document | Skipped:
    """Read, sniff, decode, extract and normalise one file. Never raises for a bad file."""
    rel = stat.relative_path
    # Over the cap: decided from the stat alone, the file is never opened (memory stays bounded).
    if stat.size > max_bytes:
        return Skipped(rel, _too_large_reason(stat.size, max_bytes), error=False)
    try:
        data = _read_stable(stat, max_bytes)
        text, structure = _decode(data, os.path.splitext(rel)[1].lower())
    except _Skip as skip:
        return Skipped(rel, skip.reason, error=skip.error)
    line_offset = _leading_lines(text) if structure.line_mapped else 0
    text = normalise_text(text)
    return Document(
        root=stat.root,
        relative_path=rel,
        text=text,
        checksum=sha256_text(text),
        size=stat.size,
        mtime_ns=stat.mtime_ns,
        title=structure.title,
        headings=structure.headings,
        spans=structure.spans,
        line_mapped=structure.line_mapped,
        line_offset=line_offset,
    )


def _leading_lines(text: str) -> int:
    """The lines `normalise_text` strips from the start of `text`: where the document's line 1 is."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text[: len(text) - len(text.lstrip())].count("\n")


@dataclass(frozen=True, slots=True)
class _Structure:
    """What a format says beyond its text: a title, and headings as (level, text)."""

    title: str = ""
    headings: tuple[tuple[int, str], ...] = ()
    spans: tuple[SourceSpan, ...] = ()  # where each page's text lies (PDF)
    line_mapped: bool = False  # the text's lines are the file's lines (plain text, markdown)


def _one_line(text: str) -> str:
    """Whitespace runs as one space: a title or heading as it reads on one line."""
    return " ".join(text.split())


def _read_stable(stat: FileStat, max_bytes: int) -> bytes:
    """The file's bytes, read once, provided the file is the one the walker saw, before and after."""
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the walk, open() must not hang
        # waiting for a writer. It changes nothing for regular files.
        fd = os.open(stat.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise _Skip(REASON_DISAPPEARED) from None
    except PermissionError:
        raise _Skip(REASON_PERMISSION, error=True) from None
    except OSError as exc:
        raise _Skip(f"cannot open file: {_oserror_text(exc)}", error=True) from None
    try:
        fh = os.fdopen(fd, "rb")
    except Exception:
        os.close(fd)
        raise
    with fh:
        try:
            st = os.fstat(fh.fileno())
            if not stat_mod.S_ISREG(st.st_mode):
                raise _Skip(REASON_NOT_REGULAR)
            if st.st_size != stat.size or st.st_mtime_ns != stat.mtime_ns:
                # Changed between the walk and now: its previous version stays in the index.
                raise _Skip(REASON_CHANGED)
            # One byte past the expected size reveals a file that grew while we read it,
            # without ever holding more than the cap in memory.
            data = _read_bytes(fh, min(stat.size, max_bytes) + 1)
        except PermissionError:
            raise _Skip(REASON_PERMISSION, error=True) from None
        except OSError as exc:
            raise _Skip(f"cannot read file: {_oserror_text(exc)}", error=True) from None
    try:
        after = os.stat(stat.path)
    except FileNotFoundError:
        raise _Skip(REASON_DISAPPEARED) from None
    except OSError as exc:
        raise _Skip(f"cannot stat: {_oserror_text(exc)}", error=True) from None
    if len(data) != stat.size or after.st_size != stat.size or after.st_mtime_ns != stat.mtime_ns:
        raise _Skip(REASON_CHANGED)
    return data


def _decode(data: bytes, ext: str) -> tuple[str, _Structure]:
    if ext in _PDF_EXTENSIONS:
        # PDFs are binary by nature: no NUL sniffing, pypdf decides.
        return _pdf_text(data)
    text = _decode_text(data)
    if ext in _HTML_EXTENSIONS:
        return _html_text(normalise_text(text))
    return text, _Structure(line_mapped=True)


def _decode_text(data: bytes) -> str:
    """BOM-aware, strict decoding. Invalid bytes skip the file: never mojibake, never U+FFFD."""
    # UTF-32 first: its LE BOM starts with the UTF-16 LE BOM.
    for bom, codec in (
        (_BOM_UTF32_LE, "utf-32-le"),
        (_BOM_UTF32_BE, "utf-32-be"),
        (_BOM_UTF16_LE, "utf-16-le"),
        (_BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                name = codec[:6].upper()
                raise _Skip(f"invalid {name} at byte {exc.start + len(bom)}") from None
    if b"\x00" in data[:SNIFF_BYTES]:
        raise _Skip(REASON_BINARY)
    offset = 0
    if data.startswith(_BOM_UTF8):
        data = data[len(_BOM_UTF8) :]
        offset = len(_BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The offset is into the file as it lies on disk, so `xxd -s N` shows the culprit.
        raise _Skip(f"invalid UTF-8 at byte {exc.start + offset}") from None


# --- HTML ------------------------------------------------------------------------------------

# Elements whose content a reader never sees.
_HTML_HIDDEN = frozenset({"script", "style", "noscript", "template"})
# Elements that stand as paragraphs of their own: a blank line before and after.
_HTML_PARAGRAPH = frozenset(
    {
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "aside",
        "main",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "table",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "address",
        "details",
        "summary",
        "hr",
        "title",
        "body",
        "caption",
    }
)
# Elements that start a new line but not a new paragraph.
_HTML_LINE = frozenset({"li", "tr", "dt", "dd", "br", "option"})
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
# Table cells sit side by side on their row.
_HTML_CELL = frozenset({"td", "th"})


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page, with paragraphs as blank-line-separated blocks.

    Breaks are not written as they are met but owed (`pending` newlines, or one `space`) and
    paid only before the next visible text: so the indentation whitespace between `</tr>` and
    `<tr>` cannot turn into a stray blank line, and nothing dangles at the start or the end.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # entities decoded in handle_data
        self.parts: list[str] = []
        self.pending = 0  # newlines owed before the next text: 1 = new line, 2 = new paragraph
        self.space = False  # a separating space owed before the next text on the same line
        self.hidden_depth = 0  # inside <script>/<style>/... (nesting counted for <template>)
        self.in_head = False
        self.in_title = False
        self.pre_depth = 0
        self.title_parts: list[str] = []  # the text of <title>
        self.heading: tuple[int, list[str]] | None = None  # the <hN> being read: (N, its text)
        self.headings: list[tuple[int, str]] = []

    def _break(self, newlines: int) -> None:
        self.pending = max(self.pending, newlines)

    def _emit(self, text: str) -> None:
        if self.parts:  # nothing is owed before the very first text
            if self.pending:
                self.parts.append("\n" * self.pending)
            elif self.space:
                self.parts.append(" ")
        self.pending = 0
        self.space = False
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_HIDDEN:
            self.hidden_depth += 1
            return
        if tag == "head":
            self.in_head = True
            return
        if tag == "body":
            self.in_head = False  # tolerate a missing </head>
        if tag == "title":
            self.in_title = True
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.heading = (int(tag[1]), [])
        if tag == "pre":
            self.pre_depth += 1
        if tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE:
            self._break(1)
        elif tag in _HTML_CELL:
            self.space = True

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
            return
        if tag == "head":
            self.in_head = False
            return
        if tag == "title":
            self.in_title = False
        if self.heading is not None and tag == f"h{self.heading[0]}":
            heading = _one_line("".join(self.heading[1]))
            if heading:
                self.headings.append((self.heading[0], heading))
            self.heading = None
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag in _HTML_PARAGRAPH:
            self._break(2)
        elif tag in _HTML_LINE and tag != "br":  # <br> is void: only its start counts
            self._break(1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>: a start without a matching end (an empty <script/> hides nothing).
        if tag not in _HTML_HIDDEN:
            self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self.hidden_depth or (self.in_head and not self.in_title):
            return
        if self.in_title:
            self.title_parts.append(data)
        if self.heading is not None:
            self.heading[1].append(data)
        if self.pre_depth:
            if data:
                self._emit(data)  # preformatted: keep its spacing and line breaks
            return
        # HTML collapses runs of ASCII whitespace only: a no-break space (&nbsp;) is content.
        collapsed = _HTML_SPACE.sub(" ", data)
        inner = collapsed.strip(" ")
        if collapsed.startswith(" "):
            self.space = True  # "a <b>b</b>": the space before <b> still separates the words
        if inner:
            self._emit(inner)
            if collapsed.endswith(" "):
                self.space = True

    def text(self) -> str:
        # Only <pre> text can carry spaces at a line's ends; keep its indentation, drop the rest.
        lines = [line.rstrip(" \t") for line in "".join(self.parts).split("\n")]
        # Collapse runs of blank lines into one: paragraphs separated by exactly one blank line.
        out: list[str] = []
        for line in lines:
            if not line and (not out or not out[-1]):
                continue
            out.append(line)
        return "\n".join(out).strip("\n")


def _html_text(source: str) -> tuple[str, _Structure]:
    parser = _TextExtractor()
    try:
        parser.feed(source)
        parser.close()
    except Exception as exc:  # html.parser is lenient, but old versions assert on odd markup
        raise _Skip(f"cannot parse HTML: {exc}", error=True) from None
    return parser.text(), _Structure(_one_line("".join(parser.title_parts)), tuple(parser.headings))


# --- PDF -------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs and warns about every malformed object; a broken PDF is one Skipped, not noise."""
    logger = logging.getLogger("pypdf")
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.disabled = was_disabled


def _pdf_text(data: bytes) -> tuple[str, _Structure]:
    try:
        with _quiet_pypdf():
            from pypdf import PdfReader  # heavy-ish import, only when a PDF shows up

            reader = PdfReader(io.BytesIO(data))
            # Many PDFs are "encrypted" with an empty user password (permissions only).
            if reader.is_encrypted and not reader.decrypt(""):
                raise _Skip("cannot read PDF: encrypted (password required)", error=True)
            pages = [page.extract_text() or "" for page in reader.pages]
            title = _pdf_title(reader)
    except _Skip:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, KeyError, ValueError, ...)
        message = str(exc).splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise _Skip(f"cannot read PDF: {message}", error=True) from None
    # Pages are joined by a blank line, each span remembering its page (pages without text leave
    # no span, but the numbers of the others stay the PDF's own). Extraction can produce NULs and
    # lone surrogates; neither may reach the index. This is extractor debris, not the user's
    # bytes, so replacing it is not mojibake.
    parts: list[str] = []
    spans: list[SourceSpan] = []
    offset = 0
    for number, page in enumerate(pages, start=1):
        clean = normalise_text(page.replace("\x00", "").encode("utf-8", "replace").decode("utf-8"))
        if not clean:
            continue
        if parts:
            offset += 2  # the "\n\n" before this page
        spans.append(SourceSpan(offset, offset + len(clean), "page", str(number)))
        parts.append(clean)
        offset += len(clean)
    text = "\n\n".join(parts)
    if not text.strip():
        raise _Skip(REASON_PDF_NO_TEXT)
    return text, _Structure(title, spans=tuple(spans))


def _pdf_title(reader: Any) -> str:
    """The document information's /Title, when it has a readable one."""
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:  # a broken info dictionary costs the title, not the document
        return ""
    if not isinstance(title, str):
        return ""
    return _one_line(title.replace("\x00", "").encode("utf-8", "replace").decode("utf-8"))

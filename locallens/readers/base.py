"""What every reader shares: the result type, the skip signal, strict text decoding, and the
builder that lays a structured file out as text with its headings and source spans.

A reader is a module with `read(data: bytes, ext: str) -> Extracted`. It raises `ReadSkip` for
a file it cannot or must not read (the reason becomes the `Skipped`), and `MissingLibrary` when
the library its format needs is not installed. It never sees the file system: `read_document`
has already read the bytes once, under the size cap.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from locallens.domain import SourceSpan

_BOM_UTF8 = b"\xef\xbb\xbf"
_BOM_UTF16_LE = b"\xff\xfe"
_BOM_UTF16_BE = b"\xfe\xff"
_BOM_UTF32_LE = b"\xff\xfe\x00\x00"
_BOM_UTF32_BE = b"\x00\x00\xfe\xff"

# How much of a file is sniffed for a NUL byte: a NUL there means a binary file.
SNIFF_BYTES = 8 * 1024

REASON_BINARY = "binary file"
REASON_ENCRYPTED = "encrypted (password required)"


class ReadSkip(Exception):
    """A file the reader leaves out: `reason` is what the user reads; `error` counts as a fault."""

    def __init__(self, reason: str, error: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


class MissingLibrary(Exception):
    """The optional library a format needs is not installed (a counted skip naming the extra)."""

    def __init__(self, package: str, hint: str = "") -> None:
        super().__init__(package)
        self.package = package
        self.hint = hint  # the whole message, when installing the package alone is not enough


def require(module: str, package: str) -> ModuleType:
    """Import a format library on first use; `MissingLibrary(package)` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise MissingLibrary(package) from None


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a reader returns: the text and what the format says about its structure."""

    text: str
    title: str = ""
    headings: tuple[tuple[int, str], ...] = ()  # (level, text) in document order, found in `text`
    spans: tuple[SourceSpan, ...] = ()
    line_mapped: bool = False


def one_line(text: str) -> str:
    """Whitespace runs as one space: a title or heading as it reads on one line."""
    return " ".join(text.split())


def normalise_text(text: str) -> str:
    """Line ends as "\\n" ("\\r\\n" and a lone "\\r", old Mac style, too), then strip."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def source_lines(text: str) -> str:
    """A text file's line ends as "\\n", nothing stripped: its lines are numbered as the file's
    (what `path:LINE` citations of HTML and e-mail count, and `show` prints)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_extracted(text: str) -> str:
    """A library's output made safe to store: no NULs, no lone surrogates, normalised.

    Extraction can produce both; this is extractor debris, not the user's bytes, so replacing it
    is not mojibake."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return normalise_text(text)


def _clean_line(line: str) -> str:
    """One line of a block: cleaned like a block, its leading indentation kept."""
    line = line.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return line.replace("\r", " ").replace("\n", " ").rstrip()


def decode_text(data: bytes) -> str:
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
                raise ReadSkip(f"invalid {name} at byte {exc.start + len(bom)}") from None
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ReadSkip(REASON_BINARY)
    offset = 0
    if data.startswith(_BOM_UTF8):
        data = data[len(_BOM_UTF8) :]
        offset = len(_BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The offset is into the file as it lies on disk, so `xxd -s N` shows the culprit.
        raise ReadSkip(f"invalid UTF-8 at byte {exc.start + offset}") from None


def first_line(exc: BaseException) -> str:
    """An exception as one line for a skip reason (its class name when it says nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


@dataclass
class LibraryNoise:
    """The warnings a format library logged or raised while one file was read: counted, the
    first kept, none printed (`library_noise_captured`)."""

    count: int = 0
    first: str = ""

    def add(self, message: str) -> None:
        self.count += 1
        if not self.first:
            self.first = " ".join(message.split())[:200]

    def summary(self, library: str) -> str:
        """` (openpyxl warned 3 times, first: ...)`, or "" when it said nothing."""
        if not self.count:
            return ""
        times = "once" if self.count == 1 else f"{self.count} times"
        return f" ({library} warned {times}, first: {self.first})"


class _Collector(logging.Handler):
    """Counts the reading thread's records; another thread's (a watcher's) go where they went."""

    def __init__(self, noise: LibraryNoise, others: list[logging.Handler]) -> None:
        super().__init__(logging.NOTSET)
        self.noise = noise
        self.thread = threading.get_ident()
        self.others = others

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self.thread:
            fallback = [logging.lastResort] if logging.lastResort is not None else []
            for handler in self.others or fallback:
                if record.levelno >= handler.level:
                    handler.handle(record)
            return
        if record.levelno < logging.WARNING:
            return
        try:
            self.noise.add(record.getMessage())
        except Exception:  # a library's malformed log call (bad %-args) is still one warning
            self.noise.add(str(record.msg))


@contextlib.contextmanager
def library_noise_captured() -> Iterator[LibraryNoise]:
    """Around one reader call: what its libraries log (WARNING and above) or warn is counted in
    the `LibraryNoise` yielded, never printed.

    A format library may log a line for every malformed part of a broken file, and Python
    prints them on stderr (the root logger has no handler: `logging.lastResort`), around
    locallens' own one-line skip and through `--quiet`. For the duration, the root logger's
    handlers are replaced by a collector, so every library record that propagates ends there, and
    every `warnings.warn` is recorded instead of shown. The reader decides what a file is; this
    keeps the count and the first message for the skip reason (`LibraryNoise.summary`). Records
    of other threads (a watcher's) go to the handlers they went to before; Python's warnings
    filter is process-wide, so a warning another thread raises meanwhile is counted here."""
    noise = LibraryNoise()
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [_Collector(noise, saved)]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield noise
            finally:
                for warning in caught:
                    noise.add(str(warning.message))
    finally:
        root.handlers = saved


@dataclass
class TextBuilder:
    """Lays a document out as blocks separated by a blank line, remembering where each heading
    and each source unit (page, slide, row, paragraph, message lines, cell) lands in the final
    text.

    Blocks are cleaned and stripped as they are added, so the offsets hold for the text that is
    stored: `read_document` does not normalise it again in a way that could move them.
    """

    parts: list[str] = field(default_factory=list)
    length: int = 0
    headings: list[tuple[int, str]] = field(default_factory=list)
    spans: list[SourceSpan] = field(default_factory=list)
    # The unit being written: [start or None until its first text lands, kind, label, first
    # source line, last source line].
    _open: list[Any] | None = None
    _line_run: bool = False  # the last thing added was an `add_line`: the next one joins it

    _paragraphs: int = 0  # paragraphs numbered so far (`paragraph`)

    def _landed(self) -> None:
        """The open unit's text starts here (at `self.length`), if it had none yet."""
        if self._open is not None and self._open[0] is None:
            self._open[0] = self.length
            if self._open[1] == "para":  # numbered when its text lands: empty ones take no number
                self._paragraphs += 1
                self._open[2] = str(self._paragraphs)

    def paragraph(self, keep_run: bool = False) -> None:
        """Start the next numbered paragraph (`para=N`, N counting from 1 the paragraphs that
        have text: headings, list items and whole tables included)."""
        self.begin("para", "", keep_run=keep_run)

    def add(self, block: str) -> bool:
        """Append a paragraph (or several lines kept together). Empty blocks are dropped."""
        block = clean_extracted(block)
        self._line_run = False
        if not block:
            return False
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        self._landed()
        self.parts.append(block)
        self.length += len(block)
        return True

    def add_spanned(self, block: str, spans: Sequence[SourceSpan]) -> bool:
        """Append a block that comes with its own spans (offsets into `block`), e.g. an HTML
        chapter's source lines. Ends the open unit. When cleaning changes the block, its spans
        no longer fit and are dropped (the block is still added)."""
        self.end()
        cleaned = clean_extracted(block)
        if not self.add(cleaned):
            return False
        if cleaned == block:
            base = self.length - len(block)
            self.spans.extend(
                SourceSpan(base + s.start, base + s.end, s.kind, s.label, s.line_start, s.line_end) for s in spans
            )
        return True

    def add_line(self, line: str) -> None:
        """Append a line to the block before it (list items stay one paragraph, their
        indentation kept), or start a block with it."""
        line = clean_extracted(line.replace("\n", " ")) if not self._line_run else _clean_line(line)
        if not line.strip():
            return
        if self.parts and self._line_run:
            self.parts.append("\n")
            self.length += 1
            self._landed()
            self.parts.append(line)
            self.length += len(line)
        else:
            self.add(line)
        self._line_run = True

    def heading(self, level: int, text: str) -> None:
        """A heading as its own markdown-style line (`## Text`), recorded for the chunk headers."""
        text = one_line(clean_extracted(text))
        if text:
            level = min(max(level, 1), 6)
            self.add(f"{'#' * level} {text}")
            self.headings.append((level, text))

    def begin(
        self,
        kind: str,
        label: str,
        line_start: int | None = None,
        line_end: int | None = None,
        keep_run: bool = False,
    ) -> None:
        """Start a source unit: everything added until `end()` (or the next `begin`) is cited as
        `kind=label` (or by `line_start`-`line_end` of the file). `keep_run`: a list item that is
        a unit of its own still joins the lines before it."""
        self.end()
        if not keep_run:
            self._line_run = False
        self._open = [None, kind, label, line_start, line_end]

    def end(self) -> None:
        if self._open is None:
            return
        start, kind, label, line_start, line_end = self._open
        self._open = None
        if start is not None and self.length > start:
            self.spans.append(SourceSpan(start, self.length, kind, label, line_start, line_end))

    def result(self, title: str = "", kind: str = "") -> Extracted:
        """The document; with `kind` ("DOCX", ...) one without any text is a counted skip."""
        self.end()
        if kind and not self.length:
            raise ReadSkip(f"{kind} has no text (empty, or images only)")
        return Extracted(
            text="".join(self.parts),
            title=one_line(clean_extracted(title)),
            headings=tuple(self.headings),
            spans=tuple(self.spans),
        )

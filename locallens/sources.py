"""Walk a root into documents: ignore rules, symlinks, sniffing, decoding (SPEC §1, RELIABILITY 1-12).

Two steps, so that the indexer can decide from (size, mtime_ns) alone whether a file needs reading:

- `walk(root)` yields a `FileStat` for every candidate file, or a `Skipped` for a file or folder it
  had to leave out for a reason the user should hear about (permission denied, broken symlink,
  symlink out of the root or into a loop). Pure policy (hidden files, `.git`, `.gitignore`d paths,
  files that are not documents) is silent.
- `read_document(stat)` reads one file once, sniffs and decodes it, extracts the text of HTML and
  PDF files and normalises it into a `Document`, or returns a `Skipped` naming the reason.

Neither raises for a bad file: a bad file is a `Skipped`, and the run goes on. The only raise is a
`UsageError` for a root that does not exist or a glob that does not compile.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import logging
import math
import os
import re
import stat as stat_mod
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pathspec

from locallens.domain import Document, FileStat, Skipped
from locallens.errors import UsageError

DEFAULT_EXTENSIONS: tuple[str, ...] = (".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".pdf")
DEFAULT_MAX_BYTES: int = 10 * 1024 * 1024

# How much of a file is sniffed for a NUL byte (RELIABILITY row 1).
SNIFF_BYTES = 8 * 1024

_MB = 1024 * 1024
_HTML_EXTENSIONS = (".html", ".htm")
_PDF_EXTENSIONS = (".pdf",)

_BOM_UTF8 = b"\xef\xbb\xbf"
_BOM_UTF16_LE = b"\xff\xfe"
_BOM_UTF16_BE = b"\xfe\xff"
_BOM_UTF32_LE = b"\xff\xfe\x00\x00"
_BOM_UTF32_BE = b"\x00\x00\xfe\xff"

# Reasons, spelled once so the walker, the reader and the tests agree.
REASON_PERMISSION = "permission denied"
REASON_BROKEN_SYMLINK = "broken symlink"
REASON_SYMLINK_OUTSIDE = "symlink points outside the indexed root"
REASON_SYMLINK_LOOP = "symlink loop"
REASON_SYMLINK_DUPLICATE = "symlink to a folder already indexed"
REASON_NOT_REGULAR = "not a regular file"
REASON_BAD_NAME = "file name is not valid UTF-8"
REASON_BINARY = "binary file"
REASON_CHANGED = "file changed while being read"
REASON_DISAPPEARED = "file disappeared"
REASON_PDF_NO_TEXT = "PDF has no extractable text"


def sha256_text(text: str) -> str:
    """SHA-256 hex of the UTF-8 bytes of `text`: the document checksum (SPEC §1)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise_text(text: str) -> str:
    """SPEC §1: "\\r\\n" -> "\\n" (a lone "\\r", old Mac style, too), then strip."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


# --------------------------------------------------------------------------------------------
# walk
# --------------------------------------------------------------------------------------------


def _compile_globs(patterns: Sequence[str], flag: str) -> pathspec.GitIgnoreSpec | None:
    """`--include`/`--exclude` globs as one gitwildmatch spec; a bad glob is the user's to fix."""
    cleaned = [p for p in patterns if p.strip()]
    if not cleaned:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(cleaned)
    except ValueError as exc:  # GitIgnorePatternError is a ValueError
        raise UsageError(f"invalid {flag} glob: {exc}") from exc


def _compile_gitignore(text: str) -> pathspec.GitIgnoreSpec | None:
    """A `.gitignore` file's spec. Git itself ignores a line it cannot parse, and so do we."""
    lines = text.splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        # One bad line must not throw away the good ones: compile line by line, keep the valid.
        valid: list[str] = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            valid.append(line)
        spec = pathspec.GitIgnoreSpec.from_lines(valid)
    return spec if len(spec.patterns) else None


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    """One `.gitignore`: its patterns apply to paths relative to the folder that holds it."""

    prefix: str  # folder of the .gitignore relative to the root, "" or ending in "/"
    spec: pathspec.GitIgnoreSpec


def _is_gitignored(rules: Sequence[_IgnoreRule], rel: str, is_dir: bool) -> bool:
    """Git's precedence: the deepest `.gitignore` with a matching pattern decides.

    Within one file the last matching pattern wins (a `!negation` re-includes); `check_file`
    gives that. Across files, a deeper file overrides a shallower one, so walk from the root
    down and let the last definite answer stand. Directories are matched as "name/" so that
    patterns with a trailing slash (`build/`) apply to them.
    """
    ignored = False
    for rule in rules:
        sub = rel[len(rule.prefix):]
        if is_dir:
            sub += "/"
        result = rule.spec.check_file(sub).include
        if result is not None:
            ignored = result
    return ignored


@dataclass(slots=True)
class _Frame:
    """One folder being walked: its sorted entries and what applies beneath it."""

    entries: list[os.DirEntry[str]]
    rel_prefix: str  # "" for the root, else "sub/dir/"
    rules: tuple[_IgnoreRule, ...]
    key: tuple[int, int]  # (st_dev, st_ino) of the folder, for loop detection
    pos: int = 0


@dataclass(slots=True)
class _Walker:
    root: str  # resolved absolute root
    include: pathspec.GitIgnoreSpec | None
    exclude: pathspec.GitIgnoreSpec | None
    ancestors: set[tuple[int, int]] = field(default_factory=set)  # folders on the current path
    visited: set[tuple[int, int]] = field(default_factory=set)  # every folder walked so far

    def is_candidate(self, rel: str, name: str) -> bool:
        """A document by extension (case-insensitive) or by `--include`, and not `--exclude`d."""
        wanted = os.path.splitext(name)[1].lower() in DEFAULT_EXTENSIONS or (
            self.include is not None and self.include.match_file(rel)
        )
        return wanted and not (self.exclude is not None and self.exclude.match_file(rel))

    def is_inside_root(self, real: str) -> bool:
        if real == self.root:
            return True
        prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        return real.startswith(prefix)

    def open_folder(
        self, path: str, rel_prefix: str, rules: tuple[_IgnoreRule, ...], key: tuple[int, int]
    ) -> _Frame | Skipped:
        """List a folder (sorted by name) and pick up its `.gitignore`."""
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except PermissionError:
            return Skipped(rel_prefix.rstrip("/") or ".", REASON_PERMISSION, error=True)
        except FileNotFoundError:
            # Deleted between being listed in its parent and being opened (RELIABILITY 12).
            return Skipped(rel_prefix.rstrip("/") or ".", "folder disappeared", error=False)
        except OSError as exc:
            return Skipped(rel_prefix.rstrip("/") or ".", f"cannot list folder: {_oserror_text(exc)}", error=True)
        for entry in entries:
            if entry.name == ".gitignore":
                spec = _read_gitignore(entry.path)
                if spec is not None:
                    rules = (*rules, _IgnoreRule(rel_prefix, spec))
                break
        return _Frame(entries=entries, rel_prefix=rel_prefix, rules=rules, key=key)

    def walk(self) -> Iterator[FileStat | Skipped]:
        try:
            root_st = os.stat(self.root)
        except PermissionError:
            yield Skipped(".", REASON_PERMISSION, error=True)
            return
        except OSError as exc:
            yield Skipped(".", f"cannot list folder: {_oserror_text(exc)}", error=True)
            return
        root_key = (root_st.st_dev, root_st.st_ino)
        first = self.open_folder(self.root, "", (), root_key)
        if isinstance(first, Skipped):
            yield first
            return
        # Depth-first with an explicit stack: no recursion limit on deep trees, and the order is
        # "sorted by name within each folder", files and sub-folders interleaved.
        stack: list[_Frame] = [first]
        self.ancestors.add(root_key)
        self.visited.add(root_key)
        while stack:
            frame = stack[-1]
            if frame.pos >= len(frame.entries):
                stack.pop()
                self.ancestors.discard(frame.key)
                continue
            entry = frame.entries[frame.pos]
            frame.pos += 1
            yield from self.visit(entry, frame, stack)

    def visit(self, entry: os.DirEntry[str], frame: _Frame, stack: list[_Frame]) -> Iterator[FileStat | Skipped]:
        name = entry.name
        # Hidden files and folders (".git", ".venv", ".gitignore" itself, ...): silent policy.
        if name.startswith("."):
            return
        rel = frame.rel_prefix + name
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            # A name that is not UTF-8 (surrogate-escaped by Python) cannot be stored or cited.
            shown = os.fsencode(rel).decode("utf-8", "replace")
            yield Skipped(shown, REASON_BAD_NAME, error=False)
            return

        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False

        if not is_link:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                yield Skipped(rel, REASON_DISAPPEARED, error=False)
                return
            except PermissionError:
                yield Skipped(rel, REASON_PERMISSION, error=True)
                return
            except OSError as exc:
                yield Skipped(rel, f"cannot stat: {_oserror_text(exc)}", error=True)
                return
            if stat_mod.S_ISDIR(st.st_mode):
                yield from self.enter_folder(entry.path, rel, frame, stack, (st.st_dev, st.st_ino), False)
            elif stat_mod.S_ISREG(st.st_mode):
                if not _is_gitignored(frame.rules, rel, False) and self.is_candidate(rel, name):
                    yield self.file_stat(rel, entry.path, st)
            elif not _is_gitignored(frame.rules, rel, False) and self.is_candidate(rel, name):
                # A FIFO, socket or device named like a document: reading it could block forever.
                yield Skipped(rel, REASON_NOT_REGULAR, error=False)
            return

        # A symlink: stat its target (this follows the whole chain).
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            # Broken: we cannot tell file from folder, so judge it by its own name. A dangling
            # link named like a document is worth a line; one named `cache` is not.
            if not _is_gitignored(frame.rules, rel, False) and self.is_candidate(rel, name):
                yield Skipped(rel, REASON_BROKEN_SYMLINK, error=False)
            return
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                # a -> b -> a: the kernel gives up resolving it.
                if not _is_gitignored(frame.rules, rel, False):
                    yield Skipped(rel, REASON_SYMLINK_LOOP, error=False)
            elif isinstance(exc, PermissionError):
                yield Skipped(rel, REASON_PERMISSION, error=True)
            else:
                yield Skipped(rel, f"cannot stat: {_oserror_text(exc)}", error=True)
            return

        is_dir = stat_mod.S_ISDIR(st.st_mode)
        if _is_gitignored(frame.rules, rel, is_dir):
            return
        if not is_dir and not self.is_candidate(rel, name):
            return  # not a document: out of scope whatever it points at
        if is_dir and self.exclude is not None and self.exclude.match_file(rel + "/"):
            return
        real = os.path.realpath(entry.path)
        if not self.is_inside_root(real):
            yield Skipped(rel, REASON_SYMLINK_OUTSIDE, error=False)
            return
        if is_dir:
            yield from self.enter_folder(entry.path, rel, frame, stack, (st.st_dev, st.st_ino), True)
        elif stat_mod.S_ISREG(st.st_mode):
            # A link to a file inside the root: indexed under the link's own path.
            yield self.file_stat(rel, entry.path, st)
        else:
            yield Skipped(rel, REASON_NOT_REGULAR, error=False)

    def enter_folder(
        self,
        path: str,
        rel: str,
        frame: _Frame,
        stack: list[_Frame],
        key: tuple[int, int],
        via_link: bool,
    ) -> Iterator[Skipped]:
        if _is_gitignored(frame.rules, rel, True):
            return
        # `--exclude drafts/` (or `drafts/**`) prunes the whole folder without listing it.
        if self.exclude is not None and self.exclude.match_file(rel + "/"):
            return
        if key in self.ancestors:
            # A link back to a folder we are inside of: following it would never end.
            yield Skipped(rel, REASON_SYMLINK_LOOP, error=False)
            return
        if via_link and key in self.visited:
            # A second way into a folder already walked: following it again only duplicates.
            yield Skipped(rel, REASON_SYMLINK_DUPLICATE, error=False)
            return
        opened = self.open_folder(path, rel + "/", frame.rules, key)
        if isinstance(opened, Skipped):
            yield opened
            return
        self.ancestors.add(key)
        self.visited.add(key)
        stack.append(opened)

    def file_stat(self, rel: str, path: str, st: os.stat_result) -> FileStat:
        return FileStat(
            root=self.root,
            relative_path=rel,
            path=os.path.join(self.root, *rel.split("/")),
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
        )


def _read_gitignore(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1024 * 1024)  # a sane bound: no real .gitignore is bigger
    except OSError:
        return None  # unreadable or not a file: no rules from it
    # Git reads .gitignore as bytes; a stray non-UTF-8 byte must not cost the other lines.
    return _compile_gitignore(raw.decode("utf-8", "replace"))


def _oserror_text(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def walk(
    root: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Iterator[FileStat | Skipped]:
    """Every candidate file under `root`, in a deterministic order, or a `Skipped` saying why not.

    Raises `UsageError` at once (not on first iteration) if `root` does not exist or a glob is bad.
    """
    root_path = Path(root).expanduser()
    if not os.path.exists(root_path):
        raise UsageError(f"no such file or directory: {root}")
    include_spec = _compile_globs(include, "--include")
    exclude_spec = _compile_globs(exclude, "--exclude")

    resolved = root_path.resolve()
    if not resolved.is_dir():
        return _walk_single_file(root_path)
    walker = _Walker(root=str(resolved), include=include_spec, exclude=exclude_spec)
    return walker.walk()


def _walk_single_file(path: Path) -> Iterator[FileStat | Skipped]:
    """`locallens index notes.md`: the user named the file, so no extension or ignore policy."""
    absolute = Path(os.path.abspath(path))
    parent = absolute.parent.resolve()
    name = absolute.name
    full = os.path.join(parent, name)
    try:
        st = os.stat(full)
    except FileNotFoundError:
        yield Skipped(name, REASON_DISAPPEARED, error=False)
        return
    except PermissionError:
        yield Skipped(name, REASON_PERMISSION, error=True)
        return
    except OSError as exc:
        yield Skipped(name, f"cannot stat: {_oserror_text(exc)}", error=True)
        return
    if not stat_mod.S_ISREG(st.st_mode):
        yield Skipped(name, REASON_NOT_REGULAR, error=False)
        return
    yield FileStat(root=str(parent), relative_path=name, path=full, size=st.st_size, mtime_ns=st.st_mtime_ns)


# --------------------------------------------------------------------------------------------
# read_document
# --------------------------------------------------------------------------------------------


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
        text = _decode(data, os.path.splitext(rel)[1].lower())
    except _Skip as skip:
        return Skipped(rel, skip.reason, error=skip.error)
    text = normalise_text(text)
    return Document(
        root=stat.root,
        relative_path=rel,
        text=text,
        checksum=sha256_text(text),
        size=stat.size,
        mtime_ns=stat.mtime_ns,
    )


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


def _decode(data: bytes, ext: str) -> str:
    if ext in _PDF_EXTENSIONS:
        # PDFs are binary by nature: no NUL sniffing, pypdf decides.
        return _pdf_text(data)
    text = _decode_text(data)
    if ext in _HTML_EXTENSIONS:
        return _html_text(normalise_text(text))
    return text


def _decode_text(data: bytes) -> str:
    """BOM-aware, strict decoding. Invalid bytes skip the file: never mojibake, never U+FFFD."""
    # UTF-32 first: its LE BOM starts with the UTF-16 LE BOM.
    for bom, codec in ((_BOM_UTF32_LE, "utf-32-le"), (_BOM_UTF32_BE, "utf-32-be"),
                       (_BOM_UTF16_LE, "utf-16-le"), (_BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec)
            except UnicodeDecodeError as exc:
                name = codec[:6].upper()
                raise _Skip(f"invalid {name} at byte {exc.start + len(bom)}") from None
    if b"\x00" in data[:SNIFF_BYTES]:
        raise _Skip(REASON_BINARY)
    offset = 0
    if data.startswith(_BOM_UTF8):
        data = data[len(_BOM_UTF8):]
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
_HTML_PARAGRAPH = frozenset({
    "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "header", "footer",
    "nav", "aside", "main", "blockquote", "pre", "ul", "ol", "dl", "table", "figure",
    "figcaption", "form", "fieldset", "address", "details", "summary", "hr", "title", "body",
    "caption",
})
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


def _html_text(source: str) -> str:
    parser = _TextExtractor()
    try:
        parser.feed(source)
        parser.close()
    except Exception as exc:  # html.parser is lenient, but old versions assert on odd markup
        raise _Skip(f"cannot parse HTML: {exc}", error=True) from None
    return parser.text()


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


def _pdf_text(data: bytes) -> str:
    try:
        with _quiet_pypdf():
            from pypdf import PdfReader  # heavy-ish import, only when a PDF shows up

            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                # Many PDFs are "encrypted" with an empty user password (permissions only).
                if not reader.decrypt(""):
                    raise _Skip("cannot read PDF: encrypted (password required)", error=True)
            pages = [page.extract_text() or "" for page in reader.pages]
    except _Skip:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, KeyError, ValueError, ...)
        message = str(exc).splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise _Skip(f"cannot read PDF: {message}", error=True) from None
    text = "\n\n".join(normalise_text(page) for page in pages if page.strip())
    # Extraction can produce NULs and lone surrogates; neither may reach the index. This is
    # extractor debris, not the user's bytes, so replacing it is not mojibake.
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if not text.strip():
        raise _Skip(REASON_PDF_NO_TEXT)
    return text

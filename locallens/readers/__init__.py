"""Read one walked file into a `Document`: size cap, stable read, the format's reader,
normalisation and checksum.

`read_document(stat)` reads one file once (never more than the size cap), hands its bytes to the
reader registered for its extension (`locallens.readers.registry`: one module per format
family, imported on first use) and normalises the result into a `Document`, or returns a
`Skipped` naming the reason. It never raises for a bad file: a bad file, an encrypted one, a zip
bomb or a format whose optional library is missing is a `Skipped`, and the run goes on.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import math
import os
import stat as stat_mod
import time
from dataclasses import replace

from locallens.config import DEFAULT_MAX_FILE_MB
from locallens.domain import REASON_DISAPPEARED, REASON_NOT_REGULAR, REASON_PERMISSION, Document, FileStat, Skipped
from locallens.readers.base import (
    REASON_BINARY,
    SNIFF_BYTES,
    Extracted,
    MissingLibrary,
    ReadSkip,
    first_line,
    library_noise_captured,
    normalise_text,
)
from locallens.readers.registry import reader_for, reading_of

__all__ = [
    "DEFAULT_MAX_BYTES",
    "REASON_BINARY",
    "REASON_CHANGED",
    "SNIFF_BYTES",
    "normalise_text",
    "read_document",
    "read_settled",
    "sha256_text",
]

DEFAULT_MAX_BYTES: int = int(DEFAULT_MAX_FILE_MB * 1024 * 1024)

_MB = 1024 * 1024

REASON_CHANGED = "file changed while being read"


def sha256_text(text: str) -> str:
    """SHA-256 hex of the UTF-8 bytes of `text`: the document checksum."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_Skip = ReadSkip  # the stable read's own skips travel the same way as the readers'


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
    """Read one file and hand it to its format's reader. Never raises for a bad file."""
    rel = stat.relative_path
    # Over the cap: decided from the stat alone, the file is never opened (memory stays bounded).
    if stat.size > max_bytes:
        return Skipped(rel, _too_large_reason(stat.size, max_bytes), error=False)
    try:
        data = _read_stable(stat, max_bytes)
        extracted = _extract(data, os.path.splitext(rel)[1].lower())
    except ReadSkip as skip:
        return Skipped(rel, skip.reason, error=skip.error)
    text = normalise_text(extracted.text)
    # Readers lay structured formats out already normalised (their span offsets depend on it).
    # A text format keeps its lines; the blank lines stripped from its start are counted, so
    # that text line 1 is cited as the file's line `line_offset + 1`.
    line_offset = _leading_lines(extracted.text) if extracted.line_mapped else 0
    return Document(
        root=stat.root,
        relative_path=rel,
        text=text,
        checksum=sha256_text(text),
        size=stat.size,
        mtime_ns=stat.mtime_ns,
        title=extracted.title,
        headings=extracted.headings,
        spans=extracted.spans if text == extracted.text else (),
        line_mapped=extracted.line_mapped,
        line_offset=line_offset,
        reading=reading_of(rel),
    )


def read_settled(
    stat: FileStat, max_bytes: int = DEFAULT_MAX_BYTES, *, had_content: bool = False
) -> Document | Skipped:
    """`read_document`, made safe for a file caught in the middle of a save it had content before.

    An editor that saves in place (truncate, then write) and a log rotation (copy, then truncate)
    both leave a moment when the file is empty, or changing under the reader. Storing that
    moment would drop the file's chunks until a later run. So when a file that had content
    (`had_content`: its stored version was not empty) reads as empty (0 bytes) or changes while
    it is read, it is looked at again after `SETTLE_SECONDS`, up to `SETTLE_TRIES` times:
    - it reads with content and unchanged: that version is the one returned (its new size and
      mtime with it);
    - it is still empty and has not changed since it was read empty: it was emptied on purpose,
      and the empty document is returned (0 chunks, as for any empty file);
    - it is still changing after the last try: `file changed while being read`, and the indexer
      keeps its previous version; the next run reads it again.
    A new file (no stored version) is read once, as `read_document` does: nothing can be lost.
    """
    read = read_document(stat, max_bytes)
    if not had_content:
        return read
    for _ in range(SETTLE_TRIES):
        if not _unsettled(read):
            return read
        _settle()
        fresh = _restat(stat)
        if isinstance(fresh, Skipped):
            return fresh
        if isinstance(read, Document) and (fresh.size, fresh.mtime_ns) == (stat.size, stat.mtime_ns):
            return read  # empty, and still the same empty file: emptied on purpose
        stat = fresh
        read = read_document(stat, max_bytes)
    return Skipped(stat.relative_path, REASON_CHANGED, error=False) if _unsettled(read) else read


# How long a file caught mid-save is left to settle before it is read again, and how many times.
SETTLE_SECONDS = 0.2
SETTLE_TRIES = 3


def _settle() -> None:
    """Wait for a save in progress to finish. A seam of its own so tests can act as the editor."""
    time.sleep(SETTLE_SECONDS)


def _unsettled(read: Document | Skipped) -> bool:
    """Read as empty, or changed while being read: possibly caught in the middle of a save."""
    if isinstance(read, Skipped):
        return read.reason == REASON_CHANGED
    return read.size == 0


def _restat(stat: FileStat) -> FileStat | Skipped:
    """`stat` as the file is now (size and mtime), or the skip that says why it cannot be."""
    try:
        st = os.stat(stat.path)
    except FileNotFoundError:
        return Skipped(stat.relative_path, REASON_DISAPPEARED, error=False)
    except PermissionError:
        return Skipped(stat.relative_path, REASON_PERMISSION, error=True)
    except OSError as exc:
        return Skipped(stat.relative_path, f"cannot stat: {_os_error(exc)}", error=True)
    if not stat_mod.S_ISREG(st.st_mode):
        return Skipped(stat.relative_path, REASON_NOT_REGULAR, error=False)
    return replace(stat, size=st.st_size, mtime_ns=st.st_mtime_ns, dev=st.st_dev, ino=st.st_ino)


def _leading_lines(text: str) -> int:
    """The lines `normalise_text` strips from the start of `text`: where the document's line 1 is."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text[: len(text) - len(text.lstrip())].count("\n")


def _extract(data: bytes, ext: str) -> Extracted:
    """The registered reader's result for these bytes; a missing library is a counted skip."""
    spec = reader_for(ext)
    module_name = f"locallens.readers.{spec.module}" if spec is not None else "locallens.readers.text"
    library = spec.package if spec is not None and spec.package else "the reader's library"
    # What the format's library logs or warns is counted, never printed (a broken PDF is one
    # skip line, with --quiet too); a file that is skipped for an error says how often it warned.
    with library_noise_captured() as noise:
        try:
            module = importlib.import_module(module_name)
            extracted: Extracted = module.read(data, ext)
        except MissingLibrary as missing:
            hint = missing.hint or (
                spec.install_hint(missing.package) if spec is not None else f"needs {missing.package}"
            )
            raise ReadSkip(hint) from None
        except ReadSkip as skip:
            if skip.error and noise.count:
                raise ReadSkip(skip.reason + noise.summary(library), error=True) from None
            raise
        except Exception as exc:  # a library failing on a malformed file (deep nesting too): its skip
            kind = ext.lstrip(".").upper() or "file"
            raise ReadSkip(f"cannot read {kind}: {first_line(exc)}{noise.summary(library)}", error=True) from None
    return extracted


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
        raise _Skip(f"cannot open file: {_os_error(exc)}", error=True) from None
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
            raise _Skip(f"cannot read file: {_os_error(exc)}", error=True) from None
    try:
        after = os.stat(stat.path)
    except FileNotFoundError:
        raise _Skip(REASON_DISAPPEARED) from None
    except OSError as exc:
        raise _Skip(f"cannot stat: {_os_error(exc)}", error=True) from None
    if len(data) != stat.size or after.st_size != stat.size or after.st_mtime_ns != stat.mtime_ns:
        raise _Skip(REASON_CHANGED)
    return data


def _os_error(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__

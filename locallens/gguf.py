"""Reading a GGUF file's header in pure Python: check a model file before llama.cpp sees it.

`read_gguf_info` parses the magic, the key/value section and the tensor table, and from the
tensor table the number of bytes the file must hold. A missing, foreign or truncated file is then
one clear `ModelUnavailableError` (exit 6) naming the path, rather than a C-level abort or a page
of loader logs. The result (`GGUFInfo`) also carries what loading needs from the header (the
trained context length), so a caller that checked a file passes the info on instead of parsing
the header again.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.errors import ModelUnavailableError

__all__ = ["GGUF_MAGIC", "MIN_GGUF_BYTES", "GGUFInfo", "check_gguf", "read_gguf_info"]

MIN_GGUF_BYTES = 1_000_000  # no usable language model is smaller than 1 MB

GGUF_MAGIC = b"GGUF"

# GGUF metadata value types -> struct format of a scalar (8 = string, 9 = array handled apart).
_SCALAR_FORMATS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9

# ggml tensor types -> (elements per block, bytes per block), from ggml's block definitions.
# A type missing here (a newer quantisation) only makes the size check less tight for that
# tensor: its offset still has to lie inside the file.
_GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
}


@dataclass(frozen=True, slots=True)
class GGUFInfo:
    """What locallens needs from a GGUF header."""

    path: Path
    version: int
    n_tensors: int
    architecture: str | None
    context_length: int | None  # the context the model was trained with
    has_chat_template: bool
    file_size: int
    required_size: int  # bytes the tensor table says the file must hold


class _Truncated(Exception):
    """The header points past the end of the file."""


class _Reader:
    """Bounds-checked little-endian reads over a memory map."""

    def __init__(self, buf: mmap.mmap | bytes) -> None:
        self.buf = buf
        self.pos = 0
        self.size = len(buf)

    def unpack(self, fmt: str) -> Any:
        n = struct.calcsize(fmt)
        if self.pos + n > self.size:
            raise _Truncated
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return value

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated
        self.pos += n

    def string(self) -> bytes:
        length = self.unpack("<Q")
        start = self.pos
        self.skip(length)
        return bytes(self.buf[start : self.pos])

    def skip_string(self) -> None:
        self.skip(self.unpack("<Q"))

    def value(self, vtype: int, keep: bool) -> Any:
        """Read (or skip, when not `keep`) one metadata value of type `vtype`."""
        if vtype in _SCALAR_FORMATS:
            return self.unpack(_SCALAR_FORMATS[vtype])
        if vtype == _STRING:
            if keep:
                return self.string()
            self.skip_string()
            return None
        if vtype == _ARRAY:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            if etype in _SCALAR_FORMATS:  # fixed-size elements: skip them in one step
                self.skip(count * struct.calcsize(_SCALAR_FORMATS[etype]))
            elif count > self.size:  # each element takes at least one byte: garbage count
                raise _Truncated
            else:
                for _ in range(count):  # strings (vocabularies) or nested arrays
                    self.value(etype, keep=False)
            return None
        raise ValueError(f"unknown GGUF value type {vtype}")


def read_gguf_info(path: Path) -> GGUFInfo:
    """Parse a GGUF header and tensor table; raise ModelUnavailableError naming `path` if unusable."""
    if not path.exists():
        raise ModelUnavailableError(f"GGUF not found: {path}")
    if path.is_dir():
        raise ModelUnavailableError(f"GGUF path is a directory, not a file: {path}")
    try:
        with path.open("rb") as handle:
            file_size = os.fstat(handle.fileno()).st_size
            magic = handle.read(4)
            if magic != GGUF_MAGIC:
                raise ModelUnavailableError(f"not a GGUF file: {path}")
            if file_size < MIN_GGUF_BYTES:
                raise ModelUnavailableError(
                    f"GGUF file is implausibly small ({file_size} bytes), probably truncated: {path}"
                )
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse_header(path, _Reader(buf), file_size)
    except PermissionError as exc:
        raise ModelUnavailableError(f"GGUF file is not readable ({exc.strerror}): {path}") from exc
    except OSError as exc:
        raise ModelUnavailableError(f"cannot read GGUF file ({exc}): {path}") from exc


def _parse_header(path: Path, reader: _Reader, file_size: int) -> GGUFInfo:
    truncated = ModelUnavailableError(f"GGUF file is truncated or corrupt: {path}")
    try:
        reader.skip(4)  # magic, already checked
        version = reader.unpack("<I")
        if version not in (2, 3):
            # v1 (2023) used 32-bit counts and is no longer loadable by llama.cpp.
            raise ModelUnavailableError(f"unsupported GGUF version {version}: {path}")
        n_tensors, n_kv = reader.unpack("<Q"), reader.unpack("<Q")
        if n_tensors > file_size or n_kv > file_size:
            raise truncated
        meta: dict[str, Any] = {}
        wanted_suffixes = (".context_length",)
        for _ in range(n_kv):
            key = reader.string().decode("utf-8", "replace")
            vtype = reader.unpack("<I")
            keep = key in ("general.architecture", "general.alignment") or key.endswith(wanted_suffixes)
            value = reader.value(vtype, keep=keep)
            if key == "tokenizer.chat_template":
                meta[key] = True
            elif keep:
                meta[key] = value
        tensors: list[tuple[int, int, int]] = []  # (offset, type, n_elements)
        for _ in range(n_tensors):
            reader.skip_string()  # name
            n_dims = reader.unpack("<I")
            if n_dims > 8:  # ggml tensors have at most 4 dimensions
                raise truncated
            n_elements = 1
            for _ in range(n_dims):
                n_elements *= reader.unpack("<Q")
            ttype, offset = reader.unpack("<I"), reader.unpack("<Q")
            tensors.append((offset, ttype, n_elements))
    except _Truncated:
        raise truncated from None
    except (ValueError, struct.error) as exc:
        raise ModelUnavailableError(f"GGUF header is corrupt ({exc}): {path}") from exc

    alignment = meta.get("general.alignment") or 32
    if not isinstance(alignment, int) or alignment <= 0:
        alignment = 32
    data_start = -(-reader.pos // alignment) * alignment  # round up to the alignment
    required = data_start
    for offset, ttype, n_elements in tensors:
        block = _GGML_BLOCKS.get(ttype)
        nbytes = (n_elements // block[0]) * block[1] if block else 1
        required = max(required, data_start + offset + nbytes)
    if required > file_size:
        raise ModelUnavailableError(f"GGUF file is truncated ({file_size} of {required} bytes present): {path}")

    arch_raw = meta.get("general.architecture")
    architecture = arch_raw.decode("utf-8", "replace") if isinstance(arch_raw, bytes) else None
    context = meta.get(f"{architecture}.context_length") if architecture else None
    return GGUFInfo(
        path=path,
        version=version,
        n_tensors=n_tensors,
        architecture=architecture,
        context_length=int(context) if isinstance(context, int) and context > 0 else None,
        has_chat_template=bool(meta.get("tokenizer.chat_template")),
        file_size=file_size,
        required_size=required,
    )


def check_gguf(path: Path) -> GGUFInfo:
    """Raise ModelUnavailableError (exit 6, naming `path`) unless `path` looks like a whole GGUF.

    Returns the header it read: pass it to `LocalLLM(path, info=...)` so the file is parsed once.
    """
    return read_gguf_info(path)

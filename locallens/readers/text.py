"""Plain text, Markdown and reStructuredText: strictly decoded, kept line for line.

The text is the file's own (after the BOM and line ends), so a chunk's lines are the file's
lines; headings are read from the text itself by `locallens.headers`.
"""

from __future__ import annotations

from locallens.readers.base import Extracted, decode_text


def read(data: bytes, ext: str) -> Extracted:
    return Extracted(decode_text(data), line_mapped=True)

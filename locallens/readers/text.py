"""Plain text, Markdown and reStructuredText: strictly decoded, kept line for line.

The text is the file's own (after the BOM and line ends), so a chunk's lines are the file's
lines; headings are read from the text itself by `locallens.headers`. A `.txt` file that is
AsciiDoc (manual pages are often kept so) is read as AsciiDoc (`locallens.readers.asciidoc`), and
one that is a manual page as `man` prints it is laid out for reading (`locallens.readers.manpage`).
"""

from __future__ import annotations

from locallens.readers import asciidoc, manpage
from locallens.readers.base import Extracted, decode_text


def read(data: bytes, ext: str) -> Extracted:
    text = decode_text(data)
    if ext == ".txt" and asciidoc.looks_like(text):
        return asciidoc.extract(text)
    if ext == ".txt" and manpage.looks_like(text):
        return manpage.extract(text)
    return Extracted(text, line_mapped=True)

"""Which file extensions are documents, and which reader module reads each.

One registration per format family: the extensions, the module under `locallens.readers` that
has `read(data, ext)`, and, when that module needs a library, the package and the pip extra
that brings it. Modules are imported on first use only, so `--help` and the walk stay light and
a missing library costs only the files that need it. CONTRIBUTING.md shows how to add one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReaderSpec:
    extensions: tuple[str, ...]  # lower case, with the dot
    module: str  # under locallens.readers, with `read(data: bytes, ext: str) -> Extracted`
    package: str = ""  # the PyPI package the module imports, when it needs one ("" = stdlib)
    extra: str = ""  # the `locallens[extra]` that installs it ("" = a core dependency)
    # Walked only when this says yes: formats that are off unless an engine is installed
    # (OCR'd images), so a folder of screenshots is not a wall of skips.
    enabled: Callable[[], bool] | None = None
    # What the reader makes of a file, numbered. Raise it with any change that gives some file
    # another text, title or headings: an index keeps, with each document, the reading that made
    # it (`reading_of`, `indexer.document_reading`), and its next `index` run reads again every
    # file of an older one, so an improvement reaches files that did not change. 1: as read
    # before readings were recorded.
    version: int = 1

    def install_hint(self, package: str) -> str:
        if self.extra:
            return f"needs {package}: pip install 'locallens[{self.extra}]'"
        return f"needs {package}: pip install '{package}'"


_READERS: dict[str, ReaderSpec] = {}


def register(spec: ReaderSpec) -> None:
    """Make `spec.module` the reader of its extensions (a later registration wins)."""
    for ext in spec.extensions:
        _READERS[ext.lower()] = spec
    extensions.cache_clear()


def reader_for(ext: str) -> ReaderSpec | None:
    """The reader registered for an extension such as ".docx" (lower case), if any."""
    return _READERS.get(ext)


def reading_of(relative_path: str) -> str:
    """The reader that reads this file now and its version ("html_page/2"), as stored with the
    document; a file of an unregistered extension (taken in by --include) is read as text."""
    spec = reader_for(os.path.splitext(relative_path)[1].lower()) or _READERS[".txt"]
    return f"{spec.module}/{spec.version}"


@functools.cache
def extensions() -> frozenset[str]:
    """Every extension the walker takes as a document (formats switched off left out)."""
    return frozenset(ext for ext, spec in _READERS.items() if spec.enabled is None or spec.enabled())


def _ocr_enabled() -> bool:
    from locallens.readers.ocr import available

    return available()


# Versions: text 2, a .txt file that is AsciiDoc read as AsciiDoc; asciidoc 2, inline markup
# rendered (`linkgit:x[1]` as x(1), `{litdd}` as --) and a labelled list's terms kept with their
# descriptions; html_page 2, navigation (bars, rows and containers of links) left out, a title
# without its site's name, `<pre>` in list items and definition terms read as such; pdf 2, running
# heads and feet left out, words broken at a line's end joined, ligatures and minus signs as plain
# letters; pdf 3, the text laid out by PDFium instead of pypdf (spacing); asciidoc 3 (and text 3, for
# the `.txt` files that are AsciiDoc), an indented paragraph read as the literal block it renders as;
# html_page 4, a term whose </dt> is left out (man2html's pages) marked `term::` as a closed one is;
# text 4, a manual page saved as text laid out for reading (`readers.manpage`: its indentation,
# hyphenation, running head and foot) and, with asciidoc 4, an implicit ordered list (`. step`)
# numbered as the page shows it.
register(ReaderSpec((".md", ".markdown", ".txt", ".rst"), "text", version=4))
register(ReaderSpec((".adoc", ".asciidoc"), "asciidoc", version=4))
register(ReaderSpec((".org",), "org"))
register(ReaderSpec((".html", ".htm"), "html_page", version=4))
register(ReaderSpec((".pdf",), "pdf", package="pypdfium2", version=3))
register(ReaderSpec((".docx",), "docx", package="python-docx"))
register(ReaderSpec((".pptx",), "pptx", package="python-pptx"))
register(ReaderSpec((".xlsx", ".xlsm"), "xlsx", package="openpyxl"))
register(ReaderSpec((".odt", ".ods", ".odp"), "odf", package="defusedxml"))
register(ReaderSpec((".epub",), "epub", package="defusedxml"))
register(ReaderSpec((".ipynb",), "notebook"))
register(ReaderSpec((".eml", ".mbox"), "mail"))
register(
    ReaderSpec(
        (".png", ".jpg", ".jpeg", ".tif", ".tiff"), "image", package="pytesseract", extra="ocr", enabled=_ocr_enabled
    )
)

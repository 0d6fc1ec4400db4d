"""Which file extensions are documents, and which reader module reads each.

One registration per format family: the extensions, the module under `locallens.readers` that
has `read(data, ext)`, and, when that module needs a library, the package and the pip extra
that brings it. Modules are imported on first use only, so `--help` and the walk stay light and
a missing library costs only the files that need it. CONTRIBUTING.md shows how to add one.
"""

from __future__ import annotations

import functools
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


@functools.cache
def extensions() -> frozenset[str]:
    """Every extension the walker takes as a document (formats switched off left out)."""
    return frozenset(ext for ext, spec in _READERS.items() if spec.enabled is None or spec.enabled())


def _ocr_enabled() -> bool:
    from locallens.readers.ocr import available

    return available()


register(ReaderSpec((".md", ".markdown", ".txt", ".rst"), "text"))
register(ReaderSpec((".adoc", ".asciidoc"), "asciidoc"))
register(ReaderSpec((".org",), "org"))
register(ReaderSpec((".html", ".htm"), "html_page"))
register(ReaderSpec((".pdf",), "pdf", package="pypdf"))
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

"""PDF: the text layer of every page (pypdf), each page cited by its number.

A page without a text layer (a scan) is read by OCR when the `ocr` extra is installed
(`locallens.readers.ocr`); otherwise it is left out, and a PDF with no text at all is a skip
that says how to get OCR.
"""

from __future__ import annotations

import io
from typing import Any

from locallens.readers.base import REASON_ENCRYPTED, Extracted, ReadSkip, TextBuilder, first_line, one_line, require

REASON_PDF_NO_TEXT = "PDF has no extractable text"


def read(data: bytes, ext: str) -> Extracted:
    pypdf = require("pypdf", "pypdf")
    # What pypdf logs and warns about a malformed object is counted by the caller, not printed
    # (readers.base.library_noise_captured).
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # Many PDFs are "encrypted" with an empty user password (permissions only).
        if reader.is_encrypted and not reader.decrypt(""):
            raise ReadSkip(f"cannot read PDF: {REASON_ENCRYPTED}", error=True)
        pages = [page.extract_text() or "" for page in reader.pages]
        title = _pdf_title(reader)
    except ReadSkip:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, KeyError, ValueError, ...)
        raise ReadSkip(f"cannot read PDF: {first_line(exc)}", error=True) from None
    # A page without a text layer is taken for a scan: OCR'd when OCR is installed. A page with
    # any text keeps its text layer, which is exact.
    scans = [i for i, page in enumerate(pages) if not page.strip()]
    ocr_hint = ""
    if scans:
        from locallens.readers import ocr

        if ocr.available():
            try:
                for i, text in ocr.pdf_pages_text(data, scans).items():
                    pages[i] = text
            except Exception as exc:  # OCR failing costs the scanned pages, not the text layer
                reason = exc.reason if isinstance(exc, ReadSkip) else f"cannot OCR: {first_line(exc)}"
                ocr_hint = f" ({reason})"
        else:
            ocr_hint = f" ({ocr.ENGINE_HINT})"
    builder = TextBuilder()
    for number, page in enumerate(pages, start=1):
        builder.begin("page", str(number))
        builder.add(page)
    extracted = builder.result(title)
    if not extracted.text:
        raise ReadSkip(REASON_PDF_NO_TEXT + ocr_hint)
    return extracted


def _pdf_title(reader: Any) -> str:
    """The document information's /Title, when it has a readable one."""
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:  # a broken info dictionary costs the title, not the document
        return ""
    if not isinstance(title, str):
        return ""
    return one_line(title.replace("\x00", "").encode("utf-8", "replace").decode("utf-8"))

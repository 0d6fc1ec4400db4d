"""Optical character recognition for scans, with Tesseract (the `tesseract` program, through
pytesseract) — the `ocr` extra: `pip install 'locallens[ocr]'` and `apt-get install
tesseract-ocr` (or the system's own package). Off unless both are there: `available()` is
cheap and is asked before any image is walked.

Pages of a PDF are rendered with pypdfium2 (the PDF reader's) at `DPI`; images are read with Pillow. Nothing here
is imported until a scan shows up.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from typing import Any

from locallens.readers.base import MissingLibrary, ReadSkip, first_line, require

DPI = 300  # what Tesseract reads best; a letter page is 2550 x 3300 pixels
MAX_PIXELS = 120_000_000  # an image bigger than this is refused (a decompression bomb)
TIMEOUT_S = 120  # one page
LANGUAGE = os.environ.get("LOCALLENS_OCR_LANG", "eng")  # Tesseract language codes, "eng+deu"
ENGINE_HINT = "OCR needs the tesseract program (apt-get install tesseract-ocr) and pip install 'locallens[ocr]'"


@functools.cache
def available() -> bool:
    """Tesseract, pytesseract, Pillow and pypdfium2 all present."""
    modules = ("pytesseract", "PIL", "pypdfium2")
    return shutil.which("tesseract") is not None and all(importlib.util.find_spec(m) is not None for m in modules)


def _engine() -> Any:
    pytesseract = require("pytesseract", "pytesseract")
    if shutil.which("tesseract") is None:
        raise MissingLibrary("tesseract", hint=ENGINE_HINT)
    # Tesseract's OpenMP threads fight over few cores: one thread read a 300 dpi page in 1.8 s
    # against 5.0 s with the default (docs/decisions.md). Pages are read one after another.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    return pytesseract


def image_text(image: Any) -> str:
    """The text Tesseract reads in one page image (a PIL image)."""
    pytesseract = _engine()
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise ReadSkip(f"cannot OCR: image of {width}x{height} pixels is too large", error=True)
    if image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    try:
        return str(pytesseract.image_to_string(image, lang=LANGUAGE, timeout=TIMEOUT_S))
    except RuntimeError as exc:  # pytesseract's timeout
        raise ReadSkip(f"cannot OCR: {first_line(exc)}", error=True) from None
    except pytesseract.TesseractError as exc:
        raise ReadSkip(f"cannot OCR: {first_line(exc)}", error=True) from None


def pdf_page_text(document: Any, index: int) -> str:
    """OCR of one page (0-based) of an open PDFium document, rendered at `DPI` (the caller holds
    `pdf.PDFIUM_LOCK`)."""
    _engine()
    page = document[index]
    try:
        width, height = page.get_size()
        scale = DPI / 72
        if width * height * scale * scale > MAX_PIXELS:
            scale = (MAX_PIXELS / (width * height)) ** 0.5
        image = page.render(scale=scale, grayscale=True).to_pil()
    finally:
        page.close()
    return image_text(image)

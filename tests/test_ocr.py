"""OCR with Tesseract (the `ocr` extra): scanned PDF pages and images read into text, each cited
by its page. Slow: Tesseract reads a 300 dpi page in about two seconds. Skipped, saying what
to install, where Tesseract or the extra is missing (`make install` installs both)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from locallens.domain import Document, FileStat
from locallens.readers import ocr, read_document

from .helpers import cli

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_formats import edit_distance  # noqa: E402  (the OCR benchmark's measure, one copy)

FIXTURES = ROOT / "tests" / "data" / "formats"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ocr.available(), reason=f"no OCR engine: {ocr.ENGINE_HINT}"),
]


def _read(path: Path) -> Document:
    st = path.stat()
    result = read_document(FileStat(str(path.parent), path.name, str(path), st.st_size, st.st_mtime_ns))
    assert isinstance(result, Document), result
    return result


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2022", " ")).strip()


def test_a_scanned_pdf_page_is_read_by_ocr_and_cited_by_its_page() -> None:
    scan = _read(FIXTURES / "scanned.pdf")  # the handbook PDF rendered to a 300 dpi image, no text layer
    assert [(s.kind, s.label) for s in scan.spans] == [("page", "1")]
    truth = _words(_read(FIXTURES / "handbook.pdf").text)
    read = _words(scan.text)
    accuracy = 1 - edit_distance(truth, read) / len(truth)
    assert accuracy >= 0.95, (accuracy, read)
    assert "Port Ellen at 07:40" in read and "channel 16" in read


def test_an_image_is_read_by_ocr() -> None:
    document = _read(FIXTURES / "scan.png")
    assert [(s.kind, s.label) for s in document.spans] == [("page", "1")]
    assert "The ferry to the field station leaves Port Ellen" in _words(document.text)


def test_a_scan_indexes_and_is_found_by_its_content(tmp_path: Path) -> None:
    root, db = tmp_path / "scans", tmp_path / "index.db"
    root.mkdir()
    shutil.copy(FIXTURES / "scanned.pdf", root / "scanned.pdf")
    shutil.copy(FIXTURES / "journal.org", root / "journal.org")
    result = cli("index", str(root), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"]["new"] == 2
    result = cli("ask", "Which radio channel is the coastguard on?", "--db", str(db), "--extractive", "--json")
    out = json.loads(result.stdout)
    assert out["sources"][0]["path"] == "scanned.pdf"
    assert "16" in out["answer"]

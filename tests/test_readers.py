"""The reader registry and what each reader keeps: text, title, headings, source spans."""

from __future__ import annotations

from pathlib import Path

from locallens.domain import Document, SourceSpan
from locallens.readers.registry import reader_for
from tests.test_sources import make_pdf, read, write


def doc(root: Path, rel: str) -> Document:
    result = read(root, rel)
    assert isinstance(result, Document), result
    return result


def test_text_formats_are_line_mapped_counting_the_leading_lines_stripped(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "# Title\r\n\r\nBody line\r\n")
    write(tmp_path / "b.txt", "\n\n  first real line\nsecond\n")
    write(tmp_path / "c.rst", "   indented first line\nnext\n")
    assert doc(tmp_path, "a.md").line_mapped
    assert doc(tmp_path, "a.md").spans == ()
    assert doc(tmp_path, "a.md").line_offset == 0
    # two blank lines gone: text line 1 is the file's line 3 (docs/behaviour.md#locations)
    assert doc(tmp_path, "b.txt").line_mapped and doc(tmp_path, "b.txt").line_offset == 2
    assert doc(tmp_path, "c.rst").line_mapped and doc(tmp_path, "c.rst").line_offset == 0  # only indentation went


def test_pdf_pages_are_page_spans_numbered_as_in_the_file(tmp_path: Path) -> None:
    pages = [
        b"BT /F1 12 Tf 72 720 Td (Ferry timetable for the island) Tj ET",
        b"0 0 m 100 100 l S",  # a page with no text layer: left out, its number kept
        b"BT /F1 12 Tf 72 720 Td (Radio channel sixteen for emergencies) Tj ET",
    ]
    write(tmp_path / "guide.pdf", make_pdf(pages))
    document = doc(tmp_path, "guide.pdf")
    assert [s.kind for s in document.spans] == ["page", "page"]
    assert [s.label for s in document.spans] == ["1", "3"]
    assert [document.text[s.start : s.end] for s in document.spans] == [
        "Ferry timetable for the island",
        "Radio channel sixteen for emergencies",
    ]
    assert not document.line_mapped


def test_registry_names_a_module_per_format_family() -> None:
    for ext in (".md", ".markdown", ".txt", ".rst"):
        assert reader_for(ext) is not None and reader_for(ext).module == "text"  # type: ignore[union-attr]
    assert reader_for(".pdf").module == "pdf"  # type: ignore[union-attr]
    assert reader_for(".exe") is None


def test_source_span_is_plain_data() -> None:
    span = SourceSpan(0, 4, "slide", "2")
    assert (span.start, span.end, span.kind, span.label) == (0, 4, "slide", "2")

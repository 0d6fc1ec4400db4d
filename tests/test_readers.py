"""The reader registry and what each reader keeps: text, title, headings, source spans."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from locallens.domain import Document, Skipped, SourceSpan
from locallens.readers import read_document
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


def _pdf_lines(lines: list[str]) -> bytes:
    """A page's content stream: each line of `lines` 14 points below the one before."""
    shown = b" 0 -14 Td ".join(b"(" + line.encode("latin-1") + b") Tj" for line in lines)
    return b"BT /F1 11 Tf 72 720 Td " + shown + b" ET"


def test_pdf_running_heads_and_feet_are_not_the_documents_text(tmp_path: Path) -> None:
    bodies = [
        "Boarding closes ten minutes before",
        "Bicycles ride free on the lower deck",
        "Dogs stay on a lead",
        "Tickets are sold at the pier",
    ]
    pages = [
        _pdf_lines([f"Chapter 2: Ferry rules {10 + n}", body, f"Island Ferries Handbook 2026 page {n + 1}"])
        for n, body in enumerate(bodies)
    ]
    write(tmp_path / "handbook.pdf", make_pdf(pages))
    document = doc(tmp_path, "handbook.pdf")
    assert [document.text[s.start : s.end] for s in document.spans] == bodies
    assert [s.label for s in document.spans] == ["1", "2", "3", "4"]


def test_pdf_a_line_repeated_on_a_few_scattered_pages_is_kept() -> None:
    from locallens.readers.pdf import clean_pages

    words = ["harbour", "tide", "ferry", "pier", "deck", "cabin", "anchor", "mooring", "buoy", "lighthouse"]
    pages = [f"Slide {n}\nThe {words[n % 10]} and the {words[(3 * n) % 10]} {n}" for n in range(30)]
    for n in (2, 14, 27):  # the same title on three slides far apart: a title, not a running head
        pages[n] = f"Results\nThe {words[n % 10]} and the {words[(3 * n) % 10]} {n}"
    cleaned = clean_pages(pages)
    assert all(cleaned[n].startswith("Results\nThe ") for n in (2, 14, 27))
    assert cleaned[5] == "The cabin and the cabin 5"  # "Slide N" runs over the deck: a running head


def test_pdf_pages_of_one_repeated_line_keep_it() -> None:
    from locallens.readers.pdf import clean_pages

    assert clean_pages(["Readable despite its xref"] * 3) == ["Readable despite its xref"] * 3


def test_pdf_words_broken_at_a_lines_end_are_joined() -> None:
    from locallens.readers.pdf import clean_pages

    page = "Bash handles several filenames spe-\ncially when the value is non-\nzero, and lets a user re-\nedit a failed sub-\nstitution.\nThe --no-\nclobber flag; Line-\nStart"
    assert clean_pages([page]) == [
        "Bash handles several filenames specially when the value is non-zero, and lets a user re-edit a "
        "failed substitution.\nThe --no-\nclobber flag; Line-\nStart"
    ]


def test_pdf_typesetting_characters_are_plain_ones() -> None:
    from locallens.readers.pdf import clean_pages

    assert clean_pages(["the ﬁrst ﬂag −e, a hy\u00adphen and a bro\u00ad\nken word"]) == [
        "the first flag -e, a hyphen and a broken word"
    ]


def test_pdf_words_are_spaced_as_the_page_shows_them() -> None:
    """A page of Bash's manual page as Debian's bash-doc ships it (groff through Ghostscript,
    GPL-3): its words are set in pieces placed by their positions ("in" / "vo" / "cation").
    pypdf read "upon in vocation", "whether e xecuted", "to in voke t he shell"."""
    from locallens.readers.pdf import read as read_pdf

    text = " ".join(read_pdf((FIXTURES / "bash-manual-page.pdf").read_bytes(), ".pdf").text.split())
    for words in (
        "as specified upon invocation, by the set builtin command",
        "whether executed as an asynchronous command",
        "used to invoke the shell or shell script being executed",
    ):
        assert words in text


def test_pdf_words_pdfium_marks_as_broken_are_joined_by_the_same_rule() -> None:
    from locallens.readers.pdf import clean_pages

    # PDFium drops the line break after a hyphen it takes for a broken word and marks the hyphen.
    assert clean_pages(["the last com\ufffemand with a non\ufffezero status; \ufffe and x\ufffe"]) == [
        "the last command with a non-zero status; - and x-"
    ]


def test_pdf_definition_terms_are_marked_as_the_page_lays_them_out(tmp_path: Path) -> None:
    """A term over its description indented under it reads `term::`, a short term beside its
    description past a wide gap `term  description` (as the HTML reader writes a `<dt>`); a
    bullet's wrapped line, a heading's sentence and a justified line's wide space stay as they are."""
    lines = [
        (72, "SECONDS"),
        (108, "Each time this parameter is referenced, it expands to seconds."),
        (72, "PWD"),
        (144, "The current working directory as set by the cd builtin."),
        (72, "- Waders for the"),
        (84, "river crossing, checked yearly."),
        (72, "It ends here."),
        (108, "An indented quotation."),
    ]
    shown = b" ".join(b"1 0 0 1 %d %d Tm (%s) Tj" % (x, 720 - 14 * n, t.encode()) for n, (x, t) in enumerate(lines))
    # PWD is set beside its description at 144 pt, as a manual page sets a short term.
    shown = shown.replace(
        b"1 0 0 1 72 692 Tm (PWD) Tj 1 0 0 1 144 678 Tm", b"1 0 0 1 72 692 Tm (PWD) Tj 1 0 0 1 144 692 Tm"
    )
    write(tmp_path / "vars.pdf", make_pdf([b"BT /F1 11 Tf " + shown + b" ET"]))
    assert doc(tmp_path, "vars.pdf").text.split("\n") == [
        "SECONDS::",
        "Each time this parameter is referenced, it expands to seconds.",
        "PWD  The current working directory as set by the cd builtin.",
        "- Waders for the",
        "river crossing, checked yearly.",
        "It ends here.",
        "An indented quotation.",
    ]


def test_pdf_marked_terms_are_definitions_to_the_answer_units() -> None:
    from locallens.readers.pdf import read as read_pdf
    from locallens.units import DEFINITION, excerpt_units

    text = read_pdf((FIXTURES / "bash-manual-page.pdf").read_bytes(), ".pdf").text
    assert "\nBASHPID::\nExpands to the process ID of the current bash process." in text
    units = excerpt_units(text, 1)
    assert any(u.kind == DEFINITION and u.term.rstrip(":") == "BASHPID" for u in units)


def test_damaged_pdfs_are_read_or_skipped_with_a_reason() -> None:
    """PDFium is native code: bytes overwritten, cut out or inserted anywhere in real PDFs give a
    document or a skip with its reason, never another exception (nor a crash of the process)."""
    import random

    from locallens.readers.base import ReadSkip
    from locallens.readers.pdf import read as read_pdf

    rng = random.Random(7)
    sources = [
        (FIXTURES / name).read_bytes() for name in ("handbook.pdf", "bash-manual-page.pdf", "users-and-groups.pdf")
    ]
    outcomes = []
    for n in range(45):
        data = bytearray(sources[n % 3])
        at = rng.randrange(len(data))
        if n % 3 == 0:
            for _ in range(rng.randint(1, 40)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif n % 3 == 1:
            del data[at : at + rng.randint(1, 4000)]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        try:
            outcomes.append(bool(read_pdf(bytes(data), ".pdf").text))
        except ReadSkip as skip:
            assert skip.reason.startswith(("cannot read PDF: ", "PDF has no extractable text")), skip.reason
            outcomes.append(False)
    assert any(outcomes) and not all(outcomes)  # some still read, some not: both paths taken


def test_pdfs_read_in_several_threads_at_once_read_as_in_one(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from locallens.readers.pdf import read as read_pdf

    files = [FIXTURES / name for name in ("handbook.pdf", "users-and-groups.pdf", "bash-manual-page.pdf")] * 4
    alone = [read_pdf(path.read_bytes(), ".pdf").text for path in files]
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda path: read_pdf(path.read_bytes(), ".pdf").text, files))
    assert together == alone


def test_registry_names_a_module_per_format_family() -> None:
    for ext in (".md", ".markdown", ".txt", ".rst"):
        assert reader_for(ext) is not None and reader_for(ext).module == "text"  # type: ignore[union-attr]
    assert reader_for(".pdf").module == "pdf"  # type: ignore[union-attr]
    assert reader_for(".exe") is None


def test_source_span_is_plain_data() -> None:
    span = SourceSpan(0, 4, "slide", "2")
    assert (span.start, span.end, span.kind, span.label) == (0, 4, "slide", "2")


# --- every format, on the fixtures of tests/data/formats ---------------------------------------

FIXTURES = Path(__file__).resolve().parent / "data" / "formats"


def fixture(name: str) -> Document:
    from locallens.domain import FileStat

    path = FIXTURES / name
    st = path.stat()
    result = read_document(FileStat(str(FIXTURES), name, str(path), st.st_size, st.st_mtime_ns))
    assert isinstance(result, Document), result
    return result


def skipped(name: str) -> Skipped:
    from locallens.domain import FileStat

    path = FIXTURES / name
    st = path.stat()
    result = read_document(FileStat(str(FIXTURES), name, str(path), st.st_size, st.st_mtime_ns))
    assert isinstance(result, Skipped), result
    return result


HANDBOOK_HEADINGS = (
    (1, "Field Station Handbook"),
    (2, "Arrival"),
    (2, "Equipment"),
    (2, "Contacts"),
    (3, "Emergencies"),
)


@pytest.mark.parametrize("name", ["handbook.docx", "handbook.odt"])
def test_word_processor_files_keep_headings_nested_lists_and_tables(name: str) -> None:
    document = fixture(name)
    assert document.title == "Field Station Handbook"
    assert document.headings == HANDBOOK_HEADINGS
    assert "## Arrival\n\nThe ferry to the field station leaves Port Ellen at 07:40 every Tuesday." in document.text
    assert (
        "- Waders\n  - Chest waders for the estuary\n  - Hip waders for the streams\n- A headlamp with spare batteries\n"
        "1. Sign the logbook\n2. Check the radio"
    ) in document.text
    assert "| Role | Name | Extension |\n| Station manager | Ingrid Solberg | 4417 |" in document.text
    # Cited by paragraph: every heading, paragraph, list item and whole table, numbered from 1.
    assert not document.line_mapped
    paras = {span.label: document.text[span.start : span.end] for span in document.spans}
    assert {span.kind for span in document.spans} == {"para"}
    assert list(paras) == [str(n) for n in range(1, len(paras) + 1)]
    assert paras["1"] == "# Field Station Handbook" and paras["3"].startswith("The ferry to the field station")
    assert paras["6"] == "  - Chest waders for the estuary"  # a list item is a paragraph of its own
    assert "| Station manager | Ingrid Solberg | 4417 |" in next(p for p in paras.values() if p.startswith("| Role"))


def test_real_word_and_opendocument_files_read_the_same_text() -> None:
    docx, odt = fixture("users-and-groups.docx"), fixture("users-and-groups.odt")
    assert docx.title == odt.title == "Users and Groups in the Debian System"
    assert docx.text == odt.text and len(docx.text) > 10_000
    assert "Chapter 2. Users and Groups" in [h for _, h in docx.headings]
    assert fixture("python-docx-test.docx").headings == ((1, "python-docx was here!"),)


def test_epub_chapters_in_spine_order_with_their_headings() -> None:
    document = fixture("handbook.epub")
    assert document.title == "Field Station Handbook"
    assert document.headings == HANDBOOK_HEADINGS
    assert document.text.index("Port Ellen") < document.text.index("Ingrid Solberg") < document.text.index("coastguard")
    assert "| Station manager | Ingrid Solberg | 4417 |" in document.text  # a table row on one line
    assert "- Waders\n  - Chest waders for the estuary" in document.text  # list markers kept
    # Cited by the chapter file inside the book and its lines.
    source = FIXTURES.joinpath("handbook.epub")
    with zipfile.ZipFile(source) as book:
        for span in document.spans:
            assert span.kind == "chapter" and span.line_start is not None and span.line_end is not None
            lines = book.read(span.label).decode("utf-8").split("\n")[span.line_start - 1 : span.line_end]
            words = re.findall(r"\w+", re.sub(r"^ *(?:-|\d+\.) ", "", document.text[span.start : span.end]))
            assert words and all(word in "\n".join(lines) for word in words)
    real = fixture("users-and-groups.epub")  # LibreOffice's export: headings as styled paragraphs
    assert real.title == "Users and Groups in the Debian System" and "Joey Hess" in real.text


@pytest.mark.parametrize("name", ["deck.pptx", "deck.odp"])
def test_slides_are_units_with_their_titles_bullets_tables_and_notes(name: str) -> None:
    document = fixture(name)
    assert document.title == "Quarterly Review"
    assert document.headings == ((1, "Quarterly Review"), (1, "Sales by Region"), (1, "Headcount"))
    assert [(s.kind, s.label) for s in document.spans] == [("slide", "1"), ("slide", "2"), ("slide", "3")]
    third = document.text[document.spans[2].start : document.spans[2].end]
    assert third.startswith("# Headcount") and "| Lisbon | 17 |" in third
    assert "Notes: The Lisbon office opens a second floor in March." in third
    second = document.text[document.spans[1].start : document.spans[1].end]
    assert "  - Oslo sales rose by 18 percent" in second
    assert "<number>" not in document.text  # the master's slide-number placeholder


@pytest.mark.parametrize("name", ["budget.xlsx", "budget.ods"])
def test_sheets_are_tables_with_every_row_whole_and_cited_by_row(name: str) -> None:
    document = fixture(name)
    assert document.headings == ((1, "Budget"), (1, "Staff"))
    rows = {s.label: document.text[s.start : s.end] for s in document.spans}
    assert all(s.kind == "sheet" for s in document.spans)
    assert rows["Budget!1"] == "Project | Owner | Budget | Start"
    assert rows["Budget!2"] == "Project: Kestrel | Owner: Ana Lima | Budget: 48500 | Start: 2026-03-01"
    assert rows["Budget!5"] == "Project: Total | Budget: 70650.5"  # a formula, as last computed
    assert rows["Staff!3"] == "Name: Ben Okafor | Office: Lisbon"
    # One row, one paragraph: the chunker never cuts a row in two.
    assert all(f"\n\n{row}" in document.text or document.text.startswith(row) for row in rows.values())


def test_notebook_markdown_and_code_cells_without_outputs() -> None:
    document = fixture("tides.ipynb")
    assert document.title == "Tide Analysis"
    assert document.headings == ((1, "Tide Analysis"), (2, "Loading the gauge data"), (2, "Result"))
    assert "```python\nimport pandas as pd\ntides = pd.read_csv('gauge.csv')\n```" in document.text
    assert "OUTPUT-THAT-MUST-NOT-BE-INDEXED" not in document.text
    assert [(s.kind, s.label) for s in document.spans] == [("cell", str(n)) for n in range(1, 5)]
    real = fixture("nbformat-test4.ipynb")
    assert real.title == "nbconvert latex test" and (2, "Printed Using Python") in real.headings


def test_org_is_line_mapped_with_its_outline_as_headings() -> None:
    document = fixture("journal.org")
    assert document.line_mapped and document.title == "Garden Journal"
    assert document.headings == ((1, "Planting"), (2, "Sow the beans"), (2, "Prune the apple tree"), (1, "Harvest"))
    assert document.text == (FIXTURES / "journal.org").read_text().strip()
    from locallens.headers import headings

    marks = headings(document)
    assert [m.text for m in marks] == ["Planting", "Sow the beans", "Prune the apple tree", "Harvest"]
    assert document.text[marks[1].position :].startswith("** TODO Sow the beans")  # its line


def test_email_subject_is_the_title_and_the_headers_are_kept() -> None:
    document = fixture("offsite.eml")
    assert document.title == "Offsite moves to the Harbour Room"
    assert document.text.startswith(
        "# Offsite moves to the Harbour Room\n\nFrom: Priya Natarajan <priya@example.org>\nTo: team@example.org\n"
        "Date: Mon, 04 May 2026 09:15:00 +0100"
    )
    digest = fixture("digest.eml")  # a real multipart digest from CPython's tests
    assert digest.title == "Ppp digest, Vol 1 #2 - 5 msgs" and "Send Ppp mailing list submissions" in digest.text


def test_mbox_messages_are_cited_by_their_lines_and_escaped_from_lines_are_restored() -> None:
    document = fixture("archive.mbox")
    assert document.text.count("# ") == 4  # four messages, each under its subject
    last = document.text[document.text.rindex("# Offsite") :]
    assert last.startswith("# Offsite moves to the Harbour Room\n\nFrom: Priya Natarajan")
    assert "\nFrom now on bring your own laptop charger." in last and ">From" not in last
    # Every block is cited by the file's lines: the subject by its header, a body line by its own.
    lines = FIXTURES.joinpath("archive.mbox").read_text().split("\n")
    assert {span.kind for span in document.spans} == {"lines"}
    for span in document.spans:
        assert span.line_start is not None and span.line_end is not None
        source = "\n".join(lines[span.line_start - 1 : span.line_end])
        text = document.text[span.start : span.end].removeprefix("# ")
        assert all(word in source for word in re.findall(r"[\w@.]+", text) if word != "Subject"), (span, text)
    charger = next(s for s in document.spans if "charger" in document.text[s.start : s.end])
    assert lines[charger.line_start - 1] == ">From now on bring your own laptop charger."  # type: ignore[operator]


def test_chunk_headers_carry_the_heading_path_of_an_office_document() -> None:
    from locallens.headers import chunk_headers

    document = fixture("handbook.docx")
    piece = "In an emergency, call the coastguard on radio channel 16."
    assert chunk_headers(document, [piece]) == ["Field Station Handbook > Contacts > Emergencies"]
    deck = fixture("deck.pptx")
    assert chunk_headers(deck, ["| Oslo | 42 |"]) == ["Quarterly Review > Headcount"]


# --- the edge cases: each a counted skip with its reason, never a traceback --------------------


@pytest.mark.parametrize(
    ("name", "reason", "error"),
    [
        ("corrupt.docx", "cannot read DOCX: not a valid zip file", True),
        ("bomb.docx", "cannot read DOCX: refused, word/document.xml unpacks", True),
        ("entities.docx", "cannot read DOCX: refused, word/document.xml declares XML entities", True),
        ("encrypted.docx", "cannot read DOCX: encrypted (password required)", True),
        ("encrypted.odt", "cannot read ODT: encrypted (password required)", True),
        ("images-only.docx", "DOCX has no text (empty, or images only)", False),
    ],
)
def test_bad_office_files_are_counted_skips(name: str, reason: str, error: bool) -> None:
    result = skipped(name)
    assert result.reason.startswith(reason) and result.error is error


def test_a_zip_with_too_many_members_or_too_much_unpacked_is_refused(tmp_path: Path) -> None:
    import zipfile

    from locallens.readers import safety

    many = tmp_path / "many.xlsx"
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(safety.MAX_MEMBERS + 1):
            archive.writestr(f"x/{i}.bin", b"")
    assert read(tmp_path, "many.xlsx").reason.startswith("cannot read XLSX: refused, 10001 zip members")  # type: ignore[union-attr]
    big = tmp_path / "big.epub"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(3):  # each under the ratio limit (random-ish bytes), together over the cap
            archive.writestr(f"part{i}.bin", bytes(range(256)) * (safety.MAX_UNPACKED // 256 // 3 + 1))
    result = read(tmp_path, "big.epub")
    assert isinstance(result, Skipped) and "zip bomb" in result.reason


def test_entity_declarations_are_refused_in_a_spreadsheet_too(tmp_path: Path) -> None:
    import zipfile

    source = FIXTURES / "budget.xlsx"
    target = tmp_path / "laughs.xlsx"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "xl/sharedStrings.xml":
                data = data.replace(b"?>", b'?><!DOCTYPE sst [<!ENTITY a "aaaaaaaaaa">]>', 1)
            dst.writestr(item, data)
    result = read(tmp_path, "laughs.xlsx")
    assert isinstance(result, Skipped) and "declares XML entities" in result.reason


def test_a_missing_format_library_is_a_skip_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import sys

    shutil.copy(FIXTURES / "deck.pptx", tmp_path / "deck.pptx")
    monkeypatch.setitem(sys.modules, "pptx", None)  # as if python-pptx were not installed
    result = read(tmp_path, "deck.pptx")
    assert result == Skipped("deck.pptx", "needs python-pptx: pip install 'python-pptx'", error=False)


def test_images_are_documents_only_when_ocr_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from locallens.readers import ocr, registry
    from tests.test_sources import rels, walked

    write(tmp_path / "scan.png", b"\x89PNG")
    write(tmp_path / "note.md", "x")
    for present in (False, True):
        monkeypatch.setattr(ocr, "available", lambda present=present: present)
        registry.extensions.cache_clear()
        assert rels(walked(tmp_path)) == (["note.md", "scan.png"] if present else ["note.md"])
    registry.extensions.cache_clear()


def test_a_scanned_pdf_without_ocr_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from locallens.readers import ocr

    monkeypatch.setattr(ocr, "available", lambda: False)
    result = skipped("scanned.pdf")
    assert result.reason == f"PDF has no extractable text ({ocr.ENGINE_HINT})" and not result.error


def test_a_reader_failing_on_a_malformed_file_is_a_skip_not_a_traceback(tmp_path: Path) -> None:
    write(tmp_path / "broken.ipynb", "{not json")
    write(tmp_path / "list.ipynb", "[1, 2]")
    write(tmp_path / "nothing.eml", "\n\njust a body")
    write(tmp_path / "plain.mbox", "no envelope line here\n")
    assert read(tmp_path, "broken.ipynb").reason.startswith("cannot read notebook: invalid JSON")  # type: ignore[union-attr]
    assert read(tmp_path, "list.ipynb").reason == "cannot read notebook: not a Jupyter notebook"  # type: ignore[union-attr]
    assert read(tmp_path, "nothing.eml").reason == "cannot read e-mail: no headers"  # type: ignore[union-attr]
    assert read(tmp_path, "plain.mbox").reason.startswith("cannot read mbox")  # type: ignore[union-attr]
    write(tmp_path / "fake.odp", b"PK\x03\x04 not really")
    assert read(tmp_path, "fake.odp").reason.startswith("cannot read ODP: not a valid zip file")  # type: ignore[union-attr]


ADOC = FIXTURES / "ferryctl-cache.adoc"


def test_asciidoc_is_read_line_for_line_with_its_markup_lines_made_plain(tmp_path: Path) -> None:
    """Titles become `#` headings, a listing block a code fence, setup lines (attributes,
    comments) blank lines; every line stays where it was, so `path:LINE` is the file's line."""
    document = fixture("ferryctl-cache.adoc")
    source = ADOC.read_text().strip().split("\n")
    lines = document.text.split("\n")
    assert document.line_mapped and len(lines) == len(source)
    assert document.title == "ferryctl-cache(1)"
    assert document.headings[:3] == ((1, "ferryctl-cache(1)"), (2, "NAME"), (2, "SYNOPSIS"))
    assert lines[source.index("== OPTIONS")] == "## OPTIONS"
    for markup in (
        ":doctype: manpage",
        "[verse]",
        "[source,shell]",
        "// The socket layout changed in 2.3; see the release notes.",
    ):
        assert lines[source.index(markup)] == ""
    exit_line = source.index("ferryctl token-cache exit")
    assert lines[exit_line - 1 : exit_line + 2] == ["```", "ferryctl token-cache exit", "```"]
    # Content lines are the file's own.
    assert lines[source.index("--timeout <seconds>::")] == "--timeout <seconds>::"
    assert reader_for(".adoc").module == reader_for(".asciidoc").module == "asciidoc"  # type: ignore[union-attr]


def test_an_asciidoc_literal_paragraph_is_a_code_block_and_list_text_is_not() -> None:
    """An indented paragraph after a blank line renders preformatted: the blank lines around it
    become its fences (every line in place) and its lines stay as written. An indented list item,
    a labeled list's entry, a description below its term, a note that reads as prose and a
    paragraph with no blank line to close it stay text."""
    from locallens.readers.asciidoc import plain_lines

    source = [
        "Options can also be set in the source file. For example:",
        "",
        "  // a2x: -dbook --epubcheck",
        "  //    a2x: --dblatex-opts {litdd}verbose",
        "",
        "  // a second paragraph, the same block",
        "",
        "--keep::",
        "  Keep the files.",
        "",
        "--dry-run::",
        "",
        "  Do not do anything.",
        "",
        "Formats:",
        "",
        "  * pdf",
        "  chunked;; The output directory.",
        "",
        "  - Fetching all refs",
        "",
        "    Note that this step may discard local changes.",
        "",
        "The end, indented:",
        "",
        "  no blank line below",
    ]
    out = plain_lines("\n".join(source))[0].split("\n")
    assert len(out) == len(source)
    assert out[1:7] == [
        "```",
        "  // a2x: -dbook --epubcheck",
        "  //    a2x: --dblatex-opts {litdd}verbose",
        "",
        "  // a second paragraph, the same block",
        "```",
    ]
    assert out[7:] == source[7:]


def test_an_asciidoc_example_after_its_setup_line_is_one_answer_unit_under_it() -> None:
    """The literal paragraph an "For example:" line introduces is a code unit with that setup."""
    from locallens.readers.asciidoc import plain_lines
    from locallens.units import CODE, excerpt_units

    text = plain_lines("Set the options in the file itself, for example:\n\n  // a2x: -dbook\n\nThen run it.")[0]
    units = excerpt_units(text, 1)
    code = next(u for u in units if u.kind == CODE)
    assert code.text == "```\n  // a2x: -dbook\n```"
    assert code.setup is not None
    assert next(u for u in units if u.index == code.setup).text == "Set the options in the file itself, for example:"


def test_an_asciidoc_implicit_ordered_list_is_numbered_as_the_page_shows_it() -> None:
    """`. step` items are numbered per level and list, so each is a list item of its own, not a
    stop left at the end of the line above it; prose beginning with dots stays as written."""
    from locallens.readers.asciidoc import plain_lines
    from locallens.units import ITEM, excerpt_units

    source = (
        "= T\n\nIt looks in these places, in order:\n\n. The source directory.\n. Directories given"
        " by the\n  --resource option.\n.. nested one\n.. nested two\n. The destination.\n\nAfter the list.\n\n"
        ". again\n\n== Next\n\n. first\n\nSome prose\n... continues here\n"
    )
    plain = plain_lines(source)[0]
    assert len(plain.split("\n")) == len(source.split("\n"))
    assert [line for line in plain.split("\n") if line[:1].isdigit()] == [
        "1. The source directory.",
        "2. Directories given by the",
        "1. nested one",
        "2. nested two",
        "3. The destination.",
        "1. again",
        "1. first",
    ]
    assert "... continues here" in plain
    items = [u.text for u in excerpt_units(plain, 1) if u.kind == ITEM]
    assert items[:2] == ["1. The source directory.", "2. Directories given by the\n  --resource option."]


def test_a_txt_file_is_read_as_asciidoc_only_when_it_is_asciidoc(tmp_path: Path) -> None:
    manual = ADOC.read_text().replace("= ferryctl-cache(1)", "ferryctl-cache(1)\n=================")
    write(tmp_path / "manual.txt", manual)
    assert "## OPTIONS" in doc(tmp_path, "manual.txt").text
    # A two-line title over a line of `~` is a title, not a code fence that swallows the page.
    write(tmp_path / "guide.adoc", "Guide\n=====\n\nSetup\n~~~~~\n\nRun it twice.\n")
    assert doc(tmp_path, "guide.adoc").text.split("\n") == ["# Guide", "", "", "### Setup", "", "", "Run it twice."]
    # A fragment other pages include: no title, but two constructs only AsciiDoc has.
    fragment = "ifdef::git-diff[]\n--stat::\n\tGenerate a diffstat.\n+\n----\n$ frob --stat\n----\nendif::git-diff[]\n"
    write(tmp_path / "diff-options.txt", fragment)
    included = doc(tmp_path, "diff-options.txt")
    assert included.line_offset == 1  # the `ifdef::` line, blank and stripped, is still counted
    assert included.text.split("\n") == [
        "--stat::",
        "\tGenerate a diffstat.",
        "",
        "```",
        "$ frob --stat",
        "```",
    ]
    # Markdown with a setext title and rules, and reStructuredText, stay as written.
    markdown = "Notes\n=====\n\nFirst part.\n\n----\n\nSecond part.\n\n----\n\n- item::\n    indented\n"
    write(tmp_path / "notes.txt", markdown)
    assert doc(tmp_path, "notes.txt").text == markdown.strip()
    rest = "Guide\n=====\n\n.. note::\n\n   Read this.\n\n:param x: a value\n"
    write(tmp_path / "rest.txt", rest)
    assert doc(tmp_path, "rest.txt").text == rest.strip()


def test_asciidoc_inline_markup_is_rendered_as_the_page_shows_it(tmp_path: Path) -> None:
    """A manual page's references, attributes, links, anchors and strong marks read as the rendered
    page: `linkgit:quill-config[1]` is "quill-config(1)", not a name followed by what looks like a
    citation; an attribute set in the file or built in is its value; unknown ones stay."""
    from locallens.readers.asciidoc import render_inline

    page = (
        "quill-stash-keep(1)\n===================\n\n:pocket-dir: $QUILL_DIR/pocket\n\n"
        "'quill stash-keep' {litdd}list\n\n"
        "Drafts live in `{pocket-dir}` (see linkgit:quill-config[1] and <<expiry,Expiry>>).\n\n"
        "[[expiry]]*--expire*=<time>::\n\tForget drafts older than `<time>`.{nbsp}See man:cron[8].\n"
    )
    write(tmp_path / "quill-stash-keep.txt", page)
    lines = doc(tmp_path, "quill-stash-keep.txt").text.split("\n")
    assert len(lines) == len(page.strip().split("\n"))
    assert lines[5] == "'quill stash-keep' --list"
    assert lines[7] == "Drafts live in `$QUILL_DIR/pocket` (see quill-config(1) and Expiry)."
    assert lines[9:11] == ["--expire=<time>::", "\tForget drafts older than `<time>`. See cron(8)."]
    cases = {
        "read link:faq.html[the FAQ] or https://example.org[the site] or https://x.org[]": (
            "read the FAQ or the site or https://x.org"
        ),
        'link:faq.html["the FAQ",window=_blank] and xref:limits[] and <<_exit_status>>': (
            "the FAQ and limits and exit status"
        ),
        "press kbd:[Ctrl+T], then btn:[Save] in menu:File[Save > As]": "press Ctrl+T, then Save in File > Save > As",
        "An aside.footnote:[Since 2.3.] image:logo.png[Logo] anchor:here[]": "An aside. (Since 2.3.)",
        # Strong marks go, but not `*` in code, in a bullet, or between spaces.
        "run `*.py` and *bold words* here, not 2 * 3 * 4": "run `*.py` and bold words here, not 2 * 3 * 4",
        "* an item with **strong text**": "* an item with strong text",
        # Unknown and escaped attributes stay as written.
        "{unknown} and \\{litdd}": "{unknown} and {litdd}",
        "Plain prose, with a colon: and [brackets].": "Plain prose, with a colon: and [brackets].",
    }
    for line, rendered in cases.items():
        assert render_inline(line) == rendered


def test_asciidoc_inline_markup_on_an_adversarial_line_is_rendered_in_linear_time() -> None:
    """Unclosed macros, references and marks repeated on one long line: every pattern is bounded,
    so a line of 300 KB is read in well under a second (unbounded, the first took minutes)."""
    from locallens.readers.asciidoc import render_inline

    for unit in ("<<a, b ", "[[a,b ", "**a ", "link:[a ", "http:", "linkgit:a ", "{a "):
        line = unit * (300_000 // len(unit))
        assert len(render_inline(line)) > 0


def test_asciidoc_literal_paragraphs_by_the_thousand_are_read_in_linear_time() -> None:
    """Every indented paragraph after a blank line is a literal paragraph to check (its list
    above, its end below): 60,000 of them, and as many after one long run of blank lines, are read
    in under a second (looking above each by copying the lines before it took 17 s, quadratic)."""
    import time

    from locallens.readers.asciidoc import plain_lines

    started = time.perf_counter()
    for text in ("\n\n".join(f"  $ run {i}" for i in range(60_000)), "\n" * 60_000 + "\n\n".join(["  x"] * 60_000)):
        assert len(plain_lines(text)[0].split("\n")) == len(text.split("\n"))
    assert time.perf_counter() - started < 6


_ADOC_LINES = st.sampled_from(
    [
        "",
        "Title",
        "=====",
        "-----",
        "~~~~~",
        "----",
        "....",
        "====",
        "--",
        "////",
        "+",
        "[verse]",
        "[[anchor]]",
        ":doctype: manpage",
        "// a comment",
        "include::other.txt[]",
        "== Section",
        "--flag::",
        "\tIts description.",
        "Plain prose line.",
        "* an item",
        "See linkgit:frob-config[1] and <<limits>>.",
        "[[keep]]*--keep*::",
        "{litdd}list {nbsp}",
    ]
)


@given(st.lists(_ADOC_LINES, max_size=40))
def test_asciidoc_keeps_every_line_in_place(lines: list[str]) -> None:
    """Whatever the markup, the text keeps the file's line count (citations are the file's
    lines), and a line is either kept, made blank, a fence, or a title made a `#` heading."""
    from locallens.readers.asciidoc import plain_lines, render_inline

    text = "\n".join(lines)
    lines = text.split("\n")
    plain, _headings = plain_lines(text)
    out = plain.split("\n")
    assert len(out) == len(lines)
    for before, after in zip(lines, out, strict=True):
        rendered = render_inline(before)
        # A literal paragraph's lines are as written, its fences where blank lines were.
        assert after in (rendered, before, "", "```") or (after.startswith("#") and after.lstrip("# ") in rendered)
        assert after != "```" or not before.strip() or before.startswith(("----", "....", "++++"))


# A manual page as `man tar > tar.txt` saves it: a running head, section titles at the margin, the
# body indented 7 columns (some of it with tabs), an option over its indented description, a word
# hyphenated at a line's end with U+2010.
MANPAGE = (
    "TAR(1)\t\t\t\tGNU TAR Manual\t\t\t\tTAR(1)\n\n"
    "NAME\n       tar - an archiving utility\n\n"
    "DESCRIPTION\n   Option styles\n       GNU tar is an archiving program designed to store multiple files in a sin\u2010\n"
    "       gle file (an archive), and to manipulate such archives.\n\n"
    "OPTIONS\n   Operation mode\n       -t, --list\n\t      List the contents of an archive.  Arguments are optional.\n\n"
    "\t      Example:\n\n\t\t     $ tar -tf archive.tar\n\n"
    "       -n, --quiet, --silent\n\n\t      suppress  automatic printing of pattern space\n\n"
    "GNU TAR 1.34\t\t\t November 2020\t\t\t\tTAR(1)\n"
)


def test_a_manual_page_saved_as_text_is_laid_out_for_reading_line_for_line(tmp_path: Path) -> None:
    from locallens.units import excerpt_units

    write(tmp_path / "tar.txt", MANPAGE)
    page = doc(tmp_path, "tar.txt")
    lines = page.text.split("\n")
    assert len(lines) == len(MANPAGE.strip().split("\n"))  # citations stay the file's lines
    assert page.title == "tar - an archiving utility"
    assert lines[0] == "TAR(1) GNU TAR Manual TAR(1)"
    assert lines[-1] == "## GNU TAR 1.34 November 2020 TAR(1)"  # the foot: a title, never an answer
    assert "## OPTIONS" in lines and "### Operation mode" in lines
    # The hyphenated word whole on its line; the body at the margin, a description under its option.
    assert "GNU tar is an archiving program designed to store multiple files in a single" in page.text
    assert "gle file" not in page.text
    # ... and a tail alone on its line gets the head: neither line is left blank.
    from locallens.readers.manpage import extract

    joined = extract(MANPAGE.replace("Arguments are optional.", "The list is a GNU ex\u2010\n\t      tension."))
    assert "The list is a GNU\n       extension." in joined.text
    at = lines.index("-t, --list")
    assert lines[at + 1].startswith("       List the contents of an archive.")
    units = excerpt_units(page.text, 1)
    described = [u for u in units if u.term == "-t, --list"]
    assert [u.text.split("\n")[-1].strip() for u in described] == [
        "List the contents of an archive.",
        "Arguments are optional.",
        "Example:",
    ]
    assert any(u.kind == "code" and "$ tar -tf archive.tar" in u.text for u in units)
    # The spaces justifying a line are one; an option's plain lower-case description is its
    # description, not a code block.
    assert "       suppress automatic printing of pattern space" in lines
    assert [(u.kind, u.term) for u in units if u.text == "suppress automatic printing of pattern space"] == [
        ("definition", "-n, --quiet, --silent")
    ]
    # A BSD page's foot names its system at both ends; a last line of the body is no foot.
    bsd = "SSH(1)\t\t  BSD General Commands Manual\t\t\tSSH(1)\n\nNAME\n     ssh - OpenSSH remote login client\n\n"
    assert extract(bsd + "BSD\t\t\tNovember 28, 2022\t\t\tBSD\n").text.split("\n")[-2] == "## BSD November 28, 2022 BSD"
    assert extract(bsd + "     See ssh_config(5).\n").text.split("\n")[-2] == "See ssh_config(5)."
    # Not a manual page: a text file that only mentions one stays as written.
    write(tmp_path / "notes.txt", "See TAR(1) for details.\n\n       Indented text.\n")
    assert doc(tmp_path, "notes.txt").text == "See TAR(1) for details.\n\n       Indented text."


@given(
    st.lists(
        st.sampled_from(
            ["", "NAME", "   Sub", "       body text here", "\t      desc", "       wor\u2010", "       d end", "x"]
        ),
        max_size=30,
    )
)
def test_a_manual_page_keeps_every_line_in_place(lines: list[str]) -> None:
    from locallens.readers.manpage import extract

    text = "\n".join(["LS(1)    User Commands    LS(1)", *lines])
    assert len(extract(text).text.split("\n")) == len(text.split("\n"))


def test_a_manual_page_s_running_head_is_matched_in_linear_time() -> None:
    """A first line shaped like a running head but long (a crafted file) is no running head, and
    is looked at in a moment, not in the square of its length."""
    import time

    from locallens.readers.manpage import extract, looks_like

    line = "A(1)  x" + " " * 200_000 + "y  A(1)"
    text = f"{line}\n\nNAME\n       a - b\n"
    started = time.perf_counter()
    assert not looks_like(text)
    assert extract(text).text.split("\n")[2] == "## NAME"
    assert time.perf_counter() - started < 2.0

"""PDF: the text layer of every page (PDFium, through pypdfium2), each page cited by its number.

A page without a text layer (a scan) is read by OCR when the `ocr` extra is installed
(`locallens.readers.ocr`); otherwise it is left out, and a PDF with no text at all is a skip
that says how to get OCR.

PDFium places words by their glyphs' positions, as a viewer selects them; it was chosen over
pypdf for its spacing ("in vocation", "e xecuted" were pypdf's text of a groff page) and speed
(docs/decisions.md#pdf-text). The text layer is what the page prints, typesetting and all; three
things of it are not the document's text and are undone (`clean_pages`, docs/formats.md#pdf):
- running heads and feet: a line at a page's top or bottom that stands, its numbers aside, at the
  same edge of a run of pages ("BASH(1) General Commands Manual BASH(1)", "Chapter 4: Shell
  Builtin Commands 74", "GNU Bash 5.2 2022 September 19 35", a page number alone);
- a word hyphenated at a line's end ("spe-" / "cially" is "specially"; "non-" / "zero" stays
  "non-zero", both halves being words and the joined one rarer);
- typesetting characters: ligatures ("ﬁle" is "file"), the minus sign of option dashes ("−e" is
  "-e"), soft hyphens.

PDFium is a native library and not thread-safe: every call into it holds `PDFIUM_LOCK`.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from locallens.readers.base import REASON_ENCRYPTED, Extracted, ReadSkip, TextBuilder, first_line, one_line, require

REASON_PDF_NO_TEXT = "PDF has no extractable text"
# One PDFium call at a time, in any thread (its documentation: no concurrent calls, even on
# different documents). Reentrant: the OCR of a scanned page runs inside the reading of its PDF.
PDFIUM_LOCK = threading.RLock()
# Why PDFium could not open a file, by its error code (FPDF_ERR_*), as a person reads it.
_OPEN_ERRORS = {3: "damaged or not a PDF", 4: REASON_ENCRYPTED, 5: "unsupported encryption"}


def read(data: bytes, ext: str) -> Extracted:
    pdfium = require("pypdfium2", "pypdfium2")
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            # A PDF "encrypted" with an empty user password (permissions only) opens as any other.
            reason = _OPEN_ERRORS.get(getattr(exc, "err_code", None) or 0) or first_line(exc)
            raise ReadSkip(f"cannot read PDF: {reason}", error=True) from None
        try:
            return _read_document(document)
        finally:
            document.close()


def _read_document(document: Any) -> Extracted:
    try:
        pages = [_page_text(document, i) for i in range(len(document))]
    except Exception as exc:  # a page PDFium cannot load (PdfiumError) costs the file, with its reason
        raise ReadSkip(f"cannot read PDF: {first_line(exc)}", error=True) from None
    title = _pdf_title(document)
    # A page without a text layer is taken for a scan: OCR'd when OCR is installed. A page with
    # any text keeps its text layer, which is exact.
    scans = [i for i, page in enumerate(pages) if not page.strip()]
    ocr_hint = ""
    if scans:
        from locallens.readers import ocr

        if ocr.available():
            try:
                for i in scans:
                    pages[i] = ocr.pdf_page_text(document, i)
            except Exception as exc:  # OCR failing costs the scanned pages, not the text layer
                reason = exc.reason if isinstance(exc, ReadSkip) else f"cannot OCR: {first_line(exc)}"
                ocr_hint = f" ({reason})"
        else:
            ocr_hint = f" ({ocr.ENGINE_HINT})"
    pages = clean_pages(pages)
    builder = TextBuilder()
    for number, page in enumerate(pages, start=1):
        builder.begin("page", str(number))
        builder.add(page)
    extracted = builder.result(title)
    if not extracted.text:
        raise ReadSkip(REASON_PDF_NO_TEXT + ocr_hint)
    return extracted


def _page_text(document: Any, index: int) -> str:
    """A page's text layer, its lines ending in "\n" (PDFium writes "\r\n"), a definition's term
    marked where the page lays one out (`_marked_terms`)."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            text = str(textpage.get_text_range()).translate(_UNMARKED)  # a page's own such characters
            if len(text) == textpage.count_chars():  # one character per PDFium character
                text = _marked_terms(text, textpage.get_charbox)
        finally:
            textpage.close()
    finally:
        page.close()
    return text.replace("\r\n", "\n").replace("\r", "\n")


# A definition list as a typeset page lays it out (a manual page's variables and options, a
# reference manual's entries): its term at a line's start, its description indented under it, or
# beside it past a wide gap. The reader marks the term as the HTML reader marks a `<dt>`: `term::`
# over the description, or `term`, two spaces, the description on its line (docs/formats.md#pdf).
# A term line: at most TERM_MAX_CHARS, not a list item (a bullet's wrapped lines are indented
# too) and not ending a sentence or a clause; its description starts at least HANGING_INDENT_PT
# right of it on the next line. A gap after a line's first words (at most TERM_MAX_CHARS, not
# ending a sentence or a clause: "them.  Spend" is a justified line) of at least TERM_GAP_EM times
# the text's height sets a term beside its description.
TERM_MAX_CHARS = 40
HANGING_INDENT_PT = 18.0
TERM_GAP_EM = 1.5
# Private marks until the running heads are gone (a marked head would no longer look like its
# neighbours' heads): `clean_pages` turns them into "::" and two spaces.
_TERM_MARK = "\ue000"
_GAP_MARK = "\ue001"
_UNMARKED = str.maketrans({_TERM_MARK: " ", _GAP_MARK: " "})
_LIST_ITEM = re.compile(r"^\s*(?:[•·◦▪‣*–-]|\d+[.)]|[a-z][.)])\s")
_CLAUSE_END = ".?!:;,-\ufffe"


def _marked_terms(text: str, box: Any) -> str:
    """`text` (one page, lines ending in "\r\n") with its definition terms marked; `box(i)` is
    character i's (left, bottom, right, top) on the page."""
    lines = text.split("\r\n")
    starts: list[int] = []
    lefts: list[float | None] = []
    at = 0
    for line in lines:
        lead = len(line) - len(line.lstrip())
        starts.append(at)
        lefts.append(box(at + lead)[0] if line.strip() else None)
        at += len(line) + 2
    out = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        left, following = lefts[i], lefts[i + 1] if i + 1 < len(lines) else None
        if (
            left is not None
            and following is not None
            and following >= left + HANGING_INDENT_PT
            and len(stripped) <= TERM_MAX_CHARS
            and stripped[-1] not in _CLAUSE_END
            and not _LIST_ITEM.match(line)
        ):
            out.append(line + _TERM_MARK)
            continue
        gap = line.find(" ", len(line) - len(line.lstrip()))
        if (
            stripped
            and 0 < gap <= TERM_MAX_CHARS
            and gap + 1 < len(line)
            and line[gap + 1] != " "
            and line[gap - 1] not in _CLAUSE_END
        ):
            first, bottom, last, top = box(starts[i] + gap - 1)  # the term's last character
            after = box(starts[i] + gap + 1)[0]
            if last > first and after - last >= TERM_GAP_EM * (top - bottom):
                out.append(line[:gap] + _GAP_MARK + line[gap + 1 :])
                continue
        out.append(line)
    return "\r\n".join(out)


def _pdf_title(document: Any) -> str:
    """The document information's /Title, when it has a readable one."""
    try:
        title = document.get_metadata_value("Title")
    except Exception:  # a broken info dictionary costs the title, not the document
        return ""
    if not isinstance(title, str):
        return ""
    return one_line(title.replace("\x00", "").encode("utf-8", "replace").decode("utf-8"))


# Typesetting characters that stand for plain ones: ligatures, the minus sign typesetters print
# for an option's dash, and a soft hyphen (a place where a word may be broken: not a character;
# at a line's end, where the word was broken, a hyphen that `_join_broken` joins).
_TYPESET = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u2212": "-",
        "\u00ad": "",
    }
)
# A running head or foot: one of a page's first or last EDGE_LINES lines whose shape (numbers and
# roman numerals as "#", case and spacing aside) stands at the same edge of at least RUNNING_PAGES
# pages, and of at least RUNNING_DENSITY of the pages from its first to its last (a chapter's head
# runs over the chapter, on every page or every other one; a slide title repeated three times in
# thirty slides is a title).
EDGE_LINES = 2
RUNNING_PAGES = 3
RUNNING_DENSITY = 0.4
_NUMBER = re.compile(r"\d+|\b[ivxlcdm]+\b")
# A word broken at a line's end: letters, a hyphen, the line's end, and the word's lower-case rest.
_BROKEN = re.compile(r"(?<![\w-])([^\W\d_]+)-\n([^\W\d_A-Z][^\W\d_]*)")
# PDFium's mark for a hyphen it took for a word broken at a line's end, the line break dropped
# ("com\ufffemand"); the same rule says whether the hyphen was the word's own.
_MARKED = "\ufffe"
_MARKED_BROKEN = re.compile(r"([^\W\d_]*)\ufffe([^\W\d_]*)")
# How common a word must be in English prose (wordfreq's Zipf scale) to count as a word of its own
# when it is half of a broken word: "non" + "zero" stay "non-zero"; "spe" + "cially" is "specially".
HALF_WORD_ZIPF = 3.0


def clean_pages(pages: list[str]) -> list[str]:
    """The pages' text without running heads and feet, with the words broken at a line's end
    joined and typesetting characters as plain ones."""
    pages = [page.replace("\u00ad\n", "-\n").translate(_TYPESET) for page in pages]
    lines = [page.split("\n") for page in pages]
    running = _running_lines(lines)
    return [_join_broken("\n".join(_without_running(page, running))).translate(_MARKS) for page in lines]


_MARKS = str.maketrans({_TERM_MARK: "::", _GAP_MARK: "  "})


def _shape(line: str) -> str:
    return " ".join(_NUMBER.sub("#", line.translate(_UNMARKED).lower()).split())  # marked or not, one shape


def _edges(page: list[str]) -> list[tuple[str, int]]:
    """(edge, index) of the page's first and last EDGE_LINES lines with text: "top"/"bottom"."""
    filled = [i for i, line in enumerate(page) if line.strip()]
    return [("top", i) for i in filled[:EDGE_LINES]] + [("bottom", i) for i in filled[-EDGE_LINES:]]


def _running_lines(pages: list[list[str]]) -> set[tuple[str, str]]:
    """The (edge, shape) of every running head and foot (`RUNNING_PAGES`, `RUNNING_DENSITY`)."""
    where: dict[tuple[str, str], list[int]] = {}
    for number, page in enumerate(pages):
        for key in {(edge, _shape(page[i])) for edge, i in _edges(page)}:
            where.setdefault(key, []).append(number)
    return {
        key
        for key, numbers in where.items()
        if len(numbers) >= RUNNING_PAGES and len(numbers) >= RUNNING_DENSITY * (numbers[-1] - numbers[0] + 1)
    }


def _without_running(page: list[str], running: set[tuple[str, str]]) -> list[str]:
    if not running:
        return page
    drop = {i for edge, i in _edges(page) if (edge, _shape(page[i])) in running}
    kept = [line for i, line in enumerate(page) if i not in drop]
    # A page that is nothing but such lines (the same short text on every page) is its text.
    return kept if any(line.strip() for line in kept) else page


def _join_broken(text: str) -> str:
    if _MARKED in text:
        text = _MARKED_BROKEN.sub(_joined, text)
    if "-\n" not in text:
        return text
    return _BROKEN.sub(_joined, text)


def _joined(match: re.Match[str]) -> str:
    head, tail = match.group(1), match.group(2)
    if not head or not tail:  # a marked hyphen beside no letters is a hyphen
        return f"{head}-{tail}"
    halves = min(_zipf(head), _zipf(tail))
    if halves >= HALF_WORD_ZIPF and _zipf(head + tail) < halves:
        return f"{head}-{tail}"  # a compound broken at its own hyphen: "non-zero", "re-edit"
    return head + tail


def _zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word.lower(), "en"))

"""OpenDocument `.odt`, `.ods` and `.odp`, read from `content.xml` with the standard library's
zip and a defused XML parser: text documents as headings (their outline level), paragraphs,
nested lists and tables; spreadsheets as rows kept whole (`locallens.readers.sheets`); slides
one unit each with their title and notes. Footnotes stay in their paragraph; images, drawings
and tracked changes are left out. A text document's chunk is cited by its paragraphs,
`letter.odt#para=12-15`, numbered as for Word (`locallens.readers.docx`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from locallens.readers.base import REASON_ENCRYPTED, Extracted, ReadSkip, TextBuilder, one_line, require
from locallens.readers.safety import checked_zip, read_member
from locallens.readers.sheets import MAX_ROWS, add_sheet

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
}


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_KIND = {".odt": "ODT", ".ods": "ODS", ".odp": "ODP"}
# Inline elements whose text is not part of the running text.
_SKIP_INLINE = {
    _q("text:note-citation"),
    _q("office:annotation"),
    _q("text:tracked-changes"),
    _q("text:page-number"),
    _q("text:page-count"),
}


def read(data: bytes, ext: str) -> Extracted:
    kind = _KIND.get(ext, "OpenDocument")
    archive = checked_zip(data, kind)
    ET = require("defusedxml.ElementTree", "defusedxml")
    if "META-INF/manifest.xml" in archive.namelist():
        manifest = read_member(archive, "META-INF/manifest.xml", kind)
        if b"encryption-data" in manifest:
            raise ReadSkip(f"cannot read {kind}: {REASON_ENCRYPTED}", error=True)
    root = ET.fromstring(read_member(archive, "content.xml", kind))
    title = ""
    if "meta.xml" in archive.namelist():
        meta = ET.fromstring(read_member(archive, "meta.xml", kind))
        found = meta.find(f".//{_q('dc:title')}")
        title = one_line(found.text or "") if found is not None else ""
    body = root.find(_q("office:body"))
    if body is None:
        raise ReadSkip(f"cannot read {kind}: no document body", error=True)
    builder = TextBuilder()
    numbered = _numbered_list_styles(root)
    for part in body:
        if part.tag == _q("office:spreadsheet"):
            for table in part.iter(_q("table:table")):
                add_sheet(builder, table.get(_q("table:name"), "Sheet"), _sheet_rows(table))
        elif part.tag == _q("office:presentation"):
            for number, page in enumerate(part.iter(_q("draw:page")), start=1):
                builder.begin("slide", str(number))
                slide_title = _slide(builder, page, numbered)
                title = title or slide_title
        else:
            _blocks(builder, part, numbered, paragraphs=True)
    return builder.result(title, kind)


def inline_text(element: Any) -> str:
    """An element's text as it reads: `text:s` spaces, tabs and line breaks honoured."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if node.tag in _SKIP_INLINE:
            if node.tail:
                parts.append(node.tail)
            return
        if node.text:
            parts.append(node.text)
        for child in node:
            if child.tag == _q("text:s"):
                count = child.get(_q("text:c"), "1")
                parts.append(" " * (int(count) if count.isdigit() else 1))
            elif child.tag == _q("text:tab"):
                parts.append("\t")
            elif child.tag == _q("text:line-break"):
                parts.append("\n")
            else:
                walk(child)
                continue
            if child.tail:
                parts.append(child.tail)
        if node is not element and node.tail:
            parts.append(node.tail)

    walk(element)
    return "".join(parts)


def _numbered_list_styles(root: Any) -> dict[str, set[int]]:
    """List style name -> the levels (1-based) it numbers rather than bullets."""
    styles: dict[str, set[int]] = {}
    for style in root.iter(_q("text:list-style")):
        levels = styles.setdefault(style.get(_q("style:name"), ""), set())
        for level in style.findall(_q("text:list-level-style-number")):
            value = level.get(_q("text:level"), "1")
            levels.add(int(value) if value.isdigit() else 1)
    return styles


def _blocks(builder: TextBuilder, container: Any, numbered: dict[str, set[int]], paragraphs: bool = False) -> None:
    """Headings, paragraphs, lists, tables and sections of a text body, in order; with
    `paragraphs`, each one a numbered `para` unit (a text document; a slide is one unit)."""
    for element in container:
        tag = element.tag
        if paragraphs and tag in (_q("text:h"), _q("text:p"), _q("table:table")):
            builder.paragraph()
        if tag == _q("text:h"):
            level = element.get(_q("text:outline-level"), "1")
            builder.heading(int(level) if level.isdigit() else 1, inline_text(element))
        elif tag == _q("text:p"):
            builder.add(inline_text(element))
        elif tag == _q("text:list"):
            _list(builder, element, 0, numbered, element.get(_q("text:style-name"), ""), paragraphs)
        elif tag == _q("table:table"):
            builder.add(_table(element))
        elif tag in (_q("text:section"), _q("text:index-body"), _q("text:table-of-content")):
            _blocks(builder, element, numbered, paragraphs)


def _list(
    builder: TextBuilder,
    element: Any,
    depth: int,
    numbered: dict[str, set[int]],
    style: str,
    paragraphs: bool = False,
) -> None:
    """A list's items, "-" or "1." as its style says, nested lists indented under their item."""
    style = element.get(_q("text:style-name"), style)  # an inner list inherits its outer style
    number = 0
    for item in element:
        if item.tag not in (_q("text:list-item"), _q("text:list-header")):
            continue
        number += 1
        marker = f"{number}." if depth + 1 in numbered.get(style, set()) else "-"
        for child in item:
            if child.tag == _q("text:list"):
                _list(builder, child, depth + 1, numbered, style, paragraphs)
            elif child.tag in (_q("text:p"), _q("text:h")):
                text = one_line(inline_text(child))
                if text:
                    if paragraphs:
                        builder.paragraph(keep_run=True)
                    builder.add_line("  " * depth + marker + " " + text)


def _cells(row: Any) -> list[str]:
    cells: list[str] = []
    for cell in row:
        if cell.tag not in (_q("table:table-cell"), _q("table:covered-table-cell")):
            continue
        text = one_line(" ".join(inline_text(p) for p in cell.iter(_q("text:p"))))
        repeat = cell.get(_q("table:number-columns-repeated"), "1")
        # Trailing empty cells repeated to column 1024 cost nothing; a repeated value is kept.
        count = min(int(repeat) if repeat.isdigit() else 1, 1024 if text else 1)
        cells.extend([text] * count)
    return cells


def _table(table: Any) -> str:
    lines = []
    for row in table.iter(_q("table:table-row")):
        cells = [c.replace("|", "/") for c in _cells(row)]
        while cells and not cells[-1]:
            cells.pop()
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sheet_rows(table: Any) -> Iterator[tuple[int, Sequence[object]]]:
    number = 0
    for row in table.iter(_q("table:table-row")):
        repeat = row.get(_q("table:number-rows-repeated"), "1")
        count = int(repeat) if repeat.isdigit() else 1
        cells = _cells(row)
        if not any(cells):
            number += count  # a million repeated empty rows is one step
            continue
        for _ in range(min(count, MAX_ROWS)):
            number += 1
            yield number, cells


# Frames a slide shows from its master: the slide number, footer, date.
_MASTER_CLASSES = {"page-number", "footer", "header", "date-time"}


def _slide(builder: TextBuilder, page: Any, numbered: dict[str, set[int]]) -> str:
    title = ""
    for frame in page.iter(_q("draw:frame")):
        if frame.get(_q("presentation:class")) == "title":
            title = one_line(" ".join(inline_text(p) for p in frame.iter(_q("text:p"))))
            break
    if title:
        builder.heading(1, title)
    for frame in page:
        if frame.get(_q("presentation:class")) == "title" or frame.get(_q("presentation:class")) in _MASTER_CLASSES:
            continue
        if frame.tag == _q("presentation:notes"):
            boxes = [f for f in frame.iter(_q("draw:frame")) if f.get(_q("presentation:class")) == "notes"]
            notes = "\n".join(inline_text(p) for box in boxes for p in box.iter(_q("text:p")))
            if notes.strip():
                builder.add("Notes: " + notes)
            continue
        for box in frame.iter(_q("draw:text-box")):
            _blocks(builder, box, numbered)
        for table in frame.iter(_q("table:table")):
            builder.add(_table(table))
    return title

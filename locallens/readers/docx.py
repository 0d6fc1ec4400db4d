"""Word `.docx` (python-docx): paragraphs, headings (the `Heading N` and `Title` styles, or an
outline level), bulleted and numbered lists with their nesting, and tables as rows of cells, in
document order. Headers, footers, footnotes, comments and images are left out. A chunk is
cited by its paragraphs, `report.docx#para=12-15`: N counts from 1 the paragraphs that have text
(a heading, a list item, a whole table are one each), in reading order, as `locallens show`
numbers them."""

from __future__ import annotations

import io
from typing import Any

from locallens.readers.base import Extracted, TextBuilder, one_line, require
from locallens.readers.safety import checked_zip

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def read(data: bytes, ext: str) -> Extracted:
    checked_zip(data, "DOCX")
    docx = require("docx", "python-docx")
    document = docx.Document(io.BytesIO(data))
    builder = TextBuilder()
    numbering = _Numbering(document)
    title = one_line(document.core_properties.title or "")
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            builder.paragraph()
            builder.add(table_text(block))
            continue
        text = block.text
        if not text.strip():
            continue
        style = (block.style.name if block.style is not None else "") or ""
        level = _heading_level(block, style)
        item = None if style == "Title" or level else _list_item(block, style)
        builder.paragraph(keep_run=item is not None)
        if style == "Title":
            title = title or one_line(text)
            builder.heading(1, text)
        elif level:
            builder.heading(level, text)
        elif item is not None:
            depth, num_id = item
            builder.add_line("  " * depth + numbering.marker(num_id, depth) + " " + one_line(text))
        else:
            builder.add(text)
    return builder.result(title, "DOCX")


def _heading_level(paragraph: Any, style: str) -> int:
    if style.startswith("Heading ") and style[8:].strip().isdigit():
        return int(style[8:].strip())
    outline = paragraph._p.find(f"{_W}pPr/{_W}outlineLvl")
    if outline is not None and (value := outline.get(f"{_W}val", "")).isdigit() and int(value) < 9:
        return int(value) + 1
    return 0


def _list_item(paragraph: Any, style: str) -> tuple[int, str] | None:
    """(nesting, numbering id) of a list item (0 = outermost), None for a paragraph that is not one."""
    num_pr = paragraph._p.find(f"{_W}pPr/{_W}numPr")
    if num_pr is not None:
        level = num_pr.find(f"{_W}ilvl")
        num_id = num_pr.find(f"{_W}numId")
        value = level.get(f"{_W}val", "") if level is not None else ""
        ident = num_id.get(f"{_W}val", "") if num_id is not None else ""
        if ident != "0":  # numId 0 switches numbering off
            return (int(value) if value.isdigit() else 0), ident
    if style.startswith(("List Bullet", "List Number")):
        tail = style.rsplit(" ", 1)[-1]
        return (int(tail) - 1 if tail.isdigit() else 0), ("#" if "Number" in style else "")
    return None


class _Numbering:
    """List markers as Word shows them: "-" for bullets, "1." and so on for numbered levels."""

    def __init__(self, document: Any) -> None:
        self.formats: dict[tuple[str, int], str] = {}
        self.counters: dict[str, list[int]] = {}
        try:
            root = document.part.numbering_part.element
        except (NotImplementedError, KeyError, AttributeError):
            return
        abstract = {}
        for node in root.findall(f"{_W}abstractNum"):
            levels = {}
            for lvl in node.findall(f"{_W}lvl"):
                fmt = lvl.find(f"{_W}numFmt")
                levels[int(lvl.get(f"{_W}ilvl", "0"))] = fmt.get(f"{_W}val", "") if fmt is not None else ""
            abstract[node.get(f"{_W}abstractNumId", "")] = levels
        for num in root.findall(f"{_W}num"):
            ref = num.find(f"{_W}abstractNumId")
            levels = abstract.get(ref.get(f"{_W}val", "") if ref is not None else "", {})
            for level, fmt in levels.items():
                self.formats[(num.get(f"{_W}numId", ""), level)] = fmt

    def marker(self, num_id: str, depth: int) -> str:
        fmt = "decimal" if num_id == "#" else self.formats.get((num_id, depth), "bullet")
        if fmt in ("bullet", "none", ""):
            return "-"
        counts = self.counters.setdefault(num_id, [])
        del counts[depth + 1 :]
        counts.extend([0] * (depth + 1 - len(counts)))
        counts[depth] += 1
        return f"{counts[depth]}."


def table_text(table: Any) -> str:
    """A table as `| a | b |` lines, one per row; a merged cell said once."""
    lines = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(one_line(cell.text).replace("|", "/"))
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

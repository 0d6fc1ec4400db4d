"""PowerPoint `.pptx` (python-pptx): one unit per slide, cited by its number, with the slide's
title as its heading; text boxes (nested bullets indented), tables as rows, grouped shapes, and
the speaker notes. Images and charts are left out."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from locallens.readers.base import Extracted, TextBuilder, one_line, require
from locallens.readers.safety import checked_zip


def read(data: bytes, ext: str) -> Extracted:
    checked_zip(data, "PPTX")
    pptx = require("pptx", "python-pptx")
    presentation = pptx.Presentation(io.BytesIO(data))
    builder = TextBuilder()
    title = one_line(presentation.core_properties.title or "")
    for number, slide in enumerate(presentation.slides, start=1):
        builder.begin("slide", str(number))
        title_shape = slide.shapes.title
        slide_title = (
            one_line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
        )
        if slide_title:
            title = title or slide_title
            builder.heading(1, slide_title)
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                builder.add(_table(shape.table))
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                builder.add(_text_frame(shape.text_frame))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                builder.add("Notes: " + notes.text)
    return builder.result(title, "PPTX")


def _shapes(shapes: Any) -> Iterator[Any]:
    """Every shape, the members of a group in place of the group, top to bottom, left to right."""
    ordered = sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0)))
    for shape in ordered:
        if hasattr(shape, "shapes"):  # a group shape
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _text_frame(frame: Any) -> str:
    lines = []
    for paragraph in frame.paragraphs:
        text = one_line(paragraph.text)
        if text:
            lines.append(("  " * paragraph.level + "- " + text) if paragraph.level else text)
    return "\n".join(lines)


def _table(table: Any) -> str:
    lines = []
    for row in table.rows:
        cells = [one_line(cell.text).replace("|", "/") for cell in row.cells]
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

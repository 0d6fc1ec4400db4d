"""Jupyter `.ipynb` (plain JSON, nbformat 4 and 3): markdown cells as they are written (their
`#` headings become the heading path) and code cells fenced with their language; outputs are
left out. Each cell is cited by its number."""

from __future__ import annotations

import json
import re
from typing import Any

from locallens.readers.base import Extracted, ReadSkip, TextBuilder, decode_text

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", cell.get("input", ""))
    return "".join(source) if isinstance(source, list) else str(source or "")


def read(data: bytes, ext: str) -> Extracted:
    try:
        notebook = json.loads(decode_text(data))
    except json.JSONDecodeError as exc:
        raise ReadSkip(f"cannot read notebook: invalid JSON ({exc.msg} at line {exc.lineno})", error=True) from None
    if not isinstance(notebook, dict):
        raise ReadSkip("cannot read notebook: not a Jupyter notebook", error=True)
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3: cells inside worksheets
        cells = [c for w in notebook.get("worksheets", []) if isinstance(w, dict) for c in w.get("cells", [])]
    if not isinstance(cells, list):
        raise ReadSkip("cannot read notebook: no cells", error=True)
    found = notebook.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    language = str(
        (metadata.get("kernelspec") or {}).get("language")
        or (metadata.get("language_info") or {}).get("name")
        or "python"
    )
    builder = TextBuilder()
    title = str(metadata.get("title") or "")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        source = _source(cell).strip()
        if not source:
            continue
        builder.begin("cell", str(number))
        kind = cell.get("cell_type")
        if kind in ("markdown", "heading"):
            if kind == "heading":  # nbformat 3
                source = "#" * int(cell.get("level", 1) or 1) + " " + source
            builder.add(source)
            fenced = False
            for line in source.split("\n"):
                if _FENCE.match(line):
                    fenced = not fenced
                elif not fenced and (atx := _ATX.match(line)):
                    builder.headings.append((len(atx.group(1)), atx.group(2).strip()))
                    title = title or atx.group(2).strip()
        elif kind == "code":
            fence = "````" if "```" in source else "```"
            builder.add(f"{fence}{language}\n{source}\n{fence}")
        else:  # raw cells
            builder.add(source)
    return builder.result(title)

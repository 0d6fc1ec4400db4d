"""Spreadsheet sheets laid out as text, shared by `.xlsx` and `.ods`: the sheet name as a
heading, the first non-empty row as the column names, then one paragraph per row with each
value after its column's name (`Region: North | Q1: 120`), so a row is never cut in two by the
chunker and reads on its own. Each row is cited as `Sheet!ROW`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from locallens.readers.base import TextBuilder, one_line

# A sheet's rows beyond this many are left out: a spreadsheet used as a database is not a
# document, and the size cap alone does not bound a sheet that packs well.
MAX_ROWS = 20_000


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return (
            value.isoformat(sep=" ", timespec="minutes") if (value.hour or value.minute) else value.date().isoformat()
        )
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return one_line(str(value)).replace("|", "/")


def _column_name(index: int) -> str:
    """Spreadsheet column letters: 0 -> A, 25 -> Z, 26 -> AA."""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def add_sheet(builder: TextBuilder, name: str, rows: Iterable[tuple[int, Sequence[object]]]) -> None:
    """Lay one sheet out: `rows` are (row number, values) in order; empty rows are skipped."""
    builder.end()
    builder.heading(1, name)
    header: list[str] | None = None
    count = 0
    for number, values in rows:
        cells = [cell_text(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        if not any(cells):
            continue
        count += 1
        if count > MAX_ROWS:
            break
        builder.begin("sheet", f"{name}!{number}")
        if header is None:
            header = cells
            builder.add(" | ".join(c or _column_name(i) for i, c in enumerate(cells)))
            continue
        parts = []
        for i, cell in enumerate(cells):
            if not cell:
                continue
            column = header[i] if i < len(header) and header[i] else _column_name(i)
            parts.append(f"{column}: {cell}")
        builder.add(" | ".join(parts))
    builder.end()

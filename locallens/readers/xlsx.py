"""Excel `.xlsx`/`.xlsm` (openpyxl, read-only): every sheet as rows kept whole
(`locallens.readers.sheets`); a formula reads as the value Excel last computed for it. Charts,
comments and formatting are left out."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator, Sequence

from locallens.readers.base import Extracted, TextBuilder, one_line, require
from locallens.readers.safety import checked_zip
from locallens.readers.sheets import add_sheet


def read(data: bytes, ext: str) -> Extracted:
    checked_zip(data, "XLSX")
    openpyxl = require("openpyxl", "openpyxl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "unknown extension", "no default style": noise
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        builder = TextBuilder()
        for sheet in book.worksheets:
            if not hasattr(sheet, "iter_rows"):  # a chart sheet
                continue
            add_sheet(builder, sheet.title, _rows(sheet))
        title = one_line(book.properties.title or "") if book.properties is not None else ""
        return builder.result(title, "XLSX")
    finally:
        book.close()


def _rows(sheet: object) -> Iterator[tuple[int, Sequence[object]]]:
    for row in sheet.iter_rows():  # type: ignore[attr-defined]
        number = next((cell.row for cell in row if getattr(cell, "row", None)), None)
        if number is None:
            continue
        yield number, [cell.value for cell in row]

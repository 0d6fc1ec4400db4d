"""A mixed folder of every format the readers take (for the index test and bench_formats).

`make_mixed_folder(root, copies)` lays out `copies` variants of each format under one folder per
format: Word, PowerPoint and Excel files made with their libraries and web pages (each with its
own text), and the fixtures of tests/data/formats (OpenDocument, EPUB, notebooks, Org, mail,
PDF, the edge cases) copied under new names, with the text formats varied line by line. It
returns what a run must report: the files that are documents and the skips expected, by reason.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "data" / "formats"
# Fixtures copied as they are (binary formats not generated here), one folder each.
COPIED = (
    "handbook.odt",
    "users-and-groups.odt",
    "budget.ods",
    "deck.odp",
    "handbook.epub",
    "users-and-groups.epub",
    "handbook.pdf",
    "users-and-groups.pdf",
    "archive.mbox",
    "digest.eml",
    "nbformat-test4.ipynb",
    "python-docx-test.docx",
    "python-pptx-test.pptx",
)
# The edge cases: each is skipped, with its reason.
SKIPPED = {
    "corrupt.docx": "not a valid zip file",
    "bomb.docx": "zip bomb",
    "entities.docx": "entity expansion",
    "encrypted.docx": "encrypted",
    "encrypted.odt": "encrypted",
    "images-only.docx": "no text",
}


def _docx(path: Path, n: int) -> None:
    from docx import Document

    document = Document()
    document.add_heading(f"Report {n}", level=1)
    document.add_paragraph(f"Section {n} covers the shipment of {n * 7} crates to depot {n % 5}.")
    document.add_heading("Details", level=2)
    document.add_paragraph(f"Crate {n} weighs {n * 3 + 11} kilograms.", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Item", "Count"
    table.cell(1, 0).text, table.cell(1, 1).text = f"widget-{n}", str(n)
    document.save(path)


def _pptx(path: Path, n: int) -> None:
    from pptx import Presentation

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = f"Briefing {n}"
    slide.placeholders[1].text = f"Milestone {n} is due in week {n % 52 + 1}."
    prs.save(path)


def _xlsx(path: Path, n: int) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = f"Ledger{n}"
    sheet.append(["Account", "Balance"])
    for i in range(5):
        sheet.append([f"acct-{n}-{i}", n * 100 + i])
    book.save(path)


def _html(n: int) -> str:
    """A web page with a heading, a nested list (ordered, `start` given) and a table."""
    return f"""<!DOCTYPE html>
<html><head><title>Depot {n} notes</title><style>td {{ padding: 2px }}</style></head>
<body>
<h1>Depot {n}</h1>
<p>The loading dock of depot {n} opens at {6 + n % 4}:00
   and closes at {17 + n % 3}:00.</p>
<ol start="{n % 3 + 1}">
  <li>Scan the pallet</li>
  <li>Weigh it<ul><li>reject anything over {900 + n} kg</li></ul></li>
</ol>
<table><tr><th>Bay</th><th>Forklift</th></tr><tr><td>{n}</td><td>FL-{n:03d}</td></tr></table>
</body></html>
"""


def make_mixed_folder(root: Path, copies: int = 12) -> tuple[list[str], Counter[str]]:
    """Lay the folder out; return (every file written, expected skip reasons by kind)."""
    written: list[str] = []
    expected_skips: Counter[str] = Counter()

    def out(rel: str) -> Path:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        written.append(rel)
        return path

    for n in range(copies):
        _docx(out(f"word/report-{n}.docx"), n)
        _pptx(out(f"slides/briefing-{n}.pptx"), n)
        _xlsx(out(f"sheets/ledger-{n}.xlsx"), n)
        out(f"notes/note-{n}.md").write_text(f"# Note {n}\n\nThe pump in bay {n} was serviced on day {n + 1}.\n")
        out(f"notes/plain-{n}.txt").write_text(f"Plain note {n}: the gate code is {1000 + n}.\n")
        out(f"web/depot-{n}.{'htm' if n % 2 else 'html'}").write_text(_html(n))
        out(f"org/journal-{n}.org").write_text(
            (FIXTURES / "journal.org").read_text() + f"\n* Entry {n}\nDay {n} was windy.\n"
        )
        notebook = json.loads((FIXTURES / "tides.ipynb").read_text())
        notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": [f"## Run {n}\nRun {n} passed."]})
        out(f"notebooks/tides-{n}.ipynb").write_text(json.dumps(notebook))
        mail = (FIXTURES / "offsite.eml").read_text().replace("Harbour Room", f"Room {n}")
        out(f"mail/offsite-{n}.eml").write_text(mail)
        for name in COPIED:
            stem, ext = name.rsplit(".", 1)
            shutil.copy(FIXTURES / name, out(f"{ext}/{stem}-{n}.{ext}"))
    for name, reason in SKIPPED.items():
        shutil.copy(FIXTURES / name, out(f"broken/{name}"))
        expected_skips[reason] += 1
    return written, expected_skips

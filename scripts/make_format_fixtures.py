"""Rebuild tests/data/formats: small files in every format the readers take, plus edge cases.

Real files nobody here wrote are copied in where they exist (Debian's "Users and Groups"
handbook, converted by LibreOffice; python-docx, python-pptx and nbformat test fixtures from
their source packages; e-mails from CPython's test suite). The rest is made with LibreOffice in
headless mode (`soffice`, Debian's libreoffice-*-nogui and python3-uno), the format libraries or
msoffcrypto-tool (the encrypted Word file),
each with one fact a test asks about. Not run by the tests: the files it writes are committed.

    python scripts/make_format_fixtures.py SDIST_DIR   # SDIST_DIR: unpacked python-docx,
                                                       # python-pptx and nbformat sdists
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "formats"
HANDBOOK_HTML = """<html><head><title>Field Station Handbook</title></head><body>
<h1>Field Station Handbook</h1>
<h2>Arrival</h2>
<p>The ferry to the field station leaves Port Ellen at 07:40 every Tuesday.</p>
<h2>Equipment</h2>
<ul>
<li>Waders
  <ul><li>Chest waders for the estuary</li><li>Hip waders for the streams</li></ul>
</li>
<li>A headlamp with spare batteries</li>
</ul>
<ol><li>Sign the logbook</li><li>Check the radio</li></ol>
<h2>Contacts</h2>
<table border="1">
<tr><th>Role</th><th>Name</th><th>Extension</th></tr>
<tr><td>Station manager</td><td>Ingrid Solberg</td><td>4417</td></tr>
<tr><td>Boat skipper</td><td>Tomas Reyes</td><td>4420</td></tr>
</table>
<h3>Emergencies</h3>
<p>In an emergency, call the coastguard on radio channel 16.</p>
</body></html>
"""
ORG = """#+TITLE: Garden Journal
# a comment line, not a heading

* Planting
** TODO Sow the beans :spring:
The broad beans go in the north bed after the last frost, around 20 March.
** DONE Prune the apple tree
* Harvest
- Potatoes in July
  - Earlies first
- Pumpkins in October
"""


def soffice(*args: str, cwd: Path) -> None:
    subprocess.run(["soffice", "--headless", *args], cwd=cwd, check=True, capture_output=True, timeout=300)


def convert(source: Path, target_ext: str, filter_name: str = "", infilter: str = "") -> Path:
    to = f"{target_ext}:{filter_name}" if filter_name else target_ext
    extra = [f"--infilter={infilter}"] if infilter else []
    soffice(*extra, "--convert-to", to, "--outdir", str(source.parent), source.name, cwd=source.parent)
    return source.with_suffix("." + target_ext)


def save_with_password(source: Path, target: Path, filter_name: str) -> None:
    """LibreOffice's UNO API: open `source`, save it encrypted with the password "secret"."""
    script = f"""
import uno, time, subprocess
from com.sun.star.beans import PropertyValue
def prop(n, v):
    p = PropertyValue(); p.Name = n; p.Value = v; return p
proc = subprocess.Popen(["soffice", "--headless", "--norestore", "--accept=socket,host=127.0.0.1,port=2877;urp;"])
ctx = None
for _ in range(60):
    try:
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        ctx = resolver.resolve("uno:socket,host=127.0.0.1,port=2877;urp;StarOffice.ComponentContext")
        break
    except Exception:
        time.sleep(0.5)
desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
doc = desktop.loadComponentFromURL("file://{source}", "_blank", 0, (prop("Hidden", True),))
doc.storeToURL("file://{target}", (prop("FilterName", "{filter_name}"), prop("Password", "secret")))
doc.close(True)
try:
    desktop.terminate()
except Exception:
    pass
proc.wait(timeout=30)
"""
    subprocess.run(["/usr/bin/python3", "-c", script], check=True, timeout=300)


def book_epub(path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("field-station-handbook")
    book.set_title("Field Station Handbook")
    book.set_language("en")
    body = HANDBOOK_HTML.split("<body>", 1)[1].split("</body>", 1)[0]
    first, second = body.split("<h2>Contacts</h2>")
    chapters = []
    for number, html in enumerate((first, "<h2>Contacts</h2>" + second), start=1):
        chapter = epub.EpubHtml(title=f"Part {number}", file_name=f"part{number}.xhtml", lang="en")
        chapter.content = html
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)


def encrypt_ooxml(source: Path, target: Path) -> None:
    """A password-protected Word file as Office writes it (msoffcrypto-tool, a dev-only tool)."""
    from msoffcrypto.format.ooxml import OOXMLFile

    with source.open("rb") as src, target.open("wb") as dst:
        OOXMLFile(src).encrypt("secret", dst)


def deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = "Quarterly Review"
    slide.placeholders[1].text = "Northwind Traders, third quarter"
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "Sales by Region"
    body = slide.placeholders[1].text_frame
    body.text = "The northern region grew fastest"
    p = body.add_paragraph()
    p.text = "Oslo sales rose by 18 percent"
    p.level = 1
    p = body.add_paragraph()
    p.text = "The southern region was flat"
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = "Headcount"
    rows = [("Office", "Staff"), ("Oslo", "42"), ("Lisbon", "17")]
    table = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    slide.notes_slide.notes_text_frame.text = "The Lisbon office opens a second floor in March."
    prs.core_properties.title = "Quarterly Review"
    prs.save(path)


def workbook(path: Path) -> None:
    import datetime as dt

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Project", "Owner", "Budget", "Start"])
    sheet.append(["Kestrel", "Ana Lima", 48500, dt.date(2026, 3, 1)])
    sheet.append(["Osprey", "Ben Okafor", 12250.5, dt.date(2026, 5, 15)])
    sheet.append(["Heron", "Chen Wei", 9900, dt.date(2026, 9, 1)])
    sheet.append(["Total", None, "=SUM(C2:C4)", None])
    staff = book.create_sheet("Staff")
    staff.append(["Name", "Office"])
    staff.append(["Ana Lima", "Oslo"])
    staff.append(["Ben Okafor", "Lisbon"])
    book.save(path)


def notebook(path: Path) -> None:
    import json

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Tide Analysis\n", "\n", "Tides at the pier."]},
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": ["## Loading the gauge data\n", "The gauge logs every ten minutes."],
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "source": ["import pandas as pd\n", "tides = pd.read_csv('gauge.csv')"],
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["OUTPUT-THAT-MUST-NOT-BE-INDEXED\n"]}],
        },
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": ["## Result\n", "The highest tide of the year was 4.2 metres, on 9 October."],
        },
    ]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def emails(out: Path, cpython_email: Path) -> None:
    shutil.copy(cpython_email / "msg_02.txt", out / "digest.eml")
    fact = (
        "From: Priya Natarajan <priya@example.org>\n"
        "To: team@example.org\n"
        "Subject: Offsite moves to the Harbour Room\n"
        "Date: Mon, 04 May 2026 09:15:00 +0100\n"
        "MIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=utf-8\n\n"
        "Hello all,\n\nThe quarterly offsite moves to the Harbour Room on 14 May, starting at 10:00.\n"
        "From now on bring your own laptop charger.\n\nPriya\n"
    )
    (out / "offsite.eml").write_text(fact, encoding="utf-8")
    parts = []
    for name in ("msg_01.txt", "msg_03.txt", "msg_05.txt"):
        parts.append(
            b"From MAILER-DAEMON Thu Jan  1 00:00:00 2004\n"
            + (cpython_email / name).read_bytes().rstrip(b"\n")
            + b"\n\n"
        )
    body = fact.replace("From now on", ">From now on")
    parts.append(b"From priya@example.org Mon May  4 09:15:00 2026\n" + body.encode("utf-8") + b"\n")
    (out / "archive.mbox").write_bytes(b"".join(parts))


def zip_bomb(path: Path, template: Path) -> None:
    """A .docx whose document part inflates 20 MB of zeros from a few kB."""
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "word/document.xml":
                data = data + b" " * (20 * 1024 * 1024)
            dst.writestr(item, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)


def entity_bomb(path: Path, template: Path) -> None:
    """A .docx whose document part declares nested entities ("billion laughs")."""
    laughs = b'<?xml version="1.0"?>\n<!DOCTYPE w:document [<!ENTITY a "lol">' + b"".join(
        b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b"&" + bytes([97 + i]) + b";") * 10) for i in range(8)
    )
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "word/document.xml":
                _, _, rest = data.partition(b"?>")
                data = laughs + b"]>" + rest.replace(b"</w:body>", b"<w:p><w:r><w:t>&i;</w:t></w:r></w:p></w:body>", 1)
            dst.writestr(item, data)


def images_only(path: Path) -> None:
    from docx import Document
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 20), (200, 30, 30)).save(buffer, "PNG")
    buffer.seek(0)
    document = Document()
    document.add_picture(buffer)
    document.save(path)


def scans(out: Path, work: Path) -> None:
    """The handbook's text PDF rendered to 300 dpi page images (poppler's pdftoppm), as a PDF of
    images only (a scan, no text layer) and as a PNG: the OCR fixtures."""
    from PIL import Image

    subprocess.run(
        ["pdftoppm", "-r", "300", "-gray", "-png", str(out / "handbook.pdf"), str(work / "page")], check=True
    )
    pages = [Image.open(p).convert("1") for p in sorted(work.glob("page*.png"))]
    pages[0].save(out / "scan.png", optimize=True)
    pages[0].save(out / "scanned.pdf", "PDF", resolution=300, save_all=True, append_images=pages[1:])


def main(sdists: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # Real text nobody here wrote: Debian's base-passwd handbook, through LibreOffice.
        real = work / "users-and-groups.html"
        shutil.copy("/usr/share/doc/base-passwd/users-and-groups.html", real)
        for ext, filter_name in (
            ("docx", "MS Word 2007 XML"),
            ("odt", "writer8"),
            ("epub", "EPUB"),
            ("pdf", "writer_pdf_Export"),
        ):
            shutil.copy(convert(real, ext, filter_name, "HTML (StarWriter)"), OUT / f"users-and-groups.{ext}")
        handbook = work / "handbook.html"
        handbook.write_text(HANDBOOK_HTML, encoding="utf-8")
        for ext, filter_name in (("docx", "MS Word 2007 XML"), ("odt", "writer8"), ("pdf", "writer_pdf_Export")):
            shutil.copy(convert(handbook, ext, filter_name, "HTML (StarWriter)"), OUT / f"handbook.{ext}")
        # LibreOffice's EPUB export writes headings as styled paragraphs; ebooklib writes the
        # XHTML as given (h1-h6, lists, tables), as e-book tools do.
        book_epub(OUT / "handbook.epub")
        deck(work / "deck.pptx")
        shutil.copy(work / "deck.pptx", OUT / "deck.pptx")
        shutil.copy(convert(work / "deck.pptx", "odp", "impress8"), OUT / "deck.odp")
        workbook(work / "budget-raw.xlsx")
        # Through LibreOffice: formulas get the values a spreadsheet program stores with them.
        ods = convert(work / "budget-raw.xlsx", "ods", "calc8")
        shutil.copy(ods, OUT / "budget.ods")
        shutil.copy(convert(ods, "xlsx", "Calc MS Excel 2007 XML"), OUT / "budget.xlsx")
        encrypt_ooxml(OUT / "handbook.docx", OUT / "encrypted.docx")
        save_with_password(OUT / "handbook.odt", OUT / "encrypted.odt", "writer8")
        scans(OUT, work)
    (OUT / "journal.org").write_text(ORG, encoding="utf-8")
    notebook(OUT / "tides.ipynb")
    emails(
        OUT,
        Path(sys.base_prefix)
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "test"
        / "test_email"
        / "data",
    )
    shutil.copy(sdists / "nbformat-5.11.1" / "tests" / "test4.ipynb", OUT / "nbformat-test4.ipynb")
    shutil.copy(sdists / "python_docx-1.2.0" / "tests" / "test_files" / "test.docx", OUT / "python-docx-test.docx")
    shutil.copy(
        sdists / "python_pptx-1.0.2" / "tests" / "test_files" / "test_slides.pptx", OUT / "python-pptx-test.pptx"
    )
    data = (OUT / "handbook.docx").read_bytes()
    (OUT / "corrupt.docx").write_bytes(data[: len(data) // 2])
    zip_bomb(OUT / "bomb.docx", OUT / "handbook.docx")
    entity_bomb(OUT / "entities.docx", OUT / "handbook.docx")
    images_only(OUT / "images-only.docx")
    for path in sorted(OUT.iterdir()):
        print(f"{path.stat().st_size:>8}  {path.name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

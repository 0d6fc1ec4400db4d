"""Formats benchmark: OCR character accuracy on scans made from text PDFs, reader speed per format,
and a mixed folder of every format indexed twice with the real embedder.

    .venv/bin/python benchmarks/bench_formats.py [--quick]

1. OCR (needs the `ocr` extra and Tesseract): each page of the text PDFs in tests/data/formats
   (LibreOffice's rendering of Debian's "Users and Groups" handbook, and the handbook fixture) is
   rendered to a 300 dpi greyscale image (poppler's `pdftoppm`, not the reader's own renderer,
   so the scan is made independently of what reads it) and OCR'd with the reader's
   `ocr.image_text`. The truth is the page's text layer (pypdf, a reader made independently of the one measured). Characters correct =
   1 - edit distance / characters of the truth, whitespace runs collapsed to one space on both
   sides. Target >= 95% over all pages. Seconds per page beside it.
2. Reader speed: median milliseconds of `read_document` per fixture (5 repeats).
   PDF text, the reader's library (PDFium) against pypdf, the peer it replaced: per PDF of
   tests/data/formats and of `--pdfs DIR` (the Bash manuals: `corpora.py DEST --bash pdf`), seconds
   to extract every page and the share of words (two letters or more) that are no English word
   wordfreq knows, after the reader's own cleaning (`clean_pages`) of both: "in vocation" is two
   unknown pieces where "invocation" is a word. Names nobody's dictionary has (`shopt`) count for
   both alike.
3. Mixed folder (tests/format_corpus.py: every format, 12 variants each, plus the six edge cases
   that must be skipped; 4 variants with --quick), plus real files nobody here wrote
   (`add_real_files`): the HTML documentation Debian packages ship in /usr/share/doc, CPython's
   e-mail test messages (Lib/test/test_email/data/msg_*.txt) as `.eml` files and joined into an
   mbox, and the Office/OpenDocument files PyPI packages ship (docutils' styles.odt, the
   python-docx and python-pptx templates). `locallens index` with the packaged MiniLM, then
   again: files, skips by reason, chunks embedded, seconds, and the share of chunks with a
   location per format. The second run must embed 0; no run may print a traceback.

    .venv/bin/python benchmarks/bench_formats.py --mixed-only [--quick]   # only part 3
    .venv/bin/python benchmarks/bench_formats.py --pdf-only [--pdfs DIR]  # only the PDF libraries
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import _common as c

sys.path.insert(0, str(c.ROOT))
FIXTURES = c.ROOT / "tests" / "data" / "formats"
OCR_PDFS = ("users-and-groups.pdf", "handbook.pdf")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, two rows of O(len(b))."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _norm(text: str) -> str:
    # Bullets and ligature glyphs are drawn, not letters: compare the words.
    return re.sub(r"\s+", " ", text.replace("\u2022", " ").replace("\ufb01", "fi").replace("\ufb02", "fl")).strip()


def ocr_accuracy(table: c.Table, quick: bool, work: Path) -> None:
    from PIL import Image
    from pypdf import PdfReader

    from locallens.readers import ocr

    table.section("OCR, 300 dpi scans of text PDFs (pdftoppm -> Tesseract)")
    if not ocr.available() or shutil.which("pdftoppm") is None:
        table.add("characters correct", "not measured", ">= 95%", None, "Tesseract, the ocr extra or pdftoppm missing")
        return
    version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    errors = total = pages = 0
    seconds = 0.0
    for name in OCR_PDFS[:1] if quick else OCR_PDFS:
        truth_pages = [page.extract_text() or "" for page in PdfReader(FIXTURES / name).pages]
        prefix = work / name.replace(".", "-")
        subprocess.run(["pdftoppm", "-r", "300", "-gray", "-png", str(FIXTURES / name), str(prefix)], check=True)
        images = sorted(work.glob(prefix.name + "*.png"))
        for number, (truth, image_path) in enumerate(zip(truth_pages, images), start=1):
            if quick and number > 2:
                break
            start = time.perf_counter()
            read = ocr.image_text(Image.open(image_path))
            seconds += time.perf_counter() - start
            truth_n, read_n = _norm(truth), _norm(read)
            distance = edit_distance(truth_n, read_n)
            errors += distance
            total += len(truth_n)
            pages += 1
            c.note(
                f"{name} page {number}: {len(truth_n)} chars, {distance} edits, {1 - distance / max(len(truth_n), 1):.2%}"
            )
    accuracy = 1 - errors / max(total, 1)
    table.add(
        "characters correct", f"{accuracy:.2%}", ">= 95%", accuracy >= 0.95, f"{pages} pages, {total} chars; {version}"
    )
    table.add("OCR seconds per page", f"{seconds / max(pages, 1):.2f} s", "", None, "300 dpi, one page at a time")


def reader_speed(table: c.Table) -> None:
    from locallens.domain import FileStat
    from locallens.readers import read_document

    table.section("read_document per fixture (median of 5)")
    for path in sorted(FIXTURES.iterdir()):
        if path.suffix in (".png",) or path.name.startswith(
            ("scan", "bomb", "corrupt", "entities", "encrypted", "images-only")
        ):
            continue
        st = path.stat()
        stat = FileStat(str(FIXTURES), path.name, str(path), st.st_size, st.st_mtime_ns)
        times = []
        for _ in range(5):
            seconds, result = c.timed(lambda stat=stat: read_document(stat))
            times.append(seconds * 1000)
        chars = len(getattr(result, "text", ""))
        table.add(path.name, c.fmt_ms(c.median(times)), "", None, f"{st.st_size} bytes -> {chars} chars")


def _unknown_share(pages: list[str]) -> tuple[float, int]:
    from wordfreq import zipf_frequency

    words = [word for word in re.findall(r"[^\W\d_]+", "\n".join(pages)) if len(word) > 1]
    unknown = sum(1 for word in words if zipf_frequency(word.lower(), "en") == 0)
    return unknown / max(len(words), 1), len(words)


def _pypdf_pages(data: bytes) -> list[str]:
    import io

    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def _pdfium_pages(data: bytes) -> list[str]:
    from locallens.readers import pdf

    with pdf.PDFIUM_LOCK:
        import pypdfium2

        document = pypdfium2.PdfDocument(data)
        try:
            return [pdf._page_text(document, i) for i in range(len(document))]
        finally:
            document.close()


def pdf_libraries(table: c.Table, folder: str | None) -> None:
    import logging

    from locallens.readers.pdf import clean_pages

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its font notes, once per page
    table.section("PDF text: PDFium (the reader's) against pypdf; seconds, words no dictionary knows")
    paths = sorted(FIXTURES.glob("*.pdf")) + (sorted(Path(folder).glob("*.pdf")) if folder else [])
    for path in paths:
        if path.name.startswith("scan"):
            continue
        data = path.read_bytes()
        figures = []
        for library in (_pdfium_pages, _pypdf_pages):
            seconds, pages = c.timed(lambda library=library, data=data: library(data))
            share, words = _unknown_share(clean_pages(pages))
            figures.append((seconds, share, words))
        (ours_s, ours_u, words), (peer_s, peer_u, _) = figures
        table.add(
            path.name,
            f"{ours_s:.2f} s, {ours_u:.2%} unknown",
            "",
            None,
            f"pypdf {peer_s:.2f} s ({peer_s / max(ours_s, 1e-9):.1f}x), {peer_u:.2%} unknown; {words} words",
        )


# Where the real files come from (those that exist on this machine are taken).
DEBIAN_HTML = Path("/usr/share/doc")
PYTHON_LIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _site_file(package: str, *parts: str) -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    return path if path.is_file() else None


def add_real_files(root: Path, html_limit: int) -> list[str]:
    """Copy real files shipped by Debian and PyPI packages under `root/real/`; their names."""
    written: list[str] = []

    def put(source: Path, rel: str) -> None:
        target = root / "real" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(f"real/{rel}")

    pages = sorted(p for p in DEBIAN_HTML.rglob("*.html") if p.is_file()) if DEBIAN_HTML.is_dir() else []
    for page in pages[:html_limit]:
        put(page, "debian-doc/" + str(page.relative_to(DEBIAN_HTML)))
    messages = sorted((PYTHON_LIB / "test" / "test_email" / "data").glob("msg_*.txt"))
    for message in messages:
        put(message, f"cpython-email/{message.stem}.eml")
    if messages:  # an mbox of them, each after its envelope line, ">From " escaped as mbox writers do
        mbox = root / "real" / "cpython-email" / "all-messages.mbox"
        with mbox.open("wb") as fh:
            for message in messages:
                body = re.sub(rb"(?m)^(>*From )", rb">\1", message.read_bytes())
                fh.write(b"From MAILER-DAEMON Thu Jan  1 00:00:00 2004\n" + body.rstrip(b"\n") + b"\n\n")
        written.append("real/cpython-email/all-messages.mbox")
    for package, parts, name in (
        ("docutils", ("writers", "odf_odt", "styles.odt"), "docutils-styles.odt"),
        ("docx", ("templates", "default.docx"), "python-docx-default.docx"),
        ("pptx", ("templates", "default.pptx"), "python-pptx-default.pptx"),
    ):
        found = _site_file(package, *parts)
        if found is not None:
            put(found, f"pypi/{name}")
    return written


def _located_by_format(db: Path) -> dict[str, tuple[int, int]]:
    """Per file extension: (chunks with a location, chunks)."""
    import sqlite3

    out: dict[str, list[int]] = {}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        for path, located in conn.execute(
            "SELECT relative_path, line_start IS NOT NULL OR span_kind IS NOT NULL FROM chunks"
        ):
            ext = Path(path).suffix.lower() or "(none)"
            counts = out.setdefault(ext, [0, 0])
            counts[0] += int(located)
            counts[1] += 1
    return {ext: (a, b) for ext, (a, b) in sorted(out.items())}


def mixed_folder(table: c.Table, quick: bool, work: Path) -> None:
    from tests.format_corpus import make_mixed_folder

    copies = 4 if quick else 12
    root, db = work / "mixed", work / "index.db"
    written, expected = make_mixed_folder(root, copies)
    real = add_real_files(root, 15 if quick else 80)
    by_ext = Counter(Path(name).suffix.lower() for name in written + real)
    table.section(
        f"mixed folder: {len(written) + len(real)} files: every format x {copies} + {sum(expected.values())} edge"
        f" cases + {len(real)} real files ({', '.join(f'{n} {e}' for e, n in sorted(by_ext.items()))})"
    )
    for attempt in ("first index", "reindex"):
        run = c.run_child(c.cli_command("index", str(root), "--db", str(db), "--json"))
        seconds = run.seconds
        if run.returncode not in (0, 7):
            table.add(
                attempt,
                f"exit {run.returncode}",
                "0 or 7",
                False,
                run.stderr.strip().splitlines()[-1:][0] if run.stderr.strip() else "",
            )
            return
        out = json.loads(run.stdout)
        reasons = Counter(
            s["reason"].split(":")[0] if s["reason"].startswith("cannot") else s["reason"] for s in out["skipped"]
        )
        traceback = "Traceback" in run.stderr
        table.add(
            f"{attempt}: files indexed",
            str(out["files"]["new"] + out["files"]["changed"] + out["files"]["unchanged"]),
            "",
            None,
            f"exit {run.returncode}, {'TRACEBACK' if traceback else 'no traceback'}",
        )
        generated = [s for s in out["skipped"] if not s["path"].startswith("real/")]
        table.add(
            f"{attempt}: skipped (generated + edge cases)",
            str(len(generated)),
            str(sum(expected.values())),
            len(generated) == sum(expected.values()),
            "; ".join(f"{n} x {r}" for r, n in sorted(reasons.items())),
        )
        table.add(
            f"{attempt}: skipped (real files)",
            str(out["files"]["skipped"] - len(generated)),
            "",
            None,
            "; ".join(f"{s['path']}: {s['reason']}" for s in out["skipped"] if s["path"].startswith("real/")),
        )
        embedded = out["chunks"]["embedded"]
        target = "0" if attempt == "reindex" else ""
        table.add(
            f"{attempt}: chunks embedded",
            f"{embedded} of {out['chunks']['total']}",
            target,
            embedded == 0 if target else None,
        )
        table.add(f"{attempt}: seconds", c.fmt_s(seconds), "", None, "whole command, model load included")
    located = _located_by_format(db)
    table.add(
        "chunks with a location",
        f"{sum(a for a, _ in located.values())} of {sum(b for _, b in located.values())}",
        "all",
        all(a == b for a, b in located.values()),
        ", ".join(f"{ext} {a}/{b}" for ext, (a, b) in located.items()),
    )


def main() -> None:
    args = c.parse_args(
        __doc__.split("\n")[0],
        extra=(("--mixed-only", "only the mixed folder (part 3)"), ("--pdf-only", "only the PDF libraries")),
        strings=(("--pdfs", "a folder of more PDFs to compare the libraries on"),),
    )
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("bench_formats", args.quick)
    table = c.Table("formats")
    with c.bench_dir("formats") as work:
        if args.pdf_only:
            pdf_libraries(table, args.pdfs)
        else:
            if not args.mixed_only:
                ocr_accuracy(table, args.quick, work)
                reader_speed(table)
                pdf_libraries(table, args.pdfs)
            mixed_folder(table, args.quick, work)
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

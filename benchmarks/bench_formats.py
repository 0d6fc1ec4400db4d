"""Formats benchmark: OCR character accuracy on scans made from text PDFs, reader speed per format,
and a mixed folder of every format indexed twice with the real embedder.

    .venv/bin/python benchmarks/bench_formats.py [--quick]

1. OCR (needs the `ocr` extra and Tesseract): each page of the text PDFs in tests/data/formats
   (LibreOffice's rendering of Debian's "Users and Groups" handbook, and the handbook fixture) is
   rendered to a 300 dpi greyscale image (poppler's `pdftoppm`, not the reader's own renderer,
   so the scan is made independently of what reads it) and OCR'd with the reader's
   `ocr.image_text`. The truth is the page's text layer (pypdf). Characters correct =
   1 - edit distance / characters of the truth, whitespace runs collapsed to one space on both
   sides. Target >= 95% over all pages. Seconds per page beside it.
2. Reader speed: median milliseconds of `read_document` per fixture (5 repeats).
3. Mixed folder (tests/format_corpus.py: every format, 12 variants each, plus the six edge cases
   that must be skipped; 4 variants with --quick): `locallens index` with the packaged MiniLM,
   then again: files, skips by reason, chunks embedded, seconds. The second run must embed 0.
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


def mixed_folder(table: c.Table, quick: bool, work: Path) -> None:
    from tests.format_corpus import make_mixed_folder

    copies = 4 if quick else 12
    root, db = work / "mixed", work / "index.db"
    written, expected = make_mixed_folder(root, copies)
    table.section(f"mixed folder: {len(written)} files, every format x {copies} + {sum(expected.values())} edge cases")
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
        table.add(
            f"{attempt}: skipped",
            str(out["files"]["skipped"]),
            str(sum(expected.values())),
            out["files"]["skipped"] == sum(expected.values()),
            "; ".join(f"{n} x {r}" for r, n in sorted(reasons.items())),
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


def main() -> None:
    args = c.parse_args(__doc__.split("\n")[0])
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("bench_formats", args.quick)
    table = c.Table("formats")
    with c.bench_dir("formats") as work:
        ocr_accuracy(table, args.quick, work)
        reader_speed(table)
        mixed_folder(table, args.quick, work)
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

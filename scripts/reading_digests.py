"""What each reader and chunking make of the repository's own files, one digest per version.

    python scripts/reading_digests.py            print the digests (JSON)
    python scripts/reading_digests.py --write    record them in tests/data/reading_digests.json
    python scripts/reading_digests.py --check    exit 1, naming each reader (or chunking) whose
                                                 output changed while its version stayed

An index reads an unchanged file again only when the version of its reader
(`locallens/readers/registry.py`) or `CHUNKING_VERSION` (`locallens/chunking/__init__.py`) is
not the one that made it (docs/behaviour.md#incremental-indexing). A change of output under the
same version would never reach people's indexes; this makes it fail the tests instead. Raise the
version, then `--write`. A refactor that gives the very same output needs neither.

The files: `tests/data/formats/` and `sample_docs/`, each read as `index` reads it (OCR off, so
the figures do not depend on whether Tesseract is installed; a file a reader refuses is left
out). Chunking's digest: the Markdown notes of `sample_docs/`, their text taken as it is (no
reader: a reader's change must not look like chunking's), cut as a new brain cuts them
(paragraph chunks of the default size, their headers and locations). Only the readers written on the standard library (text, AsciiDoc, Org, HTML, mail,
notebooks; OpenDocument and EPUB through defusedxml): what PDFium or python-docx extract may
change with their releases, which no version of ours can follow.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "data" / "reading_digests.json"
FOLDERS = (ROOT / "tests" / "data" / "formats", ROOT / "sample_docs")
# The readers' libraries whose output is ours to version: none (the standard library) and
# defusedxml (the standard library's XML parser, with entity expansion refused).
OUR_OWN = ("", "defusedxml")


def digests() -> dict[str, str]:
    """{"html_page/2": sha256, ..., "chunks/1": sha256} over the files of FOLDERS."""
    sys.path.insert(0, str(ROOT))
    from locallens.chunking import CHUNKING_VERSION, get_chunker
    from locallens.domain import Document, FileStat
    from locallens.indexer import cut
    from locallens.readers import ocr, read_document
    from locallens.readers.registry import extensions, reader_for, reading_of

    ocr.available = lambda: False  # type: ignore[assignment]
    readings: dict[str, hashlib._Hash] = defaultdict(hashlib.sha256)
    for folder in FOLDERS:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in extensions()):
            spec = reader_for(path.suffix.lower())
            if spec is None or spec.package not in OUR_OWN:
                continue
            relative = path.relative_to(ROOT).as_posix()
            st = path.stat()
            read = read_document(FileStat(str(ROOT), relative, str(path), st.st_size, st.st_mtime_ns))
            if not isinstance(read, Document):
                continue
            record = [relative, read.text, read.title, read.headings, read.spans, read.line_mapped, read.line_offset]
            readings[reading_of(relative)].update(json.dumps(record, default=repr).encode())
    # Chunking's digest reads its input without any reader (a reader's new output would change it
    # too): the Markdown notes' own text, as the text reader passes it on.
    notes = [
        Document(str(ROOT), path.relative_to(ROOT).as_posix(), text, "", 0, 0, line_mapped=True)
        for path in sorted((ROOT / "sample_docs").rglob("*.md"))
        for text in [path.read_text(encoding="utf-8").strip()]
    ]
    chunking = hashlib.sha256()
    chunker = get_chunker("paragraph")
    for note, texts in zip(notes, chunker.chunk_many([d.text for d in notes]), strict=True):
        chunks, headers = cut(note, "default", texts, headers=True)  # as `index` cuts it
        record = [note.relative_path, [c.content for c in chunks], headers, [c.location for c in chunks]]
        chunking.update(json.dumps(record, default=repr).encode())
    out = {name: digest.hexdigest() for name, digest in sorted(readings.items())}
    out[f"chunks/{CHUNKING_VERSION}"] = chunking.hexdigest()
    return out


def changed_without_a_new_version(now: dict[str, str], recorded: dict[str, str]) -> list[str]:
    """The readings recorded under the very version they have now, whose output differs."""
    return [name for name, digest in now.items() if name in recorded and recorded[name] != digest]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"record the digests in {RECORD.relative_to(ROOT)}")
    action.add_argument("--check", action="store_true", help="exit 1 when an output changed under the same version")
    args = parser.parse_args()
    now = digests()
    if args.write:
        RECORD.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
        return 0
    if not args.check:
        print(json.dumps(now, indent=1))
        return 0
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    changed = changed_without_a_new_version(now, recorded)
    unrecorded = sorted(set(now) - set(recorded))
    if changed:
        print(
            f"the output of {', '.join(changed)} changed but its version did not: raise it (readers/registry.py, "
            "chunking.CHUNKING_VERSION) so that indexes read those files again, then run "
            "`python scripts/reading_digests.py --write`",
            file=sys.stderr,
        )
        return 1
    if unrecorded:
        print(
            f"no digest recorded for {', '.join(unrecorded)}: run `python scripts/reading_digests.py --write`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Chunk locations benchmark: what finding each chunk's lines costs, at index time and on upgrade.

    .venv/bin/python benchmarks/bench_locations.py [--quick]

1. In process, per corpus (sample_docs/'s text files, the pydoc topics, the standard library's
   manual pages, one synthetic 10 MB markdown file): the paragraph chunker's time against the time
   `locations.locate` takes to find those chunks in the text, and, for chunks that are sentences
   joined by a space as the semantic chunkers make them (the word-by-word path), `locate` alone.
   Target: locating costs at most a tenth of chunking.
2. The upgrade: sample_docs/ indexed with the packaged model, then turned into a brain written
   before locations (columns dropped, schema step 5); `locallens index` is timed on it (the pass
   that reads every file once and locates its chunks, embedding nothing) against the same command
   on the then up-to-date brain (reads nothing), paired round by round in fresh copies.

Prints the machine and its load average (the reference machine is shared).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import _common as c

from locallens.chunking import get_chunker
from locallens.domain import Document
from locallens.locations import locate
from locallens.readers import read_document
from locallens.sentences import split_sentences
from locallens.walk import walk

TARGET_RATIO = 0.10  # locate time / chunk time
SENTENCES_PER_CHUNK = 8


def _documents(root: Path) -> list[Document]:
    docs = []
    for item in walk(root):
        if hasattr(item, "size"):
            doc = read_document(item)  # type: ignore[arg-type]
            if isinstance(doc, Document) and doc.line_mapped and doc.text:
                docs.append(doc)
    return docs


def _synthetic(folder: Path, megabytes: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    parts, size, n = [], 0, 0
    while size < megabytes * 1_000_000:
        block = f"## Section {n}\n\nParagraph {n} explains topic{n} in a few plain words.\nIt wraps onto a second line.\n\n\n"
        parts.append(block)
        size += len(block)
        n += 1
    (folder / "big.md").write_text("".join(parts), encoding="utf-8")
    return folder


def _measure(table: c.Table, name: str, docs: list[Document]) -> None:
    chunker = get_chunker("paragraph")
    megabytes = sum(len(d.text.encode("utf-8")) for d in docs) / 1e6
    chunk_s, chunked = c.timed(lambda: [chunker.chunk(d.text) for d in docs])
    locate_s, found = c.timed(lambda: [locate(d, cs) for d, cs in zip(docs, chunked, strict=True)])
    located = sum(1 for locs in found for loc in locs if loc is not None)
    total = sum(len(cs) for cs in chunked)
    # Sentences joined by a space (the semantic chunkers): mostly not verbatim, found word by word.
    joined = [
        [" ".join(s[i : i + SENTENCES_PER_CHUNK]) for i in range(0, len(s), SENTENCES_PER_CHUNK)]
        for s in (split_sentences(d.text) for d in docs)
    ]
    words_s, found_words = c.timed(lambda: [locate(d, cs) for d, cs in zip(docs, joined, strict=True)])
    located_words = sum(1 for locs in found_words for loc in locs if loc is not None)
    total_words = sum(len(cs) for cs in joined)
    ratio = locate_s / chunk_s if chunk_s else 0.0
    table.section(f"{name}: {len(docs)} files, {megabytes:.1f} MB")
    table.add("paragraph chunking", c.fmt_ms(chunk_s * 1000), note=f"{total} chunks")
    table.add(
        "locating them",
        c.fmt_ms(locate_s * 1000),
        f"<= {TARGET_RATIO:.0%} of chunking",
        ratio <= TARGET_RATIO,
        f"{ratio:.1%}; {located}/{total} located",
    )
    table.add(
        "locating sentence-joined chunks",
        c.fmt_ms(words_s * 1000),
        note=f"{located_words}/{total_words} located; {words_s * 1000 / max(megabytes, 1e-9):.0f} ms/MB",
    )


def _to_step_5(db: Path) -> None:
    """Make `db` look written before chunk locations (what an upgrade starts from)."""
    import apsw  # the binding the store uses (its SQLite knows every FTS5 option in the schema)

    conn = apsw.Connection(str(db))
    with conn:
        for column in ("line_start", "line_end", "span_kind", "span_label"):
            conn.execute(f"ALTER TABLE chunks DROP COLUMN {column}")
        conn.execute("ALTER TABLE documents DROP COLUMN line_offset")
        conn.execute("PRAGMA user_version=5")
    conn.close()


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("chunk locations", args.quick)
    table = c.Table("Locating chunks (paragraph chunker, default sizes)")
    with c.bench_dir("locations") as tmp:
        from corpora import write_pydoc_corpus, write_stdlib_corpus

        corpora = {"sample_docs": c.SAMPLE_DOCS, "pydoc topics": write_pydoc_corpus(tmp / "pydoc")}
        if not args.quick:
            corpora["stdlib manual pages"] = write_stdlib_corpus(tmp / "stdlib")
        corpora["synthetic markdown"] = _synthetic(tmp / "big", 2 if args.quick else 10)
        for name, root in corpora.items():
            _measure(table, name, _documents(root))

        rounds = 1 if args.quick else 3
        base = tmp / "base.db"
        c.check_child(c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(base), "--json")), "index")
        upgrade, noop = [], []
        report: dict = {}
        for n in range(rounds):
            db = tmp / f"round{n}.db"
            shutil.copy(base, db)
            _to_step_5(db)
            first = c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db), "--json"))
            c.check_child(first, "index (upgrade)")
            report = json.loads(first.stdout)
            second = c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db), "--json"))
            c.check_child(second, "index (up to date)")
            upgrade.append(first.seconds)
            noop.append(second.seconds)
        table.section(f"upgrade of a brain written before locations (sample_docs/, {rounds} round(s))")
        table.add(
            "index: locate every unchanged file",
            c.fmt_s(c.median(upgrade)),
            note=f"located {report['located']} files, embedded {report['chunks']['embedded']}",
        )
        table.add("index: up to date (nothing read)", c.fmt_s(c.median(noop)))
        ratios = [a / b for a, b in zip(upgrade, noop, strict=True)]
        table.add("ratio, paired", f"{c.median(ratios):.2f}x")
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

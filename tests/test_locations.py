"""Chunk locations and jumping to them (docs/behaviour.md#locations, #show).

Where each chunk is (lines of text files, pages of PDFs), stored in both stores, kept right by
index / reindex / prune without re-embedding, filled in for a brain upgraded from before
locations, printed as `path:START-END` / `path#page=N` everywhere a person reads a citation, and
`locallens show` printing the cited region.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from locallens import locations
from locallens.chunking import get_chunker
from locallens.domain import Chunk, Document, Location, SourceSpan
from locallens.readers import read_document
from locallens.storage import migrations
from locallens.storage import sqlite as store_module
from locallens.storage.sqlite import Store
from locallens.walk import walk

from .helpers import ROOT, FakeModels, cli, cli_json, copy_sample_docs, snapshot, stdout_json, write_files

LEAVE = """# Leave Policy

This policy applies to every employee of the company.

## Annual leave

Every full-time employee has 25 working days of paid annual leave per year.
Part-time employees receive leave in proportion to their hours.

## Sick leave

Sick leave needs a doctor's note after three days.
"""


def _document(text: str, line_offset: int = 0, spans: tuple[SourceSpan, ...] = ()) -> Document:
    return Document("/r", "a.md", text, "c" * 64, 0, 0, line_mapped=not spans, line_offset=line_offset, spans=spans)


def _file_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def _check_lines_of_sample(path: Path, chunk: dict) -> None:
    """The cited first and last lines of the file hold the chunk's first and last lines."""
    lines = _file_lines(path)
    first, last = chunk["content"].split("\n")[0].strip(), chunk["content"].split("\n")[-1].strip()
    assert first[:30] in lines[chunk["line_start"] - 1], (chunk["citation"], first)
    assert last[-30:] in lines[chunk["line_end"] - 1], (chunk["citation"], last)


# -- locating ---------------------------------------------------------------------------------


def test_lines_of_paragraph_chunks_count_the_stripped_blank_lines() -> None:
    text = LEAVE.strip()
    chunker = get_chunker("paragraph", 12, 4)
    contents = chunker.chunk(text)
    assert len(contents) > 3
    found = locations.locate(_document(text, line_offset=2), contents)
    lines = ["", "", *text.split("\n")]  # the file had two blank lines before the text
    for content, location in zip(contents, found, strict=True):
        assert location is not None and location.line_start is not None and location.line_end is not None
        assert content.split("\n")[0].strip() in lines[location.line_start - 1]
        assert content.split("\n")[-1].strip() in lines[location.line_end - 1]
    assert found[0] == Location(3, 3)  # "# Leave Policy" is line 3 of the file


def test_a_chunk_joined_across_extra_blank_lines_is_found_word_by_word() -> None:
    text = "Alpha one.\n\n\n\nBeta two.\n   \nGamma three."
    # The paragraph chunker joins paragraphs with exactly one blank line.
    (content,) = get_chunker("paragraph", 200, 0).chunk(text)
    assert content == "Alpha one.\n\nBeta two.\n\nGamma three." and content not in text
    assert locations.locate(_document(text), [content]) == [Location(1, 7)]
    # Sentences joined by a space where the file breaks the line (the semantic chunkers).
    assert locations.locate(_document("One.\nTwo.\n\nThree."), ["One. Two.", "Three."]) == [
        Location(1, 2),
        Location(4, 4),
    ]


def test_overlapping_chunks_and_repeated_text_keep_their_order() -> None:
    text = "same line\n\nsame line\n\nsame line"
    assert locations.locate(_document(text), ["same line", "same line", "same line"]) == [
        Location(1, 1),
        Location(3, 3),
        Location(5, 5),
    ]
    assert locations.locate(_document(text), ["not there", "same line"]) == [None, Location(1, 1)]


def test_spans_give_the_page_and_a_range_over_pages() -> None:
    text = "page one text\n\npage two text\n\npage four"
    spans = (SourceSpan(0, 13, "page", "1"), SourceSpan(15, 28, "page", "2"), SourceSpan(30, 39, "page", "4"))
    found = locations.locate(_document(text, spans=spans), ["page one text", "text\n\npage two", "page four"])
    assert found == [
        Location(kind="page", label="1"),
        Location(kind="page", label="1-2"),
        Location(kind="page", label="4"),
    ]
    assert locations.locate(Document("/r", "a.html", text, "c", 0, 0), ["page one text"]) == [None]


def test_rows_of_one_sheet_read_as_a_row_range() -> None:
    text = "a | 1\nb | 2\nc | 3\n\nx | 9"
    spans = (
        SourceSpan(0, 5, "sheet", "Budget!2"),
        SourceSpan(6, 11, "sheet", "Budget!3"),
        SourceSpan(12, 17, "sheet", "Budget!4"),
        SourceSpan(19, 24, "sheet", "Q1-Q2!2"),
    )
    found = locations.locate(_document(text, spans=spans), ["a | 1\nb | 2\nc | 3", "c | 3\n\nx | 9"])
    assert [loc.label if loc else None for loc in found] == ["Budget!2-4", "Budget!4-Q1-Q2!2"]
    labels = [span.label for span in spans]
    assert locations.span_labels("Budget!2-4", labels) == ("Budget!2", "Budget!4")
    assert locations.span_labels("Q1-Q2!2", labels) == ("Q1-Q2!2", "Q1-Q2!2")  # a name with a dash
    assert locations.span_labels("Budget!4-Q1-Q2!2", labels) == ("Budget!4", "Q1-Q2!2")
    assert locations.span_labels("3-4", ["1", "2", "3", "4"]) == ("3", "4")
    assert locations.span_labels("7", ["1", "2"]) is None


def test_citation_forms_and_json_fields() -> None:
    chunk = Chunk("abc-1", "default", "notes/a.md", 1, "x", "abc")
    assert chunk.citation() == "notes/a.md#chunk-1"  # no location: an old brain, or HTML
    assert locations.citation("a.md", 0, Location(4, 4)) == "a.md:4"
    assert locations.citation("a.md", 0, Location(4, 9)) == "a.md:4-9"
    assert locations.citation("deck.pptx", 0, Location(kind="slide", label="4")) == "deck.pptx#slide=4"
    assert locations.as_json(Location(kind="page", label="3-4")) == {
        "line_start": None,
        "line_end": None,
        "page": 3,
        "span": {"kind": "page", "label": "3-4"},
    }
    assert locations.as_json(None) == {"line_start": None, "line_end": None, "page": None, "span": None}
    content = "First line.\nThe cited sentence\nruns on. Last."
    start = content.index("The cited")
    end = content.index(" Last")
    assert locations.sentence_lines(content, Location(10, 12), start, end) == (11, 12)
    assert locations.sentence_lines(content, Location(10, 14), start, end) is None  # lines not exact
    assert locations.cited_sentence(
        "x [...] The cited sentence\nruns on.", content, Location(10, 12), content[start:end]
    ) == {
        "excerpt_span": [8, 35],
        "line_start": 11,
        "line_end": 12,
    }


@given(
    paragraphs=st.lists(
        st.lists(
            st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=12,
    ),
    gaps=st.lists(st.sampled_from(["\n\n", "\n\n\n", "\n  \n", "\n\t\n\n"]), min_size=12, max_size=12),
    leading=st.integers(0, 3),
    size=st.integers(8, 60),
)
def test_every_paragraph_chunk_is_located_on_its_own_lines(
    paragraphs: list[list[str]], gaps: list[str], leading: int, size: int
) -> None:
    body = ""
    for n, lines in enumerate(paragraphs):
        body += ("" if n == 0 else gaps[n]) + "\n".join(lines)
    raw = "\n" * leading + body
    text = raw.strip()
    if not text:
        return
    offset = raw[: len(raw) - len(raw.lstrip())].count("\n")
    contents = get_chunker("paragraph", size, size // 4).chunk(text)
    found = locations.locate(_document(text, line_offset=offset), contents)
    file_lines = raw.split("\n")
    previous = 0
    for content, location in zip(contents, found, strict=True):
        assert location is not None and location.line_start is not None and location.line_end is not None
        assert previous <= location.line_start <= location.line_end <= len(file_lines)
        previous = location.line_start
        # Every word of the chunk is on the lines it cites, in order.
        cited = "".join("\n".join(file_lines[location.line_start - 1 : location.line_end]).split())
        assert "".join(content.split()) in cited


# -- the reader -------------------------------------------------------------------------------


def test_text_files_are_line_mapped_with_their_leading_blank_lines(tmp_path: Path) -> None:
    root = write_files(tmp_path / "docs", {"a.md": "\r\n\r\n  \n# Title\r\nbody\n", "b.html": "<p>x</p>"})
    read = {item.relative_path: read_document(item) for item in walk(root)}
    a, b = read["a.md"], read["b.html"]
    assert isinstance(a, Document) and isinstance(b, Document)
    assert a.line_mapped and a.line_offset == 3 and a.text == "# Title\nbody"
    assert not b.line_mapped and [(s.kind, s.line_start, s.line_end) for s in b.spans] == [("lines", 1, 1)]


def test_a_pdf_has_one_span_per_page_with_text(tmp_path: Path) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/expense-policy.pdf"])
    (item,) = list(walk(root))
    document = read_document(item)
    assert isinstance(document, Document) and not document.line_mapped
    assert [span.label for span in document.spans] == ["1", "2"]
    for span in document.spans:
        assert span.kind == "page" and document.text[span.start : span.end].strip()
    assert document.spans[0].end + 2 == document.spans[1].start  # pages joined by a blank line


# -- indexing keeps them right ----------------------------------------------------------------


def _chunks(db: Path) -> dict[str, list[tuple[str, int | None, int | None, str | None]]]:
    with Store(db, create=False) as store:
        rows = store.execute(
            "SELECT relative_path, content, line_start, line_end, span_label FROM chunks ORDER BY relative_path, chunk_index"
        )
    out: dict[str, list[tuple[str, int | None, int | None, str | None]]] = {}
    for path, content, start, end, label in rows:
        out.setdefault(path, []).append((content, start, end, label))
    return out


def _assert_located(root: Path, db: Path) -> None:
    for path, chunks in _chunks(db).items():
        if not path.endswith((".md", ".txt")):
            continue
        for content, start, end, _ in chunks:
            assert start is not None and end is not None, path
            _check_lines_of_sample(
                root / path, {"content": content, "line_start": start, "line_end": end, "citation": path}
            )


def test_index_stores_lines_and_pages_and_ask_cites_them(tmp_path: Path, fake_models: FakeModels) -> None:
    root = copy_sample_docs(
        tmp_path / "docs", ["hr/leave-policy.md", "hr/expense-policy.pdf", "operations/office-network.html"]
    )
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    _assert_located(root, db)
    chunks = _chunks(db)
    assert next(label for *_, label in chunks["hr/expense-policy.pdf"]) == "1"
    # HTML is cited by the lines of its source: every chunk's words are on its lines.
    html = (root / "operations/office-network.html").read_text().split("\n")
    for content, start, end, label in chunks["operations/office-network.html"]:
        assert start is not None and end is not None and label is None
        source = "\n".join(html[start - 1 : end])
        assert all(word in source for word in re.findall(r"\w+", content)), (start, end, content)

    out = stdout_json(cli("ask", "How many days of annual leave?", "--db", str(db), "--extractive", "--json"))
    by_path = {s["path"]: s for s in out["sources"]}
    leave = by_path["hr/leave-policy.md"]
    assert re.fullmatch(r"hr/leave-policy\.md:\d+-\d+", leave["citation"])
    assert leave["citation"] == f"hr/leave-policy.md:{leave['line_start']}-{leave['line_end']}"
    _check_lines_of_sample(root / "hr/leave-policy.md", leave)
    for claim in out["claims"]:
        source = out["sources"][claim["source"] - 1]
        start, end = claim["excerpt_span"]
        # The cited unit, inside its excerpt: the printed text is its words (list or table markup
        # and the citation aside).
        assert re.findall(r"\w+", source["content"][start:end]) == re.findall(
            r"\w+", re.sub(r"\[\d+\]", "", claim["text"])
        )
    plain = cli("ask", "How many days of annual leave?", "--db", str(db), "--extractive").stdout
    assert f"] {leave['citation']} (" in plain and "#chunk-" not in plain.split("Sources:")[1].split("office")[0]
    pdf = stdout_json(cli("ask", "expense claim receipt", "--db", str(db), "--extractive", "--json", "--path", "*.pdf"))
    assert pdf["sources"][0]["citation"].startswith("hr/expense-policy.pdf#page=")
    assert pdf["sources"][0]["page"] in (1, 2) and pdf["sources"][0]["span"]["kind"] == "page"


def test_the_prompt_keeps_chunk_numbers(tmp_path: Path, fake_models: FakeModels) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md"])
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    fake_models.replies = ["Employees get 25 days [1]."]
    result = cli("ask", "How many days of annual leave?", "--db", str(db))
    assert result.exit_code in (0, 4), result.output
    (prompt,) = fake_models.prompts
    headers = re.findall(r"^\[\d+\] (\S+)$", prompt[-1].content, re.M)
    assert headers and all(re.fullmatch(r"hr/leave-policy\.md#chunk-\d+", h) for h in headers)


def test_an_edit_moves_the_lines_of_unchanged_chunks_without_embedding_them(
    tmp_path: Path, fake_models: FakeModels
) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md"])
    db = tmp_path / "index.db"
    first = cli_json("index", str(root), "--db", str(db))
    before = _chunks(db)["hr/leave-policy.md"]
    path = root / "hr/leave-policy.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("# Leave Policy\n", "# Leave Policy\n\nA new paragraph of five words.\n\nAnd a second.\n", 1),
        encoding="utf-8",
    )
    again = cli_json("index", str(root), "--db", str(db))
    after = _chunks(db)["hr/leave-policy.md"]
    assert again["files"]["changed"] == 1
    assert 0 < again["chunks"]["embedded"] < first["chunks"]["embedded"]
    moved = {content: (start, end) for content, start, end, _ in after}
    shifted = [(moved[content], (start, end)) for content, start, end, _ in before if content in moved]
    assert shifted and all(new == (old[0] + 4, old[1] + 4) for new, old in shifted if old[0] > 5)
    _assert_located(root, db)


def test_blank_lines_added_at_the_top_shift_every_line_and_embed_nothing(
    tmp_path: Path, fake_models: FakeModels
) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md"])
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    before = _chunks(db)["hr/leave-policy.md"]
    path = root / "hr/leave-policy.md"
    path.write_text("\n\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")  # same text: same checksum
    embedded = len(fake_models.embedder.encoded)
    again = cli_json("index", str(root), "--db", str(db))
    assert again["files"]["unchanged"] == 1 and again["chunks"]["embedded"] == 0
    assert len(fake_models.embedder.encoded) == embedded
    after = _chunks(db)["hr/leave-policy.md"]
    assert [(s + 3, e + 3) for _, s, e, _ in before] == [(s, e) for _, s, e, _ in after]  # type: ignore[operator]
    _assert_located(root, db)


def test_prune_and_rename_keep_locations(tmp_path: Path, fake_models: FakeModels) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md", "hr/remote-work.txt"])
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    # Renamed: the same title (its first heading), so the same embedded texts, so no embedding.
    (root / "hr/leave-policy.md").rename(root / "hr/leave.md")
    again = cli_json("index", str(root), "--db", str(db))
    assert again["files"]["removed"] == 1 and again["files"]["new"] == 1 and again["chunks"]["embedded"] == 0
    assert set(_chunks(db)) == {"hr/leave.md", "hr/remote-work.txt"}
    _assert_located(root, db)


# -- an upgraded brain -------------------------------------------------------------------------


def _index_before_locations(root: Path, db: Path) -> None:
    """`root` indexed as a release before chunk locations wrote it (schema step 5, no locations)."""
    step = next(s for s in migrations.MIGRATIONS if s.name == "chunk_locations")
    cli_json("index", str(root), "--db", str(db))
    with Store(db) as store, store.transaction():
        store.conn.execute("UPDATE chunks SET line_start = NULL, line_end = NULL, span_kind = NULL, span_label = NULL")
        for column in ("line_start", "line_end", "span_kind", "span_label"):
            store.conn.execute(f"ALTER TABLE chunks DROP COLUMN {column}")
        store.conn.execute("ALTER TABLE documents DROP COLUMN line_offset")
        store.conn.execute(f"PRAGMA user_version={step.version - 1}")


def test_an_upgraded_brain_is_located_on_its_next_index_without_embedding(
    tmp_path: Path, fake_models: FakeModels
) -> None:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md", "hr/expense-policy.pdf", "hr/remote-work.txt"])
    db = tmp_path / "index.db"
    _index_before_locations(root, db)
    vectors_before = snapshot(db)
    # Upgraded when first opened (the columns are added, empty): cited by chunk number as before.
    old = stdout_json(cli("ask", "annual leave days", "--db", str(db), "--context-only", "--json"))
    assert all(re.search(r"#chunk-\d+$", s["citation"]) for s in old["sources"])
    assert all(s["line_start"] is None for s in old["sources"])
    embedded = len(fake_models.embedder.encoded)
    dry = cli("index", str(root), "--db", str(db), "--dry-run")
    assert dry.exit_code == 0 and "would locate the chunks of 3 unchanged file(s)" in dry.stderr
    report = cli_json("index", str(root), "--db", str(db))
    assert report["located"] == 3 and report["files"]["unchanged"] == 3
    assert report["chunks"]["embedded"] == 0 and len(fake_models.embedder.encoded) == embedded
    with Store(db, create=False) as store:
        assert store.execute("PRAGMA user_version")[0][0] == migrations.SCHEMA_VERSION
        assert store.execute("SELECT count(*) FROM documents WHERE line_offset IS NULL") == [(0,)]
    assert snapshot(db) == vectors_before
    _assert_located(root, db)
    assert _chunks(db)["hr/expense-policy.pdf"][0][3] == "1"
    new = stdout_json(cli("ask", "annual leave days", "--db", str(db), "--context-only", "--json"))
    assert any(re.fullmatch(r"hr/leave-policy\.md:\d+-\d+", s["citation"]) for s in new["sources"])
    # The run after that reads nothing again.
    assert cli_json("index", str(root), "--db", str(db))["located"] == 0


def test_the_migration_step_adds_the_columns_to_a_step_5_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = next(s for s in migrations.MIGRATIONS if s.name == "chunk_locations")
    earlier = tuple(s for s in migrations.MIGRATIONS if s.version < step.version)
    db = tmp_path / "index.db"
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", earlier)
        patch.setattr(store_module, "SCHEMA_VERSION", earlier[-1].version)
        with Store(db) as store:
            assert store.execute("PRAGMA user_version")[0][0] == step.version - 1
            assert "line_start" not in {r[1] for r in store.execute("PRAGMA table_info(chunks)")}
    with Store(db) as store:
        assert store.execute("PRAGMA user_version")[0][0] == migrations.SCHEMA_VERSION
        assert {"line_start", "line_end", "span_kind", "span_label"} <= {
            r[1] for r in store.execute("PRAGMA table_info(chunks)")
        }
        assert "line_offset" in {r[1] for r in store.execute("PRAGMA table_info(documents)")}
        assert store.integrity_check() == "ok"


def test_postgres_stores_and_fills_locations(tmp_path: Path, fake_models: FakeModels, pg_url: str) -> None:
    import psycopg

    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md", "hr/expense-policy.pdf"])
    cli_json("index", str(root), "--db", pg_url)
    out = stdout_json(cli("ask", "annual leave days", "--db", pg_url, "--context-only", "--json"))
    leave = next(s for s in out["sources"] if s["path"] == "hr/leave-policy.md")
    _check_lines_of_sample(root / "hr/leave-policy.md", leave)
    # A schema-2 brain: no locations yet, cited by number; the next index fills them, embedding nothing.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE locallens.chunks SET line_start = NULL, line_end = NULL, span_kind = NULL, span_label = NULL"
        )
        conn.execute("UPDATE locallens.documents SET line_offset = NULL")
    old = stdout_json(cli("ask", "annual leave days", "--db", pg_url, "--context-only", "--json"))
    assert all("#chunk-" in s["citation"] for s in old["sources"])
    report = cli_json("index", str(root), "--db", pg_url)
    assert report["located"] == 2 and report["chunks"]["embedded"] == 0
    new = stdout_json(cli("ask", "annual leave days", "--db", pg_url, "--context-only", "--json"))
    assert [s["citation"] for s in new["sources"]] == [s["citation"] for s in out["sources"]]


# -- show -------------------------------------------------------------------------------------


@pytest.fixture()
def indexed(tmp_path: Path, fake_models: FakeModels) -> tuple[Path, Path]:
    root = copy_sample_docs(tmp_path / "docs", ["hr/leave-policy.md", "hr/expense-policy.pdf"])
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    return root, db


def test_show_prints_the_region_with_the_cited_lines_marked(indexed: tuple[Path, Path]) -> None:
    root, db = indexed
    result = cli("show", "hr/leave-policy.md:9-10", "--db", str(db), "--context", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "hr/leave-policy.md:9-10"
    file_lines = _file_lines(root / "hr/leave-policy.md")
    assert [line.split("│", 1)[0].split()[-1] for line in lines[1:]] == ["7", "8", "9", "10", "11", "12"]
    assert [line.startswith(">") for line in lines[1:]] == [False, False, True, True, False, False]
    assert lines[3].split("│ ", 1)[1] == file_lines[8]
    assert "\x1b" not in result.stdout  # not a terminal: no link, no colour
    # An absolute path and a path from the current folder name the same file.
    absolute = cli("show", f"{root / 'hr/leave-policy.md'}:9-10", "--db", str(db), "--context", "2")
    assert absolute.stdout.splitlines()[1:] == lines[1:]
    page = cli("show", "hr/expense-policy.pdf#page=2", "--db", str(db))
    assert page.exit_code == 0 and page.stdout.startswith("hr/expense-policy.pdf#page=2\n") and "claim" in page.stdout


def test_show_prints_an_asciidoc_files_own_lines(tmp_path: Path, fake_models: FakeModels) -> None:
    """The AsciiDoc reader makes markup lines plain for indexing; `show` prints what the file says."""
    root, db = tmp_path / "docs", tmp_path / "index.db"
    root.mkdir()
    source = Path(__file__).resolve().parent / "data" / "formats" / "ferryctl-cache.adoc"
    (root / "ferryctl-cache.adoc").write_bytes(source.read_bytes())
    cli_json("index", str(root), "--db", str(db))
    result = cli("show", "ferryctl-cache.adoc:1-3", "--db", str(db), "--context", "0")
    assert result.exit_code == 0, result.output
    shown = [line.split("│ ", 1)[1] if "│ " in line else "" for line in result.stdout.splitlines()[1:]]
    assert shown == source.read_text().split("\n")[:3]  # "= ferryctl-cache(1)", ":doctype: manpage", ""


@pytest.mark.parametrize(
    ("target", "code", "message"),
    [
        ("hr/leave-policy.md:900", 2, "hr/leave-policy.md has 59 line(s); line 900 is out of range"),
        ("hr/nope.md:3", 2, "no such file: hr/nope.md"),
        ("hr/leave-policy.md:0", 2, "bad line range"),
        ("hr/leave-policy.md:5-2", 2, "bad line range"),
        ("hr/expense-policy.pdf:3", 2, "has no lines to show; cite it as hr/expense-policy.pdf#page=N"),
        ("hr/expense-policy.pdf#page=7", 2, "has no page 7"),
        ("7", 2, "no answer to show sources of yet"),
    ],
)
def test_show_refuses_bad_input_in_one_line(indexed: tuple[Path, Path], target: str, code: int, message: str) -> None:
    _, db = indexed
    result = cli("show", target, "--db", str(db))
    assert result.exit_code == code and message in result.stderr, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_show_reads_only_files_under_a_brain_root(indexed: tuple[Path, Path], tmp_path: Path) -> None:
    _, db = indexed
    secret = tmp_path / "secret.md"
    secret.write_text("password: hunter2\n", encoding="utf-8")
    for target in (f"{secret}:1", "/etc/passwd:1", f"{tmp_path}/docs/../secret.md:1"):
        result = cli("show", target, "--db", str(db))
        assert result.exit_code == 2 and "not under the roots of any brain" in result.stderr, target
        assert "hunter2" not in result.output and "root:" not in result.stdout
    link = tmp_path / "docs" / "hr" / "link.md"
    link.symlink_to(secret)  # a symlink inside a root that points outside it
    result = cli("show", "hr/link.md:1", "--db", str(db))
    assert result.exit_code == 2 and "hunter2" not in result.output
    assert cli("show", "hr/leave-policy.md:1", "--db", str(tmp_path / "missing.db")).exit_code == 3


def test_show_n_opens_source_n_of_the_last_answer(indexed: tuple[Path, Path]) -> None:
    root, db = indexed
    question = "Does every full-time employee have 25 working days of paid annual leave per calendar year?"
    answer = cli("ask", question, "--db", str(db), "--extractive", "--path", "*.md")
    assert answer.exit_code == 0, answer.output
    remembered = Path(os.environ["LOCALLENS_HOME"]) / "last-answer.json"
    assert stat.S_IMODE(remembered.stat().st_mode) == 0o600
    record = json.loads(remembered.read_text(encoding="utf-8"))
    assert record["db"] == str(db) and record["sources"][0]["file"] == str(root / "hr/leave-policy.md")
    source = record["sources"][0]
    shown = cli("show", "1")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == source["citation"]
    marked = [int(line.split("│")[0].split()[-1]) for line in lines[1:] if line.startswith(">")]
    cited = [n for a, b in source["cited"] for n in range(a, b + 1)]
    assert marked == (cited or list(range(source["line_start"], source["line_end"] + 1)))
    assert marked and all(source["line_start"] <= n <= source["line_end"] for n in marked)
    # The file changed since: said once on stderr, the lines still shown.
    path = root / "hr/leave-policy.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")
    again = cli("show", "1")
    assert again.exit_code == 0 and "changed since it was indexed" in again.stderr
    assert cli("show", "9").exit_code == 2


def test_hyperlinks_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from locallens import cli as cli_module

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert cli_module.hyperlinks()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not cli_module.hyperlinks()
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert not cli_module.hyperlinks()


def _tmux_capture(tmp_path: Path, command: str, env: dict[str, str]) -> bytes:
    """Run `command` in a detached tmux window and return what it wrote to the terminal, raw."""
    log = tmp_path / "tty.log"
    session = f"ll-show-{os.getpid()}"
    exports = " ".join(f"{k}={v!s}" for k, v in env.items())
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/sh\nenv {exports} {command} > /dev/tty 2>&1; echo done-$? > {tmp_path}/rc\n")
    script.chmod(0o755)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50"], check=True)
    try:
        subprocess.run(["tmux", "pipe-pane", "-t", session, "-o", f"cat >> {log}"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", session, str(script), "Enter"], check=True)
        deadline = time.monotonic() + 60
        while not (tmp_path / "rc").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.3)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    return log.read_bytes() if log.exists() else b""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_show_on_a_terminal_links_the_path_and_escapes_the_text(tmp_path: Path, fake_models: FakeModels) -> None:
    root = write_files(tmp_path / "docs", {"evil.md": "line one\nbell \x07 and \x1b]0;pwned\x07 here\nline three\n"})
    db = tmp_path / "index.db"
    cli_json("index", str(root), "--db", str(db))
    env = {"PYTHONPATH": str(ROOT), "LOCALLENS_HOME": os.environ["LOCALLENS_HOME"], "TERM": "xterm-256color"}
    command = f"{sys.executable} -m locallens show evil.md:2 --db {db}"
    raw = _tmux_capture(tmp_path, command, env)
    assert b"\x1b]8;" in raw and (root / "evil.md").as_uri().encode() in raw, raw
    assert b"\x1b]0;pwned" not in raw and b"\\x1b]0;pwned\\x07" in raw  # the document's escapes, escaped
    (tmp_path / "nc").mkdir()
    plain = _tmux_capture(tmp_path / "nc", command, {**env, "NO_COLOR": "1"})
    assert b"\x1b]8;" not in plain and b"evil.md:2" in plain


def test_ask_on_sample_docs_cites_the_leave_policy_by_its_lines(sample_index: Path) -> None:
    """The real models on sample_docs/: `path:START-END` sources whose lines hold the excerpt."""
    from .helpers import SAMPLE_DOCS

    question = "How many days of paid annual leave does a full-time employee get?"
    result = cli("ask", question, "--db", str(sample_index), "--extractive")
    assert result.exit_code == 0, result.output
    assert re.search(r"^\[1\] hr/leave-policy\.md:\d+-\d+ \(", result.stdout.split("Sources:\n")[1], re.M)
    out = stdout_json(cli("ask", question, "--db", str(sample_index), "--extractive", "--json"))
    for source in out["sources"]:
        if source["path"].endswith((".md", ".txt", ".rst")):
            _check_lines_of_sample(SAMPLE_DOCS / source["path"], source)
    shown = cli("show", "1")
    assert shown.exit_code == 0 and shown.stdout.startswith(out["sources"][0]["citation"] + "\n")
    assert "25 working days" in shown.stdout


def test_show_finds_a_file_indexed_as_a_root_of_its_own(tmp_path: Path, fake_models: FakeModels) -> None:
    folder = write_files(tmp_path / "notes", {"todo.md": "# Todo\n\nBuy milk.\n", "other.md": "Private.\n"})
    db = tmp_path / "index.db"
    cli_json("index", str(folder / "todo.md"), "--db", str(db))
    shown = cli("show", "todo.md:3", "--db", str(db))
    assert shown.exit_code == 0 and "> 3 │ Buy milk." in shown.stdout, shown.output
    beside = cli("show", "other.md:1", "--db", str(db))  # next to the root, not under it
    assert beside.exit_code == 2 and "Private" not in beside.output


def test_copy_keeps_locations(indexed: tuple[Path, Path], tmp_path: Path) -> None:
    _, db = indexed
    dest = tmp_path / "copy.db"
    result = cli("copy", str(db), str(dest), "--json")
    assert result.exit_code == 0, result.output
    assert _chunks(dest) == _chunks(db)
    with Store(dest, create=False) as store:
        assert store.execute("SELECT count(*) FROM documents WHERE line_offset IS NULL") == [(0,)]


def test_cited_lines_that_overlap_are_one_span() -> None:
    from locallens.show import cited_lines

    claims = [
        {"supported": True, "source": 2, "line_start": 6, "line_end": 8},
        {"supported": True, "source": 2, "line_start": 8, "line_end": 8},
        {"supported": True, "source": 2, "line_start": 12, "line_end": 13},
        {"supported": True, "source": 1, "line_start": 3, "line_end": None},
    ]
    assert cited_lines({"claims": claims}) == {2: [(6, 8), (12, 13)], 1: [(3, 3)]}

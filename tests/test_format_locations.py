"""Where a chunk of HTML, e-mail, EPUB, Word and OpenDocument is (docs/formats.md, docs/behaviour.md#locations).

HTML and e-mail are text: cited by the lines of the file (`page.html:12-15`). An EPUB chunk by its
chapter file inside the book and that file's lines (`book.epub#chapter=OEBPS/ch2.xhtml:3-9`). Word
and OpenDocument text by paragraph (`report.docx#para=4-6`). Each end to end: indexed, asked,
cited, opened with `locallens show`; and an index from before these locations is upgraded
without embedding anything.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest

from locallens.domain import Document, FileStat
from locallens.locations import locate, parse_chapter_label
from locallens.readers import read_document
from locallens.storage.sqlite import Store

from .helpers import FakeModels, cli, cli_json, stdout_json

FIXTURES = Path(__file__).resolve().parent / "data" / "formats"

PAGE = """<!DOCTYPE html>
<html>
<head>
  <title>Field notes</title>
  <style>p { margin: 0 }</style>
</head>
<body>
  <h1>Field notes</h1>
  <p>The weather station on the ridge
     records wind speed every ten minutes.</p>
  <h2>Checklist</h2>
  <ol start="3">
    <li>Clean the anemometer cups</li>
    <li>Replace the logger battery
      <ul>
        <li>a lithium cell, never alkaline</li>
      </ul>
    </li>
  </ol>
  <table>
    <thead><tr><th>Sensor</th><th>Interval</th></tr></thead>
    <tbody>
      <tr><td>Wind</td><td>10 min</td></tr>
      <tr><td>Rain</td>
          <td>1 h</td></tr>
    </tbody>
  </table>
  <pre>
logger --sync
  --verbose</pre>
</body>
</html>
"""

_MARKUP = re.compile(r"^ *(?:[-#]+|\d+\.) |[|]", re.M)


def _words(text: str) -> list[str]:
    """The words of a text as a reader laid it out, its list markers, heading marks and table bars aside."""
    return re.findall(r"[\w@.:']+", _MARKUP.sub(" ", text))


def _read(path: Path) -> Document:
    st = path.stat()
    document = read_document(FileStat(str(path.parent), path.name, str(path), st.st_size, st.st_mtime_ns))
    assert isinstance(document, Document), document
    return document


def _mail(path: Path, cte: str, html: bool = False) -> None:
    message = EmailMessage()
    message["From"] = "Ines Duarte <ines@example.org>"
    message["To"] = "crew@example.org"
    message["Subject"] = "Dive plan for Thursday"
    message["Date"] = "Tue, 05 May 2026 08:00:00 +0000"
    body = "Hello crew,\n\nWe dive at the north reef at 09:30.\nBring the spare regulator.\n\nInes\n"
    if html:
        message.set_content(
            "<html><body><p>Hello crew,</p>\n<p>We dive at the north reef at 09:30.</p>\n"
            "<ul>\n<li>Bring the spare regulator.</li>\n</ul></body></html>\n",
            subtype="html",
            cte=cte,
        )
    else:
        message.set_content(body, cte=cte)
    path.write_bytes(bytes(message))


# -- the readers --------------------------------------------------------------------------------


def test_html_keeps_list_markers_and_table_rows_and_knows_each_lines_source() -> None:
    from locallens.readers.html_page import parse_html

    text, title, headings, spans = parse_html(PAGE)
    assert title == "Field notes" and headings == ((1, "Field notes"), (2, "Checklist"))
    assert (
        "3. Clean the anemometer cups\n4. Replace the logger battery\n  - a lithium cell, never alkaline\n\n"
        "| Sensor | Interval |\n| Wind | 10 min |\n| Rain | 1 h |\n\n```\nlogger --sync\n  --verbose\n```"
    ) in text
    lines = PAGE.split("\n")
    by_text = {text[s.start : s.end]: (s.line_start, s.line_end) for s in spans}
    assert by_text["The weather station on the ridge records wind speed every ten minutes."] == (9, 10)
    assert by_text["  - a lithium cell, never alkaline"] == (16, 16)
    assert by_text["| Rain | 1 h |"] == (24, 25)  # a row written over two source lines
    assert by_text["  --verbose"] == (30, 30)
    for span in spans:  # every line's words are on its source lines
        source = "\n".join(lines[span.line_start - 1 : span.line_end])  # type: ignore[operator]
        assert all(word in source for word in _words(text[span.start : span.end])), span


@pytest.mark.parametrize(
    ("cte", "html"), [("8bit", False), ("quoted-printable", False), ("base64", False), ("7bit", True)]
)
def test_email_bodies_are_cited_by_the_lines_they_are_sent_on(tmp_path: Path, cte: str, html: bool) -> None:
    path = tmp_path / "dive.eml"
    _mail(path, cte, html)
    document = _read(path)
    assert "We dive at the north reef at 09:30." in document.text
    lines = path.read_text().split("\n")
    reef = next(s for s in document.spans if "north reef" in document.text[s.start : s.end])
    cited = lines[reef.line_start - 1 : reef.line_end]  # type: ignore[operator]
    if cte == "base64":  # encoded: cited by the lines the body is encoded on, the whole body
        assert cited and all(re.fullmatch(r"[A-Za-z0-9+/=]+", line) for line in cited)
    else:
        assert any("north reef at 09:30" in line for line in cited)
        if cte != "quoted-printable":
            assert reef.line_start == reef.line_end  # sent as is: line by line
    subject = next(s for s in document.spans if document.text[s.start : s.end].startswith("# Dive plan"))
    assert lines[subject.line_start - 1] == "Subject: Dive plan for Thursday"  # type: ignore[operator]


def test_every_chunk_of_these_formats_is_located() -> None:
    from locallens.chunking import get_chunker

    chunker = get_chunker("paragraph", 60, 10)
    for name in (
        "handbook.docx",
        "handbook.odt",
        "handbook.epub",
        "users-and-groups.epub",
        "digest.eml",
        "archive.mbox",
        "users-and-groups.docx",
    ):
        document = _read(FIXTURES / name)
        contents = chunker.chunk(document.text)
        located = locate(document, contents)
        assert contents and all(location is not None and location.cite(name) for location in located), name


# -- end to end -------------------------------------------------------------------------------


@pytest.fixture()
def located_index(tmp_path: Path, fake_models: FakeModels) -> tuple[Path, Path]:
    root, db = tmp_path / "docs", tmp_path / "index.db"
    for name in ("handbook.docx", "handbook.odt", "handbook.epub", "offsite.eml", "archive.mbox"):
        target = root / name.replace(".", "-") / name
        target.parent.mkdir(parents=True)
        shutil.copy(FIXTURES / name, target)
    (root / "page-html").mkdir()
    (root / "page-html" / "page.html").write_text(PAGE, encoding="utf-8")
    assert cli_json("index", str(root), "--db", str(db))["files"]["new"] == 6
    return root, db


# (folder, question, the citation's form)
CITED = [
    ("page-html", "When is the logger battery replaced?", r"page-html/page\.html:\d+(-\d+)?"),
    ("handbook-docx", "When does the ferry leave Port Ellen?", r"handbook-docx/handbook\.docx#para=\d+(-\d+)?"),
    ("handbook-odt", "When does the ferry leave Port Ellen?", r"handbook-odt/handbook\.odt#para=\d+(-\d+)?"),
    (
        "handbook-epub",
        "Which radio channel is the coastguard on?",
        # a chunk may run from one chapter into the next: `part1.xhtml:5-EPUB/part2.xhtml:14`
        r"handbook-epub/handbook\.epub#chapter=EPUB/part\d\.xhtml:\d+(-(EPUB/part\d\.xhtml:)?\d+)?",
    ),
    ("offsite-eml", "Where does the offsite move to?", r"offsite-eml/offsite\.eml:\d+(-\d+)?"),
    ("archive-mbox", "Do you like this message?", r"archive-mbox/archive\.mbox:\d+(-\d+)?"),
]


@pytest.mark.parametrize(("folder", "question", "form"), CITED, ids=[c[0] for c in CITED])
def test_ask_cites_each_format_where_its_text_is_and_show_opens_it(
    located_index: tuple[Path, Path], folder: str, question: str, form: str
) -> None:
    _, db = located_index
    out = stdout_json(cli("ask", question, "--db", str(db), "--context-only", "--json", "--path", f"{folder}/*"))
    assert out["sources"]
    for source in out["sources"]:
        citation = source["citation"]
        assert re.fullmatch(form, citation), citation
        shown = cli("show", citation, "--db", str(db), "--context", "0")
        assert shown.exit_code == 0, shown.output
        assert shown.stdout.splitlines()[0] == citation
        if "#para=" in citation:  # the paragraphs, numbered as cited
            first, _, last = citation.rsplit("=", 1)[1].partition("-")
            numbers = [int(n) for n in re.findall(r"^\[(\d+)\] ", shown.stdout, re.M)]
            assert numbers == list(range(int(first), int(last or first) + 1))
        else:  # the file's (or the chapter file's) own lines, every one of them marked
            numbered = [line for line in shown.stdout.splitlines()[1:] if " │ " in line]
            assert numbered and all(line.startswith(">") for line in numbered)
            assert source["line_start"] is not None or source["span"]["kind"] == "chapter"
        body = _MARKUP.sub(" ", shown.stdout)
        assert all(word in body for word in _words(source["content"])), (citation, shown.stdout)


def test_show_n_opens_an_html_source_at_its_lines_and_a_word_source_at_its_paragraphs(
    located_index: tuple[Path, Path],
) -> None:
    _, db = located_index
    for folder, question in (
        ("page-html", "How often does the weather station record wind speed?"),
        ("handbook-docx", "When does the ferry to the field station leave Port Ellen?"),
        ("handbook-epub", "In an emergency, which radio channel is the coastguard on?"),
    ):
        answer = cli("ask", question, "--db", str(db), "--extractive", "--path", f"{folder}/*")
        assert answer.exit_code == 0, answer.output
        shown = cli("show", "1")
        assert shown.exit_code == 0, shown.output
        assert shown.stdout.startswith(f"{folder}/") and "Traceback" not in shown.output


def test_show_refuses_a_chapter_or_paragraph_the_file_does_not_have(located_index: tuple[Path, Path]) -> None:
    _, db = located_index
    for target, message in (
        ("handbook-epub/handbook.epub#chapter=EPUB/nope.xhtml:3", "has no chapter EPUB/nope.xhtml:3"),
        ("handbook-docx/handbook.docx#para=999", "has no para 999"),
        ("handbook-docx/handbook.docx:3", "has no lines to show; cite it as handbook-docx/handbook.docx#para=N"),
    ):
        result = cli("show", target, "--db", str(db))
        assert result.exit_code == 2 and message in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1


def test_an_index_from_before_these_locations_is_located_without_embedding(
    located_index: tuple[Path, Path], fake_models: FakeModels
) -> None:
    """As step 6 left them: chunks of these formats without a location, their documents located."""
    from locallens.storage import migrations

    root, db = located_index
    step = next(s for s in migrations.MIGRATIONS if s.name == "format_locations")
    with Store(db) as store, store.transaction():
        store.conn.execute("UPDATE chunks SET line_start = NULL, line_end = NULL, span_kind = NULL, span_label = NULL")
        store.conn.execute("UPDATE documents SET line_offset = 0")
        store.conn.execute(f"PRAGMA user_version={step.version - 1}")
    old = stdout_json(cli("ask", "ferry", "--db", str(db), "--context-only", "--json", "--path", "handbook-docx/*"))
    assert all(re.search(r"#chunk-\d+$", s["citation"]) for s in old["sources"])
    embedded = len(fake_models.embedder.encoded)
    report = cli_json("index", str(root), "--db", str(db))
    assert report["located"] == 6 and report["files"]["unchanged"] == 6
    assert report["chunks"]["embedded"] == 0 and len(fake_models.embedder.encoded) == embedded
    with Store(db, create=False) as store:
        unlocated = store.execute("SELECT count(*) FROM chunks WHERE line_start IS NULL AND span_kind IS NULL")
    assert unlocated == [(0,)]
    new = stdout_json(cli("ask", "ferry", "--db", str(db), "--context-only", "--json", "--path", "handbook-docx/*"))
    assert all("#para=" in s["citation"] for s in new["sources"])
    assert cli_json("index", str(root), "--db", str(db))["located"] == 0


def test_an_epub_chapter_location_names_a_file_in_the_book(located_index: tuple[Path, Path]) -> None:
    root, db = located_index
    with Store(db, create=False) as store:
        rows = store.execute("SELECT span_label FROM chunks WHERE span_kind = 'chapter'")
    book = zipfile.ZipFile(root / "handbook-epub" / "handbook.epub")
    for (label,) in rows:
        parsed = parse_chapter_label(label)
        assert parsed is not None, label
        first, start, last, end = parsed
        assert start <= book.read(first).count(b"\n") + 1 and end <= book.read(last).count(b"\n") + 1


@pytest.mark.slow
def test_a_word_file_and_a_web_page_are_cited_and_shown_with_the_real_models(tmp_path: Path) -> None:
    root, db = tmp_path / "docs", tmp_path / "index.db"
    root.mkdir()
    shutil.copy(FIXTURES / "handbook.docx", root / "handbook.docx")
    (root / "page.html").write_text(PAGE, encoding="utf-8")
    assert cli("index", str(root), "--db", str(db)).exit_code == 0
    for question, fact, form in (
        ("When does the ferry to the field station leave Port Ellen?", "07:40", r"handbook\.docx#para=\d+(-\d+)?"),
        ("How often does the weather station record wind speed?", "ten minutes", r"page\.html:\d+(-\d+)?"),
    ):
        result = cli("ask", question, "--db", str(db), "--extractive", "--json")
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert fact in out["answer"] and re.fullmatch(form, out["sources"][0]["citation"]), out
        shown = cli("show", out["sources"][0]["citation"], "--db", str(db))
        assert shown.exit_code == 0 and fact in shown.stdout, shown.output


def test_postgres_locates_them_after_its_schema_4_step(tmp_path: Path, fake_models: FakeModels, pg_url: str) -> None:
    import psycopg

    root = tmp_path / "docs"
    root.mkdir()
    for name in ("handbook.docx", "offsite.eml"):
        shutil.copy(FIXTURES / name, root / name)
    cli_json("index", str(root), "--db", pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as schema 3 left them
        conn.execute(
            "UPDATE locallens.chunks SET line_start = NULL, line_end = NULL, span_kind = NULL, span_label = NULL"
        )
        conn.execute("UPDATE locallens.documents SET line_offset = 0")
        conn.execute("UPDATE locallens.meta SET value = '3' WHERE key = 'schema_version'")
    embedded = len(fake_models.embedder.encoded)
    report = cli_json("index", str(root), "--db", pg_url)
    assert report["located"] == 2 and report["chunks"]["embedded"] == 0
    assert len(fake_models.embedder.encoded) == embedded
    out = stdout_json(cli("ask", "ferry offsite", "--db", pg_url, "--context-only", "--json"))
    citations = {s["path"]: s["citation"] for s in out["sources"]}
    assert re.fullmatch(r"handbook\.docx#para=\d+(-\d+)?", citations["handbook.docx"])
    assert re.fullmatch(r"offsite\.eml:\d+(-\d+)?", citations["offsite.eml"])


def test_a_sentence_of_html_is_given_no_lines_of_its_own() -> None:
    """HTML and e-mail chunks are cited by source lines their text lines do not match one to one,
    so the lines of one cited sentence are not guessed from the chunk's line breaks."""
    from locallens.domain import Location
    from locallens.locations import as_json, sentence_lines

    content = "First line.\nSecond line."
    assert sentence_lines(content, Location(10, 11), 12, 24) == (11, 11)  # a text file's own lines
    assert sentence_lines(content, Location(10, 11, kind="lines"), 12, 24) is None
    assert as_json(Location(10, 11, kind="lines"))["span"] is None
    assert Location(10, 11, kind="lines").cite("page.html") == "page.html:10-11"


def test_an_mbox_message_whose_first_line_is_no_header_is_cited_by_its_own_lines(tmp_path: Path) -> None:
    """CPython's msg_19: a digest body with no headers at all. The parser reads it all as body,
    so its lines are found where the parser put them, not after a guessed header block."""
    message = (FIXTURES / "digest.eml").read_text().split("\n\n", 1)[1]
    box = tmp_path / "box.mbox"
    box.write_text("From MAILER-DAEMON Thu Jan  1 00:00:00 2004\n" + message)
    document = _read(box)
    lines = box.read_text().split("\n")
    for span in document.spans:
        text = document.text[span.start : span.end]
        if text.startswith("# "):
            continue  # "(no subject)": cited by the message's first lines
        source = "\n".join(lines[span.line_start - 1 : span.line_end])  # type: ignore[operator]
        assert all(word in source for word in _words(text)), (span, text)

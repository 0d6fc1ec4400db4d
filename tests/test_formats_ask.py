"""Every format end to end with the packaged models: indexed, then a question answered from its
content (the extractive answer, deterministic), the file cited first, the chunk headers holding
the document's title and headings."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from .helpers import cli

FIXTURES = Path(__file__).resolve().parent / "data" / "formats"
# (file, question, what the answer must say)
CASES = [
    ("handbook.docx", "When does the ferry to the field station leave Port Ellen?", "07:40"),
    ("users-and-groups.odt", "Which user owns the files of the news system?", "news"),
    ("handbook.epub", "In an emergency, which radio channel is the coastguard on?", "channel 16"),
    ("deck.pptx", "When does the Lisbon office open a second floor?", "March"),
    ("deck.odp", "By how much did Oslo sales rise?", "18 percent"),
    ("budget.xlsx", "What is the budget of the Kestrel project?", "48500"),
    ("budget.ods", "Which office does Ben Okafor work in?", "Lisbon"),
    ("tides.ipynb", "What was the highest tide of the year?", "4.2 metres"),
    ("journal.org", "When do the broad beans go in the north bed?", "20 March"),
    ("ferryctl-cache.adoc", "How many seconds does the token cache keep a token by default?", "900"),
    # A manual page as AsciiDoc renders it to HTML: a definition list, a <pre> synopsis.
    ("quill-stash-keep.html", "Which function is executed before each prompt?", "precmd"),
    # A manual page in AsciiDoc as Git's documentation writes it: `linkgit:`, `{litdd}`, `*bold*`.
    ("quill-stash-keep.txt", "How long are drafts kept until they expire?", "90 days"),
    ("offsite.eml", "Where does the quarterly offsite move to?", "Harbour Room"),
    ("archive.mbox", "Do you like this message?", "like this message"),
]


@pytest.fixture(scope="module")
def formats_index(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # type: ignore[no-untyped-def]
    """One folder per file, so that each question has exactly one file to find."""
    base = tmp_path_factory.mktemp("formats")
    root, db = base / "docs", base / "index.db"
    for name, _, _ in CASES:
        target = root / name.replace(".", "-") / name
        target.parent.mkdir(parents=True)
        shutil.copy(FIXTURES / name, target)
    result = cli("index", str(root), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"]["new"] == len(CASES)
    return db


@pytest.mark.slow
@pytest.mark.parametrize(("name", "question", "fact"), CASES, ids=[c[0] for c in CASES])
def test_each_format_answers_a_question_from_its_content(
    formats_index: Path, name: str, question: str, fact: str
) -> None:
    # The same text sits in two formats (docx and epub, pptx and odp, xlsx and ods): ask each.
    folder = name.replace(".", "-") + "/*"
    result = cli("ask", question, "--db", str(formats_index), "--extractive", "--json", "--path", folder)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["sources"][0]["path"].endswith(name)
    assert fact in out["answer"], out["answer"]


@pytest.mark.slow
def test_chunk_headers_hold_the_title_and_the_heading_path(formats_index: Path) -> None:
    with sqlite3.connect(formats_index) as db:
        rows = list(db.execute("SELECT content, header FROM chunks WHERE relative_path LIKE '%users-and-groups.odt'"))
    # Each chunk carries the title: in its header, or (the first) as its own first line.
    title = "Users and Groups in the Debian System"
    assert len(rows) > 3 and all(h.startswith(title) or c.startswith(f"# {title}") for c, h in rows)
    assert any(h == f"{title} > Chapter 2. Users and Groups" for _, h in rows), rows

"""Checks on the sample knowledge base (`sample_docs/`) and the question files built on it.

The demo, the end-to-end tests and the evaluation all rely on these files, so their shape is
asserted here: how many files, which formats, that every question's answer really sits in the
file the question names (and in no other), and that the HTML/PDF files carry extractable text.
The extraction used here is deliberately simple and independent of locallens' own readers, so a
bug in those readers cannot hide a broken fixture.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = REPO_ROOT / "sample_docs"
QUESTIONS_JSONL = REPO_ROOT / "tests" / "data" / "questions.jsonl"
QUESTIONS_TXT = REPO_ROOT / "tests" / "data" / "questions.txt"

REQUIRED_EXTENSIONS = {".md", ".txt", ".rst", ".html", ".pdf"}
MAX_FILE_BYTES = 100 * 1024

# Markers placed inside the HTML file's <script> and <style> blocks: they must never reach
# the visible text, so they must never show up in an index either.
HTML_HIDDEN_MARKERS = ("SCRIPT_BLOCK_MUST_NOT_BE_INDEXED", "STYLE_BLOCK_MUST_NOT_BE_INDEXED")

_SCRIPT_STYLE_RE = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
_TAG_RE = re.compile(r"<[^>]+>")
_WS_RE = re.compile(r"\s+")


@dataclass(frozen=True)
class QuestionCase:
    """One line of questions.jsonl."""

    question: str
    files: list[str]
    answers: list[str]


def _normalise_ws(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def html_visible_text(raw: str) -> str:
    """Visible text of an HTML page: <script>/<style>/comments dropped, tags removed, entities decoded."""
    text = _SCRIPT_STYLE_RE.sub(" ", raw)
    text = _COMMENT_RE.sub(" ", text)
    text = _TAG_RE.sub(" ", text)
    return _normalise_ws(html.unescape(text))


def pdf_text(path: Path) -> str:
    """Text of every page, whitespace collapsed (pypdf's line breaks are not meaningful)."""
    from pypdf import PdfReader  # only this module's PDF checks need it

    reader = PdfReader(str(path))
    return _normalise_ws(" ".join(page.extract_text() or "" for page in reader.pages))


def document_text(path: Path) -> str:
    """The text a reader sees. Plain-text formats are returned verbatim (answers must match exactly)."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return pdf_text(path)
    raw = path.read_text(encoding="utf-8")
    if suffix in {".html", ".htm"}:
        return html_visible_text(raw)
    return raw


def sample_files() -> list[Path]:
    return sorted(p for p in SAMPLE_DOCS.rglob("*") if p.is_file())


def load_questions() -> list[QuestionCase]:
    cases: list[QuestionCase] = []
    for line_no, line in enumerate(QUESTIONS_JSONL.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        assert set(record) == {"question", "files", "answers"}, f"line {line_no}: unexpected keys"
        cases.append(QuestionCase(record["question"], record["files"], record["answers"]))
    return cases


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """Relative POSIX path -> extracted text, for every sample document (extracted once)."""
    return {p.relative_to(SAMPLE_DOCS).as_posix(): document_text(p) for p in sample_files()}


# --- the corpus ----------------------------------------------------------------------------


def test_file_count_is_between_20_and_25() -> None:
    assert 20 <= len(sample_files()) <= 25


def test_required_extensions_are_present() -> None:
    found = {p.suffix.lower() for p in sample_files()}
    assert REQUIRED_EXTENSIONS <= found, f"missing: {REQUIRED_EXTENSIONS - found}"


def test_documents_live_in_several_subfolders() -> None:
    folders = {p.parent for p in sample_files()}
    assert all(folder != SAMPLE_DOCS for folder in folders), "files belong in sub-folders"
    assert len(folders) >= 4


def test_no_file_is_empty_or_over_100_kb(texts: dict[str, str]) -> None:
    for path in sample_files():
        size = path.stat().st_size
        assert 0 < size <= MAX_FILE_BYTES, f"{path}: {size} bytes"
    for rel, text in texts.items():
        assert text.strip(), f"{rel}: no extractable text"


def test_word_counts_allow_single_and_multi_chunk_documents(texts: dict[str, str]) -> None:
    counts = {rel: len(text.split()) for rel, text in texts.items()}
    too_short = {rel: n for rel, n in counts.items() if n < 150}
    too_long = {rel: n for rel, n in counts.items() if n > 3000}
    assert not too_short and not too_long, (too_short, too_long)
    # At least one long document, so the chunker has to produce many 220-token chunks.
    assert any(n >= 2000 for n in counts.values())


def test_all_files_are_valid_utf8_except_the_pdf() -> None:
    for path in sample_files():
        if path.suffix.lower() != ".pdf":
            path.read_text(encoding="utf-8")  # raises on invalid UTF-8


def test_html_script_and_style_are_not_visible_text() -> None:
    (html_file,) = [p for p in sample_files() if p.suffix.lower() == ".html"]
    raw = html_file.read_text(encoding="utf-8")
    visible = html_visible_text(raw)
    assert re.search(r"<title>[^<]+</title>", raw)
    for marker in HTML_HIDDEN_MARKERS:
        assert marker in raw  # the trap is really there ...
        assert marker not in visible  # ... and the visible text does not fall into it
    assert "Madrid Office Network and Printers" in visible


def test_pdf_has_real_text_with_spaces_between_words() -> None:
    (pdf_file,) = [p for p in sample_files() if p.suffix.lower() == ".pdf"]
    assert pdf_file.read_bytes().startswith(b"%PDF-1.4")
    text = pdf_text(pdf_file)
    assert "Northwind Labs - Travel and Expense Policy" in text
    assert "Mileage for a private car is reimbursed at 0.26 EUR per km" in text
    assert 200 <= len(text.split()) <= 400


def test_about_a_third_of_the_documents_are_spanish(texts: dict[str, str]) -> None:
    # Crude but robust: Spanish prose is full of these function words, English prose is not.
    spanish_words = re.compile(r"\b(el|la|los|las|del|para|que|con|una)\b")

    def is_spanish(text: str) -> bool:
        words = text.lower().split()
        return len(spanish_words.findall(text.lower())) > 0.08 * len(words)

    share = sum(is_spanish(t) for t in texts.values()) / len(texts)
    assert 0.25 <= share <= 0.45, share


# --- the questions -------------------------------------------------------------------------


def test_question_files_agree() -> None:
    cases = load_questions()
    assert 15 <= len(cases) <= 20
    lines = [ln for ln in QUESTIONS_TXT.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert lines == [case.question for case in cases]
    assert len(set(lines)) == len(lines), "duplicate question"


def test_questions_are_in_english_and_spanish() -> None:
    questions = [case.question for case in load_questions()]
    spanish = [q for q in questions if q.startswith("¿")]
    assert 5 <= len(spanish) < len(questions)


def test_every_answer_appears_verbatim_in_its_file(texts: dict[str, str]) -> None:
    for case in load_questions():
        assert len(case.files) == 1 and case.answers, case.question
        for rel in case.files:
            assert (SAMPLE_DOCS / rel).is_file(), f"{case.question!r}: missing {rel}"
            for answer in case.answers:
                assert answer in texts[rel], f"{case.question!r}: {answer!r} not in {rel}"


def test_every_answer_is_unique_to_its_file(texts: dict[str, str]) -> None:
    # "Answerable from exactly one file": the answer must not also appear anywhere else.
    for case in load_questions():
        for answer in case.answers:
            holders = sorted(rel for rel, text in texts.items() if answer in text)
            assert holders == case.files, f"{answer!r} found in {holders}"

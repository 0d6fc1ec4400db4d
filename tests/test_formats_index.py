"""Indexing the formats end to end with the fake models: a mixed folder of every format (200+
files) indexes without a traceback, every skip counted with its reason; the reindex embeds
nothing; a changed Office file is re-read and a deleted one pruned, as for text files."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from .format_corpus import SKIPPED, _docx, make_mixed_folder
from .helpers import FakeModels, cli


def index_json(root: Path, db: Path, *extra: str) -> tuple[int, dict]:
    result = cli("index", str(root), "--db", str(db), "--json", *extra)
    assert result.exit_code in (0, 7), result.output
    return result.exit_code, json.loads(result.stdout)


def test_mixed_folder_of_every_format_indexes_then_reindexes_embedding_nothing(
    tmp_path: Path, fake_models: FakeModels
) -> None:
    root, db = tmp_path / "mixed", tmp_path / "index.db"
    written, _ = make_mixed_folder(root, copies=10)
    assert len(written) >= 200
    code, out = index_json(root, db)
    assert code == 7  # finished, with files skipped for faults (corrupt, encrypted, bombs)
    skipped = {s["path"]: s["reason"] for s in out["skipped"]}
    assert set(skipped) == {f"broken/{name}" for name in SKIPPED}, skipped
    for name, why in SKIPPED.items():
        assert why in skipped[f"broken/{name}"], (name, skipped[f"broken/{name}"])
    assert out["files"]["new"] == len(written) - len(SKIPPED) and out["files"]["skipped"] == len(SKIPPED)
    assert out["chunks"]["total"] > len(written)
    embedded_once = len(fake_models.embedder.passages)

    code, again = index_json(root, db)
    assert again["files"]["new"] == again["files"]["changed"] == again["files"]["removed"] == 0
    assert again["chunks"]["embedded"] == 0 and len(fake_models.embedder.passages) == embedded_once
    assert again["files"]["skipped"] == len(SKIPPED)


def test_office_files_change_and_prune_like_text_files(tmp_path: Path, fake_models: FakeModels) -> None:
    root, db = tmp_path / "docs", tmp_path / "index.db"
    root.mkdir()
    for n in range(3):
        _docx(root / f"report-{n}.docx", n)
    fixtures = Path(__file__).resolve().parent / "data" / "formats"
    shutil.copy(fixtures / "deck.pptx", root / "deck.pptx")
    shutil.copy(fixtures / "budget.xlsx", root / "budget.xlsx")
    _, first = index_json(root, db)
    assert first["files"]["new"] == 5

    # Touched but identical: read again, nothing embedded.
    time.sleep(0.01)
    (root / "deck.pptx").touch()
    _, touched = index_json(root, db)
    assert touched["files"]["changed"] == 0 and touched["chunks"]["embedded"] == 0

    # Rewritten with one new paragraph: only what changed is embedded.
    before = len(fake_models.embedder.passages)
    _docx(root / "report-1.docx", 41)
    _, changed = index_json(root, db)
    assert changed["files"]["changed"] == 1 and 1 <= changed["chunks"]["embedded"]
    fresh = fake_models.embedder.passages[before:]
    assert fresh and any("287 crates" in text for text in fresh)  # 41 * 7

    # Deleted: its chunks go, the others stay.
    (root / "budget.xlsx").unlink()
    _, pruned = index_json(root, db)
    assert pruned["files"]["removed"] == 1 and pruned["chunks"]["embedded"] == 0


@pytest.mark.parametrize("name", ["deck.pptx", "budget.ods", "tides.ipynb", "archive.mbox", "journal.org"])
def test_ask_context_only_finds_a_format_by_its_content(tmp_path: Path, fake_models: FakeModels, name: str) -> None:
    root, db = tmp_path / "docs", tmp_path / "index.db"
    root.mkdir()
    fixtures = Path(__file__).resolve().parent / "data" / "formats"
    for fixture in ("deck.pptx", "budget.ods", "tides.ipynb", "archive.mbox", "journal.org", "handbook.docx"):
        shutil.copy(fixtures / fixture, root / fixture)
    index_json(root, db)
    question = {
        "deck.pptx": "When does the Lisbon office open a second floor?",
        "budget.ods": "What is the budget of the Kestrel project?",
        "tides.ipynb": "What was the highest tide of the year?",
        "archive.mbox": "Which room is the offsite in on 14 May?",
        "journal.org": "When do the broad beans go in the north bed?",
    }[name]
    result = cli("ask", question, "--db", str(db), "--context-only", "--json")
    assert result.exit_code == 0, result.output
    sources = json.loads(result.stdout)["sources"]
    assert sources[0]["path"] == name, [s["path"] for s in sources]

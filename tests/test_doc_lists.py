"""The generated lists in the docs (the import table, the schema steps) are the code's, and the
import graph has no cycle and no backend imported outside locallens/storage/."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORT_GRAPH = ROOT / "scripts" / "import_graph.py"
MIGRATION_LIST = ROOT / "scripts" / "migration_list.py"


@pytest.mark.parametrize("script", [IMPORT_GRAPH, MIGRATION_LIST], ids=["import_graph", "migration_list"])
def test_generated_docs_are_current(script: Path) -> None:
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_a_cycle_and_a_backend_import_are_found(tmp_path: Path) -> None:
    graph = runpy.run_path(str(IMPORT_GRAPH))
    package = tmp_path / "locallens"
    (package / "storage").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "storage" / "__init__.py").write_text("")
    (package / "storage" / "sqlite.py").write_text("from locallens.storage import types\n")
    (package / "storage" / "types.py").write_text("")
    # a imports b at module level, b imports a inside a function: still a cycle.
    (package / "a.py").write_text("from locallens import b\nfrom locallens.storage.sqlite import Store\n")
    (package / "b.py").write_text("def f():\n    from locallens import a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from locallens import a\n")
    imports = graph["read_imports"](graph["module_names"](package))
    assert graph["cycles"](imports) == [["a", "b"]]
    assert graph["backend_imports"](imports) == ["a -> storage.sqlite"]
    assert imports["c"].typing == {"a"} and not imports["c"].top


def test_a_stale_migration_list_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = runpy.run_path(str(MIGRATION_LIST))
    page = tmp_path / "page.md"
    page.write_text(f"{script['START']}\n1. `tables`: by hand.\n{script['END']}\n")
    main = script["main"]
    main.__globals__["PAGES"] = (page,)
    main.__globals__["ROOT"] = tmp_path
    assert main(["--check"]) == 1
    assert main(["--write"]) == 0 and main(["--check"]) == 0
    assert "5. `stemmed_keywords`" in page.read_text()

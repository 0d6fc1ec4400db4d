"""The command reference (docs/cli-reference.md) is the CLI's own --help (scripts/cli_reference.py)."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cli_reference.py"


def test_command_reference_matches_the_cli() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_check_names_the_command_whose_help_drifted() -> None:
    script = runpy.run_path(str(SCRIPT))
    page = (ROOT / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    assert script["stale"](page) == []
    block = page.index("```text\n", page.index("### `locallens ask --help`")) + len("```text\n")
    drifted = page[:block] + "An edit by hand.\n" + page[block:]
    assert script["stale"](drifted) == ["locallens ask --help"]

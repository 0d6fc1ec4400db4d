"""The README's command reference is the CLI's own --help (scripts/cli_reference.py)."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cli_reference.py"


def test_readme_command_reference_matches_the_cli() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_check_names_the_command_whose_help_drifted() -> None:
    script = runpy.run_path(str(SCRIPT))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert script["stale"](readme) == []
    block = readme.index("```text\n", readme.index("### `locallens ask --help`")) + len("```text\n")
    drifted = readme[:block] + "An edit by hand.\n" + readme[block:]
    assert script["stale"](drifted) == ["locallens ask --help"]

"""The command line under hostile values, files and names: config values of the wrong type,
libraries that warn, `--json` in every outcome, globs, file names that reorder text, and
PostgreSQL URLs that cannot be used (with the fakes, or no model at all)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import ROOT
from .test_sources import make_pdf, read

# -- config values of the wrong TOML type ---------------------------------------------------------


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from locallens.cli import main

    monkeypatch.setattr("sys.argv", ["locallens", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return int(exit_info.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("db = 42", "'db' in the config file {path} must be a string (got the integer 42)"),
        ('brain = ["a"]', "'brain' in the config file {path} must be a string (got an array)"),
        ("llm = 2026-01-01", "'llm' in the config file {path} must be a string (got a date)"),
        ("[ask]\ntop_k = 2.5", "'top_k' in the config file {path} ([ask]) must be an integer (got the number 2.5)"),
        ("[ask]\ntop_k = true", "'top_k' in the config file {path} ([ask]) must be an integer (got the boolean true)"),
        ("hybrid = 1", "'hybrid' in the config file {path} must be true or false (got the integer 1)"),
        ("[ask]\nthreshold = false", "'threshold' in the config file {path} ([ask]) must be a number"),
        (
            '[index]\ninclude = "*.log"',
            "'include' in the config file {path} ([index]) must be an array of strings (got the string '*.log')",
        ),
        (
            '[index]\nexclude = ["*.log", 3]',
            "'exclude' in the config file {path} ([index]) must be an array of strings (got an array holding the integer 3)",
        ),
    ],
)
def test_a_config_value_of_the_wrong_type_names_the_key_the_file_and_the_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: str, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config + "\n")
    monkeypatch.setenv("LOCALLENS_CONFIG", str(path))
    code, err = _main(monkeypatch, capsys, "status", "--db", str(tmp_path / "none.db"))
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("locallens: error: ")
    assert message.format(path=path) in lines[0]
    assert "no index at" not in err


def test_config_values_of_the_right_type_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        f'db = "{tmp_path / "none.db"}"\nhybrid = false\nmax_file_mb = 5\n'
        '[ask]\ntop_k = 3\nthreshold = 0.4\n[index]\ninclude = ["*.log"]\n'
    )
    monkeypatch.setenv("LOCALLENS_CONFIG", str(path))
    code, err = _main(monkeypatch, capsys, "status")
    assert code == 3 and f"no index at {tmp_path / 'none.db'}" in err  # the db from the config file


# -- a format library's own warnings ---------------------------------------------------------------


def broken_pdfs(folder: Path) -> Path:
    """Two PDFs pypdf warns about: one it still reads (a wrong startxref and xref entry), one it
    cannot (cut in half)."""
    good = make_pdf([b"BT /F1 24 Tf 72 720 Td (Readable despite its xref) Tj ET"] * 3)
    warned = good.replace(b"0000000009 00000 n", b"0000000001 00000 n")
    warned = warned[: warned.rindex(b"startxref\n")] + b"startxref\n99999\n%%EOF\n"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "warned.pdf").write_bytes(warned)
    (folder / "cut.pdf").write_bytes(good[: len(good) // 2])
    return folder


def test_a_pdf_librarys_warnings_are_counted_in_the_skip_not_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    from locallens.domain import Document, Skipped

    folder = broken_pdfs(tmp_path / "docs")
    caplog.set_level(logging.DEBUG)
    warned = read(folder, "warned.pdf")
    cut = read(folder, "cut.pdf")
    assert isinstance(warned, Document) and "Readable despite its xref" in warned.text
    assert isinstance(cut, Skipped) and cut.error
    assert (
        cut.reason == "cannot read PDF: Stream has ended unexpectedly (pypdf warned once, first: EOF marker not found)"
    )
    # Nothing reached a logging handler (the CLI's stderr, through logging.lastResort) or warnings.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == []
    assert len(recwarn) == 0
    assert caplog.handler in logging.getLogger().handlers  # the root's handlers are back


@pytest.mark.slow  # a process each: the library's lines go to the real stderr only outside pytest
@pytest.mark.parametrize("quiet", [True, False])
def test_quiet_index_of_broken_pdfs_prints_only_its_own_skip_lines(tmp_path: Path, quiet: bool) -> None:
    folder = broken_pdfs(tmp_path / "docs")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOCALLENS_HOME": str(tmp_path / "home")}
    args = [sys.executable, "-m", "locallens", "index", str(folder), "--db", str(tmp_path / "i.db")]
    done = subprocess.run(
        [*args, *(["--quiet"] if quiet else [])], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 7, done.stderr
    skip = "locallens: warning: skipped cut.pdf: cannot read PDF: Stream has ended unexpectedly (pypdf warned once"
    lines = done.stderr.splitlines()
    assert [line for line in lines if not line.startswith("locallens: note: ")] == [
        skip + ", first: EOF marker not found)"
    ]
    assert all(line.startswith("locallens: ") for line in lines)
    assert (done.stdout == "") is quiet

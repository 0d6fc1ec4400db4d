"""The command line under hostile names and text, closed pipes, bad values, huge questions, cron."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import ROOT, cli

EVIL_NAME = "bad\x1b[31mname\nx.md"
EVIL_TEXT = "# Notes\n\nThe staging database port is 5433. \x1b]0;pwned\x07 The VPN uses port 51820.\n"


@pytest.fixture(scope="module")
def evil_index(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    from locallens.indexer import IndexRequest, index

    folder = tmp_path_factory.mktemp("evil")
    (folder / EVIL_NAME).write_text(EVIL_TEXT, encoding="utf-8")
    (folder / "ok.md").write_text("# Fine\n\nThe staging database is backed up nightly.\n", encoding="utf-8")
    db = folder.parent / f"{folder.name}.db"
    index(IndexRequest(paths=[folder], db=db, brain="default"))
    return folder, db


def _raw(result) -> str:  # type: ignore[no-untyped-def]
    return result.stdout + result.stderr


def test_control_characters_are_escaped_in_plain_text_and_exact_in_json(evil_index: tuple[Path, Path]) -> None:
    folder, db = evil_index
    q = "staging database port"
    for args in (
        ["ask", q, "--context-only"],
        ["ask", q, "--extractive"],
        ["trim", q],
        ["trim", q, "--verbose"],
        ["status"],
    ):
        result = cli(*args, "--db", str(db))
        assert result.exit_code == 0, result.output
        out = _raw(result)
        assert "\x1b" not in out and "\x07" not in out, (args, out)
        if args[0] != "status":
            # the name: escaped, on one line, with its location
            assert re.search(r"bad\\x1b\[31mname\\nx\.md:\d+", out), out
        if args[:2] in (["ask", q], ["trim", q]) and "--verbose" not in args:
            assert "\\x1b]0;pwned\\x07" in out
    # The excerpt's own line structure is kept.
    context = cli("ask", q, "--context-only", "--db", str(db)).stdout
    assert "\n# Notes\n\nThe staging database port is 5433." in context
    # --json stays exact.
    data = json.loads(cli("ask", q, "--context-only", "--json", "--db", str(db)).stdout)
    evil = next(s for s in data["sources"] if s["path"] == EVIL_NAME)
    assert "\x1b]0;pwned\x07" in evil["content"]
    # Skip warnings and error messages too.
    big = folder / "big\x1b]0;t\x07.md"
    big.write_text("word " * 3000, encoding="utf-8")
    try:
        result = cli("index", str(folder), "--db", str(db), "--max-file-mb", "0.01", "--dry-run")
    finally:
        big.unlink()
    assert "big\\x1b]0;t\\x07.md" in result.stderr and "\x1b" not in _raw(result) and "\x07" not in _raw(result)
    result = cli("ask", q, "--db", str(db), "--brain", "no\x1bsuch", "--context-only")
    assert result.exit_code == 3 and "\x1b" not in _raw(result) and "no\\x1bsuch" in result.stderr


def _piped(command: str) -> int:
    """locallens's own exit code when its reader goes away early."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m locallens {command}; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert "Traceback" not in proc.stderr and "rror" not in proc.stderr, proc.stderr
    return proc.returncode


def test_a_closed_pipe_is_exit_0(sample_index: Path) -> None:
    db = sample_index
    # `| true` never reads: every write meets a closed pipe. `| head -1` closes after one line.
    assert _piped(f"trim 'staging database' --db {db} --top-k 20 | true") == 0
    assert _piped(f"trim 'staging database' --db {db} --top-k 20 | head -1") == 0
    assert _piped(f"ask 'staging database' --db {db} --extractive --top-k 20 | true") == 0
    assert _piped(f"status --db {db} | true") == 0


@pytest.mark.parametrize(
    ("args", "env", "blamed"),
    [
        (["index", ".", "--max-file-mb", "inf"], {}, "'--max-file-mb'"),
        (["index", ".", "--max-file-mb", "nan"], {}, "'--max-file-mb'"),
        (["index", "."], {"LOCALLENS_MAX_FILE_MB": "inf"}, "LOCALLENS_MAX_FILE_MB"),
        (["ask", "x", "--context-only"], {"LOCALLENS_TRIM": "abc"}, "LOCALLENS_TRIM"),
        (["trim", "x", "--threshold", "5"], {}, "'--threshold'"),
        (["trim", "x"], {"LOCALLENS_TRIM_THRESHOLD": "-3"}, "LOCALLENS_TRIM_THRESHOLD"),
        (["ask", "x", "--threshold", "nan"], {}, "'--threshold'"),
        (["ask", "x", "--min-score", "nan"], {}, "'--min-score'"),
        (["ask", "x", "--min-relevance", "nan"], {}, "'--min-relevance'"),
    ],
)
def test_bad_values_are_usage_errors_naming_their_source(args: list[str], env: dict[str, str], blamed: str) -> None:
    result = cli(*args, env=env)
    assert result.exit_code == 2, result.output
    assert blamed in result.output and "Traceback" not in result.output


def test_trim_settings_outside_the_cli_are_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from locallens.errors import UsageError
    from locallens.retrieval import trim_settings_from_env

    monkeypatch.setenv("LOCALLENS_TRIM", "abc")
    with pytest.raises(UsageError, match="LOCALLENS_TRIM"):
        trim_settings_from_env(None, None, 1)
    monkeypatch.setenv("LOCALLENS_TRIM", "off")
    monkeypatch.setenv("LOCALLENS_TRIM_THRESHOLD", "5")
    with pytest.raises(UsageError, match="LOCALLENS_TRIM_THRESHOLD"):
        trim_settings_from_env(None, None, 1)


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from locallens.cli import main

    monkeypatch.setattr("sys.argv", ["locallens", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("topk = 3\n", "unknown option 'topk'; did you mean 'top_k'?"),
        ("[ask]\nthreshhold = 0.4\n", "unknown option 'threshhold' in [ask]; did you mean 'threshold'?"),
        ("[aks]\ntop_k = 3\n", "unknown table [aks]; did you mean [ask]?"),
    ],
)
def test_unknown_config_keys_are_named(text: str, expected: str, isolated_home: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(text, encoding="utf-8")
    code, err = _main(monkeypatch, capsys, "status")
    assert code == 2 and expected in err and str(isolated_home / "config.toml") in err


def test_a_config_path_that_is_a_folder_is_a_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LOCALLENS_CONFIG", str(tmp_path))
    code, err = _main(monkeypatch, capsys, "status")
    assert code == 2 and str(tmp_path) in err and "not a file" in err


@pytest.mark.parametrize(
    ("text", "param"),
    [
        ('[ask]\ntop_k = "abc"\n', "top_k"),
        ("[ask]\nthreshold = 3.0\n", "threshold"),
        ("[index]\nmax_file_mb = inf\n", "max_file_mb"),
    ],
)
def test_bad_config_values_are_blamed_on_the_config_file(
    text: str, param: str, isolated_home: Path, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(text, encoding="utf-8")
    code, err = _main(monkeypatch, capsys, "ask" if "[ask]" in text else "index", "x")
    assert code == 2, err
    assert f"'{param}' in the config file {isolated_home / 'config.toml'}" in err
    assert "env var" not in err and "LOCALLENS_" not in err


@pytest.fixture()
def no_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the embedder must not be loaded for a question that cannot fit")

    monkeypatch.setattr("locallens.embedding.load_embedder", forbidden)


@pytest.mark.parametrize("args", [["ask"], ["ask", "--context-only"], ["ask", "--extractive"], ["trim"]])
def test_a_huge_question_is_refused_before_any_model_loads(args: list[str], sample_index: Path, no_embedder) -> None:  # type: ignore[no-untyped-def]
    question = " ".join(f"word{i % 97}" for i in range(20_000))
    started = time.monotonic()
    result = cli(args[0], question, *args[1:], "--db", str(sample_index))
    assert result.exit_code == 2, result.output
    assert "too long" in result.stderr
    assert time.monotonic() - started < 5


def test_a_question_longer_than_the_context_is_refused_before_any_model_loads(sample_index: Path, no_embedder) -> None:  # type: ignore[no-untyped-def]
    question = "Which port does staging use? " + "please " * 400  # ~400 tokens
    result = cli("ask", question, "--db", str(sample_index), "--ctx", "256")
    assert result.exit_code == 2 and "256" in result.stderr and "too long" in result.stderr


@pytest.mark.slow
def test_quiet_prints_nothing_on_success_but_still_reports_skips(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    result = cli("index", str(docs), "--db", str(db), "--quiet")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    result = cli("status", "--db", str(db), "--quiet")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert cli("status", "--db", str(tmp_path / "none.db"), "--quiet").exit_code == 3
    (docs / "big.md").write_text("word " * 3000, encoding="utf-8")
    result = cli("index", str(docs), "--db", str(db), "--quiet", "--max-file-mb", "0.01")
    assert result.stdout == "" and "skipped big.md" in result.stderr
    result = cli("trim", "staging database", "--db", str(db), "--quiet")
    assert result.exit_code == 0 and result.stderr == "" and "tokens:" in result.stdout


# -- shell completion ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--show-completion", "bash"], (["--show-completion"], "bash")),
        (["--show-completion=zsh"], (["--show-completion"], "zsh")),
        (["--install-completion", "fish"], (["--install-completion"], "fish")),
        (["--show-completion"], (["--show-completion"], None)),
        (["--show-completion", "tcsh"], (["--show-completion"], "tcsh")),  # refused by the callback
        (["--show-completion", "index"], (["--show-completion", "index"], None)),  # a command, not a shell
        (["--show-completion", "--help"], (["--show-completion", "--help"], None)),
        (["ask", "--show-completion", "bash"], (["ask", "--show-completion", "bash"], None)),  # the command's
    ],
)
def test_the_completion_options_take_the_shell_named_after_them(args: list[str], expected: tuple) -> None:
    from locallens.cli import _completion_shell

    assert _completion_shell(args) == expected


@pytest.mark.slow  # processes
def test_completion_for_a_named_shell_from_an_sh_script(tmp_path: Path) -> None:
    """A packaging step run by sh names the shell; without a name, sh is not guessed at."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    run = [str(Path(sys.executable).parent / "locallens")]  # the script a person runs: its name is the one completed
    for shell, first in (("bash", "_locallens_completion() {"), ("zsh", "#compdef locallens"), ("fish", "complete")):
        result = subprocess.run(
            ["sh", "-c", '"$@" --show-completion ' + shell, "sh", *run], capture_output=True, text=True, env=env
        )
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert result.stdout.lstrip().startswith(first), result.stdout[:200]
    unnamed = subprocess.run(
        ["sh", "-c", '"$@" --show-completion', "sh", *run], capture_output=True, text=True, env=env
    )
    assert unnamed.returncode == 2 and unnamed.stdout == ""
    assert "cannot tell which shell this is" in unnamed.stderr and "--show-completion bash" in unnamed.stderr
    unknown = subprocess.run([*run, "--show-completion", "tcsh"], capture_output=True, text=True, env=env)
    assert unknown.returncode == 2 and "must be bash, zsh, fish, powershell or pwsh (got 'tcsh')" in unknown.stderr
    installed = subprocess.run(
        ["sh", "-c", '"$@" --install-completion bash', "sh", *run], capture_output=True, text=True, env=env
    )
    assert installed.returncode == 0, installed.stderr
    assert "bash completion installed in" in installed.stdout
    assert "_LOCALLENS_COMPLETE" in (tmp_path / ".bash_completions" / "locallens.sh").read_text()


@pytest.mark.slow  # a process
def test_a_shell_asking_for_completions_gets_the_commands() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_LOCALLENS_COMPLETE": "complete_bash",
        "COMP_WORDS": "locallens as",
        "COMP_CWORD": "1",
    }
    result = subprocess.run([str(Path(sys.executable).parent / "locallens")], capture_output=True, text=True, env=env)
    assert result.returncode == 0 and result.stdout.split() == ["ask"], (result.stdout, result.stderr)

"""The command line under hostile values, files and names: config values of the wrong type,
libraries that warn, `--json` in every outcome, globs, file names that reorder text, and
PostgreSQL URLs that cannot be used (with the fakes, or no model at all)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .helpers import CORPUS, ROOT, FakeModels, cli, cli_json, write_corpus
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
    """Two broken PDFs: one still readable (a wrong startxref and xref entry), one not (cut in
    half)."""
    good = make_pdf([b"BT /F1 24 Tf 72 720 Td (Readable despite its xref) Tj ET"] * 3)
    warned = good.replace(b"0000000009 00000 n", b"0000000001 00000 n")
    warned = warned[: warned.rindex(b"startxref\n")] + b"startxref\n99999\n%%EOF\n"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "warned.pdf").write_bytes(warned)
    (folder / "cut.pdf").write_bytes(good[: len(good) // 2])
    return folder


def test_broken_pdfs_are_read_or_skipped_with_a_reason_and_nothing_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    from locallens.domain import Document, Skipped

    folder = broken_pdfs(tmp_path / "docs")
    caplog.set_level(logging.DEBUG)
    warned = read(folder, "warned.pdf")
    cut = read(folder, "cut.pdf")
    assert isinstance(warned, Document) and "Readable despite its xref" in warned.text
    assert isinstance(cut, Skipped) and cut.error
    assert cut.reason == "cannot read PDF: damaged or not a PDF"
    # Nothing reached a logging handler (the CLI's stderr, through logging.lastResort) or warnings.
    assert [r.getMessage() for r in caplog.records] == []
    assert len(recwarn) == 0
    assert caplog.handler in logging.getLogger().handlers  # the root's handlers are back


def test_only_the_reading_threads_log_records_are_captured(caplog: pytest.LogCaptureFixture) -> None:
    import threading

    from locallens.readers.base import library_noise_captured

    caplog.set_level(logging.INFO)
    with library_noise_captured() as noise:
        logging.getLogger("pypdf._reader").warning("reader's own")
        other = threading.Thread(target=lambda: logging.getLogger("watchfiles").warning("a watcher's"))
        other.start()
        other.join()
    assert noise.count == 1 and noise.first == "reader's own"
    assert [r.getMessage() for r in caplog.records] == ["a watcher's"]


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
    lines = done.stderr.splitlines()
    assert [line for line in lines if not line.startswith("locallens: note: ")] == [
        "locallens: warning: skipped cut.pdf: cannot read PDF: damaged or not a PDF"
    ]
    assert all(line.startswith("locallens: ") for line in lines)
    assert (done.stdout == "") is quiet


# -- --json: one document on stdout whatever the outcome ------------------------------------------

QUESTION = "Which port does the staging database listen on?"
UNRELATED = "zebra giraffe migration across the savanna"


@pytest.fixture()
def indexed(tmp_path: Path, fake_models: FakeModels) -> Path:
    files = {
        **CORPUS,
        "engineering/deploy.md": "# Deploys\n\nStaging deploys run on every merge; the staging port is 5433.\n",
        "engineering-old/staging.md": "# Old staging\n\nThe old staging database listened on port 5432.\n",
    }
    db = tmp_path / "index.db"
    cli_json("index", str(write_corpus(tmp_path / "docs", files)), "--db", str(db))
    return db


def test_json_prints_one_document_on_stdout_for_every_outcome(
    indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(indexed)
    refused = cli("ask", UNRELATED, "--db", db, "--extractive", "--json")
    assert refused.exit_code == 4 and json.loads(refused.stdout)["refused"] is True
    nothing = cli("ask", QUESTION, "--db", db, "--path", "nowhere/*", "--json")
    assert nothing.exit_code == 4
    assert json.loads(nothing.stdout) == {
        "error": "nothing relevant found in brain 'default' under 'nowhere/*'",
        "exit_code": 4,
    }
    assert nothing.stderr.startswith("locallens: error: nothing relevant found")
    for args, code in [
        (["status", "--db", str(tmp_path / "none.db")], 3),
        (["ask", QUESTION, "--db", db, "--brain", "nope"], 3),
        (["trim", QUESTION, "--db", str(tmp_path / "none.db")], 3),
        (["ask", QUESTION, "--db", db, "--top-k", "many"], 2),  # refused while parsing the flags
        (["ask", QUESTION, "--db", db, "--min-score", "5"], 2),
        (["index", str(tmp_path / "docs"), "--db", db, "--chunk-size", "10", "--chunk-overlap", "20"], 2),
        (["ask", QUESTION, "--db", "postgresql://u@127.0.0.1:99999/db"], 2),
    ]:
        result = cli(*args, "--json")
        assert result.exit_code == code, (args, result.output)
        document = json.loads(result.stdout)  # one document, nothing else
        assert document["exit_code"] == code and document["error"], args
    # A config file refused before any command runs.
    path = tmp_path / "config.toml"
    path.write_text("db = 42\n")
    monkeypatch.setenv("LOCALLENS_CONFIG", str(path))
    capsys.readouterr()
    from locallens.cli import main

    monkeypatch.setattr("sys.argv", ["locallens", "status", "--json"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    document = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 2 and document["exit_code"] == 2 and "'db' in the config file" in document["error"]


def test_context_in_prompt_counts_only_the_excerpts_in_the_prompt(indexed: Path, fake_models: FakeModels) -> None:
    from locallens.tokens import count_tokens, estimate_tokens

    result = cli("ask", QUESTION, "--db", str(indexed), "--json", "--ctx", "300", "--max-tokens", "32", "-k", "6")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["dropped"], "the test needs excerpts that did not fit"
    tokens = out["tokens"]
    assert tokens["context_in_prompt"] == sum(estimate_tokens(s["content"]) for s in out["sources"])
    assert tokens["context_in_prompt_tiktoken"] == sum(count_tokens(s["content"]) for s in out["sources"])
    assert tokens["context_in_prompt"] < tokens["context_before_trim"]  # the dropped ones are not in it
    assert tokens["context_in_prompt"] <= tokens["prompt"]
    fitted = cli("ask", QUESTION, "--db", str(indexed), "--json", "-k", "2")  # nothing dropped: as retrieved
    fitted_tokens = json.loads(fitted.stdout)["tokens"]
    assert fitted_tokens["context_in_prompt"] == fitted_tokens["context_before_trim"]


# -- --path: a folder name means the folder -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("engineering", {"engineering/staging.md", "engineering/deploy.md"}),
        ("engineering/", {"engineering/staging.md", "engineering/deploy.md"}),
        ("./engineering", {"engineering/staging.md", "engineering/deploy.md"}),
        ("engineering/staging.md", {"engineering/staging.md"}),  # a file names itself
        ("engineering/*", {"engineering/staging.md", "engineering/deploy.md"}),
        ("engineering*", {"engineering/staging.md", "engineering/deploy.md", "engineering-old/staging.md"}),
        ("*/staging.md", {"engineering/staging.md", "engineering-old/staging.md"}),
    ],
)
def test_path_without_a_wildcard_names_a_file_or_a_folder(indexed: Path, value: str, expected: set[str]) -> None:
    result = cli("ask", QUESTION, "--db", str(indexed), "--path", value, "--context-only", "--json", "-k", "10")
    assert result.exit_code == 0, result.output
    assert {s["path"] for s in json.loads(result.stdout)["sources"]} == expected


# -- names that reorder or hide text ---------------------------------------------------------------

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: `report\u202etxt.exe` shows as `reportexe.txt`


def test_format_characters_in_names_are_escaped_in_plain_output_and_exact_in_json(
    tmp_path: Path, fake_models: FakeModels
) -> None:
    root = tmp_path / f"notes{RLO}dab"
    name = f"staging{RLO}dm.md"
    write_corpus(root, {name: CORPUS["engineering/staging.md"], f"zero\u200bwidth{RLO}.pdf": "%PDF-1.4 cut"})
    db = str(tmp_path / "index.db")
    indexed = cli("index", str(root), "--db", db)
    assert indexed.exit_code == 7  # the cut PDF is skipped
    for output in (indexed.stdout, indexed.stderr):
        assert RLO not in output and "\u200b" not in output
    assert "skipped zero\\u200bwidth\\u202e.pdf: cannot read PDF" in indexed.stderr
    status = cli("status", "--db", db)
    assert RLO not in status.stdout and "notes\\u202edab" in status.stdout
    for args in (["--context-only"], ["--extractive"]):
        answer = cli("ask", QUESTION, "--db", db, *args)
        assert answer.exit_code == 0, answer.output
        assert RLO not in answer.stdout and "staging\\u202edm.md" in answer.stdout
    exact = json.loads(cli("ask", QUESTION, "--db", db, "--context-only", "--json").stdout)
    assert exact["sources"][0]["path"] == name


def test_clean_escapes_format_characters_but_keeps_text_whole() -> None:
    from locallens.cli import clean

    assert (
        clean(f"a{RLO}b\u2066c\u200dd\u00ade\U000e0041f\u2028")
        == "a\\u202eb\\u2066c\\u200dd\\u00ade\\U000e0041f\\u2028"
    )
    # Several lines of text (an answer): only what reorders or breaks lines is escaped; joiners stay.
    assert clean(f"x{RLO}y\nmi\u200cpersian 👩\u200d💻\u2029", multiline=True) == (
        "x\\u202ey\nmi\u200cpersian 👩\u200d💻\\u2029"
    )
    assert clean("café 中文 ñ") == "café 中文 ñ"


# -- PostgreSQL URLs libpq cannot use; logins without a password ----------------------------------


@pytest.mark.parametrize(
    ("url", "shown", "says"),
    [
        ("postgresql://me:hunter2@127.0.0.1:99999/db", "postgresql://me:***@127.0.0.1:99999/db", "invalid port number"),
        ("postgresql://me@127.0.0.1/db?port=abc", "postgresql://me@127.0.0.1/db?port=abc", "invalid integer value"),
        (
            "postgresql://me:hunter2@127.0.0.1:1/db?sslmode=bogus",
            "postgresql://me:***@127.0.0.1:1/db?sslmode=bogus",
            'invalid sslmode value: "bogus"',
        ),
    ],
)
def test_a_postgres_url_with_a_bad_port_or_sslmode_is_a_usage_error(url: str, shown: str, says: str) -> None:
    result = cli("status", "--db", url)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"locallens: error: cannot use {shown}: ") and says in line
    assert "hunter2" not in result.output


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql:///notes?host=/run/postgresql", "postgresql:///notes?host=/run/postgresql"),
        ("postgresql://", "postgresql://"),
        ("postgres://me:pw@/notes?host=/tmp&password=pw2", "postgres://me:***@/notes?host=/tmp&password=***"),
    ],
)
def test_a_postgres_url_is_shown_whole_with_its_password_masked(url: str, shown: str) -> None:
    from locallens.storage.types import PostgresURL

    assert str(PostgresURL(url)) == shown


@pytest.mark.slow  # the test PostgreSQL server
def test_a_login_without_the_password_the_server_asks_for_is_exit_9(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .pg import PASSWORD_ROLE

    monkeypatch.setenv("PGPASSFILE", os.devnull)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    url = pg_server.url("postgres", user=PASSWORD_ROLE)
    result = cli("status", "--db", url)
    assert result.exit_code == 9, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"locallens: error: cannot log in to {url}: no password supplied")
    assert "PGPASSWORD" in line

"""The servers and agents' surface under hostile input: files an argument names, oversized and
over-numerous arguments, malformed HTTP, bursts and stalled clients (with the fakes)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from locallens.errors import UsageError
from locallens.service import (
    MAX_ARGUMENT_DEPTH,
    MAX_EVAL_QUESTIONS,
    MAX_QUESTIONS_FILE_BYTES,
    Service,
    ServiceSettings,
    validate,
)

from .helpers import FakeModels, cli_json, write_corpus

QUESTION = "Which port does the staging database listen on?"


@pytest.fixture()
def docs(tmp_path: Path, fake_models: FakeModels) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture()
def service(tmp_path: Path, docs: Path) -> Any:
    db = tmp_path / "index.db"
    cli_json("index", str(docs), "--db", str(db))
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    service = Service(ServiceSettings(db=db, readable_dirs=(allowed,)))
    yield service
    service.close()


# -- files named by an argument -------------------------------------------------------------------


def test_eval_retrieval_reads_no_file_outside_the_brains_roots(service: Service, tmp_path: Path, docs: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 is the password\n")
    (docs / "link.txt").symlink_to(secret)  # a link inside a root to a file outside it
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "keys.txt").write_text("AKIA-not-for-agents\n")
    (docs / "notes.md").write_text("What is the staging port?\n")  # not a questions file
    outside = (secret, docs / "link.txt", docs / ".hidden" / "keys.txt", docs / "notes.md", docs / ".." / "secret.txt")
    for given in ("/etc/passwd", "/etc/nonexistent.txt", "secret.txt", *map(str, outside)):
        with pytest.raises(UsageError, match="cannot be read through this server") as exc:
            service.call("eval_retrieval", {"questions": given})
        assert "hunter2" not in str(exc.value) and "root:" not in str(exc.value)
    with pytest.raises(UsageError, match="no such questions file"):
        service.call("eval_retrieval", {"questions": str(docs / "missing.txt")})


def test_eval_retrieval_reads_questions_files_under_a_root_or_an_allowed_folder(
    service: Service, tmp_path: Path, docs: Path
) -> None:
    line = json.dumps({"question": QUESTION, "files": ["engineering/staging.md"]})
    (docs / "questions.jsonl").write_text(line + "\n")
    (tmp_path / "allowed" / "q.txt").write_text(QUESTION + "\n")
    assert service.call("eval_retrieval", {"questions": str(docs / "questions.jsonl")})["questions"] == 1
    assert service.call("eval_retrieval", {"questions": str(tmp_path / "allowed" / "q.txt")})["questions"] == 1
    big = tmp_path / "allowed" / "big.txt"
    big.write_text("why?\n" * (MAX_QUESTIONS_FILE_BYTES // 5 + 1))
    with pytest.raises(UsageError, match="larger than"):
        service.call("eval_retrieval", {"questions": str(big)})
    fifo = tmp_path / "allowed" / "pipe.txt"
    os.mkfifo(fifo)  # reading it would block for ever
    with pytest.raises(UsageError, match="not a regular file"):
        service.call("eval_retrieval", {"questions": str(fifo)})


def test_mcp_tool_never_returns_another_files_lines(service: Service) -> None:
    from mcp import Client

    from locallens.mcp_server import build_server

    async def steps() -> Any:
        async with Client(build_server(service), read_timeout_seconds=60) as client:
            return await client.call_tool("eval_retrieval", {"questions": "/etc/passwd"})

    result = asyncio.run(steps())
    assert result.is_error and "cannot be read through this server" in result.content[0].text
    assert "root:" not in result.content[0].text


# -- size and count caps --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("eval_retrieval", {"questions": ["q" * 2_000_000]}, "longer than"),
        ("eval_retrieval", {"questions": ["why?"] * 3000}, f"more than {MAX_EVAL_QUESTIONS} items"),
        ("eval_retrieval", {"questions": ["why? " * 4000] * 10}, "characters of questions"),
        ("eval_retrieval", {"questions": [{"question": "q", "files": ["a"] * 1000}]}, "more than 100 items"),
        ("eval_retrieval", {"questions": [{"question": "q", "extra": 1}]}, "unknown key(s) extra"),
        ("eval_retrieval", {"questions": [{"files": ["a"]}]}, "missing 'question'"),
        ("eval_retrieval", {"questions": "q", "thresholds": [0.5] * 1000}, "more than 100 items"),
        ("eval_retrieval", {"questions": "x" * 10_000}, "longer than"),
        ("search", {"query": "q", "brain": "b" * 10_000}, "search.brain: longer than"),
        ("search", {"query": "q", "path": "*" * 100_000}, "search.path: longer than"),
        ("get", {"id": "x" * 100_000}, "get.id: longer than"),
        ("get", {"path": "x" * 100_000}, "get.path: longer than"),
        ("ask", {"question": "q" * 2_000_000}, "arguments longer than"),
    ],
)
def test_every_argument_has_a_cap(
    service: Service, fake_models: FakeModels, tool: str, arguments: Any, message: str
) -> None:
    loads = len(fake_models.embedder_loads)
    started = time.perf_counter()
    with pytest.raises(UsageError) as exc:
        service.call(tool, arguments)
    assert message in str(exc.value)
    assert len(fake_models.embedder_loads) == loads  # refused before any work
    assert time.perf_counter() - started < 30  # generous: only says that nothing heavy ran


def test_deep_nesting_is_refused_without_recursion() -> None:
    deep: Any = "q"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(UsageError, match=f"nested more than {MAX_ARGUMENT_DEPTH} deep"):
        validate("eval_retrieval", {"questions": deep})


def test_mcp_allow_read_must_name_a_folder(tmp_path: Path) -> None:
    from .helpers import cli

    result = cli("mcp", "--allow-read", str(tmp_path / "nowhere"), "--db", str(tmp_path / "index.db"))
    assert result.exit_code == 2 and "--allow-read" in result.stderr and "not a folder" in result.stderr

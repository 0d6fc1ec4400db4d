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


# -- the HTTP API: bursts, stalled clients, malformed requests ------------------------------------


@pytest.fixture()
def served(tmp_path: Path, docs: Path) -> Any:
    from .helpers import Served

    db = tmp_path / "index.db"
    cli_json("index", str(docs), "--db", str(db))
    served = Served(db)
    yield served
    served.close()


def raw_exchange(port: int, data: bytes, timeout: float = 30) -> bytes:
    """Send `data` on a fresh connection; everything the server answers until it closes."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def json_of(response: bytes) -> tuple[int, Any]:
    head, _, body = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body else None


def test_a_burst_of_concurrent_searches_gets_no_reset(served: Any) -> None:
    import threading

    outcomes: list[Any] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            status, _ = served.request("POST", "/search", {"query": f"staging database port {i}", "top_k": 2})
        except Exception as exc:  # a reset or a refused connection
            status = type(exc).__name__
        with lock:
            outcomes.append(status)

    for _ in range(10):
        gate = [threading.Thread(target=one, args=(i,)) for i in range(50)]
        for t in gate:
            t.start()
        for t in gate:
            t.join()
    assert outcomes == [200] * 500


def test_stalled_connections_do_not_stop_a_normal_request(served: Any) -> None:
    import socket

    port = served.httpd.server_address[1]
    stalled = []
    try:
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /search HTTP/1.1\r\nContent-Length: 100\r\n")  # and never the rest
            stalled.append(s)
        status, body = served.request("POST", "/search", {"query": "staging database port", "top_k": 1})
        assert status == 200 and body["excerpts"]
    finally:
        for s in stalled:
            s.close()


def test_a_stalled_client_is_closed_after_the_socket_timeout(served: Any, monkeypatch) -> None:
    import socket

    from locallens import http_api

    monkeypatch.setattr(served.httpd.RequestHandlerClass, "timeout", 0.5)
    with socket.create_connection(("127.0.0.1", served.httpd.server_address[1]), timeout=20) as s:
        s.sendall(b"POST /search HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        started = time.perf_counter()
        assert s.recv(100) == b""  # closed, not answered
        assert time.perf_counter() - started < 15
    assert http_api.SOCKET_TIMEOUT_S > 0


@pytest.mark.parametrize(
    ("request_bytes", "status", "message"),
    [
        (b"PUT /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 405, "method PUT not allowed"),
        (b"DELETE /ask HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method DELETE not allowed"),
        (b"OPTIONS / HTTP/1.1\r\nHost: x\r\n\r\n", 405, "not allowed"),
        (b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", 501, "Unsupported method"),
        (b"GET /health\r\n", 400, "HTTP/0.9 is not supported"),
        (b"nonsense\r\n\r\n", 400, "Bad request"),
        (b"POST /ask HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, "at most"),
        (b"POST /ask HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411, "Content-Length"),
    ],
)
def test_malformed_requests_get_a_json_error(
    served: Any, capfd: pytest.CaptureFixture[str], request_bytes: bytes, status: int, message: str
) -> None:
    got, body = json_of(raw_exchange(served.httpd.server_address[1], request_bytes))
    assert got == status and message in body["error"] and body["exit_code"] in (1, 2)
    assert capfd.readouterr().err == ""


def test_hostile_bodies_get_a_json_error_and_no_traceback(served: Any, capfd: pytest.CaptureFixture[str]) -> None:
    for body, message in (
        (b"[" * 100_000, "nested too deeply"),
        (b'{"question": "q", "top_k": ' + b"9" * 5000 + b"}", "a number of 5000 characters"),
        (b'{"question": "q", "top_k": NaN}', "not a JSON number"),
        (b'{"question": "q", "top_k": 1e999}', "not a finite number"),
        (b'{"question": ' * 50 + b'"q"' + b"}" * 50, "nested more than"),
        (b"\xff\xfe{}", "not JSON"),
    ):
        status, answer = served.request("POST", "/ask", body)
        assert status == 400 and message in answer["error"], (body[:40], answer)
    head = raw_exchange(served.httpd.server_address[1], b"HEAD /ask HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405") and head.endswith(b"\r\n\r\n")  # a HEAD answer has no body
    assert served.request("GET", "/health")[0] == 200
    assert capfd.readouterr().err == ""


def test_client_disconnects_write_nothing_to_stderr(served: Any, capfd: pytest.CaptureFixture[str]) -> None:
    import socket

    port = served.httpd.server_address[1]
    for data in (
        b'POST /search HTTP/1.1\r\nContent-Length: 500\r\n\r\n{"query":',  # closed mid-body
        b"POST /search HTTP/1.1\r\nContent-Length: 40\r\n\r\n" + json.dumps({"query": "staging port"}).encode(),
        b"GET /health HTTP/1.1\r\n",  # closed mid-headers
    ):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(data)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close with a reset
        s.close()
    time.sleep(0.5)
    assert served.request("GET", "/health")[0] == 200
    assert capfd.readouterr().err == ""


# -- ask --batch and eval: each line alone ----------------------------------------------------------


def hostile_lines() -> bytes:
    good = json.dumps({"question": QUESTION, "extractive": True}).encode()
    return b"\n".join(
        [
            good,
            b"[" * 100_000,
            b'{"question": "q", "top_k": ' + b"9" * 5000 + b"}",
            b'{"question": "caf\xe9"}',  # Latin-1, not UTF-8
            b'{"question": "q", "top_k": NaN}',
            good,
        ]
    )


def test_one_crafted_batch_line_fails_alone(tmp_path: Path, docs: Path) -> None:
    from .helpers import cli

    db = tmp_path / "index.db"
    cli_json("index", str(docs), "--db", str(db))
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(hostile_lines())
    result = cli("ask", "--batch", str(batch), "--db", str(db))
    assert result.exit_code == 7, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["line"] for line in lines] == [1, 2, 3, 4, 5, 6]
    assert "5433" in lines[0]["answer"] and "5433" in lines[5]["answer"]
    assert [line.get("exit_code") for line in lines[1:5]] == [2, 2, 2, 2]
    assert "nested too deeply" in lines[1]["error"] and "5000 characters" in lines[2]["error"]
    assert "not UTF-8" in lines[3]["error"] and "NaN" in lines[4]["error"]
    assert "unexpected" not in result.output and "Traceback" not in result.output


def test_eval_names_the_crafted_line_instead_of_failing_unexpectedly(tmp_path: Path, docs: Path) -> None:
    from .helpers import cli

    db = tmp_path / "index.db"
    cli_json("index", str(docs), "--db", str(db))
    for n, bad in ((2, b"[" * 100_000), (2, b'{"question": "q", "n": ' + b"9" * 5000 + b"}")):
        questions = tmp_path / "questions.jsonl"
        questions.write_bytes(json.dumps({"question": QUESTION}).encode() + b"\n" + bad + b"\n")
        result = cli("eval", str(questions), "--db", str(db))
        assert result.exit_code == 2, result.output
        assert f"line {n}: not valid JSON" in result.stderr and "unexpected" not in result.stderr


# -- --server URLs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("notaurl", "not an http:// or https:// URL"),
        ("http://[::1", "not a URL"),
        ("http://127.0.0.1:99999", "not a URL"),
        ("ftp://127.0.0.1/", "not an http:// or https:// URL"),
        ("http://user:s3cret@127.0.0.1:1", "carries a user or password"),
        ("http://", "names no host"),
        ("http://127.0.0.1:1/?x=1", "query or fragment"),
    ],
)
def test_a_bad_server_url_is_exit_2_naming_its_source(tmp_path: Path, value: str, message: str) -> None:
    from .helpers import cli

    db = str(tmp_path / "index.db")
    by_flag = cli("ask", QUESTION, "--server", value, "--db", db)
    by_env = cli("ask", QUESTION, "--db", db, env={"LOCALLENS_SERVER": value})
    for result, source in ((by_flag, "--server"), (by_env, "LOCALLENS_SERVER")):
        assert result.exit_code == 2, result.output
        assert message in result.stderr and source in result.stderr
        assert "s3cret" not in result.output and "Traceback" not in result.output


def test_a_server_that_accepts_and_never_answers_is_given_up(monkeypatch) -> None:
    from locallens import http_api

    from .test_hardening_network import SilentListener

    listener = SilentListener()
    try:
        started = time.perf_counter()
        with pytest.raises(http_api.ServerUnavailable, match="no answer in time"):
            http_api.post(listener.url, "/ask", {"question": "q"}, read_timeout=0.5)
        assert time.perf_counter() - started < 10
    finally:
        listener.close()


# -- a closed pipe ------------------------------------------------------------------------------------


@pytest.mark.slow  # a process each
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["ask", "--help"], ["--show-completion", "bash"]])
def test_help_version_and_completion_with_stdout_closed_exit_0_quietly(args: list[str]) -> None:
    import subprocess
    import sys

    from .helpers import ROOT

    process = subprocess.Popen(
        [sys.executable, "-m", "locallens", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything is printed
    err = process.stderr.read()
    code = process.wait(60)
    assert code == 0 and err == b"", (code, err.decode(errors="replace")[-2000:])


@pytest.mark.slow
def test_mcp_with_stdout_closed_exits_0_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    from .helpers import ROOT

    process = subprocess.Popen(
        [sys.executable, "-m", "locallens", "mcp", "--db", str(tmp_path / "index.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdout.close()
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    process.stdin.write(json.dumps(hello).encode() + b"\n")
    process.stdin.close()
    err = process.stderr.read()
    code = process.wait(60)
    assert code == 0 and err == b"", (code, err.decode(errors="replace")[-2000:])


def test_a_closed_pipe_keeps_a_refusals_exit_4(tmp_path: Path, docs: Path, monkeypatch) -> None:
    from locallens import cli as cli_module

    from .helpers import cli

    db = tmp_path / "index.db"
    cli_json("index", str(docs), "--db", str(db))

    def reader_gone(*args: Any, **kwargs: Any) -> None:
        raise BrokenPipeError

    monkeypatch.setattr(cli_module, "_print_answer", reader_gone)
    refused = cli("ask", "zebra giraffe migration across the savanna", "--db", str(db), "--extractive")
    assert refused.exit_code == 4 and refused.stderr == ""
    answered = cli("ask", QUESTION, "--db", str(db), "--extractive")
    assert answered.exit_code == 0 and answered.stderr == ""


# -- bad values name their source ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "config", "blamed"),
    [
        (["index", "."], {"LOCALLENS_DEVICE": "tpu"}, "", "LOCALLENS_DEVICE"),
        (["index", "."], {"LOCALLENS_CHUNKER": "fancy"}, "", "LOCALLENS_CHUNKER"),
        (["index", "."], {"LOCALLENS_MODEL": "nonsense"}, "", "LOCALLENS_MODEL"),
        (["index", "."], {}, 'device = "tpu"', "'device' in the config file"),
        (["index", "."], {}, 'chunker = "fancy"', "'chunker' in the config file"),
        (["index", "."], {}, 'model = "nonsense"', "'model' in the config file"),
        (["index", ".", "--device", "tpu"], {}, "", "'--device'"),
        (["ask", "x", "--min-score", "5"], {}, "", "'--min-score'"),
        (["ask", "x", "--min-relevance", "7"], {}, "", "'--min-relevance'"),
        (["status"], {}, 'brain = ""', "'brain' in the config file"),
        (["ask", "x"], {}, 'brain = " "', "'brain' in the config file"),
        (["serve", "--host", "0.0.0.0", "--token", " "], {}, "", "'--token'"),
        (["serve", "--host", "0.0.0.0"], {"LOCALLENS_TOKEN": "  "}, "", "LOCALLENS_TOKEN"),
    ],
)
def test_a_bad_value_is_exit_2_naming_where_it_came_from(
    tmp_path: Path, monkeypatch, capsys, args: list[str], env: dict[str, str], config: str, blamed: str
) -> None:
    from .helpers import cli

    if config:
        path = tmp_path / "config.toml"
        path.write_text(config + "\n")
        monkeypatch.setenv("LOCALLENS_CONFIG", str(path))
        from locallens.cli import main

        monkeypatch.setattr("sys.argv", ["locallens", *args])
        with pytest.raises(SystemExit) as exc:
            main()
        assert exc.value.code == 2
        assert blamed in capsys.readouterr().err
        return
    result = cli(*args, env=env)
    assert result.exit_code == 2, result.output
    assert blamed in result.output and "Traceback" not in result.output


def test_a_config_file_that_is_missing_is_said(tmp_path: Path, monkeypatch, capsys) -> None:
    from locallens.cli import main

    monkeypatch.setenv("LOCALLENS_CONFIG", str(tmp_path / "nope.toml"))
    monkeypatch.setattr("sys.argv", ["locallens", "status"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and "LOCALLENS_CONFIG names" in capsys.readouterr().err


def test_mcp_http_beyond_loopback_gives_advice_mcp_can_follow(tmp_path: Path) -> None:
    from .helpers import cli

    result = cli("mcp", "--db", str(tmp_path / "i.db"), "--http", "0.0.0.0:0")
    assert result.exit_code == 2 and "--token" not in result.stderr.replace("serve --token", "")

"""The warm core through its faces: the MCP server (driven by the official SDK's own client, over
stdio and streamable HTTP), the local HTTP API, `ask --server` and `ask --batch`."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from locallens.cli import app
from locallens.errors import UsageError

from .conftest import ROOT
from .helpers import Served

runner = CliRunner()
QUESTION = "Which port does the staging database listen on?"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


# -- MCP ----------------------------------------------------------------------------------------


async def _mcp_session(server: Any, steps: Any) -> Any:
    from mcp import Client

    async with Client(server, read_timeout_seconds=300) as client:
        return await steps(client)


def run_mcp(server: Any, steps: Any) -> Any:
    return asyncio.run(_mcp_session(server, steps))


def stdio_server(db: Path) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "locallens", "mcp", "--db", str(db)], env=env())


def test_mcp_stdio_tools_resources_and_schema_errors(sample_index: Path) -> None:
    async def steps(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tools = (await client.list_tools()).tools
        out["tools"] = {t.name: t.input_schema for t in tools}
        out["search"] = await client.call_tool("search", {"query": "staging database port", "max_tokens": 300})
        out["unknown"] = await client.call_tool("search", {"query": "x", "bogus": 1})
        out["bad"] = await client.call_tool("ask", {"question": "q", "top_k": 0})
        out["missing"] = await client.call_tool("ask", {})
        out["ask"] = await client.call_tool("ask", {"question": QUESTION, "extractive": True})
        out["nothing"] = await client.call_tool("ask", {"question": QUESTION, "path": "nowhere/*", "extractive": True})
        out["by_path"] = await client.call_tool("get", {"path": "engineering/staging-environment.md"})
        first = out["by_path"].structured_content["chunks"][0]["id"]
        out["by_id"] = await client.call_tool("get", {"id": first})
        out["status"] = await client.call_tool("status", {})
        out["eval"] = await client.call_tool(
            "eval_retrieval",
            {
                "questions": [{"question": QUESTION, "files": ["engineering/staging-environment.md"]}],
                "thresholds": [0.38],
            },
        )
        resources = (await client.list_resources()).resources
        out["resources"] = [str(r.uri) for r in resources]
        out["read"] = await client.read_resource("locallens://default/engineering/staging-environment.md")
        return out

    out = run_mcp(stdio_server(sample_index), steps)
    assert set(out["tools"]) == {"ask", "search", "get", "eval_retrieval", "status"}
    assert all(schema["additionalProperties"] is False for schema in out["tools"].values())
    search = out["search"].structured_content
    assert not out["search"].is_error and search["excerpts"] and search["tokens"] <= 300
    assert search["excerpts"][0]["path"] == "engineering/staging-environment.md"
    assert json.loads(out["search"].content[0].text) == search
    assert out["unknown"].is_error and "unknown argument(s) bogus" in out["unknown"].content[0].text
    assert out["bad"].is_error and "top_k" in out["bad"].content[0].text
    assert out["missing"].is_error and "question" in out["missing"].content[0].text
    ask = out["ask"].structured_content
    assert ask["mode"] == "extractive" and "5433" in ask["answer"] and ask["citations"]
    assert out["nothing"].is_error and "nothing relevant" in out["nothing"].content[0].text
    chunks = out["by_path"].structured_content["chunks"]
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks))) and len(chunks) > 1
    assert out["by_id"].structured_content["chunks"] == chunks[:1]
    assert out["status"].structured_content["brains"][0]["name"] == "default"
    assert out["eval"].structured_content["retrieval"]["hit_at_k"] == 1.0
    assert "locallens://default/engineering/staging-environment.md" in out["resources"]
    assert len(out["resources"]) == 24
    assert "5433" in out["read"].contents[0].text


@pytest.mark.slow
def test_mcp_ask_with_the_packaged_llm(sample_index: Path) -> None:
    async def steps(client: Any) -> Any:
        return await client.call_tool("ask", {"question": QUESTION, "max_tokens": 64})

    result = run_mcp(stdio_server(sample_index), steps)
    out = result.structured_content
    assert not result.is_error and out["model_answer"] and out["claims"]
    assert "5433" in out["answer"] and out["citations"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("server did not start")


def test_mcp_over_streamable_http_on_loopback(sample_index: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "locallens", "mcp", "--db", str(sample_index), "--http", f"127.0.0.1:{port}"],
        env=env(),
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)

        async def steps(client: Any) -> Any:
            return await client.call_tool("search", {"query": "VPN port", "top_k": 2})

        result = run_mcp(f"http://127.0.0.1:{port}/mcp", steps)
        assert not result.is_error and result.structured_content["excerpts"][0]["path"] == "notas/vpn-wireguard.md"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_mcp_http_refuses_to_listen_beyond_loopback(sample_index: Path) -> None:
    result = runner.invoke(app, ["mcp", "--db", str(sample_index), "--http", "0.0.0.0:9"])
    assert result.exit_code == 2 and "beyond this machine" in result.stderr


# -- the HTTP API -------------------------------------------------------------------------------


@pytest.fixture()
def served(sample_index: Path) -> Any:
    server = Served(sample_index)
    yield server
    server.close()


def test_http_api_endpoints_and_errors(served: Served) -> None:
    status, health = served.request("GET", "/health")
    assert status == 200 and health["ok"] is True
    status, body = served.request("POST", "/search", {"query": "VPN port", "top_k": 2})
    assert status == 200 and body["excerpts"][0]["path"] == "notas/vpn-wireguard.md"
    status, body = served.request("POST", "/ask", {"question": QUESTION, "extractive": True})
    assert status == 200 and "5433" in body["answer"] and body["mode"] == "extractive"
    status, body = served.request("GET", "/status")
    assert status == 200 and body["brains"][0]["chunks"] > 100
    assert served.request("POST", "/ask", {"question": "q", "bogus": True}) == (
        400,
        {
            "error": "ask: unknown argument(s) bogus; allowed: question, brain, top_k, trim, hybrid, path, "
            "extractive, max_tokens",
            "exit_code": 2,
        },
    )
    assert served.request("POST", "/ask", b"{not json")[0] == 400
    assert served.request("POST", "/ask", {"question": QUESTION, "brain": "nope"})[0] == 404
    assert served.request("POST", "/ask", {"question": QUESTION, "path": "x/*", "extractive": True})[0] == 422
    assert served.request("GET", "/nowhere")[0] == 404


def test_http_token_is_required_when_set(sample_index: Path) -> None:
    from locallens.http_api import check_bind

    server = Served(sample_index, token="s3cret")
    try:
        assert server.request("GET", "/health")[0] == 200  # liveness needs no token
        assert server.request("POST", "/search", {"query": "VPN"})[0] == 401
        assert server.request("POST", "/search", {"query": "VPN"}, token="wrong")[0] == 401
        assert server.request("POST", "/search", {"query": "VPN"}, token="s3cret")[0] == 200
        assert server.request("GET", "/status", token="s3cret")[0] == 200
    finally:
        server.close()
    with pytest.raises(UsageError, match="token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "s3cret")
    check_bind("::1", None)


@pytest.mark.slow
def test_an_index_run_meanwhile_is_seen_by_the_next_request(tmp_path: Path) -> None:
    from locallens.indexer import IndexRequest, index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Parking\n\nThe visitor parking is on level -2, bays 40 to 55.\n", encoding="utf-8")
    db = tmp_path / "index.db"
    index(IndexRequest(paths=[docs], db=db))
    server = Served(db)
    try:
        (docs / "b.md").write_text(
            "# Coffee\n\nThe espresso machine on the 3rd floor is descaled on Fridays.\n", encoding="utf-8"
        )
        errors: list[Any] = []

        def keep_searching() -> None:
            for _ in range(20):
                status, body = server.request("POST", "/search", {"query": "parking bays"})
                if status != 200:
                    errors.append(body)

        searcher = threading.Thread(target=keep_searching)
        searcher.start()
        index(IndexRequest(paths=[docs], db=db))  # a cron run, while requests are served
        searcher.join()
        assert errors == []
        status, body = server.request("POST", "/search", {"query": "espresso machine descaled", "top_k": 1})
        assert status == 200 and body["excerpts"][0]["path"] == "b.md"
    finally:
        server.close()


def test_ask_with_the_server_down_answers_locally(sample_index: Path) -> None:
    result = runner.invoke(
        app, ["ask", QUESTION, "--db", str(sample_index), "--extractive", "--server", f"http://127.0.0.1:{free_port()}"]
    )
    assert result.exit_code == 0 and "5433" in result.stdout
    assert "is not answering" in result.stderr and "answering locally" in result.stderr


def test_ask_through_the_server(served: Served) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--extractive", "--server", served.url, "--json"])
    assert result.exit_code == 0, result.output
    assert "5433" in json.loads(result.stdout)["answer"]
    missing = runner.invoke(app, ["ask", QUESTION, "--brain", "nope", "--server", served.url])
    assert missing.exit_code == 3 and "from http://127.0.0.1" in missing.stderr


# -- ask --batch --------------------------------------------------------------------------------


def test_ask_batch_one_answer_or_error_per_line(sample_index: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": QUESTION}) + "\n"
        "{not json\n"
        + json.dumps({"question": "How long are backups kept?", "bogus": 1})
        + "\n\n"
        + json.dumps({"question": "How long are the nightly PostgreSQL backups kept?", "top_k": 3})
        + "\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["ask", "--batch", str(questions), "--db", str(sample_index), "--extractive"])
    assert result.exit_code == 7, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["line"] for line in lines] == [1, 2, 3, 5]
    assert "5433" in lines[0]["answer"] and lines[0]["mode"] == "extractive"
    assert lines[1]["exit_code"] == 2 and "not JSON" in lines[1]["error"]
    assert lines[2]["exit_code"] == 2 and "bogus" in lines[2]["error"]
    # its own top_k (3), then what the per-file cap held back from the first 3 (at most 1)
    assert "35 days" in lines[3]["answer"] and 3 <= len(lines[3]["sources"]) <= 4
    from_stdin = runner.invoke(
        app,
        ["ask", "--batch", "-", "--db", str(sample_index), "--extractive"],
        input=json.dumps({"question": QUESTION}) + "\n",
    )
    assert from_stdin.exit_code == 0 and len(from_stdin.stdout.splitlines()) == 1


def test_ask_without_a_question_or_batch_is_a_usage_error(sample_index: Path) -> None:
    result = runner.invoke(app, ["ask", "--db", str(sample_index)])
    assert result.exit_code == 2 and "--batch" in result.stderr


def test_serve_refuses_to_listen_beyond_loopback_without_a_token(sample_index: Path) -> None:
    result = runner.invoke(app, ["serve", "--db", str(sample_index), "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2 and "token" in result.stderr

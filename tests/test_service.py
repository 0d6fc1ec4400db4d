"""The warm service behind `serve`, `mcp` and `ask --batch`, with the fakes: argument validation,
every tool's JSON, warm models, the MCP server in process and the HTTP API."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from locallens.errors import NoIndexError, NothingFoundError, UsageError
from locallens.service import TOOLS, Service, ServiceSettings, validate
from locallens.storage import parse_db

from .helpers import CORPUS, FakeModels, Served, cli_json, write_corpus

QUESTION = "Which port does the staging database listen on?"


@pytest.fixture()
def db(tmp_path: Path, fake_models: FakeModels) -> Path:
    db = tmp_path / "index.db"
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", str(db))
    return db


@pytest.fixture(params=["sqlite", "postgres"])
def service(request: pytest.FixtureRequest, tmp_path: Path, fake_models: FakeModels) -> Any:
    """The warm service over an index in either store (every tool must answer alike)."""
    target = request.getfixturevalue("pg_url") if request.param == "postgres" else str(tmp_path / "index.db")
    cli_json("index", str(write_corpus(tmp_path / "docs")), "--db", target)
    service = Service(ServiceSettings(db=parse_db(target)))
    yield service
    service.close()


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("nope", {}, "unknown tool 'nope'"),
        ("ask", [], "arguments must be a JSON object"),
        ("ask", {}, "missing required argument 'question'"),
        ("ask", {"question": "q", "bogus": 1}, "unknown argument(s) bogus"),
        ("ask", {"question": ""}, "ask.question: must not be empty"),
        ("ask", {"question": 5}, "ask.question: expected string"),
        ("ask", {"question": "q", "top_k": 0}, "ask.top_k: 0 is out of range 1..100"),
        ("ask", {"question": "q", "top_k": True}, "ask.top_k: expected integer"),
        ("ask", {"question": "q" * 100_000}, "ask.question: longer than"),
        ("search", {"query": "q", "max_tokens": 0}, "search.max_tokens"),
        ("eval_retrieval", {"questions": []}, "needs at least 1 item"),
        ("eval_retrieval", {"questions": "q", "thresholds": [2]}, "eval_retrieval.thresholds[0]"),
        ("eval_retrieval", {"questions": 3}, "eval_retrieval.questions"),
    ],
)
def test_validate_names_the_problem(tool: str, arguments: Any, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        validate(tool, arguments)
    assert message in str(exc.value)


def test_every_tool_schema_is_closed() -> None:
    assert set(TOOLS) == {"ask", "search", "get", "eval_retrieval", "status"}
    assert all(spec["schema"]["additionalProperties"] is False for spec in TOOLS.values())
    assert validate("status", None) == {}


def test_search_get_status_and_eval(service: Service, fake_models: FakeModels) -> None:
    search = service.call("search", {"query": QUESTION, "max_tokens": 60})
    assert set(search) == {"query", "brain", "excerpts", "tokens", "dropped", "trimmed", "timings"}
    assert search["excerpts"][0]["path"] == "engineering/staging.md" and search["trimmed"] is True
    assert search["tokens"] <= 60 or len(search["excerpts"]) == 1
    assert search["dropped"] == 5 - len(search["excerpts"])
    by_path = service.call("get", {"path": "engineering/staging.md"})["chunks"]
    assert [c["chunk_index"] for c in by_path] == list(range(len(by_path)))
    assert service.call("get", {"id": by_path[0]["id"]})["chunks"] == by_path[:1]
    assert "5433" in service.document("default", "engineering/staging.md")
    assert sorted(p for _, p in service.documents()) == sorted(CORPUS)
    assert service.call("status", {})["brains"][0]["documents"] == len(CORPUS)
    report = service.call(
        "eval_retrieval",
        {
            "questions": [
                {"question": QUESTION, "files": ["engineering/staging.md"]},
                "When is the espresso machine descaled?",
            ],
            "thresholds": [0.38],
        },
    )
    assert report["questions"] == 2 and report["retrieval"]["hit_at_k"] == 1.0
    assert not fake_models.llms and len(fake_models.embedder_loads) == 2  # the index run's, then the service's


def test_tool_errors_are_the_cli_errors(service: Service, fake_models: FakeModels) -> None:
    with pytest.raises(UsageError, match="exactly one of"):
        service.call("get", {"id": "x", "path": "y"})
    with pytest.raises(NoIndexError):
        service.call("get", {"id": "no-such-chunk"})
    with pytest.raises(NoIndexError):
        service.call("search", {"query": QUESTION, "brain": "nope"})
    with pytest.raises(NothingFoundError):
        service.call("ask", {"question": QUESTION, "path": "nowhere/*", "extractive": True})


def test_warm_models_answer_many_questions_with_one_load(service: Service, fake_models: FakeModels) -> None:
    first = service.call("ask", {"question": QUESTION})
    second = service.call("ask", {"question": "How long are nightly PostgreSQL backups kept?", "top_k": 2})
    assert "5433" in first["answer"] and "35 days" in second["answer"] and len(second["sources"]) == 2
    assert len(fake_models.llms) == 1 and fake_models.llm.reuse_prefix and not fake_models.llm.closed
    assert len(fake_models.prompts) == 2 and service.requests == 2
    extractive = service.call("ask", {"question": QUESTION, "extractive": True})
    assert extractive["mode"] == "extractive" and len(fake_models.prompts) == 2
    service.close()
    assert fake_models.llm.closed


def test_mcp_server_in_process(service: Service, fake_models: FakeModels) -> None:
    from mcp import Client

    from locallens.mcp_server import build_server, parse_resource_uri, resource_uri

    async def steps() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(service), read_timeout_seconds=60) as client:
            out["tools"] = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            out["search"] = await client.call_tool("search", {"query": QUESTION, "top_k": 2})
            out["unknown"] = await client.call_tool("search", {"query": "x", "bogus": 1})
            out["missing"] = await client.call_tool("ask", {})
            out["ask"] = await client.call_tool("ask", {"question": QUESTION})
            out["nothing"] = await client.call_tool("ask", {"question": QUESTION, "path": "nowhere/*"})
            out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
            out["read"] = await client.read_resource(resource_uri("default", "engineering/staging.md"))
        return out

    out = asyncio.run(steps())
    assert out["tools"] == {name: spec["schema"] for name, spec in TOOLS.items()}
    search = out["search"]
    assert not search.is_error and json.loads(search.content[0].text) == search.structured_content
    assert search.structured_content["excerpts"][0]["path"] == "engineering/staging.md"
    assert re.fullmatch(r"engineering/staging\.md:\d+-\d+", search.structured_content["excerpts"][0]["citation"])
    assert out["unknown"].is_error and "unknown argument(s) bogus" in out["unknown"].content[0].text
    assert out["missing"].is_error and "question" in out["missing"].content[0].text
    ask = out["ask"].structured_content
    assert ask["mode"] == "generate" and "5433" in ask["answer"] and ask["citations"] == [1]
    assert out["nothing"].is_error and "nothing relevant" in out["nothing"].content[0].text
    assert sorted(out["resources"]) == sorted(resource_uri("default", p) for p in CORPUS)
    assert "5433" in out["read"].contents[0].text
    assert parse_resource_uri(resource_uri("my brain", "a b/c.md")) == ("my brain", "a b/c.md")
    assert len(fake_models.llms) == 1


def test_http_api_endpoints_and_errors(db: Path, fake_models: FakeModels) -> None:
    served = Served(db)
    try:
        status, health = served.request("GET", "/health")
        assert status == 200 and health["ok"] is True
        status, body = served.request("POST", "/search", {"query": "WireGuard puerto VPN", "top_k": 2})
        assert status == 200 and body["excerpts"][0]["path"] == "notas/vpn.md"
        # Every face cites by line (docs/behaviour.md#locations).
        excerpt = body["excerpts"][0]
        assert excerpt["citation"] == f"notas/vpn.md:{excerpt['line_start']}-{excerpt['line_end']}"
        status, body = served.request("POST", "/ask", {"question": QUESTION})
        assert status == 200 and "5433" in body["answer"] and body["mode"] == "generate"
        assert body["sources"][0]["citation"].startswith("engineering/staging.md:")
        assert body["claims"][0]["excerpt_span"] is not None
        assert served.request("POST", "/ask", {"question": "q", "bogus": True})[0] == 400
        assert served.request("POST", "/ask", b"{not json")[0] == 400
        assert served.request("POST", "/ask", {"question": QUESTION, "brain": "nope"})[0] == 404
        assert served.request("POST", "/ask", {"question": QUESTION, "path": "x/*", "extractive": True})[0] == 422
        assert served.request("GET", "/nowhere")[0] == 404
    finally:
        served.close()

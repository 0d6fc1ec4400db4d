"""The warm core against the cold CLI: `locallens serve`, `locallens mcp`, `ask --batch`.

All on sample_docs/ with the default models, in one run, on the 20 sample questions:
1. cold: `locallens ask Q --json` as 20 separate processes (what a script pays today);
2. warm HTTP: `locallens serve` started once, then POST /ask for each question (the first
   request loads the models and is reported apart), then again with `trim` (a shorter prompt)
   and `extractive` (no LLM);
3. warm MCP: `locallens mcp` over stdio, driven by the SDK's client, `ask` for each question;
4. `ask --batch` of the 20 questions against the 20 CLI calls of (1): wall-clock ratio;
5. `search` at 10k chunks (a brain of random vectors, as in bench_ask.py) through HTTP: median;
6. memory: the server's RSS after 10 and after 200 requests (searches and asks mixed).
Prefill tokens found in the KV cache are reported from the answers' `tokens.prompt_cached`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import _common as c
from bench_ask import build_brain

QUESTIONS_JSONL = c.ROOT / "tests" / "data" / "questions.jsonl"


def questions() -> list[str]:
    return [
        json.loads(line)["question"]
        for line in QUESTIONS_JSONL.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(c.cli_command(*args), stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    for _ in range(600):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def post(port: int, path: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST")
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        data = json.loads(response.read())
    return time.perf_counter() - started, data


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(values: list[float]) -> str:
    return f"median {c.median(values):.2f} s, p95 {c.percentile(values, 95):.2f} s"


def mcp_round(db: Path, qs: list[str]) -> tuple[float, list[float]]:
    from mcp import Client, StdioServerParameters

    async def main() -> tuple[float, list[float]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "locallens", "mcp", "--db", str(db)])
        async with Client(params, read_timeout_seconds=600) as client:
            started = time.perf_counter()
            await client.call_tool("ask", {"question": qs[0]})
            first = time.perf_counter() - started
            times = []
            for q in qs:
                started = time.perf_counter()
                result = await client.call_tool("ask", {"question": q})
                times.append(time.perf_counter() - started)
                assert not result.is_error or "nothing relevant" in result.content[0].text
            return first, times

    return asyncio.run(main())


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("Serve benchmark", args.quick)
    qs = questions()[: 5 if args.quick else 20]
    table = c.Table("Serve benchmark")
    with c.bench_dir("serve") as tmp:
        db = tmp / "index.db"
        c.note("indexing sample_docs/")
        c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db)))

        c.note(f"cold: {len(qs)} CLI calls")
        cold = []
        batch_started = time.perf_counter()
        for q in qs:
            run = c.run_child(c.cli_command("ask", q, "--db", str(db), "--json"))
            cold.append(run.seconds)
        cold_total = time.perf_counter() - batch_started

        c.note("ask --batch")
        batch_file = tmp / "q.jsonl"
        batch_file.write_text("".join(json.dumps({"question": q}) + "\n" for q in qs), encoding="utf-8")
        batch = c.run_child(c.cli_command("ask", "--batch", str(batch_file), "--db", str(db)))

        c.note("warm HTTP")
        port = free_port()
        server = start_server(["serve", "--db", str(db), "--port", str(port)], port)
        try:
            first, _ = post(port, "/ask", {"question": qs[0]})
            warm, cached, trimmed, extractive = [], [], [], []
            for q in qs:
                seconds, data = post(port, "/ask", {"question": q})
                warm.append(seconds)
                cached.append(data["tokens"]["prompt_cached"] / max(1, data["tokens"]["prompt"]))
            for q in qs:
                trimmed.append(post(port, "/ask", {"question": q, "trim": True})[0])
                extractive.append(post(port, "/ask", {"question": q, "extractive": True})[0])
            requests = 1 + 3 * len(qs)
            rss_10 = rss_mb(server.pid)
            for i in range(200 - requests):
                if i % 10 == 0:
                    post(port, "/ask", {"question": qs[i % len(qs)], "extractive": True})
                else:
                    post(port, "/search", {"query": qs[i % len(qs)]})
            rss_200 = rss_mb(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)

        c.note("warm MCP (stdio)")
        mcp_first, mcp = mcp_round(db, qs)

        c.note("search at 10k chunks")
        big = tmp / "big.db"
        from locallens.embedding import load_embedder

        embedder = load_embedder("auto")
        build_brain(big, 10_000, embedder.name, embedder.dim, seed=1)
        port = free_port()
        server = start_server(["serve", "--db", str(big), "--port", str(port)], port)
        try:
            post(port, "/search", {"query": qs[0]})  # loads the embedder
            search = [post(port, "/search", {"query": q})[0] for q in qs for _ in range(3)]
        finally:
            server.terminate()
            server.wait(timeout=30)

    table.section("ask, default models, sample questions")
    table.add("cold CLI (one process per question)", summary(cold))
    table.add("warm HTTP, first request (loads models)", f"{first:.2f} s")
    table.add(
        "warm HTTP",
        summary(warm),
        target="<= 1.5 s median",
        passed=c.median(warm) <= 1.5,
        note=f"{c.median(cold) / c.median(warm):.1f}x faster than cold (target >= 4x)",
    )
    table.add(
        "warm HTTP, trim (window 1)",
        summary(trimmed),
        note=f"{c.median(cold) / c.median(trimmed):.1f}x faster than cold; a shorter prompt to prefill",
    )
    table.add(
        "warm HTTP, extractive (no LLM)",
        summary(extractive),
        note=f"{c.median(cold) / c.median(extractive):.0f}x faster than cold",
    )
    table.add("warm MCP (stdio), first call", f"{mcp_first:.2f} s")
    table.add("warm MCP (stdio)", summary(mcp), note=f"{c.median(cold) / c.median(mcp):.1f}x faster than cold")
    table.add(
        "prompt tokens from the KV cache",
        f"median {100 * c.median(cached):.0f}% of the prompt",
        note="the shared prefix (template + rules) of a new question",
    )
    table.section("batch")
    table.add(
        f"ask --batch ({len(qs)} questions)",
        f"{batch.seconds:.1f} s",
        note=f"{cold_total / batch.seconds:.1f}x faster than {len(qs)} CLI calls ({cold_total:.1f} s)",
    )
    table.section("search and memory")
    table.add(
        "search via HTTP at 10k chunks",
        f"median {1000 * c.median(search):.0f} ms",
        target="<= 50 ms",
        passed=c.median(search) <= 0.05,
        note="HTTP round trip included",
    )
    table.add(
        "server RSS after 10 / 200 requests",
        f"{rss_10:.0f} / {rss_200:.0f} MB",
        target="within 10%",
        passed=rss_200 <= 1.1 * rss_10,
    )
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

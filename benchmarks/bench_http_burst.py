"""The HTTP API under a burst and under stalled clients, on loopback.

`locallens serve` on an index of sample_docs/ (the default models), started as its own process:
1. bursts: `--clients` (50) concurrent POST /search, `--bursts` (10) times, after each query
   was asked once (warm): connection resets and other failures counted, latency p50 / p95 / max
   over all requests and per burst; then one burst of questions never asked (cold: the
   trimming embeds their excerpts' sentences), reported apart;
2. stalled clients: `--stalled` (100) connections that send half a request line and then
   nothing; meanwhile one normal POST /search: its latency, and whether it was answered.

    python benchmarks/bench_http_burst.py [--clients 50] [--bursts 10] [--stalled 100]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import _common as c

QUERIES = [
    "Which port does the staging database listen on?",
    "How many days of leave do new employees get?",
    "¿En qué puerto escucha la VPN?",
    "How long are backups kept?",
    "Who approves remote work?",
]


# Questions no warm-up asked: each new excerpt's sentences are embedded for trimming.
COLD_QUERIES = [
    "What does the incident runbook say about paging?",
    "Where are the expense receipts sent?",
    "¿Quién aprueba las vacaciones?",
    "Which regions does the CDN serve?",
    "How is a new laptop requested?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def search(port: int, query: str, timeout: float = 60.0) -> tuple[float, str]:
    """(seconds, outcome): "ok", "reset", or the error's class name."""
    body = json.dumps({"query": query, "top_k": 3}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/search", data=body, method="POST")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            outcome = "ok" if response.status == 200 else f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        outcome = f"HTTP {exc.code}"
    except urllib.error.URLError as exc:
        reason = exc.reason
        outcome = "reset" if isinstance(reason, ConnectionResetError) else type(reason).__name__
    except ConnectionResetError:
        outcome = "reset"
    except OSError as exc:
        outcome = type(exc).__name__
    return time.perf_counter() - started, outcome


def burst(port: int, clients: int, queries: list[str] | None = None) -> list[tuple[float, str]]:
    results: list[tuple[float, str]] = [(0.0, "")] * clients
    gate = threading.Barrier(clients)
    asked = queries or QUERIES

    def one(i: int) -> None:
        gate.wait()
        results[i] = search(port, asked[i % len(asked)])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def stalled(port: int, n: int) -> list[socket.socket]:
    sockets = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"POST /search HTTP/1.1\r\nContent-Length: 100\r\n")  # and never the rest
        sockets.append(s)
    return sockets


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(port: int, clients: int, bursts: int, n_stalled: int) -> dict[str, Any]:
    # Warm: the first request loads the embedder, and each query's first search embeds the
    # sentences of its excerpts for trimming (then cached): a cold burst measures that, not the
    # server. `cold_burst` below is one burst of queries never asked before, reported apart.
    for query in QUERIES:
        search(port, query)
    times: list[float] = []
    outcomes: dict[str, int] = {}
    per_burst: list[dict[str, float]] = []
    for _ in range(bursts):
        this = burst(port, clients)
        for seconds, outcome in this:
            times.append(seconds)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        burst_times = [seconds for seconds, _ in this]
        per_burst.append(
            {"p50_ms": round(statistics.median(burst_times) * 1000), "max_ms": round(max(burst_times) * 1000)}
        )
    cold = burst(port, clients, [f"{query} (asked anew {i})" for i, query in enumerate(COLD_QUERIES * clients)])
    cold_times = [seconds for seconds, _ in cold]
    held = stalled(port, n_stalled)
    try:
        time.sleep(0.5)
        normal_s, normal = search(port, QUERIES[0], timeout=30)
    finally:
        for s in held:
            s.close()
    return {
        "requests": len(times),
        "outcomes": outcomes,
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(percentile(times, 0.95) * 1000, 1),
        "max_ms": round(max(times) * 1000, 1),
        "per_burst": per_burst,
        "cold_burst": {
            "outcomes": sorted({outcome for _, outcome in cold}),
            "p50_ms": round(statistics.median(cold_times) * 1000, 1),
            "p95_ms": round(percentile(cold_times, 0.95) * 1000, 1),
            "max_ms": round(max(cold_times) * 1000, 1),
        },
        "stalled": n_stalled,
        "normal_request_during_stall": normal,
        "normal_request_ms": round(normal_s * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--bursts", type=int, default=10)
    parser.add_argument("--stalled", type=int, default=100)
    parser.add_argument("--work", type=Path, default=Path("/tmp/locallens-bench-http"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    db = args.work / "index.db"
    if not db.exists():
        subprocess.run(c.cli_command("index", str(c.ROOT / "sample_docs"), "--db", str(db), "--quiet"), check=True)
    port = free_port()
    server = subprocess.Popen(
        c.cli_command("serve", "--port", str(port), "--db", str(db), "--quiet"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        report = run(port, args.clients, args.bursts, args.stalled)
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    report["server_stderr_lines"] = len(err.decode(errors="replace").splitlines())
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

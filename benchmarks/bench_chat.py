"""`locallens chat`: whether follow-ups find better excerpts, and what a warm question costs.

On sample_docs/ with the default models, in one run:
1. follow-ups: for each pair of benchmarks/data/chat_follow_ups.jsonl (a question, then a short
   second one, and the file that answers the second), where the expected file ranks when the
   second question is searched alone, together with the first, and as `chat` does it (together
   only when `locallens.chat.is_follow_up` says so). "follow-up" pairs continue the first
   question; "new topic" pairs change the subject (the rule must not hurt them). hit@1, hit@5 and
   MRR of the expected file over the top 5 excerpts, hybrid search as `ask` does;
2. latency: the same questions asked (a) as cold `locallens ask Q` processes and (b) in one chat
   session (`ChatSession` on a warm `Service`, as `locallens chat` runs it): the first question
   of the session (models load) apart, then the median of the others; generated and extractive.

    python benchmarks/bench_chat.py [--quick]
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import _common as c

PAIRS = c.ROOT / "benchmarks" / "data" / "chat_follow_ups.jsonl"
QUESTIONS_JSONL = c.ROOT / "tests" / "data" / "questions.jsonl"
TOP_K = 5


def pairs() -> list[dict[str, str]]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]


def rank_of(store: Any, brain: Any, embedder: Any, query: str, expected: str) -> int | None:
    from locallens.retrieval import retrieve

    result = retrieve(store, brain, embedder, query, TOP_K, hybrid=True)
    paths = [hit.chunk.relative_path for hit in result.hits]
    return paths.index(expected) + 1 if expected in paths else None


def follow_ups(db: Path) -> list[c.Row]:
    from locallens.chat import search_query
    from locallens.models import WarmModels
    from locallens.storage import open_store

    models = WarmModels()
    ways = ("alone", "with previous", "chat's rule")
    ranks: dict[tuple[str, str], list[int | None]] = {}
    with open_store(db) as store:
        brain = store.get_brain("default")
        embedder = models.embedder(brain.model)
        for pair in pairs():
            combined = f"{pair['previous']} {pair['question']}"
            rule = search_query(pair["question"], pair["previous"]) or pair["question"]
            for way, query in zip(ways, (pair["question"], combined, rule)):
                ranks.setdefault((pair["kind"], way), []).append(rank_of(store, brain, embedder, query, pair["file"]))
    rows: list[c.Row] = []
    for kind in ("follow-up", "new topic"):
        n = len(ranks[(kind, "alone")])
        rows.append(c.Row(f"[{kind} pairs ({n})]", ""))
        for way in ways:
            found = ranks[(kind, way)]
            hit1 = sum(1 for r in found if r == 1) / n
            hit5 = sum(1 for r in found if r is not None) / n
            mrr = sum(1 / r for r in found if r is not None) / n
            rows.append(c.Row(f"  {way}", f"hit@1 {hit1:.2f}  hit@5 {hit5:.2f}  MRR {mrr:.3f}"))
    return rows


def questions(n: int) -> list[str]:
    lines = QUESTIONS_JSONL.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()][:n]


def latency(db: Path, asked: list[str]) -> list[c.Row]:
    from locallens.chat import ChatOutput, ChatSession
    from locallens.service import Service, ServiceSettings

    rows: list[c.Row] = []
    for extractive in (False, True):
        label = "extractive" if extractive else "generated"
        cold: list[float] = []
        for question in asked:
            c.note(f"cold ask ({label}): {question[:50]}")
            args = ["ask", question, "--db", str(db), *(["--extractive"] if extractive else [])]
            run = c.run_child(c.cli_command(*args))
            if run.returncode not in (0, 4):
                c.check_child(run, "locallens ask")
            cold.append(run.seconds)
        service = Service(ServiceSettings(db=db))
        quiet = ChatOutput(
            stream=lambda _: None, say=lambda _: None, error=print, answer=lambda _: None, sources=lambda _: None
        )
        session = ChatSession(service, quiet, top_k=TOP_K, extractive=extractive, follow_ups=False)
        warm: list[float] = []
        try:
            for question in asked:
                c.note(f"chat ({label}): {question[:50]}")
                started = time.perf_counter()
                session.handle(question)
                warm.append(time.perf_counter() - started)
        finally:
            service.close()
        later = c.median(warm[1:])
        rows += [
            c.Row(f"{label}: cold `ask` process, median of {len(cold)}", c.fmt_s(c.median(cold))),
            c.Row(f"{label}: chat, first question (models load)", c.fmt_s(warm[0])),
            c.Row(
                f"{label}: chat, later questions, median of {len(warm) - 1}",
                c.fmt_s(later),
                note=f"{c.median(cold) / later:.1f}x faster than cold",
            ),
        ]
    return rows


def main() -> None:
    args = c.parse_args(__doc__ or "")
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("bench_chat", args.quick)
    with c.bench_dir("chat") as tmp:
        db = tmp / "index.db"
        c.note("indexing sample_docs")
        run = c.run_child(c.cli_command("index", str(c.SAMPLE_DOCS), "--db", str(db), "--quiet"))
        c.check_child(run, "locallens index")
        table = c.Table("locallens chat on sample_docs")
        table.section("follow-ups: the expected file in the top 5 excerpts")
        table.rows += follow_ups(db)
        table.section("latency per question (wall, to the checked answer)")
        table.rows += latency(db, questions(3 if args.quick else 6))
    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

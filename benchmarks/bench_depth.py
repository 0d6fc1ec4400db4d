"""Where the answer is when it is not in the 5 excerpts `ask` reads, and what reading other excerpts
does to the answers: a diagnosis of retrieval depth, and the measure of the ways tried to read
deeper.

Diagnosis (the default). For every answerable question of the development sets that names
expected answer strings (`bench_answers.SETS`; never the held-out ones), the default search
(`retrieve`, as `ask` runs it) is read to depth 50 and each question is put in one class:

- `top5`: a chunk of the 5 read holds an expected answer (`contains_answer`, as `stated` judges);
- `next` / `prev`: else the chunk after / before one of the 5 read (same file) holds it;
- `file`: else another chunk of a file among the 5 read holds it;
- `r6-20`, `r21-50`: else the first chunk holding it is at that rank of the depth-50 search;
- `none`: no chunk of the 50 (nor of the files read) holds it.

Beside the class: whether an expected file is among the 5 read, whether the answer chunk's heading
path (the header it was embedded with) holds one of the question's rare words (salience >= RARE,
`unit_scores.word_salience`), and how many questions have an answer in the 5 read each joined
with its next chunk (`read_on`). With `--stated FILE` (a `bench_answers.py --save` file of the
same sets) each class is split by whether the extractive answer stated the fact.

Answers (`--answers VARIANT,...`). The extractive answer (`answer.answer_with`, as `ask
--extractive` answers) of each question of the sets (answerable and near misses; `broad` judged
by its cited files), from the 5 excerpts as retrieved and from each variant's excerpts:

- `read:N`: the first N of the 5 each read together with the next chunk of its file (`read_on`:
  small-to-big, the shared overlap read once);
- `top:K`: the first K of the search instead of 5;
- `unit:D/KEEP`: the first KEEP as ranked, the rest of the 5 chosen from the first D by the score
  of the best answer unit each holds (`extractive.score_units`; the per-file cap kept).

Each variant is judged twice: `alone` (its own answer), and `guarded` (the refusal stays the one
of the 5 excerpts as retrieved; an answer is the variant's when it answers too, else the
retrieved one's). Printed per set: stated / answerable refused / near misses refused / answerable
questions with an expected answer string in an excerpt read.

Usage:
    python benchmarks/bench_depth.py [--sets pydoc,stdlib] [--workdir DIR] [--stated base.jsonl] [--rows FILE]
    python benchmarks/bench_depth.py --answers read:1,top:6,unit:20/2 [--sets ...] [--workdir DIR] [--changes]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import bench_answers as ba
import numpy as np

DEV_SETS = "sample,es,pydoc,pydoc-es,stdlib,borg,postfix,postfix-es,apache,apache-es"
ANSWER_SETS = "sample,broad,es,pydoc,pydoc-es,stdlib,borg,postfix,postfix-es,apache,apache-es"
DEPTH = 50
RARE = 0.5
CLASSES = ("top5", "next", "prev", "file", "r6-20", "r21-50", "none")
# A token is rarely over this many characters: an end of a chunk longer than that many per token of
# the overlap is not the text it shares with the next chunk (and a ruler's every end is not tried).
OVERLAP_CHARS_PER_TOKEN = 12


def joined_chunks(first: str, then: str, overlap: int = 40) -> str:
    """`first` followed by `then`, the chunk after it in its file, their shared text read once.
    Consecutive chunks share about `overlap` tokens (the brain's chunk overlap); of the ends of
    `first` that `then` starts with, the one nearest that length is the shared text (a repeated
    line, a ruler of `*`, can make a shorter or a longer one match too; of equal token counts the
    longer). Without any (the chunker cut between paragraphs), a blank line joins them."""
    from locallens.tokens import count_tokens

    probe = then[:1]
    shared: list[str] = []
    start = first.find(probe, max(0, len(first) - OVERLAP_CHARS_PER_TOKEN * max(overlap, 8))) if probe else -1
    while start != -1:
        if then.startswith(first[start:]):
            shared.append(first[start:])
        start = first.find(probe, start + 1)
    if not shared:
        return f"{first}\n\n{then}"
    tail = min(shared, key=lambda t: (abs(count_tokens(t) - overlap), -len(t)))
    return first + then[len(tail) :]


def _spanning(first: Any, last: Any) -> Any:
    """The location of two consecutive chunks read as one: from `first`'s start to `last`'s end."""
    if first is None or last is None:
        return first
    if first.line_start is not None and last.line_end is not None:
        return replace(first, line_end=last.line_end)
    if first.kind and first.kind == last.kind and first.label and last.label and first.label != last.label:
        return replace(first, label=f"{first.label.split('-')[0]}-{last.label.split('-')[-1]}")
    return first


def read_on(store: Any, brain: Any, hits: Sequence[Any], ranks: int = 1) -> list[Any]:
    """`hits` with each of the first `ranks` read together with the next chunk of its file
    (small-to-big), unless that chunk is itself among `hits`; a hit keeps its id, score and rank,
    its content and location spanning both chunks."""
    held = {(h.chunk.relative_path, h.chunk.chunk_index) for h in hits}
    out = list(hits)
    for n, hit in enumerate(hits[:ranks]):
        chunk = hit.chunk
        if (chunk.relative_path, chunk.chunk_index + 1) in held:
            continue
        # A chunk's id is its document's checksum's start and its index (docs/behaviour.md#chunk-ids).
        after = store.chunk_by_id(brain, f"{chunk.checksum[:12]}-{chunk.chunk_index + 1}")
        if after is None or after.relative_path != chunk.relative_path:
            continue
        content = joined_chunks(chunk.content, after.content, brain.chunk_overlap)
        out[n] = replace(hit, chunk=replace(chunk, content=content, location=_spanning(chunk.location, after.location)))
    return out


def _headers(db: Path) -> dict[tuple[str, int], str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return {(p, i): h or "" for p, i, h in conn.execute("SELECT relative_path, chunk_index, header FROM chunks")}


def diagnose(set_name: str, db: Path, models: Any) -> list[dict[str, Any]]:
    from locallens.answer import brain_term_counts
    from locallens.evaluation.metrics import contains_answer
    from locallens.retrieval import retrieve
    from locallens.storage import open_store, parse_db
    from locallens.unit_scores import key_terms, question_terms

    headers = _headers(db)
    out = []
    with open_store(parse_db(db)) as store:
        brain = store.get_brain("default")
        embedder = models.embedder(brain.model)
        counts = brain_term_counts(store, brain)
        for row in ba.load_set(set_name):
            if not row.get("answerable", True) or not row.get("answers"):
                continue
            answers = row["answers"]
            read = retrieve(store, brain, embedder, row["question"], 5).hits
            read_next = read_on(store, brain, read, len(read))  # each with its next chunk
            deep = retrieve(store, brain, embedder, row["question"], DEPTH)
            holds = [contains_answer(h.content, answers) for h in deep.hits]
            first = next((i + 1 for i, held in enumerate(holds) if held), None)
            files = {h.chunk.relative_path for h in read}
            kind, where = "none", None
            if any(contains_answer(h.content, answers) for h in read):
                kind = "top5"
                where = next(
                    (h.chunk.relative_path, h.chunk.chunk_index) for h in read if contains_answer(h.content, answers)
                )
            else:
                chunks = {path: store.document_chunks(brain, path) for path in files}
                for step, name in ((1, "next"), (-1, "prev")):
                    for path, index in [(h.chunk.relative_path, h.chunk.chunk_index) for h in read]:
                        near = [c for c in chunks[path] if c.chunk_index == index + step]
                        if near and contains_answer(near[0].content, answers):
                            kind, where = name, (path, index + step)
                            break
                    if kind != "none":
                        break
                if kind == "none":
                    found = [
                        (p, c.chunk_index)
                        for p, cs in chunks.items()
                        for c in cs
                        if contains_answer(c.content, answers)
                    ]
                    if found:
                        kind, where = "file", found[0]
                if kind == "none" and first is not None:
                    kind = "r6-20" if first <= 20 else "r21-50"
                    hit = deep.hits[first - 1]
                    where = (hit.chunk.relative_path, hit.chunk.chunk_index)
            text = deep.rendering.text if deep.rendering is not None else row["question"]
            terms = question_terms(text, counts)
            rare = {k for k, s in (terms.salience or {}).items() if s >= RARE}
            from_rank = next((n for n, h in enumerate(read, 1) if where and h.chunk.relative_path == where[0]), None)
            header_rare = bool(where) and bool(rare & key_terms(headers.get(where, "")))
            out.append(
                {
                    "set": set_name,
                    "question": row["question"],
                    "class": kind,
                    "first_rank": first,
                    "file_in_5": bool(files & set(row.get("files", []))),
                    "in_read_on": any(contains_answer(h.content, answers) for h in read_next),
                    "answer_file_in_5": bool(where) and where[0] in files,
                    "header_rare": header_rare,
                    "where": list(where) if where else None,
                    "from_rank": from_rank,
                }
            )
    return out


def table(rows: list[dict[str, Any]], stated: dict[tuple[str, str], bool]) -> None:
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        c = by[r["class"]]
        c["n"] += 1
        c["file_in_5"] += r["file_in_5"]
        c["header_rare"] += r["header_rare"]
        key = (r["set"], r["question"])
        if key in stated:
            c["judged"] += 1
            c["stated"] += stated[key]
    print(f"{'class':<8} {'questions':>9} {'stated':>9} {'file in 5':>9} {'heading rare':>12}")
    for name in CLASSES:
        c = by.get(name, Counter())
        judged = f"{c['stated']}/{c['judged']}" if c["judged"] else "-"
        print(f"{name:<8} {c['n']:>9} {judged:>9} {c['file_in_5']:>9} {c['header_rare']:>12}")
    print(f"{'all':<8} {len(rows):>9}")
    print(
        f"an answer in the 5 excerpts read: {sum(r['class'] == 'top5' for r in rows)}; "
        f"in the 5 each with its next chunk: {sum(r['in_read_on'] for r in rows)}"
    )
    sets = sorted({r["set"] for r in rows}, key=[r["set"] for r in rows].index)
    print("\nper set: " + "  ".join(f"{name}" for name in CLASSES))
    for s in sets:
        cnt = Counter(r["class"] for r in rows if r["set"] == s)
        print(f"{s:<11} " + " ".join(f"{cnt.get(name, 0):>5}" for name in CLASSES))


def by_best_unit(question: str, hits: Sequence[Any], keep: int, deep: Any, encode: Any, counts: Any) -> list[Any]:
    """`unit:D/KEEP`: the first `keep` of `hits` as ranked, then the others by their best answer
    unit's score, at most `retrieval.MAX_CHUNKS_PER_FILE` of one file while others are left; 5."""
    from locallens.extractive import score_units, with_rendering
    from locallens.retrieval import diversify

    rest = list(hits[keep:])
    if not rest:
        return list(hits[:5])
    scored = score_units(question, rest, deep.query_vector, encode, counts)
    if deep.rendering is not None and deep.rendering.vector is not None:
        scored = with_rendering(scored, score_units(deep.rendering.text, rest, deep.rendering.vector, encode, counts))
    best = np.zeros(len(rest))
    for unit, score in zip(scored.units, scored.scores):
        best[unit.excerpt - 1] = max(best[unit.excerpt - 1], float(score))
    return diversify(list(hits[:keep]) + [rest[int(i)] for i in np.argsort(-best, kind="stable")], 5)


def _variant_depth(variant: str) -> int:
    kind, _, value = variant.partition(":")
    if kind == "top":
        return int(value)
    if kind == "unit":
        return int(value.split("/")[0])
    return 5


def answers(set_name: str, db: Path, models: Any, variants: list[str]) -> list[dict[str, Any]]:
    """Each question's outcome (stated, refused) from the 5 excerpts as retrieved (`base`) and from
    each variant's, alone and guarded (module doc)."""
    from locallens.answer import answer_with, brain_term_counts
    from locallens.evaluation.metrics import contains_answer
    from locallens.modes import AnswerInput, AnswerOptions
    from locallens.retrieval import SentenceEncoder, retrieve
    from locallens.storage import open_store, parse_db

    depth = max([20, *(_variant_depth(v) for v in variants)])
    out = []
    with open_store(parse_db(db)) as store:
        brain = store.get_brain("default")
        embedder = models.embedder(brain.model)
        counts = brain_term_counts(store, brain)
        encode = SentenceEncoder(embedder, store)
        for row in ba.load_set(set_name):
            question = row["question"]
            retrieved = retrieve(store, brain, embedder, question, 5)
            deep = retrieve(store, brain, embedder, question, depth) if depth > 20 else None
            # With at most 20 wanted, the fused order of k=20 is that of k=5 (20 candidates a side).
            ranked = (deep or retrieve(store, brain, embedder, question, 20)).hits

            def outcome(hits: Sequence[Any], row: dict[str, Any] = row, retrieved: Any = retrieved) -> dict[str, bool]:
                given = AnswerInput(
                    row["question"],
                    list(hits),
                    retrieved.query_vector,
                    encode,
                    models,
                    AnswerOptions(),
                    counts,
                    retrieved.rendering,
                )
                data = answer_with("extractive", given).as_json()
                answerable = bool(row.get("answerable", True))
                return {
                    "stated": answerable and ba.stated(row, data, set_name),
                    "refused": bool(data["refused"]),
                    # an excerpt read holds an expected answer string (the diagnosis's `top5`)
                    "held": any(contains_answer(h.content, row.get("answers") or []) for h in hits),
                }

            item: dict[str, Any] = {
                "set": set_name,
                "question": question,
                "answerable": row.get("answerable", True),
                "base": outcome(retrieved.hits),
            }
            for variant in variants:
                kind, _, value = variant.partition(":")
                if kind == "read":
                    hits = read_on(store, brain, retrieved.hits, int(value))
                elif kind == "top":
                    hits = ranked[: int(value)]
                else:
                    d, _, keep = value.partition("/")
                    hits = by_best_unit(question, ranked[: int(d)], int(keep or 2), retrieved, encode, counts)
                alone = outcome(hits)
                base = item["base"]
                item[variant] = alone
                item[f"{variant} guarded"] = base if base["refused"] or alone["refused"] else alone
            out.append(item)
    return out


def answers_table(rows: list[dict[str, Any]], variants: list[str], changes: bool) -> None:
    columns = ["base"] + [f"{v}{how}" for v in variants for how in ("", " guarded")]
    sets = sorted({r["set"] for r in rows}, key=[r["set"] for r in rows].index)
    print("stated / answerable refused / near misses refused / an excerpt read holds the answer")
    print(f"{'set':<11}" + "".join(f"{c:>24}" for c in columns))
    totals = {c: [0, 0, 0, 0] for c in columns}
    for s in [*sets, "all"]:
        cells = []
        for c in columns:
            if s == "all":
                t = totals[c]
            else:
                mine = [r for r in rows if r["set"] == s]
                ans = [r for r in mine if r["answerable"]]
                t = [
                    sum(r[c]["stated"] for r in ans),
                    sum(r[c]["refused"] for r in ans),
                    sum(r[c]["refused"] for r in mine if not r["answerable"]),
                    sum(r[c]["held"] for r in ans),
                ]
                totals[c] = [a + b for a, b in zip(totals[c], t)]
            cells.append(f"{t[0]:>4} {t[1]:>3} {t[2]:>3} {t[3]:>4}")
        print(f"{s:<11}" + "".join(f"{x:>24}" for x in cells))
    if changes:
        for c in columns[1:]:
            for r in rows:
                if (r[c]["stated"], r[c]["refused"]) != (r["base"]["stated"], r["base"]["refused"]):
                    print(f"  {c:<18} {r['set']:<10} {r['base']} -> {r[c]}  {r['question'][:70]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=DEV_SETS)
    parser.add_argument("--workdir", default=str(ba.ROOT / ".bench-answers"))
    parser.add_argument("--stated", default=None, help="a bench_answers.py --save file (extractive rows)")
    parser.add_argument("--rows", default=None, help="write each question's class (or outcomes) as JSONL")
    parser.add_argument("--answers", default=None, help="variants to answer from: read:N, top:K, unit:D/KEEP")
    parser.add_argument("--changes", action="store_true", help="with --answers: list each changed question")
    args = parser.parse_args()
    if args.answers and args.sets == DEV_SETS:
        args.sets = ANSWER_SETS
    from locallens.models import WarmModels

    sets = [s for s in args.sets.split(",") if s]
    held = [s for s in sets if s.startswith(("sqlite", "rsyslog"))]
    if held:
        sys.exit(f"bench_depth: {', '.join(held)} is held out; not diagnosed")
    stated: dict[tuple[str, str], bool] = {}
    if args.stated:
        for line in Path(args.stated).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item.get("mode") == "extractive":
                stated[(item["set"], item["question"])] = bool(item["stated"])
    models = WarmModels()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        for s in sets:
            db = ba.build_index(ba.SETS[s][0], Path(args.workdir))
            rows += answers(s, db, models, args.answers.split(",")) if args.answers else diagnose(s, db, models)
    finally:
        models.close()
    if args.answers:
        answers_table(rows, args.answers.split(","), args.changes)
    else:
        table(rows, stated)
    print(f"took {time.perf_counter() - started:.0f} s")
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()

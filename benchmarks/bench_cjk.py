"""CJK benchmark: retrieval, trimming and token counts on Chinese, Japanese and Korean notes.

    .venv/bin/python benchmarks/bench_cjk.py [--quick] [--scale N] [--db PATH]

Corpus: benchmarks/data/cjk/docs/ (32 short office and technical notes: 12 Chinese, 10 Japanese,
10 Korean, written for this benchmark), questions: benchmarks/data/cjk/questions.jsonl (20, in the
three languages, `{question, files, answers}` as `locallens eval` reads them).

1. Retrieval: the corpus indexed with the default model; hit@5 (an expected file among the
   files of the 5 best chunks) of vector search, of the keyword ranking alone
   (`Store.keyword_search`) and of hybrid search (`retrieval.hybrid_search`), overall and by
   language. For the trigram index's handling of 2-character words, the keyword and hybrid
   figures are also given with the 2-character expansion off (`TRIGRAM_EXPANSIONS = 0`: only the
   query's own trigrams), when the code under test has it.
2. Trimming: the share of questions whose answer, present in the untrimmed top-5 context, is
   still there after trimming at the defaults of `locallens trim` (threshold 0.38, window 0,
   min 1 sentence; target >= 95%), the share of the sentences holding an answer kept, and the
   tokens removed: with CJK sentences kept by the calibrated rule (`trim.cjk_thresholds`, as
   shipped) and by the fixed threshold alone (as before it).
3. Tokens: over the documents and the questions, by language, tiktoken (cl100k_base and
   o200k_base) against `locallens.tokens.estimate_tokens`.
4. With --scale N (default 20,000; 0 to skip): a synthetic store of N CJK chunks (sentences of
   the corpus shuffled, random vectors): the keyword search's time per question, beside a
   LIKE '%xx%' scan for the same 2-character pieces (the alternative to the trigram expansion).

"Before" figures: run this script with the code of an earlier commit on the path, e.g.
    git worktree add /tmp/cjk-before HEAD~1
    PYTHONPATH=/tmp/cjk-before .venv/bin/python benchmarks/bench_cjk.py
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import _common as c

DATA = c.ROOT / "benchmarks" / "data" / "cjk"
DOCS = DATA / "docs"
QUESTIONS = DATA / "questions.jsonl"
TOP_K = 5
TARGET_RETENTION = 0.95
LANGUAGES = ("zh", "ja", "ko")


def language(path: str) -> str:
    return Path(path).name.split("-", 1)[0]


def load_questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def files_of(store, ids: list[int]) -> list[str]:  # type: ignore[no-untyped-def]
    if not ids:
        return []
    rows = dict(store.execute(f"SELECT id, relative_path FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids))
    return [rows[i] for i in ids if i in rows]


def hit_rate(found: dict[str, bool], lang: str | None = None) -> str:
    picked = [ok for q, ok in found.items() if lang is None or language(q) == lang]
    return f"{sum(picked)}/{len(picked)} = {sum(picked) / len(picked):.2f}" if picked else "-"


def retrieval(table: c.Table, store, brain, embedder, questions: list[dict]) -> None:  # type: ignore[no-untyped-def]
    from locallens.retrieval import search
    from locallens.storage import sqlite as store_module

    def run(label: str) -> None:
        vector, keyword, hybrid = {}, {}, {}
        for q in questions:
            key = q["files"][0]
            qvec = embedder.encode_query(q["question"])
            expected = set(q["files"])
            vector[key] = bool(
                expected & {h.chunk.relative_path for h in search(store, brain, q["question"], qvec, TOP_K)}
            )
            keyword[key] = bool(expected & set(files_of(store, store.keyword_search(brain, q["question"], TOP_K))))
            hybrid[key] = bool(
                expected
                & {h.chunk.relative_path for h in search(store, brain, q["question"], qvec, TOP_K, hybrid=True)}
            )
        table.section(f"hit@{TOP_K}, {label}")
        if label == "as shipped":
            table.add(
                "vector", hit_rate(vector), note=", ".join(f"{lang} {hit_rate(vector, lang)}" for lang in LANGUAGES)
            )
        table.add(
            "keyword only", hit_rate(keyword), note=", ".join(f"{lang} {hit_rate(keyword, lang)}" for lang in LANGUAGES)
        )
        table.add("hybrid", hit_rate(hybrid), note=", ".join(f"{lang} {hit_rate(hybrid, lang)}" for lang in LANGUAGES))

    run("as shipped")
    if hasattr(store_module, "TRIGRAM_EXPANSIONS"):
        saved = store_module.TRIGRAM_EXPANSIONS
        store_module.TRIGRAM_EXPANSIONS = 0
        try:
            run("trigram index without the 2-character expansion")
        finally:
            store_module.TRIGRAM_EXPANSIONS = saved
    timings = []
    for q in questions:
        started = time.perf_counter()
        store.keyword_search(brain, q["question"], 50)
        timings.append((time.perf_counter() - started) * 1000)
    table.add(
        "keyword search, median per question",
        c.fmt_ms(statistics.median(timings)),
        note=f"{len(questions)} questions, 50 candidates as hybrid takes",
    )


def trimming(table: c.Table, store, brain, embedder, questions: list[dict]) -> list[str]:  # type: ignore[no-untyped-def]
    """Trimming at the defaults, with CJK sentences kept by the calibrated rule (as shipped) and by
    the fixed threshold alone (the rule before calibration, `trim.cjk_thresholds` bypassed)."""
    import locallens.trim as trim_module

    calibrated = trim_module.cjk_thresholds

    def fixed(sentences, scores, threshold, query):  # type: ignore[no-untyped-def]
        return [threshold] * len(sentences)

    lost: list[str] = []
    for label, rule in (("fixed threshold 0.38", fixed), ("calibrated (as shipped)", calibrated)):
        trim_module.cjk_thresholds = rule  # type: ignore[assignment]
        try:
            lost = _trim_run(table, store, brain, embedder, questions, label)
        finally:
            trim_module.cjk_thresholds = calibrated
    return lost


def _trim_run(table: c.Table, store, brain, embedder, questions: list[dict], label: str) -> list[str]:  # type: ignore[no-untyped-def]
    from locallens.retrieval import TrimSettings, retrieve
    from locallens.sentences import split_chunk_prefix, split_sentences

    present = kept = 0
    needed = needed_kept = 0
    lost: list[str] = []
    before_tokens = after_tokens = 0
    for q in questions:
        base = retrieve(store, brain, embedder, q["question"], TOP_K)
        trimmed = retrieve(store, brain, embedder, q["question"], TOP_K, trim=TrimSettings(enabled=True))
        context = "\n".join(h.content for h in base.hits)
        answers = [a for a in q.get("answers", []) if a in context]
        if not answers:
            continue
        present += 1
        after = "\n".join(h.content for h in trimmed.hits)
        if all(a in after for a in answers):
            kept += 1
        else:
            lost.append(q["question"])
        # The sentences that hold an answer, in every excerpt: are they all still there?
        for hit in base.hits:
            for sentence in split_sentences(split_chunk_prefix(hit.content)[1]):
                if any(a in sentence for a in answers):
                    needed += 1
                    needed_kept += sentence in after
        before_tokens += trimmed.tiktoken_before
        after_tokens += trimmed.tiktoken_in_context
    share = kept / present if present else 0.0
    table.section(f"trimming at the defaults of `locallens trim` (threshold 0.38, window 0): {label}")
    table.add(
        "answer kept",
        f"{kept}/{present} = {share:.2f}",
        f">= {TARGET_RETENTION:.2f}",
        share >= TARGET_RETENTION,
        note="questions whose answer is in the untrimmed top-5",
    )
    if needed:
        table.add("sentences holding an answer kept", f"{needed_kept}/{needed} = {needed_kept / needed:.2f}")
    if before_tokens:
        table.add(
            "tiktoken reduction",
            f"{100 * (1 - after_tokens / before_tokens):.1f}%",
            note=f"{before_tokens} -> {after_tokens} tokens over those questions",
        )
    return lost


def tokens(table: c.Table, questions: list[dict]) -> None:
    from locallens.tokens import estimate_tokens, get_encoding

    encodings = {name: get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    groups: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    for path in sorted(DOCS.glob("*.md")):
        groups[language(path.name)].append(path.read_text(encoding="utf-8"))
    for q in questions:
        groups[language(q["files"][0])].append(q["question"])
    english = [p.read_text(encoding="utf-8") for p in sorted(c.SAMPLE_DOCS.rglob("*.md")) if "notas" not in p.parts]
    table.section("tokens: sum over documents and questions (English: sample_docs/, for comparison)")
    for label, texts in [*groups.items(), ("en", english)]:
        counts = {
            name: sum(len(enc.encode(t, disallowed_special=())) for t in texts) for name, enc in encodings.items()
        }
        estimate = sum(estimate_tokens(t) for t in texts)
        chars = sum(len(t) for t in texts)
        table.add(
            f"{label}: estimate / cl100k / o200k",
            f"{estimate} / {counts['cl100k_base']} / {counts['o200k_base']}",
            note=f"{len(texts)} texts, {chars} characters; estimate / cl100k = {estimate / counts['cl100k_base']:.2f}",
        )


def scale(table: c.Table, n: int, tmp: Path) -> None:
    """Keyword search over N synthetic CJK chunks, beside a LIKE scan for the 2-character pieces."""
    import numpy as np

    from locallens.domain import Chunk
    from locallens.storage import DocumentRecord
    from locallens.storage import sqlite as store_module
    from locallens.storage.sqlite import Store

    if not hasattr(store_module, "NO_SPACE_RUN"):
        table.add("scale", "skipped", note="no trigram index in the code under test")
        return
    sentences = [
        line.strip()
        for path in sorted(DOCS.glob("*.md"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    rng = random.Random(0)
    db = tmp / "scale.db"
    with Store(db) as store:
        brain = store.create_brain("scale", "synthetic", 4, "paragraph", 220, 0)
        per_doc = 50
        for d in range(n // per_doc):
            chunks = [
                Chunk(
                    id=f"s{d}-{i}",
                    brain="scale",
                    relative_path=f"doc{d}.md",
                    chunk_index=i,
                    content="".join(rng.sample(sentences, 6)),
                    checksum=f"s{d}",
                )
                for i in range(per_doc)
            ]
            store.write_document(
                brain,
                DocumentRecord(
                    root="/synthetic",
                    relative_path=f"doc{d}.md",
                    size=1,
                    mtime_ns=1,
                    checksum=f"s{d}",
                    chunks=chunks,
                    vectors=np.ones((per_doc, 4), dtype=np.float32),
                ),
            )
        ((text_bytes,),) = store.execute("SELECT sum(length(CAST(content AS BLOB))) FROM chunks")
        questions = [q["question"] for q in load_questions()]
        keyword, like = [], []
        for q in questions:
            started = time.perf_counter()
            store.keyword_search(brain, q, 50)
            keyword.append((time.perf_counter() - started) * 1000)
            pieces = list(
                dict.fromkeys(
                    run[i : i + 2] for run in store_module.NO_SPACE_RUN.findall(q) for i in range(len(run) - 1)
                )
            )
            score = " + ".join("(instr(content, ?) > 0)" for _ in pieces)
            started = time.perf_counter()
            store.execute(
                f"SELECT id FROM chunks WHERE brain_id = ? AND ({score}) > 0 ORDER BY {score} DESC LIMIT 50",
                [brain.id, *pieces, *pieces],
            )
            like.append((time.perf_counter() - started) * 1000)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        trigram_pages = (
            sum(r[0] for r in store.execute("SELECT count(*) FROM dbstat WHERE name LIKE 'chunks_trigram%'"))
            if _has_dbstat(store)
            else None
        )
        ((page_size,),) = store.execute("PRAGMA page_size")
    table.section(f"scale: {n} synthetic CJK chunks ({text_bytes / 1e6:.1f} MB of text)")
    table.add(
        "keyword search (words + trigrams), median",
        c.fmt_ms(statistics.median(keyword)),
        note=f"max {c.fmt_ms(max(keyword))}",
    )
    table.add(
        "LIKE scan of the 2-character pieces, median",
        c.fmt_ms(statistics.median(like)),
        note=f"max {c.fmt_ms(max(like))}; no BM25, scores = pieces matched",
    )
    if trigram_pages is not None:
        table.add(
            "trigram index size",
            c.fmt_bytes(trigram_pages * page_size),
            note=f"{trigram_pages * page_size / text_bytes:.1f} bytes per byte of UTF-8 text",
        )


def _has_dbstat(store) -> bool:  # type: ignore[no-untyped-def]
    try:
        store.execute("SELECT 1 FROM dbstat LIMIT 1")
        return True
    except Exception:  # SQLite built without the dbstat table
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the scale measurement")
    parser.add_argument("--scale", type=int, default=20_000, help="synthetic chunks for the timing (0: skip)")
    parser.add_argument("--db", type=Path, help="reuse this index of the corpus (built when missing)")
    args = parser.parse_args()
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("CJK: retrieval, trimming, token counts", args.quick)
    from locallens.embedding import load_embedder
    from locallens.indexer import IndexRequest, index
    from locallens.storage.sqlite import Store

    questions = load_questions()
    table = c.Table(f"CJK corpus: {len(list(DOCS.glob('*.md')))} documents, {len(questions)} questions")
    with c.bench_dir("cjk") as tmp:
        db = args.db or tmp / "index.db"
        if not db.exists():
            c.note("indexing the corpus with the default model")
            index(IndexRequest(paths=[DOCS], db=db, brain="default"))
        with Store(db, create=False) as store:
            brain = store.get_brain("default")
            embedder = load_embedder(brain.model)
            c.note(f"retrieval ({brain.model})")
            retrieval(table, store, brain, embedder, questions)
            c.note("trimming")
            lost = trimming(table, store, brain, embedder, questions)
            size = store.size_bytes()
        tokens(table, questions)
        table.section("database")
        table.add("index of the corpus", c.fmt_bytes(size), note=str(db) if args.db else "")
        if args.scale and not args.quick:
            c.note(f"scale: {args.scale} synthetic chunks")
            scale(table, args.scale, tmp)
    table.print()
    for question in lost:
        print(f"answer lost by trimming: {question}")
    c.print_end(started)


if __name__ == "__main__":
    main()

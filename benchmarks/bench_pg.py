"""PostgreSQL store benchmark: search at scale, index throughput, concurrent readers against SQLite.

    .venv/bin/python benchmarks/bench_pg.py [--quick] [--sizes 100000,500000] [--parts search,index,readers]
        [--queries 200] [--ef-search 10,20,40,100,200] [--noise 0.75] [--doc-chunks 200]
        [--index-runs 3] [--readers 8] [--reader-searches 100] [--url postgresql://...] [--out FILE]

PostgreSQL is started from the `pgserver` package (PostgreSQL with pgvector) in a temporary
folder and stopped at the end, unless `--url` names a server to use instead (its database needs
pgvector; the benchmark's brains, all named `bench-pg-...`, are deleted from it afterwards).

(a) search: for each size, synthetic 384-d chunks (normalised vectors around SYNTH_CENTROIDS
    random centroids, so that HNSW has clusters to work with; queries drawn the same way) are
    written through each store's own `create_brain` + `write_document`, documents of
    --doc-chunks chunks with text of real words, so both hold what `index` writes. Then, for
    --queries queries, `knn(brain, q, 10)` on: PostgreSQL HNSW at each --ef-search value
    (`pgstore.HNSW_EF_SEARCH` set for the call), PostgreSQL exact (`exact=True`) and the SQLite
    store (always exact): median and p95 latency, recall@10 against NumPy's exact top 10. The
    configurations take turns query by query, so a change of load hits them all alike. Also:
    load time per store (for PostgreSQL: documents, then `touch_brain`, which builds the HNSW
    index), a filtered search (path glob over 10 documents: exact on both stores), searches for
    k = 50 and 100 (`hybrid` asks for 50), which must return k hits, and last a rebuild of the
    HNSW index with maintenance_work_mem large enough for the graph (HNSW_BUILD_BYTES a vector;
    the server's default is often 64MB, which `touch_brain` builds with). Keyword search too:
    `keyword_scores` (BM25 on both stores) for the questions of tests/data/questions.txt, as deep
    as `ask` asks, on PostgreSQL with its brain statistics kept and recounted, and on SQLite.
(b) index: `locallens index sample_docs/` into a fresh SQLite file and a fresh PostgreSQL brain,
    alternated, --index-runs each: CLI wall time (model load included), median and ratio.
(c) readers: --readers processes, each making --reader-searches searches (open the store,
    find the brain, `hybrid_search`: knn + keyword + hits_by_id, as `search` and `serve` do per
    request) while `locallens index sample_docs/ --rebuild` rebuilds the same brain, which
    swaps the new brain in at its end. The searches are spread over the index run's expected
    length (its median in (b)), so they cover its writes and the swap. Errors (target 0),
    searches that found nothing, p95 latency; SQLite the same way for comparison.

The machine is shared: every figure is printed with the load average when it was measured;
compare ratios from one run rather than absolute times across runs.
Cost: with the defaults, loading 500k chunks into both stores takes tens of minutes (the
progress lines give the rate and a projection); (b) is 6 index runs, each a model load plus
147 chunks embedded; (c) 2 index runs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import random
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import _common as c
import numpy as np

DIM = 384
SYNTH_CENTROIDS = 1000
# Each vector is a centroid plus Gaussian noise of this norm (relative to the unit centroid),
# then normalised: a point is at cosine ~0.8 of its centroid, ~0.64 of its cluster's other points
# (`--noise`: larger spreads the clusters, and the true neighbours are harder to tell apart).
SYNTH_NOISE = 0.75
SYNTH_WORDS = 100  # words of text per synthetic chunk, drawn by frequency from sample_docs/
K = 10
WARMUP_QUERIES = 5
FILTER_DOCS = 10  # the filtered search's glob matches this many documents
FILTER_QUERIES = 50
DEEP_KS = (50, 100)
# Memory per vector for pgvector to build an HNSW graph of 384-d vectors in memory: it reported
# the graph no longer fitting 64MB after 28,365 vectors (~2.4 KB each); with room to spare.
HNSW_BUILD_BYTES = DIM * 4 + 1536
DEFAULT_SIZES = "100000,500000"
DEFAULT_EF = "10,20,40,100,200"  # 10 and 20 show where recall starts to fall
BENCH_DB = "locallens_bench"  # the database created on the benchmark's own server
PREFIX = "bench-pg-"  # every brain this benchmark creates


# ------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------


@dataclass
class Output:
    table: c.Table
    out: Path | None
    curve: list[str] = field(default_factory=list)  # the ef_search lines, printed apart

    def emit(self, record: dict[str, Any]) -> None:
        """Append one measurement as a JSON line to --out, with the load when it was measured."""
        if self.out is None:
            return
        record = {"time": time.strftime("%Y-%m-%d %H:%M:%S"), "load": c.load_average(), **record}
        with self.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


def load_now() -> str:
    """The 1-minute load average, for a note."""
    return c.load_average().split(" ")[0]


def fmt_lat(values_ms: Sequence[float]) -> str:
    return f"p50 {c.fmt_ms(c.median(values_ms))}, p95 {c.fmt_ms(c.percentile(values_ms, 95))}"


# ------------------------------------------------------------------------------------------
# PostgreSQL
# ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def postgres(url: str | None, tmp: Path) -> Iterator[str]:
    """The URL of the server to measure: `url`, or a pgserver started in `tmp` (stopped after)."""
    if url:
        yield url
        return
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR on a headless machine
        import pgserver

    c.note("starting PostgreSQL (pgserver) in a temporary folder")
    server = pgserver.get_server(tmp / "pgdata", cleanup_mode="stop")
    try:
        base = server.get_uri()
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {BENCH_DB}")
        yield urlunsplit(urlsplit(base)._replace(path=f"/{BENCH_DB}"))
    finally:
        server.cleanup()


def server_settings(url: str) -> str:
    import psycopg

    names = ("shared_buffers", "work_mem", "maintenance_work_mem", "max_parallel_workers_per_gather")
    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        vector = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        shown = [f"{n} {conn.execute(f'SHOW {n}').fetchone()[0]}" for n in names]  # type: ignore[index]
    return f"PostgreSQL {version[0] if version else '?'}, pgvector {vector[0] if vector else 'missing'}; " + ", ".join(
        shown
    )


def vacuum_analyze(url: str) -> float:
    """VACUUM ANALYZE of the locallens tables (what autovacuum does soon after a big index run),
    so that it does not run in the middle of the timed searches; its seconds."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        seconds, _ = c.timed(lambda: conn.execute("VACUUM ANALYZE"))
    return seconds


def hnsw_index(url: str, brain: Any) -> str | None:
    """The qualified name of the HNSW index on the brain's vector table, if it has one."""
    import psycopg

    from locallens.storage import postgres as pgstore

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT schemaname || '.' || indexname FROM pg_indexes WHERE schemaname = %s AND tablename = %s"
            " AND indexdef ILIKE '%%USING hnsw%%'",
            (pgstore.SCHEMA, brain.vec_table),
        ).fetchone()
    return str(row[0]) if row else None


def reindex_seconds(url: str, index: str, memory: str | None) -> tuple[float, list[str]]:
    """Seconds to build the HNSW index `index` again in one go (REINDEX, same definition), with
    `maintenance_work_mem` set to `memory` for it (None: the server's own); and pgvector's notices.

    Shows what the index build at the end of a run costs with more memory than the server's
    default gives it.
    """
    import psycopg

    notices: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
        if memory is not None:
            conn.execute(f"SET maintenance_work_mem = '{memory}'")
        seconds, _ = c.timed(lambda: conn.execute(f"REINDEX INDEX {index}"))
    return seconds, notices


def pg_location(url: str, *, exact: bool = False) -> Any:
    from locallens.storage import PostgresURL

    return PostgresURL(url, exact=exact)


def drop_bench_brains(url: str) -> None:
    """Delete the brains this benchmark made on a server that is not its own."""
    from locallens.storage import open_store

    with contextlib.suppress(Exception), open_store(pg_location(url)) as store:
        for brain in store.brains():
            if brain.name.startswith(PREFIX) or brain.name.startswith(f".{PREFIX}"):
                store.delete_brain(brain)


# ------------------------------------------------------------------------------------------
# (a) search at scale
# ------------------------------------------------------------------------------------------


def vocabulary() -> tuple[list[str], np.ndarray]:
    """The words of sample_docs/ and their frequencies: synthetic chunk text reads like real text
    to the keyword indexes (common words common, rare words rare)."""
    counts: dict[str, int] = {}
    for path in sorted(c.SAMPLE_DOCS.rglob("*")):
        if path.suffix in (".md", ".txt", ".rst"):
            for word in re.findall(r"\w+", path.read_text(encoding="utf-8").lower()):
                counts[word] = counts.get(word, 0) + 1
    words = sorted(counts)
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def draw_vectors(rng: np.random.Generator, centroids: np.ndarray, n: int, spread: float) -> np.ndarray:
    """`n` unit vectors, each a centroid drawn at random plus noise of norm ~`spread`."""
    out = np.empty((n, centroids.shape[1]), dtype=np.float32)
    for start in range(0, n, 50_000):
        labels = rng.integers(0, len(centroids), min(50_000, n - start))
        noise = rng.standard_normal((len(labels), centroids.shape[1]), dtype=np.float32)
        block = centroids[labels] + noise * np.float32(spread / np.sqrt(centroids.shape[1]))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + len(labels)] = block
    return out


def exact_top(data: np.ndarray, queries: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[list[int]]:
    """Per query, the indexes of its k most similar rows of `data` (among `rows` if given)."""
    candidates = np.arange(len(data)) if rows is None else rows
    best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, len(candidates), 100_000):
        ids = candidates[start : start + 100_000]
        scores = queries @ data[ids].T
        scores = np.concatenate([best_scores, scores], axis=1)
        all_ids = np.concatenate([best_ids, np.broadcast_to(ids, (len(queries), len(ids)))], axis=1)
        keep = np.argpartition(-scores, min(k, scores.shape[1] - 1), axis=1)[:, :k]
        best_scores = np.take_along_axis(scores, keep, axis=1)
        best_ids = np.take_along_axis(all_ids, keep, axis=1)
    return [list(map(int, row)) for row in best_ids]


def doc_path(doc: int) -> str:
    return f"synthetic/doc-{doc:05d}.txt"


def load_store(
    store: Any,
    brain_name: str,
    vectors: np.ndarray,
    doc_chunks: int,
    words: list[str],
    freq: np.ndarray,
    what: str,
) -> tuple[Any, float, float, list[str]]:
    """Write `vectors` as documents of `doc_chunks` chunks through the store, then end the run as
    `index` does (`touch_brain`: the PostgreSQL store builds its HNSW index there).

    (brain, seconds writing documents, seconds in touch_brain, the server's notices meanwhile).
    """
    from locallens.domain import Chunk
    from locallens.storage import DocumentRecord

    notices: list[str] = []
    conn = getattr(store, "conn", None)  # PostgreSQL: pgvector reports a build short of memory
    if hasattr(conn, "add_notice_handler"):
        conn.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
    started = time.perf_counter()
    brain = store.create_brain(brain_name, "synthetic-384", DIM, "paragraph", 220, 40)
    rng = np.random.default_rng(7)  # the same text in both stores
    docs = (len(vectors) + doc_chunks - 1) // doc_chunks
    next_report = started + 30
    for doc in range(docs):
        block = vectors[doc * doc_chunks : (doc + 1) * doc_chunks]
        drawn = rng.choice(len(words), size=(len(block), SYNTH_WORDS), p=freq)
        texts = [
            f"Synthetic chunk {j} of document {doc}. " + " ".join(words[w] for w in row) for j, row in enumerate(drawn)
        ]
        checksum = hashlib.sha256(f"synthetic document {doc}".encode()).hexdigest()
        path = doc_path(doc)
        chunks = [Chunk(f"{checksum[:12]}-{j}", brain.name, path, j, text, checksum) for j, text in enumerate(texts)]
        store.write_document(
            brain,
            DocumentRecord(
                root="/synthetic",
                relative_path=path,
                size=sum(len(t) for t in texts),
                mtime_ns=0,
                checksum=checksum,
                chunks=chunks,
                vectors=block,
            ),
        )
        now = time.perf_counter()
        if now >= next_report and doc + 1 < docs:
            done = (doc + 1) / docs
            rate = (doc + 1) * doc_chunks / (now - started)
            c.note(
                f"{what}: {(doc + 1) * doc_chunks:,} chunks in {now - started:.0f} s ({rate:,.0f}/s),"
                f" about {(now - started) / done * (1 - done) / 60:.1f} min to go (load {load_now()})"
            )
            next_report = now + 60
    written = time.perf_counter()
    c.note(f"{what}: documents written in {written - started:.0f} s; touch_brain (load {load_now()})")
    store.touch_brain(brain, ["/synthetic"])
    return brain, written - started, time.perf_counter() - written, notices


@dataclass
class SearchConfig:
    label: str
    store: Any
    brain: Any
    ef_search: int | None = None  # PostgreSQL HNSW: the candidate list size for this config
    times_ms: list[float] = field(default_factory=list)
    recalls: list[float] = field(default_factory=list)
    short: int = 0  # searches that returned fewer than k hits


def global_id(hit: Any, doc_chunks: int) -> int:
    return int(hit.chunk.relative_path[-9:-4]) * doc_chunks + hit.chunk.chunk_index


def run_search(
    config: SearchConfig, query: np.ndarray, k: int, path_glob: str | None = None
) -> tuple[float, list[Any]]:
    """(milliseconds, hits) of one knn on `config`, with its ef_search in force."""
    from locallens.storage import postgres as pgstore

    previous = pgstore.HNSW_EF_SEARCH
    if config.ef_search is not None:
        pgstore.HNSW_EF_SEARCH = config.ef_search
    try:
        start = time.perf_counter()
        hits = config.store.knn(config.brain, query, k, path_glob=path_glob)
        return (time.perf_counter() - start) * 1000, hits
    finally:
        pgstore.HNSW_EF_SEARCH = previous


def interleaved(
    configs: list[SearchConfig],
    warm: np.ndarray,
    queries: np.ndarray,
    truth: list[list[int]],
    k: int,
    doc_chunks: int,
    path_glob: str | None = None,
) -> None:
    """Each query on every configuration in turn (the order rotating), timings and recall kept;
    the `warm` queries first, untimed (connections, caches)."""
    for config in configs:
        for q in warm:
            run_search(config, q, k, path_glob)
    for i, (q, expected) in enumerate(zip(queries, truth)):
        for config in configs[i % len(configs) :] + configs[: i % len(configs)]:
            ms, hits = run_search(config, q, k, path_glob)
            config.times_ms.append(ms)
            got = {global_id(h, doc_chunks) for h in hits}
            config.recalls.append(len(got & set(expected)) / k)
            config.short += len(hits) < k


def size_check_ms(store: Any, brain: Any, repeats: int = 50) -> float:
    """Median ms of the brain-size check PostgresStore.knn makes before each indexed search."""
    from locallens.storage import postgres as pgstore

    sql = f"SELECT count(*) FROM (SELECT 1 FROM {pgstore.vec_table(brain)} LIMIT %s) s"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        store.conn.execute(sql, (pgstore.EXACT_BELOW_VECTORS,)).fetchall()
        times.append((time.perf_counter() - start) * 1000)
    return c.median(times)


def bench_keywords(out: Output, label: str, pg: Any, pg_brain: Any, sq: Any, sq_brain: Any) -> None:
    """Keyword search (`keyword_scores`, as deep as `ask` searches: HYBRID_CANDIDATES) with the questions of
    tests/data/questions.txt on both stores, taking turns: latency, how many hits, and the top 10
    both stores agree on (both rank by BM25, so they should mostly agree). PostgreSQL twice: with
    its brain statistics kept and the question's term counts not (a running server asked a new
    question), and with both recounted (the first search after a write, or after
    KEYWORD_STATS_TTL_S)."""
    from locallens.retrieval import HYBRID_CANDIDATES as KEYWORD_DEPTH

    questions = [q for q in c.QUESTIONS.read_text(encoding="utf-8").splitlines() if q.strip()]
    times: dict[str, list[float]] = {
        "PostgreSQL, a new question": [],
        "PostgreSQL, statistics recounted": [],
        "SQLite": [],
    }
    hits: dict[str, list[int]] = {name: [] for name in times}
    agree: list[float] = []
    for q in questions[:WARMUP_QUERIES]:  # untimed: connections, caches
        pg.keyword_scores(pg_brain, q, KEYWORD_DEPTH)
        sq.keyword_scores(sq_brain, q, KEYWORD_DEPTH)
    load_before = load_now()
    for i, q in enumerate(questions):
        tops: dict[str, list[int]] = {}
        order = list(times)
        for name in order[i % len(order) :] + order[: i % len(order)]:
            store, brain = (sq, sq_brain) if name == "SQLite" else (pg, pg_brain)
            if name == "PostgreSQL, statistics recounted":
                pg.keywords.forget()
            elif name != "SQLite":
                pg.keywords._term_cache.clear()
            start = time.perf_counter()
            scored = store.keyword_scores(brain, q, KEYWORD_DEPTH)
            times[name].append((time.perf_counter() - start) * 1000)
            hits[name].append(len(scored))
            tops[name] = [chunk_id for chunk_id, _ in scored[:K]]
        pg_paths = {store_path(pg, i) for i in tops["PostgreSQL, a new question"]}
        sq_paths = {store_path(sq, i) for i in tops["SQLite"]}
        if sq_paths or pg_paths:
            agree.append(len(pg_paths & sq_paths) / max(len(pg_paths), len(sq_paths)))
    sqlite_p50 = c.median(times["SQLite"])
    for name, values in times.items():
        out.table.add(
            f"{label}: keywords, {name}",
            fmt_lat(values),
            note=f"{len(values)} questions, {KEYWORD_DEPTH} deep; median {c.median(hits[name]):.0f} hits;"
            f" {c.median(values) / sqlite_p50:.2f}x SQLite p50; load {load_before} -> {load_now()}",
        )
        out.emit(
            {
                "part": "keywords",
                "size": label,
                "config": name,
                "p50_ms": c.median(values),
                "p95_ms": c.percentile(values, 95),
                "hits": c.median(hits[name]),
            }
        )
    out.table.add(
        f"{label}: keywords, top {K} shared by both stores",
        f"{float(np.mean(agree)):.2f}" if agree else "-",
        note="chunks (as document, index) in both stores' first 10, as a share; BM25 on both, but the"
        " stores tokenise and stem differently and PostgreSQL drops common words",
    )


def store_path(store: Any, chunk_pk: int) -> tuple[str, int]:
    """(relative path, chunk index) of a chunk by its row id: the same chunk in either store."""
    from locallens.storage.postgres import SCHEMA, PostgresStore

    if isinstance(store, PostgresStore):
        sql = f"SELECT relative_path, chunk_index FROM {SCHEMA}.chunks WHERE id = %s"
    else:
        sql = "SELECT relative_path, chunk_index FROM chunks WHERE id = ?"
    ((path, index),) = store.execute(sql, (chunk_pk,))
    return str(path), int(index)


def bench_search(args: argparse.Namespace, url: str, tmp: Path, out: Output) -> None:
    from locallens.storage import open_store
    from locallens.storage import postgres as pgstore
    from locallens.storage.sqlite import Store

    words, freq = vocabulary()
    efs = [int(x) for x in args.ef_search.split(",") if x.strip()]
    for size in [int(x) for x in args.sizes.split(",") if x.strip()]:
        label = f"{size // 1000}k" if size % 1000 == 0 else str(size)
        out.table.section(f"(a) search, {size:,} chunks of {DIM} dimensions")
        c.note(
            f"{label}: drawing {size:,} vectors around {SYNTH_CENTROIDS} centroids (noise {args.noise:g}),"
            f" {args.queries} queries"
        )
        rng = np.random.default_rng(20250 + size)
        centroids = rng.standard_normal((SYNTH_CENTROIDS, DIM), dtype=np.float32)
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
        data = draw_vectors(rng, centroids, size, args.noise)
        queries = draw_vectors(rng, centroids, args.queries + WARMUP_QUERIES, args.noise)
        warm, timed_q = queries[:WARMUP_QUERIES], queries[WARMUP_QUERIES:]
        truth = exact_top(data, timed_q, K)
        sqlite_path = tmp / f"synthetic-{size}.db"
        brain_name = f"{PREFIX}synthetic-{size}"
        with Store(sqlite_path, create=True) as sq, open_store(pg_location(url), create=True) as pg:
            c.note(f"{label}: loading the SQLite store (write_document, {args.doc_chunks} chunks a document)")
            sq_brain, sq_write, sq_touch, _ = load_store(
                sq, brain_name, data, args.doc_chunks, words, freq, f"{label} SQLite"
            )
            sq_load = sq_write + sq_touch
            sq_load_note = f"{size / sq_load:,.0f} chunks/s (load {load_now()}); file {c.fmt_bytes(sq.size_bytes())}"
            c.note(f"{label}: SQLite loaded in {sq_load:.0f} s; loading PostgreSQL")
            pg_brain, pg_write, pg_touch, notices = load_store(
                pg, brain_name, data, args.doc_chunks, words, freq, f"{label} PostgreSQL"
            )
            pg_load = pg_write + pg_touch
            hnsw = hnsw_index(url, pg_brain)
            pg_load_note = (
                f"{size / pg_load:,.0f} chunks/s (load {load_now()}); documents {pg_write:.1f} s +"
                f" touch_brain {pg_touch:.1f} s (HNSW index {hnsw or 'NOT BUILT'}"
                + (f"; pgvector: {notices[0]}" if notices else "")
                + ")"
            )
            c.note(f"{label}: PostgreSQL loaded in {pg_load:.0f} s; VACUUM ANALYZE")
            vac = vacuum_analyze(url)
            pg_load_note += f"; tables {c.fmt_bytes(pg.size_bytes())}; then VACUUM ANALYZE {vac:.1f} s"
            out.table.add(f"{label}: load, SQLite", c.fmt_s(sq_load), note=sq_load_note)
            out.table.add(
                f"{label}: load, PostgreSQL",
                c.fmt_s(pg_load),
                note=pg_load_note + f"; {pg_load / sq_load:.2f}x SQLite",
            )
            out.emit(
                {
                    "part": "load",
                    "size": size,
                    "sqlite_s": sq_load,
                    "postgres_s": pg_load,
                    "postgres_documents_s": pg_write,
                    "postgres_touch_brain_s": pg_touch,
                    "hnsw_index": hnsw,
                    "notices": notices,
                    "vacuum_s": vac,
                }
            )

            with open_store(pg_location(url, exact=True)) as pg_exact:
                configs = [SearchConfig(f"PostgreSQL HNSW ef_search={ef}", pg, pg_brain, ef) for ef in efs]
                configs += [
                    SearchConfig("PostgreSQL exact", pg_exact, pg_exact.get_brain(brain_name)),
                    SearchConfig("SQLite (exact)", sq, sq_brain),
                ]
                c.note(f"{label}: {len(timed_q)} queries x {len(configs)} configurations, taking turns")
                load_before = load_now()
                interleaved(configs, warm, timed_q, truth, K, args.doc_chunks)
                load_note = f"load {load_before} -> {load_now()}"
                sqlite_p50 = c.median(configs[-1].times_ms)
                for config in configs:
                    times = config.times_ms
                    recall = float(np.mean(config.recalls))
                    out.table.add(
                        f"{label}: {config.label}",
                        fmt_lat(times),
                        note=f"recall@{K} {recall:.3f}; {c.median(times) / sqlite_p50:.2f}x SQLite p50"
                        + (f"; {config.short} searches short of {K}" if config.short else "")
                        + ("; NO HNSW INDEX: exact scans" if config.ef_search is not None and hnsw is None else "")
                        + f"; {load_note}",
                    )
                    out.emit(
                        {
                            "part": "search",
                            "size": size,
                            "config": config.label,
                            "ef_search": config.ef_search,
                            "p50_ms": c.median(times),
                            "p95_ms": c.percentile(times, 95),
                            "recall": recall,
                            "short": config.short,
                            "queries": len(times),
                        }
                    )
                    if config.ef_search is not None:
                        out.curve.append(
                            f"| {label} | {config.ef_search} | {recall:.3f} | {c.median(times):.1f} |"
                            f" {c.percentile(times, 95):.1f} | {load_note} |"
                        )
                check_ms = size_check_ms(pg, pg_brain)
                out.table.add(
                    f"{label}: PostgreSQL size check per search",
                    c.fmt_ms(check_ms),
                    note=f"count(*) up to EXACT_BELOW_VECTORS={pgstore.EXACT_BELOW_VECTORS:,} before each indexed"
                    " search, included in the HNSW figures",
                )

                # Deeper searches: HNSW returns at most ef_search rows, the store must make up for it.
                deep_q = timed_q[: min(20, len(timed_q))]
                for k in DEEP_KS:
                    deep_truth = exact_top(data, deep_q, k)
                    deep = [
                        SearchConfig(
                            f"PostgreSQL HNSW, ef_search max({pgstore.HNSW_EF_SEARCH}, k)",
                            pg,
                            pg_brain,
                        ),
                        SearchConfig("SQLite (exact)", sq, sq_brain),
                    ]
                    interleaved(deep, warm, deep_q, deep_truth, k, args.doc_chunks)
                    for config in deep:
                        times = config.times_ms
                        recall = float(np.mean(config.recalls))
                        out.table.add(
                            f"{label}: k={k}, {config.label}",
                            fmt_lat(times),
                            f"{k} hits",
                            config.short == 0,
                            note=f"recall@{k} {recall:.3f}; {config.short} of {len(deep_q)} searches short;"
                            f" {len(times)} queries; load {load_now()}",
                        )
                        out.emit(
                            {
                                "part": "deep",
                                "size": size,
                                "k": k,
                                "config": config.label,
                                "p50_ms": c.median(times),
                                "recall": recall,
                                "short": config.short,
                            }
                        )

                # A path filter: exact on both stores.
                pattern = "synthetic/doc-" + "0" * (5 - len(str(FILTER_DOCS - 1))) + "*"
                rows = np.arange(min(FILTER_DOCS * args.doc_chunks, size))
                filt_q = timed_q[:FILTER_QUERIES]
                filt_truth = exact_top(data, filt_q, K, rows)
                filtered = [
                    SearchConfig("PostgreSQL", pg, pg_brain),
                    SearchConfig("SQLite", sq, sq_brain),
                ]
                interleaved(filtered, warm, filt_q, filt_truth, K, args.doc_chunks, pattern)
                for config in filtered:
                    times = config.times_ms
                    recall = float(np.mean(config.recalls))
                    out.table.add(
                        f"{label}: filtered ({pattern}), {config.label}",
                        fmt_lat(times),
                        note=f"{len(rows):,} chunks match; recall@{K} {recall:.3f}; {config.short} short;"
                        f" load {load_now()}",
                    )
                    out.emit(
                        {
                            "part": "filtered",
                            "size": size,
                            "config": config.label,
                            "p50_ms": c.median(times),
                            "p95_ms": c.percentile(times, 95),
                            "recall": recall,
                        }
                    )

                bench_keywords(out, label, pg, pg_brain, sq, sq_brain)

            # Last, as it rebuilds the graph the searches above walked.
            if hnsw is not None:
                memory = f"{max(64, -(-size * HNSW_BUILD_BYTES // 2**20))}MB"
                c.note(f"{label}: REINDEX of the HNSW index with maintenance_work_mem {memory}")
                seconds, reindex_notices = reindex_seconds(url, hnsw, memory)
                out.table.add(
                    f"{label}: HNSW index rebuilt, maintenance_work_mem {memory}",
                    c.fmt_s(seconds),
                    note=f"REINDEX; {seconds / pg_touch:.2f}x the build in touch_brain (server's"
                    f" maintenance_work_mem); load {load_now()}"
                    + (f"; pgvector: {reindex_notices[0]}" if reindex_notices else ""),
                )
                out.emit(
                    {"part": "reindex", "size": size, "memory": memory, "seconds": seconds, "notices": reindex_notices}
                )
            c.note(f"{label}: deleting the brains")
            pg.delete_brain(pg_brain)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
        del data


# ------------------------------------------------------------------------------------------
# (b) index throughput
# ------------------------------------------------------------------------------------------


def locallens_exe() -> str:
    """The `locallens` entry point of this interpreter's environment."""
    exe = Path(sys.executable).with_name("locallens")
    return str(exe) if exe.exists() else "locallens"


def index_command(db: str, brain: str, *extra: str) -> list[str]:
    return [locallens_exe(), "index", str(c.SAMPLE_DOCS), "--db", db, "--brain", brain, "--json", *extra]


@dataclass
class IndexRuns:
    sqlite_db: str
    pg_url: str
    brain: str
    sqlite_s: list[float]
    pg_s: list[float]


def bench_index(args: argparse.Namespace, url: str, tmp: Path, out: Output) -> IndexRuns:
    out.table.section(f"(b) locallens index sample_docs/, CLI, fresh index, {args.index_runs} runs each")
    seconds: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    inner: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    rss: dict[str, list[int]] = {"sqlite": [], "postgres": []}
    loads: list[str] = []
    chunks = 0
    brain = ""
    for run in range(args.index_runs):
        brain = f"{PREFIX}index-{run}"
        order = ("sqlite", "postgres") if run % 2 == 0 else ("postgres", "sqlite")
        for kind in order:
            db = str(tmp / f"index-{run}.db") if kind == "sqlite" else url
            c.note(f"index run {run + 1}/{args.index_runs}: {kind} (load {load_now()})")
            loads.append(load_now())
            child = c.run_child(index_command(db, brain))
            c.check_child(child, f"locallens index ({kind})")
            report = json.loads(child.stdout)
            chunks = report["chunks"]["total"]
            seconds[kind].append(child.seconds)
            inner[kind].append(report["seconds"])
            rss[kind].append(child.max_rss_bytes)
            out.emit(
                {"part": "index", "store": kind, "run": run, "wall_s": child.seconds, "index_s": report["seconds"]}
            )
    med = {kind: c.median(values) for kind, values in seconds.items()}
    for kind, name in (("sqlite", "SQLite file"), ("postgres", "PostgreSQL")):
        out.table.add(
            f"index, {name}",
            f"median {c.fmt_s(med[kind])}",
            note=f"runs {', '.join(f'{s:.1f}' for s in seconds[kind])} s; index() inside: median"
            f" {c.median(inner[kind]):.1f} s; {chunks} chunks; peak RSS {c.fmt_bytes(max(rss[kind]))}",
        )
    paired = [p / s for p, s in zip(seconds["postgres"], seconds["sqlite"])]
    out.table.add(
        "index, PostgreSQL / SQLite",
        f"{med['postgres'] / med['sqlite']:.2f}x",
        note=f"ratio of medians; per run pair {', '.join(f'{r:.2f}' for r in paired)}; load at starts"
        f" {', '.join(loads)}",
    )
    last = args.index_runs - 1
    return IndexRuns(str(tmp / f"index-{last}.db"), url, brain, seconds["sqlite"], seconds["postgres"])


# ------------------------------------------------------------------------------------------
# (c) concurrent readers
# ------------------------------------------------------------------------------------------


def reader(
    db: str,
    brain_name: str,
    queries: list[tuple[str, list[float]]],
    searches: int,
    interval: float,
    offset: float,
    seed: int,
    ready: Any,
    go: Any,
    results: Any,
) -> None:
    """One reader process: `searches` searches, one every `interval` s once `go` is set."""
    from locallens.retrieval import hybrid_search
    from locallens.storage import open_store, parse_db

    location = parse_db(db)
    vectors = [np.asarray(v, dtype=np.float32) for _, v in queries]
    rng = random.Random(seed)
    record: dict[str, Any] = {"total_ms": [], "open_ms": [], "stamps": [], "errors": [], "empty": 0}
    with open_store(location) as store:  # imports and a first connection before the clock starts
        store.get_brain(brain_name)
    ready.put(seed)
    go.wait()
    start = time.perf_counter() + offset
    for i in range(searches):
        delay = start + i * interval - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        n = rng.randrange(len(queries))
        record["stamps"].append(time.time())
        t0 = time.perf_counter()
        try:
            with open_store(location) as store:
                t1 = time.perf_counter()
                brain = store.get_brain(brain_name)
                hits = hybrid_search(store, brain, queries[n][0], vectors[n], 5)
            record["empty"] += not hits
            record["open_ms"].append((t1 - t0) * 1000)
            record["total_ms"].append((time.perf_counter() - t0) * 1000)
        except Exception as exc:
            record["errors"].append(f"{type(exc).__name__}: {exc}")
    results.put(record)


def reader_queries(db: str, brain_name: str, n: int = 20) -> list[tuple[str, list[float]]]:
    """Questions for the keyword side; stored chunk vectors, slightly moved, for the vector side
    (no embedding model needed in the readers)."""
    from locallens.storage import open_store, parse_db

    questions = [q for q in c.QUESTIONS.read_text(encoding="utf-8").splitlines() if q.strip()]
    with open_store(parse_db(db)) as store:
        brain = store.get_brain(brain_name)
        stored = [np.atleast_2d(v)[0] for doc in store.export_documents(brain) for v in doc.vectors]
    rng = np.random.default_rng(11)
    picked = [stored[i] for i in rng.choice(len(stored), size=n, replace=len(stored) < n)]
    out = []
    for i, vector in enumerate(picked):
        moved = vector + rng.standard_normal(vector.shape).astype(np.float32) * np.float32(0.3 / np.sqrt(vector.size))
        out.append((questions[i % len(questions)], (moved / np.linalg.norm(moved)).tolist()))
    return out


def bench_readers(args: argparse.Namespace, url: str, tmp: Path, out: Output, runs: IndexRuns | None) -> None:
    out.table.section(
        f"(c) {args.readers} readers x {args.reader_searches} searches (open, get_brain, hybrid_search)"
        " during `index --rebuild` of the same brain"
    )
    if runs is None:
        brain = f"{PREFIX}readers"
        runs = IndexRuns(str(tmp / "readers.db"), url, brain, [], [])
        for kind, db in (("SQLite", runs.sqlite_db), ("PostgreSQL", url)):
            c.note(f"readers: indexing sample_docs/ into {kind} first (part (b) did not run)")
            c.check_child(c.run_child(index_command(db, brain)), f"locallens index ({kind})")
    ctx = multiprocessing.get_context("spawn")
    for kind, db, expected in (("SQLite", runs.sqlite_db, runs.sqlite_s), ("PostgreSQL", url, runs.pg_s)):
        queries = reader_queries(db, runs.brain)
        interval = c.median(expected) / args.reader_searches if expected else 0.0
        ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        procs = [
            ctx.Process(
                target=reader,
                args=(
                    db,
                    runs.brain,
                    queries,
                    args.reader_searches,
                    interval,
                    interval * i / args.readers,
                    i,
                    ready,
                    go,
                    results,
                ),
            )
            for i in range(args.readers)
        ]
        c.note(f"readers, {kind}: starting {args.readers} processes (one search every {interval:.2f} s each)")
        for proc in procs:
            proc.start()
        for _ in procs:
            ready.get(timeout=300)
        writer: dict[str, Any] = {}

        def write(db: str = db, writer: dict[str, Any] = writer) -> None:
            writer["start"] = time.time()
            writer["run"] = c.run_child(index_command(db, runs.brain, "--rebuild"))
            writer["end"] = time.time()

        load_before = load_now()
        thread = threading.Thread(target=write)
        thread.start()
        go.set()
        records = [results.get(timeout=3600) for _ in procs]
        for proc in procs:
            proc.join()
        thread.join()
        c.check_child(writer["run"], f"locallens index --rebuild ({kind}) during the readers")
        total = [ms for r in records for ms in r["total_ms"]]
        opening = [ms for r in records for ms in r["open_ms"]]
        errors = [e for r in records for e in r["errors"]]
        empty = sum(r["empty"] for r in records)
        during = sum(writer["start"] <= s <= writer["end"] for r in records for s in r["stamps"])
        searches = args.readers * args.reader_searches
        load_note = f"load {load_before} -> {load_now()}"
        out.table.add(
            f"readers, {kind}: errors",
            str(len(errors)),
            "0",
            not errors,
            note=(f"first: {sorted(set(errors))[:2]}; " if errors else "")
            + f"{during} of {searches} searches while the index run was running"
            f" ({writer['end'] - writer['start']:.0f} s); {empty} found nothing",
        )
        out.table.add(
            f"readers, {kind}: latency",
            fmt_lat(total),
            note=f"open + get_brain + hybrid_search(k=5); opening alone {fmt_lat(opening)}; max"
            f" {c.fmt_ms(max(total, default=float('nan')))}; {load_note}",
        )
        out.emit(
            {
                "part": "readers",
                "store": kind,
                "errors": len(errors),
                "error_samples": sorted(set(errors))[:5],
                "empty": empty,
                "searches": searches,
                "during_writer": during,
                "p50_ms": c.median(total),
                "p95_ms": c.percentile(total, 95),
                "open_p50_ms": c.median(opening),
                "writer_s": writer["end"] - writer["start"],
            }
        )


# ------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k chunks, 50 queries, 1 index run, 20 searches")
    parser.add_argument("--sizes", default=None, help=f"chunks per synthetic brain, comma-separated [{DEFAULT_SIZES}]")
    parser.add_argument("--parts", default="search,index,readers", help="which of search, index, readers to run")
    parser.add_argument("--queries", type=int, default=None, help="timed queries per configuration [200]")
    parser.add_argument("--ef-search", default=DEFAULT_EF, help=f"HNSW ef_search values to try [{DEFAULT_EF}]")
    parser.add_argument("--doc-chunks", type=int, default=200, help="chunks per synthetic document [200]")
    parser.add_argument(
        "--noise",
        type=float,
        default=SYNTH_NOISE,
        help=f"synthetic vectors' distance from their centroid [{SYNTH_NOISE}]",
    )
    parser.add_argument("--index-runs", type=int, default=None, help="index runs per store in (b) [3]")
    parser.add_argument("--readers", type=int, default=8, help="reader processes in (c) [8]")
    parser.add_argument("--reader-searches", type=int, default=None, help="searches per reader in (c) [100]")
    parser.add_argument("--url", default=None, help="use this PostgreSQL server instead of starting one")
    parser.add_argument("--out", type=Path, default=None, help="append results as JSON lines here")
    args = parser.parse_args()
    args.sizes = args.sizes or ("20000" if args.quick else DEFAULT_SIZES)
    args.queries = args.queries or (50 if args.quick else 200)
    args.index_runs = args.index_runs or (1 if args.quick else 3)
    args.reader_searches = args.reader_searches or (20 if args.quick else 100)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    unknown = parts - {"search", "index", "readers"}
    if unknown:
        raise SystemExit(f"--parts: unknown {', '.join(sorted(unknown))} (search, index, readers)")
    if args.queries < 1 or args.index_runs < 1 or args.readers < 1 or args.reader_searches < 1:
        raise SystemExit("--queries, --index-runs, --readers and --reader-searches must be at least 1")

    c.offline_env()
    started = time.perf_counter()
    c.print_machine("locallens PostgreSQL store benchmark", args.quick)
    out = Output(c.Table("PostgreSQL store benchmark (no targets but errors; compare within the run)"), args.out)
    with c.bench_dir("bench-pg") as tmp, postgres(args.url, tmp) as url:
        print(f"server    : {server_settings(url)}", flush=True)
        print(f"url       : {pg_location(url)}\n", flush=True)
        try:
            runs = None
            if "search" in parts:
                bench_search(args, url, tmp, out)
            if "index" in parts:
                runs = bench_index(args, url, tmp, out)
            if "readers" in parts:
                bench_readers(args, url, tmp, out, runs)
        finally:
            if args.url:
                drop_bench_brains(url)
    out.table.print()
    if out.curve:
        print("\nHNSW ef_search curve (k=10; latency includes the store's per-search overhead)")
        print("| size | ef_search | recall@10 | p50 ms | p95 ms | load |")
        print("|---|---|---|---|---|---|")
        print("\n".join(out.curve))
    c.print_end(started)


if __name__ == "__main__":
    main()

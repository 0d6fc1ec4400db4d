"""Trim benchmark: trimming overhead cold and cached, sentence splitter throughput.

    .venv/bin/python benchmarks/bench_trim.py [--quick]

1. Trim overhead for 5 real chunks of ~220 tokens (the 5 chunks of the sample_docs/ index whose
   tiktoken count is closest to 220, from different files; sample_docs/engineering/ only with
   --quick), window 1 as `ask --trim` uses:
   - split only (no embedding),
   - cold: the store's sentence cache emptied before every run, so every sentence is embedded
     (and written to the cache), through the store-backed `SentenceEncoder` that `retrieve` uses,
   - cold without a store (pure embedding, nothing cached), and the same with torch limited to
     one thread (a diagnostic: see `_one_thread`),
   - cached: the same call again, every sentence vector read from the store (target <= 30 ms),
   - `retrieve(..., trim=on)` for a real question, cache warm: the `trim_ms` it reports.
   Medians over 30 repeats, 5 for the cold ones (3 of each with --quick).
2. Splitter throughput in MB/s (UTF-8 bytes) of `split_sentences` on ~20 MB of markdown
   (sample_docs/ texts repeated; ~2 MB with --quick), per document and as one string, beside
   pysbd (PyPI, a widely used rule-based splitter) on a ~1 MB slice of the same corpus (pysbd is
   two orders of magnitude slower: the full 20 MB would take minutes), with `split_sentences` on
   that same slice for a like-for-like ratio.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import _common as c

if TYPE_CHECKING:
    from collections.abc import Callable

    from locallens.domain import Hit

QUERY = "How do we roll back a failed deploy to production?"
TARGET_TOKENS = 220
TARGET_CACHED_MS = 30.0
THRESHOLD = 0.38
WINDOW = 1  # what `ask --trim` uses (docs/behaviour.md#trimming)


def sample_texts() -> list[tuple[str, str]]:
    """(relative path, text) of every readable file of sample_docs/."""
    from locallens.domain import Skipped
    from locallens.readers import read_document
    from locallens.walk import walk

    out = []
    for item in walk(c.SAMPLE_DOCS):
        if isinstance(item, Skipped):
            continue
        doc = read_document(item)
        if not isinstance(doc, Skipped) and doc.text:
            out.append((doc.relative_path, doc.text))
    return out


# ------------------------------------------------------------------------------------------
# 1. trim overhead
# ------------------------------------------------------------------------------------------


def pick_chunks(db: Path) -> list[Hit]:
    """The 5 stored chunks closest to TARGET_TOKENS tokens, at most one per file."""
    from locallens.domain import Chunk, Hit
    from locallens.storage.sqlite import Store
    from locallens.tokens import count_tokens

    with Store(db, create=False) as store:
        brain = store.get_brain("default")
        rows = store.execute(
            "SELECT chunk_id, relative_path, chunk_index, content, checksum FROM chunks WHERE brain_id = ? ORDER BY id",
            (brain.id,),
        )
    ranked = sorted(rows, key=lambda r: (abs(count_tokens(r[3]) - TARGET_TOKENS), r[1], r[2]))
    picked, paths = [], set()
    for chunk_id, path, chunk_index, content, checksum in ranked:
        if path in paths:
            continue
        paths.add(path)
        picked.append(Hit(Chunk(chunk_id, "default", path, chunk_index, content, checksum), score=0.5))
        if len(picked) == 5:
            break
    return picked


def trim_overhead(table: c.Table, db: Path, repeats: int, cold_repeats: int) -> None:
    from locallens.embedding import load_embedder
    from locallens.retrieval import SentenceEncoder, TrimSettings, retrieve
    from locallens.sentences import split_chunk_prefix, split_sentences
    from locallens.storage.sqlite import Store
    from locallens.tokens import count_tokens
    from locallens.trim import trim_chunks_by_sentence

    hits = pick_chunks(db)
    embedder = load_embedder("auto")
    qvec = embedder.encode_query(QUERY)
    n_sentences = sum(len(split_sentences(split_chunk_prefix(h.content)[1])) for h in hits)
    tokens = [count_tokens(h.content) for h in hits]

    def trim(encoder: SentenceEncoder) -> float:
        start = time.perf_counter()
        trim_chunks_by_sentence(qvec, hits, THRESHOLD, 1, WINDOW, encode=encoder)
        return (time.perf_counter() - start) * 1000

    def split_only() -> float:
        start = time.perf_counter()
        for h in hits:
            split_sentences(split_chunk_prefix(h.content)[1])
        return (time.perf_counter() - start) * 1000

    embedder.encode(["warm-up sentence one.", "warm-up sentence two."])
    with Store(db, create=False) as store:
        c.note(f"trim cold ({cold_repeats} repeats) and cached ({repeats} repeats)")
        split_ms = [split_only() for _ in range(repeats)]
        cold_ms, cold_encoded = [], set()
        for _ in range(cold_repeats):
            store.execute("DELETE FROM sentence_cache")
            encoder = SentenceEncoder(embedder, store)
            cold_ms.append(trim(encoder))
            cold_encoded.add(encoder.encoded)
        bare_ms = [trim(SentenceEncoder(embedder, None)) for _ in range(cold_repeats)]
        one_thread_ms = _one_thread(lambda: [trim(SentenceEncoder(embedder, None)) for _ in range(cold_repeats)])
        trim(SentenceEncoder(embedder, store))  # fill the cache (it already is, from the cold runs)
        cached_ms, cached_encoded = [], set()
        for _ in range(repeats):
            encoder = SentenceEncoder(embedder, store)
            cached_ms.append(trim(encoder))
            cached_encoded.add(encoder.encoded)
        ((cached_rows,),) = store.execute("SELECT count(*) FROM sentence_cache")

        brain = store.get_brain("default")
        settings = TrimSettings(enabled=True, threshold=THRESHOLD, window=WINDOW)
        retrieve(store, brain, embedder, QUERY, 5, trim=settings)  # warms the cache for its hits
        pipeline_ms = [
            retrieve(store, brain, embedder, QUERY, 5, trim=settings).timings_ms["trim_ms"] for _ in range(repeats)
        ]

    cached = c.median(cached_ms)
    table.section(
        f"trim overhead: 5 chunks, {n_sentences} sentences, window {WINDOW} "
        f"(medians: cold of {cold_repeats}, the rest of {repeats})"
    )
    table.add(
        "chunks",
        f"{len(hits)}, {sum(tokens)} tokens",
        note=", ".join(
            f"{h.chunk.relative_path.split('/')[-1]}#{h.chunk.chunk_index} ({t})" for h, t in zip(hits, tokens)
        ),
    )
    table.add("split only", c.fmt_ms(c.median(split_ms)))
    table.add(
        "cold, store-backed encoder",
        c.fmt_ms(c.median(cold_ms)),
        note=f"p95 {c.percentile(cold_ms, 95):.1f} ms; {sorted(cold_encoded)} sentences embedded per run, "
        "then written to the cache",
    )
    table.add(
        "cold, no store", c.fmt_ms(c.median(bare_ms)), note=f"p95 {c.percentile(bare_ms, 95):.1f} ms; pure embedding"
    )
    table.add(
        "cold, no store, torch 1 thread",
        c.fmt_ms(c.median(one_thread_ms)),
        note=f"diagnostic: torch.set_num_threads(1) (default {_default_threads()})",
    )
    table.add(
        "cached, store-backed encoder",
        c.fmt_ms(cached),
        f"<= {TARGET_CACHED_MS:g} ms",
        cached <= TARGET_CACHED_MS,
        note=f"p95 {c.percentile(cached_ms, 95):.1f} ms; sentences embedded per run: {sorted(cached_encoded)}; "
        f"{cached_rows} cached vectors",
    )
    table.add(
        "retrieve(trim=on) trim_ms, cached", c.fmt_ms(c.median(pipeline_ms)), note=f"question {QUERY!r}, its own top 5"
    )


def _default_threads() -> int:
    import torch

    return torch.get_num_threads()


def _one_thread(fn: Callable[[], list[float]]) -> list[float]:
    """`fn()` with torch limited to one intra-op thread, then the previous setting restored.

    On a loaded 2-core machine torch's two threads wait on each other; small batches (a few
    dozen sentences) then run several times slower than on one thread. Diagnostic only: the
    project does not set the thread count.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn()
    finally:
        torch.set_num_threads(previous)


# ------------------------------------------------------------------------------------------
# 2. splitter throughput
# ------------------------------------------------------------------------------------------


def replicate(texts: list[str], target_bytes: float) -> list[str]:
    """`texts` repeated in order until they hold at least `target_bytes` UTF-8 bytes."""
    out: list[str] = []
    total = 0
    while total < target_bytes:
        for text in texts:
            out.append(text)
            total += len(text.encode("utf-8"))
            if total >= target_bytes:
                break
    return out


def mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def splitter_throughput(table: c.Table, texts: list[str], corpus_mb: float, slice_mb: float) -> None:
    import pysbd

    from locallens.sentences import split_sentences

    corpus = replicate(texts, corpus_mb * 1e6)
    size = mb(corpus)
    split_sentences(texts[0])  # warm-up (regex compilation)
    c.note(f"split_sentences on {size:.1f} MB, per document")
    per_doc_s, units = c.timed(lambda: sum(len(split_sentences(t)) for t in corpus))
    c.note(f"split_sentences on {size:.1f} MB as one string")
    joined = "\n\n".join(corpus)
    one_s, one_units = c.timed(lambda: len(split_sentences(joined)))

    piece = replicate(texts, slice_mb * 1e6)
    piece_size = mb(piece)
    segmenter = pysbd.Segmenter(language="en", clean=False)
    segmenter.segment(texts[0][:2000])  # warm-up
    c.note(f"pysbd on a {piece_size:.2f} MB slice")
    pysbd_s, pysbd_units = c.timed(lambda: sum(len(segmenter.segment(t)) for t in piece))
    ours_piece_s, ours_piece_units = c.timed(lambda: sum(len(split_sentences(t)) for t in piece))

    table.section("sentence splitter throughput (UTF-8 MB/s, markdown from sample_docs/)")
    table.add(
        "split_sentences, per document",
        f"{size / per_doc_s:.2f} MB/s",
        note=f"{size:.1f} MB, {len(corpus):,} documents in {per_doc_s:.1f} s; {units / per_doc_s:,.0f} sentences/s",
    )
    table.add(
        "split_sentences, one string",
        f"{size / one_s:.2f} MB/s",
        note=f"{size:.1f} MB in {one_s:.1f} s, {one_units:,} units (linearity check)",
    )
    table.add(
        f"split_sentences, {piece_size:.2f} MB slice",
        f"{piece_size / ours_piece_s:.2f} MB/s",
        note=f"{ours_piece_units:,} units",
    )
    table.add(
        f"pysbd {pysbd.__version__}, same slice",
        f"{piece_size / pysbd_s:.3f} MB/s",
        note=f"{pysbd_units:,} units in {pysbd_s:.1f} s; language='en', clean=False; measured on the "
        f"slice only (slow); split_sentences is {pysbd_s / ours_piece_s:.0f}x faster",
    )


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("locallens trim benchmark", args.quick)
    repeats = 3 if args.quick else 30
    cold_repeats = 3 if args.quick else 5  # each cold run embeds every sentence: seconds under load
    table = c.Table("Trim benchmark")

    with c.bench_dir("bench-trim") as tmp:
        from locallens.indexer import IndexRequest, index

        db = tmp / "sample.db"
        # --quick indexes one folder (it has chunks of ~220 tokens in 5 files): faster.
        docs = c.SAMPLE_DOCS / "engineering" if args.quick else c.SAMPLE_DOCS
        c.note(f"indexing {docs.relative_to(c.ROOT)}/ (untimed)")
        index(IndexRequest(paths=[docs], db=db))
        trim_overhead(table, db, repeats, cold_repeats)
    texts = [text for _, text in sample_texts()]
    splitter_throughput(table, texts, corpus_mb=2 if args.quick else 20, slice_mb=0.1 if args.quick else 1)

    table.print()
    c.print_end(started)


if __name__ == "__main__":
    main()

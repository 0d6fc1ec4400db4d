"""Retrieval quality and index time of the index settings, on SciFact and on a documentation corpus.

For each configuration (index settings, and optionally a chunker) one index is built per corpus;
vector and hybrid search are both scored from it, and the hybrid fusion's parameters (the vector
weight and the depth taken from each list; reciprocal rank fusion's k for comparison) are scored
offline from the same two rankings, so no setting costs a second index:

- SciFact (BEIR layout: `--scifact DIR`, else $LOCALLENS_SCIFACT, else ~/datasets/beir-scifact): the test
  queries; a document scores as its best chunk among 300 (as `locallens eval --beir` ranks them).
- stdlib: the standard library's manual pages as `pydoc MODULE` prints them
  (`benchmarks/corpora.py --stdlib`), with `benchmarks/data/stdlib_questions.jsonl`; a file
  scores as its best chunk among 50 (as `locallens eval` ranks them).
- pydoc: the language-reference topics CPython bundles for `help()` (`benchmarks/corpora.py`),
  with `benchmarks/data/pydoc_questions.jsonl`; scored like stdlib.
- borg: the BorgBackup manual from Debian's `borgbackup-doc` package (`corpora.py --borg`), with
  `benchmarks/data/borg_questions.jsonl`; scored like stdlib. Nothing is tuned on it: it is the
  check that a change carries over to documentation nobody here wrote.
- varnish, varnish-es: the Varnish Cache documentation from Debian's `varnish-doc` package
  (`corpora.py --varnish`), with `benchmarks/data/varnish_questions.jsonl` and its Spanish
  questions `varnish_es_over_en.jsonl` (one index); scored like stdlib. Held out: written before
  any measurement, for judging a change once it is made.
- postfix, postfix-es: the Postfix README documents from Debian's `postfix-doc` package
  (`corpora.py --postfix`), with `benchmarks/data/postfix_questions.jsonl` and its Spanish
  questions `postfix_es_over_en.jsonl` (one index); scored like stdlib. Written before any
  measurement; outside the default `--corpora`.
- apache, apache-es: the English Apache HTTP Server 2.4 manual from Debian's `apache2-doc`
  package (`corpora.py --apache`), with `benchmarks/data/apache_questions.jsonl` and its Spanish
  questions `apache_es_over_en.jsonl` (one index); scored like stdlib.
- sqlite, sqlite-es: the SQLite documentation from Debian's `sqlite3-doc` package
  (`corpora.py --sqlite`), with `benchmarks/data/sqlite_questions.jsonl` and its Spanish questions
  `sqlite_es_over_en.jsonl` (one index); scored like stdlib. Held out like varnish: written before
  any measurement, for judging a change once it is made; outside the default `--corpora`.
- rsyslog, rsyslog-es: the rsyslog documentation from Debian's `rsyslog-doc` package
  (`corpora.py --rsyslog`), with `benchmarks/data/rsyslog_questions.jsonl` and its Spanish
  questions `rsyslog_es_over_en.jsonl` (one index); scored like stdlib. Held out like sqlite;
  outside the default `--corpora`.
- zsh, zsh-es: the Z shell manual and FAQ from Debian's `zsh-doc` package (`corpora.py --zsh`;
  long pages, a chapter each), with `benchmarks/data/zsh_questions.jsonl` and its Spanish
  questions `zsh_es_over_en.jsonl` (one index); scored like stdlib. A development corpus, outside
  the default `--corpora`.
- adoc, adoc-es: AsciiDoc documentation as the qutebrowser and asciidoc PyPI sdists ship it
  (`corpora.py --adoc`; HTML rendered by asciidoc beside `.asciidoc` and `.txt` AsciiDoc sources,
  names and extensions kept), with `benchmarks/data/adoc_questions.jsonl` and its Spanish questions
  `adoc_es_over_en.jsonl` (one index); scored like stdlib. A development corpus, outside the
  default `--corpora`.
- filter-repo: git-filter-repo's documentation as its PyPI sdist ships it (`corpora.py
  --filter-repo`; an AsciiDoc manual page written as Git's are, Markdown guides) with
  `benchmarks/data/filter_repo_questions.jsonl`, written before anything was run on it; outside
  the default `--corpora`.
- tig: tig's manual and manual pages as Debian's tig package ships them (`corpora.py --tig`; HTML
  written by AsciiDoc from sources in Git's style) with `benchmarks/data/tig_questions.jsonl`,
  written and committed before anything was run on it; outside the default `--corpora`.
- bash-html, bash-pdf, bash-mixed: the Bash manual page and reference manual of Debian's
  `bash-doc` (`corpora.py --bash KIND`) as HTML, as PDF, and the package's folder as shipped,
  with `benchmarks/data/bash_questions.jsonl`; a question's files are the manuals in the corpus's
  formats, so hit@5 says little and `answer@5` what the PDF's text costs. Development corpora,
  outside the default `--corpora`.

Searches: vector, keyword, hybrid as the corpus's depth asks for it (`search(k=depth)`: max(depth,
HYBRID_CANDIDATES) candidates per side, as `eval` ranks) and `hybrid_ask`, fused from
HYBRID_CANDIDATES per side as `ask` (k=5) fuses them.

Also scored from the same searches: `ask` (the package's own `search` as `ask` calls it, with a
Spanish question's English rendering); `hybrid_ask capN` (at most N chunks of one file in the top
5 while others are left; `cap2/1`: 2 of the best file, 1 of any other); `ask resortN` (the first N
of `ask`'s results re-sorted by cosine, then capped again).

Metrics: hit@5 (an expected document among the first 5 distinct documents), MRR@10, nDCG@10, the
expected document among the first 5 chunks and the files they come from, `answer@5` (for `ask` and
the naive baseline, over the questions that name expected answer strings: one of the first 5
chunks, the excerpts `ask` reads, holds one, as `bench_answers.py` judges a stated answer), and the index time
(embedding included, model load excluded). Figures are printed as one table and appended as JSON
lines to `--out`. With both `headers` and `naive` among the configs, a second table puts the
default search (`ask`) beside the naive dense baseline (`naive`'s vector search), with the warm
milliseconds of one search each, and says MISS where the default's hit@5 is below the baseline's;
under each corpus, "default, as `ask` reads": `answer@5` over the chunks `ask` reads (the 5, then
what the per-file cap held back from the fused first 5, and the first file's from the first 10,
`retrieval.read_held_back`), how many that
is on average, and the warm milliseconds of one search of k=5 without and with them.

`--diagnose` (with `headers` and `naive`): for every question where exactly one of the default's 5
chunks and the baseline's 5 holds an expected answer string, where each side has it (`diagnose`):
the baseline's rank, file rank and chunk length; the default's fused rank, rank by cosine, rank
by dense and by BM25 search alone in the whole brain, the chunk's length, its file's rank, its place
among its file's candidates, and a class (`cap`: the best file's 3rd+ candidate, held back by the
per-file cap; `within`: another chunk of a file read was chosen; `file-out`: its file is not read;
`deep`: in no candidate, in a chunk of an expected file; `none`).

Usage:
    python benchmarks/bench_retrieval.py [--configs today,headers,multi,both] [--corpora scifact,stdlib]
        [--chunkers paragraph,percentile,maxmin] [--scifact DIR] [--work DIR] [--out FILE] [--reuse]
        [--diagnose]

`--reuse` scores the indexes an earlier run left in `--work` instead of building them again (the
index time is then not measured): for comparing search code on the same vectors. `--pg [URL]`
also copies each index into PostgreSQL (`locallens copy`; a pgserver started for the run when no
URL is given) and scores vector and hybrid search there, as the store's defaults search it (HNSW
from 10,000 vectors, keywords ranked by its BM25).

`today` indexes with the settings of the previous release (no headers, one averaged vector per
chunk). Run with PYTHONPATH pointing at an older checkout, the script measures that checkout
(settings it does not know are not passed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _common as c

DEFAULT_SCIFACT = Path(os.environ.get("LOCALLENS_SCIFACT", "~/datasets/beir-scifact")).expanduser()
STDLIB_QUESTIONS = c.ROOT / "benchmarks" / "data" / "stdlib_questions.jsonl"
PYDOC_QUESTIONS = c.ROOT / "benchmarks" / "data" / "pydoc_questions.jsonl"
BORG_QUESTIONS = c.ROOT / "benchmarks" / "data" / "borg_questions.jsonl"
VARNISH_QUESTIONS = c.ROOT / "benchmarks" / "data" / "varnish_questions.jsonl"
VARNISH_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "varnish_es_over_en.jsonl"
POSTFIX_QUESTIONS = c.ROOT / "benchmarks" / "data" / "postfix_questions.jsonl"
POSTFIX_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "postfix_es_over_en.jsonl"
APACHE_QUESTIONS = c.ROOT / "benchmarks" / "data" / "apache_questions.jsonl"
APACHE_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "apache_es_over_en.jsonl"
SQLITE_QUESTIONS = c.ROOT / "benchmarks" / "data" / "sqlite_questions.jsonl"
SQLITE_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "sqlite_es_over_en.jsonl"
RSYSLOG_QUESTIONS = c.ROOT / "benchmarks" / "data" / "rsyslog_questions.jsonl"
RSYSLOG_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "rsyslog_es_over_en.jsonl"
ZSH_QUESTIONS = c.ROOT / "benchmarks" / "data" / "zsh_questions.jsonl"
ZSH_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "zsh_es_over_en.jsonl"
ADOC_QUESTIONS = c.ROOT / "benchmarks" / "data" / "adoc_questions.jsonl"
ADOC_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "adoc_es_over_en.jsonl"
FILTER_REPO_QUESTIONS = c.ROOT / "benchmarks" / "data" / "filter_repo_questions.jsonl"
TIG_QUESTIONS = c.ROOT / "benchmarks" / "data" / "tig_questions.jsonl"
BASH_QUESTIONS = c.ROOT / "benchmarks" / "data" / "bash_questions.jsonl"
SAMPLE_QUESTIONS = c.ROOT / "tests" / "data" / "questions.jsonl"
# Spanish questions over English notes: over sample_docs/ (its notes in Spanish too), and over the
# language-reference topics (held out: nothing is tuned on it).
ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "sample_es_over_en.jsonl"
PYDOC_ES_QUESTIONS = c.ROOT / "benchmarks" / "data" / "pydoc_es_over_en.jsonl"
CONFIGS: dict[str, dict[str, Any]] = {
    "today": {"headers": False, "multi_vector": False},
    "headers": {"headers": True, "multi_vector": False},
    "multi": {"headers": False, "multi_vector": True},
    "both": {"headers": True, "multi_vector": True},
    # The naive dense baseline: paragraphs packed into chunks of the default size with no overlap,
    # embedded without headers by the same model, searched by vector only.
    "naive": {"headers": False, "multi_vector": False, "chunk_overlap": 0},
    # The default settings with each encoder named (its queries are embedded with it too);
    # `headers` takes the checkout's default encoder.
    "fp32": {"headers": True, "multi_vector": False, "encoder": "fp32"},
    "int8": {"headers": True, "multi_vector": False, "encoder": "int8"},
    # Chunk size / overlap (tiktoken tokens) with the default settings; the default is 220/40.
    "int8-220-0": {"headers": True, "multi_vector": False, "encoder": "int8", "chunk_size": 220, "chunk_overlap": 0},
    "int8-200-0": {"headers": True, "multi_vector": False, "encoder": "int8", "chunk_size": 200, "chunk_overlap": 0},
    "int8-200-20": {"headers": True, "multi_vector": False, "encoder": "int8", "chunk_size": 200, "chunk_overlap": 20},
    "int8-180-20": {"headers": True, "multi_vector": False, "encoder": "int8", "chunk_size": 180, "chunk_overlap": 20},
    # The fast mode: static embeddings distilled from the model.
    "static": {"headers": True, "multi_vector": False, "encoder": "static"},
}
BEIR_CHUNKS = 300  # chunks per SciFact query, as `eval --beir`
DOCS_CHUNKS = 50  # chunks per question, as `eval` (retrieval_eval.RANKING_DEPTH)
RRF_KS = (10, 60)
WEIGHTS = (0.4, 0.5, 0.6, 0.7)
DEPTHS = (20, 50, 100, 300)
CAPS = (1, 2, 3)  # chunks of one file allowed in the top 5 before the next file's (diversity)
# The same with the best file allowed 2 and every other file 1 (`retrieval.OTHER_FILE_CHUNKS`).
FIRST_CAPS = ((2, 1),)
RESORTS = (5, 10)  # the first N results of `ask`'s search re-sorted by cosine (then diversified again)


@dataclasses.dataclass
class Query:
    qid: str
    text: str
    relevant: dict[str, int]  # document id (or file name) -> grade
    answers: list[str] = dataclasses.field(default_factory=list)  # expected answer strings, if any


@dataclasses.dataclass
class Corpus:
    name: str
    folder: Path
    names: dict[str, str]  # file name -> document id
    queries: list[Query]
    depth: int  # chunks ranked per query
    titles: dict[str, str] = dataclasses.field(default_factory=dict)  # file -> title (BEIR)
    index: str = ""  # the name its indexes take (corpora over one folder share them); default `name`


def load_scifact(folder: Path, work: Path) -> Corpus:
    from locallens.evaluation.beir import load_beir, write_corpus

    try:
        from locallens.progress import NoProgress
    except ImportError:  # an older checkout
        from locallens.evaluation.progress import NoProgress  # type: ignore[no-redef]

    dataset = load_beir(folder)
    files = write_corpus(dataset, work / "scifact-docs", NoProgress())
    titles = {}
    raw_titles = getattr(dataset, "titles", None)
    if raw_titles:
        titles = {name: raw_titles.get(doc_id, "") for name, doc_id in files.names.items()}
    queries = [
        Query(qid, dataset.queries[qid], rels)
        for qid, rels in dataset.qrels.items()
        if dataset.queries.get(qid) and any(g > 0 for g in rels.values())
    ]
    return Corpus("scifact", files.folder, files.names, queries, BEIR_CHUNKS, titles)


def load_docs(
    name: str, folder: Path, questions: Path, suffixes: tuple[str, ...] = (".txt",), html: bool = False
) -> Corpus:
    """A folder of documents (its files ending in one of `suffixes`) with a JSONL of questions
    naming their expected files. `html`: the pages as shipped, a question's files named by their
    `.html` page (`Options.txt` -> `Options.html`)."""
    names = {p.name: p.name for p in folder.iterdir() if p.is_file() and p.name.endswith(suffixes)}
    queries = []
    for number, line in enumerate(questions.read_text(encoding="utf-8").splitlines(), start=1):
        item = json.loads(line) if line.strip() else {}
        if html and item.get("files"):
            item["files"] = [f"{Path(f).stem}.html" for f in item["files"]]
        if item.get("files"):  # questions the corpus cannot answer have none
            missing = [f for f in item["files"] if f not in names]
            if missing:
                raise SystemExit(f"{questions}:{number}: expected files not in the corpus: {missing}")
            queries.append(
                Query(str(number), item["question"], {f: 1 for f in item["files"]}, item.get("answers") or [])
            )
    return Corpus(name, folder, names, queries, DOCS_CHUNKS)


def load_bash(kind: str, work: Path) -> Corpus:
    """The Bash manuals of Debian's bash-doc (`corpora.py --bash KIND`: as HTML, as PDF, or the
    package's folder as shipped) with `bash_questions.jsonl`; a question's files are the manuals
    in the corpus's formats (`corpora.BASH_MANUALS`), its answer strings its own."""
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    from corpora import BASH_MANUALS, write_bash_corpus

    folder = write_bash_corpus(work / f"bash-{kind}-docs", kind)
    names = {
        p.relative_to(folder).as_posix(): p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
    }
    rows = [json.loads(line) for line in BASH_QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [
        Query(str(n), row["question"], dict.fromkeys(BASH_MANUALS[kind], 1), row.get("answers") or [])
        for n, row in enumerate(rows, start=1)
        if row.get("answerable", True)
    ]
    return Corpus(f"bash-{kind}", folder, names, queries, DOCS_CHUNKS)


def load_stdlib(work: Path) -> Corpus:
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    from corpora import write_stdlib_corpus

    return load_docs("stdlib", write_stdlib_corpus(work / "stdlib-docs"), STDLIB_QUESTIONS)


def load_pydoc(work: Path) -> Corpus:
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    from corpora import write_pydoc_corpus

    return load_docs("pydoc", write_pydoc_corpus(work / "pydoc-docs"), PYDOC_QUESTIONS)


def load_pydoc_es(work: Path) -> Corpus:
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    from corpora import write_pydoc_corpus

    corpus = load_docs("pydoc-es", write_pydoc_corpus(work / "pydoc-docs"), PYDOC_ES_QUESTIONS)
    return dataclasses.replace(corpus, index="pydoc")


def load_debian(kind: str, work: Path, questions: Path, name: str | None = None, html: bool = False) -> Corpus:
    """A corpus `benchmarks/corpora.py` writes from a Debian documentation package (`borg`,
    `varnish`, `postfix`, `apache`, `sqlite`, `rsyslog`, `zsh`) or from PyPI source distributions
    (`adoc`): its `write_KIND_corpus`, its files those ending in `KIND_SUFFIXES` (`.txt` when it
    has none), asked `questions` under `name` (`KIND-es` for the Spanish set); the index is the
    corpus's, shared by its English and Spanish sets. `html`: the same pages as the package ships
    them, read by locallens's HTML reader (`KIND-html`, `KIND-html-es`)."""
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    import corpora

    write = getattr(corpora, f"write_{kind}_corpus")
    if html:
        folder = write(work / f"{kind}-html-docs", html=True)
        label = (name or kind).replace(kind, f"{kind}-html", 1)
        return dataclasses.replace(load_docs(label, folder, questions, (".html",), html=True), index=f"{kind}-html")
    suffixes = getattr(corpora, f"{kind.upper()}_SUFFIXES", (".txt",))
    corpus = load_docs(name or kind, write(work / f"{kind}-docs"), questions, suffixes)
    return dataclasses.replace(corpus, index=kind)


def load_tig(work: Path) -> Corpus:
    """tig's manual and manual pages as Debian ships them (`corpora.py --tig`, HTML), read by
    locallens's HTML reader, with `benchmarks/data/tig_questions.jsonl`."""
    sys.path.insert(0, str(c.ROOT / "benchmarks"))
    import corpora

    folder = corpora.write_tig_corpus(work / "tig-docs")
    return dataclasses.replace(load_docs("tig", folder, TIG_QUESTIONS, (".html",), html=True), index="tig")


def load_sample(questions: Path = SAMPLE_QUESTIONS, name: str = "sample") -> Corpus:
    """sample_docs/ with the project's own questions (tests/data/questions.jsonl): small, quick."""
    folder = c.SAMPLE_DOCS
    names = {
        p.relative_to(folder).as_posix(): p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
    }
    queries = []
    for number, line in enumerate(questions.read_text(encoding="utf-8").splitlines()):
        item = json.loads(line) if line.strip() else {}
        if item.get("files"):
            queries.append(
                Query(str(number), item["question"], {f: 1 for f in item["files"]}, item.get("answers") or [])
            )
    return Corpus(name, folder, names, queries, DOCS_CHUNKS, index="sample")


def supported(field: str) -> bool:
    from locallens.indexer import IndexRequest

    return field in {f.name for f in dataclasses.fields(IndexRequest)}


def build_index(corpus: Corpus, db: Path, settings: dict[str, Any], chunker: str) -> tuple[float, int]:
    """Index `corpus` into a fresh `db`; (seconds, chunks). Settings this checkout lacks are dropped."""
    from locallens.config import ChunkSettings
    from locallens.indexer import IndexRequest, index

    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    sizes = {k: settings[k] for k in ("chunk_size", "chunk_overlap") if k in settings}
    extra = {k: v for k, v in settings.items() if supported(k) and k not in sizes}
    if corpus.titles and supported("titles"):
        extra["titles"] = corpus.titles
    request = IndexRequest(
        paths=[corpus.folder],
        db=db,
        brain="bench",
        device="cpu",
        chunking=ChunkSettings(strategy=chunker, **sizes),
        **extra,
    )
    started = time.perf_counter()
    report = index(request)
    return time.perf_counter() - started, report.chunks_total


def derive_mean(source: Path, db: Path) -> None:
    """A copy of multi-vector index `source` at `db` with each chunk's windows averaged into one
    vector, as a single-vector index embeds it (its windows are within one token of equal size,
    so the equal-weight mean is the token-weighted one to ~1e-3): the single-vector setting
    measured without embedding the corpus a second time. Same embedding work, same index time."""
    import shutil

    import numpy as np

    from locallens.storage.sqlite import PARTITIONS, WINDOW_SHIFT, Store

    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{db}{suffix}")
    with Store(db) as store:
        brain = store.get_brain("bench")
        with store.transaction():
            rows = store.conn.execute(
                "SELECT id, vectors FROM chunks WHERE brain_id = ? AND vectors > 1", (brain.id,)
            ).fetchall()
            for rowid, count in rows:
                ids = [rowid + (w << WINDOW_SHIFT) for w in range(count)]
                matrix = np.stack(
                    [
                        np.frombuffer(
                            store.conn.execute(
                                f"SELECT embedding FROM {brain.vec_table} WHERE rowid = ?", (i,)
                            ).fetchone()[0],
                            dtype=np.float32,
                        )
                        for i in ids
                    ]
                )
                mean = matrix.mean(axis=0)
                mean = (mean / np.linalg.norm(mean)).astype(np.float32)
                for i in ids:
                    store.conn.execute(f"DELETE FROM {brain.vec_table} WHERE rowid = ?", (i,))
                store.conn.execute(
                    f"INSERT INTO {brain.vec_table}(rowid, part, embedding) VALUES (?, ?, ?)",
                    (rowid, rowid % PARTITIONS, mean.tobytes()),
                )
            store.conn.execute("UPDATE chunks SET vectors = 1 WHERE brain_id = ?", (brain.id,))
            store.conn.execute("UPDATE brains SET multi_vector = 0 WHERE id = ?", (brain.id,))


Ranking = list[tuple[int, str, float, float]]  # (chunk row id, file, score, cosine), best first


def rankings(
    corpus: Corpus, db: Path, qvecs: Any, first: list[list[str]] | None = None
) -> list[tuple[Ranking, Ranking]]:
    """Per query: the dense ranking (scored by cosine) and the keyword one (by keyword relevance);
    `first`, when given, gets each query's first 5 dense chunks' contents (for `answer@5`)."""
    from locallens.storage.sqlite import Store

    out = []
    deep = max(corpus.depth, max(DEPTHS))
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        rows = store.execute("SELECT id, chunk_id, relative_path FROM chunks WHERE brain_id = ?", (brain.id,))
        row_id = {(r[1], r[2]): r[0] for r in rows}
        path = {r[0]: r[2] for r in rows}
        for query, qvec in zip(corpus.queries, qvecs, strict=True):
            dense = store.knn(brain, qvec, deep)
            if first is not None:
                first.append([h.content for h in dense[:5]])
            keyword = store.keyword_scores(brain, query.text, deep)
            cosine = {i: h.score for i, h in store.hits_by_id(brain, qvec, [i for i, _ in keyword]).items()}
            out.append(
                (
                    [
                        (row_id[(h.chunk.id, h.chunk.relative_path)], h.chunk.relative_path, h.score, h.score)
                        for h in dense
                    ],
                    [(i, path[i], s, cosine[i]) for i, s in keyword],
                )
            )
    return out


def fuse_ranks(dense: Ranking, keyword: Ranking, rrf_k: int, depth: int, limit: int) -> list[str]:
    """Files of the reciprocal-rank fusion of the two rankings (the fusion before score fusion)."""
    scores: dict[int, float] = {}
    cosine = {i: s for i, _, s, _ in dense}
    files = {i: p for i, p, _, _ in dense} | {i: p for i, p, _, _ in keyword}
    for ranking in ([i for i, _, _, _ in dense[:depth]], [i for i, _, _, _ in keyword[:depth]]):
        for rank, i in enumerate(ranking, start=1):
            scores[i] = scores.get(i, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(scores, key=lambda i: (-scores[i], -cosine.get(i, -1.0), files[i]))
    return [files[i] for i in order[:limit]]


def fuse_scores(dense: Ranking, keyword: Ranking, weight: float, depth: int, limit: int) -> list[str]:
    """Files of the standardised-score fusion (`retrieval.fuse_scores`, as `hybrid_search` ranks)."""
    from locallens.retrieval import fuse_scores

    cosine = {i: c for i, _, _, c in keyword[:depth]} | {i: c for i, _, _, c in dense[:depth]}
    files = {i: p for i, p, _, _ in dense} | {i: p for i, p, _, _ in keyword}
    order = fuse_scores(cosine, {i: s for i, _, s, _ in keyword[:depth]}, weight)
    return [files[i] for i in order[:limit]]


def cap_per_file(files: list[str], cap: int, others: int | None = None) -> list[str]:
    """`files` (a chunk ranking, by file) with the first file's chunks past its first `cap`, and any
    other file's past its first `others` (default: `cap`), moved to the end."""
    seen: dict[str, int] = {}
    head, tail = [], []
    for f in files:
        seen[f] = seen.get(f, 0) + 1
        limit = cap if f == files[0] or others is None else others
        (head if seen[f] <= limit else tail).append(f)
    return head + tail


def score(corpus: Corpus, ranked_files: list[list[str]], texts: list[list[str]] | None = None) -> dict[str, float]:
    """hit@5, MRR@10 and nDCG@10 by file, the expected file among the first 5 chunks, the files
    those come from; with `texts` (each query's first 5 chunks' contents, or all the chunks `ask`
    reads), `answer@5`: the share of the queries with expected answer strings one of whose given
    chunks holds one (`contains_answer`,
    as `bench_answers.py` judges a stated answer), and `answered` how many such queries there are."""
    from locallens.evaluation.metrics import contains_answer, dedupe, hit_at_k, mean, ndcg_at_k, reciprocal_rank

    hits, mrrs, ndcgs, top5, spread = [], [], [], [], []
    held = [
        any(contains_answer(t, q.answers) for t in chunks)
        for q, chunks in zip(corpus.queries, texts or [[] for _ in corpus.queries], strict=True)
        if texts is not None and q.answers
    ]
    for query, files in zip(corpus.queries, ranked_files, strict=True):
        docs = [d for d in dedupe(corpus.names.get(f, f) for f in files)]
        relevant = {d: g for d, g in query.relevant.items() if g > 0}
        hits.append(hit_at_k(docs, relevant, 5))
        mrrs.append(reciprocal_rank(docs, relevant, 10))
        ndcgs.append(ndcg_at_k(docs, query.relevant, 10))
        # What `ask` reads: the first 5 chunks, and how many files they come from.
        first = {corpus.names.get(f, f) for f in files[:5]}
        top5.append(1.0 if first & set(relevant) else 0.0)
        spread.append(float(len(first)))
    return {
        "hit@5": mean(hits) or 0.0,
        "mrr@10": mean(mrrs) or 0.0,
        "ndcg@10": mean(ndcgs) or 0.0,
        "hit@5chunks": mean(top5) or 0.0,
        "files@5": mean(spread) or 0.0,
    } | ({"answer@5": sum(held) / len(held), "answered": len(held)} if held else {})


def renderings(corpus: Corpus, embedder: Any) -> list[list[tuple[str, Any]]]:
    """Per query: its other renderings with their vectors, as `retrieve` searches them (a Spanish
    question's English one, `locallens.crosslang`); none on a checkout without them."""
    try:
        from locallens import crosslang
    except ImportError:  # an older checkout
        return [[] for _ in corpus.queries]
    out = []
    for query in corpus.queries:
        rendering = crosslang.render(query.text)
        out.append([(rendering.text, embedder.encode_query(rendering.text))] if rendering else [])
    shown = [(q.text, r[0][0]) for q, r in zip(corpus.queries, out, strict=True) if r]
    if shown:
        c.note(
            f"{corpus.name}: {len(shown)} of {len(corpus.queries)} queries also searched as rendered, e.g. {shown[0]}"
        )
    return out


def ask_search(
    corpus: Corpus, db: Path, qvecs: Any, rendered: list[list[tuple[str, Any]]], hybrid: bool = True
) -> tuple[list[list[Any]], float]:
    """Files of the chunks `search` returns as `ask` calls it (k=5: HYBRID_CANDIDATES candidates
    per side), with the query's other renderings, ranked on to HYBRID_CANDIDATES chunks (as hits);
    and the median milliseconds of one search, warm (each query searched once untimed, then timed; the
    query's embedding is not included). `hybrid=False`: vector search alone, as `--no-hybrid`."""
    import inspect
    import statistics

    from locallens.retrieval import HYBRID_CANDIDATES, search
    from locallens.storage.sqlite import Store

    takes_renderings = "also" in inspect.signature(search).parameters
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        out = []
        seconds = []
        for q, v, r in zip(corpus.queries, qvecs, rendered, strict=True):
            extra = {"also": r} if takes_renderings else {}
            search(store, brain, q.text, v, HYBRID_CANDIDATES, hybrid=hybrid, **extra)
            started = time.perf_counter()
            hits = search(store, brain, q.text, v, HYBRID_CANDIDATES, hybrid=hybrid, **extra)
            seconds.append(time.perf_counter() - started)
            out.append(hits)
    return out, 1000 * statistics.median(seconds)


def ask_reads(
    corpus: Corpus, db: Path, qvecs: Any, rendered: list[list[tuple[str, Any]]]
) -> tuple[list[list[Any]], float, float]:
    """The chunks `ask` reads (`search` with k=5 and `read_held`, as `retrieve` calls it for `ask`:
    the 5, then what the per-file cap held back from the fused first 5), and the median warm
    milliseconds of one search of k=5 without and with `read_held`, timed alternately on each
    query (after one untimed search each)."""
    import statistics

    from locallens.retrieval import search
    from locallens.storage.sqlite import Store

    out = []
    plain, held = [], []
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        for q, v, r in zip(corpus.queries, qvecs, rendered, strict=True):
            search(store, brain, q.text, v, 5, hybrid=True, also=r, read_held=True)
            for flag, times in ((False, plain), (True, held)):
                started = time.perf_counter()
                hits = search(store, brain, q.text, v, 5, hybrid=True, also=r, read_held=flag)
                times.append(time.perf_counter() - started)
            out.append(hits)
    return out, 1000 * statistics.median(plain), 1000 * statistics.median(held)


def knn_ms(db: Path, qvecs: Any, depth: int) -> float:
    """Median milliseconds of one warm nearest-neighbour search of `depth` chunks (the naive
    baseline's whole search), each query searched once untimed, then timed."""
    import statistics

    from locallens.storage.sqlite import Store

    seconds = []
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        for v in qvecs:
            store.knn(brain, v, depth)
            started = time.perf_counter()
            store.knn(brain, v, depth)
            seconds.append(time.perf_counter() - started)
    return 1000 * statistics.median(seconds)


def evaluate(
    corpus: Corpus, db: Path, qvecs: Any, rendered: list[list[tuple[str, Any]]] | None = None
) -> dict[str, Any]:
    """Vector, keyword, hybrid (the package's own defaults, through `search`) and the fusion grid;
    `ask`: the package's own search as `ask` calls it, with the query's renderings."""
    from locallens.retrieval import search
    from locallens.storage.sqlite import Store

    dense_texts: list[list[str]] = []
    ranks = rankings(corpus, db, qvecs, dense_texts)
    result: dict[str, Any] = {
        "vector": score(corpus, [[p for _, p, _, _ in d[: corpus.depth]] for d, _ in ranks], dense_texts),
        "keyword": score(corpus, [[p for _, p, _, _ in kw[: corpus.depth]] for _, kw in ranks]),
    }
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        hybrid = [
            [h.chunk.relative_path for h in search(store, brain, q.text, v, corpus.depth, hybrid=True)]
            for q, v in zip(corpus.queries, qvecs, strict=True)
        ]
    result["hybrid"] = score(corpus, hybrid)
    # As `ask` searches (k=5, so HYBRID_CANDIDATES per side), ranked on to the corpus's depth.
    from locallens.retrieval import HYBRID_CANDIDATES, HYBRID_VECTOR_WEIGHT, IDENTIFIER_VECTOR_WEIGHT, identifiers_only

    ask_ranked = [
        fuse_scores(
            d,
            k,
            IDENTIFIER_VECTOR_WEIGHT if identifiers_only(q.text) else HYBRID_VECTOR_WEIGHT,
            HYBRID_CANDIDATES,
            corpus.depth,
        )
        for q, (d, k) in zip(corpus.queries, ranks, strict=True)
    ]
    # The package's own per-file cap, when this checkout has one; the caps below are from the raw fusion.
    import inspect

    from locallens import retrieval

    default_cap = getattr(retrieval, "MAX_CHUNKS_PER_FILE", None)
    other_cap = getattr(retrieval, "OTHER_FILE_CHUNKS", None)
    result["hybrid_ask"] = score(
        corpus, [cap_per_file(r, default_cap, other_cap) if default_cap else r for r in ask_ranked]
    )
    ask_hits, ask_ms = ask_search(corpus, db, qvecs, rendered or [[] for _ in corpus.queries])
    result["ask"] = score(
        corpus,
        [[h.chunk.relative_path for h in hits] for hits in ask_hits],
        [[h.content for h in hits[:5]] for hits in ask_hits],
    ) | {"ms": ask_ms}
    result["vector"]["ms"] = knn_ms(db, qvecs, corpus.depth)
    if "read_held" in inspect.signature(retrieval.search).parameters:
        read, ms5, ms_read = ask_reads(corpus, db, qvecs, rendered or [[] for _ in corpus.queries])
        result["ask_read"] = score(
            corpus,
            [[h.chunk.relative_path for h in hits] for hits in read],
            [[h.content for h in hits] for hits in read],
        ) | {"ms": ms_read, "ms5": ms5, "read": sum(map(len, read)) / max(1, len(read))}
    for cap in CAPS:
        result[f"hybrid_ask cap{cap}"] = score(corpus, [cap_per_file(r, cap) for r in ask_ranked])
    for first, others in FIRST_CAPS:
        result[f"hybrid_ask cap{first}/{others}"] = score(corpus, [cap_per_file(r, first, others) for r in ask_ranked])
    # The first N of `ask`'s results re-sorted by cosine (each hit's best over the renderings), then
    # diversified again: as `--rerank llm` at blend weight 0 treats its candidates.
    for n in RESORTS if hasattr(retrieval, "diversify") else ():
        resorted = []
        for hits in ask_hits:
            head = sorted(hits[:n], key=lambda h: -h.score)
            resorted.append([h.chunk.relative_path for h in retrieval.diversify(head + hits[n:], len(hits))])
        result[f"ask resort{n}"] = score(corpus, resorted)
    grid = {}
    for depth in DEPTHS:
        for weight in WEIGHTS:
            grid[f"weight={weight},depth={depth}"] = score(
                corpus, [fuse_scores(d, k, weight, depth, corpus.depth) for d, k in ranks]
            )
        for rrf_k in RRF_KS:
            grid[f"rrf k={rrf_k},depth={depth}"] = score(
                corpus, [fuse_ranks(d, k, rrf_k, depth, corpus.depth) for d, k in ranks]
            )
    result["fusion_grid"] = grid
    return result


DIAG_DEPTH = 50  # dense and keyword ranks are read to this depth for the diagnosis


def diagnose(
    corpus: Corpus, default_db: Path, naive_db: Path, qvecs: Any, rendered: list[list[tuple[str, Any]]]
) -> list[dict[str, Any]]:
    """Per question with expected answer strings where the default search's 5 chunks and the naive
    baseline's disagree on holding one (`contains_answer`): where each found it. A row per such
    question, printed as a table (`print_diagnosis`):

    - naive: the rank (1-5) of its first chunk holding an answer, that chunk's file's rank among
      naive's files, the file's chunks among naive's 5, the chunk's tokens;
    - default: the first fused candidate (as `hybrid_search` ranks them, renderings included)
      holding an answer: its rank in the fused order (`-` when no candidate holds one), its rank
      by cosine alone and by BM25 alone (in the whole brain, to DIAG_DEPTH), its tokens, its file's
      rank among the candidates' files, the chunk's place among its file's candidates, how many
      of the 5 read are of its file, and a class: `cap` (its file is read and ranks first among
      the candidates' files, it is the file's 3rd+ candidate: the per-file cap held it back), `within` (its file is read, another of its chunks
      was chosen), `file-out` (its file is not read), `deep` (no candidate holds an answer, a chunk
      of the expected files does), `none`.
    """
    from locallens.evaluation.metrics import contains_answer
    from locallens.retrieval import _key, hybrid_candidates, search
    from locallens.storage.sqlite import Store
    from locallens.tokens import count_tokens

    rows: list[dict[str, Any]] = []
    with Store(default_db, create=False) as store, Store(naive_db, create=False) as nstore:
        brain, nbrain = store.get_brain("bench"), nstore.get_brain("bench")
        for q, v, r in zip(corpus.queries, qvecs, rendered, strict=True):
            if not q.answers:
                continue
            naive = nstore.knn(nbrain, v, 5)
            read = search(store, brain, q.text, v, 5, hybrid=True, also=r)
            n_at = next((i for i, h in enumerate(naive) if contains_answer(h.content, q.answers)), None)
            d_at = next((i for i, h in enumerate(read) if contains_answer(h.content, q.answers)), None)
            if (n_at is None) == (d_at is None):
                continue
            row: dict[str, Any] = {"corpus": corpus.name, "q": q.qid, "question": q.text, "naive": n_at is not None}
            if n_at is not None:
                files = list(dict.fromkeys(h.chunk.relative_path for h in naive))
                nh = naive[n_at]
                row |= {
                    "n_rank": n_at + 1,
                    "n_file": nh.chunk.relative_path,
                    "n_file_rank": files.index(nh.chunk.relative_path) + 1,
                    "n_same": sum(h.chunk.relative_path == nh.chunk.relative_path for h in naive),
                    "n_tokens": count_tokens(nh.content),
                }
            hits, fused, order = hybrid_candidates(store, brain, q.text, v, 5, also=r)
            at = next((i for i, kk in enumerate(order) if contains_answer(hits[kk].content, q.answers)), None)
            read_files = [h.chunk.relative_path for h in read]
            if at is None:
                deep = any(
                    contains_answer(ch.content, q.answers)
                    for f in (set(q.relevant) | ({row["n_file"]} if "n_file" in row else set()))
                    for ch in store.document_chunks(brain, f)
                )
                row |= {"d_rank": "-", "class": "deep" if deep else "none"}
                rows.append(row)
                continue
            kk = order[at]
            hit = hits[kk]
            path = hit.chunk.relative_path
            by_cos = sorted(order, key=lambda x: -hits[x].score)
            dense = [_key(h) for h in store.knn(brain, v, DIAG_DEPTH)]
            kw_ids = [i for i, _ in store.keyword_scores(brain, q.text, DIAG_DEPTH)]
            by_id = store.hits_by_id(brain, v, kw_ids)
            kw_rank = {_key(by_id[i]): n for n, i in enumerate(kw_ids, 1) if i in by_id}
            file_order = list(dict.fromkeys(hits[x].chunk.relative_path for x in order))
            same_file = [x for x in order if hits[x].chunk.relative_path == path]
            place = same_file.index(kk) + 1
            if path not in read_files:
                cls = "file-out"
            elif place > 2 and file_order.index(path) == 0:
                cls = "cap"
            else:
                cls = "within"
            row |= {
                "d_rank": at + 1,
                "d_cos_rank": by_cos.index(kk) + 1,
                "d_dense": dense.index(kk) + 1 if kk in dense else "-",
                "d_bm25": kw_rank.get(kk, "-"),
                "d_tokens": count_tokens(hit.content),
                "d_file": path,
                "d_file_rank": file_order.index(path) + 1,
                "d_place": place,
                "d_read_same": read_files.count(path),
                "d_read_files": len(set(read_files)),
                "d_fused_gap": round(fused[order[0]] - fused[kk], 2),
                "class": cls,
            }
            rows.append(row)
    return rows


def print_diagnosis(rows: list[dict[str, Any]]) -> None:
    """The rows of `diagnose`, one table; then the classes counted by which side holds the answer."""
    if not rows:
        return
    print()
    print("Where the answer is when only one of the default search and the naive baseline holds it in its 5 chunks:")
    print(
        "| corpus | q | holds | naive rank / file rank / same-file chunks / tokens | default fused rank | by cosine"
        " | dense / BM25 in brain | tokens | file rank | place in file | read of its file / files read | fused gap | class | file |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        naive = f"{r['n_rank']} / {r['n_file_rank']} / {r['n_same']} / {r['n_tokens']}" if "n_rank" in r else "-"
        if r["d_rank"] == "-":
            rest = "- | - | - | - | - | - | - | " + r["class"] + " | " + r.get("n_file", "")
        else:
            rest = (
                f"{r['d_cos_rank']} | {r['d_dense']} / {r['d_bm25']} | {r['d_tokens']} | {r['d_file_rank']} | "
                f"{r['d_place']} | {r['d_read_same']} / {r['d_read_files']} | {r['d_fused_gap']} | {r['class']} | {r['d_file']}"
            )
        print(
            f"| {r['corpus']} | {r['q']} | {'naive' if r['naive'] else 'default'} | {naive} | {r['d_rank']} | {rest} |"
        )
    counts: dict[tuple[str, str], int] = {}
    for r in rows:
        side = "naive only" if r["naive"] else "default only"
        counts[(side, r["class"])] = counts.get((side, r["class"]), 0) + 1
    print()
    for (side, cls), n in sorted(counts.items()):
        print(f"  {side:13} {cls:9} {n}")


LLM_RERANK_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def evaluate_llm_rerank(corpus: Corpus, db: Path, qvecs: Any, limit: int = 0) -> dict[str, Any]:
    """Hybrid search (`search`, the corpus's depth, as `ask --rerank` fetches its candidates) with
    its first candidates re-scored by the local LLM (`locallens.llm_rerank`): the question's
    likelihood given each, blended with the cosine at each weight of LLM_RERANK_WEIGHTS (0: the
    candidates re-sorted by cosine alone); `hybrid` beside it is the same ranking unreranked.
    Also the scoring time per query. `limit`: the first N queries only."""
    from locallens.llm_rerank import LLM_CANDIDATES, _scorer, blend, question_likelihoods
    from locallens.retrieval import diversify, search
    from locallens.storage.sqlite import Store

    queries = corpus.queries[:limit] if limit else corpus.queries
    scored_corpus = dataclasses.replace(corpus, queries=queries)
    plain: list[list[str]] = []
    reranked: dict[float, list[list[str]]] = {w: [] for w in LLM_RERANK_WEIGHTS}
    seconds: list[float] = []
    llm = _scorer(None)
    with Store(db, create=False) as store:
        brain = store.get_brain("bench")
        for query, qvec in zip(queries, qvecs, strict=False):
            hits = search(store, brain, query.text, qvec, corpus.depth, hybrid=True)
            plain.append([h.chunk.relative_path for h in hits])
            pool = hits[:LLM_CANDIDATES]
            started = time.perf_counter()
            likelihoods = question_likelihoods(llm, query.text, [h.content for h in pool])
            seconds.append(time.perf_counter() - started)
            for weight in LLM_RERANK_WEIGHTS:
                order = sorted(
                    range(len(pool)), key=lambda i, s=blend(likelihoods, [h.score for h in pool], weight): -s[i]
                )
                ranked = diversify([pool[i] for i in order] + hits[len(pool) :], corpus.depth)  # as rerank_hits
                reranked[weight].append([h.chunk.relative_path for h in ranked])
    import statistics

    out: dict[str, Any] = {"llm_rerank_base": score(scored_corpus, plain)}
    for weight, files in reranked.items():
        out[f"llm_rerank w={weight}"] = score(scored_corpus, files)
    out["llm_rerank_s"] = {"p50": statistics.median(seconds), "max": max(seconds), "queries": len(seconds)}
    return out


def evaluate_postgres(corpus: Corpus, db: Path, qvecs: Any, url: str) -> dict[str, Any]:
    """Vector, hybrid (`search` with the corpus's depth) and hybrid as `ask` fuses (k=20) on a copy
    of the index in PostgreSQL, scored like the SQLite rows."""
    from locallens.copying import CopyRequest, copy_brains
    from locallens.retrieval import HYBRID_CANDIDATES, search
    from locallens.storage import open_store, parse_db

    dest = parse_db(url)
    copy_brains(CopyRequest(source=db, dest=dest, brains=("bench",), replace=True))
    result: dict[str, Any] = {}
    with open_store(dest, create=False) as store:
        brain = store.get_brain("bench")
        for name, hybrid, k in (
            ("vector", False, corpus.depth),
            ("hybrid", True, corpus.depth),
            ("hybrid_ask", True, HYBRID_CANDIDATES),
        ):
            ranked = [
                [h.chunk.relative_path for h in search(store, brain, q.text, v, k, hybrid=hybrid)]
                for q, v in zip(corpus.queries, qvecs, strict=True)
            ]
            result[name] = score(corpus, ranked)
    return result


def brain_model(db: Path) -> str:
    """The model name the index's brain pins (with its encoder, `NAME@int8`, unless fp32)."""
    from locallens.storage.sqlite import Store

    with Store(db, create=False) as store:
        return str(store.get_brain("bench").model)


def count_chunks(db: Path) -> int:
    from locallens.storage.sqlite import Store

    with Store(db, create=False) as store:
        return int(store.execute("SELECT count(*) FROM chunks")[0][0])


def seconds_text(seconds: float | None) -> str:
    """An index time; None or NaN for a reused index, whose time was not measured."""
    return "not measured" if seconds is None or seconds != seconds else f"{seconds:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="today,headers,multi,both")
    parser.add_argument("--corpora", default="scifact,stdlib")
    parser.add_argument("--chunkers", default="paragraph")
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT, help="BEIR SciFact folder")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/locallens-bench-retrieval"),
        help="folder for the corpora and the indexes (kept between runs)",
    )
    parser.add_argument("--out", type=Path, default=None, help="append results as JSON lines here")
    parser.add_argument("--label", default="", help="a name for this checkout in the table")
    parser.add_argument(
        "--derive-mean",
        action="store_true",
        help="after each multi-vector config, also score its windows averaged (no second index)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="score the indexes already in --work instead of building them"
    )
    parser.add_argument(
        "--pg",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="also score a copy of each index in PostgreSQL (no URL: a pgserver for the run)",
    )
    parser.add_argument(
        "--llm-rerank",
        action="store_true",
        help="also score hybrid search with its first candidates re-scored by the local LLM (slow)",
    )
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help="with headers and naive among --configs: where the answer is when only one of them holds it in its 5 chunks",
    )
    parser.add_argument("--llm-rerank-limit", type=int, default=0, help="with --llm-rerank: the first N queries only")
    args = parser.parse_args()
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("Retrieval benchmark", False)
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ["LOCALLENS_HOME"] = str(args.work / "home")

    from locallens.embedding import load_embedder

    embedder = load_embedder("auto", device="cpu")
    loaders: dict[str, Callable[[], Corpus]] = {
        "scifact": lambda: load_scifact(args.scifact, args.work),
        "stdlib": lambda: load_stdlib(args.work),
        "pydoc": lambda: load_pydoc(args.work),
        "borg": lambda: load_debian("borg", args.work, BORG_QUESTIONS),
        "varnish": lambda: load_debian("varnish", args.work, VARNISH_QUESTIONS),
        "varnish-es": lambda: load_debian("varnish", args.work, VARNISH_ES_QUESTIONS, "varnish-es"),
        "postfix": lambda: load_debian("postfix", args.work, POSTFIX_QUESTIONS),
        "postfix-es": lambda: load_debian("postfix", args.work, POSTFIX_ES_QUESTIONS, "postfix-es"),
        "apache": lambda: load_debian("apache", args.work, APACHE_QUESTIONS),
        "apache-es": lambda: load_debian("apache", args.work, APACHE_ES_QUESTIONS, "apache-es"),
        "sqlite": lambda: load_debian("sqlite", args.work, SQLITE_QUESTIONS),
        "sqlite-es": lambda: load_debian("sqlite", args.work, SQLITE_ES_QUESTIONS, "sqlite-es"),
        "rsyslog": lambda: load_debian("rsyslog", args.work, RSYSLOG_QUESTIONS),
        "rsyslog-es": lambda: load_debian("rsyslog", args.work, RSYSLOG_ES_QUESTIONS, "rsyslog-es"),
        "zsh": lambda: load_debian("zsh", args.work, ZSH_QUESTIONS),
        "zsh-es": lambda: load_debian("zsh", args.work, ZSH_ES_QUESTIONS, "zsh-es"),
        "adoc": lambda: load_debian("adoc", args.work, ADOC_QUESTIONS),
        "adoc-es": lambda: load_debian("adoc", args.work, ADOC_ES_QUESTIONS, "adoc-es"),
        "filter-repo": lambda: load_debian("filter_repo", args.work, FILTER_REPO_QUESTIONS, "filter-repo"),
        "tig": lambda: load_tig(args.work),
        # The same questions over the pages as the packages ship them (bench_answers.py's -html sets).
        "borg-html": lambda: load_debian("borg", args.work, BORG_QUESTIONS, html=True),
        "varnish-html": lambda: load_debian("varnish", args.work, VARNISH_QUESTIONS, html=True),
        "varnish-html-es": lambda: load_debian("varnish", args.work, VARNISH_ES_QUESTIONS, "varnish-es", html=True),
        "apache-html": lambda: load_debian("apache", args.work, APACHE_QUESTIONS, html=True),
        "apache-html-es": lambda: load_debian("apache", args.work, APACHE_ES_QUESTIONS, "apache-es", html=True),
        "sqlite-html": lambda: load_debian("sqlite", args.work, SQLITE_QUESTIONS, html=True),
        "sqlite-html-es": lambda: load_debian("sqlite", args.work, SQLITE_ES_QUESTIONS, "sqlite-es", html=True),
        "rsyslog-html": lambda: load_debian("rsyslog", args.work, RSYSLOG_QUESTIONS, html=True),
        "rsyslog-html-es": lambda: load_debian("rsyslog", args.work, RSYSLOG_ES_QUESTIONS, "rsyslog-es", html=True),
        "zsh-html": lambda: load_debian("zsh", args.work, ZSH_QUESTIONS, html=True),
        "zsh-html-es": lambda: load_debian("zsh", args.work, ZSH_ES_QUESTIONS, "zsh-es", html=True),
        # The Bash manuals as HTML, as PDF and as the package's folder (bench_answers.py's bash sets).
        "bash-html": lambda: load_bash("html", args.work),
        "bash-pdf": lambda: load_bash("pdf", args.work),
        "bash-mixed": lambda: load_bash("mixed", args.work),
        "sample": load_sample,
        "es": lambda: load_sample(ES_QUESTIONS, "es"),
        "pydoc-es": lambda: load_pydoc_es(args.work),
    }
    rows: list[dict[str, Any]] = []
    diagnosed: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        pg_url = None
        if args.pg is not None:
            from bench_pg import postgres

            pg_url = stack.enter_context(postgres(args.pg or None, stack.enter_context(_temporary_folder())))
        run_corpora(args, loaders, embedder, rows, pg_url, diagnosed)
    print()
    print("| corpus | config | search | hit@5 | MRR@10 | nDCG@10 | hit@5 chunks | files in top 5 | index time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        for mode in modes(row):
            m = row[mode]
            print(
                f"| {row['corpus']} | {row['config']} | {mode} | {m['hit@5']:.3f} | {m['mrr@10']:.3f} | "
                f"{m['ndcg@10']:.3f} | {m['hit@5chunks']:.3f} | {m['files@5']:.2f} | {seconds_text(row['index_s'])} |"
            )
    print_baseline(rows)
    print_diagnosis(diagnosed)
    print()
    print("Hybrid fusion grid, nDCG@10 (hit@5): score fusion by vector weight, and reciprocal rank fusion")
    for row in rows:
        print(f"  {row['corpus']} {row['config']}:")
        for name, m in row["fusion_grid"].items():
            print(f"    {name:24} {m['ndcg@10']:.3f} ({m['hit@5']:.3f})")
    c.print_end(started)


def print_baseline(rows: list[dict[str, Any]]) -> None:
    """Per corpus: the default search (as `ask` searches) beside the naive dense baseline, with the
    warm milliseconds of one search (the query's embedding excluded; load-dependent)."""
    default = {r["corpus"]: r for r in rows if r["config"].endswith("headers") and r["chunker"] == "paragraph"}
    naive = {r["corpus"]: r for r in rows if r["config"].endswith("naive") and r["chunker"] == "paragraph"}
    both = [name for name in default if name in naive]
    if not both:
        return
    print()
    print("Default search (hybrid, as `ask`) beside the naive dense baseline (no overlap, no headers, vector):")
    print("| corpus | search | answer@5 | hit@5 chunks | hit@5 | MRR@10 | files in top 5 | ms per search (warm) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in both:
        for label, m in (("default", default[name]["ask"]), ("naive", naive[name]["vector"])):
            ms = f"{m['ms']:.1f}" if "ms" in m else "not measured"
            held = f"{m['answer@5']:.3f} ({m['answered']})" if "answer@5" in m else "-"
            print(
                f"| {name} | {label} | {held} | {m['hit@5chunks']:.3f} | {m['hit@5']:.3f} | {m['mrr@10']:.3f} | "
                f"{m['files@5']:.2f} | {ms} |"
            )
        if "ask_read" in default[name]:
            m = default[name]["ask_read"]
            print(
                f"| {name} | default, as `ask` reads ({m['read']:.2f} chunks) | {m['answer@5']:.3f} ({m['answered']}) | "
                f"- | - | - | - | {m['ms5']:.1f} -> {m['ms']:.1f} |"
                if "answer@5" in m
                else f"| {name} | default, as `ask` reads ({m['read']:.2f} chunks) | - | - | - | - | - | {m['ms5']:.1f} -> {m['ms']:.1f} |"
            )
        if default[name]["ask"]["hit@5"] < naive[name]["vector"]["hit@5"]:
            print(f"| {name} | MISS: the default's hit@5 is below the naive baseline's | | | | | |")


@contextlib.contextmanager
def _temporary_folder() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="locallens-bench-retrieval-pg-") as folder:
        yield Path(folder)


def modes(row: dict[str, Any]) -> list[str]:
    """The searches scored in `row`, in table order (the PostgreSQL ones when measured)."""
    names = ["vector", "keyword", "hybrid", "hybrid_ask", "ask"]
    names += [n for n in row if n.startswith(("hybrid_ask ", "ask resort"))]
    return names + [f"pg_{n}" for n in ("vector", "hybrid", "hybrid_ask") if f"pg_{n}" in row]


def run_corpora(
    args: argparse.Namespace,
    loaders: dict[str, Callable[[], Corpus]],
    embedder: Any,
    rows: list[dict[str, Any]],
    pg_url: str | None,
    diagnosed: list[dict[str, Any]] | None = None,
) -> None:
    """Index (or reuse) and score every corpus × chunker × config; rows appended to `rows`."""
    from locallens.embedding import load_embedder

    diagnosed = [] if diagnosed is None else diagnosed
    built: set[Path] = set()  # indexes this run built (a second corpus over the same folder reuses them)
    for corpus_name in args.corpora.split(","):
        corpus = loaders[corpus_name]()
        c.note(f"{corpus_name}: {len(corpus.names)} documents, {len(corpus.queries)} queries")
        by_encoder: dict[str, Any] = {}  # queries embedded by each index's own model and encoder
        by_rendering: dict[tuple[str, str], list[Any]] = {}
        dbs: dict[str, Path] = {}  # the paragraph chunker's index of each config, for --diagnose
        for chunker in args.chunkers.split(","):
            for config in args.configs.split(","):
                label = f"{args.label}{config}" + ("" if chunker == "paragraph" else f"/{chunker}")
                db = args.work / f"{corpus.index or corpus_name}-{label.replace('/', '-')}.db"
                if (args.reuse or db in built) and db.exists():
                    seconds, chunks = float("nan"), count_chunks(db)
                    c.note(f"{corpus_name} {label}: reusing {db} ({chunks} chunks); scoring")
                else:
                    c.note(f"{corpus_name} {label}: indexing")
                    seconds, chunks = build_index(corpus, db, CONFIGS[config], chunker)
                    built.add(db)
                    c.note(f"{corpus_name} {label}: {chunks} chunks in {seconds:.1f} s; scoring")
                variants = [(label, db)]
                if args.derive_mean and CONFIGS[config]["multi_vector"]:
                    derived = db.with_name(db.stem + "-mean.db")
                    if not (args.reuse and derived.exists()):
                        derive_mean(db, derived)
                    variants.append((f"{label}(mean)", derived))
                if chunker == "paragraph":
                    dbs[config] = db
                pinned = brain_model(db)  # the model and encoder the index was embedded with
                if pinned not in by_encoder:
                    model = load_embedder(pinned, device="cpu")
                    by_encoder[pinned] = model.encode([model.spec.query_prefix + q.text for q in corpus.queries])
                qvecs = by_encoder[pinned]
                if (corpus_name, pinned) not in by_rendering:
                    by_rendering[(corpus_name, pinned)] = renderings(corpus, load_embedder(pinned, device="cpu"))
                for name, path in variants:
                    result = evaluate(corpus, path, qvecs, by_rendering[(corpus_name, pinned)])
                    if args.llm_rerank:
                        c.note(f"{corpus_name} {name}: re-scoring the first candidates with the local LLM")
                        llm = evaluate_llm_rerank(corpus, path, qvecs, args.llm_rerank_limit)
                        result |= llm
                        print(f"  {corpus_name:8} {name:22} llm rerank: {llm['llm_rerank_s']}", flush=True)
                        for key in [k for k in llm if k.startswith("llm_rerank") and k != "llm_rerank_s"]:
                            m = llm[key]
                            print(
                                f"  {corpus_name:8} {name:22} {key:18} hit@5 {m['hit@5']:.3f}  MRR@10 {m['mrr@10']:.3f}"
                                f"  nDCG@10 {m['ndcg@10']:.3f}",
                                flush=True,
                            )
                    if pg_url is not None:
                        c.note(f"{corpus_name} {name}: copying into PostgreSQL; scoring")
                        pg = evaluate_postgres(corpus, path, qvecs, pg_url)
                        result |= {f"pg_{mode}": m for mode, m in pg.items()}
                    row = {
                        "corpus": corpus_name,
                        "config": name,
                        "chunker": chunker,
                        "chunks": chunks,
                        "index_s": round(seconds, 1) if seconds == seconds else None,
                        "load": c.load_average(),
                        **result,
                    }
                    rows.append(row)
                    for mode in modes(row):
                        m = result[mode]
                        print(
                            f"  {corpus_name:8} {name:22} {mode:7} hit@5 {m['hit@5']:.3f}  MRR@10 {m['mrr@10']:.3f}"
                            f"  top-5 chunks: hit {m['hit@5chunks']:.3f} on {m['files@5']:.2f} files"
                            f"  nDCG@10 {m['ndcg@10']:.3f}  index {seconds_text(seconds)} ({chunks} chunks)",
                            flush=True,
                        )
                    if args.out:
                        with args.out.open("a", encoding="utf-8") as fh:
                            fh.write(json.dumps(row) + "\n")
        if getattr(args, "diagnose", False) and {"headers", "naive"} <= set(dbs):
            pinned = brain_model(dbs["headers"])
            diagnosed.extend(
                diagnose(corpus, dbs["headers"], dbs["naive"], by_encoder[pinned], by_rendering[(corpus_name, pinned)])
            )


if __name__ == "__main__":
    main()

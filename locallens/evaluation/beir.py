"""`eval --beir DIR`: the real pipeline (index → embed → search) scored on a public benchmark.

A BEIR-layout folder holds `corpus.jsonl` (`{"_id", "title", "text"}`), `queries.jsonl`
(`{"_id", "text"}`) and `qrels/test.tsv` (`query-id corpus-id score`, with a header row).

The corpus goes through exactly the path a user's files take: each document is written as a file
`<safe id>.txt` holding `title + " " + text` (the text MTEB embeds; the title is also the
document's title for chunk headers, `locallens.headers`) into
`<db dir>/beir/<dataset>/docs/`, and `locallens.indexer.index` indexes that folder into its own
brain `beir-<dataset>`. Files are rewritten only when their text changed, so the indexer's
(size, mtime) check makes a rerun cost a walk, not an embedding.

The test queries are embedded in one batch with the brain's model and its query prefix, each
searches `chunks_per_query` chunks (300 by default, so that ~100 distinct documents are ranked),
and a document scores as its best chunk: the chunks come back best first, so a document's rank is
the rank of its first chunk among the de-duplicated documents. nDCG@10 uses the graded qrels;
recall@k is the share of a query's relevant documents in its top k.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locallens.config import DEFAULT_DEVICE, DEFAULT_HYBRID
from locallens.errors import UsageError
from locallens.evaluation.metrics import mean, ndcg_at_k, recall_at_k
from locallens.progress import NoProgress, Progress, Relabelled
from locallens.storage import DbLocation

DEFAULT_CHUNKS_PER_QUERY = 300
RANKED_DOCUMENTS = 100  # recall@100 needs this many distinct documents per query

WRITING = "writing documents"
ENCODING = "encoding queries"
SEARCHING = "searching"
INDEXING_FILES = "indexing files"  # the indexer's stages, as this benchmark shows them
EMBEDDING_CHUNKS = "embedding chunks"


# --------------------------------------------------------------------------------------------
# Reading the dataset
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeirDataset:
    name: str  # dataset name: the folder's name without a leading "beir-"
    folder: Path
    corpus: dict[str, str]  # doc id -> `title + " " + text`, stripped
    queries: dict[str, str]  # query id -> text, every query of queries.jsonl
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}, the split's judgements
    titles: dict[str, str] = field(default_factory=dict)  # doc id -> its title field, when it has one


def dataset_name(folder: Path) -> str:
    """`beir-scifact` and `scifact` both name the dataset `scifact`."""
    name = folder.resolve().name
    stripped = re.sub(r"^beir[-_]", "", name, flags=re.IGNORECASE)
    return stripped or name


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a bad line is a UsageError naming it."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{path} line {number}: not valid JSON ({exc.msg})") from None
                if not isinstance(value, dict) or "_id" not in value:
                    raise UsageError(f'{path} line {number}: expected an object with an "_id"')
                yield number, value
        except UnicodeDecodeError as exc:
            raise UsageError(f"{path} is not UTF-8 text ({exc.reason})") from None


def load_beir(folder: Path, split: str = "test") -> BeirDataset:
    """Read a BEIR-layout folder; a missing file or a malformed line is a UsageError."""
    folder = Path(folder).expanduser()
    corpus_path, queries_path = folder / "corpus.jsonl", folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise UsageError(
                f"not a BEIR dataset folder: {path} is missing "
                "(expected corpus.jsonl, queries.jsonl and qrels/<split>.tsv)"
            )
    corpus: dict[str, str] = {}
    titles: dict[str, str] = {}
    for _, doc in _jsonl(corpus_path):
        title = str(doc.get("title") or "")
        text = str(doc.get("text") or "")
        # What MTEB embeds: title, one space, text (just the text when there is no title).
        corpus[str(doc["_id"])] = f"{title} {text}".strip()
        if title.strip():
            titles[str(doc["_id"])] = title.strip()
    queries = {str(q["_id"]): str(q.get("text") or "").strip() for _, q in _jsonl(queries_path)}

    qrels: dict[str, dict[str, int]] = {}
    try:
        lines = qrels_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {qrels_path}: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) < 3:
            raise UsageError(f"{qrels_path} line {number}: expected `query-id corpus-id score`")
        try:
            grade = int(float(parts[-1]))
        except ValueError:
            if number == 1:  # the header row ("query-id corpus-id score")
                continue
            raise UsageError(f"{qrels_path} line {number}: the score {parts[-1]!r} is not a number") from None
        qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = grade
    return BeirDataset(dataset_name(folder), folder, corpus, queries, qrels, titles)


# --------------------------------------------------------------------------------------------
# The corpus as files
# --------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_doc_name(doc_id: str) -> str:
    """A file name for a document id: `<id>.txt`, or `<cleaned id>-<hash>.txt` when the id is not
    a plain name (slashes, dots, spaces, a leading dot that would hide the file, or very long).

    The hash of the original id keeps two ids that clean to the same text apart, and an id that
    needed no cleaning can never collide with one that did (those always carry the suffix).
    """
    cleaned = _UNSAFE.sub("_", doc_id)
    if cleaned == doc_id and doc_id and len(doc_id) <= 120:
        return f"{doc_id}.txt"
    digest = hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:10]
    return f"{cleaned[:100] or 'doc'}-{digest}.txt"


@dataclass(slots=True)
class CorpusFiles:
    folder: Path
    names: dict[str, str]  # file name -> doc id
    written: int = 0  # files created or rewritten
    kept: int = 0  # files already holding the right text
    removed: int = 0  # stale files of documents no longer in the corpus


def write_corpus(dataset: BeirDataset, folder: Path, progress: Progress) -> CorpusFiles:
    """Write one file per document, touching only files whose text changed (keeps mtimes)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    files = CorpusFiles(folder, {})
    progress.add(WRITING, len(dataset.corpus))
    for doc_id, text in dataset.corpus.items():
        name = safe_doc_name(doc_id)
        files.names[name] = doc_id
        path = folder / name
        data = text.encode("utf-8")
        try:
            # Same size and same bytes: leave it alone, so the indexer skips it unread.
            if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
                files.kept += 1
            else:
                path.write_bytes(data)
                files.written += 1
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
        progress.advance(WRITING)
    # Documents that left the corpus must leave the index too: the indexer deletes what is gone.
    for stale in folder.glob("*.txt"):
        if stale.name not in files.names:
            stale.unlink(missing_ok=True)
            files.removed += 1
    return files


# --------------------------------------------------------------------------------------------
# Ranking and scoring
# --------------------------------------------------------------------------------------------


def rank_documents(paths: list[str], names: dict[str, str], limit: int = RANKED_DOCUMENTS) -> list[str]:
    """Doc ids in order of their best chunk: `paths` are the chunks' files, best chunk first."""
    ranked: list[str] = []
    seen: set[str] = set()
    for path in paths:
        doc_id = names.get(path)
        if doc_id is None or doc_id in seen:
            continue  # a file that is not part of the corpus, or a document already ranked
        seen.add(doc_id)
        ranked.append(doc_id)
        if len(ranked) >= limit:
            break
    return ranked


@dataclass(frozen=True, slots=True)
class BeirQueryResult:
    query_id: str
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    ranked: int  # distinct documents ranked (fewer than 100 lowers recall@100)


@dataclass(slots=True)
class BeirReport:
    dataset: str
    brain: str
    db: str
    model: str
    documents: int
    chunks: int
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    chunks_per_query: int
    search: str  # "vector" or "hybrid"
    index_seconds: float  # writing the files and indexing them
    query_seconds: float  # encoding the queries and searching (model load excluded)
    load_seconds: float = 0.0  # loading the embedding model for the queries (0 when indexing had)
    files_written: int = 0
    files_embedded: int = 0  # new or changed files the indexer had to embed
    chunks_embedded: int = 0
    chunks_over_length: int = 0  # of those, longer than the model's max sequence (embedded in windows)
    queries_skipped: int = 0  # judged queries missing from queries.jsonl or with no relevant doc
    short_rankings: int = 0  # queries with fewer than 100 distinct documents ranked
    per_query: list[BeirQueryResult] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "brain": self.brain,
            "db": self.db,
            "model": self.model,
            "documents": self.documents,
            "chunks": self.chunks,
            "queries": self.queries,
            "ndcg_at_10": round(self.ndcg_at_10, 4),
            "recall_at_10": round(self.recall_at_10, 4),
            "recall_at_100": round(self.recall_at_100, 4),
            "chunks_per_query": self.chunks_per_query,
            "search": self.search,
            "queries_skipped": self.queries_skipped,
            "short_rankings": self.short_rankings,
            "timings": {
                "index_s": round(self.index_seconds, 2),
                "model_load_s": round(self.load_seconds, 2),
                "query_s": round(self.query_seconds, 2),
            },
            "index": {
                "files_written": self.files_written,
                "files_embedded": self.files_embedded,
                "chunks_embedded": self.chunks_embedded,
                "chunks_over_max_length": self.chunks_over_length,
            },
            "per_query": [
                {
                    "query_id": q.query_id,
                    "ndcg_at_10": round(q.ndcg_at_10, 4),
                    "recall_at_10": round(q.recall_at_10, 4),
                    "recall_at_100": round(q.recall_at_100, 4),
                    "ranked": q.ranked,
                }
                for q in self.per_query
            ],
        }

    def render_text(self) -> str:
        lines = [
            f"BEIR {self.dataset}: {self.documents} documents ({self.chunks} chunks) in brain "
            f"{self.brain!r}, model {self.model}",
            f"{self.queries} test queries, {self.chunks_per_query} chunks searched per query "
            f"({self.search} search), a document scores as its best chunk",
            "",
            f"  nDCG@10     {self.ndcg_at_10:.4f}",
            f"  recall@10   {self.recall_at_10:.4f}",
            f"  recall@100  {self.recall_at_100:.4f}",
            "",
            f"index {self.index_seconds:.1f}s ({self.files_embedded} files, {self.chunks_embedded} chunks "
            f"embedded), model load {self.load_seconds:.1f}s, queries {self.query_seconds:.1f}s",
        ]
        if self.queries_skipped:
            lines.append(f"{self.queries_skipped} judged queries skipped (missing text or no relevant document)")
        if self.short_rankings:
            lines.append(
                f"{self.short_rankings} queries ranked fewer than {RANKED_DOCUMENTS} documents "
                "(raise the chunks per query)"
            )
        return "\n".join(lines)


def evaluate_beir(
    folder: Path,
    db: DbLocation,
    *,
    model: str | None = None,
    device: str = DEFAULT_DEVICE,
    chunks_per_query: int = DEFAULT_CHUNKS_PER_QUERY,
    split: str = "test",
    hybrid: bool = DEFAULT_HYBRID,
    progress: Progress | None = None,
) -> BeirReport:
    """Index the dataset's corpus into brain `beir-<name>` of `db` and score its `split` queries."""
    from locallens import models
    from locallens.config import locallens_home
    from locallens.indexer import EMBEDDING, FILES, IndexRequest, index
    from locallens.retrieval import search
    from locallens.storage import folder_of, open_store

    if chunks_per_query < 1:
        raise UsageError(f"chunks per query must be at least 1 (got {chunks_per_query})")
    progress = progress or NoProgress()
    dataset = load_beir(folder, split)
    brain_name = f"beir-{dataset.name}"
    # The corpus as files, beside a SQLite database; under $LOCALLENS_HOME for a PostgreSQL one.
    base = folder_of(db) or locallens_home()
    docs_folder = base / "beir" / dataset.name / "docs"

    started = time.perf_counter()
    files = write_corpus(dataset, docs_folder, progress)
    # The title field is each document's title: the header of its chunks when the brain embeds
    # headers (a chunk that starts with the title, as the first does, is embedded as it is).
    titles = {name: dataset.titles[doc_id] for name, doc_id in files.names.items() if doc_id in dataset.titles}
    indexed = index(
        IndexRequest(paths=[docs_folder], db=db, brain=brain_name, model=model, device=device, titles=titles),
        Relabelled(progress, {FILES: INDEXING_FILES, EMBEDDING: EMBEDDING_CHUNKS}),
    )
    index_seconds = time.perf_counter() - started

    # Queries judged in this split, with text, and with at least one relevant document.
    judged = [
        (qid, dataset.queries[qid], rels)
        for qid, rels in dataset.qrels.items()
        if qid in dataset.queries and dataset.queries[qid] and any(g > 0 for g in rels.values())
    ]
    skipped = len(dataset.qrels) - len(judged)
    if not judged:
        raise UsageError(f"no judged {split} query of {folder} has a text and a relevant document")

    with open_store(db) as store:
        brain = store.get_brain(brain_name)
        loading = time.perf_counter()
        embedder = models.LOADERS.embedder(brain.model, device=device)  # already loaded if the index embedded
        started = time.perf_counter()
        load_seconds = started - loading
        # One batch for all queries, with the model's query prefix (what encode_query adds).
        texts = [embedder.spec.query_prefix + text for _, text, _ in judged]
        progress.add(ENCODING, len(texts))
        vectors = embedder.encode(texts, progress=lambda n: progress.advance(ENCODING, n))
        progress.add(SEARCHING, len(judged))
        results: list[BeirQueryResult] = []
        for (qid, text, rels), vector in zip(judged, vectors):
            hits = search(store, brain, text, vector, chunks_per_query, hybrid=hybrid)
            ranked = rank_documents([h.chunk.relative_path for h in hits], files.names)
            results.append(
                BeirQueryResult(
                    query_id=qid,
                    ndcg_at_10=ndcg_at_k(ranked, rels, 10),
                    recall_at_10=recall_at_k(ranked, rels, 10),
                    recall_at_100=recall_at_k(ranked, rels, 100),
                    ranked=len(ranked),
                )
            )
            progress.advance(SEARCHING)
    query_seconds = time.perf_counter() - started

    return BeirReport(
        dataset=dataset.name,
        brain=brain_name,
        db=str(db),
        model=brain.model,
        documents=len(dataset.corpus),
        chunks=indexed.chunks_total,
        queries=len(results),
        ndcg_at_10=mean(r.ndcg_at_10 for r in results) or 0.0,
        recall_at_10=mean(r.recall_at_10 for r in results) or 0.0,
        recall_at_100=mean(r.recall_at_100 for r in results) or 0.0,
        chunks_per_query=chunks_per_query,
        search="hybrid" if hybrid else "vector",
        index_seconds=index_seconds,
        query_seconds=query_seconds,
        load_seconds=load_seconds,
        files_written=files.written,
        files_embedded=indexed.new + indexed.changed,
        chunks_embedded=indexed.chunks_embedded,
        chunks_over_length=indexed.over_length,
        queries_skipped=skipped,
        short_rankings=sum(1 for r in results if r.ranked < RANKED_DOCUMENTS),
        per_query=results,
    )

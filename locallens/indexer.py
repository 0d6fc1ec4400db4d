"""`index`: walk roots → plan against the store → chunk → embed (reusing vectors) → write.

Safety:
- One writer per brain, through `storage.open_writer` and `store.writing`: on SQLite an advisory
  lock on `<db>.lock` (fcntl, the whole file), taken before anything is written and released by
  the kernel even on SIGKILL; on PostgreSQL a server advisory lock per brain, so two hosts never
  index the same brain at once (the server releases it when the holder's connection ends,
  SIGKILL included). A second run waits up to `wait` seconds and then raises LockedError
  (exit 5). Readers never take it.
- Every document is replaced in one `BEGIN IMMEDIATE` transaction (chunks, vectors and FTS rows
  together), so a run killed at any point leaves each document either old or new, never half.
  The rerun finds the unfinished documents still changed on disk and completes the job.
- A file that fails to read (permission, vanished, changed while read) keeps its previous version,
  and so does every file below a folder that cannot be listed. A file that had content and reads
  empty is read again after a short settle (`readers.read_settled`): a save in progress (truncate,
  then write) never stores it empty. A root that is missing or empty
  keeps its documents unless --prune-missing.
- Finished files are committed at least every COMMIT_SECONDS of work, so a stopped run keeps them.
- A file is one document per brain whatever root or path reaches it: documents are matched by
  absolute path, and a second path to a file already found (a symlink, a hard link; `walk` keeps
  the first in its order) is a counted skip, never a second document.
- `--rebuild` builds into a hidden brain and swaps it in at the end in one transaction, so the old
  index serves (and survives) until the new one is complete.

Speed:
- (size, mtime_ns) unchanged → the file is not even opened. Unchanged trees cost a walk and one
  query.
- Chunks are embedded in batches across files; vectors are reused by exact embedded text (the
  chunk's header and text) within the brain (renames, duplicates and untouched paragraphs cost
  nothing).

Embedding settings, recorded in the brain like its model (and changed, like it, only by
`--rebuild`): `headers` (each chunk is embedded with its document title and section headings,
`locallens.headers`, which also go into the keyword index) and `multi_vector` (a chunk longer than
the model's window keeps one vector per window instead of their mean).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from locallens.chunking import CHUNKING_VERSION, Chunker, get_chunker, make_chunks
from locallens.config import DEFAULT_DEVICE, ChunkChoice, ChunkSettings
from locallens.domain import Chunk, Document, FileStat, Skipped
from locallens.errors import ModelMismatchError, NoIndexError, UsageError
from locallens.headers import chunk_headers, embedded_text
from locallens.locations import locate
from locallens.progress import NoProgress, Progress
from locallens.readers import DEFAULT_MAX_BYTES, read_settled
from locallens.readers.registry import reading_of
from locallens.storage import (
    Brain,
    DbLocation,
    DocumentRecord,
    IndexStore,
    StoredDocument,
    content_hash,
    db_exists,
    open_store,
    open_writer,
)
from locallens.walk import REASON_SAME_FILE, walk

if TYPE_CHECKING:
    from locallens.embedding import Embedder

# The embedding settings of a new brain (or of one rebuilt without naming them); an existing brain
# keeps its own. Headers are on: on the stdlib manual pages they lift vector MRR@10 from 0.789 to
# 0.840 for 2% more wordpieces embedded. One vector per window stays off: +0.005 to +0.014 nDCG@10
# there, for a third more vectors to store and scan (docs/decisions.md#index-settings).
DEFAULT_HEADERS = True
DEFAULT_MULTI_VECTOR = False

EMBED_BATCH_CHUNKS = 1024  # chunks gathered across files before one encode() call
# Files read are chunked together once their texts reach this many characters (or at a flush):
# the semantic chunkers then embed the sentences of many files in one call (see
# chunking.percentile.embed_documents).
CHUNK_GROUP_CHARS = 200_000
# Work is committed at least this often: pending files are flushed once this many seconds have
# passed since the last commit, and a batch is embedded in slices sized to about this long, each
# followed by the commit of the files it completed. A run stopped at any time keeps its progress.
COMMIT_SECONDS = 2.0
EMBED_SLICE_MIN = 32  # the first slice of a batch, before the embedding rate is known
REASON_ROOT_MISSING = "root is missing (unmounted?): its indexed files are kept; --prune-missing removes them"
REASON_ROOT_EMPTY = "root is empty (unmounted?): its indexed files are kept; --prune-missing removes them"


# The indexer's progress stages (locallens.progress): files found, then chunks to embed.
FILES = "files"
EMBEDDING = "embedding"


@dataclass(slots=True)
class IndexReport:
    brain: str
    db: str
    model: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    located: int = 0  # unchanged documents whose chunk locations were computed from their text
    reread: int = 0  # unchanged files read again: a newer version of their reader or of chunking
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    over_length: int = 0  # chunks longer than the embedder's max sequence length
    sentences_embedded: int = 0  # with --sentence-vectors
    skipped: list[Skipped] = field(default_factory=list)
    # Files under the roots that are not documents, by lower-case extension ("" for none):
    # neither a known format nor `--include`d (hidden, ignored and excluded files aside).
    other_types: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)  # said on stderr (overlapping roots)
    seconds: float = 0.0
    dry_run: bool = False

    @property
    def had_errors(self) -> bool:
        return any(s.error for s in self.skipped)

    def as_json(self) -> dict[str, object]:
        return {
            "brain": self.brain,
            "db": self.db,
            "model": self.model,
            "dry_run": self.dry_run,
            "files": {
                "new": self.new,
                "changed": self.changed,
                "unchanged": self.unchanged,
                "removed": self.removed,
                "skipped": len(self.skipped),
                "read_again": self.reread,
            },
            "chunks": {
                "embedded": self.chunks_embedded,
                "reused": self.chunks_reused,
                "total": self.chunks_total,
                "over_max_length": self.over_length,
            },
            "sentences_embedded": self.sentences_embedded,
            "located": self.located,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "other_files": dict(self.other_types.most_common()),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class IndexRequest:
    paths: Sequence[Path]
    db: DbLocation
    brain: str = "default"
    # What the command named (ChunkChoice), or settings in full; unnamed values are the brain's.
    chunking: ChunkSettings | ChunkChoice = field(default_factory=ChunkChoice)
    model: str | None = None  # None/"auto": the brain's pin, else auto-resolution
    encoder: str | None = (
        None  # None: the brain's (part of its pinned model name); a new brain: embedding.new_brain_encoder
    )
    device: str = DEFAULT_DEVICE
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    rebuild: bool = False
    dry_run: bool = False
    wait: float = 0.0
    sentence_vectors: bool = False  # also embed every sentence now, for instant trimming later
    prune_missing: bool = False  # a root that is gone (or empty) loses its documents
    headers: bool | None = None  # None: the brain's setting (a new brain: DEFAULT_HEADERS)
    multi_vector: bool | None = None  # None: the brain's setting (a new brain: DEFAULT_MULTI_VECTOR)
    # Titles that override what the files say, by relative path (BEIR documents carry theirs apart).
    titles: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class EmbedSettings:
    """How a brain's chunks are embedded (recorded in the brain)."""

    headers: bool = DEFAULT_HEADERS
    multi_vector: bool = DEFAULT_MULTI_VECTOR


def _resolve_roots(paths: Sequence[Path], allow_missing: bool = False) -> list[Path]:
    """The roots as absolute real paths. A missing one is a usage error, unless `allow_missing`
    (the run decides then whether it is a known root that vanished)."""
    roots = []
    for path in paths:
        path = Path(path).expanduser()
        if not path.exists() and not path.is_symlink() and not allow_missing:
            raise UsageError(f"no such file or directory: {path}")
        roots.append(path.resolve())
    return roots


def _under(path: str, folder: str) -> bool:
    """`path` is `folder` itself or lies below it (both absolute, normalised)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _file_path(root: str, relative_path: str) -> str:
    """A document's absolute path: what identifies it whatever root reached it."""
    return os.path.normpath(os.path.join(root, *relative_path.split("/")))


@dataclass(slots=True)
class _Pending:
    document: Document
    chunks: list[Chunk]
    headers: list[str]  # one per chunk ("" when the brain embeds no headers)
    hashes: list[bytes]  # content_hash of what is embedded for each chunk


class _Run:
    """One index run against an open store (or none, for a dry run of a new database)."""

    def __init__(
        self,
        request: IndexRequest,
        store: IndexStore | None,
        progress: Progress,
        model_name: str,
        settings: EmbedSettings | None = None,
        chunking: ChunkSettings | None = None,
    ) -> None:
        self.request = request
        self.chunking = chunking or ChunkSettings()
        self.store = store
        self.progress = progress
        self.model_name = model_name
        self.settings = settings or EmbedSettings()
        self.chunker: Chunker | None = None  # built on first use: semantic chunkers need the model
        self.embedder: Embedder | None = None
        self.brain: Brain | None = None
        self.target_name = request.brain
        self.root_keys: list[str] = []  # what `roots` records: folders, or single files as given
        self.pending: list[_Pending] = []
        self.pending_chunks = 0
        self.unchunked: list[Document] = []  # read, waiting to be chunked together
        self.unchunked_chars = 0
        self.known_roots: list[str] = []  # roots the brain had before this run
        self.last_commit = time.monotonic()

    def _embedded(self, n: int) -> None:
        self.progress.advance(EMBEDDING, n)

    def _get_embedder(self) -> Embedder:
        # Loaded only when something needs embedding: an unchanged reindex starts no model.
        if self.embedder is None:
            from locallens import models

            self.embedder = models.LOADERS.embedder(self.model_name, device=self.request.device)
            if self.embedder.name != self.model_name or (
                self.brain is not None and self.embedder.dim != self.brain.dim
            ):
                dim = self.brain.dim if self.brain is not None else "?"
                raise ModelMismatchError(
                    f"brain {self.request.brain!r} was built with {self.model_name} ({dim} dimensions) but "
                    f"{self.embedder.name} loaded with {self.embedder.dim}; rerun with --rebuild"
                )
        return self.embedder

    def _get_chunker(self) -> Chunker:
        if self.chunker is None:
            c = self.chunking
            encode = self._get_embedder().encode if c.strategy != "paragraph" else None
            self.chunker = get_chunker(c.strategy, c.chunk_size, c.chunk_overlap, encode)
        return self.chunker

    def run(self, report: IndexReport, brain: Brain | None) -> None:
        self.brain = brain
        writing = self.store is not None and not self.request.dry_run
        stored: dict[tuple[str, str], StoredDocument] = (
            self.store.documents(brain) if (self.store is not None and brain is not None) else {}
        )
        rechunk_all = brain is not None and _chunking_of(brain) != self.chunking
        # A file is one document per brain, whatever root reaches it: documents are identified by
        # their absolute path, and a file already stored keeps the (root, relative path) it has.
        by_path = {_file_path(doc.root, doc.relative_path): doc for doc in stored.values()}
        found: list[FileStat] = []
        seen: set[str] = set()  # absolute paths found, or skipped (a skipped file keeps its version)
        inodes: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of each file found: its path
        kept_below: list[str] = []  # folders that could not be listed: everything below is kept
        walked: list[str] = []  # deletions are looked for only under folders walked whole
        roots = _resolve_roots(self.request.paths, allow_missing=True)
        run_dirs = [str(r) for r in roots if r.is_dir()]
        for root in roots:
            key = str(root)
            if not root.exists():
                self._missing_root(report, key, by_path, walked, kept_below)
                continue
            self.root_keys.append(key)
            base = key if root.is_dir() else str(root.parent)
            # Files under a root inside another root of the brain are stored under the outer one.
            outer = self._outer_root(report, key, run_dirs) if root.is_dir() else key
            prefix = "" if outer == key else os.path.relpath(key, outer).replace(os.sep, "/") + "/"
            listed = 0
            for item in walk(root, self.request.include, self.request.exclude, report.other_types):
                listed += 1
                if isinstance(item, Skipped) and item.same_as:
                    # Another path to a file (or folder) found first: not a document, so a
                    # document stored under this path (before symlinks were followed once) goes.
                    report.skipped.append(item)
                    continue
                if isinstance(item, Skipped):
                    report.skipped.append(item)
                    path = _file_path(base, item.path)
                    # A file we could not read keeps its previous version (never lose data), and
                    # so does everything below a folder we could not list.
                    seen.add(path)
                    if item.error:
                        kept_below.append(path)
                    continue
                path = _file_path(item.root, item.relative_path)
                if path in seen:
                    continue  # reached again through an overlapping root of this run
                first = inodes.setdefault((item.dev, item.ino), path) if item.ino else path
                if first != path:
                    # The same file by another path under another root of this run (a hard link).
                    report.skipped.append(Skipped(path, f"{REASON_SAME_FILE} {first}", error=False, same_as=first))
                    continue
                seen.add(path)
                old = by_path.get(path)
                if old is not None:
                    item = replace(item, root=old.root, relative_path=old.relative_path)
                elif prefix:
                    item = replace(item, root=outer, relative_path=prefix + item.relative_path)
                found.append(item)
            if root.is_dir():
                if not listed and not self.request.prune_missing and any(_under(path, key) for path in by_path):
                    # Nothing at all where documents were: an unmounted drive looks just like this.
                    report.skipped.append(Skipped(key, REASON_ROOT_EMPTY, error=True))
                    kept_below.append(key)
                else:
                    walked.append(key)
        self.progress.add(FILES, len(found))
        for stat in found:
            old = stored.get((stat.root, stat.relative_path))
            same_stat = old is not None and (old.size, old.mtime_ns) == (stat.size, stat.mtime_ns)
            # Read by an older version of its format's reader, or chunked by an older chunking:
            # read again and written anew.
            reread = old is not None and not read_as_now(old.reading, stat.relative_path)
            if (
                old is not None
                and not rechunk_all
                and same_stat
                and not reread
                and (old.line_offset is not None or not writing)
            ):
                # A document stored before chunk locations existed (`line_offset` None) is read
                # once more, below, to locate its chunks: still nothing is embedded.
                report.unchanged += 1
                if old.line_offset is None:
                    report.located += 1
                self.progress.advance(FILES)
                continue
            # A file that had content and reads empty (or changes while read) may be mid-save:
            # `read_settled` looks again rather than store the empty moment.
            read = read_settled(stat, self.request.max_bytes, had_content=old is not None and old.size > 0)
            if isinstance(read, Skipped):
                if same_stat:
                    report.unchanged += 1  # unchanged, only not readable now: it stays as it was
                else:
                    report.skipped.append(read)
                self.progress.advance(FILES)
                continue
            if self.request.titles and stat.relative_path in self.request.titles:
                read = replace(read, title=self.request.titles[stat.relative_path])
            if reread and same_stat and not rechunk_all:
                # The same text may come with another title or headings (a chunk's header): the
                # document is written anew either way; only chunks whose embedded text changed
                # are embedded.
                report.reread += 1
            elif old is not None and not rechunk_all and old.checksum == read.checksum:
                # Touched but identical: remember the new stat so the next run skips reading it,
                # and move the chunks' lines when only the blank lines before the text changed
                # (the text, so its checksum, is the same) or when they were never located.
                report.unchanged += 1
                if writing:
                    assert self.store is not None
                    if not same_stat:
                        self.store.update_document_stat(old.id, read.size, read.mtime_ns)
                    if old.line_offset != read.line_offset:
                        report.located += old.line_offset is None
                        self._relocate(old, read)
                self.progress.advance(FILES)
                continue
            elif old is None:
                report.new += 1
            else:
                report.changed += 1
            if not writing:
                self.progress.advance(FILES)
                continue
            self.unchunked.append(read)
            self.unchunked_chars += len(read.text)
            due = time.monotonic() - self.last_commit >= COMMIT_SECONDS
            if self.unchunked_chars >= CHUNK_GROUP_CHARS or due:
                self._chunk_unchunked()
            if self.pending_chunks >= EMBED_BATCH_CHUNKS or due:
                self._flush(report)
        if writing:
            self._flush(report)
        gone = [
            doc
            for path, doc in by_path.items()
            if path not in seen
            and any(_under(path, w) for w in walked)
            and not any(_under(path, k) for k in kept_below)
        ]
        report.removed = len(gone)
        if gone and writing and brain is not None:
            assert self.store is not None
            self.store.delete_documents(brain, [doc.id for doc in gone])

    def _relocate(self, old: StoredDocument, read: Document) -> None:
        """Locate the stored chunks of a document whose text is unchanged: no chunking, no embedding."""
        assert self.store is not None
        rows = self.store.chunk_texts(old.id)
        locations = locate(read, [content for _, content in rows])
        self.store.set_locations(old.id, read.line_offset, [(rowid, loc) for (rowid, _), loc in zip(rows, locations)])

    def _missing_root(
        self,
        report: IndexReport,
        key: str,
        by_path: dict[str, StoredDocument],
        walked: list[str],
        kept_below: list[str],
    ) -> None:
        """A root given again that is gone: keep its documents (a drive may be unmounted) unless
        --prune-missing. A path the brain never had as a root is a usage error, as always."""
        if key not in self.known_roots:
            raise UsageError(f"no such file or directory: {key}")
        if self.request.prune_missing:
            walked.append(key)  # nothing is seen below it: its documents go
            if not self.request.rebuild:
                self.root_keys.append(key)  # a rebuilt brain does not keep it as a root
        elif self.request.rebuild:
            raise UsageError(
                f"root {key} is missing (unmounted?); --rebuild would drop its indexed files: "
                "mount it, or pass --prune-missing to drop them"
            )
        else:
            self.root_keys.append(key)
            report.skipped.append(Skipped(key, REASON_ROOT_MISSING, error=True))
            kept_below.append(key)

    def _outer_root(self, report: IndexReport, key: str, run_dirs: Sequence[str]) -> str:
        """The outermost folder root of the brain (known or given now) holding `key`; notes overlaps."""
        # A --rebuild keeps only this run's roots, so only they can hold the files.
        roots = list(dict.fromkeys([*([] if self.request.rebuild else self.known_roots), *run_dirs]))
        outer = key
        for other in roots:
            if other != key and _under(key, other) and len(other) < len(outer):
                outer = other
        for other in roots:
            if other != key and _under(key, other):
                report.notes.append(
                    f"{key} is inside {other}, also a root of brain {self.request.brain!r}: its files are indexed once"
                )
            elif other != key and other not in run_dirs and _under(other, key):
                report.notes.append(
                    f"{other}, a root of brain {self.request.brain!r}, is inside {key}: its files are indexed once"
                )
        return outer

    def _chunk_unchunked(self) -> None:
        """Chunk the files read so far, all at once, into pending work."""
        if not self.unchunked:
            return
        documents, self.unchunked, self.unchunked_chars = self.unchunked, [], 0
        for read, texts in zip(documents, self._get_chunker().chunk_many([d.text for d in documents]), strict=True):
            chunks, headers = cut(read, self.request.brain, texts, headers=self.settings.headers)
            hashes = [content_hash(embedded_text(h, c.content)) for h, c in zip(headers, chunks, strict=True)]
            self.pending.append(_Pending(read, chunks, headers, hashes))
            self.pending_chunks += len(chunks)

    def _flush(self, report: IndexReport) -> None:
        self._chunk_unchunked()
        if not self.pending:
            return
        assert self.store is not None
        brain = self.ensure_brain()
        hashes = [item.hashes for item in self.pending]
        vectors = self.store.reusable_vectors(brain, {h for doc_hashes in hashes for h in doc_hashes})
        # Unique embedded texts not stored yet: duplicates within the batch are embedded once.
        todo: dict[bytes, tuple[str, str]] = {}
        for item in self.pending:
            for chunk, header, h in zip(item.chunks, item.headers, item.hashes, strict=True):
                if h not in vectors and h not in todo:
                    todo[h] = (chunk.content, header)
        report.chunks_embedded += len(todo)
        report.chunks_reused += sum(len(h) for h in hashes) - len(todo)
        written = 0
        if todo:
            embedder = self._get_embedder()
            keys = list(todo.keys())
            texts = [text for text, _ in todo.values()]
            headers = [header for _, header in todo.values()]
            # Each text and header is tokenised once for the count, the plan and the slices.
            report.over_length += embedder.count_over_length(texts, headers)
            embedder.plan(texts, headers)  # the batch's backend is chosen for all of it, not per slice
            self.progress.add(EMBEDDING, len(texts))
            # In slices of about COMMIT_SECONDS each, committing the files every slice completes:
            # a run stopped mid-batch keeps what it embedded.
            start, step = 0, EMBED_SLICE_MIN
            while start < len(texts):
                began = time.monotonic()
                part = texts[start : start + step]
                encoded = embedder.encode_passages(
                    part,
                    headers[start : start + step],
                    multi_vector=self.settings.multi_vector,
                    progress=self._embedded,
                )
                # One row stays a vector; several (one per window) stay a matrix.
                vectors.update(
                    zip(keys[start : start + step], (m[0] if len(m) == 1 else m for m in encoded), strict=True)
                )
                start += len(part)
                rate = len(part) / max(time.monotonic() - began, 1e-3)
                step = max(EMBED_SLICE_MIN, min(EMBED_BATCH_CHUNKS, int(rate * COMMIT_SECONDS)))
                written = self._write_ready(report, brain, vectors, hashes, written)
        self._write_ready(report, brain, vectors, hashes, written)
        self.pending.clear()
        self.pending_chunks = 0
        self.last_commit = time.monotonic()

    def _write_ready(
        self,
        report: IndexReport,
        brain: Brain,
        vectors: dict[bytes, np.ndarray],
        hashes: list[list[bytes]],
        start: int,
    ) -> int:
        """Write pending documents from `start` on, in order, while every vector they need is known."""
        assert self.store is not None
        end = start
        while end < len(self.pending) and all(h in vectors for h in hashes[end]):
            end += 1
        if end == start:
            return start
        if self.request.sentence_vectors:
            self._embed_sentences(report, [chunk for item in self.pending[start:end] for chunk in item.chunks])
        for item, doc_hashes in zip(self.pending[start:end], hashes[start:end], strict=True):
            doc = item.document
            record = DocumentRecord(
                root=doc.root,
                relative_path=doc.relative_path,
                size=doc.size,
                mtime_ns=doc.mtime_ns,
                checksum=doc.checksum,
                chunks=item.chunks,
                vectors=[vectors[h] for h in doc_hashes],
                headers=item.headers,
                hashes=doc_hashes,
                line_offset=doc.line_offset,
                reading=document_reading(doc.reading),
            )
            self.store.write_document(brain, record)
            self.progress.advance(FILES)
        self.last_commit = time.monotonic()
        return end

    def _embed_sentences(self, report: IndexReport, chunks: list[Chunk]) -> None:
        """Fill the sentence cache that trimming reads, so `ask --trim` embeds nothing."""
        from locallens.retrieval import SentenceEncoder
        from locallens.sentences import split_chunk_prefix, split_sentences

        sentences = list(
            dict.fromkeys(s for chunk in chunks for s in split_sentences(split_chunk_prefix(chunk.content)[1]))
        )
        encoder = SentenceEncoder(
            self._get_embedder(), self.store, best_effort=False, progress=self.progress, stage=EMBEDDING
        )
        encoder(sentences)
        report.sentences_embedded += encoder.encoded

    def ensure_brain(self) -> Brain:
        """The brain is created on first write, with the dimension of the model actually loaded."""
        if self.brain is None:
            assert self.store is not None
            embedder = self._get_embedder()
            c = self.chunking
            self.brain = self.store.create_brain(
                self.target_name,
                embedder.name,
                embedder.dim,
                c.strategy,
                c.chunk_size,
                c.chunk_overlap,
                headers=self.settings.headers,
                multi_vector=self.settings.multi_vector,
            )
            # Its roots now, not only when the run ends: a run that stops early leaves a brain
            # whose files `status` can still compare with the disk.
            self.store.add_roots(self.brain, self.root_keys)
        return self.brain


def index(request: IndexRequest, progress: Progress | None = None) -> IndexReport:
    """Bring brain `request.brain` in `request.db` up to date with `request.paths`."""
    progress = progress or NoProgress()
    started = time.perf_counter()
    # Fail on a bad path before taking any lock. A missing path can only be a root that vanished
    # (kept, or pruned with --prune-missing) when there is an index that may know it.
    _resolve_roots(request.paths, allow_missing=db_exists(request.db))
    if request.dry_run:
        return _dry_run(request, progress, started)
    if request.model not in (None, "", "auto"):
        from locallens.embedding import resolve_model

        resolve_model(request.model)  # a model not present is exit 6 now, before any lock or file
    with open_writer(request.db, request.wait) as store, store.writing(request.brain, request.wait):
        report = _index_locked(request, store, progress)
    report.seconds = time.perf_counter() - started
    return report


def _chunking_of(brain: Brain) -> ChunkSettings:
    return ChunkSettings(brain.chunk_size, brain.chunk_overlap, brain.chunker)


def _pinned_chunking(request: IndexRequest, existing: Brain | None) -> ChunkSettings:
    """The chunk settings of this run: what the command named over the brain's (a new brain's:
    the defaults). Settings given whole are used as they are."""
    if isinstance(request.chunking, ChunkSettings):
        return request.chunking
    return request.chunking.resolve(_chunking_of(existing) if existing is not None else ChunkSettings())


def _pinned_model(request: IndexRequest, existing: Brain | None) -> str:
    """The model this run embeds with: the brain's pin; never a silent switch.

    Without --rebuild another model or encoder is refused. With --rebuild, what is not named is
    kept: no --model and no --encoder rebuilds with the brain's own model and encoder; --encoder
    alone, the brain's model with that encoder; --model naming the brain's own model keeps its
    encoder; another --model takes its own default encoder unless --encoder names one.
    """
    from locallens.embedding import FP32, encoder_named, new_brain_encoder, resolve_model

    requested = None if request.model in (None, "", "auto") else request.model
    encoder = request.encoder or None
    if existing is None:
        chosen = encoder or new_brain_encoder(requested, request.device)
        return resolve_model(requested, encoder=chosen, device=request.device).name
    if requested is None and encoder is None:
        return existing.model
    own_base = existing.model.removesuffix(f"@{encoder_named(existing.model)}")
    if request.rebuild and requested is not None and encoder is None and not encoder_named(requested):
        chosen = new_brain_encoder(requested, request.device)
        named = resolve_model(requested, encoder=chosen, device=request.device).name
        # Naming the brain's own model keeps its encoder; another model takes its own default.
        own = resolve_model(own_base, encoder=new_brain_encoder(own_base, request.device), device=request.device)
        return existing.model if named == own.name else named
    # The model named (else the brain's) with the encoder named (else the one the name says,
    # else the brain's): naming the brain's own model keeps its encoder.
    base = requested if requested is not None else own_base
    if encoder is None and not encoder_named(base):
        encoder = encoder_named(existing.model) or FP32
    try:
        name = resolve_model(base, encoder=encoder, device=request.device).name
    except UsageError:
        if request.encoder:
            raise
        # Another model, which the brain's encoder does not cover: a mismatch either way.
        name = resolve_model(base, encoder=FP32, device=request.device).name
    if name != existing.model and not request.rebuild:
        raise ModelMismatchError(
            f"brain {existing.name!r} was built with {existing.model} ({existing.dim} dimensions), "
            f"not {name}; rerun with --rebuild to re-embed it with {name}, or use another --brain"
        )
    return name


def _pinned_settings(request: IndexRequest, existing: Brain | None) -> EmbedSettings:
    """The embedding settings of this run: the brain's; never a silent switch.

    Like the model: a setting named now that differs from the brain's is refused with the advice
    to rebuild, since the stored vectors were computed the other way. A --rebuild takes the
    settings named and keeps the brain's other ones; a new brain takes the defaults.
    """
    wanted = {"headers": request.headers, "multi_vector": request.multi_vector}
    if existing is None or request.rebuild:
        base = (
            EmbedSettings() if existing is None else EmbedSettings(bool(existing.headers), bool(existing.multi_vector))
        )
        return EmbedSettings(**{k: (getattr(base, k) if v is None else v) for k, v in wanted.items()})
    labels = {
        "headers": ("chunk headers", "--headers", "--no-headers"),
        "multi_vector": ("one vector per window", "--multi-vector", "--no-multi-vector"),
    }
    for key, value in wanted.items():
        have = bool(getattr(existing, key))
        if value is not None and value != have:
            what, on, off = labels[key]
            raise ModelMismatchError(
                f"brain {existing.name!r} was embedded with {what} {'on' if have else 'off'} ({on if have else off}); "
                f"rerun with --rebuild to re-embed it with {on if value else off}, or use another --brain"
            )
    return EmbedSettings(headers=bool(existing.headers), multi_vector=bool(existing.multi_vector))


REBUILD_PREFIX = ".rebuild:"  # a --rebuild builds into the hidden brain `.rebuild:<name>:<pid>`


def unfinished_rebuilds(store: IndexStore, name: str) -> list[Brain]:
    """The hidden brains of interrupted `--rebuild`s of brain `name`, newest first."""
    return sorted(
        (b for b in store.brains() if b.name.startswith(f"{REBUILD_PREFIX}{name}:")), key=lambda b: b.id, reverse=True
    )


def _rebuild_paths(request: IndexRequest, existing: Brain | None, store: IndexStore) -> list[Path]:
    """What a --rebuild walks: the paths given and every other root of the brain (a rebuild
    re-embeds the whole brain; `--prune-missing` lets a root that is gone be dropped)."""
    given = {str(p) for p in _resolve_roots(request.paths, allow_missing=True)}
    others = [Path(r) for r in (store.roots(existing) if existing is not None else []) if r not in given]
    return [*request.paths, *others]


def _resumable(request: IndexRequest, store: IndexStore, run: _Run, report: IndexReport) -> Brain | None:
    """The hidden brain of an interrupted --rebuild that this one can finish, if any.

    It is resumed when it was being built with the same model, encoder and embedding settings
    and the model still gives its dimension: its documents are then kept where unchanged on disk,
    and its vectors reused by content. Any other leftover of the brain is dropped.
    """
    leftovers = unfinished_rebuilds(store, request.brain)
    resume = next(
        (
            b
            for b in leftovers
            if b.model == run.model_name
            and (bool(b.headers), bool(b.multi_vector)) == (run.settings.headers, run.settings.multi_vector)
        ),
        None,
    )
    if resume is not None and run._get_embedder().dim != resume.dim:
        resume = None  # the model's files changed since: its vectors are not this model's
    for leftover in leftovers:
        if leftover is not resume:
            store.delete_brain(leftover)
    if resume is not None:
        stats = store.stats(resume)
        report.notes.append(
            f"resuming an interrupted rebuild of brain {request.brain!r}: {stats.documents} file(s) "
            f"already rebuilt are kept where unchanged, and {stats.chunks} chunk vector(s) reused by content"
        )
    return resume


def _index_locked(request: IndexRequest, store: IndexStore, progress: Progress) -> IndexReport:
    existing = store.find_brain(request.brain)
    model_name = _pinned_model(request, existing)
    settings = _pinned_settings(request, existing)
    if request.rebuild:
        request = replace(request, paths=_rebuild_paths(request, existing, store))
    report = IndexReport(brain=request.brain, db=str(request.db), model=model_name)
    run = _Run(request, store, progress, model_name, settings, _pinned_chunking(request, existing))
    run.known_roots = store.roots(existing) if existing is not None else []
    if request.rebuild:
        # Build beside the old brain, then swap in one transaction: the old one serves until then.
        # An interrupted rebuild left its hidden brain: this one goes on from it.
        resume = _resumable(request, store, run, report)
        run.target_name = resume.name if resume is not None else f"{REBUILD_PREFIX}{request.brain}:{os.getpid()}"
        report.notes.append(
            f"rebuilding brain {request.brain!r} with {model_name} (chunk headers "
            f"{'on' if settings.headers else 'off'}, one vector per window {'on' if settings.multi_vector else 'off'}) "
            f"from {len(request.paths)} root(s): " + ", ".join(str(r) for r in _resolve_roots(request.paths, True))
        )
        run.run(report, resume)
        brain = run.ensure_brain()
        if _chunking_of(brain) != run.chunking:
            c = run.chunking
            store.set_chunking(brain, c.strategy, c.chunk_size, c.chunk_overlap)
        store.replace_brain(existing, brain, request.brain)
    else:
        run.target_name = request.brain
        run.run(report, existing)
        brain = run.ensure_brain()  # an empty folder still makes a brain: `ask` then says "nothing found"
        if _chunking_of(brain) != run.chunking:
            c = run.chunking
            store.set_chunking(brain, c.strategy, c.chunk_size, c.chunk_overlap)
    final = store.get_brain(request.brain)
    store.touch_brain(final, run.root_keys)
    report.chunks_total = store.stats(final).chunks
    return report


def _dry_run(request: IndexRequest, progress: Progress, started: float) -> IndexReport:
    """Report what would change; opens the database read-only-ish (never creates it)."""
    store: IndexStore | None
    try:
        store = open_store(request.db) if db_exists(request.db) else None
    except NoIndexError:
        store = None  # an empty database file: nothing indexed yet, and it stays as it is
    try:
        brain = store.find_brain(request.brain) if store is not None else None
        model_name = _pinned_model(request, brain)
        settings = _pinned_settings(request, brain)
        chunking = _pinned_chunking(request, brain)
        if request.rebuild:
            if store is not None:
                request = replace(request, paths=_rebuild_paths(request, brain, store))
            brain = None  # everything would be built anew
        report = IndexReport(brain=request.brain, db=str(request.db), model=model_name, dry_run=True)
        run = _Run(request, store, progress, model_name, settings, chunking)
        known = store.find_brain(request.brain) if store is not None else None
        run.known_roots = store.roots(known) if (store is not None and known is not None) else []
        run.run(report, brain)
        if brain is not None and store is not None:
            report.chunks_total = store.stats(brain).chunks
    finally:
        if store is not None:
            store.close()
    report.seconds = time.perf_counter() - started
    return report


def cut(read: Document, brain: str, texts: Sequence[str], *, headers: bool) -> tuple[list[Chunk], list[str]]:
    """A document's chunks as a brain stores them, from the chunker's texts: numbered, each with
    its location, and each one's header ("" for every chunk when `headers` is off)."""
    chunks = make_chunks(read, brain, texts)
    contents = [chunk.content for chunk in chunks]
    located = [replace(chunk, location=loc) for chunk, loc in zip(chunks, locate(read, contents), strict=True)]
    return located, chunk_headers(read, contents) if headers else [""] * len(chunks)


def document_reading(reader: str) -> str:
    """What a document is stored with: the reader and version that made its text (`reading_of`,
    "html_page/2") and the chunking version that cut it ("html_page/2+chunks/1")."""
    return f"{reader}+chunks/{CHUNKING_VERSION}"


def read_as_now(stored: str, relative_path: str) -> bool:
    """A document stored with the `stored` reading would be read and chunked the same way now.
    '' (stored before readings were recorded) is version 1 of its reader and of chunking."""
    if not stored:
        return reading_of(relative_path).endswith("/1") and CHUNKING_VERSION == 1
    return stored == document_reading(reading_of(relative_path))


def stale_files(store: IndexStore, brain: Brain) -> int:
    """Files under the brain's roots that are new, changed (size/mtime) or gone since indexing, or
    that a newer reader of their format, or newer chunking, would read again."""
    # Documents are identified by absolute path, as `index` does: overlapping roots count once.
    by_path = {_file_path(doc.root, doc.relative_path): doc for doc in store.documents(brain).values()}
    seen: set[str] = set()
    inodes: dict[tuple[int, int], str] = {}
    kept_below: list[str] = []
    stale = 0
    for root in store.roots(brain):
        if not Path(root).exists():
            continue
        base = root if Path(root).is_dir() else str(Path(root).parent)
        for item in walk(Path(root)):
            if isinstance(item, Skipped) and item.same_as:
                continue  # another path to a file found first: a document stored there is stale
            if isinstance(item, Skipped):
                path = _file_path(base, item.path)
                seen.add(path)
                if item.error:
                    kept_below.append(path)  # a folder that cannot be listed keeps its files
                continue
            path = _file_path(item.root, item.relative_path)
            if path in seen:
                continue
            if item.ino and inodes.setdefault((item.dev, item.ino), path) != path:
                continue  # a hard link to a file of an earlier root: indexed once, there
            seen.add(path)
            old = by_path.get(path)
            if (
                old is None
                or old.size != item.size
                or old.mtime_ns != item.mtime_ns
                or not read_as_now(old.reading, item.relative_path)
            ):
                stale += 1
    stale += sum(1 for path in by_path if path not in seen and not any(_under(path, k) for k in kept_below))
    return stale

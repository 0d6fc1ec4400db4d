"""retrieve(): query → vector → k nearest chunks → (optional) trimming, with token accounting.

The result carries `tokens_before` (base retrieval) and `tokens_in_context` (after trimming) with
the `round(1.3 × words)` estimate, and exact tiktoken counts beside them
(docs/behaviour.md#token-accounting).
Trimming is off unless asked for (a flag, or LOCALLENS_TRIM=1; LOCALLENS_TRIM_THRESHOLD overrides
the threshold: see `trim_settings_from_env`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from locallens import broad, compare, crosslang, examples, models
from locallens.config import (
    DEFAULT_DEVICE,
    DEFAULT_HYBRID,
    DEFAULT_MIN_RELEVANCE,
    DEFAULT_MIN_SENTENCES,
    DEFAULT_RERANK_CANDIDATES,
    DEFAULT_TOP_K,
    DEFAULT_TRIM_THRESHOLD,
    DEFAULT_TRIM_WINDOW,
    env_flag,
    number_problem,
)
from locallens.domain import Chunk, Hit, RetrievalResult, document_of
from locallens.embedding import Embedder
from locallens.errors import UsageError
from locallens.progress import Progress
from locallens.storage import Brain, DbLocation, IndexStore, content_hash, open_store
from locallens.tokens import count_tokens, estimate_tokens

# The longest question (or trim query), in characters: the same cap as the HTTP and MCP tools'
# schema, about 5,000 tokens, more than the default 4,096-token context holds. Anything longer is
# a document, not a question; embedding it would take tens of seconds before it is refused.
MAX_QUESTION_CHARS = 20_000


def check_question(text: str, *, n_ctx: int = 0, what: str = "the question") -> None:
    """Refuse (UsageError, exit 2) a question that can never be answered, before any model loads.

    Two checks, both cheap: the character cap (`MAX_QUESTION_CHARS`), and, when an LLM with a
    known context (`n_ctx` > 0) will read it, its tiktoken count against that whole context. The
    model's own tokeniser may count differently, so the token check compares with all of `n_ctx`
    (not n_ctx minus the prompt and the answer's reserve): it only refuses questions that cannot
    fit by any reasonable count; the exact check after retrieval still handles the borderline.
    """
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"{what} is too long: {len(text)} characters > {MAX_QUESTION_CHARS}; "
            "shorten it (to trim a document, use `locallens trim QUERY --text FILE`)"
        )
    if n_ctx > 0 and (tokens := count_tokens(text)) > n_ctx:
        raise UsageError(
            f"{what} is too long for the model's context: {tokens} tokens > {n_ctx}; shorten it or raise --ctx"
        )


@dataclass(frozen=True, slots=True)
class TrimSettings:
    enabled: bool = False
    threshold: float = DEFAULT_TRIM_THRESHOLD
    min_sentences: int = DEFAULT_MIN_SENTENCES
    window: int = DEFAULT_TRIM_WINDOW


def trim_settings_from_env(
    flag: bool | None, threshold: float | None, window: int, min_sentences: int = DEFAULT_MIN_SENTENCES
) -> TrimSettings:
    """Flag > LOCALLENS_TRIM; --threshold > LOCALLENS_TRIM_THRESHOLD > DEFAULT_TRIM_THRESHOLD."""
    enabled = flag if flag is not None else env_flag("LOCALLENS_TRIM")
    if threshold is None:
        raw = os.environ.get("LOCALLENS_TRIM_THRESHOLD", "").strip()
        try:
            threshold = float(raw) if raw else DEFAULT_TRIM_THRESHOLD
        except ValueError:
            raise UsageError(f"LOCALLENS_TRIM_THRESHOLD must be a number (got {raw!r})") from None
        if problem := number_problem(threshold, -1.0, 1.0):
            raise UsageError(f"LOCALLENS_TRIM_THRESHOLD, a cosine similarity, {problem}")
    elif problem := number_problem(threshold, -1.0, 1.0):
        raise UsageError(f"--threshold, a cosine similarity, {problem}")
    return TrimSettings(enabled=enabled, threshold=threshold, min_sentences=min_sentences, window=window)


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """Stage 2 of two-stage retrieval: a cross-encoder re-scores the bi-encoder's candidates
    (docs/behaviour.md#retrieval)."""

    model: str  # a CrossEncoder hub id (from the local cache) or folder
    candidates: int = DEFAULT_RERANK_CANDIDATES  # stage-1 recall
    min_relevance: float = DEFAULT_MIN_RELEVANCE  # drop candidates the cross-encoder scores below this (0..1)
    device: str = DEFAULT_DEVICE


def rerank_hits(query: str, hits: Sequence[Hit], settings: RerankSettings, top_k: int) -> list[Hit]:
    """Re-score (query, chunk) pairs with the cross-encoder; best `top_k` above min_relevance.
    `--rerank llm` re-scores with the local LLM instead (`locallens.llm_rerank`)."""
    if not hits:
        return []
    if settings.model == "llm":
        from locallens.llm_rerank import llm_rerank

        return diversify(llm_rerank(query, hits), top_k)
    reranker = models.LOADERS.reranker(settings.model, settings.device)
    raw = np.asarray(
        reranker.predict([(query, h.content) for h in hits], show_progress_bar=False), dtype=np.float64
    ).reshape(len(hits), -1)[:, -1]
    # Models with one output and no activation give logits: squash them to 0..1 so that the
    # default minimum relevance (0.4) means the same thing for every model.
    scores = raw if (raw.min() >= 0.0 and raw.max() <= 1.0) else 1.0 / (1.0 + np.exp(-raw))
    ranked = sorted(zip(hits, scores), key=lambda pair: -pair[1])
    return [replace(h, rerank_score=float(s)) for h, s in ranked if s >= settings.min_relevance][:top_k]


# Hybrid fusion: every candidate (the best max(k, HYBRID_CANDIDATES) of each ranking) has a cosine
# similarity and a keyword score (0 when it did not match the keywords); each is standardised over
# the candidates (z = (score - mean) / standard deviation), and a candidate scores
# HYBRID_VECTOR_WEIGHT * z_cosine + (1 - HYBRID_VECTOR_WEIGHT) * z_keyword. Measured against
# reciprocal rank fusion on SciFact, the stdlib manual pages and the Python language reference
# (docs/decisions.md#hybrid-search): fusing scores keeps how far ahead a clear winner is, which
# ranks alone lose; 0.7 is the best weight on both documentation corpora.
HYBRID_VECTOR_WEIGHT = 0.7
HYBRID_CANDIDATES = 20
# A query made only of identifiers (every word holds a digit or inner punctuation: an IP, a
# version, a policy number, `10.40.1.50`) gives the embedder nothing to read: its nearest chunks
# are noise that a lone exact keyword match must be able to beat. Such queries weigh the vectors
# at IDENTIFIER_VECTOR_WEIGHT. (None of the benchmark questions is one; with 0.7 a bare IP in
# sample_docs/ ranked a VPN note above the one page that has it.)
IDENTIFIER_VECTOR_WEIGHT = 0.5
# Diversity: a file gives at most MAX_CHUNKS_PER_FILE of the k results before another file's next
# best chunk (its further chunks follow only when no other file has one left). With overlapping
# chunks that share a header, the neighbours of a file's best chunk score nearly as high and
# filled the top 5 with one or two files (docs/decisions.md#diversity).
MAX_CHUNKS_PER_FILE = 2


# What the cap held back is read too: `ask` (`retrieve(read_held=True)`) reads, after its k
# results, the chunks that the fused ranking put among its first k and the cap held back for
# other files (`held_back`; at most k - 2, and only in hybrid search without a reranker): the
# cap adds files to what is read and no longer takes away the best file's third chunk. On long
# pages the answer is often there (a page's option list runs over several chunks, all of them
# ranked high). Measured on the 14 development sets and the zsh manual
# (docs/decisions.md#what-the-cap-held-back): an answer string among the chunks read 310 -> 322
# of 429, stated by `ask --extractive` 261 -> 264 of 382, false refusals 13 -> 12, near misses
# refused unchanged; zsh 23/40 unchanged (false refusals 5 -> 4), zsh-es 2/8 -> 1/8. Opening
# the cap instead (3 or 5 places for the best file, always or when it leads the next file by a
# fused gap) traded other files for it and stated no more.
READ_HELD_BACK = True
# ... and of the first file of the fused ranking, the chunks the cap held back among the first
# BEST_FILE_DEPTH x k (`read_held_back`): the page that ranks first often runs its answer over more
# chunks than the first k hold (an options list, a directive's entry below its summary). Still at
# most k - 2 chunks after the k. Measured on the 33 development sets (docs/decisions.md#what-the-cap-held-back):
# 552 -> 558 stated of 860, false refusals 22 -> 21, near misses refused 113 -> 112 of 147; the
# manual pages 10 -> 11 of 24; held out 103 of 192 either way; 6.0 -> 6.7 excerpts a question. Every
# file's chunks among the first 2k: 557 stated but 3 near misses more answered; the first k + 2: 556.
BEST_FILE_DEPTH = 2
# Which chunk of a file is read: the files of the k results, and how many places each has, are
# the fused ranking's (`diversify`), but each file's places go to its candidates with the best
# fused score + CHUNK_COVERAGE_WEIGHT x their key-term coverage (`term_coverage`: the share of
# the question's key terms, weighted by rarity, that the chunk holds; the words of the file's title
# count as held by every chunk of it, as its header is embedded with every chunk). Of two chunks of
# a page, the one holding "zstd" and "level" beats the one that only shares the page's topic.
# Measured on the 14 development sets (docs/decisions.md#which-chunk-of-a-file): 249 -> 252 stated
# of 382 by `ask --extractive`, no set losing, refusals unchanged; weights 0.25 / 0.5 / 0.75 / 1.0.
# Ranking every candidate by it (not only within its file) brought other files' chunks that share
# a near miss's words and lost refusals.
CHUNK_COVERAGE_WEIGHT = 0.5
# A word in this many chunks is common anyway: its count stops there (as the answer stage's).
COVERAGE_COUNT_CAP = 1000
_WORD = re.compile(r"\w+")

Key = TypeVar("Key", int, tuple[str, int, str])  # a chunk: its row id, or (path, index, checksum)


def _standardised(scores: Sequence[float]) -> np.ndarray:
    """(score - mean) / standard deviation; all zero when the scores do not vary."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return values
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 1e-12 else np.zeros_like(values)


def fused_scores(
    cosine: Mapping[Key, float], keyword: Mapping[Key, float], weight: float = HYBRID_VECTOR_WEIGHT
) -> dict[Key, float]:
    """Each candidate's fused score: weight * z(cosine) + (1 - weight) * z(keyword) over the
    candidates (`cosine`'s keys; one missing from `keyword` scores 0 there)."""
    keys = list(cosine)
    fused = weight * _standardised([cosine[k] for k in keys]) + (1.0 - weight) * _standardised(
        [keyword.get(k, 0.0) for k in keys]
    )
    return dict(zip(keys, map(float, fused)))


def fuse_scores(
    cosine: Mapping[Key, float], keyword: Mapping[Key, float], weight: float = HYBRID_VECTOR_WEIGHT
) -> list[Key]:
    """The candidates (`cosine`'s keys: every one with its cosine similarity), best first
    (`fused_scores`).

    A candidate missing from `keyword` did not match it and scores 0 there. Ties go to the
    higher cosine, then to the smaller key, so the order is deterministic.
    """
    fused = fused_scores(cosine, keyword, weight)
    return sorted(fused, key=lambda k: (-fused[k], -cosine[k], k))


def diversify(hits: Sequence[Hit], k: int, per_file: int = MAX_CHUNKS_PER_FILE) -> list[Hit]:
    """The first `k` of `hits` (best first) taking at most `per_file` chunks of one file while
    others are left; the chunks held back fill any places left, in their order."""
    taken: dict[str, int] = {}
    head: list[Hit] = []
    held: list[Hit] = []
    for hit in hits:
        path = document_of(hit.chunk.relative_path)
        taken[path] = taken.get(path, 0) + 1
        (head if taken[path] <= per_file else held).append(hit)
    return (head + held)[:k]


def held_back(
    order: Sequence[tuple[str, int, str]], k: int, per_file: int = MAX_CHUNKS_PER_FILE
) -> list[tuple[str, int, str]]:
    """The chunks of the first `k` of `order` (candidates by `_key`, best first) past their file's
    first `per_file`: those the per-file cap holds back from the first `k` places, in order."""
    taken: dict[str, int] = {}
    out = []
    for kk in order[:k]:
        path = document_of(kk[0])
        taken[path] = taken.get(path, 0) + 1
        if taken[path] > per_file:
            out.append(kk)
    return out


def read_held_back(
    order: Sequence[tuple[str, int, str]], k: int, taken: Iterable[tuple[str, int, str]] = ()
) -> list[tuple[str, int, str]]:
    """What `ask` reads after its `k` results (`READ_HELD_BACK`), none of `taken` (the results): the
    chunks the cap held back from the fused first `k` (`held_back`), and those of the first-ranked
    file it held back from the first BEST_FILE_DEPTH x `k`; in the fused order, at most `k` -
    MAX_CHUNKS_PER_FILE."""
    if not order:
        return []
    first = document_of(order[0][0])
    # Held back among the first 2k and ranked among the first k is held back among the first k (the
    # cap counts a file's chunks in order): `held_back(order, k)` without a second pass.
    near = set(order[:k])
    skip = set(taken)
    deeper = [kk for kk in held_back(order, BEST_FILE_DEPTH * k) if kk not in skip]
    return [kk for kk in deeper if kk in near or document_of(kk[0]) == first][: max(0, k - MAX_CHUNKS_PER_FILE)]


def term_coverage(store: IndexStore, brain: Brain, texts: Sequence[str]) -> Callable[[str, frozenset[str]], float]:
    """A chunk's key-term coverage: the share of a question's key terms (`unit_scores.question_terms`,
    each weighted by its salience in `brain`) that the chunk's text, or the terms given with it,
    hold; the best over `texts` (the question and its renderings); 0 for a question without any."""
    from locallens.unit_scores import question_terms, symbol_keys, unit_keys

    def counts(words: Sequence[str]) -> tuple[int, dict[str, int]]:
        return store.term_counts(brain, words, COVERAGE_COUNT_CAP)

    weighted = []
    for text in texts:
        terms = question_terms(text, counts)
        salience = terms.salience or {}
        weights = {t: salience.get(t, 1.0) for t in terms.terms}
        if (total := sum(weights.values())) > 0:
            weighted.append((weights, total))

    symbols = any(t.startswith("§") for weights, _ in weighted for t in weights)

    def coverage(content: str, shared: frozenset[str] = frozenset()) -> float:
        if not weighted:
            return 0.0
        keys = unit_keys(content) | (symbol_keys(content) if symbols else frozenset()) | shared
        return max(sum(w for t, w in weights.items() if t in keys) / total for weights, total in weighted)

    return coverage


def title_terms(store: IndexStore, brain: Brain, chunk: Chunk) -> frozenset[str]:
    """The key terms of the first line of `chunk`'s file (its first chunk's: the title)."""
    from locallens.unit_scores import unit_keys

    # A chunk's id is its document's checksum's start and its index (docs/behaviour.md#chunk-ids).
    first = chunk if chunk.chunk_index == 0 else store.chunk_by_id(brain, f"{chunk.checksum[:12]}-0")
    return unit_keys(first.content.strip().split("\n", 1)[0]) if first is not None else frozenset()


# The nearest chunk: the candidate with the highest cosine similarity always has its file among
# the first NEAREST_PLACE results; when the fusion and the cap left that file out, the chunk takes
# place NEAREST_PLACE and the results from there move down one (`keep_nearest`). A chunk matching
# none of the question's keywords while the others match its common words ("Varnish", "log")
# scored below five other files although the embedder put it first: Varnish's varnishncsa page
# for "which program writes Apache-style access logs?". Measured on the 12 development corpora
# (docs/decisions.md#the-nearest-chunk): hit@5 by file stdlib 0.964 -> 0.982, Varnish 0.900 ->
# 0.925 (the naive baseline's), no corpus lower; answers unchanged but one false refusal fewer.
NEAREST_PLACE = 5


def keep_nearest(chosen: Sequence[Hit], nearest: Hit, place: int = NEAREST_PLACE) -> list[Hit]:
    """`chosen` (best first) with `nearest` at `place` (1-based) when none of the first `place`
    is of its file; unchanged when they hold its file, or there are fewer than `place` results."""
    if len(chosen) < place or nearest.chunk.relative_path in {h.chunk.relative_path for h in chosen[:place]}:
        return list(chosen)
    rest = [h for h in chosen if _key(h) != _key(nearest)]
    return [*rest[: place - 1], nearest, *rest[place - 1 :]][: len(chosen)]


# A document's own description under a title of that name: a reference page's (a manual page's
# DESCRIPTION, borg's "Description" after its options).
_DESCRIPTION_TITLE = re.compile(r"^(?:#+\s*)?(?:description|descripción)\s*$", re.I | re.M)
LEAD_CHUNKS = 3


def lead_chunk(chunks: Sequence[Chunk]) -> int:
    """The index of the chunk a summary of a document reads its lead from: of its first LEAD_CHUNKS
    chunks, the first with a "Description" title when the first chunk has none (a page that lists
    its synopsis or options first), else its first."""
    head = chunks[:LEAD_CHUNKS]
    if not head or _DESCRIPTION_TITLE.search(head[0].content):
        return 0
    return next((c.chunk_index for c in head if _DESCRIPTION_TITLE.search(c.content)), 0)


def with_named_document(
    store: IndexStore, brain: Brain, topic: str, qvec: np.ndarray, hits: Sequence[Hit]
) -> list[Hit]:
    """A broad question's hits with the chunk where a summary's lead is (`lead_chunk`: its first,
    or its description's after a synopsis or options) of the file its topic names by its file
    name (`broad.named_document`: "Summarize the borg quickstart" names quickstart.txt, "What is
    varnishstat?" reference-varnishstat.txt) among the first NEAREST_PLACE: before that file's
    first hit when one of them is of it by a later chunk, else at place NEAREST_PLACE. Nothing the
    search found is dropped: the chunk is one excerpt more. The search alone ranked the pages
    about the topic's neighbours (varnishhist, varnishtop) over the one page named after it, and
    paperkey.txt by its second chunk."""
    from locallens.unit_scores import word_salience

    def salience(words: Sequence[str]) -> dict[str, float]:
        return word_salience(words, lambda ws: store.term_counts(brain, ws, COVERAGE_COUNT_CAP))

    ranked = [h.chunk.relative_path for h in hits]
    named = broad.named_document(topic, store.document_paths(brain), salience, ranked)
    first = hits[:NEAREST_PLACE]
    if named is None or GLOB_WILDCARDS & set(named) or len(hits) < NEAREST_PLACE:
        return list(hits)
    chunks = store.document_chunks(brain, named)
    index = lead_chunk(chunks)
    if any(h.chunk.relative_path == named and h.chunk.chunk_index == index for h in first):
        return list(hits)
    # Scored as the search scores it: its cosine with the question.
    found = store.knn(brain, qvec, len(chunks), path_glob=named)
    lead = next((h for h in found if h.chunk.chunk_index == index), None)
    if lead is None:
        return list(hits)
    out = [h for h in hits if _key(h) != _key(lead)]
    at = next((i for i, h in enumerate(out[:NEAREST_PLACE]) if h.chunk.relative_path == named), NEAREST_PLACE - 1)
    out.insert(at, lead)
    return out


def best_chunks(
    store: IndexStore,
    brain: Brain,
    chosen: Sequence[Hit],
    order: Sequence[Hit],
    fused: Mapping[tuple[str, int, str], float],
    texts: Sequence[str],
) -> list[Hit]:
    """`chosen` (the results, best first) with each place given to the chunk of its file, among
    `order` (every candidate, best first), with the best fused score (`fused`, by `_key`) +
    CHUNK_COVERAGE_WEIGHT x its key-term coverage of `texts` (`term_coverage`, the file's title
    terms held by each of its chunks). The files, and their places, stay those of `chosen`."""
    coverage = term_coverage(store, brain, texts)
    titles: dict[str, frozenset[str]] = {}
    for hit in chosen:
        if hit.chunk.relative_path not in titles:
            titles[hit.chunk.relative_path] = title_terms(store, brain, hit.chunk)
    score = {
        _key(h): fused[_key(h)] + CHUNK_COVERAGE_WEIGHT * coverage(h.content, titles[h.chunk.relative_path])
        for h in order
        if h.chunk.relative_path in titles
    }
    used: set[tuple[str, int, str]] = set()
    out = []
    for hit in chosen:
        same = [h for h in order if h.chunk.relative_path == hit.chunk.relative_path and _key(h) not in used]
        pick = max(same, key=lambda h: score[_key(h)])  # the first of equals: the fused order's
        used.add(_key(pick))
        out.append(pick)
    return out


def identifiers_only(query: str) -> bool:
    """Whether every word of `query` is an identifier: has a digit, or inner punctuation."""
    tokens = [t for t in query.split() if _WORD.search(t)]
    return bool(tokens) and all(len(_WORD.findall(t)) > 1 or any(ch.isdigit() for ch in t) for t in tokens)


# With an English rendering beside the question (a Spanish question, `locallens.crosslang`), the
# question's own fused scores are lowered by this much (in standard deviations) before each chunk
# keeps its best: the English-only embedder places a Spanish question near Spanish text of any
# subject, so its own candidates take slots from the rendering's. Chosen over 0 / 0.25 / 0.5 / 1.0
# on the five Spanish development sets, each corpus left out in turn (answer among the 5 chunks read:
# 51 -> 54 of 62; 0.5 best on every fold, tied with 1.0 on one and 0.25 on another), with the sample's 7
# Spanish questions over Spanish notes kept 7/7 (docs/decisions.md#cross-language-questions).
# A question without a rendering is searched exactly as before.
QUESTION_SHIFT = 0.5
QueryVariants = Sequence[tuple[str, np.ndarray]]  # more renderings of the query: (text, vector)


def _key(hit: Hit) -> tuple[str, int, str]:
    return (hit.chunk.relative_path, hit.chunk.chunk_index, hit.chunk.checksum)


def _keep_best(found: dict[tuple[str, int, str], Hit], hits: Iterable[Hit]) -> None:
    """Add `hits` to `found`, a chunk keeping its best cosine over the renderings searched."""
    for hit in hits:
        kept = found.get(_key(hit))
        if kept is None or hit.score > kept.score:
            found[_key(hit)] = hit


def hybrid_candidates(
    store: IndexStore,
    brain: Brain,
    query: str,
    qvec: np.ndarray,
    k: int,
    *,
    path_glob: str | None = None,
    also: QueryVariants = (),
) -> tuple[dict[tuple[str, int, str], Hit], dict[tuple[str, int, str], float], list[tuple[str, int, str]]]:
    """The candidates `hybrid_search` chooses from: each chunk's hit (its best cosine over the
    renderings), its best fused score, and every candidate's key in the fused order, best first."""
    weight = IDENTIFIER_VECTOR_WEIGHT if identifiers_only(query) else HYBRID_VECTOR_WEIGHT
    hits: dict[tuple[str, int, str], Hit] = {}
    best: dict[tuple[str, int, str], float] = {}
    for n, (text, vector) in enumerate([(query, qvec), *also]):
        found, fused = _fused_for(store, brain, text, vector, max(k, HYBRID_CANDIDATES), weight, path_glob)
        _keep_best(hits, found.values())
        for kk, value in fused.items():
            value = value - (QUESTION_SHIFT if also and n == 0 else 0.0)
            best[kk] = max(value, best.get(kk, value))
    order = sorted(best, key=lambda kk: (-best[kk], -hits[kk].score, kk))
    return hits, best, order


def hybrid_search(
    store: IndexStore,
    brain: Brain,
    query: str,
    qvec: np.ndarray,
    k: int,
    *,
    path_glob: str | None = None,
    also: QueryVariants = (),
    read_held: bool = False,
) -> list[Hit]:
    """Vector and keyword (BM25 over stemmed words) rankings fused by standardised score; best `k`,
    the nearest chunk's file among the first 5 (`keep_nearest`), each file's places given to its
    chunks that best hold the question's terms (`best_chunks`). `read_held`: after the `k`, the
    chunks the per-file cap held back from the fused first `k`, and from the first 2k the first
    file's (`read_held_back`, `READ_HELD_BACK`; up to k - 2 more results).

    Embeddings miss exact tokens (error codes, IPs, policy numbers); BM25 misses paraphrase.
    Every hit keeps its cosine similarity as `score`, so --min-score means the same as in plain
    vector search. `also`: more renderings of the query (its English one, `locallens.crosslang`),
    each searched and fused on its own (`_fused_for`); a chunk ranks by its best fused score over
    the renderings (the question's own lowered by `QUESTION_SHIFT`), and keeps its best cosine.
    """
    hits, best, order = hybrid_candidates(store, brain, query, qvec, k, path_glob=path_glob, also=also)
    chosen = diversify([hits[kk] for kk in order], k)
    nearest = max(order, key=lambda kk: (hits[kk].score, kk)) if order else None
    if nearest is not None:
        chosen = keep_nearest(chosen, hits[nearest])
    if read_held:
        taken = {_key(h) for h in chosen}
        chosen += [hits[kk] for kk in read_held_back(order, k, taken)]
    if not CHUNK_COVERAGE_WEIGHT or not chosen:
        return chosen
    ranked = [hits[kk] for kk in order]
    return best_chunks(store, brain, chosen, ranked, best, [query, *(text for text, _ in also)])


def _fused_for(
    store: IndexStore,
    brain: Brain,
    text: str,
    vector: np.ndarray,
    depth: int,
    weight: float,
    path_glob: str | None,
) -> tuple[dict[tuple[str, int, str], Hit], dict[tuple[str, int, str], float]]:
    """One rendering's candidates (its `depth` nearest and its `depth` best keyword matches) and
    their fused scores.

    Each rendering is standardised over its own candidates: with the English-only embedder a
    Spanish question is close to every Spanish note alike, so its raw cosines say less than its
    English rendering's, while how far ahead a candidate is of the others means the same for both.
    Measured against comparing raw cosines (docs/benchmarks.md#spanish-questions-over-english-notes).
    """
    keyword = store.keyword_scores(brain, text, depth, path_glob=path_glob)
    by_id = store.hits_by_id(brain, vector, [i for i, _ in keyword])
    found = {_key(h): h for h in by_id.values()} | {
        _key(h): h for h in store.knn(brain, vector, depth, path_glob=path_glob)
    }
    keyword_score = {_key(by_id[i]): s for i, s in keyword if i in by_id}
    return found, fused_scores({kk: h.score for kk, h in found.items()}, keyword_score, weight)


def vector_search(
    store: IndexStore,
    brain: Brain,
    qvec: np.ndarray,
    k: int,
    *,
    path_glob: str | None = None,
    also: QueryVariants = (),
) -> list[Hit]:
    """The k nearest chunks by cosine; with more renderings of the query (`also`), a chunk ranks
    by its best standardised cosine over them (as `hybrid_search` fuses) and keeps its best cosine."""
    depth = max(k, HYBRID_CANDIDATES)
    if not also:
        return diversify(store.knn(brain, qvec, depth, path_glob=path_glob), k)
    hits: dict[tuple[str, int, str], Hit] = {}
    best: dict[tuple[str, int, str], float] = {}
    for vector in (qvec, *(v for _, v in also)):
        found = {_key(h): h for h in store.knn(brain, vector, depth, path_glob=path_glob)}
        _keep_best(hits, found.values())
        for kk, value in fused_scores({kk: h.score for kk, h in found.items()}, {}, 1.0).items():
            best[kk] = max(value, best.get(kk, value))
    order = sorted(best, key=lambda kk: (-best[kk], -hits[kk].score, kk))
    return diversify([hits[kk] for kk in order][:depth], k)


def check_dimension(brain: Brain, dim: int, loaded: str | None = None) -> None:
    """ModelMismatchError (exit 2) when the question's vectors do not fit the brain's pinned dim.

    The brain's model folder may hold another model now (replaced or re-downloaded): its
    vectors cannot be compared with the stored ones, so the brain must be re-embedded.
    """
    if dim != brain.dim:
        from locallens.errors import ModelMismatchError

        model = f"{loaded} " if loaded and loaded != brain.model else ""
        flag = "" if brain.name == "default" else f" --brain {brain.name}"
        raise ModelMismatchError(
            f"brain {brain.name!r} was built with {brain.model} ({brain.dim} dimensions) but the model "
            f"{model}loaded now gives {dim}; re-index it with `locallens index --rebuild{flag} PATH` "
            "(PATH: any of its roots; a rebuild keeps its model, its settings and all its roots)"
        )


GLOB_WILDCARDS = frozenset("*?[")


def path_filter(store: IndexStore, brain: Brain, value: str) -> str:
    """The glob (SQLite GLOB semantics) that a `--path` value stands for, matched against a
    source's path relative to its root.

    - A value with a wildcard (`*`, `?`, `[...]`) is a glob over the whole relative path: `*`
      matches any text, `/` included (`engineering/*` is everything below engineering/, `*.md`
      every Markdown file in any folder); case matters.
    - A value without one names a file or a folder: the file of that relative path when the
      brain has it, else everything below the folder (`engineering`, `engineering/` and
      `./engineering` all mean `engineering/*`).
    """
    if GLOB_WILDCARDS & set(value):
        return value
    name = value.removeprefix("./").strip("/")
    if not value.endswith("/") and store.document_chunks(brain, name):
        return name
    return f"{name}/*" if name else "*"


def search(
    store: IndexStore,
    brain: Brain,
    query: str,
    qvec: np.ndarray,
    k: int,
    *,
    path_glob: str | None = None,
    hybrid: bool = DEFAULT_HYBRID,
    also: QueryVariants = (),
    read_held: bool = False,
) -> list[Hit]:
    """The k best chunks: by vector, or by vector and keywords fused (`hybrid_search`); at most
    MAX_CHUNKS_PER_FILE of one file while other files have candidates (`diversify`). `path_glob`
    is a `--path` value (`path_filter`); `also`, more renderings of the query, and `read_held`,
    the chunks the cap held back after the k (both `hybrid_search`)."""
    check_dimension(brain, int(np.shape(qvec)[-1]))
    if path_glob is not None:
        path_glob = path_filter(store, brain, path_glob)
    if hybrid:
        return hybrid_search(store, brain, query, qvec, k, path_glob=path_glob, also=also, read_held=read_held)
    return vector_search(store, brain, qvec, k, path_glob=path_glob, also=also)


class SentenceEncoder:
    """Embeds sentences for trimming through a cache in the store keyed by (model, sha256).

    Repeated questions and popular chunks then cost no embedding at all. At question time
    writing the cache is best effort: when an `index` run holds the database, the vectors are
    simply not cached. `index --sentence-vectors` (the writer itself) caches strictly and reports
    progress.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: IndexStore | None,
        *,
        best_effort: bool = True,
        progress: Progress | None = None,
        stage: str = "embedding",
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.best_effort = best_effort
        self.progress = progress  # sentences to embed are reported as work in `stage`
        self.stage = stage
        self.calls = 0
        self.encoded = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        hashes = [content_hash(t) for t in texts]
        cached = self.store.cached_sentence_vectors(self.embedder.space, hashes) if self.store else {}
        todo = {h: t for h, t in zip(hashes, texts) if h not in cached}
        if todo:
            # Small batches: sentences vary in length, and one big batch pads them all to the
            # longest (measured: 46 sentences in 228 ms with batches of 8, 503 ms in one of 64).
            progress = self.progress
            if progress is not None:
                progress.add(self.stage, len(todo))
            fresh = self.embedder.encode(
                list(todo.values()),
                batch_size=8,
                progress=(lambda n: progress.advance(self.stage, n)) if progress else None,
            )
            self.encoded += len(todo)
            new_items = list(zip(todo.keys(), fresh))
            cached.update(new_items)
            if self.store is not None and self.best_effort:
                self.store.try_cache_sentence_vectors(self.embedder.space, new_items)
            elif self.store is not None:
                self.store.cache_sentence_vectors(self.embedder.space, new_items)
        return np.stack([cached[h] for h in hashes]).astype(np.float32, copy=False)


def count_context(hits: Sequence[Hit]) -> tuple[int, int]:
    """(estimate round(1.3 × words), exact tiktoken count) of the hits' contents."""
    return (sum(estimate_tokens(h.content) for h in hits), sum(count_tokens(h.content) for h in hits))


def retrieve(
    store: IndexStore,
    brain: Brain,
    embedder: Embedder,
    query: str,
    top_k: int = DEFAULT_TOP_K,
    *,
    min_score: float | None = None,
    path_glob: str | None = None,
    trim: TrimSettings = TrimSettings(),
    query_vector: np.ndarray | None = None,
    rerank: RerankSettings | None = None,
    hybrid: bool = DEFAULT_HYBRID,
    read_held: bool = False,
) -> RetrievalResult:
    """The question's `top_k` best chunks (`search`), optionally reranked and trimmed. `read_held`
    (what `ask` reads, `READ_HELD_BACK`): after them, the chunks the per-file cap held back from
    the fused first `top_k` (hybrid search without a reranker only)."""
    if top_k < 1:
        raise UsageError(f"--top-k must be at least 1 (got {top_k})")
    check_dimension(brain, embedder.dim, embedder.name)  # before any encoding: fail fast
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    pending = crosslang.start_rendering(query)  # runs while the question is embedded
    qvec = embedder.encode_query(query) if query_vector is None else query_vector
    rendering = crosslang.embedded(pending.result() if pending else None, embedder.encode_query)
    also = crosslang.variants(rendering)
    t1 = time.perf_counter()
    depth = max(top_k, rerank.candidates) if rerank else top_k
    held = read_held and rerank is None
    hits = search(store, brain, query, qvec, depth, path_glob=path_glob, hybrid=hybrid, also=also, read_held=held)
    sides = compare.comparison(query)
    if sides and hits and broad.is_broad(query) is None:
        # A comparison's excerpts hold each side: one none of them mentions is searched alone (a
        # broad one, "Summarize the difference between A and B", is summarised from one note).
        def search_side(text: str) -> list[Hit]:
            vector = embedder.encode_query(text)
            return search(store, brain, text, vector, top_k, path_glob=path_glob, hybrid=hybrid)

        hits = compare.with_sides(hits, sides, query, search_side, top_k)
    elif hits and path_glob is None and (topic := broad.is_broad(query)):
        hits = with_named_document(store, brain, topic, qvec, hits)
    elif hits and examples.asks_example(query):
        # "Show me an example of ...": the excerpts hold one, from deeper in the same ranking when
        # the first ones are the prose around it.
        def deeper() -> list[Hit]:
            return search(store, brain, query, qvec, HYBRID_CANDIDATES, path_glob=path_glob, hybrid=hybrid, also=also)

        also_text = rendering.text if rendering is not None else ""
        hits = examples.with_example(hits, query, deeper, top_k, also=also_text)
    if min_score is not None:
        hits = [h for h in hits if h.score >= min_score]
    if rerank is not None:
        t_rerank = time.perf_counter()
        hits = rerank_hits(query, hits, rerank, top_k)
        timings["rerank_ms"] = (time.perf_counter() - t_rerank) * 1000
    t2 = time.perf_counter()
    timings["embed_ms"] = (t1 - t0) * 1000
    timings["search_ms"] = (t2 - t1) * 1000
    before, tik_before = count_context(hits)
    if not trim.enabled or not hits:
        return RetrievalResult(
            hits, before, before, tik_before, tik_before, False, timings, query_vector=qvec, rendering=rendering
        )
    from locallens.trim import trim_chunks_by_sentence

    trimmed = trim_chunks_by_sentence(
        qvec,
        hits,
        trim.threshold,
        trim.min_sentences,
        trim.window,
        encode=SentenceEncoder(embedder, store),
        query=query,
    )
    timings["trim_ms"] = (time.perf_counter() - t2) * 1000
    out = [t.hit for t in trimmed]
    after, tik_after = count_context(out)
    return RetrievalResult(out, before, after, tik_before, tik_after, True, timings, trimmed, qvec, rendering)


def trim_from_index(
    db: DbLocation,
    brain_name: str,
    query: str,
    top_k: int,
    settings: TrimSettings,
    *,
    device: str = DEFAULT_DEVICE,
    hybrid: bool = DEFAULT_HYBRID,
) -> RetrievalResult:
    """`locallens trim QUERY`: retrieve from the brain and trim, keeping per-sentence details."""
    check_question(query, what="the query")
    with open_store(db) as store:
        brain = store.get_brain(brain_name)
        embedder = models.LOADERS.embedder(brain.model, device=device)
        return retrieve(store, brain, embedder, query, top_k, trim=replace(settings, enabled=True), hybrid=hybrid)


def trim_report(query: str, result: RetrievalResult, settings: TrimSettings) -> dict[str, Any]:
    """`locallens trim --json`: every chunk with its sentences, their scores and which were kept,
    the token counts before and after, and the settings."""
    from locallens import locations

    return {
        "query": query,
        "chunks": [
            {
                "id": d.original.id,
                "path": d.original.chunk.relative_path,
                "chunk_index": d.original.chunk.chunk_index,
                **locations.fields(d.original.chunk),
                "score": round(d.original.score, 4),
                "content": d.original.content,
                "trimmed": d.hit.content,
                "kept": d.kept,
                "sentences": d.sentences,
                "sentence_scores": [round(x, 4) for x in d.scores],
            }
            for d in result.trim_details
        ],
        "tokens_before": result.tokens_before,
        "tokens_in_context": result.tokens_in_context,
        "tiktoken_before": result.tiktoken_before,
        "tiktoken_in_context": result.tiktoken_in_context,
        "reduction_pct": round(result.reduction_pct, 1),
        "threshold": settings.threshold,
        "window": settings.window,
        "min_sentences": settings.min_sentences,
    }


def trim_given_text(
    text: str, query: str, settings: TrimSettings, *, model: str | None = None, device: str = DEFAULT_DEVICE
) -> RetrievalResult:
    """`locallens trim QUERY --text FILE`: trim one text against the query; no index needed."""
    from locallens.trim import trim_text

    check_question(query, what="the query")
    embedder = models.LOADERS.embedder(model, device=device)
    started = time.perf_counter()
    qvec = embedder.encode_query(query)
    detail = trim_text(
        qvec,
        text,
        settings.threshold,
        settings.min_sentences,
        settings.window,
        encode=SentenceEncoder(embedder, None),
        query=query,
    )
    before, tik_before = count_context([detail.original])
    after, tik_after = count_context([detail.hit])
    return RetrievalResult(
        [detail.hit],
        before,
        after,
        tik_before,
        tik_after,
        True,
        {"trim_ms": (time.perf_counter() - started) * 1000},
        [detail],
    )

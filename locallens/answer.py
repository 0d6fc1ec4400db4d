"""`ask`: retrieve → (trim) → fit the context → grounded prompt → llama.cpp → answer + sources.

The code, not the (tiny) model, guarantees the two promises of a grounded answer:
- no excerpts means no model call at all (NothingFoundError, exit 4): the model is never handed
  an empty context as a chance to invent;
- every `[N]` of the answer is checked against the numbered excerpts that were actually sent
  (after context fitting), and the sources are listed whether or not the model cited them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locallens.domain import Hit, RetrievalResult
from locallens.errors import NothingFoundError, UsageError
from locallens.prompt import Citations, build_grounded_history, fit_hits_to_context, format_hits, parse_citations
from locallens.retrieval import RerankSettings, TrimSettings, retrieve
from locallens.store import Store

if TYPE_CHECKING:
    from locallens.llm import LocalLLM, Usage


class LoopGuard:
    """Stops a generation that has started repeating itself, before the repeat is shown.

    Small models fall into loops ("## 2. The staging database is ... ## 3. The staging database
    is ...") and would fill --max-tokens with them. A line (of some length, markup and numbering
    ignored) that comes back ends the answer. So does a line that starts the prompt over
    ("Question:", "Source excerpts:"): the model is writing itself a new question to answer.
    Text streams as it comes, except a line that so far could be a repeat or such a header: it
    is held until it differs (then released) or is confirmed (then the answer ends without it).
    """

    MIN_LINE = 16
    # The headers of the user message in prompt.py, as `_key` reduces them.
    PROMPT_HEADERS = ("question:", "source excerpts:")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.line = ""  # the current line so far
        self.held = ""  # the part of it not yet released

    @staticmethod
    def _key(line: str) -> str:
        return re.sub(r"^[\s#>*+\-\d.)\]\[]*", "", line).strip().lower()

    def feed(self, piece: str) -> tuple[str, bool]:
        """(text to show now, whether to stop generating)."""
        out: list[str] = []
        for part in re.split(r"(\n)", piece):
            if part == "\n":
                key = self._key(self.line)
                if len(key) >= self.MIN_LINE and key in self.seen:
                    self.line = self.held = ""
                    return "".join(out), True
                if len(key) >= self.MIN_LINE:
                    self.seen.add(key)
                out.append(self.held + "\n")
                self.line = self.held = ""
                continue
            self.line += part
            self.held += part
            key = self._key(self.line)
            if any(key.startswith(header) for header in self.PROMPT_HEADERS):
                self.line = self.held = ""
                return "".join(out), True
            if key and not any(seen.startswith(key) for seen in self.seen) \
                    and not any(header.startswith(key) for header in self.PROMPT_HEADERS):
                out.append(self.held)
                self.held = ""
        return "".join(out), False

    def flush(self) -> str:
        """What is still held when the generation ends by itself."""
        held, self.line, self.held = self.held, "", ""
        return held


@dataclass(frozen=True, slots=True)
class AskRequest:
    question: str
    db: Path
    brain: str = "default"
    top_k: int = 5
    min_score: float | None = None
    path_glob: str | None = None
    llm: str | None = None  # GGUF path; None: $LOCALLENS_LLM, then the packaged SmolLM2
    max_tokens: int = 384
    temperature: float = 0.0
    n_ctx: int = 4096
    gpu_layers: int = 0
    threads: int | None = None  # llama.cpp threads (None: every available core)
    context_only: bool = False
    trim: TrimSettings = TrimSettings()
    rerank: RerankSettings | None = None
    hybrid: bool = False  # fuse keyword (BM25) and vector rankings
    device: str = "auto"
    seed: int = 0


@dataclass(slots=True)
class AskResult:
    question: str
    retrieval: RetrievalResult
    sources: list[Hit]  # the excerpts sent to the model, numbered from 1 in this order
    dropped: list[Hit] = field(default_factory=list)  # lowest-ranked hits that did not fit
    answer: str | None = None
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    models: dict[str, str | None] = field(default_factory=dict)
    stopped_looping: bool = False  # generation ended early because the model repeated itself

    @property
    def context(self) -> str:
        """Exactly the numbered excerpts the model gets (what --context-only prints)."""
        return format_hits(self.sources)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"question": self.question}
        if self.answer is not None:
            out["answer"] = self.answer
            out["citations"] = self.citations
            out["invalid_citations"] = self.invalid_citations
        out["sources"] = [
            {"n": n, "id": h.id, "path": h.chunk.relative_path, "chunk_index": h.chunk.chunk_index,
             "score": round(h.score, 4), "content": h.content,
             **({"rerank_score": round(h.rerank_score, 4)} if h.rerank_score is not None else {})}
            for n, h in enumerate(self.sources, start=1)
        ]
        out["dropped"] = [
            {"id": h.id, "path": h.chunk.relative_path, "chunk_index": h.chunk.chunk_index,
             "score": round(h.score, 4)}
            for h in self.dropped
        ]
        r = self.retrieval
        out["tokens"] = {
            "prompt": self.prompt_tokens,
            "completion": self.completion_tokens,
            "context_before_trim": r.tokens_before,
            "context_in_prompt": r.tokens_in_context,
            "context_before_trim_tiktoken": r.tiktoken_before,
            "context_in_prompt_tiktoken": r.tiktoken_in_context,
        }
        out["trimmed"] = r.trimmed
        if self.answer is not None:
            out["stopped_looping"] = self.stopped_looping
        out["timings"] = {k: round(v, 1) for k, v in self.timings.items()}
        out["models"] = self.models
        return out


def _retrieve(request: AskRequest, store: Store) -> tuple[RetrievalResult, str, dict[str, float]]:
    from locallens.embedding import load_embedder

    brain = store.get_brain(request.brain)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    embedder = load_embedder(brain.model, device=request.device)
    timings["embed_load_ms"] = (time.perf_counter() - t0) * 1000
    result = retrieve(store, brain, embedder, request.question, request.top_k,
                      min_score=request.min_score, path_glob=request.path_glob, trim=request.trim,
                      rerank=request.rerank, hybrid=request.hybrid)
    timings.update(result.timings_ms)
    return result, brain.model, timings


@dataclass(slots=True)
class Generation:
    kept: list[Hit]  # the excerpts sent, numbered from 1
    dropped: list[Hit]  # lowest-ranked excerpts that did not fit the context
    answer: str
    citations: Citations
    stopped_looping: bool
    usage: Usage | None


def generate_grounded(
    llm: LocalLLM,
    question: str,
    hits: list[Hit],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    on_text: Callable[[str], None] | None = None,
) -> Generation:
    """Fit the excerpts, prompt with them, stream the answer (stopping loops), check citations.

    The one generation path of `ask` and of `eval --answers`. `hits` must not be empty: with no
    excerpts the model is never called.
    """
    kept, dropped = fit_hits_to_context(question, hits, count_prompt_tokens=llm.count_prompt_tokens,
                                        n_ctx=llm.n_ctx, max_tokens=max_tokens)
    pieces: list[str] = []
    guard = LoopGuard()
    looping = False
    stream = llm.stream_chat(build_grounded_history(question, kept), max_tokens=max_tokens,
                             temperature=temperature)
    for piece in stream:
        shown, looping = guard.feed(piece)
        if shown:
            pieces.append(shown)
            if on_text is not None:
                on_text(shown)
        if looping:
            stream.close()  # ends generation; usage is still recorded
            break
    if not looping and (tail := guard.flush()):
        pieces.append(tail)
        if on_text is not None:
            on_text(tail)
    answer = "".join(pieces).strip()
    return Generation(kept, dropped, answer, parse_citations(answer, len(kept)), looping, llm.last_usage)


def ask(request: AskRequest, on_text: Callable[[str], None] | None = None) -> AskResult:
    """Answer `request.question` from the brain; `on_text` receives the answer as it streams."""
    question = request.question.strip()
    if not question:
        raise UsageError("the question is empty")
    if request.max_tokens < 1:
        raise UsageError(f"--max-tokens must be at least 1 (got {request.max_tokens})")
    with Store(request.db, create=False) as store:
        retrieval, embedding_model, timings = _retrieve(request, store)
    if not retrieval.hits:
        where = f" under {request.path_glob!r}" if request.path_glob else ""
        floor = f" with a score of at least {request.min_score}" if request.min_score is not None else ""
        raise NothingFoundError(f"nothing relevant found in brain {request.brain!r}{where}{floor}")
    result = AskResult(question=question, retrieval=retrieval, sources=list(retrieval.hits),
                       timings=timings, models={"embedding": embedding_model, "llm": None,
                                                **({"reranker": request.rerank.model} if request.rerank else {})})
    if request.context_only:
        return result

    from locallens.llm import LocalLLM, check_gguf, resolve_llm_path

    path = resolve_llm_path(request.llm)
    check_gguf(path)
    llm = LocalLLM(path, n_ctx=request.n_ctx, n_gpu_layers=request.gpu_layers, seed=request.seed,
                   n_threads=request.threads)
    try:
        result.timings["llm_load_ms"] = llm.load_ms
        result.models["llm"] = llm.model_name
        gen = generate_grounded(llm, question, retrieval.hits, max_tokens=request.max_tokens,
                                temperature=request.temperature, on_text=on_text)
    finally:
        llm.close()
    result.sources, result.dropped = gen.kept, gen.dropped
    result.answer, result.stopped_looping = gen.answer, gen.stopped_looping
    result.citations, result.invalid_citations = gen.citations.cited, gen.citations.invalid
    usage = gen.usage
    if usage is not None:
        result.prompt_tokens, result.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        result.timings["prompt_ms"] = usage.prompt_ms
        result.timings["generate_ms"] = usage.generate_ms
    return result

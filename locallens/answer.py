"""`ask`: retrieve → (trim) → fit the context → grounded prompt → llama.cpp → check → answer.

The code, not the (tiny) model, guarantees the promises of a grounded answer:
- no excerpts means no model call at all (NothingFoundError, exit 4): the model is never handed
  an empty context as a chance to invent;
- every sentence of the answer is checked against the numbered excerpts that were actually sent
  (after context fitting) by `locallens.claims`: only supported sentences are printed, each with
  a citation of an excerpt that backs it; when none is left, the answer is the excerpts' most
  relevant sentences (`checked_answer`), or the plain refusal when none is relevant enough;
- the sources are listed whether or not the answer cited them.
`--extractive` skips the model: the answer is the excerpts' most relevant sentences
(`locallens.extractive`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from locallens import locations
from locallens.claims import CheckedAnswer, Encode, check_answer, refusal
from locallens.config import DEFAULT_DEVICE, DEFAULT_HYBRID, DEFAULT_MAX_TOKENS, DEFAULT_N_CTX, DEFAULT_TOP_K
from locallens.domain import Hit, RetrievalResult
from locallens.errors import NothingFoundError, UsageError
from locallens.extractive import extractive_answer
from locallens.models import Models
from locallens.prompt import (
    CITATION_RE,
    Citations,
    build_grounded_history,
    fit_hits_to_context,
    parse_citations,
)
from locallens.retrieval import RerankSettings, SentenceEncoder, TrimSettings, check_question, retrieve
from locallens.storage import DbLocation, IndexStore, open_store

if TYPE_CHECKING:
    from locallens.embedding import Embedder
    from locallens.llm import LocalLLM, Usage


class LoopGuard:
    """Stops a generation that has started repeating itself, before the repeat is shown.

    Small models fall into loops ("## 2. The staging database is ... ## 3. The staging database
    is ...", or "The answer is: [6]" twenty times with a new citation each time) and would fill
    --max-tokens with them. Lines are compared by a key that ignores markup, numbering and
    citation markers: a line of some length (`MIN_LINE`) that comes back ends the answer, and a
    shorter one ends it on its `MAX_SHORT_REPEATS + 1`-th appearance (a short line such as "ok"
    may legitimately recur once). So does a line that starts the prompt over ("Question:",
    "Source excerpts:"): the model is writing itself a new question to answer.
    Text streams as it comes, except a line that so far could be a repeat or such a header: it
    is held until it differs (then released) or is confirmed (then the answer ends without it).
    """

    MIN_LINE = 16
    MAX_SHORT_REPEATS = 2
    # The headers of the user message in prompt.py, as `_key` reduces them.
    PROMPT_HEADERS = ("question:", "source excerpts:")

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}  # line key -> times seen
        self.line = ""  # the current line so far
        self.held = ""  # the part of it not yet released
        self.text = ""  # everything fed so far
        self.cut_at: int | None = None  # where the answer must end: a loop inside a line starts there

    @staticmethod
    def _key(line: str) -> str:
        without_citations = CITATION_RE.sub(" ", line)
        key = re.sub(r"^[\s#>*+\-\d.)\]\[]*", "", without_citations)
        return " ".join(key.split()).lower()

    def _repeats(self, key: str) -> bool:
        """Whether the finished line `key` is one repeat too many."""
        count = self.seen.get(key, 0)
        return count >= (1 if len(key) >= self.MIN_LINE else self.MAX_SHORT_REPEATS)

    def feed(self, piece: str) -> tuple[str, bool]:
        """(text to show now, whether to stop generating).

        A loop inside one line (a sentence said again, or a fragment repeated over and over with
        no line break) also stops the generation; `cut_at` then says where the answer ends,
        since part of the loop may have been shown already.
        """
        self.text += piece
        if re.search(r"[\s.!?:;,]", piece) and (cut := loop_start(self.text)) is not None:
            self.cut_at = cut
            return "", True
        out: list[str] = []
        for part in re.split(r"(\n)", piece):
            if part == "\n":
                key = self._key(self.line)
                if key and self._repeats(key):
                    self.line = self.held = ""
                    return "".join(out), True
                if key:
                    self.seen[key] = self.seen.get(key, 0) + 1
                out.append(self.held + "\n")
                self.line = self.held = ""
                continue
            self.line += part
            self.held += part
            key = self._key(self.line)
            if any(key.startswith(header) for header in self.PROMPT_HEADERS):
                self.line = self.held = ""
                return "".join(out), True
            if (
                key
                and not any(seen.startswith(key) for seen in self.seen)
                and not any(header.startswith(key) for header in self.PROMPT_HEADERS)
            ):
                out.append(self.held)
                self.held = ""
        return "".join(out), False

    def flush(self) -> str:
        """What is still held when the generation ends by itself."""
        held, self.line, self.held = self.held, "", ""
        return held


# A fragment of 4-60 characters said four times in a row, with only spaces or light punctuation
# between: "de la nota de la nota de la nota de la nota", "2024-03-20: 2024-03-20: ...".
_REPEATED_FRAGMENT = re.compile(r"(?<!\w)(\S.{3,59}?)(?:[\s,;:.]*\1){3,}", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def loop_start(text: str) -> int | None:
    """Where `text` starts looping inside its lines, or None.

    The loop is a sentence whose key (as `LoopGuard._key` makes it) came before, at least
    `LoopGuard.MIN_LINE` long, or a short fragment repeated four times in a row. The text up to
    the returned offset keeps the first occurrence and drops the repeats.
    """
    match = _REPEATED_FRAGMENT.search(text)
    cut = match.start() + len(match.group(1)) if match else None
    seen: set[str] = set()
    start = 0
    for boundary in _SENTENCE_END.finditer(text + "\n"):
        key = LoopGuard._key(text[start : boundary.start()])
        if len(key) >= LoopGuard.MIN_LINE:
            if key in seen:
                cut = start if cut is None else min(cut, start)
                break
            seen.add(key)
        start = boundary.end()
    return cut


@dataclass(frozen=True, slots=True)
class AskRequest:
    question: str
    db: DbLocation
    brain: str = "default"
    top_k: int = DEFAULT_TOP_K
    min_score: float | None = None
    path_glob: str | None = None
    llm: str | None = None  # GGUF path; None: $LOCALLENS_LLM, then the packaged SmolLM2
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    n_ctx: int = DEFAULT_N_CTX
    gpu_layers: int = 0
    threads: int | None = None  # llama.cpp threads (None: every available core)
    context_only: bool = False
    trim: TrimSettings = field(default_factory=TrimSettings)
    rerank: RerankSettings | None = None
    hybrid: bool = DEFAULT_HYBRID  # fuse keyword (BM25) and vector rankings
    device: str = DEFAULT_DEVICE
    seed: int = 0
    extractive: bool = False  # answer with the excerpts' most relevant sentences, no LLM
    show_unsupported: bool = False  # print unsupported sentences too, marked
    cite_grammar: bool = False  # constrain generation so that every sentence ends with [n]


@dataclass(slots=True)
class AskResult:
    question: str
    retrieval: RetrievalResult
    sources: list[Hit]  # the excerpts sent to the model, numbered from 1 in this order
    dropped: list[Hit] = field(default_factory=list)  # lowest-ranked hits that did not fit
    checked: CheckedAnswer | None = None  # the answer after the check (None: --context-only)
    mode: str = "generate"  # "generate" (the LLM) or "extractive" (no LLM)
    invalid_citations: list[int] = field(default_factory=list)  # the model's [N] with no excerpt
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens a warm model found in its KV cache
    timings: dict[str, float] = field(default_factory=dict)
    models: dict[str, str | None] = field(default_factory=dict)
    stopped_looping: bool = False  # generation ended early because the model repeated itself
    show_unsupported: bool = False  # as asked: decides the notices' wording

    @property
    def answer(self) -> str | None:
        """What is printed as the answer (None for --context-only)."""
        return self.checked.answer if self.checked is not None else None

    @property
    def refused(self) -> bool:
        """Nothing supported answers the question: the answer is the plain refusal (exit 4)."""
        return self.checked is not None and self.checked.refused

    def _claim_json(self, claim: Any) -> dict[str, Any]:
        """A claim's JSON, with where its excerpt sentence is: in the excerpt, and in the file."""
        out: dict[str, Any] = claim.as_json()
        source = getattr(claim, "source", None)
        if source is None or not 1 <= source <= len(self.sources):
            return {**out, "excerpt_span": None, "line_start": None, "line_end": None}
        hit = self.sources[source - 1]
        originals = {d.original.id: d.original.content for d in self.retrieval.trim_details}
        original = originals.get(hit.id, hit.content)
        return {**out, **locations.cited_sentence(hit.content, original, hit.chunk.location, claim.evidence)}

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"question": self.question}
        checked = self.checked
        if checked is not None:
            out["answer"] = checked.answer
            out["mode"] = "extractive" if checked.fallback else self.mode
            out["fallback"] = checked.fallback
            out["refused"] = checked.refused
            out["withheld"] = checked.withheld
            out["citations"] = checked.citations
            out["invalid_citations"] = self.invalid_citations
            out["claims"] = [self._claim_json(claim) for claim in checked.claims]
            if self.mode == "generate":
                out["model_answer"] = checked.raw
                out["notices"] = checked.notices(self.show_unsupported)
        out["sources"] = [
            {
                "n": n,
                "id": h.id,
                "path": h.chunk.relative_path,
                "chunk_index": h.chunk.chunk_index,
                **locations.fields(h.chunk),
                "score": round(h.score, 4),
                "content": h.content,
                **({"rerank_score": round(h.rerank_score, 4)} if h.rerank_score is not None else {}),
            }
            for n, h in enumerate(self.sources, start=1)
        ]
        out["dropped"] = [
            {
                "id": h.id,
                "path": h.chunk.relative_path,
                "chunk_index": h.chunk.chunk_index,
                "citation": h.citation(),
                "score": round(h.score, 4),
            }
            for h in self.dropped
        ]
        r = self.retrieval
        out["tokens"] = {
            "prompt": self.prompt_tokens,
            "prompt_cached": self.cached_tokens,
            "completion": self.completion_tokens,
            "context_before_trim": r.tokens_before,
            "context_in_prompt": r.tokens_in_context,
            "context_before_trim_tiktoken": r.tiktoken_before,
            "context_in_prompt_tiktoken": r.tiktoken_in_context,
        }
        out["trimmed"] = r.trimmed
        if checked is not None and self.mode == "generate":
            out["stopped_looping"] = self.stopped_looping
        out["timings"] = {k: round(v, 1) for k, v in self.timings.items()}
        out["models"] = self.models
        return out


def _retrieve(
    request: AskRequest, store: IndexStore, models: Models
) -> tuple[RetrievalResult, Embedder, dict[str, float]]:
    brain = store.get_brain(request.brain)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    embedder = models.embedder(brain.model, request.device)
    timings["embed_load_ms"] = (time.perf_counter() - t0) * 1000
    result = retrieve(
        store,
        brain,
        embedder,
        request.question,
        request.top_k,
        min_score=request.min_score,
        path_glob=request.path_glob,
        trim=request.trim,
        rerank=request.rerank,
        hybrid=request.hybrid,
    )
    timings.update(result.timings_ms)
    return result, embedder, timings


@dataclass(slots=True)
class Generation:
    kept: list[Hit]  # the excerpts sent, numbered from 1
    dropped: list[Hit]  # lowest-ranked excerpts that did not fit the context
    answer: str
    citations: Citations
    stopped_looping: bool
    usage: Usage | None


def citation_grammar(n_excerpts: int) -> str:
    """A GBNF grammar for answers whose every sentence ends with a citation `[n]`, n in 1..k.

    A sentence is any run of text without brackets or line breaks; after its citation comes an
    optional full stop, then a space or a line break and the next sentence, or the end.
    """
    numbers = " | ".join(f'"{n}"' for n in range(1, max(1, n_excerpts) + 1))
    return (
        "root ::= sentence (sep sentence)*\n"
        'sentence ::= [^\\[\\]\\n]+ "[" cite "]" "."?\n'
        f"cite ::= {numbers}\n"
        'sep ::= " " | "\\n" | "\\n\\n"\n'
    )


def generate_grounded(
    llm: LocalLLM,
    question: str,
    hits: list[Hit],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    cite_grammar: bool = False,
) -> Generation:
    """Fit the excerpts, prompt with them, stream the answer (stopping loops), parse citations.

    The one generation path of `ask` and of `eval --answers`. `hits` must not be empty: with no
    excerpts the model is never called. With `cite_grammar`, sampling is constrained by
    `citation_grammar` (every sentence ends with a citation of an excerpt that was sent).
    """
    kept, dropped = fit_hits_to_context(
        question, hits, count_prompt_tokens=llm.count_prompt_tokens, n_ctx=llm.n_ctx, max_tokens=max_tokens
    )
    pieces: list[str] = []
    guard = LoopGuard()
    looping = False
    grammar = llm.compile_grammar(citation_grammar(len(kept))) if cite_grammar else None
    stream = llm.stream_chat(
        build_grounded_history(question, kept), max_tokens=max_tokens, temperature=temperature, grammar=grammar
    )
    for piece in stream:
        shown, looping = guard.feed(piece)
        pieces.append(shown)
        if looping:
            stream.close()  # ends generation; usage is still recorded
            break
    if not looping:
        pieces.append(guard.flush())
    answer = (guard.text[: guard.cut_at] if guard.cut_at is not None else "".join(pieces)).strip()
    return Generation(kept, dropped, answer, parse_citations(answer, len(kept)), looping, llm.last_usage)


def checked_answer(
    model_answer: str,
    kept: list[Hit],
    question: str,
    question_vector: np.ndarray,
    encode: Encode,
    *,
    max_tokens: int,
    show_unsupported: bool = False,
) -> CheckedAnswer:
    """The model's answer after the check; when none of it is left, the extractive answer.

    A model that wrote nothing the excerpts support (the packaged 135M model, often) has still
    been shown excerpts that may hold the answer: rather than refuse, the answer is then the
    excerpts' most relevant sentences, if any reaches `MIN_RELEVANCE`, else the plain refusal.
    Its claims are the model's (all withheld) followed by the extracted ones (all printed).
    """
    checked = check_answer(
        model_answer, kept, question_vector, encode, show_unsupported=show_unsupported, question=question
    )
    if not checked.refused:
        return checked
    extracted = extractive_answer(question, kept, question_vector, encode, max_tokens=max_tokens)
    if extracted.refused:
        return checked
    answer = extracted.answer
    if show_unsupported:  # the model's sentences follow, marked, as after a refusal
        answer += checked.answer.removeprefix(refusal(question))
    return CheckedAnswer(
        raw=model_answer,
        claims=checked.claims + extracted.claims,
        answer=answer,
        withheld=checked.withheld,
        refused=False,
        check_ms=checked.check_ms + extracted.check_ms,
        fallback=True,
    )


def ask(request: AskRequest, models: Models | None = None) -> AskResult:
    """Answer `request.question` from the brain, every printed sentence checked and cited.

    Raises NothingFoundError (exit 4) when retrieval finds nothing, before any model is loaded.
    When nothing the model wrote is supported by the excerpts and relevant to the question, the
    result is `refused` (the answer is the plain refusal; the CLI exits 4 too). `models` holds
    the loaded models: by default they are loaded for this call only (`WarmModels` keeps them).
    """
    models = models or Models()
    question = request.question.strip()
    if not question:
        raise UsageError("the question is empty")
    if request.max_tokens < 1:
        raise UsageError(f"--max-tokens must be at least 1 (got {request.max_tokens})")
    # Before any model loads: a question that can never fit is refused in milliseconds, not after
    # it has been embedded. The LLM's context only matters when the LLM will read the question.
    generates = not (request.context_only or request.extractive)
    check_question(question, n_ctx=request.n_ctx if generates else 0)
    with open_store(request.db) as store:
        retrieval, embedder, timings = _retrieve(request, store, models)
        if not retrieval.hits:
            where = f" under {request.path_glob!r}" if request.path_glob else ""
            floor = f" with a score of at least {request.min_score}" if request.min_score is not None else ""
            raise NothingFoundError(f"nothing relevant found in brain {request.brain!r}{where}{floor}")
        result = AskResult(
            question=question,
            retrieval=retrieval,
            sources=list(retrieval.hits),
            show_unsupported=request.show_unsupported,
            timings=timings,
            models={
                "embedding": embedder.name,
                "llm": None,
                **({"reranker": request.rerank.model} if request.rerank else {}),
            },
        )
        if request.context_only:
            return result
        encode = SentenceEncoder(embedder, store)
        question_vector = retrieval.query_vector
        if question_vector is None:  # retrieve() always sets it; a caller's own result may not
            question_vector = embedder.encode_query(question)
        if request.extractive:
            result.mode = "extractive"
            result.checked = extractive_answer(
                question, retrieval.hits, question_vector, encode, max_tokens=request.max_tokens
            )
            result.timings["extract_ms"] = result.checked.check_ms
            return result

        gen = _generate(request, question, retrieval.hits, result, models)
        result.sources, result.dropped = gen.kept, gen.dropped
        result.stopped_looping = gen.stopped_looping
        result.invalid_citations = gen.citations.invalid
        result.checked = checked_answer(
            gen.answer,
            gen.kept,
            question,
            question_vector,
            encode,
            max_tokens=request.max_tokens,
            show_unsupported=request.show_unsupported,
        )
        result.timings["check_ms"] = result.checked.check_ms
    return result


def _generate(request: AskRequest, question: str, hits: list[Hit], result: AskResult, models: Models) -> Generation:
    """Generate with the GGUF `request` names (or the packaged one) and record usage."""
    started = time.perf_counter()
    with models.llm(
        request.llm, n_ctx=request.n_ctx, gpu_layers=request.gpu_layers, seed=request.seed, threads=request.threads
    ) as llm:
        # Loading the GGUF (cold), or waiting for the warm model's previous generation to end.
        result.timings["llm_load_ms"] = (time.perf_counter() - started) * 1000
        result.models["llm"] = llm.model_name
        gen = generate_grounded(
            llm,
            question,
            hits,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            cite_grammar=request.cite_grammar,
        )
    usage = gen.usage
    if usage is not None:
        result.prompt_tokens, result.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        result.cached_tokens = usage.cached_tokens
        result.timings["prompt_ms"] = usage.prompt_ms
        result.timings["generate_ms"] = usage.generate_ms
    return gen

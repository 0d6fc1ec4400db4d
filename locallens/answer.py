"""`ask`: retrieve → (trim) → fit the context → grounded prompt → llama.cpp → check → answer.

The code, not the (tiny) model, guarantees the promises of a grounded answer:
- no excerpts means no model call at all (NothingFoundError, exit 4): the model is never handed
  an empty context as a chance to invent;
- every sentence of the answer is checked against the numbered excerpts that were actually sent
  (after context fitting) by `locallens.claims`: only supported sentences are printed, each with
  a citation of an excerpt that backs it; when none is left, the answer is the excerpts' most
  relevant sentences (`checked_answer`), or the plain refusal when none is relevant enough;
- the sources are listed whether or not the answer cited them.
What happens after retrieval is the answer mode's (`locallens.modes`): `generate` (this
module's `GenerateMode`, the default), `extractive` (no model: the excerpts' best passage,
`locallens.extractive`) or `context` (the excerpts only).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from locallens import locations
from locallens.claims import UNSUPPORTED_MARK, CheckedAnswer, Claim
from locallens.config import (
    DEFAULT_ASK_TRIM_WINDOW,
    DEFAULT_DEVICE,
    DEFAULT_HYBRID,
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_PROMPT_PASSAGES,
    DEFAULT_TOP_K,
)
from locallens.domain import Hit, RetrievalResult
from locallens.errors import NothingFoundError, UsageError
from locallens.extractive import TERM_COUNT_CAP, ExtractiveMode
from locallens.generation import (
    GenerateMode,
    Generation,
    LoopGuard,
    checked_answer,
    citation_grammar,
    generate_grounded,
    loop_start,
)
from locallens.models import Models
from locallens.modes import DEFAULT_MODE, AnswerInput, AnswerMode, AnswerOptions, AnswerOutput, ContextMode, TermCounts
from locallens.retrieval import (
    READ_HELD_BACK,
    RerankSettings,
    SentenceEncoder,
    TrimSettings,
    check_question,
    count_context,
    retrieve,
    trim_settings_from_env,
)
from locallens.storage import Brain, DbLocation, IndexStore, open_store

if TYPE_CHECKING:
    from locallens.embedding import Embedder

__all__ = [
    "MODES",
    "AskRequest",
    "AskResult",
    "Generation",
    "LoopGuard",
    "answer_with",
    "ask",
    "checked_answer",
    "citation_grammar",
    "generate_grounded",
    "get_mode",
    "loop_start",
    "notices_to_print",
]

# The answer modes by name (`locallens.modes`): a new mode is its module plus one line here.
MODES: dict[str, Callable[[], AnswerMode]] = {
    "generate": GenerateMode,
    "extractive": ExtractiveMode,
    "context": ContextMode,
}


def get_mode(name: str) -> AnswerMode:
    """The mode registered as `name` (UsageError, exit 2, for an unknown name)."""
    factory = MODES.get(name)
    if factory is None:
        raise UsageError(f"unknown answer mode {name!r}; known: {', '.join(sorted(MODES))}")
    return factory()


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
    prompt_passages: bool = DEFAULT_PROMPT_PASSAGES  # generate from the excerpts' best passages, not whole chunks
    mode: str = ""  # an answer mode by name (`locallens.modes.MODES`); "": from the flags above
    # What retrieval searches for, when not the question itself: `locallens chat` searches a
    # short follow-up together with the question before it. The prompt still gets `question` alone.
    search_query: str | None = None

    @property
    def mode_name(self) -> str:
        """The answer mode: `mode`, else `context` / `extractive` from the flags, else the default."""
        if self.mode:
            return self.mode
        if self.context_only:
            return "context"
        return "extractive" if self.extractive else DEFAULT_MODE

    @classmethod
    def from_tool_args(cls, args: Mapping[str, Any], defaults: AskRequest) -> AskRequest:
        """The request the `ask` tool's arguments (`service.TOOLS["ask"]`, validated) make: the
        question and what the arguments name, everything else from `defaults` (the settings of a
        server, an MCP server, a chat session or a batch). The one mapping from arguments to a
        request; `tool_args` is its inverse. Trimming follows the `trim` argument, else
        $LOCALLENS_TRIM, with `ask`'s window."""
        return replace(
            defaults,
            question=args["question"],
            brain=args.get("brain", defaults.brain),
            top_k=args.get("top_k", defaults.top_k),
            path_glob=args.get("path", defaults.path_glob),
            max_tokens=args.get("max_tokens", defaults.max_tokens),
            trim=trim_settings_from_env(args.get("trim"), None, DEFAULT_ASK_TRIM_WINDOW),
            hybrid=args.get("hybrid", defaults.hybrid),
            extractive=args.get("extractive", defaults.extractive),
        )

    def tool_args(self) -> dict[str, Any]:
        """The `ask` tool's arguments for this request (what `ask --server` sends): the inverse of
        `from_tool_args` for every setting the tool takes."""
        return {
            "question": self.question,
            "brain": self.brain,
            "top_k": self.top_k,
            "trim": self.trim.enabled,
            "hybrid": self.hybrid,
            "extractive": self.extractive,
            "max_tokens": self.max_tokens,
            **({"path": self.path_glob} if self.path_glob else {}),
        }


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
    sent: list[Hit] | None = None  # the excerpts as the model read them, when cut from `sources`

    def apply(self, out: AnswerOutput) -> None:
        """Take in what the answer mode gave back."""
        self.checked = out.checked
        if out.sources is not None:
            self.sources = out.sources
        self.sent = out.sent
        self.dropped = out.dropped
        self.stopped_looping = out.stopped_looping
        self.invalid_citations = out.invalid_citations
        self.prompt_tokens, self.completion_tokens = out.prompt_tokens, out.completion_tokens
        self.cached_tokens = out.cached_tokens
        self.timings.update(out.timings)
        self.models.update(out.models)

    @property
    def answer(self) -> str | None:
        """What is printed as the answer (None for --context-only)."""
        return self.checked.answer if self.checked is not None else None

    @property
    def refused(self) -> bool:
        """Nothing supported answers the question: the answer is the plain refusal (exit 4)."""
        return self.checked is not None and self.checked.refused

    def context_tokens(self) -> tuple[int, int]:
        """(estimate, tiktoken) of the excerpts the answer was given: `sources` (as the model read
        them: `sent`, when cut to their passages), without the ones dropped to fit the model's
        context (retrieval counted every hit it returned)."""
        r = self.retrieval
        read = self.sent if self.sent is not None else self.sources
        given = sorted((h.id, h.content) for h in read)
        if given == sorted((h.id, h.content) for h in r.hits):
            return r.tokens_in_context, r.tiktoken_in_context
        return count_context(read)

    def _claim_json(self, claim: Claim) -> dict[str, Any]:
        """A claim's JSON, with where its excerpt sentence is: in the excerpt, and in the file."""
        out: dict[str, Any] = claim.as_json()
        source = claim.source
        if source is None or not 1 <= source <= len(self.sources):
            return {**out, "excerpt_span": None, "line_start": None, "line_end": None}
        hit = self.sources[source - 1]
        # The whole chunk the excerpt was cut from (by trimming, or to the passages a prompt of
        # selected passages holds): its lines are the file's.
        originals = {h.id: h.content for h in self.retrieval.hits} | {
            d.original.id: d.original.content for d in self.retrieval.trim_details
        }
        original = originals.get(hit.id, hit.content)
        return {**out, **locations.cited_sentence(hit.content, original, hit.chunk.location, claim.evidence)}

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"question": self.question}
        checked = self.checked
        if checked is not None:
            out["answer"] = checked.answer
            out["mode"] = "extractive" if checked.fallback else self.mode
            out["fallback"] = checked.fallback
            out["summary"] = checked.summary  # a broad question, answered with a summary
            out["refused"] = checked.refused
            if checked.unknown:
                out["unknown_words"] = list(checked.unknown)  # refused: words no indexed file holds
                if checked.close:
                    out["did_you_mean"] = dict(checked.close)  # the notes' word each may misspell
                if checked.topic:
                    out["topic_word"] = checked.topic  # of those, the word the question is about
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
        in_prompt, in_prompt_tiktoken = self.context_tokens()
        out["tokens"] = {
            "prompt": self.prompt_tokens,
            "prompt_cached": self.cached_tokens,
            "completion": self.completion_tokens,
            "context_before_trim": r.tokens_before,
            "context_in_prompt": in_prompt,
            "context_before_trim_tiktoken": r.tiktoken_before,
            "context_in_prompt_tiktoken": in_prompt_tiktoken,
        }
        out["trimmed"] = r.trimmed
        if r.rendering is not None:  # a Spanish question, searched in English too
            out["rendering"] = {"text": r.rendering.text, "via": r.rendering.via}
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
        request.search_query or request.question,
        request.top_k,
        min_score=request.min_score,
        path_glob=request.path_glob,
        trim=request.trim,
        rerank=request.rerank,
        hybrid=request.hybrid,
        read_held=READ_HELD_BACK,
    )
    timings.update(result.timings_ms)
    return result, embedder, timings


def ask(request: AskRequest, models: Models | None = None, on_text: Callable[[str], None] | None = None) -> AskResult:
    """Answer `request.question` from the brain, every printed sentence checked and cited.

    Raises NothingFoundError (exit 4) when retrieval finds nothing, before any model is loaded.
    When nothing the model wrote is supported by the excerpts and relevant to the question, the
    result is `refused` (the answer is the plain refusal; the CLI exits 4 too). `models` holds
    the loaded models: by default they are loaded for this call only (`WarmModels` keeps them).
    `on_text` receives the model's answer as it streams, before the check.
    """
    models = models or Models()
    question = request.question.strip()
    if not question:
        raise UsageError("the question is empty")
    if request.max_tokens < 1:
        raise UsageError(f"--max-tokens must be at least 1 (got {request.max_tokens})")
    # Before any model loads: a question that can never fit is refused in milliseconds, not after
    # it has been embedded. The LLM's context only matters when the LLM will read the question.
    mode = get_mode(request.mode_name)
    check_question(question, n_ctx=request.n_ctx if mode.uses_llm else 0)
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
            mode=mode.name,
        )
        if mode.name == "context":
            return result
        question_vector = retrieval.query_vector
        if question_vector is None:  # retrieve() always sets it; a caller's own result may not
            question_vector = embedder.encode_query(question)
        given = AnswerInput(
            question,
            retrieval.hits,
            question_vector,
            SentenceEncoder(embedder, store),
            models,
            _options(request, on_text),
            brain_term_counts(store, store.get_brain(request.brain)),
            retrieval.rendering,
            request.search_query,
        )
        result.apply(mode.answer(given))
    return result


def notices_to_print(data: Mapping[str, Any]) -> list[str]:
    """Of an answer's `notices` (`ask --json`: what the check did to the model's answer), the
    ones a person reading it needs: only when what is printed is the model's own answer with
    sentences of it left out. A refusal says itself on stdout ("The answer is not in the
    excerpts."), and an answer that is the excerpts' own passage is its own, cited, text: a line
    on stderr would only repeat that the model's answer was set aside, on nearly every answer of
    a small model. With `--show-unsupported` the sentences set aside are printed, marked, so no
    line is needed either. Everything stays in the JSON (`notices`, `fallback`, `withheld`,
    `model_answer`). One refusal gets a line: over a word no indexed file holds (`unknown_words`),
    which may be the person's typo, or the very thing asked about (`topic_word`, a word the
    language uses: "dog")."""
    if data.get("refused") and data.get("unknown_words"):
        # The one refusal a person can act on: a word no indexed file holds, maybe misspelt.
        close = data.get("did_you_mean") or {}
        words = ", ".join(f'"{w}"' for w in data["unknown_words"])
        if close:
            meant = ", ".join(f'"{c}"' for c in close.values())
            return [f"no indexed file mentions {words}; did you mean {meant}?"]
        if data["unknown_words"] == [data.get("topic_word")]:
            return [f"no indexed file mentions {words}"]
        return [f"no indexed file mentions {words}: is it spelt as in your notes?"]
    if data.get("refused") or data.get("fallback") or f"{UNSUPPORTED_MARK} " in (data.get("answer") or ""):
        return []
    return list(data.get("notices") or [])


def brain_term_counts(store: IndexStore, brain: Brain) -> TermCounts:
    """How many of `brain`'s chunks hold each word (up to TERM_COUNT_CAP), from the store's
    keyword index: what the refusal weighs a question's word missing from the excerpts by. Each
    word's count is read once per counter (`ask` makes one a question, `eval` one a run)."""

    known: dict[str, int] = {}
    total: int | None = None

    def counts(words: Sequence[str]) -> tuple[int, dict[str, int]]:
        # Each word is counted once a question: the refusal and the scorer ask for the same ones.
        nonlocal total
        new = [w for w in dict.fromkeys(words) if w not in known]
        if new or total is None:
            total, found = store.term_counts(brain, new, TERM_COUNT_CAP)
            known.update(found)
        return total, {w: known[w] for w in words}

    return counts


def _options(request: AskRequest, on_text: Callable[[str], None] | None = None) -> AnswerOptions:
    return AnswerOptions(
        llm=request.llm,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        n_ctx=request.n_ctx,
        gpu_layers=request.gpu_layers,
        threads=request.threads,
        seed=request.seed,
        show_unsupported=request.show_unsupported,
        cite_grammar=request.cite_grammar,
        prompt_passages=request.prompt_passages,
        on_text=on_text,
    )


def answer_with(mode_name: str, given: AnswerInput) -> AskResult:
    """Answer from excerpts already retrieved, with the mode `mode_name`: what `ask` does after
    retrieval, for callers that retrieve themselves (`eval --answers`)."""
    mode = get_mode(mode_name)
    retrieval = RetrievalResult(
        hits=list(given.hits), tokens_before=0, tokens_in_context=0, tiktoken_before=0, tiktoken_in_context=0
    )
    result = AskResult(question=given.question, retrieval=retrieval, sources=list(given.hits), mode=mode.name)
    result.show_unsupported = given.options.show_unsupported
    result.apply(mode.answer(given))
    return result

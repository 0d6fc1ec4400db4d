"""Where `ask` gets its models: loaded for one call (the CLI), or kept loaded (servers, batches).

`Models` loads the embedder and the GGUF when asked and lets them go after the call: a CLI run
pays each load once and exits. `WarmModels` keeps them: embedders by (model, device), one
llama.cpp model per (file, context, GPU layers, threads), created with `reuse_prefix` so that
each question prefills only what follows the prompt prefix it shares with the previous one.

Thread safety: embedding is pure NumPy (or torch) over read-only weights and may run
concurrently; the LLM has one context, so generations are serialised by a lock, held for the
whole generation. A brain is read from the store on every request, so a brain re-pinned to
another embedding model gets that model on the next request, never stale vectors.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locallens.config import DEFAULT_DEVICE

if TYPE_CHECKING:
    from locallens.embedding import Embedder
    from locallens.gguf import GGUFInfo
    from locallens.llm import LocalLLM


class Loaders:
    """The one seam through which every model is loaded: the embedder (indexing, retrieval,
    trimming, the answer check, the sentence cache), the GGUF check and the llama.cpp model
    (`ask`, the warm service, `eval --answers`), the cross-encoder (`--rerank`). Callers use
    the module's `LOADERS` at call time, so replacing it (the tests' fakes) replaces them all."""

    def embedder(self, requested: str | None, *, device: str = DEFAULT_DEVICE) -> Embedder:
        from locallens.embedding import load_embedder

        return load_embedder(requested, device=device)

    def check_gguf(self, path: Path) -> GGUFInfo | None:
        from locallens.gguf import check_gguf

        return check_gguf(path)

    def llm(self, path: Path, **options: Any) -> LocalLLM:
        from locallens.llm import LocalLLM

        return LocalLLM(path, **options)

    def reranker(self, model: str, device: str = DEFAULT_DEVICE) -> Any:
        return load_reranker(model, device)


LOADERS = Loaders()


_rerankers: dict[str, object] = {}


def load_reranker(model: str, device: str = DEFAULT_DEVICE) -> Any:
    """A sentence-transformers CrossEncoder, loaded offline once per process; exit 6 if missing."""
    from locallens.embedding import cached_snapshot, hf_cache_dir, pick_device

    if model in _rerankers:
        return _rerankers[model]
    from locallens.pull import catalogue_repo

    folder = Path(model).expanduser()
    hub_id = catalogue_repo(model, "reranker") or model  # a `pull` catalogue name, or a hub id
    source = str(folder) if folder.is_dir() else (str(cached_snapshot(hub_id) or ""))
    if not source:
        from locallens.errors import ModelUnavailableError

        raise ModelUnavailableError(
            f"reranker {model} is not present: not a folder, and not in the Hugging Face cache {hf_cache_dir()}; "
            f"run `locallens pull {model}` where the network allows (no other command downloads)"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import warnings

    from sentence_transformers import CrossEncoder

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reranker = CrossEncoder(source, device=pick_device(device))
    except Exception as exc:  # the hub stack raises many types; all mean "not available"
        from locallens.errors import ModelUnavailableError

        raise ModelUnavailableError(f"reranker {model} could not be loaded from {source}: {exc}") from exc
    _rerankers[model] = reranker
    return reranker


class Models:
    """Load on demand, release after use (one CLI call)."""

    def embedder(self, model: str, device: str = DEFAULT_DEVICE) -> Embedder:
        return LOADERS.embedder(model, device=device)

    @contextmanager
    def llm(
        self, path: str | None, *, n_ctx: int, gpu_layers: int = 0, seed: int = 0, threads: int | None = None
    ) -> Iterator[LocalLLM]:
        from locallens.llm import resolve_llm_path

        resolved = resolve_llm_path(path)
        info = LOADERS.check_gguf(resolved)
        llm = LOADERS.llm(resolved, n_ctx=n_ctx, n_gpu_layers=gpu_layers, seed=seed, n_threads=threads, info=info)
        try:
            yield llm
        finally:
            llm.close()


class WarmModels(Models):
    """Keep every model loaded between calls; one generation at a time."""

    def __init__(self) -> None:
        self._embedders: dict[tuple[str, str], Embedder] = {}
        self._llms: dict[tuple[Path, int, int, int, int | None], LocalLLM] = {}
        self._load_lock = threading.Lock()
        self.generation_lock = threading.Lock()

    def embedder(self, model: str, device: str = DEFAULT_DEVICE) -> Embedder:
        key = (model, device)
        with self._load_lock:
            if key not in self._embedders:
                self._embedders[key] = super().embedder(model, device)
            return self._embedders[key]

    @contextmanager
    def llm(
        self, path: str | None, *, n_ctx: int, gpu_layers: int = 0, seed: int = 0, threads: int | None = None
    ) -> Iterator[LocalLLM]:
        from locallens.llm import resolve_llm_path

        resolved = resolve_llm_path(path)
        key = (resolved.resolve() if resolved.exists() else resolved, n_ctx, gpu_layers, seed, threads)
        with self.generation_lock:
            llm = self._llms.get(key)
            if llm is None:
                info = LOADERS.check_gguf(resolved)
                llm = LOADERS.llm(
                    resolved,
                    n_ctx=n_ctx,
                    n_gpu_layers=gpu_layers,
                    seed=seed,
                    n_threads=threads,
                    reuse_prefix=True,
                    info=info,
                )
                self._llms[key] = llm
            yield llm

    def close(self) -> None:
        with self.generation_lock:
            for llm in self._llms.values():
                llm.close()
            self._llms.clear()

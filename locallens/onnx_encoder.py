"""The int8 encoder: a BERT sentence-transformers model quantized to int8, run by ONNX Runtime.

Made locally, once, from the model folder's own weights (no download), in a child process (torch
and the export's copies of the model never stay in the caller): the model with its mean or CLS
pooling is exported with `torch.onnx.export`, ONNX Runtime's transformer optimizer fuses
its attention, layer norms and GELUs, and `quantize_dynamic` stores the weights of every matrix
product as int8, one scale per output channel (activations are quantized per batch at run time).
The file is kept in `$LOCALLENS_MODELS`, else `$LOCALLENS_HOME/models/` (0600, in a 0700 folder), named after the model,
its weights' size and modification time, and the recipe: a changed model or recipe makes a new
file, and later runs load it in a fraction of a second without importing torch.

Vectors differ from the fp32 model's by quantization noise (cosine about 0.99), which is why a
brain records the encoder that made its vectors (see docs/decisions.md#int8-encoder).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from locallens.errors import ModelUnavailableError
from locallens.npbert import padded_batch

# Part of the file name: a change of the recipe below makes (and uses) a new file.
RECIPE = "ort-fused-int8-perchannel-v1"
# The same graph, fused but not quantized: the fp32 encoder's bulk jobs (its vectors agree with
# torch's to ~1e-6, so it serves fp32 brains; docs/decisions.md#fp32-in-onnx-runtime).
RECIPE_FP32 = "ort-fused-fp32-v1"
OPSET = 17


# Whether making a file is announced on stderr (a line before, one after); `index --quiet` turns
# it off for its run, since it prints only what needs a person.
ANNOUNCE = [True]


@contextlib.contextmanager
def announcements(on: bool) -> Iterator[None]:
    """Announce (or not) the files made while the block runs."""
    ANNOUNCE.append(on)
    try:
        yield
    finally:
        ANNOUNCE.pop()


def announce(message: str) -> None:
    if ANNOUNCE[-1]:
        print(f"locallens: {message}", file=sys.stderr)


def models_dir() -> Path:
    """Where locallens keeps the models it makes: `$LOCALLENS_MODELS`, else `$LOCALLENS_HOME/models`."""
    if explicit := os.environ.get("LOCALLENS_MODELS"):
        return Path(explicit).expanduser()
    from locallens.config import locallens_home

    return locallens_home() / "models"


def made_path(source: Path, name: str, recipe: str) -> Path:
    """Where what `recipe` makes of the model folder `source` (pinned as `name`) is kept: named
    after the model, its weights' size and modification time, and the recipe."""
    stat = (source / "model.safetensors").stat()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name.strip("/")).strip("-")[-60:] or "model"
    return models_dir() / f"{slug}-{stat.st_size:x}-{stat.st_mtime_ns:x}-{recipe}"


def int8_path(source: Path, name: str) -> Path:
    """Where the int8 file of the model folder `source` (pinned as `name`) is kept."""
    path = made_path(source, name, RECIPE)
    return path.with_name(path.name + ".onnx")


def fp32_path(source: Path, name: str) -> Path:
    """Where the fused fp32 file of the model folder `source` (pinned as `name`) is kept."""
    path = made_path(source, name, RECIPE_FP32)
    return path.with_name(path.name + ".onnx")


def ensure_int8(source: Path, name: str, pooling: str, *, heads: int, hidden: int) -> Path:
    """The int8 model file of `source`, made now if it is not there yet (about 15 s, once)."""
    return _ensure(int8_path(source, name), source, name, pooling, heads=heads, hidden=hidden, quantized=True)


def ensure_fp32(source: Path, name: str, pooling: str, *, heads: int, hidden: int) -> Path:
    """The fused fp32 model file of `source`, made now if it is not there yet (about 15 s, once)."""
    return _ensure(fp32_path(source, name), source, name, pooling, heads=heads, hidden=hidden, quantized=False)


def _ensure(path: Path, source: Path, name: str, pooling: str, *, heads: int, hidden: int, quantized: bool) -> Path:
    if path.is_file():
        return path
    from locallens.config import make_private_dir

    what = "int8 encoder" if quantized else "ONNX Runtime fp32 encoder"
    make_private_dir(path.parent)
    announce(f"making the {what} of {name} from its local weights (once, ~15 s); kept in {path.parent}")
    started = time.perf_counter()
    fallback = "use --encoder fp32" if quantized else "torch runs the fp32 encoder instead"
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as tmp:
        work = Path(tmp)
        # In a child process: torch, transformers and the export's copies of the model (about
        # 1.5 GB at its peak) are gone when it exits, instead of staying in the index run.
        package_root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        }
        args = [str(source), str(work / "made.onnx"), pooling, str(heads), str(hidden), "1" if quantized else "0"]
        done = subprocess.run(
            [sys.executable, "-c", _MAKE, *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if done.returncode != 0 or not (work / "made.onnx").is_file():
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            last = lines[-1].strip() if lines else f"exit code {done.returncode}"
            if last.startswith(_MISSING):
                last = f"{last.removeprefix(_MISSING)} is not installed (pip install onnx onnxruntime torch)"
            raise ModelUnavailableError(f"the {what} cannot be made: {last}; {fallback}")
        os.chmod(work / "made.onnx", 0o600)
        os.replace(work / "made.onnx", path)  # atomic: a concurrent run sees the whole file or none
    announce(f"{what} ready in {time.perf_counter() - started:.0f} s")
    return path


_MISSING = "missing module: "
_MAKE = "import sys; from locallens.onnx_encoder import _make; _make(sys.argv[1:])"


def _make(argv: list[str]) -> None:
    """The child's work: export, fuse and (for int8) quantize into argv[1]; a missing module is exit 3."""
    source, dest, pooling, heads, hidden, quantized = argv
    work = Path(dest).parent
    try:
        _export(Path(source), work / "fp32.onnx", pooling)
        _optimize(work / "fp32.onnx", work / "fused.onnx", heads=int(heads), hidden=int(hidden))
        if quantized == "1":
            _quantize(work / "fused.onnx", Path(dest))
        else:
            os.replace(work / "fused.onnx", dest)
    except ImportError as exc:
        print(f"{_MISSING}{exc.name or exc}", file=sys.stderr)
        raise SystemExit(3) from None


def _export(source: Path, dest: Path, pooling: str) -> None:
    import warnings

    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    # Eager attention: the exported graph is then the pattern ONNX Runtime's optimizer fuses.
    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            if pooling == "cls":
                return hidden[:, 0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    example = (torch.ones((2, 8), dtype=torch.int64), torch.ones((2, 8), dtype=torch.int64))
    axes = {"input_ids": {0: "batch", 1: "length"}, "attention_mask": {0: "batch", 1: "length"}}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled(model),
            example,
            str(dest),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def _optimize(src: Path, dest: Path, *, heads: int, hidden: int) -> None:
    from onnxruntime.transformers import optimizer

    with _quiet():
        fused = optimizer.optimize_model(
            str(src), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1, use_gpu=False
        )
    fused.save_model_to_file(str(dest))


def _quantize(src: Path, dest: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet():
        quantize_dynamic(
            str(src),
            str(dest),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """ONNX Runtime's tools log to the root logger and warn freely; stderr is ours."""
    import logging
    import warnings

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


class OnnxEncoder:
    """An ONNX Runtime session over a pooled sentence encoder: token ids in, pooled vectors out."""

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelUnavailableError("the int8 encoder needs onnxruntime: pip install onnxruntime") from exc
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads  # else ONNX Runtime's default: one per core
        options.inter_op_num_threads = 1
        # Idle worker threads would spin on the cores after each call, taking them from whatever
        # runs next (the vector search, llama.cpp), as OpenBLAS's do (see npbert).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own exception types for a damaged file
            raise ModelUnavailableError(
                f"the int8 encoder file {path} cannot be loaded ({type(exc).__name__}); delete it to make it again"
            ) from exc
        self.path = path

    def forward(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Pooled, not yet normalised vectors of a batch of token-id sequences (specials included)."""
        ids, mask = padded_batch(batch, np.int64)
        (out,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
        return np.asarray(out, dtype=np.float32)

"""The int8 encoder: a BERT sentence-transformers model quantized to int8, run by ONNX Runtime.

Made locally, once, from the model folder's own weights (no download): the model with its mean
or CLS pooling is exported with `torch.onnx.export`, ONNX Runtime's transformer optimizer fuses
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
OPSET = 17


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


def ensure_int8(source: Path, name: str, pooling: str, *, heads: int, hidden: int) -> Path:
    """The int8 model file of `source`, made now if it is not there yet (about 15 s, once)."""
    path = int8_path(source, name)
    if path.is_file():
        return path
    from locallens.config import make_private_dir

    make_private_dir(path.parent)
    print(
        f"locallens: making the int8 encoder of {name} from its local weights (once, ~15 s); kept in {path.parent}",
        file=sys.stderr,
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as tmp:
        work = Path(tmp)
        try:
            _export(source, work / "fp32.onnx", pooling)
            _optimize(work / "fp32.onnx", work / "fused.onnx", heads=heads, hidden=hidden)
            _quantize(work / "fused.onnx", work / "int8.onnx")
        except ImportError as exc:
            raise ModelUnavailableError(
                f"the int8 encoder cannot be made: {exc.name or exc} is not installed "
                "(pip install onnx onnxruntime torch), or use --encoder fp32"
            ) from exc
        os.chmod(work / "int8.onnx", 0o600)
        os.replace(work / "int8.onnx", path)  # atomic: a concurrent run sees the whole file or none
    print(f"locallens: int8 encoder ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return path


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

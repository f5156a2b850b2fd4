"""The embedding runtime: bf16 products where the CPU has them (or as asked), the same vectors, and
the runtime recorded with the index and in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stores.chroma_build import META_FILE, DenseMeta
from stores.embedder import embed_precision, embed_texts, embedding_runtime
from stores.errors import QuarryError

TEXTS = [
    "Dense passage retrieval with dual encoders for open-domain question answering.",
    "Reciprocal rank fusion combines rankings from several retrieval systems.",
    "Federated learning trains models across hospitals without sharing patient data.",
]


def test_the_precision_is_chosen_by_the_setting_else_by_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "fp32")
    assert embed_precision() == "fp32" and embedding_runtime() == "torch-fp32"
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "BF16")
    assert embed_precision() == "bf16"
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "int4; rm -rf /")
    with pytest.raises(QuarryError) as err:
        embed_precision()
    assert err.value.code == "bad_setting" and "fp32, bf16, auto" in err.value.message
    monkeypatch.setattr("stores.embedder._cpu_has_bf16", lambda: False)
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "auto")
    assert embed_precision() == "fp32", "without native bfloat16 products, bf16 would be slower"
    monkeypatch.setattr("stores.embedder._cpu_has_bf16", lambda: True)
    monkeypatch.delenv("QUARRY_EMBED_PRECISION")
    assert embed_precision() == "bf16"


def test_bf16_gives_the_same_unit_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "fp32")
    full = embed_texts(TEXTS)
    monkeypatch.setenv("QUARRY_EMBED_PRECISION", "bf16")
    half = embed_texts(TEXTS)
    assert half.dtype == np.float32 and half.shape == full.shape
    assert np.allclose(np.linalg.norm(half, axis=1), 1.0, atol=1e-5)
    assert (half * full).sum(axis=1).min() >= 0.999


def test_an_index_built_before_the_runtime_was_recorded_reads_as_fp32(tmp_path: Path) -> None:
    meta = DenseMeta("fp", "m", 3, 1, "b1", "c", None, 1.0)
    meta.dump(tmp_path)
    raw = json.loads((tmp_path / META_FILE).read_text())
    assert raw["runtime"] == "torch-fp32"
    raw.pop("runtime")
    (tmp_path / META_FILE).write_text(json.dumps(raw))
    assert DenseMeta.load(tmp_path) == meta

"""Faster embeddings, same vectors? Today's PyTorch MiniLM against the same weights run by ONNX Runtime.

    python -m bench.bench_embed_runtime [--datasets ../shared/datasets] [--chunks 2000] [--timed 400] [--repeats 3]

Why: embedding is the slow part of a dense build (about 70 short docs/s on this
2-core machine). ONNX Runtime is already installed (chromadb depends on it), so running the shipped
all-MiniLM-L6-v2 weights through it costs no new dependency — if the vectors stay the same
(cosine to today's vectors ≥ 0.99 per chunk) and it is markedly faster (target ≥ 3× chunks/s).
This bench only measures; it adopts nothing.

How:
- Chunks: the first SciFact-train records are ingested into a temporary QUARRY_HOME with
  `stores.collection.ingest` (no Lucene index), and the first `--chunks` chunks Quarry's own
  chunker made are read back (`CorpusStore.iter_chunks`): the texts a dense build embeds.
- (a) the reference, Quarry before item 3: `SentenceTransformer.encode(batch_size=64,
  normalize_embeddings=True)` in float32 on CPU, torch's default thread count.
- ONNX export (offline, cached in bench/out/onnx-minilm/, keyed by the weights' sha256): the
  package's BertModel wrapped with the two modules its modules.json lists after the transformer —
  mean pooling over the attention mask (1_Pooling/config.json: `pooling_mode_mean_tokens`, the sum
  divided by the mask count clamped at 1e-9, as sentence-transformers does) and L2 normalisation
  (`F.normalize`) — exported with the TorchScript exporter (`dynamo=False`, opset 17, dynamic
  batch and sequence axes) from a copy set to eager attention (same maths as the default SDPA,
  cosine 1.0000; exported SDPA carries NaN guards, IsNaN/Where over every attention matrix, that
  made ORT ~40% slower). The `onnx` Python package is not installed here (and nothing is
  installed for this bench): the exporter only needs it to splice in onnxscript functions, which
  this model has none of, so that step is skipped; serialisation is the exporter's own.
- int8: `onnxruntime.quantization.quantize_dynamic` needs the `onnx` package too, so the bench
  emits the graph it would write for MatMul nodes with constant weights (its defaults:
  per-tensor, symmetric int8 weights, uint8 activations): every Linear of the encoder becomes
  DynamicQuantizeLinear → MatMulInteger → Cast → Mul(activation scale × weight scale) → Add(bias),
  the pattern ONNX Runtime fuses into DynamicQuantizeMatMul at load. The word-embedding Gather is
  left in fp32 (quantize_dynamic would also quantise it by default; it costs nothing at run time).
  A third graph, int8pc, scales each weight column separately (quantize_dynamic(per_channel=True)):
  one FFN output weight reaches |7.9| where 99.9% of its weights are under 0.2, which a single
  scale per tensor cannot carry.
- torch bf16: the same call inside `torch.autocast("cpu", dtype=torch.bfloat16)` — not ONNX, but
  the same weights on this CPU's AMX-BF16 units (added when ONNX Runtime fell short; see the JSON's
  cpu_flags; on a CPU without AMX or AVX512-BF16 expect no gain — not measured here). Adopted first,
  then replaced by:
- torch bf16w: a copy of the model with its weights converted to bfloat16 once — what
  `stores.embedder.embed_texts` does on such a CPU (autocast re-casts the weights on
  every call: ~0.4 s a call, which one call over all the chunks, as here, hides).
  `--torch-only` leaves the ONNX variants out.
- `--more` (measured on a CPU with AVX512-BF16 but no AMX) adds two PyTorch variants:
  torch bf16c, the bf16 copy's transformer under `torch.compile` (Inductor, weights frozen and
  prepacked, dynamic shapes; its compile time is reported apart, not timed), and torch int8, the
  fp32 model's Linear layers quantised dynamically per channel (`torch.ao`, VNNI kernels) except
  the FFN output layers whose weights reach past |2|, which stay fp32 (the outliers above).
- ONNX encode: the same tokenizer call as today (`SentenceTransformer.preprocess`: truncation at
  256 tokens, padding to the longest of the batch), the same length-sorted batches of 64, then one
  `InferenceSession.run` per batch (CPU provider, all graph optimisations,
  intra_op_num_threads ∈ {1, 2}, inter_op 1).
- Timing: warm-up first; then `--repeats` rounds, each running every variant once, in a rotated
  order (interleaved), over `--timed` chunks (an even sample of the chunks, so the same length
  mix); median chunks/s and ratio to (a). Timing every variant over all 2,000 chunks three
  times would take ~20 minutes on 2 cores. Before timing, the
  bench waits (bounded) while a pytest run or another bench is alive, and records the load.
- Quality, over all `--chunks` chunks (one pass per graph; the thread count does not change the
  maths): per-chunk cosine of each variant's vector to (a)'s (min, p1, mean); and for the
  collection's first 50 queries (embedded by the same variant), the overlap of the top-10 chunks by
  cosine over these chunks with (a)'s top 10.

Output: a table on stdout and bench/out/bench_embed_runtime.json.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench.slices import DEFAULT_DATASETS, corpus_slice
from stores.atomic import write_atomic
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "bench_embed_runtime.json"
CACHE = REPO / "bench" / "out" / "onnx-minilm"
DATASET = "scifact-train"
BATCH = 64  # the batch size Quarry's dense build and chunk vectors use (stores.embedder.embed_texts)
TARGET_SPEEDUP = 3.0
TARGET_COSINE = 0.99
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
KINDS = ("fp32", "int8", "int8pc")  # int8pc: int8 weights with one scale per output channel

Encoder = Callable[[Sequence[str]], np.ndarray]


# -- the ONNX graphs -----------------------------------------------------------------------------


def _torch_modules() -> tuple[Any, Any]:
    import torch

    class MeanPoolNormalize(torch.nn.Module):
        """The transformer, then sentence-transformers' Pooling (mean tokens) and Normalize modules."""

        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).expand(tokens.size()).to(tokens.dtype)
            summed = torch.sum(tokens * mask, 1)
            counts = torch.clamp(mask.sum(1), min=1e-9)
            return torch.nn.functional.normalize(summed / counts, p=2, dim=1)

    class DynQuantMatMul(torch.autograd.Function):
        """What quantize_dynamic writes for a MatMul with a constant weight (forward: the same maths in fp32)."""

        @staticmethod
        def forward(ctx: Any, x: Any, wq: Any, w_scale: Any, w_zero: Any, bias: Any) -> Any:
            return x @ (wq.to(x.dtype) * w_scale) + bias

        @staticmethod
        def symbolic(g: Any, x: Any, wq: Any, w_scale: Any, w_zero: Any, bias: Any) -> Any:
            xq, x_scale, x_zero = g.op("DynamicQuantizeLinear", x, outputs=3)
            scale = g.op("Mul", x_scale, w_scale)
            product = g.op("MatMulInteger", xq, wq, x_zero, w_zero)
            product = g.op("Cast", product, to_i=1)  # TensorProto.FLOAT
            return g.op("Add", g.op("Mul", product, scale), bias)

    class QuantLinear(torch.nn.Module):
        """nn.Linear with a symmetric int8 weight, one scale for the tensor (quantize_dynamic's default)
        or one per output column (`per_channel=True`)."""

        def __init__(self, linear: torch.nn.Linear, per_channel: bool) -> None:
            super().__init__()
            w = linear.weight.detach().t().contiguous()  # (in, out): MatMul's B
            absmax = w.abs().amax(dim=0) if per_channel else w.abs().max()
            scale = torch.clamp(absmax / 127.0, min=1e-12).to(torch.float32)
            self.register_buffer("wq", torch.clamp(torch.round(w / scale), -127, 127).to(torch.int8))
            self.register_buffer("w_scale", scale)
            zero = torch.zeros(w.shape[1], dtype=torch.int8) if per_channel else torch.tensor(0, dtype=torch.int8)
            self.register_buffer("w_zero", zero)
            self.register_buffer("bias", linear.bias.detach().clone())

        def forward(self, x: Any) -> Any:
            return DynQuantMatMul.apply(x, self.wq, self.w_scale, self.w_zero, self.bias)

    return MeanPoolNormalize, QuantLinear


def _quantise_linears(module: Any, quant_linear: Any, per_channel: bool) -> int:
    import torch

    count = 0
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, quant_linear(child, per_channel))
            count += 1
        else:
            count += _quantise_linears(child, quant_linear, per_channel)
    return count


def _export(model: Any, path: Path, kind: str) -> dict[str, Any]:
    import torch

    mean_pool_normalize, quant_linear = _torch_modules()
    # A copy with eager attention: the same maths as the package's default (SDPA), but SDPA exports with
    # NaN guards (IsNaN/Where over every attention matrix) that made ONNX Runtime ~40% slower.
    bert = copy.deepcopy(model[0].auto_model)
    bert.set_attn_implementation("eager")
    quantised = 0
    if kind != "fp32":  # the pooler is left alone: its output is unused and dropped from the graph
        quantised = _quantise_linears(bert.encoder, quant_linear, per_channel=(kind == "int8pc"))
    wrapper = mean_pool_normalize(bert).eval()
    sample = model.preprocess(["an example chunk to trace", "and a second, somewhat longer example chunk"])
    args = tuple(sample[k] for k in INPUTS)
    axes = {k: {0: "batch", 1: "tokens"} for k in INPUTS} | {"embedding": {0: "batch"}}
    started = time.perf_counter()
    tmp = path.with_suffix(".tmp")
    # `onnx` is not installed: skip the exporter's onnxscript-function splice (this model has none).
    splice = "torch.onnx._internal.torchscript_exporter.onnx_proto_utils._add_onnxscript_fn"
    with torch.no_grad(), warnings.catch_warnings(), mock.patch(splice, lambda proto, _opsets: proto):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            args,
            str(tmp),
            dynamo=False,
            input_names=list(INPUTS),
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
        )
    tmp.replace(path)
    return {"seconds": round(time.perf_counter() - started, 1), "bytes": path.stat().st_size, "quantised": quantised}


def export_models(model: Any, model_dir: Path) -> dict[str, Any]:
    """fp32 and int8 ONNX files for the shipped weights, re-exported when the weights change."""
    weights = model_dir / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    CACHE.mkdir(parents=True, exist_ok=True)
    manifest_path = CACHE / "manifest.json"
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
    files = {kind: CACHE / f"minilm-{kind}.onnx" for kind in KINDS}
    key = {"weights_sha256": digest, "opset": OPSET, "attention": "eager", "kinds": list(KINDS)}
    if any(manifest.get(k) != v for k, v in key.items()) or not all(p.is_file() for p in files.values()):
        manifest = {**key, "exports": {}}
        for kind, path in files.items():
            manifest["exports"][kind] = _export(model, path, kind)
        write_atomic(manifest_path, json.dumps(manifest, indent=2))
        manifest["cached"] = False
    else:
        manifest["cached"] = True
    manifest["files"] = {k: str(p.relative_to(REPO)) for k, p in files.items()}
    return manifest


def onnx_encoder(model: Any, path: Path, threads: int) -> Encoder:
    import onnxruntime as ort  # type: ignore[import-untyped]  # no stubs; not in pyproject overrides

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])

    def encode(texts: Sequence[str]) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")  # as SentenceTransformer.encode
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            idx = order[start : start + BATCH]
            feats = model.preprocess([texts[i] for i in idx])  # the same tokenizer call as today
            out[idx] = session.run(None, {k: feats[k].numpy() for k in INPUTS})[0]
        return out

    return encode


# -- inputs ----------------------------------------------------------------------------------------


def load_chunks(datasets: Path, wanted: int) -> tuple[list[str], int]:
    from stores.collection import Collection, ingest

    home = Path(tempfile.mkdtemp(prefix="quarry-bench-embed-"))
    src = home / "slice.jsonl"
    docs = max(50, wanted // 2)
    corpus_slice(datasets, DATASET, docs, src)
    ingest(src, "slice", home=home, build_lucene=False)
    texts = []
    for chunk in Collection("slice", home).corpus.iter_chunks():
        texts.append(chunk.text)
        if len(texts) == wanted:
            break
    return texts, docs


def load_queries(datasets: Path, n: int) -> list[str]:
    lines = (datasets / DATASET / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:n]]


# -- measuring -------------------------------------------------------------------------------------


def busy_others() -> list[str]:
    """Other pytest runs or benchmarks alive on the machine (they would steal the 2 cores)."""
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=False).stdout
    mine = {os.getpid(), os.getppid()}
    found = []
    for line in ps.splitlines():
        pid, _, args = line.strip().partition(" ")
        other = pid.isdigit() and int(pid) not in mine and "bench_embed_runtime" not in args
        if other and ("pytest" in args or "bench." in args or "bench/" in args):
            found.append(args[:120])
    return found


def wait_quiet(limit_s: float) -> dict[str, Any]:
    started = time.monotonic()
    others = busy_others()
    while others and time.monotonic() - started < limit_s:
        time.sleep(10)
        others = busy_others()
    return {"waited_s": round(time.monotonic() - started), "others_running": others, "loadavg": os.getloadavg()}


def cosine_stats(ref: np.ndarray, got: np.ndarray) -> dict[str, float]:
    cos = np.sum(ref * got, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    return {
        "min": round(float(cos.min()), 6),
        "p1": round(float(np.percentile(cos, 1)), 5),
        "mean": round(float(cos.mean()), 5),
    }


def top10_overlap(ref_q: np.ndarray, ref_c: np.ndarray, q: np.ndarray, c: np.ndarray) -> dict[str, float]:
    ref_top = np.argsort(-(ref_q @ ref_c.T), axis=1, kind="stable")[:, :10]
    top = np.argsort(-(q @ c.T), axis=1, kind="stable")[:, :10]
    overlap = np.array([len(set(a) & set(b)) / 10 for a, b in zip(ref_top, top, strict=True)])
    same_order = float(np.mean([list(a) == list(b) for a, b in zip(ref_top, top, strict=True)]))
    return {
        "mean": round(float(overlap.mean()), 3),
        "min": round(float(overlap.min()), 2),
        "identical_sets": round(float(np.mean(overlap == 1.0)), 3),
        "identical_order": round(same_order, 3),
    }


def encoder_of(model: Any) -> Encoder:
    """A SentenceTransformer's encode as one variant: unit rows in float32."""

    def encode(texts: Sequence[str]) -> np.ndarray:
        vectors = model.encode(
            list(texts), batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        rows = np.asarray(vectors, dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    return encode


def compiled_bf16(model: Any, texts: Sequence[str]) -> tuple[Encoder, float]:
    """The bf16 copy with its transformer compiled by Inductor, and the seconds its first calls took
    (the compile: one batch of every length bucket the timed sample has)."""
    import torch
    import torch._inductor.config as inductor

    inductor.freezing = True  # weights as constants: prepacked for oneDNN's bf16 kernels
    copy_ = copy.deepcopy(model).to(torch.bfloat16)
    copy_[0].model = torch.compile(copy_[0].model, dynamic=True)
    encode = encoder_of(copy_)
    started = time.perf_counter()
    encode(texts[:: max(1, len(texts) // 400)])
    return encode, time.perf_counter() - started


def int8_dynamic(model: Any) -> Encoder:
    """The fp32 model with its Linear layers in int8 (dynamic activations, per-channel weights),
    the outlier FFN output layers (a weight past |2|) left in fp32."""
    import torch

    copy_ = copy.deepcopy(model)
    inner = copy_[0].model
    kept = {
        name
        for name, layer in inner.named_modules()
        if isinstance(layer, torch.nn.Linear) and float(layer.weight.detach().abs().max()) > 2.0
    }
    spec = {
        name: torch.ao.quantization.per_channel_dynamic_qconfig
        for name, layer in inner.named_modules()
        if isinstance(layer, torch.nn.Linear) and name not in kept
    }
    copy_[0].model = torch.ao.quantization.quantize_dynamic(inner, spec, dtype=torch.qint8)
    return encoder_of(copy_)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--chunks", type=int, default=2000, help="chunks compared for quality")
    parser.add_argument("--timed", type=int, default=400, help="chunks per timed run (an even sample of --chunks)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-only", action="store_true", help="leave out the ONNX Runtime variants")
    parser.add_argument("--more", action="store_true", help="add torch.compile (bf16) and torch int8 variants")
    parser.add_argument("--wait", type=float, default=300, help="longest wait (s) for other tests/benches to end")
    args = parser.parse_args()
    import onnxruntime
    import torch

    from stores.embedder import _model, model_dir

    model = _model()
    texts, docs = load_chunks(args.datasets, args.chunks)
    timed = texts[:: max(1, len(texts) // max(1, args.timed))][: args.timed]
    queries = load_queries(args.datasets, args.queries)
    exports = {} if args.torch_only else export_models(model, model_dir())
    base = "torch fp32"

    def torch_fp32(texts: Sequence[str]) -> np.ndarray:  # before item 3: `embed_texts` in float32 (the reference)
        vectors = model.encode(
            list(texts), batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def torch_bf16(texts: Sequence[str]) -> np.ndarray:  # autocast bf16: adopted first, then replaced by bf16w
        with torch.autocast("cpu", dtype=torch.bfloat16):  # the same call, matrix products in bfloat16
            return torch_fp32(texts)

    # shipped (`embed_texts`): weights converted once
    torch_bf16w = encoder_of(copy.deepcopy(model).to(torch.bfloat16))

    variants: dict[str, Encoder] = {base: torch_fp32, "torch bf16": torch_bf16, "torch bf16w": torch_bf16w}
    compile_s: float | None = None
    if args.more:
        variants["torch bf16c"], compile_s = compiled_bf16(model, texts)
        variants["torch int8"] = int8_dynamic(model)
    for kind in () if args.torch_only else KINDS:
        for threads in (1, 2):
            variants[f"onnx {kind} t{threads}"] = onnx_encoder(model, REPO / exports["files"][kind], threads)
    names = list(variants)

    for encode in variants.values():  # warm-up: first-call allocations, thread pools, kernel choice
        encode(texts[:BATCH])
    quiet = wait_quiet(args.wait)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(args.repeats):  # interleaved: each round runs every variant, in a rotated order
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            variants[name](timed)
            seconds[name].append(time.perf_counter() - started)
    quiet_after = {"others_running": busy_others(), "loadavg": os.getloadavg()}

    # Quality over all the chunks: thread count does not change a variant's maths, so one pass per
    # graph (2 threads; 1 thread checked on the first batch) and the queries with the same graph.
    vectors = {base: variants[base](texts)}
    qvecs = {base: variants[base](queries)}
    vectors["bf16"], qvecs["bf16"] = torch_bf16(texts), torch_bf16(queries)
    vectors["bf16w"], qvecs["bf16w"] = torch_bf16w(texts), torch_bf16w(queries)
    for kind in ("bf16c", "int8") if args.more else ():
        vectors[kind], qvecs[kind] = variants[f"torch {kind}"](texts), variants[f"torch {kind}"](queries)
    thread_drift = {}
    for kind in () if args.torch_only else KINDS:
        two, one = variants[f"onnx {kind} t2"], variants[f"onnx {kind} t1"]
        vectors[kind], qvecs[kind] = two(texts), two(queries)
        thread_drift[kind] = float(np.max(np.abs(one(texts[:BATCH]) - two(texts[:BATCH]))))

    base_rate = len(timed) / statistics.median(seconds[base])
    rows: dict[str, Any] = {}
    for name in names:
        rate = len(timed) / statistics.median(seconds[name])
        row: dict[str, Any] = {
            "chunks_per_s": round(rate, 1),
            "runs_s": [round(x, 2) for x in seconds[name]],
            "ratio": round(rate / base_rate, 2),
        }
        if name != base:
            kind = name.split()[1]
            row["cosine"] = cosine_stats(vectors[base], vectors[kind])
            row["top10_overlap"] = top10_overlap(qvecs[base], vectors[base], qvecs[kind], vectors[kind])
            row["meets_target"] = row["ratio"] >= TARGET_SPEEDUP and row["cosine"]["min"] >= TARGET_COSINE
        rows[name] = row

    out = {
        "dataset": DATASET,
        "documents": docs,
        "chunks": len(texts),
        "timed_chunks": len(timed),
        "mean_chunk_chars": round(statistics.mean(len(t) for t in texts)),
        "queries": len(queries),
        "batch_size": BATCH,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "cpu_flags": sorted(set(Path("/proc/cpuinfo").read_text().split()) & {"avx512_vnni", "amx_int8", "amx_bf16"}),
        "versions": {
            "torch": torch.__version__,
            "onnxruntime": None if args.torch_only else onnxruntime.__version__,
            "python": platform.python_version(),
        },
        "export": exports,
        "thread_drift_max_abs": thread_drift,
        "machine_before": quiet,
        "machine_after": quiet_after,
        "target": {"speedup": TARGET_SPEEDUP, "cosine_min": TARGET_COSINE},
        "compile_s": compile_s,
        "variants": rows,
    }
    print(
        f"{DATASET}: {len(texts)} chunks ({out['mean_chunk_chars']} chars mean) for quality, {len(timed)} timed, "
        f"batch {BATCH}, median of {args.repeats}; torch threads {out['torch_threads']}"
    )
    print(
        f"{'variant':<17} {'chunks/s':>9} {'ratio':>6} {'cos min':>8} {'cos p1':>8} {'cos mean':>9} {'top10':>6} target"
    )
    for name, row in rows.items():
        cos = row.get("cosine", {})
        top = row.get("top10_overlap", {})
        print(
            f"{name:<17} {row['chunks_per_s']:>9.1f} {row['ratio']:>6.2f} {cos.get('min', 1.0):>8.5f} "
            f"{cos.get('p1', 1.0):>8.4f} {cos.get('mean', 1.0):>9.5f} {top.get('mean', 1.0):>6.3f} "
            f"{'yes' if row.get('meets_target') else '-'}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(OUT, json.dumps(out, indent=2))
    print(f"written {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    run_script(main)

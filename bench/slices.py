"""Where the benchmarks find the team's datasets, and the first N documents of one as a JSONL file
(the slice several benches ingest)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASETS = REPO / ".." / "shared" / "datasets"


def corpus_slice(datasets: Path, name: str, docs: int, out: Path) -> list[str]:
    """Write the first `docs` lines of `datasets/name/corpus.jsonl` to `out`; return them."""
    lines = (datasets / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:docs]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines

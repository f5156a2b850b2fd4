"""TREC run files: `qid Q0 docid rank score tag`, the format every IR tool reads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_run(path: Path, run: Mapping[str, Mapping[str, float]], tag: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for qid in sorted(run, key=lambda q: (len(q), q)):
            ranked = sorted(run[qid].items(), key=lambda p: (-p[1], p[0]))
            for rank, (docid, score) in enumerate(ranked, start=1):
                fh.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")
    return path


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _, score, _ = line.split()
        run.setdefault(qid, {})[docid] = float(score)
    return run

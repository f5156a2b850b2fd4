"""The policy half of a result's manifest: which policy, prompts and models decided.

Prompts are data beside their nodes (`*_prompts.py`); their hash is over every module-level
string of those modules, so editing any prompt changes it and nothing else does.
"""
from __future__ import annotations

import functools
import hashlib
from typing import Any

from nodes import answer_prompts, librarian_prompts, navigator_prompts, react_prompts
from nodes.config import JobConfig
from nodes.policies import PolicySpec

PROMPT_MODULES = (answer_prompts, librarian_prompts, navigator_prompts, react_prompts)


@functools.lru_cache(maxsize=1)
def prompt_hashes() -> dict[str, str]:
    out = {}
    for module in PROMPT_MODULES:
        texts = sorted((k, v) for k, v in vars(module).items() if isinstance(v, str) and not k.startswith("__"))
        out[module.__name__.rsplit(".", 1)[-1]] = hashlib.sha256(repr(texts).encode()).hexdigest()[:16]
    return out


def policy_manifest(policy: PolicySpec, config: JobConfig, ranker: str) -> dict[str, Any]:
    """Policy name, prompt hashes (only where a model reads them), models, and the final-order rule."""
    uses_models = policy.uses_models
    return {"policy": policy.name, "prompts": prompt_hashes() if uses_models else {},
            "model": config.models.model if uses_models else None,
            "judge_model": config.models.judge() if uses_models else None, "ranker": ranker}

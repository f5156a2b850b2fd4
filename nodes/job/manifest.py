"""The policy half of a result's manifest: which policy, prompts and models decided.

Prompts are data beside their nodes (`*_prompts.py`); their hash is over every module-level
string of those modules, so editing any prompt changes it and nothing else does.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from nodes.job.config import JobConfig
from nodes.llm import answer_prompts, librarian_prompts, navigator_prompts
from nodes.policy.registry import PolicySpec
from nodes.react import prompts as react_prompts

# Named as results have always named them (the modules moved into subpackages; the keys did not).
PROMPT_MODULES = {
    "answer_prompts": answer_prompts,
    "librarian_prompts": librarian_prompts,
    "navigator_prompts": navigator_prompts,
    "react_prompts": react_prompts,
}


@functools.lru_cache(maxsize=1)
def prompt_hashes() -> dict[str, str]:
    out = {}
    for name, module in PROMPT_MODULES.items():
        texts = sorted((k, v) for k, v in vars(module).items() if isinstance(v, str) and not k.startswith("__"))
        out[name] = hashlib.sha256(repr(texts).encode()).hexdigest()[:16]
    return out


def policy_manifest(policy: PolicySpec, config: JobConfig, ranker: str) -> dict[str, Any]:
    """Policy name, prompt hashes (only where a model reads them), models, and the final-order rule."""
    uses_models = policy.uses_models
    return {
        "policy": policy.name,
        "prompts": prompt_hashes() if uses_models else {},
        "model": config.models.model if uses_models else None,
        "judge_model": config.models.judge() if uses_models else None,
        "ranker": ranker,
    }

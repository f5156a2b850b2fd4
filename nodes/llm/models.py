"""Chat models for the LLM policies, through LangChain's `init_chat_model`.

A model is named `provider:name`:
- `openai:NAME` — OpenAI, or any OpenAI-compatible endpoint (DeepSeek, vLLM, a llama.cpp server,
  Ollama's `/v1`) by the standard `OPENAI_BASE_URL` and `OPENAI_API_KEY`;
- `anthropic:NAME` — `ANTHROPIC_API_KEY` (and `ANTHROPIC_BASE_URL` for a proxy);
- `ollama:NAME` — a local Ollama server (`OLLAMA_HOST`, default http://127.0.0.1:11434).

Credentials are read from the environment by the provider clients and never copied anywhere
else; one a base URL carries is split off it (nodes.llm.endpoints) and handed to the client in
memory, so the URL a client, a message or a span sees has none. `check_endpoint` is the fast
pre-flight the command line runs before submitting a job, so an endpoint that is down fails in
seconds with its address named (and no credential), not minutes into a job.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from nodes.job.config import ModelSettings
from nodes.llm.endpoints import resolve
from stores.errors import QuarryError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

PROVIDERS = ("openai", "anthropic", "ollama")
# OpenAI-compatible local servers (llama.cpp, vLLM, Ollama) accept any key; the OpenAI client
# refuses to start without one, so a base URL without a key gets this placeholder.
NO_KEY = "unused"

ModelFactory = Callable[[str, ModelSettings], "BaseChatModel"]


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str

    @classmethod
    def parse(cls, text: str | None) -> ModelSpec:
        if not text or ":" not in text or not text.split(":", 1)[1].strip():
            raise QuarryError(
                "bad_model",
                f"model {text!r} is not PROVIDER:NAME",
                f"e.g. --model openai:gpt-4o-mini; providers: {', '.join(PROVIDERS)}",
            )
        provider, name = text.split(":", 1)
        provider = provider.strip().lower()
        if provider not in PROVIDERS:
            raise QuarryError(
                "bad_model",
                f"unknown model provider {provider!r} in {text!r}",
                f"use one of {', '.join(PROVIDERS)} (any OpenAI-compatible server is openai: with OPENAI_BASE_URL)",
            )
        return cls(provider, name.strip())

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def endpoint(spec: ModelSpec) -> str:
    """The base URL a model's calls go to, without any credential it carried (for messages and
    pre-flight checks; never a key, a password or a token)."""
    return resolve(spec.provider).url


def make_chat_model(model: str, settings: ModelSettings) -> BaseChatModel:
    """A LangChain chat model for `provider:name` with the job's temperature, limits and timeout.

    LangChain's own retries are off: Temporal retries the activity, so a retry is visible in
    the job's history and a worker crash in the middle of one loses nothing.
    """
    from langchain.chat_models import init_chat_model

    spec = ModelSpec.parse(model)
    where = resolve(spec.provider)
    kwargs: dict = {"temperature": settings.temperature, "max_tokens": settings.max_output_tokens}
    if spec.provider == "openai":
        kwargs |= {"timeout": settings.timeout_s, "max_retries": 0}
        if where.configured:
            kwargs |= {"base_url": where.url, "default_headers": where.headers or None}
            kwargs |= {"default_query": where.query or None}
            # OpenAI-compatible servers (llama.cpp, Ollama's /v1, older vLLM) read `max_tokens`;
            # LangChain sends only OpenAI's newer `max_completion_tokens`, which they ignore, so
            # generation would run to the end of the context window.
            kwargs["extra_body"] = {"max_tokens": settings.max_output_tokens}
            if not os.environ.get("OPENAI_API_KEY"):
                kwargs["api_key"] = NO_KEY
    elif spec.provider == "anthropic":
        kwargs |= {"timeout": settings.timeout_s, "max_retries": 0}
        # LangChain's Anthropic client takes no default query, so only user-info is passed on (a
        # query in the base URL never worked: the SDK appends the path after it).
        if where.configured:
            kwargs |= {"base_url": where.url, "default_headers": where.headers or None}
    else:
        client: dict = {"timeout": settings.timeout_s}
        client |= {"headers": where.headers} if where.headers else {}
        client |= {"params": where.query} if where.query else {}
        kwargs = {
            "temperature": settings.temperature,
            "num_predict": settings.max_output_tokens,
            "client_kwargs": client,
            "base_url": where.url,
        }
    return init_chat_model(spec.name, model_provider=spec.provider, **kwargs)


def check_endpoint(model: str, timeout_s: float = 3.0) -> str:
    """Fail fast, naming the endpoint, when a model cannot possibly answer: no key for a hosted
    API, or nothing listening at its address. Returns the endpoint checked."""
    spec = ModelSpec.parse(model)
    url = endpoint(spec)  # without credentials: every message below may be printed
    if (
        spec.provider == "openai"
        and not os.environ.get("OPENAI_API_KEY")
        and urlparse(url).hostname == "api.openai.com"
    ):
        raise QuarryError(
            "no_api_key",
            f"OPENAI_API_KEY is not set for {spec} at {url}",
            "export OPENAI_API_KEY=…, or point OPENAI_BASE_URL at an OpenAI-compatible server",
        )
    if spec.provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise QuarryError(
            "no_api_key", f"ANTHROPIC_API_KEY is not set for {spec} at {url}", "export ANTHROPIC_API_KEY=…"
        )
    parsed = urlparse(url)
    host = parsed.hostname
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not host:
        raise QuarryError(
            "bad_endpoint",
            f"the endpoint {url!r} for {spec} is not a URL",
            "set it like OPENAI_BASE_URL=http://127.0.0.1:8000/v1",
        )
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise QuarryError(
            "endpoint_down",
            f"cannot reach the model endpoint {url} for {spec}: {reason}",
            "start the model server, or check OPENAI_BASE_URL / ANTHROPIC_BASE_URL / OLLAMA_HOST",
        ) from None
    return url

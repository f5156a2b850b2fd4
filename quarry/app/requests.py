"""The typed requests of the application layer, declared once for every front door: the HTTP API takes
them as bodies, the MCP tools describe their parameters with their fields, and the service takes
them whole (quarry.app.service)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.json_schema import GetJsonSchemaHandler, JsonSchemaValue
from pydantic_core import CoreSchema

from nodes.job.config import JOB_BOUNDS, JobConfig
from nodes.policy.registry import DEFAULT_POLICY, find, names, policy_help
from stores.home import NAME_PATTERN
from workflows.job_input import MAX_INTENT_CHARS


def _registered(name: str) -> str:
    if find(name) is None:
        raise ValueError(f"unknown policy {name!r}: use one of {', '.join(names())}")
    return name


class _PolicyNames:
    """The JSON schema of a policy name: the registry's names, read when the schema is built (so a
    policy registered after import is listed too, and no list is copied here)."""

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {**handler(schema), "enum": list(names())}


PolicyName = Annotated[str, AfterValidator(_registered), _PolicyNames()]


class Strict(BaseModel):
    """A request exactly as its schema describes it: no unknown field, and no value of another JSON
    type taken for the declared one ("5" is not a number, "yes" not a boolean)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class JobRequest(Strict):
    """A search job to start: `quarry run`'s core options, `POST /api/jobs`' body, `start_job`'s arguments."""

    collection: str = Field(max_length=200, pattern=NAME_PATTERN, description="A collection's name")
    intent: str = Field(
        min_length=1, max_length=MAX_INTENT_CHARS, description="The research need: topic, methods, years, exclusions"
    )
    mode: Literal["list", "answer"] = "list"
    policy: PolicyName | None = Field(
        default=None, description=f"A registered policy: {policy_help()}; default {DEFAULT_POLICY}"
    )
    budget_seconds: float = Field(
        default=JobConfig().max_seconds,
        ge=JOB_BOUNDS.min_seconds,
        le=JOB_BOUNDS.max_seconds,
        description="Wall-clock budget of the job",
    )
    model: str | None = Field(default=None, max_length=200, description="PROVIDER:NAME for policy llm or react")

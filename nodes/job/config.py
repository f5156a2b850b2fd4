"""One configuration object for a job: caps, depths, model settings, budgets and prices.

It is carried in the job input (so a job is self-describing and a worker needs no flags) and
copied into the graph state as plain JSON (so every node reads the same values). Every cap and
depth that used to be a module constant lives here, once: a job's in `JobConfig`, the agent-facing
tools' (the same for every job) in `ToolLimits`, the accepted ranges of a job's settings in
`JobBounds`. Elsewhere a default is read from here (`JobConfig.max_rounds`, `TOOL_LIMITS.depth`),
never written again; tests/test_one_config.py fails on a copy.

Nothing secret ever goes in here: API keys stay in the worker's environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

from nodes.policy.registry import POLICIES  # noqa: F401  (re-exported: the registered names, a live view)

# Attempts of an activity that calls a model: earlier attempts raise (Temporal retries them),
# the last one falls back to the heuristic decision (nodes.job.heartbeat.final_attempt). The graphs'
# retry policies count by time, not attempts (graphs.search_graph.retry_by_time), so a paused
# worker's timed-out attempts cannot exhaust them.
MODEL_ATTEMPTS = 3
# Share of any budget (time, tokens, dollars) after which the job is steered to submit now.
STEER_FRACTION = 0.7

# How `expand_citations` walks the citation graph (nodes.tools.corpus), declared once: the tool checks a
# direction against this list and the argument schema a model sees (nodes.tools.agent_tools) offers it.
CitationDirection = Literal["references", "cited_by", "both", "co_cited", "coupled", "ppr"]
CITATION_DIRECTIONS: tuple[str, ...] = get_args(CitationDirection)

# Which search settings a job uses (JobConfig.profile), declared once for the job and the command line.
SearchProfile = Literal["auto", "self", "default"]
SEARCH_PROFILES: tuple[str, ...] = get_args(SearchProfile)


@dataclass(frozen=True)
class ToolLimits:
    """What the agent-facing tools allow and show by default, declared once: the tools enforce
    these (nodes.tools.corpus), their argument schemas state them to the model (nodes.tools.agent_tools), and
    the hints in their results name them (nodes.tools.results). The same for every job (a model's
    tool schemas are fixed), so they are not part of a job's JobConfig."""

    depth: int = 1000  # a search's ranking, cached behind its search_id
    preview: int = 5  # ranks a search shows (1..preview); paging starts after them
    page_limit: int = 10  # ranks read_search_results shows by default …
    page_limit_max: int = 50  # … and at most
    read_limit: int = 200  # lines read_document shows by default …
    read_limit_max: int = 500  # … and at most
    citation_limit: int = 10  # documents expand_citations shows by default …
    citation_limit_max: int = 50  # … and at most
    cache_size: int = 32  # rankings an agent's own session keeps (least recently used dropped first)
    # A server's sessions (`quarry serve`, `quarry mcp`) are shared by all its clients, so they keep
    # rankings by time and memory instead (nodes.tools.ranking_cache.SharedRankingCache): a ranking
    # is kept while it was used in the last `shared_cache_min_age_s` seconds or while the session's
    # rankings fit in `shared_cache_bytes`, whichever keeps more — never past `shared_cache_ceiling_bytes`.
    shared_cache_min_age_s: float = 600.0
    shared_cache_bytes: int = 128 * 2**20
    shared_cache_ceiling_bytes: int = 512 * 2**20
    query_chars: int = 20_000  # a query is searched cut to this many characters
    # Lengths a model's arguments are cut to after validation (nodes.tools.clipped: the schema shows no
    # maxLength, so grammar-constrained servers are not slowed by it).
    reason_chars: int = 500
    query_arg_chars: int = 2000  # a model's query (the tools accept query_chars, e.g. from a shell)
    search_id_chars: int = 40
    docid_chars: int = 200
    submit_docids: int = 100
    explanation_chars: int = 8000
    exact_answer_chars: int = 1000

    @property
    def page_offset(self) -> int:
        """The first rank read_search_results shows by default: the one after the preview."""
        return self.preview + 1


TOOL_LIMITS = ToolLimits()


@dataclass(frozen=True)
class ResidentLimits:
    """The resident searcher (quarry.resident): the process `quarry search`/`read` hand their
    command to, so the JVM, the index readers and the embedder stay warm between commands."""

    idle_s: float = 900.0  # it leaves after this long without a command
    # A client waits this long for any byte from it; while it works on a command it sends a space
    # every `keepalive_s`, so a long semantic search is waited for and a hung process is not.
    silence_s: float = 10.0
    keepalive_s: float = 1.0
    # It warms up after the command that started it has ended (which answered in-process), so the
    # two do not compete for the cores — but at most this long after it started.
    spawner_wait_s: float = 60.0
    # Then it searches the collection it was started for, over and over, for this long: the JVM
    # compiles the scoring loop after ~150 searches, and a user's first command finds it compiled.
    warm_s: float = 2.0
    request_bytes: int = 16 * 2**20  # a request's JSON at most (the command line's arguments)


RESIDENT_LIMITS = ResidentLimits()


@dataclass(frozen=True)
class JobBounds:
    """The ranges a job's settings are accepted in, by the command line and the Python API alike
    (quarry.app.options and workflows.job_input check the budgets; the command line's options take
    their bounds here)."""

    max_rounds: int = 20  # --rounds at most
    min_output_tokens: int = 16  # --max-output-tokens at least
    max_tokens: int = 10**12  # a token budget above this is a typo, not a limit
    max_dollars: float = 1_000_000.0  # a per-job dollar budget above this, the same
    min_seconds: float = 1.0  # --budget at least (a wall-clock budget in seconds) …
    max_seconds: float = 7 * 24 * 3600.0  # … and at most a week: longer is surely a typo (inf, 1e20)


JOB_BOUNDS = JobBounds()


@dataclass
class Price:
    """Dollars per million tokens (cached input is the provider's discounted rate for prompt-cache
    reads; `cache_write` what a prompt-cache write costs where the provider charges for it —
    Anthropic, 1.25× input for its five-minute cache — None: the input price)."""

    input: float = 0.0
    cached_input: float = 0.0
    output: float = 0.0
    cache_write: float | None = None


@dataclass
class ModelSettings:
    """Which models decide, and how they are called.

    `model` plans, reflects and answers (the navigator) or runs the ReAct loop; `judge_model`
    scores candidates (the librarians) and defaults to `model`. Both are `provider:name`.
    """

    model: str | None = None
    judge_model: str | None = None
    temperature: float = 0.0
    max_output_tokens: int = 2048
    timeout_s: float = 60.0
    # A provider's 429/529 is waited out inside the call (nodes.llm.rate_limits): at most this many
    # waits per call, each at most this long (a longer retry-after fails the call, which Temporal retries).
    rate_limit_retries: int = 4
    rate_limit_wait_max_s: float = 60.0
    # OpenAI models: send tools with `strict: true` (closed objects, every property required), so a
    # model's arguments always match; off by default, as not every OpenAI-compatible server has it.
    strict_tools: bool = False
    # Librarians: how many top candidates a model scores per round, in batches of this size,
    # with at most `judge_concurrency` batch activities at once.
    judge_top: int = 20
    judge_batch_size: int = 5
    judge_concurrency: int = 4
    judge_chars: int = 1500  # characters of each document shown to a librarian
    # ReAct: model turns before the job answers from what it has, and how many times a turn
    # without a tool call is answered with a reminder before giving up.
    react_max_steps: int = 40
    react_reminders: int = 2
    # Documents given to the answer model, and characters of evidence per document.
    answer_docs: int = 8
    answer_chars: int = 1200

    def judge(self) -> str | None:
        return self.judge_model or self.model


@dataclass
class JobConfig:
    max_rounds: int = 3
    max_tool_calls: int = 400
    pool_depth: int = 100  # each ranking's top enters the candidate pool
    citation_pool: int = 100  # neighbours taken from citation expansion
    verify_top: int = 100  # candidates read and scored per round
    max_ranked: int = 20  # documents shown with evidence
    run_depth: int = 1000  # the deep run (evaluation)
    # The semantic channel of a collection without a (current) dense index: MiniLM re-scores the
    # lexical channel's top `semantic_candidates` for the same query, embedding (and caching) up to
    # `semantic_chunks` chunks of each on demand (nodes.rounds.semantic_filter). 0 turns it off: lexical only.
    semantic_candidates: int = 100
    semantic_chunks: int = 2
    # Chunks embedded per batch by that channel; between batches it checks whether the job must
    # stop (stop, budget steer, deadline, cancellation) and reports progress. MiniLM does ~70
    # short chunks/s on two cores but only 4-6/s on long (256-token) ones, and throughput hardly
    # depends on the batch size then; a batch of 8 keeps a stop's wait near 2 s.
    semantic_batch: int = 8
    verifier: bool = True  # order the answer with the shipped learned verifier when there is one
    # Search settings (BM25 k1/b, the semantic channel's weight): `auto` uses the collection's
    # self-tuned profile when `quarry tune NAME --self --apply` made it the default and it is not
    # stale, `self` requires that profile (applied or not), `default` ignores it (nodes.job.runtime).
    profile: SearchProfile = "auto"
    # The answer without a model (extractive): sentences it quotes at most, and how deep the
    # collection is searched to count a question word's documents for its IDF weight.
    answer_sentences: int = 4
    idf_depth: int = 1000
    models: ModelSettings = field(default_factory=ModelSettings)
    # Wall-clock budget in seconds (`--budget`), counted from the job's start: workflow timers steer
    # the job to submit at STEER_FRACTION of it and stop it at 1.0 (workflows.search_job); accepted
    # between JobBounds.min_seconds and max_seconds.
    max_seconds: float = 300.0
    max_tokens: int | None = None  # token budget over all model calls (steer at 0.7, stop at 1.0)
    max_dollars: float | None = None  # dollar budget, the same way
    prices: dict[str, Price] = field(default_factory=dict)  # model spec -> price

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> JobConfig:
        """Rebuild from state JSON; unknown keys are ignored so old checkpoints still load."""
        raw = dict(raw or {})
        known = {f.name for f in fields(cls)}
        models = raw.pop("models", None) or {}
        prices = raw.pop("prices", None) or {}
        model_known = {f.name for f in fields(ModelSettings)}
        return cls(
            **{k: v for k, v in raw.items() if k in known},
            models=models
            if isinstance(models, ModelSettings)
            else ModelSettings(**{k: v for k, v in dict(models).items() if k in model_known}),
            prices={k: (v if isinstance(v, Price) else Price(**dict(v))) for k, v in dict(prices).items()},
        )


def config_of(state: Mapping[str, Any]) -> JobConfig:
    """The job's configuration from its state (defaults for states written before it existed)."""
    return JobConfig.from_dict(state.get("config"))

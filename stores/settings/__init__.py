"""Every `QUARRY_*` environment variable, named once: the catalogue below and one reader for each.

The catalogue (`VARIABLES`) says, for each variable, its name, its default (as the string one
would set) and what it does; `docs/settings.md` is generated from it (`stores.settings.table`).
Product code reads a setting by calling its reader (`settings.chroma_port()`), never
`os.environ`: the reader reads the environment at call time (tests change it between calls,
`quarry --home` sets QUARRY_HOME after imports), parses it the one way it is parsed everywhere,
and raises the one error a bad value gets. Code that hands a setting to a child process, or sets
it for one, writes `entries(...)` or `VARIABLE.name`, so the name itself is spelt only here.

Why readers here and not attributes of a pydantic-settings object: the `quarry` executable's
first step (quarry.resident.client) and `import quarry.cli` read QUARRY_HOME and
QUARRY_RESIDENT, and they must stay lean — importing pydantic-settings alone costs more than a
resident search takes (~140 ms). So this module imports only the standard library (not even
`typing`), and the typed `Settings` object built from the same catalogue
(`stores.settings.model`, pydantic-settings) is imported only by what wants every setting at once
(it validates them all together, so one bad value fails it even for a caller that needs another:
a command reading one setting does not fail on a bad value of a setting it never uses). A test
checks that the two agree on every variable and that no product module names a variable itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

PREFIX = "QUARRY_"  # every Quarry setting's name starts so (the resident searcher compares them all)
Environ = Mapping[str, str]


class Var:
    """One environment variable: its name, its default as the string one would set ('' for
    unset), how the table shows that default, and what it does (its reader: `READERS`)."""

    __slots__ = ("default", "doc", "name", "shown")

    def __init__(self, name: str, default: str, doc: str, shown: str = "") -> None:
        self.name, self.default, self.doc = name, default, doc
        self.shown = shown or (f"`{default}`" if default else "unset")

    @property
    def field(self) -> str:
        """Its name without the prefix, in lower case: the `Settings` field and `entries` key."""
        return self.name.removeprefix(PREFIX).lower()

    def __repr__(self) -> str:
        return f"Var({self.name!r})"


HOME = Var("QUARRY_HOME", ".quarry", "The data folder: collections, jobs, traces, logs (`--home` sets it).")
TEMPORAL_ADDRESS = Var(
    "QUARRY_TEMPORAL_ADDRESS",
    "",
    "The Temporal frontend (`host:port`) every command and worker uses (`--temporal-address`).",
    shown="the server this home started, if it runs, else `127.0.0.1:7233`",
)
TEMPORAL_NAMESPACE = Var("QUARRY_TEMPORAL_NAMESPACE", "default", "The Temporal namespace jobs run in.")
TASK_QUEUE = Var(
    "QUARRY_TASK_QUEUE",
    "",
    "The task queue of jobs; set the same on several homes' workers to share jobs across a cluster.",
    shown="`quarry-jobs-` and a digest of the home (one queue per home)",
)
UI_PORT = Var("QUARRY_UI_PORT", "8233", "The Web UI port of the embedded Temporal server (`--ui-port`).")
UI_URL = Var("QUARRY_UI_URL", "", "The Web UI of a Temporal server Quarry did not start, for the job links it prints.")
TRACE_FILES = Var(
    "QUARRY_TRACE_FILES", "1", "`0` turns the local JSONL trace files off, when OTLP export is configured."
)
CHROMA_HOST = Var(
    "QUARRY_CHROMA_HOST", "", "A Chroma server for dense indexes (`chroma run`); unset: Chroma embedded in the home."
)
CHROMA_PORT = Var("QUARRY_CHROMA_PORT", "8000", "The port of that Chroma server.")
EMBED_PRECISION = Var(
    "QUARRY_EMBED_PRECISION", "auto", "`fp32`, `bf16` or `auto` (bf16 on a CPU with native bfloat16 products)."
)
EMBED_THREADS = Var(
    "QUARRY_EMBED_THREADS",
    "",
    "The threads one process embeds with; one per worker lets several workers share a machine.",
    shown="PyTorch's default (every core)",
)
# MiniLM already uses every core for one batch, so more batches at once only interleave them;
# add workers to go faster.
EMBED_CONCURRENCY = Var(
    "QUARRY_EMBED_CONCURRENCY", "1", "The embedding batches of a durable dense build one worker runs at once."
)
API_TOKEN = Var(
    "QUARRY_API_TOKEN",
    "",
    "The bearer token `quarry serve` requires (at least 16 characters; needed on any non-loopback address).",
)
ALLOW_HOSTS = Var(
    "QUARRY_ALLOW_HOSTS", "", "More Host names `quarry serve` answers to, separated by spaces (`--allow-host`)."
)
SELF_TUNE = Var(
    "QUARRY_SELF_TUNE", "0", "`1`: every ingest and add tunes the collection on its own documents (`--self-tune`)."
)
RESIDENT = Var(
    "QUARRY_RESIDENT",
    "1",
    "`0`, `false`, `no` or `off`: no command is handed to the resident process (every one runs in-process).",
)
MODELS = Var(
    "QUARRY_MODELS",
    "",
    "Where `python -m evals.llm_check` keeps its GGUF model files.",
    shown="`.quarry/models` in the checkout",
)

VARIABLES = (
    HOME,
    TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE,
    TASK_QUEUE,
    UI_PORT,
    UI_URL,
    TRACE_FILES,
    CHROMA_HOST,
    CHROMA_PORT,
    EMBED_PRECISION,
    EMBED_THREADS,
    EMBED_CONCURRENCY,
    API_TOKEN,
    ALLOW_HOSTS,
    SELF_TUNE,
    RESIDENT,
    MODELS,
)
OFF_WORDS = ("0", "false", "no", "off")
_ON_WORDS = ("1", "true", "t", "yes", "y", "on")  # typer's (click's) booleans, as `--self-tune` reads them
EMBED_PRECISIONS = ("fp32", "bf16", "auto")


def _raw(var: Var, environ: Environ | None) -> str | None:
    """The variable's value in `environ` (default: this process's environment, now), None if unset."""
    return (os.environ if environ is None else environ).get(var.name)


def _value(var: Var, environ: Environ | None) -> str:
    """The variable's value, else its default."""
    raw = _raw(var, environ)
    return var.default if raw is None else raw


def _positive(raw: str) -> int | None:
    raw = raw.strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def home(environ: Environ | None = None) -> str:
    """The data folder as set (an empty value counts as unset); stores.home.quarry_home resolves it."""
    return _raw(HOME, environ) or HOME.default


def temporal_address(environ: Environ | None = None) -> str | None:
    """The address set by the user, or None (then workflows.address resolves it)."""
    return _value(TEMPORAL_ADDRESS, environ).strip() or None


def temporal_namespace(environ: Environ | None = None) -> str:
    return _value(TEMPORAL_NAMESPACE, environ)


def task_queue(environ: Environ | None = None) -> str | None:
    """The task queue set by the user, or None (then the home's own, workflows.shared.task_queue)."""
    return _value(TASK_QUEUE, environ) or None


def ui_port(environ: Environ | None = None) -> int:
    return int(_value(UI_PORT, environ))


def ui_url(environ: Environ | None = None) -> str:
    return _value(UI_URL, environ)


def trace_files(environ: Environ | None = None) -> bool:
    """False only for `0`: the local trace files are wanted off (honoured when OTLP is configured)."""
    return _value(TRACE_FILES, environ).strip() != "0"


def chroma_host(environ: Environ | None = None) -> str | None:
    return _value(CHROMA_HOST, environ).strip() or None


def chroma_port(environ: Environ | None = None) -> int:
    raw = _value(CHROMA_PORT, environ).strip() or CHROMA_PORT.default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        from stores.errors import QuarryError  # only for a wrong value: the readers stay lean

        raise QuarryError(
            "bad_config",
            f"{CHROMA_PORT.name} must be a port number, got {raw!r}",
            f"set it to the port of `chroma run` (default {CHROMA_PORT.default})",
        )
    return int(raw)


def embed_precision(environ: Environ | None = None) -> str:
    """`fp32`, `bf16` or `auto` (stores.embedder resolves auto by the CPU)."""
    chosen = _value(EMBED_PRECISION, environ).strip().lower() or "auto"
    if chosen not in EMBED_PRECISIONS:
        from stores.errors import QuarryError

        raise QuarryError(
            "bad_setting",
            f"{EMBED_PRECISION.name}={chosen[:20]!r} is not one of fp32, bf16, auto",
            "unset it (auto), or set it to fp32 or bf16",
        )
    return chosen


def embed_threads(environ: Environ | None = None) -> int | None:
    """A positive count, else None (anything else is ignored: PyTorch's default)."""
    return _positive(_value(EMBED_THREADS, environ))


def embed_concurrency(environ: Environ | None = None) -> int:
    """A positive count, else the default (anything else is ignored)."""
    return _positive(_value(EMBED_CONCURRENCY, environ)) or int(EMBED_CONCURRENCY.default)


def api_token(environ: Environ | None = None) -> str | None:
    return _value(API_TOKEN, environ).strip() or None


def allow_hosts(environ: Environ | None = None) -> list[str]:
    """The names, split on white space (as typer splits the `--allow-host` option's variable)."""
    return _value(ALLOW_HOSTS, environ).split()


def self_tune(environ: Environ | None = None) -> bool:
    """Read by typer as `--self-tune`'s variable; this says the same for the same words."""
    raw = _value(SELF_TUNE, environ).strip().lower()
    if raw not in OFF_WORDS + _ON_WORDS:
        raise ValueError(f"{SELF_TUNE.name}={raw[:20]!r} is not a valid boolean")
    return raw in _ON_WORDS


def resident(environ: Environ | None = None) -> bool:
    """Whether the resident searcher may answer (off for `0`, `false`, `no`, `off`, any case)."""
    return _value(RESIDENT, environ).strip().lower() not in OFF_WORDS


def models(environ: Environ | None = None) -> Path | None:
    """The folder set, or None (then evals.llm_check uses the checkout's `.quarry/models`)."""
    raw = _value(MODELS, environ)
    return Path(raw) if raw else None


READERS: dict[Var, Callable[[Environ | None], object]] = {
    HOME: home,
    TEMPORAL_ADDRESS: temporal_address,
    TEMPORAL_NAMESPACE: temporal_namespace,
    TASK_QUEUE: task_queue,
    UI_PORT: ui_port,
    UI_URL: ui_url,
    TRACE_FILES: trace_files,
    CHROMA_HOST: chroma_host,
    CHROMA_PORT: chroma_port,
    EMBED_PRECISION: embed_precision,
    EMBED_THREADS: embed_threads,
    EMBED_CONCURRENCY: embed_concurrency,
    API_TOKEN: api_token,
    ALLOW_HOSTS: allow_hosts,
    SELF_TUNE: self_tune,
    RESIDENT: resident,
    MODELS: models,
}


def quarry_entries(environ: Environ | None = None) -> dict[str, str]:
    """Every `QUARRY_*` entry of `environ` (default: this process's), known to the catalogue or not."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(PREFIX)}


def entries(**values: object) -> dict[str, str]:
    """Environment entries for a child process (or `os.environ.update`), by field name:
    `entries(home=path, ui_port=8300)` is `{"QUARRY_HOME": "…", "QUARRY_UI_PORT": "8300"}`."""
    by_field = {var.field: var for var in VARIABLES}
    unknown = sorted(set(values) - set(by_field))
    if unknown:
        raise TypeError(f"no such setting: {', '.join(unknown)}")
    return {by_field[k].name: str(v) for k, v in values.items()}

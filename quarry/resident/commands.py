"""Which commands the resident process answers: the ones that only read and answer at once.

The client (quarry.resident.client) hands these over instead of starting the command line; the server
(quarry.resident.server) checks a request against the same table before it runs it. Standard library
only, and no import at all: the client pays for every line a command imports.

Why these: each reads a store (or Temporal, for a job still running) and prints one answer. A
command that writes (`add`, `ingest`, `job steer`), waits or follows a job (`job result --wait`,
`job watch` of a running job), starts a process (`run`, `server`) or names a file relative to the
user's folder (`job export`) runs in-process as always: the resident process answers one command
at a time and has no terminal, no working folder of the user's and no business holding a long
wait for others. `job watch` and `job stop` of a job that has ended are one fixed answer (its
result; "already finished"), so the server takes them when the job store says the job has ended
(`ENDED_ONLY`) and hands any other back.
"""

from __future__ import annotations

# Plain classes, not NamedTuple or dataclasses: `typing` and `dataclasses` are imports the client
# would pay for on every command (3-5 ms), and these two need nothing they give.


class Shape:
    """A command's arguments: how many positionals, its options that take a value, its flags."""

    __slots__ = ("flags", "positionals", "valued")

    def __init__(self, positionals: int, valued: str = "", flags: str = "") -> None:
        self.positionals = positionals
        self.valued = frozenset(valued.split())
        self.flags = frozenset(flags.split())


# The command's words → its shape. Options not listed here (`--wait`, `--help` after arguments) make
# the command run in-process, where typer says what is wrong with one it does not know.
SHAPES: dict[tuple[str, ...], Shape] = {
    ("search",): Shape(2, "--offset --limit --k1 --b --channel", "--json"),
    ("read",): Shape(2, "--offset --limit", "--json"),
    ("collections",): Shape(0, flags="--json"),
    ("job", "list"): Shape(0, "--limit --status --collection --address", "--json"),
    ("job", "show"): Shape(1, flags="--json --full"),
    ("job", "progress"): Shape(1, "--address", "--json"),
    ("job", "result"): Shape(1, "--address", "--json --full"),
    ("job", "watch"): Shape(1, "--address"),
    ("job", "stop"): Shape(1, "--address"),
}
ENDED_ONLY = (("job", "watch"), ("job", "stop"))  # answered only for a job that has ended
SEARCHES = (("search",), ("read",))  # what keeps a collection open (the first positional names it)
HELP = "--help"
# A help screen: `quarry --help`, `quarry job --help`, `quarry search --help` (at most two words).
HELP_WORDS = 2


class Command:
    """A command the resident process answers: its words (`("job", "list")`; `("job", "--help")`
    for a help screen); for a search or read the collection it opens; for a command answered only
    once its job has ended (`ENDED_ONLY`), that job."""

    __slots__ = ("collection", "ended_job", "words")

    def __init__(self, words: tuple[str, ...], collection: str | None = None, ended_job: str | None = None) -> None:
        self.words, self.collection, self.ended_job = words, collection, ended_job

    def _key(self) -> tuple[tuple[str, ...], str | None, str | None]:
        return self.words, self.collection, self.ended_job

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Command) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Command{self._key()!r}"

    @property
    def name(self) -> str:
        """The words as one string (`job list`), as a request names its command."""
        return " ".join(self.words)


def _word(arg: str) -> bool:
    return bool(arg) and not arg.startswith("-") and arg.replace("-", "").replace("_", "").isalnum()


def _help(args: list[str]) -> Command | None:
    words = args[:-1]
    if args[-1] == HELP and len(words) <= HELP_WORDS and all(_word(w) for w in words):
        return Command((*words, HELP), None)
    return None


def command_of(args: list[str]) -> Command | None:
    """The command `args` (from the command's first word on) is, when the resident process answers
    it; None for anything else (typer in-process says what is wrong with a malformed one)."""
    if not args:
        return None
    if HELP in args:
        return _help(args)
    for words, shape in SHAPES.items():
        if tuple(args[: len(words)]) == words:
            return _matches(words, shape, args[len(words) :])
    return None


def _matches(words: tuple[str, ...], shape: Shape, rest: list[str]) -> Command | None:
    positional: list[str] = []
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg in shape.valued:
            if j + 1 >= len(rest):
                return None
            j += 2
            continue
        if arg in shape.flags or ("=" in arg and arg.split("=", 1)[0] in shape.valued):
            j += 1
            continue
        if arg.startswith("-") and arg != "-":
            return None  # `--`, an unknown option, a query that reads as one: typer's to say
        positional.append(arg)
        j += 1
    if len(positional) != shape.positionals:
        return None
    first = positional[0] if positional else None
    return Command(words, first if words in SEARCHES else None, first if words in ENDED_ONLY else None)

"""Which Temporal server a command talks to — one rule for every command.

`quarry run --port 7400` starts this home's embedded server on 7400 and records it in
QUARRY_HOME/run/temporal-server.json. The commands Quarry then prints (`quarry job watch J`,
progress, steer, stop, cancel, result, list) and the worker it starts must reach that server
without the user exporting anything, so the address is resolved, in this order:

1. an explicit `--temporal-address` (passed as a value by the command, `quarry.app.temporal.where`);
2. `QUARRY_TEMPORAL_ADDRESS`;
3. the server this home recorded — only while that very process still runs (the record is
   checked against the process's identity by `workflows.processes.dev_server.server_record`);
4. the default 127.0.0.1:7233.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stores import settings

ADDRESS_DEFAULT = "127.0.0.1:7233"
ENV = settings.TEMPORAL_ADDRESS.name


@dataclass(frozen=True)
class Resolved:
    """An address and where it came from (said in messages, so a wrong server is easy to spot)."""

    address: str
    source: str  # "QUARRY_TEMPORAL_ADDRESS or --temporal-address", "this home's server", "default"


def resolve_address(home: Path | None = None) -> Resolved:
    """The Temporal address for `home` (default: QUARRY_HOME) by the order in the module's doc.

    Reading the record never creates the home: a command run outside any home gets the default."""
    explicit = settings.temporal_address()
    if explicit:
        return Resolved(explicit, f"{ENV} or --temporal-address")
    from stores.home import quarry_home

    home = Path(home) if home is not None else quarry_home()
    if (home / "run" / "temporal-server.json").is_file():
        from workflows.processes.dev_server import server_record

        record = server_record(home)  # None (and the record removed) unless that very process runs
        if record is not None:
            return Resolved(record.address, f"the server this home started ({home / 'run' / 'temporal-server.json'})")
    return Resolved(ADDRESS_DEFAULT, "the default")


def temporal_address(home: Path | None = None) -> str:
    """The address alone (see `resolve_address`)."""
    return resolve_address(home).address

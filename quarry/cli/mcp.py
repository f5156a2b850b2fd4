"""`quarry mcp`: this home's collections and jobs as an MCP server over stdio (quarry.mcp.server),
the command a desktop client (Claude Desktop, Cursor) or a coding agent launches."""

from __future__ import annotations

import typer

from quarry.cli.options import AddressOpt

commands = typer.Typer()


@commands.command("mcp")
def mcp_cmd(address: AddressOpt = None) -> None:
    """Serve Quarry's tools (search, read, jobs) to an MCP client over stdin/stdout."""
    from quarry.mcp.server import serve_stdio  # lazy: the MCP SDK costs start-up every other command would pay

    serve_stdio(address)

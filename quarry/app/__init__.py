"""The application layer: what Quarry does — search, read, run, progress, result, steer, stop, export,
trace — once, with typed requests and results. Every front door (quarry.cli, quarry.http, quarry.mcp,
quarry.resident) and nothing else calls it; it imports none of them."""

"""The resident searcher: one process per QUARRY_HOME that keeps the JVM, the index readers and the
embedder warm, so `quarry search` and `quarry read` answer without starting them each time.

`client` is the `quarry` executable's first step (it imports nothing heavy and hands a search or
read to the resident process over a Unix socket in QUARRY_HOME/run); `server` is that process,
which runs the very command the command line would run in-process (`quarry.cli.app`) and sends back
what it printed and its exit status; `protocol` holds the request and reply it checks.
"""

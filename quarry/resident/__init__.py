"""The resident process: one per QUARRY_HOME that keeps the command line imported and the JVM, the
index readers and the embedder warm, so `quarry search`, `quarry read`, the job commands that only
read and the help screens answer without starting them each time.

`client` is the `quarry` executable's first step (it imports nothing heavy and hands such a command
to the resident process over a Unix socket in QUARRY_HOME/run); `commands` is the table of the
commands it hands over, which the server checks a request against; `server` is that process, which
runs the very command the command line would run in-process (`quarry.cli.app`) and sends back what
it printed and its exit status; `protocol` holds the request and reply it checks.
"""

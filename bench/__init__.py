"""Performance benchmarks (run as modules, e.g. `python -m bench.bench_search`); not timed tests."""

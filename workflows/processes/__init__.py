"""Process management: the embedded Temporal dev server, background processes, addresses, warm-up and program exit."""

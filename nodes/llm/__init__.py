"""Chat models: the one traced call, the `llm` policy, its librarians and prompts, and untrusted text kept as data."""

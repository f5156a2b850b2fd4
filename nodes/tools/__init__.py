"""The agent-facing tools over a corpus, their typed results and the LangChain schemas a model is shown."""

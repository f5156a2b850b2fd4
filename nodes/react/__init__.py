"""The ReAct searcher: the agent and tools steps, its prompts and its checked result."""

"""A development set of real documentation (issue 44): five products' Debian documentation packages
with overlapping vocabulary, factual questions with exact answers and list intents with exclusions."""

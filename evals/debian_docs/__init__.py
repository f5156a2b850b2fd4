"""A development set of real documentation: five products' Debian documentation packages
with overlapping vocabulary, factual questions with exact answers and list intents with exclusions."""

"""The round graph's nodes: navigator, retrieval, verification, reflection, answer (and steering)."""

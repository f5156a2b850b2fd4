"""The round graph's nodes: navigator, retrieval (and its semantic filter), verification, reflection, steering, answer."""

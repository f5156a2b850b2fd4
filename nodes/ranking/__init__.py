"""How candidates are ordered: reciprocal rank fusion, the learned verifier, citation expansion weights and BM25 settings for an untuned collection."""

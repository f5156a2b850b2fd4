"""Reading text without a model: plans, sentences, quotable evidence, scores, the learned verifier, the extractive answer and the citation check."""

"""Reading text without a model: plans, sentences, quotable evidence, scores, the extractive answer and the citation check."""

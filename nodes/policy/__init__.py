"""The policy seam (typed requests and decisions), the heuristic default and the one registry of policies."""

"""What every node shares: the job's configuration, state, runtime, candidate pool, budgets, heartbeats and result pieces."""

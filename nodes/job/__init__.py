"""What every node shares: the job's configuration, state, runtime, control, candidate pool, budgets, heartbeats and result pieces."""

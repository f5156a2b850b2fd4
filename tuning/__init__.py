"""Tuning a collection's search (`quarry tune`, `quarry tune --self`) and training the shipped verifier."""

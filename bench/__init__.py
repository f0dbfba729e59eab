"""Benchmarks: relevance on BEIR SciFact, reported against published baselines."""

"""Benchmarks: each module prints one JSON line per figure (docs/architecture.md §9)."""

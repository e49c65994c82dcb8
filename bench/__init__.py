"""Benchmarks: each module prints one JSON line per figure (DESIGN.md §9)."""

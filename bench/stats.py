"""Small helpers the benchmarks share: percentiles and a free loopback port."""

from __future__ import annotations

import socket


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank value at ``fraction`` (0..1) of ``values`` (non-empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port

"""Per-key token buckets (docs/api.md 2.1: default 20 requests/s, burst 100)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class RateLimiter:
    """Token buckets keyed by API-key id, owned by one application.

    Args:
        rate: Tokens added per second.
        burst: Bucket size.
        clock: Monotonic clock in seconds.
    """

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[int, _Bucket] = field(default_factory=dict)

    def acquire(self, key_id: int) -> float:
        """Take one token for ``key_id``.

        Returns:
            0.0 when allowed; otherwise the whole seconds (≥ 1) until a token is available,
            for ``Retry-After``.
        """
        now = self.clock()
        bucket = self._buckets.get(key_id)
        if bucket is None:
            bucket = self._buckets[key_id] = _Bucket(tokens=float(self.burst), updated=now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return float(max(1, math.ceil((1.0 - bucket.tokens) / self.rate)))


RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
"""The per-key request rate limiter of the application."""

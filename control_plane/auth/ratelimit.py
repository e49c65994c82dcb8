"""Token buckets: per API key and per client address for requests without a valid key.

Per key: docs/api.md 2.1, default 20 requests/s, burst 100. Per address (default 5/s, burst 50):
requests without a valid key, checked before any lookup.
"""

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
    """Token buckets keyed by API-key id (or client address), owned by one application.

    Buckets that have refilled completely are forgotten once more than ``max_buckets`` exist,
    so a stream of distinct addresses cannot grow the table without bound.

    Args:
        rate: Tokens added per second.
        burst: Bucket size.
        clock: Monotonic clock in seconds.
        max_buckets: Table size above which full buckets are dropped.
    """

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    max_buckets: int = 10_000
    _buckets: dict[int | str, _Bucket] = field(default_factory=dict)

    def _prune(self, now: float) -> None:
        refill = self.burst / self.rate
        self._buckets = {
            key: bucket for key, bucket in self._buckets.items() if now - bucket.updated < refill
        }

    def wait_of(self, key_id: int | str) -> float:
        """Like :meth:`acquire` but takes nothing: 0.0 when a token is available now."""
        bucket = self._buckets.get(key_id)
        if bucket is None:
            return 0.0
        tokens = min(float(self.burst), bucket.tokens + (self.clock() - bucket.updated) * self.rate)
        if tokens >= 1.0:
            return 0.0
        return float(max(1, math.ceil((1.0 - tokens) / self.rate)))

    def acquire(self, key_id: int | str) -> float:
        """Take one token for ``key_id`` (an API-key id or a client address).

        Returns:
            0.0 when allowed; otherwise the whole seconds (≥ 1) until a token is available,
            for ``Retry-After``.
        """
        now = self.clock()
        bucket = self._buckets.get(key_id)
        if bucket is None:
            if len(self._buckets) >= self.max_buckets:
                self._prune(now)
            bucket = self._buckets[key_id] = _Bucket(tokens=float(self.burst), updated=now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return float(max(1, math.ceil((1.0 - bucket.tokens) / self.rate)))


RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
"""The per-key request rate limiter of the application."""

ADDRESS_RATE_LIMITER = web.AppKey("address_rate_limiter", RateLimiter)
"""The per-client-address limiter of requests without a valid key (and unauthenticated
writes such as invitation acceptance)."""

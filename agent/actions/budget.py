"""A rolling per-bot budget of detector calls and tokens."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class RollingBudget:
    """At most ``calls`` calls and ``tokens`` tokens in any ``period`` seconds.

    Args:
        calls: Calls allowed per period.
        tokens: Tokens (prompt + completion) allowed per period.
        period: Seconds of the rolling window (60 for "per minute").
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        calls: int,
        tokens: int,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._calls = calls
        self._tokens = tokens
        self._period = period
        self._clock = clock
        self._spent: deque[tuple[float, int]] = deque()

    def _expire(self, now: float) -> None:
        while self._spent and self._spent[0][0] <= now - self._period:
            self._spent.popleft()

    def wait_seconds(self, tokens: int) -> float:
        """Seconds until a call of ``tokens`` fits (0 when it fits now).

        A call bigger than the whole token budget fits once nothing else was spent in the
        period, so an oversized window delays but never blocks detection for good.
        """
        now = self._clock()
        self._expire(now)
        if not self._spent:
            return 0.0
        used = sum(t for _, t in self._spent)
        if len(self._spent) < self._calls and used + tokens <= self._tokens:
            return 0.0
        # Drop the oldest entries until both limits hold; the last one dropped says when.
        freed_until = self._spent[0][0]
        remaining_calls, remaining_tokens = len(self._spent), used
        for stamp, spent in self._spent:
            freed_until = stamp
            remaining_calls -= 1
            remaining_tokens -= spent
            if remaining_calls < self._calls and (
                remaining_tokens + tokens <= self._tokens or remaining_calls == 0
            ):
                break
        return max(0.0, freed_until + self._period - now)

    def spend(self, tokens: int) -> None:
        """Record one call that used ``tokens``."""
        self._spent.append((self._clock(), tokens))

    def adjust_last(self, tokens: int) -> None:
        """Replace the estimate of the last call with the count the server reported."""
        if self._spent:
            stamp, _ = self._spent.pop()
            self._spent.append((stamp, tokens))

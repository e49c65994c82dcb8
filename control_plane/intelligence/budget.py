"""Rolling budgets of model calls and tokens, one per workspace on this replica (docs/api.md 2.9).

Each replica keeps its own: with ``n`` replicas a workspace may spend up to ``n`` times the
budget (the detection worker of one replica analyses a given meeting at a time, so one
meeting's calls count against one budget).
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable


class RollingBudget:
    """At most ``calls`` calls and ``tokens`` tokens in any ``period`` seconds.

    Args:
        calls: Calls allowed per period.
        tokens: Tokens (prompt + completion) allowed per period.
        period: Seconds of the rolling window.
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
        self._spent: deque[list[float]] = deque()  # [stamp, tokens] of each call

    def _forget_old(self, now: float) -> None:
        while self._spent and self._spent[0][0] <= now - self._period:
            self._spent.popleft()

    def wait_seconds(self, tokens: int) -> float:
        """Seconds until a call of ``tokens`` fits (0 when it fits now).

        A call larger than the whole token budget fits once nothing else is in the period, so
        an oversized window is delayed, never refused for good.
        """
        now = self._clock()
        self._forget_old(now)
        used = sum(int(entry[1]) for entry in self._spent)
        if not self._spent or (len(self._spent) < self._calls and used + tokens <= self._tokens):
            return 0.0
        calls_left, tokens_left = len(self._spent), used
        for stamp, spent in self._spent:
            calls_left -= 1
            tokens_left -= int(spent)
            fits = calls_left < self._calls and tokens_left + tokens <= self._tokens
            if fits or calls_left == 0:
                return max(0.0, stamp + self._period - now)
        return 0.0  # not reached: the loop returns once calls_left is 0

    def spend(self, tokens: int) -> list[float]:
        """Record one call of ``tokens`` (an estimate); returns its entry for :meth:`settle`."""
        entry = [self._clock(), float(tokens)]
        self._spent.append(entry)
        return entry

    @staticmethod
    def settle(entry: list[float], tokens: int) -> None:
        """Replace a call's estimate with the tokens the server counted."""
        entry[1] = float(tokens)


class WorkspaceBudgets:
    """One :class:`RollingBudget` per workspace, made on first use.

    Args:
        calls_per_minute: Calls per workspace per rolling minute.
        tokens_per_minute: Tokens per workspace per rolling minute.
        period: Seconds of the rolling window (60; shorter only in tests).
    """

    def __init__(self, calls_per_minute: int, tokens_per_minute: int, period: float = 60.0) -> None:
        self._calls = calls_per_minute
        self._tokens = tokens_per_minute
        self._period = period
        self._budgets: dict[uuid.UUID, RollingBudget] = {}

    def of(self, workspace_id: uuid.UUID) -> RollingBudget:
        """The budget of ``workspace_id``."""
        budget = self._budgets.get(workspace_id)
        if budget is None:
            budget = RollingBudget(self._calls, self._tokens, self._period)
            self._budgets[workspace_id] = budget
        return budget

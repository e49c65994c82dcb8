"""Writers ahead of lists: a bound on the list requests one process serves at once.

Bot creation starved beside clients that list as fast as they can (issue 18). A creation is a
handful of database round trips, and each answer waits for a turn of the event loop behind
every callback already ready there; a list page spends milliseconds of the loop's time on
building and serialising up to 200 items. With 8 listing clients, each of a creation's round
trips waited behind up to 8 such pages (py-spy of ``bench/api.py --mixed-only`` on PostgreSQL:
creation p50 123 ms, about seven round trips). The list routes (``GET /api/v1/meetings``,
``GET /api/v1/bots``) therefore take a slot of :data:`LIST_GATE` for their whole handler; the
lists beyond the bound wait on it without using the loop, and writes, which take no slot, find
few list pages ahead of them.

The bound follows the writers (:meth:`ListGate.writing`): ``Settings.list_concurrency`` (2)
slots while a bot creation is in flight and for :data:`IDLE_AFTER_S` after the last one ended,
``Settings.list_concurrency_idle`` (8) after that. The pause matters: between one client's
creation and its next, none may be in flight for a moment, and lists admitted at the idle bound
then would be ahead of the next creation's round trips.
With a fixed bound of 2, lists alone lost throughput wherever a list is mostly a wait for the
database (the ``bot_id`` look-up: 884 → 705/s on SQLite, 723 → 634/s on PostgreSQL,
bench/api.py); with the idle bound they run as before the gate, and a creation that arrives
finds at most the idle bound of lists ahead of it, after which lists are admitted at the busy
bound again. Lists already admitted are never interrupted.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from aiohttp import web

IDLE_AFTER_S = 0.25
"""Seconds without a write in flight before lists get the idle bound."""


class ListGate:
    """Admits list requests: ``busy`` at once while a write is in flight, ``idle`` otherwise.

    Use ``async with gate:`` around a list handler and ``with gate.writing():`` around a write.
    Waiting lists are admitted in arrival order.

    Args:
        busy: Lists at once while at least one write is in flight (≥ 1).
        idle: Lists at once once none has been for ``idle_after`` seconds (taken as at least
            ``busy``).
        idle_after: Seconds after the last write ended before ``idle`` applies.

    Raises:
        ValueError: ``busy`` or ``idle`` below 1.
    """

    def __init__(self, busy: int, idle: int, idle_after: float = IDLE_AFTER_S) -> None:
        if busy < 1 or idle < 1:
            raise ValueError("list concurrency must be at least 1")
        self.busy = busy
        self.idle = max(busy, idle)
        self.idle_after = idle_after
        self._active = 0
        self._writers = 0
        self._last_write = -float("inf")
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: deque[asyncio.Future[None]] = deque()

    def _quiet_for(self) -> float:
        """Seconds since the last write ended (0 while one is in flight)."""
        return 0.0 if self._writers else time.monotonic() - self._last_write

    @property
    def limit(self) -> int:
        """Lists admitted at once right now."""
        if self._writers or self._quiet_for() < self.idle_after:
            return self.busy
        return self.idle

    @property
    def active(self) -> int:
        """Lists holding a slot now."""
        return self._active

    async def __aenter__(self) -> None:
        """Wait for a slot (none is taken while lists wait ahead of this one)."""
        if self._active < self.limit and not self._waiting:
            self._active += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter  # the slot is counted for this list when the waiter is woken
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # woken and cancelled at once: hand the slot on
            elif waiter in self._waiting:  # else a wake-up already dropped it
                self._waiting.remove(waiter)
            raise

    async def __aexit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        """Give the slot back."""
        self._release()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Mark a write in flight for the duration of the block."""
        self._writers += 1
        try:
            yield
        finally:
            self._writers -= 1
            if not self._writers:
                self._last_write = time.monotonic()
            self._admit()

    def _release(self) -> None:
        self._active -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting and self._active < self.limit:
            waiter = self._waiting.popleft()
            if not waiter.done():
                self._active += 1
                waiter.set_result(None)
        pause_left = 0.0 if self._writers else self.idle_after - self._quiet_for()
        if self._waiting and self._timer is None and pause_left > 0:
            # Lists wait only for the pause after the last write: look again when it is over.
            self._timer = asyncio.get_running_loop().call_later(pause_left, self._after_pause)

    def _after_pause(self) -> None:
        self._timer = None
        self._admit()


LIST_GATE = web.AppKey("list_gate", ListGate)
"""The list gate of this process (``Settings.list_concurrency`` and ``…_idle`` slots)."""


def list_gate(busy: int, idle: int | None = None, idle_after: float = IDLE_AFTER_S) -> ListGate:
    """A gate admitting ``busy`` lists at once beside writes and ``idle`` (default ``busy``) else.

    Raises:
        ValueError: A bound below 1.
    """
    return ListGate(busy, busy if idle is None else idle, idle_after)

"""The newest events of one bot's stream, held in memory by a replica for its stream clients.

Events are the agent's (:class:`~agent.contracts.link.StreamItem`, numbered by the agent), so
every replica serves the same ids. A window holds a contiguous run ``base < seq <= last``
within a byte budget; older events are dropped from its front (a client replaying further back
fetches them from the agent). An event that skips ahead (missed messages) restarts the window
there: clients behind it fetch the gap the same way.

Events are held as ``(seq, event, data)`` tuples, not as the frame's model: a tuple of an int
and two strings drops out of the garbage collector's sight after its first collection, while a
model (with its dict and set) stays tracked. A thousand bots' windows hold up to millions of
events, and each full collection of the replica walked all of them while the agent links'
frames waited.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from agent.contracts.link import StreamItem


class StreamWindow:
    """A bounded, contiguous run of a bot's newest stream events, with waiting readers.

    Args:
        max_bytes: Budget of event data held (at least the newest event is kept).
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._items: deque[tuple[int, str, str]] = deque()
        self._bytes = 0
        self.base = 0
        """Sequence number just before the oldest held event."""
        self.known = False
        """Whether the window knows where the stream stands (an event or a position came)."""
        self.ended = False
        """The agent's stream log is closed: no event follows :attr:`last`."""
        self._changed = asyncio.Event()

    @property
    def last(self) -> int:
        """Sequence number of the newest event known (``base`` when none is held)."""
        return self.base + len(self._items)

    @property
    def size_bytes(self) -> int:
        """Bytes of event data held."""
        return self._bytes

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _restart(self, base: int) -> None:
        self._items.clear()
        self._bytes = 0
        self.base = base
        self.known = True

    def append(self, item: StreamItem) -> bool:
        """Add the next event; an old one is ignored, one that skips ahead restarts the window.

        Returns whether the event was new.
        """
        if not self.known:
            self._restart(item.seq - 1)
        if item.seq <= self.last:
            return False
        if item.seq > self.last + 1:
            self._restart(item.seq - 1)
        self._items.append((item.seq, item.event, item.data))
        self._bytes += len(item.data)
        while len(self._items) > 1 and self._bytes > self._max_bytes:
            dropped = self._items.popleft()
            self._bytes -= len(dropped[2])
            self.base += 1
        self._wake()
        return True

    def move_to(self, last: int) -> None:
        """Learn that the stream stands at ``last``; a window behind it restarts there empty."""
        if not self.known or last > self.last:
            self._restart(last)
            self._wake()

    def end(self, last: int | None = None) -> None:
        """Mark the stream ended (after ``last``, when given) and wake every reader."""
        if last is not None:
            self.move_to(last)
        self.ended = True
        self._wake()

    def after(self, cursor: int) -> list[StreamItem] | None:
        """The held events with ``seq > cursor``, or None when some are older than the window.

        None means ``cursor < base``: fetch ``cursor < seq <= base`` first.
        """
        if not self.known or cursor >= self.last:
            return []
        if cursor < self.base:
            return None
        held = list(self._items)[cursor - self.base :]
        # Validated when they arrived: rebuilt without validating again.
        return [
            StreamItem.model_construct(seq=seq, event=event, data=data) for seq, event, data in held
        ]

    async def wait(self, cursor: int, within: float) -> None:
        """Return when an event after ``cursor`` is held, the window changed, or ``within`` s."""
        changed = self._changed
        if self.ended or (self.known and self.last > cursor):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), within)

"""The meeting's stream events, kept whole so a reconnecting client can replay what it missed.

The agent numbers every event here; its link (:mod:`agent.link.client`) feeds them to the
control plane, which serves the bot's SSE stream (docs/api.md 2.7) and asks for older events
with ``stream_fetch`` when a client replays further back than it keeps in memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One SSE event.

    Attributes:
        id: Per-bot sequence number, starting at 1 and increasing by one.
        event: Event name (``bot_status``, ``participant_update``, ``transcript_segment``,
            ``action_detected``, ``recording_ready``).
        data: The JSON payload as text (docs/api.md 2.7).
    """

    id: int
    event: str
    data: str


class EventLog:
    """Append-only list of :class:`StreamEvent` with waiting readers.

    The whole meeting is kept (docs/api.md 2.7: ``Last-Event-ID`` replays anything missed); a
    meeting's events are a few thousand small JSON objects (about 1.5 MB for an hour of talk,
    partials included).
    """

    def __init__(self) -> None:
        self._events: list[StreamEvent] = []
        self._changed = asyncio.Condition()
        self._closed = False

    def __len__(self) -> int:
        return len(self._events)

    @property
    def closed(self) -> bool:
        """Whether the log takes no more events (the agent is shutting down)."""
        return self._closed

    async def append(self, event: str, payload: dict[str, Any]) -> StreamEvent:
        """Add an event and wake readers; returns it with its id.

        Raises:
            RuntimeError: The log is closed.
        """
        if self._closed:
            raise RuntimeError("event log is closed")
        item = StreamEvent(len(self._events) + 1, event, json.dumps(payload, default=str))
        self._events.append(item)
        async with self._changed:
            self._changed.notify_all()
        return item

    @property
    def last_id(self) -> int:
        """The id of the newest event (0 when there is none)."""
        return len(self._events)

    def between(self, after: int, upto: int, max_bytes: int) -> list[StreamEvent]:
        """The events with ``after < id <= upto``, oldest first, within ``max_bytes`` of data.

        At least one event is returned when the range holds any.
        """
        taken: list[StreamEvent] = []
        size = 0
        for item in self._events[max(after, 0) : max(upto, 0)]:
            if taken and size + len(item.data) > max_bytes:
                break
            taken.append(item)
            size += len(item.data)
        return taken

    def snapshot(self) -> list[StreamEvent]:
        """All events so far, oldest first."""
        return list(self._events)

    async def close(self) -> None:
        """Stop taking events; readers finish after the last one."""
        self._closed = True
        async with self._changed:
            self._changed.notify_all()

    def _more_than(self, seen: int) -> Callable[[], bool]:
        return lambda: self._closed or len(self._events) > seen

    async def follow(self, after: int = 0) -> AsyncIterator[StreamEvent]:
        """Yield the events with ``id > after``, then new ones as they come, until closed."""
        position = max(after, 0)
        while True:
            while position < len(self._events):
                position += 1
                yield self._events[position - 1]
            if self._closed:
                return
            async with self._changed:
                await self._changed.wait_for(self._more_than(position))

"""Publishing the bots' stream events to other replicas, many to one ``NOTIFY``.

The holder of a bot's link must not wait for a database round trip per event (its link's
frames would queue behind it), and one ``NOTIFY`` per partial costs a round trip each. So
events and ends are queued here, in order, and one owned task publishes them: as many as fit
in one payload go together as ``{"kind": "stream_events", "origin", "events": [[bot_id, seq,
event, data], …]}``; an event too large for a payload goes alone, split into ``stream_event``
parts (:func:`split_text`); an end goes as ``stream_end``.
Order is kept: everything leaves in the order it was queued.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agent.contracts.link import StreamItem
from control_plane.agent_hub.relay import MAX_PAYLOAD_BYTES, CommandRelay
from meetbot_common.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

_QUEUE_MAX = 100_000
"""Entries waiting at most; beyond, new ones are dropped (readers elsewhere fetch the gap)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A bot's event (``item``) or its stream's end (``end``: the last id) to publish."""

    bot_id: UUID
    item: StreamItem | None = None
    end: int | None = None


def split_text(message: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """``message`` with ``text`` cut into parts whose NOTIFY payloads fit the relay's limit.

    Every part carries ``part`` (from 0), ``parts`` and its piece of ``text``; joining the
    pieces in ``part`` order gives ``text`` back.
    """
    whole = {**message, "part": 0, "parts": 1, "text": text}
    if len(json.dumps(whole, separators=(",", ":")).encode()) <= MAX_PAYLOAD_BYTES:
        return [whole]
    frame = {**message, "part": 999999, "parts": 999999, "text": ""}
    budget = MAX_PAYLOAD_BYTES - len(json.dumps(frame, separators=(",", ":")).encode())
    pieces: list[str] = []
    start = size = 0
    for index, char in enumerate(text):
        cost = len(json.dumps(char)) - 2  # its escaped length, as the relay serialises it
        if size + cost > budget:
            pieces.append(text[start:index])
            start, size = index, 0
        size += cost
    pieces.append(text[start:])
    return [
        {**message, "part": number, "parts": len(pieces), "text": piece}
        for number, piece in enumerate(pieces)
    ]


def _entry(out: Outgoing) -> list[object]:
    assert out.item is not None  # noqa: S101 - events only
    return [str(out.bot_id), out.item.seq, out.item.event, out.item.data]


class StreamPublisher:
    """One owned task publishing queued :class:`Outgoing` (see the module docstring).

    Args:
        relay: The replica's relay.
    """

    def __init__(self, relay: CommandRelay) -> None:
        self._relay = relay
        self._queue: asyncio.Queue[Outgoing] = asyncio.Queue(_QUEUE_MAX)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        """Start the publishing task."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="stream-publisher")

    def put(self, out: Outgoing) -> None:
        """Queue ``out`` (never waits; counts a drop when the queue is full)."""
        try:
            self._queue.put_nowait(out)
        except asyncio.QueueFull:
            self.dropped += 1

    async def _run(self) -> None:
        carried: Outgoing | None = None
        while True:
            out = carried or await self._queue.get()
            try:
                carried = await self._publish_from(out)
            except Exception:  # one bad entry must not stop the bots' streams
                logger.exception("stream publish failed", extra={"bot_id": str(out.bot_id)})
                carried = None

    async def _publish_from(self, out: Outgoing) -> Outgoing | None:
        """Publish ``out`` and what fits with it; return a taken entry left for next time."""
        budget = MAX_PAYLOAD_BYTES - 100
        if out.end is not None:
            await self._relay.publish(
                {
                    "kind": "stream_end",
                    "origin": self._relay.replica_id,
                    "bot_id": str(out.bot_id),
                    "last": out.end,
                }
            )
            return None
        size = len(json.dumps(_entry(out)))
        if size > budget:
            await self._publish_big(out)
            return None
        batch = [_entry(out)]
        carried: Outgoing | None = None
        while not self._queue.empty():
            following = self._queue.get_nowait()
            if following.end is not None:
                carried = following
                break
            entry = _entry(following)
            more = len(json.dumps(entry)) + 1
            if size + more > budget:
                carried = following
                break
            batch.append(entry)
            size += more
        await self._relay.publish(
            {"kind": "stream_events", "origin": self._relay.replica_id, "events": batch}
        )
        return carried

    async def _publish_big(self, out: Outgoing) -> None:
        assert out.item is not None  # noqa: S101 - events only
        message = {
            "kind": "stream_event",
            "origin": self._relay.replica_id,
            "bot_id": str(out.bot_id),
            "seq": out.item.seq,
            "event": out.item.event,
        }
        for part in split_text(message, out.item.data):
            if not await self._relay.publish(part):
                return

    async def aclose(self) -> None:
        """Stop publishing (what is still queued is dropped) and await the task."""
        await cancel_and_wait(self._task)
        self._task = None

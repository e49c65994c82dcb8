"""Bots' SSE streams on this replica, fed by agent links and, across replicas, by the relay.

Sources: docs/api.md 2.7, docs/architecture.md §5 and §6.

One :class:`BotFeed` per bot that has a link or a stream client here, each with a
:class:`~control_plane.agent_hub.stream_window.StreamWindow` of its newest events.

- **The replica holding the agent's link** (the holder) tells the agent where to feed from
  after every ``register`` (``stream_from``: its window's last id, or the agent's newest id
  less a window's worth when it has none), appends every ``stream_event`` to its window, and
  publishes it to the other replicas that have clients for the bot. Older events are fetched
  from the agent (``stream_fetch`` → ``stream_batch``), which keeps the whole meeting.
- **Another replica** with a client for the bot publishes ``stream_sub`` (a lease, renewed
  every :data:`SUB_RENEW_S` while it has clients); the holder answers ``stream_head`` (where the
  stream stands) and from then on publishes the bot's events to it. Older events are fetched
  from the holder (``stream_fetch`` → ``stream_batch``), which answers from its window or from
  the agent.

Relay messages (PostgreSQL ``NOTIFY``, at most 7900 bytes each: a larger event or batch goes in
numbered parts ``part``/``parts`` of its ``text``, published back to back and joined here; the
holder's events and ends leave through one queue, in order, batched):

- ``{"kind": "stream_sub", "origin": R, "bot_id": B}``
- ``{"kind": "stream_head", "origin", "target": R, "bot_id", "last", "ended"}``
- ``{"kind": "stream_events", "origin", "events": [[bot_id, seq, event, data], …]}``: events
  of one or more bots, as many as fit (:mod:`~control_plane.agent_hub.stream_publisher`)
- ``{"kind": "stream_event", "origin", "bot_id", "seq", "event", "part", "parts", "text"}``:
  one event too large for a payload
- ``{"kind": "stream_end", "origin", "bot_id", "last"}``
- ``{"kind": "stream_fetch", "origin": R, "bot_id", "ref", "after", "upto"}``
- ``{"kind": "stream_batch", "origin", "target": R, "ref", "part", "parts", "text"}``
  (``text``: JSON ``[[seq, event, data], …]``)

Memory: a window holds at most ``stream_window_bytes`` (default 256 KiB) per bot; feeds without
clients are dropped once their bot's stream ended or went quiet (see :meth:`BotStreams.purge`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from agent.contracts.link import (
    StreamBatch,
    StreamEnd,
    StreamEvent,
    StreamFetch,
    StreamFrom,
    StreamItem,
)
from control_plane.agent_hub.relay import CommandRelay
from control_plane.agent_hub.stream_publisher import Outgoing, StreamPublisher, split_text
from control_plane.agent_hub.stream_window import StreamWindow

logger = logging.getLogger(__name__)

SUB_RENEW_S = 2.0
"""How often a replica with clients for a bot it does not hold renews its ``stream_sub``."""
SUB_LEASE_S = 3 * SUB_RENEW_S
"""How long a holder keeps publishing a bot's events to a replica after its last ``stream_sub``."""
FETCH_WAIT_S = 5.0
"""How long a fetch of older events waits for the agent's or the holder's answer."""
FETCH_BYTES = 256 * 1024
"""Event data asked for in one fetch."""
RESUME_EVENTS = 256
"""Events an agent new to this replica feeds at most from before its newest one."""
IDLE_DROP_S = 600.0
"""A feed without clients or link is dropped once its bot sent nothing for this long."""
_MAX_ASSEMBLIES = 256

SendToAgent = Callable[[UUID, str], Awaitable[None]]
"""Sends one text frame on a bot's link here (``AgentHub.send``; raises when there is none)."""


class StreamUnavailable(Exception):
    """Older events of a bot's stream cannot be had now (no agent link, no holder answered)."""


@dataclass
class BotFeed:
    """One bot's stream on this replica: its window, clients, and the replicas it feeds."""

    window: StreamWindow
    clients: int = 0
    last_event_at: float = field(default_factory=time.monotonic)
    subscribed_at: float = 0.0
    checked_at: float = field(default_factory=time.monotonic)
    final_seen_at: float | None = None
    """When a stream client here first saw the bot final (the lost-agent check)."""
    remotes: dict[str, float] = field(default_factory=dict)
    """Replica id → until when it asked for the bot's events (holder side)."""

    def remote_targets(self, now: float) -> bool:
        """Drop lapsed leases; return whether any replica still wants the events."""
        self.remotes = {key: until for key, until in self.remotes.items() if until > now}
        return bool(self.remotes)


def _items_text(items: list[StreamItem]) -> str:
    return json.dumps([[item.seq, item.event, item.data] for item in items])


def _items_of(text: str) -> list[StreamItem]:
    return [StreamItem(seq=seq, event=event, data=data) for seq, event, data in json.loads(text)]


class BotStreams:
    """This replica's bot streams (see the module docstring).

    Args:
        send: Sends a frame on a bot's link here.
        connected: Whether a bot's link is open here.
        window_bytes: Each window's byte budget.
    """

    def __init__(
        self, send: SendToAgent, connected: Callable[[UUID], bool], window_bytes: int
    ) -> None:
        self._send = send
        self._connected = connected
        self._window_bytes = window_bytes
        self.relay: CommandRelay | None = None
        self._publisher: StreamPublisher | None = None
        self._feeds: dict[UUID, BotFeed] = {}
        self._fetches: dict[str, asyncio.Future[list[StreamItem]]] = {}
        self._parts: dict[str, list[str]] = {}
        self.closing = False
        """This replica is shutting down (:meth:`end_all`): its streams end now, waiting for
        nothing more (a stream that would wait for its meeting's summary ends too)."""

    def attach_relay(self, relay: CommandRelay) -> None:
        """Use ``relay`` to reach other replicas; starts the owned publishing task."""
        self.relay = relay
        self._publisher = StreamPublisher(relay)
        self._publisher.start()

    async def detach_relay(self) -> None:
        """Stop using the relay; awaits the publishing task."""
        self.relay = None
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            await publisher.aclose()

    def feed(self, bot_id: UUID) -> BotFeed:
        """The bot's feed here, created empty when missing."""
        feed = self._feeds.get(bot_id)
        if feed is None:
            feed = self._feeds[bot_id] = BotFeed(StreamWindow(self._window_bytes))
        return feed

    def feeds(self) -> int:
        """Number of feeds held (for tests and metrics)."""
        return len(self._feeds)

    # The holder's side: the agent link ---------------------------------------------------------

    async def on_register(self, bot_id: UUID, agent_seq: int) -> None:
        """Tell the bot's agent, which just registered here, where to feed its stream from.

        From this window's last event when it is no further than the agent's; otherwise (no
        window yet, or one of an agent that started over) :data:`RESUME_EVENTS` back at most:
        older events are fetched when a client asks for them.
        """
        feed = self.feed(bot_id)
        window = feed.window
        if window.ended or (window.known and window.last > agent_seq):
            window = feed.window = StreamWindow(self._window_bytes)
        if window.known:
            after = window.last
        else:
            after = max(agent_seq - RESUME_EVENTS, 0)
            window.move_to(after)
        try:
            await self._send(bot_id, StreamFrom(after=after).model_dump_json())
        except Exception:  # the link closed meanwhile; the next register asks again
            logger.info("stream_from not sent", extra={"bot_id": str(bot_id)})

    async def on_frame(self, bot_id: UUID, frame: StreamEvent | StreamEnd | StreamBatch) -> None:
        """Take a stream frame from the bot's link here."""
        if isinstance(frame, StreamBatch):
            future = self._fetches.get(frame.ref_id)
            if future is not None and not future.done():
                future.set_result(list(frame.items))
            return
        feed = self.feed(bot_id)
        now = time.monotonic()
        feed.last_event_at = now
        publisher = self._publisher if feed.remote_targets(now) else None
        if isinstance(frame, StreamEnd):
            feed.window.end(frame.last_seq)
            if publisher is not None:
                publisher.put(Outgoing(bot_id, end=frame.last_seq))
            return
        if feed.window.append(frame.item) and publisher is not None:
            publisher.put(Outgoing(bot_id, item=frame.item))

    def end(self, bot_id: UUID) -> None:
        """End the bot's stream here (its agent was given up on)."""
        feed = self._feeds.get(bot_id)
        if feed is not None:
            feed.window.end()

    def end_all(self) -> None:
        """End every stream here (shutting down: clients reconnect to a replica that is up)."""
        self.closing = True
        for feed in self._feeds.values():
            feed.window.end()

    # Older events ------------------------------------------------------------------------------

    async def fetch(self, bot_id: UUID, after: int, upto: int) -> list[StreamItem]:
        """Events ``after < seq <= upto`` (possibly fewer), from the agent or the holder.

        Raises:
            StreamUnavailable: No link here and no holder answered in time.
        """
        ref = str(uuid.uuid4())
        future: asyncio.Future[list[StreamItem]] = asyncio.get_running_loop().create_future()
        self._fetches[ref] = future
        try:
            if self._connected(bot_id):
                frame = StreamFetch(id=ref, after=after, upto=upto, max_bytes=FETCH_BYTES)
                try:
                    await self._send(bot_id, frame.model_dump_json())
                except Exception as exc:  # the link closed meanwhile
                    raise StreamUnavailable(str(bot_id)) from exc
            elif self.relay is not None:
                published = await self.relay.publish(
                    {
                        "kind": "stream_fetch",
                        "origin": self.relay.replica_id,
                        "bot_id": str(bot_id),
                        "ref": ref,
                        "after": after,
                        "upto": upto,
                    }
                )
                if not published:
                    raise StreamUnavailable(str(bot_id))
            else:
                raise StreamUnavailable(str(bot_id))
            try:
                items = await asyncio.wait_for(future, FETCH_WAIT_S)
            except TimeoutError as exc:
                raise StreamUnavailable(str(bot_id)) from exc
        finally:
            self._fetches.pop(ref, None)
        return [item for item in items if after < item.seq <= upto]

    # Clients -----------------------------------------------------------------------------------

    def open(self, bot_id: UUID) -> BotFeed:
        """A client starts reading the bot's stream here."""
        self.purge()
        feed = self.feed(bot_id)
        feed.clients += 1
        return feed

    def close(self, bot_id: UUID, feed: BotFeed) -> None:
        """A client stopped reading."""
        feed.clients -= 1
        self.purge()
        del bot_id

    async def keep_fed(self, bot_id: UUID, feed: BotFeed) -> None:
        """Renew this replica's ``stream_sub`` when the bot's link is elsewhere (rate-limited)."""
        now = time.monotonic()
        if self.relay is None or self._connected(bot_id) or now - feed.subscribed_at < SUB_RENEW_S:
            return
        feed.subscribed_at = now
        await self.relay.publish(
            {"kind": "stream_sub", "origin": self.relay.replica_id, "bot_id": str(bot_id)}
        )

    def purge(self) -> None:
        """Drop feeds nobody reads that ended, or whose bot is neither linked here nor lively."""
        now = time.monotonic()
        for bot_id, feed in list(self._feeds.items()):
            if feed.clients > 0:
                continue
            linked = self._connected(bot_id)
            if (
                (feed.window.ended and not linked)
                or (not linked and not feed.remotes and now - feed.last_event_at > IDLE_DROP_S)
                or (not linked and feed.subscribed_at > 0)
            ):
                del self._feeds[bot_id]

    # The relay ---------------------------------------------------------------------------------

    def _joined(self, key: str, message: dict[str, Any]) -> str | None:
        """The whole ``text`` once every part of a split message is here, else None."""
        parts = int(message.get("parts", 1))
        if parts <= 1:
            return str(message.get("text", ""))
        pieces = self._parts.setdefault(key, [])
        if int(message.get("part", 0)) != len(pieces):  # a part was lost: give the rest up
            self._parts.pop(key, None)
            return None
        pieces.append(str(message.get("text", "")))
        if len(self._parts) > _MAX_ASSEMBLIES:
            self._parts.pop(next(iter(self._parts)))
        if len(pieces) < parts:
            return None
        del self._parts[key]
        return "".join(pieces)

    def on_relay_now(self, message: dict[str, Any]) -> bool:
        """Handle an ordered stream message at once; False for messages handled elsewhere."""
        kind = message.get("kind")
        if kind == "stream_events":
            now = time.monotonic()
            for bot, seq, event, data in message["events"]:
                bot_id = UUID(str(bot))
                feed = self._feeds.get(bot_id)
                if feed is not None and not self._connected(bot_id):
                    feed.last_event_at = now
                    feed.window.append(StreamItem(seq=int(seq), event=str(event), data=str(data)))
            return True
        if kind == "stream_event":
            bot_id = UUID(str(message["bot_id"]))
            text = self._joined(f"e:{bot_id}:{message['seq']}", message)
            feed = self._feeds.get(bot_id)
            if text is not None and feed is not None and not self._connected(bot_id):
                feed.last_event_at = time.monotonic()
                feed.window.append(
                    StreamItem(seq=int(message["seq"]), event=str(message["event"]), data=text)
                )
            return True
        if kind == "stream_head":
            feed = self._feeds.get(UUID(str(message["bot_id"])))
            if feed is not None:
                feed.window.move_to(int(message["last"]))
                if message.get("ended"):
                    feed.window.end()
            return True
        if kind == "stream_end":
            bot_id = UUID(str(message["bot_id"]))
            feed = self._feeds.get(bot_id)
            if feed is not None and not self._connected(bot_id):
                feed.window.end(int(message["last"]))
            return True
        if kind == "stream_batch":
            ref = str(message["ref"])
            text = self._joined(f"b:{ref}", message)
            future = self._fetches.get(ref)
            if text is not None and future is not None and not future.done():
                future.set_result(_items_of(text))
            return True
        return False

    async def on_relay(self, message: dict[str, Any]) -> None:
        """Handle ``stream_sub`` and ``stream_fetch`` (the holder's answers may await)."""
        if self.relay is None:
            return
        kind = message.get("kind")
        bot_id = UUID(str(message["bot_id"]))
        origin = str(message["origin"])
        feed = self._feeds.get(bot_id)
        linked = self._connected(bot_id)
        if kind == "stream_sub" and linked:
            feed = self.feed(bot_id)
            feed.remotes[origin] = time.monotonic() + SUB_LEASE_S
            await self.relay.publish(
                {
                    "kind": "stream_head",
                    "origin": self.relay.replica_id,
                    "target": origin,
                    "bot_id": str(bot_id),
                    "last": feed.window.last,
                    "ended": feed.window.ended,
                }
            )
        elif kind == "stream_fetch":
            after, upto, ref = int(message["after"]), int(message["upto"]), str(message["ref"])
            held = feed.window.after(after) if feed is not None else None
            items = [item for item in held or [] if item.seq <= upto]
            if not items and linked:
                try:
                    items = await self.fetch(bot_id, after, upto)
                except StreamUnavailable:
                    return
            if items:  # an empty answer would only pre-empt a replica that has them
                await self._answer(origin, ref, items)

    async def _answer(self, target: str, ref: str, items: list[StreamItem]) -> None:
        assert self.relay is not None  # noqa: S101 - on_relay checked
        message = {"kind": "stream_batch", "origin": self.relay.replica_id, "target": target}
        for part in split_text({**message, "ref": ref}, _items_text(items)):
            if not await self.relay.publish(part):
                return

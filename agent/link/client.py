"""The WebSocket link to the control plane (docs/architecture.md §5).

One connection to ``{control_plane_url}/internal/v1/agents/{bot_id}`` with
``Authorization: Bearer <agent_token>``. On every (re)connection the client sends ``register``
first, then every frame still in the :class:`~agent.link.outbox.Outbox` in order, then new
ones as they are queued; a ``heartbeat`` goes out every ``heartbeat_interval`` seconds. Frames
leave the outbox when the control plane acks their id, so each event reaches it exactly once
by id although it may be sent more than once. Commands are acked on receipt and handed to the
owner through :meth:`LinkClient.commands`; a command id seen before is acked again but not
handed over twice; a command whose name is unknown or whose arguments do not fit its
model is answered at once with a typed error result (``unknown_command``,
``invalid_arguments``). A lost connection is retried with exponential backoff.

The bot's stream (docs/api.md 2.7) travels on the same connection but not through the outbox:
``register`` carries the id of the stream log's last event, the control plane answers
``stream_from {after}``, and the client feeds every event with a greater id as a
``stream_event`` frame, in order, then new ones as they are logged; once the log is closed it
sends ``stream_end``, the one stream frame the control plane acks (:meth:`finish_stream` waits
for that ack; a connection lost before it sends the end again after reconnecting). A
``stream_fetch`` is answered with a ``stream_batch`` of older events.
The log is the agent's own (the whole meeting), so a reconnection, to this replica or another,
loses nothing: the control plane says from where to feed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from pydantic import ValidationError

from agent.contracts.link import (
    Ack,
    AgentFrame,
    Command,
    Heartbeat,
    Register,
    StreamBatch,
    StreamEnd,
    StreamEvent,
    StreamFetch,
    StreamFrom,
    StreamItem,
    parse_control_plane_frame,
    reject_command,
)
from agent.contracts.wire import agent_link_path, bearer
from agent.link.outbox import Outbox
from agent.sse.log import EventLog
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)


def agent_link_url(control_plane_url: str, bot_id: str) -> str:
    """The link endpoint for ``bot_id``: ``ws(s)://…/internal/v1/agents/{bot_id}``."""
    base = control_plane_url.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base.removeprefix("https://")
    elif base.startswith("http://"):
        base = "ws://" + base.removeprefix("http://")
    return f"{base}{agent_link_path(bot_id)}"


@dataclass(frozen=True, slots=True)
class LinkTiming:
    """Intervals of the link, in seconds."""

    heartbeat_interval: float = 5.0
    reconnect_min: float = 0.5
    reconnect_max: float = 10.0


class LinkClient:
    """Keeps the link up and the outbox flowing; start with :meth:`start`, end with :meth:`close`.

    Args:
        url: WebSocket URL of the link endpoint (:func:`agent_link_url`).
        token: The per-bot agent token.
        outbox: Durable store of frames not yet acked.
        register: Builds the ``register`` frame sent first on every connection.
        timing: Heartbeat and reconnect intervals.
        stream: The bot's stream log, fed to the control plane on request (None: no stream).
    """

    def __init__(
        self,
        url: str,
        token: str,
        outbox: Outbox,
        register: Callable[[], Register],
        timing: LinkTiming | None = None,
        stream: EventLog | None = None,
    ) -> None:
        self._url = url
        self._stream = stream
        self._feed: asyncio.Task[None] | None = None
        # Set once the control plane acked ``stream_end`` (sent after the log closed).
        self.stream_ended = asyncio.Event()
        self._end_ids: set[str] = set()
        self._token = token
        self._outbox = outbox
        self._register = register
        self._timing = timing or LinkTiming()
        self._queued = asyncio.Event()
        self._empty = asyncio.Event()
        self._commands: asyncio.Queue[Command] = asyncio.Queue()
        self._seen_commands: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        self.connections = 0

    @property
    def commands(self) -> asyncio.Queue[Command]:
        """Commands received from the control plane, each once."""
        return self._commands

    def start(self) -> None:
        """Start the connection loop in a task owned by this client."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="agent-link")

    async def send(self, frame: AgentFrame) -> None:
        """Queue ``frame`` durably; it is sent now if connected, else after reconnecting."""
        await self._outbox.put(frame.id, frame.model_dump_json())
        self._empty.clear()
        self._queued.set()

    async def drain(self, within_seconds: float) -> bool:
        """Wait until every queued frame is acked, at most ``within_seconds``; returns success."""
        deadline = asyncio.get_running_loop().time() + within_seconds
        while await self._outbox.count() > 0:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            self._empty.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._empty.wait(), timeout=min(remaining, 0.5))
        return True

    async def finish_stream(self, within_seconds: float) -> bool:
        """Wait until the control plane acked ``stream_end`` (close the log first); success?"""
        try:
            await asyncio.wait_for(self.stream_ended.wait(), within_seconds)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Stop the connection loop and wait for it."""
        await cancel_and_wait(self._task)
        self._task = None
        self.connected.clear()

    async def _run(self) -> None:
        delay = self._timing.reconnect_min
        headers = bearer(self._token)
        async with aiohttp.ClientSession() as session:
            while True:
                try:
                    async with session.ws_connect(
                        self._url, headers=headers, heartbeat=None, autoping=True
                    ) as ws:
                        self.connections += 1
                        delay = self._timing.reconnect_min
                        log.info("agent link connected", extra={"connections": self.connections})
                        await self._serve(ws)
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    log.warning("agent link unavailable", extra={"error": type(exc).__name__})
                finally:
                    self.connected.clear()
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._timing.reconnect_max)

    async def _serve(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        await ws.send_str(self._register().model_dump_json())
        self.connected.set()
        tasks = [
            asyncio.create_task(self._read(ws), name="agent-link-read"),
            asyncio.create_task(self._send_pending(ws), name="agent-link-send"),
            asyncio.create_task(self._heartbeat(ws), name="agent-link-heartbeat"),
        ]
        try:
            # Whichever ends first (the socket closed, or a send failed) ends the connection.
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await self._stop_feed()
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception) and not isinstance(
                result, aiohttp.ClientError | OSError | ConnectionError
            ):
                raise result

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                frame = parse_control_plane_frame(message.data)
            except ValidationError:
                rejection = reject_command(message.data)
                log.warning(
                    "agent link frame rejected",
                    extra={"error": rejection.error if rejection is not None else "malformed"},
                )
                if rejection is not None:
                    # The control plane is waiting for this command: answer it, typed.
                    await ws.send_str(Ack(ref_id=rejection.ref_id).model_dump_json())
                    await self.send(rejection)
                continue
            if isinstance(frame, Ack):
                if frame.ref_id in self._end_ids:
                    self.stream_ended.set()
                    continue
                await self._outbox.ack(frame.ref_id)
                if await self._outbox.count() == 0:
                    self._empty.set()
                continue
            if isinstance(frame, StreamFrom):
                await self._stop_feed()
                if self._stream is not None:
                    self._feed = asyncio.create_task(
                        self._feed_stream(ws, self._stream, frame.after), name="agent-link-stream"
                    )
                continue
            if isinstance(frame, StreamFetch):
                await self._answer_fetch(ws, frame)
                continue
            await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
            if frame.id not in self._seen_commands:
                self._seen_commands.add(frame.id)
                self._commands.put_nowait(frame)

    async def _stop_feed(self) -> None:
        feed, self._feed = self._feed, None
        await cancel_and_wait(feed, aiohttp.ClientError, ConnectionError)

    async def _feed_stream(
        self, ws: aiohttp.ClientWebSocketResponse, stream: EventLog, after: int
    ) -> None:
        async for item in stream.follow(after):
            frame = StreamEvent(item=StreamItem(seq=item.id, event=item.event, data=item.data))
            await ws.send_str(frame.model_dump_json())
        end = StreamEnd(last_seq=stream.last_id)
        self._end_ids.add(end.id)
        await ws.send_str(end.model_dump_json())

    async def _answer_fetch(self, ws: aiohttp.ClientWebSocketResponse, fetch: StreamFetch) -> None:
        found = (
            self._stream.between(fetch.after, fetch.upto, fetch.max_bytes)
            if self._stream is not None
            else []
        )
        items = [StreamItem(seq=item.id, event=item.event, data=item.data) for item in found]
        await ws.send_str(StreamBatch(ref_id=fetch.id, items=items).model_dump_json())

    async def _send_pending(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        last_seq = 0
        while True:
            self._queued.clear()
            batch = await self._outbox.pending(after_seq=last_seq)
            for item in batch:
                await ws.send_str(item.body)
                last_seq = item.seq
            if not batch:
                await self._queued.wait()

    async def _heartbeat(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        while True:
            await ws.send_str(Heartbeat().model_dump_json())
            await asyncio.sleep(self._timing.heartbeat_interval)

"""The agents connected to this process, and the commands waiting for their results.

One :class:`AgentHub` lives in the application (``web.AppKey``). The link endpoint attaches
each agent's WebSocket; live routes send commands through :meth:`AgentHub.command` and wait
for the agent's ``command_result``; the subscribe route waits on :meth:`AgentHub.wait_registered`.
Pending results are keyed by command id across connections, so a result the agent resends
from its outbox after a reconnect still reaches the waiting request.

With several replicas on one PostgreSQL database, a command for an agent linked to another
replica travels through the :class:`~control_plane.agent_hub.relay.CommandRelay` (and its
result back); without a relay (SQLite: one process) only local links are reached.

The bots' SSE streams on this replica are :attr:`AgentHub.streams`
(:class:`~control_plane.agent_hub.streams.BotStreams`), fed by the links held here and by the
relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from aiohttp import web

from agent.contracts.link import AgentCommand, Command, CommandResult
from control_plane.agent_hub.metrics import LinkMetrics
from control_plane.agent_hub.relay import DELIVERY_WAIT_S, CommandRelay
from control_plane.agent_hub.streams import BotStreams

logger = logging.getLogger(__name__)

# How long this replica remembers a command it delivered for another one, awaiting its result.
_REMOTE_TTL_S = 300.0


class AgentNotConnected(Exception):
    """No agent link for this bot is open on this process."""


class CommandTimedOut(Exception):
    """The agent did not answer a command within its timeout."""


class AgentHub:
    """Registry of open agent links (bot id → WebSocket) and of commands awaiting results.

    Args:
        metrics: Where open links and command round trips are counted (none in unit use).
        stream_window_bytes: Byte budget of each bot's stream window here.
    """

    def __init__(
        self, metrics: LinkMetrics | None = None, stream_window_bytes: int = 256 * 1024
    ) -> None:
        self.metrics = metrics
        self.streams = BotStreams(self.send, self.connected, stream_window_bytes)
        self._sockets: dict[UUID, web.WebSocketResponse] = {}
        # When each open link here last read a frame.
        self._heard: dict[UUID, datetime] = {}
        self._registered: dict[UUID, asyncio.Event] = {}
        self._pending: dict[str, asyncio.Future[CommandResult]] = {}
        self._send_locks: dict[UUID, asyncio.Lock] = {}
        self.relay: CommandRelay | None = None
        # Whether some replica heard the bot's agent lately; relaying is pointless otherwise.
        self.heard_lately: Callable[[UUID], Awaitable[bool]] | None = None
        # Commands relayed from here: id → set when the holding replica delivered it.
        self._delivered: dict[str, asyncio.Event] = {}
        # Commands delivered here for another replica: id → (its replica id, when).
        self._remote: dict[str, tuple[str, float]] = {}

    async def attach(self, bot_id: UUID, ws: web.WebSocketResponse) -> None:
        """Make ``ws`` the bot's link, closing an older one still open (a reconnect won)."""
        old = self._sockets.get(bot_id)
        self._sockets[bot_id] = ws
        self._send_locks.setdefault(bot_id, asyncio.Lock())
        self._count_links()
        if old is not None and old is not ws and not old.closed:
            await old.close(code=4000, message=b"replaced by a newer connection")

    def detach(self, bot_id: UUID, ws: web.WebSocketResponse) -> None:
        """Forget ``ws`` if it is still the bot's link; registration ends with the link."""
        if self._sockets.get(bot_id) is ws:
            del self._sockets[bot_id]
            self._heard.pop(bot_id, None)
            self._send_locks.pop(bot_id, None)
            self._registered.pop(bot_id, None)
            self._count_links()
            self.streams.purge()

    def _count_links(self) -> None:
        if self.metrics is not None:
            self.metrics.links_open.set(len(self._sockets))

    async def disconnect(self, bot_id: UUID) -> None:
        """Close the bot's link if it is open here (its agent was given up on)."""
        ws = self._sockets.pop(bot_id, None)
        self._heard.pop(bot_id, None)
        self._send_locks.pop(bot_id, None)
        self._count_links()
        self.streams.end(bot_id)
        if ws is not None and not ws.closed:
            with contextlib.suppress(ConnectionError):
                await ws.close(code=4001, message=b"agent given up")

    def heard(self, bot_id: UUID, at: datetime | None = None) -> None:
        """Note that the bot's link here read a frame (stored or not yet) ``at`` (now)."""
        self._heard[bot_id] = at or datetime.now(UTC)

    def last_heard(self, bot_id: UUID) -> datetime | None:
        """When the bot's link here last read a frame; None when no link is open here.

        An agent heard lately is not silent even when its frames still wait to be stored
        (its ``last_seen_at`` moves at their commit): the reaper spares it.
        """
        return self._heard.get(bot_id) if self.connected(bot_id) else None

    def connected(self, bot_id: UUID) -> bool:
        """Whether an agent link for ``bot_id`` is open here."""
        ws = self._sockets.get(bot_id)
        return ws is not None and not ws.closed

    def mark_registered(self, bot_id: UUID) -> None:
        """Record that the bot's agent sent ``register`` on its current link."""
        self._registered.setdefault(bot_id, asyncio.Event()).set()

    async def wait_registered(self, bot_id: UUID, within_seconds: float) -> bool:
        """Wait up to ``within_seconds`` for the bot's agent to register here; return success."""
        event = self._registered.setdefault(bot_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), within_seconds)
        except TimeoutError:
            if not event.is_set() and self._registered.get(bot_id) is event:
                # Nobody else waits on an event that was never set: do not keep it forever.
                del self._registered[bot_id]
            return False
        return True

    async def send(self, bot_id: UUID, text: str) -> None:
        """Send one text frame on the bot's link.

        Raises:
            AgentNotConnected: No open link for the bot.
        """
        ws = self._sockets.get(bot_id)
        lock = self._send_locks.get(bot_id)
        if ws is None or ws.closed or lock is None:
            raise AgentNotConnected(str(bot_id))
        try:
            async with lock:
                await ws.send_str(text)
        except ConnectionError as exc:
            raise AgentNotConnected(str(bot_id)) from exc

    async def deliver(self, bot_id: UUID, frame: Command) -> None:
        """Send a command on the bot's link here, or through the relay to the replica holding it.

        Raises:
            AgentNotConnected: No replica holds a link for the bot.
        """
        try:
            await self.send(bot_id, frame.model_dump_json())
            return
        except AgentNotConnected:
            if self.relay is None:
                raise
            if self.heard_lately is not None and not await self.heard_lately(bot_id):
                raise
        delivered = asyncio.Event()
        self._delivered[frame.id] = delivered
        try:
            published = await self.relay.publish(
                {
                    "kind": "command",
                    "origin": self.relay.replica_id,
                    "bot_id": str(bot_id),
                    "frame": frame.model_dump_json(),
                }
            )
            if not published:
                raise AgentNotConnected(str(bot_id))
            try:
                await asyncio.wait_for(delivered.wait(), DELIVERY_WAIT_S)
            except TimeoutError as exc:
                raise AgentNotConnected(str(bot_id)) from exc
        finally:
            self._delivered.pop(frame.id, None)

    async def on_relay(self, message: dict[str, Any]) -> None:
        """Handle a relay message addressed to this replica (see ``relay`` for the kinds)."""
        kind = message.get("kind")
        if kind in ("stream_sub", "stream_fetch"):
            await self.streams.on_relay(message)
        elif kind == "command" and self.relay is not None:
            bot_id = UUID(str(message["bot_id"]))
            if not self.connected(bot_id):
                return
            frame = Command.model_validate_json(str(message["frame"]))
            now = time.monotonic()
            self._remote = {
                key: value for key, value in self._remote.items() if now - value[1] < _REMOTE_TTL_S
            }
            self._remote[frame.id] = (str(message["origin"]), now)
            await self.send(bot_id, frame.model_dump_json())
            await self.relay.publish(
                {"kind": "delivered", "target": message["origin"], "ref_id": frame.id}
            )
        elif kind == "delivered":
            event = self._delivered.get(str(message.get("ref_id")))
            if event is not None:
                event.set()
        elif kind == "result":
            result = CommandResult.model_validate_json(str(message["frame"]))
            future = self._pending.get(result.ref_id)
            if future is not None and not future.done():
                future.set_result(result)

    async def command(
        self, bot_id: UUID, command: AgentCommand, *, within_seconds: float
    ) -> CommandResult:
        """Send ``command`` and wait up to ``within_seconds`` for its result.

        Raises:
            AgentNotConnected: No open link for the bot.
            CommandTimedOut: No ``command_result`` in time.
        """
        name = command.name
        frame = Command(command=command)
        future: asyncio.Future[CommandResult] = asyncio.get_running_loop().create_future()
        self._pending[frame.id] = future
        started = time.perf_counter()
        outcome = "unreachable"
        try:
            await self.deliver(bot_id, frame)
            outcome = "timeout"
            result = await asyncio.wait_for(future, within_seconds)
            outcome = "ok" if result.ok else "error"
            return result
        except TimeoutError as exc:
            logger.warning(
                "agent command timed out",
                extra={"bot_id": str(bot_id), "command": name.value, "timeout_s": within_seconds},
            )
            raise CommandTimedOut(name.value) from exc
        finally:
            self._pending.pop(frame.id, None)
            if self.metrics is not None:
                self.metrics.commands.labels(name.value, outcome).observe(
                    time.perf_counter() - started
                )

    async def notify(self, bot_id: UUID, command: AgentCommand) -> bool:
        """Send ``command`` without waiting for its result; return whether it went out."""
        frame = Command(command=command)
        try:
            await self.deliver(bot_id, frame)
        except AgentNotConnected:
            return False
        return True

    async def resolve(self, result: CommandResult) -> None:
        """Hand a ``command_result`` to the request waiting for it.

        The request waits here or on the replica that asked; late results are dropped.
        """
        future = self._pending.get(result.ref_id)
        if future is not None and not future.done():
            future.set_result(result)
            return
        remote = self._remote.pop(result.ref_id, None)
        if remote is not None and self.relay is not None:
            await self.relay.publish(
                {"kind": "result", "target": remote[0], "frame": result.model_dump_json()}
            )

    async def aclose(self) -> None:
        """Close every open link (agents reconnect to a replica that is up)."""
        sockets = list(self._sockets.values())
        self._sockets.clear()
        self._count_links()
        self.streams.end_all()
        for ws in sockets:
            with contextlib.suppress(ConnectionError):
                await ws.close(code=1001, message=b"control plane shutting down")

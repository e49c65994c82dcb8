"""Commands and streams across control-plane replicas: PostgreSQL ``LISTEN``/``NOTIFY``.

An agent holds one link to one replica, but an API request may land on any replica. When the
hub has no link for a bot, it publishes the command; the replica holding the link sends it,
answers ``delivered`` at once and relays the agent's ``command_result`` back to the asking
replica. No ``delivered`` within :data:`DELIVERY_WAIT_S` means no replica holds the link.

Messages (JSON text, ``pg_notify`` payloads stay under PostgreSQL's 8000-byte limit; a larger
command is not relayed):

- ``{"kind": "command", "origin": R, "bot_id": B, "frame": <Command JSON>}``
- ``{"kind": "delivered", "target": R, "ref_id": C}``
- ``{"kind": "result", "target": R, "frame": <CommandResult JSON>}``

The bots' SSE streams use the same channel (``stream_*`` kinds, see
:mod:`control_plane.agent_hub.streams`); they are handled in arrival order, on the listener's
callback, because a stream's events must stay in order.

SQLite deployments are one process: there is no relay there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
from sqlalchemy.engine import make_url

logger = logging.getLogger(__name__)

CHANNEL = "meetbot_agent_link"
DELIVERY_WAIT_S = 1.0
MAX_PAYLOAD_BYTES = 7900

Handler = Callable[[dict[str, Any]], Awaitable[None]]
OrderedHandler = Callable[[dict[str, Any]], bool]
"""Handles a message at once, in arrival order; returns False to leave it to :data:`Handler`."""


def asyncpg_dsn(database_url: str) -> str | None:
    """The plain asyncpg DSN of a ``postgresql+asyncpg://`` URL; None for other databases."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class CommandRelay:
    """This replica's end of the channel: one listening connection, owned handler tasks.

    Args:
        dsn: asyncpg DSN of the control plane's PostgreSQL database.
        handle: Called with every message addressed to this replica (or to all, for commands).
        handle_now: Called first, synchronously and in order; messages it takes go no further.
    """

    def __init__(self, dsn: str, handle: Handler, handle_now: OrderedHandler | None = None) -> None:
        self.replica_id = uuid.uuid4().hex
        self._dsn = dsn
        self._handle = handle
        self._handle_now = handle_now
        self._connection: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Connect and listen.

        Raises:
            OSError, asyncpg.PostgresError: The database cannot be reached.
        """
        self._connection = await asyncpg.connect(self._dsn)
        await self._connection.add_listener(CHANNEL, self._on_notify)

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            message = json.loads(payload)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        target = message.get("target")
        if message.get("origin") == self.replica_id or target not in (None, self.replica_id):
            return
        if self._handle_now is not None:
            try:
                if self._handle_now(message):
                    return
            except Exception:  # one bad message must not stop the listener
                logger.exception("relay message failed", extra={"kind": message.get("kind")})
                return
        task = asyncio.get_running_loop().create_task(self._run(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, message: dict[str, Any]) -> None:
        try:
            await self._handle(message)
        except Exception:  # one bad message must not stop the listener
            logger.exception("relay message failed", extra={"kind": message.get("kind")})

    async def publish(self, message: dict[str, Any]) -> bool:
        """Send ``message`` to every replica; False when it is too large or cannot be sent."""
        payload = json.dumps(message, separators=(",", ":"))
        if len(payload.encode()) > MAX_PAYLOAD_BYTES or self._connection is None:
            return False
        try:
            async with self._lock:
                await self._connection.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            logger.warning("relay publish failed", extra={"kind": message.get("kind")})
            return False
        return True

    async def aclose(self) -> None:
        """Stop listening, cancel and await handler tasks, close the connection."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._connection is not None:
            with contextlib.suppress(OSError, asyncpg.InterfaceError):
                await self._connection.close()
            self._connection = None

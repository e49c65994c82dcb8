"""Commands and streams across control-plane replicas: PostgreSQL ``LISTEN``/``NOTIFY``.

An agent holds one link to one replica, but an API request may land on any replica. When the
hub has no link for a bot, it publishes the command; the replica holding the link sends it,
answers ``delivered`` at once and relays the agent's ``command_result`` back to the asking
replica. No ``delivered`` within :data:`DELIVERY_WAIT_S` means no replica holds the link.

Messages (JSON text):

- ``{"kind": "command", "origin": R, "bot_id": B, "frame": <Command JSON>}``
- ``{"kind": "delivered", "target": R, "ref_id": C}``
- ``{"kind": "result", "target": R, "frame": <CommandResult JSON>}``

A ``pg_notify`` payload must stay under PostgreSQL's 8000-byte limit (:data:`MAX_PAYLOAD_BYTES`
with a margin). A larger message (a 4,096-character non-ASCII speech text is about 25 kB once
escaped) is stored in ``relay_messages`` under the SHA-256 of its text, and only
``{"kind": "stored", "key": K, "origin": R, "target": T}`` is notified, in the transaction
that stores it (so every listener can read the row when the notification arrives). Each
replica reads the row by key and handles the message as if it had come inline; a key seen
again (a publish retried) is handled once. Rows older than :data:`STORED_RETENTION_S` are
deleted by the next stored publish and at each replica's start.

The bots' SSE streams use the same channel (``stream_*`` kinds, see
:mod:`control_plane.agent_hub.streams`); they are handled in arrival order, on the listener's
callback, because a stream's events must stay in order.

SQLite deployments are one process: there is no relay there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
from sqlalchemy.engine import make_url

logger = logging.getLogger(__name__)

CHANNEL = "meetbot_agent_link"
DELIVERY_WAIT_S = 1.0
MAX_PAYLOAD_BYTES = 7900
STORED_RETENTION_S = 60.0
"""How long a stored message stays readable (its readers fetch it within milliseconds)."""
_SEEN_KEYS_MAX = 1024
"""Stored keys remembered per replica, so a re-notified key is handled once."""

_STORE = (
    "INSERT INTO relay_messages (key, payload, created_at) VALUES ($1, $2, now()) "
    "ON CONFLICT (key) DO NOTHING"
)
_FETCH = "SELECT payload FROM relay_messages WHERE key = $1"
_PRUNE = "DELETE FROM relay_messages WHERE created_at < now() - make_interval(secs => $1)"

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
        stored_retention_s: Seconds a stored (large) message stays readable before it is pruned.
    """

    def __init__(
        self,
        dsn: str,
        handle: Handler,
        handle_now: OrderedHandler | None = None,
        *,
        stored_retention_s: float = STORED_RETENTION_S,
    ) -> None:
        self.replica_id = uuid.uuid4().hex
        self._retention_s = stored_retention_s
        self._dsn = dsn
        self._handle = handle
        self._handle_now = handle_now
        self._connection: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._seen: dict[str, None] = {}

    async def start(self) -> None:
        """Connect, drop stored messages past their retention, and listen.

        Raises:
            OSError, asyncpg.PostgresError: The database cannot be reached.
        """
        self._connection = await asyncpg.connect(self._dsn)
        await self._connection.execute(_PRUNE, self._retention_s)
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
        if message.get("kind") == "stored":
            key = message.get("key")
            if isinstance(key, str) and self._first_time(key):
                self._spawn(self._fetch_and_dispatch(key))
            return
        self._dispatch(message)

    def _first_time(self, key: str) -> bool:
        """Whether ``key`` is new here; remembers it (the oldest are forgotten past the cap)."""
        if key in self._seen:
            return False
        if len(self._seen) >= _SEEN_KEYS_MAX:
            del self._seen[next(iter(self._seen))]
        self._seen[key] = None
        return True

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fetch_and_dispatch(self, key: str) -> None:
        """Read a stored message by ``key`` and handle it like an inline one."""
        if self._connection is None:
            return
        try:
            async with self._lock:
                payload = await self._connection.fetchval(_FETCH, key)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            logger.warning("relay stored message unreadable", extra={"key": key})
            return
        if payload is None:  # past its retention: nobody asked for it in a minute
            logger.warning("relay stored message gone", extra={"key": key})
            return
        try:
            message = json.loads(payload)
        except ValueError:
            return
        if isinstance(message, dict):
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if self._handle_now is not None:
            try:
                if self._handle_now(message):
                    return
            except Exception:  # one bad message must not stop the listener
                logger.exception("relay message failed", extra={"kind": message.get("kind")})
                return
        self._spawn(self._run(message))

    async def _run(self, message: dict[str, Any]) -> None:
        try:
            await self._handle(message)
        except Exception:  # one bad message must not stop the listener
            logger.exception("relay message failed", extra={"kind": message.get("kind")})

    async def publish(self, message: dict[str, Any]) -> bool:
        """Send ``message`` (any size) to every replica; False when it cannot be sent.

        A payload over :data:`MAX_PAYLOAD_BYTES` is stored and its key notified, in one
        transaction that also deletes stored messages past their retention.
        """
        payload = json.dumps(message, separators=(",", ":"))
        if self._connection is None:
            return False
        try:
            async with self._lock:
                if len(payload.encode()) <= MAX_PAYLOAD_BYTES:
                    await self._connection.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
                else:
                    await self._store_and_notify(self._connection, message, payload)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            logger.warning("relay publish failed", extra={"kind": message.get("kind")})
            return False
        return True

    async def _store_and_notify(
        self, connection: asyncpg.Connection, message: dict[str, Any], payload: str
    ) -> None:
        key = hashlib.sha256(payload.encode()).hexdigest()
        envelope = {"kind": "stored", "key": key}
        for field in ("origin", "target"):  # listeners filter on these before reading the row
            if field in message:
                envelope[field] = message[field]
        async with connection.transaction():
            await connection.execute(_PRUNE, self._retention_s)
            await connection.execute(_STORE, key, payload)
            await connection.execute(
                "SELECT pg_notify($1, $2)", CHANNEL, json.dumps(envelope, separators=(",", ":"))
            )

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

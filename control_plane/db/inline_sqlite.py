"""An aiosqlite connection whose statements run on the event loop's own thread.

aiosqlite hands every call (cursor, execute, fetch, close, commit) to a worker thread and back,
so a bot creation's write transaction made about twenty round trips through the event loop —
each one waiting for a turn of a loop busy with concurrent reads (and for the GIL). With one
write connection held across those turns, creations queued behind each other and starved
while lists ran (issue 18: 8.9 creations/s, p50 884 ms beside 8 listing clients). A SQLite
statement of this service takes tens of microseconds; running the write connection's
statements inline costs the loop less than a single hand-off did.

Only the write engine uses it (:mod:`control_plane.db.engine`); reads keep aiosqlite's worker
threads, so a slow list never blocks the loop. Opening, closing and isolation-level changes
still go through aiosqlite's worker thread (the sqlite3 connection is shared between the two
threads with ``check_same_thread=False``, never concurrently: each call is awaited).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any

import aiosqlite


class InlineConnection(aiosqlite.Connection):
    """:class:`aiosqlite.Connection` running each statement synchronously on the caller's
    thread (see the module docstring)."""

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)


def inline_connector(path: str) -> Callable[[], Any]:
    """An ``async_creator`` for ``create_async_engine``: opens ``path`` as an
    :class:`InlineConnection` (``check_same_thread=False``, like SQLAlchemy's aiosqlite)."""

    async def connect() -> aiosqlite.Connection:
        connection = InlineConnection(
            partial(sqlite3.connect, path, check_same_thread=False), iter_chunk_size=64
        )
        return await connection

    return connect

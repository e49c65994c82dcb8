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

The loop must never block on SQLite's lock: this connection runs with ``busy_timeout`` 0, and a
statement answered ``SQLITE_BUSY`` (another connection — another process, or another engine
of this process — holds the write lock; a busy statement has done nothing) is retried after an
asynchronous sleep, for up to ``busy_timeout_s`` seconds, then the error is raised.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import aiosqlite

_FIRST_WAIT_S = 0.001
_LONGEST_WAIT_S = 0.05


def _busy(exc: sqlite3.OperationalError) -> bool:
    # Python reports SQLite's extended result code: SQLITE_BUSY_RECOVERY (261, another
    # connection rebuilding the WAL index, e.g. the first to open the file after the last one
    # closed it) and the other variants are busy too; their low byte is the primary code
    # (https://www.sqlite.org/rescode.html). Comparing the whole code raised them at once.
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class InlineConnection(aiosqlite.Connection):
    """An :class:`aiosqlite.Connection` that runs each statement on the caller's thread.

    It waits for a busy lock asynchronously (see the module docstring).

    Args:
        connector: Opens the sqlite3 connection (in aiosqlite's worker thread).
        busy_timeout_s: How long a busy statement is retried before its error is raised.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection], busy_timeout_s: float):
        super().__init__(connector, iter_chunk_size=64)
        self._busy_timeout_s = busy_timeout_s

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        deadline = time.monotonic() + self._busy_timeout_s
        wait = _FIRST_WAIT_S
        while True:
            try:
                return fn(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + wait > deadline:
                    raise
            await asyncio.sleep(wait)
            wait = min(wait * 2, _LONGEST_WAIT_S)


def inline_connector(path: str, busy_timeout_s: float) -> Callable[[], Any]:
    """Return an ``async_creator`` for ``create_async_engine`` that opens ``path`` inline.

    The connection is an :class:`InlineConnection` (``check_same_thread=False``, like
    SQLAlchemy's aiosqlite). The engine must set ``PRAGMA busy_timeout=0`` on it (see the
    module docstring).
    """

    async def connect() -> aiosqlite.Connection:
        connection = InlineConnection(
            partial(sqlite3.connect, path, check_same_thread=False), busy_timeout_s
        )
        return await connection

    return connect

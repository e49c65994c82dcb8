"""WAL checkpoints of the app's SQLite database, run from a worker thread.

SQLite's automatic checkpoint runs inside the COMMIT that takes the write-ahead log past 1,000
pages: it copies them into the database file and syncs it. The app's write connection runs
its statements on the event loop's thread (:mod:`control_plane.db.inline_sqlite`), so that
COMMIT stalled every request for the copy and the sync — about once a second under load
(bench/api.py mixed run). The app turns the automatic checkpoint off for that connection
(``create_database(..., background_checkpoints=True)``) and runs a :class:`WalCheckpointer`
instead: every ``interval`` seconds a ``PASSIVE`` checkpoint on its own connection, in a worker
thread. A passive checkpoint never waits for a lock and never blocks the writer or the
readers; it copies what no open reader still needs, and the next one copies the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator

from control_plane.background import BackgroundLoop

CHECKPOINT_INTERVAL_S = 0.5
"""Seconds between checkpoints: about as often as the automatic one ran at 100 creations/s."""


class WalCheckpointer:
    """Checkpoints the WAL of the SQLite file at ``path`` every ``interval`` seconds.

    Args:
        path: The database file (its WAL is ``path + "-wal"``).
        interval: Seconds between checkpoints.
    """

    def __init__(self, path: str, interval: float = CHECKPOINT_INTERVAL_S) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self.loop = BackgroundLoop("sqlite-checkpoint", self.step, interval=interval)
        """The owned loop (see :meth:`running`)."""

    def _checkpoint(self) -> tuple[int, int, int]:
        if self._connection is None:
            # Used from one worker thread at a time, never concurrently (each step is awaited).
            self._connection = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None
            )
        row = self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    async def step(self) -> tuple[int, int, int]:
        """Run one passive checkpoint in a worker thread.

        Returns:
            SQLite's answer: (1 if it could not run, else 0; pages in the WAL; pages copied).
        """
        return await asyncio.to_thread(self._checkpoint)

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def close(self) -> None:
        """Close the checkpoint connection (a later :meth:`step` opens it again)."""
        await asyncio.to_thread(self._close)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[WalCheckpointer]:
        """Checkpoint in the background for the body of the ``async with``, then close.

        Do not call :meth:`step` inside the body: two checkpoints at once share the connection
        from two threads, and the second answers busy.
        """
        try:
            async with self.loop.running():
                yield self
        finally:
            await self.close()

"""A durable queue of link frames in a SQLite file: what the control plane has not acked yet.

Frames survive a control-plane restart and an agent crash; they leave the outbox only when the
control plane acks their id (docs/architecture.md §5). Every method runs its SQLite work in a worker
thread (``asyncio.to_thread``) so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    frame_id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A stored frame: ``seq`` orders sending, ``frame_id`` is the frame's ``id``, ``body`` JSON."""

    seq: int
    frame_id: str
    body: str


class Outbox:
    """Unacked frames, oldest first, in the SQLite file ``path`` (created when missing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        # One connection shared by the worker threads; the lock serialises them.
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._closed = False

    def _put(self, frame_id: str, body: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO outbox (frame_id, body) VALUES (?, ?)", (frame_id, body)
            )

    def _ack(self, frame_id: str) -> bool:
        with self._lock:
            cursor = self._db.execute("DELETE FROM outbox WHERE frame_id = ?", (frame_id,))
            return cursor.rowcount > 0

    def _pending(self, after_seq: int, limit: int) -> list[OutboxItem]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, frame_id, body FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
                (after_seq, limit),
            ).fetchall()
        return [OutboxItem(int(seq), str(fid), str(body)) for seq, fid, body in rows]

    def _count(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM outbox").fetchone()
        return int(count)

    async def put(self, frame_id: str, body: str) -> None:
        """Store a frame; storing the same ``frame_id`` twice keeps the first."""
        await asyncio.to_thread(self._put, frame_id, body)

    async def ack(self, frame_id: str) -> bool:
        """Forget a frame the control plane acked; returns whether it was still stored."""
        return await asyncio.to_thread(self._ack, frame_id)

    async def pending(self, after_seq: int = 0, limit: int = 100) -> list[OutboxItem]:
        """Up to ``limit`` stored frames with ``seq > after_seq``, oldest first."""
        return await asyncio.to_thread(self._pending, after_seq, limit)

    async def count(self) -> int:
        """Number of unacked frames."""
        return await asyncio.to_thread(self._count)

    def close(self) -> None:
        """Close the database file (idempotent)."""
        with self._lock:
            if not self._closed:
                self._db.close()
                self._closed = True

"""SQLite WAL checkpoints leave the write connection's COMMIT (control_plane/db/checkpoint.py).

With ``background_checkpoints`` the write connection never checkpoints (its COMMIT runs on the
event loop's thread), so the WAL only grows until the :class:`WalCheckpointer` copies it into
the database file from a worker thread; without it SQLite's automatic checkpoint stays on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from control_plane.db.checkpoint import WalCheckpointer
from control_plane.db.engine import create_database

pytestmark = pytest.mark.api

_ROWS = 3_000  # ~1,500 pages of WAL: past the automatic checkpoint's 1,000
_FILLER = "x" * 2_000


async def _fill(url: str, background: bool) -> tuple[str | None, int]:
    """Write ``_ROWS`` rows in 30 transactions; return the checkpoint path and WAL frames."""
    database = create_database(url, background_checkpoints=background)
    try:
        async with database.sessions.begin() as session:
            await session.execute(text("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)"))
        for _ in range(_ROWS // 100):
            async with database.sessions.begin() as session:
                for _ in range(100):
                    await session.execute(
                        text("INSERT INTO filler (body) VALUES (:body)"), {"body": _FILLER}
                    )
        wal = Path(str(database.engine.url.database) + "-wal")
        # A WAL frame is a 24-byte header and one page (4,096 bytes by default).
        size = (await asyncio.to_thread(wal.stat)).st_size
        return database.checkpoint_path, size // (4_096 + 24)
    finally:
        await database.dispose()


async def test_the_checkpointer_copies_what_the_write_connection_left(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'background.db'}"
    path, wal_pages = await _fill(url, background=True)
    assert path == str(tmp_path / "background.db")
    assert wal_pages > 1_000, "the write connection checkpointed by itself"

    database = create_database(url, background_checkpoints=True)
    checkpointer = WalCheckpointer(str(path), interval=3600)
    try:
        async with database.sessions.begin() as session:
            await session.execute(text("INSERT INTO filler (body) VALUES ('one more')"))
        # One step by hand (the running loop would race it for the connection).
        busy, pages, copied = await checkpointer.step()
        await checkpointer.close()
        assert busy == 0
        assert pages > 0
        assert copied == pages
        async with database.reads() as session:
            count = await session.scalar(text("SELECT count(*) FROM filler"))
        assert count == _ROWS + 1
    finally:
        await database.dispose()


async def test_without_background_checkpoints_sqlite_checkpoints_itself(tmp_path: Path) -> None:
    path, wal_pages = await _fill(f"sqlite+aiosqlite:///{tmp_path / 'auto.db'}", background=False)
    assert path is None
    assert wal_pages < 1_100

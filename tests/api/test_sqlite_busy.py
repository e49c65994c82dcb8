"""The app's write connection waits for a SQLite file another process has locked.

Its statements run on the event loop's thread with ``busy_timeout`` 0
(control_plane/db/inline_sqlite.py), so it retries a busy statement itself. A second process
holds the lock here, as ``meetbot db upgrade`` or a second ``serve`` would: once as a writer in
a ``BEGIN IMMEDIATE`` transaction (``SQLITE_BUSY``), once in the middle of rebuilding the WAL
index (``SQLITE_BUSY_RECOVERY``, an extended code: SQLite locks the shared-memory file's
recovery byte while the index header is invalid). CI saw the second raised at once, failing an
app's startup, when the write connection compared the whole extended code with ``SQLITE_BUSY``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import text

from control_plane.db.engine import create_database

pytestmark = pytest.mark.api

HOLD_S = 0.5

# A writer: its transaction holds the write lock until told to commit.
_WRITER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
connection.execute("INSERT INTO t VALUES ('other process')")
print("locked", flush=True)
sys.stdin.readline()
connection.execute("COMMIT")
"""

# A recovery in progress, as SQLite's unix VFS shows it to others: an exclusive lock on the
# -shm file's WAL_RECOVER_LOCK byte (lock offset 120 + index 2, sqlite3 src/wal.c) over an
# index whose header is not valid (zeroed: every reader must recover it first).
_RECOVERING = """
import fcntl, mmap, os, sys
fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 122)
index = mmap.mmap(fd, 32768)
index[0:136] = bytes(136)
index.flush()
print("locked", flush=True)
sys.stdin.readline()
"""


def _seeded(path: Path) -> sqlite3.Connection:
    """A WAL database with one row; the connection stays open so the -shm file stays."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE t (who TEXT)")
    connection.execute("INSERT INTO t VALUES ('seed')")
    return connection


@pytest.mark.parametrize(
    ("holder", "code"),
    [(_WRITER, "SQLITE_BUSY"), (_RECOVERING, "SQLITE_BUSY_RECOVERY")],
    ids=["a-writer", "a-wal-recovery"],
)
async def test_a_write_waits_for_another_process_and_then_commits(
    tmp_path: Path, holder: str, code: str
) -> None:
    path = tmp_path / "meetbot.db"
    seed = _seeded(path)
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        textwrap.dedent(holder),
        str(path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert other.stdin is not None and other.stdout is not None
    database = create_database(f"sqlite+aiosqlite:///{path}", background_checkpoints=True)
    try:
        assert (await other.stdout.readline()).strip() == b"locked"
        # What SQLite answers a connection that does not wait: the holder is real.
        probe = sqlite3.connect(path, isolation_level=None, timeout=0)
        with pytest.raises(sqlite3.OperationalError) as refused:
            probe.execute("BEGIN IMMEDIATE")
        probe.close()
        assert refused.value.sqlite_errorname == code

        async def write() -> None:
            async with database.sessions.begin() as session:
                await session.execute(text("INSERT INTO t VALUES ('app')"))

        writing = asyncio.create_task(write())
        await asyncio.sleep(HOLD_S)
        assert not writing.done(), "the write did not wait for the lock"
        other.stdin.write(b"go\n")
        await other.stdin.drain()
        assert await other.wait() == 0
        await asyncio.wait_for(writing, 10)
        async with database.reads() as session:
            rows = (await session.execute(text("SELECT who FROM t ORDER BY rowid"))).scalars()
            who = list(rows)
        assert who[0] == "seed" and who[-1] == "app"
        assert ("other process" in who) == (holder is _WRITER)
    finally:
        if other.returncode is None:
            other.kill()
            await other.wait()
        await database.dispose()
        seed.close()

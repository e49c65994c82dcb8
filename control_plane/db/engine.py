"""The async engine and session factory of one control-plane process.

SQLite runs in WAL mode with ``BEGIN IMMEDIATE`` transactions: every transaction takes the write
lock up front, so two transactions never deadlock upgrading a read lock (SQLITE_BUSY), and a
waiting writer honours ``busy_timeout``. Consequence for callers: never hold a session open
across a long wait (network, sleeps) — open one, do the work, commit.

Read-only work (key lookups, lists) may use :attr:`Database.reads` instead: on SQLite a second
engine whose transactions are plain (deferred) ``BEGIN`` with ``query_only`` on, so in WAL mode
they read a snapshot without taking the write lock — they neither wait behind writers nor
starve in the busy handler (bench/api.py measured p99s of seconds when every read took the
write lock). On PostgreSQL ``reads`` shares the pool of ``sessions`` but runs each statement
in autocommit: asyncpg sends ``BEGIN`` and the closing ``ROLLBACK`` as round trips of their
own, so a one-statement read (a list, a key look-up) took three round trips instead of one,
and under READ COMMITTED a transaction gives reads nothing (each statement takes its own
snapshot either way).

SQLite's write engine holds ONE pooled connection: SQLite admits one writer at a time anyway,
and a writer that finds the lock taken waits in SQLite's busy handler, which sleeps in steps
of up to 100 ms and re-polls — so under concurrent creations most of the wall time went to
sleeping, not writing (bench/api.py: p99 1.7 s at 16 clients). With one connection, writers of
this process queue on the pool instead, in arrival order, and each starts the moment the
previous one returns the connection. ``busy_timeout`` still covers writers of other processes
(``meetbot db upgrade``, a second ``serve``).

The write connection's statements run on the event loop's thread
(:mod:`control_plane.db.inline_sqlite`): through aiosqlite's worker thread a write transaction
took about twenty trips through the event loop, each waiting behind the reads the loop was
serving, so creations starved beside lists (issue 18). Read connections keep their worker
threads; ``READ_CONNECTIONS`` of them stay open (SQLAlchemy's default of 5 opened and closed
overflow connections — a thread and five PRAGMAs each — under every burst of lists; bench/api.py
mixed run: 83 creations/s beside 8 listers with 16 kept, 43 with 4).

For the same reason the app's write connection does not checkpoint the WAL itself
(``background_checkpoints``): SQLite's automatic checkpoint runs inside the COMMIT that takes
the WAL past 1,000 pages — copying them into the database file and syncing it, on the event
loop's thread, about once a second under load. The app runs them from a worker thread instead
(:mod:`control_plane.db.checkpoint`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from sqlalchemy import event, make_url, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from control_plane.db.inline_sqlite import inline_connector

SQLITE_BUSY_TIMEOUT_MS = 30_000
READ_CONNECTIONS = 16
"""SQLite read connections kept open; see the module docstring."""
READ_OVERFLOW = 8
"""Read connections opened beyond ``READ_CONNECTIONS`` while demand exceeds them."""
READ_TIMEOUT_S = SQLITE_BUSY_TIMEOUT_MS / 1000
IDLE_PING_AFTER_S = 10.0
"""A PostgreSQL connection unused this long is pinged before reuse (see
:func:`_ping_idle_connections`)."""
_RETURNED_AT = "meetbot.returned_at"


@dataclass(frozen=True)
class Database:
    """An engine plus its session factory.

    Attributes:
        engine: The SQLAlchemy async engine.
        sessions: Factory of sessions; ``async with db.sessions.begin() as session`` opens one
            transaction that commits on success and rolls back on error.
        read_engine: SQLite's engine for read-only sessions (None on PostgreSQL).
        read_sessions: Factory of read-only sessions: SQLite's read engine's, PostgreSQL's
            autocommit sessions on ``engine``'s pool (see the module docstring).
        checkpoint_path: The SQLite file whose WAL the owner must checkpoint (see
            :mod:`control_plane.db.checkpoint`), when ``background_checkpoints`` was asked
            for; None otherwise.
    """

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    read_engine: AsyncEngine | None = None
    read_sessions: async_sessionmaker[AsyncSession] | None = None
    checkpoint_path: str | None = None

    @property
    def reads(self) -> async_sessionmaker[AsyncSession]:
        """Factory of sessions that only read (writing through them fails on SQLite)."""
        return self.read_sessions if self.read_sessions is not None else self.sessions

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    async def ping(self) -> None:
        """Run ``SELECT 1``; raises the driver's error when the database is unreachable."""
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()
        if self.read_engine is not None:
            await self.read_engine.dispose()


def _configure_sqlite(
    engine: AsyncEngine,
    *,
    read_only: bool = False,
    inline: bool = False,
    auto_checkpoint: bool = True,
) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (the driver's implicit BEGIN is
        # DEFERRED, which is what deadlocks concurrent writers).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # An inline connection waits for the lock asynchronously (inline_sqlite), never in
        # SQLite's busy handler, which would block the event loop.
        cursor.execute(f"PRAGMA busy_timeout={0 if inline else SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        if read_only:
            cursor.execute("PRAGMA query_only=ON")
        if not auto_checkpoint:
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _ping_idle_connections(engine: AsyncEngine, idle_after: float) -> None:
    """Ping a pooled connection at checkout only when it sat unused for a while.

    ``pool_pre_ping`` pings at every checkout, and asyncpg's ping is three round trips (begin,
    ``;``, rollback): a third of a bot creation's round trips, for connections that were in
    use milliseconds earlier. A connection that broke while in use is invalidated by
    SQLAlchemy's disconnect handling anyway; the ping is there for connections that idled
    through a server restart or a dropped network path, so only those get it.
    """

    @event.listens_for(engine.sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is None or time.monotonic() - returned < idle_after:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # any failure means: drop it, the pool retries a fresh one
            raise DisconnectionError("idle connection failed its ping") from exc


def create_database(
    url: str,
    *,
    pool_size: int = 20,
    idle_ping_after: float = IDLE_PING_AFTER_S,
    background_checkpoints: bool = False,
) -> Database:
    """Create the engine and session factory for ``url``.

    The URL is ``sqlite+aiosqlite`` or ``postgresql+asyncpg``. Connections open lazily.

    Args:
        url: SQLAlchemy URL.
        pool_size: PostgreSQL connections kept open; up to half as many again open while
            demand exceeds it and close when returned. Sized so a busy API (bench/api.py: 16
            clients plus the scheduler and webhook worker) runs inside the kept connections:
            with 10, every transaction beyond the tenth opened a connection (TLS probe,
            startup, statement preparation) and closed it again — about a tenth of the
            server's CPU per bot creation.
        idle_ping_after: Seconds after which an unused PostgreSQL connection is pinged before
            reuse (and replaced when the ping fails).
        background_checkpoints: On a SQLite file, the write connection leaves WAL checkpoints
            to the caller, who must run :class:`~control_plane.db.checkpoint.WalCheckpointer`
            on :attr:`Database.checkpoint_path` (the app does); elsewhere ignored.
    """
    kwargs: dict[str, Any] = {}
    if url.startswith("postgresql"):
        kwargs = {
            "pool_size": pool_size,
            "max_overflow": pool_size // 2,
            # asyncpg prepares statements; after five runs PostgreSQL may switch to a generic
            # plan that cannot see a filter's value, e.g. a name ILIKE pattern matching 14% of
            # rows planned as if rare (bench/api.py: 100 ms instead of 5 ms at 100k meetings).
            "connect_args": {"server_settings": {"plan_cache_mode": "force_custom_plan"}},
        }
    in_memory = ":memory:" in url or "mode=memory" in url
    if url.startswith("sqlite") and not in_memory:
        # One writer connection; see the module docstring. The pool timeout matches the busy
        # timeout a second connection would have waited before.
        kwargs = {
            "pool_size": 1,
            "max_overflow": 0,
            "pool_timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
        }
    if url.startswith("sqlite") and not in_memory:
        # Statements of the one write connection run on the loop's thread (see the module).
        kwargs["async_creator"] = inline_connector(
            str(make_url(url).database), SQLITE_BUSY_TIMEOUT_MS / 1000
        )
    engine = create_async_engine(url, **kwargs)
    if engine.dialect.name != "sqlite":
        _ping_idle_connections(engine, idle_ping_after)
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        return Database(
            engine=engine,
            sessions=async_sessionmaker(engine, expire_on_commit=False),
            read_sessions=async_sessionmaker(autocommit, expire_on_commit=False),
        )
    background_checkpoints = background_checkpoints and not in_memory
    _configure_sqlite(engine, inline=not in_memory, auto_checkpoint=not background_checkpoints)
    if in_memory:
        # A second engine would open a second, empty in-memory database.
        return Database(engine=engine, sessions=async_sessionmaker(engine, expire_on_commit=False))
    read_engine = create_async_engine(
        url, pool_size=READ_CONNECTIONS, max_overflow=READ_OVERFLOW, pool_timeout=READ_TIMEOUT_S
    )
    _configure_sqlite(read_engine, read_only=True)
    return Database(
        engine=engine,
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        read_engine=read_engine,
        read_sessions=async_sessionmaker(read_engine, expire_on_commit=False),
        checkpoint_path=str(make_url(url).database) if background_checkpoints else None,
    )


DB = web.AppKey("db", Database)
"""The application's database (set by its database cleanup context)."""

"""Alembic environment for SQLite and PostgreSQL (async drivers).

Run through :mod:`control_plane.db.migrate`, which passes an open connection in
``config.attributes["connection"]``; run by the ``alembic`` CLI, it opens its own async
engine from ``sqlalchemy.url``. SQLite uses batch mode because it cannot ALTER most things.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

import control_plane.db.models  # noqa: F401 - registers every table on Base.metadata
from control_plane.db.base import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_run)
    finally:
        await engine.dispose()


def _main() -> None:
    if context.is_offline_mode():
        context.configure(
            url=context.config.get_main_option("sqlalchemy.url"),
            target_metadata=target_metadata,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("alembic: sqlalchemy.url is not set")
    asyncio.run(_run_async(url))


_main()

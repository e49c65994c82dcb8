"""The database engine's connection handling against a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import text

from control_plane.db.engine import create_database

pytestmark = pytest.mark.api

POSTGRES_ENV = "MEETBOT_TEST_POSTGRES_URL"


async def test_idle_connection_killed_by_the_server_is_replaced_silently() -> None:
    server = os.environ.get(POSTGRES_ENV)
    if not server:
        pytest.skip(f"{POSTGRES_ENV} is not set: run scripts/test (it starts a PostgreSQL)")
    database = create_database(server, idle_ping_after=0.2)
    try:
        async with database.engine.connect() as doomed, database.engine.connect() as killer:
            pid = (await doomed.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            await doomed.commit()
            await killer.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            await killer.commit()
        await asyncio.sleep(0.3)  # past idle_ping_after: the next checkouts ping first
        seen = set()
        async with database.engine.connect() as first, database.engine.connect() as second:
            for conn in (first, second):
                seen.add((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        assert pid not in seen
        assert len(seen) == 2
    finally:
        await database.dispose()


async def test_connections_are_kept_between_transactions() -> None:
    server = os.environ.get(POSTGRES_ENV)
    if not server:
        pytest.skip(f"{POSTGRES_ENV} is not set: run scripts/test (it starts a PostgreSQL)")
    database = create_database(server, idle_ping_after=3600)
    try:
        async with database.engine.connect() as conn:
            pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        for _ in range(3):
            async with database.engine.connect() as conn:
                again = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            assert again == pid
    finally:
        await database.dispose()

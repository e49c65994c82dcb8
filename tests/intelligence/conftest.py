"""Fixtures of the detection worker's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from control_plane.db.engine import Database, create_database


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    """The control plane's database at ``database_url`` (SQLite or PostgreSQL), disposed after."""
    db = create_database(database_url)
    yield db
    await db.dispose()

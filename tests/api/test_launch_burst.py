"""A burst of bot creations: 200 ``POST /api/v1/bots`` at once, every bot launched exactly once,
never more than ``launch_concurrency`` launcher calls in flight (real app and scheduler, SQLite
and PostgreSQL; the memory launcher, which starts no machine, counts its calls)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import select

from agent.contracts.bot_config import BotConfig
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.launchers.base import LaunchHandle
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
BURST = 200
CONCURRENCY = 4


class CountingLauncher(MemoryLauncher):
    """The memory launcher, counting how many of its launches are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Launch as the memory launcher does, after yielding as a real launcher's I/O would."""
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(3):
                await asyncio.sleep(0)
            return await super().launch(config)
        finally:
            self.in_flight -= 1


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Room for the burst: no rate limit or live-bot cap in the way; a small launch bound."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=0.05,
        max_concurrent_bots=BURST,
        rate_limit_per_second=10_000,
        rate_limit_burst=10_000,
        launch_concurrency=CONCURRENCY,
    )


@pytest.fixture
def launcher() -> MemoryLauncher:
    """The counting launcher (the app under test uses it)."""
    return CountingLauncher()


async def test_a_burst_of_creations_launches_every_bot_once_within_the_concurrency_bound(
    client: Client, owner: Caller, launcher: CountingLauncher
) -> None:
    body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}

    async def create() -> str:
        response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
        assert response.status == 201, await response.text()
        return str((await response.json())["bot_id"])

    created = await asyncio.gather(*(create() for _ in range(BURST)))
    assert len(set(created)) == BURST

    async def all_launched() -> None:
        while True:
            async with client.app[DB].sessions() as session:
                waiting = await session.scalar(
                    select(Meeting.id).where(Meeting.bot_container_id.is_(None)).limit(1)
                )
            if waiting is None:
                return
            await asyncio.sleep(0.05)

    await asyncio.wait_for(all_launched(), 120)
    launched = Counter(str(config.bot_id) for config in launcher.launches)
    assert set(launched) == set(created)
    assert set(launched.values()) == {1}
    # Bounded; and launches did overlap (passes claim up to 50 due bots at once).
    assert 1 < launcher.most_in_flight <= CONCURRENCY
    async with client.app[DB].sessions() as session:
        handles = list(await session.scalars(select(Meeting.bot_container_id)))
    assert len(set(handles)) == BURST

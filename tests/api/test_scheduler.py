"""The scheduler: exactly-once launches across concurrent loops and across restarts."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy import func, insert, select

from agent.contracts.status import BotStatus
from control_plane.app import create_app
from control_plane.auth.provisioning import add_member, create_workspace, get_or_create_user
from control_plane.bots.config_builder import BotConfigBuilder
from control_plane.bots.scheduler import Scheduler
from control_plane.db.engine import DB, Database, create_database
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.enums import Role
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
ENTRIES = 2000
LOOPS = 4


async def wait_for(check: Callable[[], Awaitable[bool]], limit: float = 120.0) -> None:
    async with asyncio.timeout(limit):
        while not await check():  # noqa: ASYNC110 - polls the database; no event to await
            await asyncio.sleep(0.05)


async def seed_due(database: Database, count: int) -> None:
    """``count`` scheduled bots, all due, inserted in one statement."""
    now = datetime.now(UTC)
    async with database.sessions.begin() as session:
        user = await get_or_create_user(session, "sched@example.org")
        workspace = await create_workspace(session, "Scheduling")
        await add_member(session, workspace, user, Role.OWNER)
        await session.execute(
            insert(Meeting),
            [
                {
                    "bot_id": uuid.uuid4(),
                    "workspace_id": workspace.id,
                    "platform": "google_meet",
                    "native_meeting_id": "abc-defg-hij",
                    "constructed_meeting_url": "https://meet.google.com/abc-defg-hij",
                    "status": "scheduled",
                    "settings": {},
                    "scheduled_start_at": now - timedelta(seconds=1),
                    "join_offset_seconds": 0,
                    "launch_at": now - timedelta(seconds=index % 60),
                    "participants": [],
                    "redacted": False,
                    "created_at": now,
                    "updated_at": now,
                }
                for index in range(count)
            ],
        )


async def test_concurrent_loops_launch_each_due_bot_exactly_once(database_url: str) -> None:
    seeder = create_database(database_url)
    # SQLite runs one writer at a time, so it gets a smaller batch: the PostgreSQL run is the
    # replica scenario; on SQLite this checks the UPDATE … RETURNING claim.
    entries = ENTRIES if seeder.dialect == "postgresql" else ENTRIES // 4
    await seed_due(seeder, entries)
    databases = [create_database(database_url, pool_size=3) for _ in range(LOOPS)]
    launchers = [MemoryLauncher() for _ in range(LOOPS)]
    loops = [
        Scheduler(
            database=db,
            launcher=launcher,
            config_builder=BotConfigBuilder(db, control_plane_url="http://cp"),
            interval=0.05,
        )
        for db, launcher in zip(databases, launchers, strict=True)
    ]
    tasks = [asyncio.create_task(loop.run()) for loop in loops]

    async def all_launched() -> bool:
        async with seeder.sessions() as session:
            left = await session.scalar(
                select(func.count()).select_from(Meeting).where(Meeting.bot_container_id.is_(None))
            )
        return left == 0

    try:
        await wait_for(all_launched)
    finally:
        for loop in loops:
            loop.stop()
        await asyncio.gather(*tasks)
        for db in databases:
            await db.dispose()
    launched = [config.bot_id for launcher in launchers for config in launcher.launches]
    assert len(launched) == entries
    assert len(set(launched)) == entries
    if seeder.dialect == "postgresql":  # SKIP LOCKED lets the replicas share the work
        assert sum(1 for launcher in launchers if launcher.launches) >= 2
    async with seeder.sessions() as session:
        statuses = dict(
            (
                await session.execute(select(Meeting.status, func.count()).group_by(Meeting.status))
            ).all()
        )
        moves = await session.scalar(
            select(func.count())
            .select_from(BotStatusChange)
            .where(BotStatusChange.to_status == "requested")
        )
    await seeder.dispose()
    assert statuses == {"requested": entries}
    assert moves == entries


async def test_due_bots_launch_once_across_a_restart(
    settings: Settings, owner_factory: OwnerFactory, aiohttp_client: AiohttpClient
) -> None:
    first_launcher, second_launcher = MemoryLauncher(), MemoryLauncher()
    first = await aiohttp_client(create_app(settings, launcher=first_launcher))
    owner = await owner_factory(first.app[DB])
    now = datetime.now(UTC)
    # The API wants a future start; a negative offset makes the launch time near.
    body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    soon = await schedule_at(first, owner, body, now + timedelta(seconds=3600.0), -3600)
    later = [
        await schedule_at(first, owner, body, now + timedelta(seconds=3603.0), -3600)
        for _ in range(3)
    ]
    await wait_for(lambda: _launched(first_launcher, 1), limit=30)
    await first.close()  # "process" one stops before the later bots are due
    assert [str(c.bot_id) for c in first_launcher.launches] == [soon]

    second = await aiohttp_client(create_app(settings, launcher=second_launcher))
    await wait_for(lambda: _launched(second_launcher, 3), limit=30)
    await asyncio.sleep(0.3)  # a duplicate would show up within a few scheduler passes
    assert sorted(str(c.bot_id) for c in second_launcher.launches) == sorted(later)
    for bot_id in [soon, *later]:
        bot = await (await second.get(f"/api/v1/bots/{bot_id}", headers=owner.headers)).json()
        assert (bot["status"], bot["status_reason"]) == ("requested", "scheduled_launch")


async def _launched(launcher: MemoryLauncher, count: int) -> bool:
    return len(launcher.launches) >= count


async def schedule_at(
    client: Client, owner: Caller, body: dict[str, str], start: datetime, offset: int
) -> str:
    response = await client.post(
        "/api/v1/bots/schedule",
        json={**body, "scheduled_start_at": start.isoformat(), "join_offset_seconds": offset},
        headers=owner.headers,
    )
    assert response.status == 201, await response.text()
    bot_id: str = (await response.json())["bot_id"]
    return bot_id


async def test_failed_and_abandoned_launches_fail_the_bot(
    settings: Settings, owner_factory: OwnerFactory, aiohttp_client: AiohttpClient
) -> None:
    launcher = MemoryLauncher(capacity=1)
    client = await aiohttp_client(create_app(settings, launcher=launcher))
    owner = await owner_factory(client.app[DB])
    body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    first = await (await client.post("/api/v1/bots", json=body, headers=owner.headers)).json()
    await wait_for(lambda: _launched(launcher, 1), limit=30)
    second = await (await client.post("/api/v1/bots", json=body, headers=owner.headers)).json()

    async def second_failed() -> bool:
        got = await client.get(f"/api/v1/bots/{second['bot_id']}", headers=owner.headers)
        return bool((await got.json())["status"] == "failed")

    await wait_for(second_failed, limit=30)
    bot = await (await client.get(f"/api/v1/bots/{second['bot_id']}", headers=owner.headers)).json()
    assert bot["status_reason"] == "launch_failed" and bot["end_time"] is not None
    assert [str(c.bot_id) for c in launcher.launches] == [first["bot_id"]]

    # A claim whose process died before the launcher answered is failed by the reaper.
    database = client.app[DB]
    async with database.sessions.begin() as session:
        meeting = await session.get(Meeting, first["id"])
        assert meeting is not None
        meeting.bot_container_id = None
        meeting.launch_claimed_at = datetime.now(UTC) - timedelta(hours=1)
    reaper = Scheduler(
        database=database,
        launcher=launcher,
        config_builder=BotConfigBuilder(database, control_plane_url="http://cp"),
    )
    await reaper.maintain()
    async with database.sessions() as session:
        meeting = await session.get(Meeting, first["id"])
        assert meeting is not None
        assert (meeting.status, meeting.status_reason) == (BotStatus.FAILED, "launch_failed")


OwnerFactory = Callable[[Database], Awaitable[Caller]]


@pytest.fixture
def owner_factory() -> OwnerFactory:
    """Makes a workspace owner in a given app's database."""
    from tests.plugins.api_app import Tenants

    async def make(database: Database) -> Caller:
        return await Tenants(database).workspace()

    return make

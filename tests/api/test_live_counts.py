"""The bots-at-once quota follows every status change (migrations 0009 and 0010,
bots/live_count.py).

On SQLite the number of live bots comes from ``workspace_live_bots``, kept by triggers on
``meetings``; on PostgreSQL from that table plus appended changes, folded into it (checked after
every step too); these tests move bots through creation, stop, a final status and deletion and
check that the quota and a real count agree at each step, on both databases, and that the
triggers exist at the head revision (a later migration rebuilding ``meetings`` on SQLite would
drop them).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import delete, func, select, text

from agent.contracts.status import LIVE_STATUSES, BotStatus
from control_plane.bots.live_count import fold_live_changes, live_bots
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
_LIVE = [status.value for status in LIVE_STATUSES]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Two bots at once; the scheduler idle, so statuses move only where the test moves them."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=60,
        max_concurrent_bots=2,
    )


async def _create(client: Client, owner: Caller, suffix: str) -> tuple[int, str]:
    body = {"platform": "google_meet", "native_meeting_id": f"abc-defg-hi{suffix}"}
    response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
    payload = await response.json()
    return response.status, payload.get("bot_id") or payload["code"]


async def _counts(client: Client, workspace_id: uuid.UUID) -> tuple[int, int]:
    """(what the quota sees, a real count of live rows); the same after a fold."""
    database = client.app[DB]
    async with database.sessions.begin() as session:
        seen = await live_bots(session, workspace_id)
        real = await session.scalar(
            select(func.count())
            .select_from(Meeting)
            .where(Meeting.workspace_id == workspace_id, Meeting.status.in_(_LIVE))
        )
    async with database.sessions.begin() as session:
        folded = await fold_live_changes(session)
    assert folded is (database.dialect == "postgresql")
    async with database.sessions.begin() as session:
        assert await live_bots(session, workspace_id) == seen
        if folded:
            left = await session.scalar(text("SELECT count(*) FROM workspace_live_bot_changes"))
            assert left == 0
    return seen, int(real or 0)


async def _move(client: Client, bot_id: str, *targets: BotStatus) -> None:
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=uuid.UUID(bot_id))
        assert meeting is not None
        for target in targets:
            await change_status(session, meeting, target, None)


async def test_quota_follows_creation_stop_final_status_and_deletion(
    client: Client, owner: Caller
) -> None:
    workspace = owner.workspace_id
    assert workspace is not None
    first, second = await _create(client, owner, "a"), await _create(client, owner, "b")
    assert (first[0], second[0]) == (201, 201)
    assert await _create(client, owner, "c") == (409, "quota_exceeded")
    assert await _counts(client, workspace) == (2, 2)

    # requested → joining → active: live all along.
    await _move(client, first[1], BotStatus.JOINING, BotStatus.ACTIVE)
    assert await _create(client, owner, "c") == (409, "quota_exceeded")
    assert await _counts(client, workspace) == (2, 2)

    # A stop through the API (the memory launcher's bot ends at once: stopping → completed).
    stopped = await client.delete(f"/api/v1/bots/{second[1]}", headers=owner.headers)
    assert stopped.status == 202
    assert await _counts(client, workspace) == (1, 1)
    third = await _create(client, owner, "c")
    assert third[0] == 201
    assert await _counts(client, workspace) == (2, 2)

    await _move(client, first[1], BotStatus.FAILED)
    assert await _counts(client, workspace) == (1, 1)

    async with client.app[DB].sessions.begin() as session:
        await session.execute(delete(Meeting).where(Meeting.bot_id == uuid.UUID(third[1])))
    assert await _counts(client, workspace) == (0, 0)
    assert (await _create(client, owner, "d"))[0] == 201
    assert await _counts(client, workspace) == (1, 1)


async def test_triggers_exist_at_head(client: Client) -> None:
    database = client.app[DB]
    if database.dialect == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        expected = {"meetings_live_insert", "meetings_live_update", "meetings_live_delete"}
    else:
        query = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
        expected = {"meetings_live_change"}
    async with database.engine.connect() as conn:
        names = set((await conn.execute(text(query))).scalars())
    assert expected <= names

"""Stopping the app while the reaper is writing: the write it started completes (status, audit
row and webhook outbox message together); it is not cancelled half-way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.status import BotStatus, StatusReason
from control_plane.db.engine import create_database
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.db.models.webhook import WebhookMessage
from control_plane.hooks import STATUS_HOOKS, StatusChange
from control_plane.settings import Settings
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX

pytestmark = pytest.mark.api


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Timeouts that let the app's own reaper fail a never-connected bot within a second."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        heartbeat_timeout_seconds=0.4,  # reaper interval: a quarter, 0.1 s
        agent_connect_timeout_seconds=0.2,
        scheduler_interval_seconds=0.05,
    )


async def test_app_shutdown_waits_for_the_reapers_write_in_progress(
    client: Client, launch_bot: LaunchBot, database_url: str
) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow_hook(session: AsyncSession, change: StatusChange) -> None:
        # Runs inside the reaper's transaction, after the row and its audit row are written.
        if change.status == BotStatus.FAILED.value:
            entered.set()
            await release.wait()

    client.app[STATUS_HOOKS].append(slow_hook)
    bot = await launch_bot(BotStatus.REQUESTED)  # its agent never connects
    await asyncio.wait_for(entered.wait(), 10)

    closing = asyncio.create_task(client.close())
    await asyncio.sleep(0.3)
    assert not closing.done(), "the app stopped while the reaper was mid-write"
    release.set()
    await asyncio.wait_for(closing, 30)

    database = create_database(database_url)
    try:
        async with database.sessions() as session:
            meeting = await session.get(Meeting, bot.meeting_id)
            assert meeting is not None
            assert (meeting.status, meeting.status_reason) == (
                BotStatus.FAILED.value,
                StatusReason.LAUNCH_FAILED.value,
            )
            audit = (
                await session.scalars(
                    select(BotStatusChange.to_status).where(
                        BotStatusChange.meeting_id == bot.meeting_id
                    )
                )
            ).all()
            assert BotStatus.FAILED.value in audit
            events = (
                await session.scalars(
                    select(WebhookMessage.body).where(
                        WebhookMessage.event_type == "bot.status_changed"
                    )
                )
            ).all()
            assert any('"status":"failed"' in body for body in events)
    finally:
        await database.dispose()

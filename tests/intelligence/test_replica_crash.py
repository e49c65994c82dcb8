"""Two replicas on PostgreSQL, one killed with SIGKILL mid-meeting: no window lost or doubled.

Replica A (a process of its own, :mod:`tests.intelligence.replica`) claims every live meeting
and has a window's call in flight (the model server holds its answers) when it is killed. Its
leases lapse; replica B (a worker in the test's process) claims the meetings and goes on from
the cursors A last committed. Every window of every meeting must be answered exactly once
(A's call in flight was never answered: its client was gone) and stored once: each expected
action once, with its webhook once, and every cursor done with all its windows and no failure.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from control_plane.db.engine import Database
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.worker import DetectionWorker
from control_plane.webhooks.outbox import Outbox
from tests.intelligence.action_llm import serve_actions
from tests.intelligence.meetings import (
    action_webhooks,
    end_meeting,
    live_meeting,
    say,
    stored_actions,
)
from tests.intelligence.replica import OPTIONS

pytestmark = pytest.mark.api

REPO = Path(__file__).resolve().parents[2]
MEETINGS = 3


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_replica_killed_mid_meeting_loses_and_doubles_no_window(
    database: Database, database_url: str
) -> None:
    meetings = []
    for index in range(MEETINGS):
        meeting = await live_meeting(database)
        # Four windows each (a gap of 10 s closes one); the last closes when the meeting ends.
        await say(
            database,
            meeting,
            [
                ("Alice", f"Meeting {index}: I'll book the venue", 0.0, 2.0),
                ("Bob", f"Meeting {index}: we decided on Lisbon", 12.0, 14.0),
                ("Carol", f"Meeting {index}: who pays for the dinner?", 24.0, 26.0),
                ("Dan", f"Meeting {index}: I'll send the invitations", 36.0, 38.0),
            ],
        )
        meetings.append(meeting)
    async with serve_actions() as server:
        server.hold = True
        replica_a = subprocess.Popen(  # noqa: ASYNC220, S603 - our own module, killed below
            [
                sys.executable,
                "-m",
                "tests.intelligence.replica",
                database_url,
                server.base_url,
                "replica-a",
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
        )
        try:
            async with asyncio.timeout(60):
                while server.waiting < MEETINGS:  # noqa: ASYNC110 - the server counts; no event
                    await asyncio.sleep(0.05)
        finally:
            replica_a.kill()
            replica_a.wait()
            server.forget_held()
        chat = server.chat()
        replica_b = DetectionWorker(
            database=database,
            chat=chat,
            outbox=Outbox(),
            options=OPTIONS,
            metrics=DetectionMetrics(CollectorRegistry()),
            owner="replica-b",
        )
        try:
            async with replica_b.running():
                server.release()
                for meeting in meetings:
                    await end_meeting(database, meeting)
                async with asyncio.timeout(60):
                    while not all([await _done(database, m.meeting_id) for m in meetings]):  # noqa: ASYNC110 - polls the database
                        await asyncio.sleep(0.05)
        finally:
            await chat.aclose()
    # A had one call in flight per meeting; none of them was answered.
    assert len(server.requests) == MEETINGS * 4 + MEETINGS
    assert server.unheard == MEETINGS
    assert sorted(server.answered.values()) == [1] * (MEETINGS * 4)
    for index, meeting in enumerate(meetings):
        actions = await stored_actions(database, meeting)
        assert [(a.type, a.text) for a in actions] == [
            ("action_item", f"Meeting {index}: I'll book the venue"),
            ("decision", f"Meeting {index}: we decided on Lisbon"),
            ("question", f"Meeting {index}: who pays for the dinner?"),
            ("action_item", f"Meeting {index}: I'll send the invitations"),
        ]
        async with database.sessions() as session:
            cursor = await session.get(ActionCursor, meeting.meeting_id)
        assert cursor is not None
        assert (cursor.windows, cursor.windows_failed) == (4, 0)
    hooks = await action_webhooks(database)
    assert len(hooks) == MEETINGS * 4
    assert len({hook["id"] for hook in hooks}) == MEETINGS * 4


async def _done(database: Database, meeting_id: int) -> bool:
    async with database.sessions() as session:
        cursor = await session.get(ActionCursor, meeting_id)
    return cursor is not None and cursor.finished_at is not None

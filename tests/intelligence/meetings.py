"""Meetings and segments written straight into a test database, as the agent link stores them.

Helpers of the detection worker's tests: a workspace with one live meeting per call, final
segments appended in arrival order (``segments.id``), the bot's status moved by hand, and the
stored actions and ``action.detected`` outbox rows read back.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, select, update

from control_plane.auth.provisioning import create_workspace
from control_plane.db.engine import Database
from control_plane.db.models.action import MeetingAction
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.db.models.webhook import WebhookMessage


@dataclass(frozen=True)
class LiveMeeting:
    """A meeting row the tests write segments into."""

    meeting_id: int
    bot_id: uuid.UUID
    workspace_id: uuid.UUID


async def live_meeting(database: Database, *, enable_actions: bool = True) -> LiveMeeting:
    """A new workspace with one ``active`` bot whose settings say ``enable_actions``."""
    now = datetime.now(UTC)
    bot_id = uuid.uuid4()
    async with database.sessions.begin() as session:
        workspace = await create_workspace(session, f"Actions {bot_id.hex[:6]}")
        meeting_id = await session.scalar(
            insert(Meeting)
            .values(
                bot_id=bot_id,
                workspace_id=workspace.id,
                platform="google_meet",
                native_meeting_id="abc-defg-hij",
                constructed_meeting_url="https://meet.google.com/abc-defg-hij",
                status="active",
                settings={"enable_actions": enable_actions, "prompt_version_id": None},
                participants=[],
                redacted=False,
                created_at=now,
                updated_at=now,
                start_time=now,
            )
            .returning(Meeting.id)
        )
        assert meeting_id is not None
        return LiveMeeting(int(meeting_id), bot_id, workspace.id)


async def say(
    database: Database,
    meeting: LiveMeeting,
    lines: list[tuple[str, str, float, float]],
    *,
    prefix: str = "seg",
) -> list[str]:
    """Store final segments ``(speaker, text, start, end)`` in this order; their ids."""
    base = datetime.now(UTC) - timedelta(minutes=5)
    rows: list[dict[str, Any]] = []
    ids = []
    for speaker, text, start, end in lines:
        segment_id = f"{prefix}-{start:g}-{uuid.uuid4().hex[:6]}"
        ids.append(segment_id)
        rows.append(
            {
                "meeting_id": meeting.meeting_id,
                "segment_id": segment_id,
                "start": start,
                "end": end,
                "absolute_start_time": base + timedelta(seconds=start),
                "absolute_end_time": base + timedelta(seconds=end),
                "text": text,
                "speaker": speaker,
                "language": "en",
                "completed": True,
                "tier": "realtime",
            }
        )
    async with database.sessions.begin() as session:
        for row in rows:  # one statement each: ids in arrival order on both databases
            await session.execute(insert(Segment).values(**row))
    return ids


async def end_meeting(database: Database, meeting: LiveMeeting, status: str = "completed") -> None:
    """Make the bot final (as its final status report would)."""
    async with database.sessions.begin() as session:
        await session.execute(
            update(Meeting)
            .where(Meeting.id == meeting.meeting_id)
            .values(status=status, end_time=datetime.now(UTC))
        )


async def stored_actions(database: Database, meeting: LiveMeeting) -> list[MeetingAction]:
    """The meeting's stored actions, oldest first."""
    async with database.sessions() as session:
        rows = await session.scalars(
            select(MeetingAction)
            .where(MeetingAction.meeting_id == meeting.meeting_id)
            .order_by(MeetingAction.id)
        )
        return list(rows.all())


async def action_webhooks(database: Database) -> list[dict[str, Any]]:
    """``data`` of every ``action.detected`` event in the outbox."""
    async with database.sessions() as session:
        rows = await session.scalars(
            select(WebhookMessage)
            .where(WebhookMessage.event_type == "action.detected")
            .order_by(WebhookMessage.created_at)
        )
        return [dict(json.loads(row.body)["data"]) for row in rows.all()]

"""Storing an action (``window_store.add_action``) over a real database (SQLite and PostgreSQL).

The ``action.detected`` webhook says what the record says: its ``data`` is the stored row read
back (``db.models.action.action_body``), also when the action's id was stored before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest

from control_plane.db.engine import Database
from control_plane.db.models.action import action_body
from control_plane.intelligence.window_store import AddedAction, add_action
from control_plane.webhooks import events
from control_plane.webhooks.outbox import Outbox
from tests.intelligence.meetings import LiveMeeting, action_webhooks, live_meeting, stored_actions

pytestmark = pytest.mark.api


@dataclass(frozen=True)
class _Found:
    """An action as a finder hands it over (``ActionFields``)."""

    text: str
    owner: str | None
    due: str | None
    segment_ids: tuple[str, ...]


async def _add(
    database: Database, meeting: LiveMeeting, found: _Found, at: datetime
) -> AddedAction:
    async with database.sessions.begin() as session:
        return await add_action(
            session,
            Outbox(),
            workspace_id=meeting.workspace_id,
            bot_id=meeting.bot_id,
            meeting_id=meeting.meeting_id,
            identifier="act-1",
            kind="action_item",
            action=found,
            at=at,
        )


async def test_the_webhook_and_a_retry_say_what_the_record_says(database: Database) -> None:
    meeting = await live_meeting(database)
    # Found at 12:00:00.25 in a +02:00 zone (an old agent's frame stamps its own time).
    at = datetime(2026, 11, 29, 12, 0, 0, 250000, tzinfo=timezone(timedelta(hours=2)))
    first = _Found("send the notes", "Bob", "by friday", ("seg-1", "seg-2"))
    added = await _add(database, meeting, first, at)
    [row] = await stored_actions(database, meeting)
    record = action_body(row)
    assert added == AddedAction(record, new=True)
    assert record["timestamp"] == at and record["timestamp"].utcoffset() == timedelta(0)
    # The webhook carries the row as read back: UTC, as the API and the stream say it.
    expected = events.ActionDetected(
        bot_id=str(meeting.bot_id), meeting_id=meeting.meeting_id, **record
    ).model_dump_json()
    assert await action_webhooks(database) == [json.loads(expected)]
    assert datetime.fromisoformat(json.loads(expected)["timestamp"]).utcoffset() == timedelta(0)
    # A retry under the same id with other words: the stored action, unchanged, no webhook.
    again = _Found("send all the notes", None, None, ("seg-2",))
    retried = await _add(database, meeting, again, datetime.now(UTC))
    assert retried == AddedAction(record, new=False)
    assert [action_body(r) for r in await stored_actions(database, meeting)] == [record]
    assert len(await action_webhooks(database)) == 1

"""The summary's rows: created when a meeting ends, read by the API, removed by purge.

Source: docs/api.md 2.14. :func:`summary_status_hook` runs inside the transaction of every bot
status change (``control_plane.hooks.STATUS_HOOKS``): when a bot with ``enable_actions`` true
becomes final it adds the meeting's ``pending`` row, due ``settle`` after the end, so the row
exists exactly when the meeting is final (a bot without ``enable_actions`` never gets one, and
no model is ever called for it). :func:`purge_summary` is a ``PURGE_HOOKS`` entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotSettings
from agent.contracts.status import FINAL_STATUSES, BotStatus
from control_plane.db.models.bot import Meeting
from control_plane.db.models.summary import MeetingSummary
from control_plane.hooks import StatusChange
from control_plane.intelligence.summary_schemas import (
    MeetingSummaryOut,
    SummaryActionItem,
    SummaryDecision,
    SummaryStatus,
)

__all__ = [
    "SummaryStatus",
    "purge_summary",
    "read_summary",
    "stream_summary",
    "summary_out",
    "summary_status_hook",
]


def summary_status_hook(
    settle: timedelta,
) -> Callable[[AsyncSession, StatusChange], Awaitable[None]]:
    """A status hook adding a ``pending`` summary when a bot with ``enable_actions`` ends.

    Args:
        settle: How long after the end the summary is first due (segments still arriving).
    """

    async def hook(session: AsyncSession, change: StatusChange) -> None:
        if BotStatus(change.status) not in FINAL_STATUSES:
            return
        meeting = change.meeting
        if not BotSettings.model_validate(meeting.settings).enable_actions:
            return
        if await session.get(MeetingSummary, meeting.id) is not None:
            return
        session.add(
            MeetingSummary(
                meeting_id=meeting.id,
                status=SummaryStatus.PENDING.value,
                attempts=0,
                prompt_tokens=0,
                completion_tokens=0,
                next_attempt_at=change.at + settle,
                created_at=change.at,
            )
        )

    return hook


async def purge_summary(session: AsyncSession, meeting: Meeting) -> None:
    """Delete the meeting's summary (inside the purge's transaction)."""
    await session.execute(delete(MeetingSummary).where(MeetingSummary.meeting_id == meeting.id))


def summary_out(row: MeetingSummary) -> MeetingSummaryOut:
    """The row as the API shows it."""
    ready = row.status == SummaryStatus.READY.value
    return MeetingSummaryOut(
        status=SummaryStatus(row.status),
        summary=row.summary if ready else None,
        decisions=[SummaryDecision.model_validate(item) for item in row.decisions or []]
        if ready
        else None,
        action_items=[SummaryActionItem.model_validate(item) for item in row.action_items or []]
        if ready
        else None,
        model=row.model if ready else None,
        error=row.error if row.status == SummaryStatus.FAILED.value else None,
        created_at=row.created_at,
        ready_at=row.ready_at,
    )


async def read_summary(session: AsyncSession, meeting_id: int) -> MeetingSummaryOut | None:
    """The meeting's summary, or None when it has none (``enable_actions`` false, purged)."""
    row = await session.get(MeetingSummary, meeting_id)
    return summary_out(row) if row is not None else None


async def stream_summary(session: AsyncSession, meeting_id: int) -> tuple[str, str | None] | None:
    """The summary as the bot's stream sends it (``summary_ready``, docs/api.md 2.7).

    None when the meeting has no summary, else its status and, once ``ready``, the JSON text
    of :func:`read_summary`'s object: exactly what ``GET …/summary`` answers with 200.
    """
    summary = await read_summary(session, meeting_id)
    if summary is None:
        return None
    ready = summary.status is SummaryStatus.READY
    return summary.status.value, (summary.model_dump_json() if ready else None)

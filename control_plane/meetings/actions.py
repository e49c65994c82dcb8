"""A meeting's detected actions as the API shows them (docs/api.md 2.9).

Rows of :class:`~control_plane.db.models.action.MeetingAction`, oldest first (by detection
time, then by arrival), as :class:`~control_plane.meetings.schemas.ActionOut` (the row read by
:func:`~control_plane.db.models.action.action_body`, as the stream reads it).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.action import MeetingAction, action_body
from control_plane.meetings.schemas import ActionOut


async def list_actions(
    session: AsyncSession, meeting_id: int, *, limit: int | None = None, offset: int = 0
) -> list[ActionOut]:
    """The meeting's actions, oldest first; ``limit`` None lists them all."""
    query = (
        select(MeetingAction)
        .where(MeetingAction.meeting_id == meeting_id)
        .order_by(MeetingAction.detected_at, MeetingAction.id)
        .offset(offset)
    )
    if limit is not None:
        query = query.limit(limit)
    rows = (await session.scalars(query)).all()
    return [ActionOut(**action_body(row)) for row in rows]

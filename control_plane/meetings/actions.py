"""A meeting's detected actions as the API shows them (docs/api.md 2.9).

Rows of :class:`~control_plane.db.models.action.MeetingAction`, oldest first (by detection
time, then by arrival), as :class:`~control_plane.meetings.schemas.ActionOut`.
"""

from __future__ import annotations

from typing import Literal, cast

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.action import MeetingAction
from control_plane.meetings.schemas import ActionOut

_Type = Literal["action_item", "decision", "question", "follow_up"]


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
    return [
        ActionOut(
            id=row.action_id,
            type=cast(_Type, row.type),
            text=row.text,
            owner=row.owner,
            due=row.due,
            segment_ids=list(row.segment_ids or []),
            timestamp=row.detected_at,
        )
        for row in rows
    ]
